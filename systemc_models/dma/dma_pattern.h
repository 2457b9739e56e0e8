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

// pattern_bursts, remembered by the pattern's shape. A kernel's descriptors
// repeat a few shapes at many addresses, and a pattern moved by a multiple
// of max_burst_bytes has the same bursts moved (every cut falls on a multiple
// of it), so a shape is cut once for each offset within max_burst_bytes.
// Decoding cut both sides of every descriptor, about 1,100 instructions of
// the 27,000 a descriptor cost. A shape takes one of kWays entries from
// the one it hashes onto, the first free, else each in turn. Long patterns
// (which leave the entries as they were), and a max_burst_bytes not a power
// of two, are cut every time.
class BurstCache {
public:
  explicit BurstCache(std::uint32_t max_burst_bytes) : max_burst_bytes_(max_burst_bytes) {}
  std::uint32_t max_burst_bytes() const { return max_burst_bytes_; }
  // pattern_bursts(base, size, stride, elem_log2, max_burst_bytes, out).
  void bursts(std::uint64_t base, const std::array<std::uint16_t, 4>& size, const std::array<std::uint32_t, 4>& stride,
              std::uint8_t elem_log2, std::vector<Run>& out);

  static constexpr std::size_t kEntries = 256;
  static constexpr std::size_t kWays = 4;  // the entries a shape may take, from the one it hashes onto
  static constexpr std::size_t kMostBursts = 256;  // longer patterns are not kept

private:
  struct Shape {
    std::array<std::uint16_t, 4> size{};
    std::array<std::uint32_t, 4> stride{};
    std::uint32_t offset = 0;  // base within max_burst_bytes
    std::uint8_t elem_log2 = 0;
    // Field by field: the arrays' operator== became two calls to memcmp per lookup.
    friend bool operator==(const Shape& a, const Shape& b) {
      for (std::size_t d = 0; d < 4; ++d)
        if (a.size[d] != b.size[d] || a.stride[d] != b.stride[d]) return false;
      return a.offset == b.offset && a.elem_log2 == b.elem_log2;
    }
  };
  struct Entry {
    bool valid = false;
    Shape shape;
    std::vector<Run> bursts;  // at base `offset`
  };
  std::uint32_t max_burst_bytes_;
  std::array<Entry, kEntries> entries_;
  std::size_t next_victim_ = 0;  // which of a full neighbourhood's entries a new shape replaces, in turn
};

// Bursts of at most 256 beats of `data_bytes` that never cross a 4 KiB page.
inline std::uint32_t max_burst_bytes(std::uint32_t data_bytes) { return std::min<std::uint32_t>(4096, 256 * data_bytes); }

// The read-to-write byte buffer of an engine with `max_outstanding` read
// slots: one 4 KiB (largest) burst per slot, so that reads can stream while
// writes drain. Every Verilated parameter set is built with it
// (systemc_models/cosim/CMakeLists.txt); reads wait when it is full.
inline std::uint64_t buffer_bytes(std::uint32_t max_outstanding) { return 4096ull * max_outstanding; }

}  // namespace tessera::dma
