// `tessera tune`: searches one kernel's tunable parameters on one config and
// shape (tune.h), timing each point as a timing-only tlm `tessera run` job
// through the shared runner: here N at a time, or each round of the search
// as a Slurm job array (the rounds of a descent depend on each other, so the
// command follows each array to its end before proposing the next).
#include "commands.h"
#include "files.h"
#include "job_runner.h"
#include "kernel_command.h"
#include "runner.h"
#include "slurm.h"
#include "tune.h"

#include "arch/config.h"
#include "common/kernel.h"
#include "common/tuning_db.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using runner::Job;
using runner::JobResult;
using runner::Status;

const char* kTune = "tessera tune";

struct TuneOptions {
  std::string config, kernel, shape, strategy = "auto", out, time, candidates, shard, db, dtype;
  std::vector<std::string> variants, configs, values;
  // Held fixed at every point: config overrides (--set) and parameters
  // (--param; one that changes the numerics is set here or not at all).
  std::vector<std::string> sets, params;
  std::size_t budget = 100;
  double timeout_s = 1800;
  bool update_db = false, all = false, check_db = false, update_times = false;
  double tolerance_percent = 2, max_time_us = 0;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool no_plots = false;
  slurm::SubmitOptions submit;
};

// scripts/plot-tune of this source tree, unless TESSERA_PLOT_TUNE_SCRIPT names another.
std::string plot_script() {
  if (const char* s = std::getenv("TESSERA_PLOT_TUNE_SCRIPT")) return s;
  return std::string(TESSERA_SOURCE_DIR) + "/scripts/plot-tune";
}

// "90", "90s", "30m", "2h" in seconds; negative when the text is none of them.
double parse_duration(const std::string& text) {
  if (text.empty()) return -1;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return -1;
  }
  const std::string unit = text.substr(used);
  if (v <= 0) return -1;
  if (unit.empty() || unit == "s") return v;
  if (unit == "m") return v * 60;
  if (unit == "h") return v * 3600;
  return -1;
}

// A round's candidates as jobs of `tessera run`: timing only, tlm.
nlohmann::json candidates_json(const std::vector<Job>& jobs) {
  nlohmann::json list = nlohmann::json::array();
  for (const Job& j : jobs)
    list.push_back({{"id", j.id}, {"kernel", j.kernel}, {"variant", j.variant}, {"config", j.config},
                    {"overrides", j.overrides}, {"dtype", j.dtype}, {"shape", j.shape}, {"params", j.params},
                    {"timeout_s", j.timeout_s}});
  return {{"candidates", list}};
}

std::vector<Job> jobs_of_candidates(const fs::path& file) {
  const nlohmann::json doc = nlohmann::json::parse(read_file(file));
  std::vector<Job> jobs;
  for (const auto& c : doc.at("candidates")) {
    Job j;
    j.id = c.at("id");
    j.test = "tune";
    j.kernel = c.at("kernel");
    j.variant = c.at("variant");
    j.config = c.at("config");
    j.fidelity = "tlm";
    j.no_data = true;
    j.shape = c.at("shape").get<std::map<std::string, std::int64_t>>();
    j.params = c.at("params").get<std::map<std::string, std::string>>();
    j.overrides = c.value("overrides", std::vector<std::string>{});
    j.dtype = c.value("dtype", std::string());
    j.timeout_s = c.at("timeout_s");
    j.file = file.string();
    jobs.push_back(std::move(j));
  }
  return jobs;
}

class CandidateReporter : public runner::Reporter {
public:
  explicit CandidateReporter(std::size_t total) : total_(total) {}
  void job_done(const JobResult& r) override {
    const double t = r.report.value("time_ns", 0.0);
    fmt::print("  [{}/{}] {} {}{} ({:.1f} s)\n", ++done_, total_, to_string(r.status), r.job.id,
               r.status == Status::Pass ? fmt::format(": {:.1f} us", t / 1000) : "", r.wall_seconds);
    std::fflush(stdout);
  }
  void tick(const std::string& note) override {
    if (note.empty() || note == last_) return;
    fmt::print("  {}\n", note);
    std::fflush(stdout);
    last_ = note;
  }
  void finish() override {}

private:
  std::size_t total_, done_ = 0;
  std::string last_;
};

