#include "common/input_format.h"

namespace tessera::kernels {

InputFormat input_format(const std::string& dtype, const arch::HwConfig& cfg) {
  const int fp8_rows = cfg.tensor.fp8_rows_per_pe == 2 ? 2 : 1;
  if (dtype == "fp32") return {arch::DType::Fp32, 1};
  if (dtype == "fp8_e4m3") return {arch::DType::Fp8E4m3, fp8_rows};
  if (dtype == "fp8_e5m2") return {arch::DType::Fp8E5m2, fp8_rows};
  if (dtype == "mxfp8") return {arch::DType::Fp8E4m3x4, arch::kMxQuad};
  if (dtype == "mxfp4") return {arch::DType::Fp4E2m1x4, arch::kMxQuad};
  return {arch::DType::Bf16, 1};
}

}  // namespace tessera::kernels
