#include "engines/scalar_engine.h"

#include "engines/operand_io.h"

#include <cmath>
#include <stdexcept>

namespace tessera::engines {

float activation(arch::ActFunc f, float x) {
  switch (f) {
    case arch::ActFunc::Identity: return x;
    case arch::ActFunc::Exp: return std::exp(x);
    case arch::ActFunc::Tanh: return std::tanh(x);
    case arch::ActFunc::Gelu: return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));  // exact (erf) form
    case arch::ActFunc::Silu: return x / (1.0f + std::exp(-x));
    case arch::ActFunc::Sigmoid: return 1.0f / (1.0f + std::exp(-x));
    case arch::ActFunc::Relu: return x > 0.0f ? x : 0.0f;
    case arch::ActFunc::Rsqrt: return 1.0f / std::sqrt(x);
    case arch::ActFunc::Reciprocal: return 1.0f / x;
    case arch::ActFunc::Square: return x * x;
  }
  return x;
}

ScalarEngine::ScalarEngine(sc_core::sc_module_name name, core::CoreContext& ctx)
    : ElementwiseEngine(name, arch::Engine::Scalar, ctx.cfg.scalar, ctx) {}

sc_core::sc_time ScalarEngine::execute(const arch::Instruction& in) {
  const auto& cfg = ctx_.cfg;
  const double stride = std::max(stride_factor(cfg, in.dst), stride_factor(cfg, in.a));
  double cost = cfg.scalar.costs.at("activation");
  // Through the activation datapath (x * scale + bias, identity), at its cost.
  if (in.opcode == arch::Opcode::TensorScalar) {
    store(ctx_, in.dst, tensor_scalar(ctx_, in));
    return schedule({&in.a, &in.b, &in.c}, {&in.dst}, elementwise_cycles(cfg.scalar, in.dst, cost, stride));
  }
  std::vector<float> x = load(ctx_, in.a);
  if (in.opcode == arch::Opcode::Copy) {
    store(ctx_, in.dst, x);
    return schedule({&in.a}, {&in.dst}, elementwise_cycles(cfg.scalar, in.dst, cost, stride));
  }
  if (in.opcode != arch::Opcode::Activation) throw std::runtime_error("not a scalar-engine instruction");
  const std::size_t f = in.a.free_elements();
  std::vector<float> bias;
  if (in.b.valid()) bias = load(ctx_, in.b);
  std::vector<float> sums(x.empty() ? 0 : in.a.partition_count, 0.0f);
  for (std::size_t p = 0; p < sums.size(); ++p) {
    const float b = in.b.valid() ? bias[p] : in.imm1;
    for (std::size_t i = 0; i < f; ++i) {
      float& v = x[p * f + i];
      v = activation(in.func, v * in.imm0 + b);
      sums[p] += v;
    }
  }
  store(ctx_, in.dst, x);
  ElementwiseCycles t;
  if (in.c.valid()) {
    store(ctx_, in.c, sums);
    // The sums are kept in the engine as it goes; writing them back is a
    // short instruction of its own on the hardware (ActReadAccumulator).
    t = elementwise_cycles(cfg.scalar, in.dst, cost + cfg.scalar.costs.at("accumulate"), stride);
    t.total += static_cast<double>(cfg.scalar.accumulate_cycles);
  } else {
    t = elementwise_cycles(cfg.scalar, in.dst, cost, stride);
  }
  return schedule({&in.a, &in.b}, {&in.dst, &in.c}, t);
}

}  // namespace tessera::engines
