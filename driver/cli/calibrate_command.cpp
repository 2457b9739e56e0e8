// tessera calibrate: the calibration suite (regressions/calibration.yaml,
// docs/calibration.md). Each row is a published hardware figure and the
// microbenchmark that measures the same thing on the model: the row runs the
// microbenchmark (at two repeat counts when the figure is a per-repeat cost,
// so that the program's fixed start and end cancel), turns the run's
// statistics into the documented quantity, and compares. A row is calibrated
// when the model is within the row's tolerance (or inside the documented
// range). A row the model does not meet yet carries a `known_gap` saying why
// and what will fix it: it is accepted and printed as NOT CALIBRATED. A row
// with a known_gap that the model meets fails too, so that the marker is
// removed and the row then guards the calibration.
#include "commands.h"
#include "files.h"

#include "job.h"
#include "job_runner.h"
#include "regress.h"
#include "yaml_file.h"

#include "arch/config.h"
#include "common/kernel.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fnmatch.h>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using runner::Job;
using runner::JobResult;
using regress::SuiteError;

// --- The suite ----------------------------------------------------------------

// How a row turns its metric (per repeat) into the documented quantity.
enum class Quantity { Value, Ns, Cycles, BytesPerNs, DmaEfficiency, PercentOfTime };

struct Row {
  std::string id, what, config, kernel, variant, fidelity;
  std::map<std::string, std::int64_t> shape;
  std::vector<std::string> sets;
  // The measurement: metric [- minus], per event; with a repeat parameter,
  // the difference between its two values, per extra repeat.
  std::string metric, minus;
  std::string repeat_param;
  std::int64_t repeat_from = 0, repeat_to = 0;
  double per_repeat = 1;
  Quantity quantity = Quantity::Value;
  std::string engine;  // Quantity::Cycles: whose clock
  double bytes = 0;    // per event, for BytesPerNs and DmaEfficiency
  std::string relative_to;  // the figure is divided by this (earlier) row's
  // What the documentation says: a figure (with a relative tolerance) or a range.
  std::optional<double> documented;
  double range_min = 0, range_max = 0;
  double tolerance = 0.15;
  std::string source, note, known_gap;
  double timeout_s = 300;
  int line = 0;
};

struct CalibrationSuite {
  std::string file;
  std::vector<Row> rows;
};

[[noreturn]] void fail_at(const std::string& file, const YAML::Node& at, const std::string& message) {
  cli::fail_at<SuiteError>(file, at, message);
}

template <typename T>
T get(const std::string& file, const YAML::Node& n, const std::string& key) {
  return scalar_as<T, SuiteError>(file, n, key);
}

// "15%" or 0.15.
double fraction(const std::string& file, const YAML::Node& n, const std::string& key) {
  const std::string text = n.Scalar();
  if (!text.empty() && text.back() == '%') {
    try {
      return std::stod(text.substr(0, text.size() - 1)) / 100.0;
    } catch (const std::exception&) {
      fail_at(file, n, fmt::format("'{}: {}' is not a percentage", key, text));
    }
  }
  return get<double>(file, n, key);
}

const std::set<std::string> kRowKeys = {"id",      "what",     "config",     "kernel",    "variant",  "fidelity",
                                        "shape",   "set",      "measure",    "minus",     "repeat",   "per_repeat",
                                        "as",      "bytes",    "relative_to", "documented", "tolerance", "source",
                                        "note",    "known_gap", "timeout_s"};

void check_keys(const std::string& file, const YAML::Node& map, const std::set<std::string>& allowed,
                const std::string& where) {
  cli::check_keys<SuiteError>(file, map, allowed, where);
}

void parse_quantity(const std::string& file, const YAML::Node& n, Row& r) {
  const std::string text = n.Scalar();
  if (text == "value") r.quantity = Quantity::Value;
  else if (text == "ns") r.quantity = Quantity::Ns;
  else if (text == "bytes_per_ns") r.quantity = Quantity::BytesPerNs;
  else if (text == "dma_efficiency") r.quantity = Quantity::DmaEfficiency;
  else if (text == "percent_of_time") r.quantity = Quantity::PercentOfTime;
  else if (text.rfind("cycles:", 0) == 0) {
    r.quantity = Quantity::Cycles;
    r.engine = text.substr(7);
    if (r.engine != "tensor" && r.engine != "vector" && r.engine != "scalar" && r.engine != "gpsimd")
      fail_at(file, n, fmt::format("'as: {}': the engine is one of tensor, vector, scalar, gpsimd", text));
  } else {
    fail_at(file, n, fmt::format("'as: {}': expected value, ns, cycles:ENGINE, bytes_per_ns, dma_efficiency or "
                                 "percent_of_time", text));
  }
}

