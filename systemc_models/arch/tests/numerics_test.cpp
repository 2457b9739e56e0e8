#include "arch/numerics.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include <cmath>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>

namespace tessera::arch {
namespace {

Bf16 bf(std::uint16_t bits) { return Bf16::from_bits(bits); }
std::uint32_t bits(float f) { return fp32_bits(f); }
float f32(std::uint32_t b) { return fp32_from_bits(b); }

TEST(Bf16Convert, RoundsToNearestEven) {
  // 1 + 2^-8 is exactly half a bf16 ulp above 1.0: ties to the even 1.0.
  EXPECT_EQ(to_bf16(f32(0x3F808000u)).bits, 0x3F80u);
  // 1 + 3 * 2^-8 is half an ulp above an odd value: rounds up to even.
  EXPECT_EQ(to_bf16(f32(0x3F818000u)).bits, 0x3F82u);
  // Just above the tie rounds up; just below rounds down.
  EXPECT_EQ(to_bf16(f32(0x3F808001u)).bits, 0x3F81u);
  EXPECT_EQ(to_bf16(f32(0x3F807FFFu)).bits, 0x3F80u);
  EXPECT_EQ(to_bf16(-1.0f).bits, 0xBF80u);
}

TEST(Bf16Convert, OverflowRoundsToInfinity) {
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::max()).bits, 0x7F80u);
  EXPECT_EQ(to_bf16(-std::numeric_limits<float>::max()).bits, 0xFF80u);
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::infinity()).bits, 0x7F80u);
}

TEST(Bf16Convert, NanStaysNanAndBecomesQuiet) {
  // A signalling NaN whose payload lives only in the low 16 bits must not
  // become infinity.
  EXPECT_EQ(to_bf16(f32(0x7F800001u)).bits, 0x7FC0u);
  EXPECT_EQ(to_bf16(f32(0xFFC00000u)).bits, 0xFFC0u);
  EXPECT_EQ(to_bf16(f32(0x7FA50000u)).bits, 0x7FE5u);
}

TEST(Bf16Convert, ToFloatIsExactForEveryPattern) {
  for (std::uint32_t b = 0; b <= 0xFFFFu; ++b) {
    const float f = to_float(bf(static_cast<std::uint16_t>(b)));
    ASSERT_EQ(bits(f), b << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(to_bf16(f).bits, b);
    }
  }
}

TEST(Bf16Mul, ProductOfNormalsIsExact) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> frac(0, 127), exp(64, 190), sign(0, 1);
  for (int i = 0; i < 100000; ++i) {
    const auto make = [&] {
      return bf(static_cast<std::uint16_t>((sign(rng) << 15) | (exp(rng) << 7) | frac(rng)));
    };
    const Bf16 a = make(), b = make();
    const double exact = static_cast<double>(to_float(a)) * static_cast<double>(to_float(b));
    ASSERT_EQ(static_cast<double>(bf16_mul(a, b)), exact) << a.bits << " " << b.bits;
  }
}

TEST(Bf16Mul, SubnormalInputsAreFlushedKeepingSign) {
  const Bf16 sub = bf(0x0001u);      // smallest positive bf16 subnormal
  const Bf16 neg_sub = bf(0x807Fu);  // largest negative bf16 subnormal
  const Bf16 big = bf(0x7F00u);      // 2^127
  EXPECT_EQ(bits(bf16_mul(sub, big)), 0x00000000u);
  EXPECT_EQ(bits(bf16_mul(neg_sub, big)), 0x80000000u);
  // inf x flushed subnormal is inf x 0.
  EXPECT_EQ(bits(bf16_mul(sub, bf(0x7F80u))), kFp32CanonicalNan);
}

TEST(Bf16Mul, TinyProductsFlushOnTheExactValue) {
  // 2^-63 x 2^-64 = 2^-127: below the smallest normal, a signed zero.
  EXPECT_EQ(bits(bf16_mul(bf(0x2000u), bf(0x1F80u))), 0x00000000u);
  EXPECT_EQ(bits(bf16_mul(bf(0xA000u), bf(0x1F80u))), 0x80000000u);
  // Just under 2^-126: 2^-64 x (1.9921875 x 2^-63) = 2^-126 - 2^-134.
  EXPECT_EQ(bits(bf16_mul(bf(0x1F80u), bf(0x207Fu))), 0x00000000u);
  // Exactly 2^-126 is normal and kept.
  EXPECT_EQ(bits(bf16_mul(bf(0x1F80u), bf(0x2080u))), 0x00800000u);
}

