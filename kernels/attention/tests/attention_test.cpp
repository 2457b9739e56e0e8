// Attention, flash and naive, with and without the causal mask, over shapes
// with odd edges (sequence, head dimension past one chunk and past one PSUM
// tile) on tiny, small and a real generation (tlm), and on the RTL (tiny);
// results within the bound derived in attention.cpp from the double reference.
#include "common/kernel_testing.h"
#include "common/tests/rtl_agreement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <ostream>
#include <tuple>

namespace tessera::kernels {
namespace {

using kernel_testing::KernelRun;

struct Case {
  const char* config;
  std::int64_t S, D, H;
  Shape shape() const { return {{"S", S}, {"D", D}, {"H", H}}; }
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.config << " S=" << c.S << " D=" << c.D << " H=" << c.H; }

std::string name_of(const ::testing::TestParamInfo<std::tuple<std::string, Case>>& info) {
  const Case& c = std::get<1>(info.param);
  return std::get<0>(info.param) + "_" + kernel_testing::case_name(c.config, c.shape());
}

class AttentionTest : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};

TEST_P(AttentionTest, MatchesTheReference) {
  const auto& [variant, c] = GetParam();
  const KernelRun r = kernel_testing::run_kernel("attention", variant, c.shape(), c.config, arch::Fidelity::Tlm);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.correct) << r.detail << " (error " << r.max_abs_error << ", tolerance " << r.tolerance << ")";
  // Q K^T and P V over every key (naive) or every key up to the block's last query (flash_causal).
  if (variant == "flash" || variant.rfind("naive", 0) == 0) EXPECT_DOUBLE_EQ(r.matmul_flops, 4.0 * c.S * c.S * c.D * c.H);
  else EXPECT_LT(r.matmul_flops, 4.0 * c.S * c.S * c.D * c.H * (c.S > 8 ? 0.9 : 1.01));
}

const Case kCases[] = {
    {"tiny", 64, 8, 1},    // one key block, whole chunks
    {"tiny", 37, 13, 2},   // edges; head dim over two chunks
    {"tiny", 1, 1, 1},
    {"tiny", 100, 70, 1},  // head dim over two PSUM tiles, several key blocks
    {"small", 256, 64, 2},
    {"small", 77, 40, 1},
    {"small", 600, 64, 1},  // two key blocks: the rescale
    {"tiny", 8, 8, 4},      // one step per head: V loads ahead of the pipeline's last P V
    {"small", 384, 512, 2},   // one K/V set fits SBUF: head 2 waits for head 1 to finish
    {"neuroncore-v2", 640, 128, 1},
};

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest,
                         ::testing::Combine(::testing::Values("flash", "flash_causal", "naive", "naive_causal"),
                                            ::testing::ValuesIn(kCases)),
                         name_of);

class AttentionRtlTest : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};

TEST_P(AttentionRtlTest, RtlMatchesTlmAndTheReference) {
  const auto& [variant, c] = GetParam();
  if (const std::string why = kernel_testing::rtl_not_built(c.config); !why.empty()) GTEST_SKIP() << why;
  const KernelRun rtl = kernel_testing::run_kernel_in_child("attention", variant, c.shape(), c.config, arch::Fidelity::Rtl);
  const KernelRun tlm = kernel_testing::run_kernel_in_child("attention", variant, c.shape(), c.config, arch::Fidelity::Tlm);
  ASSERT_TRUE(rtl.ok) << rtl.error;
  ASSERT_TRUE(tlm.ok) << tlm.error;
  EXPECT_TRUE(rtl.correct) << rtl.detail;
  kernels::agreement::expect_rtl_matches_tlm(rtl.time_ns, tlm.time_ns);
}

const Case kRtlCases[] = {{"tiny", 37, 13, 2}, {"tiny", 80, 8, 1}};

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionRtlTest,
                         ::testing::Combine(::testing::Values("flash", "flash_causal", "naive"),
                                            ::testing::ValuesIn(kRtlCases)),
                         name_of);

// The flash loop's engine choices (vector_pt_copies, rescale: what the
// tuned points use) compute the same attention: every split of the P^T
// copies, the rescale on either engine, on shapes with several key blocks
// and edges, in tlm and on the RTL.
class AttentionScheduleTest : public ::testing::TestWithParam<std::tuple<std::string, std::string, Case>> {};

std::map<std::string, std::string> schedule_params(const std::string& copies, const std::string& rescale) {
  return {{"vector_pt_copies", copies}, {"rescale", rescale}};
}

