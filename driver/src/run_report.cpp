#include "tessera/run_report.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera {

namespace {

// A kernel of tiny tiles has a critical path of millions of steps, which
// would make report.json gigabytes (and every runner that reads it back hold
// them); past this many, a report keeps the longest, in time order.
constexpr std::size_t kMaxReportedPathEntries = 10000;

// The indices of the `most` longest of `n` entries (all when n <= most), ascending.
template <typename Length>
std::vector<std::size_t> longest(std::size_t n, std::size_t most, Length length) {
  std::vector<std::size_t> keep(n);
  for (std::size_t i = 0; i < n; ++i) keep[i] = i;
  if (n <= most) return keep;
  std::nth_element(keep.begin(), keep.begin() + static_cast<std::ptrdiff_t>(most), keep.end(),
                   [&](std::size_t a, std::size_t b) { return length(a) > length(b) || (length(a) == length(b) && a < b); });
  keep.resize(most);
  std::sort(keep.begin(), keep.end());
  return keep;
}

}  // namespace

std::string RunReport::bound_by() const {
  std::string best;
  double busiest = 0;
  for (const auto& [name, e] : engines)
    if (e.busy_ns > busiest) {
      busiest = e.busy_ns;
      best = name;
    }
  return best;
}

void RunReport::set_baseline(double one_core_time_ns) {
  baseline_time_ns = one_core_time_ns;
  const double n = per_core.empty() ? 1.0 : static_cast<double>(per_core.size());
  speedup = time_ns > 0 ? one_core_time_ns / time_ns : 0;
  scaling_efficiency_percent = 100.0 * speedup / n;
}

