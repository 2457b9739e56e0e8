#include "arch/dma_descriptor_check.h"

#include <fmt/format.h>

namespace tessera::arch {

std::uint64_t dma_pattern_last_byte(std::uint64_t base, const std::array<std::uint16_t, 4>& size,
                                    const std::array<std::uint32_t, 4>& stride, std::uint8_t elem_log2) {
  std::uint64_t last = base + (std::uint64_t{1} << elem_log2) - 1;
  for (int k = 0; k < 4; ++k) last += (std::uint64_t{size[k]} - 1) * stride[k];
  return last;
}

DmaCheck check(const DmaDescriptor& d) {
  if (d.magic != kDmaDescriptorMagic)
    return {DmaError::kMagic, fmt::format("magic byte 0x{:02x}, not 0x{:02x}", d.magic, kDmaDescriptorMagic)};
  for (int i = 0; i < 4; ++i) {
    if (d.src_size[i] == 0) return {DmaError::kZeroLength, fmt::format("source dimension {} has size 0", i)};
    if (d.dst_size[i] == 0) return {DmaError::kZeroLength, fmt::format("destination dimension {} has size 0", i)};
  }
  if ((d.flags & ~kDmaFlagsKnown) != 0)
    return {DmaError::kMalformed, fmt::format("reserved flag bits 0x{:x} set", d.flags & ~kDmaFlagsKnown)};
  const std::uint64_t src = dma_elements(d.src_size), dst = dma_elements(d.dst_size);
  if (src != dst)
    return {DmaError::kMalformed, fmt::format("source has {} elements, destination {}", src, dst)};
  // src << elem_log2 may not fit 64 bits (the RTL computes it in 80); compare the count instead.
  if (src >= (kDmaTransferLimitBytes >> d.elem_log2))
    return {DmaError::kMalformed, fmt::format("{} elements of {} bytes: one descriptor moves less than 4 GiB", src,
                                              std::uint64_t{1} << d.elem_log2)};
  if ((d.flags & kDmaFlagCompletion) && d.sem_addr % 4 != 0)
    return {DmaError::kMalformed, fmt::format("semaphore address 0x{:x} not 4-byte aligned", d.sem_addr)};
  return {};
}

}  // namespace tessera::arch