TEST_P(AttentionScheduleTest, MatchesTheReferenceInTlmAndOnTheRtl) {
  const auto& [copies, rescale, c] = GetParam();
  for (const char* variant : {"flash", "flash_causal"}) {
    const KernelRun r = kernel_testing::run_kernel_in_child("attention", variant, c.shape(), c.config,
                                                            arch::Fidelity::Tlm, "", schedule_params(copies, rescale));
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(r.correct) << variant << ": " << r.detail << " (error " << r.max_abs_error << ")";
  }
  if (std::string(c.config) != "tiny" || !kernel_testing::rtl_not_built(c.config).empty()) return;
  const KernelRun rtl = kernel_testing::run_kernel_in_child("attention", "flash", c.shape(), c.config,
                                                            arch::Fidelity::Rtl, "", schedule_params(copies, rescale));
  const KernelRun tlm = kernel_testing::run_kernel_in_child("attention", "flash", c.shape(), c.config,
                                                            arch::Fidelity::Tlm, "", schedule_params(copies, rescale));
  ASSERT_TRUE(rtl.ok && tlm.ok) << rtl.error << tlm.error;
  EXPECT_TRUE(rtl.correct) << rtl.detail;
  kernels::agreement::expect_rtl_matches_tlm(rtl.time_ns, tlm.time_ns);
}

std::string schedule_name(const ::testing::TestParamInfo<std::tuple<std::string, std::string, Case>>& info) {
  const Case& c = std::get<2>(info.param);
  return "copies" + std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" +
         kernel_testing::case_name(c.config, c.shape());
}

INSTANTIATE_TEST_SUITE_P(Schedules, AttentionScheduleTest,
                         ::testing::Combine(::testing::Values("1", "2", "4"), ::testing::Values("vector", "scalar"),
                                            ::testing::Values(Case{"tiny", 100, 70, 1}, Case{"small", 600, 64, 1})),
                         schedule_name);

// The tuned schedule is faster than the default one on a real generation:
// the copies and the rescale move to the engines with slack.
TEST(Attention, TunedScheduleBalancesTheVectorAndScalarEngines) {
  const Shape shape{{"S", 1024}, {"D", 128}, {"H", 1}};
  const auto time_of = [&](const std::string& copies, const std::string& rescale) {
    const KernelRun r = kernel_testing::run_kernel_in_child("attention", "flash", shape, "neuroncore-v2",
                                                            arch::Fidelity::Tlm, "", schedule_params(copies, rescale));
    EXPECT_TRUE(r.ok) << r.error;
    return r.time_ns;
  };
  EXPECT_LT(time_of("2", "scalar"), 0.95 * time_of("0", "vector"));
}

// Every --dtype within its bound (attention.cpp's check; docs/formats.md):
// Q, K, V and P in fp32 (quarter rate, rounded products), fp8 e4m3 and
// e5m2 (P rounded to fp8, weights below its normal range included), on
// shapes with edges and several key blocks, on tiny, small and a real
// generation whose fp8 runs in double row elsewhere.
class AttentionDtypeTest : public ::testing::TestWithParam<std::tuple<std::string, std::string, Case>> {};

TEST_P(AttentionDtypeTest, MatchesTheReference) {
  const auto& [dtype, variant, c] = GetParam();
  const KernelRun r = kernel_testing::run_kernel("attention", variant, c.shape(), c.config, arch::Fidelity::Tlm, false, dtype);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.correct) << r.detail << " (error " << r.max_abs_error << ", tolerance " << r.tolerance << ")";
  // The bound is the format's, not a loose constant: outputs are of order
  // one, so it stays within a few roundings of P.
  const double roundoff = dtype == "fp32" ? 0x1p-24 : dtype == "fp8_e4m3" ? 0x1p-4 : 0x1p-3;
  EXPECT_LT(r.tolerance, 8 * roundoff + 1e-3);
}

std::string dtype_name(const ::testing::TestParamInfo<std::tuple<std::string, std::string, Case>>& info) {
  const Case& c = std::get<2>(info.param);
  return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" + kernel_testing::case_name(c.config, c.shape());
}

const Case kDtypeCases[] = {{"tiny", 37, 13, 2}, {"small", 600, 64, 1}, {"neuroncore-v3", 256, 128, 1}};

INSTANTIATE_TEST_SUITE_P(Dtypes, AttentionDtypeTest,
                         ::testing::Combine(::testing::Values("fp32", "fp8_e4m3", "fp8_e5m2"),
                                            ::testing::Values("flash", "flash_causal", "naive", "naive_causal"),
                                            ::testing::ValuesIn(kDtypeCases)),
                         dtype_name);

