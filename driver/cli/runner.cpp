#include "files.h"
#include "runner.h"

#include "commands.h"

#include "job_runner.h"

#include "arch/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace tessera::cli::runner {
namespace {

namespace fs = std::filesystem;

void write_plan(const fs::path& out, const nlohmann::json& plan) {
  write_file(slurm::plan_file(out), plan.dump(2) + "\n");
}

// The plan of a --slurm run's folder, refused when another flow wrote it
// (plans from before the runner field was kept are regress plans).
nlohmann::json read_plan(const Flow& flow, const fs::path& out, const std::string& given, const std::string& option) {
  if (!fs::exists(slurm::plan_file(out)))
    throw slurm::SlurmError(fmt::format("{} {}: no slurm/plan.json there; it takes the --out folder of a "
                                        "'tessera {} --slurm' run",
                                        option, given, flow.name()));
  nlohmann::json plan = nlohmann::json::parse(read_file(slurm::plan_file(out)));
  const std::string runner = plan.value("runner", "regress");
  if (runner != flow.name())
    throw slurm::SlurmError(fmt::format("{} {}: this is the folder of a 'tessera {} --slurm' run, not of a {} "
                                        "(use tessera {})",
                                        option, given, runner, flow.name(), runner));
  return plan;
}

std::string count_key(const Flow& flow) { return flow.noun() + "s"; }

// A word of a shell command: options as they are, values single-quoted.
std::string shell_word(const std::string& arg) {
  const bool option = arg.rfind("--", 0) == 0 &&
                      arg.find_first_not_of("abcdefghijklmnopqrstuvwxyz-") == std::string::npos;
  return option ? arg : slurm::shell_quote(arg);
}

slurm::ArrayJob array_job(const Flow& flow, const nlohmann::json& plan) {
  const fs::path out = plan.at("out").get<std::string>();
  const std::string tessera = slurm::shell_quote(plan.at("tessera"));
  const int shards = plan.at("shards");
  const std::vector<std::string> args = flow.shard_args(plan);
  std::string options;
  for (std::size_t i = 1; i < args.size(); ++i) options += " " + shell_word(args[i]);
  slurm::ArrayJob job;
  // A suite's or study's file name may hold anything; Slurm's job name may not.
  job.name = flow.slurm_name(plan);
  for (char& c : job.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '+' && c != '-') c = '_';
  job.out = out;
  job.shards = shards;
  job.shard_command = fmt::format(
      "exec {} {} {} --shard \"$TESSERA_SHARD/{}\" -j \"$TESSERA_CPUS\"{} --out {}/\"$TESSERA_SHARD\"", tessera,
      flow.name(), slurm::shell_quote(args.at(0)), shards, options, slurm::shell_quote((out / "shards").string()));
  job.merge_command = fmt::format("exec {} {} merge --plan {}", tessera, flow.name(), slurm::shell_quote(out.string()));
  slurm::schedule(job, plan.at("scheduling"));
  // Jobs on the nodes read the same configs as this submission.
  job.env = flow.environment();
  job.env["TESSERA_CONFIG_DIR"] = arch::config_dir();
  return job;
}

void remove_outputs(const Flow& flow, const fs::path& out) {
  for (const auto& f : flow.outputs()) fs::remove_all(out / f);
}

// What a submission writes at the top of its output folder, listed in the
// folder's manifest so that a later submission removes only those.
const char* kManifest = ".tessera-manifest.json";

std::vector<std::string> written_by(const Flow& flow) {
  std::vector<std::string> names = {"shards", "slurm", kManifest};
  for (const auto& f : flow.outputs()) names.push_back(f);
  return names;
}

// Makes OUT ready for a fresh submission: removes what an earlier run of
// the tool wrote there (by its manifest), and refuses a folder holding
// anything else unless --force (which leaves those files alone).
void prepare_output(const Flow& flow, const fs::path& out, bool force) {
  std::set<std::string> ours;
  try {
    const nlohmann::json manifest = nlohmann::json::parse(read_file(out / kManifest));
    for (const auto& e : manifest.at("entries")) ours.insert(e.get<std::string>());
  } catch (const std::exception&) {
    // No manifest (or not one of ours): nothing there is known to be ours.
  }
  ours.insert(kManifest);
  std::vector<std::string> foreign;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out, ec))
    if (!ours.count(entry.path().filename().string())) foreign.push_back(entry.path().filename().string());
  std::sort(foreign.begin(), foreign.end());
  if (!foreign.empty() && !force)
    throw slurm::SlurmError(fmt::format(
        "output folder {} holds {} that no earlier 'tessera {} --slurm' wrote ({}{}); give an empty or new folder, "
        "or --force to submit beside them (they are left alone)",
        out.string(), foreign.size() == 1 ? "a file" : "files", flow.name(),
        fmt::join(foreign.begin(), foreign.begin() + static_cast<long>(std::min<std::size_t>(5, foreign.size())), ", "),
        foreign.size() > 5 ? ", ..." : ""));
  // What the manifest lists; with --force also what this run is about to
  // write (a foreign `shards/` would otherwise be merged).
  const auto names = written_by(flow);
  for (const auto& name : ours) fs::remove_all(out / name, ec);
  if (force)
    for (const auto& name : names) fs::remove_all(out / name, ec);
  make_dirs(out);
  write_file(out / kManifest, nlohmann::json{{"runner", flow.name()}, {"entries", names}}.dump(2) + "\n");
}

