// The vector kernel of arch::matmul's fast path (numerics.cpp): each result is
// the sum of its K products in row order, first product first, as the array
// computes it, register-blocked over several results at once. Compiled once
// per x86 target by Highway (SSSE3 .. AVX-512) and chosen at run time, so the
// shipped build needs no -march flag.
//
// Why MulAdd is exact here: the caller passes only values whose products are
// exact normal fp32 numbers (bf16 x bf16 has a 16-bit significand), so
// fma(a, b, s) = round(a * b + s) = round(p + s), the reference's one rounded
// addition. On targets without FMA, Highway's MulAdd is a multiply and an add,
// which is the same thing for an exact product. What can still differ from
// the reference (a subnormal or NaN partial sum) the caller detects.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "arch/matmul_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "arch/matmul_kernel.h"

#include <cstdint>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace tessera::arch::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kRows results of `a` columns i0 .. i0 + kRows - 1 against two vectors of
// `b` columns from j0: kRows x 2 accumulators live in registers for all K.
template <std::size_t kRows>
HWY_INLINE void Block(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, std::size_t k, std::size_t m,
                      std::size_t n_stride, std::size_t i0, std::size_t j0, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  using V = hn::Vec<decltype(d)>;
  V acc0[kRows], acc1[kRows];
  {
    const V b0 = hn::LoadU(d, b + j0), b1 = hn::LoadU(d, b + j0 + lanes);
    HWY_UNROLL(16)
    for (std::size_t r = 0; r < kRows; ++r) {
      const V ar = hn::Set(d, a[i0 + r]);
      acc0[r] = hn::Mul(ar, b0);  // the first product, not 0 + p: -0 stays -0
      acc1[r] = hn::Mul(ar, b1);
    }
  }
  for (std::size_t row = 1; row < k; ++row) {
    const float* br = b + row * n_stride + j0;
    const float* ar = a + row * m + i0;
    const V b0 = hn::LoadU(d, br), b1 = hn::LoadU(d, br + lanes);
    HWY_UNROLL(16)
    for (std::size_t r = 0; r < kRows; ++r) {
      const V av = hn::Set(d, ar[r]);
      acc0[r] = hn::MulAdd(av, b0, acc0[r]);
      acc1[r] = hn::MulAdd(av, b1, acc1[r]);
    }
  }
  HWY_UNROLL(16)
  for (std::size_t r = 0; r < kRows; ++r) {
    hn::StoreU(acc0[r], d, out + (i0 + r) * n_stride + j0);
    hn::StoreU(acc1[r], d, out + (i0 + r) * n_stride + j0 + lanes);
  }
}

void MatmulRowOrder(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, std::size_t k, std::size_t m,
                    std::size_t n_stride, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const std::size_t step = 2 * hn::Lanes(d);
  // Accumulators that fit the register file with the two B vectors and a
  // broadcast: 8 x 2 of 32 zmm registers (AVX-512), 6 x 2 of 16 elsewhere.
  constexpr std::size_t kRows = HWY_MAX_BYTES >= 64 ? 8 : 6;
  for (std::size_t j0 = 0; j0 < n_stride; j0 += step) {
    std::size_t i0 = 0;
    for (; i0 + kRows <= m; i0 += kRows) Block<kRows>(a, b, k, m, n_stride, i0, j0, out);
    // The rest (fewer than 8) in blocks of 4, 2, 1: a lone row is latency-bound.
    if (i0 + 4 <= m) Block<4>(a, b, k, m, n_stride, i0, j0, out), i0 += 4;
    if (i0 + 2 <= m) Block<2>(a, b, k, m, n_stride, i0, j0, out), i0 += 2;
    if (i0 < m) Block<1>(a, b, k, m, n_stride, i0, j0, out);
  }
}

