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

// Whether offsets[i] == offsets[0] + i * size for every i: elements that lie one after another.
bool contiguous(const std::vector<std::int64_t>& offsets, std::int64_t size) {
  for (std::size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] != offsets[0] + static_cast<std::int64_t>(i) * size) return false;
  return true;
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
  const std::size_t n = offsets.size();
  std::vector<float> out(n * ap.partition_count);
  // The element type chosen once per partition, not per element, and fp32
  // elements that lie one after another copied at once: this loop was a
  // third of a with-data cumsum's instructions.
  const bool packed_fp32 = ap.dtype == arch::DType::Fp32 && contiguous(offsets, 4);
  float* to = out.data();
  for (std::uint32_t p = 0; p < ap.partition_count; ++p, to += n) {
    const std::uint8_t* base = mem.at(ap.start_partition + p, static_cast<std::uint64_t>(lo),
                                      static_cast<std::uint64_t>(hi - lo)) - lo;
    if (packed_fp32) {
      if (n > 0) std::memcpy(to, base + offsets[0], 4 * n);
      continue;
    }
    const auto each = [&](auto value_at) {
      for (std::size_t i = 0; i < n; ++i) to[i] = value_at(base + offsets[i]);
    };
    switch (ap.dtype) {
      case arch::DType::Fp32:
        each([](const std::uint8_t* at) {
          float v;
          std::memcpy(&v, at, 4);
          return v;
        });
        break;
      case arch::DType::Bf16:
        each([](const std::uint8_t* at) {
          std::uint16_t bits;
          std::memcpy(&bits, at, 2);
          return arch::to_float(arch::Bf16::from_bits(bits));
        });
        break;
      case arch::DType::Int32:
        each([](const std::uint8_t* at) {
          std::int32_t v;
          std::memcpy(&v, at, 4);
          return static_cast<float>(v);
        });
        break;
      case arch::DType::Fp8E4m3: each([](const std::uint8_t* at) { return arch::fp8_e4m3_value(*at); }); break;
      case arch::DType::Fp8E5m2: each([](const std::uint8_t* at) { return arch::fp8_e5m2_value(*at); }); break;
      case arch::DType::Uint8: each([](const std::uint8_t* at) { return static_cast<float>(*at); }); break;
      default: throw std::logic_error("load: an element type check_dtype lets through and load does not read");
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
  const std::size_t n = offsets.size();
  if (values.size() < n * ap.partition_count)
    throw std::logic_error(fmt::format("store: {} values for {} elements", values.size(), n * ap.partition_count));
  // As load: the element type chosen once per partition, packed fp32 copied at once.
  const bool packed_fp32 = ap.dtype == arch::DType::Fp32 && contiguous(offsets, 4);
  const float* from = values.data();
  for (std::uint32_t p = 0; p < ap.partition_count; ++p, from += n) {
    std::uint8_t* base = mem.at(ap.start_partition + p, static_cast<std::uint64_t>(lo),
                                static_cast<std::uint64_t>(hi - lo)) - lo;
    if (packed_fp32) {
      if (n > 0) std::memcpy(base + offsets[0], from, 4 * n);
      continue;
    }
    const auto each = [&](auto put) {
      for (std::size_t i = 0; i < n; ++i) put(base + offsets[i], from[i]);
    };
    switch (ap.dtype) {
      case arch::DType::Fp32: each([](std::uint8_t* at, float v) { std::memcpy(at, &v, 4); }); break;
      case arch::DType::Bf16:
        each([](std::uint8_t* at, float v) {
          const std::uint16_t bits = arch::to_bf16(v).bits;
          std::memcpy(at, &bits, 2);
        });
        break;
      case arch::DType::Int32:
        each([](std::uint8_t* at, float v) {
          // Saturating conversion, round to nearest even, NaN to 0.
          const double r = std::isnan(v) ? 0.0 : std::nearbyint(static_cast<double>(v));
          const std::int32_t x = r >= 2147483647.0 ? INT32_MAX : r <= -2147483648.0 ? INT32_MIN : static_cast<std::int32_t>(r);
          std::memcpy(at, &x, 4);
        });
        break;
      // A cast to fp8 rounds to nearest even and saturates (docs/formats.md).
      case arch::DType::Fp8E4m3: each([](std::uint8_t* at, float v) { *at = arch::to_fp8_e4m3(v); }); break;
      case arch::DType::Fp8E5m2: each([](std::uint8_t* at, float v) { *at = arch::to_fp8_e5m2(v); }); break;
      case arch::DType::Uint8:
        each([](std::uint8_t* at, float v) {
          // Saturating, round to nearest even, NaN to 0, as Int32.
          const double r = std::isnan(v) ? 0.0 : std::nearbyint(static_cast<double>(v));
          *at = static_cast<std::uint8_t>(std::clamp(r, 0.0, 255.0));
        });
        break;
      default: throw std::logic_error("store: an element type check_dtype lets through and store does not write");
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
