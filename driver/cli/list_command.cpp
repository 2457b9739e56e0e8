#include "commands.h"

#include "arch/config.h"
#include "common/kernel.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <iostream>
#include <memory>

namespace tessera::cli {
namespace {

void list_configs(int* exit_code) {
  fmt::print("{:<16} {:>9} {:>9} {:>11} {:>10} {:>10} {:>8}  {}\n", "config", "array", "clock", "bf16 peak",
             "SBUF", "HBM", "rtl", "description");
  for (const auto& name : arch::list_config_names()) {
    try {
      const auto rc = arch::load_config(name);
      const auto& hw = rc.hw;
      const auto bf16 = rc.derived.peak_tflops.find(arch::TensorDType::Bf16);
      fmt::print("{:<16} {:>9} {:>5.2f} GHz {:>6.1f} TF/s {:>6.1f} MiB {:>5.0f} GB/s {:>8}  {}\n", name,
                 fmt::format("{}x{}", hw.tensor.rows, hw.tensor.cols), hw.tensor.clock_ghz,
                 bf16 == rc.derived.peak_tflops.end() ? 0.0 : bf16->second, rc.derived.sbuf_total_mib,
                 hw.hbm.bandwidth_gbps, rc.derived.rtl_build_available ? "built" : "-", hw.description);
    } catch (const arch::ConfigError& e) {
      for (const auto& d : e.diagnostics()) std::cerr << d.str() << '\n';
      *exit_code = kExitBadInput;
    }
  }
}

// The resolved figures an architect compares across generations.
void list_configs_derived(int* exit_code) {
  fmt::print("{:<16} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>12} {:>9} {:>5} {:>8}\n", "config", "bf16 TF",
             "fp8 TF", "mx TF", "fp32 TF", "SBUF MiB", "PSUM KiB", "HBM B/clk", "DMA", "engines", "sems", "fidelity");
  for (const auto& name : arch::list_config_names()) {
    try {
      const auto rc = arch::load_config(name);
      const auto peak = [&](arch::TensorDType t) {
        const auto it = rc.derived.peak_tflops.find(t);
        return it == rc.derived.peak_tflops.end() ? std::string("-") : fmt::format("{:.1f}", it->second);
      };
      const auto& hw = rc.hw;
      fmt::print("{:<16} {:>9} {:>9} {:>9} {:>9} {:>9.1f} {:>9.0f} {:>10.1f} {:>7.0f} GB/s {:>9} {:>5} {:>8}\n", name,
                 peak(arch::TensorDType::Bf16), peak(arch::TensorDType::Fp8E4m3), peak(arch::TensorDType::Mx),
                 peak(arch::TensorDType::Fp32),
                 rc.derived.sbuf_total_mib, rc.derived.psum_total_kib, rc.derived.hbm_bytes_per_tensor_cycle,
                 rc.derived.dma_total_gbps, fmt::format("{}x{}", hw.dma.engines, hw.dma.queues_per_engine),
                 hw.sync.semaphores, hw.simulation.default_fidelity);
    } catch (const arch::ConfigError& e) {
      for (const auto& d : e.diagnostics()) std::cerr << d.str() << '\n';
      *exit_code = kExitBadInput;
    }
  }
}

void list_kernels(bool details) {
  struct Row {
    std::string name, variants, shape, dtypes, params, description;
  };
  std::vector<Row> rows{{"kernel", "variants (first is default)", "shape (defaults)", "dtypes (--dtype)",
                         "tunable (defaults)", "description"}};
  for (const auto& k : kernels::registry()) {
    std::string shape, params;
    for (const auto& p : k.shape) shape += fmt::format("{}{}={}", shape.empty() ? "" : ",", p.name, p.default_value);
    for (const auto& p : k.params)
      params += fmt::format("{}{}={}", params.empty() ? "" : ",", p.name, p.default_text());
    rows.push_back({k.name, fmt::format("{}", fmt::join(k.variant_names(), ", ")), shape,
                    fmt::format("{}", fmt::join(k.dtypes, ",")), params.empty() ? "-" : params,
                    k.origin.empty() ? k.description : fmt::format("{} [{}]", k.description, k.origin)});
  }
  std::size_t w[5] = {0, 0, 0, 0, 0};  // columns as wide as their longest entry
  for (const Row& r : rows) {
    w[0] = std::max(w[0], r.name.size());
    w[1] = std::max(w[1], r.variants.size());
    w[2] = std::max(w[2], r.shape.size());
    w[3] = std::max(w[3], r.dtypes.size());
    w[4] = std::max(w[4], r.params.size());
  }
  for (const Row& r : rows)
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", r.name, w[0], r.variants, w[1], r.shape, w[2], r.dtypes,
               w[3], r.params, w[4], r.description);
  if (!details) return;
  // Per kernel: what each variant, shape and tunable parameter means, and
  // each tunable's legal values (what --param and a tuner may set).
  for (const auto& k : kernels::registry()) {
    fmt::print("\n{}: {}\n", k.name, k.description);
    if (!k.origin.empty()) fmt::print("  from {}\n", k.origin);
    for (const auto& v : k.variants) fmt::print("  variant {}: {}\n", v.name, v.description);
    for (const auto& p : k.shape) fmt::print("  shape {} (default {}): {}\n", p.name, p.default_value, p.description);
    if (k.dtypes.size() == 1)
      fmt::print("  dtypes: {} only\n", k.dtypes.front());
    else
      fmt::print("  dtypes: {} (default), {} (--dtype{})\n", k.dtypes.front(),
                 fmt::join(k.dtypes.begin() + 1, k.dtypes.end(), ", "),
                 k.dtype_variants.empty() ? std::string()
                                          : fmt::format("; variants {}, the others {} only",
                                                        fmt::join(k.dtype_variants, ", "), k.dtypes.front()));
    for (const auto& p : k.params)
      fmt::print("  param {} (default {}, legal {}{}): {}\n", p.name, p.default_text(), p.legal_text(),
                 p.variants.empty() ? "" : fmt::format(", variants {}", fmt::join(p.variants, ", ")), p.description);
    fmt::print("  cores: {}\n", k.shard_dims.empty()
                                      ? std::string("one (it does not split across cores)")
                                      : fmt::format("any of a chip's, split over {} (--cores N --shard {}; default {})",
                                                    fmt::join(k.shard_dims, " or "), fmt::join(k.shard_dims, "|"),
                                                    k.shard_dims.front()));
  }
}

}  // namespace

void add_list_command(CLI::App& app, int* exit_code) {
  CLI::App* list = app.add_subcommand("list", "List shipped configs or registered kernels");
  list->require_subcommand(1);
  auto derived = std::make_shared<bool>(false);
  CLI::App* configs = list->add_subcommand("configs", "One row per shipped hardware generation");
  configs->add_flag("--derived", *derived, "Show derived figures (peaks per dtype, memories, DMA, semaphores)");
  configs->callback([derived, exit_code] {
    if (*derived) list_configs_derived(exit_code);
    else list_configs(exit_code);
  });
  auto details = std::make_shared<bool>(false);
  CLI::App* kernels = list->add_subcommand("kernels", "Registered kernels: variants, shape and tunable parameters");
  kernels->add_flag("--details", *details, "Per kernel: what each variant and parameter is, and the legal values");
  kernels->callback([details, exit_code] {
    try {
      list_kernels(*details);
    } catch (const KernelError& e) {
      std::cerr << "tessera list: " << e.what() << '\n';
      *exit_code = kExitBadInput;
    }
  });
}

}  // namespace tessera::cli
