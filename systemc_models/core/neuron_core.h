// A whole NeuronCore built from a config: HBM, SBUF, PSUM, semaphores and the
// interconnect, and one sequencer-driven engine per instruction stream.
// Programs are placed in the program area at the top of HBM; run() simulates
// until every engine has ended, an error stops it, or nothing can move (a
// deadlock, reported with the engines that wait and on what).
#pragma once

#include "arch/config.h"
#include "arch/isa.h"
#include "core/core_context.h"
#include "core/engine.h"
#include "core/memory_system.h"
#include "dma/dma_subsystem.h"
#include "engines/tensor_datapath.h"
#include "trace/stats.h"

#include <systemc>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tessera::engines {
class TensorEngine;
}

namespace tessera::core {

struct RunResult {
  enum class Status { Finished, Error, Deadlock };
  Status status = Status::Finished;
  std::string message;            // the error, or the deadlock's description
  std::vector<std::string> waiting;  // deadlock: "engine: sem[i] >= v (value now u)"
  sc_core::sc_time end_time;      // when the last engine ended
  bool ok() const { return status == Status::Finished; }
};

// Builds the tensor engine's datapath for a fidelity. The core library knows
// only the fast model; the layer that links the Verilated RTL (cosim/)
// supplies the others, so the core never depends on a Verilated build.
using TensorDatapathFactory =
    std::function<std::unique_ptr<engines::TensorDatapath>(const arch::HwConfig&, arch::Fidelity)>;

// Builds the sampled fidelity's DMA check, a module of the core that the
// fast DMA engines offer every descriptor to (cosim/ supplies it).
using DmaSamplerFactory = std::function<std::unique_ptr<dma::DescriptorSampler>(CoreContext&)>;

struct CoreOptions {
  arch::Fidelity fidelity = arch::Fidelity::Tlm;
  TensorDatapathFactory tensor_datapath;  // empty: fast model (tlm only)
  dma::DmaEngineFactory dma_engine;       // empty: the fast DMA model
  DmaSamplerFactory dma_sampler;          // sampled: re-executes fast-model descriptors on the RTL
  bool no_data = false;                   // timing only; timing does not depend on data
  trace::WaveProbe* waves = nullptr;      // records a waveform of the run (cosim/waves.h)
  trace::Timeline* timeline = nullptr;    // record a trace of the run here
  std::function<std::string(arch::Engine, std::uint64_t)> origin_of;  // CoreContext::origin_of
  std::function<std::string(std::uint32_t, std::uint32_t, std::uint64_t)> descriptor_origin_of;  // CoreContext's
  // One core of a chip (core/chip.h): the chip's HBM instead of its own, and
  // slice `program_slice` of `program_slices` equal slices of the program
  // area for its instruction streams and DMA rings.
  memory::Hbm* shared_hbm = nullptr;
  std::uint32_t program_slice = 0;
  std::uint32_t program_slices = 1;
  dma::DmaChipOrder* dma_order = nullptr;  // and the chip's same-time order of DMA engines
};

class NeuronCore : public sc_core::sc_module {
public:
  NeuronCore(sc_core::sc_module_name name, const arch::HwConfig& cfg, trace::Stats& stats,
             const CoreOptions& options = {});
  ~NeuronCore() override;

  // Writes `stream` into the program area and points `engine`'s sequencer at it.
  void load_program(arch::Engine engine, const std::vector<std::uint8_t>& stream);
  // Places bytes (e.g. DMA descriptor rings) in the program area; returns their address.
  std::uint64_t place(const std::vector<std::uint8_t>& bytes);
  // The two halves of place(), for a caller that writes a large program
  // piece by piece (hbm().backdoor_write) rather than whole from a buffer of
  // its own: reserves `bytes` of the program area and returns their address.
  std::uint64_t reserve_program(std::uint64_t bytes);
  // load_program() for a stream of `bytes` written at `address` already.
  void start_program(arch::Engine engine, std::uint64_t address, std::uint64_t bytes);

  // Points DMA queue (engine, queue) at a ring of `size` descriptors at `base`.
  void configure_dma_queue(std::uint32_t engine, std::uint32_t queue, std::uint64_t base, std::uint32_t size);

  // Simulates until the end (sc_start) and returns result().
  RunResult run();
  // How the simulation that just stopped left this core: finished, an error,
  // or a deadlock of its engines. A chip calls it for each of its cores
  // after running them together.
  RunResult result();

  memory::Hbm& hbm() { return *mem_->hbm; }
  memory::PartitionedMemory& sbuf() { return *mem_->sbuf; }
  memory::PartitionedMemory& psum() { return *mem_->psum; }
  Semaphores& semaphores() { return *mem_->semaphores; }
  Interconnect& interconnect() { return *mem_->interconnect; }
  Engine& engine(arch::Engine e) { return *engines_.at(static_cast<std::size_t>(e)); }
  engines::TensorEngine& tensor();
  dma::DmaSubsystem& dma() { return *dma_; }
  // Frees what the run recorded for its report (each engine's instruction
  // costs, the DMA engines' completions, starts and doorbells, the semaphore
  // increments): a large run's records are tens of MiB, and a caller that
  // has drawn its events from them frees them before the critical path
  // allocates its own, where the run's memory peaks. Nothing may read them after.
  void release_records();
  CoreContext& context() { return *ctx_; }
  const arch::AddressMap& address_map() const { return ctx_->map; }

private:
  Engine& sequenced(arch::Engine e);  // engine e's model, or an error naming the engine this core lacks

  const arch::HwConfig& cfg_;
  trace::Stats& stats_;
  std::unique_ptr<MemorySystem> mem_;
  std::unique_ptr<CoreContext> ctx_;
  std::array<std::unique_ptr<Engine>, arch::kNumEngines> engines_;
  std::unique_ptr<dma::DmaSubsystem> dma_;
  std::unique_ptr<dma::DescriptorSampler> dma_sampler_;
  std::uint64_t program_base_ = 0;   // this core's slice of the program area
  std::uint64_t program_bytes_ = 0;
  std::uint64_t program_next_ = 0;
  sc_core::sc_time end_time_;  // of the last run, for bandwidth statistics
  // Each memory's bandwidth over the run, in the memory's group.
  struct Bandwidth : trace::Group {
    Bandwidth(trace::Stats& stats, const sc_core::sc_object& memory, const NeuronCore& core,
              std::function<double()> bytes);
    trace::Formula used_gbps;
  };
  std::vector<std::unique_ptr<Bandwidth>> bandwidth_;
};

}  // namespace tessera::core
