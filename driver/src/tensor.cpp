#include "tessera/tensor.h"

#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <climits>
#include <cstdint>
#include <numeric>

namespace tessera {

std::int64_t Tensor::elements() const {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

std::vector<std::int64_t> Tensor::strides() const {
  std::vector<std::int64_t> s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

View Tensor::region(std::int64_t row, std::int64_t col, std::int64_t rows, std::int64_t cols) const {
  if (shape.size() != 2)
    throw KernelError(fmt::format("tensor '{}': region() needs a 2-D tensor, this one has {} dimensions", name,
                                  shape.size()));
  if (row < 0 || col < 0 || rows < 1 || cols < 1 || row + rows > shape[0] || col + cols > shape[1])
    throw KernelError(fmt::format("tensor '{}' [{} x {}]: region rows {}..{}, cols {}..{} is outside it", name,
                                  shape[0], shape[1], row, row + rows - 1, col, col + cols - 1));
  return View{this, row * shape[1] + col, {rows, cols}, {shape[1], 1}};
}

View Tensor::all() const { return View{this, 0, shape, strides()}; }

std::int64_t View::elements() const {
  return std::accumulate(sizes.begin(), sizes.end(), std::int64_t{1}, std::multiplies<>());
}

std::pair<std::uint64_t, std::uint64_t> View::byte_range() const {
  std::int64_t lo = offset, hi = offset;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    const std::int64_t span = (sizes[d] - 1) * strides[d];
    (span < 0 ? lo : hi) += span;
  }
  const std::uint64_t e = arch::size_of(tensor->dtype);
  return {tensor->address + static_cast<std::uint64_t>(lo) * e, tensor->address + static_cast<std::uint64_t>(hi) * e + e - 1};
}

Tile Tile::slice(std::uint32_t p, std::uint32_t np, std::uint32_t f, std::uint32_t nf) const {
  if (np == 0 || nf == 0 || p + np > partitions || f + nf > free)
    throw KernelError(fmt::format("tile '{}' [{} x {}]: slice partitions {}..{}, free {}..{} is outside it", name,
                                  partitions, free, p, p + np - 1, f, f + nf - 1));
  if (is_rows() && (f != 0 || nf != free))
    throw KernelError(fmt::format("tile '{}' is a view of {} rows of {}: it slices by partitions only (take the rows "
                                  "of a slice instead)",
                                  name, free / row_length, row_length));
  Tile t = *this;
  t.partition = partition + p;
  t.partitions = np;
  t.offset = offset + f * arch::size_of(dtype);
  t.free = nf;
  return t;
}

Tile Tile::rows(std::uint32_t f, std::uint32_t nrows, std::uint32_t ncols, std::uint32_t pitch,
                std::uint32_t step) const {
  const auto view = [&] { return fmt::format("tile '{}' [{} x {}]: rows(from {}, {} rows of {}, pitch {}, step {})", name,
                                             partitions, free, f, nrows, ncols, pitch, step); };
  if (is_rows()) throw KernelError(fmt::format("{}: the tile is already a view of rows", view()));
  if (nrows == 0 || ncols == 0 || step == 0)
    throw KernelError(fmt::format("{}: rows, columns and step must be at least 1", view()));
  // Rows may not overlap: a destination element would be written twice.
  const std::uint64_t row_span = std::uint64_t{ncols - 1} * step + 1;
  if (nrows > 1 && pitch < row_span)
    throw KernelError(fmt::format("{}: the pitch is shorter than a row ({} elements), so rows overlap", view(),
                                  row_span));
  const std::uint64_t end = f + std::uint64_t{nrows - 1} * pitch + row_span;
  if (end > free) throw KernelError(fmt::format("{}: reaches element {}, past the tile's {}", view(), end - 1, free));
  const std::uint64_t elements = std::uint64_t{nrows} * ncols;
  if (pitch > static_cast<std::uint32_t>(INT32_MAX) || step > static_cast<std::uint32_t>(INT32_MAX))
    throw KernelError(fmt::format("{}: a stride past 2^31 elements", view()));
  Tile t = *this;
  t.offset = offset + f * arch::size_of(dtype);
  t.free = static_cast<std::uint32_t>(elements);
  t.row_length = ncols;
  t.row_pitch = nrows > 1 ? pitch : ncols * step;
  t.row_step = step;
  return t;
}

arch::AccessPattern Tile::pattern() const {
  arch::AccessPattern ap = arch::tile(memory, dtype, static_cast<std::uint16_t>(partition),
                                      static_cast<std::uint16_t>(partitions), offset, free);
  if (!is_rows()) return ap;
  ap.num_dims = 2;
  ap.size = {free / row_length, row_length, 0, 0};
  ap.stride = {static_cast<std::int32_t>(row_pitch), static_cast<std::int32_t>(row_step), 0, 0};
  return ap;
}

}  // namespace tessera
