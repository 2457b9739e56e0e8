// What-if studies: parsing and its errors (file and line), grid expansion,
// the CSV and JSON results, and a whole sweep through the real binary with
// its plots.
#include "registry_kernels.h"
#include "tessera_process.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

namespace tessera::cli::sweep {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class StudyTest : public ::testing::Test {
protected:
  void SetUp() override { setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_DIR "/configs", 1); }
};

fs::path write_study(const std::string& name, const std::string& text) {
  const fs::path p = test_support::scratch_dir() / "tessera_sweep_test" / (name + ".yaml");
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string error_of(const std::string& text) {
  try {
    load_study(write_study("bad", text).string());
  } catch (const StudyError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kStudy =
    "description: two parameters crossed\n"
    "base: small\n"
    "parameters:\n"
    "  - name: hbm\n"
    "    key: hbm.bandwidth_gbps\n"
    "    values: [32, 64]\n"
    "  - name: array\n"
    "    keys: [tensor.rows, tensor.cols, tensor.stationary_max_free]\n"
    "    range: {from: 8, to: 32, factor: 2}\n"
    "kernels:\n"
    "  - kernel: gemm\n"
    "    variants: [naive, blocked_mnk]\n"
    "    shapes: [{M: 32, N: 64, K: 32}]\n";

// A kernel entry's dtypes cross with its variants; each must be one the
// kernel takes on every variant, else an error at the entry's line.
TEST_F(StudyTest, DtypesCrossWithVariantsAndBadOnesNameTheLine) {
  const Study s = load_study(write_study("dtypes",
                                         "base: neuroncore-v3\n"
                                         "parameters:\n"
                                         "  - {name: rows, key: tensor.fp8_rows_per_pe, values: [1, 2]}\n"
                                         "kernels:\n"
                                         "  - kernel: mlp\n"
                                         "    dtypes: [bf16, fp8_e4m3]\n")
                             .string());
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].job.id, "rows=1/mlp/default.bf16");
  EXPECT_EQ(points[1].job.dtype, "fp8_e4m3");
  EXPECT_EQ(points[3].job.id, "rows=2/mlp/default.fp8_e4m3");
  EXPECT_THAT(error_of("base: tiny\n"
                       "parameters:\n"
                       "  - {name: rows, key: tensor.fp8_rows_per_pe, values: [1, 2]}\n"
                       "kernels:\n"
                       "  - kernel: gemm\n"
                       "    variants: [blocked_mnk, tiled]\n"
                       "    dtypes: [fp8_e4m3]\n"),
              HasSubstr(":7: gemm tiled: --dtype fp8_e4m3: this variant reads bf16 inputs only"));
}

// A kernel entry's `cores` cross with its runs; a count beyond a point's
// chip is named with the entry's line.
TEST_F(StudyTest, CoresCrossWithRunsAndMustFitEveryPointsChip) {
  const Study s = load_study(write_study("cores",
                                         "base: small\n"
                                         "parameters:\n"
                                         "  - {name: hbm, key: chip.hbm_bandwidth_gbps, values: [64, 128]}\n"
                                         "kernels:\n"
                                         "  - kernel: gemm\n"
                                         "    cores: [1, 4]\n"
                                         "    shard: N\n")
                             .string());
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[1].job.id, "hbm=64/gemm/default.cores4.shardN");
  EXPECT_EQ(points[1].job.cores, 4);
  EXPECT_EQ(points[1].job.shard, "N");
  // Several shard dimensions cross with the core counts, each its own run.
  const auto by_shard = expand(load_study(write_study("shards",
                                                      "base: small\n"
                                                      "parameters:\n"
                                                      "  - {name: hbm, key: chip.hbm_bandwidth_gbps, values: [64]}\n"
                                                      "kernels:\n"
                                                      "  - kernel: gemm\n"
                                                      "    cores: [2, 4]\n"
                                                      "    shard: [M, K]\n")
                                              .string()));
  ASSERT_EQ(by_shard.size(), 4u);
  EXPECT_EQ(by_shard[0].job.id, "hbm=64/gemm/default.cores2.shardM");
  EXPECT_EQ(by_shard[1].job.id, "hbm=64/gemm/default.cores2.shardK");
  EXPECT_EQ(by_shard[3].job.shard, "K");
  EXPECT_EQ(by_shard[3].job.cores, 4);
  EXPECT_THAT(error_of("base: small\n"
                       "parameters:\n"
                       "  - {name: cores, key: chip.cores, values: [4, 2]}\n"
                       "kernels:\n"
                       "  - kernel: gemm\n"
                       "    cores: 4\n"),
              HasSubstr(":5: kernel 'gemm': cores 4 at the point cores=2 on small, whose chip has 2 (chip.cores)"));
  EXPECT_THAT(error_of("base: small\n"
                       "parameters:\n"
                       "  - {name: hbm, key: hbm.bandwidth_gbps, values: [64]}\n"
                       "kernels:\n"
                       "  - kernel: softmax\n"
                       "    cores: 2\n"),
              HasSubstr(":6: kernel 'softmax' runs on one core only"));
}

