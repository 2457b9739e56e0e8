// The checks every kernel of the library passes; each kernel's test file
// instantiates them over its variants and shapes.
#include "common/tests/kernel_runs.h"
#include "common/kernel_testing.h"
#include "common/tests/rtl_agreement.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::kernels::test_support {

void PrintTo(const KernelCase& k, std::ostream* os) { *os << k.kernel << " " << case_name(k.variant, k.c); }

std::string kernel_case_name(const ::testing::TestParamInfo<KernelCase>& info) {
  return case_name(info.param.variant, info.param.c);
}

std::vector<KernelCase> kernel_cases(const std::string& kernel, const std::vector<std::string>& variants,
                                     const std::vector<Case>& cases) {
  std::vector<KernelCase> out;
  for (const auto& v : variants)
    for (const auto& c : cases) out.push_back({kernel, v, c});
  return out;
}

TEST_P(KernelMatchesReference, InTlm) {
  const KernelCase& k = GetParam();
  const KernelRun r = run_kernel(k.kernel, k.variant, k.c.config, k.c.shape, arch::Fidelity::Tlm, false, k.c.params);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.correct) << r.detail << " (error " << r.max_abs_error << ", tolerance " << r.tolerance << ")";
  EXPECT_GT(r.time_ns, 0);
}

// The tensor engine and the DMA engines as Verilated RTL: the same results
// within the same bound, and the same end-to-end time as tlm's
// (rtl_agreement.h, docs/cosim.md).
TEST_P(KernelRtlAgrees, WithTlmAndTheReference) {
  const KernelCase& k = GetParam();
  if (const std::string why = kernel_testing::rtl_not_built(k.c.config); !why.empty()) GTEST_SKIP() << why;
  const KernelRun rtl = run_kernel(k.kernel, k.variant, k.c.config, k.c.shape, arch::Fidelity::Rtl, false, k.c.params);
  const KernelRun tlm = run_kernel(k.kernel, k.variant, k.c.config, k.c.shape, arch::Fidelity::Tlm, false, k.c.params);
  ASSERT_TRUE(rtl.ok) << rtl.error;
  ASSERT_TRUE(tlm.ok) << tlm.error;
  EXPECT_TRUE(rtl.correct) << rtl.detail;
  agreement::expect_rtl_matches_tlm(rtl.time_ns, tlm.time_ns);
}

// Timing must not depend on data: --no-data gives the same time.
TEST_P(KernelTimingIgnoresData, NoDataTakesTheSameTime) {
  const KernelCase& k = GetParam();
  const KernelRun data = run_kernel(k.kernel, k.variant, k.c.config, k.c.shape, arch::Fidelity::Tlm, false, k.c.params);
  const KernelRun none = run_kernel(k.kernel, k.variant, k.c.config, k.c.shape, arch::Fidelity::Tlm, true, k.c.params);
  ASSERT_TRUE(data.ok) << data.error;
  ASSERT_TRUE(none.ok) << none.error;
  EXPECT_EQ(data.time_ns, none.time_ns);
}

}  // namespace tessera::kernels::test_support
