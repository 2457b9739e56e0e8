// The tensor engine's cycle timing as the RTL implements it
// (rtl/tensor_engine, docs/tensor-engine.md "Timing"). The fast tensor model
// uses this to time instructions without simulating the array; the RTL tests
// check it against measured cycles.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::arch {

struct TensorEngineConfig;

enum class TensorOp { LoadStationary, MultiplyMoving };

// One tensor-engine instruction, as far as timing goes. LoadStationary uses m
// (stationary columns); MultiplyMoving uses n (moving columns). K does not
// change timing.
struct TensorInstr {
  TensorOp op = TensorOp::LoadStationary;
  std::int64_t m = 0;
  std::int64_t n = 0;
};

// Weight buffers per PE (te_pkg::WeightBuffers): a LoadStationary fills the
// buffer after the latest one's, in turn.
inline constexpr int kTensorWeightBuffers = 4;

struct TensorTimingParams {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t min_initiation_interval = 1;  // cycles between MultiplyMoving starts
  std::int64_t stationary_columns_per_cycle = 1;  // columns a LoadStationary beat carries (W)
};

// The timing parameters of a config's tensor engine.
TensorTimingParams tensor_timing_params(const TensorEngineConfig& t);

// Beats of a LoadStationary of m columns: ceil(m / W).
std::int64_t stationary_beats(const TensorTimingParams& p, std::int64_t m);

// The cycles in which an engine has at least one instruction in flight: the
// union of the intervals (accept, done] of its instructions, counted once
// however many overlap. Intervals must come in order of accept.
class BusyCycles {
public:
  void add(std::int64_t accept, std::int64_t done) {
    const std::int64_t from = accept > end_ ? accept : end_;
    if (done > from) cycles_ += done - from;
    if (done > end_) end_ = done;
  }
  std::int64_t cycles() const { return cycles_; }

private:
  std::int64_t cycles_ = 0;
  std::int64_t end_ = -(std::int64_t{1} << 62);
};

// When each instruction of a program is accepted and, for MultiplyMoving, when
// its last PSUM write completes. Cycles count clock edges after the edge that
// accepts the first instruction (which is cycle 0). Assumes instructions are
// offered back to back, operand streams never run dry and PSUM never stalls.
struct TensorSchedule {
  std::vector<std::int64_t> accept;      // per instruction
  std::vector<std::int64_t> last_write;  // per instruction; -1 for LoadStationary
  std::int64_t end = 0;                  // last PSUM write (or last stationary beat)
  std::int64_t busy = 0;                 // cycles with an instruction in flight (BusyCycles)
  std::int64_t multiplying = 0;          // cycles injecting moving columns: the sum of N
};

TensorSchedule schedule(const TensorTimingParams& p, const std::vector<TensorInstr>& program);

// The same rules one instruction at a time, for a model that offers each
// instruction when its sequencer reaches it: `earliest` is the first cycle it
// is offered (same numbering as TensorSchedule).
class TensorScheduler {
public:
  explicit TensorScheduler(const TensorTimingParams& p);

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
  std::int64_t last_inject_per_buffer_[kTensorWeightBuffers];
  int load_buffer_ = kTensorWeightBuffers - 1;  // buffer of the latest LoadStationary; the first goes to 0
};

// Closed form for `pairs` (LoadStationary[M], MultiplyMoving[N]) pairs offered
// back to back, with B = ceil(M / W) beats per load:
//   B + (pairs - 1) * max(B + 1, N, II) + N + Rows + Cols.
// It holds while no load waits for a multiply three pairs back to leave its
// buffer: 3 * max(B + 1, N, II) + 1 >= N + M - 1 - B, true of every shape on
// every shipped generation (II >= Cols / 2). Throws std::domain_error outside it.
std::int64_t back_to_back_cycles(const TensorTimingParams& p, std::int64_t m, std::int64_t n,
                                 std::int64_t pairs);

}  // namespace tessera::arch
