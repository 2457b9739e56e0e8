// Every GEMM variant over shapes with odd edges on tiny, small and a real
// generation (tlm), each run in its own process; results within the
// documented fp32-accumulation bound of the double reference.
#include "common/kernel.h"
#include "common/kernel_testing.h"
#include "tessera/kernel_builder.h"

#include "testing/child_process.h"
#include "common/tests/rtl_agreement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <ostream>
#include <tuple>

namespace tessera::kernels {
namespace {

struct Case {
  const char* config;
  std::int64_t M, N, K;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.config << " " << c.M << "x" << c.N << "x" << c.K; }

class GemmTest : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};

TEST_P(GemmTest, MatchesTheReference) {
  const auto& [variant, c] = GetParam();
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  DeviceOptions o;
  o.config = c.config;
  o.fidelity = arch::Fidelity::Tlm;
  Device dev(o);
  auto k = instantiate(dev, {"gemm", variant, {{"M", c.M}, {"N", c.N}, {"K", c.K}}, {}, 7}).kernel;
  const RunReport r = dev.run(k->build());
  ASSERT_TRUE(r.ok) << r.error;
  const NumericsCheck check = k->check();
  EXPECT_TRUE(check.correct) << check.detail << " (error " << check.max_abs_error << ", tolerance " << check.tolerance
                             << ")";
  EXPECT_DOUBLE_EQ(r.matmul_flops, 2.0 * c.M * c.N * c.K);
}

const Case kCases[] = {
    {"tiny", 8, 64, 8},     // one tile each way
    {"tiny", 21, 100, 37},  // edges in every dimension
    {"tiny", 1, 1, 1},
    {"tiny", 40, 130, 24},
    {"small", 64, 600, 96},
    {"small", 33, 17, 65},
    {"neuroncore-v2", 256, 640, 384},
};

std::string case_name(const ::testing::TestParamInfo<std::tuple<std::string, Case>>& info) {
  const Case& c = std::get<1>(info.param);
  std::string cfg = c.config;
  for (auto& ch : cfg)
    if (ch == '-') ch = '_';
  return std::get<0>(info.param) + "_" + cfg + "_" + std::to_string(c.M) + "x" + std::to_string(c.N) + "x" +
         std::to_string(c.K);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmTest,
                         ::testing::Combine(::testing::Values("naive", "hoisted", "blocked_mn", "blocked_mnk", "tiled",
                                                              "hoist_load", "block_free_dimension", "fully_optimized"),
                                            ::testing::ValuesIn(kCases)),
                         case_name);

// rtl fidelity through the driver: the tensor engine and the DMA engines are
// the Verilated RTL. Each fidelity runs in its own child process; the numbers
// must be correct and the end-to-end time tlm's to the cycle (rtl_agreement.h,
// docs/cosim.md, "Whole kernels").
class GemmRtlTest : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};

kernel_testing::KernelRun run_gemm(const std::string& variant, const Case& c, arch::Fidelity fidelity) {
  return kernel_testing::run_kernel_in_child("gemm", variant, {{"M", c.M}, {"N", c.N}, {"K", c.K}}, c.config, fidelity);
}

TEST_P(GemmRtlTest, RtlMatchesTlmCyclesAndTheReference) {
  const auto& [variant, c] = GetParam();
  if (const std::string why = kernel_testing::rtl_not_built(c.config); !why.empty()) GTEST_SKIP() << why;
  const auto rtl = run_gemm(variant, c, arch::Fidelity::Rtl);
  const auto tlm = run_gemm(variant, c, arch::Fidelity::Tlm);
  ASSERT_TRUE(rtl.ok) << rtl.error;
  ASSERT_TRUE(tlm.ok) << tlm.error;
  EXPECT_TRUE(rtl.correct) << rtl.detail;
  kernels::agreement::expect_rtl_matches_tlm(rtl.time_ns, tlm.time_ns);
}

const Case kRtlCases[] = {
    {"tiny", 8, 64, 8},
    {"tiny", 21, 100, 37},
    {"tiny", 40, 130, 24},
    {"small", 33, 40, 65},
};