nlohmann::json RunReport::to_json() const {
  nlohmann::json engines_json = nlohmann::json::object();
  for (const auto& [name, e] : engines)
    engines_json[name] = {{"instructions", e.instructions},
                          {"busy_ns", e.busy_ns},
                          {"semaphore_wait_ns", e.semaphore_wait_ns},
                          {"fetch_wait_ns", e.fetch_wait_ns},
                          {"memory_stall_ns", e.memory_stall_ns},
                          {"busy_percent", time_ns > 0 ? 100.0 * e.busy_ns / time_ns : 0.0}};
  nlohmann::json stalls_json = nlohmann::json::array();
  for (const auto& st : top_stalls)
    stalls_json.push_back({{"engine", st.engine}, {"reason", st.reason}, {"ns", st.ns},
                           {"percent", time_ns > 0 ? 100.0 * st.ns / time_ns : 0.0}});
  const auto costs_json = [](const std::vector<SiteCost>& rows, bool labels) {
    nlohmann::json out = nlohmann::json::array();
    for (const SiteCost& c : rows) {
      nlohmann::json row = {{"engine", c.engine}, {"site", c.site}, {"count", c.count}, {"busy_ns", c.busy_ns},
                            {"waiting_ns", c.waiting_ns}, {"fetch_wait_ns", c.fetch_wait_ns},
                            {"total_ns", c.total_ns()}, {"waiting_for", c.waiting_for}};
      if (c.dma_bytes > 0) row["dma_bytes"] = c.dma_bytes;
      if (labels) row["label"] = c.label;
      out.push_back(std::move(row));
    }
    return out;
  };
  nlohmann::json path = nlohmann::json::object();
  if (!critical_path.empty()) {
    nlohmann::json steps = nlohmann::json::array(), waits = nlohmann::json::array();
    const auto& all_steps = critical_path.steps;
    const auto& all_waits = critical_path.waits;
    const std::vector<std::size_t> kept_steps =
        longest(all_steps.size(), kMaxReportedPathEntries, [&](std::size_t i) { return all_steps[i].ns(); });
    const std::vector<std::size_t> kept_waits = longest(all_waits.size(), kMaxReportedPathEntries, [&](std::size_t i) {
      return all_waits[i].end_ns - all_waits[i].start_ns;
    });
    // Up to 10,000 rows each: filled member by member, where a braced list
    // of pairs cost about 10,000 instructions a row (its temporaries are
    // copied), a tenth of a small run. A new empty object at the end of `rows`:
    const auto new_row = [](nlohmann::json& rows) -> nlohmann::json::object_t& {
      rows.push_back(nlohmann::json::object());
      return rows.back().get_ref<nlohmann::json::object_t&>();
    };
    steps.get_ref<nlohmann::json::array_t&>().reserve(kept_steps.size());
    for (const std::size_t i : kept_steps) {
      const PathStep& st = all_steps[i];
      nlohmann::json::object_t& r = new_row(steps);
      r.emplace("resource", st.resource);
      r.emplace("kind", st.kind);
      r.emplace("name", st.name);
      r.emplace("label", st.label);
      r.emplace("site", st.site);
      r.emplace("index", st.index);
      r.emplace("start_ns", st.start_ns);
      r.emplace("end_ns", st.end_ns);
      r.emplace("from_ns", st.from_ns);
      r.emplace("to_ns", st.to_ns);
      if (st.gap_ns > 0) r.emplace("gap", nlohmann::json::object_t{{"ns", st.gap_ns}, {"reason", st.gap}});
    }
    waits.get_ref<nlohmann::json::array_t&>().reserve(kept_waits.size());
    for (const std::size_t i : kept_waits) {
      const PathWait& w = all_waits[i];
      nlohmann::json::object_t& r = new_row(waits);
      r.emplace("engine", w.engine);
      r.emplace("label", w.label);
      r.emplace("site", w.site);
      r.emplace("index", w.index);
      r.emplace("start_ns", w.start_ns);
      r.emplace("end_ns", w.end_ns);
      r.emplace("waited_ns", w.end_ns - w.start_ns);
      r.emplace("released_by", w.released_by);
      r.emplace("released_by_label", w.released_by_label);
    }
    const auto shares = [&](const std::vector<PathShare>& rows, bool labels) {
      nlohmann::json out = nlohmann::json::array();
      for (const PathShare& r : rows) {
        nlohmann::json row = {{"engine", r.engine}, {"ns", r.ns}, {"waiting_ns", r.waiting_ns},
                              {"percent", time_ns > 0 ? 100.0 * r.ns / time_ns : 0.0}};
        if (labels) row["label"] = r.label;
        out.push_back(std::move(row));
      }
      return out;
    };
    path = {{"end_ns", critical_path.end_ns}, {"steps", std::move(steps)}, {"waits", std::move(waits)},
            {"steps_total", all_steps.size()}, {"waits_total", all_waits.size()},
            {"by_engine", shares(critical_path.by_engine, false)}, {"by_label", shares(critical_path.by_label, true)}};
  }
  nlohmann::json out = {
      {"kernel", kernel},
      {"variant", variant},
      {"config", config},
      {"fidelity", fidelity},
      {"shape", shape},
      {"params", params},
      {"ok", ok},
      {"error", error},
      {"time_ns", time_ns},
      {"cycles", cycles},
      {"tensor_utilisation", tensor_utilisation},
      {"hfu_percent", hfu_percent},
      {"matmul_flops", matmul_flops},
      {"dma_bytes", dma_bytes},
      {"dma_transfers", dma_transfers},
      {"dma_average_bytes", dma_average_bytes},
      {"engines", engines_json},
      {"bound_by", bound_by()},
      {"model_flops", model_flops},
      {"mfu_percent", mfu_percent},
      {"peak_tflops", peak_tflops},
      {"achieved_tflops", achieved_tflops},
      {"hbm_bytes", hbm_bytes},
      {"arithmetic_intensity", arithmetic_intensity},
      {"hbm_bandwidth_gbps", hbm_bandwidth_gbps},
      {"hbm_peak_gbps", hbm_peak_gbps},
      {"hbm_utilisation_percent", hbm_utilisation_percent},
      {"tensor_active_ns", tensor_active_ns},
      {"tensor_multiplying_ns", tensor_multiplying_ns},
      {"tensor_waiting_ns", tensor_waiting_ns},
      {"dma_busy_ns", dma_busy_ns},
      {"top_stalls", stalls_json},
      {"by_site", costs_json(by_site, false)},
      {"by_label", costs_json(by_label, true)},
      {"critical_path", std::move(path)},
      {"checked", checked},
      {"correct", correct},
      {"max_abs_error", max_abs_error},
      {"tolerance", tolerance},
      {"wall_seconds", wall_seconds},
      {"build_seconds", build_seconds},
      {"simulate_seconds", simulate_seconds},
      {"analysis_seconds", analysis_seconds},
      {"check_seconds", check_seconds},
      {"check_threads", check_threads},
  };
  if (!per_core.empty()) {
    nlohmann::json cores = nlohmann::json::array();
    for (const CoreReport& c : per_core)
      cores.push_back({{"time_ns", c.time_ns},
                       {"matmul_flops", c.matmul_flops},
                       {"hfu_percent", c.hfu_percent},
                       {"tensor_active_ns", c.tensor_active_ns},
                       {"tensor_waiting_ns", c.tensor_waiting_ns},
                       {"dma_bytes", c.dma_bytes},
                       {"hbm_bytes", c.hbm_bytes},
                       {"hbm_bandwidth_gbps", c.hbm_bandwidth_gbps},
                       {"bound_by", c.bound_by},
                       {"collective_ns", c.collective_ns},
                       {"link_bytes_sent", c.link_bytes_sent},
                       {"link_bytes_received", c.link_bytes_received},
                       {"link_send_busy_ns", c.link_send_busy_ns},
                       {"link_receive_busy_ns", c.link_receive_busy_ns}});
    out["cores"] = per_core.size();
    out["shard"] = shard;
    out["lnc"] = lnc;
    out["per_core"] = std::move(cores);
    out["critical_core"] = critical_core;
    out["scaling"] = {{"baseline_time_ns", baseline_time_ns},
                      {"speedup", speedup},
                      {"efficiency_percent", scaling_efficiency_percent}};
    nlohmann::json phases = nlohmann::json::array();
    for (const CollectivePhase& p : collectives) phases.push_back({{"label", p.label}, {"ns", p.ns}});
    out["collectives"] = {{"time_ns", collective_ns},
                          {"percent", time_ns > 0 ? 100.0 * collective_ns / time_ns : 0.0},
                          {"phases", std::move(phases)}};
  }
  return out;
}

