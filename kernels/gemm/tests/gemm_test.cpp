// Every GEMM variant over shapes with odd edges on tiny, small and a real
// generation (tlm), each run in its own process; results within the
// documented fp32-accumulation bound of the double reference.
#include "common/kernel.h"
#include "tessera/kernel_builder.h"

#include "testing/child_process.h"
#include "common/tests/rtl_agreement.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
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
// must be correct and the end-to-end time tlm's to the cycle, but for the
// runs rtl_agreement.h lists (docs/cosim.md, "Whole kernels").
class GemmRtlTest : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};

nlohmann::json run_gemm(const std::string& variant, const Case& c, arch::Fidelity fidelity) {
  const std::string text = test_support::run_in_child([&] {
    setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
    DeviceOptions o;
    o.config = c.config;
    o.fidelity = fidelity;
    Device dev(o);
    auto k = instantiate(dev, {"gemm", variant, {{"M", c.M}, {"N", c.N}, {"K", c.K}}, {}, 7}).kernel;
    const RunReport r = dev.run(k->build());
    const NumericsCheck check = r.ok ? k->check() : NumericsCheck{};
    return nlohmann::json{{"ok", r.ok},
                          {"error", r.error},
                          {"time_ns", r.time_ns},
                          {"correct", check.correct},
                          {"detail", check.detail}}
        .dump();
  });
  return nlohmann::json::parse(text);
}

TEST_P(GemmRtlTest, RtlMatchesTlmCyclesAndTheReference) {
  const auto& [variant, c] = GetParam();
  const auto rtl = run_gemm(variant, c, arch::Fidelity::Rtl);
  const auto tlm = run_gemm(variant, c, arch::Fidelity::Tlm);
  ASSERT_TRUE(rtl["ok"].get<bool>()) << rtl["error"];
  ASSERT_TRUE(tlm["ok"].get<bool>()) << tlm["error"];
  EXPECT_TRUE(rtl["correct"].get<bool>()) << rtl["detail"];
  const double r = rtl["time_ns"], t = tlm["time_ns"];
  kernels::agreement::expect_rtl_matches_tlm(r, t);
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

}  // namespace
}  // namespace tessera::kernels
