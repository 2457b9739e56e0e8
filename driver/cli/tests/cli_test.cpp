// Runs the real `tessera` binary, as a user would, and checks exit status,
// stdout and stderr.
#include "tessera_process.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <sys/wait.h>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

using Result = tessera::test_support::TesseraResult;
Result run(const std::string& args) { return tessera::test_support::run_tessera(args); }

std::string configs(const std::string& name) { return fmt::format("{}/configs/{}", TESSERA_SOURCE_DIR, name); }

TEST(Cli, ListConfigsShowsEveryGenerationWithItsPeak) {
  const auto r = run("list configs");
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* name : {"neuroncore-v1", "neuroncore-v2", "neuroncore-v3", "neuroncore-v4", "small", "tiny"})
    EXPECT_THAT(r.out, HasSubstr(name));
  EXPECT_THAT(r.out, HasSubstr("91.8 TF/s"));
  EXPECT_THAT(r.out, HasSubstr("128x128"));
}

TEST(Cli, ListConfigsDerivedShowsPeaksPerDtype) {
  const auto r = run("list configs --derived");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("314.6"));  // v4 MX quad
  EXPECT_THAT(r.out, HasSubstr("157.3"));  // v3 / v4 fp8 double row
  EXPECT_THAT(r.out, HasSubstr("16x16"));  // v2 DMA engines x queues
}

TEST(Cli, ListKernelsRuns) {
  const auto r = run("list kernels");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("kernel"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("sum_axis1, max_axis1, sum_axis0, max_axis0 +R=1024,C=1024"));
  EXPECT_THAT(r.out, HasSubstr("gelu, silu, relu, exp, add, multiply"));
}

// Each kernel's dtypes, and which variants take them.
TEST(Cli, ListKernelsShowsDtypes) {
  const auto r = run("list kernels");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("dtypes (--dtype)"));
  EXPECT_THAT(r.out, HasSubstr("bf16,fp32,fp8_e4m3,fp8_e5m2,mxfp8,mxfp4"));
  const auto d = run("list kernels --details");
  EXPECT_EQ(d.status, 0) << d.err;
  EXPECT_THAT(d.out, HasSubstr("dtypes: bf16 (default), fp32, fp8_e4m3, fp8_e5m2, mxfp8, mxfp4 (--dtype; variants "
                               "blocked_mnk, naive, the others bf16 only)"));
  EXPECT_THAT(d.out, HasSubstr("dtypes: bf16 (default), fp32, fp8_e4m3, fp8_e5m2 (--dtype)"));  // mlp
  EXPECT_THAT(d.out, HasSubstr("dtypes: bf16 only"));
}

// tiny's default fidelity is rtl: the Verilated tensor engine runs the GEMM.
TEST(Cli, RunOnTinyDefaultsToRtl) {
  const auto r = run("run --config tiny --kernel gemm --shape M=16,N=64,K=16");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(rtl)"));
  EXPECT_THAT(r.out, HasSubstr("numerics: match"));
}

TEST(Cli, RunSampledTakesTheBudgetFromSet) {
  const fs::path out = tessera::test_support::scratch_dir() / fmt::format("tessera_cli_sampled_{}", ::getpid());
  const auto r = run(fmt::format("run --config tiny --kernel gemm --shape M=16,N=64,K=16 --fidelity sampled "
                                 "--set simulation.sample_every=1 --set simulation.sample_rtl_budget_percent=100 "
                                 "--out {}",
                                 out.string()));
  EXPECT_EQ(r.status, 0) << r.err;
  std::ifstream in(out / "stats.txt");
  const std::string stats((std::istreambuf_iterator<char>(in)), {});
  // Every multiply sampled (4: two 8-row tiles of M, two of K), none left to the fast model alone.
  EXPECT_THAT(stats, ::testing::ContainsRegex("core\\.tensor\\.datapath\\.sampled_instructions +4 #"));
  EXPECT_THAT(stats, ::testing::ContainsRegex("core\\.tensor\\.datapath\\.unsampled_instructions +0 #"));
  fs::remove_all(out);
}

TEST(Cli, ValidateShippedConfigsSucceeds) {
  const auto r = run(fmt::format("config validate {} {}", configs("neuroncore-v2.yaml"), configs("tiny.yaml")));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ok"));
  EXPECT_EQ(r.err, "");
}

