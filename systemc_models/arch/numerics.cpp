#include "arch/numerics.h"

#include "arch/matmul_kernel.h"

#include <algorithm>

#include <cmath>
#include <vector>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace tessera::arch {

float bf16_mul(Bf16 a, Bf16 b) {
  const float x = flush_subnormal(to_float(a));
  const float y = flush_subnormal(to_float(b));
  if (std::isnan(x) || std::isnan(y)) return fp32_from_bits(kFp32CanonicalNan);
  if ((std::isinf(x) && y == 0.0f) || (std::isinf(y) && x == 0.0f))
    return fp32_from_bits(kFp32CanonicalNan);
  // 8 x 8 significand bits: exact in double at any exponent, so the tininess
  // test sees the exact product, and the narrowing is exact or overflows.
  const double p = static_cast<double>(x) * static_cast<double>(y);
  if (p != 0.0 && std::fabs(p) < static_cast<double>(kFp32SmallestNormal))
    return std::copysign(0.0f, static_cast<float>(p));
  return static_cast<float>(p);
}

float dot_rows(const Bf16* a, std::size_t a_stride, const Bf16* b, std::size_t b_stride,
               std::size_t k) {
  if (k == 0) throw std::invalid_argument("dot_rows: K must be at least 1");
  float sum = bf16_mul(a[0], b[0]);
  for (std::size_t i = 1; i < k; ++i) sum = fp32_add(sum, bf16_mul(a[i * a_stride], b[i * b_stride]));
  return sum;
}

float fp32_mul(float a, float b) {
  const float x = flush_subnormal(a);
  const float y = flush_subnormal(b);
  if (std::isnan(x) || std::isnan(y)) return fp32_from_bits(kFp32CanonicalNan);
  if ((std::isinf(x) && y == 0.0f) || (std::isinf(y) && x == 0.0f)) return fp32_from_bits(kFp32CanonicalNan);
  // 24 x 24 significand bits: exact in double, so the tininess test sees the
  // exact product and the narrowing is the one rounding (or the overflow).
  const double p = static_cast<double>(x) * static_cast<double>(y);
  if (p != 0.0 && std::fabs(p) < static_cast<double>(kFp32SmallestNormal)) return std::copysign(0.0f, static_cast<float>(p));
  return static_cast<float>(p);
}

namespace {

// Every narrow encoding's value, so that products need no decoding.
struct NarrowTables {
  float e4m3[256], e5m2[256], e2m1[16];
  NarrowTables() {
    for (int i = 0; i < 256; ++i) {
      e4m3[i] = fp8_e4m3_value(static_cast<std::uint8_t>(i));
      e5m2[i] = fp8_e5m2_value(static_cast<std::uint8_t>(i));
    }
    for (int i = 0; i < 16; ++i) e2m1[i] = fp4_e2m1_value(static_cast<std::uint8_t>(i));
  }
  float operator()(ElementFormat f, std::uint8_t bits) const {
    switch (f) {
      case ElementFormat::Fp8E4m3: return e4m3[bits];
      case ElementFormat::Fp8E5m2: return e5m2[bits];
      case ElementFormat::Fp4E2m1: return e2m1[bits & 0x0F];
      default: throw std::invalid_argument(std::string("not a narrow format: ") + to_string(f));
    }
  }
};

const NarrowTables& narrow_tables() {
  static const NarrowTables t;
  return t;
}

enum class FormatClass { Bf16, Fp32, Narrow };

FormatClass class_of(ElementFormat f) {
  if (f == ElementFormat::Bf16) return FormatClass::Bf16;
  if (f == ElementFormat::Fp32) return FormatClass::Fp32;
  return FormatClass::Narrow;
}

}  // namespace

float narrow_mul(ElementFormat fa, std::uint8_t a, ElementFormat fb, std::uint8_t b, int scale_exp, bool scale_nan) {
  const NarrowTables& t = narrow_tables();
  const float x = t(fa, a), y = t(fb, b);
  if (scale_nan || std::isnan(x) || std::isnan(y)) return fp32_from_bits(kFp32CanonicalNan);
  if ((std::isinf(x) && y == 0.0f) || (std::isinf(y) && x == 0.0f)) return fp32_from_bits(kFp32CanonicalNan);
  // At most 4 x 4 significand bits, exponents within +-40, scales within
  // +-254: exact in double, and so is the scaling.
  const double p = std::ldexp(static_cast<double>(x) * static_cast<double>(y), scale_exp);
  if (std::isinf(p)) return static_cast<float>(p);
  if (p != 0.0 && std::fabs(p) < static_cast<double>(kFp32SmallestNormal)) return std::copysign(0.0f, static_cast<float>(p));
  if (std::fabs(p) >= 0x1p128) return std::copysign(std::numeric_limits<float>::infinity(), static_cast<float>(p));
  return static_cast<float>(p);  // at most 8 significant bits: exact
}

std::uint32_t TensorOperand::element(std::size_t r, std::size_t c, int j) const {
  const int w = bits_of(format);
  const std::uint32_t v = word(r, c);
  if (w == 32) return v;
  return (v >> (j * w)) & ((1u << w) - 1);
}