// The row's kernel, variant, shape parameters and config exist (a misspelt
// name is an error here, at its line, rather than a failed run later).
void check_runs(const std::string& path, const YAML::Node& n, const Row& r) {
  const kernels::KernelSpec* spec = kernels::find_kernel(r.kernel);
  if (!spec) fail_at(path, n["kernel"], fmt::format("row '{}': no kernel '{}' (tessera list kernels)", r.id, r.kernel));
  try {
    spec->variant(r.variant);
  } catch (const std::exception& e) {
    fail_at(path, n["variant"], fmt::format("row '{}': {}", r.id, e.what()));
  }
  std::map<std::string, std::int64_t> shape = r.shape;
  if (!r.repeat_param.empty()) shape[r.repeat_param] = r.repeat_from;
  try {
    kernels::resolve_shape(*spec, shape);
  } catch (const std::exception& e) {
    fail_at(path, n["shape"] ? n["shape"] : n, fmt::format("row '{}': {}", r.id, e.what()));
  }
  try {
    std::vector<arch::Override> overrides;
    for (const auto& s : r.sets) overrides.push_back(arch::parse_override(s));
    arch::load_config(r.config, overrides);
  } catch (const arch::ConfigError& e) {
    std::string what;
    for (const auto& d : e.diagnostics()) what += (what.empty() ? "" : "; ") + d.str();
    fail_at(path, n["config"], fmt::format("row '{}': config '{}': {}", r.id, r.config, what));
  } catch (const std::exception& e) {
    fail_at(path, n["config"], fmt::format("row '{}': config '{}': {}", r.id, r.config, e.what()));
  }
}

