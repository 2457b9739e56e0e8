#include "builder/dma_lowering.h"

#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace tessera::builder {
namespace {

std::uint8_t log2_of(std::uint32_t v) {
  std::uint8_t n = 0;
  while ((1u << n) < v) ++n;
  return n;
}

// A pattern of (size, element stride) pairs, outermost first, as a
// descriptor side sees it.
struct SidePattern {
  std::uint64_t base = 0;  // device address of element 0
  const std::int64_t* sizes = nullptr;
  const std::int64_t* strides = nullptr;
  std::size_t dims = 0;
  std::int64_t first_size = 0;  // replaces sizes[0]: the piece's partitions or rows
};

// Fills one side of a descriptor (descriptor dim 0 is innermost); throws when
// the pattern does not fit the descriptor's fields.
void fill_side(const CallName& call, const char* side, const SidePattern& pat, std::uint32_t esize,
               std::uint64_t& addr, std::array<std::uint16_t, 4>& size, std::array<std::uint32_t, 4>& stride) {
  // Unit dimensions are dropped; the descriptor holds four.
  std::size_t used = 0;
  for (std::size_t i = 0; i < pat.dims; ++i) used += (i == 0 ? pat.first_size : pat.sizes[i]) != 1;
  if (used > 4)
    throw KernelError(fmt::format("{}: the {} pattern has {} dimensions; a DMA descriptor takes 4", call.str(), side,
                                  used));
  addr = pat.base;
  size = {1, 1, 1, 1};
  stride = {esize, 0, 0, 0};
  std::size_t d = used;
  for (std::size_t i = 0; i < pat.dims; ++i) {
    const std::int64_t n = i == 0 ? pat.first_size : pat.sizes[i];
    if (n == 1) continue;
    --d;
    const std::int64_t bytes = pat.strides[i] * esize;
    if (n > 65535)
      throw KernelError(
          fmt::format("{}: {} dimension of {} elements exceeds a descriptor's 65535", call.str(), side, n));
    if (bytes < 0 || bytes >= (1 << 24))
      throw KernelError(
          fmt::format("{}: {} stride of {} bytes is outside a descriptor's 0..16 MiB", call.str(), side, bytes));
    size[d] = static_cast<std::uint16_t>(n);
    stride[d] = static_cast<std::uint32_t>(bytes);
  }
}

}  // namespace

DmaPieces::DmaPieces(std::uint32_t partitions, std::uint64_t bytes, const DmaSpread& spread, std::uint32_t engines)
    : partitions_(partitions) {
  if (spread.pieces > 0) {
    count_ = std::min(spread.pieces, partitions);
    return;
  }
  const std::uint64_t min_bytes = spread.min_piece_bytes > 0 ? spread.min_piece_bytes : DmaSpread::kMinPieceBytes;
  const std::uint64_t by_size = std::max<std::uint64_t>(1, bytes / min_bytes);
  count_ = static_cast<std::uint32_t>(std::min<std::uint64_t>({std::max<std::uint32_t>(1, engines), partitions, by_size}));
}

std::uint32_t spread_engines(const DmaSpread& spread, const arch::HwConfig& cfg) {
  const auto all = static_cast<std::uint32_t>(cfg.dma.engines);
  return spread.engines > 0 ? spread.engines : all - std::min(all, spread.first_engine);
}

