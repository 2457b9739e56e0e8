// The narrow number formats of the tensor engine's inputs, bit for bit:
// OCP 8-bit floating point (OFP8: E4M3, E5M2), the OCP Microscaling (MX)
// element format FP4 E2M1 and its shared scale E8M0, and the conversions
// from fp32 (and so from bf16, whose values are fp32 values) into them.
// docs/formats.md derives every rule here from the specifications; the
// kernels, the engines and the RTL tests all use these functions.
//
//  - Encodings (OFP8 rev. 1.0, section 5.1, Table 1; OCP MX v1.0, section 5):
//      E4M3  bias 7,  no infinity, NaN S.1111.111, max 448, min subnormal 2^-9
//      E5M2  bias 15, infinity S.11111.00, NaN S.11111.{01,10,11}, max 57344, min subnormal 2^-16
//      E2M1  bias 1,  no infinity or NaN, max 6, min subnormal 0.5
//      E8M0  2^(e - 127) for e = 0 .. 254; 0xFF is NaN; no zero, no sign
//  - Conversion (OFP8 section 5.2): round to nearest, ties to even, on the
//    exact value; a result beyond the largest finite value saturates to it
//    (Overflow::Saturate) or becomes infinity (E5M2) / NaN (E4M3)
//    (Overflow::NonSaturate); an infinity saturates likewise or stays
//    infinite (E5M2) / becomes NaN (E4M3). NaN converts to NaN: 0x7F (E4M3)
//    and 0x7E (E5M2, the quiet pattern) with the sign kept. E2M1 has neither
//    infinity nor NaN: it always saturates, and a NaN converts to +0 (an MX
//    block holding a NaN carries the NaN in its scale instead).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::arch {

// Element formats of tensor-engine operands. The codes are the RTL's
// (te_pkg::fmt_e): the RTL tests drive every code against this reference.
enum class ElementFormat : std::uint8_t { Bf16 = 0, Fp32 = 1, Fp8E4m3 = 2, Fp8E5m2 = 3, Fp4E2m1 = 4 };
const char* to_string(ElementFormat f);
// Bits of one element: 16, 32, 8, 8, 4.
int bits_of(ElementFormat f);
// True for the formats whose products are exact in fp32 at any exponent the
// format has (fp8, fp4); bf16 products are exact too but may leave fp32's
// range, fp32 products are rounded (docs/formats.md, "Products").
bool is_narrow(ElementFormat f);

enum class Overflow { Saturate, NonSaturate };

inline constexpr std::uint8_t kE4m3Nan = 0x7F;
inline constexpr std::uint8_t kE5m2Nan = 0x7E;
inline constexpr std::uint8_t kE5m2Inf = 0x7C;
inline constexpr std::uint8_t kE8m0Nan = 0xFF;
inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kE5m2Max = 57344.0f;
inline constexpr float kE2m1Max = 6.0f;

// fp32 -> the format, round to nearest even on the exact value (see above).
std::uint8_t to_fp8_e4m3(float x, Overflow o = Overflow::Saturate);
std::uint8_t to_fp8_e5m2(float x, Overflow o = Overflow::Saturate);
std::uint8_t to_fp4_e2m1(float x);  // the low 4 bits

// The exact value of an encoding (fp4: the low 4 bits). Every fp8 and fp4
// value is an fp32 normal number or zero, so these are exact in float.
float fp8_e4m3_value(std::uint8_t bits);
float fp8_e5m2_value(std::uint8_t bits);
float fp4_e2m1_value(std::uint8_t bits);
// 2^(e - 127) (as double: 2^-127 is not an fp32 normal); NaN for 0xFF.
double e8m0_value(std::uint8_t bits);

// The narrow formats through one door: encode rounds as above (Saturate),
// value decodes exactly. Not for Bf16 or Fp32.
std::uint8_t encode_narrow(ElementFormat f, float x, Overflow o = Overflow::Saturate);
float narrow_value(ElementFormat f, std::uint8_t bits);

// The largest finite value and the exponent of the largest binade (emax:
// 8 for E4M3, 15 for E5M2, 2 for E2M1) of a narrow format.
float max_finite(ElementFormat f);
int emax_of(ElementFormat f);

// --- OCP Microscaling (MX) ----------------------------------------------------
// One shared E8M0 scale per block of 32 elements (OCP MX v1.0, section 6.3,
// "conversion to MX"): X = 2^(floor(log2(amax)) - emax_elem), taken from the
// fp32 exponent field of amax and clamped to the E8M0 range (0 .. 254); a
// block holding a NaN or an infinity gets the NaN scale 0xFF. Each element is
// then V / X converted with saturation. This is also the rule of the NKI MX
// golden model (quantize_mx_golden: max exponent of the block minus the
// element format's max exponent, data clipped to the max).
std::uint8_t mx_scale_of(const float* values, std::size_t count, ElementFormat elem);
std::uint8_t mx_quantize(float value, std::uint8_t scale, ElementFormat elem);
// The value an MX element stands for: element value x 2^(scale - 127).
double mx_value(ElementFormat elem, std::uint8_t bits, std::uint8_t scale);

// The tensor engine's MX layout (Trainium3 architecture guide, "Quad-MXFP8/
// MXFP4 Matmul Performance"; NKI MX guide, "Scale Tensor"): a data tile of
// x4 elements [P partitions, F], element j of the quad at partition p being
// contraction row (p, j); a scaling group is 8 partitions x 4 elements; its
// scale sits in the same SBUF quadrant of 32 partitions, 4 scale partitions
// per quadrant: data partition p (counted from the tile's first) reads its
// scale from partition 32 * (p / 32) + (p % 32) / 8 of the scale tile, in the
// same column.
inline constexpr int kMxGroupPartitions = 8;
inline constexpr int kMxQuad = 4;
std::size_t mx_scale_partition(std::size_t data_partition);
// Scale-tile partitions a data tile of `data_partitions` needs.
std::size_t mx_scale_partitions(std::size_t data_partitions);

}  // namespace tessera::arch
