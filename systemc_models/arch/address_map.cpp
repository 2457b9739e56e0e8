#include "arch/address_map.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::arch {

AddressMap::AddressMap(const HwConfig& cfg)
    : hbm_bytes(static_cast<std::uint64_t>(cfg.hbm.capacity_gib) << 30),
      sbuf_partition_bytes(static_cast<std::uint64_t>(cfg.sbuf.partition_kib) * 1024),
      sbuf_partitions(static_cast<std::uint64_t>(cfg.sbuf.partitions)),
      psum_partition_bytes(static_cast<std::uint64_t>(cfg.psum.banks * cfg.psum.bank_kib) * 1024),
      psum_partitions(static_cast<std::uint64_t>(cfg.psum.partitions)),
      semaphores(static_cast<std::uint64_t>(cfg.sync.semaphores)),
      chip_cores(static_cast<std::uint64_t>(std::max<std::int64_t>(1, cfg.chip.cores))) {}

bool AddressMap::decode_peer(std::uint64_t address, std::uint64_t length, PeerAddress& out) const {
  if (address < kPeerBase || address >= kPeerBase + chip_cores * kPeerStride) return false;
  const std::uint64_t core = (address - kPeerBase) / kPeerStride;
  const std::uint64_t offset = (address - kPeerBase) % kPeerStride;
  const auto inside = [&](std::uint64_t base, std::uint64_t size) {
    return offset >= base && offset - base <= size && length <= size - (offset - base);
  };
  if (inside(0, sbuf_bytes())) {
    out = {core, kSbufBase + offset};
    return true;
  }
  if (inside(kPeerSemaphoreOffset, semaphores * kSemaphoreStride)) {
    out = {core, kSemaphoreBase + (offset - kPeerSemaphoreOffset)};
    return true;
  }
  return false;
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
  PeerAddress peer;
  if (decode_peer(address, 1, peer)) return fmt::format("core {} {}", peer.core, describe(peer.local));
  return fmt::format("unmapped 0x{:x}", address);
}

}  // namespace tessera::arch