TEST(Cli, ValidateBadConfigPrintsFileLineAndExits2) {
  const fs::path bad = tessera::test_support::scratch_dir() / "tessera_cli_bad.yaml";
  std::ofstream(bad) << "base: tiny\ntensor:\n  rows: 0\n";
  const auto r = run(fmt::format("config validate {}", bad.string()));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, bad.string() + ":3: tensor.rows: must be at least 1, got 0\n");
  fs::remove(bad);
}

TEST(Cli, ShowPrintsResolvedConfigWithDerivedFigures) {
  const auto r = run("config show neuroncore-v3");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("clock_ghz: 2.4"));
  EXPECT_THAT(r.out, HasSubstr("peak_tflops.bf16"));
  EXPECT_THAT(r.out, HasSubstr("78.6 TFLOPS"));
  EXPECT_THAT(r.out, Not(HasSubstr("base:")));
}

TEST(Cli, ShowAppliesSetAndPrintsJson) {
  const auto r = run("config show neuroncore-v2 --set tensor.clock_ghz=1.4 --json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"clock_ghz\": 1.4"));
  EXPECT_THAT(r.out, HasSubstr("\"bf16\": 45.875"));
}

TEST(Cli, ShowBadSetExits2WithSuggestion) {
  const auto r = run("config show tiny --set tensor.rowz=4");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("did you mean 'tensor.rows'?"));
}

TEST(Cli, UnknownSubcommandExits2) {
  const auto r = run("frobnicate");
  EXPECT_EQ(r.status, 2);
}

TEST(Cli, HelpOnEverySubcommand) {
  for (const char* sub : {"", "config", "config validate", "config show", "list", "list configs"}) {
    SCOPED_TRACE(sub);
    const auto r = run(fmt::format("{} --help", sub));
    EXPECT_EQ(r.status, 0);
    EXPECT_THAT(r.out, HasSubstr("Usage"));
  }
}

// HFU and tensor utilisation count each format against its own rate: fp8
// in double row on tiny has twice bf16's peak, and a PE taking two rows a
// cycle is used once, so neither passes 100 % (both did, against bf16's).
TEST(Cli, HfuAndUtilisationAreAgainstTheFormatsOwnPeak) {
  const auto bf16 = run("run --config tiny --kernel mlp --shape T=128,D=32,F=64 --fidelity tlm --no-data --json");
  const auto fp8 =
      run("run --config tiny --kernel mlp --shape T=128,D=32,F=64 --fidelity tlm --no-data --json --dtype fp8_e4m3");
  ASSERT_EQ(bf16.status, 0) << bf16.err;
  ASSERT_EQ(fp8.status, 0) << fp8.err;
  const auto b = nlohmann::json::parse(bf16.out), f = nlohmann::json::parse(fp8.out);
  EXPECT_DOUBLE_EQ(f["peak_tflops"].get<double>(), 2 * b["peak_tflops"].get<double>());
  EXPECT_LE(f["hfu_percent"].get<double>(), 100.0);
  EXPECT_LE(f["tensor_utilisation"].get<double>(), 1.0);
  // The same FLOPs in less time at twice the peak.
  const double expect_hfu =
      b["hfu_percent"].get<double>() * b["time_ns"].get<double>() / f["time_ns"].get<double>() / 2;
  EXPECT_NEAR(f["hfu_percent"].get<double>(), expect_hfu, 1e-9 * expect_hfu);
}

TEST(Cli, RunPrintsAJsonReport) {
  const auto r = run("run --config tiny --kernel gemm --variant hoisted --shape M=16,N=64,K=24 --fidelity tlm --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"kernel", "variant", "config", "fidelity", "shape", "time_ns", "cycles", "hfu_percent",
                          "correct", "max_abs_error", "wall_seconds", "engines"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["kernel"], "gemm");
  EXPECT_EQ(j["variant"], "hoisted");
  EXPECT_EQ(j["shape"]["K"], 24);
  EXPECT_EQ(j["correct"], true);
  EXPECT_GT(j["time_ns"].get<double>(), 0);
  EXPECT_GT(j["engines"]["tensor"]["busy_ns"].get<double>(), 0);
  // The phases' host times: each measured, and the device's parts within its wall time.
  for (const char* key : {"build_seconds", "simulate_seconds", "analysis_seconds", "check_seconds"})
    EXPECT_GT(j[key].get<double>(), 0) << key;
  EXPECT_LE(j["simulate_seconds"].get<double>() + j["analysis_seconds"].get<double>(),
            j["wall_seconds"].get<double>());
}

