#include "builder/on_chip_space.h"

#include <algorithm>
#include <iterator>

namespace tessera::builder {

RangeAllocator::RangeAllocator(std::uint64_t limit, std::uint64_t boundary, std::uint64_t align)
    : limit_(limit), boundary_(boundary), align_(align) {
  free_[0] = limit;
}

std::optional<std::uint64_t> RangeAllocator::allocate(std::uint64_t bytes) {
  for (auto& [start, end] : free_) {
    std::uint64_t at = (start + align_ - 1) / align_ * align_;
    if (boundary_ && at / boundary_ != (at + bytes - 1) / boundary_) at = (at / boundary_ + 1) * boundary_;
    if (at + bytes > end) continue;
    const std::uint64_t s = start, e = end;
    free_.erase(s);
    if (at > s) free_[s] = at;
    if (at + bytes < e) free_[at + bytes] = e;
    return at;
  }
  return std::nullopt;
}

void RangeAllocator::release(std::uint64_t at, std::uint64_t bytes) {
  std::uint64_t s = at, e = at + bytes;
  auto next = free_.lower_bound(s);
  if (next != free_.end() && next->first == e) {
    e = next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->second == s) {
      s = prev->first;
      free_.erase(prev);
    }
  }
  free_[s] = e;
}

std::uint64_t RangeAllocator::free_bytes() const {
  std::uint64_t n = 0;
  for (const auto& [s, e] : free_) n += e - s;
  return n;
}

std::uint64_t RangeAllocator::largest() const {
  std::uint64_t n = 0;
  for (const auto& [s, e] : free_) n = std::max(n, e - s);
  return n;
}

// 4-byte alignment: any dtype's elements stay aligned, and small tiles on
// small configs waste nothing.
OnChipSpace::OnChipSpace(const arch::HwConfig& cfg, const arch::AddressMap& map)
    : sbuf_(map.sbuf_partition_bytes, 0, 4),
      psum_(map.psum_partition_bytes, static_cast<std::uint64_t>(cfg.psum.bank_kib) * 1024, 4) {}

std::optional<Tile> OnChipSpace::allocate(arch::Memory memory, const std::string& name, std::uint32_t partitions,
                                          std::uint32_t free, DType dtype) {
  const std::uint64_t bytes = std::uint64_t{free} * arch::size_of(dtype);
  const auto at = allocator_of(memory).allocate(bytes);
  if (!at) return std::nullopt;
  Tile t{memory, dtype, 0, partitions, static_cast<std::uint32_t>(*at), free, static_cast<int>(allocations_.size()),
         name};
  allocations_.push_back({name, memory, bytes * partitions});
  live(memory)[*at] = t.id;
  return t;
}

void OnChipSpace::release(const Tile& t) {
  allocations_[static_cast<std::size_t>(t.id)].released = true;
  const std::uint64_t bytes = std::uint64_t{t.free} * arch::size_of(t.dtype);
  allocator_of(t.memory).release(t.offset, bytes);
  auto& l = live(t.memory);
  for (auto it = l.begin(); it != l.end(); ++it)
    if (it->second == t.id) {
      l.erase(it);
      break;
    }
}

void OnChipSpace::note_use(int op, const Region& r) {
  if (!r.on_chip()) return;
  auto& l = live(r.memory);
  auto it = l.upper_bound(r.b0);
  if (it == l.begin()) return;
  Allocation& a = allocations_[static_cast<std::size_t>(std::prev(it)->second)];
  if (a.first_op < 0) a.first_op = op;
  a.last_op = op;
}

}  // namespace tessera::builder
