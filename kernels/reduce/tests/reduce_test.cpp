// reduce (both axes, sum and max) and cumsum (both variants) on tiny, small
// and neuroncore-v2 (tlm): single elements, sizes that are not multiples of
// the partition count or the array size, rows longer than one tile (so
// partial results and carries combine), and neuroncore-v1, which has no
// GpSimd engine; tiny in rtl.
#include "common/tests/kernel_runs.h"

namespace tessera::kernels::test_support {
namespace {

INSTANTIATE_TEST_SUITE_P(Reduce, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("reduce", {"sum_axis1", "max_axis1", "sum_axis0", "max_axis0"},
                                                          {{"tiny", {{"R", 1}, {"C", 1}}},
                                                           {"tiny", {{"R", 37}, {"C", 300}}},
                                                           {"tiny", {{"R", 20}, {"C", 3000}}},
                                                           {"tiny", {{"R", 4200}, {"C", 3}}},  // > 512 row blocks
                                                           {"small", {{"R", 100}, {"C", 333}}},
                                                           {"small", {{"R", 1}, {"C", 5000}}},
                                                           {"neuroncore-v2", {{"R", 300}, {"C", 1000}}},
                                                           {"neuroncore-v1", {{"R", 300}, {"C", 200}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Cumsum, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("cumsum", {"matmul", "scan"},
                                                          {{"tiny", {{"R", 1}, {"C", 1}}},
                                                           {"tiny", {{"R", 37}, {"C", 300}}},
                                                           {"tiny", {{"R", 9}, {"C", 70}}},
                                                           {"small", {{"R", 100}, {"C", 333}}},
                                                           {"small", {{"R", 33}, {"C", 5000}}},
                                                           {"neuroncore-v2", {{"R", 200}, {"C", 1000}}},
                                                           {"neuroncore-v1", {{"R", 130}, {"C", 600}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Reduce, KernelRtlAgrees,
                         ::testing::ValuesIn(kernel_cases("reduce", {"sum_axis1", "max_axis0"},
                                                          {{"tiny", {{"R", 37}, {"C", 50}}}})),
                         kernel_case_name);
INSTANTIATE_TEST_SUITE_P(Cumsum, KernelRtlAgrees,
                         ::testing::ValuesIn(kernel_cases("cumsum", {"matmul", "scan"},
                                                          {{"tiny", {{"R", 20}, {"C", 37}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Reductions, KernelTimingIgnoresData,
                         ::testing::Values(KernelCase{"reduce", "sum_axis0", {"small", {{"R", 100}, {"C", 333}}}},
                                           KernelCase{"cumsum", "matmul", {"small", {{"R", 100}, {"C", 333}}}}),
                         [](const auto& info) { return info.param.kernel + "_" + kernel_case_name(info); });

}  // namespace
}  // namespace tessera::kernels::test_support
