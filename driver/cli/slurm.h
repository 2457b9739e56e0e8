// Running a list of jobs on a Slurm cluster: N deterministic shards as one
// job array, then a merge job that waits for every task (afterany). The
// caller says what a shard and the merge run (shell commands); this layer
// writes the submission script, submits it, follows the jobs and reports the
// tasks that ended without results. `tessera regress --slurm` and
// `tessera sweep --slurm` use it.
//
// Layout of the output folder, which every node must see (shared storage):
//   OUT/slurm/submit.sh    the script that was run to submit (bash; sbatch twice)
//   OUT/slurm/plan.json    what was submitted, read back by merge and --rerun-failed
//   OUT/slurm/merge.log    the merge job's output
//   OUT/shards/I/          shard I's own output, with slurm.log (the task's output)
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tessera::cli::slurm {

// A Slurm problem for the user: no sbatch, a refused submission, a job that
// never started. The message says what happened and what to do.
class SlurmError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// What `--slurm` and its options ask for: the same for every command that
// submits (tessera regress, tessera sweep).
struct SubmitOptions {
  bool enabled = false;  // --slurm
  bool wait = false;
  bool force = false;  // --force: submit into a folder holding files this tool did not write
  std::string partition, time_limit, emit_sbatch, rerun_failed;
  int max_parallel = 0, shards = 0, cpus_per_task = 1;
  double start_timeout_s = 1800;
};

// How a command's help names what it runs: "suite" of "job"s, "sweep" of "point"s.
struct SubmitNouns {
  const char* whole;
  const char* item;
  const char* wait_help;
};

// Registers --slurm and its options on `cmd` as the group "Slurm".
void add_submit_options(CLI::App& cmd, SubmitOptions& o, const SubmitNouns& nouns);

struct ArrayJob {
  std::string name;            // job name squeue shows; the merge job adds "-merge"
  std::filesystem::path out;   // absolute, on shared storage
  int shards = 1;              // array tasks 1..shards, one per shard
  std::vector<int> only;       // submit only these shards (a rerun); empty: all
  // Run by array task I in OUT with TESSERA_SHARD=I, TESSERA_SHARDS=shards and
  // TESSERA_CPUS (the task's CPUs) set; it writes OUT/shards/I.
  std::string shard_command;
  std::string merge_command;   // run once every task has ended, in OUT
  std::string partition, time_limit;
  int max_parallel = 0;        // array tasks running at once; 0: as Slurm allows
  int cpus_per_task = 1;
  std::map<std::string, std::string> env;  // exported in both scripts
};

// A submission's scheduling choices as kept in its plan, so that a merge or a
// rerun submits the same way; reschedule() applies a rerun's new choices
// (partition, time, max-parallel) over them; schedule() sets them on a job.
nlohmann::json scheduling(const SubmitOptions& o);
void reschedule(nlohmann::json& scheduling, const SubmitOptions& o);
void schedule(ArrayJob& job, const nlohmann::json& scheduling);

// The folder of shard I.
std::filesystem::path shard_dir(const std::filesystem::path& out, int shard);

// The bash script that submits the array, then the merge job depending on it
// with afterany, and prints "ARRAY_ID MERGE_ID". This exact text is what
// submit() runs, and what --emit-sbatch writes.
std::string submit_script(const ArrayJob& job);

// Single quotes for the shell.
std::string shell_quote(const std::string& s);

// Throws SlurmError unless the Slurm client commands (sbatch, squeue) are on PATH.
void require_client();

// Creates the shard folders (Slurm opens each task's log before it runs),
// writes OUT/slurm/submit.sh and runs it. Returns {array id, merge id}.
// Throws SlurmError when sbatch is not on PATH or refuses the submission.
std::pair<std::string, std::string> submit(const ArrayJob& job);

// Slurm's state of each array task (by shard) and of the merge job ("merge"),
// from squeue; a job Slurm has forgotten (finished long ago) is absent.
std::map<std::string, std::pair<std::string, std::string>> job_states(const std::string& array_id,
                                                                      const std::string& merge_id);

using States = std::map<std::string, std::pair<std::string, std::string>>;  // shard or "merge" -> {state, reason}

// Follows a submission until the merge job has ended. Every `poll_seconds`
// calls `on_poll` with a note on the jobs' state ("3 RUNNING, 1 PENDING")
// and the states themselves.
// Throws SlurmError when no array task has started within `start_timeout_s`
// (0: wait as long as it takes), naming Slurm's reason.
void follow(const std::string& array_id, const std::string& merge_id, double start_timeout_s,
            const std::function<void(const std::string& note, const States& states)>& on_poll,
            double poll_seconds = 1);

// The last `bytes` of a file, or "" when it does not exist.
std::string tail(const std::filesystem::path& file, std::size_t bytes = 600);

// OUT/slurm/plan.json: what a runner submitted, for its merge and --rerun-failed.
std::filesystem::path plan_file(const std::filesystem::path& out);

// follow() for runners whose shards write one OUT/shards/I/jobs/<job>/result.json
// per finished job: calls `on_result_file` once for each such file as it
// appears (it returns false when the file is still being written, to be read
// again on the next poll) and `on_tick` with Slurm's note. Returns each task's
// last state seen (a task cancelled while queued leaves the queue without a
// trace, so only the follower knows it was there).
States follow_shards(const std::filesystem::path& out, int shards, const std::string& array_id,
                     const std::string& merge_id, double start_timeout_s,
                     const std::function<bool(const std::filesystem::path& result_file)>& on_result_file,
                     const std::function<void(const std::string& note)>& on_tick);

// Prints one paragraph per shard that left no OUT/shards/I/results.json: its
// Slurm task, the state it was last seen in and the tail of its log. Returns
// how many there were.
int report_missing_shards(const std::filesystem::path& out, int shards, const std::string& array_id,
                          const States& last_seen);

}  // namespace tessera::cli::slurm
