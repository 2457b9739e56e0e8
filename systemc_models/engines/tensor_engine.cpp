#include "engines/tensor_engine.h"

#include "engines/operand_io.h"
#include "trace/sim_time.h"
#include "memory/partitioned_memory.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace tessera::engines {

TensorEngine::TensorStats::TensorStats(trace::Stats& stats, const TensorEngine& owner)
    : Group(stats, owner),
      macs(*this, "macs", "count", "multiply-accumulates performed"),
      pe_cycles(*this, "pe_cycles", "count",
                "PE-cycles spent multiplying: a PE taking two (fp8 double row) or four (MX) rows a cycle counts once"),
      matmuls(*this, "matmuls", "count", "MultiplyMoving instructions"),
      multiplying_ns(*this, "multiplying_ns", "ns",
                     "time the array takes in moving columns (N cycles per MultiplyMoving): the bound of HFU"),
      utilisation(*this, "utilisation", "ratio", "PE-cycles multiplying / (PEs x cycles until the tensor engine ended)",
                  [this, &owner] {
        const double pes = static_cast<double>(owner.ctx_.cfg.tensor.rows * owner.ctx_.cfg.tensor.cols);
        const double cycles = trace::ns(owner.end_time()) / trace::ns(owner.clock_period());
        return cycles > 0 ? pe_cycles.value() / (pes * cycles) : 0.0;
      }) {}

TensorEngine::TensorEngine(sc_core::sc_module_name name, core::CoreContext& ctx,
                           std::unique_ptr<TensorDatapath> datapath)
    : Engine(name, arch::Engine::Tensor, ctx.cfg.tensor.clock_ghz, ctx, {"weights"}),
      datapath_(std::move(datapath)),
      tensor_stats_(ctx.stats, *this) {
  datapath_->add_stats(tensor_stats_);
}

void TensorEngine::settle() {
  done_cycle_ = std::max(done_cycle_, datapath_->flush());
  report_busy();
}

void TensorEngine::report_busy() {
  const std::uint64_t busy = std::max(busy_reported_, datapath_->busy_cycles());
  // The trace draws each instruction's own work at issue (issue()).
  if (busy > busy_reported_) count_busy(cycles(static_cast<double>(busy - busy_reported_)));
  busy_reported_ = busy;
}

std::function<void(const arch::Fp32Matrix&)> TensorEngine::psum_writer(const arch::AccessPattern& dst,
                                                                       arch::PsumMode mode) {
  if (ctx_.no_data) {  // nothing is computed; the PSUM traffic is counted as the write port makes it
    const std::uint64_t bytes = static_cast<std::uint64_t>(dst.partition_count) * dst.free_elements() * arch::size_of(dst.dtype);
    if (mode == arch::PsumMode::Accumulate) ctx_.psum.count_read(bytes);
    ctx_.psum.count_write(bytes);
    return {};
  }
  const bool bf16 = dst.dtype == arch::DType::Bf16;
  return [this, dst, mode, bf16](const arch::Fp32Matrix& out) {
    if (mode == arch::PsumMode::Overwrite && !bf16) {
      store(ctx_, dst, out.data);
      return;
    }
    std::vector<float> cells = load(ctx_, dst);
    for (std::size_t i = 0; i < cells.size(); ++i)
      cells[i] = bf16 ? arch::to_float(arch::psum_bf16_write(arch::to_bf16(cells[i]), out.data[i], mode))
                      : arch::fp32_add(cells[i], out.data[i]);
    store(ctx_, dst, cells);
  };
}

std::uint64_t TensorEngine::now_cycle() const {
  return static_cast<std::uint64_t>(std::llround(sc_core::sc_time_stamp() / clock_period()));
}

sc_core::sc_time TensorEngine::work_done_at() const { return clock_period() * static_cast<double>(done_cycle_); }

