#include "regress.h"

#include "yaml_file.h"

#include "arch/address_map.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fnmatch.h>
#include <regex>
#include <set>

namespace tessera::cli::regress {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& file, const YAML::Node& at, const std::string& message) {
  fail_at<SuiteError>(file, at, message);
}

void check_keys(const std::string& file, const YAML::Node& map, const std::set<std::string>& allowed,
                const std::string& where) {
  cli::check_keys<SuiteError>(file, map, allowed, where);
}

std::vector<std::string> strings(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (n.IsScalar()) return {n.Scalar()};
  if (!n.IsSequence() || n.size() == 0) fail(file, n, fmt::format("'{}' must be a name or a non-empty list of names", key));
  std::vector<std::string> out;
  for (const auto& item : n) {
    if (!item.IsScalar()) fail(file, item, fmt::format("'{}' must list names", key));
    out.push_back(item.Scalar());
  }
  return out;
}

// A suite this large is a typo in its matrix.
constexpr std::size_t kMaxJobs = 100000;
// A week: past it a timeout is a typo too.
constexpr double kMaxTimeoutS = 7 * 86400;

// A finite number above `low` (or at least it, `inclusive`) and at most `high`.
double bounded(const std::string& file, const YAML::Node& n, const std::string& key, double low, bool inclusive,
               double high) {
  double v = 0;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    fail(file, n, fmt::format("'{}' has the wrong type", key));
  }
  if (!std::isfinite(v) || (inclusive ? v < low : v <= low) || v > high)
    fail(file, n, fmt::format("'{}' must be a number {} {} and at most {}, not {}", key, inclusive ? "of at least" : "above",
                              low, high, n.Scalar()));
  return v;
}

std::uint64_t seed_of(const std::string& file, const YAML::Node& n) {
  std::uint64_t v = 0;
  if (!n.IsScalar() || !parse_u64(n.Scalar(), &v))
    fail(file, n, fmt::format("'seed' must be a whole number from 0 to 2^64-1, not {}", n.IsScalar() ? n.Scalar() : "a list"));
  return v;
}

template <typename T>
T scalar(const std::string& file, const YAML::Node& n, const std::string& key) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    fail(file, n, fmt::format("'{}' has the wrong type", key));
  }
}

// Per-test settings that defaults: may also set.
const std::set<std::string> kSettings = {"fidelity", "timeout_s", "tolerance_percent", "seed", "groups"};

}  // namespace

