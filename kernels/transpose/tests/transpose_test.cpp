// Both transpose variants on tiny, small and neuroncore-v2 (tlm): single
// elements, single rows and columns, sizes that are not multiples of the
// partition count or the array size; tiny in rtl. Exact: tolerance 0.
#include "common/tests/kernel_runs.h"

namespace tessera::kernels::test_support {
namespace {

INSTANTIATE_TEST_SUITE_P(Transpose, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("transpose", {"tensor", "dma"},
                                                          {{"tiny", {{"R", 1}, {"C", 1}}},
                                                           {"tiny", {{"R", 37}, {"C", 300}}},
                                                           {"tiny", {{"R", 300}, {"C", 9}}},
                                                           {"small", {{"R", 100}, {"C", 333}}},
                                                           {"small", {{"R", 1}, {"C", 70}}},
                                                           {"neuroncore-v2", {{"R", 300}, {"C", 700}}}})),
                         kernel_case_name);

// Stores spread over groups of DMA engines: one engine, a group size that
// does not divide the engines, more than the config has (every engine).
INSTANTIATE_TEST_SUITE_P(TransposeStoreEngines, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases(
                             "transpose", {"tensor"},
                             {{"small", {{"R", 300}, {"C", 333}}, {{"store_engines", "1"}}},
                              {"neuroncore-v2", {{"R", 1000}, {"C", 700}}, {{"store_engines", "3"}, {"row_blocks", "2"}}},
                              {"neuroncore-v2", {{"R", 300}, {"C", 700}}, {{"store_engines", "64"}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Transpose, KernelRtlAgrees,
                         ::testing::ValuesIn(kernel_cases("transpose", {"tensor", "dma"},
                                                          {{"tiny", {{"R", 37}, {"C", 50}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(TransposeStoreEngines, KernelRtlAgrees,
                         ::testing::ValuesIn(kernel_cases("transpose", {"tensor"},
                                                          {{"tiny", {{"R", 37}, {"C", 50}}, {{"store_engines", "1"}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Transpose, KernelTimingIgnoresData,
                         ::testing::ValuesIn(kernel_cases("transpose", {"tensor"}, {{"small", {{"R", 100}, {"C", 333}}}})),
                         kernel_case_name);

}  // namespace
}  // namespace tessera::kernels::test_support
