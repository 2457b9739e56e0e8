#include "dma/dma_pattern.h"

#include <algorithm>

namespace tessera::dma {

namespace {

// Calls f(run) for every contiguous run of the pattern, in pattern order.
template <typename F>
void for_each_run(std::uint64_t base, const std::array<std::uint16_t, 4>& size,
                  const std::array<std::uint32_t, 4>& stride, std::uint8_t elem_log2, F&& f) {
  const std::uint32_t elem = 1u << elem_log2;
  // Dimension 0 is one run when its elements are back to back, as in the RTL.
  const bool merged = stride[0] == elem;
  for (std::uint32_t i3 = 0; i3 < size[3]; ++i3)
    for (std::uint32_t i2 = 0; i2 < size[2]; ++i2)
      for (std::uint32_t i1 = 0; i1 < size[1]; ++i1) {
        const std::uint64_t row = base + std::uint64_t{i3} * stride[3] + std::uint64_t{i2} * stride[2] +
                                  std::uint64_t{i1} * stride[1];
        if (merged) {
          f(Run{row, std::uint32_t{size[0]} * elem});
        } else {
          for (std::uint32_t i0 = 0; i0 < size[0]; ++i0) f(Run{row + std::uint64_t{i0} * stride[0], elem});
        }
      }
}

// Appends the bursts of the run of `left` bytes at `a`. `end` is where the
// last burst appended ended (~0 before the first): a run that carries on
// there is one run with it. Inline in the pattern's loop: as a call per run
// it cost about 80 instructions a run, the DMA model decoding each
// descriptor as it starts.
[[gnu::always_inline]] inline void cut(std::uint64_t a, std::uint64_t left, std::uint32_t max_burst_bytes,
                                       std::vector<Run>& out, std::uint64_t& end) {
  if (left == 0) return;
  bool first = a != end;
  end = a + left;
  // A mask for a power of two (every shipped bus width), not a 64-bit
  // division per burst: tens of cycles each.
  const bool pow2 = (max_burst_bytes & (max_burst_bytes - 1)) == 0;
  do {
    const std::uint64_t into = pow2 ? a & (max_burst_bytes - 1) : a % max_burst_bytes;
    const std::uint64_t to_boundary = max_burst_bytes - into;
    const auto n = static_cast<std::uint32_t>(std::min(left, to_boundary));
    out.push_back({a, n, first});
    first = false;
    a += n;
    left -= n;
  } while (left > 0);
}

}  // namespace

std::vector<Run> pattern_runs(std::uint64_t base, const std::array<std::uint16_t, 4>& size,
                              const std::array<std::uint32_t, 4>& stride, std::uint8_t elem_log2) {
  std::vector<Run> runs;
  for_each_run(base, size, stride, elem_log2, [&](const Run& r) { runs.push_back(r); });
  return runs;
}

std::vector<Run> bursts(const std::vector<Run>& runs, std::uint32_t max_burst_bytes) {
  std::vector<Run> out;
  std::uint64_t end = ~std::uint64_t{0};
  for (const Run& r : runs) cut(r.address, r.bytes, max_burst_bytes, out, end);
  return out;
}

void pattern_bursts(std::uint64_t base, const std::array<std::uint16_t, 4>& size,
                    const std::array<std::uint32_t, 4>& stride, std::uint8_t elem_log2, std::uint32_t max_burst_bytes,
                    std::vector<Run>& out) {
  out.clear();
  std::uint64_t end = ~std::uint64_t{0};
  for_each_run(base, size, stride, elem_log2,
               [&](const Run& r) { cut(r.address, r.bytes, max_burst_bytes, out, end); });
}

void BurstCache::bursts(std::uint64_t base, const std::array<std::uint16_t, 4>& size,
                        const std::array<std::uint32_t, 4>& stride, std::uint8_t elem_log2, std::vector<Run>& out) {
  const std::uint32_t m = max_burst_bytes_;
  if ((m & (m - 1)) != 0) return pattern_bursts(base, size, stride, elem_log2, m, out);
  const Shape shape{size, stride, static_cast<std::uint32_t>(base & (m - 1)), elem_log2};
  std::uint64_t h = shape.offset * 0x9E3779B97F4A7C15ull ^ elem_log2;
  for (int d = 0; d < 4; ++d) h = (h ^ size[d]) * 0x100000001B3ull ^ stride[d];
  // The steps above carry high bits of a size or stride into the low bits
  // of h only through the shifts below: without them, shapes that differ in
  // a stride's high bits alone fell on one entry.
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  const std::uint64_t moved = base - shape.offset;
  // A shape may sit in any of kWays entries from its own: two shapes a
  // kernel alternates between no longer evict each other at every
  // descriptor, as they did when each had one entry (a large GEMM's 48
  // shapes missed one lookup in six).
  const std::size_t home = h % kEntries;
  Entry* victim = nullptr;
  for (std::size_t k = 0; k < kWays; ++k) {
    Entry& e = entries_[(home + k) % kEntries];
    if (!e.valid) {
      if (!victim) victim = &e;
      continue;
    }
    if (e.shape == shape) {
      // Copied whole, then moved: a copy field by field took twice the instructions.
      out.assign(e.bursts.begin(), e.bursts.end());
      for (Run& r : out) r.address += moved;
      return;
    }
  }
  pattern_bursts(base, size, stride, elem_log2, m, out);
  if (out.size() > kMostBursts) return;
  if (!victim) victim = &entries_[(home + next_victim_++ % kWays) % kEntries];
  victim->valid = true;
  victim->shape = shape;
  victim->bursts = out;
  for (Run& r : victim->bursts) r.address -= moved;
}

}  // namespace tessera::dma
