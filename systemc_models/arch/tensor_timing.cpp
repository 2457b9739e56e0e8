#include "arch/tensor_timing.h"

#include <algorithm>
#include <stdexcept>

namespace tessera::arch {

TensorScheduler::Timing TensorScheduler::issue(const TensorInstr& in, std::int64_t earliest) {
  // Each rule below is one condition of the controller's dispatch
  // (te_controller.sv); the edge numbers are those of the RTL.
  Timing t;
  std::int64_t d = std::max(prev_accept_ + 1, earliest);
  if (in.op == TensorOp::LoadStationary) {
    if (in.m < 1) throw std::invalid_argument("LoadStationary needs m >= 1");
    const int target = 1 - load_buffer_;
    d = std::max({d, load_last_beat_, last_inject_per_buffer_[target]});
    load_buffer_ = target;
    load_last_beat_ = d + in.m;
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
  for (const TensorInstr& in : program) {
    const auto t = scheduler.issue(in, 0);
    s.accept.push_back(t.accept);
    s.last_write.push_back(in.op == TensorOp::MultiplyMoving ? t.done : -1);
    s.end = std::max(s.end, t.done);
  }
  return s;
}

std::int64_t back_to_back_cycles(const TensorTimingParams& p, std::int64_t m, std::int64_t n,
                                 std::int64_t pairs) {
  if (pairs < 1) return 0;
  const std::int64_t interval = std::max({m + 1, n, p.min_initiation_interval});
  return m + (pairs - 1) * interval + n + p.rows + p.cols;
}

}  // namespace tessera::arch
