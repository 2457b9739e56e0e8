// Test helpers for kernels of the registry: run one (kernel, variant, shape)
// on a shipped config in a forked child (SystemC runs one simulation per
// process) and get back what happened, so one test can compare fidelities.
#pragma once

#include "common/kernel.h"
#include "tessera/kernel_builder.h"

#include "arch/config.h"
#include "cosim/rtl_dma_engine.h"
#include "testing/child_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tessera::kernels::kernel_testing {

struct KernelRun {
  bool ok = false;
  std::string error;    // the simulation's, or a KernelError's, when !ok
  double time_ns = 0;
  bool correct = false;
  double max_abs_error = 0, tolerance = 0;
  std::string detail;   // the worst element, when wrong
  double matmul_flops = 0;
};

// Why `config` cannot run on RTL in this build, or empty when it can: its
// tensor array or DMA parameter set was not Verilated here (the sanitizer
// lane's tree builds tiny's only, cmake/TesseraSanitize.cmake). A test of
// the rtl or sampled fidelity skips with this reason; in the main tree,
// which builds every shipped config's, it never does. Callers link
// tessera_cosim.
inline std::string rtl_not_built(const std::string& config) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  const arch::HwConfig hw = arch::load_config(config).hw;
  const auto has = [](const std::vector<std::string>& built, const std::string& name) {
    return std::find(built.begin(), built.end(), name) != built.end();
  };
  const std::string array = std::to_string(hw.tensor.rows) + "x" + std::to_string(hw.tensor.cols);
  if (!has(arch::rtl_array_sizes(), array)) return config + ": no Verilated " + array + " tensor array in this build";
  const std::string dma = std::to_string(hw.dma.axi_data_bytes) + "x" + std::to_string(hw.dma.queues_per_engine) +
                          "x" + std::to_string(hw.dma.max_outstanding);
  if (!has(cosim::rtl_dma_variants(), dma)) return config + ": no Verilated " + dma + " DMA engine in this build";
  return {};
}

// Runs in the calling process (once per test process: SystemC).
inline KernelRun run_kernel(const std::string& kernel, const std::string& variant, const Shape& shape,
                            const std::string& config, arch::Fidelity fidelity, bool no_data = false,
                            const std::string& dtype = "", const std::map<std::string, std::string>& params = {}) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  KernelRun out;
  DeviceOptions o;
  o.config = config;
  o.fidelity = fidelity;
  o.no_data = no_data;
  Device dev(o);
  try {
    auto k = instantiate(dev, {kernel, variant, shape, params, 7, dtype}).kernel;
    const RunReport r = dev.run(k->build());
    out.ok = r.ok;
    out.error = r.error;
    out.time_ns = r.time_ns;
    out.matmul_flops = r.matmul_flops;
    if (r.ok && !no_data) {
      const NumericsCheck c = k->check();
      out.correct = c.correct;
      out.max_abs_error = c.max_abs_error;
      out.tolerance = c.tolerance;
      out.detail = c.detail;
    }
  } catch (const KernelError& e) {
    out.error = e.what();
  }
  return out;
}

inline KernelRun run_kernel_in_child(const std::string& kernel, const std::string& variant, const Shape& shape,
                                     const std::string& config, arch::Fidelity fidelity, const std::string& dtype = "",
                                     const std::map<std::string, std::string>& params = {}) {
  const std::string text = ::tessera::test_support::run_in_child([&] {
    const KernelRun r = run_kernel(kernel, variant, shape, config, fidelity, false, dtype, params);
    return nlohmann::json{{"ok", r.ok},
                          {"error", r.error},
                          {"time_ns", r.time_ns},
                          {"correct", r.correct},
                          {"detail", r.detail},
                          {"matmul_flops", r.matmul_flops},
                          {"max_abs_error", r.max_abs_error},
                          {"tolerance", r.tolerance}}
        .dump();
  });
  KernelRun r;
  if (text.rfind("exception: ", 0) == 0) {
    r.error = text;
    return r;
  }
  const auto j = nlohmann::json::parse(text);
  r.ok = j["ok"];
  r.error = j["error"];
  r.time_ns = j["time_ns"];
  r.correct = j["correct"];
  r.detail = j["detail"];
  r.matmul_flops = j["matmul_flops"];
  r.max_abs_error = j["max_abs_error"];
  r.tolerance = j["tolerance"];
  return r;
}

// A device of `cores` cores of `config`'s chip (0: one logical core), for
// the tests that shard a kernel across a chip (docs/multicore.md).
inline Device open_chip(const std::string& config, int cores, arch::Fidelity fidelity = arch::Fidelity::Tlm,
                        std::vector<arch::Override> overrides = {}, bool no_data = false) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  DeviceOptions o;
  o.config = config;
  o.fidelity = fidelity;
  o.cores = cores;
  o.overrides = std::move(overrides);
  o.no_data = no_data;
  return Device(o);
}

// The KernelError a sharded run of `request` throws, or "(accepted)".
inline std::string shard_error(Device& dev, const KernelRequest& request, const std::string& shard) {
  try {
    tessera::kernels::run_kernel(dev, request, shard);
  } catch (const KernelError& e) {
    return e.what();
  }
  return "(accepted)";
}

// The test name of a (dtype, variant) parameter: fp8_e4m3_flash.
inline std::string dtype_variant_name(const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param);
}

// A test-name-safe rendering of a config and shape: neuroncore-v2, {S: 64} -> neuroncore_v2_S64.
inline std::string case_name(std::string config, const Shape& shape) {
  for (auto& ch : config)
    if (ch == '-') ch = '_';
  for (const auto& [k, v] : shape) config += "_" + k + std::to_string(v);
  return config;
}

}  // namespace tessera::kernels::kernel_testing
