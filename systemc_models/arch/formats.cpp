#include "arch/formats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace tessera::arch {
namespace {

// A narrow binary format as the conversions see it. Values are computed in
// double, where every value of every format here, every fp32 value and
// every quotient of one by a power of two within E8M0's range is exact.
struct Mini {
  int man_bits;
  int bias;
  double max;          // largest finite value
  bool ieee_specials;  // the top exponent holds infinity and NaNs (E5M2)
  bool nan_at_max;     // S.1..1.1..1 is NaN, the rest of the top exponent is finite (E4M3)
  int total_bits;
};

constexpr Mini kE4m3{3, 7, 448.0, false, true, 8};
constexpr Mini kE5m2{2, 15, 57344.0, true, false, 8};
constexpr Mini kE2m1{1, 1, 6.0, false, false, 4};

const Mini& mini_of(ElementFormat f) {
  switch (f) {
    case ElementFormat::Fp8E4m3: return kE4m3;
    case ElementFormat::Fp8E5m2: return kE5m2;
    case ElementFormat::Fp4E2m1: return kE2m1;
    default: throw std::invalid_argument(std::string("not a narrow format: ") + to_string(f));
  }
}

int exp_bits(const Mini& m) { return m.total_bits - 1 - m.man_bits; }

std::uint8_t sign_bit(const Mini& m) { return static_cast<std::uint8_t>(1u << (m.total_bits - 1)); }

// The encoding of a non-negative value that the format holds exactly.
std::uint8_t encode_exact(const Mini& m, double r) {
  if (r == 0) return 0;
  const int emin = 1 - m.bias;  // exponent of the smallest normal
  if (r < std::ldexp(1.0, emin)) return static_cast<std::uint8_t>(std::ldexp(r, m.man_bits - emin));
  int e = 0;
  std::frexp(r, &e);  // r = f * 2^e, f in [0.5, 1)
  e -= 1;
  const int mantissa = static_cast<int>(std::ldexp(r, m.man_bits - e)) - (1 << m.man_bits);
  return static_cast<std::uint8_t>(((e + m.bias) << m.man_bits) | mantissa);
}

std::uint8_t encode(const Mini& m, float x, Overflow o) {
  const std::uint8_t sign = std::signbit(x) ? sign_bit(m) : 0;
  const std::uint8_t max_code = encode_exact(m, m.max);
  const auto overflow = [&]() -> std::uint8_t {
    if (o == Overflow::Saturate || (!m.ieee_specials && !m.nan_at_max)) return sign | max_code;
    return m.ieee_specials ? (sign | kE5m2Inf) : (sign | kE4m3Nan);
  };
  if (std::isnan(x)) {
    if (m.ieee_specials) return sign | kE5m2Nan;
    if (m.nan_at_max) return sign | kE4m3Nan;
    return 0;
  }
  const double a = std::fabs(static_cast<double>(x));
  if (std::isinf(a)) return overflow();
  if (a == 0) return sign;
  // The grid around a: ulps of the binade of a, or of the subnormals.
  int e = 0;
  std::frexp(a, &e);
  const int q = std::max(e - 1, 1 - m.bias) - m.man_bits;
  // nearbyint rounds ties to even in the default rounding mode; a / 2^q is exact.
  const double r = std::ldexp(std::nearbyint(std::ldexp(a, -q)), q);
  if (r > m.max) return overflow();
  return sign | encode_exact(m, r);
}

double value(const Mini& m, std::uint8_t bits) {
  const int mb = m.man_bits;
  const int e = (bits >> mb) & ((1 << exp_bits(m)) - 1);
  const int f = bits & ((1 << mb) - 1);
  const double sign = (bits & sign_bit(m)) ? -1.0 : 1.0;
  const int top = (1 << exp_bits(m)) - 1;
  if (m.ieee_specials && e == top)
    return f == 0 ? sign * std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  if (m.nan_at_max && e == top && f == (1 << mb) - 1) return std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(static_cast<double>(f), 1 - m.bias - mb);
  return sign * std::ldexp(static_cast<double>(f + (1 << mb)), e - m.bias - mb);
}

float to_float_nan_signed(double v, bool negative) {
  if (!std::isnan(v)) return static_cast<float>(v);
  return negative ? -std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::quiet_NaN();
}

}  // namespace

