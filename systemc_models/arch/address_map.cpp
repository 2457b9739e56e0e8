#include "arch/address_map.h"

#include <fmt/format.h>

namespace tessera::arch {

AddressMap::AddressMap(const HwConfig& cfg)
    : hbm_bytes(static_cast<std::uint64_t>(cfg.hbm.capacity_gib) << 30),
      sbuf_partition_bytes(static_cast<std::uint64_t>(cfg.sbuf.partition_kib) * 1024),
      sbuf_partitions(static_cast<std::uint64_t>(cfg.sbuf.partitions)),
      psum_partition_bytes(static_cast<std::uint64_t>(cfg.psum.banks * cfg.psum.bank_kib) * 1024),
      psum_partitions(static_cast<std::uint64_t>(cfg.psum.partitions)),
      semaphores(static_cast<std::uint64_t>(cfg.sync.semaphores)) {}

Region AddressMap::region_of(std::uint64_t address, std::uint64_t length) const {
  const auto inside = [&](std::uint64_t base, std::uint64_t size) {
    return address >= base && address - base <= size && length <= size - (address - base);
  };
  if (inside(kHbmBase, hbm_bytes)) return Region::Hbm;
  if (inside(kSbufBase, sbuf_bytes())) return Region::Sbuf;
  if (inside(kPsumBase, psum_bytes())) return Region::Psum;
  if (inside(kSemaphoreBase, semaphores * kSemaphoreStride)) return Region::Semaphore;
  return Region::None;
}

std::string AddressMap::describe(std::uint64_t address) const {
  if (address >= kSbufBase && address < kSbufBase + sbuf_bytes()) {
    const std::uint64_t off = address - kSbufBase;
    return fmt::format("sbuf partition {} byte {}", off / sbuf_partition_bytes, off % sbuf_partition_bytes);
  }
  if (address >= kPsumBase && address < kPsumBase + psum_bytes()) {
    const std::uint64_t off = address - kPsumBase;
    return fmt::format("psum partition {} byte {}", off / psum_partition_bytes, off % psum_partition_bytes);
  }
  if (address >= kSemaphoreBase && address < kSemaphoreBase + semaphores * kSemaphoreStride)
    return fmt::format("semaphore {}", (address - kSemaphoreBase) / kSemaphoreStride);
  if (address < hbm_bytes) return fmt::format("hbm 0x{:x}", address);
  return fmt::format("unmapped 0x{:x}", address);
}

}  // namespace tessera::arch
