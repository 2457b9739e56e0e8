// Collectives across the cores of a chip (docs/multicore.md, "Collectives"):
// all-reduce, reduce-scatter and all-gather, ring and direct, on test chips
// of 2 and 4 cores, each against the reference; the ring in rtl; and the
// errors of a tile that does not split. Each test is its own process.
#include "collectives/collectives.h"
#include "common/kernel.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>

namespace tessera::kernels {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* config;
  int cores;
  const char* op;
  const char* algorithm;
  std::int64_t P, F;
  arch::Fidelity fidelity = arch::Fidelity::Tlm;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.config << " x" << c.cores << " " << c.op << " " << c.algorithm << " " << c.P << "x" << c.F << " "
      << arch::to_string(c.fidelity);
}

Device open(const Case& c) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  DeviceOptions o;
  o.config = c.config;
  o.fidelity = c.fidelity;
  o.cores = c.cores;
  return Device(o);
}

class CollectiveOnCores : public ::testing::TestWithParam<Case> {};

TEST_P(CollectiveOnCores, MatchesTheReference) {
  const Case& c = GetParam();
  Device dev = open(c);
  const RunReport r =
      run_kernel(dev, {"collective", c.op, {{"P", c.P}, {"F", c.F}}, {{"algorithm", std::string(c.algorithm)}}, 5}, "F");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_TRUE(r.checked);
  EXPECT_TRUE(r.correct) << r.error;
  ASSERT_EQ(r.per_core.size(), static_cast<std::size_t>(c.cores));
  // Every core sent over the fabric: a ring (cores - 1) chunks per phase,
  // direct as many, each to a different core.
  const double chunk = 4.0 * static_cast<double>(c.P * c.F / c.cores);
  const int phases = std::string(c.op) == "all_reduce" ? 2 : 1;
  for (int k = 0; k < c.cores; ++k) {
    const double sent = r.stats.at(fmt::format("fabric.core{}.bytes_sent", k)).get<double>();
    const double signals = r.stats.at(fmt::format("fabric.core{}.signals_sent", k)).get<double>();
    EXPECT_DOUBLE_EQ(sent - 4 * signals, phases * (c.cores - 1) * chunk) << "core " << k;
  }
}

const Case kCases[] = {
    {"tiny", 2, "all_reduce", "ring", 8, 64},
    {"tiny", 2, "all_reduce", "direct", 8, 64},
    {"tiny", 2, "reduce_scatter", "ring", 8, 64},
    {"tiny", 2, "all_gather", "direct", 8, 64},
    {"small", 4, "all_reduce", "ring", 32, 256},
    {"small", 4, "all_reduce", "direct", 32, 256},
    {"small", 4, "reduce_scatter", "ring", 32, 256},
    {"small", 4, "reduce_scatter", "direct", 32, 256},
    {"small", 4, "all_gather", "ring", 32, 256},
    {"small", 4, "all_gather", "direct", 32, 256},
    {"small", 2, "all_reduce", "ring", 32, 512},
    {"tiny", 2, "all_reduce", "ring", 8, 64, arch::Fidelity::Rtl},
};

INSTANTIATE_TEST_SUITE_P(Chips, CollectiveOnCores, ::testing::ValuesIn(kCases), [](const auto& info) {
  const Case& c = info.param;
  return fmt::format("{}_x{}_{}_{}_{}", c.config, c.cores, c.op, c.algorithm, arch::to_string(c.fidelity));
});

TEST(CollectiveErrors, ATileThatDoesNotSplitIntoOneChunkPerCore) {
  Device dev = open({"small", 4, "all_reduce", "ring", 32, 102});
  std::string error = "(accepted)";
  try {
    const RunReport r = run_kernel(
        dev, {"collective", "all_reduce", {{"P", 32}, {"F", 102}}, {{"algorithm", std::string("ring")}}, 5}, "F");
    if (!r.ok) error = r.error;
  } catch (const KernelError& e) {
    error = e.what();
  }
  EXPECT_THAT(error, HasSubstr("all_reduce('data'): 102 columns do not split into 4 equal chunks, one per core"));
}

}  // namespace
}  // namespace tessera::kernels