// bf16 bits to fp32, subnormals as signed zeros; returns false when any
// value is outside the band in which products stay exact normals (exponent
// field 0 or 64 .. 190, see numerics.cpp).
bool WidenBf16(const std::uint16_t* HWY_RESTRICT in, float* HWY_RESTRICT out, std::size_t count) {
  const hn::ScalableTag<std::uint32_t> du;
  const hn::Rebind<std::uint16_t, decltype(du)> d16;
  const hn::Rebind<float, decltype(du)> df;
  const std::size_t lanes = hn::Lanes(du);
  auto outside = hn::FirstN(du, 0);
  std::size_t i = 0;
  const auto widen = [&](hn::Vec<decltype(du)> bits) {
    const auto e = hn::And(hn::ShiftRight<7>(bits), hn::Set(du, 0xFFu));
    const auto zero_e = hn::Eq(e, hn::Zero(du));
    outside = hn::Or(outside, hn::AndNot(zero_e, hn::Gt(hn::Sub(e, hn::Set(du, 64u)), hn::Set(du, 126u))));
    const auto kept = hn::IfThenElse(zero_e, hn::And(bits, hn::Set(du, 0x8000u)), bits);
    return hn::BitCast(df, hn::ShiftLeft<16>(kept));
  };
  for (; i + lanes <= count; i += lanes) hn::StoreU(widen(hn::PromoteTo(du, hn::LoadU(d16, in + i))), df, out + i);
  bool ok = hn::AllFalse(du, outside);
  for (; i < count; ++i) {
    const std::uint32_t bits = in[i], e = (bits >> 7) & 0xFFu;
    ok = ok && !(e != 0 && e - 64u > 126u);
    const std::uint32_t kept = (bits & (e == 0 ? 0x8000u : 0xFFFFu)) << 16;
    std::memcpy(out + i, &kept, sizeof kept);
  }
  return ok;
}

// True when some value is a NaN or a nonzero subnormal: results the
// reference would have made otherwise.
bool AnyNanOrSubnormal(const float* HWY_RESTRICT p, std::size_t count) {
  const hn::ScalableTag<std::uint32_t> du;
  const hn::Rebind<float, decltype(du)> df;
  const std::size_t lanes = hn::Lanes(du);
  auto bad = hn::FirstN(du, 0);
  std::size_t i = 0;
  const auto mag_max = hn::Set(du, 0x7F800000u), min_normal = hn::Set(du, 0x00800000u);
  for (; i + lanes <= count; i += lanes) {
    const auto mag = hn::And(hn::BitCast(du, hn::LoadU(df, p + i)), hn::Set(du, 0x7FFFFFFFu));
    const auto subnormal = hn::AndNot(hn::Eq(mag, hn::Zero(du)), hn::Lt(mag, min_normal));
    bad = hn::Or(bad, hn::Or(subnormal, hn::Gt(mag, mag_max)));
  }
  bool any = !hn::AllFalse(du, bad);
  for (; i < count; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, p + i, sizeof bits);
    const std::uint32_t mag = bits & 0x7FFFFFFFu;
    any = any || mag > 0x7F800000u || (mag != 0 && mag < 0x00800000u);
  }
  return any;
}

}  // namespace tessera::arch::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::arch {

HWY_EXPORT(MatmulRowOrder);
HWY_EXPORT(WidenBf16);
HWY_EXPORT(AnyNanOrSubnormal);

void matmul_row_order(const float* a, const float* b, std::size_t k, std::size_t m, std::size_t n_stride,
                      float* out) {
  HWY_DYNAMIC_DISPATCH(MatmulRowOrder)(a, b, k, m, n_stride, out);
}

bool widen_bf16_in_band(const std::uint16_t* in, float* out, std::size_t count) {
  return HWY_DYNAMIC_DISPATCH(WidenBf16)(in, out, count);
}

bool any_nan_or_subnormal(const float* p, std::size_t count) {
  return HWY_DYNAMIC_DISPATCH(AnyNanOrSubnormal)(p, count);
}

}  // namespace tessera::arch
#endif  // HWY_ONCE
