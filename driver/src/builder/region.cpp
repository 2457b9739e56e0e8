#include "builder/region.h"

namespace tessera::builder {

Region region_of(const Tile& t) { return region_of(t, 0, t.partitions); }

Region region_of(const Tile& t, std::uint32_t partition, std::uint32_t partitions) {
  const auto [lo, hi] = t.pattern().byte_extent();
  Region r;
  r.memory = t.memory == arch::Memory::Psum ? arch::Memory::Psum : arch::Memory::Sbuf;
  r.p0 = std::uint64_t{t.partition} + partition;
  r.p1 = r.p0 + partitions;
  r.b0 = static_cast<std::uint64_t>(lo);
  r.b1 = static_cast<std::uint64_t>(hi);
  return r;
}

Region region_of(const View& v) { return region_of(v, 0, v.sizes.empty() ? 1 : v.sizes[0]); }

Region region_of(const View& v, std::int64_t row, std::int64_t rows) {
  const Tensor& t = *v.tensor;
  const std::int64_t pitch = t.shape.back();
  const std::uint64_t e = arch::size_of(t.dtype);
  const std::int64_t offset = v.offset + (v.sizes.empty() ? 0 : row * v.strides[0]);
  std::int64_t lo = offset, hi = offset;
  for (std::size_t d = 0; d < v.sizes.size(); ++d) {
    const std::int64_t span = ((d == 0 ? rows : v.sizes[d]) - 1) * v.strides[d];
    (span < 0 ? lo : hi) += span;
  }
  Region r;
  r.memory = arch::Memory::Hbm;
  r.p0 = static_cast<std::uint64_t>(lo / pitch);
  r.p1 = static_cast<std::uint64_t>(hi / pitch + 1);
  r.b0 = t.address;
  r.b1 = t.address + static_cast<std::uint64_t>(pitch) * e;
  r.tensor = t.address;
  // A window of whole rows' columns (the usual 2-D tile) is exact; any other
  // pattern is taken as whole rows, which only adds ordering.
  if (v.sizes.size() == 2 && v.strides[0] == pitch && v.strides[1] == 1) {
    const std::uint64_t c0 = static_cast<std::uint64_t>(offset % pitch);
    r.b0 = t.address + c0 * e;
    r.b1 = r.b0 + static_cast<std::uint64_t>(v.sizes[1]) * e;
  }
  return r;
}

}  // namespace tessera::builder