INSTANTIATE_TEST_SUITE_P(Shapes, GemmRtlTest,
                         ::testing::Combine(::testing::Values("naive", "blocked_mnk", "fully_optimized"),
                                            ::testing::ValuesIn(kRtlCases)),
                         case_name);

// The tutorial's last kernel keeps a whole N block of results for all of M in
// SBUF; when they cannot fit, the error says so and how much they need.
TEST(Gemm, FullyOptimizedSaysWhenItsResultTilesDoNotFit) {
  const std::string text = test_support::run_in_child([&] {
    setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
    DeviceOptions o;
    o.config = "tiny";
    o.fidelity = arch::Fidelity::Tlm;
    o.no_data = true;
    Device dev(o);
    auto k = instantiate(dev, {"gemm", "fully_optimized", {{"M", 320}, {"N", 128}, {"K", 8}}, {}, 7}).kernel;
    try {
      k->build();
    } catch (const KernelError& e) {
      return std::string(e.what());
    }
    return std::string("built");
  });
  EXPECT_NE(text.find("gemm fully_optimized: its tiles need"), std::string::npos) << text;
  EXPECT_NE(text.find("SBUF has 16384"), std::string::npos) << text;
}

// Every input dtype (docs/formats.md) on the variants written for all of
// them: bf16's fp32-accumulation bound holds for fp8 and MX, whose products
// are exact; fp32 adds one rounding per product. blocked_mnk in every
// fidelity on tiny and small (double row and MX in the RTL array), naive in
// tlm; K edges that split a double-row step, MX blocks of 32 rows.
struct DtypeCase {
  const char* config;
  std::int64_t M, N, K;
  bool mx;  // K a multiple of 32
};

void PrintTo(const DtypeCase& c, std::ostream* os) { *os << c.config << " " << c.M << "x" << c.N << "x" << c.K; }

const DtypeCase kDtypeCases[] = {
    {"tiny", 8, 64, 32, true},     // one K step in each mode
    {"tiny", 21, 40, 96, true},    // M and N edges, several K steps
    {"tiny", 13, 24, 44, false},   // a double-row step of unequal halves at K's edge
    {"small", 33, 70, 160, true},  // a single-row step at K's edge (double row), MX steps of 32 and 8 partitions
};

class GemmDtypeTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string, arch::Fidelity, DtypeCase>> {};

kernel_testing::KernelRun run_dtype(const std::string& dtype, const std::string& variant, const DtypeCase& c,
                                    arch::Fidelity fidelity) {
  return kernel_testing::run_kernel_in_child("gemm", variant, {{"M", c.M}, {"N", c.N}, {"K", c.K}}, c.config, fidelity,
                                             dtype);
}

// The reference in every fidelity; rtl and sampled also within 1 % of tlm's
// time, as GemmRtlTest asks of bf16.
TEST_P(GemmDtypeTest, MatchesTheReference) {
  const auto& [dtype, variant, fidelity, c] = GetParam();
  if (fidelity != arch::Fidelity::Tlm)
    if (const std::string why = kernel_testing::rtl_not_built(c.config); !why.empty()) GTEST_SKIP() << why;
  const auto run = run_dtype(dtype, variant, c, fidelity);
  ASSERT_TRUE(run.ok) << run.error;
  EXPECT_TRUE(run.correct) << run.detail << " (error " << run.max_abs_error << ", tolerance " << run.tolerance << ")";
  EXPECT_DOUBLE_EQ(run.matmul_flops, 2.0 * c.M * c.N * c.K);
  if (fidelity == arch::Fidelity::Tlm) return;
  const auto tlm = run_dtype(dtype, variant, c, arch::Fidelity::Tlm);
  ASSERT_TRUE(tlm.ok) << tlm.error;
  const double r = run.time_ns, t = tlm.time_ns;
  EXPECT_LE(std::abs(r - t), 0.01 * t) << arch::to_string(fidelity) << " " << r << " ns, tlm " << t << " ns";
}

