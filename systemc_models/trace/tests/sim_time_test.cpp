// The inline time conversions give SystemC's own answers bit for bit.
#include "trace/sim_time.h"

#include <gtest/gtest.h>
#include <systemc>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace tessera::trace {
namespace {

using sc_core::sc_time;

std::uint64_t bits(double d) {
  std::uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// Nanosecond values the models make times from: whole and fractional
// cycles of every clock, bandwidth quotients, values a hair either side of
// a half picosecond (where rounding turns), tiny, huge, negative.
std::vector<double> nanoseconds() {
  std::vector<double> v = {0.0, -0.0, 1e-4, 4e-4, 5e-4, 6e-4, 0.0005 - 1e-12, 0.0005 + 1e-12, 1.0, 0.357, 1.4,
                           2.5, 1e3, 1e6, 1e9, 9.2e9, 1.7e10, -1.0, -2.5e-3};
  for (const double ghz : {0.7, 1.0, 1.12, 1.4, 1.75, 2.8, 3.0})
    for (int n = 0; n < 2000; ++n) v.push_back(n / ghz);
  for (int k = 0; k < 5000; ++k) {
    v.push_back(k * 1e-3 + 5e-4);  // exactly between two picoseconds, as decimals go
    v.push_back(std::nextafter(k * 1e-3 + 5e-4, 0.0));
    v.push_back(std::nextafter(k * 1e-3 + 5e-4, 1e30));
  }
  std::mt19937_64 rng(20);
  std::uniform_real_distribution<double> small(0, 100), mid(0, 1e6), large(0, 1e10);
  std::uniform_int_distribution<std::uint64_t> bytes(1, 1 << 24);
  for (int i = 0; i < 100000; ++i) {
    v.push_back(small(rng));
    v.push_back(mid(rng));
    v.push_back(large(rng));
    v.push_back(static_cast<double>(bytes(rng)) / 409.6);  // bytes over a bandwidth in bytes/ns
  }
  return v;
}

TEST(SimTime, FromNsIsScTimeInNanoseconds) {
  std::size_t checked = 0;
  for (const double ns_value : nanoseconds()) {
    const sc_time ours = from_ns(ns_value), systemc(ns_value, sc_core::SC_NS);
    ASSERT_EQ(ours.value(), systemc.value()) << ns_value;
    ++checked;
  }
  EXPECT_GT(checked, 400000u);
}

TEST(SimTime, NsIsToSecondsTimesABillion) {
  std::vector<sc_time::value_type> values = {0, 1, 2, 3, 999, 1000, 1001, 123456789, (1ull << 53) - 1, 1ull << 53,
                                             (1ull << 53) + 1, std::numeric_limits<std::int64_t>::max()};
  std::mt19937_64 rng(21);
  for (int shift = 0; shift < 63; ++shift)
    for (int i = 0; i < 2000; ++i) values.push_back(rng() >> shift);
  for (const auto value : values) {
    const sc_time t = sc_time::from_value(value);
    ASSERT_EQ(bits(ns(t)), bits(t.to_seconds() * 1e9)) << value;
  }
}

TEST(SimTime, TicksIsFromValue) {
  std::vector<sc_time::value_type> values = {0, 1, 2, 999, 1000, (1ull << 52) - 1, 1ull << 52, (1ull << 52) + 1,
                                             (1ull << 53) + 1, std::numeric_limits<sc_time::value_type>::max()};
  std::mt19937_64 rng(22);
  for (int shift = 0; shift < 64; ++shift)
    for (int i = 0; i < 2000; ++i) values.push_back(rng() >> shift);
  for (const auto value : values) ASSERT_EQ(ticks(value).value(), sc_time::from_value(value).value()) << value;
}

TEST(SimTime, TheResolutionIsSystemCs) {
  EXPECT_EQ(resolution().fs, 1000.0);  // the default 1 ps, which no model changes
  EXPECT_EQ(resolution().units_per_ns, 1000.0);
  EXPECT_EQ(from_ns(1.0).value(), 1000u);
  EXPECT_DOUBLE_EQ(ns(sc_time(3, sc_core::SC_NS)), 3.0);  // within an ulp: SystemC scales through seconds
}

}  // namespace
}  // namespace tessera::trace
