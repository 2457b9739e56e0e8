// HBM tensors and on-chip tiles, the operands a kernel author names.
#pragma once

#include "arch/isa.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

using arch::DType;

struct View;

// A tensor in device memory (HBM), row-major.
struct Tensor {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::Fp32;
  std::uint64_t address = 0;  // device address of element 0

  std::int64_t elements() const;
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(elements()) * arch::size_of(dtype); }
  // Element stride of each dimension (row-major).
  std::vector<std::int64_t> strides() const;
  // A 2-D window [rows, cols] of a 2-D tensor starting at (row, col).
  View region(std::int64_t row, std::int64_t col, std::int64_t rows, std::int64_t cols) const;
  View all() const;
};

// A window of an HBM tensor as an access pattern: up to 4 dimensions of
// (size, element stride), outermost first. A DMA copies between a view and a
// tile: the view's first dimension maps to the tile's partitions.
struct View {
  const Tensor* tensor = nullptr;
  std::int64_t offset = 0;  // elements from the tensor's start
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;  // in elements

  std::int64_t elements() const;
  // Byte range [first, last] touched, as device addresses.
  std::pair<std::uint64_t, std::uint64_t> byte_range() const;
};

// A rectangle of an on-chip memory: partitions [partition, partition + partitions)
// and, in each, `free` elements from byte `offset`. Tiles come from
// KernelBuilder::sbuf / psum; slicing gives sub-tiles.
struct Tile {
  arch::Memory memory = arch::Memory::None;
  DType dtype = DType::Fp32;
  std::uint32_t partition = 0;
  std::uint32_t partitions = 0;
  std::uint32_t offset = 0;  // bytes
  std::uint32_t free = 0;    // elements per partition
  int id = -1;               // the allocation it belongs to
  std::string name;

  std::uint32_t bytes_per_partition() const { return free * arch::size_of(dtype); }
  // Sub-tile of partitions [p, p + np) and free elements [f, f + nf).
  Tile slice(std::uint32_t p, std::uint32_t np, std::uint32_t f, std::uint32_t nf) const;
  // The same bytes seen as `free` elements of another dtype.
  Tile columns(std::uint32_t f, std::uint32_t nf) const { return slice(0, partitions, f, nf); }
  arch::AccessPattern pattern() const;
};

}  // namespace tessera
