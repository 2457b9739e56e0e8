// Runs a flow's jobs as `tessera run` processes (SystemC allows one
// simulation per process): at most `parallel` at a time, each in its own
// folder with its report and log, killed past its timeout. Children are
// reaped as they exit (SIGCHLD wakes the runner through a self-pipe; no
// polling interval), and die with the runner (PR_SET_PDEATHSIG).
//
// Interrupts: a first SIGINT or SIGTERM (Ctrl-C, to the runner or its process
// group) stops starting jobs, asks the running ones to stop (SIGTERM to each
// job's process group, SIGKILL after a grace period) and returns every job:
// those that ended as they ended, the others `interrupted`; a second one
// kills every job at once and ends the runner by that signal.
#pragma once

#include "job.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tessera::cli::runner {

// Jobs at a time: -j takes 1 to this.
inline constexpr int kMaxParallel = 1024;

// The job as `tessera run` arguments, writing into `dir`.
std::vector<std::string> run_args(const Job& job, const std::string& dir);

// Runs every job in OUT/jobs/<id with '/' as '.'>; calls `on_done` as each
// ends (in completion order), and `on_tick` about twice a second while jobs
// run (to redraw a progress line). Each job's folder gets log.txt (opening
// with the command that reproduces the job) and result.json (its JobResult,
// which a follower of a sharded run counts). Results come back sorted by id;
// `*interrupted` (when given) tells whether an interrupt cut the run short.
std::vector<JobResult> run_jobs(const std::vector<Job>& jobs, int parallel, const std::string& out,
                                const std::function<void(const JobResult&)>& on_done = {},
                                const std::function<void()>& on_tick = {}, bool* interrupted = nullptr);

// The running tessera binary, which every job runs.
const std::string& self_exe();

}  // namespace tessera::cli::runner
