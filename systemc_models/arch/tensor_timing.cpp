#include "arch/tensor_timing.h"

#include <algorithm>
#include <stdexcept>

namespace tessera::arch {

TensorSchedule schedule(const TensorTimingParams& p, const std::vector<TensorInstr>& program) {
  TensorSchedule s;
  s.accept.reserve(program.size());
  s.last_write.reserve(program.size());
  // Each rule below is one condition of the controller's dispatch
  // (te_controller.sv); the edge numbers are those of the RTL.
  std::int64_t prev_accept = -1;
  std::int64_t load_last_beat = 0;       // loader free from this edge on
  std::int64_t stream_last_inject = 0;   // streamer free from this edge on
  std::int64_t last_mm_accept = -(std::int64_t{1} << 40);
  std::int64_t last_inject_per_buffer[2] = {0, 0};
  int load_buffer = 1;  // buffer of the latest LoadStationary; the first goes to 0
  for (const TensorInstr& in : program) {
    std::int64_t d = prev_accept + 1;
    if (in.op == TensorOp::LoadStationary) {
      if (in.m < 1) throw std::invalid_argument("LoadStationary needs m >= 1");
      const int target = 1 - load_buffer;
      d = std::max({d, load_last_beat, last_inject_per_buffer[target]});
      load_buffer = target;
      load_last_beat = d + in.m;
      s.last_write.push_back(-1);
      s.end = std::max(s.end, load_last_beat);
    } else {
      if (in.n < 1) throw std::invalid_argument("MultiplyMoving needs n >= 1");
      d = std::max({d, load_last_beat, stream_last_inject,
                    last_mm_accept + p.min_initiation_interval});
      last_mm_accept = d;
      stream_last_inject = d + in.n;
      last_inject_per_buffer[load_buffer] = stream_last_inject;
      const std::int64_t w = stream_last_inject + p.rows + p.cols;
      s.last_write.push_back(w);
      s.end = std::max(s.end, w);
    }
    s.accept.push_back(d);
    prev_accept = d;
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
