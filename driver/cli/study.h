// What-if studies (configs/studies/*.yaml): a base config, parameters to vary
// (each a list or a range of values for one or more config keys, or a list of
// whole configs; the grid is their product), the kernels to run at every
// point, and the fidelity. `tessera compare` is a study of one configs
// parameter, built from its command line.
// Expanded into regression jobs, run by the regression runner's job
// machinery, and written as results.csv / results.json for scripts/plot-study.
#pragma once

#include "regress.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tessera::cli::sweep {

struct Parameter {
  std::string name;                 // its column in the results
  std::vector<std::string> keys;    // config keys, all set to each value (none for a configs parameter)
  std::vector<std::string> values;  // YAML scalar text, in study order
  std::vector<int> value_lines;     // where each value was written
  int line = 0;
  // Each value is a whole config (a ConfigChoice): the point runs on it
  // instead of the study's base, so a sweep can vary the generation itself.
  bool configs = false;
};

// A whole config as a study value or a `tessera compare` column: a config
// name or YAML file, then overrides, "neuroncore-v2+hbm.bandwidth_gbps=820".
// A name that is not a shipped config but neuroncore-NAME is means that one
// (v1 .. v4).
struct ConfigChoice {
  std::string config;
  std::vector<std::string> overrides;  // "key=value", as tessera run --set takes them
};
// `relative_to`: a folder relative files are resolved against (the study's).
// Throws StudyError naming the text on an empty config or a malformed override.
ConfigChoice parse_config_choice(const std::string& text, const std::string& relative_to = "");

struct KernelRuns {
  std::string kernel;
  std::vector<std::string> variants;  // empty: the kernel's default
  std::vector<std::string> dtypes;    // input dtypes (tessera run --dtype); empty: the kernel's default
  std::vector<int> cores;             // tessera run --cores N; empty: one core with its share of HBM
  std::vector<std::string> shards;    // with cores: the dimensions split across them, each its own runs; empty: the kernel's first
  std::vector<std::map<std::string, std::int64_t>> shapes;  // empty: the kernel's default
  std::vector<std::map<std::string, std::string>> params;  // tunable parameters; empty: the kernel's defaults
  // Timed runs of each point's search of the tunable parameters (tessera run
  // --retune); 0: none; unset: the study's.
  std::optional<std::size_t> retune;
  int line = 0;
};

struct Study {
  std::string name;  // file stem
  std::string path, description;
  std::string base;  // config name or file (a configs parameter replaces it at each point)
  std::vector<std::string> sets;  // overrides applied at every point before the parameters' ("key=value")
  std::string fidelity = "tlm";
  bool no_data = false;
  double timeout_s = 1800;
  std::uint64_t seed = 1;
  std::size_t retune = 0;  // every kernel entry's, unless it sets its own
  std::vector<Parameter> parameters;
  std::vector<KernelRuns> kernels;
};

// A study file with a problem: "FILE:LINE: message".
class StudyError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// What the study parser asks about kernels, so that it needs no kernel
// library (which links the simulator): the kernel registry answers in
// `tessera` (registry_kernels.h), a small table in the study fuzz harness.
// Each check throws a std::exception whose message names the problem and
// what is allowed (the parser adds the file and line).
class KernelLookup {
public:
  virtual ~KernelLookup() = default;
  virtual bool has(const std::string& kernel) const = 0;
  // Every kernel, for the message about an unknown one.
  virtual std::vector<std::string> names() const = 0;
  // Whether the kernel can split across cores (declares shard dimensions).
  virtual bool shards(const std::string& kernel) const = 0;
  // `variant` is one of the kernel's; "" is its default.
  virtual void check_variant(const std::string& kernel, const std::string& variant) const = 0;
  virtual void check_shard(const std::string& kernel, const std::string& shard) const = 0;
  virtual void check_dtype(const std::string& kernel, const std::string& variant, const std::string& dtype) const = 0;
  virtual void check_params(const std::string& kernel, const std::string& variant,
                            const std::map<std::string, std::string>& params) const = 0;
  virtual void check_shape(const std::string& kernel, const std::map<std::string, std::int64_t>& shape) const = 0;
};

// Parses and checks a study: the keys exist in the config schema, every
// point of the grid is a valid config, every kernel, variant and shape
// parameter exists in `kernels`. `only_kernels` (when not empty) keeps the
// kernel entries of those kernels and skips the others unchecked: a study
// may list kernels this build does not have yet.
Study load_study(const std::string& path, const KernelLookup& kernels, const std::set<std::string>& only_kernels = {});

// Checks that every point of a study's grid is a config the loader accepts
// (values within limits, cross-checks): the error names the study's file,
// the value's line, the point and the loader's problems.
void check_points(const Study& study);

// One run of the grid: the parameter values (in parameter order) and the job.
struct Point {
  std::vector<std::pair<std::string, std::string>> parameters;
  regress::Job job;
};

// The grid: every combination of parameter values (the first parameter
// varies slowest), times every kernel, variant and shape.
std::vector<Point> expand(const Study& study);

// The deterministic shard `index` of `count` (1-based) of the grid: every
// count-th point in grid order, the same split on every machine, so shards
// run anywhere merge back into the whole grid.
std::vector<Point> shard(const std::vector<Point>& points, int index, int count);

// One row per point: parameters, kernel, variant, shape, status, then the
// report's figures (time, cycles, HFU, MFU, per-engine utilisation, DMA and
// HBM traffic).
std::string results_csv(const Study& study, const std::vector<Point>& points,
                        const std::vector<regress::JobResult>& results);
// The study, and per point its parameters, job and report (without the raw
// statistics, which stay in the job's folder).
nlohmann::json results_json(const Study& study, const std::vector<Point>& points,
                            const std::vector<regress::JobResult>& results);

}  // namespace tessera::cli::sweep