CalibrationSuite load(const std::string& path) {
  YAML::Node root;
  try {
    root = load_yaml_file(path);
  } catch (const YamlFileError& e) {
    throw SuiteError(e.what());
  }
  CalibrationSuite suite{path, {}};
  check_keys(path, root, {"defaults", "rows"}, "the suite");
  Row defaults;
  defaults.fidelity = "tlm";
  if (root["defaults"]) {
    const YAML::Node d = root["defaults"];
    check_keys(path, d, {"fidelity", "tolerance", "timeout_s"}, "defaults");
    if (d["fidelity"]) defaults.fidelity = get<std::string>(path, d["fidelity"], "fidelity");
    if (d["tolerance"]) defaults.tolerance = fraction(path, d["tolerance"], "tolerance");
    if (d["timeout_s"]) defaults.timeout_s = get<double>(path, d["timeout_s"], "timeout_s");
  }
  if (!root["rows"] || !root["rows"].IsSequence()) fail_at(path, root, "the suite needs a list 'rows'");
  std::set<std::string> ids;
  for (const YAML::Node& n : root["rows"]) {
    check_keys(path, n, kRowKeys, "a row");
    Row r = defaults;
    r.line = n.Mark().line + 1;
    for (const char* key : {"id", "what", "config", "kernel", "measure", "source"})
      if (!n[key]) fail_at(path, n, fmt::format("a row needs '{}'", key));
    r.id = get<std::string>(path, n["id"], "id");
    if (!ids.insert(r.id).second) fail_at(path, n["id"], fmt::format("row id '{}' appears twice", r.id));
    r.what = get<std::string>(path, n["what"], "what");
    r.config = get<std::string>(path, n["config"], "config");
    r.kernel = get<std::string>(path, n["kernel"], "kernel");
    if (n["variant"]) r.variant = get<std::string>(path, n["variant"], "variant");
    if (n["fidelity"]) r.fidelity = get<std::string>(path, n["fidelity"], "fidelity");
    if (n["shape"]) {
      if (!n["shape"].IsMap()) fail_at(path, n["shape"], "'shape' must be a mapping of parameter: value");
      for (auto it = n["shape"].begin(); it != n["shape"].end(); ++it)
        r.shape[it->first.Scalar()] = get<std::int64_t>(path, it->second, it->first.Scalar());
    }
    if (n["set"]) {
      if (!n["set"].IsSequence()) fail_at(path, n["set"], "'set' must be a list of key=value overrides");
      for (const auto& s : n["set"]) r.sets.push_back(get<std::string>(path, s, "set"));
    }
    r.metric = get<std::string>(path, n["measure"], "measure");
    if (n["minus"]) r.minus = get<std::string>(path, n["minus"], "minus");
    if (n["repeat"]) {
      const YAML::Node rep = n["repeat"];
      if (!rep.IsMap() || rep.size() != 1 || !rep.begin()->second.IsSequence() || rep.begin()->second.size() != 2)
        fail_at(path, rep, "'repeat' must be {PARAM: [FROM, TO]}, e.g. {N: [2, 10]}");
      r.repeat_param = rep.begin()->first.Scalar();
      r.repeat_from = get<std::int64_t>(path, rep.begin()->second[0], "repeat");
      r.repeat_to = get<std::int64_t>(path, rep.begin()->second[1], "repeat");
      if (r.repeat_to <= r.repeat_from) fail_at(path, rep, "'repeat': TO must be larger than FROM");
    }
    if (n["per_repeat"]) r.per_repeat = get<double>(path, n["per_repeat"], "per_repeat");
    if (r.per_repeat <= 0) fail_at(path, n["per_repeat"], "'per_repeat' must be positive");
    if (n["as"]) parse_quantity(path, n["as"], r);
    if (n["bytes"]) r.bytes = get<double>(path, n["bytes"], "bytes");
    if ((r.quantity == Quantity::BytesPerNs || r.quantity == Quantity::DmaEfficiency) && r.bytes <= 0)
      fail_at(path, n, fmt::format("row '{}': 'as: {}' needs 'bytes' (bytes moved per event)", r.id,
                                   n["as"].Scalar()));
    if (n["relative_to"]) {
      r.relative_to = get<std::string>(path, n["relative_to"], "relative_to");
      if (!ids.count(r.relative_to) || r.relative_to == r.id)
        fail_at(path, n["relative_to"], fmt::format("relative_to '{}' is not an earlier row", r.relative_to));
    }
    if (!n["documented"]) fail_at(path, n, "a row needs 'documented' (a figure, or {min: A, max: B})");
    if (n["documented"].IsMap()) {
      check_keys(path, n["documented"], {"min", "max"}, "documented");
      if (!n["documented"]["min"] || !n["documented"]["max"])
        fail_at(path, n["documented"], "a documented range needs 'min' and 'max'");
      r.range_min = get<double>(path, n["documented"]["min"], "min");
      r.range_max = get<double>(path, n["documented"]["max"], "max");
      if (r.range_max < r.range_min) fail_at(path, n["documented"], "documented range: max is below min");
    } else {
      r.documented = get<double>(path, n["documented"], "documented");
      if (*r.documented == 0) fail_at(path, n["documented"], "a documented figure of 0 has no relative error; "
                                                             "give a range");
    }
    if (n["tolerance"]) r.tolerance = fraction(path, n["tolerance"], "tolerance");
    r.source = get<std::string>(path, n["source"], "source");
    if (n["note"]) r.note = get<std::string>(path, n["note"], "note");
    if (n["known_gap"]) {
      r.known_gap = get<std::string>(path, n["known_gap"], "known_gap");
      if (r.known_gap.empty()) fail_at(path, n["known_gap"], "known_gap must say why the row is not calibrated");
    }
    if (n["timeout_s"]) r.timeout_s = get<double>(path, n["timeout_s"], "timeout_s");
    check_runs(path, n, r);
    suite.rows.push_back(std::move(r));
  }
  return suite;
}

// --- Running the rows -------------------------------------------------------

std::vector<Job> jobs_of(const Row& r) {
  Job base;
  base.test = r.id;
  base.kernel = r.kernel;
  base.variant = r.variant;
  base.config = r.config;
  base.fidelity = r.fidelity;
  base.shape = r.shape;
  base.overrides = r.sets;
  base.no_data = true;  // timing does not depend on data (Cli.NoDataGivesTheSameCycles)
  base.timeout_s = r.timeout_s;
  if (r.repeat_param.empty()) {
    base.id = r.id;
    return {base};
  }
  Job from = base, to = base;
  from.id = r.id + "/" + r.repeat_param + std::to_string(r.repeat_from);
  to.id = r.id + "/" + r.repeat_param + std::to_string(r.repeat_to);
  from.shape[r.repeat_param] = r.repeat_from;
  to.shape[r.repeat_param] = r.repeat_to;
  return {from, to};
}