Suite load_suite(const std::string& path) {
  YAML::Node root;
  try {
    root = load_yaml_file(path);
  } catch (const YamlFileError& e) {
    throw SuiteError(e.what());
  }
  check_keys(path, root, {"description", "defaults", "tests"}, "the suite");
  const YAML::Node defaults = root["defaults"] ? root["defaults"] : YAML::Node(YAML::NodeType::Map);
  check_keys(path, defaults, kSettings, "defaults");
  if (!root["tests"] || !root["tests"].IsSequence()) fail(path, root, "a suite needs a list 'tests'");

  Suite suite;
  suite.name = fs::path(path).stem().string();
  std::set<std::string> ids;
  for (const YAML::Node& t : root["tests"]) {
    std::set<std::string> allowed = kSettings;
    for (const char* k : {"name", "kernel", "variants", "dtypes", "configs", "shapes", "params", "cores", "shard",
                          "fidelities"})
      allowed.insert(k);
    check_keys(path, t, allowed, "a test");
    for (const char* k : {"name", "kernel", "configs"})
      if (!t[k]) fail(path, t, fmt::format("a test needs '{}'", k));
    const auto setting = [&](const char* key) { return t[key] ? t[key] : defaults[key]; };
    Job base;
    base.file = path;
    base.line = t.Mark().is_null() ? 0 : t.Mark().line + 1;
    base.test = t["name"].Scalar();
    // The name goes into job ids, folder names and JUnit XML.
    if (base.test.empty() || base.test.size() > 100 ||
        base.test.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-") !=
            std::string::npos)
      fail(path, t["name"], "a test's name is 1 to 100 letters, digits and _ . + -");
    base.kernel = t["kernel"].Scalar();
    if (auto n = setting("fidelity")) base.fidelity = n.Scalar();
    // The same jobs in several fidelities, which must agree to the picosecond:
    // the whole-core check that rtl and the fast models are one machine.
    std::vector<std::string> fidelities{""};
    if (const YAML::Node f = t["fidelities"]) {
      if (t["fidelity"]) fail(path, f, "a test has 'fidelity' or 'fidelities', not both");
      fidelities = strings(path, f, "fidelities");
      if (fidelities.size() < 2) fail(path, f, "'fidelities' lists at least two of rtl, sampled, tlm to compare");
      for (const std::string& x : fidelities)
        if (!arch::parse_fidelity(x)) fail(path, f, fmt::format("fidelity '{}': expected rtl, sampled or tlm", x));
      if (std::set<std::string>(fidelities.begin(), fidelities.end()).size() != fidelities.size())
        fail(path, f, "'fidelities' lists a fidelity twice");
    }
    if (auto n = setting("timeout_s")) base.timeout_s = bounded(path, n, "timeout_s", 0, false, kMaxTimeoutS);
    if (auto n = setting("tolerance_percent"))
      base.tolerance_percent = bounded(path, n, "tolerance_percent", 0, true, 1000);
    if (auto n = setting("seed")) base.seed = seed_of(path, n);
    if (auto n = setting("groups")) base.groups = strings(path, n, "groups");
    const std::vector<std::string> variants = t["variants"] ? strings(path, t["variants"], "variants")
                                                            : std::vector<std::string>{""};
    const std::vector<std::string> configs = strings(path, t["configs"], "configs");
    if (configs.empty()) fail(path, t["configs"], "'configs' must not be empty");
    // Input dtypes (tessera run --dtype); none: the kernel's default. Checked
    // against the kernel with the rest of the registry's rules (validate).
    std::vector<std::string> dtypes{""};
    if (t["dtypes"]) {
      dtypes = strings(path, t["dtypes"], "dtypes");
      if (dtypes.empty()) fail(path, t["dtypes"], "'dtypes' must not be empty");
    }
    // Core counts of the chip (tessera run --cores N), and the dimension
    // split across them; none: one core with its share of HBM. The chip's
    // own limit is checked with the rest (validate).
    const std::vector<int> core_list = t["cores"] ? core_counts<SuiteError>(path, t["cores"], static_cast<int>(arch::kMaxChipCores)) : std::vector<int>{0};
    if (t["shard"]) {
      if (!t["cores"]) fail(path, t["shard"], "'shard' needs 'cores'");
      base.shard = t["shard"].Scalar();
    }
    std::vector<std::map<std::string, std::int64_t>> shapes;
    if (t["shapes"]) {
      if (!t["shapes"].IsSequence() || t["shapes"].size() == 0)
        fail(path, t["shapes"], "'shapes' must be a non-empty list of NAME: VALUE mappings");
      for (const auto& s : t["shapes"]) {
        if (!s.IsMap()) fail(path, s, "a shape must be a mapping NAME: VALUE");
        std::map<std::string, std::int64_t> shape;
        for (auto it = s.begin(); it != s.end(); ++it)
          shape[it->first.Scalar()] = scalar<std::int64_t>(path, it->second, it->first.Scalar());
        shapes.push_back(shape);
      }
    } else {
      shapes.emplace_back();
    }
    // Tunable parameters: one mapping for every job, or a list of them crossed
    // with the shapes.
    std::vector<std::map<std::string, std::string>> param_sets;
    if (const YAML::Node p = t["params"]) {
      const auto one = [&](const YAML::Node& m) {
        if (!m.IsMap()) fail(path, m, "params must be a mapping NAME: VALUE (or a list of them)");
        std::map<std::string, std::string> set;
        for (auto it = m.begin(); it != m.end(); ++it) {
          if (!it->second.IsScalar()) fail(path, it->second, fmt::format("param '{}' must be a value", it->first.Scalar()));
          set[it->first.Scalar()] = it->second.Scalar();
        }
        param_sets.push_back(set);
      };
      if (p.IsSequence())
        for (const auto& m : p) one(m);
      else
        one(p);
    } else {
      param_sets.emplace_back();
    }
    // Counted before anything is expanded, so a typo in the matrix fails at once.
    double count = 1;
    for (const std::size_t n : {variants.size(), dtypes.size(), configs.size(), core_list.size(), shapes.size(),
                                param_sets.size(), fidelities.size()})
      count *= static_cast<double>(n);
    if (static_cast<double>(suite.jobs.size()) + count > static_cast<double>(kMaxJobs))
      fail(path, t, fmt::format("the suite has more than {} jobs", kMaxJobs));
    std::vector<Job> jobs{base};
    jobs = runner::cross(jobs, variants, [](Job& j, const std::string& v) { j.variant = v; });
    jobs = runner::cross(jobs, dtypes, [](Job& j, const std::string& d) { j.dtype = d; });
    jobs = runner::cross(jobs, configs, [](Job& j, const std::string& c) { j.config = c; });
    jobs = runner::cross(jobs, core_list, [](Job& j, int n) { j.cores = n; });
    jobs = runner::cross(jobs, shapes, [](Job& j, const std::map<std::string, std::int64_t>& s) { j.shape = s; });
    jobs = runner::cross(jobs, param_sets, [](Job& j, const std::map<std::string, std::string>& p) { j.params = p; });
    jobs = runner::cross(jobs, fidelities, [](Job& j, const std::string& f) { j.fidelity = f.empty() ? j.fidelity : f; });
    const bool compared = fidelities.size() > 1;
    for (Job& j : jobs) {
      std::string shape_text, param_text;
      for (const auto& [k, x] : j.shape) shape_text += fmt::format("{}{}{}", shape_text.empty() ? "" : "_", k, x);
      for (const auto& [k, x] : j.params) param_text += fmt::format("{}{}{}", param_text.empty() ? "" : "_", k, x);
      j.id = fmt::format("{}/{}{}/{}{}{}{}", j.test, j.variant.empty() ? "default" : j.variant,
                         j.dtype.empty() ? "" : "." + j.dtype, j.config,
                         j.cores > 0 ? fmt::format(".cores{}", j.cores) : "",
                         shape_text.empty() ? "" : "/" + shape_text, param_text.empty() ? "" : "/" + param_text);
      if (compared) {
        j.agree_group = j.id;
        j.id += "@" + j.fidelity;
      }
      if (!ids.insert(j.id).second) fail(path, t, fmt::format("job '{}' appears twice", j.id));
      suite.jobs.push_back(std::move(j));
    }
  }
  return suite;
}

