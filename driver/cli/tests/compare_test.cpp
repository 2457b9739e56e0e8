// tessera compare: a comparison as a study of whole configs (its rows, speed-up
// and table from given results), and whole comparisons through the real
// binary: every config runs, its table, CSV, JSON and plots, and bad input.
#include "compare.h"

#include "tessera_process.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::cli::compare {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test_support::run_tessera;

class CompareTest : public ::testing::Test {
protected:
  void SetUp() override { setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_DIR "/configs", 1); }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_F(CompareTest, ARequestIsAStudyOfWholeConfigs) {
  Request r;
  r.kernel = "gemm";
  r.shape = "M=16";
  r.configs = {"tiny", "small+hbm.bandwidth_gbps=32"};
  r.sets = {"dma.engines=2"};
  const sweep::Study s = study_of(r);
  ASSERT_EQ(s.parameters.size(), 1u);
  EXPECT_TRUE(s.parameters[0].configs);
  const auto points = sweep::expand(s);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].job.config, "tiny");
  EXPECT_EQ(points[1].job.config, "small");
  // --set first, then the config's own overrides; the kernel's whole default shape.
  EXPECT_THAT(points[1].job.overrides, ::testing::ElementsAre("dma.engines=2", "hbm.bandwidth_gbps=32"));
  EXPECT_EQ(points[0].job.shape.at("M"), 16);
  EXPECT_EQ(points[0].job.shape.count("K"), 1u);
}

TEST_F(CompareTest, ShortNamesMeanTheShippedGenerations) {
  EXPECT_EQ(sweep::parse_config_choice("v3").config, "neuroncore-v3");
  EXPECT_EQ(sweep::parse_config_choice("tiny").config, "tiny");
  const auto c = sweep::parse_config_choice("v2+hbm.bandwidth_gbps=820+dma.engines=8");
  EXPECT_EQ(c.config, "neuroncore-v2");
  EXPECT_THAT(c.overrides, ::testing::ElementsAre("hbm.bandwidth_gbps=820", "dma.engines=8"));
  EXPECT_EQ(sweep::parse_config_choice("mine.yaml", "/studies").config, "/studies/mine.yaml");
  EXPECT_THROW(sweep::parse_config_choice("+a=1"), sweep::StudyError);
  EXPECT_THROW(sweep::parse_config_choice("v2+novalue"), sweep::StudyError);
}

TEST_F(CompareTest, RowsTakeSpeedUpFromTheFirstConfigThatRan) {
  Request r;
  r.kernel = "gemm";
  r.configs = {"tiny", "small", "v2"};
  const sweep::Study s = study_of(r);
  const auto points = sweep::expand(s);
  std::vector<runner::JobResult> results(3);
  const double times[] = {0, 2000, 500};
  for (std::size_t i = 0; i < 3; ++i) {
    results[i].job = points[i].job;
    results[i].status = i == 0 ? runner::Status::Fail : runner::Status::Pass;
    results[i].message = i == 0 ? "deadlock\nmore" : "";
    results[i].report = {{"config", points[i].job.config},
                         {"variant", "blocked_mnk"},
                         {"time_ns", times[i]},
                         {"hfu_percent", 10.0 * static_cast<double>(i)},
                         {"peak_tflops", 91.75},
                         {"achieved_tflops", 9.0},
                         {"bound_by", "dma"},
                         {"engines", {{"dma", {{"busy_percent", 97.5}}}}},
                         {"top_stalls", {{{"engine", "tensor"}, {"reason", "waiting for DMA"}, {"percent", 70.0}}}}};
  }
  const std::vector<Row> rs = rows(points, results);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].status, "fail");
  EXPECT_EQ(rs[0].speedup, 0);
  EXPECT_DOUBLE_EQ(rs[1].speedup, 1.0);
  EXPECT_DOUBLE_EQ(rs[2].speedup, 4.0);
  EXPECT_EQ(rs[2].bound_by, "dma");
  EXPECT_DOUBLE_EQ(rs[2].bound_busy_percent, 97.5);
  ASSERT_EQ(rs[2].stalls.size(), 1u);

  const auto t = lines_of(table(s, rs));
  ASSERT_EQ(t.size(), 5u);
  EXPECT_THAT(t[0], HasSubstr("gemm blocked_mnk"));
  EXPECT_THAT(t[0], HasSubstr("speed-up over small"));
  EXPECT_THAT(t[2], ::testing::MatchesRegex("tiny +fail +deadlock"));
  EXPECT_THAT(t[2], HasSubstr("deadlock"));
  EXPECT_THAT(t[2], ::testing::Not(HasSubstr("more")));
  EXPECT_THAT(t[4], HasSubstr("4.00x"));
  EXPECT_THAT(t[4], HasSubstr("dma 98%"));
  EXPECT_THAT(t[4], HasSubstr("tensor waiting for DMA 70.0%"));

  const auto c = lines_of(csv(rs));
  ASSERT_EQ(c.size(), 4u);
  EXPECT_THAT(c[0], HasSubstr("config,resolved_config,status,time_ns,speedup,hfu_percent"));
  EXPECT_THAT(c[3], HasSubstr("v2,neuroncore-v2,pass,500,4,20,9,91.75,dma,97.5,tensor waiting for DMA,70,"));
  EXPECT_EQ(json(rs)[2]["top_stalls"][0]["reason"], "waiting for DMA");
}