// A bad TESSERA_CHECK_THREADS is named before the simulation, not after it.
TEST(Cli, BadCheckThreadsIsNamedBeforeTheRun) {
  const auto r = tessera::test_support::run_tessera(
      "run --config small --kernel gemm --shape M=40,N=300,K=70 --fidelity tlm", "TESSERA_CHECK_THREADS=two");
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.err, HasSubstr("TESSERA_CHECK_THREADS=two: expected a whole number of threads"));
  EXPECT_THAT(r.out, Not(HasSubstr("numerics")));
  const auto ok = tessera::test_support::run_tessera(
      "run --config small --kernel gemm --shape M=40,N=300,K=70 --fidelity tlm", "TESSERA_CHECK_THREADS=3");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("on 3 threads"));
}

// Timing must not depend on data: --no-data gives the same cycles.
TEST(Cli, NoDataGivesTheSameCycles) {
  const std::string args = "run --config small --kernel gemm --shape M=40,N=300,K=70 --fidelity tlm --json";
  const auto with = run(args), without = run(args + " --no-data");
  ASSERT_EQ(with.status, 0) << with.err;
  ASSERT_EQ(without.status, 0) << without.err;
  const auto a = nlohmann::json::parse(with.out), b = nlohmann::json::parse(without.out);
  EXPECT_EQ(a["time_ns"], b["time_ns"]);
  EXPECT_EQ(a["engines"], b["engines"]);
  EXPECT_EQ(b["checked"], false);
}

TEST(Cli, RunWritesReportStatsAndResolvedConfig) {
  const fs::path out = tessera::test_support::scratch_dir() / "tessera_cli_run_out";
  fs::remove_all(out);
  const auto r = run(fmt::format("run --config tiny --kernel gemm --fidelity tlm --out {} --set hbm.bandwidth_gbps=32",
                                 out.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("numerics: match"));
  for (const char* f : {"report.json", "stats.txt", "config.resolved.yaml"}) EXPECT_TRUE(fs::exists(out / f)) << f;
  std::ifstream stats(out / "stats.txt");
  const std::string text((std::istreambuf_iterator<char>(stats)), {});
  EXPECT_THAT(text, HasSubstr("core.tensor.macs"));
  EXPECT_THAT(text, HasSubstr("# multiply-accumulates performed (count)"));
  const auto v = run(fmt::format("config show {} --json", (out / "config.resolved.yaml").string()));
  ASSERT_EQ(v.status, 0) << v.err;
  EXPECT_EQ(nlohmann::json::parse(v.out)["config"]["hbm"]["bandwidth_gbps"], 32.0);
  fs::remove_all(out);
}

TEST(Cli, RunBadInputExits2NamingTheProblem) {
  auto r = run("run --config tiny --kernel gemmm --fidelity tlm");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown kernel 'gemmm'"));
  r = run("run --config tiny --kernel gemm --variant fast --fidelity tlm");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("no variant 'fast'"));
  r = run("run --config tiny --kernel gemm --shape Q=4 --fidelity tlm");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("no shape parameter 'Q'"));
  r = run("run --config tiny --kernel gemm --shape M=x --fidelity tlm");
  EXPECT_EQ(r.status, 2);
  r = run("run --config tinny --kernel gemm");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("did you mean 'tiny'"));
  // A shape whose tiles overflow SBUF: the rule and the call are named.
  r = run("run --config tiny --kernel gemm --variant blocked_mn --shape K=4096 --fidelity tlm");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("use blocked_mnk"));
}

// docs/configs.md carries the schema table; it must match the schema.
TEST(Cli, ConfigDocsMatchTheSchema) {
  const auto r = run("config schema");
  EXPECT_EQ(r.status, 0);
  std::ifstream in(fmt::format("{}/docs/configs.md", TESSERA_SOURCE_DIR));
  const std::string doc((std::istreambuf_iterator<char>(in)), {});
  EXPECT_THAT(doc, HasSubstr(r.out)) << "docs/configs.md is out of date: regenerate its key table with "
                                        "`build/tessera config schema`";
}