TEST_F(StudyTest, GridIsTheProductOfParametersTimesKernelRuns) {
  const Study s = load_study(write_study("grid", kStudy).string());
  EXPECT_EQ(s.fidelity, "tlm");  // the default
  ASSERT_EQ(s.parameters.size(), 2u);
  EXPECT_THAT(s.parameters[1].values, ElementsAre("8", "16", "32"));
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 2u * 3u * 2u);
  // The first parameter varies slowest; every key of a parameter is set.
  EXPECT_EQ(points[0].job.id, "hbm=32,array=8/gemm/naive/K32_M32_N64");
  EXPECT_THAT(points[0].job.overrides, ElementsAre("hbm.bandwidth_gbps=32", "tensor.rows=8", "tensor.cols=8",
                                                       "tensor.stationary_max_free=8"));
  EXPECT_EQ(points[1].job.variant, "blocked_mnk");
  EXPECT_EQ(points[2].job.id, "hbm=32,array=16/gemm/naive/K32_M32_N64");
  EXPECT_EQ(points.back().job.id, "hbm=64,array=32/gemm/blocked_mnk/K32_M32_N64");
  EXPECT_EQ(points.back().job.config, "small");
  EXPECT_EQ(points.back().job.fidelity, "tlm");
  EXPECT_THAT(points.back().parameters,
              ElementsAre(std::make_pair(std::string("hbm"), std::string("64")),
                          std::make_pair(std::string("array"), std::string("32"))));
}

// A parameter of whole configs: each point runs on its config (with the
// config's own overrides) crossed with the other parameters, and no base.
TEST_F(StudyTest, AParameterOfWholeConfigsVariesTheGeneration) {
  const fs::path mine = write_study("mine", "base: tiny\nhbm:\n  bandwidth_gbps: 8\n");
  const Study s = load_study(write_study("generations",
                                         "parameters:\n"
                                         "  - name: generation\n"
                                         "    configs: [tiny, small+dma.engines=2, mine.yaml]\n"
                                         "  - key: hbm.bandwidth_gbps\n"
                                         "    values: [4, 16]\n"
                                         "kernels: [{kernel: gemm}]\n")
                                 .string());
  ASSERT_EQ(s.parameters.size(), 2u);
  EXPECT_TRUE(s.parameters[0].configs);
  EXPECT_TRUE(s.parameters[0].keys.empty());
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0].job.config, "tiny");
  EXPECT_EQ(points[0].job.id, "generation=tiny,hbm.bandwidth_gbps=4/gemm/default");
  EXPECT_EQ(points[2].job.config, "small");
  EXPECT_THAT(points[2].job.overrides, ElementsAre("dma.engines=2", "hbm.bandwidth_gbps=4"));
  EXPECT_EQ(points[4].job.config, mine.string());  // a file beside the study
  EXPECT_EQ(results_json(s, points, {})["parameters"][0]["configs"], true);

  const std::string kernels = "kernels: [{kernel: gemm}]\n";
  EXPECT_THAT(error_of("base: tiny\nparameters:\n  - configs: [tiny]\n" + kernels),
              HasSubstr("bad.yaml:1: a study with a 'configs' parameter takes no 'base'"));
  EXPECT_THAT(error_of("parameters:\n  - configs: [tiny]\n    key: tensor.rows\n" + kernels),
              HasSubstr("bad.yaml:3: a parameter with 'configs' takes no 'key'"));
  EXPECT_THAT(error_of("parameters:\n  - configs: [tiny]\n  - {name: b, configs: [small]}\n" + kernels),
              HasSubstr("only one parameter may list whole configs"));
  EXPECT_THAT(error_of("parameters:\n  - configs: [tiny,\n      nosuch]\n" + kernels),
              HasSubstr("bad.yaml:3: the point config=nosuch is not a valid config on nosuch: unknown config"));
  EXPECT_THAT(error_of("parameters:\n  - configs: [tiny+tensor.rows]\n" + kernels),
              HasSubstr("bad.yaml:2: 'tiny+tensor.rows': override 'tensor.rows'"));
  EXPECT_THAT(error_of("parameters:\n  - configs: []\n" + kernels), HasSubstr("'configs' must be a non-empty list"));
}

TEST_F(StudyTest, ArithmeticRangesIncludeBothEnds) {
  const Study s = load_study(write_study("range",
                                         "base: small\nfidelity: sampled\nno_data: true\n"
                                         "parameters:\n  - key: hbm.bandwidth_gbps\n"
                                         "    range: {from: 16, to: 64, step: 16}\n"
                                         "kernels: [{kernel: gemm}]\n")
                                 .string());
  EXPECT_THAT(s.parameters[0].values, ElementsAre("16", "32", "48", "64"));
  EXPECT_EQ(s.parameters[0].name, "hbm.bandwidth_gbps");  // named after its key
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_TRUE(points[0].job.no_data);
  EXPECT_EQ(points[0].job.fidelity, "sampled");
  EXPECT_EQ(points[0].job.id, "hbm.bandwidth_gbps=16/gemm/default");
}

