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

void cut(const Run& r, std::uint32_t max_burst_bytes, std::vector<Run>& out) {
  std::uint64_t a = r.address;
  std::uint64_t left = r.bytes;
  // A mask for a power of two (every shipped bus width), not a 64-bit
  // division per burst: tens of cycles each.
  const bool pow2 = (max_burst_bytes & (max_burst_bytes - 1)) == 0;
  // A run that carries on where the previous one ended is one run with it.
  bool first = out.empty() || out.back().address + out.back().bytes != a;
  while (left > 0) {
    const std::uint64_t into = pow2 ? a & (max_burst_bytes - 1) : a % max_burst_bytes;
    const std::uint64_t to_boundary = max_burst_bytes - into;
    const std::uint32_t n = static_cast<std::uint32_t>(std::min(left, to_boundary));
    out.push_back({a, n, first});
    first = false;
    a += n;
    left -= n;
  }
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
  for (const Run& r : runs) cut(r, max_burst_bytes, out);
  return out;
}

void pattern_bursts(std::uint64_t base, const std::array<std::uint16_t, 4>& size,
                    const std::array<std::uint32_t, 4>& stride, std::uint8_t elem_log2, std::uint32_t max_burst_bytes,
                    std::vector<Run>& out) {
  out.clear();
  for_each_run(base, size, stride, elem_log2, [&](const Run& r) { cut(r, max_burst_bytes, out); });
}

}  // namespace tessera::dma
