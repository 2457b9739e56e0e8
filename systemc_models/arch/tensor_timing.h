// The tensor engine's cycle timing as the RTL implements it
// (rtl/tensor_engine, docs/tensor-engine.md "Timing"). The fast tensor model
// uses this to time instructions without simulating the array; the RTL tests
// check it against measured cycles.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::arch {

enum class TensorOp { LoadStationary, MultiplyMoving };

// One tensor-engine instruction, as far as timing goes. LoadStationary uses m
// (stationary columns); MultiplyMoving uses n (moving columns). K does not
// change timing.
struct TensorInstr {
  TensorOp op = TensorOp::LoadStationary;
  std::int64_t m = 0;
  std::int64_t n = 0;
};

struct TensorTimingParams {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t min_initiation_interval = 1;  // cycles between MultiplyMoving starts
};

// When each instruction of a program is accepted and, for MultiplyMoving, when
// its last PSUM write completes. Cycles count clock edges after the edge that
// accepts the first instruction (which is cycle 0). Assumes instructions are
// offered back to back, operand streams never run dry and PSUM never stalls.
struct TensorSchedule {
  std::vector<std::int64_t> accept;      // per instruction
  std::vector<std::int64_t> last_write;  // per instruction; -1 for LoadStationary
  std::int64_t end = 0;                  // last PSUM write (or last stationary beat)
};

TensorSchedule schedule(const TensorTimingParams& p, const std::vector<TensorInstr>& program);

// The same rules one instruction at a time, for a model that offers each
// instruction when its sequencer reaches it: `earliest` is the first cycle it
// is offered (same numbering as TensorSchedule).
class TensorScheduler {
public:
  explicit TensorScheduler(const TensorTimingParams& p) : p_(p) {}

  struct Timing {
    std::int64_t accept = 0;
    std::int64_t done = 0;  // last PSUM write (MultiplyMoving) or last stationary beat
  };
  Timing issue(const TensorInstr& in, std::int64_t earliest);

private:
  TensorTimingParams p_;
  std::int64_t prev_accept_ = -1;
  std::int64_t load_last_beat_ = 0;      // loader free from this edge on
  std::int64_t stream_last_inject_ = 0;  // streamer free from this edge on
  std::int64_t last_mm_accept_ = -(std::int64_t{1} << 40);
  std::int64_t last_inject_per_buffer_[2] = {0, 0};
  int load_buffer_ = 1;  // buffer of the latest LoadStationary; the first goes to 0
};

// Closed form for `pairs` (LoadStationary[M], MultiplyMoving[N]) pairs offered
// back to back: M + (pairs - 1) * max(M + 1, N, II) + N + Rows + Cols.
std::int64_t back_to_back_cycles(const TensorTimingParams& p, std::int64_t m, std::int64_t n,
                                 std::int64_t pairs);

}  // namespace tessera::arch
