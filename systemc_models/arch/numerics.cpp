#include "arch/numerics.h"

#include <cmath>
#include <vector>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <cstring>
#include <stdexcept>
#include <string>

namespace tessera::arch {

namespace {

constexpr float kSmallestNormal = 1.17549435e-38f;  // 2^-126

bool is_nan_bits(std::uint32_t b) { return (b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu); }

}  // namespace

std::uint32_t fp32_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float fp32_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

Bf16 to_bf16(float f) {
  const std::uint32_t b = fp32_bits(f);
  if (is_nan_bits(b)) return Bf16{static_cast<std::uint16_t>((b >> 16) | 0x0040u)};
  // Round-to-nearest-even on the low 16 bits; a carry out of the fraction
  // correctly bumps the exponent, up to infinity.
  const std::uint32_t rounding = 0x7FFFu + ((b >> 16) & 1u);
  return Bf16{static_cast<std::uint16_t>((b + rounding) >> 16)};
}

float to_float(Bf16 b) { return fp32_from_bits(static_cast<std::uint32_t>(b.bits) << 16); }

float flush_subnormal(float f) {
  if (f != 0.0f && std::fabs(f) < kSmallestNormal) return std::copysign(0.0f, f);
  return f;
}

float bf16_mul(Bf16 a, Bf16 b) {
  const float x = flush_subnormal(to_float(a));
  const float y = flush_subnormal(to_float(b));
  if (std::isnan(x) || std::isnan(y)) return fp32_from_bits(kFp32CanonicalNan);
  if ((std::isinf(x) && y == 0.0f) || (std::isinf(y) && x == 0.0f))
    return fp32_from_bits(kFp32CanonicalNan);
  // 8 x 8 significand bits: exact in double at any exponent, so the tininess
  // test sees the exact product, and the narrowing is exact or overflows.
  const double p = static_cast<double>(x) * static_cast<double>(y);
  if (p != 0.0 && std::fabs(p) < static_cast<double>(kSmallestNormal))
    return std::copysign(0.0f, static_cast<float>(p));
  return static_cast<float>(p);
}

float fp32_add(float a, float b) {
  const float x = flush_subnormal(a);
  const float y = flush_subnormal(b);
  // The sum of two normals that lands below 2^-126 is exact (a multiple of
  // 2^-149), so flushing the native result equals flushing the exact sum.
  const float s = x + y;
  if (std::isnan(s)) return fp32_from_bits(kFp32CanonicalNan);
  return flush_subnormal(s);
}

float dot_rows(const Bf16* a, std::size_t a_stride, const Bf16* b, std::size_t b_stride,
               std::size_t k) {
  if (k == 0) throw std::invalid_argument("dot_rows: K must be at least 1");
  float sum = bf16_mul(a[0], b[0]);
  for (std::size_t i = 1; i < k; ++i) sum = fp32_add(sum, bf16_mul(a[i * a_stride], b[i * b_stride]));
  return sum;
}

namespace {

// True when a bf16 value is zero or a normal whose products with any other
// such value stay normal and finite: |x| in [2^-63, 2^64).
bool in_safe_band(Bf16 v) {
  const unsigned e = (v.bits >> 7) & 0xFFu;
  return (v.bits & 0x7FFFu) == 0 || (e >= 64 && e <= 190);
}

// matmul with the machine's own fp32 arithmetic. It equals the reference
// whenever every operand, product and partial sum is a normal number (or
// zero) and no NaN arises: then each step is one IEEE round-to-nearest-even
// operation on normals in both. Inputs in the safe band give normal
// products; the x86 flags catch a NaN made on the way (invalid) and a
// subnormal partial sum fed to the next addition (denormal operand); results
// are screened last. Returns false, leaving dst unspecified, when any check
// fails: the caller then computes the tile exactly.
bool matmul_native(const Bf16Matrix& st, const Bf16Matrix& mv, PsumMode mode, Fp32Matrix& dst) {
  for (const Bf16 v : st.data)
    if (!in_safe_band(v)) return false;
  for (const Bf16 v : mv.data)
    if (!in_safe_band(v)) return false;
  if (mode == PsumMode::Accumulate)
    for (const float v : dst.data)
      if (!std::isfinite(v) || (v != 0.0f && std::fabs(v) < kSmallestNormal)) return false;
  const std::size_t k = st.rows, m = st.cols, n = mv.cols;
  std::vector<float> a(st.data.size()), b(mv.data.size()), acc(n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = to_float(st.data[i]);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = to_float(mv.data[i]);
#if defined(__SSE__)
  constexpr unsigned kInvalid = 0x1, kDenormalOperand = 0x2;
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr & ~0x3Fu);  // clear the sticky exception flags
#endif
  for (std::size_t i = 0; i < m; ++i) {
    // Each result sums its products in row order, as the array does.
    const float a0 = a[i];
    for (std::size_t j = 0; j < n; ++j) acc[j] = a0 * b[j];
    for (std::size_t r = 1; r < k; ++r) {
      const float ar = a[r * m + i];
      const float* br = &b[r * n];
      for (std::size_t j = 0; j < n; ++j) acc[j] = acc[j] + ar * br[j];
    }
    for (std::size_t j = 0; j < n; ++j) dst.at(i, j) = mode == PsumMode::Accumulate ? dst.at(i, j) + acc[j] : acc[j];
  }
#if defined(__SSE__)
  const unsigned flags = _mm_getcsr() & 0x3Fu;
  _mm_setcsr(csr);
  if (flags & (kInvalid | kDenormalOperand)) return false;
#else
  return false;  // no way to see the flags: always take the exact path
#endif
  for (const float v : dst.data)
    if (std::isnan(v) || (v != 0.0f && std::fabs(v) < kSmallestNormal)) return false;
  return true;
}

}  // namespace

void matmul(const Bf16Matrix& stationary, const Bf16Matrix& moving, PsumMode mode,
            Fp32Matrix& dst) {
  const std::size_t k = stationary.rows;
  const std::size_t m = stationary.cols;
  const std::size_t n = moving.cols;
  if (k == 0) throw std::invalid_argument("matmul: K must be at least 1");
  if (moving.rows != k)
    throw std::invalid_argument("matmul: stationary has " + std::to_string(k) +
                                " partitions but moving has " + std::to_string(moving.rows));
  if (dst.rows != m || dst.cols != n)
    throw std::invalid_argument("matmul: dst must be [" + std::to_string(m) + ", " +
                                std::to_string(n) + "]");
  const Fp32Matrix before = mode == PsumMode::Accumulate ? dst : Fp32Matrix();
  if (matmul_native(stationary, moving, mode, dst)) return;
  if (mode == PsumMode::Accumulate) dst = before;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const float r = dot_rows(&stationary.data[i], m, &moving.data[j], n, k);
      dst.at(i, j) = mode == PsumMode::Accumulate ? fp32_add(dst.at(i, j), r) : r;
    }
  }
}

}  // namespace tessera::arch
