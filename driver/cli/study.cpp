#include "study.h"

#include "yaml_file.h"

#include "arch/address_map.h"
#include "arch/config.h"
#include "arch/config_input.h"
#include "arch/config_schema.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

namespace tessera::cli::sweep {
namespace {

namespace fs = std::filesystem;
using regress::Job;
using regress::JobResult;

// A parameter with more values than this, or a grid with more points, is
// almost always a typo in a range.
constexpr std::size_t kMaxValues = 1000;
constexpr std::size_t kMaxPoints = 10000;

[[noreturn]] void fail(const std::string& file, int line, const std::string& message) {
  throw StudyError(fmt::format("{}:{}: {}", file, line, message));
}

[[noreturn]] void fail(const std::string& file, const YAML::Node& at, const std::string& message) {
  fail(file, line_of(at), message);
}

void check_keys(const std::string& file, const YAML::Node& map, const std::set<std::string>& allowed,
                const std::string& where) {
  cli::check_keys<StudyError>(file, map, allowed, where);
}

template <typename T>
T scalar(const std::string& file, const YAML::Node& n, const std::string& key) {
  return scalar_as<T, StudyError>(file, n, key);
}

std::vector<std::string> names(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (n.IsScalar()) return {n.Scalar()};
  if (!n.IsSequence() || n.size() == 0) fail(file, n, fmt::format("'{}' must be a name or a non-empty list", key));
  std::vector<std::string> out;
  for (const auto& item : n) {
    if (!item.IsScalar()) fail(file, item, fmt::format("'{}' must list names", key));
    out.push_back(item.Scalar());
  }
  return out;
}

// A number as YAML text that reads back as the same value: integers without
// a decimal point (int config fields refuse "64.0").
std::string number_text(double v) {
  if (std::abs(v - std::round(v)) < 1e-9 * std::max(1.0, std::abs(v))) return fmt::format("{}", std::llround(v));
  return fmt::format("{:.6g}", v);
}

// `retune: N`: each point searches its kernel's tunable parameters on its
// own config with at most N timed runs (tessera run --retune N), so that a
// what-if compares each config at its own best tiling.
constexpr std::uint64_t kMaxRetuneBudget = 100000;
std::size_t retune_budget(const std::string& file, const YAML::Node& n) {
  std::uint64_t v = 0;
  if (!n.IsScalar() || !parse_u64(n.Scalar(), &v) || v > kMaxRetuneBudget)
    fail(file, n, fmt::format("'retune' must be the timed runs of each point's search, a whole number from 0 (none) "
                              "to {}",
                              kMaxRetuneBudget));
  return static_cast<std::size_t>(v);
}

// range: {from, to, step} (arithmetic) or {from, to, factor} (geometric), both ends included.
void expand_range(const std::string& file, const YAML::Node& r, Parameter& p) {
  check_keys(file, r, {"from", "to", "step", "factor"}, "a range");
  for (const char* k : {"from", "to"})
    if (!r[k]) fail(file, r, fmt::format("a range needs '{}'", k));
  if (!r["step"] == !r["factor"]) fail(file, r, "a range needs exactly one of 'step' and 'factor'");
  const double from = scalar<double>(file, r["from"], "from");
  const double to = scalar<double>(file, r["to"], "to");
  for (const char* k : {"from", "to", "step", "factor"})
    if (r[k] && !std::isfinite(scalar<double>(file, r[k], k)))
      fail(file, r[k], fmt::format("range: '{}' must be a finite number, not {}", k, r[k].Scalar()));
  if (to < from) fail(file, r, fmt::format("range: 'to' ({}) is below 'from' ({})", to, from));
  const bool geometric = static_cast<bool>(r["factor"]);
  const double by = geometric ? scalar<double>(file, r["factor"], "factor") : scalar<double>(file, r["step"], "step");
  if (geometric && (by <= 1 || from <= 0))
    fail(file, r["factor"], fmt::format("range: 'factor' must be above 1 and 'from' positive (factor {}, from {})", by, from));
  if (!geometric && by <= 0) fail(file, r["step"], fmt::format("range: 'step' must be positive, not {}", by));
  const double slack = 1e-9 * std::max(1.0, std::abs(to));
  for (double v = from; v <= to + slack; v = geometric ? v * by : v + by) {
    if (p.values.size() >= kMaxValues)
      fail(file, r, fmt::format("range gives more than {} values", kMaxValues));
    p.values.push_back(number_text(v));
    p.value_lines.push_back(line_of(r));
  }
}

// `key:` or `keys:`, with `values:` or `range:`.
void parse_key_parameter(const std::string& file, const YAML::Node& n, Parameter& p) {
  if (!n["key"] == !n["keys"]) fail(file, n, "a parameter needs exactly one of 'key' and 'keys'");
  p.keys = names(file, n["key"] ? n["key"] : n["keys"], n["key"] ? "key" : "keys");
  for (const auto& key : p.keys)
    if (!arch::find_field(key)) {
      const YAML::Node at = n["key"] ? n["key"] : n["keys"];
      fail(file, at, fmt::format("unknown config key '{}' (tessera config schema lists them)", key));
    }
  p.name = n["name"] ? n["name"].Scalar() : p.keys.front();
  if (!n["values"] == !n["range"]) fail(file, n, fmt::format("parameter '{}' needs exactly one of 'values' and 'range'", p.name));
  if (n["values"]) {
    if (!n["values"].IsSequence() || n["values"].size() == 0)
      fail(file, n["values"], fmt::format("parameter '{}': 'values' must be a non-empty list", p.name));
    for (const auto& v : n["values"]) {
      if (!v.IsScalar()) fail(file, v, fmt::format("parameter '{}': a value must be a scalar", p.name));
      // An empty value (`""`, or a tag alone such as `!x`) would make the
      // override `key=`, which the config loader refuses (found by fuzz_study).
      if (v.Scalar().empty()) fail(file, v, fmt::format("parameter '{}': a value must not be empty", p.name));
      p.values.push_back(v.Scalar());
      p.value_lines.push_back(line_of(v));
    }
  } else {
    expand_range(file, n["range"], p);
  }
}

// `configs: [neuroncore-v1, neuroncore-v2+hbm.bandwidth_gbps=820, mine.yaml]`:
// each value a whole config, in place of the study's base.
Parameter parse_configs_parameter(const std::string& file, const YAML::Node& n) {
  Parameter p;
  p.line = line_of(n);
  p.configs = true;
  for (const char* k : {"key", "keys", "values", "range"})
    if (n[k])
      fail(file, n[k], fmt::format("a parameter with 'configs' takes no '{}': each of its values is a whole config", k));
  p.name = n["name"] ? n["name"].Scalar() : "config";
  const YAML::Node list = n["configs"];
  if (!list.IsSequence() || list.size() == 0)
    fail(file, list, fmt::format("parameter '{}': 'configs' must be a non-empty list of config names or files", p.name));
  const std::string dir = fs::path(file).parent_path().string();
  for (const auto& v : list) {
    if (!v.IsScalar()) fail(file, v, fmt::format("parameter '{}': a config must be a name or a file", p.name));
    try {
      parse_config_choice(v.Scalar(), dir);
    } catch (const StudyError& e) {
      fail(file, v, e.what());
    }
    p.values.push_back(v.Scalar());
    p.value_lines.push_back(line_of(v));
  }
  return p;
}

Parameter parse_parameter(const std::string& file, const YAML::Node& n) {
  check_keys(file, n, {"name", "key", "keys", "values", "range", "configs"}, "a parameter");
  Parameter p;
  p.line = line_of(n);
  if (n["configs"]) {
    p = parse_configs_parameter(file, n);
  } else {
    parse_key_parameter(file, n, p);
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < p.values.size(); ++i)
    if (!seen.insert(p.values[i]).second)
      fail(file, p.value_lines[i], fmt::format("parameter '{}': value {} appears twice", p.name, p.values[i]));
  return p;
}

KernelRuns parse_kernel(const std::string& file, const YAML::Node& n, const KernelLookup& kernels) {
  check_keys(file, n, {"kernel", "variants", "dtypes", "shapes", "params", "cores", "shard", "retune"},
             "a kernel entry");
  KernelRuns k;
  k.line = line_of(n);
  if (!n["kernel"]) fail(file, n, "a kernel entry needs 'kernel'");
  k.kernel = n["kernel"].Scalar();
  if (!kernels.has(k.kernel))
    fail(file, n["kernel"], fmt::format("unknown kernel '{}' (kernels: {})", k.kernel, fmt::join(kernels.names(), ", ")));
  if (n["variants"]) {
    k.variants = names(file, n["variants"], "variants");
    for (const auto& v : k.variants) {
      try {
        kernels.check_variant(k.kernel, v);
      } catch (const std::exception& e) {
        fail(file, n["variants"], e.what());
      }
    }
  }
  // Core counts (tessera run --cores N) and the dimension split across
  // them; each point's chip must have as many cores (checked per point).
  if (n["cores"]) {
    k.cores = core_counts<StudyError>(file, n["cores"], static_cast<int>(arch::kMaxChipCores));
    if (!kernels.shards(k.kernel) && *std::max_element(k.cores.begin(), k.cores.end()) > 1)
      fail(file, n["cores"], fmt::format("kernel '{}' runs on one core only (it declares no shard dimensions)", k.kernel));
  }
  if (n["shard"]) {
    if (!n["cores"]) fail(file, n["shard"], "'shard' needs 'cores'");
    k.shards = names(file, n["shard"], "shard");
    for (const auto& d : k.shards) {
      try {
        kernels.check_shard(k.kernel, d);
      } catch (const std::exception& e) {
        fail(file, n["shard"], e.what());
      }
    }
    if (std::set<std::string>(k.shards.begin(), k.shards.end()).size() != k.shards.size())
      fail(file, n["shard"], "'shard' lists a dimension twice");
  }
  // Input dtypes, each one the kernel takes on every variant of the entry.
  if (n["dtypes"]) {
    k.dtypes = names(file, n["dtypes"], "dtypes");
    for (const auto& d : k.dtypes)
      for (const auto& v : k.variants.empty() ? std::vector<std::string>{""} : k.variants) {
        try {
          kernels.check_dtype(k.kernel, v, d);
        } catch (const std::exception& e) {
          fail(file, n["dtypes"], e.what());
        }
      }
  }
  // Tunable parameters: a list of NAME: VALUE mappings crossed with the
  // variants and shapes, each checked against every variant it meets.
  if (const YAML::Node p = n["params"]) {
    if (!p.IsSequence() || p.size() == 0) fail(file, p, "'params' must be a non-empty list of NAME: VALUE mappings");
    for (const auto& m : p) {
      if (!m.IsMap()) fail(file, m, "a params entry must be a mapping NAME: VALUE");
      std::map<std::string, std::string> set;
      for (auto it = m.begin(); it != m.end(); ++it) set[it->first.Scalar()] = it->second.Scalar();
      for (const auto& v : k.variants.empty() ? std::vector<std::string>{""} : k.variants) {
        try {
          kernels.check_params(k.kernel, v, set);
        } catch (const std::exception& e) {
          fail(file, m, e.what());
        }
      }
      k.params.push_back(set);
    }
  }
  if (n["retune"]) k.retune = retune_budget(file, n["retune"]);
  if (n["shapes"]) {
    if (!n["shapes"].IsSequence() || n["shapes"].size() == 0)
      fail(file, n["shapes"], "'shapes' must be a non-empty list of NAME: VALUE mappings");
    for (const auto& s : n["shapes"]) {
      if (!s.IsMap()) fail(file, s, "a shape must be a mapping NAME: VALUE");
      std::map<std::string, std::int64_t> shape;
      for (auto it = s.begin(); it != s.end(); ++it)
        shape[it->first.Scalar()] = scalar<std::int64_t>(file, it->second, it->first.Scalar());
      try {
        kernels.check_shape(k.kernel, shape);
      } catch (const std::exception& e) {
        fail(file, s, e.what());
      }
      k.shapes.push_back(shape);
    }
  }
  return k;
}

std::string shape_text(const std::map<std::string, std::int64_t>& shape, const char* sep, const char* eq) {
  std::string s;
  for (const auto& [k, v] : shape) s += fmt::format("{}{}{}{}", s.empty() ? "" : sep, k, eq, v);
  return s;
}

// Every combination of parameter values, the first parameter slowest.
std::vector<std::vector<std::size_t>> combinations(const Study& study) {
  std::vector<std::vector<std::size_t>> out{{}};
  for (const auto& p : study.parameters) {
    std::vector<std::vector<std::size_t>> next;
    for (const auto& c : out)
      for (std::size_t i = 0; i < p.values.size(); ++i) {
        next.push_back(c);
        next.back().push_back(i);
      }
    out = std::move(next);
  }
  return out;
}

std::string study_dir(const Study& study) {
  return study.path.empty() ? std::string() : fs::path(study.path).parent_path().string();
}

// The config a point runs on: the study's base, or a configs parameter's value.
std::string config_of(const Study& study, const std::vector<std::size_t>& combination) {
  for (std::size_t i = 0; i < study.parameters.size(); ++i)
    if (study.parameters[i].configs)
      return parse_config_choice(study.parameters[i].values[combination[i]], study_dir(study)).config;
  return study.base;
}

// The study's fixed overrides, a configs value's own, then the key parameters'.
std::vector<std::string> overrides_of(const Study& study, const std::vector<std::size_t>& combination) {
  std::vector<std::string> sets = study.sets;
  for (std::size_t i = 0; i < study.parameters.size(); ++i)
    if (study.parameters[i].configs) {
      const auto choice = parse_config_choice(study.parameters[i].values[combination[i]], study_dir(study));
      sets.insert(sets.end(), choice.overrides.begin(), choice.overrides.end());
    }
  for (std::size_t i = 0; i < study.parameters.size(); ++i)
    for (const auto& key : study.parameters[i].keys)
      sets.push_back(key + "=" + study.parameters[i].values[combination[i]]);
  return sets;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

ConfigChoice parse_config_choice(const std::string& text, const std::string& relative_to) {
  ConfigChoice c;
  std::size_t at = text.find('+');
  c.config = text.substr(0, at);
  if (c.config.empty()) throw StudyError(fmt::format("'{}': no config before its overrides", text));
  while (at != std::string::npos) {
    const std::size_t next = text.find('+', at + 1);
    const std::string set = text.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    try {
      arch::parse_override(set);
    } catch (const arch::ConfigError& e) {
      throw StudyError(fmt::format("'{}': override '{}': {}", text, set,
                                   e.diagnostics().empty() ? e.what() : e.diagnostics().front().message));
    }
    c.overrides.push_back(set);
    at = next;
  }
  const fs::path p(c.config);
  if (p.has_extension() || c.config.find('/') != std::string::npos) {
    if (p.is_relative() && !relative_to.empty()) c.config = (fs::path(relative_to) / p).string();
    return c;
  }
  const fs::path dir(arch::config_dir());
  if (!fs::exists(dir / (c.config + ".yaml")) && fs::exists(dir / ("neuroncore-" + c.config + ".yaml")))
    c.config = "neuroncore-" + c.config;
  return c;
}

void check_points(const Study& s) {
  // Every point must be a config the loader accepts: a value out of its
  // limits, or a combination the cross-checks refuse, is named here rather
  // than failing one job in the middle of the sweep.
  for (const auto& combination : combinations(s)) {
    const std::string config = config_of(s, combination);
    try {
      std::vector<arch::Override> overrides;
      for (const auto& set : overrides_of(s, combination)) overrides.push_back(arch::parse_override(set));
      const arch::ResolvedConfig rc = arch::load_config(config, overrides);
      // A kernel entry's core counts must fit every point's chip.
      for (const auto& k : s.kernels)
        for (const int n : k.cores)
          if (n > rc.hw.chip.cores) {
            std::vector<std::string> point;
            for (std::size_t i = 0; i < s.parameters.size(); ++i)
              point.push_back(s.parameters[i].name + "=" + s.parameters[i].values[combination[i]]);
            const std::string message = fmt::format("kernel '{}': cores {} at the point {} on {}, whose chip has {} (chip.cores)",
                                                    k.kernel, n, fmt::join(point, ", "), config, rc.hw.chip.cores);
            if (s.path.empty()) throw StudyError(message);
            fail(s.path, k.line, message);
          }
    } catch (const arch::ConfigError& e) {
      // Blame the last parameter whose value is not its first: the one most
      // likely to have pushed the config over a limit.
      int line = s.parameters.front().value_lines[combination.front()];
      std::vector<std::string> point;
      for (std::size_t i = 0; i < s.parameters.size(); ++i) {
        point.push_back(s.parameters[i].name + "=" + s.parameters[i].values[combination[i]]);
        if (combination[i] != 0) line = s.parameters[i].value_lines[combination[i]];
      }
      std::string problems;
      for (const auto& d : e.diagnostics()) problems += (problems.empty() ? "" : "; ") + d.message;
      const std::string message =
          fmt::format("the point {} is not a valid config on {}: {}", fmt::join(point, ", "), config, problems);
      if (s.path.empty()) throw StudyError(message);  // a study built in memory (tessera compare)
      fail(s.path, line, message);
    }
  }
}

Study load_study(const std::string& path, const KernelLookup& kernels, const std::set<std::string>& only_kernels) {
  YAML::Node root;
  try {
    root = load_yaml_file(path);
  } catch (const YamlFileError& e) {
    throw StudyError(e.what());
  }
  check_keys(path, root,
             {"description", "base", "fidelity", "no_data", "timeout_s", "seed", "retune", "parameters", "kernels"},
             "the study");
  Study s;
  s.path = path;
  s.name = fs::path(path).stem().string();
  if (root["description"]) {
    s.description = root["description"].Scalar();
    // One line of text: a control character (raw, or from an escape) would
    // go into the plots' titles and results.json (found by fuzz_study).
    if (arch::has_control_character(s.description) || arch::not_utf8(s.description))
      fail(path, root["description"], "'description' must be one line of UTF-8 text without control characters");
  }
  if (root["base"]) {
    s.base = root["base"].Scalar();
    // A base given as a file is relative to the study.
    if (s.base.size() > 5 && s.base.substr(s.base.size() - 5) == ".yaml" && fs::path(s.base).is_relative())
      s.base = (fs::path(path).parent_path() / s.base).string();
  }
  if (root["fidelity"]) {
    s.fidelity = root["fidelity"].Scalar();
    if (!arch::parse_fidelity(s.fidelity))
      fail(path, root["fidelity"], fmt::format("fidelity '{}': expected rtl, sampled or tlm", s.fidelity));
  }
  if (root["no_data"]) s.no_data = scalar<bool>(path, root["no_data"], "no_data");
  if (root["timeout_s"]) {
    s.timeout_s = scalar<double>(path, root["timeout_s"], "timeout_s");
    if (!std::isfinite(s.timeout_s) || s.timeout_s <= 0 || s.timeout_s > 7 * 86400)
      fail(path, root["timeout_s"], fmt::format("'timeout_s' must be a number above 0 and at most a week (604800), not {}",
                                                root["timeout_s"].Scalar()));
  }
  if (root["retune"]) s.retune = retune_budget(path, root["retune"]);
  if (root["seed"] && (!root["seed"].IsScalar() || !parse_u64(root["seed"].Scalar(), &s.seed)))
    fail(path, root["seed"], "'seed' must be a whole number from 0 to 2^64-1");
  if (!root["parameters"] || !root["parameters"].IsSequence() || root["parameters"].size() == 0)
    fail(path, root["parameters"] ? root["parameters"] : root, "a study needs a non-empty list 'parameters'");
  std::set<std::string> parameter_names, keys;
  for (const auto& n : root["parameters"]) {
    Parameter p = parse_parameter(path, n);
    if (!parameter_names.insert(p.name).second) fail(path, n, fmt::format("parameter '{}' appears twice", p.name));
    for (const auto& k : p.keys)
      if (!keys.insert(k).second) fail(path, n, fmt::format("config key '{}' is varied by two parameters", k));
    s.parameters.push_back(std::move(p));
  }
  const auto configs = std::count_if(s.parameters.begin(), s.parameters.end(), [](const Parameter& p) { return p.configs; });
  if (configs > 1) fail(path, root["parameters"], "only one parameter may list whole configs");
  if (configs == 1 && root["base"])
    fail(path, root["base"], "a study with a 'configs' parameter takes no 'base': each point runs on its config");
  if (configs == 0 && !root["base"]) fail(path, root, "a study needs 'base' (the config it varies)");
  if (!root["kernels"] || !root["kernels"].IsSequence() || root["kernels"].size() == 0)
    fail(path, root["kernels"] ? root["kernels"] : root, "a study needs a non-empty list 'kernels'");
  for (const auto& n : root["kernels"]) {
    if (!only_kernels.empty() && n.IsMap() && n["kernel"] && !only_kernels.count(n["kernel"].Scalar())) continue;
    KernelRuns k = parse_kernel(path, n, kernels);
    if (!k.retune) k.retune = s.retune;
    // A search times one core's runs (tessera run --retune takes no --cores).
    if (*k.retune > 0 && !k.cores.empty() && *std::max_element(k.cores.begin(), k.cores.end()) > 0)
      fail(path, n, fmt::format("kernel '{}': 'retune' searches one core's parameters; it does not go with 'cores'",
                                k.kernel));
    s.kernels.push_back(std::move(k));
  }
  if (s.kernels.empty())
    fail(path, root["kernels"], fmt::format("no kernel of the study is in --kernels {}", fmt::join(only_kernels, ",")));

  // Counted before anything is expanded: a range typo would otherwise make
  // millions of points to check.
  double grid = 1;
  for (const auto& p : s.parameters) grid *= static_cast<double>(p.values.size());
  double runs = 0;
  for (const auto& k : s.kernels)
    runs += static_cast<double>(std::max<std::size_t>(1, k.variants.size()) * std::max<std::size_t>(1, k.dtypes.size()) *
                                std::max<std::size_t>(1, k.cores.size()) * std::max<std::size_t>(1, k.shards.size()) *
                                std::max<std::size_t>(1, k.shapes.size()) * std::max<std::size_t>(1, k.params.size()));
  if (grid * runs > static_cast<double>(kMaxPoints))
    fail(path, root["parameters"], fmt::format("the study has {:.0f} points ({:.0f} configs x {:.0f} runs each); at most {}",
                                               grid * runs, grid, runs, kMaxPoints));

  check_points(s);
  return s;
}

std::vector<Point> expand(const Study& study) {
  std::vector<Point> points;
  for (const auto& combination : combinations(study)) {
    std::vector<std::pair<std::string, std::string>> params;
    std::string prefix;
    for (std::size_t i = 0; i < study.parameters.size(); ++i) {
      params.emplace_back(study.parameters[i].name, study.parameters[i].values[combination[i]]);
      prefix += fmt::format("{}{}={}", prefix.empty() ? "" : ",", study.parameters[i].name,
                            study.parameters[i].values[combination[i]]);
    }
    for (const auto& k : study.kernels) {
      const auto variants = k.variants.empty() ? std::vector<std::string>{""} : k.variants;
      const auto shapes = k.shapes.empty() ? std::vector<std::map<std::string, std::int64_t>>{{}} : k.shapes;
      const auto param_sets = k.params.empty() ? std::vector<std::map<std::string, std::string>>{{}} : k.params;
      const auto dtypes = k.dtypes.empty() ? std::vector<std::string>{""} : k.dtypes;
      const auto core_list = k.cores.empty() ? std::vector<int>{0} : k.cores;
      const auto shard_list = k.shards.empty() ? std::vector<std::string>{""} : k.shards;
      Job base;
      base.test = study.name;
      base.kernel = k.kernel;
      base.config = config_of(study, combination);
      base.fidelity = study.fidelity;
      base.seed = study.seed;
      base.timeout_s = study.timeout_s;
      base.no_data = study.no_data;
      base.overrides = overrides_of(study, combination);
      base.retune = k.retune.value_or(0);
      std::vector<Job> jobs{base};
      jobs = runner::cross(jobs, variants, [](Job& j, const std::string& v) { j.variant = v; });
      jobs = runner::cross(jobs, dtypes, [](Job& j, const std::string& d) { j.dtype = d; });
      jobs = runner::cross(jobs, core_list, [](Job& j, int n) { j.cores = n; });
      jobs = runner::cross(jobs, shard_list, [](Job& j, const std::string& d) { j.shard = d; });
      jobs = runner::cross(jobs, shapes, [](Job& j, const std::map<std::string, std::int64_t>& s) { j.shape = s; });
      jobs = runner::cross(jobs, param_sets, [](Job& j, const std::map<std::string, std::string>& p) { j.params = p; });
      for (Job& j : jobs) {
        const std::string s = shape_text(j.shape, "_", "");
        std::string pt;
        for (const auto& [name, value] : j.params) pt += fmt::format("{}{}{}", pt.empty() ? "" : "_", name, value);
        j.id = fmt::format("{}/{}/{}{}{}{}{}{}", prefix, k.kernel, j.variant.empty() ? "default" : j.variant,
                           j.dtype.empty() ? "" : "." + j.dtype, j.cores > 0 ? fmt::format(".cores{}", j.cores) : "",
                           j.cores > 0 && !j.shard.empty() ? ".shard" + j.shard : "", s.empty() ? "" : "/" + s,
                           pt.empty() ? "" : "/" + pt);
        points.push_back(Point{params, std::move(j)});
      }
    }
  }
  return points;
}

std::vector<Point> shard(const std::vector<Point>& points, int index, int count) {
  return runner::shard_of(points, index, count);
}

namespace {

const JobResult* result_of(const std::vector<JobResult>& results, const std::string& id) {
  for (const auto& r : results)
    if (r.job.id == id) return &r;
  return nullptr;
}

// The report's figures, in CSV column order: name and the report key.
const std::vector<std::pair<const char*, const char*>> kFigures = {
    {"time_ns", "time_ns"},
    {"cycles", "cycles"},
    {"hfu_percent", "hfu_percent"},
    {"mfu_percent", "mfu_percent"},
    {"achieved_tflops", "achieved_tflops"},
    {"peak_tflops", "peak_tflops"},
    {"arithmetic_intensity", "arithmetic_intensity"},
    {"tensor_utilisation", "tensor_utilisation"},
    {"dma_bytes", "dma_bytes"},
    {"dma_transfers", "dma_transfers"},
    {"dma_average_bytes", "dma_average_bytes"},
    {"hbm_bytes", "hbm_bytes"},
    {"hbm_bandwidth_gbps", "hbm_bandwidth_gbps"},
    {"hbm_peak_gbps", "hbm_peak_gbps"},
    {"hbm_utilisation_percent", "hbm_utilisation_percent"},
    {"dma_busy_ns", "dma_busy_ns"},
};

// A run on several cores adds these (empty on one core): name and where
// the report holds it.
const std::vector<std::pair<const char*, const char*>> kChipFigures = {
    {"speedup", "/scaling/speedup"},
    {"scaling_efficiency_percent", "/scaling/efficiency_percent"},
    {"collective_percent", "/collectives/percent"},
};

}  // namespace

std::string results_csv(const Study& study, const std::vector<Point>& points, const std::vector<JobResult>& results) {
  std::set<std::string> engine_set;
  for (const auto& r : results)
    if (r.report.contains("engines"))
      for (auto it = r.report["engines"].begin(); it != r.report["engines"].end(); ++it) engine_set.insert(it.key());
  std::vector<std::string> header;
  for (const auto& p : study.parameters) header.push_back(p.name);
  for (const char* c : {"kernel", "variant", "dtype", "cores", "shard", "shape", "params", "status"})
    header.emplace_back(c);
  for (const auto& [name, key] : kFigures) header.emplace_back(name);
  for (const auto& [name, path] : kChipFigures) header.emplace_back(name);
  for (const auto& e : engine_set) header.push_back(e + "_busy_percent");
  for (const auto& e : engine_set) header.push_back(e + "_busy_ns");
  std::string out;
  for (std::size_t i = 0; i < header.size(); ++i) out += (i ? "," : "") + csv_field(header[i]);
  out += '\n';
  for (const auto& p : points) {
    const JobResult* r = result_of(results, p.job.id);
    const nlohmann::json report = r ? r->report : nlohmann::json::object();
    std::vector<std::string> row;
    for (const auto& [name, value] : p.parameters) row.push_back(value);
    row.push_back(p.job.kernel);
    row.push_back(report.value("variant", p.job.variant));
    row.push_back(p.job.dtype);  // as the study asks; "": the kernel's default
    row.push_back(std::to_string(std::max(1, p.job.cores)));
    row.push_back(report.value("shard", p.job.shard));
    row.push_back(shape_text(report.contains("shape") ? report["shape"].get<std::map<std::string, std::int64_t>>()
                                                      : p.job.shape,
                             " ", "="));
    // The parameters the run resolved (a retuned point's are its search's best).
    std::string params;
    if (report.contains("params") && report["params"].is_object())
      for (auto it = report["params"].begin(); it != report["params"].end(); ++it)
        params += fmt::format("{}{}={}", params.empty() ? "" : " ", it.key(),
                              it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
    row.push_back(params);
    row.push_back(r ? to_string(r->status) : "not run");
    const bool ok = r && r->status == runner::Status::Pass;
    for (const auto& [name, key] : kFigures)
      row.push_back(ok && report.contains(key) ? fmt::format("{:.6g}", report[key].get<double>()) : "");
    for (const auto& [name, path] : kChipFigures) {
      const nlohmann::json::json_pointer at(path);
      row.push_back(ok && report.contains(at) ? fmt::format("{:.6g}", report[at].get<double>()) : "");
    }
    for (const char* field : {"busy_percent", "busy_ns"})
      for (const auto& e : engine_set) {
        const bool has = ok && report.contains("engines") && report["engines"].contains(e);
        row.push_back(has ? fmt::format("{:.6g}", report["engines"][e][field].get<double>()) : "");
      }
    for (std::size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + csv_field(row[i]);
    out += '\n';
  }
  return out;
}

nlohmann::json results_json(const Study& study, const std::vector<Point>& points, const std::vector<JobResult>& results) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : study.parameters)
    params.push_back({{"name", p.name}, {"keys", p.keys}, {"values", p.values}, {"configs", p.configs}});
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : points) {
    const JobResult* r = result_of(results, p.job.id);
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [name, value] : p.parameters) values[name] = value;
    nlohmann::json report = r ? r->report : nlohmann::json::object();
    report.erase("stats");
    rows.push_back({{"id", p.job.id},
                    {"parameters", values},
                    {"overrides", p.job.overrides},
                    {"kernel", p.job.kernel},
                    {"variant", report.value("variant", p.job.variant)},
                    {"dtype", p.job.dtype},
                    {"shape", report.contains("shape") ? report["shape"] : nlohmann::json(p.job.shape)},
                    {"status", r ? to_string(r->status) : "not run"},
                    {"message", r ? r->message : ""},
                    {"wall_seconds", r ? r->wall_seconds : 0.0},
                    {"report", report}});
  }
  return {{"study", study.name},  {"description", study.description}, {"base", study.base},
          {"fidelity", study.fidelity}, {"no_data", study.no_data},   {"parameters", params},
          {"points", rows}};
}

}  // namespace tessera::cli::sweep
