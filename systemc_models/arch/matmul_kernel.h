// The vector kernel behind arch::matmul's fast path (matmul_kernel.cpp).
// Internal to the numerics reference: callers use arch::matmul.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::arch {

// out[i][j] = sum over r = 0 .. k-1, in that order and first product first,
// of a[r][i] * b[r][j], with fp32 multiply-adds. a is [k][m], b and out are
// [k][n_stride] and [m][n_stride], row-major; n_stride must be a multiple of
// kMatmulColumnMultiple (pad b with zeros). Bit-exact against the reference
// only for inputs whose products are exact normal numbers or zeros; the
// caller checks everything else (numerics.cpp).
void matmul_row_order(const float* a, const float* b, std::size_t k, std::size_t m, std::size_t n_stride,
                      float* out);

// bf16 bits to fp32 with subnormals read as signed zeros (the reference's
// policy); false when any value lies outside the band in which every product
// is an exact normal number or zero (exponent field 0 or 64 .. 190).
bool widen_bf16_in_band(const std::uint16_t* in, float* out, std::size_t count);

// True when some value is a NaN or a nonzero subnormal.
bool any_nan_or_subnormal(const float* p, std::size_t count);

// Two vectors of the widest target (AVX-512: 2 x 16 lanes), so that every
// target's blocks tile the padded columns exactly.
inline constexpr std::size_t kMatmulColumnMultiple = 32;

}  // namespace tessera::arch
