// The vector kernel behind arch::matmul's fast path (matmul_kernel.cpp).
// Internal to the numerics reference: callers use arch::matmul.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::arch {

// out[i][j] = sum over r = 0 .. k-1, in that order and first product first,
// of a[r][i] * b[r][j]: with fp32 fused multiply-adds (`fused`, for exact
// products) or a rounded multiply then a rounded add (fp32 inputs). a is
// [k][m], b and out are [k][n_stride] and [m][n_stride], row-major; n_stride
// must be a multiple of kMatmulColumnMultiple (pad b with zeros). Bit-exact
// against the reference only for inputs whose products are normal numbers
// or zeros (and exact, when fused); the caller checks everything else
// (numerics.cpp).
void matmul_row_order(const float* a, const float* b, std::size_t k, std::size_t m, std::size_t n_stride,
                      float* out, bool fused = true);

// bf16 (the low 16 bits of each word) or fp32 bits to fp32 with subnormals
// read as signed zeros (the reference's policy); false when any value lies
// outside the band in which every product is a normal number or zero
// (exponent field 0 or 64 .. 190): exact for bf16, rounded once for fp32.
bool widen_bf16_words_in_band(const std::uint32_t* in, float* out, std::size_t count);
bool widen_fp32_words_in_band(const std::uint32_t* in, float* out, std::size_t count);

// True when some value is a NaN or a nonzero subnormal.
bool any_nan_or_subnormal(const float* p, std::size_t count);

// Two vectors of the widest target (AVX-512: 2 x 16 lanes), so that every
// target's blocks tile the padded columns exactly.
inline constexpr std::size_t kMatmulColumnMultiple = 32;

}  // namespace tessera::arch
