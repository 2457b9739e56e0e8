// conv2d, blocked and simple, over shapes with odd edges (channels past a
// chunk, stride 2 and 3, no padding, 1x1 and non-square kernels) on tiny,
// small and a real generation (tlm), and on the RTL (tiny); results within
// the fp32-accumulation bound of the double reference.
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
  std::int64_t N, C, H, W, K, R, S, stride, pad;
  Shape shape() const {
    return {{"N", N}, {"C", C}, {"H", H}, {"W", W}, {"K", K}, {"R", R}, {"S", S}, {"stride", stride}, {"pad", pad}};
  }
  double flops() const {
    const double oh = (H + 2 * pad - R) / stride + 1, ow = (W + 2 * pad - S) / stride + 1;
    return 2.0 * N * K * oh * ow * C * R * S;
  }
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.config << " " << ::testing::PrintToString(c.shape()); }

std::string name_of(const ::testing::TestParamInfo<std::tuple<std::string, Case>>& info) {
  const Case& c = std::get<1>(info.param);
  return std::get<0>(info.param) + "_" + kernel_testing::case_name(c.config, c.shape());
}

class Conv2dTest : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};

TEST_P(Conv2dTest, MatchesTheReference) {
  const auto& [variant, c] = GetParam();
  const KernelRun r = kernel_testing::run_kernel("conv2d", variant, c.shape(), c.config, arch::Fidelity::Tlm);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.correct) << r.detail << " (error " << r.max_abs_error << ", tolerance " << r.tolerance << ")";
  // The padded-width trick computes Wq - OW discarded columns per row.
  EXPECT_GE(r.matmul_flops, c.flops());
}

const Case kCases[] = {
    {"tiny", 1, 8, 8, 8, 8, 3, 3, 1, 1},
    {"tiny", 2, 11, 9, 7, 13, 3, 2, 2, 1},  // edges, stride 2, non-square kernel
    {"tiny", 1, 5, 6, 6, 3, 1, 1, 1, 0},    // 1x1, no padding
    {"tiny", 1, 4, 10, 10, 4, 2, 2, 3, 0},  // stride past the kernel: taps skip pixels
    {"tiny", 1, 3, 3, 3, 2, 5, 5, 1, 2},    // kernel wider than the image
    {"small", 2, 40, 16, 16, 48, 3, 3, 1, 1},
    {"small", 1, 32, 15, 15, 32, 5, 5, 2, 2},
    {"small", 1, 16, 60, 30, 16, 3, 3, 1, 1},  // four row blocks: blocked groups of three, then one
    {"neuroncore-v2", 1, 64, 28, 28, 128, 3, 3, 1, 1},
};

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dTest,
                         ::testing::Combine(::testing::Values("blocked", "simple"), ::testing::ValuesIn(kCases)), name_of);

class Conv2dRtlTest : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};

TEST_P(Conv2dRtlTest, RtlMatchesTlmAndTheReference) {
  const auto& [variant, c] = GetParam();
  if (const std::string why = kernel_testing::rtl_not_built(c.config); !why.empty()) GTEST_SKIP() << why;
  const KernelRun rtl = kernel_testing::run_kernel_in_child("conv2d", variant, c.shape(), c.config, arch::Fidelity::Rtl);
  const KernelRun tlm = kernel_testing::run_kernel_in_child("conv2d", variant, c.shape(), c.config, arch::Fidelity::Tlm);
  ASSERT_TRUE(rtl.ok) << rtl.error;
  ASSERT_TRUE(tlm.ok) << tlm.error;
  EXPECT_TRUE(rtl.correct) << rtl.detail;
  kernels::agreement::expect_rtl_matches_tlm(rtl.time_ns, tlm.time_ns);
}

const Case kRtlCases[] = {{"tiny", 1, 8, 8, 8, 8, 3, 3, 1, 1}, {"tiny", 1, 11, 9, 7, 5, 3, 2, 2, 1}};

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dRtlTest,
                         ::testing::Combine(::testing::Values("blocked", "simple"), ::testing::ValuesIn(kRtlCases)),
                         name_of);

// --dtype fp32 and fp8 (in double row on tiny and small, which have it):
// within the format's bound of the double reference, and on tiny the RTL
// gives the same numbers and tlm's time to the cycle.
class Conv2dDtypeTest : public ::testing::TestWithParam<std::tuple<std::string, std::string, Case>> {};

