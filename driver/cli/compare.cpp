#include "compare.h"

#include "common/kernel.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace tessera::cli::compare {
namespace {

using runner::JobResult;
using runner::Status;

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string stall_text(const Row::Stall& s) { return fmt::format("{} {} {:.1f}%", s.engine, s.reason, s.percent); }

}  // namespace

sweep::Study study_of(const Request& r) {
  const kernels::KernelSpec& spec = kernels::kernel_named(r.kernel);
  if (!r.variant.empty()) spec.variant(r.variant);  // throws, naming the variants there are
  const kernels::Shape shape = kernels::resolve_shape(spec, kernels::parse_shape(r.shape));
  if (r.configs.empty()) throw sweep::StudyError("--configs: give at least one config");
  if (!r.fidelity.empty() && !arch::parse_fidelity(r.fidelity))
    throw sweep::StudyError(fmt::format("--fidelity {}: expected rtl, sampled or tlm", r.fidelity));

  sweep::Study s;
  s.name = r.kernel;
  s.description = fmt::format("{} on {}", r.kernel, fmt::join(r.configs, ", "));
  s.fidelity = r.fidelity;
  s.no_data = r.no_data;
  s.seed = r.seed;
  s.timeout_s = r.timeout_s;
  for (const auto& set : r.sets) {
    try {
      arch::parse_override(set);
    } catch (const arch::ConfigError& e) {
      throw sweep::StudyError(fmt::format("--set {}: {}", set,
                                          e.diagnostics().empty() ? e.what() : e.diagnostics().front().message));
    }
    s.sets.push_back(set);
  }
  sweep::Parameter p;
  p.name = "config";
  p.configs = true;
  std::set<std::string> seen;
  for (const auto& c : r.configs) {
    const sweep::ConfigChoice choice = sweep::parse_config_choice(c);  // throws on a malformed override
    std::vector<arch::Override> overrides;
    for (const auto& set : s.sets) overrides.push_back(arch::parse_override(set));
    for (const auto& set : choice.overrides) overrides.push_back(arch::parse_override(set));
    try {
      arch::load_config(choice.config, overrides);
    } catch (const arch::ConfigError& e) {
      std::vector<std::string> problems;
      for (const auto& d : e.diagnostics()) problems.push_back(d.message);
      throw sweep::StudyError(fmt::format("--configs {}: {}", c, fmt::join(problems, "; ")));
    }
    if (!seen.insert(c).second) throw sweep::StudyError(fmt::format("--configs: '{}' appears twice", c));
    p.values.push_back(c);
    p.value_lines.push_back(0);
  }
  s.parameters.push_back(p);
  sweep::KernelRuns k;
  k.kernel = r.kernel;
  if (!r.variant.empty()) k.variants = {r.variant};
  // The resolved shape, so every column runs the same problem and says so.
  k.shapes = {shape};
  s.kernels.push_back(k);
  return s;
}

std::vector<Row> rows(const std::vector<sweep::Point>& points, const std::vector<JobResult>& results) {
  std::vector<Row> out;
  double first_time = 0;
  for (const auto& p : points) {
    Row row;
    row.config = p.parameters.front().second;
    const auto r = std::find_if(results.begin(), results.end(), [&](const JobResult& x) { return x.job.id == p.job.id; });
    if (r == results.end()) {
      row.status = "not run";
      out.push_back(row);
      continue;
    }
    row.status = to_string(r->status);
    const nlohmann::json& rep = r->report;
    // A run that failed says why in its report; the runner's message is its exit status.
    row.message = rep.value("error", std::string()).empty() ? r->message : rep.value("error", std::string());
    row.resolved = rep.value("config", std::string());
    row.variant = rep.value("variant", p.job.variant);
    if (r->status == Status::Pass) {
      row.time_ns = rep.value("time_ns", 0.0);
      row.hfu_percent = rep.value("hfu_percent", 0.0);
      row.peak_tflops = rep.value("peak_tflops", 0.0);
      row.achieved_tflops = rep.value("achieved_tflops", 0.0);
      row.bound_by = rep.value("bound_by", std::string());
      if (!row.bound_by.empty() && rep.contains("engines") && rep["engines"].contains(row.bound_by))
        row.bound_busy_percent = rep["engines"][row.bound_by].value("busy_percent", 0.0);
      for (const auto& st : rep.value("top_stalls", nlohmann::json::array()))
        row.stalls.push_back({st.value("engine", ""), st.value("reason", ""), st.value("percent", 0.0)});
      if (first_time == 0 && row.time_ns > 0) first_time = row.time_ns;
      if (row.time_ns > 0) row.speedup = first_time / row.time_ns;
    }
    out.push_back(row);
  }
  return out;
}