// A traced run: valid trace-event JSON whose instruction slices add up, per
// engine, to the busy times of the run's report; slices of one track never
// overlap; DMA queues, semaphore arrows, labels and counters are there.
TEST(Cli, TraceSlicesMatchTheReportsBusyTimes) {
  const fs::path dir = tessera::test_support::scratch_dir() / fmt::format("tessera_cli_trace_{}", ::getpid());
  fs::remove_all(dir);
  const auto r = run(fmt::format("run --config small --kernel gemm --variant blocked_mnk --shape M=64,N=256,K=96 "
                                 "--fidelity tlm --out {0} --trace {0}/trace.json",
                                 dir.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto report = nlohmann::json::parse(std::ifstream(dir / "report.json"));
  const auto trace = nlohmann::json::parse(std::ifstream(dir / "trace.json"));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  std::map<std::pair<int, int>, std::string> thread_name;
  std::map<std::string, double> busy_us;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
  std::set<std::string> counters, categories;
  int flow_starts = 0, flow_ends = 0;
  std::map<std::uint64_t, double> flow_from, flow_to;  // arrow id -> ts
  bool labelled = false, sited = false;
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid")) << e.dump();
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "thread_name") thread_name[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (ph == "C") counters.insert(e["name"].get<std::string>());
    if (ph == "s") ++flow_starts, flow_from[e["id"]] = e["ts"];
    if (ph == "f") ++flow_ends, flow_to[e["id"]] = e["ts"];
    if (ph != "X") continue;
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    categories.insert(e["cat"].get<std::string>());
    slices[{e["pid"], e["tid"]}].emplace_back(e["ts"], e["dur"]);
    if (e["cat"] == "instruction") {
      busy_us[thread_name.at({e["pid"], e["tid"]})] += e["dur"].get<double>();
      labelled |= e["args"].value("label", std::string()).rfind("C block", 0) == 0;
      sited |= e["args"].value("site", std::string()).rfind("kernels/gemm/gemm.cpp:", 0) == 0;
    }
  }
  // The tensor engine's slices are at the datapath's accept times: moving
  // columns streaming through the array on its own track (they add up to
  // the multiplying time), weight loads on a lane beside it. Its busy time
  // also counts results draining from the array, which no slice shows.
  EXPECT_NEAR(busy_us["tensor"] * 1000.0, report["tensor_multiplying_ns"].get<double>(), 1e-3);
  EXPECT_GT(busy_us["tensor weights"], 0);
  for (const auto& [engine, e] : report["engines"].items()) {
    // The report's dma row is the busiest DMA engine; the trace has a track
    // per queue, whose descriptor slices include time queued behind others.
    if (engine == "dma" || engine == "tensor") continue;
    const double busy_ns = e["busy_ns"];
    EXPECT_NEAR(busy_us[engine] * 1000.0, busy_ns, 1e-6 * std::max(1.0, busy_ns)) << engine;
  }
  EXPECT_GT(busy_us["tensor"], 0);
  for (auto& [track, list] : slices) {
    std::sort(list.begin(), list.end());
    for (std::size_t i = 1; i < list.size(); ++i)
      EXPECT_GE(list[i].first, list[i - 1].first + list[i - 1].second - 1e-6) << thread_name[track] << " slice " << i;
  }
  EXPECT_TRUE(categories.count("dma") && categories.count("semaphore")) << r.out;
  bool dma_track = false;
  for (const auto& [key, name] : thread_name) dma_track |= name.rfind("dma ", 0) == 0;
  EXPECT_TRUE(dma_track);
  EXPECT_TRUE(labelled);
  EXPECT_TRUE(sited);
  EXPECT_GT(flow_starts, 0);
  EXPECT_EQ(flow_starts, flow_ends);
  // Arrows run forward: from the producer's end to the consumer's start.
  for (const auto& [id, from] : flow_from) {
    ASSERT_TRUE(flow_to.count(id)) << id;
    EXPECT_LT(from, flow_to[id]) << "arrow " << id;
  }
  // Viewers bind each end of an arrow to the slice around it on its track.
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "s" && e["ph"] != "f") continue;
    const double t = e["ts"];
    const auto& list = slices[{e["pid"], e["tid"]}];
    EXPECT_TRUE(std::any_of(list.begin(), list.end(), [&](const auto& x) { return x.first <= t && t <= x.first + x.second; }))
        << "arrow end outside any slice: " << e.dump();
  }
  for (const char* c : {"HBM bandwidth (GB/s)", "SBUF live data (KiB)", "PSUM live data (KiB)"})
    EXPECT_TRUE(counters.count(c)) << c;

  // The kernel-tuning figures, consistent with each other.
  EXPECT_NEAR(report["mfu_percent"].get<double>(), report["hfu_percent"].get<double>(), 1e-9);  // GEMM does no extra work
  EXPECT_NEAR(report["arithmetic_intensity"].get<double>(),
              report["matmul_flops"].get<double>() / report["hbm_bytes"].get<double>(), 1e-9);
  EXPECT_GT(report["hbm_utilisation_percent"].get<double>(), 0);
  EXPECT_EQ(report["tensor_active_ns"], report["engines"]["tensor"]["busy_ns"]);
  ASSERT_FALSE(report["top_stalls"].empty());
  EXPECT_LE(report["top_stalls"].size(), 3u);
  EXPECT_GE(report["top_stalls"][0]["ns"].get<double>(), report["top_stalls"].back()["ns"].get<double>());
  EXPECT_THAT(r.out, HasSubstr("tensor engine active"));
  EXPECT_THAT(r.out, HasSubstr("stall 1:"));
  fs::remove_all(dir);
}

