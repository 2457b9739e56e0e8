// libFuzzer harness: the DMA descriptor decoder and its checks. Every 64
// bytes unpack to a descriptor; the check gives a verdict without
// overflowing; packing what was unpacked gives back the fields.
#include "arch/dma_descriptor.h"
#include "arch/dma_descriptor_check.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tessera::arch;
  for (std::size_t at = 0; at + kDmaDescriptorBytes <= size || at == 0; at += kDmaDescriptorBytes) {
    std::array<std::uint8_t, kDmaDescriptorBytes> raw{};
    std::memcpy(raw.data(), data + at, std::min<std::size_t>(kDmaDescriptorBytes, size - at));
    const DmaDescriptor d = unpack(raw);
    (void)check(d);
    (void)dma_pattern_last_byte(d.src_addr, d.src_size, d.src_stride, d.elem_log2);
    (void)dma_pattern_last_byte(d.dst_addr, d.dst_size, d.dst_stride, d.elem_log2);
    if (pack(unpack(pack(d))) != pack(d)) {
      std::fprintf(stderr, "descriptor does not round-trip\n");
      std::abort();
    }
    if (size < kDmaDescriptorBytes) break;
  }
  return 0;
}
