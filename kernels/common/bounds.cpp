#include "common/bounds.h"

#include "arch/formats.h"
#include "arch/numerics.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace tessera::kernels {

double unit_roundoff(DType t) {
  switch (t) {
    case DType::Fp32: return std::ldexp(1.0, -24);
    case DType::Bf16: return std::ldexp(1.0, -8);
    case DType::Fp8E4m3: return std::ldexp(1.0, -4);
    case DType::Fp8E5m2: return std::ldexp(1.0, -3);
    default: throw std::invalid_argument(fmt::format("no unit roundoff for {}", to_string(t)));
  }
}

double absolute_roundoff(DType t) {
  switch (t) {
    case DType::Fp32:
    case DType::Bf16: return kMinNormalFp32;
    case DType::Fp8E4m3: return std::ldexp(1.0, -10);
    case DType::Fp8E5m2: return std::ldexp(1.0, -17);
    default: throw std::invalid_argument(fmt::format("no absolute roundoff for {}", to_string(t)));
  }
}

float held_value(DType t, float v) {
  switch (t) {
    case DType::Bf16: return arch::to_float(arch::to_bf16(v));
    case DType::Fp8E4m3: return arch::fp8_e4m3_value(arch::to_fp8_e4m3(v));
    case DType::Fp8E5m2: return arch::fp8_e5m2_value(arch::to_fp8_e5m2(v));
    default: return v;
  }
}

double gamma(std::int64_t n, double u) {
  const double nu = static_cast<double>(n) * u;
  return nu < 1 ? nu / (1 - nu) : INFINITY;
}

NumericsCheck check_within(const std::vector<float>& got, const std::vector<double>& expect,
                           const std::vector<double>& bound, const std::function<std::string(std::size_t)>& where) {
  if (got.size() != expect.size() || bound.size() != expect.size()) {
    NumericsCheck c;
    c.detail = fmt::format("{} results for {} expected", got.size(), expect.size());
    return c;
  }
  WorstElement worst;
  for (std::size_t i = 0; i < got.size(); ++i) worst.add(i, got[i], expect[i], bound[i]);
  return worst.result(where);
}

NumericsCheck WorstElement::result(const std::function<std::string(std::size_t)>& where) const {
  NumericsCheck c;
  if (ratio_ < 0) {
    c.correct = true;
    return c;
  }
  c.max_abs_error = std::isnan(got_) ? INFINITY : std::fabs(double{got_} - expect_);
  c.tolerance = bound_;
  c.correct = ratio_ <= 1.0;
  if (!c.correct) c.detail = fmt::format("{} = {}, reference {}, bound {:.3g}", where(index_), got_, expect_, bound_);
  return c;
}

std::vector<float> random_values(std::size_t n, float lo, float hi, DType t, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = dist(rng);
    x = held_value(t, x);
  }
  return v;
}

}  // namespace tessera::kernels
