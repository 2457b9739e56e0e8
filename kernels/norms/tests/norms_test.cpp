// layernorm and rmsnorm, both variants, on tiny, small and neuroncore-v2
// (tlm), with row counts that are not multiples of the partition count,
// rows of one element, single rows, rows so long that one buffer fits;
// tiny in rtl.
#include "common/tests/kernel_runs.h"

namespace tessera::kernels::test_support {
namespace {

const std::vector<Case> kCases = {{"tiny", {{"R", 1}, {"D", 1}}},
                                  {"tiny", {{"R", 37}, {"D", 300}}},
                                  {"tiny", {{"R", 20}, {"D", 900}}},  // one buffer: no overlap
                                  {"small", {{"R", 100}, {"D", 333}}},
                                  {"small", {{"R", 5}, {"D", 2}}},
                                  {"neuroncore-v2", {{"R", 300}, {"D", 1000}}}};

INSTANTIATE_TEST_SUITE_P(Layernorm, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("layernorm", {"split", "vector"}, kCases)), kernel_case_name);
INSTANTIATE_TEST_SUITE_P(Rmsnorm, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("rmsnorm", {"split", "vector"}, kCases)), kernel_case_name);

// The normalising pass on the scalar engine, all or some of the time, from
// PSUM and SBUF stages: the same roundings (one tensor_scalar definition).
const std::vector<Case> kScalarNormalise = {
    {"small", {{"R", 100}, {"D", 1333}}, {{"scalar_normalise", "2"}}},
    {"small", {{"R", 100}, {"D", 1333}}, {{"scalar_normalise", "4"}, {"stage", "sbuf"}}},
    {"neuroncore-v3", {{"R", 300}, {"D", 1000}}, {{"scalar_normalise", "3"}}}};
INSTANTIATE_TEST_SUITE_P(LayernormScalarNormalise, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("layernorm", {"split"}, kScalarNormalise)), kernel_case_name);
INSTANTIATE_TEST_SUITE_P(RmsnormScalarNormalise, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("rmsnorm", {"split"}, kScalarNormalise)), kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Layernorm, KernelRtlAgrees,
                         ::testing::ValuesIn(kernel_cases("layernorm", {"split", "vector"},
                                                          {{"tiny", {{"R", 20}, {"D", 37}}}})),
                         kernel_case_name);
INSTANTIATE_TEST_SUITE_P(Rmsnorm, KernelRtlAgrees,
                         ::testing::ValuesIn(kernel_cases("rmsnorm", {"split"}, {{"tiny", {{"R", 20}, {"D", 37}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Norms, KernelTimingIgnoresData,
                         ::testing::Values(KernelCase{"layernorm", "split", {"small", {{"R", 100}, {"D", 333}}}},
                                           KernelCase{"rmsnorm", "vector", {"small", {{"R", 100}, {"D", 333}}}}),
                         [](const auto& info) { return info.param.kernel + "_" + kernel_case_name(info); });

TEST(Norms, RowsTooLongForSbufAreAnError) {
  const KernelRun r = run_kernel("layernorm", "split", "tiny", {{"R", 8}, {"D", 1500}}, arch::Fidelity::Tlm);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("layernorm: rows of D=1500 fp32 need 24016 bytes in one SBUF partition (gamma, beta, "
                         "scratch and the row), which has 16384"),
            std::string::npos)
      << r.error;
}

}  // namespace
}  // namespace tessera::kernels::test_support