TEST_P(Conv2dDtypeTest, MatchesTheReferenceInEveryFidelity) {
  const auto& [dtype, variant, c] = GetParam();
  const KernelRun tlm = kernel_testing::run_kernel_in_child("conv2d", variant, c.shape(), c.config, arch::Fidelity::Tlm, dtype);
  ASSERT_TRUE(tlm.ok) << tlm.error;
  EXPECT_TRUE(tlm.correct) << tlm.detail << " (error " << tlm.max_abs_error << ", tolerance " << tlm.tolerance << ")";
  EXPECT_GE(tlm.matmul_flops, c.flops());
  if (std::string(c.config) != "tiny") return;
  if (const std::string why = kernel_testing::rtl_not_built(c.config); !why.empty()) GTEST_SKIP() << why;
  const KernelRun rtl = kernel_testing::run_kernel_in_child("conv2d", variant, c.shape(), c.config, arch::Fidelity::Rtl, dtype);
  ASSERT_TRUE(rtl.ok) << rtl.error;
  EXPECT_TRUE(rtl.correct) << rtl.detail;
  kernels::agreement::expect_rtl_matches_tlm(rtl.time_ns, tlm.time_ns);
}

std::string dtype_name_of(const ::testing::TestParamInfo<std::tuple<std::string, std::string, Case>>& info) {
  const Case& c = std::get<2>(info.param);
  return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" + kernel_testing::case_name(c.config, c.shape());
}

const Case kDtypeCases[] = {
    {"tiny", 1, 16, 8, 8, 8, 3, 3, 1, 1},   // two channel chunks: every tap one double-row matmul
    {"tiny", 2, 19, 9, 7, 13, 3, 2, 2, 1},  // three chunks, the last short: it runs alone
    {"small", 1, 64, 12, 12, 40, 3, 3, 1, 1},
};

INSTANTIATE_TEST_SUITE_P(Dtypes, Conv2dDtypeTest,
                         ::testing::Combine(::testing::Values("fp32", "fp8_e4m3", "fp8_e5m2"),
                                            ::testing::Values("blocked", "simple"), ::testing::ValuesIn(kDtypeCases)),
                         dtype_name_of);

// fp8 in double row takes about half the matmuls of bf16, and the time shows it.
TEST(Conv2d, Fp8DoubleRowIsFasterThanBf16) {
  const Case c{"small", 1, 64, 12, 12, 64, 3, 3, 1, 1};
  const KernelRun bf16 = kernel_testing::run_kernel_in_child("conv2d", "blocked", c.shape(), c.config, arch::Fidelity::Tlm);
  const KernelRun fp8 =
      kernel_testing::run_kernel_in_child("conv2d", "blocked", c.shape(), c.config, arch::Fidelity::Tlm, "fp8_e4m3");
  ASSERT_TRUE(bf16.ok && fp8.ok) << bf16.error << fp8.error;
  EXPECT_LT(fp8.time_ns, bf16.time_ns);
}

TEST(Conv2d, BadShapesAreErrorsNamingTheProblem) {
  Case c{"tiny", 1, 4, 2, 2, 4, 5, 5, 1, 1};
  KernelRun r = kernel_testing::run_kernel("conv2d", "simple", c.shape(), "tiny", arch::Fidelity::Tlm);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("conv2d: a 5x5 kernel is larger than the padded 4x4 input (pad 1)"));
  c = {"tiny", 1, 4, 8, 100, 4, 3, 3, 1, 1};
  r = kernel_testing::run_kernel("conv2d", "simple", c.shape(), "tiny", arch::Fidelity::Tlm);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("an output row at the padded width 102 exceeds the 64 elements"));
}

TEST(Conv2d, PaddingMayBeZeroButNotNegative) {
  const KernelSpec* spec = find_kernel("conv2d");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(resolve_shape(*spec, {{"pad", 0}}).at("pad"), 0);
  try {
    resolve_shape(*spec, {{"pad", -1}});
    ADD_FAILURE() << "no error";
  } catch (const KernelError& e) {
    EXPECT_STREQ(e.what(), "kernel 'conv2d': shape pad=-1 must be at least 0");
  }
  EXPECT_THROW(resolve_shape(*spec, {{"stride", 0}}), KernelError);
}

}  // namespace
}  // namespace tessera::kernels
