#include "regress.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fnmatch.h>
#include <regex>
#include <set>

namespace tessera::cli::regress {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& file, const YAML::Node& at, const std::string& message) {
  const int line = at.Mark().is_null() ? 0 : at.Mark().line + 1;
  throw SuiteError(fmt::format("{}:{}: {}", file, line, message));
}

void check_keys(const std::string& file, const YAML::Node& map, const std::set<std::string>& allowed,
                const std::string& where) {
  if (!map.IsMap()) fail(file, map, fmt::format("{} must be a mapping", where));
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (!allowed.count(key))
      fail(file, it->first, fmt::format("unknown key '{}' in {} (allowed: {})", key, where, fmt::join(allowed, ", ")));
  }
}

std::vector<std::string> strings(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (n.IsScalar()) return {n.Scalar()};
  if (!n.IsSequence()) fail(file, n, fmt::format("'{}' must be a name or a list of names", key));
  std::vector<std::string> out;
  for (const auto& item : n) out.push_back(item.Scalar());
  return out;
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
    root = YAML::LoadFile(path);
  } catch (const YAML::ParserException& e) {
    throw SuiteError(fmt::format("{}:{}: YAML syntax error: {}", path, e.mark.line + 1, e.msg));
  } catch (const YAML::Exception& e) {
    throw SuiteError(fmt::format("{}: cannot read: {}", path, e.msg));
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
    for (const char* k : {"name", "kernel", "variants", "configs", "shapes"}) allowed.insert(k);
    check_keys(path, t, allowed, "a test");
    for (const char* k : {"name", "kernel", "configs"})
      if (!t[k]) fail(path, t, fmt::format("a test needs '{}'", k));
    const auto setting = [&](const char* key) { return t[key] ? t[key] : defaults[key]; };
    Job base;
    base.test = t["name"].Scalar();
    base.kernel = t["kernel"].Scalar();
    if (auto n = setting("fidelity")) base.fidelity = n.Scalar();
    if (auto n = setting("timeout_s")) base.timeout_s = scalar<double>(path, n, "timeout_s");
    if (auto n = setting("tolerance_percent")) base.tolerance_percent = scalar<double>(path, n, "tolerance_percent");
    if (auto n = setting("seed")) base.seed = scalar<std::uint64_t>(path, n, "seed");
    if (auto n = setting("groups")) base.groups = strings(path, n, "groups");
    const std::vector<std::string> variants = t["variants"] ? strings(path, t["variants"], "variants")
                                                            : std::vector<std::string>{""};
    const std::vector<std::string> configs = strings(path, t["configs"], "configs");
    std::vector<std::map<std::string, std::int64_t>> shapes;
    if (t["shapes"]) {
      if (!t["shapes"].IsSequence()) fail(path, t["shapes"], "'shapes' must be a list of NAME: VALUE mappings");
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
    for (const auto& v : variants)
      for (const auto& c : configs)
        for (const auto& s : shapes) {
          Job j = base;
          j.variant = v;
          j.config = c;
          j.shape = s;
          std::string shape_text;
          for (const auto& [k, x] : s) shape_text += fmt::format("{}{}{}", shape_text.empty() ? "" : "_", k, x);
          j.id = fmt::format("{}/{}/{}{}", j.test, v.empty() ? "default" : v, c, shape_text.empty() ? "" : "/" + shape_text);
          if (!ids.insert(j.id).second) fail(path, t, fmt::format("job '{}' appears twice", j.id));
          suite.jobs.push_back(j);
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
  std::vector<Job> shard;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(count)) == index - 1) shard.push_back(jobs[i]);
  return shard;
}

void compare_to_baseline(std::vector<JobResult>& results, const nlohmann::json& baseline) {
  for (JobResult& r : results) {
    if (r.status != "pass" || !baseline.contains(r.job.id)) continue;
    const double was = baseline[r.job.id].value("time_ns", 0.0);
    const double now = r.report.value("time_ns", 0.0);
    if (was <= 0) continue;
    const double delta = 100.0 * (now - was) / was;
    if (std::abs(delta) > r.job.tolerance_percent) {
      r.status = delta > 0 ? "slower" : "faster";
      r.message = fmt::format("time {:.1f} ns against baseline {:.1f} ns ({:+.2f}%, tolerance {}%)", now, was, delta,
                              r.job.tolerance_percent);
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

namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
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
    failures += r.status != "pass";
    time += r.wall_seconds;
  }
  std::string out = fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
                                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" time=\"{:.3f}\">\n",
                                xml_escape(suite), results.size(), failures, time);
  for (const auto& r : results) {
    out += fmt::format("    <testcase classname=\"{}.{}\" name=\"{}\" time=\"{:.3f}\"", xml_escape(suite),
                       xml_escape(r.job.test), xml_escape(r.job.id), r.wall_seconds);
    if (r.status == "pass") {
      out += "/>\n";
    } else {
      out += fmt::format(">\n      <failure type=\"{}\" message=\"{}\"/>\n    </testcase>\n", r.status,
                         xml_escape(r.message));
    }
  }
  return out + "  </testsuite>\n</testsuites>\n";
}

std::string summary_markdown(const std::string& suite, const std::vector<JobResult>& results) {
  std::size_t passed = 0;
  double sim_ns = 0, wall = 0;
  for (const auto& r : results) {
    passed += r.status == "pass";
    sim_ns += r.report.value("time_ns", 0.0);
    wall += r.wall_seconds;
  }
  std::string out = fmt::format("# {}: {} of {} passed\n\n", suite, passed, results.size());
  out += "| job | status | time (us) | cycles | HFU % | wall (s) |\n|---|---|---|---|---|---|\n";
  for (const auto& r : results)
    out += fmt::format("| {} | {} | {:.3f} | {:.0f} | {:.2f} | {:.2f} |\n", r.job.id, r.status,
                       r.report.value("time_ns", 0.0) / 1000.0, r.report.value("cycles", 0.0),
                       r.report.value("hfu_percent", 0.0), r.wall_seconds);
  out += fmt::format("\nSimulated {:.3f} us in {:.1f} s of job wall time.\n", sim_ns / 1000.0, wall);
  std::map<std::string, std::vector<std::string>> buckets;
  for (const auto& r : results)
    if (r.status != "pass") buckets[r.status + ": " + normalise(r.message)].push_back(r.job.id);
  if (!buckets.empty()) {
    out += "\n## Failures by cause\n\n";
    for (const auto& [cause, ids] : buckets)
      out += fmt::format("- {} ({}): {}\n", cause, ids.size(), fmt::join(ids, ", "));
  }
  return out;
}

}  // namespace tessera::cli::regress