// One round of candidates as a flow of the shared runner. Its plan names the
// round's candidates file (OUT/candidates.json); a shard runs
// `tessera tune --candidates FILE --shard I/N` and the merge writes
// OUT/results.json, which the search reads back.
class CandidateFlow : public runner::Flow {
public:
  std::string name() const override { return "tune"; }
  std::string noun() const override { return "candidate"; }
  std::string slurm_name(const nlohmann::json& plan) const override {
    return "tessera-tune-" + plan.value("label", std::string("round"));
  }
  std::vector<std::string> outputs() const override { return {"results.json"}; }
  std::vector<Job> jobs(const nlohmann::json& plan) const override {
    return jobs_of_candidates(plan.at("candidates").get<std::string>());
  }
  std::vector<std::string> shard_args(const nlohmann::json& plan) const override {
    return {"--candidates", plan.at("candidates").get<std::string>()};
  }
  std::vector<JobResult> read_results(const fs::path& dir, const std::vector<Job>& jobs) const override {
    std::map<std::string, const Job*> by_id;
    for (const auto& j : jobs) by_id[j.id] = &j;
    std::vector<JobResult> out;
    const nlohmann::json doc = nlohmann::json::parse(read_file(dir / "results.json"));
    for (const auto& row : doc.at("results")) {
      JobResult r = runner::result_from_json(row);
      const auto j = by_id.find(r.job.id);
      if (j == by_id.end()) continue;
      r.job = *j->second;
      out.push_back(std::move(r));
    }
    return out;
  }
  int write_outputs(const nlohmann::json&, const std::vector<JobResult>& results, const fs::path& out) const override {
    nlohmann::json list = nlohmann::json::array();
    bool all = true;
    for (const auto& r : results) {
      list.push_back(runner::to_json(r, "tune"));
      all = all && answered(r.status);
    }
    write_file(out / "results.json", nlohmann::json{{"results", list}}.dump(2) + "\n");
    return all ? 0 : 1;
  }
  void print_merged(const nlohmann::json&, const std::vector<JobResult>& results, const fs::path& out) const override {
    fmt::print("  {} candidates timed; {}\n", results.size(), (out / "results.json").string());
  }
  std::unique_ptr<runner::Reporter> reporter(std::size_t total) const override {
    return std::make_unique<CandidateReporter>(total);
  }
  std::map<std::string, std::string> environment() const override {
    if (const char* p = std::getenv("TESSERA_PLUGINS")) return {{"TESSERA_PLUGINS", p}};
    return {};
  }
};

// `tessera tune --candidates FILE [--shard I/N]`: what a Slurm shard runs.
int run_candidates(const TuneOptions& o) {
  const CandidateFlow flow;
  int index = 1, count = 1;
  if (!runner::shard_option(flow, "round", o.shard, false, &index, &count)) return kExitBadInput;
  const std::vector<Job> jobs = runner::shard_of(jobs_of_candidates(o.candidates), index, count);
  const fs::path out = o.out.empty() ? fs::path("out") / "tune" / "candidates" : fs::path(o.out);
  make_dirs(out);
  bool interrupted = false;
  const auto results = runner::run_here(flow, jobs, o.jobs, out, &interrupted);
  const int status = flow.write_outputs({}, results, out);
  return interrupted ? kExitInterrupted : status;
}

// The runner's message for a refused run is "exit status 2", then the tail
// of its log, whose last line is the builder's or the kernel's reason.
std::string refusal_of(const std::string& message) {
  std::size_t end = message.find_last_not_of(" \n");
  if (end == std::string::npos) return message;
  const std::size_t start = message.rfind('\n', end);
  return message.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

tune::Outcome outcome_of(const JobResult& r) {
  tune::Outcome o;
  // A search keeps every point it timed: only the figures it reports (the
  // whole report stays in the run's folder).
  for (const char* k : {"time_ns", "hfu_percent", "mfu_percent", "hbm_utilisation_percent", "dma_average_bytes",
                        "bound_by"})
    if (r.report.contains(k)) o.report[k] = r.report[k];
  if (r.status == Status::Pass && r.report.value("time_ns", 0.0) > 0) {
    o.kind = tune::Outcome::Kind::Timed;
    o.time_ns = r.report.at("time_ns");
    return o;
  }
  // Exit 2 from a run of a checked point: the builder refused it (SBUF or
  // PSUM overflow, a tile past a limit) when building, before simulating.
  o.kind = r.status == Status::Error ? tune::Outcome::Kind::Pruned : tune::Outcome::Kind::Failed;
  o.reason = r.status == Status::Error ? refusal_of(r.message)
                                       : fmt::format("{}: {}", to_string(r.status),
                                                     r.message.substr(0, r.message.find('\n')));
  return o;
}

std::string shape_text(const kernels::Shape& shape) {
  std::string s;
  for (const auto& [k, v] : shape) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, v);
  return s;
}

std::string params_text(const std::map<std::string, std::string>& params) {
  std::string s;
  for (const auto& [k, v] : params) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, v);
  return s.empty() ? "-" : s;
}

const char* kind_text(tune::Outcome::Kind k) {
  switch (k) {
    case tune::Outcome::Kind::Timed: return "timed";
    case tune::Outcome::Kind::Pruned: return "pruned";
    case tune::Outcome::Kind::Failed: return "failed";
  }
  return "failed";
}