std::vector<Job> select(const Suite& suite, const std::string& group, const std::string& filter, int index, int count) {
  std::vector<Job> jobs;
  for (const Job& j : suite.jobs) {
    if (!group.empty() && std::find(j.groups.begin(), j.groups.end(), group) == j.groups.end()) continue;
    if (!filter.empty() && fnmatch(filter.c_str(), j.id.c_str(), 0) != 0) continue;
    jobs.push_back(j);
  }
  // Sorted by id, then every count-th: the same split on every machine.
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.id < b.id; });
  return runner::shard_of(jobs, index, count);
}

void compare_to_baseline(std::vector<JobResult>& results, const nlohmann::json& baseline) {
  for (JobResult& r : results) {
    if (r.status != Status::Pass || !baseline.contains(r.job.id)) continue;
    const auto& entry = baseline[r.job.id];
    // An entry in another shape is no baseline for the job.
    if (!entry.is_object() || !entry.contains("time_ns") || !entry["time_ns"].is_number()) continue;
    const double was = entry["time_ns"].get<double>();
    const double now = r.report.value("time_ns", 0.0);
    if (was <= 0) continue;
    const double delta = 100.0 * (now - was) / was;
    if (std::abs(delta) > r.job.tolerance_percent) {
      r.status = delta > 0 ? Status::Slower : Status::Faster;
      r.message = fmt::format("time {:.1f} ns against baseline {:.1f} ns ({:+.2f}%, tolerance {}%)", now, was, delta,
                              r.job.tolerance_percent);
    }
  }
}

