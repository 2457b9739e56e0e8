// Tuning searches: the space a kernel declares, exhaustive and coordinate
// descent on made-up cost functions (no simulation), and `tessera tune`
// through the real binary on a small config.
#include "tune.h"

#include "tessera_process.h"

#include "arch/config.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tessera::cli::tune {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using test_support::run_tessera;

class TuneTest : public ::testing::Test {
protected:
  void SetUp() override { setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_DIR "/configs", 1); }
};

kernels::KernelSpec toy() {
  kernels::KernelSpec s;
  s.name = "tune_toy";
  s.variants = {{"a", "first"}, {"b", "second"}};
  s.shape = {{"N", 12, "size"}};
  s.params = {
      kernels::TunableParam::integer("x", 1, 64, 3, "a block").useful_up_to([](const kernels::ParamContext& c) {
        return c.shape.at("N");
      }),
      kernels::TunableParam::choice("engine", {"vector", "scalar"}, "vector", "who copies").only_for({"a"}),
  };
  return s;
}

TEST_F(TuneTest, SpaceIsPowersOfTwoUpToTheUsefulBoundWithTheDefault) {
  const auto spec = toy();
  const auto cfg = arch::load_config("tiny").hw;
  const auto sp = spaces(spec, cfg, {{"N", 12}}, {});
  ASSERT_EQ(sp.size(), 2u);
  ASSERT_EQ(sp[0].dims.size(), 2u);
  EXPECT_THAT(sp[0].dims[0].values, ElementsAre("1", "2", "3", "4", "8", "12"));
  EXPECT_EQ(sp[0].dims[0].default_value, "3");
  EXPECT_THAT(sp[0].dims[1].values, ElementsAre("vector", "scalar"));
  EXPECT_EQ(sp[0].size(), 12u);
  ASSERT_EQ(sp[1].dims.size(), 1u);  // b does not read `engine`
  EXPECT_EQ(points(sp[0]).size(), 12u);
  EXPECT_EQ(points(sp[0]).front().key(), "a:engine=vector,x=1");
  EXPECT_EQ(default_point(sp[1]).key(), "b:x=3");
  EXPECT_THROW(spaces(spec, cfg, {{"N", 12}}, {"c"}), tessera::KernelError);
}

// A space of two variants, three integer parameters each, and a cost with
// its minimum inside; points with x * y > limit do not fit.
std::vector<Space> grid_space() {
  std::vector<Space> out;
  for (const char* v : {"p", "q"}) {
    Space s;
    s.variant = v;
    for (const char* n : {"x", "y", "z"}) s.dims.push_back({n, {"1", "2", "4", "8", "16", "32"}, "1"});
    out.push_back(s);
  }
  return out;
}

double cost(const Candidate& c) {
  const double x = std::stod(c.params.at("x")), y = std::stod(c.params.at("y")), z = std::stod(c.params.at("z"));
  const double base = c.variant == "p" ? 100 : 90;
  return base + std::pow(std::log2(x) - 3, 2) * 10 + std::pow(std::log2(y) - 2, 2) * 7 + std::pow(std::log2(z) - 4, 2);
}

Evaluator toy_evaluator(int* runs) {
  Evaluator e;
  e.fits = [](const Candidate& c) -> std::optional<std::string> {
    if (std::stoi(c.params.at("x")) * std::stoi(c.params.at("y")) > 64) return std::string("too big");
    return std::nullopt;
  };
  e.run = [runs](const std::vector<Candidate>& batch) {
    std::vector<Outcome> out;
    for (const auto& c : batch) {
      ++*runs;
      Outcome o;
      o.kind = Outcome::Kind::Timed;
      o.time_ns = cost(c);
      out.push_back(o);
    }
    return out;
  };
  return e;
}