TEST_F(StudyTest, ErrorsNameFileLineAndProblem) {
  const std::string head = "base: small\n";
  const std::string kernels = "kernels: [{kernel: gemm}]\n";
  EXPECT_THAT(error_of(head + "paramters: []\n"), HasSubstr("bad.yaml:2: unknown key 'paramters' in the study"));
  EXPECT_THAT(error_of("parameters: [{key: tensor.rows, values: [8]}]\n" + kernels), HasSubstr("bad.yaml:1: a study needs 'base'"));
  EXPECT_THAT(error_of(head + "parameters:\n  - key: tensor.rowz\n    values: [8]\n" + kernels),
              HasSubstr("bad.yaml:3: unknown config key 'tensor.rowz'"));
  EXPECT_THAT(error_of(head + "parameters:\n  - key: tensor.rows\n    range: {from: 64, to: 8, step: 8}\n" + kernels),
              HasSubstr("bad.yaml:4: range: 'to' (8) is below 'from' (64)"));
  EXPECT_THAT(error_of(head + "parameters:\n  - key: tensor.rows\n    range: {from: 8, to: 64, step: 0}\n" + kernels),
              HasSubstr("bad.yaml:4: range: 'step' must be positive"));
  EXPECT_THAT(error_of(head + "parameters:\n  - key: tensor.rows\n    range: {from: 8, to: 64, factor: 1}\n" + kernels),
              HasSubstr("'factor' must be above 1"));
  EXPECT_THAT(error_of(head + "parameters:\n  - key: tensor.rows\n    range: {from: 1, to: 1000000, step: 1}\n" + kernels),
              HasSubstr("range gives more than 1000 values"));
  EXPECT_THAT(error_of(head + "parameters:\n  - key: tensor.rows\n    values: [8, 16, 8]\n" + kernels),
              HasSubstr("bad.yaml:4: parameter 'tensor.rows': value 8 appears twice"));
  EXPECT_THAT(error_of(head + "parameters:\n  - key: tensor.rows\n    values: [8]\n    range: {from: 1, to: 2, step: 1}\n" +
                       kernels),
              HasSubstr("exactly one of 'values' and 'range'"));
  // A value the config schema refuses is named with the point and the limit.
  EXPECT_THAT(error_of(head + "parameters:\n  - key: hbm.bandwidth_gbps\n    values: [16,\n      -5]\n" + kernels),
              HasSubstr("bad.yaml:5: the point hbm.bandwidth_gbps=-5 is not a valid config on small"));
  EXPECT_THAT(error_of(head + "parameters:\n  - key: tensor.rows\n    values: [8]\nkernels:\n  - kernel: no_such_kernel\n"),
              HasSubstr("bad.yaml:6: unknown kernel 'no_such_kernel' (kernels: "));
  EXPECT_THAT(error_of(head + "parameters:\n  - key: tensor.rows\n    values: [8]\nkernels:\n  - kernel: gemm\n"
                              "    variants: [fastest]\n"),
              HasSubstr("bad.yaml:7: kernel 'gemm' has no variant 'fastest'"));
  EXPECT_THAT(error_of(head + "parameters:\n  - key: tensor.rows\n    values: [8]\nkernels:\n  - kernel: gemm\n"
                              "    shapes: [{M: 8, Q: 3}]\n"),
              HasSubstr("bad.yaml:7: kernel 'gemm' has no shape parameter 'Q'"));
  EXPECT_THAT(error_of(head + "fidelity: exact\n"), HasSubstr("bad.yaml:2: fidelity 'exact'"));
  EXPECT_THAT(error_of(head + "parameters:\n  - {key: tensor.rows, values: [8]}\n  - {key: tensor.rows, values: [16]}\n" +
                       kernels),
              HasSubstr("bad.yaml:4: parameter 'tensor.rows' appears twice"));
  EXPECT_THAT(error_of("base: small\nparameters: [\n"), HasSubstr("YAML syntax error"));
}

TEST_F(StudyTest, CsvAndJsonHoldEveryPointWithItsFigures) {
  const Study s = load_study(write_study("grid", kStudy).string());
  const auto points = expand(s);
  std::vector<regress::JobResult> results;
  for (std::size_t i = 0; i < points.size(); ++i) {
    regress::JobResult r;
    r.job = points[i].job;
    r.status = i == 1 ? runner::Status::Fail : runner::Status::Pass;
    r.message = i == 1 ? "numerics mismatch" : "";
    r.report = {{"variant", points[i].job.variant.empty() ? "blocked_mnk" : points[i].job.variant},
                {"shape", {{"M", 32}, {"N", 64}, {"K", 32}}},
                {"time_ns", 1000.0 + static_cast<double>(i)},
                {"cycles", 2000.0},
                {"hfu_percent", 12.5},
                {"mfu_percent", 12.5},
                {"dma_bytes", 4096.0},
                {"engines", {{"tensor", {{"busy_percent", 40.0}, {"busy_ns", 400.0}}},
                             {"vector", {{"busy_percent", 5.0}, {"busy_ns", 50.0}}}}},
                {"stats", {{"a", 1}}}};
    results.push_back(r);
  }
  const std::string csv = results_csv(s, points, results);
  std::istringstream in(csv);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), points.size() + 1);
  EXPECT_THAT(lines[0], HasSubstr("hbm,array,kernel,variant,dtype,cores,shard,shape,params,status,time_ns,cycles,hfu_percent,mfu_percent"));
  EXPECT_THAT(lines[0], HasSubstr("dma_bytes"));
  EXPECT_THAT(lines[0], HasSubstr("tensor_busy_percent,vector_busy_percent,tensor_busy_ns,vector_busy_ns"));
  EXPECT_THAT(lines[1], HasSubstr("32,8,gemm,naive,,1,,K=32 M=32 N=64,,pass,1000,2000,12.5,12.5"));
  EXPECT_THAT(lines[1], HasSubstr(",40,5,400,50"));
  // A failed point keeps its row, without figures.
  EXPECT_THAT(lines[2], HasSubstr("32,8,gemm,blocked_mnk,,1,,K=32 M=32 N=64,,fail,,"));

  const nlohmann::json j = results_json(s, points, results);
  EXPECT_EQ(j["study"], "grid");
  EXPECT_EQ(j["parameters"][1]["keys"], nlohmann::json({"tensor.rows", "tensor.cols", "tensor.stationary_max_free"}));
  ASSERT_EQ(j["points"].size(), points.size());
  EXPECT_EQ(j["points"][0]["parameters"]["array"], "8");
  EXPECT_EQ(j["points"][1]["status"], "fail");
  EXPECT_EQ(j["points"][1]["message"], "numerics mismatch");
  EXPECT_EQ(j["points"][0]["report"]["time_ns"], 1000.0);
  EXPECT_FALSE(j["points"][0]["report"].contains("stats"));  // kept in the job's folder
}