std::string dtype_case_name(
    const ::testing::TestParamInfo<std::tuple<std::string, std::string, arch::Fidelity, DtypeCase>>& info) {
  const auto& [dtype, variant, fidelity, c] = info.param;
  return dtype + "_" + variant + "_" + arch::to_string(fidelity) + "_" + c.config + "_" + std::to_string(c.M) + "x" +
         std::to_string(c.N) + "x" + std::to_string(c.K);
}

// MX formats take only the cases whose K is whole blocks of 32 (the
// kernel refuses the others, tested below), so no case is made to skip.
const auto kPlainDtypes = ::testing::Values("fp32", "fp8_e4m3", "fp8_e5m2");
const auto kMxDtypes = ::testing::Values("mxfp8", "mxfp4");
std::vector<DtypeCase> mx_cases() {
  std::vector<DtypeCase> cases;
  for (const DtypeCase& c : kDtypeCases)
    if (c.mx) cases.push_back(c);
  return cases;
}
const auto kEveryFidelity = ::testing::Values(arch::Fidelity::Tlm, arch::Fidelity::Sampled, arch::Fidelity::Rtl);

INSTANTIATE_TEST_SUITE_P(EveryFidelity, GemmDtypeTest,
                         ::testing::Combine(kPlainDtypes, ::testing::Values("blocked_mnk"), kEveryFidelity,
                                            ::testing::ValuesIn(kDtypeCases)),
                         dtype_case_name);
INSTANTIATE_TEST_SUITE_P(EveryFidelityMx, GemmDtypeTest,
                         ::testing::Combine(kMxDtypes, ::testing::Values("blocked_mnk"), kEveryFidelity,
                                            ::testing::ValuesIn(mx_cases())),
                         dtype_case_name);
INSTANTIATE_TEST_SUITE_P(Naive, GemmDtypeTest,
                         ::testing::Combine(kPlainDtypes, ::testing::Values("naive"),
                                            ::testing::Values(arch::Fidelity::Tlm), ::testing::ValuesIn(kDtypeCases)),
                         dtype_case_name);
INSTANTIATE_TEST_SUITE_P(NaiveMx, GemmDtypeTest,
                         ::testing::Combine(kMxDtypes, ::testing::Values("naive"),
                                            ::testing::Values(arch::Fidelity::Tlm), ::testing::ValuesIn(mx_cases())),
                         dtype_case_name);

// A dtype the kernel, the variant, the shape or the config cannot take is
// bad input naming the rule, before anything runs.
std::string build_error(const char* config, const KernelRequest& request) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  DeviceOptions o;
  o.config = config;
  o.no_data = true;
  const std::string text = test_support::run_in_child([&] {
    Device dev(o);
    try {
      instantiate(dev, request).kernel->build();
    } catch (const KernelError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  });
  return text;
}

TEST(GemmDtype, WrongDtypesAreBadInputNamingTheRule) {
  const Shape shape{{"M", 128}, {"N", 512}, {"K", 256}};
  EXPECT_EQ(build_error("neuroncore-v2", {"gemm", "", shape, {}, 1, "fp16"}),
            "kernel 'gemm' takes --dtype bf16, fp32, fp8_e4m3, fp8_e5m2, mxfp8, mxfp4, not 'fp16'");
  EXPECT_EQ(build_error("neuroncore-v2", {"softmax", "", {}, {}, 1, "fp8_e4m3"}),
            "kernel 'softmax' takes --dtype bf16 only, not 'fp8_e4m3'");
  EXPECT_EQ(build_error("neuroncore-v2", {"gemm", "tiled", shape, {}, 1, "fp8_e4m3"}),
            "gemm tiled: --dtype fp8_e4m3: this variant reads bf16 inputs only; blocked_mnk and naive run every dtype");
  EXPECT_EQ(build_error("neuroncore-v4", {"gemm", "", {{"M", 128}, {"N", 512}, {"K", 200}}, {}, 1, "mxfp8"}),
            "gemm --dtype mxfp8: K = 200 is not a multiple of 32 (an MX scale serves a block of 32 contraction rows)");
  EXPECT_THAT(build_error("neuroncore-v1", {"gemm", "", shape, {}, 1, "fp8_e4m3"}),
              ::testing::HasSubstr("fp8_e4m3 inputs are not supported by this config's tensor engine "
                                   "(tensor.fp8_rows_per_pe is 0)"));
  EXPECT_THAT(build_error("neuroncore-v3", {"gemm", "", shape, {}, 1, "mxfp4"}),
              ::testing::HasSubstr("fp4_e2m1_x4 inputs are not supported by this config's tensor engine "
                                   "(tensor.mx_rows_per_pe is 0)"));
}

