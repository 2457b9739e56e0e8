#include "slurm.h"

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

// Runs a shell command; its stdout and stderr, and its exit status (-1 when
// it did not exit normally).
int capture(const std::string& command, std::string* out, std::string* err) {
  char err_path[] = "/tmp/tessera-slurm-XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd >= 0) close(fd);
  FILE* pipe = popen(fmt::format("{} 2>{}", command, shell_quote(err_path)).c_str(), "r");
  if (!pipe) throw SlurmError(fmt::format("cannot run '{}'", command));
  std::array<char, 4096> buf{};
  out->clear();
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) out->append(buf.data(), n);
  const int raw = pclose(pipe);
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  *err = ss.str();
  fs::remove(err_path);
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
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

std::pair<std::string, std::string> submit(const ArrayJob& job) {
  require("sbatch");
  // #SBATCH lines cannot quote a path.
  if (job.out.string().find_first_of(" \t\n'\"") != std::string::npos)
    throw SlurmError(fmt::format("output folder '{}': Slurm's #SBATCH lines cannot hold a path with spaces or quotes",
                                 job.out.string()));
  for (int i = 1; i <= job.shards; ++i) fs::create_directories(shard_dir(job.out, i));
  fs::create_directories(job.out / "slurm");
  const fs::path script = job.out / "slurm" / "submit.sh";
  std::ofstream(script) << submit_script(job);
  std::string out, err;
  const int status = capture("bash " + shell_quote(script.string()), &out, &err);
  std::istringstream ids(out);
  std::string array_id, merge_id;
  ids >> array_id >> merge_id;
  if (status != 0 || merge_id.empty())
    throw SlurmError(fmt::format("sbatch refused the submission ({}): {}", script.string(),
                                 trim(err.empty() ? out : err)));
  return {array_id, merge_id};
}

namespace {

// squeue's view; false when squeue itself failed for another reason than
// not knowing the jobs any more.
bool query(const std::string& array_id, const std::string& merge_id,
           std::map<std::string, std::pair<std::string, std::string>>* states) {
  states->clear();
  std::string out, err;
  const int status = capture(fmt::format("squeue -h -r -t all -j {},{} -o '%i|%T|%r'", array_id, merge_id), &out, &err);
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
  group->add_option("--max-parallel", o.max_parallel, "Array tasks running at once (default: no limit)");
  group->add_option("--time", o.time_limit, "Time limit of each task and of the merge (Slurm's --time)");
  group->add_option("--shards", o.shards, fmt::format("Array tasks (default: one per {}, at most 32)", nouns.item));
  group->add_option("--cpus-per-task", o.cpus_per_task,
                    fmt::format("CPUs of each task; its {}s run that many at a time", nouns.item))
      ->capture_default_str();
  group->add_flag("--wait", o.wait, nouns.wait_help);
  group->add_option("--start-timeout", o.start_timeout_s,
                    "With --wait: give up when no task has started after this many seconds (0: never)")
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
