// The memories of a core behind one interconnect, built from a config: HBM,
// SBUF, PSUM and the semaphores, routed by the device address map. A
// NeuronCore has one; the sampled-fidelity DMA check builds private ones
// (cosim/dma_sampler.h) so that a sample runs on memory no engine shares.
#pragma once

#include "arch/address_map.h"
#include "arch/config.h"
#include "core/core_context.h"
#include "core/interconnect.h"
#include "core/semaphores.h"
#include "memory/hbm.h"
#include "memory/partitioned_memory.h"
#include "trace/stats.h"

#include <memory>

namespace tessera::core {

struct MemorySystem {
  // The modules are named hbm, sbuf, psum, semaphores and interconnect under
  // the module being constructed. With `shared_hbm` (a chip's, which every
  // core's interconnect binds to) there is no HBM of its own; with
  // `fabric_port` the interconnect has a port to the chip's fabric.
  MemorySystem(const arch::HwConfig& cfg, trace::Stats& stats, memory::Hbm* shared_hbm = nullptr,
               bool fabric_port = false);

  // A context for engines on these memories (no DMA doorbell).
  CoreContext context(const arch::HwConfig& cfg, trace::Stats& stats, bool no_data);

  arch::AddressMap map;
  std::unique_ptr<memory::Hbm> own_hbm;
  memory::Hbm* hbm = nullptr;  // own_hbm, or the chip's
  std::unique_ptr<memory::PartitionedMemory> sbuf;
  std::unique_ptr<memory::PartitionedMemory> psum;
  std::unique_ptr<Semaphores> semaphores;
  std::unique_ptr<Interconnect> interconnect;
};

}  // namespace tessera::core
