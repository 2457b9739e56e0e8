// Rounding-error bounds the kernel references derive their tolerances from
// (Higham, "Accuracy and Stability of Numerical Algorithms", ch. 2-3): unit
// roundoffs of the dtypes the engines round to, and gamma_n, the bound on the
// relative error of n rounded fp32 operations in sequence.
#pragma once

#include <cmath>
#include <cstdint>

namespace tessera::kernels {

// fp32 round-to-nearest: |fl(x) - x| <= u |x|.
inline const double kUnitFp32 = std::ldexp(1.0, -24);
// bf16 (8 significand bits) round-to-nearest.
inline const double kUnitBf16 = std::ldexp(1.0, -8);
// The smallest normal fp32: the engines flush anything below it to zero.
inline const double kMinNormalFp32 = std::ldexp(1.0, -126);

// gamma_n = n u / (1 - n u): a sum of n + 1 terms accumulated in fp32 in any
// order is within gamma_n * sum |terms| of the exact sum.
inline double gamma_fp32(std::int64_t n) {
  const double nu = static_cast<double>(n) * kUnitFp32;
  return nu / (1 - nu);
}

}  // namespace tessera::kernels
