#include "arch/numerics.h"

#include <cmath>
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
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const float r = dot_rows(&stationary.data[i], m, &moving.data[j], n, k);
      dst.at(i, j) = mode == PsumMode::Accumulate ? fp32_add(dst.at(i, j), r) : r;
    }
  }
}

}  // namespace tessera::arch
