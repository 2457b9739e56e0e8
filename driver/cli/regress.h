// The regression runner: a declarative YAML suite (regressions/*.yaml)
// expanded into jobs (kernel x variant x shape x config), each run as its own
// `tessera run` process (SystemC allows one simulation per process), with
// results, JUnit XML, a Markdown summary and baselines.
#pragma once

#include "job.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::cli::regress {

using runner::Job;
using runner::JobResult;
using runner::Status;

struct Suite {
  std::string name;  // file stem
  std::vector<Job> jobs;
};

// A suite file with a problem: "FILE:LINE: message".
class SuiteError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

Suite load_suite(const std::string& path);

// Jobs of `group` (all when empty) whose id matches the glob `filter` (all
// when empty), then the deterministic shard `index` of `count` (1-based).
std::vector<Job> select(const Suite& suite, const std::string& group, const std::string& filter, int index, int count);

// Compares results with a baseline ({id: {time_ns, cycles}}); a job whose
// time moved beyond its tolerance gets status slower/faster with the delta.
void compare_to_baseline(std::vector<JobResult>& results, const nlohmann::json& baseline);
// Jobs of one agreement group (a test's `fidelities`) that ran but whose
// times or tensor cycles differ all get status disagree, with both figures.
void check_agreement(std::vector<JobResult>& results);
nlohmann::json make_baseline(const std::vector<JobResult>& results);
// A row per job for the suite's page (profile_page.h regress_page): its
// status, time, the baseline's time and the change against it in percent
// (absent where the baseline has no time for it), and its tolerance.
nlohmann::json against_baseline(const std::vector<JobResult>& results, const nlohmann::json& baseline);

std::string junit_xml(const std::string& suite, const std::vector<JobResult>& results);
// The summary: per kernel a matrix (test, variant and shape down, config
// across; each cell status, time, cycles, HFU), the slowest jobs, simulated
// to wall time, failures bucketed by normalised message; with `all_jobs`, a
// row per job at the end.
std::string summary_markdown(const std::string& suite, const std::vector<JobResult>& results, bool all_jobs = true);

// Progress of a suite. On a terminal (`live`) one line redrawn in place: done
// of total, passed, failed, elapsed, estimated time left, and a note (e.g.
// the batch scheduler's state); failures are printed above it as they come.
// Otherwise one plain line per finished job, for logs and CI.
class Progress {
public:
  Progress(std::FILE* out, std::size_t total, bool live);
  void job_done(const JobResult& r);
  // Redraws the live line (elapsed time moves); a no-op when not live.
  void tick(const std::string& note = "");
  // Ends the live line.
  void finish();
  std::size_t done() const { return done_; }
  std::size_t passed() const { return passed_; }

private:
  std::string line() const;
  std::FILE* out_;
  std::size_t total_, done_ = 0, passed_ = 0;
  bool live_;
  std::string note_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tessera::cli::regress