// One finished run: its report and statistics (stats.txt of its folder).
struct Run {
  const JobResult* result = nullptr;
  std::map<std::string, double> stats;
};

std::map<std::string, double> read_stats(const fs::path& file) {
  std::map<std::string, double> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string name;
    double value = 0;
    if (ss >> name >> value) out[name] = value;
  }
  return out;
}

// A statistic (a glob sums every match), else a field of the report
// ("time_ns", "engines.tensor.busy_ns").
double metric(const Run& run, const std::string& name) {
  if (name.find_first_of("*?[") != std::string::npos) {
    double sum = 0;
    bool any = false;
    for (const auto& [k, v] : run.stats)
      if (fnmatch(name.c_str(), k.c_str(), 0) == 0) {
        sum += v;
        any = true;
      }
    if (!any) throw std::runtime_error(fmt::format("no statistic matches '{}'", name));
    return sum;
  }
  if (const auto it = run.stats.find(name); it != run.stats.end()) return it->second;
  const nlohmann::json* j = &run.result->report;
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t dot = std::min(name.find('.', start), name.size());
    const std::string part = name.substr(start, dot - start);
    if (!j->is_object() || !j->contains(part))
      throw std::runtime_error(fmt::format("no statistic or report field '{}' (stats.txt lists the statistics)", name));
    j = &(*j)[part];
    start = dot + 1;
  }
  if (!j->is_number()) throw std::runtime_error(fmt::format("report field '{}' is not a number", name));
  return j->get<double>();
}

// DMA engines that moved descriptors in `to` and not (as many) in `from`.
int engines_used(const Run& to, const Run* from) {
  int n = 0;
  for (const auto& [k, v] : to.stats) {
    if (fnmatch("core.dma*.descriptors", k.c_str(), 0) != 0) continue;
    const double before = from && from->stats.count(k) ? from->stats.at(k) : 0;
    n += v > before;
  }
  return n;
}

struct Outcome {
  bool measured = false;
  double model = 0;
  double error = 0;  // relative: (model - documented) / documented, or to the nearest end of the range
  bool within = false;
  std::string status;  // calibrated, not calibrated, FAIL
  std::string message;
  double wall_seconds = 0;
};

double engine_clock(const arch::HwConfig& hw, const std::string& engine) {
  if (engine == "tensor") return hw.tensor.clock_ghz;
  if (engine == "vector") return hw.vector.clock_ghz;
  if (engine == "scalar") return hw.scalar.clock_ghz;
  return hw.gpsimd.clock_ghz;
}

double figure(const Row& r, const std::vector<Run>& runs) {
  const Run& last = runs.back();
  const Run* first = runs.size() == 2 ? &runs.front() : nullptr;
  const auto value = [&](const Run& run) { return metric(run, r.metric) - (r.minus.empty() ? 0 : metric(run, r.minus)); };
  const double events = first ? static_cast<double>(r.repeat_to - r.repeat_from) * r.per_repeat : r.per_repeat;
  const double per_event = (value(last) - (first ? value(*first) : 0)) / events;
  const double time_per_event = (metric(last, "time_ns") - (first ? metric(*first, "time_ns") : 0)) / events;
  std::vector<arch::Override> overrides;
  for (const auto& s : r.sets) overrides.push_back(arch::parse_override(s));
  switch (r.quantity) {
    case Quantity::Value:
    case Quantity::Ns: return per_event;
    case Quantity::Cycles: return per_event * engine_clock(arch::load_config(r.config, overrides).hw, r.engine);
    case Quantity::BytesPerNs: return r.bytes / per_event;
    case Quantity::DmaEfficiency: {
      const int engines = engines_used(last, first);
      const double peak = engines * arch::load_config(r.config, overrides).hw.dma.bytes_per_ns;
      return r.bytes / per_event / peak;
    }
    case Quantity::PercentOfTime: return 100.0 * per_event / time_per_event;
  }
  return per_event;
}

