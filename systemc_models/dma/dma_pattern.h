// One side of a DMA descriptor (base, 4 x (size, stride), element size) as the
// list of contiguous byte runs it covers, in pattern order (dim 0 innermost),
// the same runs the RTL walker (rtl/dma/tsr_dma_walker.sv) produces before it
// cuts them into bursts.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace tessera::dma {

struct Run {
  std::uint64_t address;
  std::uint32_t bytes;
  // A burst (from bursts()) that starts a contiguous run: the first of its
  // side, or one that does not carry on where the burst before it ended.
  bool first = true;
  friend bool operator==(const Run& a, const Run& b) { return a.address == b.address && a.bytes == b.bytes; }
};

std::vector<Run> pattern_runs(std::uint64_t base, const std::array<std::uint16_t, 4>& size,
                              const std::array<std::uint32_t, 4>& stride, std::uint8_t elem_log2);

// Bursts as AXI allows them: a run cut at `max_burst_bytes`-aligned boundaries
// (max_burst_bytes divides 4 KiB, so no burst crosses a 4 KiB page).
std::vector<Run> bursts(const std::vector<Run>& runs, std::uint32_t max_burst_bytes);

// bursts(pattern_runs(...)) into `out` (cleared first), without the runs in between.
void pattern_bursts(std::uint64_t base, const std::array<std::uint16_t, 4>& size,
                    const std::array<std::uint32_t, 4>& stride, std::uint8_t elem_log2, std::uint32_t max_burst_bytes,
                    std::vector<Run>& out);

// Bursts of at most 256 beats of `data_bytes` that never cross a 4 KiB page.
inline std::uint32_t max_burst_bytes(std::uint32_t data_bytes) { return std::min<std::uint32_t>(4096, 256 * data_bytes); }

// The read-to-write byte buffer of an engine with `max_outstanding` read
// slots: one 4 KiB (largest) burst per slot, so that reads can stream while
// writes drain. Every Verilated parameter set is built with it
// (systemc_models/cosim/CMakeLists.txt); reads wait when it is full.
inline std::uint64_t buffer_bytes(std::uint32_t max_outstanding) { return 4096ull * max_outstanding; }

}  // namespace tessera::dma