TEST(Bf16Mul, OverflowGivesSignedInfinity) {
  EXPECT_EQ(bits(bf16_mul(bf(0x7F00u), bf(0x4000u))), 0x7F800000u);  // 2^127 x 2
  EXPECT_EQ(bits(bf16_mul(bf(0x7F7Fu), bf(0xC000u))), 0xFF800000u);
  // Just below the limit stays finite: 2^127 x 1.9921875.
  EXPECT_EQ(bits(bf16_mul(bf(0x7F00u), bf(0x3FFFu))), 0x7F7F0000u);
}

TEST(Bf16Mul, SpecialValues) {
  const Bf16 inf = bf(0x7F80u), ninf = bf(0xFF80u), zero = bf(0), nzero = bf(0x8000u);
  const Bf16 one = bf(0x3F80u), nan = bf(0xFFC1u);
  EXPECT_EQ(bits(bf16_mul(inf, one)), 0x7F800000u);
  EXPECT_EQ(bits(bf16_mul(inf, ninf)), 0xFF800000u);
  EXPECT_EQ(bits(bf16_mul(inf, zero)), kFp32CanonicalNan);
  EXPECT_EQ(bits(bf16_mul(nzero, ninf)), kFp32CanonicalNan);
  EXPECT_EQ(bits(bf16_mul(nan, one)), kFp32CanonicalNan);
  EXPECT_EQ(bits(bf16_mul(zero, nzero)), 0x80000000u);
  EXPECT_EQ(bits(bf16_mul(nzero, nzero)), 0x00000000u);
}

TEST(Fp32Add, SignedZeros) {
  EXPECT_EQ(bits(fp32_add(0.0f, -0.0f)), 0x00000000u);
  EXPECT_EQ(bits(fp32_add(-0.0f, -0.0f)), 0x80000000u);
  EXPECT_EQ(bits(fp32_add(1.5f, -1.5f)), 0x00000000u);
  EXPECT_EQ(bits(fp32_add(-0.0f, 2.0f)), bits(2.0f));
}

TEST(Fp32Add, SubnormalsFlushOnInputAndOutput) {
  const float sub = f32(0x00000005u);
  EXPECT_EQ(bits(fp32_add(sub, 1.0f)), bits(1.0f));
  // Flushed operands keep their sign: +0 + -0 is +0, -0 + -0 is -0.
  EXPECT_EQ(bits(fp32_add(sub, f32(0x80000007u))), 0x00000000u);
  EXPECT_EQ(bits(fp32_add(f32(0x80000001u), f32(0x80000007u))), 0x80000000u);
  // Two normals whose difference is subnormal: the exact result is flushed.
  EXPECT_EQ(bits(fp32_add(f32(0x00800003u), f32(0x80800001u))), 0x00000000u);
  EXPECT_EQ(bits(fp32_add(f32(0x80800003u), f32(0x00800001u))), 0x80000000u);
  // And a difference that stays normal is kept.
  EXPECT_EQ(bits(fp32_add(f32(0x01000003u), f32(0x80800001u))), 0x00800005u);
}

TEST(Fp32Add, InfinitiesAndNans) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bits(fp32_add(inf, -inf)), kFp32CanonicalNan);
  EXPECT_EQ(bits(fp32_add(inf, 1.0f)), 0x7F800000u);
  EXPECT_EQ(bits(fp32_add(-inf, -inf)), 0xFF800000u);
  EXPECT_EQ(bits(fp32_add(f32(0xFFC12345u), 1.0f)), kFp32CanonicalNan);
  EXPECT_EQ(bits(fp32_add(std::numeric_limits<float>::max(), std::numeric_limits<float>::max())),
            0x7F800000u);
}

TEST(Fp32Add, RoundsToNearestEvenOnTies) {
  // 1 + 2^-24 is a tie between 1 and 1 + 2^-23: even is 1.
  EXPECT_EQ(bits(fp32_add(1.0f, f32(0x33800000u))), bits(1.0f));
  // (1 + 2^-23) + 2^-24 ties up to the even 1 + 2^-22.
  EXPECT_EQ(bits(fp32_add(f32(0x3F800001u), f32(0x33800000u))), 0x3F800002u);
}

