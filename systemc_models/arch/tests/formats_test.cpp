// The narrow formats and the tensor engine's products and matmul in every
// format: hand-computed cases from the specifications, and an independent
// implementation written here by bit manipulation on fp32 encodings (the way
// ml_dtypes and the OCP reference libraries convert: shift and round the
// significand with integer arithmetic), which the reference (formats.cpp:
// arithmetic in double) must match on every fp8 and fp4 encoding and on
// millions of fp32 values, with every tie and boundary among them.
#include "arch/formats.h"
#include "arch/numerics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace tessera::arch {
namespace {

std::uint32_t bits(float f) { return fp32_bits(f); }
float f32(std::uint32_t b) { return fp32_from_bits(b); }

// --- the independent implementation ----------------------------------------------

struct Spec {
  int m;         // mantissa bits
  int e;         // exponent bits
  int bias;
  int total;     // bits
  int max_code;  // largest finite magnitude code
  bool inf;      // the top exponent holds inf (mantissa 0) and NaNs (E5M2)
  bool nan_max;  // only S.1..1.1..1 is NaN (E4M3)
};
constexpr Spec kE4m3{3, 4, 7, 8, 0x7E, false, true};
constexpr Spec kE5m2{2, 5, 15, 8, 0x7B, true, false};
constexpr Spec kE2m1{1, 2, 1, 4, 0x7, false, false};

// Decoding by building the fp32 encoding: exponent rebiased, mantissa shifted
// into place, a subnormal normalised by its leading one.
std::uint32_t decode_bits(const Spec& s, std::uint32_t code) {
  const std::uint32_t sign = (code >> (s.total - 1)) & 1u;
  const std::uint32_t e = (code >> s.m) & ((1u << s.e) - 1);
  std::uint32_t f = code & ((1u << s.m) - 1);
  const std::uint32_t top = (1u << s.e) - 1;
  if ((s.inf && e == top && f != 0) || (s.nan_max && e == top && f == (1u << s.m) - 1))
    return (sign << 31) | 0x7FC00000u;
  if (s.inf && e == top) return (sign << 31) | 0x7F800000u;
  if (e == 0) {
    if (f == 0) return sign << 31;
    int exponent = 1 - s.bias;
    while (!(f & (1u << s.m))) {
      f <<= 1;
      --exponent;
    }
    f &= (1u << s.m) - 1;
    return (sign << 31) | (static_cast<std::uint32_t>(exponent + 127) << 23) | (f << (23 - s.m));
  }
  return (sign << 31) | ((e - s.bias + 127) << 23) | (f << (23 - s.m));
}

// Encoding with integer round-to-nearest-even on the 24-bit significand.
std::uint32_t encode_bits(const Spec& s, float x, bool saturate) {
  const std::uint32_t b = bits(x);
  const std::uint32_t sign = b >> 31, mag = b & 0x7FFFFFFFu;
  const std::uint32_t sgn = sign << (s.total - 1);
  const auto overflow = [&]() -> std::uint32_t {
    if (saturate || (!s.inf && !s.nan_max)) return sgn | static_cast<std::uint32_t>(s.max_code);
    return s.inf ? (sgn | (((1u << s.e) - 1) << s.m)) : (sgn | ((1u << (s.total - 1)) - 1));
  };
  if (mag > 0x7F800000u) {  // NaN
    if (s.inf) return sgn | (((1u << s.e) - 1) << s.m) | (1u << (s.m - 1));
    if (s.nan_max) return sgn | ((1u << (s.total - 1)) - 1);
    return 0;
  }
  if (mag == 0x7F800000u) return overflow();
  const int fe = static_cast<int>(mag >> 23);
  if (fe == 0) return sgn;  // fp32 subnormals and zeros: far below half the smallest subnormal of every format
  const std::uint64_t sig = (mag & 0x7FFFFFu) | 0x800000u;
  const int te = fe - 127 + s.bias;  // target biased exponent
  const int shift = 23 - s.m + (te >= 1 ? 0 : 1 - te);
  std::uint32_t code;
  if (shift >= 40) {
    code = 0;
  } else {
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    const std::uint64_t rounded = (sig + half - 1 + ((sig >> shift) & 1u)) >> shift;
    code = te >= 1 ? static_cast<std::uint32_t>((static_cast<std::uint64_t>(te) << s.m) + rounded - (1u << s.m))
                   : static_cast<std::uint32_t>(rounded);
  }
  if (code > static_cast<std::uint32_t>(s.max_code)) return overflow();
  return sgn | code;
}

std::uint32_t reference_encode(const Spec& s, float x, bool saturate) {
  const Overflow o = saturate ? Overflow::Saturate : Overflow::NonSaturate;
  if (&s == &kE4m3) return to_fp8_e4m3(x, o);
  if (&s == &kE5m2) return to_fp8_e5m2(x, o);
  return to_fp4_e2m1(x);
}

float reference_value(const Spec& s, std::uint32_t code) {
  if (&s == &kE4m3) return fp8_e4m3_value(static_cast<std::uint8_t>(code));
  if (&s == &kE5m2) return fp8_e5m2_value(static_cast<std::uint8_t>(code));
  return fp4_e2m1_value(static_cast<std::uint8_t>(code));
}

// Equal as values: NaN matches NaN of the same sign, every other value bit for bit.
bool same_value(float a, std::uint32_t b) {
  if (std::isnan(a)) return (b & 0x7FFFFFFFu) > 0x7F800000u && std::signbit(a) == static_cast<bool>(b >> 31);
  return bits(a) == b;
}

class NarrowFormat : public ::testing::TestWithParam<const Spec*> {};

TEST_P(NarrowFormat, DecodesEveryEncodingAsTheIndependentImplementation) {
  const Spec& s = *GetParam();
  for (std::uint32_t code = 0; code < (1u << s.total); ++code)
    ASSERT_TRUE(same_value(reference_value(s, code), decode_bits(s, code))) << "code 0x" << std::hex << code;
}

TEST_P(NarrowFormat, EncodesAsTheIndependentImplementationEverywhereThatMatters) {
  const Spec& s = *GetParam();
  std::vector<float> probes;
  // Every value of the format, the midpoints between neighbours (ties), and
  // the fp32 values on either side of each.
  std::vector<double> values;
  for (std::uint32_t code = 0; code < (1u << (s.total - 1)); ++code) {
    const float v = f32(decode_bits(s, code));
    if (std::isfinite(v)) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.push_back(values.back() * 2);  // beyond the largest finite value
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    const float mid = static_cast<float>((values[i] + values[i + 1]) / 2);
    for (const float v : {static_cast<float>(values[i]), mid}) {
      probes.push_back(v);
      probes.push_back(std::nextafter(v, 0.0f));
      probes.push_back(std::nextafter(v, std::numeric_limits<float>::infinity()));
    }
  }
  for (const float v : {0.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(), 1e-30f, 1e30f})
    probes.push_back(v);
  // And random fp32 encodings over the whole range.
  std::mt19937 rng(31);
  for (int i = 0; i < 2'000'000; ++i) probes.push_back(f32(static_cast<std::uint32_t>(rng())));
  for (const bool saturate : {true, false})
    for (const float p : probes)
      for (const float x : {p, -p})
        ASSERT_EQ(reference_encode(s, x, saturate), encode_bits(s, x, saturate))
            << x << " (0x" << std::hex << bits(x) << ") saturate " << saturate;
}

TEST_P(NarrowFormat, EveryFiniteValueRoundTrips) {
  const Spec& s = *GetParam();
  for (std::uint32_t code = 0; code < (1u << s.total); ++code) {
    const float v = reference_value(s, code);
    if (!std::isfinite(v)) continue;
    if (v == 0 && code != 0 && code != (1u << (s.total - 1))) continue;
    ASSERT_EQ(reference_encode(s, v, false), code) << std::hex << code;
  }
}

INSTANTIATE_TEST_SUITE_P(Ocp, NarrowFormat, ::testing::Values(&kE4m3, &kE5m2, &kE2m1),
                         [](const auto& info) {
                           return info.param == &kE4m3 ? std::string("E4M3")
                                  : info.param == &kE5m2 ? std::string("E5M2") : std::string("E2M1");
                         });

// --- hand-computed cases from the specifications -------------------------------------

TEST(Fp8E4m3, HandComputedValues) {
  EXPECT_EQ(fp8_e4m3_value(0x7E), 448.0f);        // S.1111.110: 2^8 x 1.75
  EXPECT_EQ(fp8_e4m3_value(0x08), 0x1p-6f);       // smallest normal
  EXPECT_EQ(fp8_e4m3_value(0x01), 0x1p-9f);       // smallest subnormal
  EXPECT_EQ(fp8_e4m3_value(0x07), 0.875f * 0x1p-6f);
  EXPECT_EQ(fp8_e4m3_value(0x38), 1.0f);
  EXPECT_EQ(fp8_e4m3_value(0xB8), -1.0f);
  EXPECT_TRUE(std::isnan(fp8_e4m3_value(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_value(0xFF)));
  EXPECT_EQ(fp8_e4m3_value(0x78), 256.0f);  // the top exponent is finite but for S.1111.111
  EXPECT_EQ(bits(fp8_e4m3_value(0x80)), 0x80000000u);
}

TEST(Fp8E4m3, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(to_fp8_e4m3(1.0625f), 0x38);   // tie between 1 and 1.125: even is 1
  EXPECT_EQ(to_fp8_e4m3(1.1875f), 0x3A);   // tie between 1.125 and 1.25: even is 1.25
  EXPECT_EQ(to_fp8_e4m3(464.0f), 0x7E);    // tie between 448 and 480 (not encodable): even 448
  EXPECT_EQ(to_fp8_e4m3(465.0f), 0x7E);    // saturates
  EXPECT_EQ(to_fp8_e4m3(465.0f, Overflow::NonSaturate), 0x7F);  // NaN: E4M3 has no infinity
  EXPECT_EQ(to_fp8_e4m3(-1e9f), 0xFE);
  EXPECT_EQ(to_fp8_e4m3(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(to_fp8_e4m3(-std::numeric_limits<float>::infinity(), Overflow::NonSaturate), 0xFF);
  EXPECT_EQ(to_fp8_e4m3(0x1p-10f), 0x00);  // half the smallest subnormal: a tie, to even 0
  EXPECT_EQ(to_fp8_e4m3(0x1.8p-10f), 0x01);
  EXPECT_EQ(to_fp8_e4m3(-0x1p-12f), 0x80);  // underflow keeps the sign
  EXPECT_EQ(to_fp8_e4m3(std::numeric_limits<float>::quiet_NaN()), kE4m3Nan);
}

TEST(Fp8E5m2, HandComputedValuesAndRounding) {
  EXPECT_EQ(fp8_e5m2_value(0x7B), 57344.0f);  // S.11110.11
  EXPECT_EQ(fp8_e5m2_value(0x01), 0x1p-16f);
  EXPECT_EQ(fp8_e5m2_value(0x04), 0x1p-14f);
  EXPECT_EQ(fp8_e5m2_value(0x7C), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp8_e5m2_value(0xFC), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp8_e5m2_value(0x7D)));
  // 61440 is the tie between 57344 (mantissa 11, odd) and 2^16 (infinity).
  EXPECT_EQ(to_fp8_e5m2(61440.0f, Overflow::NonSaturate), 0x7C);
  EXPECT_EQ(to_fp8_e5m2(61439.0f, Overflow::NonSaturate), 0x7B);
  EXPECT_EQ(to_fp8_e5m2(61440.0f), 0x7B);  // saturating
  EXPECT_EQ(to_fp8_e5m2(std::numeric_limits<float>::infinity(), Overflow::NonSaturate), 0x7C);
  EXPECT_EQ(to_fp8_e5m2(std::numeric_limits<float>::infinity()), 0x7B);
  EXPECT_EQ(to_fp8_e5m2(1.125f), 0x3C);  // tie between 1 and 1.25: even 1
  EXPECT_EQ(to_fp8_e5m2(-std::numeric_limits<float>::quiet_NaN()), 0x80 | kE5m2Nan);
}

TEST(Fp4E2m1, ValuesAndRounding) {
  const float expect[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(fp4_e2m1_value(static_cast<std::uint8_t>(i)), expect[i]);
    EXPECT_EQ(fp4_e2m1_value(static_cast<std::uint8_t>(i | 8)), -expect[i]);
  }
  EXPECT_EQ(to_fp4_e2m1(5.0f), 0x6);   // tie between 4 and 6: even 4
  EXPECT_EQ(to_fp4_e2m1(5.01f), 0x7);
  EXPECT_EQ(to_fp4_e2m1(100.0f), 0x7);  // saturates: no infinity
  EXPECT_EQ(to_fp4_e2m1(-0.25f), 0x8);  // tie between 0 and 0.5: -0
  EXPECT_EQ(to_fp4_e2m1(2.5f), 0x4);    // tie between 2 and 3: even 2
}

TEST(E8m0, Values) {
  EXPECT_EQ(e8m0_value(127), 1.0);
  EXPECT_EQ(e8m0_value(0), 0x1p-127);
  EXPECT_EQ(e8m0_value(254), 0x1p127);
  EXPECT_TRUE(std::isnan(e8m0_value(0xFF)));
}

TEST(Mx, ScaleIsTheLargestExponentLessTheElementsEmax) {
  // amax 6.0 = 1.5 x 2^2: E4M3 (emax 8) gives 2^(2 - 8), E2M1 (emax 2) 2^0.
  std::vector<float> block(32, 0.25f);
  block[17] = -6.0f;
  EXPECT_EQ(mx_scale_of(block.data(), block.size(), ElementFormat::Fp8E4m3), 127 + 2 - 8);
  EXPECT_EQ(mx_scale_of(block.data(), block.size(), ElementFormat::Fp8E5m2), 127 + 2 - 15);
  EXPECT_EQ(mx_scale_of(block.data(), block.size(), ElementFormat::Fp4E2m1), 127);
  const std::uint8_t s = mx_scale_of(block.data(), block.size(), ElementFormat::Fp8E4m3);
  // -6 / 2^-6 = -384: exact in E4M3 (1.5 x 2^8); 0.25 / 2^-6 = 16.
  EXPECT_EQ(fp8_e4m3_value(mx_quantize(-6.0f, s, ElementFormat::Fp8E4m3)), -384.0f);
  EXPECT_EQ(mx_value(ElementFormat::Fp8E4m3, mx_quantize(0.25f, s, ElementFormat::Fp8E4m3), s), 0.25);
  // The largest element never saturates: its binade is emax's.
  EXPECT_EQ(mx_value(ElementFormat::Fp4E2m1, mx_quantize(-6.0f, 127, ElementFormat::Fp4E2m1), 127), -6.0);
  // 7 x 2^0 with E2M1 saturates to 6.
  EXPECT_EQ(mx_quantize(7.0f, 127, ElementFormat::Fp4E2m1), 0x7);
  block[3] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(mx_scale_of(block.data(), block.size(), ElementFormat::Fp8E4m3), kE8m0Nan);
  const std::vector<float> zeros(32, 0.0f);
  EXPECT_EQ(mx_scale_of(zeros.data(), zeros.size(), ElementFormat::Fp8E4m3), 0);
}

TEST(Mx, ScalePartitionsFollowTheQuadrantLayout) {
  EXPECT_EQ(mx_scale_partition(0), 0u);
  EXPECT_EQ(mx_scale_partition(7), 0u);
  EXPECT_EQ(mx_scale_partition(8), 1u);
  EXPECT_EQ(mx_scale_partition(31), 3u);
  EXPECT_EQ(mx_scale_partition(32), 32u);
  EXPECT_EQ(mx_scale_partition(127), 99u);
  EXPECT_EQ(mx_scale_partitions(8), 1u);
  EXPECT_EQ(mx_scale_partitions(32), 4u);
  EXPECT_EQ(mx_scale_partitions(128), 100u);
}

// --- products --------------------------------------------------------------------------

TEST(Fp32Mul, RoundsOnceToNearestEven) {
  // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46: rounds to 1 + 2^-22.
  EXPECT_EQ(bits(fp32_mul(f32(0x3F800001u), f32(0x3F800001u))), 0x3F800002u);
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: a tie, to the even 1 + 2^-11.
  EXPECT_EQ(bits(fp32_mul(1.0f + 0x1p-12f, 1.0f + 0x1p-12f)), bits(1.0f + 0x1p-11f));
  // (1 + 2^-23)(1 - 2^-24) = 1 + 2^-24 - 2^-47: below the tie, rounds to 1.
  EXPECT_EQ(bits(fp32_mul(f32(0x3F800001u), f32(0x3F7FFFFFu))), bits(1.0f));
  // Overflow and the exact-value tininess rule.
  EXPECT_EQ(bits(fp32_mul(0x1p100f, 0x1p100f)), 0x7F800000u);
  EXPECT_EQ(bits(fp32_mul(-0x1p-63f, 0x1p-64f)), 0x80000000u);
  // 2^-126 (1 - 2^-24) exactly: below the smallest normal although it would round up to it.
  EXPECT_EQ(bits(fp32_mul(f32(0x3F7FFFFFu), 0x1p-126f * 1.0f)), 0x00000000u);
  EXPECT_EQ(bits(fp32_mul(f32(0x00000001u), 1.0f)), 0x00000000u);  // subnormal input flushed
  EXPECT_EQ(bits(fp32_mul(std::numeric_limits<float>::infinity(), 0.0f)), kFp32CanonicalNan);
}

TEST(NarrowMul, ExactProductsScalesAndSpecials) {
  const auto e4 = ElementFormat::Fp8E4m3, e5 = ElementFormat::Fp8E5m2, f4 = ElementFormat::Fp4E2m1;
  EXPECT_EQ(narrow_mul(e4, 0x7E, e4, 0x7E), 448.0f * 448.0f);
  EXPECT_EQ(narrow_mul(e4, 0x01, e5, 0x01), 0x1p-9f * 0x1p-16f);  // subnormals are values, not flushed
  EXPECT_EQ(narrow_mul(e4, 0x38, f4, 0x7), 6.0f);
  EXPECT_EQ(narrow_mul(e4, 0x38, e4, 0x38, 127 + 127 - 254), 1.0f);
  EXPECT_EQ(narrow_mul(e4, 0x38, e4, 0x38, 127 - 254), 0.0f);  // 2^-127 scaled: tiny, a signed zero
  EXPECT_EQ(bits(narrow_mul(e4, 0xB8, e4, 0x38, 127 - 254)), 0x80000000u);
  EXPECT_EQ(narrow_mul(e4, 0x7E, e4, 0x7E, 254 - 254 + 120), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bits(narrow_mul(e4, 0x7F, e4, 0x38)), kFp32CanonicalNan);
  EXPECT_EQ(bits(narrow_mul(e5, 0x7C, e5, 0x00)), kFp32CanonicalNan);  // inf x 0
  EXPECT_EQ(narrow_mul(e5, 0xFC, e4, 0x38), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(bits(narrow_mul(e4, 0x38, e4, 0x38, 0, true)), kFp32CanonicalNan);  // NaN scale
  EXPECT_EQ(bits(narrow_mul(e4, 0x80, e4, 0x38)), 0x80000000u);
}

TEST(PsumBf16, OverwriteRoundsAndAccumulateAddsInFp32ThenRounds) {
  // 1 + 2^-9 rounds to bf16 1.0 (tie to even at 2^-8 would need more; it is below).
  EXPECT_EQ(psum_bf16_write(Bf16{}, 1.0f + 0x1p-9f, PsumMode::Overwrite).bits, 0x3F80u);
  // Accumulating 2^-9 onto 1.0 eight times in bf16 stays 1.0 each time (no
  // sticky fp32 accumulator behind the bf16 cell).
  Bf16 cell = to_bf16(1.0f);
  for (int i = 0; i < 8; ++i) cell = psum_bf16_write(cell, 0x1p-9f, PsumMode::Accumulate);
  EXPECT_EQ(cell.bits, 0x3F80u);
  // 1.0 + (1 + 2^-7) = 2 + 2^-7: a tie in bf16 (ulp 2^-6 at 2), even is 2.
  EXPECT_EQ(psum_bf16_write(to_bf16(1.0f), 1.0f + 0x1p-7f, PsumMode::Accumulate).bits, 0x4000u);
  EXPECT_EQ(psum_bf16_write(to_bf16(1.0f), std::numeric_limits<float>::quiet_NaN(), PsumMode::Accumulate).bits,
            kBf16CanonicalNan);
}

// --- matmul in every format ------------------------------------------------------------

// The PE chain written out here, element by element, without matmul's vector path.
Fp32Matrix chain(const TensorOperand& st, const TensorOperand& mv) {
  Fp32Matrix out(st.cols, mv.cols);
  for (std::size_t m = 0; m < st.cols; ++m)
    for (std::size_t n = 0; n < mv.cols; ++n) {
      float s = -0.0f;
      for (std::size_t r = 0; r < st.rows; ++r)
        for (int j = 0; j < st.pack; ++j) s = fp32_add(s, pe_product(st, r, m, mv, n, j));
      out.at(m, n) = s;
    }
  return out;
}

TensorOperand random_operand(ElementFormat f, int pack, bool mx, std::size_t rows, std::size_t cols, int kind,
                             std::mt19937& rng) {
  TensorOperand op(f, pack, mx, rows, cols);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (std::size_t i = 0; i < op.words.size(); ++i) {
    std::uint32_t w = 0;
    if (f == ElementFormat::Fp32) {
      float v = g(rng);
      if (kind == 1) v = std::ldexp(v, static_cast<int>(rng() % 120) - 60);
      if (kind == 2 && rng() % 8 == 0) v = f32(static_cast<std::uint32_t>(rng()));  // anything, specials too
      w = bits(v);
    } else if (f == ElementFormat::Bf16) {
      w = to_bf16(g(rng)).bits;
    } else {
      for (int j = 0; j < pack; ++j) {
        std::uint32_t e = kind == 2 ? static_cast<std::uint32_t>(rng()) & 0xFFu
                                    : encode_narrow(f, g(rng) * (f == ElementFormat::Fp4E2m1 ? 2.0f : 8.0f));
        if (f == ElementFormat::Fp4E2m1) e &= 0x0Fu;
        w |= e << (j * bits_of(f));
      }
    }
    op.words[i] = w;
    if (mx) op.scales[i] = static_cast<std::uint8_t>(kind == 1 ? rng() % 256 : 110 + rng() % 30);
  }
  return op;
}

TEST(MatmulFormats, DoubleRowAddsThePairOfEachPeInOrder) {
  // PE row 0 holds the pair (4096, 1), row 1 (-4096, 0): the PE order is
  // r0 j0, r0 j1, r1 j0, r1 j1. With moving ones the sum is exact (1); with
  // moving (4096, 1) and (4096, 0) it is 2^24 + 1 - 2^24, where 2^24 + 1
  // ties to 2^24: 0 in this order, 1 in the order k0, r1 j0, r0 j1 of a
  // plain 2P-row array.
  TensorOperand st(ElementFormat::Fp8E5m2, 2, false, 2, 1), mv(ElementFormat::Fp8E5m2, 2, false, 2, 1);
  const std::uint8_t big = to_fp8_e5m2(4096.0f), one = to_fp8_e5m2(1.0f), nbig = to_fp8_e5m2(-4096.0f);
  st.word(0, 0) = big | (one << 8);
  st.word(1, 0) = nbig;
  mv.word(0, 0) = one | (one << 8);
  mv.word(1, 0) = one;
  Fp32Matrix out(1, 1);
  matmul(st, mv, PsumMode::Overwrite, out);
  EXPECT_EQ(out.at(0, 0), 1.0f);  // 4096 + 1 - 4096, every step exact
  // 2^24 from 4096 x 4096: (2^24 + 1) ties to 2^24, so the PE order gives 0.
  mv.word(0, 0) = big | (one << 8);
  mv.word(1, 0) = big;
  matmul(st, mv, PsumMode::Overwrite, out);
  EXPECT_EQ(out.at(0, 0), 0.0f);
}

TEST(MatmulFormats, EveryModeEqualsThePeChainBitForBit) {
  struct Mode {
    ElementFormat st, mv;
    int pack;
    bool mx;
  };
  const Mode modes[] = {{ElementFormat::Bf16, ElementFormat::Bf16, 1, false},
                        {ElementFormat::Fp32, ElementFormat::Fp32, 1, false},
                        {ElementFormat::Fp8E4m3, ElementFormat::Fp8E4m3, 1, false},
                        {ElementFormat::Fp8E4m3, ElementFormat::Fp8E5m2, 2, false},
                        {ElementFormat::Fp8E5m2, ElementFormat::Fp8E5m2, 2, false},
                        {ElementFormat::Fp8E4m3, ElementFormat::Fp8E4m3, 4, true},
                        {ElementFormat::Fp4E2m1, ElementFormat::Fp8E5m2, 4, true},
                        {ElementFormat::Fp4E2m1, ElementFormat::Fp4E2m1, 4, true}};
  std::mt19937 rng(5);
  for (const Mode& mode : modes)
    for (int kind = 0; kind < 3; ++kind)
      for (int trial = 0; trial < 6; ++trial) {
        const std::size_t rows = 1 + rng() % 40, m = 1 + rng() % 20, n = 1 + rng() % 70;
        const TensorOperand st = random_operand(mode.st, mode.pack, mode.mx, rows, m, kind, rng);
        const TensorOperand mv = random_operand(mode.mv, mode.pack, mode.mx, rows, n, kind, rng);
        Fp32Matrix got(m, n);
        matmul(st, mv, PsumMode::Overwrite, got);
        const Fp32Matrix want = chain(st, mv);
        for (std::size_t i = 0; i < got.data.size(); ++i)
          ASSERT_EQ(bits(got.data[i]), bits(want.data[i]))
              << to_string(mode.st) << " x " << to_string(mode.mv) << " pack " << mode.pack << " kind " << kind
              << " element " << i;
      }
}

TEST(MatmulFormats, Fp32ProductsRoundBeforeTheSum) {
  // 1 x (1 + 2^-23)^2 and -1 - 2^-22: the rounded product is 1 + 2^-22, so
  // the sum is 0; with the exact product (1 + 2^-22 + 2^-46) it would be 2^-46.
  TensorOperand st(ElementFormat::Fp32, 1, false, 2, 1), mv(ElementFormat::Fp32, 1, false, 2, 1);
  st.word(0, 0) = 0x3F800001u;
  mv.word(0, 0) = 0x3F800001u;
  st.word(1, 0) = bits(-1.0f - 0x1p-22f);
  mv.word(1, 0) = bits(1.0f);
  Fp32Matrix out(1, 1);
  matmul(st, mv, PsumMode::Overwrite, out);
  EXPECT_EQ(bits(out.at(0, 0)), 0x00000000u);
}

TEST(MatmulFormats, MxScalesEachProductByBothGroupScales) {
  // One group: 8 rows x 4 elements of 1.0 times 1.0; scales 2^3 and 2^-1:
  // 32 products of 2^2.
  TensorOperand st(ElementFormat::Fp8E4m3, 4, true, 8, 1), mv(ElementFormat::Fp8E4m3, 4, true, 8, 1);
  const std::uint32_t ones = 0x38383838u;
  for (std::size_t r = 0; r < 8; ++r) {
    st.word(r, 0) = ones;
    mv.word(r, 0) = ones;
    st.scales[r] = 130;
    mv.scales[r] = 126;
  }
  Fp32Matrix out(1, 1);
  matmul(st, mv, PsumMode::Overwrite, out);
  EXPECT_EQ(out.at(0, 0), 128.0f);
  mv.scales[3] = kE8m0Nan;
  matmul(st, mv, PsumMode::Overwrite, out);
  EXPECT_EQ(bits(out.at(0, 0)), kFp32CanonicalNan);
}

TEST(MatmulFormats, RejectsIncompatibleOperands) {
  const TensorOperand bf(ElementFormat::Bf16, 1, false, 2, 2), f8(ElementFormat::Fp8E4m3, 1, false, 2, 2);
  const TensorOperand dr(ElementFormat::Fp8E4m3, 2, false, 2, 2), mx(ElementFormat::Fp8E4m3, 4, true, 2, 2);
  const TensorOperand f4(ElementFormat::Fp4E2m1, 1, false, 2, 2);
  EXPECT_TRUE(incompatible(bf, f8).has_value());
  EXPECT_TRUE(incompatible(f8, dr).has_value());
  EXPECT_TRUE(incompatible(dr, mx).has_value());
  EXPECT_TRUE(incompatible(f4, f4).has_value());  // fp4 only as MX
  EXPECT_FALSE(incompatible(dr, dr).has_value());
  EXPECT_FALSE(incompatible(mx, mx).has_value());
  // What is wrong, with both operands named.
  EXPECT_EQ(*incompatible(bf, f8), "formats of different classes (stationary bf16, moving fp8_e4m3)");
  EXPECT_EQ(*incompatible(dr, mx), "different modes (stationary fp8_e4m3 double row, moving MX fp8_e4m3)");
  EXPECT_EQ(*incompatible(f4, f4), "fp4 E2M1 is an MX element format only (stationary fp4_e2m1, moving fp4_e2m1)");
  Fp32Matrix out(2, 2);
  EXPECT_THROW(matmul(bf, f8, PsumMode::Overwrite, out), std::invalid_argument);
}

}  // namespace
}  // namespace tessera::arch
