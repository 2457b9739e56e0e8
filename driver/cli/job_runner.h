// Runs regression jobs as `tessera run` processes (SystemC allows one
// simulation per process): at most `parallel` at a time, each in its own
// folder with its report and log, killed past its timeout. Shared by
// `tessera regress` and `tessera sweep`.
#pragma once

#include "job.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tessera::cli::runner {

// The job as `tessera run` arguments, writing into `dir`.
std::vector<std::string> run_args(const Job& job, const std::string& dir);

// Runs every job in OUT/jobs/<id with '/' as '.'>; calls `on_done` as each
// ends (in completion order), and `on_tick` every few milliseconds while jobs
// run (to redraw a progress line). Each job's folder gets log.txt (opening
// with the command that reproduces the job) and result.json (its JobResult,
// which a follower of a sharded run counts). Results come back sorted by id.
std::vector<JobResult> run_jobs(const std::vector<Job>& jobs, int parallel, const std::string& out,
                                const std::function<void(const JobResult&)>& on_done = {},
                                const std::function<void()>& on_tick = {});

// The running tessera binary, which every job runs.
const std::string& self_exe();

}  // namespace tessera::cli::runner
