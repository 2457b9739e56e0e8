#include "engines/tensor_datapath.h"

#include "arch/tensor_timing.h"

#include <algorithm>

namespace tessera::engines {
namespace {

// Numbers from arch::matmul, cycles from arch::TensorScheduler: the rules of
// the RTL controller, so that this model and the RTL agree cycle for cycle.
class FastTensorDatapath : public TensorDatapath {
public:
  FastTensorDatapath(const arch::TensorTimingParams& timing, bool compute)
      : scheduler_(timing), compute_(compute) {}

  TensorTiming issue(TensorCommand& cmd, std::uint64_t earliest) override {
    const bool load = cmd.op == TensorCommand::Op::LoadStationary;
    arch::TensorInstr in;
    in.op = load ? arch::TensorOp::LoadStationary : arch::TensorOp::MultiplyMoving;
    in.m = load ? static_cast<std::int64_t>(cmd.data.cols) : 0;
    in.n = load ? 0 : static_cast<std::int64_t>(cmd.data.cols);
    const auto t = scheduler_.issue(in, static_cast<std::int64_t>(earliest));
    done_ = std::max(done_, static_cast<std::uint64_t>(t.done));
    busy_.add(t.accept, t.done);
    const TensorTiming timing{static_cast<std::uint64_t>(t.accept), static_cast<std::uint64_t>(t.done)};
    if (!compute_) return timing;
    if (load) {
      stationary_ = cmd.data;
    } else if (cmd.write_psum) {
      arch::Fp32Matrix out(stationary_.cols, cmd.data.cols);
      arch::matmul(stationary_, cmd.data, arch::PsumMode::Overwrite, out);
      cmd.write_psum(out);
    }
    return timing;
  }

  std::uint64_t flush() override { return done_; }
  std::uint64_t busy_cycles() const override { return static_cast<std::uint64_t>(busy_.cycles()); }

  std::string name() const override { return "fast"; }

private:
  arch::TensorScheduler scheduler_;
  arch::BusyCycles busy_;
  bool compute_;
  arch::Bf16Matrix stationary_;
  std::uint64_t done_ = 0;
};

}  // namespace

std::unique_ptr<TensorDatapath> make_fast_tensor_datapath(const arch::TensorTimingParams& timing, bool compute) {
  return std::make_unique<FastTensorDatapath>(timing, compute);
}

}  // namespace tessera::engines
