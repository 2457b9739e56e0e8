// The tensor engine's arithmetic, bit for bit: the products of its input
// formats (bf16, fp32, fp8 E4M3 / E5M2, and MX: fp8 or fp4 E2M1 with E8M0
// scales), IEEE-754 binary32 round-to-nearest-even addition, the reference
// matmul that accumulates down the array's rows (and, in double-row and MX
// mode, over the pairs or quads of each PE) in its fixed order, and PSUM's
// bf16 write. The RTL tests, the fast tensor model and the kernel references
// all call this code, so that every layer agrees on every bit
// (ARCHITECTURE.md, Numerics; docs/formats.md derives every rule).
//
// Policies (docs/tensor-engine.md, Numerics; docs/formats.md):
//  - fp32 subnormals are flushed to zero, keeping the sign: on the inputs of
//    every operation (bf16 and fp32 operands, fp32 addends, the PSUM value
//    being accumulated) and on every result. A product whose exact value lies
//    below the smallest normal (2^-126) is a signed zero; a sum whose exact
//    value lies there is too. fp8 and fp4 subnormals are exact values of
//    their formats (their products are fp32 normals), not flushed.
//  - Products of bf16, fp8 and fp4 values are exact; an fp32 x fp32 product
//    is rounded once, to nearest even (docs/formats.md, "Products").
//  - Every NaN result is the canonical quiet NaN 0x7FC00000 (fp32), 0x7FC0 (bf16).
//  - Overflow rounds to infinity (round-to-nearest-even).
#pragma once

#include "arch/formats.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace tessera::arch {

inline constexpr std::uint32_t kFp32CanonicalNan = 0x7FC00000u;
inline constexpr std::uint16_t kBf16CanonicalNan = 0x7FC0u;

// A bf16 value held by its bits: 1 sign, 8 exponent, 7 fraction bits.
struct Bf16 {
  std::uint16_t bits = 0;

  static constexpr Bf16 from_bits(std::uint16_t b) { return Bf16{b}; }
  friend constexpr bool operator==(Bf16 a, Bf16 b) { return a.bits == b.bits; }
  friend constexpr bool operator!=(Bf16 a, Bf16 b) { return a.bits != b.bits; }
};

// Inline, as the few below: the engines call them per element (a PSUM
// accumulate is an fp32_add per value), where a call was 7 % of a with-data GEMM.
inline std::uint32_t fp32_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
inline float fp32_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline constexpr float kFp32SmallestNormal = 1.17549435e-38f;  // 2^-126

// fp32 -> bf16, round-to-nearest-even. A NaN keeps its sign and top fraction
// bits and is made quiet; overflow rounds to infinity. Subnormals pass through
// unchanged here (conversion is storage, not arithmetic): the engine flushes
// them when it uses them.
inline Bf16 to_bf16(float f) {
  const std::uint32_t b = fp32_bits(f);
  if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu))  // a NaN
    return Bf16{static_cast<std::uint16_t>((b >> 16) | 0x0040u)};
  // Round-to-nearest-even on the low 16 bits; a carry out of the fraction
  // correctly bumps the exponent, up to infinity.
  const std::uint32_t rounding = 0x7FFFu + ((b >> 16) & 1u);
  return Bf16{static_cast<std::uint16_t>((b + rounding) >> 16)};
}
// bf16 -> fp32 is exact (the bf16 bits are the top half of the fp32 bits).
inline float to_float(Bf16 b) { return fp32_from_bits(static_cast<std::uint32_t>(b.bits) << 16); }

// Flush a subnormal to a zero of the same sign; every other value unchanged.
inline float flush_subnormal(float f) {
  if (f != 0.0f && std::fabs(f) < kFp32SmallestNormal) return std::copysign(0.0f, f);
  return f;
}

// The engine's product: exact in fp32 for normal results; inputs and results
// flushed as above; inf x 0 and NaN give the canonical NaN.
float bf16_mul(Bf16 a, Bf16 b);

// The engine's fp32 adder (PE accumulation and PSUM accumulate): IEEE-754
// binary32 round-to-nearest-even under the policies above. x + (-x) is +0;
// (-0) + (-0) is -0.
inline float fp32_add(float a, float b) {
  const float x = flush_subnormal(a);
  const float y = flush_subnormal(b);
  // The sum of two normals that lands below 2^-126 is exact (a multiple of
  // 2^-149), so flushing the native result equals flushing the exact sum.
  const float s = x + y;
  if (std::isnan(s)) return fp32_from_bits(kFp32CanonicalNan);
  return flush_subnormal(s);
}

// The value one PE column sends down: the products of rows 0..K-1 summed in
// row order, starting from the first product (sum = p0; sum = sum + p1; ...).
// a and b each hold k values.
float dot_rows(const Bf16* a, std::size_t a_stride, const Bf16* b, std::size_t b_stride,
               std::size_t k);

// A row-major matrix of bf16 values, e.g. a tile [partitions, free].
struct Bf16Matrix {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<Bf16> data;

  Bf16Matrix() = default;
  Bf16Matrix(std::size_t r, std::size_t c) : rows(r), cols(c), data(r * c) {}
  Bf16& at(std::size_t r, std::size_t c) { return data[r * cols + c]; }
  Bf16 at(std::size_t r, std::size_t c) const { return data[r * cols + c]; }
};

// A row-major fp32 tile, e.g. a PSUM tile [partitions, free].
struct Fp32Matrix {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<float> data;

