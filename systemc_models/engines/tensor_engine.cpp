#include "engines/tensor_engine.h"

#include "engines/operand_io.h"
#include "trace/sim_time.h"
#include "memory/partitioned_memory.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace tessera::engines {

TensorEngine::TensorStats::TensorStats(trace::Stats& stats, const TensorEngine& owner)
    : Group(stats, owner),
      macs(*this, "macs", "count", "multiply-accumulates performed"),
      matmuls(*this, "matmuls", "count", "MultiplyMoving instructions"),
      multiplying_ns(*this, "multiplying_ns", "ns",
                     "time the array takes in moving columns (N cycles per MultiplyMoving): the bound of HFU"),
      utilisation(*this, "utilisation", "ratio", "MACs / (PEs x cycles until the tensor engine ended)", [this, &owner] {
        const double pes = static_cast<double>(owner.ctx_.cfg.tensor.rows * owner.ctx_.cfg.tensor.cols);
        const double cycles = trace::ns(owner.end_time()) / trace::ns(owner.clock_period());
        return cycles > 0 ? macs.value() / (pes * cycles) : 0.0;
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
    const std::uint64_t bytes = static_cast<std::uint64_t>(dst.partition_count) * dst.free_elements() * 4;
    if (mode == arch::PsumMode::Accumulate) ctx_.psum.count_read(bytes);
    ctx_.psum.count_write(bytes);
    return {};
  }
  return [this, dst, mode](const arch::Fp32Matrix& out) {
    if (mode == arch::PsumMode::Overwrite) {
      store(ctx_, dst, out.data);
      return;
    }
    std::vector<float> cells = load(ctx_, dst);
    for (std::size_t i = 0; i < cells.size(); ++i) cells[i] = arch::fp32_add(cells[i], out.data[i]);
    store(ctx_, dst, cells);
  };
}

std::uint64_t TensorEngine::now_cycle() const {
  return static_cast<std::uint64_t>(std::llround(sc_core::sc_time_stamp() / clock_period()));
}

sc_core::sc_time TensorEngine::work_done_at() const { return clock_period() * static_cast<double>(done_cycle_); }

arch::Bf16Matrix TensorEngine::read_bf16(const arch::AccessPattern& ap) {
  if (ap.dtype != arch::DType::Bf16)
    throw std::runtime_error(fmt::format("the tensor engine model takes bf16 inputs; {} is not modelled yet",
                                         arch::to_string(ap.dtype)));
  if (ctx_.no_data) {
    ctx_.sbuf.count_read(static_cast<std::uint64_t>(ap.partition_count) * ap.free_elements() * 2);
    arch::Bf16Matrix shape_only;  // the datapath times by shape; no values needed
    shape_only.rows = ap.partition_count;
    shape_only.cols = ap.free_elements();
    return shape_only;
  }
  arch::Bf16Matrix m(ap.partition_count, ap.free_elements());
  const auto offsets = ap.byte_offsets();
  const auto [lo, hi] = ap.byte_extent();
  for (std::uint32_t p = 0; p < ap.partition_count; ++p) {
    const std::uint8_t* base = ctx_.sbuf.at(ap.start_partition + p, static_cast<std::uint64_t>(lo),
                                            static_cast<std::uint64_t>(hi - lo)) - lo;
    for (std::size_t i = 0; i < offsets.size(); ++i) std::memcpy(&m.at(p, i).bits, base + offsets[i], 2);
  }
  ctx_.sbuf.count_read(m.data.size() * 2);
  return m;
}

sc_core::sc_time TensorEngine::issue(TensorCommand& cmd) {
  const std::uint64_t now = now_cycle();
  const TensorTiming t = datapath_->issue(cmd, now);
  done_cycle_ = std::max(done_cycle_, t.completed);
  report_busy();
  // In traces, each instruction from the cycle the datapath accepted it:
  // moving columns stream N cycles through the array; weights load on a
  // lane of their own (a load overlaps the multiplies before it) until the
  // last is in, which both datapaths know at issue.
  const sc_core::sc_time accepted = clock_period() * static_cast<double>(t.accepted);
  if (cmd.op == TensorCommand::Op::MultiplyMoving) trace_work(accepted, cycles(static_cast<double>(cmd.data.cols)), 0);
  else trace_work(accepted, cycles(static_cast<double>(t.completed - t.accepted)), kWeightsLane);
  if (cmd.op == TensorCommand::Op::MultiplyMoving)
    tensor_stats_.multiplying_ns += trace::ns(cycles(static_cast<double>(cmd.data.cols)));
  // The sequencer may issue the next instruction the cycle after this one was accepted.
  return cycles(static_cast<double>(t.accepted + 1 - now));
}

sc_core::sc_time TensorEngine::execute(const arch::Instruction& in) {
  switch (in.opcode) {
    case arch::Opcode::LoadStationary: {
      TensorCommand cmd{TensorCommand::Op::LoadStationary, read_bf16(in.a), arch::PsumMode::Overwrite, {}};
      return issue(cmd);
    }
    case arch::Opcode::MultiplyMoving: {
      const arch::PsumMode mode = in.accumulate() ? arch::PsumMode::Accumulate : arch::PsumMode::Overwrite;
      TensorCommand cmd{TensorCommand::Op::MultiplyMoving, read_bf16(in.a), mode, psum_writer(in.dst, mode)};
      const sc_core::sc_time busy = issue(cmd);
      tensor_stats_.macs += static_cast<double>(in.a.partition_count) * in.dst.partition_count * in.dst.free_elements();
      ++tensor_stats_.matmuls;
      return busy;
    }
    case arch::Opcode::Transpose: {
      // Through the array: the tile becomes the stationary weights and an
      // identity streams as the moving tile, so dst = tile.T @ I = tile.T.
      // Like the hardware, this replaces the loaded weights.
      TensorCommand load_cmd{TensorCommand::Op::LoadStationary, read_bf16(in.a), arch::PsumMode::Overwrite, {}};
      issue(load_cmd);  // the datapath holds the multiply until these weights are in
      const std::uint32_t k = in.a.partition_count;
      arch::Bf16Matrix identity(k, k);
      for (std::uint32_t i = 0; i < k; ++i) identity.at(i, i) = arch::to_bf16(1.0f);
      TensorCommand mul{TensorCommand::Op::MultiplyMoving, identity, arch::PsumMode::Overwrite,
                        psum_writer(in.dst, arch::PsumMode::Overwrite)};
      return issue(mul);
    }
    default: throw std::runtime_error("not a tensor-engine instruction");
  }
}

}  // namespace tessera::engines
