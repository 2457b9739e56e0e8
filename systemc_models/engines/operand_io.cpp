#include "engines/operand_io.h"

#include "arch/numerics.h"
#include "memory/partitioned_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace tessera::engines {
namespace {

memory::PartitionedMemory& memory_of(core::CoreContext& ctx, arch::Memory m) {
  return m == arch::Memory::Psum ? ctx.psum : ctx.sbuf;
}

// The x4 (MX) types are the tensor engine's alone: validate refuses them
// elsewhere, and a decoded program cannot hold them on these engines.
void check_dtype(const arch::AccessPattern& ap) {
  if (arch::is_mx(ap.dtype))
    throw std::runtime_error(fmt::format("{} operands are not supported by the vector, scalar and GpSimd engines",
                                         arch::to_string(ap.dtype)));
}

}  // namespace

std::vector<float> load(core::CoreContext& ctx, const arch::AccessPattern& ap) {
  check_dtype(ap);
  auto& mem = memory_of(ctx, ap.memory);
  // Timing does not depend on values: a timing-only run counts the traffic
  // and loads no values, and the arithmetic on them is skipped.
  if (ctx.no_data) {
    mem.count_read(ap.elements() * arch::size_of(ap.dtype));
    return {};
  }
  const auto offsets = ap.byte_offsets();
  const auto [lo, hi] = ap.byte_extent();
  std::vector<float> out;
  out.reserve(offsets.size() * ap.partition_count);
  for (std::uint32_t p = 0; p < ap.partition_count; ++p) {
    const std::uint8_t* base = mem.at(ap.start_partition + p, static_cast<std::uint64_t>(lo),
                                      static_cast<std::uint64_t>(hi - lo)) - lo;
    for (const std::int64_t off : offsets) {
      switch (ap.dtype) {
        case arch::DType::Fp32: {
          float v;
          std::memcpy(&v, base + off, 4);
          out.push_back(v);
          break;
        }
        case arch::DType::Bf16: {
          std::uint16_t bits;
          std::memcpy(&bits, base + off, 2);
          out.push_back(arch::to_float(arch::Bf16::from_bits(bits)));
          break;
        }
        case arch::DType::Int32: {
          std::int32_t v;
          std::memcpy(&v, base + off, 4);
          out.push_back(static_cast<float>(v));
          break;
        }
        case arch::DType::Fp8E4m3: out.push_back(arch::fp8_e4m3_value(base[off])); break;
        case arch::DType::Fp8E5m2: out.push_back(arch::fp8_e5m2_value(base[off])); break;
        case arch::DType::Uint8: out.push_back(static_cast<float>(base[off])); break;
        default: break;
      }
    }
  }
  mem.count_read(out.size() * arch::size_of(ap.dtype));
  return out;
}

void store(core::CoreContext& ctx, const arch::AccessPattern& ap, const std::vector<float>& values) {
  check_dtype(ap);
  auto& mem = memory_of(ctx, ap.memory);
  if (ctx.no_data) {
    mem.count_write(ap.elements() * arch::size_of(ap.dtype));
    return;
  }
  const auto offsets = ap.byte_offsets();
  const auto [lo, hi] = ap.byte_extent();
  std::size_t i = 0;
  for (std::uint32_t p = 0; p < ap.partition_count; ++p) {
    std::uint8_t* base = mem.at(ap.start_partition + p, static_cast<std::uint64_t>(lo),
                                static_cast<std::uint64_t>(hi - lo)) - lo;
    for (const std::int64_t off : offsets) {
      const float v = values[i++];
      switch (ap.dtype) {
        case arch::DType::Fp32: std::memcpy(base + off, &v, 4); break;
        case arch::DType::Bf16: {
          const std::uint16_t bits = arch::to_bf16(v).bits;
          std::memcpy(base + off, &bits, 2);
          break;
        }
        case arch::DType::Int32: {
          // Saturating conversion, round to nearest even, NaN to 0.
          const double r = std::isnan(v) ? 0.0 : std::nearbyint(static_cast<double>(v));
          const std::int32_t x = r >= 2147483647.0 ? INT32_MAX : r <= -2147483648.0 ? INT32_MIN : static_cast<std::int32_t>(r);
          std::memcpy(base + off, &x, 4);
          break;
        }
        // A cast to fp8 rounds to nearest even and saturates (docs/formats.md).
        case arch::DType::Fp8E4m3: base[off] = arch::to_fp8_e4m3(v); break;
        case arch::DType::Fp8E5m2: base[off] = arch::to_fp8_e5m2(v); break;
        case arch::DType::Uint8: {
          // Saturating, round to nearest even, NaN to 0, as Int32.
          const double r = std::isnan(v) ? 0.0 : std::nearbyint(static_cast<double>(v));
          base[off] = static_cast<std::uint8_t>(std::clamp(r, 0.0, 255.0));
          break;
        }
        default: break;
      }
    }
  }
  mem.count_write(values.size() * arch::size_of(ap.dtype));
}

double stride_factor(const arch::HwConfig& cfg, const arch::AccessPattern& ap) {
  if (!ap.valid() || ap.num_dims == 0) return 1.0;
  const std::int64_t inner = std::abs(static_cast<std::int64_t>(ap.stride[ap.num_dims - 1])) * arch::size_of(ap.dtype);
  return inner > cfg.sbuf.stride_penalty_threshold_bytes ? cfg.sbuf.stride_penalty_factor : 1.0;
}

ElementwiseCycles elementwise_cycles(const arch::EngineConfig& engine, const arch::AccessPattern& shape,
                                     double cost_per_element, double stride) {
  const double passes = std::ceil(static_cast<double>(shape.partition_count) / static_cast<double>(engine.lanes));
  const double compute = passes * static_cast<double>(shape.free_elements()) * cost_per_element;
  return {compute * stride, compute * (stride - 1.0)};
}

float alu(arch::AluOp op, float x, float y) {
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

std::vector<float> tensor_scalar(core::CoreContext& ctx, const arch::Instruction& in) {
  std::vector<float> out = load(ctx, in.a);
  const std::size_t f = in.a.free_elements();
  const std::vector<float> s0 = in.b.valid() ? load(ctx, in.b) : std::vector<float>(in.a.partition_count, in.imm0);
  const std::vector<float> s1 = in.c.valid() ? load(ctx, in.c) : std::vector<float>(in.a.partition_count, in.imm1);
  if (out.empty()) return out;  // timing only
  for (std::size_t p = 0; p < in.a.partition_count; ++p)
    for (std::size_t i = 0; i < f; ++i) {
      float& v = out[p * f + i];
      v = alu(in.alu2, alu(in.alu, v, s0[p]), s1[p]);
    }
  return out;
}

}  // namespace tessera::engines
