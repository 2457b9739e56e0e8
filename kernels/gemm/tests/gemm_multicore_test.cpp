// GEMM split across the cores of a chip (docs/multicore.md): sharded over M
// and over N on 2, 4 and 8 cores, each result against the reference; the
// cores contending for the chip's one HBM; and the errors of a launch that
// does not fit the chip. Each test is its own process (SystemC); a test that
// compares runs does each in a forked child.
#include "common/kernel.h"
#include "common/kernel_testing.h"
#include "tessera/kernel_builder.h"

#include "testing/child_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ostream>

namespace tessera::kernels {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* config;
  int cores;
  const char* shard;
  const char* variant;
  std::int64_t M, N, K;
  arch::Fidelity fidelity = arch::Fidelity::Tlm;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.config << " " << c.cores << " cores shard " << c.shard << " " << c.variant << " " << c.M << "x" << c.N
      << "x" << c.K << " " << arch::to_string(c.fidelity);
}

using kernel_testing::open_chip;

class GemmOnCores : public ::testing::TestWithParam<Case> {};

TEST_P(GemmOnCores, MatchesTheReferenceWithEveryCoreWorking) {
  const Case& c = GetParam();
  Device dev = open_chip(c.config, c.cores, c.fidelity);
  const RunReport r = run_kernel(dev, {"gemm", c.variant, {{"M", c.M}, {"N", c.N}, {"K", c.K}}, {}, 7}, c.shard);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_TRUE(r.checked);
  EXPECT_TRUE(r.correct) << r.error;
  EXPECT_EQ(r.shard, c.shard);
  ASSERT_EQ(r.per_core.size(), static_cast<std::size_t>(c.cores));
  // The cores' shares add up to the whole product, every core has one, and
  // the run ends with the last of them.
  double flops = 0, last = 0;
  for (const CoreReport& core : r.per_core) {
    EXPECT_GT(core.matmul_flops, 0);
    EXPECT_GT(core.hbm_bytes, 0);
    flops += core.matmul_flops;
    last = std::max(last, core.time_ns);
  }
  EXPECT_DOUBLE_EQ(flops, 2.0 * c.M * c.N * c.K);
  EXPECT_DOUBLE_EQ(r.matmul_flops, flops);
  EXPECT_DOUBLE_EQ(r.time_ns, last);
  EXPECT_DOUBLE_EQ(r.time_ns, r.per_core[static_cast<std::size_t>(r.critical_core)].time_ns);
  // HBM figures are the chip's.
  const arch::HbmConfig chip = arch::chip_hbm(dev.resolved().hw);
  EXPECT_DOUBLE_EQ(r.hbm_peak_gbps, chip.bandwidth_gbps);
  EXPECT_LE(r.hbm_bandwidth_gbps, chip.bandwidth_gbps);
}

const Case kCases[] = {
    {"tiny", 2, "M", "blocked_mnk", 21, 100, 37},   // edges in every dimension; M tiles 3 -> 1 + 2
    {"tiny", 2, "N", "blocked_mnk", 21, 100, 37},   // N tiles 2 -> 1 + 1
    {"tiny", 2, "M", "naive", 40, 130, 24},
    {"tiny", 2, "N", "fully_optimized", 40, 130, 24},
    {"small", 4, "M", "blocked_mnk", 130, 96, 65},  // M tiles 5 -> 1 + 1 + 1 + 2
    {"small", 4, "N", "blocked_mnk", 33, 2100, 40},  // N tiles 5 of 512 -> 1 + 1 + 1 + 2
    {"small", 4, "N", "hoisted", 64, 2048, 96},
    {"neuroncore-v3", 8, "M", "blocked_mnk", 1024, 512, 256},
    {"neuroncore-v3", 4, "N", "blocked_mnk", 256, 2048, 256},
    {"neuroncore-v2", 2, "M", "blocked_mnk", 256, 640, 384},
    // K: partial products summed by a reduce-scatter across the cores.
    {"tiny", 2, "K", "blocked_mnk", 21, 100, 37},   // K steps 5 -> 2 + 3
    {"tiny", 2, "K", "naive", 16, 64, 40},
    {"small", 4, "K", "blocked_mnk", 40, 96, 260},  // K steps 9 -> 2 + 2 + 2 + 3
    {"small", 4, "K", "hoisted", 33, 128, 128},
    {"neuroncore-v3", 2, "K", "blocked_mnk", 256, 512, 512},
    // Two Verilated tensor engines and four Verilated DMA engines in one process.
    {"tiny", 2, "M", "blocked_mnk", 21, 100, 37, arch::Fidelity::Rtl},
    {"tiny", 2, "K", "blocked_mnk", 21, 100, 37, arch::Fidelity::Rtl},
    {"tiny", 2, "N", "naive", 16, 128, 16, arch::Fidelity::Rtl},
};

