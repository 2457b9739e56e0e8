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
  // A view of rows (Tile::rows): `free` elements as rows of `row_length`,
  // each `row_pitch` elements after the last, elements `row_step` apart.
  // row_length 0: one contiguous run of `free` elements.
  std::uint32_t row_length = 0, row_pitch = 0, row_step = 1;

  std::uint32_t bytes_per_partition() const { return free * arch::size_of(dtype); }
  bool is_rows() const { return row_length != 0; }
  // Sub-tile of partitions [p, p + np) and free elements [f, f + nf). A view
  // of rows slices by partitions only (f 0, nf its free).
  Tile slice(std::uint32_t p, std::uint32_t np, std::uint32_t f, std::uint32_t nf) const;
  // `nrows` rows of `ncols` elements: row r from element f + r * pitch, its
  // elements `step` apart. One vector, scalar or GpSimd instruction walks all
  // of them (a padded image's interior, a PSUM tile's valid columns), where a
  // contiguous slice would take an instruction per row. Engine operands only:
  // DMA and the tensor engine take contiguous tiles.
  Tile rows(std::uint32_t f, std::uint32_t nrows, std::uint32_t ncols, std::uint32_t pitch,
            std::uint32_t step = 1) const;
  // The same bytes seen as `free` elements of another dtype.
  Tile columns(std::uint32_t f, std::uint32_t nf) const { return slice(0, partitions, f, nf); }
  arch::AccessPattern pattern() const;
};

}  // namespace tessera
