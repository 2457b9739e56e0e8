#include "tessera/run_report.h"

#include <fmt/format.h>

namespace tessera {

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

nlohmann::json RunReport::to_json() const {
  nlohmann::json engines_json = nlohmann::json::object();
  for (const auto& [name, e] : engines)
    engines_json[name] = {{"instructions", e.instructions},
                          {"busy_ns", e.busy_ns},
                          {"semaphore_wait_ns", e.semaphore_wait_ns},
                          {"fetch_wait_ns", e.fetch_wait_ns},
                          {"memory_stall_ns", e.memory_stall_ns},
                          {"busy_percent", time_ns > 0 ? 100.0 * e.busy_ns / time_ns : 0.0}};
  return {
      {"kernel", kernel},
      {"variant", variant},
      {"config", config},
      {"fidelity", fidelity},
      {"shape", shape},
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
      {"checked", checked},
      {"correct", correct},
      {"max_abs_error", max_abs_error},
      {"tolerance", tolerance},
      {"wall_seconds", wall_seconds},
  };
}

std::string RunReport::summary() const {
  std::string shape_text;
  for (const auto& [k, v] : shape) shape_text += fmt::format("{}{}={}", shape_text.empty() ? "" : ",", k, v);
  std::string s = fmt::format("{} {} on {} ({}) shape {}\n", kernel, variant, config, fidelity, shape_text);
  if (!ok) return s + fmt::format("  FAILED: {}\n", error);
  s += fmt::format("  time {:.3f} us = {:.0f} tensor-engine cycles; HFU {:.2f}%; tensor utilisation {:.2f}%\n",
                   time_ns / 1000.0, cycles, hfu_percent, 100.0 * tensor_utilisation);
  s += fmt::format("  DMA {:.3f} MB in {:.0f} transfers (average {:.0f} B)\n", dma_bytes / 1e6, dma_transfers,
                   dma_average_bytes);
  s += fmt::format("  {:<8} {:>8} {:>9} {:>11} {:>11} {:>11}\n", "engine", "instrs", "busy %", "sem wait %", "fetch %",
                   "mem stall %");
  for (const auto& [name, e] : engines) {
    const auto pct = [&](double v) { return time_ns > 0 ? 100.0 * v / time_ns : 0.0; };
    s += fmt::format("  {:<8} {:>8.0f} {:>8.1f}% {:>10.1f}% {:>10.1f}% {:>10.1f}%\n", name, e.instructions,
                     pct(e.busy_ns), pct(e.semaphore_wait_ns), pct(e.fetch_wait_ns), pct(e.memory_stall_ns));
  }
  if (const std::string b = bound_by(); !b.empty() && time_ns > 0)
    s += fmt::format("  bound by: {} (busy {:.1f}% of the run)\n", b, 100.0 * engines.at(b).busy_ns / time_ns);
  if (checked)
    s += fmt::format("  numerics: {} (max abs error {:.3g}, tolerance {:.3g})\n", correct ? "match" : "MISMATCH",
                     max_abs_error, tolerance);
  s += fmt::format("  simulated in {:.2f} s wall\n", wall_seconds);
  return s;
}

}  // namespace tessera
