#include "tessera/run_report.h"

#include "json_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>

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

namespace {

// report.json's parts. Each object's keys go in ascending order, as a
// document holds them (JsonText checks).

double percent_of_time(const RunReport& r, double ns) { return r.time_ns > 0 ? 100.0 * ns / r.time_ns : 0.0; }

void write_engines(JsonText& w, const RunReport& r) {
  w.begin_object();
  for (const auto& [name, e] : r.engines) {
    w.key(name);
    w.begin_object();
    w.member("busy_ns", e.busy_ns);
    w.member("busy_percent", percent_of_time(r, e.busy_ns));
    w.member("fetch_wait_ns", e.fetch_wait_ns);
    w.member("instructions", e.instructions);
    w.member("memory_stall_ns", e.memory_stall_ns);
    w.member("semaphore_wait_ns", e.semaphore_wait_ns);
    w.end();
  }
  w.end();
}

void write_stalls(JsonText& w, const RunReport& r) {
  w.begin_array();
  for (const Stall& st : r.top_stalls) {
    w.begin_object();
    w.member("engine", st.engine);
    w.member("ns", st.ns);
    w.member("percent", percent_of_time(r, st.ns));
    w.member("reason", st.reason);
    w.end();
  }
  w.end();
}

void write_costs(JsonText& w, const std::vector<SiteCost>& rows, bool labels) {
  w.begin_array();
  for (const SiteCost& c : rows) {
    w.begin_object();
    w.member("busy_ns", c.busy_ns);
    w.member("count", c.count);
    if (c.dma_bytes > 0) w.member("dma_bytes", c.dma_bytes);
    w.member("engine", c.engine);
    w.member("fetch_wait_ns", c.fetch_wait_ns);
    if (labels) w.member("label", c.label);
    w.member("site", c.site);
    w.member("total_ns", c.total_ns());
    w.key("waiting_for");
    w.begin_object();
    for (const auto& [whom, ns] : c.waiting_for) w.member(whom, ns);
    w.end();
    w.member("waiting_ns", c.waiting_ns);
    w.end();
  }
  w.end();
}

void write_shares(JsonText& w, const RunReport& r, const std::vector<PathShare>& rows, bool labels) {
  w.begin_array();
  for (const PathShare& share : rows) {
    w.begin_object();
    w.member("engine", share.engine);
    if (labels) w.member("label", share.label);
    w.member("ns", share.ns);
    w.member("percent", percent_of_time(r, share.ns));
    w.member("waiting_ns", share.waiting_ns);
    w.end();
  }
  w.end();
}

void write_critical_path(JsonText& w, const RunReport& r) {
  const CriticalPath& path = r.critical_path;
  w.begin_object();
  if (path.empty()) {
    w.end();
    return;
  }
  const std::vector<std::size_t> kept_steps =
      longest(path.steps.size(), kMaxReportedPathEntries, [&](std::size_t i) { return path.steps[i].ns(); });
  const std::vector<std::size_t> kept_waits = longest(path.waits.size(), kMaxReportedPathEntries, [&](std::size_t i) {
    return path.waits[i].end_ns - path.waits[i].start_ns;
  });
  w.key("by_engine");
  write_shares(w, r, path.by_engine, false);
  w.key("by_label");
  write_shares(w, r, path.by_label, true);
  w.member("end_ns", path.end_ns);
  w.key("steps");
  w.begin_array();
  for (const std::size_t i : kept_steps) {
    const PathStep& st = path.steps[i];
    w.begin_object();
    w.member("end_ns", st.end_ns);
    w.member("from_ns", st.from_ns);
    if (st.gap_ns > 0) {
      w.key("gap");
      w.begin_object();
      w.member("ns", st.gap_ns);
      w.member("reason", st.gap);
      w.end();
    }
    w.member("index", st.index);
    w.member("kind", st.kind);
    w.member("label", st.label);
    w.member("name", st.name);
    w.member("resource", st.resource);
    w.member("site", st.site);
    w.member("start_ns", st.start_ns);
    w.member("to_ns", st.to_ns);
    w.end();
  }
  w.end();
  w.member("steps_total", path.steps.size());
  w.key("waits");
  w.begin_array();
  for (const std::size_t i : kept_waits) {
    const PathWait& pw = path.waits[i];
    w.begin_object();
    w.member("end_ns", pw.end_ns);
    w.member("engine", pw.engine);
    w.member("index", pw.index);
    w.member("label", pw.label);
    w.member("released_by", pw.released_by);
    w.member("released_by_label", pw.released_by_label);
    w.member("site", pw.site);
    w.member("start_ns", pw.start_ns);
    w.member("waited_ns", pw.end_ns - pw.start_ns);
    w.end();
  }
  w.end();
  w.member("waits_total", path.waits.size());
  w.end();
}

void write_per_core(JsonText& w, const RunReport& r) {
  w.begin_array();
  for (const CoreReport& c : r.per_core) {
    w.begin_object();
    w.member("bound_by", c.bound_by);
    w.member("collective_ns", c.collective_ns);
    w.member("dma_bytes", c.dma_bytes);
    w.member("hbm_bandwidth_gbps", c.hbm_bandwidth_gbps);
    w.member("hbm_bytes", c.hbm_bytes);
    w.member("hfu_percent", c.hfu_percent);
    w.member("link_bytes_received", c.link_bytes_received);
    w.member("link_bytes_sent", c.link_bytes_sent);
    w.member("link_receive_busy_ns", c.link_receive_busy_ns);
    w.member("link_send_busy_ns", c.link_send_busy_ns);
    w.member("matmul_flops", c.matmul_flops);
    w.member("tensor_active_ns", c.tensor_active_ns);
    w.member("tensor_waiting_ns", c.tensor_waiting_ns);
    w.member("time_ns", c.time_ns);
    w.end();
  }
  w.end();
}

void write_collectives(JsonText& w, const RunReport& r) {
  w.begin_object();
  w.member("percent", percent_of_time(r, r.collective_ns));
  w.key("phases");
  w.begin_array();
  for (const CollectivePhase& p : r.collectives) {
    w.begin_object();
    w.member("label", p.label);
    w.member("ns", p.ns);
    w.end();
  }
  w.end();
  w.member("time_ns", r.collective_ns);
  w.end();
}

// The report's top-level members: each key, and what writes its value into
// `w`. In no order: json_text sorts them, with the caller's extra ones.
using Members = std::vector<std::pair<std::string_view, std::function<void()>>>;

Members members(const RunReport& r, JsonText& w) {
  Members top;
  const auto add = [&](std::string_view key, std::function<void()> write) { top.emplace_back(key, std::move(write)); };
  const auto scalar = [&](std::string_view key, auto v) { add(key, [&w, v] { w.value(v); }); };
  scalar("kernel", std::string_view(r.kernel));
  scalar("variant", std::string_view(r.variant));
  scalar("config", std::string_view(r.config));
  scalar("fidelity", std::string_view(r.fidelity));
  add("shape", [&w, &r] {
    w.begin_object();
    for (const auto& [k, v] : r.shape) w.member(k, v);
    w.end();
  });
  add("params", [&w, &r] { w.value(r.params); });
  scalar("ok", r.ok);
  scalar("error", std::string_view(r.error));
  scalar("time_ns", r.time_ns);
  scalar("cycles", r.cycles);
  scalar("tensor_utilisation", r.tensor_utilisation);
  scalar("hfu_percent", r.hfu_percent);
  scalar("matmul_flops", r.matmul_flops);
  scalar("dma_bytes", r.dma_bytes);
  scalar("dma_transfers", r.dma_transfers);
  scalar("dma_average_bytes", r.dma_average_bytes);
  add("engines", [&w, &r] { write_engines(w, r); });
  add("bound_by", [&w, &r] { w.value(r.bound_by()); });
  scalar("model_flops", r.model_flops);
  scalar("mfu_percent", r.mfu_percent);
  scalar("peak_tflops", r.peak_tflops);
  scalar("achieved_tflops", r.achieved_tflops);
  scalar("hbm_bytes", r.hbm_bytes);
  scalar("arithmetic_intensity", r.arithmetic_intensity);
  scalar("hbm_bandwidth_gbps", r.hbm_bandwidth_gbps);
  scalar("hbm_peak_gbps", r.hbm_peak_gbps);
  scalar("hbm_utilisation_percent", r.hbm_utilisation_percent);
  scalar("tensor_active_ns", r.tensor_active_ns);
  scalar("tensor_multiplying_ns", r.tensor_multiplying_ns);
  scalar("tensor_waiting_ns", r.tensor_waiting_ns);
  scalar("dma_busy_ns", r.dma_busy_ns);
  add("top_stalls", [&w, &r] { write_stalls(w, r); });
  add("by_site", [&w, &r] { write_costs(w, r.by_site, false); });
  add("by_label", [&w, &r] { write_costs(w, r.by_label, true); });
  add("critical_path", [&w, &r] { write_critical_path(w, r); });
  scalar("checked", r.checked);
  scalar("correct", r.correct);
  scalar("max_abs_error", r.max_abs_error);
  scalar("tolerance", r.tolerance);
  scalar("wall_seconds", r.wall_seconds);
  scalar("build_seconds", r.build_seconds);
  scalar("simulate_seconds", r.simulate_seconds);
  scalar("analysis_seconds", r.analysis_seconds);
  scalar("check_seconds", r.check_seconds);
  scalar("check_threads", r.check_threads);
  if (!r.per_core.empty()) {
    scalar("cores", r.per_core.size());
    scalar("shard", std::string_view(r.shard));
    scalar("lnc", r.lnc);
    add("per_core", [&w, &r] { write_per_core(w, r); });
    scalar("critical_core", r.critical_core);
    add("scaling", [&w, &r] {
      w.begin_object();
      w.member("baseline_time_ns", r.baseline_time_ns);
      w.member("efficiency_percent", r.scaling_efficiency_percent);
      w.member("speedup", r.speedup);
      w.end();
    });
    add("collectives", [&w, &r] { write_collectives(w, r); });
  }
  return top;
}

}  // namespace

std::string RunReport::json_text(const nlohmann::json& extra) const {
  std::string out;
  JsonText w(out);
  Members top = members(*this, w);
  for (const auto& [key, v] : extra.items()) {
    const auto same = std::find_if(top.begin(), top.end(), [&key = key](const auto& m) { return m.first == key; });
    std::function<void()> write = [&w, &v = v] { w.value(v); };
    if (same != top.end()) same->second = std::move(write);
    else top.emplace_back(key, std::move(write));
  }
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  w.begin_object();
  for (const auto& [key, write] : top) {
    w.key(key);
    write();
  }
  w.end();
  return out;
}

std::optional<std::string> RunReport::json_member(std::string_view key) const {
  std::string out;
  JsonText w(out);
  for (const auto& [k, write] : members(*this, w))
    if (k == key) {
      write();
      return out;
    }
  return std::nullopt;
}

nlohmann::json RunReport::to_json() const { return nlohmann::json::parse(json_text()); }

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