// --cores: per-core rows, the chip's HBM and the speed-up over one core
// of the same chip (a second run, timing only); bad counts are named.
TEST(CliCores, RunOnSeveralCoresReportsEachCoreAndTheSpeedUp) {
  auto r = run("run --config tiny --kernel gemm --shape M=32,N=128,K=32 --fidelity tlm --cores 2 --shard N --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cores"], 2);
  EXPECT_EQ(j["shard"], "N");
  ASSERT_EQ(j["per_core"].size(), 2u);
  EXPECT_TRUE(j["correct"].get<bool>());
  EXPECT_EQ(j["hbm_peak_gbps"], 32.0);  // the tiny chip's: twice a core's 16 GB/s
  const double t1 = j["scaling"]["baseline_time_ns"], t2 = j["time_ns"];
  EXPECT_GT(t1, t2);
  EXPECT_DOUBLE_EQ(j["scaling"]["speedup"].get<double>(), t1 / t2);
  EXPECT_DOUBLE_EQ(j["scaling"]["efficiency_percent"].get<double>(), 100.0 * t1 / t2 / 2);
  r = run("run --config tiny --kernel gemm --shape M=32,N=128,K=32 --fidelity tlm --cores 2 --no-baseline");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("2 cores sharing HBM, sharded over M: chip HBM"));
  EXPECT_THAT(r.out, Not(HasSubstr("speed-up")));
}

TEST(CliCores, BadCoreCountsAndShardsExit2) {
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"--config neuroncore-v2 --cores 4", "4 cores: a neuroncore-v2 chip has 2 (chip.cores, "},
           {"--config tiny --cores -1", "--cores -1: expected 1 or more"},
           {"--config tiny --shard M", "--shard needs --cores N"},
           {"--config tiny --cores 2 --shard Q", "--shard Q: kernel 'gemm' shards over M or N or K"},
           {"--config tiny --cores 2 --trace " + (tessera::test_support::scratch_dir() / "cores_trace.json").string(),
            "a waveform or a timeline of a multi-core run is not supported"},
       }) {
    const auto r = run("run --kernel gemm --fidelity tlm --no-data " + args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(expect)) << args;
  }
  const auto r = run("run --config tiny --kernel softmax --fidelity tlm --no-data --cores 2");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("kernel 'softmax' cannot be split across 2 cores"));
}

}  // namespace