TEST(DotRows, AccumulatesInRowOrderStartingFromTheFirstProduct) {
  // 2^24 + 1 - 2^24: row order gives (2^24 + 1) = 2^24 (tie to even), then 0.
  // Another order would give 1.
  const Bf16 a[3] = {to_bf16(16777216.0f), to_bf16(1.0f), to_bf16(-16777216.0f)};
  const Bf16 ones[3] = {to_bf16(1.0f), to_bf16(1.0f), to_bf16(1.0f)};
  EXPECT_EQ(dot_rows(a, 1, ones, 1, 3), 0.0f);
  // A single negative-zero product stays -0 (no +0 seed).
  const Bf16 nz[1] = {bf(0x8000u)};
  EXPECT_EQ(bits(dot_rows(nz, 1, ones, 1, 1)), 0x80000000u);
}

TEST(Matmul, MatchesDotRowsPerElementAndAccumulates) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Bf16Matrix st(5, 3), mv(5, 4);
  for (auto& v : st.data) v = to_bf16(dist(rng));
  for (auto& v : mv.data) v = to_bf16(dist(rng));
  Fp32Matrix dst(3, 4);
  matmul(st, mv, PsumMode::Overwrite, dst);
  for (std::size_t m = 0; m < 3; ++m)
    for (std::size_t n = 0; n < 4; ++n) {
      float want = bf16_mul(st.at(0, m), mv.at(0, n));
      for (std::size_t k = 1; k < 5; ++k) want = fp32_add(want, bf16_mul(st.at(k, m), mv.at(k, n)));
      EXPECT_EQ(bits(dst.at(m, n)), bits(want));
    }
  const Fp32Matrix first = dst;
  matmul(st, mv, PsumMode::Accumulate, dst);
  for (std::size_t i = 0; i < dst.data.size(); ++i)
    EXPECT_EQ(bits(dst.data[i]), bits(fp32_add(first.data[i], first.data[i])));
}

TEST(Matmul, RejectsMismatchedShapes) {
  Bf16Matrix st(4, 3), mv(5, 2);
  Fp32Matrix dst(3, 2);
  EXPECT_THROW(matmul(st, mv, PsumMode::Overwrite, dst), std::invalid_argument);
  Bf16Matrix mv4(4, 2);
  Fp32Matrix wrong(2, 3);
  EXPECT_THROW(matmul(st, mv4, PsumMode::Overwrite, wrong), std::invalid_argument);
  Bf16Matrix empty(0, 3), mv0(0, 2);
  EXPECT_THROW(matmul(empty, mv0, PsumMode::Overwrite, dst), std::invalid_argument);
}

}  // namespace
}  // namespace tessera::arch

namespace tessera::arch {
namespace {

// matmul takes the machine's fp32 arithmetic when it provably equals the
// reference; here it is compared, bit for bit, with the element-by-element
// reference on tiles built to hit every edge: ordinary values, values at the
// edges of the safe band, cancellations into the subnormal range, overflow
// to infinity and NaN from inf - inf, specials in the accumulated PSUM.
TEST(Matmul, NativePathEqualsTheReferenceBitForBit) {
  std::mt19937 rng(2024);
  const auto pick = [&](int kind) -> float {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    switch (kind) {
      case 0: return u(rng);
      case 1: return std::ldexp(u(rng), static_cast<int>(rng() % 6) - 66);  // near the band's low edge
      case 2: return std::ldexp(u(rng), 60 + static_cast<int>(rng() % 8));  // near overflow
      default: return std::ldexp(1.0f + static_cast<float>(rng() % 4) / 128.0f, -62) * (rng() % 2 ? 1.0f : -1.0f);
    }
  };
  int native_safe_tiles = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t k = 1 + rng() % 12, m = 1 + rng() % 9, n = 1 + rng() % 17;
    const int kind = trial % 4;
    Bf16Matrix st(k, m), mv(k, n);
    for (auto& v : st.data) v = to_bf16(pick(kind));
    for (auto& v : mv.data) v = to_bf16(pick(kind == 3 ? 3 : (trial % 7 == 0 ? 2 : kind)));
    const PsumMode mode = trial % 3 == 0 ? PsumMode::Accumulate : PsumMode::Overwrite;
    Fp32Matrix got(m, n), expect(m, n);
    for (std::size_t i = 0; i < got.data.size(); ++i) {
      const float init = trial % 11 == 0 && i == 0 ? std::numeric_limits<float>::infinity() : pick(0);
      got.data[i] = expect.data[i] = init;
    }
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        const float r = dot_rows(&st.data[i], m, &mv.data[j], n, k);
        expect.at(i, j) = mode == PsumMode::Accumulate ? fp32_add(expect.at(i, j), r) : r;
      }
    matmul(st, mv, mode, got);
    native_safe_tiles += kind == 0;
    for (std::size_t i = 0; i < got.data.size(); ++i)
      ASSERT_EQ(fp32_bits(got.data[i]), fp32_bits(expect.data[i])) << "trial " << trial << " element " << i;
  }
  EXPECT_EQ(native_safe_tiles, 100);
}

