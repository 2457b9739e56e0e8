// The MLP block sharded tensor-parallel across the cores of a chip
// (docs/multicore.md, "The MLP over F"): each core its run of hidden
// chunks, the partial outputs summed by an all-reduce, every result against
// the reference; the collectives' wall time in the report; and the errors
// of a shard that does not fit. Each test is its own process (SystemC).
#include "common/kernel.h"
#include "common/kernel_testing.h"
#include "tessera/kernel_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>

namespace tessera::kernels {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* config;
  int cores;
  const char* variant;
  std::int64_t T, D, F;
  arch::Fidelity fidelity = arch::Fidelity::Tlm;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.config << " " << c.cores << " cores " << c.variant << " T=" << c.T << " D=" << c.D << " F=" << c.F << " "
      << arch::to_string(c.fidelity);
}

class MlpOnCores : public ::testing::TestWithParam<Case> {};

TEST_P(MlpOnCores, MatchesTheReferenceWithEveryCoreWorking) {
  const Case& c = GetParam();
  Device dev = kernel_testing::open_chip(c.config, c.cores, c.fidelity);
  const RunReport r = run_kernel(dev, {"mlp", c.variant, {{"T", c.T}, {"D", c.D}, {"F", c.F}}, {}, 7}, "F");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_TRUE(r.checked);
  EXPECT_TRUE(r.correct) << r.error << " (error " << r.max_abs_error << ", tolerance " << r.tolerance << ")";
  EXPECT_EQ(r.shard, "F");
  ASSERT_EQ(r.per_core.size(), static_cast<std::size_t>(c.cores));
  // The cores' hidden chunks add up to the whole block: three products of
  // T x D x (its share of F) each.
  double flops = 0;
  for (const CoreReport& core : r.per_core) {
    EXPECT_GT(core.matmul_flops, 0);
    EXPECT_GT(core.collective_ns, 0);
    EXPECT_LT(core.collective_ns, core.time_ns);
    flops += core.matmul_flops;
  }
  EXPECT_DOUBLE_EQ(flops, 3 * 2.0 * c.T * c.D * c.F);
  // The all-reduce's two phases, each within the run; together at least
  // the longer of them and at most their sum.
  ASSERT_EQ(r.collectives.size(), 2u);
  EXPECT_EQ(r.collectives[0].label, "mlp-reduce rs reduce-scatter");
  EXPECT_EQ(r.collectives[1].label, "mlp-reduce ag all-gather");
  const double rs = r.collectives[0].ns, ag = r.collectives[1].ns;
  EXPECT_GT(rs, 0);
  EXPECT_GT(ag, 0);
  EXPECT_GE(r.collective_ns, std::max(rs, ag));
  EXPECT_LE(r.collective_ns, rs + ag + 1e-6);
  EXPECT_DOUBLE_EQ(r.collective_ns, r.per_core[static_cast<std::size_t>(r.critical_core)].collective_ns);
}

const Case kCases[] = {
    {"tiny", 2, "silu", 32, 20, 40},   // hidden chunks 5 -> 2 + 3; edges in D
    {"tiny", 2, "gelu", 64, 8, 16},    // 2 chunks -> 1 + 1
    {"tiny", 2, "silu", 130, 24, 40},  // several token blocks, the last one short
    {"small", 4, "silu", 64, 40, 200}, // 7 chunks -> 1 + 2 + 2 + 2
    {"neuroncore-v3", 4, "silu", 256, 256, 1024},
    {"neuroncore-v3", 2, "gelu", 256, 256, 512},
    // Two Verilated tensor engines and their Verilated DMA engines in one process.
    {"tiny", 2, "silu", 32, 20, 40, arch::Fidelity::Rtl},
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return kernel_testing::case_name(c.config, {}) + "_" + std::to_string(c.cores) + "cores_" + c.variant + "_T" + std::to_string(c.T) + "_D" +
         std::to_string(c.D) + "_F" + std::to_string(c.F) + "_" + arch::to_string(c.fidelity);
}

INSTANTIATE_TEST_SUITE_P(Shards, MlpOnCores, ::testing::ValuesIn(kCases), case_name);

TEST(MlpOnCores, ShardsThatDoNotFitAreErrors) {
  Device dev = kernel_testing::open_chip("tiny", 2);
  const auto error_of = [&](const KernelRequest& r, const std::string& shard) {
    return kernel_testing::shard_error(dev, r, shard);
  };
  // tiny's chunk is 8 hidden units: F = 8 is one, too few for two cores.
  EXPECT_THAT(error_of({"mlp", "silu", {{"T", 32}, {"D", 8}, {"F", 8}}, {}, 7}, "F"),
              HasSubstr("mlp: F=8 is 1 chunk of 8, too few for 2 cores to get one each: grow F"));
  EXPECT_THAT(error_of({"mlp", "silu", {{"T", 33}, {"D", 8}, {"F", 16}}, {}, 7}, "F"),
              HasSubstr("mlp: shard F: T=33 does not split into 2 equal token chunks"));
  EXPECT_THAT(error_of({"mlp", "silu", {{"T", 32}, {"D", 8}, {"F", 16}}, {}, 7}, "T"),
              HasSubstr("--shard T: kernel 'mlp' shards over F"));
}

}  // namespace
}  // namespace tessera::kernels