nlohmann::json results_json(const TuneOptions& o, const kernels::Shape& shape, const std::vector<tune::Space>& spaces,
                            const tune::SearchResult& r, const std::map<std::string, std::string>& fixed) {
  nlohmann::json space = nlohmann::json::array();
  for (const auto& sp : spaces) {
    nlohmann::json dims = nlohmann::json::array();
    for (const auto& d : sp.dims) dims.push_back({{"name", d.name}, {"values", d.values}, {"default", d.default_value}});
    space.push_back({{"variant", sp.variant}, {"size", sp.size()}, {"parameters", dims}});
  }
  nlohmann::json points = nlohmann::json::array();
  for (std::size_t i = 0; i < r.evaluated.size(); ++i) {
    const auto& e = r.evaluated[i];
    nlohmann::json p = {{"order", i}, {"round", e.round}, {"variant", e.candidate.variant},
                        {"params", e.candidate.params}, {"status", kind_text(e.outcome.kind)}};
    if (e.outcome.kind == tune::Outcome::Kind::Timed) {
      const auto& rep = e.outcome.report;
      p["time_ns"] = e.outcome.time_ns;
      for (const char* k : {"hfu_percent", "mfu_percent", "hbm_utilisation_percent", "dma_average_bytes"})
        p[k] = rep.value(k, 0.0);
      p["bound_by"] = rep.value("bound_by", std::string());
    } else {
      p["reason"] = e.outcome.reason;
    }
    points.push_back(std::move(p));
  }
  nlohmann::json doc = {{"kernel", o.kernel},
                        {"config", o.config},
                        {"overrides", o.sets},
                        {"dtype", o.dtype},
                        {"fixed_params", fixed},
                        {"shape", shape},
                        {"strategy", to_string(r.strategy)},
                        {"budget", o.budget},
                        {"space", space},
                        {"space_size", r.space_size},
                        {"timed", r.timed},
                        {"pruned", r.pruned},
                        {"rounds", r.rounds},
                        {"stopped_early", r.stopped_early},
                        {"points", points}};
  if (const auto* b = r.best()) {
    std::map<std::string, std::string> params = fixed;
    params.insert(b->candidate.params.begin(), b->candidate.params.end());
    doc["best"] = {{"variant", b->candidate.variant}, {"params", params}, {"time_ns", b->outcome.time_ns},
                   {"hfu_percent", b->outcome.report.value("hfu_percent", 0.0)}};
  }
  return doc;
}

std::string results_csv(const tune::SearchResult& r) {
  std::set<std::string> names;
  for (const auto& e : r.evaluated)
    for (const auto& [k, v] : e.candidate.params) names.insert(k);
  std::ostringstream csv;
  csv << "order,round,variant";
  for (const auto& n : names) csv << "," << n;
  csv << ",status,time_ns,hfu_percent,bound_by\n";
  for (std::size_t i = 0; i < r.evaluated.size(); ++i) {
    const auto& e = r.evaluated[i];
    csv << i << "," << e.round << "," << e.candidate.variant;
    for (const auto& n : names) {
      const auto it = e.candidate.params.find(n);
      csv << "," << (it == e.candidate.params.end() ? "" : it->second);
    }
    const bool timed = e.outcome.kind == tune::Outcome::Kind::Timed;
    csv << "," << kind_text(e.outcome.kind) << ","
        << (timed ? fmt::format("{:.1f}", e.outcome.time_ns) : "") << ","
        << (timed ? fmt::format("{:.2f}", e.outcome.report.value("hfu_percent", 0.0)) : "") << ","
        << (timed ? e.outcome.report.value("bound_by", std::string()) : "") << "\n";
  }
  return csv.str();
}

void print_summary(const TuneOptions& o, const kernels::Shape& shape, const tune::SearchResult& r,
                   const tune::Evaluated* defaults_best) {
  fmt::print("\n{} on {} at {}: {} search, space of {} points, {} timed, {} pruned, {} round{}{}\n", o.kernel, o.config,
             shape_text(shape), to_string(r.strategy), r.space_size, r.timed, r.pruned, r.rounds, r.rounds == 1 ? "" : "s",
             r.stopped_early ? " (stopped by --budget or --time)" : "");
  const auto top = r.top(10);
  if (top.empty()) {
    fmt::print("no point ran\n");
    return;
  }
  const auto* b = top.front();
  fmt::print("best: --variant {} --param {}: {:.1f} us, HFU {:.1f} %, bound by {}\n", b->candidate.variant,
             params_text(b->candidate.params), b->outcome.time_ns / 1000, b->outcome.report.value("hfu_percent", 0.0),
             b->outcome.report.value("bound_by", std::string("?")));
  if (defaults_best)
    fmt::print("fastest at default parameters: {} {:.1f} us ({:.2f}x slower than the best)\n",
               defaults_best->candidate.variant, defaults_best->outcome.time_ns / 1000,
               defaults_best->outcome.time_ns / b->outcome.time_ns);
  fmt::print("\n  {:>4}  {:>11}  {:>6}  {:<22} {}\n", "rank", "time (us)", "HFU %", "variant", "params");
  for (std::size_t i = 0; i < top.size(); ++i)
    fmt::print("  {:>4}  {:>11.1f}  {:>6.1f}  {:<22} {}\n", i + 1, top[i]->outcome.time_ns / 1000,
               top[i]->outcome.report.value("hfu_percent", 0.0), top[i]->candidate.variant,
               params_text(top[i]->candidate.params));
}

