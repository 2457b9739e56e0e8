// What an operation of a kernel touches, as the builder orders operations:
// a rectangle of partitions and bytes of SBUF or PSUM, or of rows and bytes
// of an HBM tensor.
#pragma once

#include "arch/isa.h"
#include "tessera/tensor.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace tessera::builder {

// Partitions [p0, p1) and bytes [b0, b1) of each, in SBUF or PSUM. In HBM a
// tensor is seen as rows of its last dimension: rows [p0, p1), and b the byte
// range within a row, offset by the tensor's address so that distinct
// tensors never overlap.
struct Region {
  arch::Memory memory = arch::Memory::Sbuf;
  std::uint64_t p0 = 0, p1 = 0, b0 = 0, b1 = 0;
  std::uint64_t tensor = 0;  // HBM: the tensor's address

  bool on_chip() const { return memory == arch::Memory::Sbuf || memory == arch::Memory::Psum; }
  bool overlaps(const Region& o) const {
    return memory == o.memory && tensor == o.tensor && p0 < o.p1 && o.p0 < p1 && b0 < o.b1 && o.b0 < b1;
  }
  bool covers(const Region& o) const {
    return memory == o.memory && tensor == o.tensor && p0 <= o.p0 && o.p1 <= p1 && b0 <= o.b0 && o.b1 <= b1;
  }
  bool operator==(const Region& o) const {
    return memory == o.memory && tensor == o.tensor && p0 == o.p0 && p1 == o.p1 && b0 == o.b0 && b1 == o.b1;
  }
};

Region region_of(const Tile& t);
// Partitions [partition, partition + partitions) of a tile.
Region region_of(const Tile& t, std::uint32_t partition, std::uint32_t partitions);
Region region_of(const View& v);
// Rows [row, row + rows) of a view's first dimension.
Region region_of(const View& v, std::int64_t row, std::int64_t rows);

// The regions one operation reads (or writes): at most three (Select reads
// a, b and its predicate). Fixed capacity, so that an operation costs no
// allocation.
class RegionList {
public:
  RegionList() = default;
  RegionList(std::initializer_list<Region> regions) {
    for (const Region& r : regions) push_back(r);
  }
  void push_back(const Region& r) { items_.at(size_++) = r; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Region* begin() const { return items_.data(); }
  const Region* end() const { return items_.data() + size_; }
  bool operator==(const RegionList& o) const { return std::equal(begin(), end(), o.begin(), o.end()); }

private:
  std::array<Region, 3> items_{};
  std::size_t size_ = 0;
};

}  // namespace tessera::builder
