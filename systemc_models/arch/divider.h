// Division by a divisor fixed when a model is built (a memory's partition
// size, a clock's period), exact, by a multiply: a 64-bit division is tens
// of cycles, and the models divide on every access.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <utility>

namespace tessera::arch {

class Divider {
public:
  explicit Divider(std::uint64_t d) : d_(nonzero(d)), inverse_(~std::uint64_t{0} / d) {}

  std::uint64_t divisor() const { return d_; }

  // {x / d, x % d}. The multiply by the inverse, floor((2^64 - 1) / d),
  // gives a quotient at most one short for any x below 2^63 (the inverse is
  // short of 2^64 / d by under 2 parts in 2^64), which the loop mends in one
  // compare; above, in a few.
  std::pair<std::uint64_t, std::uint64_t> divide(std::uint64_t x) const {
    auto q = static_cast<std::uint64_t>((static_cast<unsigned __int128>(x) * inverse_) >> 64);
    std::uint64_t r = x - q * d_;
    while (r >= d_) {
      r -= d_;
      ++q;
    }
    return {q, r};
  }
  std::uint64_t quotient(std::uint64_t x) const { return divide(x).first; }
  std::uint64_t remainder(std::uint64_t x) const { return divide(x).second; }

private:
  static std::uint64_t nonzero(std::uint64_t d) {
    if (d == 0) throw std::invalid_argument("a division by zero");
    return d;
  }
  std::uint64_t d_;
  std::uint64_t inverse_;
};

}  // namespace tessera::arch