std::string db_path(const TuneOptions& o) {
  const std::string path = o.db.empty() ? kernels::default_tuning_db_path() : o.db;
  if (path.empty())
    throw kernels::TuningDbError("TESSERA_TUNING_DB=none: no tuning database to write or check; name one with --db");
  return path;
}

// Stores each searched variant's fastest point in the database.
void update_db(const TuneOptions& o, const std::string& config_name, const kernels::Shape& shape,
               const std::vector<tune::Space>& spaces, const tune::SearchResult& r) {
  const std::string path = db_path(o);
  kernels::TuningDb db = kernels::TuningDb::load(path);
  std::size_t stored = 0;
  for (const auto& sp : spaces) {
    const tune::Evaluated* best = nullptr;
    std::size_t timed = 0;
    for (const auto& e : r.evaluated) {
      if (e.candidate.variant != sp.variant || e.outcome.kind != tune::Outcome::Kind::Timed) continue;
      ++timed;
      if (!best || e.outcome.time_ns < best->outcome.time_ns) best = &e;
    }
    // A variant without parameters has nothing to store.
    if (!best || sp.dims.empty()) continue;
    // A search cut short (--budget, --time) may end above the stored point,
    // which it never timed: keep that one (--check-db re-times it when the
    // model changes). A stored point the search did time is its own answer.
    if (const kernels::TuningEntry* stored = db.find(o.kernel, sp.variant, config_name, shape);
        stored && stored->time_ns < best->outcome.time_ns) {
      const bool timed_here = std::any_of(r.evaluated.begin(), r.evaluated.end(), [&](const tune::Evaluated& e) {
        return e.candidate.variant == sp.variant && e.candidate.params == stored->params &&
               e.outcome.kind == tune::Outcome::Kind::Timed;
      });
      if (!timed_here) {
        fmt::print("tuning database: kept {} {}'s stored point ({:.1f} us), faster than this search's best ({:.1f} us), "
                   "which did not time it\n",
                   o.kernel, sp.variant, stored->time_ns / 1000, best->outcome.time_ns / 1000);
        continue;
      }
    }
    kernels::TuningEntry entry;
    entry.kernel = o.kernel;
    entry.variant = sp.variant;
    entry.config = config_name;
    entry.shape = shape;
    entry.params = best->candidate.params;
    entry.time_ns = best->outcome.time_ns;
    entry.hfu_percent = best->outcome.report.value("hfu_percent", 0.0);
    entry.strategy = to_string(r.strategy);
    if (!o.values.empty()) entry.strategy += fmt::format(" over --values {}", fmt::join(o.values, " --values "));
    entry.evaluations = timed;
    entry.space_size = sp.size();
    db.put(std::move(entry));
    ++stored;
  }
  db.save(path);
  fmt::print("tuning database: {} entr{} stored in {}\n", stored, stored == 1 ? "y" : "ies", path);
}