TEST_F(TuneTest, ExhaustiveTimesEveryFittingPointOnceAndFindsTheMinimum) {
  int runs = 0;
  const auto r = search(grid_space(), Strategy::Exhaustive, {}, toy_evaluator(&runs), 10);
  EXPECT_EQ(r.space_size, 432u);
  EXPECT_EQ(r.timed + r.pruned, 432u);
  EXPECT_EQ(r.timed, static_cast<std::size_t>(runs));
  EXPECT_GT(r.pruned, 0u);
  ASSERT_NE(r.best(), nullptr);
  EXPECT_EQ(r.best()->candidate.key(), "q:x=8,y=4,z=16");
  EXPECT_EQ(r.top(10).size(), 10u);
  EXPECT_LE(r.top(10)[0]->outcome.time_ns, r.top(10)[9]->outcome.time_ns);
  EXPECT_FALSE(r.stopped_early);
}

TEST_F(TuneTest, DescentFindsTheMinimumOfASeparableCostInFewRuns) {
  int runs = 0;
  const auto r = search(grid_space(), Strategy::Descent, {}, toy_evaluator(&runs));
  ASSERT_NE(r.best(), nullptr);
  EXPECT_EQ(r.best()->candidate.key(), "q:x=8,y=4,z=16");
  EXPECT_EQ(r.timed, static_cast<std::size_t>(runs));
  EXPECT_LT(r.timed * 5, 432u);
}

TEST_F(TuneTest, BudgetCapsTheTimedRuns) {
  int runs = 0;
  Limits l;
  l.budget = 7;
  const auto r = search(grid_space(), Strategy::Descent, l, toy_evaluator(&runs));
  EXPECT_EQ(runs, 7);
  EXPECT_EQ(r.timed, 7u);
  EXPECT_TRUE(r.stopped_early);
  runs = 0;
  const auto e = search(grid_space(), Strategy::Exhaustive, l, toy_evaluator(&runs), 5);
  EXPECT_EQ(runs, 7);
  EXPECT_TRUE(e.stopped_early);
}

TEST_F(TuneTest, DescentStartsFromAFittingPointWhenTheDefaultDoesNot) {
  auto sp = grid_space();
  sp.resize(1);
  for (auto& d : sp[0].dims) d.default_value = "32";  // x * y = 1024 does not fit
  int runs = 0;
  const auto r = search(sp, Strategy::Descent, {}, toy_evaluator(&runs));
  ASSERT_NE(r.best(), nullptr);
  EXPECT_EQ(r.best()->candidate.key(), "p:x=8,y=4,z=16");
  EXPECT_EQ(r.evaluated.front().outcome.kind, Outcome::Kind::Pruned);
}

TEST_F(TuneTest, FailedRunsAreNotTheBest) {
  Evaluator e;
  e.fits = [](const Candidate&) { return std::nullopt; };
  e.run = [](const std::vector<Candidate>& batch) {
    std::vector<Outcome> out;
    for (const auto& c : batch) {
      Outcome o;
      o.kind = c.params.at("x") == "1" ? Outcome::Kind::Failed : Outcome::Kind::Timed;
      o.time_ns = c.params.at("x") == "1" ? 1 : 10 * std::stod(c.params.at("x"));
      out.push_back(o);
    }
    return out;
  };
  Space s{"only", {{"x", {"1", "2", "4"}, "4"}}};
  const auto r = search({s}, Strategy::Descent, {}, e);
  ASSERT_NE(r.best(), nullptr);
  EXPECT_EQ(r.best()->candidate.key(), "only:x=2");
}

// --- through the binary ---------------------------------------------------------

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