// psum=bf16: accumulators in bf16 PSUM where the config has
// tensor.psum_bf16 (tiny does), each matmul's fp32 sum rounded into the
// cell. Within the bound check() derives for it, which the fp32 run's
// error is far inside; rtl bit for bit and to the cycle of tlm.
class GemmBf16PsumTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(GemmBf16PsumTest, RoundsOncePerMatmulWithinItsBound) {
  const auto& [dtype, variant] = GetParam();
  const Shape shape{{"M", 21}, {"N", 40}, {"K", 96}};
  const std::map<std::string, std::string> bf16{{"psum", "bf16"}};
  const auto tlm = kernel_testing::run_kernel_in_child("gemm", variant, shape, "tiny", arch::Fidelity::Tlm, dtype, bf16);
  const auto rtl = kernel_testing::run_kernel_in_child("gemm", variant, shape, "tiny", arch::Fidelity::Rtl, dtype, bf16);
  const auto fp32 = kernel_testing::run_kernel_in_child("gemm", variant, shape, "tiny", arch::Fidelity::Tlm, dtype);
  ASSERT_TRUE(tlm.ok && rtl.ok && fp32.ok) << tlm.error << rtl.error << fp32.error;
  EXPECT_TRUE(tlm.correct) << tlm.detail << " (error " << tlm.max_abs_error << ", tolerance " << tlm.tolerance << ")";
  EXPECT_TRUE(rtl.correct) << rtl.detail;
  EXPECT_TRUE(fp32.correct) << fp32.detail;
  kernels::agreement::expect_rtl_matches_tlm(rtl.time_ns, tlm.time_ns);
  // bf16 cells hold 8 significant bits: the error is of bf16's order, the
  // fp32 accumulation's of fp32's.
  EXPECT_GT(tlm.max_abs_error, 1e-4);
  EXPECT_LT(fp32.max_abs_error, 1e-5);
  // The bound is the worst case of s roundings, not vacuous: the worst
  // element uses a fair share of it.
  EXPECT_GT(tlm.max_abs_error, tlm.tolerance / 20) << "error " << tlm.max_abs_error << ", bound " << tlm.tolerance;
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GemmBf16PsumTest,
                         ::testing::Combine(::testing::Values("bf16", "fp8_e4m3", "mxfp8"),
                                            ::testing::Values("blocked_mnk", "naive")),
                         kernel_testing::dtype_variant_name);

TEST(GemmBf16Psum, AConfigWithoutBf16PsumIsAnErrorNamingTheKey) {
  const Shape shape{{"M", 128}, {"N", 512}, {"K", 256}};
  EXPECT_THAT(build_error("neuroncore-v2", {"gemm", "", shape, {{"psum", "bf16"}}, 1, ""}),
              ::testing::HasSubstr("bf16 results in PSUM are not supported by this config's tensor engine "
                                   "(tensor.psum_bf16 is false)"));
  EXPECT_THAT(build_error("tiny", {"gemm", "tiled", shape, {{"psum", "bf16"}}, 1, ""}),
              ::testing::HasSubstr("variant 'tiled' does not read parameter 'psum' (it applies to blocked_mnk, naive)"));
}

}  // namespace
}  // namespace tessera::kernels
