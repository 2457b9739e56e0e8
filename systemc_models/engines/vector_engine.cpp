#include "engines/vector_engine.h"

#include "engines/operand_io.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tessera::engines {

VectorEngine::VectorEngine(sc_core::sc_module_name name, core::CoreContext& ctx)
    : ElementwiseEngine(name, arch::Engine::Vector, ctx.cfg.vector, ctx) {}

sc_core::sc_time VectorEngine::execute(const arch::Instruction& in) {
  const auto& cfg = ctx_.cfg;
  const auto& costs = cfg.vector.costs;
  double stride = std::max(stride_factor(cfg, in.dst), stride_factor(cfg, in.a));
  std::vector<float> out;
  const char* cost_key = "copy";
  const arch::AccessPattern* shape = &in.dst;
  switch (in.opcode) {
    case arch::Opcode::TensorTensor: {
      const auto a = load(ctx_, in.a), b = load(ctx_, in.b);
      out.resize(a.size());
      for (std::size_t i = 0; i < a.size(); ++i) out[i] = alu(in.alu, a[i], b[i]);
      stride = std::max(stride, stride_factor(cfg, in.b));
      // One input in SBUF and one in PSUM stream through separate read
      // interfaces at once; two from the same memory share one.
      cost_key = (in.a.memory == arch::Memory::Psum) != (in.b.memory == arch::Memory::Psum) ? "tensor_tensor_sbuf_psum"
                                                                                            : "tensor_tensor";
      break;
    }
    case arch::Opcode::TensorScalar:
      out = tensor_scalar(ctx_, in);
      cost_key = "tensor_scalar";
      break;
    case arch::Opcode::Reduce: {
      if (in.alu != arch::AluOp::Add && in.alu != arch::AluOp::Max && in.alu != arch::AluOp::Min &&
          in.alu != arch::AluOp::Multiply)
        throw std::runtime_error(fmt::format("Reduce supports add, multiply, max and min, not {}", to_string(in.alu)));
      const auto a = load(ctx_, in.a);
      const std::size_t f = in.a.free_elements();
      out.resize(a.empty() ? 0 : in.a.partition_count);
      for (std::size_t p = 0; p < out.size(); ++p) {
        // In free-index order: the order is part of the numerics contract.
        float acc = a[p * f];
        for (std::size_t i = 1; i < f; ++i) acc = alu(in.alu, acc, a[p * f + i]);
        out[p] = acc;
      }
      shape = &in.a;
      cost_key = "reduce";
      break;
    }
    case arch::Opcode::Copy: out = load(ctx_, in.a); break;
    case arch::Opcode::Memset:
      if (!ctx_.no_data) out.assign(in.dst.elements(), in.imm0);
      cost_key = "memset";
      break;
    case arch::Opcode::Select: {
      const auto a = load(ctx_, in.a), b = load(ctx_, in.b), pred = load(ctx_, in.c);
      out.resize(a.size());
      for (std::size_t i = 0; i < a.size(); ++i) out[i] = pred[i] != 0.0f ? a[i] : b[i];
      cost_key = "select";
      break;
    }
    default: throw std::runtime_error("not a vector-engine instruction");
  }
  store(ctx_, in.dst, out);
  return schedule({&in.a, &in.b, &in.c}, {&in.dst}, elementwise_cycles(cfg.vector, *shape, costs.at(cost_key), stride));
}

}  // namespace tessera::engines
