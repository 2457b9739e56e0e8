// Test helpers for hand-written DMA programs: a 2-D tile descriptor, a ring
// image of descriptors, and the DmaTrigger that rings a queue's doorbell.
#pragma once

#include "arch/dma_descriptor.h"
#include "arch/isa.h"

#include <cstring>
#include <vector>

namespace tessera::test_support {

// Moves [rows, cols] elements of 2^elem_log2 bytes between two row-major
// layouts, then adds 1 to the semaphore at sem_addr.
inline arch::DmaDescriptor tile_descriptor(std::uint64_t src, std::uint32_t src_row_stride, std::uint64_t dst,
                                           std::uint32_t dst_row_stride, std::uint16_t rows, std::uint16_t cols,
                                           std::uint8_t elem_log2, std::uint64_t sem_addr) {
  arch::DmaDescriptor d;
  d.src_addr = src;
  d.dst_addr = dst;
  d.src_size = {cols, rows, 1, 1};
  d.dst_size = {cols, rows, 1, 1};
  d.src_stride = {1u << elem_log2, src_row_stride, 0, 0};
  d.dst_stride = {1u << elem_log2, dst_row_stride, 0, 0};
  d.elem_log2 = elem_log2;
  d.flags = arch::kDmaFlagCompletion | arch::kDmaFlagLast;
  d.sem_addr = sem_addr;
  d.sem_value = 1;
  d.magic = arch::kDmaDescriptorMagic;
  return d;
}

// A ring of `slots` descriptors holding `ds` from slot 0, the rest zero.
inline std::vector<std::uint8_t> ring_of(const std::vector<arch::DmaDescriptor>& ds, std::size_t slots) {
  std::vector<std::uint8_t> bytes(slots * arch::kDmaDescriptorBytes, 0);
  for (std::size_t i = 0; i < ds.size(); ++i) {
    const auto packed = arch::pack(ds[i]);
    std::memcpy(bytes.data() + i * arch::kDmaDescriptorBytes, packed.data(), packed.size());
  }
  return bytes;
}

inline arch::Instruction trigger(std::uint16_t engine, std::uint16_t queue, std::uint64_t address,
                                 std::uint32_t count) {
  arch::Instruction in;
  in.opcode = arch::Opcode::DmaTrigger;
  in.dma_engine = engine;
  in.dma_queue = queue;
  in.address = address;
  in.value = count;
  return in;
}

}  // namespace tessera::test_support