// Shards whose task left no results, or results with a job not answered.
std::vector<int> failed_shards(const Flow& flow, const fs::path& out, const std::vector<Job>& all, int shards) {
  std::vector<int> failed;
  for (int i = 1; i <= shards; ++i) {
    const fs::path dir = slurm::shard_dir(out, i);
    bool ok = fs::exists(dir / "results.json");
    if (ok)
      for (const auto& r : flow.read_results(dir, shard_of(all, i, shards))) ok = ok && flow.answered(r.status);
    if (!ok) failed.push_back(i);
  }
  return failed;
}

// Follows a submission with the flow's progress (jobs counted as their
// result.json files appear in the shard folders), then reports shards that
// left no results and prints the merged results. The flow's status.
int follow(const Flow& flow, const fs::path& out, const nlohmann::json& plan, double start_timeout_s) {
  const int shards = plan.at("shards");
  const std::string array_id = plan.at("array_id"), merge_id = plan.at("merge_id");
  const auto reporter = flow.reporter(plan.at(count_key(flow)).get<std::size_t>());
  const slurm::States last_seen = slurm::follow_shards(
      out, shards, array_id, merge_id, start_timeout_s,
      [&](const fs::path& file) {
        try {
          reporter->job_done(result_from_json(nlohmann::json::parse(read_file(file))));
          return true;
        } catch (const nlohmann::json::exception&) {
          return false;  // still being written: read on the next poll
        } catch (const FileError&) {
          return false;
        }
      },
      [&](const std::string& note) { reporter->tick("Slurm: " + note); });
  reporter->finish();
  slurm::report_missing_shards(out, shards, array_id, last_seen);
  const fs::path merge_log = out / "slurm" / "merge.log";
  if (!fs::exists(out / "results.json")) {
    fmt::print("tessera {}: the merge job {} wrote no results; its log {}:\n{}\n", flow.name(), merge_id,
               merge_log.string(), slurm::tail(merge_log));
    return 1;
  }
  const std::vector<JobResult> results = flow.read_results(out, flow.jobs(plan));
  flow.print_merged(plan, results, out);
  const bool failed =
      std::any_of(results.begin(), results.end(), [&](const JobResult& r) { return !flow.answered(r.status); });
  // With every job answered, a merge that did not complete failed after
  // merging (plotting, say).
  const auto merge = last_seen.find("merge");
  if (!failed && merge != last_seen.end() && merge->second.first != "COMPLETED") {
    fmt::print("tessera {}: the merge job {} ended {}; its log {}:\n{}\n", flow.name(), merge_id, merge->second.first,
               merge_log.string(), slurm::tail(merge_log));
    return 1;
  }
  return failed ? 1 : 0;
}