int run_binary(const std::string& args, std::string* out, const std::string& env = "") {
  const std::string cmd =
      fmt::format("{} TESSERA_CONFIG_DIR={}/configs {} {} 2>&1", env, TESSERA_SOURCE_DIR, TESSERA_BIN, args);
  FILE* pipe = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) out->append(buf.data(), n);
  const int raw = pclose(pipe);
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

int shell(const std::string& cmd, std::string* out) {
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) out->append(buf.data(), n);
  const int raw = pclose(pipe);
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

std::string head_bytes(const fs::path& p, std::size_t n) {
  std::ifstream in(p, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<std::size_t>(in.gcount()));
  return s;
}

// A whole sweep on the tiny generation: results for every point, and plots
// that are real PNG and well-formed SVG.
TEST_F(StudyTest, SweepRunsEveryPointAndDrawsItsPlots) {
  const fs::path study = write_study("hbm_tiny",
                                     "description: HBM bandwidth on tiny\n"
                                     "base: tiny\n"
                                     "no_data: true\n"
                                     "parameters:\n"
                                     "  - name: hbm_gbps\n"
                                     "    key: hbm.bandwidth_gbps\n"
                                     "    values: [4, 16]\n"
                                     "kernels:\n"
                                     "  - kernel: gemm\n"
                                     "    variants: [naive, blocked_mnk]\n"
                                     "    shapes: [{M: 16, N: 64, K: 16}]\n");
  const fs::path out = test_support::scratch_dir() / "tessera_sweep_run";
  fs::remove_all(out);
  std::string text;
  ASSERT_EQ(run_binary(fmt::format("sweep {} -j 2 --out {}", study.string(), out.string()), &text), 0) << text;
  std::ifstream csv(out / "results.csv");
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << text;
  EXPECT_THAT(lines[0], HasSubstr("hbm_gbps,kernel,variant,dtype,cores,shard,shape,params,status,time_ns"));
  const auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
  ASSERT_EQ(results["points"].size(), 4u);
  std::map<std::string, double> time;
  for (const auto& p : results["points"]) {
    EXPECT_EQ(p["status"], "pass") << p["message"];
    EXPECT_GT(p["report"]["time_ns"].get<double>(), 0);
    EXPECT_GT(p["report"]["arithmetic_intensity"].get<double>(), 0);
    time[p["parameters"]["hbm_gbps"].get<std::string>() + p["variant"].get<std::string>()] = p["report"]["time_ns"];
  }
  // A quarter of the bandwidth cannot make a memory-bound GEMM faster.
  EXPECT_GT(time["4naive"], time["16naive"]);

  const fs::path plots = out / "plots";
  for (const char* stem : {"time_vs_hbm_gbps", "roofline_hbm_gbps=4", "roofline_hbm_gbps=16", "engine_busy"}) {
    EXPECT_EQ(head_bytes(plots / (std::string(stem) + ".png"), 8), std::string("\x89PNG\r\n\x1a\n", 8)) << stem;
    const fs::path svg = plots / (std::string(stem) + ".svg");
    ASSERT_TRUE(fs::exists(svg)) << stem;
    std::string parse_out;
    EXPECT_EQ(shell(fmt::format("/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; "
                                     "r = E.parse(sys.argv[1]).getroot(); sys.exit(0 if r.tag.endswith('svg') else 1)\" {}",
                                     svg.string()),
                         &parse_out),
              0)
        << stem << ": " << parse_out;
  }
  fs::remove_all(out);
}

