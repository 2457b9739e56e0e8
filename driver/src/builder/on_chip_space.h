// SBUF and PSUM space of a kernel: a first-fit range allocator per memory,
// and the table of allocations (the tiles a kernel asked for), with what the
// builder checks at each call (released? written yet?) and what the memory
// profile needs (the first and last operation that touched each).
#pragma once

#include "arch/address_map.h"
#include "arch/config.h"
#include "builder/region.h"
#include "tessera/tensor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::builder {

// First-fit allocator of byte ranges inside [0, limit), never across a
// `boundary` (PSUM banks), at `align`.
class RangeAllocator {
public:
  RangeAllocator(std::uint64_t limit, std::uint64_t boundary, std::uint64_t align);

  std::optional<std::uint64_t> allocate(std::uint64_t bytes);
  void release(std::uint64_t at, std::uint64_t bytes);

  std::uint64_t free_bytes() const;
  std::uint64_t largest() const;
  std::uint64_t limit() const { return limit_; }

private:
  std::uint64_t limit_, boundary_, align_;
  std::map<std::uint64_t, std::uint64_t> free_;  // start -> end
};

struct Allocation {
  std::string name;
  arch::Memory memory = arch::Memory::Sbuf;
  std::uint64_t bytes = 0;  // over all partitions
  bool written = false;
  bool released = false;
  int first_op = -1, last_op = -1;  // operations that touched it
};

class OnChipSpace {
public:
  OnChipSpace(const arch::HwConfig& cfg, const arch::AddressMap& map);

  // A [partitions, free] tile of `memory`, or nothing when no range of
  // free * size_of(dtype) bytes per partition is left.
  std::optional<Tile> allocate(arch::Memory memory, const std::string& name, std::uint32_t partitions,
                               std::uint32_t free, DType dtype);
  // Returns the space of the allocation `t` belongs to (a slice releases all of it).
  void release(const Tile& t);
  // Counts `op` as a use of the allocation holding the on-chip region `r`.
  void note_use(int op, const Region& r);

  const RangeAllocator& allocator(arch::Memory m) const { return m == arch::Memory::Psum ? psum_ : sbuf_; }
  bool exists(int id) const { return id >= 0 && id < static_cast<int>(allocations_.size()); }
  Allocation& operator[](int id) { return allocations_[static_cast<std::size_t>(id)]; }
  const Allocation& operator[](int id) const { return allocations_[static_cast<std::size_t>(id)]; }
  const std::vector<Allocation>& allocations() const { return allocations_; }

private:
  RangeAllocator& allocator_of(arch::Memory m) { return m == arch::Memory::Psum ? psum_ : sbuf_; }
  std::map<std::uint64_t, int>& live(arch::Memory m) { return live_[m == arch::Memory::Psum ? 1 : 0]; }

  RangeAllocator sbuf_, psum_;
  std::vector<Allocation> allocations_;
  // Live allocations by memory and start byte, to find the one a region is in.
  std::map<std::uint64_t, int> live_[2];
};

}  // namespace tessera::builder
