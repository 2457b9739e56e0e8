// Reading and writing instruction operands (SBUF/PSUM access patterns) as
// fp32 values, and the cost rules every approximately-timed engine shares.
// Engines compute in fp32 and round on store to the destination dtype with
// the project's one numerics reference (arch/numerics.h).
#pragma once

#include "arch/isa.h"
#include "core/core_context.h"

#include <cmath>
#include <vector>

namespace tessera::engines {

// Values of `ap`, partition-major: [partition_count][free_elements]; none in
// a timing-only run (ctx.no_data), which counts the traffic all the same and
// skips the arithmetic (an engine's execute loops over what was loaded).
std::vector<float> load(core::CoreContext& ctx, const arch::AccessPattern& ap);
void store(core::CoreContext& ctx, const arch::AccessPattern& ap, const std::vector<float>& values);

// The slowdown for an innermost stride wider than sbuf.stride_penalty_threshold_bytes.
double stride_factor(const arch::HwConfig& cfg, const arch::AccessPattern& ap);

// Streaming cycles of an element-wise instruction over `ap`'s shape (the
// engine's front-end overhead comes on top, ElementwiseEngine):
// ceil(partitions / lanes) * free elements * cost per element * stride factor;
// of which memory stall: the part the stride factor adds.
struct ElementwiseCycles {
  double total = 0;
  double memory_stall = 0;
};
ElementwiseCycles elementwise_cycles(const arch::EngineConfig& engine, const arch::AccessPattern& shape,
                                     double cost_per_element, double stride);

// fp32 ALU shared by the vector and GpSimd engines. Inline: the engines call
// it per element, and a loop that sees it can hoist the choice of `op`.
inline float alu(arch::AluOp op, float x, float y) {
  switch (op) {
    case arch::AluOp::Add: return x + y;
    case arch::AluOp::Subtract: return x - y;
    case arch::AluOp::Multiply: return x * y;
    case arch::AluOp::Divide: return x / y;
    case arch::AluOp::Max: return std::fmax(x, y);
    case arch::AluOp::Min: return std::fmin(x, y);
    case arch::AluOp::IsEqual: return x == y ? 1.0f : 0.0f;
    case arch::AluOp::IsGreater: return x > y ? 1.0f : 0.0f;
    case arch::AluOp::IsGreaterEqual: return x >= y ? 1.0f : 0.0f;
    case arch::AluOp::IsLess: return x < y ? 1.0f : 0.0f;
    case arch::AluOp::IsLessEqual: return x <= y ? 1.0f : 0.0f;
    case arch::AluOp::Bypass: return x;
  }
  return x;
}

// A TensorScalar's result, (a <alu> s0) <alu2> s1 per element, s0 and s1 the
// per-partition operands b and c or the immediates: the one definition the
// vector and scalar engines both run, so either gives the same bits.
std::vector<float> tensor_scalar(core::CoreContext& ctx, const arch::Instruction& in);

}  // namespace tessera::engines
