#include "slurm.h"

#include "files.h"
#include "process.h"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>

namespace tessera::cli::slurm {
namespace {

namespace fs = std::filesystem;

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  return false;
}

void require(const std::string& program) {
  if (!on_path(program))
    throw SlurmError(fmt::format("'{}' is not on PATH: --slurm needs the Slurm client commands (sbatch, squeue) "
                                 "of the cluster (Debian: slurm-client)",
                                 program));
}

// A value that goes into the submission script must not change its shape:
// a newline would end a here-document or an #SBATCH line and start a command.
void check_script_value(const std::string& what, const std::string& value) {
  for (char c : value)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw SlurmError(fmt::format("{} holds a control character (a newline, say); it cannot go into a Slurm script",
                                   what));
}

void check_pattern(const std::string& what, const std::string& value, const char* allowed, const char* meaning) {
  if (value.find_first_not_of(allowed) != std::string::npos)
    throw SlurmError(fmt::format("{} '{}': {}", what, value.substr(0, 80), meaning));
}

// Everything of a job that enters the script, checked before it is written.
void check_job(const ArrayJob& job) {
  constexpr const char* kWord = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-";
  check_pattern("job name", job.name, kWord, "expected letters, digits and _ . + -");
  if (!job.partition.empty())
    check_pattern("--partition", job.partition,
                  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,-",
                  "expected a partition name (letters, digits, _ . -; several separated by commas)");
  if (!job.time_limit.empty())
    check_pattern("--time", job.time_limit, "0123456789:-",
                  "expected a Slurm time limit such as 30, 02:00:00 or 1-12:00:00");
  // #SBATCH lines cannot quote a path, and Slurm expands % in its file names.
  const std::string out = job.out.string();
  check_script_value("the output folder", out);
  if (out.find_first_of(" \t'\"\\$`%") != std::string::npos)
    throw SlurmError(fmt::format("output folder '{}': Slurm's #SBATCH lines cannot hold a path with spaces, quotes, "
                                 "$, ` or % (which Slurm expands)",
                                 out));
  check_script_value("the shard command", job.shard_command);
  check_script_value("the merge command", job.merge_command);
  for (const auto& [k, v] : job.env) {
    check_pattern("environment variable", k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", "expected an upper-case name");
    check_script_value(k, v);
  }
}

// A Slurm job id as squeue and sbatch print it.
void check_job_id(const std::string& id) {
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    throw SlurmError(fmt::format("'{}' is not a Slurm job id (expected digits; is plan.json edited?)", id.substr(0, 40)));
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The #SBATCH lines both jobs share.
std::string common_directives(const ArrayJob& job) {
  std::string s = fmt::format("#SBATCH --chdir={}\n", job.out.string());
  if (!job.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", job.partition);
  if (!job.time_limit.empty()) s += fmt::format("#SBATCH --time={}\n", job.time_limit);
  return s;
}

std::string exports(const ArrayJob& job) {
  std::string s;
  for (const auto& [k, v] : job.env) s += fmt::format("export {}={}\n", k, shell_quote(v));
  return s;
}

// Slurm states in which a job has not ended yet.
bool active(const std::string& state) {
  static const std::set<std::string> states = {"PENDING",   "CONFIGURING", "RUNNING",      "COMPLETING",
                                               "SUSPENDED", "REQUEUED",    "REQUEUE_HOLD", "REQUEUE_FED",
                                               "RESIZING",  "SIGNALING",   "STAGE_OUT"};
  return states.count(state) > 0;
}

}  // namespace

fs::path shard_dir(const fs::path& out, int shard) { return out / "shards" / std::to_string(shard); }

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string submit_script(const ArrayJob& job) {
  check_job(job);
  std::string array;
  if (job.only.empty()) {
    array = fmt::format("1-{}", job.shards);
  } else {
    for (int i : job.only) array += fmt::format("{}{}", array.empty() ? "" : ",", i);
  }
  if (job.max_parallel > 0) array += fmt::format("%{}", job.max_parallel);
  const std::string shard_script = fmt::format(
      "#!/bin/bash\n"
      "#SBATCH --job-name={name}\n"
      "#SBATCH --array={array}\n"
      "#SBATCH --cpus-per-task={cpus}\n"
      "#SBATCH --output={out}/shards/%a/slurm.log\n"
      "{common}"
      "{exports}"
      "export TESSERA_SHARD=$SLURM_ARRAY_TASK_ID TESSERA_SHARDS={shards} TESSERA_CPUS=${{SLURM_CPUS_PER_TASK:-1}}\n"
      "{command}\n",
      fmt::arg("name", job.name), fmt::arg("array", array), fmt::arg("cpus", job.cpus_per_task),
      fmt::arg("out", job.out.string()), fmt::arg("common", common_directives(job)), fmt::arg("exports", exports(job)),
      fmt::arg("shards", job.shards), fmt::arg("command", job.shard_command));
  const std::string merge_script = fmt::format(
      "#!/bin/bash\n"
      "#SBATCH --job-name={name}-merge\n"
      "#SBATCH --output={out}/slurm/merge.log\n"
      "{common}"
      "{exports}"
      "{command}\n",
      fmt::arg("name", job.name), fmt::arg("out", job.out.string()), fmt::arg("common", common_directives(job)),
      fmt::arg("exports", exports(job)), fmt::arg("command", job.merge_command));
  return fmt::format(
      "#!/bin/bash\n"
      "# Submits {name} to Slurm: a job array with one task per shard, then a merge\n"
      "# job that runs once every task has ended (afterany). Prints the two job ids.\n"
      "# {out} must be on storage every node sees; its shard folders must exist.\n"
      "set -euo pipefail\n"
      "array=$(sbatch --parsable <<'TESSERA_SHARD_SCRIPT'\n"
      "{shard}"
      "TESSERA_SHARD_SCRIPT\n"
      ")\n"
      "array=${{array%%;*}}\n"
      "merge=$(sbatch --parsable --dependency=afterany:\"$array\" <<'TESSERA_MERGE_SCRIPT'\n"
      "{merge}"
      "TESSERA_MERGE_SCRIPT\n"
      ")\n"
      "echo \"$array ${{merge%%;*}}\"\n",
      fmt::arg("name", job.name), fmt::arg("out", job.out.string()), fmt::arg("shard", shard_script),
      fmt::arg("merge", merge_script));
}

void require_client() {
  require("sbatch");
  require("squeue");
}

std::pair<std::string, std::string> submit(const ArrayJob& job) {
  require("sbatch");
  const std::string text = submit_script(job);
  for (int i = 1; i <= job.shards; ++i) fs::create_directories(shard_dir(job.out, i));
  fs::create_directories(job.out / "slurm");
  const fs::path script = job.out / "slurm" / "submit.sh";
  write_file(script, text);
  std::string out, err;
  const int status = run_program({"bash", script.string()}, &out, &err);
  std::istringstream ids(out);
  std::string array_id, merge_id;
  ids >> array_id >> merge_id;
  if (status != 0 || merge_id.empty())
    throw SlurmError(fmt::format("sbatch refused the submission ({}): {}", script.string(),
                                 trim(err.empty() ? out : err)));
  check_job_id(array_id);
  check_job_id(merge_id);
  return {array_id, merge_id};
}

namespace {

// squeue's view; false when squeue itself failed for another reason than
// not knowing the jobs any more.
bool query(const std::string& array_id, const std::string& merge_id,
           std::map<std::string, std::pair<std::string, std::string>>* states) {
  states->clear();
  std::string out, err;
  check_job_id(array_id);
  check_job_id(merge_id);
  const int status = run_program({"squeue", "-h", "-r", "-t", "all", "-j", array_id + "," + merge_id, "-o", "%i|%T|%r"},
                                 &out, &err);
  if (status != 0) return err.find("Invalid job id") != std::string::npos;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const auto a = line.find('|'), b = line.rfind('|');
    if (a == std::string::npos || a == b) continue;
    const std::string id = line.substr(0, a);
    const std::string key = id == merge_id ? "merge"
                            : id.rfind(array_id + "_", 0) == 0 ? id.substr(array_id.size() + 1)
                                                               : std::string();
    if (!key.empty()) (*states)[key] = {line.substr(a + 1, b - a - 1), line.substr(b + 1)};
  }
  return true;
}

}  // namespace

std::map<std::string, std::pair<std::string, std::string>> job_states(const std::string& array_id,
                                                                      const std::string& merge_id) {
  require("squeue");
  std::map<std::string, std::pair<std::string, std::string>> states;
  query(array_id, merge_id, &states);
  return states;
}

void follow(const std::string& array_id, const std::string& merge_id, double start_timeout_s,
            const std::function<void(const std::string& note, const States& states)>& on_poll,
            double poll_seconds) {
  require("squeue");
  const auto t0 = std::chrono::steady_clock::now();
  auto last_answer = t0;
  bool started = false;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    std::map<std::string, std::pair<std::string, std::string>> states;
    if (!query(array_id, merge_id, &states)) {
      // A busy controller answers late; a gone one never does.
      if (std::chrono::duration<double>(now - last_answer).count() > 120)
        throw SlurmError(fmt::format("squeue has not answered for 2 minutes while following jobs {} and {}", array_id,
                                     merge_id));
      std::this_thread::sleep_for(std::chrono::duration<double>(poll_seconds));
      continue;
    }
    last_answer = now;
    std::map<std::string, int> count;
    std::set<std::string> reasons;
    for (const auto& [key, state] : states) {
      if (key == "merge") continue;
      ++count[state.first];
      if (state.first != "PENDING") started = true;
      else if (state.second != "None") reasons.insert(state.second);
    }
    // The array is gone from squeue only when it ended long ago.
    if (count.empty()) started = true;
    std::string note;
    for (const auto& [state, n] : count) note += fmt::format("{}{} {}", note.empty() ? "" : ", ", n, state);
    const auto merge = states.find("merge");
    if (merge != states.end() && merge->second.first != "PENDING") note += ", merge " + merge->second.first;
    on_poll(note, states);
    if (merge == states.end() || !active(merge->second.first)) return;
    const double waited = std::chrono::duration<double>(now - t0).count();
    if (!started && start_timeout_s > 0 && waited > start_timeout_s)
      throw SlurmError(fmt::format(
          "Slurm job array {} has not started after {:.0f} s (pending: {}); it stays queued, 'scancel {} {}' drops it",
          array_id, waited, reasons.empty() ? "no reason given" : fmt::format("{}", fmt::join(reasons, ", ")),
          array_id, merge_id));
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_seconds));
  }
}

