#include "engines/gpsimd_engine.h"

#include "engines/operand_io.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tessera::engines {

GpSimdEngine::GpSimdEngine(sc_core::sc_module_name name, core::CoreContext& ctx)
    : ElementwiseEngine(name, arch::Engine::GpSimd, ctx.cfg.gpsimd, ctx) {}

sc_core::sc_time GpSimdEngine::execute(const arch::Instruction& in) {
  const auto& cfg = ctx_.cfg;
  const auto& costs = cfg.gpsimd.costs;
  switch (in.opcode) {
    case arch::Opcode::Iota: {
      const std::size_t f = in.dst.free_elements();
      std::vector<float> out(ctx_.no_data ? 0 : in.dst.elements());
      for (std::size_t p = 0; p < (out.empty() ? 0 : in.dst.partition_count); ++p)
        for (std::size_t i = 0; i < f; ++i)
          out[p * f + i] = in.imm0 + static_cast<float>(p) * in.imm1 + static_cast<float>(i) * in.imm2;
      store(ctx_, in.dst, out);
      return schedule({}, {&in.dst}, elementwise_cycles(cfg.gpsimd, in.dst, costs.at("iota"), stride_factor(cfg, in.dst)));
    }
    case arch::Opcode::Copy: {
      store(ctx_, in.dst, load(ctx_, in.a));
      return schedule({&in.a}, {&in.dst},
                      elementwise_cycles(cfg.gpsimd, in.dst, costs.at("copy"),
                                         std::max(stride_factor(cfg, in.dst), stride_factor(cfg, in.a))));
    }
    case arch::Opcode::PartitionReduce: {
      if (in.alu != arch::AluOp::Add && in.alu != arch::AluOp::Max && in.alu != arch::AluOp::Min &&
          in.alu != arch::AluOp::Multiply)
        throw std::runtime_error(
            fmt::format("PartitionReduce supports add, multiply, max and min, not {}", to_string(in.alu)));
      const auto a = load(ctx_, in.a);
      const std::size_t f = in.a.free_elements();
      std::vector<float> out(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(a.empty() ? 0 : f));
      for (std::size_t p = 1; p < (a.empty() ? 0 : in.a.partition_count); ++p)  // partition order: part of the numerics contract
        for (std::size_t i = 0; i < f; ++i) out[i] = alu(in.alu, out[i], a[p * f + i]);
      store(ctx_, in.dst, out);
      return schedule({&in.a}, {&in.dst},
                      elementwise_cycles(cfg.gpsimd, in.a, costs.at("partition_reduce"), stride_factor(cfg, in.a)));
    }
    default: throw std::runtime_error("not a GpSimd-engine instruction");
  }
}

}  // namespace tessera::engines
