// The decode rules of a DMA descriptor, defined once for every C++ layer (the
// fast DMA model, the sampler, the tests). The RTL applies the same rules in
// the same order (rtl/dma/tsr_dma_check.sv); docs/dma.md lists them.
#pragma once

#include "arch/dma_descriptor.h"

#include <array>
#include <cstdint>
#include <string>

namespace tessera::arch {

// One descriptor moves less than this many bytes (the RTL's stream positions are 32 bits).
inline constexpr std::uint64_t kDmaTransferLimitBytes = std::uint64_t{1} << 32;

struct DmaCheck {
  DmaError code = DmaError::kNone;
  std::string detail;  // what is wrong, for an error message; empty when code is kNone
  bool ok() const { return code == DmaError::kNone; }
};

// Elements of one side: the product of its four sizes.
inline std::uint64_t dma_elements(const std::array<std::uint16_t, 4>& size) {
  return std::uint64_t{size[0]} * size[1] * size[2] * size[3];
}

// The last byte one side touches (every dimension at its last index), as the
// RTL computes it: with all sizes non-zero, [base, last] holds every byte.
std::uint64_t dma_pattern_last_byte(std::uint64_t base, const std::array<std::uint16_t, 4>& size,
                                    const std::array<std::uint32_t, 4>& stride, std::uint8_t elem_log2);

// The rules that need nothing but the descriptor, in the RTL's order: magic,
// zero sizes, then MALFORMED (reserved flag bit, element counts that differ, a
// transfer of 4 GiB or more, an unaligned semaphore). The address window (the
// RTL's WIN_BASE..WIN_LIMIT, the fast model's address map) comes after these
// and is the caller's.
DmaCheck check(const DmaDescriptor& d);

}  // namespace tessera::arch