Outcome evaluate(const std::string& file, const Row& r, const std::vector<Run>& runs,
                 const std::map<std::string, Outcome>& done) {
  Outcome o;
  for (const auto& run : runs) {
    o.wall_seconds += run.result->wall_seconds;
    if (run.result->status != runner::Status::Pass) {
      std::string why = run.result->message.substr(0, run.result->message.find('\n'));
      o.message = fmt::format("{} did not run: {} {}", run.result->job.id, runner::to_string(run.result->status), why);
    }
  }
  if (o.message.empty() && !r.relative_to.empty() && !done.at(r.relative_to).measured)
    o.message = fmt::format("row '{}' (relative_to) was not measured", r.relative_to);
  if (o.message.empty()) {
    try {
      o.model = figure(r, runs);
      if (!r.relative_to.empty()) o.model /= done.at(r.relative_to).model;
      o.measured = std::isfinite(o.model);
      if (!o.measured) o.message = "the figure is not finite (a zero difference between the two runs?)";
    } catch (const std::exception& e) {
      o.message = e.what();
    }
  }
  if (o.measured) {
    if (r.documented) {
      o.error = (o.model - *r.documented) / std::fabs(*r.documented);
      o.within = std::fabs(o.error) <= r.tolerance;
    } else {
      o.within = o.model >= r.range_min && o.model <= r.range_max;
      const double edge = o.model < r.range_min ? r.range_min : r.range_max;
      o.error = o.within || edge == 0 ? 0.0 : (o.model - edge) / std::fabs(edge);
    }
  }
  if (!r.known_gap.empty()) {
    o.status = o.measured && o.within ? "FAIL" : "not calibrated";
    if (o.measured && o.within)
      o.message = fmt::format("within its tolerance now: remove the known_gap marker of row '{}' ({}:{})", r.id,
                              file, r.line);
  } else if (!o.measured) {
    o.status = "FAIL";
  } else {
    o.status = o.within ? "calibrated" : "FAIL";
    if (!o.within) o.message = "outside its tolerance";
  }
  return o;
}

// --- Output -----------------------------------------------------------------

// Four significant digits: enough to see a change, few enough to read.
std::string number(double v) {
  if (std::fabs(v) >= 10000) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

std::string unit_of(const Row& r) {
  if (!r.relative_to.empty()) return "x";
  switch (r.quantity) {
    case Quantity::Ns: return "ns";
    case Quantity::Cycles: return r.engine + " cycles";
    case Quantity::BytesPerNs: return "B/ns";
    case Quantity::DmaEfficiency: return "of peak";
    case Quantity::PercentOfTime: return "%";
    case Quantity::Value: break;
  }
  return "";
}

std::string documented_text(const Row& r) {
  const std::string u = unit_of(r);
  const std::string sep = u.empty() ? "" : " ";
  if (r.documented) return fmt::format("{}{}{} (±{:.0f} %)", number(*r.documented), sep, u, r.tolerance * 100);
  return fmt::format("{} .. {}{}{}", number(r.range_min), number(r.range_max), sep, u);
}

std::string model_text(const Row& r, const Outcome& o) {
  if (!o.measured) return "-";
  const std::string u = unit_of(r);
  return number(o.model) + (u.empty() ? "" : " " + u);
}

std::string error_text(const Outcome& o) {
  if (!o.measured) return "-";
  return fmt::format("{:+.1f} %", o.error * 100);
}

std::string cell(std::string s) {
  for (std::size_t at = s.find('|'); at != std::string::npos; at = s.find('|', at + 2)) s.replace(at, 1, "\\|");
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

std::string status_text(const Row& r, const Outcome& o) {
  if (o.status == "calibrated") return "calibrated";
  if (o.status == "not calibrated")
    return fmt::format("**NOT CALIBRATED**: {}{}", r.known_gap, o.measured ? "" : fmt::format(" ({})", o.message));
  return fmt::format("**FAIL**: {}", o.message);
}

std::string markdown_table(const CalibrationSuite& suite, const std::map<std::string, Outcome>& out) {
  std::string md = "| row | what | config | documented | source | model | error | status |\n"
                   "|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : suite.rows) {
    const Outcome& o = out.at(r.id);
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {} |\n", r.id, cell(r.what), r.config,
                      cell(documented_text(r)), cell(r.source), cell(model_text(r, o)), error_text(o),
                      cell(status_text(r, o)));
  }
  std::size_t calibrated = 0, gaps = 0, failed = 0;
  for (const auto& [id, o] : out) {
    calibrated += o.status == "calibrated";
    gaps += o.status == "not calibrated";
    failed += o.status == "FAIL";
  }
  md += fmt::format("\n{} rows: {} calibrated, {} not calibrated (known gaps), {} failing.\n", suite.rows.size(),
                    calibrated, gaps, failed);
  return md;
}