arch::TensorOperand TensorEngine::read_operand(const arch::Instruction& in) {
  const arch::AccessPattern& ap = in.a;
  const auto format = arch::element_format(ap.dtype);
  if (!format) throw std::runtime_error(fmt::format("the tensor engine cannot read {} operands", arch::to_string(ap.dtype)));
  const bool mx = arch::is_mx(ap.dtype);
  const bool double_row = in.double_row();
  const int pack = mx ? arch::kMxQuad : double_row ? 2 : 1;
  const std::size_t rows = ap.partition_count;
  const std::size_t free = ap.free_elements();
  const std::size_t cols = double_row ? free / 2 : free;
  const std::uint32_t esize = arch::size_of(ap.dtype);
  ctx_.sbuf.count_read(rows * free * esize + (mx ? rows * cols : 0));
  if (ctx_.no_data) {  // the datapath times by shape, format and mode; no values needed
    arch::TensorOperand shape_only(*format, pack, mx, 0, 0);
    shape_only.rows = rows;
    shape_only.cols = cols;
    return shape_only;
  }
  arch::TensorOperand op(*format, pack, mx, rows, cols);
  const auto offsets = ap.byte_offsets();
  const auto [lo, hi] = ap.byte_extent();
  // The element size as a constant of each loop: a memcpy of a size known
  // only at run time is a library call per element.
  const auto read = [&](auto size) {
    for (std::uint32_t p = 0; p < ap.partition_count; ++p) {
      const std::uint8_t* base = ctx_.sbuf.at(ap.start_partition + p, static_cast<std::uint64_t>(lo),
                                              static_cast<std::uint64_t>(hi - lo)) - lo;
      for (std::size_t i = 0; i < offsets.size(); ++i) {
        std::uint32_t v = 0;
        std::memcpy(&v, base + offsets[i], size);  // little-endian, as the host
        // A double-row operand's halves are its outer free dimension: element i
        // is half i / cols of column i % cols, byte h of the PE's word.
        if (double_row) op.word(p, i % cols) |= v << (8 * (i / cols));
        else op.word(p, i) = v;
      }
    }
  };
  switch (esize) {
    case 1: read(std::integral_constant<std::size_t, 1>{}); break;
    case 2: read(std::integral_constant<std::size_t, 2>{}); break;
    case 4: read(std::integral_constant<std::size_t, 4>{}); break;
    default: read(std::size_t{esize}); break;
  }
  if (mx) {
    const arch::AccessPattern& sc = in.b;
    const auto scale_offsets = sc.byte_offsets();
    const auto [slo, shi] = sc.byte_extent();
    for (std::uint32_t p = 0; p < ap.partition_count; ++p) {
      const std::size_t sp = arch::mx_scale_partition(p);
      const std::uint8_t* base = ctx_.sbuf.at(sc.start_partition + sp, static_cast<std::uint64_t>(slo),
                                              static_cast<std::uint64_t>(shi - slo)) - slo;
      for (std::size_t c = 0; c < cols; ++c) op.scales[p * cols + c] = base[scale_offsets[c]];
    }
  }
  return op;
}

sc_core::sc_time TensorEngine::issue(TensorCommand& cmd) {
  const std::uint64_t now = now_cycle();
  const TensorTiming t = datapath_->issue(cmd, now);
  done_cycle_ = std::max(done_cycle_, t.completed);
  report_busy();
  // In traces, each instruction from the cycle the datapath accepted it:
  // moving columns stream N cycles through the array (N x fp32_cycles_per_column
  // for fp32); weights load on a lane of their own (a load overlaps the
  // multiplies before it) until the last is in, which both datapaths know at issue.
  const sc_core::sc_time accepted = clock_period() * static_cast<double>(t.accepted);
  if (cmd.op == TensorCommand::Op::MultiplyMoving) {
    const bool fp32 = cmd.data.format == arch::ElementFormat::Fp32 || stationary_shape_.format == arch::ElementFormat::Fp32;
    const double per_column = fp32 ? static_cast<double>(std::max<std::int64_t>(1, ctx_.cfg.tensor.fp32_cycles_per_column)) : 1.0;
    const sc_core::sc_time streaming = cycles(static_cast<double>(cmd.data.cols) * per_column);
    trace_work(accepted, streaming, 0);
    tensor_stats_.multiplying_ns += trace::ns(streaming);
  } else {
    trace_work(accepted, cycles(static_cast<double>(t.completed - t.accepted)), kWeightsLane);
  }
  // The sequencer may issue the next instruction the cycle after this one was accepted.
  return cycles(static_cast<double>(t.accepted + 1 - now));
}