std::string tail(const fs::path& file, std::size_t bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

fs::path plan_file(const fs::path& out) { return out / "slurm" / "plan.json"; }

States follow_shards(const fs::path& out, int shards, const std::string& array_id, const std::string& merge_id,
                     double start_timeout_s, const std::function<bool(const fs::path&)>& on_result_file,
                     const std::function<void(const std::string&)>& on_tick) {
  std::set<std::string> seen;
  const auto scan = [&] {
    for (int i = 1; i <= shards; ++i) {
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(shard_dir(out, i) / "jobs", ec)) {
        const fs::path file = entry.path() / "result.json";
        if (seen.count(file.string()) || !fs::exists(file)) continue;
        if (on_result_file(file)) seen.insert(file.string());
      }
    }
  };
  States last_seen;
  follow(array_id, merge_id, start_timeout_s, [&](const std::string& note, const States& states) {
    for (const auto& [key, state] : states) last_seen[key] = state;
    scan();
    on_tick(note);
  });
  scan();
  for (const auto& [key, state] : job_states(array_id, merge_id)) last_seen[key] = state;
  return last_seen;
}

int report_missing_shards(const fs::path& out, int shards, const std::string& array_id, const States& last_seen) {
  int missing = 0;
  for (int i = 1; i <= shards; ++i) {
    const fs::path dir = shard_dir(out, i);
    if (fs::exists(dir / "results.json")) continue;
    ++missing;
    const auto st = last_seen.find(std::to_string(i));
    const std::string log = tail(dir / "slurm.log");
    const std::string state = st == last_seen.end()          ? "not seen in Slurm's queue"
                              : st->second.first == "PENDING" ? "removed from the queue before it started (cancelled)"
                                                              : st->second.first;
    fmt::print("shard {}/{} (Slurm task {}_{}): {}, no results; log {}{}\n", i, shards, array_id, i, state,
               (dir / "slurm.log").string(), log.empty() ? " (empty: the task never ran)" : ":\n" + log);
  }
  return missing;
}

