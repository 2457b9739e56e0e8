// The regression runner: a declarative YAML suite (regressions/*.yaml)
// expanded into jobs (kernel x variant x shape x config), each run as its own
// `tessera run` process (SystemC allows one simulation per process), with
// results, JUnit XML, a Markdown summary and baselines.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::cli::regress {

struct Job {
  std::string id;  // test/variant/config/shape, unique in the suite
  std::string test, kernel, variant, config, fidelity;
  std::map<std::string, std::int64_t> shape;
  std::map<std::string, std::string> params;  // tunable parameters (tessera run --param)
  std::uint64_t seed = 1;
  double timeout_s = 600;
  double tolerance_percent = 2;  // allowed time change against the baseline
  std::vector<std::string> groups;
  std::vector<std::string> overrides;  // config overrides, "key=value" (tessera run --set)
  bool no_data = false;                // timing only (tessera run --no-data)
  std::string file;  // where the job's test is written, for errors
  int line = 0;
};

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

// "I/N" with 1 <= I <= N, as --shard takes it; false when the text is not that.
bool parse_shard(const std::string& text, int* index, int* count);

struct JobResult {
  Job job;
  std::string status;  // pass, fail, error, crash, timeout, slower, faster
  std::string message;
  double wall_seconds = 0;
  nlohmann::json report = nlohmann::json::object();  // the job's report, when it produced one
};

nlohmann::json to_json(const JobResult& r, const std::string& suite);
// The inverse of to_json; `suite` receives the suite's name.
JobResult result_from_json(const nlohmann::json& j, std::string* suite = nullptr);

// Compares results with a baseline ({id: {time_ns, cycles}}); a job whose
// time moved beyond its tolerance gets status slower/faster with the delta.
void compare_to_baseline(std::vector<JobResult>& results, const nlohmann::json& baseline);
nlohmann::json make_baseline(const std::vector<JobResult>& results);

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