std::string RunReport::summary() const {
  std::string shape_text;
  for (const auto& [k, v] : shape) shape_text += fmt::format("{}{}={}", shape_text.empty() ? "" : ",", k, v);
  std::string params_text;
  for (const auto& [k, v] : params.items())
    params_text += fmt::format("{}{}={}", params_text.empty() ? "" : ",", k, v.is_string() ? v.get<std::string>() : v.dump());
  std::string s = fmt::format("{} {} on {} ({}) shape {}{}\n", kernel, variant, config, fidelity, shape_text,
                              params_text.empty() ? "" : " params " + params_text);
  if (!ok) return s + fmt::format("  FAILED: {}\n", error);
  s += fmt::format("  time {:.3f} us = {:.0f} tensor-engine cycles; HFU {:.2f}%; tensor utilisation {:.2f}%\n",
                   time_ns / 1000.0, cycles, hfu_percent, 100.0 * tensor_utilisation);
  const auto pct = [&](double v) { return time_ns > 0 ? 100.0 * v / time_ns : 0.0; };
  s += fmt::format("  MFU {:.2f}%; {:.2f} of {:.2f} TFLOP/s; arithmetic intensity {:.1f} FLOP/B\n", mfu_percent,
                   achieved_tflops, peak_tflops, arithmetic_intensity);
  s += fmt::format("  tensor engine active {:.1f}% (multiplying {:.1f}%), waiting {:.1f}%, idle {:.1f}%\n",
                   pct(tensor_active_ns), pct(tensor_multiplying_ns), pct(tensor_waiting_ns),
                   std::max(0.0, 100.0 - pct(tensor_active_ns) - pct(tensor_waiting_ns)));
  s += fmt::format("  DMA {:.3f} MB in {:.0f} transfers (average {:.0f} B); HBM {:.1f} of {:.0f} GB/s ({:.1f}%)\n",
                   dma_bytes / 1e6, dma_transfers, dma_average_bytes, hbm_bandwidth_gbps, hbm_peak_gbps,
                   hbm_utilisation_percent);
  if (!per_core.empty()) {
    s += fmt::format("  {} cores sharing HBM{}{}: chip HBM {:.1f} of {:.0f} GB/s ({:.1f}%)", per_core.size(),
                     lnc > 1 ? fmt::format(" (one logical core, LNC={})", lnc) : "",
                     shard.empty() ? "" : ", sharded over " + shard, hbm_bandwidth_gbps, hbm_peak_gbps,
                     hbm_utilisation_percent);
    if (baseline_time_ns > 0)
      s += fmt::format("; speed-up {:.2f}x over one core ({:.3f} us), scaling efficiency {:.1f}%", speedup,
                       baseline_time_ns / 1000.0, scaling_efficiency_percent);
    s += "\n";
    if (!collectives.empty()) {
      s += fmt::format("  collectives {:.3f} us ({:.1f}% of the run) on core {}:", collective_ns / 1000.0, pct(collective_ns),
                       critical_core);
      for (std::size_t i = 0; i < collectives.size(); ++i)
        s += fmt::format("{} {} {:.3f} us", i ? ";" : "", collectives[i].label, collectives[i].ns / 1000.0);
      s += "\n";
    }
    s += fmt::format("  {:<5} {:>10} {:>7} {:>9} {:>10} {:>10} {:>9} {:>8} {:>8}  {}\n", "core", "time us", "HFU %",
                     "active %", "DMA MB", "HBM MB", "HBM GB/s", "coll. %", "link %", "bound by");
    for (std::size_t i = 0; i < per_core.size(); ++i) {
      const CoreReport& c = per_core[i];
      const auto share = [&](double ns) { return c.time_ns > 0 ? 100.0 * ns / c.time_ns : 0.0; };
      s += fmt::format("  {:<5} {:>10.3f} {:>6.2f}% {:>8.1f}% {:>10.3f} {:>10.3f} {:>9.1f} {:>7.1f}% {:>7.1f}%  {}{}\n", i,
                       c.time_ns / 1000.0, c.hfu_percent, share(c.tensor_active_ns), c.dma_bytes / 1e6,
                       c.hbm_bytes / 1e6, c.hbm_bandwidth_gbps, share(c.collective_ns),
                       share(std::max(c.link_send_busy_ns, c.link_receive_busy_ns)), c.bound_by,
                       static_cast<int>(i) == critical_core ? " (ends last: the engines below)" : "");
    }
  }
  s += fmt::format("  {:<8} {:>8} {:>9} {:>11} {:>11} {:>11}\n", "engine", "instrs", "busy %", "sem wait %", "fetch %",
                   "mem stall %");
  for (const auto& [name, e] : engines)
    s += fmt::format("  {:<8} {:>8.0f} {:>8.1f}% {:>10.1f}% {:>10.1f}% {:>10.1f}%\n", name, e.instructions,
                     pct(e.busy_ns), pct(e.semaphore_wait_ns), pct(e.fetch_wait_ns), pct(e.memory_stall_ns));
  if (const std::string b = bound_by(); !b.empty() && time_ns > 0)
    s += fmt::format("  bound by: {} (busy {:.1f}% of the run)\n", b, pct(engines.at(b).busy_ns));
  for (std::size_t i = 0; i < top_stalls.size(); ++i)
    s += fmt::format("  stall {}: {} {} {:.1f}%\n", i + 1, top_stalls[i].engine, top_stalls[i].reason,
                     pct(top_stalls[i].ns));
  if (!by_site.empty()) {
    // The few call sites where most of the time goes; report.json has them all.
    constexpr std::size_t kRows = 6;
    std::size_t width = 9;
    for (std::size_t i = 0; i < std::min(kRows, by_site.size()); ++i)
      width = std::max(width, by_site[i].site.size());
    s += fmt::format("  {:<{}} {:<7} {:>6} {:>10} {:>10}  {}\n", "call site", width, "engine", "count", "busy us",
                     "waiting us", "waiting for");
    for (std::size_t i = 0; i < std::min(kRows, by_site.size()); ++i) {
      const SiteCost& c = by_site[i];
      std::vector<std::pair<double, std::string>> whom;
      for (const auto& [who, ns] : c.waiting_for) whom.emplace_back(ns, who);
      std::sort(whom.rbegin(), whom.rend());
      std::string waits;
      for (const auto& [ns, who] : whom) waits += fmt::format("{}{} {:.1f}", waits.empty() ? "" : ", ", who, ns / 1000);
      s += fmt::format("  {:<{}} {:<7} {:>6.0f} {:>10.2f} {:>10.2f}  {}\n", c.site.empty() ? "(none)" : c.site, width,
                       c.engine, c.count, c.busy_ns / 1000, (c.waiting_ns + c.fetch_wait_ns) / 1000, waits);
    }
    if (by_site.size() > kRows) s += fmt::format("  ... {} more call sites in report.json (by_site, by_label)\n", by_site.size() - kRows);
  }
  if (!critical_path.empty()) {
    // What set the end time: the path's share by engine, its heaviest
    // labels, and its longest wait; report.json has every step.
    std::string engines_text, labels_text;
    for (const PathShare& r : critical_path.by_engine)
      engines_text += fmt::format("{}{} {:.1f}%", engines_text.empty() ? "" : ", ", r.engine, pct(r.ns));
    constexpr std::size_t kLabels = 4;
    for (std::size_t i = 0; i < std::min(kLabels, critical_path.by_label.size()); ++i) {
      const PathShare& r = critical_path.by_label[i];
      labels_text += fmt::format("{}{} '{}' {:.1f}%", labels_text.empty() ? "" : ", ", r.engine, r.label, pct(r.ns));
    }
    s += fmt::format("  critical path: {} steps, {} waits; on it: {}\n", critical_path.steps.size(),
                     critical_path.waits.size(), engines_text);
    s += fmt::format("  critical path by label: {}\n", labels_text);
    const auto longest = std::max_element(critical_path.waits.begin(), critical_path.waits.end(),
                                          [](const PathWait& a, const PathWait& b) {
                                            return a.end_ns - a.start_ns < b.end_ns - b.start_ns;
                                          });
    if (longest != critical_path.waits.end())
      s += fmt::format("  longest wait on it: {} {:.3f} us at {} '{}', released by {} '{}'\n", longest->engine,
                       (longest->end_ns - longest->start_ns) / 1000, longest->site.empty() ? "(none)" : longest->site,
                       longest->label, longest->released_by, longest->released_by_label);
  }
  if (checked)
    s += fmt::format("  numerics: {} (max abs error {:.3g}, tolerance {:.3g}; checked in {:.2f} s on {} thread{})\n",
                     correct ? "match" : "MISMATCH", max_abs_error, tolerance, check_seconds, check_threads,
                     check_threads == 1 ? "" : "s");
  s += fmt::format("  host time: program built in {:.2f} s, simulated in {:.2f} s wall (SystemC {:.2f} s, report {:.2f} s)\n",
                   build_seconds, wall_seconds, simulate_seconds, analysis_seconds);
  return s;
}

}  // namespace tessera
