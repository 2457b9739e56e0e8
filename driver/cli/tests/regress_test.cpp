// The regression runner: suite files (expansion, errors naming file and
// line), sharding, baselines both ways, JUnit output, the summary's matrix,
// the progress line, the Slurm submission script; and whole suites with
// failing, hanging and crashing jobs through the real binary.
#include "regress.h"
#include "slurm.h"
#include "tessera_process.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sched.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <sys/resource.h>
#include <fcntl.h>
#include <sys/wait.h>

namespace tessera::cli::regress {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path write_suite(const std::string& name, const std::string& text) {
  const fs::path p = test_support::scratch_dir() / "tessera_regress_test" / (name + ".yaml");
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p;
}

std::string error_of(const std::string& text) {
  try {
    load_suite(write_suite("bad", text).string());
  } catch (const SuiteError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kSuite =
    "defaults:\n"
    "  fidelity: tlm\n"
    "  groups: [smoke]\n"
    "tests:\n"
    "  - name: g\n"
    "    kernel: gemm\n"
    "    variants: [naive, hoisted]\n"
    "    configs: [tiny, small]\n"
    "    shapes: [{M: 8, N: 64, K: 8}, {M: 3, N: 5, K: 7}]\n"
    "  - name: big\n"
    "    kernel: gemm\n"
    "    configs: tiny\n"
    "    groups: [nightly]\n"
    "    timeout_s: 5\n";

TEST(RegressSuite, MatrixExpandsToOneJobPerCombination) {
  const Suite s = load_suite(write_suite("s", kSuite).string());
  ASSERT_EQ(s.jobs.size(), 2u * 2u * 2u + 1u);
  EXPECT_EQ(s.jobs[0].id, "g/naive/tiny/K8_M8_N64");
  EXPECT_EQ(s.jobs[0].fidelity, "tlm");
  EXPECT_EQ(s.jobs.back().id, "big/default/tiny");
  EXPECT_EQ(s.jobs.back().timeout_s, 5);
  EXPECT_EQ(select(s, "smoke", "", 1, 1).size(), 8u);
  EXPECT_EQ(select(s, "nightly", "", 1, 1).size(), 1u);
  EXPECT_EQ(select(s, "", "g/hoisted/*", 1, 1).size(), 4u);
}

// dtypes cross with the variants and configs; a job's id and its
// `tessera run` carry its dtype, and results keep it.
TEST(RegressSuite, DtypesExpandIntoJobsThatRunWithTheirDtype) {
  const Suite s = load_suite(write_suite("d",
                                         "tests:\n"
                                         "  - name: m\n"
                                         "    kernel: mlp\n"
                                         "    dtypes: [bf16, fp8_e4m3]\n"
                                         "    configs: [tiny, small]\n")
                                 .string());
  ASSERT_EQ(s.jobs.size(), 4u);
  EXPECT_EQ(s.jobs[0].id, "m/default.bf16/tiny");
  EXPECT_EQ(s.jobs[3].id, "m/default.fp8_e4m3/small");
  EXPECT_EQ(s.jobs[3].dtype, "fp8_e4m3");
  runner::JobResult r;
  r.job = s.jobs[3];
  EXPECT_EQ(runner::result_from_json(runner::to_json(r, "d")).job.dtype, "fp8_e4m3");
  EXPECT_THROW(load_suite(write_suite("e", "tests:\n  - {name: m, kernel: mlp, dtypes: [], configs: tiny}\n").string()),
               SuiteError);
}

TEST(RegressSuite, ShardsPartitionTheSuite) {
  const Suite s = load_suite(write_suite("s", kSuite).string());
  std::set<std::string> seen;
  std::size_t total = 0;
  for (int i = 1; i <= 3; ++i)
    for (const Job& j : select(s, "", "", i, 3)) {
      EXPECT_TRUE(seen.insert(j.id).second) << j.id << " in two shards";
      ++total;
    }
  EXPECT_EQ(total, s.jobs.size());
}

TEST(RegressSuite, ErrorsNameFileLineAndKey) {
  EXPECT_THAT(error_of("tests:\n  - name: g\n    kernel: gemm\n    confgs: [tiny]\n"),
              HasSubstr("bad.yaml:4: unknown key 'confgs' in a test"));
  EXPECT_THAT(error_of("tests:\n  - name: g\n    kernel: gemm\n"), HasSubstr("a test needs 'configs'"));
  EXPECT_THAT(error_of("defaults:\n  fidelty: tlm\ntests: []\n"), HasSubstr("bad.yaml:2: unknown key 'fidelty'"));
  EXPECT_THAT(error_of("tests:\n  - name: g\n    kernel: gemm\n    configs: tiny\n    timeout_s: soon\n"),
              HasSubstr("bad.yaml:5: 'timeout_s' has the wrong type"));
  EXPECT_THAT(error_of("tests: [\n"), HasSubstr("YAML syntax error"));
}

TEST(RegressBaseline, SlowerAndFasterBeyondToleranceFail) {
  Job j;
  j.id = "a";
  j.tolerance_percent = 1;
  std::vector<JobResult> r(3);
  for (auto& x : r) {
    x.job = j;
    x.status = Status::Pass;
  }
  r[1].job.id = "b";
  r[2].job.id = "c";
  r[0].report = {{"time_ns", 1000.0}, {"cycles", 10.0}};
  r[1].report = {{"time_ns", 1100.0}, {"cycles", 11.0}};
  r[2].report = {{"time_ns", 900.0}, {"cycles", 9.0}};
  const nlohmann::json base = {{"a", {{"time_ns", 1005.0}}}, {"b", {{"time_ns", 1000.0}}}, {"c", {{"time_ns", 1000.0}}}};
  compare_to_baseline(r, base);
  EXPECT_EQ(r[0].status, Status::Pass);
  EXPECT_EQ(r[1].status, Status::Slower);
  EXPECT_THAT(r[1].message, HasSubstr("+10.00%"));
  EXPECT_EQ(r[2].status, Status::Faster);
  EXPECT_EQ(make_baseline(r)["b"]["time_ns"], 1100.0);
}

// A test's `fidelities` runs each job once per fidelity, ids suffixed with
// it, grouped so that the runner can require the same end.
TEST(RegressSuite, FidelitiesExpandIntoAnAgreementGroup) {
  const Suite s = load_suite(write_suite("agree",
                                         "tests:\n"
                                         "  - {name: a, kernel: gemm, variants: [naive], configs: tiny,\n"
                                         "     fidelities: [rtl, tlm], shapes: [{M: 8, N: 64, K: 8}]}\n")
                                 .string());
  ASSERT_EQ(s.jobs.size(), 2u);
  EXPECT_EQ(s.jobs[0].id, "a/naive/tiny/K8_M8_N64@rtl");
  EXPECT_EQ(s.jobs[0].fidelity, "rtl");
  EXPECT_EQ(s.jobs[1].id, "a/naive/tiny/K8_M8_N64@tlm");
  EXPECT_EQ(s.jobs[1].fidelity, "tlm");
  EXPECT_EQ(s.jobs[0].agree_group, "a/naive/tiny/K8_M8_N64");
  EXPECT_EQ(s.jobs[1].agree_group, s.jobs[0].agree_group);
  const char* head = "tests:\n  - name: a\n    kernel: gemm\n    configs: tiny\n";
  EXPECT_THAT(error_of(std::string(head) + "    fidelities: [rtl]\n"),
              HasSubstr("bad.yaml:5: 'fidelities' lists at least two"));
  EXPECT_THAT(error_of(std::string(head) + "    fidelities: [rtl, tlm, rtl]\n"),
              HasSubstr("bad.yaml:5: 'fidelities' lists a fidelity twice"));
  EXPECT_THAT(error_of(std::string(head) + "    fidelities: [rtl, fast]\n"),
              HasSubstr("bad.yaml:5: fidelity 'fast': expected rtl, sampled or tlm"));
  EXPECT_THAT(error_of(std::string(head) + "    fidelity: tlm\n    fidelities: [rtl, tlm]\n"),
              HasSubstr("bad.yaml:6: a test has 'fidelity' or 'fidelities', not both"));
}

// Members of a group that ran must end on the same picosecond and tensor
// cycle; a member that failed on its own keeps its status, and a lone
// member (a shard's view) is not judged.
TEST(RegressAgreement, DifferentEndsMarkEveryMemberDisagree) {
  const auto result = [](const std::string& group, const std::string& fidelity, double ns, double cycles) {
    JobResult r;
    r.job.id = group + "@" + fidelity;
    r.job.agree_group = group;
    r.job.fidelity = fidelity;
    r.report = {{"time_ns", ns}, {"cycles", cycles}};
    return r;
  };
  std::vector<JobResult> r = {result("same", "rtl", 1000.5, 40.0), result("same", "tlm", 1000.5, 40.0),
                              result("apart", "rtl", 1000.5, 40.0), result("apart", "tlm", 1000.0, 40.0),
                              result("cycles", "rtl", 10.0, 41.0),  result("cycles", "tlm", 10.0, 40.0),
                              result("alone", "rtl", 5.0, 1.0),     result("failed", "rtl", 5.0, 1.0),
                              result("failed", "tlm", 7.0, 1.0)};
  r[8].status = Status::Fail;
  check_agreement(r);
  EXPECT_EQ(r[0].status, Status::Pass);
  EXPECT_EQ(r[1].status, Status::Pass);
  EXPECT_EQ(r[2].status, Status::Disagree);
  EXPECT_EQ(r[3].status, Status::Disagree);
  EXPECT_THAT(r[3].message, HasSubstr("tlm ends at 1000.000 ns (40.0 tensor cycles), rtl at 1000.500 ns"));
  EXPECT_THAT(r[3].message, HasSubstr("-0.500 ns"));
  EXPECT_EQ(r[4].status, Status::Disagree);
  EXPECT_EQ(r[5].status, Status::Disagree);
  EXPECT_EQ(r[6].status, Status::Pass);
  EXPECT_EQ(r[7].status, Status::Pass);
  EXPECT_EQ(r[8].status, Status::Fail);
  // The status survives results.json (a merge reads it back).
  EXPECT_EQ(runner::result_from_json(runner::to_json(r[2], "s")).status, Status::Disagree);
  EXPECT_EQ(runner::result_from_json(runner::to_json(r[2], "s")).job.agree_group, "apart");
}

// The suite page's rows: each job's change against the baseline, none where
// the baseline has no time for it or the job has no time.
TEST(RegressBaseline, PageRowsGiveEachJobsChange) {
  std::vector<JobResult> r(3);
  r[0].job.id = "a";
  r[0].report = {{"time_ns", 1100.0}};
  r[0].status = Status::Slower;
  r[1].job.id = "b";
  r[1].report = {{"time_ns", 500.0}};
  r[2].job.id = "c";
  r[2].status = Status::Fail;
  const nlohmann::json base = {{"a", {{"time_ns", 1000.0}}}, {"c", {{"time_ns", 1000.0}}}, {"b", "not an entry"}};
  const nlohmann::json rows = against_baseline(r, base);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["status"], "slower");
  EXPECT_DOUBLE_EQ(rows[0]["baseline_ns"].get<double>(), 1000.0);
  EXPECT_NEAR(rows[0]["change_percent"].get<double>(), 10.0, 1e-9);
  EXPECT_FALSE(rows[1].contains("baseline_ns"));
  EXPECT_FALSE(rows[1].contains("change_percent"));
  EXPECT_DOUBLE_EQ(rows[2]["baseline_ns"].get<double>(), 1000.0);
  EXPECT_FALSE(rows[2].contains("time_ns"));
  EXPECT_FALSE(rows[2].contains("change_percent"));
  EXPECT_EQ(against_baseline(r, nlohmann::json())[0].count("change_percent"), 0u);
}

TEST(RegressOutput, JunitHasOneTestcasePerJobAndEscapes) {
  JobResult ok, bad;
  ok.job.id = "g/x";
  ok.status = Status::Pass;
  bad.job.id = "g/<y>";
  bad.status = Status::Fail;
  bad.message = "a & b";
  const std::string xml = junit_xml("suite", {ok, bad});
  EXPECT_THAT(xml, HasSubstr("tests=\"2\" failures=\"1\""));
  EXPECT_THAT(xml, HasSubstr("name=\"g/&lt;y&gt;\""));
  EXPECT_THAT(xml, HasSubstr("message=\"a &amp; b\""));
  EXPECT_THAT(summary_markdown("suite", {ok, bad}), HasSubstr("## Failures by cause"));
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

// A failing job (a kernel rule broken), a job past its timeout and a passing
// one: the rest go on, each is reported, the suite fails.
TEST(RegressRun, FailingAndHangingJobsAreReportedAndTheRestGoOn) {
  const fs::path suite = write_suite("mixed",
                                     "defaults: {fidelity: tlm}\n"
                                     "tests:\n"
                                     "  - {name: ok, kernel: gemm, configs: tiny, shapes: [{M: 8, N: 64, K: 8}]}\n"
                                     "  - {name: bad, kernel: gemm, variants: [blocked_mn], configs: tiny,\n"
                                     "     shapes: [{K: 8192}]}\n"
                                     "  - {name: slow, kernel: gemm, configs: neuroncore-v2, timeout_s: 0.2,\n"
                                     "     shapes: [{M: 2048, N: 4096, K: 4096}]}\n");
  const fs::path out = test_support::scratch_dir() / "tessera_regress_mixed";
  fs::remove_all(out);
  std::string text;
  const int status = run_binary(fmt::format("regress {} -j 2 --out {}", suite.string(), out.string()), &text);
  EXPECT_EQ(status, 1) << text;
  const auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
  ASSERT_EQ(results.size(), 3u);
  std::map<std::string, std::string> by_test;
  for (const auto& r : results) by_test[r["id"].get<std::string>().substr(0, r["id"].get<std::string>().find('/'))] = r["status"];
  EXPECT_EQ(by_test["ok"], "pass");
  EXPECT_EQ(by_test["bad"], "error");
  EXPECT_EQ(by_test["slow"], "timeout");
  EXPECT_TRUE(fs::exists(out / "junit.xml"));
  EXPECT_TRUE(fs::exists(out / "summary.md"));
  EXPECT_THAT(text, HasSubstr("1 of 3 passed"));
  // The passing job's report is on disk whole once, as report.json, not
  // again as its captured stdout (the runner read the same report from it);
  // its entry in result.json and results.json is that report without the
  // critical path's steps and waits. The failing one wrote no report.json,
  // so what it printed stays.
  const fs::path ok = out / "jobs" / "ok.default.tiny.K8_M8_N64", bad = out / "jobs" / "bad.blocked_mn.tiny.K8192";
  ASSERT_TRUE(fs::exists(ok / "report.json"));
  EXPECT_FALSE(fs::exists(ok / "stdout.json"));
  auto whole = nlohmann::json::parse(std::ifstream(ok / "report.json"));
  ASSERT_FALSE(whole["critical_path"]["steps"].empty());
  ASSERT_TRUE(whole["critical_path"].contains("waits"));
  whole["critical_path"].erase("steps");
  whole["critical_path"].erase("waits");
  const auto result = nlohmann::json::parse(std::ifstream(ok / "result.json"));
  EXPECT_EQ(result["report"], whole);
  EXPECT_GT(result["report"]["critical_path"]["steps_total"].get<int>(), 0);
  for (const auto& r : results) {
    if (r["id"].get<std::string>().rfind("ok/", 0) == 0) {
      EXPECT_EQ(r["report"], whole);
    }
  }
  EXPECT_FALSE(fs::exists(bad / "report.json"));
  EXPECT_TRUE(fs::exists(bad / "stdout.json"));
  fs::remove_all(out);
}

}  // namespace
}  // namespace tessera::cli::regress

namespace tessera::cli::regress {
namespace {

// Shards of a suite merged give the same result set as an unsharded run.
TEST(RegressRun, MergedShardsEqualTheUnshardedRun) {
  const fs::path suite = write_suite("shards",
                                     "defaults: {fidelity: tlm}\n"
                                     "tests:\n"
                                     "  - {name: g, kernel: gemm, variants: [naive, hoisted, blocked_mnk],\n"
                                     "     configs: [tiny, small], shapes: [{M: 8, N: 64, K: 8}]}\n");
  const fs::path base = test_support::scratch_dir() / "tessera_regress_shards";
  fs::remove_all(base);
  std::string text;
  for (int i = 1; i <= 2; ++i)
    ASSERT_EQ(run_binary(fmt::format("regress {} --shard {}/2 --out {}", suite.string(), i, (base / std::to_string(i)).string()),
                         &text),
              0)
        << text;
  ASSERT_EQ(run_binary(fmt::format("regress merge {} {} --out {}", (base / "1").string(), (base / "2").string(),
                                   (base / "merged").string()),
                       &text),
            0)
      << text;
  ASSERT_EQ(run_binary(fmt::format("regress {} --out {}", suite.string(), (base / "whole").string()), &text), 0) << text;
  const auto strip = [](const nlohmann::json& results) {
    std::vector<std::tuple<std::string, std::string, double>> out;
    for (const auto& r : results) out.emplace_back(r["id"], r["status"], r["report"]["time_ns"].get<double>());
    return out;
  };
  const auto merged = nlohmann::json::parse(std::ifstream(base / "merged" / "results.json"));
  const auto whole = nlohmann::json::parse(std::ifstream(base / "whole" / "results.json"));
  EXPECT_EQ(merged.size(), 6u);
  EXPECT_EQ(strip(merged), strip(whole));
  // The same job in two shards is refused.
  EXPECT_EQ(run_binary(fmt::format("regress merge {} {} --out {}", (base / "1").string(), (base / "1").string(),
                                   (base / "bad").string()),
                       &text),
            2);
  fs::remove_all(base);
}

}  // namespace
}  // namespace tessera::cli::regress

namespace tessera::cli::regress {
namespace {

JobResult result(const std::string& test, const std::string& variant, const std::string& config, std::int64_t m,
                 Status status, double time_ns, double wall) {
  JobResult r;
  r.job.test = test;
  r.job.kernel = "gemm";
  r.job.variant = variant;
  r.job.config = config;
  r.job.shape = {{"M", m}};
  r.job.id = fmt::format("{}/{}/{}/M{}", test, variant, config, m);
  r.status = status;
  r.wall_seconds = wall;
  r.report = {{"time_ns", time_ns}, {"cycles", time_ns * 1.4}, {"hfu_percent", 12.5}};
  if (status != Status::Pass) r.message = "numerics mismatch at 3 elements";
  return r;
}

TEST(RegressOutput, SummaryHasAMatrixPerKernelSlowestJobsAndRatio) {
  const std::vector<JobResult> rs = {result("g", "naive", "tiny", 8, Status::Pass, 1000, 0.5),
                                     result("g", "naive", "small", 8, Status::Fail, 2500, 2.0),
                                     result("g", "hoisted", "tiny", 8, Status::Pass, 800, 0.25),
                                     result("g", "naive", "tiny", 16, Status::Pass, 4000000, 1.0)};
  const std::string md = summary_markdown("s", rs);
  EXPECT_THAT(md, HasSubstr("# s: 3 of 4 passed"));
  EXPECT_THAT(md, HasSubstr("## gemm"));
  // Configs across by name; a row per test, variant and shape.
  EXPECT_THAT(md, HasSubstr("| test | variant | shape | small | tiny |\n|---|---|---|---|---|\n"));
  EXPECT_THAT(md, HasSubstr("| g | naive | M=8 | **fail** 2.500 us / 3500 / 12.5% | ok 1.000 us / 1400 / 12.5% |"));
  EXPECT_THAT(md, HasSubstr("| g | hoisted | M=8 |  | ok 800 ns / 1120 / 12.5% |"));
  EXPECT_THAT(md, HasSubstr("| g | naive | M=16 |  | ok 4.000 ms / 5600000 / 12.5% |"));
  // Slowest first, with simulated ns per wall second.
  EXPECT_THAT(md, HasSubstr("## Slowest jobs\n\n| job | wall (s) | simulated | simulated ns per wall s |\n"
                            "|---|---|---|---|\n| g/naive/small/M8 | 2.00 | 2.500 us | 1250 |\n"
                            "| g/naive/tiny/M16 | 1.00 | 4.000 ms | 4000000 |"));
  EXPECT_THAT(md, HasSubstr("Simulated 4.004 ms in 3.8 s of job wall time: 1067813 simulated ns per wall second."));
  EXPECT_THAT(md, HasSubstr("- fail: numerics mismatch at N elements (1): g/naive/small/M8"));
  EXPECT_THAT(md, HasSubstr("## All jobs"));
  EXPECT_THAT(summary_markdown("s", rs, false), ::testing::Not(HasSubstr("## All jobs")));
}

TEST(RegressOutput, ResultsRoundTripThroughJson) {
  JobResult r = result("g", "naive", "tiny", 8, Status::Crash, 1000, 0.5);
  r.job.fidelity = "rtl";
  r.job.seed = 7;
  std::string suite;
  const JobResult back = runner::result_from_json(runner::to_json(r, "smoke"), &suite);
  EXPECT_EQ(suite, "smoke");
  EXPECT_EQ(back.job.id, r.job.id);
  EXPECT_EQ(back.job.kernel, "gemm");
  EXPECT_EQ(back.job.variant, "naive");
  EXPECT_EQ(back.job.config, "tiny");
  EXPECT_EQ(back.job.fidelity, "rtl");
  EXPECT_EQ(back.job.shape, r.job.shape);
  EXPECT_EQ(back.job.seed, 7u);
  EXPECT_EQ(back.status, Status::Crash);
  EXPECT_EQ(back.message, r.message);
  EXPECT_EQ(back.report, r.report);
}

std::string progress_output(bool live) {
  char* buf = nullptr;
  std::size_t size = 0;
  FILE* out = open_memstream(&buf, &size);
  Progress p(out, 3, live);
  p.job_done(result("g", "naive", "tiny", 8, Status::Pass, 1000, 0.5));
  p.tick("2 RUNNING");
  p.job_done(result("g", "naive", "small", 8, Status::Fail, 1000, 0.5));
  p.job_done(result("g", "hoisted", "tiny", 8, Status::Pass, 1000, 0.5));
  p.finish();
  std::fclose(out);
  std::string text(buf, size);
  free(buf);
  return text;
}

TEST(RegressProgress, OnATerminalOneLineIsRedrawnInPlace) {
  const std::string text = progress_output(true);
  EXPECT_THAT(text, HasSubstr("\r\033[K[1/3] 1 passed, 0 failed, 0 s elapsed, ~0 s left"));
  EXPECT_THAT(text, HasSubstr("(2 RUNNING)"));
  // A failure is kept above the line; passes only move the line.
  EXPECT_THAT(text, HasSubstr("\r\033[Kfail g/naive/small/M8: numerics mismatch at 3 elements\n"));
  EXPECT_THAT(text, HasSubstr("[3/3] 2 passed, 1 failed"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
}

TEST(RegressProgress, OtherwiseOnePlainLinePerJob) {
  const std::string text = progress_output(false);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;
  EXPECT_THAT(text, HasSubstr("[2/3] fail g/naive/small/M8 (0.5 s; 1 passed, 1 failed,"));
}

TEST(RegressSlurm, SubmitScriptIsAnArrayOfShardsAndAMergeAfterAny) {
  slurm::ArrayJob job;
  job.name = "tessera-smoke";
  job.out = "/shared/out";
  job.shards = 4;
  job.max_parallel = 2;
  job.cpus_per_task = 3;
  job.partition = "batch";
  job.time_limit = "00:30:00";
  job.shard_command = "exec tessera regress s.yaml --shard \"$TESSERA_SHARD/4\"";
  job.merge_command = "exec tessera regress merge --plan /shared/out";
  job.env["TESSERA_CONFIG_DIR"] = "/opt/it's";
  const std::string s = slurm::submit_script(job);
  EXPECT_THAT(s, HasSubstr("#SBATCH --array=1-4%2\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --cpus-per-task=3\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --output=/shared/out/shards/%a/slurm.log\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --partition=batch\n#SBATCH --time=00:30:00\n"));
  EXPECT_THAT(s, HasSubstr("export TESSERA_CONFIG_DIR='/opt/it'\\''s'\n"));
  EXPECT_THAT(s, HasSubstr("export TESSERA_SHARD=$SLURM_ARRAY_TASK_ID TESSERA_SHARDS=4"));
  EXPECT_THAT(s, HasSubstr("sbatch --parsable --dependency=afterany:\"$array\""));
  EXPECT_THAT(s, HasSubstr("#SBATCH --job-name=tessera-smoke-merge\n#SBATCH --output=/shared/out/slurm/merge.log\n"));
  job.only = {2, 4};
  job.max_parallel = 0;
  EXPECT_THAT(slurm::submit_script(job), HasSubstr("#SBATCH --array=2,4\n"));
}

// A job killed by a signal while it runs (as a crash would) is reported with
// its signal and the tail of its log; the other jobs finish and pass.
TEST(RegressRun, CrashingJobIsReportedWithSignalAndLogTail) {
  const fs::path suite = write_suite("crash",
                                     "defaults: {fidelity: tlm}\n"
                                     "tests:\n"
                                     "  - {name: ok, kernel: gemm, variants: [naive, hoisted], configs: tiny,\n"
                                     "     shapes: [{M: 8, N: 64, K: 8}]}\n"
                                     "  - {name: crash, kernel: gemm, configs: neuroncore-v2,\n"
                                     "     shapes: [{M: 2048, N: 4096, K: 4096}]}\n");
  const fs::path out = test_support::scratch_dir() / "tessera_regress_crash";
  fs::remove_all(out);
  // No core file from the abort.
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  const std::string cmd = fmt::format("TESSERA_CONFIG_DIR={}/configs {} regress {} -j 2 --out {} 2>&1",
                                      TESSERA_SOURCE_DIR, TESSERA_BIN, suite.string(), out.string());
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  // The crashing job's process: the one writing into its folder.
  const std::string job_dir = (out / "jobs" / "crash.default.neuroncore-v2.K4096_M2048_N4096").string();
  pid_t victim = 0;
  for (int tries = 0; tries < 600 && victim == 0; ++tries) {
    for (const auto& p : fs::directory_iterator("/proc")) {
      std::ifstream in(p.path() / "cmdline");
      std::string args((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (args.find(std::string("run") + '\0') != std::string::npos && args.find(job_dir) != std::string::npos)
        victim = std::stoi(p.path().filename().string());
    }
    if (victim == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(victim, 0) << "the job never started";
  kill(victim, SIGABRT);
  std::string text;
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) text.append(buf.data(), n);
  const int raw = pclose(pipe);
  EXPECT_EQ(WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, 1) << text;
  const auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    const std::string id = r["id"];
    if (id.rfind("crash/", 0) != 0) {
      EXPECT_EQ(r["status"], "pass") << id;
      continue;
    }
    EXPECT_EQ(r["status"], "crash");
    const std::string message = r["message"];
    EXPECT_THAT(message, HasSubstr("killed by signal 6 (Aborted)"));
    // The log's tail: it opens with the command that reproduces the job.
    EXPECT_THAT(message, HasSubstr("\nlog tail:\n$ "));
    EXPECT_THAT(message, HasSubstr("run --config neuroncore-v2 --kernel gemm --out " + job_dir));
  }
  // Bucketed by cause alone.
  EXPECT_THAT(text, HasSubstr("- crash: killed by signal N (Aborted) (1): crash/default/neuroncore-v2/K4096_M2048_N4096"));
  EXPECT_THAT(std::string(std::istreambuf_iterator<char>(std::ifstream(out / "junit.xml").rdbuf()), {}),
              HasSubstr("<failure type=\"crash\""));
  fs::remove_all(out);
}

// Each job runs in its dtype: the MLP in fp8 is faster than in bf16 on tiny
// (double row), and the report says which dtype ran.
TEST(RegressRun, JobsRunInTheirDtype) {
  const fs::path suite = write_suite("dtype_run",
                                     "defaults: {fidelity: tlm}\n"
                                     "tests:\n"
                                     "  - {name: m, kernel: mlp, dtypes: [bf16, fp8_e4m3], configs: tiny,\n"
                                     "     shapes: [{T: 64, D: 32, F: 64}]}\n");
  const fs::path out = test_support::scratch_dir() / "tessera_regress_dtype_run";
  fs::remove_all(out);
  std::string text;
  ASSERT_EQ(run_binary(fmt::format("regress {} --out {}", suite.string(), out.string()), &text), 0) << text;
  const auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
  ASSERT_EQ(results.size(), 2u);
  std::map<std::string, double> time_of;
  for (const auto& r : results) {
    EXPECT_EQ(r["report"]["dtype"], r["dtype"]);
    time_of[r["dtype"]] = r["report"]["time_ns"];
  }
  EXPECT_LT(time_of["fp8_e4m3"], time_of["bf16"]);
  std::ifstream summary(out / "summary.md");
  const std::string md((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
  EXPECT_THAT(md, HasSubstr("| m | default (fp8_e4m3) |"));
  fs::remove_all(out);
}

// Jobs at once share the CPUs their reference checks spread over: each
// gets CPUs / jobs at once (at least 1); one at a time, a job has them all.
TEST(RegressRun, JobsAtOnceShareTheCpusOfTheirChecks) {
  unsetenv("TESSERA_CHECK_THREADS");
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const int cpus = CPU_COUNT(&set);
  const fs::path suite = write_suite("check_threads",
                                     "defaults: {fidelity: tlm}\n"
                                     "tests:\n"
                                     "  - {name: m, kernel: mlp, dtypes: [bf16, fp8_e4m3], configs: tiny,\n"
                                     "     shapes: [{T: 64, D: 32, F: 64}]}\n");
  for (const int jobs : {1, 2}) {
    const fs::path out = test_support::scratch_dir() / fmt::format("tessera_regress_check_threads_{}", jobs);
    fs::remove_all(out);
    std::string text;
    ASSERT_EQ(run_binary(fmt::format("regress {} -j {} --out {}", suite.string(), jobs, out.string()), &text), 0)
        << text;
    const auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
    ASSERT_EQ(results.size(), 2u);
    for (const auto& r : results) EXPECT_EQ(r["report"]["check_threads"], std::max(1, cpus / jobs)) << jobs;
    fs::remove_all(out);
  }
  EXPECT_EQ(std::getenv("TESSERA_CHECK_THREADS"), nullptr);  // the runner's own environment is left as it was
}

// A test's `cores` run each job on that many cores of the chip (tessera run
// --cores N --shard D): the report has the chip's scaling; counts beyond a
// chip, a kernel that cannot split, and a bad shard are errors by line.
TEST(RegressRun, JobsRunOnTheCoresOfAChip) {
  const fs::path suite = write_suite("cores_run",
                                     "defaults: {fidelity: tlm}\n"
                                     "tests:\n"
                                     "  - {name: g, kernel: gemm, cores: [1, 2], shard: N, configs: tiny,\n"
                                     "     shapes: [{M: 16, N: 128, K: 16}]}\n");
  const fs::path out = test_support::scratch_dir() / "tessera_regress_cores_run";
  fs::remove_all(out);
  std::string text;
  ASSERT_EQ(run_binary(fmt::format("regress {} --out {}", suite.string(), out.string()), &text), 0) << text;
  const auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r["report"]["cores"], r["cores"]) << r["id"];
    EXPECT_EQ(r["shard"], "N");
  }
  EXPECT_EQ(results[1]["id"], "g/default/tiny.cores2/K16_M16_N128");
  EXPECT_GT(results[1]["report"]["scaling"]["speedup"].get<double>(), 1.0);
  fs::remove_all(out);

  const fs::path bad = write_suite("cores_bad",
                                   "tests:\n"
                                   "  - {name: a, kernel: gemm, cores: 4, configs: tiny}\n"
                                   "  - {name: b, kernel: softmax, cores: 2, configs: tiny}\n"
                                   "  - {name: c, kernel: gemm, cores: 2, shard: Q, configs: tiny}\n");
  EXPECT_EQ(run_binary(fmt::format("regress {} --list", bad.string()), &text), 2) << text;
  EXPECT_THAT(text, HasSubstr(bad.string() + ":2: test 'a': cores: 4: config 'tiny' has 2 cores per chip (chip.cores)"));
  EXPECT_THAT(text, HasSubstr(bad.string() + ":3: test 'b': cores: 2: kernel 'softmax' runs on one core only"));
  EXPECT_THAT(text, HasSubstr(bad.string() + ":4: test 'c': --shard Q: kernel 'gemm' shards over"));
  EXPECT_THROW(load_suite(write_suite("cores_zero", "tests:\n  - {name: a, kernel: gemm, cores: 0, configs: tiny}\n").string()),
               SuiteError);
  EXPECT_THROW(load_suite(write_suite("shard_alone", "tests:\n  - {name: a, kernel: gemm, shard: M, configs: tiny}\n").string()),
               SuiteError);
}

TEST(RegressRun, ADtypeTheKernelDoesNotTakeNamesFileAndLine) {
  const fs::path suite = write_suite("dtypes",
                                     "tests:\n"
                                     "  - {name: a, kernel: mlp, dtypes: [fp8_e4m3, mxfp8], configs: tiny}\n"
                                     "  - {name: b, kernel: gemm, variants: [tiled], dtypes: [fp8_e4m3], configs: tiny}\n");
  std::string text;
  EXPECT_EQ(run_binary(fmt::format("regress {} --list", suite.string()), &text), 2) << text;
  const std::string f = suite.string();
  EXPECT_THAT(text, HasSubstr(f + ":2: test 'a': kernel 'mlp' takes --dtype bf16, fp32, fp8_e4m3, fp8_e5m2, not 'mxfp8'"));
  EXPECT_THAT(text, HasSubstr(f + ":3: test 'b': gemm tiled: --dtype fp8_e4m3: this variant reads bf16 inputs only"));
}

// Names the suite loader cannot know are checked before anything runs, each
// error with the suite file and the test's line.
TEST(RegressRun, UnknownKernelVariantConfigAndShapeNameFileAndLine) {
  const fs::path suite = write_suite("names",
                                     "tests:\n"
                                     "  - {name: a, kernel: gemm, variants: [naive, fastest], configs: tiny}\n"
                                     "  - {name: b, kernel: gemmm, configs: tiny}\n"
                                     "  - {name: c, kernel: gemm, configs: neuroncore-v9}\n"
                                     "  - {name: d, kernel: gemm, configs: tiny, shapes: [{Q: 3}]}\n"
                                     "  - {name: e, kernel: gemm, configs: tiny, fidelity: exact}\n");
  std::string text;
  EXPECT_EQ(run_binary(fmt::format("regress {} --list", suite.string()), &text), 2) << text;
  const std::string f = suite.string();
  EXPECT_THAT(text, HasSubstr(f + ":2: test 'a': kernel 'gemm' has no variant 'fastest'"));
  EXPECT_THAT(text, HasSubstr(f + ":3: test 'b': unknown kernel 'gemmm'"));
  EXPECT_THAT(text, HasSubstr(f + ":4: test 'c': config 'neuroncore-v9'"));
  EXPECT_THAT(text, HasSubstr(f + ":5: test 'd': "));
  EXPECT_THAT(text, HasSubstr("'Q'"));
  EXPECT_THAT(text, HasSubstr(f + ":6: test 'e': fidelity 'exact': expected rtl, sampled or tlm"));
}

TEST(RegressRun, ListShowsTheSelectedJobsWithoutRunningThem) {
  const fs::path suite = write_suite("s", kSuite);
  const fs::path out = test_support::scratch_dir() / "tessera_regress_list";
  fs::remove_all(out);
  std::string text;
  EXPECT_EQ(run_binary(fmt::format("regress {} --list --group smoke --shard 1/2 --out {}", suite.string(), out.string()),
                       &text),
            0)
      << text;
  EXPECT_THAT(text, HasSubstr("g/hoisted/small/K7_M3_N5  (tlm)"));
  EXPECT_THAT(text, HasSubstr("s: 4 jobs"));
  EXPECT_FALSE(fs::exists(out));
}

TEST(RegressSlurm, NoSbatchOnPathIsAClearError) {
  const fs::path suite = write_suite("s", kSuite);
  fs::remove_all(test_support::scratch_dir() / "tessera_regress_nosbatch");
  std::string text;
  // The shell finds the binary by its full path; the runner looks for sbatch on this PATH.
  EXPECT_EQ(run_binary(fmt::format("regress {} --slurm --out {}", suite.string(),
                                   (test_support::scratch_dir() / "tessera_regress_nosbatch").string()),
                       &text, "PATH=/nonexistent"),
            2)
      << text;
  EXPECT_THAT(text, HasSubstr("'sbatch' is not on PATH: --slurm needs the Slurm client commands"));
}

TEST(RegressSlurm, EmitSbatchWritesTheScriptAndPreparesTheFolder) {
  const fs::path suite = write_suite("s", kSuite);
  const fs::path out = test_support::scratch_dir() / "tessera_regress_emit";
  const fs::path script = test_support::scratch_dir() / "tessera_regress_emit.sh";
  fs::remove_all(out);
  std::string text;
  ASSERT_EQ(run_binary(fmt::format("regress {} --emit-sbatch {} --shards 3 --partition batch --max-parallel 2 --out {}",
                                   suite.string(), script.string(), out.string()),
                       &text),
            0)
      << text;
  const std::string s(std::istreambuf_iterator<char>(std::ifstream(script).rdbuf()), {});
  EXPECT_THAT(s, HasSubstr("#SBATCH --array=1-3%2\n"));
  EXPECT_THAT(s, HasSubstr("regress '" + suite.string() + "' --shard \"$TESSERA_SHARD/3\" -j \"$TESSERA_CPUS\""));
  EXPECT_THAT(s, HasSubstr("regress merge --plan '" + out.string() + "'"));
  EXPECT_TRUE(fs::is_directory(out / "shards" / "3"));
  const auto plan = nlohmann::json::parse(std::ifstream(out / "slurm" / "plan.json"));
  EXPECT_EQ(plan["shards"], 3);
  EXPECT_EQ(plan["jobs"], 9);
  // The merge of a submission whose tasks never ran lists every job as missing.
  EXPECT_EQ(run_binary(fmt::format("regress merge --plan {}", out.string()), &text), 1);
  const auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
  ASSERT_EQ(results.size(), 9u);
  EXPECT_EQ(results[0]["status"], "missing");
  EXPECT_THAT(results[0]["message"].get<std::string>(), HasSubstr("wrote no results"));
  fs::remove_all(out);
  fs::remove(script);
}

TEST(RegressSlurm, BadCombinationsAreRefused) {
  const fs::path suite = write_suite("s", kSuite);
  std::string text;
  EXPECT_EQ(run_binary(fmt::format("regress {} --shard 1/2 --update-baseline --out /tmp/x", suite.string()), &text), 2);
  EXPECT_THAT(text, HasSubstr("--update-baseline rewrites the whole suite's baseline"));
  text.clear();
  EXPECT_EQ(run_binary("regress --rerun-failed /nonexistent --slurm", &text), 2);
  EXPECT_THAT(text, HasSubstr("--rerun-failed /nonexistent: no slurm/plan.json there"));
  text.clear();
  EXPECT_EQ(run_binary("regress --rerun-failed /nonexistent", &text), 2);
  EXPECT_THAT(text, HasSubstr("add --slurm"));
  text.clear();
  EXPECT_EQ(run_binary(fmt::format("regress {} --slurm --shard 1/2", suite.string()), &text), 2);
  EXPECT_THAT(text, HasSubstr("tessera regress: --slurm shards the suite itself (--shards N); --shard is for one shard"));
}

// The folder of another flow's --slurm run (a sweep's) is refused by name,
// not misread as a suite's.
TEST(RegressSlurm, AnotherFlowsFolderIsRefused) {
  const fs::path out = test_support::scratch_dir() / "tessera_regress_sweep_folder";
  fs::remove_all(out);
  fs::create_directories(out / "slurm");
  std::ofstream(out / "slurm" / "plan.json")
      << R"({"runner": "sweep", "study": "/nowhere/s.yaml", "study_name": "s", "kernels": [], "shards": 2,
            "points": 4, "out": ")" << out.string() << R"(", "scheduling": {}})";
  for (const std::string& args : std::vector<std::string>{"regress --rerun-failed " + out.string() + " --slurm",
                                 "regress merge --plan " + out.string()}) {
    std::string text;
    EXPECT_EQ(run_binary(args, &text), 2) << args;
    EXPECT_THAT(text, HasSubstr("this is the folder of a 'tessera sweep --slurm' run, not of a regress")) << args;
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace tessera::cli::regress

namespace tessera::cli::regress {
namespace {

// A runner started in the background (its own process group, as a shell
// job is), its output in a file.
struct Background {
  pid_t pid = 0;
  fs::path log;
};

Background start_runner(const std::vector<std::string>& args, const std::string& name) {
  Background b;
  b.log = test_support::scratch_dir() / (name + ".log");
  std::vector<std::string> all = {TESSERA_BIN};
  all.insert(all.end(), args.begin(), args.end());
  b.pid = fork();
  if (b.pid == 0) {
    setpgid(0, 0);
    setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_DIR "/configs", 1);
    const int fd = open(b.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return b;
}

// The `tessera run` processes writing under `dir`.
std::vector<pid_t> jobs_under(const fs::path& dir) {
  std::vector<pid_t> pids;
  for (const auto& p : fs::directory_iterator("/proc")) {
    std::ifstream in(p.path() / "cmdline");
    const std::string args((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (args.find(std::string("run") + '\0') != std::string::npos && args.find(dir.string()) != std::string::npos)
      pids.push_back(std::stoi(p.path().filename().string()));
  }
  return pids;
}

std::vector<pid_t> wait_for_jobs(const fs::path& dir, std::size_t n) {
  for (int tries = 0; tries < 600; ++tries) {
    const auto pids = jobs_under(dir);
    if (pids.size() >= n) return pids;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {};
}

bool all_gone(const std::vector<pid_t>& pids) {
  for (int tries = 0; tries < 200; ++tries) {
    if (std::all_of(pids.begin(), pids.end(), [](pid_t p) {
          // A zombie is gone for this purpose: it runs nothing.
          std::ifstream in(fmt::format("/proc/{}/stat", p));
          std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
          return stat.empty() || stat.find(") Z") != std::string::npos;
        }))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

const char* kSlowSuite =
    "defaults: {fidelity: tlm}\n"
    "tests:\n"
    "  - {name: quick, kernel: gemm, configs: tiny, shapes: [{M: 8, N: 64, K: 8}]}\n"
    "  - {name: slow, kernel: gemm, configs: neuroncore-v2, variants: [naive, hoisted, blocked_mnk],\n"
    "     shapes: [{M: 2048, N: 4096, K: 4096}]}\n";

// Ctrl-C (SIGINT to the runner's process group) stops the running jobs,
// writes the results with the unfinished jobs interrupted, exits 130.
TEST(RegressInterrupt, CtrlCStopsTheJobsAndWritesPartialResults) {
  const fs::path suite = write_suite("slow", kSlowSuite);
  const fs::path out = test_support::scratch_dir() / "tessera_regress_interrupt";
  fs::remove_all(out);
  const Background b = start_runner({"regress", suite.string(), "-j", "2", "--out", out.string()}, "interrupt");
  const auto pids = wait_for_jobs(out / "jobs", 2);
  ASSERT_EQ(pids.size(), 2u) << "the slow jobs never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kill(-b.pid, SIGINT);
  int raw = 0;
  waitpid(b.pid, &raw, 0);
  const std::string log(std::istreambuf_iterator<char>(std::ifstream(b.log).rdbuf()), {});
  ASSERT_TRUE(WIFEXITED(raw)) << log;
  EXPECT_EQ(WEXITSTATUS(raw), 130) << log;
  EXPECT_TRUE(all_gone(pids)) << "a job outlived the interrupt";
  const auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
  ASSERT_EQ(results.size(), 4u);
  int interrupted = 0;
  for (const auto& r : results) interrupted += r["status"] == "interrupted";
  EXPECT_GE(interrupted, 2) << results.dump(1);
  EXPECT_THAT(std::string(std::istreambuf_iterator<char>(std::ifstream(out / "junit.xml").rdbuf()), {}),
              HasSubstr("<failure type=\"interrupted\""));
  EXPECT_THAT(log, HasSubstr("interrupted"));
  fs::remove_all(out);
}

// A second Ctrl-C kills the jobs and the runner at once.
TEST(RegressInterrupt, SecondCtrlCKillsAtOnce) {
  const fs::path suite = write_suite("slow", kSlowSuite);
  const fs::path out = test_support::scratch_dir() / "tessera_regress_interrupt2";
  fs::remove_all(out);
  const Background b = start_runner({"regress", suite.string(), "-j", "2", "--out", out.string()}, "interrupt2");
  const auto pids = wait_for_jobs(out / "jobs", 2);
  ASSERT_EQ(pids.size(), 2u);
  // The jobs ignore nothing, but the two signals come before they could stop.
  kill(b.pid, SIGINT);
  kill(b.pid, SIGINT);
  const auto t0 = std::chrono::steady_clock::now();
  int raw = 0;
  waitpid(b.pid, &raw, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  EXPECT_TRUE(WIFSIGNALED(raw) || (WIFEXITED(raw) && WEXITSTATUS(raw) == 130));
  EXPECT_TRUE(all_gone(pids));
  fs::remove_all(out);
}

// A runner killed outright (SIGKILL: no handler runs) takes its jobs with it.
TEST(RegressInterrupt, JobsDieWithAKilledRunner) {
  const fs::path suite = write_suite("slow", kSlowSuite);
  const fs::path out = test_support::scratch_dir() / "tessera_regress_killed";
  fs::remove_all(out);
  const Background b = start_runner({"regress", suite.string(), "-j", "2", "--out", out.string()}, "killed");
  const auto pids = wait_for_jobs(out / "jobs", 2);
  ASSERT_EQ(pids.size(), 2u);
  kill(b.pid, SIGKILL);
  int raw = 0;
  waitpid(b.pid, &raw, 0);
  EXPECT_TRUE(all_gone(pids)) << "a job was orphaned";
  fs::remove_all(out);
}

}  // namespace
}  // namespace tessera::cli::regress

namespace tessera::cli::regress {
namespace {

// Values a suite must not hold, each refused at its file and line.
TEST(RegressSuite, BadValuesAreRefusedByLine) {
  const std::string head = "tests:\n  - name: g\n    kernel: gemm\n    configs: tiny\n";
  for (const auto& [line, expect] : std::vector<std::pair<std::string, std::string>>{
           {"    timeout_s: 0\n", "bad.yaml:5: 'timeout_s' must be a number above 0"},
           {"    timeout_s: -1\n", "bad.yaml:5: 'timeout_s' must be a number above 0"},
           {"    timeout_s: .nan\n", "bad.yaml:5: 'timeout_s' must be a number above 0"},
           {"    tolerance_percent: -5\n", "bad.yaml:5: 'tolerance_percent' must be a number of at least 0"},
           {"    seed: -1\n", "bad.yaml:5: 'seed' must be a whole number"},
           {"    seed: 18446744073709551616\n", "bad.yaml:5: 'seed' must be a whole number"},
           {"    seed: 1e23\n", "bad.yaml:5: 'seed' must be a whole number"},
           {"    variants: []\n", "bad.yaml:5: 'variants' must be a name or a non-empty list"},
           {"    shapes: []\n", "bad.yaml:5: 'shapes' must be a non-empty list"},
           {"    shapes: [{M: 8, M: 16}]\n", "bad.yaml:5: duplicate key 'M'"},
           {"    kernel: softmax\n", "bad.yaml:5: duplicate key 'kernel'"},
       })
    EXPECT_THAT(error_of(head + line), HasSubstr(expect)) << line;
  EXPECT_THAT(error_of("tests:\n  - {name: g, kernel: gemm, configs: []}\n"),
              HasSubstr("'configs' must be a name or a non-empty list"));
  EXPECT_THAT(error_of("tests:\n  - {name: \"a\\x01b\", kernel: gemm, configs: tiny}\n"),
              HasSubstr("a test's name is 1 to 100 letters"));
  std::string deep = "tests: ";
  for (int i = 0; i < 2000; ++i) deep += "[";
  EXPECT_THAT(error_of(deep), HasSubstr("bad.yaml:1: nested more than 64 deep"));
  const fs::path dir = test_support::scratch_dir() / "tessera_regress_test";
  try {
    load_suite(dir.string() + "/");
    FAIL() << "a folder loaded as a suite";
  } catch (const SuiteError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot read: it is a folder"));
  }
}

TEST(RegressRun, BadOptionsAreRefusedBeforeAnyJobRuns) {
  const fs::path suite = write_suite("s", kSuite);
  const fs::path out = test_support::scratch_dir() / "tessera_regress_badopts";
  fs::remove_all(out);
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"--shard 1/4294967297 --list", "--shard 1/4294967297: expected I/N"},
           {"--shard 0/2 --list", "--shard 0/2: expected I/N"},
           {"-j 0", "-j"},
           {"-j -3", "-j"},
           {"--baseline " + suite.string(), "not a baseline"},
       }) {
    std::string text;
    EXPECT_EQ(run_binary(fmt::format("regress {} {} --out {}", suite.string(), args, out.string()), &text),
              2)
        << args << "\n" << text;
    EXPECT_THAT(text, HasSubstr(expect)) << args;
    EXPECT_FALSE(fs::exists(out / "jobs")) << args << ": a job ran";
  }
  std::string text;
  EXPECT_EQ(run_binary(fmt::format("regress {} --out /dev/null/x", suite.string()), &text), 2);
  EXPECT_THAT(text, HasSubstr("/dev/null/x: cannot create the folder"));
  text.clear();
  EXPECT_EQ(run_binary("regress " + suite.parent_path().string() + "/", &text), 2);
  EXPECT_THAT(text, HasSubstr("cannot read: it is a folder"));
}

TEST(RegressOutput, JunitStaysValidXmlWithControlCharacters) {
  JobResult bad;
  bad.job.id = "g/x";
  bad.job.test = "g";
  bad.status = Status::Fail;
  bad.message = std::string("line\x01\x1b[31m & 'q'\n");
  const std::string xml = junit_xml("s", {bad});
  for (char c : xml)
    EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 || c == '\n') << "raw control character in XML";
  EXPECT_THAT(xml, HasSubstr("line\\x01\\x1b[31m &amp; &apos;q&apos;&#10;"));
}

// Values that would enter the submitted script as commands are refused; a
// crafted plan cannot make the runner run anything.
TEST(RegressSlurm, NothingEntersTheScriptAsACommand) {
  const fs::path root = test_support::scratch_dir() / "tessera_regress_inject";
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path evil = root / "s\nTESSERA_SHARD_SCRIPT\ntouch pwned\n.yaml";
  fs::copy_file(write_suite("s", kSuite), evil);
  std::string text;
  EXPECT_EQ(run_binary(fmt::format("regress '{}' --emit-sbatch {} --out {}", evil.string(), (root / "x.sh").string(),
                                   (root / "out").string()),
                       &text),
            2)
      << text;
  EXPECT_THAT(text, HasSubstr("control character"));
  const fs::path suite = write_suite("s", kSuite);
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"--partition 'batch\n#SBATCH --uid=0'", "--partition"},
           {"--partition 'a b'", "--partition"},
           {"--time '1;reboot'", "--time"},
       }) {
    text.clear();
    EXPECT_EQ(run_binary(fmt::format("regress {} --emit-sbatch {} {} --out {}", suite.string(),
                                     (root / "x.sh").string(), args, (root / "out2").string()),
                         &text),
              2)
        << args;
    EXPECT_THAT(text, HasSubstr(expect)) << args;
    fs::remove_all(root / "out2");
  }
  text.clear();
  EXPECT_EQ(run_binary(fmt::format("regress {} --emit-sbatch {} --out {}", suite.string(), (root / "x.sh").string(),
                                   (root / "out%j").string()),
                       &text),
            2);
  EXPECT_THAT(text, HasSubstr("% (which Slurm expands)"));
  // A plan.json whose job ids are a command.
  const fs::path out = root / "planned";
  ASSERT_EQ(run_binary(fmt::format("regress {} --emit-sbatch {} --out {}", suite.string(), (root / "x.sh").string(),
                                   out.string()),
                       &text),
            0)
      << text;
  auto plan = nlohmann::json::parse(std::ifstream(out / "slurm" / "plan.json"));
  plan["array_id"] = "1; touch " + (root / "pwned").string();
  plan["merge_id"] = "2";
  std::ofstream(out / "slurm" / "plan.json") << plan.dump();
  text.clear();
  run_binary(fmt::format("regress merge --plan {}", out.string()), &text, "PATH=" + root.string() + ":/usr/bin:/bin");
  EXPECT_FALSE(fs::exists(root / "pwned")) << text;
  fs::remove_all(root);
}

// A submission removes only what an earlier run of the tool wrote.
TEST(RegressSlurm, OutputFolderWithOtherFilesIsRefusedUnlessForced) {
  const fs::path suite = write_suite("s", kSuite);
  const fs::path out = test_support::scratch_dir() / "tessera_regress_manifest";
  const fs::path script = test_support::scratch_dir() / "tessera_regress_manifest.sh";
  fs::remove_all(out);
  fs::create_directories(out / "mine");
  std::ofstream(out / "mine" / "thesis.tex") << "precious\n";
  std::string text;
  EXPECT_EQ(run_binary(fmt::format("regress {} --emit-sbatch {} --out {}", suite.string(), script.string(), out.string()),
                       &text),
            2);
  EXPECT_THAT(text, HasSubstr("holds a file that no earlier 'tessera regress --slurm' wrote (mine)"));
  EXPECT_TRUE(fs::exists(out / "mine" / "thesis.tex"));
  text.clear();
  EXPECT_EQ(run_binary(fmt::format("regress {} --emit-sbatch {} --force --out {}", suite.string(), script.string(),
                                   out.string()),
                       &text),
            0)
      << text;
  EXPECT_TRUE(fs::exists(out / "mine" / "thesis.tex"));
  EXPECT_TRUE(fs::exists(out / "slurm" / "plan.json"));
  // A second submission into its own folder needs no --force once the
  // foreign file is gone, and removes only its own files.
  fs::remove_all(out / "mine");
  text.clear();
  EXPECT_EQ(run_binary(fmt::format("regress {} --emit-sbatch {} --out {}", suite.string(), script.string(), out.string()),
                       &text),
            0)
      << text;
  fs::remove_all(out);
  fs::remove(script);
}

}  // namespace
}  // namespace tessera::cli::regress
