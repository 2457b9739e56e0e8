// The device address map: where HBM, SBUF, PSUM and the semaphores sit in the
// one address space that DMA descriptors and the interconnect use.
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

// The top of HBM holds the engines' instruction streams and DMA descriptor
// rings (a quarter of HBM, 64 MiB .. 4 GiB: a large GEMM has a million
// descriptors); tensors are allocated below it.
inline constexpr std::uint64_t kMinProgramAreaBytes = 64ull << 20;
inline constexpr std::uint64_t kMaxProgramAreaBytes = 4ull << 30;

enum class Region { Hbm, Sbuf, Psum, Semaphore, None };

struct AddressMap {
  std::uint64_t hbm_bytes;
  std::uint64_t sbuf_partition_bytes;
  std::uint64_t sbuf_partitions;
  std::uint64_t psum_partition_bytes;
  std::uint64_t psum_partitions;
  std::uint64_t semaphores;

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

  // The region holding [address, address + length), or None when the range
  // is unmapped or straddles a region's end.
  Region region_of(std::uint64_t address, std::uint64_t length) const;
  std::string describe(std::uint64_t address) const;
};

}  // namespace tessera::arch
