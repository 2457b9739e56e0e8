#include "commands.h"
#include "job_runner.h"
#include "study.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;

struct SweepOptions {
  std::string study, out;
  std::vector<std::string> kernels;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool no_data = false, no_plots = false, dry_run = false;
};

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// scripts/plot-study of this source tree, unless TESSERA_PLOT_SCRIPT names another.
std::string plot_script() {
  if (const char* s = std::getenv("TESSERA_PLOT_SCRIPT")) return s;
  return std::string(TESSERA_SOURCE_DIR) + "/scripts/plot-study";
}

int run_sweep(const SweepOptions& o) {
  sweep::Study study = sweep::load_study(o.study, std::set<std::string>(o.kernels.begin(), o.kernels.end()));
  if (o.no_data) study.no_data = true;
  const std::vector<sweep::Point> points = sweep::expand(study);
  if (o.dry_run) {
    for (const auto& p : points) fmt::print("{}\n", p.job.id);
    return 0;
  }
  const std::string out = o.out.empty() ? (fs::path("out") / "sweep" / study.name).string() : o.out;
  fs::create_directories(out);
  std::vector<regress::Job> jobs;
  for (const auto& p : points) jobs.push_back(p.job);
  fmt::print("{}: {} points on {} ({}{}), {} at a time\n", study.name, jobs.size(), study.base, study.fidelity,
             study.no_data ? ", timing only" : "", o.jobs);
  std::size_t done = 0;
  auto results = regress::run_jobs(jobs, o.jobs, out, [&](const regress::JobResult& r) {
    fmt::print("[{}/{}] {} {} ({:.1f} s)\n", ++done, jobs.size(), r.status == "error" ? "infeasible" : r.status,
               r.job.id, r.wall_seconds);
    std::fflush(stdout);
  });
  // The study was checked before it ran, so a run refused as bad input is a
  // kernel that does not fit the point (tiles overflow SBUF, say): an answer
  // of the study, not a failure of the sweep.
  for (auto& r : results)
    if (r.status == "error") r.status = "infeasible";
  std::ofstream(fs::path(out) / "results.csv") << sweep::results_csv(study, points, results);
  std::ofstream(fs::path(out) / "results.json") << sweep::results_json(study, points, results).dump(2) << '\n';
  std::size_t failed = 0;
  for (const auto& r : results) {
    if (r.status == "pass") continue;
    failed += r.status != "infeasible";
    std::cerr << fmt::format("tessera sweep: {} {}: {}\n", r.status, r.job.id, r.message);
  }
  fmt::print("results: {} and {}\n", (fs::path(out) / "results.csv").string(), (fs::path(out) / "results.json").string());
  int status = failed ? 1 : 0;
  if (!o.no_plots) {
    const std::string cmd = fmt::format("{} {} --out {}", shell_quote(plot_script()),
                                        shell_quote((fs::path(out) / "results.json").string()),
                                        shell_quote((fs::path(out) / "plots").string()));
    const int rc = std::system(cmd.c_str());
    if (rc != 0) {
      std::cerr << fmt::format("tessera sweep: plotting failed ({}); the results are written\n", cmd);
      status = 1;
    }
  }
  if (failed) std::cerr << fmt::format("tessera sweep: {} of {} points failed\n", failed, results.size());
  return status;
}

}  // namespace

void add_sweep_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "Run a what-if study: a grid of config changes x kernels");
  cmd->add_option("study", o->study, "Study file (configs/studies/*.yaml)")->required();
  cmd->add_option("-j,--jobs", o->jobs, "Runs at a time (default: the core count)");
  cmd->add_option("--out", o->out, "Output folder (default: out/sweep/<study>)");
  cmd->add_flag("--no-data", o->no_data, "Timing only: skip the arithmetic (same cycles)");
  cmd->add_option("--kernels", o->kernels, "Run only these kernels of the study (the others are not checked)")
      ->delimiter(',');
  cmd->add_flag("--no-plots", o->no_plots, "Write results.csv and results.json only");
  cmd->add_flag("--dry-run", o->dry_run, "Check the study and list its points without running them");
  cmd->callback([o, exit_code] {
    try {
      *exit_code = run_sweep(*o);
    } catch (const sweep::StudyError& e) {
      std::cerr << e.what() << '\n';
      *exit_code = kExitBadInput;
    }
  });
}

}  // namespace tessera::cli
