// Every element-wise operation on tiny, small and neuroncore-v2 (tlm) over
// shapes whose element count is not a multiple of the partition count, with
// tiles smaller than the tensor and a single buffer; tiny in rtl.
#include "common/tests/kernel_runs.h"

namespace tessera::kernels::test_support {
namespace {

const std::vector<std::string> kOps = {"gelu", "silu", "relu", "exp", "add", "multiply"};

INSTANTIATE_TEST_SUITE_P(Elementwise, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("elementwise", kOps,
                                                          {{"tiny", {{"R", 1}, {"C", 1}}},
                                                           {"tiny", {{"R", 37}, {"C", 41}}},
                                                           {"tiny", {{"R", 8}, {"C", 300}}, {{"B", "1"}, {"F", "64"}}},
                                                           {"small", {{"R", 100}, {"C", 333}}},
                                                           {"small", {{"R", 64}, {"C", 512}}, {{"B", "2"}, {"F", "100"}}},
                                                           {"neuroncore-v2", {{"R", 256}, {"C", 1000}}}})),
                         kernel_case_name);

// Stores on their own DMA engines: one of small's four, six of v2's sixteen
// for a unary and a binary op, and more than the config has (all but one).
INSTANTIATE_TEST_SUITE_P(ElementwiseStoreEngines, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases(
                             "elementwise", {"silu", "add"},
                             {{"small", {{"R", 100}, {"C", 333}}, {{"store_engines", "1"}, {"F", "64"}}},
                              {"neuroncore-v2", {{"R", 256}, {"C", 1000}}, {{"store_engines", "6"}, {"F", "512"}}},
                              {"neuroncore-v2", {{"R", 37}, {"C", 41}}, {{"store_engines", "64"}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(ElementwiseStoreEngines, KernelRtlAgrees,
                         ::testing::ValuesIn(kernel_cases("elementwise", {"add"},
                                                          {{"tiny", {{"R", 37}, {"C", 41}}, {{"F", "64"}, {"store_engines", "1"}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Elementwise, KernelRtlAgrees,
                         ::testing::ValuesIn(kernel_cases("elementwise", {"gelu", "add"},
                                                          {{"tiny", {{"R", 37}, {"C", 41}}, {{"F", "64"}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Elementwise, KernelTimingIgnoresData,
                         ::testing::ValuesIn(kernel_cases("elementwise", {"silu", "multiply"},
                                                          {{"small", {{"R", 100}, {"C", 333}}}})),
                         kernel_case_name);

// The split reaches the program: the same tiles timed with stores on their
// own engines and with every engine doing both are not the same run.
TEST(Elementwise, StoreEnginesChangeTheSchedule) {
  const Shape shape = {{"R", 1024}, {"C", 2048}};
  const KernelRun shared = run_kernel("elementwise", "add", "neuroncore-v3", shape, arch::Fidelity::Tlm, true,
                                      {{"F", "4096"}, {"store_engines", "0"}});
  const KernelRun split = run_kernel("elementwise", "add", "neuroncore-v3", shape, arch::Fidelity::Tlm, true,
                                     {{"F", "4096"}, {"store_engines", "6"}});
  ASSERT_TRUE(shared.ok) << shared.error;
  ASSERT_TRUE(split.ok) << split.error;
  EXPECT_NE(shared.time_ns, split.time_ns);
}

TEST(Elementwise, BuffersOutsideTheirLegalRangeAreAnError) {
  const KernelRun r = run_kernel("elementwise", "add", "tiny", {}, arch::Fidelity::Tlm, false, {{"B", "5000"}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("kernel 'elementwise': parameter B=5000 is outside its legal range 1..16"), std::string::npos)
      << r.error;
}

}  // namespace
}  // namespace tessera::kernels::test_support
