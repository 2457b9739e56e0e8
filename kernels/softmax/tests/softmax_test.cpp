// Both softmax variants on tiny, small and neuroncore-v2 (tlm), with row
// counts that are not multiples of the partition count, single rows and
// single columns; tiny in rtl.
#include "common/tests/kernel_runs.h"

namespace tessera::kernels::test_support {
namespace {

INSTANTIATE_TEST_SUITE_P(Softmax, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("softmax", {"fused", "unfused"},
                                                          {{"tiny", {{"R", 1}, {"C", 1}}},
                                                           {"tiny", {{"R", 37}, {"C", 300}}},
                                                           {"small", {{"R", 100}, {"C", 333}}},
                                                           {"small", {{"R", 33}, {"C", 1}}},
                                                           {"neuroncore-v2", {{"R", 300}, {"C", 1000}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Softmax, KernelRtlAgrees,
                         ::testing::ValuesIn(kernel_cases("softmax", {"fused", "unfused"},
                                                          {{"tiny", {{"R", 20}, {"C", 37}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Softmax, KernelTimingIgnoresData,
                         ::testing::ValuesIn(kernel_cases("softmax", {"fused"}, {{"small", {{"R", 100}, {"C", 333}}}})),
                         kernel_case_name);

TEST(Softmax, RowsLongerThanAPartitionAreAnError) {
  const KernelRun r = run_kernel("softmax", "fused", "tiny", {{"R", 8}, {"C", 5000}}, arch::Fidelity::Tlm);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("a row of C=5000 fp32 needs 20016 bytes in one SBUF partition, which has 16384"),
            std::string::npos)
      << r.error;
}

}  // namespace
}  // namespace tessera::kernels::test_support