DmaPieces::Piece DmaPieces::operator[](std::uint32_t i) const {
  const std::uint32_t base = partitions_ / count_, extra = partitions_ % count_;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

void lower(const DmaCopy& copy, const DmaSpread& spread, const arch::HwConfig& cfg, const arch::AddressMap& map,
           const CallName& call, std::vector<LoweredPiece>& out) {
  out.clear();
  const Tile& tile = *copy.tile;
  const View& view = *copy.view;
  const std::uint32_t e = arch::size_of(tile.dtype);
  const bool to_tile = copy.direction == DmaCopy::Direction::ToTile;
  const bool pitched = to_tile && copy.pitch > 0;
  const std::int64_t partition_elems = static_cast<std::int64_t>(map.sbuf_partition_bytes / e);
  // The tile side, partitions outermost: [partitions x free], or pitched
  // [partitions x rows x columns] with rows `pitch` elements apart.
  const std::array<std::int64_t, 3> tile_sizes =
      pitched ? std::array<std::int64_t, 3>{tile.partitions, view.sizes[1], view.sizes[2]}
              : std::array<std::int64_t, 3>{tile.partitions, tile.free, 0};
  const std::array<std::int64_t, 3> tile_strides =
      pitched ? std::array<std::int64_t, 3>{partition_elems, copy.pitch, 1} : std::array<std::int64_t, 3>{partition_elems, 1, 0};
  const std::size_t tile_dims = pitched ? 3 : 2;

  const DmaPieces pieces(tile.partitions, static_cast<std::uint64_t>(view.elements()) * e, spread,
                         spread_engines(spread, cfg));
  for (std::uint32_t i = 0; i < pieces.size(); ++i) {
    const auto [p, np] = pieces[i];
    const SidePattern tile_side{map.sbuf_address(tile.partition + p, tile.offset), tile_sizes.data(),
                                tile_strides.data(), tile_dims, np};
    const std::int64_t view_offset = view.offset + static_cast<std::int64_t>(p) * view.strides[0];
    const SidePattern view_side{view.tensor->address + static_cast<std::uint64_t>(view_offset) * e, view.sizes.data(),
                                view.strides.data(), view.sizes.size(), np};
    LoweredPiece piece;
    arch::DmaDescriptor& d = piece.descriptor;
    d.elem_log2 = log2_of(e);
    const SidePattern& src = to_tile ? view_side : tile_side;
    const SidePattern& dst = to_tile ? tile_side : view_side;
    fill_side(call, "source", src, e, d.src_addr, d.src_size, d.src_stride);
    fill_side(call, "destination", dst, e, d.dst_addr, d.dst_size, d.dst_stride);
    const Region tile_region = region_of(tile, p, np), view_region = region_of(view, p, np);
    piece.read = to_tile ? view_region : tile_region;
    piece.write = to_tile ? tile_region : view_region;
    out.push_back(piece);
  }
}

Region remote_region(const Tile& t, std::uint64_t core, const arch::AddressMap& map, std::uint32_t partition,
                     std::uint32_t partitions) {
  Region r = region_of(t, partition, partitions);
  r.memory = arch::Memory::Hbm;
  r.tensor = map.peer_sbuf_address(core, 0, 0);
  return r;
}

void lower_to_core(const Tile& src, const Tile& dst, std::uint64_t core, const arch::HwConfig& cfg,
                   const arch::AddressMap& map, const CallName& call, std::vector<LoweredPiece>& out) {
  out.clear();
  const std::uint32_t e = arch::size_of(src.dtype);
  const std::int64_t partition_elems = static_cast<std::int64_t>(map.sbuf_partition_bytes / e);
  // Both sides [partitions x free], partitions outermost.
  const std::array<std::int64_t, 2> sizes{src.partitions, src.free};
  const std::array<std::int64_t, 2> strides{partition_elems, 1};
  const DmaSpread spread;
  const DmaPieces pieces(src.partitions, std::uint64_t{src.partitions} * src.bytes_per_partition(), spread,
                         static_cast<std::uint32_t>(arch::peer_dma_engines(cfg)));
  for (std::uint32_t i = 0; i < pieces.size(); ++i) {
    const auto [p, np] = pieces[i];
    const SidePattern from{map.sbuf_address(src.partition + p, src.offset), sizes.data(), strides.data(), 2, np};
    const SidePattern to{map.peer_sbuf_address(core, dst.partition + p, dst.offset), sizes.data(), strides.data(), 2,
                         np};
    LoweredPiece piece;
    arch::DmaDescriptor& d = piece.descriptor;
    d.elem_log2 = log2_of(e);
    fill_side(call, "source", from, e, d.src_addr, d.src_size, d.src_stride);
    fill_side(call, "destination", to, e, d.dst_addr, d.dst_size, d.dst_stride);
    piece.read = region_of(src, p, np);
    piece.write = remote_region(dst, core, map, p, np);
    out.push_back(piece);
  }
}

}  // namespace tessera::builder