// The vector path at the array's own tile sizes and at sizes that cross its
// register blocks (6 results x 2 vectors), with every kind of input the
// reference treats specially: subnormal inputs (read as signed zeros, which
// the vector path now takes too), values that make a partial sum subnormal or
// overflow, and infinities and NaNs (the exact path). Each tile is compared,
// bit for bit, with dot_rows element by element.
TEST(Matmul, VectorPathEqualsTheReferenceAtTileSizesAndSpecialValues) {
  std::mt19937 rng(77);
  static const std::uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x0040, 0x0080, 0x8080, 0x7F80,
                                           0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x1F80, 0x9F80, 0x5F80, 0xDF00};
  const auto fill = [&](Bf16Matrix& x, int kind) {
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (auto& v : x.data) {
      switch (kind) {
        case 0: v = to_bf16(g(rng)); break;                                                  // ordinary
        case 1: v = rng() % 8 ? to_bf16(g(rng)) : Bf16::from_bits(0x0001 + rng() % 0x7F); break;  // subnormals
        case 2: v = to_bf16(std::ldexp(g(rng), -63)); break;                                 // tiny sums
        case 3: v = to_bf16(std::ldexp(g(rng), 63)); break;                                  // overflowing sums
        default: v = rng() % 16 ? to_bf16(g(rng)) : Bf16::from_bits(specials[rng() % std::size(specials)]);
      }
    }
  };
  struct Shape { std::size_t k, m, n; };
  std::vector<Shape> shapes = {{128, 128, 512}, {128, 128, 1}, {1, 1, 1}, {128, 1, 512}, {64, 13, 33}};
  for (int i = 0; i < 60; ++i) shapes.push_back({1 + rng() % 130, 1 + rng() % 20, 1 + rng() % 70});
  int trial = 0;
  for (const Shape& sh : shapes)
    for (int kind = 0; kind < 5; ++kind, ++trial) {
      Bf16Matrix st(sh.k, sh.m), mv(sh.k, sh.n);
      fill(st, kind);
      fill(mv, kind == 2 || kind == 3 ? 0 : kind);
      const PsumMode mode = trial % 2 ? PsumMode::Accumulate : PsumMode::Overwrite;
      Fp32Matrix got(sh.m, sh.n), expect(sh.m, sh.n);
      std::normal_distribution<float> g(0.0f, 4.0f);
      for (std::size_t i = 0; i < got.data.size(); ++i) got.data[i] = expect.data[i] = g(rng);
      for (std::size_t i = 0; i < sh.m; ++i)
        for (std::size_t j = 0; j < sh.n; ++j) {
          const float r = dot_rows(&st.data[i], sh.m, &mv.data[j], sh.n, sh.k);
          expect.at(i, j) = mode == PsumMode::Accumulate ? fp32_add(expect.at(i, j), r) : r;
        }
      matmul(st, mv, mode, got);
      for (std::size_t i = 0; i < got.data.size(); ++i)
        ASSERT_EQ(fp32_bits(got.data[i]), fp32_bits(expect.data[i]))
            << "k " << sh.k << " m " << sh.m << " n " << sh.n << " kind " << kind << " element " << i;
    }
}

}  // namespace
}  // namespace tessera::arch
