// The calibration microbenchmarks compute what they claim (exact results on
// tiny, small and neuroncore-v2, tlm; tiny in rtl), their timing does not
// depend on data, and each rejects a shape it cannot run with a clear error.
#include "common/tests/kernel_runs.h"

namespace tessera::kernels::test_support {
namespace {

INSTANTIATE_TEST_SUITE_P(CalibDma, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("calib_dma", {"load", "store", "chain"},
                                                          {{"tiny", {{"P", 3}, {"B", 100}, {"N", 5}}},
                                                           {"small", {{"P", 32}, {"B", 2048}, {"N", 3}}},
                                                           {"neuroncore-v2", {{"P", 1}, {"B", 32768}, {"N", 2}}},
                                                           {"neuroncore-v2", {{"P", 128}, {"B", 4096}, {"N", 40}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(CalibMatmul, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("calib_matmul", {"moving", "pairs"},
                                                          {{"tiny", {{"K", 8}, {"M", 5}, {"N", 7}, {"R", 3}}},
                                                           {"small", {{"K", 32}, {"M", 32}, {"N", 512}, {"R", 4}}},
                                                           {"neuroncore-v2", {{"K", 128}, {"M", 128}, {"N", 1}, {"R", 3}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(CalibVector, KernelMatchesReference,
                         ::testing::ValuesIn(kernel_cases("calib_vector",
                                                          {"tensor_scalar", "tensor_scalar_chain", "tensor_tensor",
                                                           "tensor_tensor_chain", "tensor_tensor_psum", "activation",
                                                           "activation_chain", "activation_accumulate", "iota"},
                                                          {{"tiny", {{"P", 5}, {"N", 9}, {"R", 3}}},
                                                           {"neuroncore-v2", {{"P", 128}, {"N", 512}, {"R", 4}}}})),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Calibration, KernelRtlAgrees,
                         ::testing::ValuesIn([] {
                           auto cases = kernel_cases("calib_dma", {"load", "chain"}, {{"tiny", {{"P", 8}, {"B", 64}, {"N", 3}}}});
                           for (auto& c : kernel_cases("calib_matmul", {"moving", "pairs"},
                                                       {{"tiny", {{"K", 8}, {"M", 8}, {"N", 16}, {"R", 3}}}}))
                             cases.push_back(c);
                           return cases;
                         }()),
                         kernel_case_name);

INSTANTIATE_TEST_SUITE_P(Calibration, KernelTimingIgnoresData,
                         ::testing::ValuesIn([] {
                           auto cases = kernel_cases("calib_dma", {"load"}, {{"small", {{"P", 32}, {"B", 512}, {"N", 4}}}});
                           for (auto& c : kernel_cases("calib_vector", {"tensor_tensor_chain"},
                                                       {{"small", {{"P", 32}, {"N", 100}, {"R", 3}}}}))
                             cases.push_back(c);
                           return cases;
                         }()),
                         kernel_case_name);

TEST(Calibration, ShapesTheHardwareCannotRunAreErrors) {
  struct Bad {
    const char* kernel;
    const char* variant;
    Shape shape;
    const char* message;
  };
  const Bad bad[] = {
      {"calib_dma", "load", {{"P", 9}}, "P=9 partitions; SBUF has 8"},
      {"calib_dma", "load", {{"B", 30}}, "not a multiple of 4"},
      {"calib_dma", "store", {{"B", 1 << 20}}, "an SBUF partition holds"},
      {"calib_matmul", "moving", {{"K", 9}}, "the array has 8 rows"},
      {"calib_matmul", "pairs", {{"M", 9}}, "at most 8 columns"},
      {"calib_matmul", "moving", {{"N", 65}}, "at most 64 columns"},
      {"calib_vector", "activation", {{"P", 9}}, "P=9 partitions"},
  };
  for (const auto& b : bad) {
    const KernelRun r = run_kernel(b.kernel, b.variant, "tiny", b.shape, arch::Fidelity::Tlm);
    EXPECT_FALSE(r.ok) << b.kernel;
    EXPECT_NE(r.error.find(b.message), std::string::npos) << b.kernel << ": " << r.error;
  }
}

}  // namespace
}  // namespace tessera::kernels::test_support
