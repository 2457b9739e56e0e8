// The device address map: where HBM, SBUF, PSUM and the semaphores sit in the
// one address space that DMA descriptors and the interconnect use, and, on a
// chip, where every core's SBUF and semaphores appear to the other cores.
#pragma once

#include "arch/config.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace tessera::arch {

// Regions are fixed and far apart, so that every generation (and every
// what-if variant) fits without the map depending on the config.
inline constexpr std::uint64_t kHbmBase = 0x0000'0000'0000ull;
inline constexpr std::uint64_t kSbufBase = 0x1000'0000'0000ull;
inline constexpr std::uint64_t kPsumBase = 0x1100'0000'0000ull;
inline constexpr std::uint64_t kSemaphoreBase = 0x1200'0000'0000ull;
inline constexpr std::uint64_t kSemaphoreStride = 4;  // one 32-bit register each
// Core c of the chip, seen from the others (docs/multicore.md, "Between
// cores"): its SBUF at kPeerBase + c * kPeerStride, its semaphores
// kPeerSemaphoreOffset above that. kMaxChipCores (chip.cores' ceiling) end
// at 0x6000'0000'0000, inside the descriptors' 48-bit addresses.
inline constexpr std::uint64_t kMaxChipCores = 64;
inline constexpr std::uint64_t kPeerBase = 0x2000'0000'0000ull;
inline constexpr std::uint64_t kPeerStride = 0x0100'0000'0000ull;
inline constexpr std::uint64_t kPeerSemaphoreOffset = 0x0080'0000'0000ull;

// The top of HBM holds the engines' instruction streams and DMA descriptor
// rings (a quarter of HBM, 64 MiB .. 4 GiB: a large GEMM has a million
// descriptors); tensors are allocated below it.
inline constexpr std::uint64_t kMinProgramAreaBytes = 64ull << 20;
inline constexpr std::uint64_t kMaxProgramAreaBytes = 4ull << 30;

enum class Region { Hbm, Sbuf, Psum, Semaphore, Peer, None };

// A peer address taken apart: core `core`, at `local` in that core's own map
// (kSbufBase + ... or kSemaphoreBase + ...).
struct PeerAddress {
  std::uint64_t core = 0;
  std::uint64_t local = 0;
};

struct AddressMap {
  std::uint64_t hbm_bytes;
  std::uint64_t sbuf_partition_bytes;
  std::uint64_t sbuf_partitions;
  std::uint64_t psum_partition_bytes;
  std::uint64_t psum_partitions;
  std::uint64_t semaphores;
  std::uint64_t chip_cores;  // chip.cores: the peer windows that exist

  explicit AddressMap(const HwConfig& cfg);

  std::uint64_t program_area_bytes() const {
    return std::clamp(hbm_bytes / 4, kMinProgramAreaBytes, kMaxProgramAreaBytes);
  }
  std::uint64_t program_area_base() const { return kHbmBase + hbm_bytes - program_area_bytes(); }
  std::uint64_t sbuf_bytes() const { return sbuf_partition_bytes * sbuf_partitions; }
  std::uint64_t psum_bytes() const { return psum_partition_bytes * psum_partitions; }

  // SBUF and PSUM are partition-major: partition p, byte b is base + p * partition_bytes + b.
  std::uint64_t sbuf_address(std::uint64_t partition, std::uint64_t byte) const {
    return kSbufBase + partition * sbuf_partition_bytes + byte;
  }
  std::uint64_t psum_address(std::uint64_t partition, std::uint64_t byte) const {
    return kPsumBase + partition * psum_partition_bytes + byte;
  }
  std::uint64_t semaphore_address(std::uint64_t index) const { return kSemaphoreBase + index * kSemaphoreStride; }
  // Core `core`'s SBUF and semaphores, as another core of the chip addresses them.
  std::uint64_t peer_sbuf_address(std::uint64_t core, std::uint64_t partition, std::uint64_t byte) const {
    return kPeerBase + core * kPeerStride + partition * sbuf_partition_bytes + byte;
  }
  std::uint64_t peer_semaphore_address(std::uint64_t core, std::uint64_t index) const {
    return kPeerBase + core * kPeerStride + kPeerSemaphoreOffset + index * kSemaphoreStride;
  }
  // The core and local address of [address, address + length) when it lies
  // inside one core's peer SBUF or semaphores; false otherwise.
  bool decode_peer(std::uint64_t address, std::uint64_t length, PeerAddress& out) const;
  // The end of everything a DMA engine may address (its window's limit): a
  // core's own memories, and on a chip the other cores' peer windows.
  std::uint64_t dma_window_limit(bool on_chip) const {
    return on_chip ? kPeerBase + chip_cores * kPeerStride : kSemaphoreBase + semaphores * kSemaphoreStride;
  }

  // The region holding [address, address + length), or None when the range
  // is unmapped or straddles a region's end. Inline: the interconnect
  // routes every access by it.
  Region region_of(std::uint64_t address, std::uint64_t length) const {
    const auto inside = [&](std::uint64_t base, std::uint64_t size) {
      return address >= base && address - base <= size && length <= size - (address - base);
    };
    if (inside(kHbmBase, hbm_bytes)) return Region::Hbm;
    if (inside(kSbufBase, sbuf_bytes())) return Region::Sbuf;
    if (inside(kPsumBase, psum_bytes())) return Region::Psum;
    if (inside(kSemaphoreBase, semaphores * kSemaphoreStride)) return Region::Semaphore;
    PeerAddress peer;
    if (decode_peer(address, length, peer)) return Region::Peer;
    return Region::None;
  }
  std::string describe(std::uint64_t address) const;
};

}  // namespace tessera::arch
