#include "files.h"
#include "profile_page.h"
#include "process.h"
#include "commands.h"
#include "job_runner.h"
#include "runner.h"
#include "slurm.h"
#include "registry_kernels.h"

#include "arch/config.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using runner::Job;
using runner::JobResult;
using runner::Status;

struct SweepOptions {
  std::string study, out, shard, html;
  std::vector<std::string> kernels;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool no_data = false, no_plots = false, dry_run = false;
  slurm::SubmitOptions submit;
};

const char* kSweep = "tessera sweep";

// scripts/plot-study of this source tree, unless TESSERA_PLOT_SCRIPT names another.
std::string plot_script() {
  if (const char* s = std::getenv("TESSERA_PLOT_SCRIPT")) return s;
  return std::string(TESSERA_SOURCE_DIR) + "/scripts/plot-study";
}

// A point is answered when it ran (pass) or its kernel does not fit the
// config (infeasible); anything else (fail, timeout, crash, missing) failed.
bool answered(Status s) { return s == Status::Pass || s == Status::Infeasible; }

// One line per finished point, on a local run and while following Slurm,
// and a line when Slurm's state changes.
class PointReporter : public runner::Reporter {
public:
  explicit PointReporter(std::size_t total) : total_(total) {}
  void job_done(const JobResult& r) override {
    // A shard's result.json holds its run's status, before the shard maps
    // bad input to infeasible.
    fmt::print("[{}/{}] {} {} ({:.1f} s)\n", ++done_, total_,
               r.status == Status::Error ? "infeasible" : to_string(r.status), r.job.id, r.wall_seconds);
    std::fflush(stdout);
  }
  void tick(const std::string& note) override {
    if (note.empty() || note == last_note_) return;
    fmt::print("{}\n", note);
    std::fflush(stdout);
    last_note_ = note;
  }
  void finish() override {}

private:
  std::size_t total_, done_ = 0;
  std::string last_note_;
};

sweep::Study load(const std::string& path, const std::vector<std::string>& kernels, bool no_data) {
  sweep::Study study = sweep::load_study(path, std::set<std::string>(kernels.begin(), kernels.end()));
  if (no_data) study.no_data = true;
  return study;
}

// A study as a flow of the sharded runner. Its plan: the study file and
// name, --kernels, --no-data and --no-plots.
class StudyFlow : public runner::Flow {
public:
  StudyFlow() = default;
  // A flow over a study already loaded (a local run).
  explicit StudyFlow(const sweep::Study& study) : grid_(Grid{study, sweep::expand(study)}) {}

