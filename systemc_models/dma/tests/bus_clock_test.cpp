// The DMA model's integer rounding against the plain formulas it replaces:
// the clock edge at or after a time as the division in doubles gave it, and
// beats and beat-aligned addresses as division gives them.
#include "dma/bus_clock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

namespace tessera::dma {
namespace {

using sc_core::sc_time;

// What DmaEngine::on_clock computed before ClockEdges.
sc_time edge_in_doubles(const sc_time& period, const sc_time& t) { return period * std::ceil(t / period - 1e-9); }

// The periods of the shipped configs' DMA clocks lie between these; a
// period of 1 and 2 resolution steps and a large one test the extremes.
std::vector<std::uint64_t> periods(std::mt19937_64& rng) {
  std::vector<std::uint64_t> p = {1, 2, 3, 333, 357, 500, 714, 1000, 1429, 999'983, 1'000'000};
  std::uniform_int_distribution<std::uint64_t> any(1, 1'000'000);
  for (int i = 0; i < 40; ++i) p.push_back(any(rng));
  return p;
}

TEST(ClockEdges, MatchTheEdgesOfTheDivisionInDoublesUpToAnHourOfSimulatedTime) {
  std::mt19937_64 rng(20261205);
  // An hour (arch::kMaxSimulatedSeconds) in picoseconds, the resolution.
  const std::uint64_t hour = 3'600'000'000'000'000;
  std::uniform_int_distribution<std::uint64_t> when(0, hour);
  for (const std::uint64_t p : periods(rng)) {
    const sc_time period = sc_time::from_value(p);
    const ClockEdges clock(period);
    std::vector<std::uint64_t> times = {0, 1, p - 1, p, p + 1, 2 * p, hour - hour % p, hour - hour % p + 1, hour};
    for (int i = 0; i < 2000; ++i) times.push_back(when(rng));
    for (int i = 0; i < 200; ++i) {  // exact multiples and their neighbours
      const std::uint64_t k = when(rng) / p * p;
      times.insert(times.end(), {k, k + 1, k > 0 ? k - 1 : 0});
    }
    for (const std::uint64_t v : times) {
      const sc_time t = sc_time::from_value(v);
      ASSERT_EQ(clock.at_or_after(t).value(), edge_in_doubles(period, t).value()) << "period " << p << " time " << v;
    }
  }
}

TEST(ClockEdges, AreExactOverTheWholeRangeOfTime) {
  // Past where doubles can tell the edges apart: against integer ceil.
  std::mt19937_64 rng(7);
  for (const std::uint64_t p : periods(rng)) {
    const ClockEdges clock(sc_time::from_value(p));
    const std::uint64_t last = ~std::uint64_t{0} - p;  // the edge still fits
    std::uniform_int_distribution<std::uint64_t> when(0, last);
    std::vector<std::uint64_t> times = {last, last - 1, std::uint64_t{1} << 63, (std::uint64_t{1} << 63) - 1};
    for (int i = 0; i < 2000; ++i) times.push_back(when(rng));
    for (const std::uint64_t v : times) {
      const std::uint64_t want = static_cast<std::uint64_t>((static_cast<unsigned __int128>(v) + p - 1) / p * p);
      ASSERT_EQ(clock.at_or_after(sc_time::from_value(v)).value(), want) << "period " << p << " time " << v;
    }
  }
}

TEST(ClockEdges, CyclesAreTheMultiplyInsideTheTableAndPastIt) {
  std::mt19937_64 rng(11);
  for (const std::uint64_t p : periods(rng)) {
    const sc_time period = sc_time::from_value(p);
    const ClockEdges clock(period);
    for (std::uint64_t n = 0; n < 400; ++n)  // the table holds 257
      ASSERT_EQ(clock.cycles(n), period * static_cast<double>(n)) << "period " << p << " n " << n;
    EXPECT_EQ(clock.cycles(1'000'000), period * 1e6);
  }
}

TEST(ClockEdges, AZeroPeriodIsRefused) {
  EXPECT_THROW(ClockEdges(sc_core::SC_ZERO_TIME), std::invalid_argument);
}

TEST(BusWidth, RoundsAndCountsAsDivisionDoesForEveryWidthAConfigMayHave) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<std::uint64_t> any(0, std::uint64_t{1} << 48);
  for (std::uint32_t bytes = 4; bytes <= 128; ++bytes) {  // dma.axi_data_bytes, 4 .. 128
    const BusWidth bus(bytes);
    for (int i = 0; i < 500; ++i) {
      const std::uint64_t a = i < 3 ? std::uint64_t(i) * bytes : any(rng);
      ASSERT_EQ(bus.down(a), a / bytes * bytes) << bytes << " " << a;
      ASSERT_EQ(bus.beats(a), a / bytes) << bytes << " " << a;
    }
  }
  EXPECT_THROW(BusWidth(0), std::invalid_argument);
}

// The model's Time is sc_time's value with sc_time's arithmetic, so a run
// computed in it ends on the same picosecond.
TEST(DmaTime, IsSystemCsTimeValueWithItsArithmetic) {
  static_assert(std::is_trivially_copyable_v<Time>, "held in registers, passed and returned in them");
  EXPECT_EQ(kNever.value(), sc_core::sc_max_time().value());
  EXPECT_EQ(Time().value(), sc_core::SC_ZERO_TIME.value());
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<std::uint64_t> any(0, ~std::uint64_t{0});
  std::uniform_int_distribution<std::uint64_t> hour(0, 3'600'000'000'000'000);
  std::uniform_int_distribution<std::uint64_t> cycles(0, 5000);
  for (int i = 0; i < 5000; ++i) {
    // Past 2^52 too, where sc() leaves the multiply for from_value.
    const std::uint64_t a = i % 2 ? any(rng) : hour(rng), b = i % 3 ? any(rng) : hour(rng);
    const sc_time ta = sc_time::from_value(a), tb = sc_time::from_value(b);
    ASSERT_EQ(Time(ta).sc(), ta) << a;
    ASSERT_EQ((Time(ta) + Time(tb)).value(), (ta + tb).value()) << a << " " << b;
    ASSERT_EQ((Time(ta) - Time(tb)).value(), (ta - tb).value()) << a << " " << b;
    ASSERT_EQ(Time(ta) < Time(tb), ta < tb);
    ASSERT_EQ(Time(ta) <= Time(tb), ta <= tb);
    const std::uint64_t p = a % 2'000'000 + 1;  // a clock period, times a cycle count
    const double n = static_cast<double>(cycles(rng));
    ASSERT_EQ(Time::units(p).times(n).value(), (sc_time::from_value(p) * n).value()) << p << " " << n;
  }
}

}  // namespace
}  // namespace tessera::dma
