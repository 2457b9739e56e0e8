// How a copy between an HBM view and an SBUF tile becomes DMA descriptors:
// split into pieces by partitions (DmaPieces, the one place that decides how
// a copy is split), each piece's access patterns written into a descriptor's
// fields, and the regions each piece reads and writes.
#pragma once

#include "arch/address_map.h"
#include "arch/config.h"
#include "arch/dma_descriptor.h"
#include "builder/call_name.h"
#include "builder/region.h"
#include "tessera/kernel_builder.h"
#include "tessera/tensor.h"

#include <cstdint>
#include <vector>

namespace tessera::builder {

// A copy the builder has checked: the view's first dimension lies on the
// tile's partitions, dtypes agree, the view fills the tile (or, pitched,
// lands its [partitions x rows x columns] as rows at element r * pitch).
struct DmaCopy {
  enum class Direction { ToTile, FromTile };
  Direction direction = Direction::ToTile;
  const Tile* tile = nullptr;
  const View* view = nullptr;
  std::uint32_t pitch = 0;  // ToTile only; 0: not pitched
};

// The pieces of a copy of `bytes` over `partitions` partitions, the one
// place that decides how a copy is split: `spread.pieces` pieces when it
// says, else as many as make pieces of at least spread.min_piece_bytes
// (DmaSpread::kMinPieceBytes when 0), at most one per engine it may use and
// one per partition. Partitions split as evenly as they go. Each piece is
// one descriptor; Schedule places them on the engines in turn.
class DmaPieces {
public:
  struct Piece {
    std::uint32_t partition;   // first partition, relative to the tile's
    std::uint32_t partitions;
  };

  // `engines`: how many engines the copy may use.
  DmaPieces(std::uint32_t partitions, std::uint64_t bytes, const DmaSpread& spread, std::uint32_t engines);
  std::uint32_t size() const { return count_; }
  Piece operator[](std::uint32_t i) const;

private:
  std::uint32_t partitions_;
  std::uint32_t count_;
};

// One piece, ready to place on a queue.
struct LoweredPiece {
  arch::DmaDescriptor descriptor;
  Region read, write;
};

// Lowers every piece of `copy` into `out` (cleared first). Throws
// KernelError naming `call` when a pattern does not fit a descriptor's
// fields; nothing is placed before every piece is lowered, so a copy that
// fails leaves the kernel as it was.
// `spread` says how many pieces and over how many engines (checked by the caller).
void lower(const DmaCopy& copy, const DmaSpread& spread, const arch::HwConfig& cfg, const arch::AddressMap& map,
           const CallName& call, std::vector<LoweredPiece>& out);

// The engines a copy under `spread` may use (the spread checked).
std::uint32_t spread_engines(const DmaSpread& spread, const arch::HwConfig& cfg);

// The bytes tile `t` names on core `core` (partitions [partition,
// partition + partitions) of it), as the builder orders operations on them:
// an HBM-like region keyed by that core's peer window, so it never overlaps
// a region of this core.
Region remote_region(const Tile& t, std::uint64_t core, const arch::AddressMap& map, std::uint32_t partition,
                     std::uint32_t partitions);

// Lowers a copy of this core's SBUF tile `src` into tile `dst` (same shape
// and dtype, checked by the caller) of core `core` into `out`: pieces by
// partitions over the engines that reach other cores (chip.peer_dma_engines),
// each reading its partitions of `src` and writing remote_region of `dst`.
// The builder's policy over those engines (DmaSpread{}).
void lower_to_core(const Tile& src, const Tile& dst, std::uint64_t core, const arch::HwConfig& cfg,
                   const arch::AddressMap& map, const CallName& call, std::vector<LoweredPiece>& out);

}  // namespace tessera::builder