int run_search(const TuneOptions& o) {
  if (o.config.empty() || o.kernel.empty()) {
    std::cerr << fmt::format("{}: --config and --kernel are required\n", kTune);
    return kExitBadInput;
  }
  tune::Strategy strategy;
  if (o.strategy != "auto" && o.strategy != "exhaustive" && o.strategy != "descent") {
    std::cerr << fmt::format("{}: --strategy {}: expected auto, exhaustive or descent\n", kTune, o.strategy);
    return kExitBadInput;
  }
  tune::Limits limits;
  limits.budget = o.budget;
  if (!o.time.empty()) {
    limits.time_s = parse_duration(o.time);
    if (limits.time_s <= 0) {
      std::cerr << fmt::format("{}: --time {}: expected a positive duration such as 600, 90s, 30m or 2h\n", kTune,
                               o.time);
      return kExitBadInput;
    }
  }
  // A point of a study varies the config and may hold parameters; the
  // database is keyed by config name and holds bf16 points of the whole
  // space, so such a search is not stored.
  if (o.update_db && (!o.sets.empty() || !o.params.empty() || (!o.dtype.empty() && o.dtype != "bf16"))) {
    std::cerr << fmt::format("{}: --update-db stores points of a shipped config's whole space in bf16; it does not "
                             "take --set, --param or --dtype {}\n",
                             kTune, o.dtype.empty() ? "bf16" : o.dtype);
    return kExitBadInput;
  }
  std::vector<arch::Override> overrides;
  for (const auto& s : o.sets) overrides.push_back(arch::parse_override(s));
  const arch::ResolvedConfig resolved = arch::load_config(o.config, overrides);
  const kernels::KernelSpec& spec = kernels::kernel_named(o.kernel);
  const kernels::Shape shape = kernels::resolve_shape(spec, o.shape.empty() ? kernels::Shape{} : kernels::parse_shape(o.shape));
  const std::string dtype = o.dtype.empty() ? std::string() : kernels::check_dtype(spec, o.dtype);
  std::vector<tune::Space> spaces = tune::spaces(spec, resolved.hw, shape, o.variants);
  // --param holds a parameter: a searched one becomes a dimension of one
  // value; one that changes the numerics (never a dimension) goes to every run.
  const std::map<std::string, std::string> held = checked_request(o.kernel, "", "", o.params, 1).params;
  std::map<std::string, std::string> fixed;
  std::vector<std::string> values = o.values;
  for (const auto& [name, value] : held) {
    const kernels::TunableParam* p = spec.param(name);
    if (p && p->numerics) {
      for (const auto& sp : spaces) kernels::check_params(spec, sp.variant, {{name, value}});
      fixed[name] = value;
      continue;
    }
    for (const auto& v : o.values)
      if (v.rfind(name + "=", 0) == 0)
        throw KernelError(fmt::format("--param {}={} and --values {}: hold a parameter or search it, not both", name,
                                      value, v));
    values.push_back(name + "=" + value);
  }
  tune::restrict_values(spaces, spec, values);
  const auto with_fixed = [&](const std::map<std::string, std::string>& params) {
    std::map<std::string, std::string> all = fixed;
    all.insert(params.begin(), params.end());
    return all;
  };
  // The descent also walks from where other generations' searches ended.
  if (const std::string path = o.db.empty() ? kernels::default_tuning_db_path() : o.db; !path.empty())
    tune::seed_from_db(spaces, kernels::TuningDb::load(path), spec.name, resolved.hw.name, shape);
  std::size_t size = 0;
  for (const auto& sp : spaces) size += sp.size();
  // Exhaustive when the whole space fits the budget (pruned points cost no
  // run, so a space somewhat over budget may still be searched whole with
  // --strategy exhaustive).
  strategy = o.strategy == "exhaustive"                   ? tune::Strategy::Exhaustive
             : o.strategy == "descent"                    ? tune::Strategy::Descent
             : (o.budget == 0 || size <= o.budget) ? tune::Strategy::Exhaustive
                                                          : tune::Strategy::Descent;
  const fs::path out = o.out.empty() ? fs::path("out") / "tune" / fmt::format("{}-{}", o.kernel, resolved.hw.name)
                                     : fs::path(o.out);
  make_dirs(out);
  fmt::print("{}: {} on {}{} at {}: {} variant{}, {} points; {} search, budget {}{}, {}\n", kTune, o.kernel,
             resolved.hw.name, o.sets.empty() ? "" : fmt::format(" (--set {})", fmt::join(o.sets, " --set ")),
             shape_text(shape), spaces.size(), spaces.size() == 1 ? "" : "s", size,
             to_string(strategy), o.budget ? std::to_string(o.budget) : "none",
             o.time.empty() ? "" : ", time " + o.time,
             o.submit.enabled ? "on Slurm" : fmt::format("{} at a time", o.jobs));
  std::fflush(stdout);

  const CandidateFlow flow;
  bool interrupted = false;
  std::size_t round = 0;
  tune::Evaluator evaluate;
  // The kernel's analytic check here, before a run is started; the builder's
  // own rules in each run, which builds the program (in parallel) and exits 2
  // before simulating when a rule is broken: the point is pruned all the same.
  evaluate.fits = [&](const tune::Candidate& c) -> std::optional<std::string> {
    try {
      const kernels::KernelArgs args =
          kernels::resolve(spec, resolved.hw, {o.kernel, c.variant, shape, with_fixed(c.params), 1, dtype});
      if (spec.fits) return spec.fits(resolved.hw, args);
    } catch (const KernelError& e) {
      return std::string(e.what());
    }
    return std::nullopt;
  };
  evaluate.run = [&](const std::vector<tune::Candidate>& batch) {
    std::vector<Job> jobs;
    for (const auto& c : batch) {
      Job j;
      j.id = c.key();
      j.test = "tune";
      j.kernel = o.kernel;
      j.variant = c.variant;
      j.config = o.config;
      j.fidelity = "tlm";
      j.no_data = true;
      j.shape = shape;
      j.params = with_fixed(c.params);
      j.overrides = o.sets;
      j.dtype = o.dtype;
      j.timeout_s = o.timeout_s;
      jobs.push_back(std::move(j));
    }
    fmt::print("round {}: {} candidate{}\n", round + 1, jobs.size(), jobs.size() == 1 ? "" : "s");
    std::fflush(stdout);
    std::vector<JobResult> results;
    if (interrupted) {
      // After Ctrl-C nothing more runs; the search records the rest as failed.
    } else if (o.submit.enabled) {
      const fs::path dir = fs::absolute(out / "rounds" / std::to_string(round + 1));
      make_dirs(dir);
      write_file(dir / "candidates.json", candidates_json(jobs).dump(2) + "\n");
      slurm::SubmitOptions s = o.submit;
      s.wait = true;  // the next round depends on this one
      nlohmann::json plan = {{"candidates", (dir / "candidates.json").string()},
                             {"label", fmt::format("{}-{}-r{}", o.kernel, resolved.hw.name, round + 1)}};
      runner::submit(flow, plan, jobs.size(), dir, s);
      if (fs::exists(dir / "results.json")) results = flow.read_results(dir, jobs);
    } else {
      results = runner::run_here(flow, jobs, o.jobs, out, &interrupted);
    }
    ++round;
    std::map<std::string, const JobResult*> by_id;
    for (const auto& r : results) by_id[r.job.id] = &r;
    std::vector<tune::Outcome> outcomes;
    for (const auto& j : jobs) {
      const auto it = by_id.find(j.id);
      if (it != by_id.end()) {
        outcomes.push_back(outcome_of(*it->second));
        continue;
      }
      tune::Outcome missing;
      missing.reason = interrupted ? "interrupted" : "the run left no result";
      outcomes.push_back(missing);
    }
    return outcomes;
  };
  evaluate.stop = [&] { return interrupted; };
  const tune::SearchResult r = tune::search(spaces, strategy, limits, evaluate, std::max<std::size_t>(o.jobs, 1) * 8);

  // The fastest variant at its default parameters: what a run gets untuned.
  const tune::Evaluated* defaults_best = nullptr;
  for (const auto& sp : spaces) {
    const tune::Candidate d = tune::default_point(sp);
    for (const auto& e : r.evaluated)
      if (e.candidate == d && e.outcome.kind == tune::Outcome::Kind::Timed &&
          (!defaults_best || e.outcome.time_ns < defaults_best->outcome.time_ns))
        defaults_best = &e;
  }
  write_file(out / "results.json", results_json(o, shape, spaces, r, fixed).dump(2) + "\n");
  write_file(out / "results.csv", results_csv(r));
  print_summary(o, shape, r, defaults_best);
  fmt::print("\nresults: {} and {}\n", (out / "results.json").string(), (out / "results.csv").string());
  int status = r.best() ? 0 : 1;
  if (!o.no_plots && r.best()) {
    const std::string cmd = fmt::format("{} {} --out {}", slurm::shell_quote(plot_script()),
                                        slurm::shell_quote((out / "results.json").string()),
                                        slurm::shell_quote((out / "plots").string()));
    std::fflush(stdout);
    if (std::system(cmd.c_str()) != 0) {
      std::cerr << fmt::format("{}: plotting failed ({}); the results are written\n", kTune, cmd);
      status = 1;
    }
  }
  if (interrupted) return kExitInterrupted;
  if (o.update_db && r.best()) update_db(o, resolved.hw.name, shape, spaces, r);
  return status;
}