  std::string name() const override { return "sweep"; }
  std::string noun() const override { return "point"; }
  std::string slurm_name(const nlohmann::json& plan) const override {
    return "tessera-sweep-" + plan.at("study_name").get<std::string>();
  }
  std::vector<std::string> outputs() const override { return {"results.csv", "results.json", "plots"}; }
  std::vector<Job> jobs(const nlohmann::json& plan) const override {
    std::vector<Job> jobs;
    for (const auto& p : grid(plan).points) jobs.push_back(p.job);
    return jobs;
  }
  std::vector<std::string> shard_args(const nlohmann::json& plan) const override {
    std::vector<std::string> args = {plan.at("study")};
    if (!plan.at("kernels").empty()) args.insert(args.end(), {"--kernels", fmt::format("{}", fmt::join(plan["kernels"], ","))});
    if (plan.value("no_data", false)) args.push_back("--no-data");
    // A shard draws no plots: the merge draws them once from the whole grid.
    args.push_back("--no-plots");
    return args;
  }
  // The points of a results.json that are among `jobs`.
  std::vector<JobResult> read_results(const fs::path& dir, const std::vector<Job>& jobs) const override {
    std::map<std::string, const Job*> by_id;
    for (const auto& j : jobs) by_id[j.id] = &j;
    std::vector<JobResult> results;
    const nlohmann::json shard = nlohmann::json::parse(read_file(dir / "results.json"));
    for (const auto& row : shard.at("points")) {
      const auto j = by_id.find(row.at("id").get<std::string>());
      if (j == by_id.end()) continue;  // not a point of this shard: the study changed since
      JobResult r;
      r.job = *j->second;
      const auto status = runner::parse_status(row.at("status"));
      if (!status) throw std::runtime_error(fmt::format("{}: unknown status {}", (dir / "results.json").string(), row.at("status").dump()));
      r.status = *status;
      r.message = row.value("message", "");
      r.wall_seconds = row.value("wall_seconds", 0.0);
      r.report = row.value("report", nlohmann::json::object());
      results.push_back(std::move(r));
    }
    return results;
  }
  // results.csv, results.json and (unless no_plots) the plots, for the
  // points of `results` in grid order: the same files from a local run, a
  // shard and the merge of a Slurm run.
  int write_outputs(const nlohmann::json& plan, const std::vector<JobResult>& results,
                    const fs::path& out) const override {
    const Grid& g = grid(plan);
    std::set<std::string> ran;
    for (const auto& r : results) ran.insert(r.job.id);
    std::vector<sweep::Point> points;
    for (const auto& p : g.points)
      if (ran.count(p.job.id)) points.push_back(p);
    write_file(out / "results.csv", sweep::results_csv(g.study, points, results));
    const nlohmann::json all = sweep::results_json(g.study, points, results);
    write_file(out / "results.json", all.dump(2) + "\n");
    if (const std::string html = plan.value("html", ""); !html.empty()) {
      write_page(html, sweep_page(fmt::format("sweep {}", g.study.name), all));
      std::cerr << fmt::format("{}: page {}\n", kSweep, html);
    }
    std::size_t failed = 0;
    for (const auto& r : results) {
      if (r.status == Status::Pass) continue;
      failed += !answered(r.status);
      std::cerr << fmt::format("{}: {} {}: {}\n", kSweep, to_string(r.status), r.job.id, r.message);
    }
    fmt::print("results: {} and {}\n", (out / "results.csv").string(), (out / "results.json").string());
    int status = failed ? 1 : 0;
    if (!plan.value("no_plots", false)) {
      const std::vector<std::string> cmd = {plot_script(), (out / "results.json").string(), "--out",
                                            (out / "plots").string()};
      if (run_program(cmd) != 0) {
        std::cerr << fmt::format("{}: plotting failed ({}); the results are written\n", kSweep, fmt::join(cmd, " "));
        status = 1;
      }
    }
    if (failed) std::cerr << fmt::format("{}: {} of {} points failed\n", kSweep, failed, results.size());
    return status;
  }
  void print_merged(const nlohmann::json& plan, const std::vector<JobResult>& results,
                    const fs::path& out) const override {
    const std::size_t failed =
        std::count_if(results.begin(), results.end(), [](const JobResult& r) { return !tessera::cli::answered(r.status); });
    fmt::print("results: {} and {}{}\n", (out / "results.csv").string(), (out / "results.json").string(),
               plan.value("no_plots", false) ? "" : fmt::format(", plots in {}", (out / "plots").string()));
    if (failed)
      fmt::print("{} of {} points failed (merge log: {})\n", failed, results.size(),
                 (out / "slurm" / "merge.log").string());
  }
  std::unique_ptr<runner::Reporter> reporter(std::size_t total) const override {
    return std::make_unique<PointReporter>(total);
  }
  bool answered(Status s) const override { return tessera::cli::answered(s); }
  // The merge job plots with the same script as this submission.
  std::map<std::string, std::string> environment() const override {
    if (const char* s = std::getenv("TESSERA_PLOT_SCRIPT")) return {{"TESSERA_PLOT_SCRIPT", s}};
    return {};
  }

private:
  struct Grid {
    sweep::Study study;
    std::vector<sweep::Point> points;
  };
  // The study of a plan, loaded and expanded once.
  const Grid& grid(const nlohmann::json& plan) const {
    if (!grid_) {
      sweep::Study study = load(plan.at("study"), plan.at("kernels").get<std::vector<std::string>>(),
                                plan.value("no_data", false));
      grid_ = Grid{study, sweep::expand(study)};
    }
    return *grid_;
  }
  mutable std::optional<Grid> grid_;
};

nlohmann::json study_plan(const sweep::Study& study, const SweepOptions& o) {
  return {{"study", fs::absolute(o.study).lexically_normal().string()},
          {"study_name", study.name},
          {"kernels", o.kernels},
          {"no_data", o.no_data},
          {"no_plots", o.no_plots},
          {"html", o.html.empty() ? "" : fs::absolute(o.html).lexically_normal().string()}};
}

