#include "common/kernel.h"

#include "attention/attention.h"
#include "calibration/calibration.h"
#include "conv2d/conv2d.h"
#include "elementwise/elementwise.h"
#include "gemm/gemm.h"
#include "mlp/mlp.h"
#include "norms/norms.h"
#include "reduce/reduce.h"
#include "softmax/softmax.h"
#include "transpose/transpose.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tessera::kernels {

const std::vector<KernelSpec>& registry() {
  static const std::vector<KernelSpec> all = {gemm_spec(),      elementwise_spec(), transpose_spec(), softmax_spec(),
                                               layernorm_spec(), rmsnorm_spec(),     mlp_spec(),       attention_spec(),
                                               conv2d_spec(),    reduce_spec(),      cumsum_spec(),
                                               calib_dma_spec(), calib_matmul_spec(), calib_vector_spec()};
  return all;
}

const KernelSpec* find_kernel(const std::string& name) {
  for (const auto& k : registry())
    if (k.name == name) return &k;
  return nullptr;
}

Shape resolve_shape(const KernelSpec& spec, const Shape& overrides) {
  Shape s;
  for (const auto& p : spec.shape) s[p.name] = p.default_value;
  for (const auto& [k, v] : overrides) {
    if (!s.count(k)) {
      std::string known;
      for (const auto& p : spec.shape) known += (known.empty() ? "" : ", ") + p.name;
      throw KernelError(fmt::format("kernel '{}' has no shape parameter '{}' (it has {})", spec.name, k, known));
    }
    const auto param = std::find_if(spec.shape.begin(), spec.shape.end(), [&](const ShapeParam& p) { return p.name == k; });
    if (v < param->min_value)
      throw KernelError(param->min_value == 1
                            ? fmt::format("kernel '{}': shape {}={} must be positive", spec.name, k, v)
                            : fmt::format("kernel '{}': shape {}={} must be at least {}", spec.name, k, v,
                                          param->min_value));
    s[k] = v;
  }
  // Kernels multiply their dimensions in int64: a shape beyond these could
  // not fit the largest HBM a config may declare anyway (16 TiB).
  constexpr std::int64_t kMaxDimension = std::int64_t{1} << 24, kMaxElements = std::int64_t{1} << 50;
  double elements = 1;
  std::string text;
  for (const auto& [k, v] : s) {
    text += fmt::format("{}{}={}", text.empty() ? "" : ",", k, v);
    if (v > kMaxDimension)
      throw KernelError(fmt::format("kernel '{}': shape {}={} is beyond the largest dimension, {}", spec.name, k, v,
                                    kMaxDimension));
    elements *= static_cast<double>(v);
  }
  if (elements > static_cast<double>(kMaxElements))
    throw KernelError(fmt::format("kernel '{}': shape {} has {:.3g} elements in all, beyond the {:.3g} any HBM could "
                                  "hold", spec.name, text, elements, static_cast<double>(kMaxElements)));
  return s;
}

Shape parse_shape(const std::string& text) {
  Shape s;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw KernelError(fmt::format("--shape: '{}' is not NAME=VALUE", item));
    try {
      std::size_t used = 0;
      const long long v = std::stoll(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1) throw std::invalid_argument("trailing");
      if (!s.emplace(item.substr(0, eq), v).second)
        throw KernelError(fmt::format("--shape: '{}' is given twice", item.substr(0, eq)));
    } catch (const KernelError&) {
      throw;
    } catch (const std::exception&) {
      throw KernelError(fmt::format("--shape: '{}' is not an integer", item.substr(eq + 1)));
    }
    start = end + 1;
  }
  return s;
}

NumericsCheck compare(const std::vector<float>& got, const std::vector<float>& expect, double tolerance) {
  NumericsCheck c;
  c.tolerance = tolerance;
  if (got.size() != expect.size()) {
    c.detail = fmt::format("{} results for {} expected", got.size(), expect.size());
    return c;
  }
  std::size_t worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::isnan(got[i]) != std::isnan(expect[i]) ? INFINITY
                       : std::isnan(got[i])                        ? 0.0
                                                                   : std::fabs(double{got[i]} - expect[i]);
    if (err > c.max_abs_error || std::isnan(err)) {
      c.max_abs_error = err;
      worst = i;
    }
  }
  c.correct = c.max_abs_error <= tolerance;
  if (!c.correct)
    c.detail = fmt::format("element {}: got {}, expected {}", worst, got[worst], expect[worst]);
  return c;
}

}  // namespace tessera::kernels
