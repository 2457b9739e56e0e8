// One job of a flow (a regression suite's kernel x variant x config x shape,
// a study's grid point, a tuning candidate): what `tessera run` runs, and the
// result it leaves. Every flow of the sharded runner (runner.h) speaks these.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::cli::runner {

struct Job {
  std::string id;  // unique in its flow; also its folder name (with '/' as '.')
  std::string test, kernel, variant, config, fidelity;
  std::map<std::string, std::int64_t> shape;
  std::map<std::string, std::string> params;  // tunable parameters (tessera run --param)
  std::string dtype;                          // input dtype (tessera run --dtype); "": the kernel's default
  int cores = 0;                              // tessera run --cores N; 0: one core with its share of HBM
  std::string shard;                          // with cores: tessera run --shard D; "": the kernel's first
  std::uint64_t seed = 1;
  double timeout_s = 600;
  double tolerance_percent = 2;  // allowed time change against the baseline
  std::vector<std::string> groups;
  std::vector<std::string> overrides;  // config overrides, "key=value" (tessera run --set)
  bool no_data = false;                // timing only (tessera run --no-data)
  std::size_t retune = 0;              // tessera run --retune N: search the tunable parameters first; 0: no
  // A suite test's `fidelities`: the same job's id in every fidelity (the id
  // without its "@fidelity"); the jobs of one group must end on the same
  // picosecond and tensor cycle (regress::check_agreement). "": no group.
  std::string agree_group;
  std::string file;  // where the job's test is written, for errors
  int line = 0;
};

// `jobs` crossed with `values`: each job once per value, `set(job, value)`
// giving it the value; the jobs' order outermost, so crossing axis after
// axis lists the first axis slowest. A suite's and a study's matrices are
// built this way.
template <typename T, typename Set>
std::vector<Job> cross(const std::vector<Job>& jobs, const std::vector<T>& values, Set set) {
  std::vector<Job> out;
  out.reserve(jobs.size() * values.size());
  for (const Job& j : jobs)
    for (const T& v : values) {
      out.push_back(j);
      set(out.back(), v);
    }
  return out;
}

// How a job ended. The names (to_string) are what results.json, junit.xml
// and the summaries show.
enum class Status {
  Pass,         // ran; numerics and time as expected
  Fail,         // the run failed: exit 1 (simulation error, deadlock, numerics)
  Error,        // bad input for this job: exit 2 (a kernel rule broken)
  Crash,        // killed by a signal
  Timeout,      // past its timeout_s, killed
  Slower,       // time beyond tolerance against the baseline
  Faster,
  Missing,      // a Slurm shard left no results
  Infeasible,   // a study point whose kernel does not fit the config: an answer
  Interrupted,  // the runner was interrupted (Ctrl-C) before the job ended
  Disagree,     // ran, but its time differs from the same job in another fidelity
};

const char* to_string(Status s);
// The status of a name as to_string gives it; nullopt for another text.
std::optional<Status> parse_status(const std::string& text);

struct JobResult {
  Job job;
  Status status = Status::Pass;
  std::string message;
  double wall_seconds = 0;
  nlohmann::json report = nlohmann::json::object();  // the job's report, when it produced one
};

// A job's entry in results.json (and its folder's result.json).
nlohmann::json to_json(const JobResult& r, const std::string& suite);
// The inverse of to_json; `suite` receives the suite's name. Throws
// nlohmann::json::exception on a malformed entry (an unknown status included).
JobResult result_from_json(const nlohmann::json& j, std::string* suite = nullptr);

// Shard `index` of `count` (1-based) of a flow's jobs (or of anything in job
// order): every count-th from the index-th, the same split on every machine.
template <typename T>
std::vector<T> shard_of(const std::vector<T>& all, int index, int count) {
  std::vector<T> shard;
  for (std::size_t i = static_cast<std::size_t>(index - 1); i < all.size(); i += static_cast<std::size_t>(count))
    shard.push_back(all[i]);
  return shard;
}

inline constexpr int kMaxShards = 1000000;

// "I/N" with 1 <= I <= N <= kMaxShards, as --shard takes it; false when the
// text is not that.
bool parse_shard(const std::string& text, int* index, int* count);

}  // namespace tessera::cli::runner
