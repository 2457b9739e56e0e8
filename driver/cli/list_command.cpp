#include "commands.h"

#include "arch/config.h"

#include <fmt/format.h>

#include <iostream>

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

void list_kernels() {
  fmt::print("{:<16} {:<24} {}\n", "kernel", "variants", "shape parameters");
  fmt::print("(no kernels registered yet)\n");
}

}  // namespace

void add_list_command(CLI::App& app, int* exit_code) {
  CLI::App* list = app.add_subcommand("list", "List shipped configs or registered kernels");
  list->require_subcommand(1);
  list->add_subcommand("configs", "One row per shipped hardware generation")->callback([exit_code] {
    list_configs(exit_code);
  });
  list->add_subcommand("kernels", "Registered kernels with variants and shape parameters")->callback(list_kernels);
}

}  // namespace tessera::cli
