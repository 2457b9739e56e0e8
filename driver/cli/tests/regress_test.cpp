// The regression runner: suite files (expansion, errors naming file and
// line), sharding, baselines both ways, JUnit output; and whole suites with
// failing and hanging jobs through the real binary.
#include "regress.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/wait.h>

namespace tessera::cli::regress {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path write_suite(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / "tessera_regress_test" / (name + ".yaml");
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
    x.status = "pass";
  }
  r[1].job.id = "b";
  r[2].job.id = "c";
  r[0].report = {{"time_ns", 1000.0}, {"cycles", 10.0}};
  r[1].report = {{"time_ns", 1100.0}, {"cycles", 11.0}};
  r[2].report = {{"time_ns", 900.0}, {"cycles", 9.0}};
  const nlohmann::json base = {{"a", {{"time_ns", 1005.0}}}, {"b", {{"time_ns", 1000.0}}}, {"c", {{"time_ns", 1000.0}}}};
  compare_to_baseline(r, base);
  EXPECT_EQ(r[0].status, "pass");
  EXPECT_EQ(r[1].status, "slower");
  EXPECT_THAT(r[1].message, HasSubstr("+10.00%"));
  EXPECT_EQ(r[2].status, "faster");
  EXPECT_EQ(make_baseline(r)["b"]["time_ns"], 1100.0);
}

TEST(RegressOutput, JunitHasOneTestcasePerJobAndEscapes) {
  JobResult ok, bad;
  ok.job.id = "g/x";
  ok.status = "pass";
  bad.job.id = "g/<y>";
  bad.status = "fail";
  bad.message = "a & b";
  const std::string xml = junit_xml("suite", {ok, bad});
  EXPECT_THAT(xml, HasSubstr("tests=\"2\" failures=\"1\""));
  EXPECT_THAT(xml, HasSubstr("name=\"g/&lt;y&gt;\""));
  EXPECT_THAT(xml, HasSubstr("message=\"a &amp; b\""));
  EXPECT_THAT(summary_markdown("suite", {ok, bad}), HasSubstr("## Failures by cause"));
}

int run_binary(const std::string& args, std::string* out) {
  const std::string cmd = fmt::format("TESSERA_CONFIG_DIR={}/configs {} {} 2>&1", TESSERA_SOURCE_DIR, TESSERA_BIN, args);
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
  const fs::path out = fs::temp_directory_path() / "tessera_regress_mixed";
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
  const fs::path base = fs::temp_directory_path() / "tessera_regress_shards";
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