int submit_and_follow(const Flow& flow, const fs::path& out, nlohmann::json& plan, const slurm::ArrayJob& job,
                      const slurm::SubmitOptions& o, const std::string& what) {
  const auto submitted = slurm::submit(job);
  plan["array_id"] = submitted.first;
  plan["merge_id"] = submitted.second;
  write_plan(out, plan);
  fmt::print("tessera {}: Slurm job array {} ({}), merge job {}; results in {}\n", flow.name(), submitted.first, what,
             submitted.second, out.string());
  std::fflush(stdout);
  if (!o.wait) {
    fmt::print("follow with: squeue -j {},{}\n", submitted.first, submitted.second);
    return 0;
  }
  return follow(flow, out, plan, o.start_timeout_s);
}

}  // namespace

int default_shards(std::size_t jobs, int requested) {
  const int n = static_cast<int>(std::min<std::size_t>(jobs, 1u << 30));
  return requested > 0 ? std::min(requested, n) : std::min(32, n);
}

bool shard_option(const Flow& flow, const char* whole, const std::string& shard, bool slurm, int* index,
                  int* count) {
  *index = *count = 1;
  if (shard.empty()) return true;
  if (!parse_shard(shard, index, count)) {
    fmt::print(stderr, "tessera {}: --shard {}: expected I/N with 1 <= I <= N <= {}\n", flow.name(), shard,
               kMaxShards);
    return false;
  }
  if (slurm) {
    fmt::print(stderr, "tessera {}: --slurm shards the {} itself (--shards N); --shard is for one shard\n",
               flow.name(), whole);
    return false;
  }
  return true;
}

int interrupted_exit(const Flow& flow) {
  fmt::print(stderr, "tessera {}: interrupted; the results written hold the {}s that ended and the others as "
                     "interrupted\n", flow.name(), flow.noun());
  return kExitInterrupted;
}

std::vector<JobResult> run_here(const Flow& flow, const std::vector<Job>& jobs, int parallel, const fs::path& out,
                                bool* interrupted) {
  const auto reporter = flow.reporter(jobs.size());
  auto last_tick = std::chrono::steady_clock::now();
  auto results = run_jobs(jobs, parallel, out.string(), [&](const JobResult& r) { reporter->job_done(r); },
                          [&] {
                            // The elapsed time on a live line moves while long jobs run.
                            if (std::chrono::steady_clock::now() - last_tick < std::chrono::milliseconds(500)) return;
                            reporter->tick("");
                            last_tick = std::chrono::steady_clock::now();
                          },
                          interrupted);
  reporter->finish();
  return results;
}

int submit(const Flow& flow, nlohmann::json plan, std::size_t jobs, const fs::path& out_dir,
           const slurm::SubmitOptions& o) {
  const fs::path out = fs::absolute(out_dir).lexically_normal();
  const int shards = default_shards(jobs, o.shards);
  plan["runner"] = flow.name();
  plan["shards"] = shards;
  plan[count_key(flow)] = jobs;
  plan["out"] = out.string();
  plan["tessera"] = self_exe();
  plan["scheduling"] = slurm::scheduling(o);
  if (o.emit_sbatch.empty()) slurm::require_client();
  // A fresh submission: nothing of an earlier one may be merged into it.
  prepare_output(flow, out, o.force);
  make_dirs(out / "slurm");
  for (int i = 1; i <= shards; ++i) make_dirs(slurm::shard_dir(out, i));
  write_plan(out, plan);
  const std::string what = fmt::format("{} {}s in {} shards", jobs, flow.noun(), shards);
  if (!o.emit_sbatch.empty()) {
    write_file(o.emit_sbatch, slurm::submit_script(array_job(flow, plan)));
    fmt::print("tessera {}: wrote {} ({}; {} is prepared for it); submit with: bash {}\n", flow.name(), o.emit_sbatch,
               what, out.string(), o.emit_sbatch);
    return 0;
  }
  return submit_and_follow(flow, out, plan, array_job(flow, plan), o, what);
}

