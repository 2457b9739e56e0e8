#include "core/memory_system.h"

namespace tessera::core {

using sc_core::sc_time;
using sc_core::SC_NS;

MemorySystem::MemorySystem(const arch::HwConfig& cfg, trace::Stats& stats, memory::Hbm* shared_hbm, bool fabric_port)
    : map(cfg) {
  // On-chip memories count time in tensor-engine cycles: the array is what
  // they are built to feed.
  const sc_time mem_clock(1.0 / cfg.tensor.clock_ghz, SC_NS);
  if (shared_hbm) {
    hbm = shared_hbm;
  } else {
    own_hbm = std::make_unique<memory::Hbm>("hbm", cfg.hbm, stats);
    hbm = own_hbm.get();
  }
  sbuf = std::make_unique<memory::PartitionedMemory>(
      "sbuf",
      memory::PartitionedMemoryParams{map.sbuf_partitions, map.sbuf_partition_bytes, mem_clock,
                                      static_cast<std::uint64_t>(cfg.sbuf.access_latency_cycles),
                                      static_cast<std::uint64_t>(cfg.sbuf.bytes_per_cycle), cfg.dma.bytes_per_ns},
      stats);
  psum = std::make_unique<memory::PartitionedMemory>(
      "psum",
      memory::PartitionedMemoryParams{map.psum_partitions, map.psum_partition_bytes, mem_clock,
                                      static_cast<std::uint64_t>(cfg.psum.access_latency_cycles),
                                      static_cast<std::uint64_t>(cfg.sbuf.bytes_per_cycle), cfg.dma.bytes_per_ns},
      stats);
  semaphores = std::make_unique<Semaphores>("semaphores", static_cast<std::size_t>(cfg.sync.semaphores),
                                            sc_time(cfg.sync.latency_ns, SC_NS), stats);
  interconnect = std::make_unique<Interconnect>("interconnect", map, fabric_port);
  interconnect->to_hbm.bind(hbm->socket);
  interconnect->to_sbuf.bind(sbuf->socket);
  interconnect->to_psum.bind(psum->socket);
  interconnect->to_semaphores.bind(semaphores->socket);
}

CoreContext MemorySystem::context(const arch::HwConfig& cfg, trace::Stats& stats, bool no_data) {
  return CoreContext{cfg, map, *hbm, *sbuf, *psum, *semaphores, stats, nullptr, no_data, {}};
}

}  // namespace tessera::core
