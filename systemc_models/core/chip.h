// A chip: `cores` NeuronCores in one simulation, each with its own engines,
// SBUF, PSUM, semaphores and DMA engines, all sharing the chip's one HBM
// (arch::chip_hbm). Every core's interconnect binds to that HBM, so the
// cores' requests contend at its channels as they arrive; no core is given a
// fixed share of the bandwidth. Each core addresses the whole HBM at the
// same addresses, so a tensor in HBM is visible to every core; each core's
// instruction streams and DMA rings go to its own slice of the program area.
// The cores reach each other's SBUF and semaphores through the chip's
// fabric (core/fabric.h). docs/multicore.md.
#pragma once

#include "arch/config.h"
#include "core/fabric.h"
#include "core/neuron_core.h"
#include "memory/hbm.h"
#include "trace/stats.h"

#include <functional>
#include <memory>
#include <vector>

namespace tessera::core {

struct ChipRunResult {
  RunResult chip;               // the first error, else a deadlock of any core, else finished at the last core's end
  std::vector<RunResult> cores;  // each core's own end
};

class Chip {
public:
  // `cfg` describes one core; its chip section gives the HBM the cores
  // share. `cores` may be fewer than chip.cores (a kernel on part of the
  // chip); more is an error. The modules are named hbm, core0, core1, ...
  // `options(i)` gives core i's options (its shared_hbm and program slice
  // are set here); none: the defaults.
  Chip(const arch::HwConfig& cfg, std::size_t cores, trace::Stats& stats,
       const std::function<CoreOptions(std::size_t)>& options = {});
  ~Chip();

  std::size_t size() const { return cores_.size(); }
  NeuronCore& core(std::size_t i) { return *cores_.at(i); }
  memory::Hbm& hbm() { return *hbm_; }
  ChipFabric& fabric() { return *fabric_; }
  // The config each core runs with: the core, addressing the whole chip's HBM.
  const arch::HwConfig& core_config() const { return core_cfg_; }

  // Runs every core's loaded programs together to the end of the last.
  ChipRunResult run();

private:
  arch::HwConfig core_cfg_;
  std::unique_ptr<memory::Hbm> hbm_;
  std::unique_ptr<dma::DmaChipOrder> dma_order_;  // the cores' DMA engines' one order (dma/dma_subsystem.h)
  std::vector<std::unique_ptr<NeuronCore>> cores_;
  std::unique_ptr<ChipFabric> fabric_;
  sc_core::sc_time end_time_;
  // The chip's HBM bandwidth over the run (all cores' traffic).
  struct Bandwidth : trace::Group {
    Bandwidth(trace::Stats& stats, const memory::Hbm& hbm, const Chip& chip);
    trace::Formula used_gbps;
  };
  std::unique_ptr<Bandwidth> bandwidth_;
};

}  // namespace tessera::core