// `retune: N`: each point searches its own tunable parameters before it runs,
// so two SBUF sizes may end at different blockings; the CSV names them.
TEST_F(StudyTest, RetuneSearchesEachPointOnItsOwnConfig) {
  const fs::path study = write_study("retune_small",
                                     "description: SBUF size on small, retuned per point\n"
                                     "base: small\n"
                                     "no_data: true\n"
                                     "retune: 12\n"
                                     "parameters:\n"
                                     "  - name: sbuf_kib\n"
                                     "    key: sbuf.partition_kib\n"
                                     "    values: [16, 64]\n"
                                     "kernels:\n"
                                     "  - kernel: gemm\n"
                                     "    variants: [blocked_mnk]\n"
                                     "    shapes: [{M: 64, N: 128, K: 256}]\n"
                                     "  - kernel: gemm\n"
                                     "    variants: [naive]\n"
                                     "    retune: 0\n"
                                     "    shapes: [{M: 64, N: 128, K: 256}]\n");
  const fs::path out = test_support::scratch_dir() / "tessera_sweep_retune";
  fs::remove_all(out);
  std::string text;
  ASSERT_EQ(run_binary(fmt::format("sweep {} -j 2 --out {}", study.string(), out.string()), &text), 0) << text;
  const auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
  ASSERT_EQ(results["points"].size(), 4u);
  for (const auto& p : results["points"]) {
    ASSERT_EQ(p["status"], "pass") << p["message"];
    if (p["variant"] == "naive") {
      EXPECT_FALSE(p["report"].contains("retune"));
      continue;
    }
    ASSERT_TRUE(p["report"].contains("retune")) << p["id"];
    EXPECT_GT(p["report"]["retune"]["timed"].get<int>(), 1);
    // The point ran at its search's best.
    for (const auto& [name, value] : p["report"]["retune"]["params"].items()) {
      const auto& ran = p["report"]["params"][name];
      EXPECT_EQ(ran.is_string() ? ran.get<std::string>() : ran.dump(), value.get<std::string>()) << name;
    }
    // The point's search ran on the point's config.
    std::string folder = p["id"].get<std::string>();
    std::replace(folder.begin(), folder.end(), '/', '.');
    const fs::path job_dir = out / "jobs" / folder;
    const auto search = nlohmann::json::parse(std::ifstream(job_dir / "retune" / "results.json"));
    EXPECT_EQ(search["overrides"][0], "sbuf.partition_kib=" + p["parameters"]["sbuf_kib"].get<std::string>());
  }
  EXPECT_THAT(read_text(out / "results.csv"), HasSubstr("bm="));
  fs::remove_all(out);
}

TEST_F(StudyTest, RetuneIsABudgetAndNotForSeveralCores) {
  const std::string head = "base: small\nparameters: [{key: hbm.bandwidth_gbps, values: [32]}]\n";
  EXPECT_THAT(error_of(head + "retune: -1\nkernels: [{kernel: gemm}]\n"),
              HasSubstr("bad.yaml:3: 'retune' must be the timed runs of each point's search, a whole number from 0"));
  EXPECT_THAT(error_of(head + "retune: yes\nkernels: [{kernel: gemm}]\n"), HasSubstr("bad.yaml:3: 'retune' must be"));
  EXPECT_THAT(error_of(head + "kernels:\n  - {kernel: gemm, retune: 1000001}\n"),
              HasSubstr("bad.yaml:4: 'retune' must be"));
  EXPECT_THAT(error_of(head + "retune: 10\nkernels:\n  - {kernel: gemm, cores: [2], shard: M}\n"),
              HasSubstr("bad.yaml:5: kernel 'gemm': 'retune' searches one core's parameters"));
  const Study s = load_study(write_study("ok", head + "retune: 10\nkernels:\n  - {kernel: gemm}\n"
                                                      "  - {kernel: gemm, retune: 0}\n")
                                 .string());
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].job.retune, 10u);
  EXPECT_EQ(points[1].job.retune, 0u);
}

// A kernel that does not fit a point is an answer (infeasible, exit 0); a
// point that runs past its timeout is a failure (exit 1). Both keep their rows.
TEST_F(StudyTest, InfeasiblePointsAreAnswersAndTimeoutsFailures) {
  const fs::path out = test_support::scratch_dir() / "tessera_sweep_infeasible";
  fs::remove_all(out);
  std::string text;
  const fs::path infeasible = write_study("infeasible",
                                          "base: tiny\nno_data: true\n"
                                          "parameters: [{key: hbm.bandwidth_gbps, values: [8]}]\n"
                                          "kernels:\n  - {kernel: gemm, variants: [naive, blocked_mn], shapes: [{M: 8, N: 64, K: 8192}]}\n");
  EXPECT_EQ(run_binary(fmt::format("sweep {} --no-plots --out {}", infeasible.string(), out.string()), &text), 0) << text;
  auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
  ASSERT_EQ(results["points"].size(), 2u);
  EXPECT_EQ(results["points"][0]["status"], "pass");
  EXPECT_EQ(results["points"][1]["status"], "infeasible");
  EXPECT_THAT(results["points"][1]["message"].get<std::string>(), HasSubstr("use blocked_mnk"));

  const fs::path slow = write_study("slow",
                                    "base: neuroncore-v2\nno_data: true\ntimeout_s: 0.2\n"
                                    "parameters: [{key: hbm.bandwidth_gbps, values: [410]}]\n"
                                    "kernels:\n  - {kernel: gemm, variants: [naive], shapes: [{M: 2048, N: 4096, K: 4096}]}\n");
  text.clear();
  EXPECT_EQ(run_binary(fmt::format("sweep {} --no-plots --out {}", slow.string(), out.string()), &text), 1) << text;
  results = nlohmann::json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(results["points"][0]["status"], "timeout");
  fs::remove_all(out);
}

