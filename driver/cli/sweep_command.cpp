#include "commands.h"
#include "job_runner.h"
#include "slurm.h"
#include "study.h"

#include "arch/config.h"

#include <fmt/format.h>

#include <cstdlib>
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

struct SweepOptions {
  std::string study, out, shard;
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

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A point is answered when it ran (pass) or its kernel does not fit the
// config (infeasible); anything else (fail, timeout, crash, missing) failed.
bool answered(const std::string& status) { return status == "pass" || status == "infeasible"; }

// One line per finished point, on a local run and while following Slurm.
void print_point(const regress::JobResult& r, std::size_t done, std::size_t total) {
  fmt::print("[{}/{}] {} {} ({:.1f} s)\n", done, total, r.status == "error" ? "infeasible" : r.status, r.job.id,
             r.wall_seconds);
  std::fflush(stdout);
}

const char* kOutputs[] = {"results.csv", "results.json"};

void remove_outputs(const fs::path& out) {
  for (const char* f : kOutputs) fs::remove(out / f);
  fs::remove_all(out / "plots");
}

// results.csv, results.json and (unless no_plots) the plots: the same files
// from a local run, a shard and the merge of a Slurm run. The sweep's status.
int write_outputs(const sweep::Study& study, const std::vector<sweep::Point>& points,
                  const std::vector<regress::JobResult>& results, const fs::path& out, bool no_plots) {
  std::ofstream(out / "results.csv") << sweep::results_csv(study, points, results);
  std::ofstream(out / "results.json") << sweep::results_json(study, points, results).dump(2) << '\n';
  std::size_t failed = 0;
  for (const auto& r : results) {
    if (r.status == "pass") continue;
    failed += !answered(r.status);
    std::cerr << fmt::format("{}: {} {}: {}\n", kSweep, r.status, r.job.id, r.message);
  }
  fmt::print("results: {} and {}\n", (out / "results.csv").string(), (out / "results.json").string());
  int status = failed ? 1 : 0;
  if (!no_plots) {
    const std::string cmd = fmt::format("{} {} --out {}", slurm::shell_quote(plot_script()),
                                        slurm::shell_quote((out / "results.json").string()),
                                        slurm::shell_quote((out / "plots").string()));
    std::fflush(stdout);
    const int rc = std::system(cmd.c_str());
    if (rc != 0) {
      std::cerr << fmt::format("{}: plotting failed ({}); the results are written\n", kSweep, cmd);
      status = 1;
    }
  }
  if (failed) std::cerr << fmt::format("{}: {} of {} points failed\n", kSweep, failed, results.size());
  return status;
}

sweep::Study load(const std::string& path, const std::vector<std::string>& kernels, bool no_data) {
  sweep::Study study = sweep::load_study(path, std::set<std::string>(kernels.begin(), kernels.end()));
  if (no_data) study.no_data = true;
  return study;
}

// ---- Slurm: the grid as a job array of shards plus a merge job -----------

slurm::ArrayJob array_job(const nlohmann::json& plan) {
  const fs::path out = plan.at("out").get<std::string>();
  const std::string tessera = slurm::shell_quote(plan.at("tessera"));
  const int shards = plan.at("shards");
  std::string select;
  if (!plan.at("kernels").empty())
    select += " --kernels " + slurm::shell_quote(fmt::format("{}", fmt::join(plan["kernels"], ",")));
  if (plan.value("no_data", false)) select += " --no-data";
  slurm::ArrayJob job;
  job.name = "tessera-sweep-" + plan.at("study_name").get<std::string>();
  job.out = out;
  job.shards = shards;
  // A shard draws no plots: the merge draws them once from the whole grid.
  job.shard_command = fmt::format(
      "exec {} sweep {} --shard \"$TESSERA_SHARD/{}\" -j \"$TESSERA_CPUS\"{} --no-plots --out {}/\"$TESSERA_SHARD\"",
      tessera, slurm::shell_quote(plan.at("study")), shards, select, slurm::shell_quote((out / "shards").string()));
  job.merge_command = fmt::format("exec {} sweep merge --plan {}", tessera, slurm::shell_quote(out.string()));
  slurm::schedule(job, plan.at("scheduling"));
  // Jobs on the nodes read the same configs (and plot with the same script)
  // as this submission.
  job.env["TESSERA_CONFIG_DIR"] = arch::config_dir();
  if (const char* s = std::getenv("TESSERA_PLOT_SCRIPT")) job.env["TESSERA_PLOT_SCRIPT"] = s;
  return job;
}

nlohmann::json read_plan(const fs::path& out, const std::string& given, const std::string& option) {
  if (!fs::exists(slurm::plan_file(out)))
    throw slurm::SlurmError(fmt::format("{} {}: no slurm/plan.json there; it takes the --out folder of a "
                                        "'tessera sweep --slurm' run",
                                        option, given));
  nlohmann::json plan = nlohmann::json::parse(read_file(slurm::plan_file(out)));
  if (plan.value("runner", "") != "sweep")
    throw slurm::SlurmError(fmt::format("{} {}: this is the folder of a 'tessera regress --slurm' run, not of a "
                                        "sweep (use tessera regress)",
                                        option, given));
  return plan;
}

// The points of a shard's results.json, as the results of its jobs.
std::vector<regress::JobResult> shard_results(const fs::path& file, const std::vector<sweep::Point>& points) {
  std::map<std::string, const sweep::Point*> by_id;
  for (const auto& p : points) by_id[p.job.id] = &p;
  std::vector<regress::JobResult> results;
  const nlohmann::json shard = nlohmann::json::parse(read_file(file));
  for (const auto& row : shard.at("points")) {
    const auto p = by_id.find(row.at("id").get<std::string>());
    if (p == by_id.end()) continue;  // not a point of this shard: the study changed since
    regress::JobResult r;
    r.job = p->second->job;
    r.status = row.at("status");
    r.message = row.value("message", "");
    r.wall_seconds = row.value("wall_seconds", 0.0);
    r.report = row.value("report", nlohmann::json::object());
    results.push_back(std::move(r));
  }
  return results;
}

// Shards whose task left no results, or results with a point that failed.
std::vector<int> failed_shards(const fs::path& out, int shards) {
  std::vector<int> failed;
  for (int i = 1; i <= shards; ++i) {
    const fs::path file = slurm::shard_dir(out, i) / "results.json";
    bool ok = fs::exists(file);
    if (ok) {
      const nlohmann::json shard = nlohmann::json::parse(read_file(file));
      for (const auto& row : shard.at("points")) ok = ok && answered(row.at("status"));
    }
    if (!ok) failed.push_back(i);
  }
  return failed;
}

// Follows a submission, one line per point as its result appears in a shard
// folder (as a local run prints them), then reports shards that left no
// results. The sweep's status.
int follow_sweep(const fs::path& out, const nlohmann::json& plan, double start_timeout_s) {
  const int shards = plan.at("shards");
  const std::string array_id = plan.at("array_id"), merge_id = plan.at("merge_id");
  const std::size_t total = plan.at("points");
  std::size_t done = 0;
  std::string last_note;
  const slurm::States last_seen = slurm::follow_shards(
      out, shards, array_id, merge_id, start_timeout_s,
      [&](const fs::path& file) {
        try {
          print_point(regress::result_from_json(nlohmann::json::parse(read_file(file))), ++done, total);
          return true;
        } catch (const nlohmann::json::exception&) {
          return false;  // still being written: read on the next poll
        }
      },
      [&](const std::string& note) {
        if (note == last_note) return;
        fmt::print("Slurm: {}\n", note);
        std::fflush(stdout);
        last_note = note;
      });
  slurm::report_missing_shards(out, shards, array_id, last_seen);
  if (!fs::exists(out / "results.json")) {
    fmt::print("{}: the merge job {} wrote no results; its log {}:\n{}\n", kSweep, merge_id,
               (out / "slurm" / "merge.log").string(), slurm::tail(out / "slurm" / "merge.log"));
    return 1;
  }
  std::size_t failed = 0, points = 0;
  const nlohmann::json merged = nlohmann::json::parse(read_file(out / "results.json"));
  for (const auto& row : merged.at("points")) {
    ++points;
    failed += !answered(row.at("status"));
  }
  fmt::print("results: {} and {}{}\n", (out / "results.csv").string(), (out / "results.json").string(),
             plan.value("no_plots", false) ? "" : fmt::format(", plots in {}", (out / "plots").string()));
  if (failed) fmt::print("{} of {} points failed (merge log: {})\n", failed, points, (out / "slurm" / "merge.log").string());
  // With every point answered, a merge that did not complete failed to plot.
  const auto merge = last_seen.find("merge");
  if (!failed && merge != last_seen.end() && merge->second.first != "COMPLETED") {
    fmt::print("{}: the merge job {} ended {}; its log {}:\n{}\n", kSweep, merge_id, merge->second.first,
               (out / "slurm" / "merge.log").string(), slurm::tail(out / "slurm" / "merge.log"));
    return 1;
  }
  return failed ? 1 : 0;
}

int submit_and_follow(const fs::path& out, nlohmann::json& plan, slurm::ArrayJob job, const SweepOptions& o,
                      const std::string& what) {
  const auto submitted = slurm::submit(job);
  plan["array_id"] = submitted.first;
  plan["merge_id"] = submitted.second;
  std::ofstream(slurm::plan_file(out)) << plan.dump(2) << '\n';
  fmt::print("{}: Slurm job array {} ({}), merge job {}; results in {}\n", kSweep, submitted.first, what,
             submitted.second, out.string());
  std::fflush(stdout);
  if (!o.submit.wait) {
    fmt::print("follow with: squeue -j {},{}\n", submitted.first, submitted.second);
    return 0;
  }
  return follow_sweep(out, plan, o.submit.start_timeout_s);
}

int submit_sweep(const sweep::Study& study, std::size_t points, const SweepOptions& o) {
  const fs::path out = fs::absolute(o.out.empty() ? fs::path("out") / "sweep" / study.name : fs::path(o.out))
                           .lexically_normal();
  const int shards = o.submit.shards > 0 ? std::min<int>(o.submit.shards, static_cast<int>(points))
                                  : std::min<int>(32, static_cast<int>(points));
  nlohmann::json plan = {{"runner", "sweep"},
                         {"study", fs::absolute(o.study).lexically_normal().string()},
                         {"study_name", study.name},
                         {"kernels", o.kernels},
                         {"no_data", o.no_data},
                         {"no_plots", o.no_plots},
                         {"shards", shards},
                         {"points", points},
                         {"out", out.string()},
                         {"tessera", regress::self_exe()},
                         {"scheduling", slurm::scheduling(o.submit)}};
  // A fresh submission: nothing of an earlier one may be merged into it.
  fs::remove_all(out / "shards");
  fs::remove_all(out / "slurm");
  remove_outputs(out);
  fs::create_directories(out / "slurm");
  for (int i = 1; i <= shards; ++i) fs::create_directories(slurm::shard_dir(out, i));
  std::ofstream(slurm::plan_file(out)) << plan.dump(2) << '\n';
  if (!o.submit.emit_sbatch.empty()) {
    std::ofstream(o.submit.emit_sbatch) << slurm::submit_script(array_job(plan));
    fmt::print("{}: wrote {} ({} points in {} shards; {} is prepared for it); submit with: bash {}\n", kSweep,
               o.submit.emit_sbatch, points, shards, out.string(), o.submit.emit_sbatch);
    return 0;
  }
  return submit_and_follow(out, plan, array_job(plan), o, fmt::format("{} points in {} shards", points, shards));
}

int rerun_failed(const SweepOptions& o) {
  const fs::path out = fs::absolute(o.submit.rerun_failed).lexically_normal();
  nlohmann::json plan = read_plan(out, o.submit.rerun_failed, "--rerun-failed");
  slurm::reschedule(plan["scheduling"], o.submit);
  const int shards = plan.at("shards");
  const std::vector<int> failed = failed_shards(out, shards);
  if (failed.empty()) {
    fmt::print("{}: every shard of {} is complete; nothing to rerun\n", kSweep, out.string());
    return 0;
  }
  for (int i : failed) {
    fs::remove_all(slurm::shard_dir(out, i));
    fs::create_directories(slurm::shard_dir(out, i));
  }
  remove_outputs(out);
  slurm::ArrayJob job = array_job(plan);
  job.only = failed;
  if (!o.submit.emit_sbatch.empty()) {
    std::ofstream(o.submit.emit_sbatch) << slurm::submit_script(job);
    fmt::print("{}: wrote {} (shards {})\n", kSweep, o.submit.emit_sbatch, fmt::join(failed, ", "));
    return 0;
  }
  return submit_and_follow(out, plan, job, o, fmt::format("shards {} of {} resubmitted", fmt::join(failed, ", "), shards));
}

// The merge job of a Slurm submission: every shard's points, and for a shard
// whose task left no results (failed, cancelled, never ran) its points as
// "missing" with the task's state and log, so the grid stays complete.
int merge_plan(const std::string& dir) {
  const fs::path out = fs::absolute(dir).lexically_normal();
  const nlohmann::json plan = read_plan(out, dir, "merge --plan");
  const sweep::Study study = load(plan.at("study"), plan.at("kernels").get<std::vector<std::string>>(),
                                  plan.value("no_data", false));
  const std::vector<sweep::Point> points = sweep::expand(study);
  const int shards = plan.at("shards");
  if (static_cast<std::size_t>(plan.at("points")) != points.size())
    throw slurm::SlurmError(fmt::format("{} now has {} points, {} when it was submitted: the study changed",
                                        plan.at("study").get<std::string>(), points.size(),
                                        plan.at("points").get<std::size_t>()));
  slurm::States states;
  if (plan.contains("array_id")) {
    try {
      states = slurm::job_states(plan["array_id"], plan["merge_id"]);
    } catch (const slurm::SlurmError&) {
      // Without squeue the message names the log only.
    }
  }
  std::vector<regress::JobResult> results;
  for (int i = 1; i <= shards; ++i) {
    const fs::path dir = slurm::shard_dir(out, i);
    const std::vector<sweep::Point> mine = sweep::shard(points, i, shards);
    if (fs::exists(dir / "results.json")) {
      for (auto& r : shard_results(dir / "results.json", mine)) results.push_back(std::move(r));
      continue;
    }
    const auto st = states.find(std::to_string(i));
    const std::string state = st == states.end() ? "" : " (Slurm: " + st->second.first + ")";
    for (const auto& p : mine) {
      regress::JobResult r;
      r.job = p.job;
      r.status = "missing";
      r.message = fmt::format("shard {}/{} wrote no results: its task failed, was cancelled or never ran{}; log {}\n{}",
                              i, shards, state, (dir / "slurm.log").string(), slurm::tail(dir / "slurm.log", 300));
      results.push_back(std::move(r));
    }
  }
  return write_outputs(study, points, results, out, plan.value("no_plots", false));
}

int run_sweep(const SweepOptions& o) {
  if (!o.submit.rerun_failed.empty()) {
    if (!o.submit.enabled) {
      std::cerr << fmt::format("{}: --rerun-failed resubmits the failed shards of a --slurm run: add --slurm\n",
                               kSweep);
      return kExitBadInput;
    }
    return rerun_failed(o);
  }
  if (o.study.empty()) {
    std::cerr << fmt::format("{}: a study file is required (or: tessera sweep merge --plan DIR)\n", kSweep);
    return kExitBadInput;
  }
  const bool slurm = o.submit.enabled || !o.submit.emit_sbatch.empty();
  int index = 1, count = 1;
  if (!o.shard.empty() && !regress::parse_shard(o.shard, &index, &count)) {
    std::cerr << fmt::format("{}: --shard {}: expected I/N with 1 <= I <= N\n", kSweep, o.shard);
    return kExitBadInput;
  }
  if (slurm && !o.shard.empty()) {
    std::cerr << fmt::format("{}: --slurm shards the study itself (--shards N); --shard is for one shard\n", kSweep);
    return kExitBadInput;
  }
  const sweep::Study study = load(o.study, o.kernels, o.no_data);
  const std::vector<sweep::Point> all = sweep::expand(study);
  if (slurm && !o.dry_run) return submit_sweep(study, all.size(), o);
  const std::vector<sweep::Point> points = sweep::shard(all, index, count);
  if (o.dry_run) {
    for (const auto& p : points) fmt::print("{}\n", p.job.id);
    return 0;
  }
  const fs::path out = o.out.empty() ? fs::path("out") / "sweep" / study.name : fs::path(o.out);
  fs::create_directories(out);
  std::vector<regress::Job> jobs;
  for (const auto& p : points) jobs.push_back(p.job);
  fmt::print("{}: {} point{}{} on {} ({}{}), {} at a time\n", study.name, jobs.size(), jobs.size() == 1 ? "" : "s",
             count > 1 ? fmt::format(" (shard {} of {})", index, count) : "", study.base, study.fidelity,
             study.no_data ? ", timing only" : "", o.jobs);
  std::fflush(stdout);
  std::size_t done = 0;
  auto results = regress::run_jobs(jobs, o.jobs, out.string(),
                                   [&](const regress::JobResult& r) { print_point(r, ++done, jobs.size()); });
  // The study was checked before it ran, so a run refused as bad input is a
  // kernel that does not fit the point (tiles overflow SBUF, say): an answer
  // of the study, not a failure of the sweep.
  for (auto& r : results)
    if (r.status == "error") r.status = "infeasible";
  return write_outputs(study, points, results, out, o.no_plots);
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
      *exit_code = merge_plan(*plan);
    } catch (const std::exception& e) {
      std::cerr << "tessera sweep merge: " << e.what() << '\n';
      *exit_code = kExitBadInput;
    }
  });
  cmd->add_option("-j,--jobs", o->jobs, "Runs at a time (default: the core count)");
  cmd->add_option("--out", o->out, "Output folder (default: out/sweep/<study>)");
  cmd->add_flag("--no-data", o->no_data, "Timing only: skip the arithmetic (same cycles)");
  cmd->add_option("--kernels", o->kernels, "Run only these kernels of the study (the others are not checked)")
      ->delimiter(',');
  cmd->add_flag("--no-plots", o->no_plots, "Write results.csv and results.json only");
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
    }
  });
}

}  // namespace tessera::cli
