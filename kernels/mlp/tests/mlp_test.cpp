// The MLP block, silu and gelu, over shapes with odd edges on tiny, small and
// a real generation (tlm), and on the RTL (tiny); results within the bound
// derived in mlp.cpp from the double reference.
#include "common/kernel_testing.h"
#include "common/tests/rtl_agreement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <tuple>

namespace tessera::kernels {
namespace {

using kernel_testing::KernelRun;

struct Case {
  const char* config;
  std::int64_t T, D, F;
  Shape shape() const { return {{"T", T}, {"D", D}, {"F", F}}; }
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.config << " T=" << c.T << " D=" << c.D << " F=" << c.F; }

std::string name_of(const ::testing::TestParamInfo<std::tuple<std::string, Case>>& info) {
  const Case& c = std::get<1>(info.param);
  return std::get<0>(info.param) + "_" + kernel_testing::case_name(c.config, c.shape());
}

class MlpTest : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};

TEST_P(MlpTest, MatchesTheReference) {
  const auto& [variant, c] = GetParam();
  const KernelRun r = kernel_testing::run_kernel("mlp", variant, c.shape(), c.config, arch::Fidelity::Tlm);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.correct) << r.detail << " (error " << r.max_abs_error << ", tolerance " << r.tolerance << ")";
  EXPECT_DOUBLE_EQ(r.matmul_flops, 3 * 2.0 * c.T * c.D * c.F);
}

const Case kCases[] = {
    {"tiny", 64, 8, 16},    // whole chunks
    {"tiny", 37, 13, 21},   // edges in every dimension
    {"tiny", 1, 1, 1},
    {"tiny", 130, 24, 40},  // several token blocks
    {"small", 300, 64, 100},
    {"small", 33, 40, 70},
    {"neuroncore-v2", 256, 256, 512},
};

INSTANTIATE_TEST_SUITE_P(Shapes, MlpTest, ::testing::Combine(::testing::Values("silu", "gelu"), ::testing::ValuesIn(kCases)),
                         name_of);

// rtl fidelity: the Verilated tensor and DMA engines give the same numbers;
// the end-to-end time is tlm's to the cycle (rtl_agreement.h, docs/cosim.md).
class MlpRtlTest : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};

TEST_P(MlpRtlTest, RtlMatchesTlmAndTheReference) {
  const auto& [variant, c] = GetParam();
  const KernelRun rtl = kernel_testing::run_kernel_in_child("mlp", variant, c.shape(), c.config, arch::Fidelity::Rtl);
  const KernelRun tlm = kernel_testing::run_kernel_in_child("mlp", variant, c.shape(), c.config, arch::Fidelity::Tlm);
  ASSERT_TRUE(rtl.ok) << rtl.error;
  ASSERT_TRUE(tlm.ok) << tlm.error;
  EXPECT_TRUE(rtl.correct) << rtl.detail;
  kernels::agreement::expect_rtl_matches_tlm(rtl.time_ns, tlm.time_ns);
}

const Case kRtlCases[] = {{"tiny", 37, 13, 21}, {"tiny", 64, 16, 24}};

INSTANTIATE_TEST_SUITE_P(Shapes, MlpRtlTest,
                         ::testing::Combine(::testing::Values("silu", "gelu"), ::testing::ValuesIn(kRtlCases)), name_of);

TEST(Mlp, WeightsThatDoNotFitSbufAreAnErrorNamingTheSizes) {
  const KernelRun r = kernel_testing::run_kernel("mlp", "silu", {{"T", 8}, {"D", 64}, {"F", 512}}, "tiny", arch::Fidelity::Tlm);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("mlp: weights of D=64, F=512 need"));
}

TEST(Mlp, RegisteredWithVariantsAndADefaultShape) {
  const KernelSpec* spec = find_kernel("mlp");
  ASSERT_NE(spec, nullptr);
  EXPECT_THAT(spec->variant_names(), ::testing::ElementsAre("silu", "gelu"));
  const Shape s = resolve_shape(*spec, {});
  EXPECT_EQ(s.size(), 3u);
  EXPECT_THROW(resolve_shape(*spec, {{"T", 0}}), KernelError);
}

}  // namespace
}  // namespace tessera::kernels