TEST_F(TuneTest, TuneCommandSearchesGemmOnSmallAndPlots) {
  const fs::path out = fs::temp_directory_path() / fmt::format("tessera_tune_cli_{}", ::getpid());
  fs::remove_all(out);
  const auto r = run_tessera(fmt::format("tune --config small --kernel gemm --variant blocked_mnk "
                                         "--shape M=64,N=128,K=128 -j 2 --out {}",
                                         out.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("exhaustive search"));
  EXPECT_THAT(r.out, HasSubstr("best: --variant blocked_mnk --param "));
  const auto doc = read_json(out / "results.json");
  EXPECT_EQ(doc["strategy"], "exhaustive");
  EXPECT_EQ(doc["space_size"].get<int>(), doc["timed"].get<int>() + doc["pruned"].get<int>());
  ASSERT_TRUE(doc.contains("best"));
  double fastest = 1e300;
  for (const auto& p : doc["points"])
    if (p["status"] == "timed") fastest = std::min(fastest, p["time_ns"].get<double>());
  EXPECT_EQ(doc["best"]["time_ns"].get<double>(), fastest);
  EXPECT_TRUE(fs::exists(out / "results.csv"));
  EXPECT_TRUE(fs::exists(out / "plots" / "convergence.png"));
  EXPECT_TRUE(fs::exists(out / "plots" / "time_vs_bk.svg"));
  fs::remove_all(out);
}

TEST_F(TuneTest, TuneCommandPrunesWhatDoesNotFitBeforeRunning) {
  const fs::path out = fs::temp_directory_path() / fmt::format("tessera_tune_prune_{}", ::getpid());
  fs::remove_all(out);
  // On tiny (8 x 8, small SBUF) large blocks overflow SBUF or PSUM.
  const auto r = run_tessera(fmt::format("tune --config tiny --kernel gemm --variant blocked_mnk "
                                         "--shape M=64,N=64,K=256 -j 2 --no-plots --out {}",
                                         out.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto doc = read_json(out / "results.json");
  EXPECT_GT(doc["pruned"].get<int>(), 0);
  for (const auto& p : doc["points"]) {
    if (p["status"] != "pruned") continue;
    EXPECT_THAT(p["reason"].get<std::string>(), HasSubstr("gemm blocked_mnk"));
    // A pruned point left no job folder: it never ran.
    EXPECT_FALSE(fs::exists(out / "jobs" / (p["variant"].get<std::string>())));
  }
  fs::remove_all(out);
}

TEST_F(TuneTest, TuneCommandRejectsBadInputNamingIt) {
  auto r = run_tessera("tune --config small --kernel gemm --strategy fastest");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--strategy fastest"));
  r = run_tessera("tune --config small --kernel gemm --time soon");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--time soon"));
  r = run_tessera("tune --config small --kernel gemm --variant quick");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("quick"));
  r = run_tessera("tune --config small --kernel gem");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("gemm"));
  r = run_tessera("tune --kernel gemm");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--config"));
}

// What a Slurm shard and the merge job run, without Slurm: the candidates
// of a round timed by `--candidates FILE --shard I/N`.
TEST_F(TuneTest, CandidatesFileRunsAShardOfARound) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("tessera_tune_shard_{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  nlohmann::json list = nlohmann::json::array();
  for (const char* bk : {"1", "2", "4"})
    list.push_back({{"id", fmt::format("blocked_mnk:bk={}", bk)}, {"kernel", "gemm"}, {"variant", "blocked_mnk"},
                    {"config", "small"}, {"shape", {{"M", 64}, {"N", 64}, {"K", 128}}},
                    {"params", {{"bk", bk}}}, {"timeout_s", 300}});
  std::ofstream(dir / "candidates.json") << nlohmann::json{{"candidates", list}}.dump();
  const auto r = run_tessera(fmt::format("tune --candidates {} --shard 2/2 -j 1 --out {}", (dir / "candidates.json").string(),
                                         (dir / "shard").string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto doc = read_json(dir / "shard" / "results.json");
  ASSERT_EQ(doc["results"].size(), 1u);  // the second of three
  EXPECT_EQ(doc["results"][0]["id"], "blocked_mnk:bk=2");
  EXPECT_EQ(doc["results"][0]["status"], "pass");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera::cli::tune