void check_agreement(std::vector<JobResult>& results) {
  // A job that failed for its own reason keeps its status; agreement is
  // judged between the members that ran to the end.
  const auto ran = [](Status s) { return s == Status::Pass || s == Status::Slower || s == Status::Faster; };
  std::map<std::string, std::vector<JobResult*>> groups;
  for (JobResult& r : results)
    if (!r.job.agree_group.empty() && ran(r.status)) groups[r.job.agree_group].push_back(&r);
  // A shard may hold one member of a group, which agrees with itself; the
  // merge sees them all.
  for (auto& [group, members] : groups) {
    const JobResult& first = *members.front();
    const auto end_of = [](const JobResult* r) {
      return std::make_pair(r->report.value("time_ns", 0.0), r->report.value("cycles", 0.0));
    };
    const auto other = std::find_if(members.begin(), members.end(),
                                    [&](const JobResult* r) { return end_of(r) != end_of(&first); });
    if (other == members.end()) continue;
    const auto [t0, c0] = end_of(&first);
    const auto [t, c] = end_of(*other);
    // Every member is marked: which side is wrong is for the engineer to find.
    const std::string message =
        fmt::format("{} ends at {:.3f} ns ({:.1f} tensor cycles), {} at {:.3f} ns ({:.1f} tensor cycles): {:+.3f} ns",
                    (*other)->job.fidelity, t, c, first.job.fidelity, t0, c0, t - t0);
    for (JobResult* m : members) {
      m->status = Status::Disagree;
      m->message = message;
    }
  }
}

nlohmann::json make_baseline(const std::vector<JobResult>& results) {
  nlohmann::json b = nlohmann::json::object();
  for (const JobResult& r : results)
    if (r.report.contains("time_ns"))
      b[r.job.id] = {{"time_ns", r.report["time_ns"]}, {"cycles", r.report["cycles"]}};
  return b;
}

nlohmann::json against_baseline(const std::vector<JobResult>& results, const nlohmann::json& baseline) {
  nlohmann::json rows = nlohmann::json::array();
  for (const JobResult& r : results) {
    nlohmann::json row = {{"id", r.job.id},         {"kernel", r.job.kernel},
                          {"variant", r.job.variant}, {"config", r.job.config},
                          {"status", to_string(r.status)}, {"message", r.message},
                          {"tolerance_percent", r.job.tolerance_percent}, {"wall_seconds", r.wall_seconds}};
    const double now = r.report.is_object() ? r.report.value("time_ns", 0.0) : 0.0;
    if (now > 0) row["time_ns"] = now;
    if (baseline.is_object() && baseline.contains(r.job.id) && baseline[r.job.id].is_object()) {
      const auto& was = baseline[r.job.id];
      if (was.contains("time_ns") && was["time_ns"].is_number() && was["time_ns"].get<double>() > 0) {
        row["baseline_ns"] = was["time_ns"];
        if (now > 0) row["change_percent"] = 100.0 * (now - was["time_ns"].get<double>()) / was["time_ns"].get<double>();
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      case '\r': out += "&#13;"; break;
      default:
        // XML 1.0 has no way to write the other control characters at all:
        // they are shown as \xNN text.
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        else out += c;
    }
  }
  return out;
}

// A failure message with its numbers and paths taken out, so that failures
// with one cause land in one bucket.
std::string normalise(const std::string& message) {
  static const std::regex numbers("0x[0-9a-f]+|[0-9]+(\\.[0-9]+)?");
  return std::regex_replace(message.substr(0, message.find('\n')), numbers, "N");
}

}  // namespace