std::string table(const sweep::Study& study, const std::vector<Row>& rows) {
  std::string baseline, variant;
  for (const auto& r : rows) {
    if (baseline.empty() && r.speedup > 0) baseline = r.config;
    if (variant.empty()) variant = r.variant;
  }
  struct Line {
    std::vector<std::string> cells;
  };
  const std::vector<std::string> header = {"config",       "time (us)", "speed-up", "HFU",
                                           "TFLOP/s (peak)", "bound by",  "top stalls"};
  std::vector<std::vector<std::string>> lines;
  for (const auto& r : rows) {
    if (r.status != "pass") {
      lines.push_back({r.config, r.status, "", "", "", "", r.message.substr(0, r.message.find('\n'))});
      continue;
    }
    std::vector<std::string> stalls;
    for (std::size_t i = 0; i < std::min<std::size_t>(2, r.stalls.size()); ++i) stalls.push_back(stall_text(r.stalls[i]));
    lines.push_back({r.config, fmt::format("{:.2f}", r.time_ns / 1000.0), fmt::format("{:.2f}x", r.speedup),
                     fmt::format("{:.1f}%", r.hfu_percent),
                     fmt::format("{:.1f} ({:.1f})", r.achieved_tflops, r.peak_tflops),
                     r.bound_by.empty() ? "-" : fmt::format("{} {:.0f}%", r.bound_by, r.bound_busy_percent),
                     fmt::format("{}", fmt::join(stalls, "; "))});
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& l : lines) width[c] = std::max(width[c], l[c].size());
  }
  const auto format_line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      // Figures right-aligned, names left-aligned; the last column unpadded.
      const bool figure = c >= 1 && c <= 4;
      if (c + 1 == cells.size()) s += cells[c];
      else s += figure ? fmt::format("{:>{}}  ", cells[c], width[c]) : fmt::format("{:<{}}  ", cells[c], width[c]);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  const sweep::KernelRuns& k = study.kernels.front();
  std::string shape;
  for (const auto& [name, v] : k.shapes.front()) shape += fmt::format("{}{}={}", shape.empty() ? "" : ",", name, v);
  std::string out = fmt::format("{}{} {} ({}{}): {} configs{}\n", k.kernel, variant.empty() ? "" : " " + variant,
                                shape, study.fidelity.empty() ? "each config's fidelity" : study.fidelity,
                                study.no_data ? ", timing only" : "", rows.size(),
                                baseline.empty() ? "" : fmt::format("; speed-up over {}", baseline));
  out += format_line(header);
  for (const auto& l : lines) out += format_line(l);
  return out;
}

std::string csv(const std::vector<Row>& rows) {
  std::string out =
      "config,resolved_config,status,time_ns,speedup,hfu_percent,achieved_tflops,peak_tflops,bound_by,"
      "bound_busy_percent,stall_1,stall_1_percent,stall_2,stall_2_percent,stall_3,stall_3_percent,message\n";
  for (const auto& r : rows) {
    const bool ok = r.status == "pass";
    std::vector<std::string> cells = {r.config, r.resolved, r.status};
    for (double v : {r.time_ns, r.speedup, r.hfu_percent, r.achieved_tflops, r.peak_tflops})
      cells.push_back(ok ? fmt::format("{:.6g}", v) : "");
    cells.push_back(r.bound_by);
    cells.push_back(ok ? fmt::format("{:.6g}", r.bound_busy_percent) : "");
    for (std::size_t i = 0; i < 3; ++i) {
      cells.push_back(i < r.stalls.size() ? r.stalls[i].engine + " " + r.stalls[i].reason : "");
      cells.push_back(i < r.stalls.size() ? fmt::format("{:.6g}", r.stalls[i].percent) : "");
    }
    cells.push_back(r.message.substr(0, r.message.find('\n')));
    for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csv_field(cells[i]);
    out += '\n';
  }
  return out;
}

nlohmann::json json(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json stalls = nlohmann::json::array();
    for (const auto& s : r.stalls) stalls.push_back({{"engine", s.engine}, {"reason", s.reason}, {"percent", s.percent}});
    out.push_back({{"config", r.config},
                   {"resolved_config", r.resolved},
                   {"variant", r.variant},
                   {"status", r.status},
                   {"message", r.message},
                   {"time_ns", r.time_ns},
                   {"speedup", r.speedup},
                   {"hfu_percent", r.hfu_percent},
                   {"achieved_tflops", r.achieved_tflops},
                   {"peak_tflops", r.peak_tflops},
                   {"bound_by", r.bound_by},
                   {"bound_busy_percent", r.bound_busy_percent},
                   {"top_stalls", stalls}});
  }
  return out;
}

}  // namespace tessera::cli::compare
