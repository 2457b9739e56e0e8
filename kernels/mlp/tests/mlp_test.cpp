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
  if (const std::string why = kernel_testing::rtl_not_built(c.config); !why.empty()) GTEST_SKIP() << why;
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

// Every --dtype within its bound (mlp.cpp's check; docs/formats.md): fp32
// at the quarter rate, fp8 in double row on tiny and small (two chunks of
// contraction rows a matmul, a lone one at an odd edge) and single row on
// v2; rtl bit for bit and tlm's time to the cycle (rtl_agreement.h).
class MlpDtypeTest : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};

TEST_P(MlpDtypeTest, MatchesTheReferenceInEveryFidelity) {
  const auto& [dtype, c] = GetParam();
  const KernelRun tlm = kernel_testing::run_kernel_in_child("mlp", "silu", c.shape(), c.config, arch::Fidelity::Tlm, dtype);
  ASSERT_TRUE(tlm.ok) << tlm.error;
  EXPECT_TRUE(tlm.correct) << tlm.detail;
  EXPECT_DOUBLE_EQ(tlm.matmul_flops, 3 * 2.0 * c.T * c.D * c.F);
  if (std::string(c.config) != "tiny") return;
  if (const std::string why = kernel_testing::rtl_not_built(c.config); !why.empty()) GTEST_SKIP() << why;
  const KernelRun rtl = kernel_testing::run_kernel_in_child("mlp", "silu", c.shape(), c.config, arch::Fidelity::Rtl, dtype);
  ASSERT_TRUE(rtl.ok) << rtl.error;
  EXPECT_TRUE(rtl.correct) << rtl.detail;
  kernels::agreement::expect_rtl_matches_tlm(rtl.time_ns, tlm.time_ns);
}

std::string dtype_case_name(const ::testing::TestParamInfo<std::tuple<std::string, Case>>& info) {
  const Case& c = std::get<1>(info.param);
  return std::get<0>(info.param) + "_" + kernel_testing::case_name(c.config, c.shape());
}

const Case kDtypeCases[] = {
    {"tiny", 37, 13, 21},   // an odd chunk at every edge
    {"tiny", 64, 32, 40},   // whole double-row pairs in the gate projection
    {"small", 100, 96, 160},
    {"neuroncore-v2", 128, 256, 256},
};

INSTANTIATE_TEST_SUITE_P(Dtypes, MlpDtypeTest,
                         ::testing::Combine(::testing::Values("fp32", "fp8_e4m3", "fp8_e5m2"), ::testing::ValuesIn(kDtypeCases)),
                         dtype_case_name);

// fp8 in double row takes half the matmuls of single row, and the time
// shows it: tiny runs the same MLP faster in fp8 than in bf16.
TEST(Mlp, Fp8DoubleRowIsFasterThanBf16OnTiny) {
  const Shape s{{"T", 64}, {"D", 32}, {"F", 64}};
  const KernelRun bf16 = kernel_testing::run_kernel_in_child("mlp", "silu", s, "tiny", arch::Fidelity::Tlm);
  const KernelRun fp8 = kernel_testing::run_kernel_in_child("mlp", "silu", s, "tiny", arch::Fidelity::Tlm, "fp8_e4m3");
  ASSERT_TRUE(bf16.ok && fp8.ok) << bf16.error << fp8.error;
  EXPECT_LT(fp8.time_ns, bf16.time_ns);
}

TEST(Mlp, ADtypeItDoesNotTakeIsAnErrorNamingTheChoices) {
  const KernelRun r =
      kernel_testing::run_kernel("mlp", "silu", {{"T", 8}, {"D", 8}, {"F", 8}}, "tiny", arch::Fidelity::Tlm, false, "mxfp8");
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("kernel 'mlp' takes --dtype bf16, fp32, fp8_e4m3, fp8_e5m2, not 'mxfp8'"));
}

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
