// The tensor engine's arithmetic, bit for bit: bf16 inputs, the exact bf16 x
// bf16 product, IEEE-754 binary32 round-to-nearest-even addition, and the
// reference matmul that accumulates down the array's rows in its fixed order.
// The RTL tests, the fast tensor model and the kernel references all call this
// code, so that every layer agrees on every bit (ARCHITECTURE.md, Numerics).
//
// Policies (docs/tensor-engine.md, Numerics):
//  - Subnormals are flushed to zero, keeping the sign: on the inputs of every
//    operation (bf16 operands, fp32 addends, the PSUM value being accumulated)
//    and on every result. A product whose exact value lies below the smallest
//    normal (2^-126) is a signed zero; a sum whose exact value lies there is too.
//  - Every NaN result is the canonical quiet NaN 0x7FC00000 (fp32), 0x7FC0 (bf16).
//  - Overflow rounds to infinity (round-to-nearest-even).
#pragma once

#include <cstddef>
#include <cstdint>
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

std::uint32_t fp32_bits(float f);
float fp32_from_bits(std::uint32_t bits);

// fp32 -> bf16, round-to-nearest-even. A NaN keeps its sign and top fraction
// bits and is made quiet; overflow rounds to infinity. Subnormals pass through
// unchanged here (conversion is storage, not arithmetic): the engine flushes
// them when it uses them.
Bf16 to_bf16(float f);
// bf16 -> fp32 is exact (the bf16 bits are the top half of the fp32 bits).
float to_float(Bf16 b);

// Flush a subnormal to a zero of the same sign; every other value unchanged.
float flush_subnormal(float f);

// The engine's product: exact in fp32 for normal results; inputs and results
// flushed as above; inf x 0 and NaN give the canonical NaN.
float bf16_mul(Bf16 a, Bf16 b);

// The engine's fp32 adder (PE accumulation and PSUM accumulate): IEEE-754
// binary32 round-to-nearest-even under the policies above. x + (-x) is +0;
// (-0) + (-0) is -0.
float fp32_add(float a, float b);

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

// dst[M, N] (=|+=) stationary[K, M].T @ moving[K, N], as the tensor engine
// computes it: each dst[m, n] is dot_rows over k = 0..K-1 of stationary[k, m]
// and moving[k, n]; with Accumulate it is then added to the PSUM value already
// in dst with fp32_add (psum + result). dst must be [M, N]; throws
// std::invalid_argument on mismatched shapes or K == 0.
void matmul(const Bf16Matrix& stationary, const Bf16Matrix& moving, PsumMode mode,
            Fp32Matrix& dst);

}  // namespace tessera::arch