TEST(GemmOverK, EachCoreSendsThreeChunksOfEveryBlock) {
  Device dev = open_chip("small", 4);
  const RunReport r = run_kernel(dev, {"gemm", "blocked_mnk", {{"M", 40}, {"N", 96}, {"K", 260}}, {}, 7}, "K");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.correct) << r.error;
  // A ring reduce-scatter: each core sends 3 of its 4 chunks of C's one block.
  for (int k = 0; k < 4; ++k) {
    const double sent = r.stats.at("fabric.core" + std::to_string(k) + ".bytes_sent").get<double>();
    const double signals = r.stats.at("fabric.core" + std::to_string(k) + ".signals_sent").get<double>();
    EXPECT_DOUBLE_EQ(sent - 4 * signals, 3.0 / 4.0 * 40 * 96 * 4) << "core " << k;
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return kernel_testing::case_name(c.config, {}) + "_" + std::to_string(c.cores) + "cores_" + c.shard + "_" + c.variant + "_" + std::to_string(c.M) + "x" +
         std::to_string(c.N) + "x" + std::to_string(c.K) + "_" + arch::to_string(c.fidelity);
}

INSTANTIATE_TEST_SUITE_P(Shards, GemmOnCores, ::testing::ValuesIn(kCases), case_name);

// One timing-only GEMM on `cores` cores of a tiny chip whose HBM is the
// bottleneck (a core's share 1 GB/s on one channel, the chip 4 GB/s on
// four; the DMA engines could move 16 GB/s), in a child: time, chip
// bandwidth, and core 0's bandwidth.
nlohmann::json run_bandwidth_bound(int cores) {
  const std::string text = test_support::run_in_child([cores] {
    Device dev = open_chip("tiny", cores, arch::Fidelity::Tlm,
                      {arch::parse_override("hbm.bandwidth_gbps=1"), arch::parse_override("hbm.channels=1"),
                       arch::parse_override("chip.hbm_bandwidth_gbps=4"), arch::parse_override("chip.hbm_channels=4")},
                      true);
    const RunReport r = run_kernel(dev, {"gemm", "hoisted", {{"M", 8}, {"N", 1024}, {"K", 64}}, {}, 7}, "N");
    return nlohmann::json{{"ok", r.ok},
                          {"error", r.error},
                          {"time_ns", r.time_ns},
                          {"chip_gbps", r.hbm_bandwidth_gbps},
                          {"core0_gbps", r.per_core.at(0).hbm_bandwidth_gbps}}
        .dump();
  });
  return nlohmann::json::parse(text);
}

// The chip's bandwidth is not divided among the cores in advance: one core
// alone takes more than a core's share, and two cores contend for the same
// channels, so two are not twice as fast when HBM is what bounds them.
TEST(GemmOnCores, CoresContendForTheChipsHbmAtItsChannels) {
  const nlohmann::json one = run_bandwidth_bound(1), two = run_bandwidth_bound(2);
  ASSERT_TRUE(one["ok"].get<bool>()) << one["error"];
  ASSERT_TRUE(two["ok"].get<bool>()) << two["error"];
  EXPECT_GT(one["core0_gbps"].get<double>(), 1.5);  // well above a core's own 1 GB/s
  EXPECT_LE(two["chip_gbps"].get<double>(), 4.0);
  const double speedup = one["time_ns"].get<double>() / two["time_ns"].get<double>();
  EXPECT_LT(speedup, 1.6);
  EXPECT_GT(speedup, 0.9);
}

