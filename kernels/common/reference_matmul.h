// The kernels' CPU reference for a matrix product, vectorized: the same sums
// as the plain triple loop, in double, each over k in order, so a check built
// on it gives the same figures, in a fraction of the time (docs/performance.md).
#pragma once

#include <cstddef>
#include <vector>

namespace tessera::kernels {

// For every (m, n): sum[m * N + n] = sum over k = 0 .. K-1 (in that order) of
// double(at[k * M + m]) * double(b[k * N + n]), and mag[...] the same sum of
// the products' magnitudes (for a rounding-error bound). at is [K, M] (A
// transposed, as the tensor engine takes it) and b is [K, N], row-major.
// The product of two fp32 values is exact in double, so each step adds one
// exact product with one rounding (a fused multiply-add), as `sum += a * b`
// does in the plain loop: the results are identical to it bit for bit.
// The packing of reference_matmul's operands: A in blocks of 4 columns, B in
// panels of 16 (two AVX-512 vectors of doubles).
inline constexpr std::size_t kReferenceRowBlock = 4;
inline constexpr std::size_t kReferencePanel = 16;

struct ReferenceProduct {
  std::vector<double> sum, mag;
};
ReferenceProduct reference_matmul(const float* at, const float* b, std::size_t K, std::size_t M, std::size_t N);

}  // namespace tessera::kernels
