// `tessera compare`: one kernel on several whole configs (generations,
// config files, --set variants) side by side. A comparison is a study of one
// parameter of whole configs (study.h), so it runs through the sharded
// runner like a sweep and its results.json is a study's (scripts/plot-study
// draws it); on top of that it has its own table: time, speed-up over the
// first config, HFU against each config's own peak, the bounding engine and
// the top stalls.
#pragma once

#include "study.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::cli::compare {

struct Request {
  std::string kernel, variant, shape;  // shape as --shape takes it ("M=512,N=1024")
  std::vector<std::string> configs;    // ConfigChoice texts, in column order
  std::vector<std::string> sets;       // --set, applied on every config
  std::string fidelity;                // empty: each config's default
  bool no_data = false;
  std::uint64_t seed = 1;
  double timeout_s = 1800;
};

// The comparison as a study: checks the kernel, variant and shape against
// the registry and every config (with its overrides) against the config
// loader. Throws StudyError (bad config, override or repeated config) or
// KernelError (kernel, variant, shape) naming the problem.
sweep::Study study_of(const Request& request);

// One config's column of the comparison.
struct Row {
  std::string config;        // as given
  std::string resolved;      // the config's own name (report.config)
  std::string variant;       // the kernel variant that ran (report.variant)
  std::string status;        // pass, fail, infeasible, ...
  std::string message;
  double time_ns = 0;
  double speedup = 0;        // time of the first config that ran / this time; 0 when it did not run
  double hfu_percent = 0;    // against this config's bf16 peak
  double peak_tflops = 0, achieved_tflops = 0;
  std::string bound_by;      // the busiest engine
  double bound_busy_percent = 0;
  struct Stall {
    std::string engine, reason;
    double percent = 0;
  };
  std::vector<Stall> stalls;  // the report's top stalls, longest first
};

std::vector<Row> rows(const std::vector<sweep::Point>& points, const std::vector<runner::JobResult>& results);

// The terminal table, the CSV (one row per config) and the JSON rows.
std::string table(const sweep::Study& study, const std::vector<Row>& rows);
std::string csv(const std::vector<Row>& rows);
nlohmann::json json(const std::vector<Row>& rows);

}  // namespace tessera::cli::compare
