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

// The right operand b [K, N] packed once, for products with many left
// operands (a head's K^T against every block of queries).
class ReferenceRight {
public:
  ReferenceRight(const float* b, std::size_t K, std::size_t N);
  std::size_t K() const { return K_; }
  std::size_t N() const { return N_; }
  const float* packed() const { return packed_.data(); }
  std::size_t padded_n() const { return np_; }

private:
  std::size_t K_, N_, np_;
  std::vector<float> packed_;  // [np / kReferencePanel][K][kReferencePanel]
};

// at [K, M] times b into out.sum and out.mag [M][N], reusing out's storage,
// so that a check that walks blocks of rows allocates once. With at in
// double (a reference's own intermediate values, such as softmax weights) a
// product is no longer exact, so each step rounds once (a fused
// multiply-add) where `sum += a * b` rounds twice: within an ulp per step of
// the plain loop, not bit for bit.
void reference_matmul(const float* at, std::size_t M, const ReferenceRight& b, ReferenceProduct& out);
void reference_matmul(const double* at, std::size_t M, const ReferenceRight& b, ReferenceProduct& out);
// The same for M columns of a wider [K, at_stride] left operand: row k of the
// block is at[k * at_stride .. + M) (a block of rows of C, of tokens, of
// queries, taken where it lies instead of copied out first).
void reference_matmul(const float* at, std::size_t M, std::size_t at_stride, const ReferenceRight& b,
                      ReferenceProduct& out);

}  // namespace tessera::kernels