TensorOperand to_operand(const Bf16Matrix& m) {
  TensorOperand op(ElementFormat::Bf16, 1, false, m.rows, m.cols);
  for (std::size_t i = 0; i < m.data.size(); ++i) op.words[i] = m.data[i].bits;
  return op;
}

std::optional<std::string> incompatible(const TensorOperand& st, const TensorOperand& mv) {
  const auto describe = [](const TensorOperand& o) {
    std::string s = to_string(o.format);
    if (o.mx) s = "MX " + s;
    if (o.pack == 2) s += " double row";
    return s;
  };
  // Spelled out only when something is wrong: every matmul asks.
  const auto both = [&] { return "stationary " + describe(st) + ", moving " + describe(mv); };
  if (class_of(st.format) != class_of(mv.format)) return "formats of different classes (" + both() + ")";
  if (st.pack != mv.pack || st.mx != mv.mx) return "different modes (" + both() + ")";
  const FormatClass c = class_of(st.format);
  if (c != FormatClass::Narrow && (st.pack != 1 || st.mx)) return describe(st) + " is not a mode of the engine";
  if (c == FormatClass::Narrow) {
    if (st.mx && st.pack != kMxQuad) return "MX operands take quads (pack 4), not pack " + std::to_string(st.pack);
    if (!st.mx && st.pack != 1 && st.pack != 2)
      return "fp8 operands take pack 1 or 2 (double row), not " + std::to_string(st.pack);
    const bool fp4 = st.format == ElementFormat::Fp4E2m1 || mv.format == ElementFormat::Fp4E2m1;
    if (fp4 && !st.mx) return "fp4 E2M1 is an MX element format only (" + both() + ")";
  }
  return std::nullopt;
}

float pe_product(const TensorOperand& st, std::size_t r, std::size_t m, const TensorOperand& mv, std::size_t n,
                 int j) {
  switch (class_of(st.format)) {
    case FormatClass::Bf16:
      return bf16_mul(Bf16::from_bits(static_cast<std::uint16_t>(st.word(r, m))),
                      Bf16::from_bits(static_cast<std::uint16_t>(mv.word(r, n))));
    case FormatClass::Fp32: return fp32_mul(fp32_from_bits(st.word(r, m)), fp32_from_bits(mv.word(r, n)));
    case FormatClass::Narrow: break;
  }
  int scale_exp = 0;
  bool scale_nan = false;
  if (st.mx) {
    const std::uint8_t sa = st.scale(r, m), sb = mv.scale(r, n);
    scale_nan = sa == kE8m0Nan || sb == kE8m0Nan;
    scale_exp = static_cast<int>(sa) + static_cast<int>(sb) - 254;
  }
  return narrow_mul(st.format, static_cast<std::uint8_t>(st.element(r, m, j)), mv.format,
                    static_cast<std::uint8_t>(mv.element(r, n, j)), scale_exp, scale_nan);
}

Bf16 psum_bf16_write(Bf16 cell, float result, PsumMode mode) {
  if (mode == PsumMode::Overwrite) return to_bf16(result);
  return to_bf16(fp32_add(to_float(cell), result));
}

