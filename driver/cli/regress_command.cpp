#include "commands.h"
#include "job_runner.h"
#include "regress.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using regress::Job;
using regress::JobResult;

struct RegressOptions {
  std::string suite, group, filter, shard, out = "out/regress", baseline;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool update_baseline = false;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<JobResult> run_jobs(const std::vector<Job>& jobs, const RegressOptions& o) {
  std::size_t done = 0, passed = 0;
  const auto t0 = std::chrono::steady_clock::now();
  return regress::run_jobs(jobs, o.jobs, o.out, [&](const JobResult& r) {
    ++done;
    passed += r.status == "pass";
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("[{}/{}] {} {} ({:.1f} s; {} passed, {} failed, {:.0f} s elapsed)\n", done, jobs.size(), r.status,
               r.job.id, r.wall_seconds, passed, done - passed, elapsed);
    std::fflush(stdout);
  });
}

// results.json, junit.xml and summary.md; true when every job passed.
bool write_outputs(const std::string& suite, const std::vector<JobResult>& results, const std::string& out) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& r : results)
    all.push_back({{"suite", suite}, {"id", r.job.id}, {"test", r.job.test}, {"status", r.status},
                   {"message", r.message}, {"wall_seconds", r.wall_seconds}, {"report", r.report}});
  std::ofstream(fs::path(out) / "results.json") << all.dump(2) << '\n';
  std::ofstream(fs::path(out) / "junit.xml") << regress::junit_xml(suite, results);
  const std::string summary = regress::summary_markdown(suite, results);
  std::ofstream(fs::path(out) / "summary.md") << summary;
  std::cout << '\n' << summary;
  return std::all_of(results.begin(), results.end(), [](const JobResult& r) { return r.status == "pass"; });
}

int run_suite(const RegressOptions& o) {
  const regress::Suite suite = regress::load_suite(o.suite);
  int index = 1, count = 1;
  if (!o.shard.empty() && (std::sscanf(o.shard.c_str(), "%d/%d", &index, &count) != 2 || count < 1 || index < 1 ||
                           index > count)) {
    std::cerr << fmt::format("tessera regress: --shard {}: expected I/N with 1 <= I <= N\n", o.shard);
    return kExitBadInput;
  }
  const auto jobs = regress::select(suite, o.group, o.filter, index, count);
  if (jobs.empty()) {
    std::cerr << fmt::format("tessera regress: no job of {} matches (group '{}', filter '{}')\n", o.suite, o.group,
                             o.filter);
    return kExitBadInput;
  }
  fs::create_directories(o.out);
  fmt::print("{}: {} jobs, {} at a time\n", suite.name, jobs.size(), o.jobs);
  std::vector<JobResult> results = run_jobs(jobs, o);

  const fs::path baseline = o.baseline.empty()
                                ? fs::path(o.suite).parent_path() / "baselines" / (suite.name + ".json")
                                : fs::path(o.baseline);
  if (o.update_baseline) {
    fs::create_directories(baseline.parent_path());
    std::ofstream(baseline) << regress::make_baseline(results).dump(2) << '\n';
    fmt::print("baseline written: {}\n", baseline.string());
  } else if (fs::exists(baseline)) {
    regress::compare_to_baseline(results, nlohmann::json::parse(read_file(baseline)));
  }

  return write_outputs(suite.name, results, o.out) ? 0 : 1;
}

// Combines the outputs of shards (--shard I/N runs) into one result set, as
// an unsharded run would have written it.
int merge(const std::vector<std::string>& dirs, const std::string& out) {
  std::vector<JobResult> results;
  std::set<std::string> ids;
  std::string suite;
  for (const auto& dir : dirs) {
    const fs::path file = fs::path(dir) / "results.json";
    if (!fs::exists(file)) {
      std::cerr << fmt::format("tessera regress merge: {} has no results.json\n", dir);
      return kExitBadInput;
    }
    for (const auto& j : nlohmann::json::parse(read_file(file))) {
      JobResult r;
      r.job.id = j.at("id");
      r.job.test = j.value("test", std::string());
      r.status = j.at("status");
      r.message = j.value("message", std::string());
      r.wall_seconds = j.value("wall_seconds", 0.0);
      r.report = j.value("report", nlohmann::json::object());
      if (!ids.insert(r.job.id).second) {
        std::cerr << fmt::format("tessera regress merge: job {} appears in two shards\n", r.job.id);
        return kExitBadInput;
      }
      suite = j.value("suite", suite);
      results.push_back(r);
    }
  }
  std::sort(results.begin(), results.end(), [](const JobResult& a, const JobResult& b) { return a.job.id < b.job.id; });
  fs::create_directories(out);
  return write_outputs(suite, results, out) ? 0 : 1;
}

}  // namespace

void add_regress_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<RegressOptions>();
  CLI::App* cmd = app.add_subcommand("regress", "Run a regression suite, one process per job");
  cmd->add_option("suite", o->suite, "Suite file (regressions/*.yaml)");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto merge_out = std::make_shared<std::string>("out/regress");
  CLI::App* merge_cmd = cmd->add_subcommand("merge", "Combine the output folders of shards into one result set");
  merge_cmd->add_option("dirs", *dirs, "Shard output folders")->required();
  merge_cmd->add_option("--out", *merge_out, "Output folder")->capture_default_str();
  merge_cmd->callback([dirs, merge_out, exit_code] { *exit_code = merge(*dirs, *merge_out); });
  cmd->add_option("--group", o->group, "Only jobs of this group (smoke, nightly, rtl, ...)");
  cmd->add_option("-j,--jobs", o->jobs, "Jobs at a time (default: the core count)");
  cmd->add_option("--shard", o->shard, "Run the deterministic shard I of N (I/N)");
  cmd->add_option("--filter", o->filter, "Only jobs whose id matches this glob");
  cmd->add_option("--out", o->out, "Output folder")->capture_default_str();
  cmd->add_option("--baseline", o->baseline, "Baseline file (default: regressions/baselines/<suite>.json)");
  cmd->add_flag("--update-baseline", o->update_baseline, "Write this run's times as the baseline");
  cmd->callback([o, exit_code, cmd] {
    if (cmd->got_subcommand("merge")) return;
    if (o->suite.empty()) {
      std::cerr << "tessera regress: a suite file is required (or: tessera regress merge DIR...)\n";
      *exit_code = kExitBadInput;
      return;
    }
    try {
      *exit_code = run_suite(*o);
    } catch (const regress::SuiteError& e) {
      std::cerr << e.what() << '\n';
      *exit_code = kExitBadInput;
    }
  });
}

}  // namespace tessera::cli