namespace {

// The format and mode of an operand, without its values.
arch::TensorOperand shape_of(const arch::TensorOperand& op) {
  arch::TensorOperand s(op.format, op.pack, op.mx, 0, 0);
  s.rows = op.rows;
  s.cols = op.cols;
  return s;
}

}  // namespace

sc_core::sc_time TensorEngine::execute(const arch::Instruction& in) {
  switch (in.opcode) {
    case arch::Opcode::LoadStationary: {
      TensorCommand cmd{TensorCommand::Op::LoadStationary, read_operand(in), arch::PsumMode::Overwrite, false, {}};
      stationary_shape_ = shape_of(cmd.data);
      return issue(cmd);
    }
    case arch::Opcode::MultiplyMoving: {
      const arch::PsumMode mode = in.accumulate() ? arch::PsumMode::Accumulate : arch::PsumMode::Overwrite;
      TensorCommand cmd{TensorCommand::Op::MultiplyMoving, read_operand(in), mode, in.dst.dtype == arch::DType::Bf16,
                        psum_writer(in.dst, mode)};
      // The builder pairs every multiply with a stationary it can take; a
      // hand-written program may not.
      if (const auto why = arch::incompatible(stationary_shape_, shape_of(cmd.data)))
        throw std::runtime_error(fmt::format("the tensor engine cannot multiply this moving tile with the loaded "
                                             "stationary: {}", *why));
      const sc_core::sc_time busy = issue(cmd);
      const double pe_cycles = static_cast<double>(in.a.partition_count) * in.dst.partition_count * in.dst.free_elements();
      tensor_stats_.pe_cycles += pe_cycles;
      tensor_stats_.macs += pe_cycles * cmd.data.pack;
      ++tensor_stats_.matmuls;
      return busy;
    }
    case arch::Opcode::Transpose: {
      // Through the array: the tile becomes the stationary weights and an
      // identity of its format streams as the moving tile, so dst = tile.T @
      // I = tile.T (x * 1 is exact in bf16 and fp32). Like the hardware, this
      // replaces the loaded weights.
      TensorCommand load_cmd{TensorCommand::Op::LoadStationary, read_operand(in), arch::PsumMode::Overwrite, false, {}};
      stationary_shape_ = shape_of(load_cmd.data);
      const arch::ElementFormat format = load_cmd.data.format;
      issue(load_cmd);  // the datapath holds the multiply until these weights are in
      const std::uint32_t k = in.a.partition_count;
      // Shape only without data, as read_operand's: a k x k identity zeroed for
      // every transpose was a fifth of a timing-only flash attention's instructions.
      arch::TensorOperand identity(format, 1, false, ctx_.no_data ? 0 : k, ctx_.no_data ? 0 : k);
      identity.rows = identity.cols = k;
      const std::uint32_t one = format == arch::ElementFormat::Fp32 ? arch::fp32_bits(1.0f) : arch::to_bf16(1.0f).bits;
      if (!ctx_.no_data)
        for (std::uint32_t i = 0; i < k; ++i) identity.word(i, i) = one;
      TensorCommand mul{TensorCommand::Op::MultiplyMoving, identity, arch::PsumMode::Overwrite,
                        in.dst.dtype == arch::DType::Bf16, psum_writer(in.dst, arch::PsumMode::Overwrite)};
      return issue(mul);
    }
    default: throw std::runtime_error("not a tensor-engine instruction");
  }
}

}  // namespace tessera::engines