namespace {

// Bad command lines and files: each a one-line message naming the problem,
// exit 2, before anything is simulated.
TEST(CliBadInput, CommandLineMistakesAreNamed) {
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"frobnicate", "unknown command 'frobnicate' (commands: config, list, run, disasm, regress, sweep"},
           {"run --bogus", "--bogus"},
           {"run --kernel gemm", "--config is required"},
           {"run --config tiny --kernel gemm --seed -1", "--seed -1: expected a whole number"},
           {"run --config tiny --kernel gemm --seed 18446744073709551616", "--seed 18446744073709551616: expected"},
           {"run --config tiny --kernel gemm --seed 1e23", "--seed 1e23: expected"},
           {"run --config tiny --kernel gemm --shape M=8,M=16", "--shape: 'M' is given twice"},
           {"run --config tiny --kernel gemm --shape M=4611686018427387904", "beyond the largest dimension"},
           {"run --config tiny --kernel gemm --set tensor=8", "'tensor' is a section, not a key"},
           {"run --config tiny --kernel gemm --fidelity tlm --out /dev/null/x", "/dev/null/x: cannot create the folder"},
       }) {
    const auto r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(expect)) << args;
    EXPECT_THAT(r.err, Not(HasSubstr("did you mean 'tensor'"))) << args;
  }
}

// A failed write fails the command, naming the file.
TEST(CliBadInput, AFailedWriteFailsTheRun) {
  const auto r = run("run --config tiny --kernel gemm --shape M=8,N=64,K=8 --fidelity tlm --trace /dev/full");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("/dev/full: cannot write: No space left on device"));
}

TEST(CliBadInput, TheSeedIsInTheReport) {
  const auto r = run("run --config tiny --kernel gemm --shape M=8,N=64,K=8 --fidelity tlm --no-data --json --seed 7");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["seed"], 7);
}

// Any readable file can be named as a config; one that is not a config is
// refused on its first problem, without its content quoted back.
TEST(CliBadInput, FilesThatAreNotConfigsAreRefusedWithoutEcho) {
  const fs::path dir = tessera::test_support::scratch_dir() / fmt::format("tessera_cli_notconfig_{}", ::getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "shadow") << "root:$y$j9T$secrethash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n";
  std::ofstream(dir / "kv.yaml") << "password: hunter2\nuser: root\n";
  std::string deep = "tensor: ";
  for (int i = 0; i < 2000; ++i) deep += "[";
  std::ofstream(dir / "deep.yaml") << deep << "\n";
  fs::create_symlink(dir / "loop_a.yaml", dir / "loop_b.yaml");
  fs::create_symlink(dir / "loop_b.yaml", dir / "loop_a.yaml");
  for (const auto& [file, expect] : std::vector<std::pair<std::string, std::string>>{
           {"shadow", "not a Tessera config: none of its top-level keys is a config section"},
           {"kv.yaml", "not a Tessera config: none of its top-level keys is a config section"},
           {"deep.yaml", "deep.yaml:1: not a Tessera config: nested more than 64 deep"},
           {"loop_a.yaml", "cannot read: Too many levels of symbolic links"},
           {std::string(300, 'x') + ".yaml", "cannot read: File name too long"},
       }) {
    const auto r = run("config validate " + (dir / file).string());
    EXPECT_EQ(r.status, 2) << file;
    EXPECT_THAT(r.err, HasSubstr(expect)) << file;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one message: " << r.err;
    for (const char* secret : {"secrethash", "hunter2", "daemon"}) EXPECT_THAT(r.err, Not(HasSubstr(secret)));
  }
  fs::remove_all(dir);
}

// config.resolved.yaml loads back to the same config, whatever --set gave.
TEST(CliBadInput, ResolvedConfigLoadsBack) {
  const fs::path dir = tessera::test_support::scratch_dir() / fmt::format("tessera_cli_roundtrip_{}", ::getpid());
  auto r = run("run --config tiny --kernel gemm --set 'name=x\ty' --fidelity tlm");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("name: expected one line of text"));
  // Not UTF-8 (report.json cannot hold it: the run failed after simulating).
  r = run("run --config tiny --kernel gemm --set \"name=$(printf 'x\\243y')\" --fidelity tlm");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("name: expected one line of text (UTF-8"));
  r = run(fmt::format("run --config tiny --kernel gemm --shape M=8,N=64,K=8 --fidelity tlm --no-data "
                      "--set \"description=it's a \\\"test\\\": #1\" --set hbm.bandwidth_gbps=12.5 --out {}",
                      dir.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto back = run("config show --json " + (dir / "config.resolved.yaml").string());
  ASSERT_EQ(back.status, 0) << back.err;
  const auto j = nlohmann::json::parse(back.out);
  EXPECT_EQ(j["config"]["description"], "it's a \"test\": #1");
  EXPECT_EQ(j["config"]["hbm"]["bandwidth_gbps"], 12.5);
  fs::remove_all(dir);
}

}  // namespace