TEST_F(StudyTest, KernelFilterSkipsTheOtherEntriesBeforeCheckingThem) {
  const fs::path study = write_study("two_kernels",
                                     "base: tiny\nparameters: [{key: hbm.bandwidth_gbps, values: [4, 8]}]\n"
                                     "kernels:\n  - kernel: gemm\n  - kernel: no_such_kernel\n");
  EXPECT_THAT(error_of(read_text(study)), HasSubstr("bad.yaml:5: unknown kernel 'no_such_kernel'"));
  const Study s = load_study(study.string(), {"gemm"});
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(expand(s).size(), 2u);
  try {
    load_study(study.string(), {"conv"});
    ADD_FAILURE() << "a filter that leaves no kernel must be refused";
  } catch (const StudyError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no kernel of the study is in --kernels conv"));
  }
}

TEST_F(StudyTest, BadStudyExitsWithTwoAndNamesTheLine) {
  const fs::path study = write_study("unknown_kernel",
                                     "base: tiny\nparameters: [{key: hbm.bandwidth_gbps, values: [4]}]\n"
                                     "kernels:\n  - kernel: no_such_kernel\n");
  std::string text;
  EXPECT_EQ(run_binary(fmt::format("sweep {} --dry-run", study.string()), &text), 2);
  EXPECT_THAT(text, HasSubstr("unknown_kernel.yaml:4: unknown kernel 'no_such_kernel'"));
}

// The shipped studies are valid: every kernel, variant, shape and grid point.
TEST_F(StudyTest, ShippedStudiesAreValid) {
  for (const char* name : {"tensor-array", "sbuf-size", "hbm-bandwidth"}) {
    std::string text;
    const fs::path study = fs::path(TESSERA_SOURCE_DIR) / "configs" / "studies" / (std::string(name) + ".yaml");
    EXPECT_EQ(run_binary(fmt::format("sweep {} --dry-run", study.string()), &text), 0) << text;
  }
}


TEST_F(StudyTest, ShardsPartitionTheGridInGridOrder) {
  const auto points = expand(load_study(write_study("two", kStudy).string()));
  ASSERT_EQ(points.size(), 12u);
  std::vector<std::string> seen;
  for (int i = 1; i <= 5; ++i)
    for (const auto& p : shard(points, i, 5)) seen.push_back(p.job.id);
  ASSERT_EQ(seen.size(), points.size());
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "a point in two shards";
  const auto second = shard(points, 2, 5);
  ASSERT_EQ(second.size(), 3u);  // points 2, 7 and 12
  EXPECT_EQ(second[0].job.id, points[1].job.id);
  EXPECT_EQ(second[2].job.id, points[11].job.id);
}

const char* kTinyStudy =
    "description: HBM bandwidth on tiny\n"
    "base: tiny\n"
    "no_data: true\n"
    "parameters:\n"
    "  - name: hbm_gbps\n"
    "    key: hbm.bandwidth_gbps\n"
    "    values: [4, 16]\n"
    "kernels:\n"
    "  - kernel: gemm\n"
    "    variants: [naive, blocked_mnk]\n"
    "    shapes: [{M: 16, N: 64, K: 16}]\n";

