// The DMA half of the sampled fidelity. The fast DMA engines run every
// descriptor and set the timing; this module re-executes a sample of them on
// the Verilated DMA engine. A sample runs twice, at the same simulated time,
// on two private copies of the core's memories (unloaded, no other
// initiator): once on the RTL engine and once on a fast-model engine, both
// given the source bytes the real run read. Any difference in the bytes they
// leave at the destination, or in the DMA cycles from doorbell to the status
// write-back, stops the run with an error naming the descriptor and both
// results. Contention in context is not sampled: rtl-vs-tlm runs check it.
//
// Which descriptors: the first of each shape (element size, sizes, strides,
// source and destination regions and bus alignment, BARRIER and COMPLETION
// flags), then every simulation.sample_every-th while the samples have used
// less than simulation.sample_rtl_budget_percent of the wall time since the
// first descriptor. A sample never delays the real run; samples wait their
// turn in a queue (beyond the first of each shape, none is queued while one
// is in flight).
#pragma once

#include "arch/config.h"
#include "core/core_context.h"
#include "core/memory_system.h"
#include "core/neuron_core.h"
#include "dma/descriptor_sampler.h"
#include "dma/dma_subsystem.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <chrono>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tessera::cosim {

struct DmaSamplingPolicy {
  std::int64_t sample_every = 64;
  double rtl_budget_percent = 20;
};

class DmaSampler : public sc_core::sc_module, public dma::DescriptorSampler {
public:
  SC_HAS_PROCESS(DmaSampler);
  // `reference` builds the engine the fast model is checked against (the
  // Verilated one by default; tests inject others).
  DmaSampler(sc_core::sc_module_name name, core::CoreContext& core, DmaSamplingPolicy policy,
             const dma::DmaEngineFactory& reference);
  ~DmaSampler() override;

  void executed(const dma::ExecutedDescriptor& d) override;

private:
  // One private copy of the memories with one engine on them.
  struct Shadow;
  struct Sample {
    dma::ExecutedDescriptor what;
    std::vector<std::uint8_t> data;
  };

  void run();
  void check(const Sample& s);
  // The destination bytes a shadow holds after a sample, in stream order.
  std::vector<std::uint8_t> read_destination(Shadow& sh, const arch::DmaDescriptor& d);
  std::string describe(const Sample& s) const;

  core::CoreContext& core_;
  DmaSamplingPolicy policy_;
  trace::Stats shadow_stats_;  // the shadows' own counters stay out of the run's statistics
  std::unique_ptr<Shadow> reference_, fast_;
  std::deque<Sample> queue_;
  sc_core::sc_event queued_;
  bool in_flight_ = false;
  std::set<std::string> shapes_;
  std::uint64_t offered_ = 0;
  std::uint32_t next_slot_ = 0;
  sc_core::sc_time quiet_at_;
  bool started_ = false;
  std::chrono::steady_clock::time_point start_;
  double sample_seconds_ = 0;

  struct SamplerStats : trace::Group {
    SamplerStats(trace::Stats& stats, const sc_core::sc_object& owner);
    trace::Scalar sampled_descriptors, sampled_shapes, unsampled_descriptors, sample_seconds;
  } stats_;
};

// The core's DMA sampler for the sampled fidelity: the Verilated engine of
// the config's parameter set as the reference; throws, naming the list to
// extend, when that set was not built.
core::DmaSamplerFactory rtl_dma_sampler_factory(const arch::HwConfig& cfg);

}  // namespace tessera::cosim
