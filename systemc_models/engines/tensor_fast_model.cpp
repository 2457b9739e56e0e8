#include "engines/tensor_datapath.h"

#include <algorithm>

namespace tessera::engines {
namespace {

// Closed-form timing, cycle for cycle with the RTL controller
// (docs/tensor-engine.md, Timing):
//  - LoadStationary streams M weight columns, one per cycle, into the spare
//    weight buffer; it may start while a multiply still uses the other one.
//  - MultiplyMoving streams N moving columns, one per cycle, once its weights
//    are loaded and the previous multiply started at least max(N_prev, II)
//    cycles before; its last column leaves the array Rows + Cols - 1 cycles
//    after entering it.
class FastTensorDatapath : public TensorDatapath {
public:
  FastTensorDatapath(std::uint32_t rows, std::uint32_t cols, std::uint32_t min_ii)
      : rows_(rows), cols_(cols), min_ii_(min_ii) {}

  TensorTiming issue(TensorCommand& cmd, std::uint64_t earliest) override {
    TensorTiming t;
    if (cmd.op == TensorCommand::Op::LoadStationary) {
      t.accepted = std::max({earliest, load_free_, load_buffer_free_});
      t.completed = t.accepted + cmd.data.cols;
      load_free_ = t.completed;
      weights_ready_ = t.completed;
      stationary_ = cmd.data;
      return t;
    }
    const std::uint64_t n = cmd.data.cols;
    t.accepted = std::max({earliest, next_multiply_, weights_ready_});
    next_multiply_ = t.accepted + std::max<std::uint64_t>(n, min_ii_);
    // The next load may overwrite the other buffer now; this one is busy
    // until its last column has entered the array.
    load_buffer_free_ = t.accepted;
    t.completed = t.accepted + n + rows_ + cols_ - 1;
    arch::matmul(stationary_, cmd.data, cmd.mode, *cmd.psum);
    return t;
  }

  std::string name() const override { return "fast"; }

private:
  std::uint32_t rows_, cols_, min_ii_;
  std::uint64_t load_free_ = 0, load_buffer_free_ = 0, weights_ready_ = 0, next_multiply_ = 0;
  arch::Bf16Matrix stationary_;
};

}  // namespace

std::unique_ptr<TensorDatapath> make_fast_tensor_datapath(std::uint32_t rows, std::uint32_t cols,
                                                          std::uint32_t min_ii) {
  return std::make_unique<FastTensorDatapath>(rows, cols, min_ii);
}

}  // namespace tessera::engines
