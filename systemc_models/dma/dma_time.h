// The fast DMA model's time: an sc_time held as its count of resolution
// units, with the same arithmetic. sc_time declares its own copy
// constructor, so the ABI passes and returns it through memory: every
// std::max, every helper's result and every field copy of the step loop
// went through a store and a load. This type is trivially copyable and
// stays in registers (1.6 % fewer instructions for a whole GEMM run,
// docs/performance.md). The model converts at its edges: the TLM delay it
// annotates, the waits it makes in SystemC, the records it leaves.
#pragma once

#include "trace/sim_time.h"

#include <systemc>

#include <cstdint>

namespace tessera::dma {

class Time {
public:
  constexpr Time() = default;
  // Implicit: a SystemC time where the model takes one is the same value.
  Time(const sc_core::sc_time& t) : v_(t.value()) {}  // NOLINT(google-explicit-constructor)
  static constexpr Time units(std::uint64_t v) {
    Time t;
    t.v_ = v;
    return t;
  }

  constexpr std::uint64_t value() const { return v_; }
  sc_core::sc_time sc() const { return trace::ticks(v_); }

  // sc_time's operator*: the value times d in a double, plus a half, truncated.
  Time times(double d) const {
    volatile double tmp = sc_dt::uint64_to_double(v_) * d + 0.5;
    return units(static_cast<std::uint64_t>(static_cast<std::int64_t>(tmp)));
  }

  // Unsigned and wrapping, as sc_time's are.
  Time& operator+=(Time o) {
    v_ += o.v_;
    return *this;
  }
  Time& operator-=(Time o) {
    v_ -= o.v_;
    return *this;
  }
  friend Time operator+(Time a, Time b) { return units(a.v_ + b.v_); }
  friend Time operator-(Time a, Time b) { return units(a.v_ - b.v_); }
  friend bool operator==(Time a, Time b) { return a.v_ == b.v_; }
  friend bool operator!=(Time a, Time b) { return a.v_ != b.v_; }
  friend bool operator<(Time a, Time b) { return a.v_ < b.v_; }
  friend bool operator<=(Time a, Time b) { return a.v_ <= b.v_; }
  friend bool operator>(Time a, Time b) { return a.v_ > b.v_; }
  friend bool operator>=(Time a, Time b) { return a.v_ >= b.v_; }

private:
  std::uint64_t v_ = 0;
};

// sc_max_time()'s value, the model's "never".
inline constexpr Time kNever = Time::units(~std::uint64_t{0});

}  // namespace tessera::dma