int rerun_failed(const Flow& flow, const slurm::SubmitOptions& o) {
  if (!o.enabled) {
    fmt::print(stderr, "tessera {}: --rerun-failed resubmits the failed shards of a --slurm run: add --slurm\n",
               flow.name());
    return kExitBadInput;
  }
  const fs::path out = fs::absolute(o.rerun_failed).lexically_normal();
  nlohmann::json plan = read_plan(flow, out, o.rerun_failed, "--rerun-failed");
  slurm::reschedule(plan["scheduling"], o);
  const int shards = plan.at("shards");
  const std::vector<int> failed = failed_shards(flow, out, flow.jobs(plan), shards);
  if (failed.empty()) {
    fmt::print("tessera {}: every shard of {} is complete; nothing to rerun\n", flow.name(), out.string());
    return 0;
  }
  for (int i : failed) {
    fs::remove_all(slurm::shard_dir(out, i));
    fs::create_directories(slurm::shard_dir(out, i));
  }
  remove_outputs(flow, out);
  slurm::ArrayJob job = array_job(flow, plan);
  job.only = failed;
  if (!o.emit_sbatch.empty()) {
    write_file(o.emit_sbatch, slurm::submit_script(job));
    fmt::print("tessera {}: wrote {} (shards {})\n", flow.name(), o.emit_sbatch, fmt::join(failed, ", "));
    return 0;
  }
  return submit_and_follow(flow, out, plan, job, o,
                           fmt::format("shards {} of {} resubmitted", fmt::join(failed, ", "), shards));
}

int merge_plan(const Flow& flow, const std::string& dir) {
  const fs::path out = fs::absolute(dir).lexically_normal();
  const nlohmann::json plan = read_plan(flow, out, dir, "merge --plan");
  const std::vector<Job> all = flow.jobs(plan);
  const int shards = plan.at("shards");
  if (plan.at(count_key(flow)).get<std::size_t>() != all.size())
    throw slurm::SlurmError(fmt::format("the plan in {} has {} {}s, its {} file now gives {}: it changed since the "
                                        "submission",
                                        out.string(), plan.at(count_key(flow)).get<std::size_t>(), flow.noun(),
                                        flow.name(), all.size()));
  slurm::States states;
  if (plan.contains("array_id")) {
    try {
      states = slurm::job_states(plan["array_id"], plan["merge_id"]);
    } catch (const slurm::SlurmError&) {
      // Without squeue the message names the log only.
    }
  }
  std::vector<JobResult> results;
  for (int i = 1; i <= shards; ++i) {
    const fs::path shard = slurm::shard_dir(out, i);
    const std::vector<Job> mine = shard_of(all, i, shards);
    if (fs::exists(shard / "results.json")) {
      for (JobResult& r : flow.read_results(shard, mine)) results.push_back(std::move(r));
      continue;
    }
    const auto st = states.find(std::to_string(i));
    const std::string state = st == states.end() ? "" : " (Slurm: " + st->second.first + ")";
    for (const Job& j : mine) {
      JobResult r;
      r.job = j;
      r.status = Status::Missing;
      r.message = fmt::format("shard {}/{} wrote no results: its task failed, was cancelled or never ran{}; log {}\n{}",
                              i, shards, state, (shard / "slurm.log").string(), slurm::tail(shard / "slurm.log", 300));
      results.push_back(std::move(r));
    }
  }
  return flow.write_outputs(plan, results, out);
}

}  // namespace tessera::cli::runner