std::string junit_xml(const std::string& suite, const std::vector<JobResult>& results) {
  int failures = 0;
  double time = 0;
  for (const auto& r : results) {
    failures += r.status != Status::Pass;
    time += r.wall_seconds;
  }
  std::string out = fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
                                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" time=\"{:.3f}\">\n",
                                xml_escape(suite), results.size(), failures, time);
  for (const auto& r : results) {
    out += fmt::format("    <testcase classname=\"{}.{}\" name=\"{}\" time=\"{:.3f}\"", xml_escape(suite),
                       xml_escape(r.job.test), xml_escape(r.job.id), r.wall_seconds);
    if (r.status == Status::Pass) {
      out += "/>\n";
    } else {
      out += fmt::format(">\n      <failure type=\"{}\" message=\"{}\"/>\n    </testcase>\n", to_string(r.status),
                         xml_escape(r.message));
    }
  }
  return out + "  </testsuite>\n</testsuites>\n";
}

namespace {

std::string format_time(double ns) {
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.3f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string shape_text(const Job& j) {
  std::string s;
  for (const auto& [k, v] : j.shape) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v);
  return s.empty() ? "default shape" : s;
}

// Simulated nanoseconds per wall-clock second (cocotb's "ratio").
double sim_rate(double sim_ns, double wall_s) { return wall_s > 0 ? sim_ns / wall_s : 0; }

std::string cell(const JobResult& r) {
  const std::string status = r.status == Status::Pass ? "ok" : fmt::format("**{}**", to_string(r.status));
  if (!r.report.contains("time_ns")) return status;
  return fmt::format("{} {} / {:.0f} / {:.1f}%", status, format_time(r.report.value("time_ns", 0.0)),
                     r.report.value("cycles", 0.0), r.report.value("hfu_percent", 0.0));
}

}  // namespace

std::string summary_markdown(const std::string& suite, const std::vector<JobResult>& results, bool all_jobs) {
  std::size_t passed = 0;
  double sim_ns = 0, wall = 0;
  for (const auto& r : results) {
    passed += r.status == Status::Pass;
    sim_ns += r.report.value("time_ns", 0.0);
    wall += r.wall_seconds;
  }
  std::string out = fmt::format("# {}: {} of {} passed\n", suite, passed, results.size());

  // One matrix per kernel: a row per test, variant and shape (in the order
  // they first appear), a column per config (by name).
  std::vector<std::string> kernels;
  for (const auto& r : results)
    if (std::find(kernels.begin(), kernels.end(), r.job.kernel) == kernels.end()) kernels.push_back(r.job.kernel);
  for (const auto& kernel : kernels) {
    std::vector<std::string> configs, rows;
    std::map<std::pair<std::string, std::string>, std::string> cells;
    for (const auto& r : results) {
      if (r.job.kernel != kernel) continue;
      if (std::find(configs.begin(), configs.end(), r.job.config) == configs.end()) configs.push_back(r.job.config);
      const std::string row =
          fmt::format("{} | {}{}{} | {}", r.job.test, r.job.variant.empty() ? "default" : r.job.variant,
                      r.job.dtype.empty() ? "" : " (" + r.job.dtype + ")",
                      r.job.cores > 0 ? fmt::format(" on {} cores", r.job.cores) : "", shape_text(r.job));
      if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
      cells[{row, r.job.config}] = cell(r);
    }
    std::sort(configs.begin(), configs.end());
    out += fmt::format("\n## {}\n\nEach cell: status, simulated time / tensor-engine cycles / HFU.\n\n",
                       kernel.empty() ? "(kernel not recorded)" : kernel);
    std::string rule;
    for (std::size_t i = 0; i < configs.size(); ++i) rule += "---|";
    out += fmt::format("| test | variant | shape | {} |\n|---|---|---|{}\n", fmt::join(configs, " | "), rule);
    for (const auto& row : rows) {
      out += "| " + row + " |";
      for (const auto& c : configs) {
        const auto it = cells.find({row, c});
        out += " " + (it == cells.end() ? std::string("") : it->second) + " |";
      }
      out += "\n";
    }
  }

  std::vector<const JobResult*> slowest;
  for (const auto& r : results) slowest.push_back(&r);
  std::sort(slowest.begin(), slowest.end(),
            [](const JobResult* a, const JobResult* b) { return a->wall_seconds > b->wall_seconds; });
  if (slowest.size() > 5) slowest.resize(5);
  out += "\n## Slowest jobs\n\n| job | wall (s) | simulated | simulated ns per wall s |\n|---|---|---|---|\n";
  for (const JobResult* r : slowest)
    out += fmt::format("| {} | {:.2f} | {} | {:.0f} |\n", r->job.id, r->wall_seconds,
                       format_time(r->report.value("time_ns", 0.0)), sim_rate(r->report.value("time_ns", 0.0), r->wall_seconds));
  out += fmt::format("\nSimulated {} in {:.1f} s of job wall time: {:.0f} simulated ns per wall second.\n",
                     format_time(sim_ns), wall, sim_rate(sim_ns, wall));

  std::map<std::string, std::vector<const JobResult*>> buckets;
  for (const auto& r : results)
    if (r.status != Status::Pass) buckets[fmt::format("{}: {}", to_string(r.status), normalise(r.message))].push_back(&r);
  if (!buckets.empty()) {
    out += "\n## Failures by cause\n\n";
    for (const auto& [cause, rs] : buckets) {
      std::vector<std::string> ids;
      for (const JobResult* r : rs) ids.push_back(r->job.id);
      out += fmt::format("- {} ({}): {}\n", cause, ids.size(), fmt::join(ids, ", "));
      // The details of the first (e.g. its log's tail), indented under it.
      const std::string& m = rs.front()->message;
      if (m.find('\n') != std::string::npos) {
        std::string details = m.substr(m.find('\n') + 1);
        while (!details.empty() && details.back() == '\n') details.pop_back();
        std::string indented;
        for (char c : details) indented += c == '\n' ? std::string("\n      ") : std::string(1, c);
        out += fmt::format("\n  {}:\n\n      {}\n\n", ids.front(), indented);
      }
    }
  }

  if (all_jobs) {
    out += "\n## All jobs\n\n| job | status | time | cycles | HFU % | wall (s) | simulated ns per wall s |\n"
           "|---|---|---|---|---|---|---|\n";
    for (const auto& r : results)
      out += fmt::format("| {} | {} | {} | {:.0f} | {:.2f} | {:.2f} | {:.0f} |\n", r.job.id, to_string(r.status),
                         format_time(r.report.value("time_ns", 0.0)), r.report.value("cycles", 0.0),
                         r.report.value("hfu_percent", 0.0), r.wall_seconds,
                         sim_rate(r.report.value("time_ns", 0.0), r.wall_seconds));
  }
  return out;
}

