#include "arch/divider.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

using tessera::arch::Divider;

// The quotient and remainder are those of / and %, for divisors of every
// size (the DMA clock's period in picoseconds, SBUF's 192 KiB partitions,
// powers of two and their neighbours, the largest) and dividends over the
// whole 64-bit range, where the estimate from the inverse may be short by
// more than one.
TEST(Divider, GivesTheQuotientAndRemainderOfIntegerDivision) {
  std::vector<std::uint64_t> divisors = {1, 2, 3, 7, 714, 1000, 196608, 1ull << 32, (1ull << 32) + 1,
                                         (1ull << 63) - 1, 1ull << 63, (1ull << 63) + 1,
                                         std::numeric_limits<std::uint64_t>::max()};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) divisors.push_back(rng() >> (rng() % 64));
  for (const std::uint64_t d : divisors) {
    if (d == 0) continue;
    const Divider divider(d);
    std::vector<std::uint64_t> xs = {0, 1, d - 1, d, d + 1, 2 * d - 1, std::numeric_limits<std::uint64_t>::max(),
                                     (1ull << 63) - 1, 1ull << 63};
    for (int k = 0; k < 500; ++k) xs.push_back(rng() >> (rng() % 64));
    for (const std::uint64_t x : xs) {
      const auto [q, r] = divider.divide(x);
      ASSERT_EQ(q, x / d) << x << " / " << d;
      ASSERT_EQ(r, x % d) << x << " % " << d;
      ASSERT_EQ(divider.quotient(x), x / d);
      ASSERT_EQ(divider.remainder(x), x % d);
    }
  }
}

TEST(Divider, RefusesZero) { EXPECT_THROW(Divider(0), std::invalid_argument); }