// --emit-sbatch needs no cluster: the script, and the folder prepared for it.
// Running the tasks' and the merge's own commands by hand (as Slurm would)
// gives the results.csv of a local run; a shard that never ran leaves its
// points "missing", and --rerun-failed resubmits only that shard.
TEST_F(StudyTest, EmitSbatchShardsAndMergeEqualALocalRun) {
  const fs::path study = write_study("hbm_tiny_slurm", kTinyStudy);
  const fs::path root = test_support::scratch_dir() / "tessera_sweep_slurm";
  const fs::path out = root / "slurm", local = root / "local", script = root / "submit.sh";
  fs::remove_all(root);
  fs::create_directories(root);
  std::string text;
  ASSERT_EQ(run_binary(fmt::format("sweep {} --no-plots -j 2 --out {}", study.string(), local.string()), &text), 0)
      << text;
  text.clear();
  ASSERT_EQ(run_binary(fmt::format("sweep {} --emit-sbatch {} --shards 3 --partition batch --max-parallel 2 "
                                   "--time 00:10:00 --no-plots --out {}",
                                   study.string(), script.string(), out.string()),
                       &text),
            0)
      << text;
  EXPECT_THAT(text, HasSubstr("4 points in 3 shards"));
  const std::string s = read_text(script);
  EXPECT_THAT(s, HasSubstr("#SBATCH --job-name=tessera-sweep-hbm_tiny_slurm\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --array=1-3%2\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --partition=batch\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --time=00:10:00\n"));
  EXPECT_THAT(s, HasSubstr("sweep '" + study.string() + "' --shard \"$TESSERA_SHARD/3\" -j \"$TESSERA_CPUS\" "
                           "--no-plots --out '" + (out / "shards").string() + "'/\"$TESSERA_SHARD\""));
  EXPECT_THAT(s, HasSubstr("--dependency=afterany:\"$array\""));
  EXPECT_THAT(s, HasSubstr("sweep merge --plan '" + out.string() + "'"));
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(fs::is_directory(out / "shards" / std::to_string(i)));
  const auto plan = nlohmann::json::parse(std::ifstream(out / "slurm" / "plan.json"));
  EXPECT_EQ(plan["runner"], "sweep");
  EXPECT_EQ(plan["points"], 4);

  // Shards 1 and 3 run; shard 2 "never ran".
  for (int i : {1, 3}) {
    text.clear();
    ASSERT_EQ(run_binary(fmt::format("sweep {} --shard {}/3 -j 2 --no-plots --out {}", study.string(), i,
                                     (out / "shards" / std::to_string(i)).string()),
                         &text),
              0)
        << text;
  }
  text.clear();
  EXPECT_EQ(run_binary(fmt::format("sweep merge --plan {}", out.string()), &text), 1) << text;
  auto merged = nlohmann::json::parse(std::ifstream(out / "results.json"));
  ASSERT_EQ(merged["points"].size(), 4u);
  EXPECT_EQ(merged["points"][1]["status"], "missing");  // point 2 is shard 2's
  EXPECT_THAT(merged["points"][1]["message"].get<std::string>(), HasSubstr("shard 2/3 wrote no results"));
  EXPECT_EQ(merged["points"][0]["status"], "pass");

  const fs::path rerun = root / "rerun.sh";
  text.clear();
  ASSERT_EQ(run_binary(fmt::format("sweep --rerun-failed {} --slurm --emit-sbatch {}", out.string(), rerun.string()),
                       &text),
            0)
      << text;
  EXPECT_THAT(text, HasSubstr("(shards 2)"));
  EXPECT_THAT(read_text(rerun), HasSubstr("#SBATCH --array=2%2\n"));
  EXPECT_FALSE(fs::exists(out / "results.json")) << "a rerun starts a new merge";

  text.clear();
  ASSERT_EQ(run_binary(fmt::format("sweep {} --shard 2/3 -j 2 --no-plots --out {}", study.string(),
                                   (out / "shards" / "2").string()),
                       &text),
            0)
      << text;
  text.clear();
  ASSERT_EQ(run_binary(fmt::format("sweep merge --plan {}", out.string()), &text), 0) << text;
  EXPECT_EQ(read_text(out / "results.csv"), read_text(local / "results.csv"));
  merged = nlohmann::json::parse(std::ifstream(out / "results.json"));
  const auto whole = nlohmann::json::parse(std::ifstream(local / "results.json"));
  ASSERT_EQ(merged["points"].size(), whole["points"].size());
  for (std::size_t i = 0; i < whole["points"].size(); ++i) {
    EXPECT_EQ(merged["points"][i]["id"], whole["points"][i]["id"]);
    EXPECT_EQ(merged["points"][i]["report"]["cycles"], whole["points"][i]["report"]["cycles"]);
  }
  fs::remove_all(root);
}

TEST_F(StudyTest, SlurmMisuseIsAClearError) {
  const fs::path study = write_study("hbm_tiny_misuse", kTinyStudy);
  std::string text;
  EXPECT_EQ(run_binary(fmt::format("sweep {} --shard 3/2 --dry-run", study.string()), &text), 2);
  EXPECT_THAT(text, HasSubstr("--shard 3/2: expected I/N with 1 <= I <= N"));
  text.clear();
  EXPECT_EQ(run_binary(fmt::format("sweep {} --slurm --shard 1/2", study.string()), &text), 2);
  EXPECT_THAT(text, HasSubstr("--shard is for one shard"));
  text.clear();
  EXPECT_EQ(run_binary("sweep --rerun-failed /nonexistent", &text), 2);
  EXPECT_THAT(text, HasSubstr("add --slurm"));
  text.clear();
  EXPECT_EQ(run_binary("sweep --rerun-failed /nonexistent --slurm", &text), 2);
  EXPECT_THAT(text, HasSubstr("--rerun-failed /nonexistent: no slurm/plan.json there"));
  text.clear();
  EXPECT_EQ(run_binary("sweep merge --plan /nonexistent", &text), 2);
  EXPECT_THAT(text, HasSubstr("merge --plan /nonexistent: no slurm/plan.json there"));
  text.clear();
  const fs::path out = test_support::scratch_dir() / "tessera_sweep_nosbatch";
  EXPECT_EQ(run_binary(fmt::format("sweep {} --slurm --out {}", study.string(), out.string()), &text,
                       "PATH=/nonexistent"),
            2);
  EXPECT_THAT(text, HasSubstr("'sbatch' is not on PATH"));
  fs::remove_all(out);
}