const char* to_string(ElementFormat f) {
  switch (f) {
    case ElementFormat::Bf16: return "bf16";
    case ElementFormat::Fp32: return "fp32";
    case ElementFormat::Fp8E4m3: return "fp8_e4m3";
    case ElementFormat::Fp8E5m2: return "fp8_e5m2";
    case ElementFormat::Fp4E2m1: return "fp4_e2m1";
  }
  return "?";
}

int bits_of(ElementFormat f) {
  switch (f) {
    case ElementFormat::Bf16: return 16;
    case ElementFormat::Fp32: return 32;
    case ElementFormat::Fp8E4m3:
    case ElementFormat::Fp8E5m2: return 8;
    case ElementFormat::Fp4E2m1: return 4;
  }
  return 0;
}

bool is_narrow(ElementFormat f) {
  return f == ElementFormat::Fp8E4m3 || f == ElementFormat::Fp8E5m2 || f == ElementFormat::Fp4E2m1;
}

std::uint8_t to_fp8_e4m3(float x, Overflow o) { return encode(kE4m3, x, o); }
std::uint8_t to_fp8_e5m2(float x, Overflow o) { return encode(kE5m2, x, o); }
std::uint8_t to_fp4_e2m1(float x) { return encode(kE2m1, x, Overflow::Saturate); }

float fp8_e4m3_value(std::uint8_t bits) { return to_float_nan_signed(value(kE4m3, bits), bits & 0x80); }
float fp8_e5m2_value(std::uint8_t bits) { return to_float_nan_signed(value(kE5m2, bits), bits & 0x80); }
float fp4_e2m1_value(std::uint8_t bits) { return static_cast<float>(value(kE2m1, bits & 0x0F)); }

double e8m0_value(std::uint8_t bits) {
  if (bits == kE8m0Nan) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(bits) - 127);
}

std::uint8_t encode_narrow(ElementFormat f, float x, Overflow o) { return encode(mini_of(f), x, o); }

float narrow_value(ElementFormat f, std::uint8_t bits) {
  switch (f) {
    case ElementFormat::Fp8E4m3: return fp8_e4m3_value(bits);
    case ElementFormat::Fp8E5m2: return fp8_e5m2_value(bits);
    case ElementFormat::Fp4E2m1: return fp4_e2m1_value(bits);
    default: throw std::invalid_argument(std::string("not a narrow format: ") + to_string(f));
  }
}

float max_finite(ElementFormat f) { return static_cast<float>(mini_of(f).max); }

int emax_of(ElementFormat f) {
  int e = 0;
  std::frexp(mini_of(f).max, &e);
  return e - 1;
}

std::uint8_t mx_scale_of(const float* values, std::size_t count, ElementFormat elem) {
  std::uint32_t max_exponent = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t b;
    std::memcpy(&b, &values[i], sizeof b);
    const std::uint32_t e = (b >> 23) & 0xFFu;
    if (e == 0xFFu) return kE8m0Nan;  // NaN or infinity in the block
    max_exponent = std::max(max_exponent, e);
  }
  const int scale = static_cast<int>(max_exponent) - emax_of(elem);
  return static_cast<std::uint8_t>(std::clamp(scale, 0, 254));
}

std::uint8_t mx_quantize(float value, std::uint8_t scale, ElementFormat elem) {
  if (scale == kE8m0Nan) return 0;
  // value / 2^(scale - 127) is exact in double; the conversion rounds once.
  const double v = std::ldexp(static_cast<double>(value), 127 - static_cast<int>(scale));
  const Mini& m = mini_of(elem);
  // Round the exact quotient (it may lie outside fp32's range): through the
  // same grid as encode(), saturating.
  const std::uint8_t sign = std::signbit(v) ? sign_bit(m) : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  int e = 0;
  std::frexp(a, &e);
  const int q = std::max(e - 1, 1 - m.bias) - m.man_bits;
  const double r = std::ldexp(std::nearbyint(std::ldexp(a, -q)), q);
  return sign | encode_exact(m, std::min(r, m.max));
}

double mx_value(ElementFormat elem, std::uint8_t bits, std::uint8_t scale) {
  return static_cast<double>(narrow_value(elem, bits)) * e8m0_value(scale);
}

std::size_t mx_scale_partition(std::size_t p) { return 32 * (p / 32) + (p % 32) / kMxGroupPartitions; }

std::size_t mx_scale_partitions(std::size_t data_partitions) {
  return data_partitions == 0 ? 0 : mx_scale_partition(data_partitions - 1) + 1;
}

}  // namespace tessera::arch
