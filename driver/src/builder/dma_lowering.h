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

// The pieces of a copy of `bytes` over `partitions` partitions: the
// partitions split as evenly as they go over up to dma.engines pieces of at
// least 2 KiB (the documented efficient minimum), since the hardware's DMA
// rings share one tile and the engines run in parallel.
class DmaPieces {
public:
  static constexpr std::uint64_t kMinPieceBytes = 2048;
  struct Piece {
    std::uint32_t partition;   // first partition, relative to the tile's
    std::uint32_t partitions;
  };

  DmaPieces(const arch::HwConfig& cfg, std::uint32_t partitions, std::uint64_t bytes);
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
void lower(const DmaCopy& copy, const arch::HwConfig& cfg, const arch::AddressMap& map, const CallName& call,
           std::vector<LoweredPiece>& out);

}  // namespace tessera::builder
