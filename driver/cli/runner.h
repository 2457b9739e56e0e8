// The sharded runner every job-list command shares (dvsim's "one runner,
// many flows"): `tessera regress` (a suite), `tessera sweep` (a study's grid),
// and any later flow (tuning candidates, comparisons). A flow only says what
// its work is and what it writes (a `Flow`); the runner does the rest the same
// way for all of them:
//
//  - here: the jobs as `tessera run` processes, N at a time (job_runner.h);
//  - sharded: shard I of N is every N-th job of the flow's list from the I-th,
//    the same split on every machine (`--shard I/N`);
//  - on Slurm: the shards as one job array plus a merge job (slurm.h), whose
//    plan (OUT/slurm/plan.json) records the flow's name, so a merge or a
//    `--rerun-failed` of another flow's folder is refused; following a
//    submission with the flow's progress; reporting shards that left no
//    results, their jobs listed as `missing`; resubmitting failed shards.
//
// Adding a flow: implement Flow (its jobs from a plan, the arguments of its
// shard command, how to read a shard's results and write the merged
// outputs), give its command `--shard`, `--out`, a `merge --plan DIR`
// subcommand and slurm::add_submit_options, and call submit / rerun_failed /
// merge_plan below.
#pragma once

#include "job.h"
#include "slurm.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera::cli::runner {

// Progress of a flow's jobs, run here or followed on Slurm.
class Reporter {
public:
  virtual ~Reporter() = default;
  virtual void job_done(const JobResult& r) = 0;
  // Time moves, or the batch scheduler's state changed ("3 RUNNING, 1 PENDING").
  virtual void tick(const std::string& note) = 0;
  virtual void finish() = 0;
};

class Flow {
public:
  virtual ~Flow() = default;
  // The subcommand (`tessera NAME`) its shards and merge run; the plan's "runner".
  virtual std::string name() const = 0;
  // One item of its work in messages and in the plan's count: "job", "point".
  virtual std::string noun() const = 0;
  // Slurm's job name for a plan's array (the merge adds "-merge").
  virtual std::string slurm_name(const nlohmann::json& plan) const = 0;
  // Files and folders write_outputs writes into OUT.
  virtual std::vector<std::string> outputs() const = 0;
  // Every job a plan describes, in shard order.
  virtual std::vector<Job> jobs(const nlohmann::json& plan) const = 0;
  // The arguments of `tessera NAME` that select a plan's work: its file first,
  // then options. The runner adds --shard, -j and --out.
  virtual std::vector<std::string> shard_args(const nlohmann::json& plan) const = 0;
  // The results a run wrote into `dir` (a shard's folder, or OUT after the
  // merge); `jobs` are those it was given. Throws when they cannot be read.
  virtual std::vector<JobResult> read_results(const std::filesystem::path& dir, const std::vector<Job>& jobs) const = 0;
  // Writes the outputs of a whole result set (or of one shard) into `out`;
  // the exit status: 0 when every job is answered.
  virtual int write_outputs(const nlohmann::json& plan, const std::vector<JobResult>& results,
                            const std::filesystem::path& out) const = 0;
  // Prints the merged results at the end of following a submission.
  virtual void print_merged(const nlohmann::json& plan, const std::vector<JobResult>& results,
                            const std::filesystem::path& out) const = 0;
  virtual std::unique_ptr<Reporter> reporter(std::size_t total) const = 0;
  // Whether a job needs no rerun: it passed (a study also takes infeasible).
  virtual bool answered(Status s) const { return s == Status::Pass; }
  // Variables exported to the Slurm jobs besides TESSERA_CONFIG_DIR.
  virtual std::map<std::string, std::string> environment() const { return {}; }
};

// Shards when --shards is not given: one per job, at most 32.
int default_shards(std::size_t jobs, int requested);

// A flow's command's --shard I/N into *index and *count ("": the whole list,
// 1/1), refused beside --slurm (`slurm`), which shards `whole` (its suite,
// study) itself. False, the problem printed as "tessera NAME: ...", otherwise.
bool shard_option(const Flow& flow, const char* whole, const std::string& shard, bool slurm, int* index,
                  int* count);

// After run_here was interrupted: says that the outputs written hold the
// jobs that ended and the others as `interrupted`; kExitInterrupted.
int interrupted_exit(const Flow& flow);

// Runs `jobs` here, `parallel` at a time, in OUT/jobs, reporting each as it
// ends. After an interrupt (Ctrl-C) `*interrupted` is set and the jobs it
// stopped or kept from starting are `interrupted`: the flow writes its
// outputs as usual and exits with kExitInterrupted.
std::vector<JobResult> run_here(const Flow& flow, const std::vector<Job>& jobs, int parallel,
                                const std::filesystem::path& out, bool* interrupted);

// Submits a plan to Slurm (or writes its script with --emit-sbatch). `plan`
// holds the flow's own keys; the runner adds its name, the output folder,
// the shard count, the scheduling choices and, once submitted, the job ids.
// Follows the jobs with --wait. The command's exit status.
int submit(const Flow& flow, nlohmann::json plan, std::size_t jobs, const std::filesystem::path& out,
           const slurm::SubmitOptions& o);

// --rerun-failed DIR: resubmits the shards of DIR's plan that left no results
// or hold a job that is not answered, with a new merge job over all shards.
// Without --slurm (o.enabled) it is bad input.
int rerun_failed(const Flow& flow, const slurm::SubmitOptions& o);

// `tessera NAME merge --plan DIR`, the merge job: every shard's results, and
// the jobs of a shard that left none as `missing` with its task's Slurm
// state and the tail of its log, written as the flow's outputs.
int merge_plan(const Flow& flow, const std::string& dir);

}  // namespace tessera::cli::runner