// --all: a search per kernel, config and shape the database holds, each
// stored back; --configs adds those generations at every shape of a kernel.
int run_all(const TuneOptions& o) {
  const kernels::TuningDb db = kernels::TuningDb::load(db_path(o));
  std::set<std::tuple<std::string, std::string, std::string>> searches;  // kernel, config, shape text
  std::map<std::string, std::set<std::string>> shapes;                   // kernel -> shape texts
  // The variants a kernel has entries for at a shape: those are retuned
  // (a variant nobody stored stays untuned, as it was).
  std::map<std::pair<std::string, std::string>, std::set<std::string>> variants;
  for (const auto& e : db.entries()) {
    if (!o.kernel.empty() && e.kernel != o.kernel) continue;
    searches.insert({e.kernel, e.config, shape_text(e.shape)});
    shapes[e.kernel].insert(shape_text(e.shape));
    variants[{e.kernel, shape_text(e.shape)}].insert(e.variant);
  }
  for (const auto& c : o.configs)
    for (const auto& [kernel, texts] : shapes)
      for (const auto& t : texts) searches.insert({kernel, c, t});
  if (searches.empty()) {
    std::cerr << fmt::format("{} --all: the tuning database {} holds nothing to retune{}; tune a kernel with "
                             "--update-db first\n",
                             kTune, db_path(o), o.kernel.empty() ? "" : " for " + o.kernel);
    return kExitBadInput;
  }
  const fs::path base = o.out.empty() ? fs::path("out") / "tune" / "all" : fs::path(o.out);
  int status = 0;
  std::size_t n = 0;
  for (const auto& [kernel, config, shape] : searches) {
    TuneOptions one = o;
    one.all = false;
    one.update_db = true;
    one.kernel = kernel;
    one.config = config;
    one.shape = shape;
    if (one.variants.empty()) {
      const auto& v = variants.at({kernel, shape});
      one.variants.assign(v.begin(), v.end());
    }
    one.out = (base / fmt::format("{}-{}-{}", kernel, config, shape)).string();
    fmt::print("\n=== {} of {}: {} on {} at {}\n", ++n, searches.size(), kernel, config, shape);
    std::fflush(stdout);
    const int s = run_search(one);
    if (s == kExitInterrupted) return s;
    status = std::max(status, s);
  }
  return status;
}

