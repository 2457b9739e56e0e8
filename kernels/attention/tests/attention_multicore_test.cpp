// Attention sharded over heads across the cores of a chip
// (docs/multicore.md, "Attention over heads"): each core a run of whole
// heads, nothing exchanged; every result against the reference, and the
// error of more cores than heads. Each test is its own process (SystemC).
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
  std::int64_t S, D, H;
  arch::Fidelity fidelity = arch::Fidelity::Tlm;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.config << " " << c.cores << " cores " << c.variant << " S=" << c.S << " D=" << c.D << " H=" << c.H << " "
      << arch::to_string(c.fidelity);
}

class AttentionOnCores : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionOnCores, MatchesTheReferenceWithEveryCoreWorking) {
  const Case& c = GetParam();
  Device dev = kernel_testing::open_chip(c.config, c.cores, c.fidelity);
  const RunReport r = run_kernel(dev, {"attention", c.variant, {{"S", c.S}, {"D", c.D}, {"H", c.H}}, {}, 7}, "H");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_TRUE(r.checked);
  EXPECT_TRUE(r.correct) << r.error << " (error " << r.max_abs_error << ", tolerance " << r.tolerance << ")";
  EXPECT_EQ(r.shard, "H");
  ASSERT_EQ(r.per_core.size(), static_cast<std::size_t>(c.cores));
  for (const CoreReport& core : r.per_core) {
    EXPECT_GT(core.matmul_flops, 0);
    EXPECT_GT(core.hbm_bytes, 0);
    EXPECT_EQ(core.collective_ns, 0);  // heads are independent
  }
  EXPECT_TRUE(r.collectives.empty());
}

const Case kCases[] = {
    {"tiny", 2, "flash", 40, 12, 3},  // heads 1 + 2; edges in S and D
    {"tiny", 2, "flash_causal", 40, 12, 3},
    {"tiny", 2, "naive", 24, 8, 2},
    {"small", 4, "flash", 96, 32, 6},  // heads 1 + 2 + 1 + 2
    {"neuroncore-v3", 4, "flash", 256, 128, 4},
    {"tiny", 2, "flash", 24, 8, 2, arch::Fidelity::Rtl},
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return kernel_testing::case_name(c.config, {}) + "_" + std::to_string(c.cores) + "cores_" + c.variant + "_S" + std::to_string(c.S) + "_D" +
         std::to_string(c.D) + "_H" + std::to_string(c.H) + "_" + arch::to_string(c.fidelity);
}

INSTANTIATE_TEST_SUITE_P(Shards, AttentionOnCores, ::testing::ValuesIn(kCases), case_name);

TEST(AttentionOnCores, MoreCoresThanHeadsIsAnError) {
  Device dev = kernel_testing::open_chip("tiny", 2);
  EXPECT_THAT(kernel_testing::shard_error(dev, {"attention", "flash", {{"S", 16}, {"D", 8}, {"H", 1}}, {}, 7}, "H"),
              HasSubstr("attention: H=1 head is too few for 2 cores to get one each: grow H"));
}

}  // namespace
}  // namespace tessera::kernels