Progress::Progress(std::FILE* out, std::size_t total, bool live)
    : out_(out), total_(total), live_(live), start_(std::chrono::steady_clock::now()) {}

std::string Progress::line() const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // Jobs finish at a roughly steady rate once the pool is full, so the rate
  // so far is the estimate.
  const std::string left =
      done_ == 0 || done_ == total_
          ? std::string()
          : fmt::format(", ~{:.0f} s left", elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_));
  return fmt::format("[{}/{}] {} passed, {} failed, {:.0f} s elapsed{}{}", done_, total_, passed_, done_ - passed_,
                     elapsed, left, note_.empty() ? "" : "  (" + note_ + ")");
}

void Progress::job_done(const JobResult& r) {
  ++done_;
  passed_ += r.status == Status::Pass;
  if (!live_) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    fmt::print(out_, "[{}/{}] {} {} ({:.1f} s; {} passed, {} failed, {:.0f} s elapsed)\n", done_, total_, to_string(r.status),
               r.job.id, r.wall_seconds, passed_, done_ - passed_, elapsed);
  } else {
    // A failure stays on screen above the redrawn line.
    if (r.status != Status::Pass)
      fmt::print(out_, "\r\033[K{} {}: {}\n", to_string(r.status), r.job.id, r.message.substr(0, r.message.find('\n')));
    fmt::print(out_, "\r\033[K{}", line());
  }
  std::fflush(out_);
}

void Progress::tick(const std::string& note) {
  note_ = note;
  if (!live_) return;
  fmt::print(out_, "\r\033[K{}", line());
  std::fflush(out_);
}

void Progress::finish() {
  if (!live_) return;
  fmt::print(out_, "\r\033[K{}\n", line());
  std::fflush(out_);
}

}  // namespace tessera::cli::regress
