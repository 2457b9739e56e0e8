// Vector kernel of reference_matmul, compiled once per x86 target by Highway
// and chosen at run time. Both operands are first copied into panels read
// front to back (A in blocks of 4 columns, B in panels of 16), then each
// block of 4 x 16 results keeps its sums in registers for all of K.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "common/reference_matmul.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "common/reference_matmul.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Results [m0, m0 + 4) x [n0 + j0, n0 + j0 + 2 vectors) from the packed
// blocks ap [K][8] (the 4 values of A in double, then their magnitudes, so
// that each is broadcast straight from memory) and bp [K][kReferencePanel].
HWY_INLINE void Block(const double* HWY_RESTRICT ap, const float* HWY_RESTRICT bp, std::size_t K, std::size_t j0,
                      std::size_t stride, double* HWY_RESTRICT sum, double* HWY_RESTRICT mag) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> df;
  const std::size_t lanes = hn::Lanes(d);
  using V = hn::Vec<decltype(d)>;
  V s0[kReferenceRowBlock], s1[kReferenceRowBlock], a0[kReferenceRowBlock], a1[kReferenceRowBlock];
  HWY_UNROLL(16)
  for (std::size_t r = 0; r < kReferenceRowBlock; ++r) s0[r] = s1[r] = a0[r] = a1[r] = hn::Zero(d);
  for (std::size_t k = 0; k < K; ++k) {
    const float* bk = bp + k * kReferencePanel + j0;
    const V b0 = hn::PromoteTo(d, hn::LoadU(df, bk)), b1 = hn::PromoteTo(d, hn::LoadU(df, bk + lanes));
    const V m0 = hn::Abs(b0), m1 = hn::Abs(b1);
    const double* ak = ap + k * 2 * kReferenceRowBlock;
    HWY_UNROLL(16)
    for (std::size_t r = 0; r < kReferenceRowBlock; ++r) {
      // The product of two fp32 values is exact in double, so a fused
      // multiply-add rounds only the addition, as `sum += a * b` does.
      const V a = hn::Set(d, ak[r]), am = hn::Set(d, ak[kReferenceRowBlock + r]);
      s0[r] = hn::MulAdd(a, b0, s0[r]);
      s1[r] = hn::MulAdd(a, b1, s1[r]);
      a0[r] = hn::MulAdd(am, m0, a0[r]);
      a1[r] = hn::MulAdd(am, m1, a1[r]);
    }
  }
  HWY_UNROLL(16)
  for (std::size_t r = 0; r < kReferenceRowBlock; ++r) {
    hn::StoreU(s0[r], d, sum + r * stride + j0);
    hn::StoreU(s1[r], d, sum + r * stride + j0 + lanes);
    hn::StoreU(a0[r], d, mag + r * stride + j0);
    hn::StoreU(a1[r], d, mag + r * stride + j0 + lanes);
  }
}

// ap: [M / 4][K][8], bp: [N / kReferencePanel][K][kReferencePanel]; sum and mag [M][N].
void ReferenceMatmul(const double* HWY_RESTRICT ap, const float* HWY_RESTRICT bp, std::size_t K, std::size_t M,
                     std::size_t N, double* HWY_RESTRICT sum, double* HWY_RESTRICT mag) {
  const hn::ScalableTag<double> d;
  const std::size_t step = 2 * hn::Lanes(d);
  for (std::size_t n0 = 0; n0 < N; n0 += kReferencePanel) {
    const float* panel = bp + n0 * K;
    for (std::size_t m0 = 0; m0 < M; m0 += kReferenceRowBlock)
      for (std::size_t j0 = 0; j0 < kReferencePanel; j0 += step)
        Block(ap + 2 * m0 * K, panel, K, j0, N, sum + m0 * N + n0, mag + m0 * N + n0);
  }
}

}  // namespace tessera::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels {

HWY_EXPORT(ReferenceMatmul);

namespace {

std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

// The padded product of at [K, M] (rows at_stride apart) and b, the left
// operand packed as ReferenceMatmul reads it; padding is zeros, which add
// nothing to any sum.
template <typename T>
void product(const T* at, std::size_t M, std::size_t at_stride, const ReferenceRight& b, ReferenceProduct& out) {
  const std::size_t K = b.K(), N = b.N(), mp = round_up(M, kReferenceRowBlock), np = b.padded_n();
  thread_local std::vector<double> ap, wide_sum, wide_mag;
  ap.assign(2 * mp * K, 0.0);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t m = 0; m < M; ++m) {
      double* block = &ap[2 * ((m / kReferenceRowBlock) * K + k) * kReferenceRowBlock];
      const double v = at[k * at_stride + m];
      block[m % kReferenceRowBlock] = v;
      block[kReferenceRowBlock + m % kReferenceRowBlock] = v < 0 ? -v : v;
    }
  const bool exact = mp == M && np == N;
  out.sum.resize(M * N);
  out.mag.resize(M * N);
  if (!exact) {
    wide_sum.resize(mp * np);
    wide_mag.resize(mp * np);
  }
  double* sum = exact ? out.sum.data() : wide_sum.data();
  double* mag = exact ? out.mag.data() : wide_mag.data();
  HWY_DYNAMIC_DISPATCH(ReferenceMatmul)(ap.data(), b.packed(), K, mp, np, sum, mag);
  if (exact) return;
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) {
      out.sum[m * N + n] = wide_sum[m * np + n];
      out.mag[m * N + n] = wide_mag[m * np + n];
    }
}

}  // namespace

ReferenceRight::ReferenceRight(const float* b, std::size_t K, std::size_t N)
    : K_(K), N_(N), np_(round_up(N, kReferencePanel)), packed_(np_ * K, 0.0f) {
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t n = 0; n < N; ++n)
      packed_[(n / kReferencePanel) * K * kReferencePanel + k * kReferencePanel + n % kReferencePanel] = b[k * N + n];
}

void reference_matmul(const float* at, std::size_t M, const ReferenceRight& b, ReferenceProduct& out) {
  product(at, M, M, b, out);
}

void reference_matmul(const double* at, std::size_t M, const ReferenceRight& b, ReferenceProduct& out) {
  product(at, M, M, b, out);
}

void reference_matmul(const float* at, std::size_t M, std::size_t at_stride, const ReferenceRight& b,
                      ReferenceProduct& out) {
  product(at, M, at_stride, b, out);
}

ReferenceProduct reference_matmul(const float* at, const float* b, std::size_t K, std::size_t M, std::size_t N) {
  ReferenceProduct out;
  product(at, M, M, ReferenceRight(b, K, N), out);
  return out;
}

}  // namespace tessera::kernels
#endif  // HWY_ONCE
