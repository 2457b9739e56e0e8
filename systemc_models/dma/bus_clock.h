// The fast DMA model's rounding to its clock and its bus, on the hot path of
// every access (DmaEngine): integer arithmetic that gives the edges and beat
// counts of the plain formulas (a division in doubles, divisions by the bus
// width) at a fraction of their cost, which was a third of DmaEngine::step.
#pragma once

#include "arch/divider.h"
#include "dma/dma_time.h"

#include <systemc>

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace tessera::dma {

// A clock of `period`: the first edge at or after a time.
class ClockEdges {
public:
  explicit ClockEdges(Time period) : period_(period), divider_(nonzero(period).value()) {
    for (std::size_t n = 0; n < multiples_.size(); ++n) multiples_[n] = period_.times(static_cast<double>(n));
  }

  // n periods, the same time as sc_time's period * n, which multiplies in a
  // double each time: the step loop takes several per access.
  Time cycles(std::uint64_t n) const {
    return n < multiples_.size() ? multiples_[n] : period_.times(static_cast<double>(n));
  }

  // The same edge as period * ceil(t / period - 1e-9) in doubles for every
  // time a run reaches, and exact for all: t mod period by a multiply.
  Time at_or_after(Time t) const {
    const std::uint64_t past = divider_.remainder(t.value());
    return past == 0 ? t : t + Time::units(period_.value() - past);
  }

private:
  static Time nonzero(Time period) {
    if (period == Time()) throw std::invalid_argument("a clock period under the time resolution");
    return period;
  }
  Time period_;
  arch::Divider divider_;
  std::array<Time, 257> multiples_;  // a burst's beats (at most 256), and the engine's fixed gaps
};

// An AXI data bus of `bytes`: addresses rounded down to a beat and byte
// counts in beats, by masks and shifts for a power of two (every shipped
// config), by division otherwise.
class BusWidth {
public:
  explicit BusWidth(std::uint32_t bytes)
      : bytes_(nonzero(bytes)), pow2_((bytes & (bytes - 1)) == 0), shift_(static_cast<unsigned>(__builtin_ctz(bytes))) {}
  std::uint32_t bytes() const { return bytes_; }
  std::uint64_t down(std::uint64_t a) const { return pow2_ ? a & ~std::uint64_t{bytes_ - 1} : a / bytes_ * bytes_; }
  std::uint64_t beats(std::uint64_t n) const { return pow2_ ? n >> shift_ : n / bytes_; }

private:
  static std::uint32_t nonzero(std::uint32_t bytes) {
    if (bytes == 0) throw std::invalid_argument("an AXI bus of 0 bytes");
    return bytes;
  }
  std::uint32_t bytes_;
  bool pow2_;
  unsigned shift_;
};

}  // namespace tessera::dma