// Ranges and grids that would not end, or end after millions of points,
// are refused before anything is expanded.
TEST_F(StudyTest, UnboundedRangesAndGridsAreRefused) {
  const std::string head = "base: small\nkernels:\n  - kernel: gemm\nparameters:\n";
  EXPECT_THAT(error_of(head + "  - key: hbm.bandwidth_gbps\n    range: {from: 1, to: 10, step: .nan}\n"),
              HasSubstr("bad.yaml:6: range: 'step' must be a finite number, not .nan"));
  EXPECT_THAT(error_of(head + "  - key: hbm.bandwidth_gbps\n    range: {from: 1, to: 10, factor: .inf}\n"),
              HasSubstr("range: 'factor' must be a finite number"));
  EXPECT_THAT(error_of(head + "  - key: hbm.bandwidth_gbps\n    range: {from: 1, to: 1e12, step: 1}\n"),
              HasSubstr("range gives more than 1000 values"));
  EXPECT_THAT(error_of(head + "  - key: hbm.bandwidth_gbps\n    range: {from: 16, to: 1015, step: 1}\n"
                              "  - key: hbm.latency_ns\n    range: {from: 1, to: 1000, step: 1}\n"),
              HasSubstr("the study has 1000000 points (1000000 configs x 1 runs each); at most 10000"));
  EXPECT_THAT(error_of(head + "  - {key: hbm.bandwidth_gbps, values: [16]}\ntimeout_s: .nan\n"),
              HasSubstr("'timeout_s' must be a number above 0"));
  EXPECT_THAT(error_of(head + "  - {key: hbm.bandwidth_gbps, values: [16]}\nseed: -1\n"),
              HasSubstr("'seed' must be a whole number"));
  EXPECT_THAT(error_of(head + "  - {key: hbm.bandwidth_gbps, values: [16], values: [32]}\n"),
              HasSubstr("duplicate key 'values'"));
}

// A byte that is not UTF-8 (found by fuzz_study: results.json could not be
// written after every point ran) is refused at its line, in a comment too.
TEST_F(StudyTest, TextThatIsNotUtf8IsRefusedByLine) {
  const std::string study = "base: small\nkernels:\n  - kernel: gemm\nparameters:\n  - {key: hbm.bandwidth_gbps, values: [16]}\n";
  EXPECT_THAT(error_of(study + "description: SBUF \xa3 GEMM\n"),
              HasSubstr("bad.yaml:6: not UTF-8 text"));
  EXPECT_THAT(error_of("# \xe2\x82 cut short\n" + study), HasSubstr("bad.yaml:1: not UTF-8 text"));
  EXPECT_THAT(error_of(study + "description: \xed\xa0\x80 a surrogate\n"), HasSubstr("bad.yaml:6: not UTF-8 text"));
  EXPECT_EQ(error_of(study + "description: \xe2\x82\xac and \xf0\x9f\x98\x80 are UTF-8\n"), "(no error)");
  // Control characters, raw or escaped (fuzz_study found a raw 0x05 0x00).
  const std::string refused = "bad.yaml:6: 'description' must be one line of UTF-8 text without control characters";
  EXPECT_THAT(error_of(study + "description: on \x05 NeuronCore-v3\n"),
              HasSubstr("bad.yaml:6: holds the control character 0x05"));
  EXPECT_THAT(error_of(study + "description: \"two\\nlines\"\n"), HasSubstr(refused));
  // A raw control character anywhere in the file, a NUL included (fuzz_study:
  // yaml-cpp read "chip_hbm<NUL>_gbps" as a name holding a lone 0xA0 byte).
  EXPECT_THAT(error_of(study + std::string("  - {name: chip_hbm\0_gbps, key: hbm.latency_ns, values: [1]}\n", 61)),
              HasSubstr("bad.yaml:6: holds the control character 0x00"));
  EXPECT_THAT(error_of("# \x01\n" + study), HasSubstr("bad.yaml:1: holds the control character 0x01"));
}

// An empty parameter value (fuzz_study: a tag alone, `!1450`) made the
// override `key=`, whose config error escaped uncaught from the point check;
// it is refused at its line, by the parser and by the point check both.
TEST_F(StudyTest, EmptyParameterValuesAreRefusedByLine) {
  const std::string head = "base: small\nkernels:\n  - kernel: gemm\nparameters:\n";
  const std::string refused = "parameter 'hbm.bandwidth_gbps': a value must not be empty";
  EXPECT_THAT(error_of(head + "  - key: hbm.bandwidth_gbps\n    values: [16, \"\"]\n"), HasSubstr("bad.yaml:6: " + refused));
  EXPECT_THAT(error_of(head + "  - key: hbm.bandwidth_gbps\n    values:\n      - 16\n      - !1450\n"),
              HasSubstr("bad.yaml:8: " + refused));
  EXPECT_THAT(error_of(head + "  - {name: bw, key: hbm.bandwidth_gbps, values: [!x ]}\n"),
              HasSubstr("bad.yaml:5: parameter 'bw': a value must not be empty"));
  // A study built in memory (as tessera compare builds one) gets a StudyError, not the config's.
  Study s;
  s.base = "small";
  Parameter p;
  p.name = "hbm.bandwidth_gbps";
  p.keys = {"hbm.bandwidth_gbps"};
  p.values = {""};
  p.value_lines = {1};
  s.parameters.push_back(p);
  try {
    check_points(s);
    ADD_FAILURE() << "an empty value was accepted";
  } catch (const StudyError& e) {
    EXPECT_THAT(e.what(), HasSubstr("the point hbm.bandwidth_gbps= is not a valid config on small"));
  }
}

}  // namespace
}  // namespace tessera::cli::sweep
