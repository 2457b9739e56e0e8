#include "arch/numerics.h"

#include "arch/matmul_kernel.h"

#include <algorithm>

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

// matmul with the machine's own fp32 arithmetic, in the reference's order
// (matmul_kernel.cpp: fused multiply-adds, which for exact products round as
// the reference's additions do). It equals the reference whenever every
// product is an exact normal number or zero, every partial sum fed to the next
// addition is normal or zero and no NaN arises. Inputs in the safe band give
// such products (the band below); the x86 flags catch a NaN made on the way (invalid: inf -
// inf after an overflow) and a subnormal partial sum fed to the next addition
// (denormal operand, which FMA raises for its addend too); results are
// screened last for a subnormal or NaN. Returns false, leaving dst
// unspecified, when any check fails: the caller then computes the tile
// exactly. Infinities from overflowing sums match the reference as they are.
bool matmul_native(const Bf16Matrix& st, const Bf16Matrix& mv, PsumMode mode, Fp32Matrix& dst) {
#if defined(__SSE__)
  const std::size_t k = st.rows, m = st.cols, n = mv.cols;
  if (mode == PsumMode::Accumulate)
    for (const float v : dst.data)
      if (!std::isfinite(v) || (v != 0.0f && std::fabs(v) < kSmallestNormal)) return false;
  // Scratch reused across calls: a matmul per instruction must not allocate.
  thread_local std::vector<float> a, b, out;
  const std::size_t stride = (n + kMatmulColumnMultiple - 1) / kMatmulColumnMultiple * kMatmulColumnMultiple;
  a.resize(k * m);
  b.resize(k * stride);
  // Every input must be zero, subnormal (read as a signed zero, as the
  // reference flushes it) or a normal whose products with any other such value
  // stay normal and finite, |x| in [2^-63, 2^64).
  static_assert(sizeof(Bf16) == sizeof(std::uint16_t), "Bf16 is its bits");
  const auto bits = [](const Bf16* v) { return reinterpret_cast<const std::uint16_t*>(v); };
  if (!widen_bf16_in_band(bits(st.data.data()), a.data(), k * m)) return false;
  for (std::size_t r = 0; r < k; ++r) {
    if (!widen_bf16_in_band(bits(&mv.data[r * n]), &b[r * stride], n)) return false;
    std::fill(b.begin() + static_cast<std::ptrdiff_t>(r * stride + n),
              b.begin() + static_cast<std::ptrdiff_t>((r + 1) * stride), 0.0f);
  }
  // Results straight into dst when its rows need no padding.
  const bool direct = mode == PsumMode::Overwrite && stride == n;
  if (!direct) out.resize(m * stride);
  constexpr unsigned kInvalid = 0x1, kDenormalOperand = 0x2;
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr & ~0x3Fu);  // clear the sticky exception flags
  matmul_row_order(a.data(), b.data(), k, m, stride, direct ? dst.data.data() : out.data());
  for (std::size_t i = 0; i < m && !direct; ++i) {
    const float* row = &out[i * stride];
    float* d = &dst.data[i * n];
    if (mode == PsumMode::Accumulate)
      for (std::size_t j = 0; j < n; ++j) d[j] = d[j] + row[j];
    else
      std::copy(row, row + n, d);
  }
  const unsigned flags = _mm_getcsr() & 0x3Fu;
  _mm_setcsr(csr);
  if (flags & (kInvalid | kDenormalOperand)) return false;
  return !any_nan_or_subnormal(dst.data.data(), dst.data.size());
#else
  (void)st, (void)mv, (void)mode, (void)dst;
  return false;  // no way to see the flags: always take the exact path
#endif
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