constexpr const char* kBegin = "<!-- BEGIN calibration table: generated by `tessera calibrate --update-doc` -->";
constexpr const char* kEnd = "<!-- END calibration table -->";

// The document with the generated table between its markers replaced; empty
// when the markers are missing.
std::string with_table(const std::string& doc, const std::string& table) {
  const std::size_t b = doc.find(kBegin), e = doc.find(kEnd);
  if (b == std::string::npos || e == std::string::npos || e < b) return "";
  return doc.substr(0, b) + kBegin + "\n" + table + kEnd + doc.substr(e + std::string(kEnd).size());
}

// --- The command ------------------------------------------------------------

struct CalibrateOptions {
  std::string suite = std::string(TESSERA_SOURCE_DIR) + "/regressions/calibration.yaml";
  std::string out = "out/calibration", filter, update_doc, check_doc;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool list = false;
};

int calibrate(const CalibrateOptions& o) {
  const CalibrationSuite suite = load(o.suite);
  std::vector<const Row*> rows;
  for (const Row& r : suite.rows)
    if (o.filter.empty() || fnmatch(o.filter.c_str(), r.id.c_str(), 0) == 0) rows.push_back(&r);
  if (rows.empty()) {
    std::cerr << fmt::format("tessera calibrate: no row matches '{}'\n", o.filter);
    return kExitBadInput;
  }
  if ((!o.update_doc.empty() || !o.check_doc.empty()) && rows.size() != suite.rows.size()) {
    std::cerr << "tessera calibrate: --update-doc and --check-doc need every row (no --filter)\n";
    return kExitBadInput;
  }
  std::vector<Job> jobs;
  for (const Row* r : rows)
    for (const Job& j : jobs_of(*r)) jobs.push_back(j);
  if (o.list) {
    for (const Row* r : rows) {
      std::cout << fmt::format("{}  ({}:{})\n", r->id, o.suite, r->line);
      for (const Job& j : jobs_of(*r)) {
        std::cout << "   ";
        for (const auto& a : runner::run_args(j, "DIR")) std::cout << ' ' << a;
        std::cout << '\n';
      }
    }
    return 0;
  }

  // Everything the run will read or write is checked before the jobs run.
  const fs::path out = fs::absolute(o.out).lexically_normal();
  for (const char* f : {"calibration.md", "results.json"}) prepare_output(out / f);
  for (const auto& [path, update] : {std::pair{o.update_doc, true}, std::pair{o.check_doc, false}}) {
    if (path.empty()) continue;
    if (with_table(read_file(path), "").empty()) {
      std::cerr << fmt::format("tessera calibrate: {} has no generated-table markers ({} ... {})\n", path, kBegin,
                               kEnd);
      return kExitBadInput;
    }
    if (update) check_writable(path);
  }
  std::cerr << fmt::format("tessera calibrate: {} rows, {} runs, {} at a time, in {}\n", rows.size(), jobs.size(),
                           o.jobs, out.string());
  const std::vector<JobResult> results = runner::run_jobs(jobs, o.jobs, out.string());
  std::map<std::string, const JobResult*> by_id;
  for (const auto& r : results) by_id[r.job.id] = &r;

  std::map<std::string, Outcome> outcomes;
  for (const Row* r : rows) {
    std::vector<Run> runs;
    for (const Job& j : jobs_of(*r)) {
      std::string dir = j.id;
      std::replace(dir.begin(), dir.end(), '/', '.');
      runs.push_back({by_id.at(j.id), read_stats(out / "jobs" / dir / "stats.txt")});
    }
    if (!r->relative_to.empty() && !outcomes.count(r->relative_to)) {
      Outcome missing;
      missing.status = r->known_gap.empty() ? "FAIL" : "not calibrated";
      missing.message = fmt::format("needs row '{}' (relative_to), which --filter left out", r->relative_to);
      outcomes[r->id] = missing;
      continue;
    }
    outcomes[r->id] = evaluate(o.suite, *r, runs, outcomes);
  }

  // The console: one line per row, then every failure with its cause.
  int failed = 0;
  for (const Row* r : rows) {
    const Outcome& oc = outcomes.at(r->id);
    failed += oc.status == "FAIL";
    std::cout << fmt::format("{:<16} {:<44} {:<14} documented {:<24} model {:<18} {:>9}\n",
                             oc.status == "not calibrated" ? "NOT CALIBRATED" : oc.status, r->id, r->config,
                             documented_text(*r), model_text(*r, oc), error_text(oc));
  }
  for (const Row* r : rows) {
    const Outcome& oc = outcomes.at(r->id);
    if (oc.status == "FAIL") std::cout << fmt::format("FAIL {} ({}:{}): {}\n", r->id, o.suite, r->line, oc.message);
  }

  CalibrationSuite shown{suite.file, {}};
  for (const Row* r : rows) shown.rows.push_back(*r);
  const std::string table = markdown_table(shown, outcomes);
  write_file(out / "calibration.md", table);
  nlohmann::json j = nlohmann::json::array();
  for (const Row* r : rows) {
    const Outcome& oc = outcomes.at(r->id);
    j.push_back({{"id", r->id}, {"config", r->config}, {"status", oc.status}, {"measured", oc.measured},
                 {"model", oc.model}, {"error", oc.error}, {"documented", r->documented ? *r->documented : NAN},
                 {"range", {r->range_min, r->range_max}}, {"known_gap", r->known_gap}, {"message", oc.message},
                 {"wall_seconds", oc.wall_seconds}});
  }
  write_file(out / "results.json", j.dump(2) + "\n");

  int status = failed ? 1 : 0;
  for (const auto& [path, update] : {std::pair{o.update_doc, true}, std::pair{o.check_doc, false}}) {
    if (path.empty()) continue;
    const std::string doc = read_file(path);
    const std::string fresh = with_table(doc, table);
    if (fresh.empty()) {
      std::cerr << fmt::format("tessera calibrate: {} has no generated-table markers ({} ... {})\n", path, kBegin,
                               kEnd);
      return kExitBadInput;
    }
    if (update) {
      write_file(path, fresh);
      std::cerr << fmt::format("tessera calibrate: updated the table in {}\n", path);
    } else if (fresh != doc) {
      std::cout << fmt::format("FAIL {} is out of date (the table differs from this run's, {}): run `tessera "
                               "calibrate --update-doc {}` and commit it with the change that moved the figures\n",
                               path, (out / "calibration.md").string(), path);
      status = 1;
    }
  }
  std::cout << fmt::format("{} rows: {} failing; table in {}\n", rows.size(), failed, (out / "calibration.md").string());
  return status;
}

}  // namespace

