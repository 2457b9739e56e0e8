// Attention, flash and naive, with and without the causal mask, over shapes
// with odd edges (sequence, head dimension past one chunk and past one PSUM
// tile) on tiny, small and a real generation (tlm), and on the RTL (tiny);
// results within the bound derived in attention.cpp from the double reference.
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