namespace {

// An operand widened to fp32, one row per contraction row (r, j) in the
// reference's order, `stride` values per row (the tail zeros): element j of
// word (r, c) at [r * pack + j][c], an MX element prescaled by its scale.
// Every value must be zero, a flushed subnormal (bf16, fp32) or a normal
// whose products with any other such value stay exact normals for the
// narrow and bf16 formats, normal for fp32: |x| in [2^-63, 2^64). False
// (leaving `out` unspecified) when one is not; the caller then computes
// exactly.
bool widen_in_band(const TensorOperand& op, float* out, std::size_t stride) {
  const std::size_t rows = op.rows, cols = op.cols;
  const auto pad = [&](std::size_t row) { std::fill(out + row * stride + cols, out + (row + 1) * stride, 0.0f); };
  switch (class_of(op.format)) {
    case FormatClass::Bf16:
      for (std::size_t r = 0; r < rows; ++r) {
        if (!widen_bf16_words_in_band(&op.words[r * cols], out + r * stride, cols)) return false;
        pad(r);
      }
      return true;
    case FormatClass::Fp32:
      for (std::size_t r = 0; r < rows; ++r) {
        if (!widen_fp32_words_in_band(&op.words[r * cols], out + r * stride, cols)) return false;
        pad(r);
      }
      return true;
    case FormatClass::Narrow: break;
  }
  const NarrowTables& t = narrow_tables();
  const int pack = op.pack;
  for (std::size_t r = 0; r < rows; ++r)
    for (int j = 0; j < pack; ++j) {
      const std::size_t row = r * static_cast<std::size_t>(pack) + static_cast<std::size_t>(j);
      float* o = out + row * stride;
      for (std::size_t c = 0; c < cols; ++c) {
        double v = t(op.format, static_cast<std::uint8_t>(op.element(r, c, j)));
        if (op.mx) {
          const std::uint8_t s = op.scale(r, c);
          if (s == kE8m0Nan) return false;
          v = std::ldexp(v, static_cast<int>(s) - 127);  // exact in double
        }
        const double a = std::fabs(v);
        if (v != 0.0 && !(a >= 0x1p-63 && a < 0x1p64)) return false;
        o[c] = static_cast<float>(v);  // exact inside the band
      }
      pad(row);
    }
  return true;
}

// matmul with the machine's own fp32 arithmetic, in the reference's order
// (matmul_kernel.cpp). For exact products (bf16, fp8, fp4) it uses fused
// multiply-adds, which then round as the reference's additions do; for fp32
// a rounded multiply and a rounded add, the reference's two roundings. It
// equals the reference whenever every product is a normal number or zero,
// every partial sum fed to the next addition is normal or zero and no NaN
// arises. Inputs in the band (widen_in_band) give such products; the x86
// flags catch a NaN made on the way (invalid: inf - inf after an overflow)
// and a subnormal partial sum fed to the next addition (denormal operand,
// which FMA raises for its addend too); results are screened last for a
// subnormal or NaN. Returns false, leaving dst unspecified, when any check
// fails: the caller then computes the tile exactly. Infinities from
// overflowing sums match the reference as they are.
bool matmul_native(const TensorOperand& st, const TensorOperand& mv, PsumMode mode, Fp32Matrix& dst) {
#if defined(__SSE__)
  const std::size_t k = st.contraction(), m = st.cols, n = mv.cols;
  if (mode == PsumMode::Accumulate)
    for (const float v : dst.data)
      if (!std::isfinite(v) || (v != 0.0f && std::fabs(v) < kFp32SmallestNormal)) return false;
  // Scratch reused across calls: a matmul per instruction must not allocate.
  thread_local std::vector<float> a, b, out;
  const std::size_t stride = (n + kMatmulColumnMultiple - 1) / kMatmulColumnMultiple * kMatmulColumnMultiple;
  a.resize(k * m);
  b.resize(k * stride);
  if (!widen_in_band(st, a.data(), m) || !widen_in_band(mv, b.data(), stride)) return false;
  // Results straight into dst when its rows need no padding.
  const bool direct = mode == PsumMode::Overwrite && stride == n;
  if (!direct) out.resize(m * stride);
  constexpr unsigned kInvalid = 0x1, kDenormalOperand = 0x2;
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr & ~0x3Fu);  // clear the sticky exception flags
  const bool fused = class_of(st.format) != FormatClass::Fp32;
  matmul_row_order(a.data(), b.data(), k, m, stride, direct ? dst.data.data() : out.data(), fused);
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

void matmul(const TensorOperand& stationary, const TensorOperand& moving, PsumMode mode, Fp32Matrix& dst) {
  const std::size_t rows = stationary.rows;
  const std::size_t m = stationary.cols;
  const std::size_t n = moving.cols;
  if (rows == 0) throw std::invalid_argument("matmul: K must be at least 1");
  if (moving.rows != rows)
    throw std::invalid_argument("matmul: stationary has " + std::to_string(rows) + " partitions but moving has " +
                                std::to_string(moving.rows));
  if (const auto why = incompatible(stationary, moving)) throw std::invalid_argument("matmul: " + *why);
  if (stationary.words.size() != rows * m || moving.words.size() != rows * n)
    throw std::invalid_argument("matmul: an operand's words do not match its shape");
  if ((stationary.mx && stationary.scales.size() != rows * m) || (moving.mx && moving.scales.size() != rows * n))
    throw std::invalid_argument("matmul: an MX operand needs one scale per word");
  if (dst.rows != m || dst.cols != n)
    throw std::invalid_argument("matmul: dst must be [" + std::to_string(m) + ", " + std::to_string(n) + "]");
  const Fp32Matrix before = mode == PsumMode::Accumulate ? dst : Fp32Matrix();
  if (matmul_native(stationary, moving, mode, dst)) return;
  if (mode == PsumMode::Accumulate) dst = before;
  const int pack = stationary.pack;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      // The first product starts the sum: -0 + p == p for every p.
      float sum = pe_product(stationary, 0, i, moving, j, 0);
      for (int q = 1; q < pack; ++q) sum = fp32_add(sum, pe_product(stationary, 0, i, moving, j, q));
      for (std::size_t r = 1; r < rows; ++r)
        for (int q = 0; q < pack; ++q) sum = fp32_add(sum, pe_product(stationary, r, i, moving, j, q));
      dst.at(i, j) = mode == PsumMode::Accumulate ? fp32_add(dst.at(i, j), sum) : sum;
    }
  }
}

void matmul(const Bf16Matrix& stationary, const Bf16Matrix& moving, PsumMode mode, Fp32Matrix& dst) {
  if (stationary.rows == 0) throw std::invalid_argument("matmul: K must be at least 1");
  matmul(to_operand(stationary), to_operand(moving), mode, dst);
}

}  // namespace tessera::arch