TEST(GemmOnCores, MoreCoresThanTheChipHasIsAnError) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  DeviceOptions o;
  o.config = "neuroncore-v2";
  o.cores = 4;
  try {
    Device dev(o);
    FAIL() << "accepted";
  } catch (const KernelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("4 cores: a neuroncore-v2 chip has 2 (chip.cores, "));
    EXPECT_THAT(e.what(), HasSubstr("neuroncore-v2.yaml:"));
  }
}

TEST(GemmOnCores, AGridThatIsNotTheCoresIsAnError) {
  Device dev = open_chip("tiny", 2);
  auto k = instantiate(dev, {"gemm", "naive", {{"M", 16}, {"N", 64}, {"K", 8}}, {}, 7}).kernel;
  try {
    dev.launch([&](const Spmd& s) { return k->build_instance(s, "M"); }, 3);
    FAIL() << "accepted";
  } catch (const KernelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a grid of 3 instances on a device of 2 cores"));
  }
  try {
    dev.run(k->build());
    FAIL() << "accepted";
  } catch (const KernelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("this device has 2 cores: launch a grid of 2 instances"));
  }
}

// chip.lnc 2: a run that names no core count is one logical core, the
// kernel split across its two cores; a kernel that cannot split says how
// to run it.
TEST(GemmOnCores, ALogicalCoreOfTwoRunsTheKernelOnBoth) {
  Device dev = open_chip("tiny", 0, arch::Fidelity::Tlm, {arch::parse_override("chip.lnc=2")});
  EXPECT_TRUE(dev.logical_core());
  EXPECT_EQ(dev.cores(), 2);
  const RunReport r = run_kernel(dev, {"gemm", "blocked_mnk", {{"M", 21}, {"N", 100}, {"K", 37}}, {}, 7});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.correct) << r.error;
  EXPECT_EQ(r.per_core.size(), 2u);
  EXPECT_EQ(r.lnc, 2);
  EXPECT_EQ(r.shard, "M");
  EXPECT_EQ(r.to_json().at("lnc"), 2);
  try {
    run_kernel(dev, {"softmax", "", {}, {}, 7});
    FAIL() << "accepted";
  } catch (const KernelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("kernel 'softmax' cannot be split across the 2 cores of a logical core (chip.lnc 2"));
    EXPECT_THAT(e.what(), HasSubstr("run it with --cores 1 or --set chip.lnc=1"));
  }
  // Asking for cores is asking for physical cores, whatever the LNC.
  Device one = open_chip("tiny", 1, arch::Fidelity::Tlm, {arch::parse_override("chip.lnc=2")});
  EXPECT_FALSE(one.logical_core());
  EXPECT_EQ(one.cores(), 1);
}

TEST(GemmOnCores, ShardsThatDoNotFitAreErrors) {
  Device dev = open_chip("tiny", 2);
  const auto error_of = [&](const KernelRequest& r, const std::string& shard) {
    return kernel_testing::shard_error(dev, r, shard);
  };
  EXPECT_THAT(error_of({"gemm", "naive", {{"M", 16}, {"N", 64}, {"K", 8}}, {}, 7}, "Q"),
              HasSubstr("--shard Q: kernel 'gemm' shards over M or N or K"));
  // K = 8 is one step of the 8-row array; N = 65 has no chunk per core for the reduce-scatter.
  EXPECT_THAT(error_of({"gemm", "naive", {{"M", 16}, {"N", 64}, {"K", 8}}, {}, 7}, "K"),
              HasSubstr("gemm: K=8 is 1 step of 8, too few for 2 cores to get one each: shard over M or N, or grow K"));
  EXPECT_THAT(error_of({"gemm", "naive", {{"M", 16}, {"N", 65}, {"K", 64}}, {}, 7}, "K"),
              HasSubstr("gemm: shard K: N=65 does not split into 2 equal column chunks"));
  // M = 8 is one tile of the 8-column array.
  EXPECT_THAT(error_of({"gemm", "naive", {{"M", 8}, {"N", 64}, {"K", 8}}, {}, 7}, "M"),
              HasSubstr("gemm: M=8 is 1 tile of 8, too few for 2 cores to get one each: shard over N, or grow M"));
  EXPECT_THAT(error_of({"softmax", "", {}, {}, 7}, ""), HasSubstr("kernel 'softmax' cannot be split across 2 cores"));
}

}  // namespace
}  // namespace tessera::kernels
