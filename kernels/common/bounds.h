// Numerics helpers the kernel references share: unit roundoff per dtype, the
// compounded-rounding bound gamma_n, an element-by-element check against a
// per-element bound, and reproducible random inputs.
#pragma once

#include "common/kernel.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tessera::kernels {

// Unit roundoff of round-to-nearest in a dtype: 2^-24 for fp32, 2^-8 for
// bf16, 2^-4 for fp8 e4m3, 2^-3 for fp8 e5m2 (half an ulp of 1).
double unit_roundoff(DType t);
// The largest error of rounding a value below the dtype's normal range,
// where the relative bound does not hold: half the fp8 subnormal spacing
// (2^-10 e4m3, 2^-17 e5m2); for bf16 and fp32 the engines' flush of
// subnormals, 2^-126.
double absolute_roundoff(DType t);
// The value a tile of dtype t holds for v: v itself for fp32, else rounded
// to nearest even (fp8 saturating, docs/formats.md).
float held_value(DType t, float v);

// The smallest normal fp32: the engines flush anything below it to zero.
inline constexpr double kMinNormalFp32 = 0x1p-126;

// gamma_n = n u / (1 - n u): the relative error of n compounded roundings of
// unit roundoff u (Higham, Accuracy and Stability of Numerical Algorithms,
// lemma 3.1). Any order of summing n + 1 terms errs by at most gamma_n times
// the sum of their magnitudes.
double gamma(std::int64_t n, double u = 0x1p-24);
// The unit roundoff of rounding with u1 and then with u2 (say an fp32 add
// into a bf16 cell): (1 + u1)(1 + u2) - 1.
inline double rounded_twice(double u1, double u2) { return u1 + u2 + u1 * u2; }

// |got[i] - expect[i]| <= bound[i] for every i. Reports the element with the
// largest error / bound ratio (named by where(i)) and that error and bound.
NumericsCheck check_within(const std::vector<float>& got, const std::vector<double>& expect,
                           const std::vector<double>& bound, const std::function<std::string(std::size_t)>& where);

// check_within one element at a time, for a reference computed row by row:
// no array of the whole output's references and bounds (at large shapes,
// allocating and zeroing those cost more than the arithmetic). Elements
// added in index order give check_within's answer.
class WorstElement {
public:
  // |got - expect| <= bound for element i.
  void add(std::size_t i, float got, double expect, double bound) {
    const double err = std::isnan(got) ? INFINITY : std::fabs(double{got} - expect);
    const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
    if (ratio > ratio_) {
      ratio_ = ratio;
      index_ = i;
      got_ = got;
      expect_ = expect;
      bound_ = bound;
    }
  }
  // The worst element, named by where(i) when it is past its bound; correct
  // when no element was added.
  NumericsCheck result(const std::function<std::string(std::size_t)>& where) const;
  // Takes in the elements `later` saw, all added after this one's: the
  // answer is as if they had been added here, in order.
  void merge(const WorstElement& later) {
    if (later.ratio_ > ratio_) *this = later;
  }

private:
  double ratio_ = -1, expect_ = 0, bound_ = 0;
  float got_ = 0;
  std::size_t index_ = 0;
};

// How many host threads a reference check spreads over: the CPUs the
// process may run on (its affinity, as a batch scheduler sets it; else the
// host's cores), or TESSERA_CHECK_THREADS when set (1 runs every check on
// the calling thread).
std::size_t check_threads();

// A reference check over `blocks` independent blocks of the output (rows of
// C, blocks of tokens or pixels or queries): check(first, last, worst) adds
// the elements of blocks [first, last) to `worst`, in block order, with
// scratch storage of its own. The blocks are split into contiguous ranges,
// one per thread (check_threads()), and their worst elements merged in block
// order, so the answer is the one a single pass over every block gives, bit
// for bit; only the wall time changes. An exception from a range is rethrown
// here (the first range's first).
WorstElement worst_over_blocks(std::size_t blocks,
                               const std::function<void(std::size_t first, std::size_t last, WorstElement& worst)>& check);

// n values uniform in [lo, hi], rounded to dtype on the host (held_value)
// so that the reference sees exactly the device's inputs.
std::vector<float> random_values(std::size_t n, float lo, float hi, DType t, std::mt19937_64& rng);

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace tessera::kernels
