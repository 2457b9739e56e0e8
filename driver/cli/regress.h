// The regression runner: a declarative YAML suite (regressions/*.yaml)
// expanded into jobs (kernel x variant x shape x config), each run as its own
// `tessera run` process (SystemC allows one simulation per process), with
// results, JUnit XML, a Markdown summary and baselines.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::cli::regress {

struct Job {
  std::string id;  // test/variant/config/shape, unique in the suite
  std::string test, kernel, variant, config, fidelity;
  std::map<std::string, std::int64_t> shape;
  std::uint64_t seed = 1;
  double timeout_s = 600;
  double tolerance_percent = 2;  // allowed time change against the baseline
  std::vector<std::string> groups;
  std::vector<std::string> overrides;  // config overrides, "key=value" (tessera run --set)
  bool no_data = false;                // timing only (tessera run --no-data)
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

struct JobResult {
  Job job;
  std::string status;  // pass, fail, error, crash, timeout, slower, faster
  std::string message;
  double wall_seconds = 0;
  nlohmann::json report = nlohmann::json::object();  // the job's report, when it produced one
};

// Compares results with a baseline ({id: {time_ns, cycles}}); a job whose
// time moved beyond its tolerance gets status slower/faster with the delta.
void compare_to_baseline(std::vector<JobResult>& results, const nlohmann::json& baseline);
nlohmann::json make_baseline(const std::vector<JobResult>& results);

std::string junit_xml(const std::string& suite, const std::vector<JobResult>& results);
std::string summary_markdown(const std::string& suite, const std::vector<JobResult>& results);

}  // namespace tessera::cli::regress