void add_calibrate_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Run the calibration suite: the model against published hardware figures (docs/calibration.md)");
  cmd->add_option("suite", o->suite, "Calibration suite file")->capture_default_str();
  cmd->add_option("--filter", o->filter, "Only rows whose id matches this glob");
  cmd->add_option("-j,--jobs", o->jobs, "Runs at a time (default: the core count)");
  cmd->add_option("--out", o->out, "Output folder (each run's folder, calibration.md, results.json)")
      ->capture_default_str();
  cmd->add_option("--update-doc", o->update_doc, "Rewrite the generated table in this Markdown file");
  cmd->add_option("--check-doc", o->check_doc, "Fail when this Markdown file's generated table is not this run's");
  cmd->add_flag("--list", o->list, "Check the suite and list each row's runs, without running them");
  cmd->callback([o, exit_code] {
    try {
      *exit_code = calibrate(*o);
    } catch (const SuiteError& e) {
      std::cerr << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const arch::ConfigError& e) {
      for (const auto& d : e.diagnostics()) std::cerr << d.str() << '\n';
      *exit_code = kExitBadInput;
    } catch (const FileError& e) {
      std::cerr << "tessera calibrate: " << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const std::exception& e) {
      std::cerr << "tessera calibrate: " << e.what() << '\n';
      *exit_code = 1;
    }
  });
}

}  // namespace tessera::cli