int run_sweep(const SweepOptions& o) {
  if (!o.submit.rerun_failed.empty()) return runner::rerun_failed(StudyFlow(), o.submit);
  if (o.study.empty()) {
    std::cerr << fmt::format("{}: a study file is required (or: tessera sweep merge --plan DIR)\n", kSweep);
    return kExitBadInput;
  }
  const bool slurm = o.submit.enabled || !o.submit.emit_sbatch.empty();
  int index = 1, count = 1;
  if (!runner::shard_option(StudyFlow(), "study", o.shard, slurm, &index, &count)) return kExitBadInput;
  const sweep::Study study = load(o.study, o.kernels, o.no_data);
  const StudyFlow flow(study);
  const std::vector<Job> all = flow.jobs(study_plan(study, o));
  const fs::path out = o.out.empty() ? fs::path("out") / "sweep" / study.name : fs::path(o.out);
  if (slurm && !o.dry_run) return runner::submit(flow, study_plan(study, o), all.size(), out, o.submit);
  const std::vector<Job> jobs = runner::shard_of(all, index, count);
  if (o.dry_run) {
    for (const auto& j : jobs) fmt::print("{}\n", j.id);
    return 0;
  }
  fs::create_directories(out);
  fmt::print("{}: {} point{}{} on {} ({}{}), {} at a time\n", study.name, jobs.size(), jobs.size() == 1 ? "" : "s",
             count > 1 ? fmt::format(" (shard {} of {})", index, count) : "",
             study.base.empty() ? "each point's config" : study.base, study.fidelity,
             study.no_data ? ", timing only" : "", o.jobs);
  std::fflush(stdout);
  bool interrupted = false;
  auto results = runner::run_here(flow, jobs, o.jobs, out, &interrupted);
  // The study was checked before it ran, so a run refused as bad input is a
  // kernel that does not fit the point (tiles overflow SBUF, say): an answer
  // of the study, not a failure of the sweep.
  for (auto& r : results)
    if (r.status == Status::Error) r.status = Status::Infeasible;
  const int status = flow.write_outputs(study_plan(study, o), results, out);
  return interrupted ? runner::interrupted_exit(flow) : status;
}

}  // namespace

void add_sweep_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "Run a what-if study: a grid of config changes x kernels, here or on Slurm");
  cmd->add_option("study", o->study, "Study file (configs/studies/*.yaml)");
  auto plan = std::make_shared<std::string>();
  CLI::App* merge_cmd =
      cmd->add_subcommand("merge", "Combine the shards of a --slurm run into its results and plots (its merge job)");
  merge_cmd->add_option("--plan", *plan, "The --out folder of the --slurm run")->required();
  merge_cmd->callback([plan, exit_code] {
    try {
      *exit_code = runner::merge_plan(StudyFlow(), *plan);
    } catch (const std::exception& e) {
      std::cerr << "tessera sweep merge: " << e.what() << '\n';
      *exit_code = kExitBadInput;
    }
  });
  cmd->add_option("-j,--jobs", o->jobs, "Runs at a time (default: the core count)")
      ->check(CLI::Range(1, runner::kMaxParallel));
  cmd->add_option("--out", o->out, "Output folder (default: out/sweep/<study>)");
  cmd->add_flag("--no-data", o->no_data, "Timing only: skip the arithmetic (same cycles)");
  cmd->add_option("--kernels", o->kernels, "Run only these kernels of the study (the others are not checked)")
      ->delimiter(',');
  cmd->add_flag("--no-plots", o->no_plots, "Write results.csv and results.json only");
  cmd->add_option("--html", o->html, "Also write the results as a page here (one HTML file, no network)");
  cmd->add_flag("--dry-run", o->dry_run, "Check the study and list its points without running them");
  cmd->add_option("--shard", o->shard, "Run the deterministic shard I of N of the grid (I/N)");
  slurm::add_submit_options(*cmd, o->submit,
                            {"sweep", "point", "Follow the jobs point by point; exit with the sweep's status"});
  cmd->callback([o, exit_code, cmd] {
    if (cmd->got_subcommand("merge")) return;
    try {
      *exit_code = run_sweep(*o);
    } catch (const sweep::StudyError& e) {
      std::cerr << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const slurm::SlurmError& e) {
      std::cerr << kSweep << ": " << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const FileError& e) {
      std::cerr << kSweep << ": " << e.what() << '\n';
      *exit_code = kExitBadInput;
    }
  });
}

}  // namespace tessera::cli