// --check-db: each stored point run again; its time against the stored one.
int run_check_db(const TuneOptions& o) {
  const std::string path = db_path(o);
  kernels::TuningDb db = kernels::TuningDb::load(path);
  std::vector<Job> jobs;
  std::map<std::string, const kernels::TuningEntry*> entry_of;
  for (const auto& e : db.entries()) {
    if (!o.kernel.empty() && e.kernel != o.kernel) continue;
    if (!o.config.empty() && e.config != o.config) continue;
    if (o.max_time_us > 0 && e.time_ns > o.max_time_us * 1000) continue;
    Job j;
    j.id = fmt::format("{}/{}/{}/{}", e.kernel, e.variant, e.config, shape_text(e.shape));
    j.test = "tune-check";
    j.kernel = e.kernel;
    j.variant = e.variant;
    j.config = e.config;
    j.fidelity = "tlm";
    j.no_data = true;
    j.shape = e.shape;
    j.params = e.params;
    j.timeout_s = o.timeout_s;
    j.tolerance_percent = o.tolerance_percent;
    entry_of[j.id] = &e;
    jobs.push_back(std::move(j));
  }
  if (jobs.empty()) {
    std::cerr << fmt::format("{} --check-db: no entry of {} matches\n", kTune, path);
    return kExitBadInput;
  }
  const fs::path out = o.out.empty() ? fs::path("out") / "tune" / "check" : fs::path(o.out);
  make_dirs(out);
  fmt::print("{} --check-db: {} stored point{} of {}, {} at a time\n", kTune, jobs.size(), jobs.size() == 1 ? "" : "s",
             path, o.jobs);
  std::fflush(stdout);
  bool interrupted = false;
  const auto results = runner::run_here(CandidateFlow(), jobs, o.jobs, out, &interrupted);
  std::size_t moved = 0, failed = 0;
  std::vector<kernels::TuningEntry> retimed;
  fmt::print("\n  {:<62} {:>12} {:>12} {:>8}\n", "entry", "stored (us)", "now (us)", "change");
  for (const auto& r : results) {
    const kernels::TuningEntry& e = *entry_of.at(r.job.id);
    if (r.status != Status::Pass) {
      ++failed;
      fmt::print("  {:<62} {:>12.1f} {:>12} {:>8}  {}\n", r.job.id, e.time_ns / 1000, to_string(r.status), "",
                 r.message.substr(0, r.message.find('\n')));
      continue;
    }
    const double now = r.report.value("time_ns", 0.0);
    const double change = 100.0 * (now / e.time_ns - 1);
    const bool out_of = std::abs(change) > o.tolerance_percent;
    moved += out_of;
    fmt::print("  {:<62} {:>12.1f} {:>12.1f} {:>+7.2f}%{}\n", r.job.id, e.time_ns / 1000, now / 1000, change,
               out_of ? "  MOVED" : "");
    if (out_of) {
      kernels::TuningEntry n = e;
      n.time_ns = now;
      n.hfu_percent = r.report.value("hfu_percent", 0.0);
      retimed.push_back(n);
    }
  }
  if (interrupted) return kExitInterrupted;
  if (o.update_times && !retimed.empty()) {
    for (auto& n : retimed) db.put(n);
    db.save(path);
    fmt::print("\n{} entr{} re-timed in {} (their parameters kept; retune with tessera tune --all)\n", retimed.size(),
               retimed.size() == 1 ? "y" : "ies", path);
    return failed ? 1 : 0;
  }
  if (moved || failed) {
    fmt::print(stderr,
               "{} --check-db: {} of {} stored times moved beyond {} % and {} failed: timing changed since they were "
               "tuned. Re-time them with 'tessera tune --check-db --update-times' (or retune with 'tessera tune --all') "
               "in the commit that changed the timing.\n",
               kTune, moved, results.size(), o.tolerance_percent, failed);
    return 1;
  }
  fmt::print("\nevery stored time holds (within {} %)\n", o.tolerance_percent);
  return 0;
}