  Fp32Matrix() = default;
  Fp32Matrix(std::size_t r, std::size_t c) : rows(r), cols(c), data(r * c) {}
  float& at(std::size_t r, std::size_t c) { return data[r * cols + c]; }
  float at(std::size_t r, std::size_t c) const { return data[r * cols + c]; }
};

enum class PsumMode { Overwrite, Accumulate };

// The fp32 product of two fp32 values as the engine forms it: inputs
// flushed; the exact product rounded once to nearest even; an exact product
// below 2^-126 is a signed zero; inf x 0 and NaN give the canonical NaN.
float fp32_mul(float a, float b);

// The product of two narrow elements (fp8 E4M3 / E5M2, fp4 E2M1 in the low 4
// bits), each of its own format, times 2^scale_exp (0 outside MX mode; in MX
// mode the sum of both scales' exponents, sa + sb - 254). The product of the
// two elements is exact; scaled, it is exact unless it leaves fp32's normal
// range: below 2^-126 a signed zero, at or above 2^128 infinity. NaN inputs,
// a NaN scale (scale_nan) and inf x 0 give the canonical NaN.
float narrow_mul(ElementFormat fa, std::uint8_t a, ElementFormat fb, std::uint8_t b, int scale_exp = 0,
                 bool scale_nan = false);

// One operand of a tensor-engine instruction as the array takes it: for
// each PE row r (partition) and column c, one 32-bit word holding `pack`
// elements of `format`, element j in bits [j * w, (j + 1) * w) (w =
// bits_of(format)): one element (pack 1), two fp8 (double row: element 0 is
// contraction row r, element 1 row r + rows), or four fp8 / fp4 (MX quad:
// element j is contraction row (r, j)). An MX operand carries, per row and
// column, the E8M0 scale of that row's group (formats.h, mx_scale_partition).
// Words beyond `pack` elements are ignored.
struct TensorOperand {
  ElementFormat format = ElementFormat::Bf16;
  int pack = 1;  // 1, 2 (double row) or 4 (MX)
  bool mx = false;
  std::size_t rows = 0;  // partitions (K / pack)
  std::size_t cols = 0;  // M (stationary) or N (moving)
  std::vector<std::uint32_t> words;  // rows * cols, row-major
  std::vector<std::uint8_t> scales;  // rows * cols when mx

  TensorOperand() = default;
  TensorOperand(ElementFormat f, int p, bool is_mx, std::size_t r, std::size_t c)
      : format(f), pack(p), mx(is_mx), rows(r), cols(c), words(r * c), scales(is_mx ? r * c : 0) {}
  std::uint32_t& word(std::size_t r, std::size_t c) { return words[r * cols + c]; }
  std::uint32_t word(std::size_t r, std::size_t c) const { return words[r * cols + c]; }
  std::uint8_t scale(std::size_t r, std::size_t c) const { return scales[r * cols + c]; }
  // Element j of word (r, c), as bits of `format`.
  std::uint32_t element(std::size_t r, std::size_t c, int j) const;
  // Contraction rows: rows * pack.
  std::size_t contraction() const { return rows * static_cast<std::size_t>(pack); }
};

// A bf16 matrix as a one-element-per-word operand.
TensorOperand to_operand(const Bf16Matrix& m);

// Why two operands cannot be multiplied (formats of different classes,
// packs or MX-ness that differ), or nothing when they can: bf16 x bf16,
// fp32 x fp32, fp8 x fp8 of either format, pack 1 or 2, and MX x MX of fp8
// or fp4 with pack 4.
std::optional<std::string> incompatible(const TensorOperand& stationary, const TensorOperand& moving);

// The engine's product of element j of stationary word (r, m) and of moving
// word (r, n), with the formats' rules above.
float pe_product(const TensorOperand& st, std::size_t r, std::size_t m, const TensorOperand& mv, std::size_t n,
                 int j);

// dst[M, N] (=|+=) stationary[K, M].T @ moving[K, N], as the tensor engine
// computes it: each dst[m, n] is dot_rows over k = 0..K-1 of stationary[k, m]
// and moving[k, n]; with Accumulate it is then added to the PSUM value already
// in dst with fp32_add (psum + result). dst must be [M, N]; throws
// std::invalid_argument on mismatched shapes or K == 0.
void matmul(const Bf16Matrix& stationary, const Bf16Matrix& moving, PsumMode mode,
            Fp32Matrix& dst);

// The same for operands of any format: dst[m, n] is the PE chain of column m
// for moving column n: starting from -0 at the top row, each PE r adds its
// products j = 0 .. pack - 1 in turn, each addition rounded
// (psum = fp32_add(psum, pe_product(...))), so the order is (r0, j0), (r0, j1),
// .., (r1, j0), ... The operands must be compatible (incompatible() empty)
// and have the same rows; throws std::invalid_argument otherwise.
void matmul(const TensorOperand& stationary, const TensorOperand& moving, PsumMode mode, Fp32Matrix& dst);

// PSUM's write of one result into a bf16 cell (NeuronCore-v4, "BF16 Matmul
// Results in PSUM"): overwrite stores to_bf16(result); accumulate widens the
// cell to fp32, adds with fp32_add and rounds the sum to bf16 (nearest even).
Bf16 psum_bf16_write(Bf16 cell, float result, PsumMode mode);

}  // namespace tessera::arch