void add_submit_options(CLI::App& cmd, SubmitOptions& o, const SubmitNouns& nouns) {
  auto* group = cmd.add_option_group("Slurm", fmt::format("Run the {} on a Slurm cluster (docs/slurm.md)", nouns.whole));
  group->add_flag("--slurm", o.enabled, "Submit as a Slurm job array of shards plus a merge job");
  group->add_option("--partition", o.partition, "Slurm partition");
  group->add_option("--max-parallel", o.max_parallel, "Array tasks running at once (default: no limit)")
      ->check(CLI::Range(1, 1000000));
  group->add_option("--time", o.time_limit, "Time limit of each task and of the merge (Slurm's --time)");
  group->add_option("--shards", o.shards, fmt::format("Array tasks (default: one per {}, at most 32)", nouns.item))
      ->check(CLI::Range(1, 1000000));
  group->add_option("--cpus-per-task", o.cpus_per_task,
                    fmt::format("CPUs of each task; its {}s run that many at a time", nouns.item))
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  group->add_flag("--wait", o.wait, nouns.wait_help);
  group->add_flag("--force", o.force,
                  "Submit even into an output folder holding files an earlier run did not write (they are left alone)");
  group->add_option("--start-timeout", o.start_timeout_s,
                    "With --wait: give up when no task has started after this many seconds (0: never)")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  group->add_option("--emit-sbatch", o.emit_sbatch, "Write the submission script here instead of submitting");
  group->add_option("--rerun-failed", o.rerun_failed,
                    "Resubmit the failed shards of the --slurm run in this folder, then merge again");
}

nlohmann::json scheduling(const SubmitOptions& o) {
  return {{"partition", o.partition}, {"time", o.time_limit}, {"max_parallel", o.max_parallel},
          {"cpus_per_task", o.cpus_per_task}};
}

void reschedule(nlohmann::json& scheduling, const SubmitOptions& o) {
  if (!o.partition.empty()) scheduling["partition"] = o.partition;
  if (!o.time_limit.empty()) scheduling["time"] = o.time_limit;
  if (o.max_parallel > 0) scheduling["max_parallel"] = o.max_parallel;
}

void schedule(ArrayJob& job, const nlohmann::json& scheduling) {
  job.partition = scheduling.value("partition", "");
  job.time_limit = scheduling.value("time", "");
  job.max_parallel = scheduling.value("max_parallel", 0);
  job.cpus_per_task = scheduling.value("cpus_per_task", 1);
}

}  // namespace tessera::cli::slurm
