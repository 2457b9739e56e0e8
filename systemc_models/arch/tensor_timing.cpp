#include "arch/tensor_timing.h"

#include "arch/config.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tessera::arch {

TensorTimingParams tensor_timing_params(const TensorEngineConfig& t) {
  return {t.rows, t.cols, t.min_initiation_interval_cycles, t.stationary_columns_per_cycle};
}

std::int64_t stationary_beats(const TensorTimingParams& p, std::int64_t m) {
  const std::int64_t w = std::max<std::int64_t>(1, p.stationary_columns_per_cycle);
  return (m + w - 1) / w;
}

namespace {

// How many edges after the last injection with its buffer a load of m columns
// may be accepted: its beat j, taken at edge d + 1 + j, writes columns up to
// jW + W - 1, which the earlier multiply's last moving column reads up to j(W - 1)
// + W - 1 edges later than it reads column j (te_controller.sv, target_free).
std::int64_t load_gap(const TensorTimingParams& p, std::int64_t m) {
  return std::max<std::int64_t>(0, m - 1 - stationary_beats(p, m));
}

}  // namespace

TensorScheduler::TensorScheduler(const TensorTimingParams& p) : p_(p) {
  std::fill(std::begin(last_inject_per_buffer_), std::end(last_inject_per_buffer_), -(std::int64_t{1} << 40));
}

TensorScheduler::Timing TensorScheduler::issue(const TensorInstr& in, std::int64_t earliest) {
  // Each rule below is one condition of the controller's dispatch
  // (te_controller.sv); the edge numbers are those of the RTL.
  Timing t;
  std::int64_t d = std::max(prev_accept_ + 1, earliest);
  if (in.op == TensorOp::LoadStationary) {
    if (in.m < 1) throw std::invalid_argument("LoadStationary needs m >= 1");
    const int target = (load_buffer_ + 1) % kTensorWeightBuffers;
    d = std::max({d, load_last_beat_, last_inject_per_buffer_[target] + load_gap(p_, in.m)});
    load_buffer_ = target;
    load_last_beat_ = d + stationary_beats(p_, in.m);
    t.done = load_last_beat_;
  } else {
    if (in.n < 1) throw std::invalid_argument("MultiplyMoving needs n >= 1");
    d = std::max({d, load_last_beat_, stream_last_inject_, last_mm_accept_ + p_.min_initiation_interval});
    last_mm_accept_ = d;
    stream_last_inject_ = d + in.n;
    last_inject_per_buffer_[load_buffer_] = stream_last_inject_;
    t.done = stream_last_inject_ + p_.rows + p_.cols;
  }
  t.accept = d;
  prev_accept_ = d;
  return t;
}

TensorSchedule schedule(const TensorTimingParams& p, const std::vector<TensorInstr>& program) {
  TensorSchedule s;
  s.accept.reserve(program.size());
  s.last_write.reserve(program.size());
  TensorScheduler scheduler(p);
  BusyCycles busy;
  for (const TensorInstr& in : program) {
    const auto t = scheduler.issue(in, 0);
    s.accept.push_back(t.accept);
    const bool multiply = in.op == TensorOp::MultiplyMoving;
    s.last_write.push_back(multiply ? t.done : -1);
    s.end = std::max(s.end, t.done);
    busy.add(t.accept, t.done);
    if (multiply) s.multiplying += in.n;
  }
  s.busy = busy.cycles();
  return s;
}

std::int64_t back_to_back_cycles(const TensorTimingParams& p, std::int64_t m, std::int64_t n,
                                 std::int64_t pairs) {
  if (pairs < 1) return 0;
  const std::int64_t beats = stationary_beats(p, m);
  const std::int64_t interval = std::max({beats + 1, n, p.min_initiation_interval});
  if (pairs > kTensorWeightBuffers && (kTensorWeightBuffers - 1) * interval + 1 < n + load_gap(p, m))
    throw std::domain_error("back_to_back_cycles: M = " + std::to_string(m) + ", N = " + std::to_string(n) +
                            " with II = " + std::to_string(p.min_initiation_interval) +
                            " makes loads wait for their buffers; use schedule()");
  return beats + (pairs - 1) * interval + n + p.rows + p.cols;
}

}  // namespace tessera::arch