int run_tune(const TuneOptions& o) {
  if (!o.candidates.empty()) return run_candidates(o);
  if (!o.submit.emit_sbatch.empty() || !o.submit.rerun_failed.empty()) {
    std::cerr << fmt::format("{}: --emit-sbatch and --rerun-failed do not apply: a search submits round by round "
                             "and follows each (--slurm)\n", kTune);
    return kExitBadInput;
  }
  if (o.check_db) return run_check_db(o);
  if (o.all) return run_all(o);
  return run_search(o);
}

}  // namespace

void add_tune_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<TuneOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Search a kernel's tunable parameters on one config: timing-only tlm runs, here or on Slurm");
  cmd->add_option("--config", o->config, "Config name or file");
  cmd->add_option("--kernel", o->kernel, "Kernel (tessera list kernels)");
  cmd->add_option("--variant", o->variants, "Search only these variants (default: all)")->delimiter(',');
  cmd->add_option("--shape", o->shape, "Shape overrides, e.g. M=4096,N=8192,K=8192 (default: the kernel's)");
  cmd->add_option("--set", o->sets,
                  "Override a config key at every point: path.to.key=value (repeatable; not with --update-db)");
  cmd->add_option("--param", o->params,
                  "Hold a parameter at a value at every point: NAME=VALUE (repeatable; not with --update-db)");
  cmd->add_option("--dtype", o->dtype, "Input dtype of every run (default: the kernel's; not with --update-db)");
  cmd->add_option("--values", o->values,
                  "Search a parameter at these values only, e.g. --values F=2048,4096 --values B=1..8 (LO..HI: every "
                  "integer)");
  cmd->add_option("--budget", o->budget,
                  "Timed runs at most (pruned points cost none); 0: no limit. A space that fits is searched whole")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{1000000}));
  cmd->add_option("--time", o->time, "Start no round after this long (600, 90s, 30m, 2h)");
  cmd->add_option("--strategy", o->strategy,
                  "exhaustive, descent (coordinate descent, docs/tuning.md), or auto: exhaustive when the space fits "
                  "the budget")
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s, "Seconds one run may take")->capture_default_str();
  cmd->add_option("-j,--jobs", o->jobs, "Runs at a time (default: the core count)");
  cmd->add_option("--out", o->out, "Output folder (default: out/tune/<kernel>-<config>)");
  cmd->add_flag("--no-plots", o->no_plots, "Write results.json and results.csv only");
  cmd->add_flag("--update-db", o->update_db,
                "Store each searched variant's best point in the tuning database (configs/tuning.json, or --db)");
  cmd->add_option("--db", o->db, "Tuning database file (default: $TESSERA_TUNING_DB, else configs/tuning.json)");
  cmd->add_flag("--all", o->all,
                "Retune every kernel, config and shape the database holds (--kernel: one kernel's), storing each");
  cmd->add_option("--configs", o->configs, "With --all: also tune these configs at every shape of each kernel")
      ->delimiter(',');
  cmd->add_flag("--check-db", o->check_db,
                "Run every stored point again and check its time against the stored one (--kernel, --config filter)");
  cmd->add_option("--tolerance", o->tolerance_percent, "With --check-db: allowed change, percent")->capture_default_str();
  cmd->add_option("--max-time-us", o->max_time_us, "With --check-db: only entries whose stored time is at most this");
  cmd->add_flag("--update-times", o->update_times, "With --check-db: store the new times of entries that moved");
  cmd->add_option("--candidates", o->candidates, "Time the candidates of a round's file (what a Slurm shard runs)");
  cmd->add_option("--shard", o->shard, "With --candidates: the shard I of N (I/N)");
  auto plan = std::make_shared<std::string>();
  CLI::App* merge_cmd = cmd->add_subcommand("merge", "Combine the shards of a --slurm round (its merge job)");
  merge_cmd->add_option("--plan", *plan, "The round's folder")->required();
  merge_cmd->callback([plan, exit_code] {
    try {
      *exit_code = runner::merge_plan(CandidateFlow(), *plan);
    } catch (const std::exception& e) {
      std::cerr << "tessera tune merge: " << e.what() << '\n';
      *exit_code = kExitBadInput;
    }
  });
  slurm::add_submit_options(*cmd, o->submit,
                            {"tuning round", "candidate", "Always on for tune: each round is followed to its end"});
  cmd->callback([o, exit_code, cmd] {
    if (cmd->got_subcommand("merge")) return;
    try {
      *exit_code = run_tune(*o);
    } catch (const KernelError& e) {
      std::cerr << kTune << ": " << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const arch::ConfigError& e) {
      std::cerr << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const slurm::SlurmError& e) {
      std::cerr << kTune << ": " << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const kernels::TuningDbError& e) {
      std::cerr << kTune << ": " << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const FileError& e) {
      std::cerr << kTune << ": " << e.what() << '\n';
      *exit_code = kExitBadInput;
    }
  });
}

}  // namespace tessera::cli