// Three configs of the tiny and small generations: every one runs; the
// table, CSV, JSON and plots agree with each run's report.
TEST_F(CompareTest, ComparesEveryConfigAndWritesItsTablesAndPlots) {
  const fs::path out = fs::temp_directory_path() / fmt::format("tessera_compare_{}", ::getpid());
  fs::remove_all(out);
  const auto r = run_tessera(fmt::format("compare --kernel gemm --variant blocked_mnk --shape M=16,N=64,K=16 "
                                         "--configs tiny,small,tiny+hbm.bandwidth_gbps=2 --fidelity tlm --no-data "
                                         "-j 2 --out {}",
                                         out.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto table = lines_of(r.out);
  ASSERT_EQ(table.size(), 5u) << r.out;
  EXPECT_THAT(table[0], HasSubstr("gemm blocked_mnk K=16,M=16,N=64 (tlm, timing only): 3 configs; speed-up over tiny"));
  EXPECT_THAT(table[2], HasSubstr("1.00x"));

  const auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
  ASSERT_EQ(results["points"].size(), 3u);
  ASSERT_EQ(results["compare"].size(), 3u);
  std::vector<double> time;
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& p = results["points"][i];
    EXPECT_EQ(p["status"], "pass") << p["message"];
    EXPECT_EQ(results["compare"][i]["time_ns"], p["report"]["time_ns"]);
    time.push_back(p["report"]["time_ns"]);
  }
  EXPECT_EQ(results["points"][1]["report"]["config"], "small");
  // The config's own override ran: an eighth of tiny's HBM bandwidth is slower.
  EXPECT_GT(time[2], time[0]);
  EXPECT_DOUBLE_EQ(results["compare"][2]["speedup"].get<double>(), time[0] / time[2]);
  EXPECT_EQ(results["parameters"][0]["configs"], true);
  const auto csv = lines_of([&] {
    std::ifstream in(out / "compare.csv");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }());
  EXPECT_EQ(csv.size(), 4u);
  for (const char* plot : {"time_vs_config.png", "roofline_by_config.svg", "engine_busy.png"})
    EXPECT_TRUE(fs::exists(out / "plots" / plot)) << plot;

  const auto j = run_tessera(fmt::format("compare --kernel gemm --shape M=16,N=64,K=16 --configs tiny,small "
                                         "--fidelity tlm --no-data --json --no-plots --out {}",
                                         out.string()));
  ASSERT_EQ(j.status, 0) << j.err;
  const auto rows = nlohmann::json::parse(j.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["resolved_config"], "small");
  EXPECT_FALSE(fs::exists(out / "plots"));
  fs::remove_all(out);
}

TEST_F(CompareTest, BadInputIsAnExitTwoNamingTheProblem) {
  const std::string base = "compare --kernel gemm --no-data --no-plots --out /tmp/tessera_compare_bad ";
  struct Case {
    std::string args, message;
  } cases[] = {
      {"--configs tiny,nosuch", "--configs nosuch: unknown config 'nosuch'"},
      {"--configs tiny+tensor.rowz=4", "unknown key 'tensor.rowz' (did you mean 'tensor.rows'?)"},
      {"--configs tiny+tensor.rows=4096", "--configs tiny+tensor.rows=4096: tensor.rows: must be at most"},
      {"--configs tiny --set tensor.rows=4096", "--configs tiny: tensor.rows: must be at most"},
      {"--configs tiny,tiny", "--configs: 'tiny' appears twice"},
      {"--configs tiny --variant fastest", "kernel 'gemm' has no variant 'fastest'"},
      {"--configs tiny --shape Q=3", "has no shape parameter 'Q'"},
      {"--configs tiny --fidelity exact", "--fidelity exact: expected rtl, sampled or tlm"},
  };
  for (const auto& c : cases) {
    const auto r = run_tessera(base + c.args);
    EXPECT_EQ(r.status, 2) << c.args;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.args;
  }
  const auto r = run_tessera("compare --kernel gemm --configs tiny --kernel-typo");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
}  // namespace tessera::cli::compare