// The RTL tensor engine reads the same fp32 and fp8 tiles: its results
// match the reference and its time tlm's to the cycle; sampled within 1 %.
class AttentionDtypeRtlTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(AttentionDtypeRtlTest, RtlAndSampledAgreeWithTlmAndTheReference) {
  const auto& [dtype, variant] = GetParam();
  const Shape shape{{"S", 37}, {"D", 13}, {"H", 2}};
  const KernelRun rtl = kernel_testing::run_kernel_in_child("attention", variant, shape, "tiny", arch::Fidelity::Rtl, dtype);
  const KernelRun sampled =
      kernel_testing::run_kernel_in_child("attention", variant, shape, "tiny", arch::Fidelity::Sampled, dtype);
  const KernelRun tlm = kernel_testing::run_kernel_in_child("attention", variant, shape, "tiny", arch::Fidelity::Tlm, dtype);
  ASSERT_TRUE(rtl.ok) << rtl.error;
  ASSERT_TRUE(sampled.ok) << sampled.error;
  ASSERT_TRUE(tlm.ok) << tlm.error;
  EXPECT_TRUE(rtl.correct) << rtl.detail;
  EXPECT_TRUE(sampled.correct) << sampled.detail;
  kernels::agreement::expect_rtl_matches_tlm(rtl.time_ns, tlm.time_ns);
  EXPECT_NEAR(sampled.time_ns, tlm.time_ns, 0.01 * tlm.time_ns);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AttentionDtypeRtlTest,
                         ::testing::Combine(::testing::Values("fp32", "fp8_e4m3", "fp8_e5m2"),
                                            ::testing::Values("flash", "naive_causal")),
                         kernel_testing::dtype_variant_name);

TEST(AttentionDtype, FormatsTheConfigOrKernelLacksAreErrors) {
  const Shape shape{{"S", 16}, {"D", 8}, {"H", 1}};
  const KernelRun v1 =
      kernel_testing::run_kernel("attention", "flash", shape, "neuroncore-v1", arch::Fidelity::Tlm, true, "fp8_e4m3");
  EXPECT_FALSE(v1.ok);
  EXPECT_THAT(v1.error, ::testing::HasSubstr("fp8_e4m3 inputs are not supported by this config's tensor engine (tensor.fp8_rows_per_pe is 0)"));
  const KernelRun mx = kernel_testing::run_kernel("attention", "flash", shape, "tiny", arch::Fidelity::Tlm, true, "mxfp8");
  EXPECT_FALSE(mx.ok);
  EXPECT_THAT(mx.error, ::testing::HasSubstr("kernel 'attention' takes --dtype bf16, fp32, fp8_e4m3, fp8_e5m2, not 'mxfp8'"));
}

// The flash kernel never writes scores to HBM: its DMA traffic is the
// inputs and the output only, while the naive one moves the score matrix
// out and back.
TEST(Attention, FlashNeverMaterialisesTheScoresInHbm) {
  const Shape shape{{"S", 256}, {"D", 32}, {"H", 1}};
  const KernelRun flash = kernel_testing::run_kernel_in_child("attention", "flash", shape, "small", arch::Fidelity::Tlm);
  const KernelRun naive = kernel_testing::run_kernel_in_child("attention", "naive", shape, "small", arch::Fidelity::Tlm);
  ASSERT_TRUE(flash.ok && naive.ok) << flash.error << naive.error;
  EXPECT_TRUE(flash.correct && naive.correct);
  EXPECT_LT(flash.time_ns, naive.time_ns);
}

TEST(Attention, SequenceTooLongForSbufIsAnErrorNamingTheSizes) {
  const KernelRun r = kernel_testing::run_kernel("attention", "flash", {{"S", 8192}, {"D", 8}, {"H", 1}}, "tiny",
                                          arch::Fidelity::Tlm, /*no_data=*/true);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("attention: K^T and V of one head (S=8192, D=8) need"));
}

// Outputs of D = 1024 need two PSUM banks per query block; with the score
// and transpose tiles of the pipeline they do not fit small's eight banks.
TEST(Attention, HeadDimensionTooLargeForPsumIsAnErrorNamingTheTile) {
  const KernelRun r = kernel_testing::run_kernel("attention", "flash", {{"S", 64}, {"D", 1024}, {"H", 1}}, "small",
                                                 arch::Fidelity::Tlm, /*no_data=*/true);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("PSUM full: needs 2048 bytes in one bank"));
}

}  // namespace
}  // namespace tessera::kernels
