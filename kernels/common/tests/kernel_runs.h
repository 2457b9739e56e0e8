// Test helper for the kernel library: one kernel run on one config and
// fidelity, in a child process (SystemC runs one simulation per process),
// with its numerics check.
#pragma once

#include "common/kernel.h"
#include "tessera/device.h"

#include "testing/child_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

namespace tessera::kernels::test_support {

struct KernelRun {
  bool ok = false;
  std::string error;
  double time_ns = 0;
  bool correct = false;
  std::string detail;
  double max_abs_error = 0, tolerance = 0;
};

inline KernelRun run_kernel(const std::string& kernel, const std::string& variant, const std::string& config,
                            const Shape& shape, arch::Fidelity fidelity, bool no_data = false,
                            const std::map<std::string, std::string>& params = {}) {
  const std::string text = tessera::test_support::run_in_child([&] {
    setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
    DeviceOptions o;
    o.config = config;
    o.fidelity = fidelity;
    o.no_data = no_data;
    Device dev(o);
    auto k = instantiate(dev, {kernel, variant, shape, params, 7}).kernel;
    const RunReport r = dev.run(k->build());
    const NumericsCheck c = r.ok && !no_data ? k->check() : NumericsCheck{};
    return nlohmann::json{{"ok", r.ok},           {"error", r.error},   {"time_ns", r.time_ns},
                          {"correct", c.correct}, {"detail", c.detail}, {"max_abs_error", c.max_abs_error},
                          {"tolerance", c.tolerance}}
        .dump();
  });
  if (text.rfind("exception: ", 0) == 0) {
    KernelRun failed;
    failed.error = text;
    return failed;
  }
  const auto j = nlohmann::json::parse(text);
  return KernelRun{j["ok"], j["error"], j["time_ns"], j["correct"], j["detail"], j["max_abs_error"], j["tolerance"]};
}

// One test case: a config, shape overrides and tunable parameters.
struct Case {
  const char* config;
  Shape shape;
  std::map<std::string, std::string> params = {};
};

inline std::string case_name(const std::string& variant, const Case& c) {
  std::string s = variant + "_" + c.config;
  for (const auto& [k, v] : c.shape) s += "_" + k + std::to_string(v);
  for (const auto& [k, v] : c.params) s += "_" + k + v;
  for (auto& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

// A kernel, a variant and a case: the parameter of the shared checks below
// (kernel_runs.cpp), which each kernel's test file instantiates.
struct KernelCase {
  std::string kernel, variant;
  Case c;
};
void PrintTo(const KernelCase& k, std::ostream* os);
std::string kernel_case_name(const ::testing::TestParamInfo<KernelCase>& info);
std::vector<KernelCase> kernel_cases(const std::string& kernel, const std::vector<std::string>& variants,
                                     const std::vector<Case>& cases);

class KernelMatchesReference : public ::testing::TestWithParam<KernelCase> {};
class KernelRtlAgrees : public ::testing::TestWithParam<KernelCase> {};
class KernelTimingIgnoresData : public ::testing::TestWithParam<KernelCase> {};

}  // namespace tessera::kernels::test_support
