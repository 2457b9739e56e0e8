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
#include <set>

#include "common/tuning_db.h"

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
      // Changes the result's rounding: never a dimension of the search.
      kernels::TunableParam::choice("acc", {"fp32", "bf16"}, "fp32", "accumulation").changes_numerics(),
  };
  return s;
}

TEST_F(TuneTest, SpaceIsPowersOfTwoUpToTheUsefulBoundWithTheDefault) {
  const auto spec = toy();
  const auto cfg = arch::load_config("tiny").hw;
  const auto sp = spaces(spec, cfg, {{"N", 12}}, {});
  ASSERT_EQ(sp.size(), 2u);
  ASSERT_EQ(sp[0].dims.size(), 2u);  // not `acc`, a numerics choice
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

TEST_F(TuneTest, ACountSearchedAtEveryValueTakesEachValueUpToItsBound) {
  auto spec = toy();
  spec.params.push_back(kernels::TunableParam::integer("engines", 0, 64, 0, "a count")
                            .useful_up_to([](const kernels::ParamContext&) { return 6; })
                            .searched_at_every_value());
  const auto cfg = arch::load_config("tiny").hw;
  const auto sp = spaces(spec, cfg, {{"N", 12}}, {"b"});
  ASSERT_EQ(sp.size(), 1u);
  ASSERT_EQ(sp[0].dims.size(), 2u);
  EXPECT_EQ(sp[0].dims[1].name, "engines");
  EXPECT_THAT(sp[0].dims[1].values, ElementsAre("0", "1", "2", "3", "4", "5", "6"));
  EXPECT_THAT(sp[0].dims[0].values, ElementsAre("1", "2", "3", "4", "8", "12"));  // x still in powers of two
}

TEST_F(TuneTest, ValuesNarrowADimensionAndMoveItsDefaultToTheNearest) {
  const auto spec = toy();
  const auto cfg = arch::load_config("tiny").hw;
  auto sp = spaces(spec, cfg, {{"N", 12}}, {});
  // Values the powers of two skip (5, 6, 7), out of order, repeated.
  restrict_values(sp, spec, {"x=7,5..6,5", "engine=scalar"});
  EXPECT_THAT(sp[0].dims[0].values, ElementsAre("5", "6", "7"));
  EXPECT_EQ(sp[0].dims[0].default_value, "5");  // the default 3's nearest
  EXPECT_THAT(sp[0].dims[1].values, ElementsAre("scalar"));
  EXPECT_EQ(sp[0].dims[1].default_value, "scalar");
  EXPECT_THAT(sp[1].dims[0].values, ElementsAre("5", "6", "7"));  // b reads x too, not engine
  EXPECT_EQ(sp[0].size(), 3u);
}

TEST_F(TuneTest, ValuesThatCannotBeSearchedAreErrorsNamingThem) {
  const auto spec = toy();
  const auto cfg = arch::load_config("tiny").hw;
  const auto error = [&](std::vector<std::string> given, std::vector<std::string> variants = {}) {
    auto sp = spaces(spec, cfg, {{"N", 12}}, variants);
    try {
      restrict_values(sp, spec, given);
    } catch (const tessera::KernelError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error({"x"}), HasSubstr("--values 'x': expected NAME=V1,V2,..."));
  EXPECT_THAT(error({"x=2", "x=4"}), HasSubstr("'x' is given twice"));
  EXPECT_THAT(error({"x=0"}), HasSubstr("parameter x=0 is outside its legal range 1..64"));
  EXPECT_THAT(error({"x=two"}), HasSubstr("parameter x=two: not an integer"));
  EXPECT_THAT(error({"x=9..3"}), HasSubstr("'9..3' is not a range LO..HI"));
  EXPECT_THAT(error({"x=1..100000"}), HasSubstr("holds more than 4096 values"));
  EXPECT_THAT(error({"engine=gpsimd"}), HasSubstr("expected one of"));
  EXPECT_THAT(error({"acc=bf16"}), HasSubstr("changes what kernel 'tune_toy' computes"));
  EXPECT_THAT(error({"y=1"}), HasSubstr("has no tunable parameter 'y'"));
  EXPECT_THAT(error({"engine=scalar"}, {"b"}), HasSubstr("no searched variant of kernel 'tune_toy' reads parameter 'engine'"));
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

// A cost no single-parameter move improves from the default (1, 1), with
// its minimum at (8, 8): a walk from the default stops there, one from a
// seed on the line y = 8 reaches the minimum.
TEST_F(TuneTest, DescentAlsoWalksFromSeedsAndFindsWhatTheDefaultWalkMisses) {
  Evaluator e;
  e.fits = [](const Candidate&) { return std::nullopt; };
  e.run = [](const std::vector<Candidate>& batch) {
    std::vector<Outcome> out;
    for (const auto& c : batch) {
      const std::string x = c.params.at("x"), y = c.params.at("y");
      Outcome o;
      o.kind = Outcome::Kind::Timed;
      o.time_ns = x == "8" && y == "8" ? 10 : x == "1" && y == "1" ? 50 : x == "1" || y == "1" ? 60 : 70;
      out.push_back(o);
    }
    return out;
  };
  Space s{"v", {{"x", {"1", "2", "4", "8"}, "1"}, {"y", {"1", "2", "4", "8"}, "1"}}, {}};
  const auto alone = search({s}, Strategy::Descent, {}, e);
  ASSERT_NE(alone.best(), nullptr);
  EXPECT_EQ(alone.best()->candidate.key(), "v:x=1,y=1");
  s.seeds.push_back({"v", {{"x", "2"}, {"y", "8"}}});
  const auto seeded = search({s}, Strategy::Descent, {}, e);
  ASSERT_NE(seeded.best(), nullptr);
  EXPECT_EQ(seeded.best()->candidate.key(), "v:x=8,y=8");
  EXPECT_EQ(seeded.evaluated[1].candidate.key(), "v:x=2,y=8");  // timed with the default, in the first round
}

TEST_F(TuneTest, SeedsAreTheEntriesAtTheSameBucketThisConfigsOwnFirst) {
  const auto spec = toy();
  const auto cfg = arch::load_config("tiny").hw;
  const kernels::Shape shape{{"N", 12}};
  auto entry = [&](const std::string& config, std::map<std::string, std::string> params, kernels::Shape at) {
    kernels::TuningEntry t;
    t.kernel = "tune_toy";
    t.variant = "a";
    t.config = config;
    t.shape = at;
    t.bucket = kernels::shape_bucket(at);
    t.params = std::move(params);
    return t;
  };
  kernels::TuningDb db;
  db.put(entry("gen_b", {{"x", "8"}, {"engine", "scalar"}}, shape));
  db.put(entry("gen_c", {{"x", "5"}, {"engine", "scalar"}}, shape));  // 5 is not a value of x: the default 3
  db.put(entry("gen_d", {{"x", "8"}, {"engine", "scalar"}}, shape));  // the same point as gen_b's
  db.put(entry("gen_e", {{"x", "3"}, {"engine", "vector"}}, shape));  // the default point
  db.put(entry("tiny", {{"x", "1"}, {"engine", "scalar"}}, shape));   // this config's own: first
  db.put(entry("gen_f", {{"x", "2"}, {"engine", "scalar"}}, {{"N", 100}}));  // another bucket
  auto sp = spaces(spec, cfg, shape, {});
  seed_from_db(sp, db, "tune_toy", cfg.name, shape);
  std::vector<std::string> keys;
  for (const auto& c : sp[0].seeds) keys.push_back(c.key());
  EXPECT_THAT(keys, ElementsAre("a:engine=scalar,x=1", "a:engine=scalar,x=8", "a:engine=scalar,x=3"));
  EXPECT_TRUE(sp[1].seeds.empty());  // no entry of variant b
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
  Space s{"only", {{"x", {"1", "2", "4"}, "4"}}, {}};
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

TEST_F(TuneTest, TuneCommandSearchesOnlyTheNamedValuesAndSaysSoInTheDatabase) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("tessera_tune_values_{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "tuning.json").string();
  const auto r = run_tessera(fmt::format("tune --config small --kernel gemm --variant fully_optimized "
                                         "--shape M=64,N=128,K=128 --values buffers=2..3 --values tiles_in_block_k=1 "
                                         "-j 2 --no-plots --update-db --out {}",
                                         (dir / "search").string()),
                             "TESSERA_TUNING_DB=" + db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto doc = read_json(dir / "search" / "results.json");
  ASSERT_FALSE(doc["points"].empty());
  for (const auto& p : doc["points"]) {
    EXPECT_THAT(p["params"]["buffers"].get<std::string>(), ::testing::AnyOf("2", "3"));
    EXPECT_EQ(p["params"]["tiles_in_block_k"], "1");
  }
  const auto stored = read_json(db);
  ASSERT_EQ(stored["entries"].size(), 1u);
  EXPECT_EQ(stored["entries"][0]["strategy"], "exhaustive over --values buffers=2..3 --values tiles_in_block_k=1");
  fs::remove_all(dir);
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
    // blocked_mnk's own fits() pruned it: no run was started for it.
    std::string key = p["variant"].get<std::string>() + ":";
    for (const auto& [k, v] : p["params"].items()) key += (key.back() == ':' ? "" : ",") + k + "=" + v.get<std::string>();
    ASSERT_TRUE(fs::exists(out / "jobs")) << "no job ran at all";
    EXPECT_FALSE(fs::exists(out / "jobs" / key)) << key;
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
  r = run_tessera("tune --config small --kernel gemm --values buffers=0..2");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("tessera tune: kernel 'gemm': parameter buffers=0 is outside its legal range"));
  // A shard's --shard is checked as regress and sweep check theirs (runner::shard_option).
  r = run_tessera("tune --candidates candidates.json --shard 3/2");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("tessera tune: --shard 3/2: expected I/N with 1 <= I <= N <= 1000000"));
}

// A study point's search: its config overrides and held parameters go to
// every run, and the search finds the point's own best.
TEST_F(TuneTest, TuneCommandHoldsSetsAndParamsAtEveryPoint) {
  const fs::path out = fs::temp_directory_path() / fmt::format("tessera_tune_held_{}", ::getpid());
  fs::remove_all(out);
  const auto r = run_tessera(fmt::format("tune --config small --kernel gemm --variant blocked_mnk "
                                         "--shape M=64,N=128,K=128 --set sbuf.partition_kib=32 --param bk=2 "
                                         "--dtype fp8_e4m3 -j 2 --no-plots --out {}",
                                         out.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("(--set sbuf.partition_kib=32)"));
  const auto doc = read_json(out / "results.json");
  EXPECT_EQ(doc["overrides"], nlohmann::json::array({"sbuf.partition_kib=32"}));
  EXPECT_EQ(doc["dtype"], "fp8_e4m3");
  ASSERT_GT(doc["timed"].get<int>(), 1);
  for (const auto& p : doc["points"]) EXPECT_EQ(p["params"]["bk"], "2");
  // Every run had the override and the dtype: its resolved config and report say so.
  for (const auto& p : doc["points"]) {
    if (p["status"] != "timed") continue;
    std::string key = "blocked_mnk:";
    for (const auto& [k, v] : p["params"].items()) key += (key.back() == ':' ? "" : ",") + k + "=" + v.get<std::string>();
    const auto report = read_json(out / "jobs" / key / "report.json");
    EXPECT_EQ(report["dtype"], "fp8_e4m3") << key;
    std::ifstream cfg(out / "jobs" / key / "config.resolved.yaml");
    const std::string text((std::istreambuf_iterator<char>(cfg)), std::istreambuf_iterator<char>());
    EXPECT_THAT(text, ::testing::ContainsRegex("partition_kib: 32")) << key;
    break;
  }
  fs::remove_all(out);
}

TEST_F(TuneTest, TuneCommandRefusesToStoreASearchOfAChangedConfig) {
  auto r = run_tessera("tune --config small --kernel gemm --set sbuf.partition_kib=32 --update-db");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--update-db stores points of a shipped config's whole space in bf16"));
  r = run_tessera("tune --config small --kernel gemm --variant blocked_mnk --param bk=2 --values bk=1,2");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("hold a parameter or search it, not both"));
  r = run_tessera("tune --config small --kernel gemm --variant blocked_mnk --param bq=2");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("bq"));
}

// tessera run --retune: the search on the run's own config, then the run at
// its best point, which is no slower than the untuned run.
TEST_F(TuneTest, RunRetunesOnItsOwnConfigAndRunsTheBest) {
  const fs::path out = fs::temp_directory_path() / fmt::format("tessera_run_retune_{}", ::getpid());
  fs::remove_all(out);
  const std::string common =
      "run --config small --kernel gemm --variant blocked_mnk --shape M=64,N=128,K=256 --fidelity tlm --no-data "
      "--set sbuf.partition_kib=32 --json";
  const auto plain = run_tessera(common, "TESSERA_TUNING_DB=none");
  ASSERT_EQ(plain.status, 0) << plain.err;
  const auto r = run_tessera(fmt::format("{} --retune 30 --retune-jobs 2 --out {}", common, out.string()),
                             "TESSERA_TUNING_DB=none");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto report = nlohmann::json::parse(r.out);
  ASSERT_TRUE(report.contains("retune"));
  EXPECT_EQ(report["retune"]["budget"], 30);
  EXPECT_GT(report["retune"]["timed"].get<int>(), 1);
  const auto search = read_json(out / "retune" / "results.json");
  EXPECT_EQ(search["overrides"], nlohmann::json::array({"sbuf.partition_kib=32"}));
  // The run ran at the search's best, and took the time the search measured.
  EXPECT_EQ(report["retune"]["params"], search["best"]["params"]);
  EXPECT_DOUBLE_EQ(report["time_ns"].get<double>(), search["best"]["time_ns"].get<double>());
  EXPECT_LE(report["time_ns"].get<double>(), nlohmann::json::parse(plain.out)["time_ns"].get<double>());
  fs::remove_all(out);
}

TEST_F(TuneTest, RunRetuneRefusesWhatItCannotSearch) {
  auto r = run_tessera("run --config small --kernel gemm --retune 10 --cores 2");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--retune searches one core's parameters"));
  r = run_tessera("run --config small --kernel gemm --retune 10 --retune-jobs 0");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--retune-jobs: Value 0 not in range 1 to 1024"));
  // CLI11 reads -1 into an unsigned as its largest value: a range refuses it.
  r = run_tessera("run --config small --kernel gemm --retune -1");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--retune: Value -1 not in range 0 to 100000"));
  // Nothing fits at any tiling: the kernel's answer (exit 2, which a study
  // records as infeasible), not a failure.
  r = run_tessera("run --config small --kernel gemm --variant hoisted --shape M=256,N=512,K=4096 "
                  "--set sbuf.partition_kib=4 --no-data --retune 5");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--retune: no point of the search fits: gemm hoisted"));
  r = run_tessera("tune --config small --kernel gemm --budget -1");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--budget: Value -1 not in range 0 to 1000000"));
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


// --- the tuning database --------------------------------------------------------

namespace tdb {

using kernels::TuningDb;
using kernels::TuningEntry;

TuningEntry entry(const std::string& kernel, const std::string& variant, const std::string& config,
                  const kernels::Shape& shape, const std::map<std::string, std::string>& params, double time_ns) {
  TuningEntry e;
  e.kernel = kernel;
  e.variant = variant;
  e.config = config;
  e.shape = shape;
  e.params = params;
  e.time_ns = time_ns;
  return e;
}

TEST(TuningDb, BucketsRoundEachDimensionUpToAPowerOfTwo) {
  EXPECT_EQ(kernels::shape_bucket({{"M", 4096}, {"N", 3000}, {"K", 1}}), "K=1,M=4096,N=4096");
  EXPECT_EQ(kernels::shape_bucket({{"P", 0}}), "P=0");
}

TEST(TuningDb, SavesAndLoadsAndReplacesByKey) {
  const fs::path file = fs::temp_directory_path() / fmt::format("tessera_tuning_db_{}.json", ::getpid());
  TuningDb db;
  TuningEntry e = entry("gemm", "blocked_mnk", "small", {{"M", 64}, {"N", 128}, {"K", 128}}, {{"bm", "2"}}, 1000);
  db.put(e);
  e.params = {{"bm", "1"}};
  e.shape = {{"M", 60}, {"N", 128}, {"K", 128}};  // the same bucket: replaces
  db.put(e);
  ASSERT_EQ(db.entries().size(), 1u);
  db.save(file.string());
  const TuningDb back = TuningDb::load(file.string());
  ASSERT_EQ(back.entries().size(), 1u);
  const auto* found = back.find("gemm", "blocked_mnk", "small", {{"M", 33}, {"N", 100}, {"K", 128}});
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->params.at("bm"), "1");
  EXPECT_EQ(back.find("gemm", "blocked_mnk", "tiny", {{"M", 33}, {"N", 100}, {"K", 128}}), nullptr);
  EXPECT_EQ(TuningDb::load((file.string() + ".absent")).entries().size(), 0u);
  std::ofstream(file) << R"({"entries": [{"kernel": "gemm"}]})";
  try {
    TuningDb::load(file.string());
    ADD_FAILURE() << "a malformed entry was read";
  } catch (const kernels::TuningDbError& err) {
    EXPECT_THAT(err.what(), HasSubstr("entry 1"));
    EXPECT_THAT(err.what(), HasSubstr(file.string()));
  }
  fs::remove(file);
}

// Default runs read the database: what a run sets first, then the stored
// point, then the derived defaults; a stale entry is an error naming it.
TEST(TuningDb, DefaultRunsReadTheStoredPoint) {
  const fs::path file = fs::temp_directory_path() / fmt::format("tessera_tuning_read_{}.json", ::getpid());
  TuningDb db;
  TuningEntry e =
      entry("gemm", "blocked_mnk", "small", {{"M", 64}, {"N", 128}, {"K", 128}}, {{"bm", "1"}, {"bk", "3"}}, 1);
  db.put(e);
  e.variant = "blocked_mn";
  e.params = {{"bogus", "1"}};
  db.put(e);
  db.save(file.string());
  setenv("TESSERA_TUNING_DB", file.c_str(), 1);
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_DIR "/configs", 1);
  const auto& spec = kernels::kernel_named("gemm");
  const auto cfg = arch::load_config("small").hw;
  const kernels::Shape shape{{"M", 64}, {"N", 128}, {"K", 128}};
  auto p = kernels::resolve_params(spec, "blocked_mnk", cfg, shape, {});
  EXPECT_EQ(p.integer("bk"), 3);
  EXPECT_EQ(p.integer("bm"), 1);
  p = kernels::resolve_params(spec, "blocked_mnk", cfg, shape, {{"bk", std::int64_t{2}}});
  EXPECT_EQ(p.integer("bk"), 2);  // what the run sets wins
  EXPECT_EQ(p.choice("evacuate"), "vector");  // not stored: the default
  try {
    kernels::resolve_params(spec, "blocked_mn", cfg, shape, {});
    ADD_FAILURE() << "a stale entry was used";
  } catch (const tessera::KernelError& err) {
    EXPECT_THAT(err.what(), HasSubstr(file.string()));
    EXPECT_THAT(err.what(), HasSubstr("bogus"));
    EXPECT_THAT(err.what(), HasSubstr("--update-db"));
  }
  fs::remove(file);
}

// A stored point that does not fit the run's core, here v2's attention
// blocks on a what-if 256-wide array (a key block of 4 chunks is 1024 keys,
// one PSUM bank takes 512), gives way to the kernel's own defaults; on the
// generation it was tuned on it is used as stored.
TEST(TuningDb, AStoredPointThatDoesNotFitAChangedCoreGivesWayToTheDefaults) {
  const fs::path file = fs::temp_directory_path() / fmt::format("tessera_tuning_fit_{}.json", ::getpid());
  TuningDb db;
  const TuningEntry e =
      entry("attention", "flash", "neuroncore-v2", {{"S", 2048}, {"D", 128}, {"H", 8}},
            {{"key_chunks", "4"}, {"kv_sets", "2"}, {"rescale", "scalar"}, {"vector_pt_copies", "2"}}, 1);
  db.put(e);
  db.save(file.string());
  setenv("TESSERA_TUNING_DB", file.c_str(), 1);
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_DIR "/configs", 1);
  const auto& spec = kernels::kernel_named("attention");
  const kernels::Shape shape = e.shape;
  const auto v2 = arch::load_config("neuroncore-v2").hw;
  auto p = kernels::resolve_params(spec, "flash", v2, shape, {});
  EXPECT_EQ(p.integer("key_chunks"), 4);
  EXPECT_EQ(p.choice("rescale"), "scalar");
  std::vector<arch::Override> wide;
  for (const char* key : {"tensor.rows", "tensor.cols", "tensor.stationary_max_free", "sbuf.partitions",
                          "psum.partitions", "vector.lanes", "scalar.lanes"})
    wide.push_back({key, "256"});
  const auto v2_wide = arch::load_config("neuroncore-v2", wide).hw;
  ASSERT_EQ(v2_wide.name, v2.name);  // the same entry is found
  ASSERT_TRUE(spec.fits(v2_wide, kernels::KernelArgs{"flash", shape, p, 1, "bf16"}).has_value());
  p = kernels::resolve_params(spec, "flash", v2_wide, shape, {});
  EXPECT_EQ(p.integer("key_chunks"), 2);        // as many as one matmul and PSUM bank take
  EXPECT_EQ(p.choice("rescale"), "vector");     // the default, not the stored point's
  EXPECT_FALSE(spec.fits(v2_wide, kernels::KernelArgs{"flash", shape, p, 1, "bf16"}).has_value());
  fs::remove(file);
}

// A search cut short by its budget, which never timed the stored point,
// does not replace a stored point faster than its own best.
TEST_F(TuneTest, ASearchCutShortKeepsAFasterStoredPoint) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("tessera_tune_keep_{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "tuning.json").string();
  // The best of the space, stored by a whole search.
  auto r = run_tessera(fmt::format("tune --config small --kernel gemm --variant blocked_mnk --shape M=64,N=64,K=128 "
                                   "--strategy exhaustive -j 2 --no-plots --update-db --out {}",
                                   (dir / "whole").string()),
                       "TESSERA_TUNING_DB=" + db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto whole = read_json(db)["entries"][0];
  // An exhaustive search of two runs, which do not reach it.
  r = run_tessera(fmt::format("tune --config small --kernel gemm --variant blocked_mnk --shape M=64,N=64,K=128 "
                              "--strategy exhaustive --budget 2 -j 2 --no-plots --update-db --out {}",
                              (dir / "short").string()),
                  "TESSERA_TUNING_DB=" + db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto cut = read_json(dir / "short" / "results.json");
  // The first two points in grid order are small blocks, slower than the best.
  ASSERT_GT(cut["best"]["time_ns"].get<double>(), whole["time_ns"].get<double>());
  EXPECT_THAT(r.out, HasSubstr("kept gemm blocked_mnk's stored point"));
  EXPECT_EQ(read_json(db)["entries"][0]["params"], whole["params"]);
  fs::remove_all(dir);
}

TEST_F(TuneTest, UpdateDbStoresTheBestAndCheckDbHoldsItThenCatchesADrift) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("tessera_tune_db_{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "tuning.json").string();
  auto r = run_tessera(fmt::format("tune --config small --kernel gemm --variant blocked_mnk,naive "
                                   "--shape M=64,N=64,K=128 -j 2 --no-plots --update-db --out {}",
                                   (dir / "search").string()),
                       "TESSERA_TUNING_DB=" + db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto search = read_json(dir / "search" / "results.json");
  auto stored = read_json(db);
  ASSERT_EQ(stored["entries"].size(), 2u);  // blocked_mnk and naive (evacuate)
  for (const auto& e : stored["entries"]) {
    EXPECT_EQ(e["config"], "small");
    if (e["variant"] == "blocked_mnk") {
      EXPECT_EQ(e["time_ns"], search["best"]["time_ns"]);
    }
  }
  r = run_tessera(fmt::format("tune --check-db -j 2 --out {}", (dir / "check").string()), "TESSERA_TUNING_DB=" + db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("every stored time holds"));
  // A stored time the model no longer gives.
  stored["entries"][0]["time_ns"] = stored["entries"][0]["time_ns"].get<double>() * 1.5;
  std::ofstream(db) << stored.dump();
  r = run_tessera(fmt::format("tune --check-db -j 2 --out {}", (dir / "check2").string()), "TESSERA_TUNING_DB=" + db);
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("MOVED"));
  EXPECT_THAT(r.err, HasSubstr("--update-times"));
  r = run_tessera(fmt::format("tune --check-db --update-times -j 2 --out {}", (dir / "check3").string()),
                  "TESSERA_TUNING_DB=" + db);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  r = run_tessera(fmt::format("tune --check-db -j 2 --out {}", (dir / "check4").string()), "TESSERA_TUNING_DB=" + db);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  // --all retunes what the database holds, here on one more config.
  r = run_tessera(fmt::format("tune --all --configs tiny --budget 20 -j 2 --no-plots --out {}", (dir / "all").string()),
                  "TESSERA_TUNING_DB=" + db);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  stored = read_json(db);
  std::set<std::string> configs;
  for (const auto& e : stored["entries"]) configs.insert(e["config"].get<std::string>());
  EXPECT_EQ(configs, (std::set<std::string>{"small", "tiny"}));
  fs::remove_all(dir);
}

}  // namespace tdb

}  // namespace
}  // namespace tessera::cli::tune
