#include "engines/elementwise_engine.h"

#include <algorithm>

namespace tessera::engines {

using sc_core::sc_time;

bool overlaps(const arch::AccessPattern& x, const arch::AccessPattern& y) {
  if (!x.valid() || !y.valid() || x.memory != y.memory) return false;
  if (x.start_partition + x.partition_count <= y.start_partition ||
      y.start_partition + y.partition_count <= x.start_partition)
    return false;
  const auto [xlo, xhi] = x.byte_extent();
  const auto [ylo, yhi] = y.byte_extent();
  return xlo < yhi && ylo < xhi;
}

ElementwiseEngine::ElementwiseEngine(sc_core::sc_module_name name, arch::Engine kind,
                                     const arch::EngineConfig& engine, core::CoreContext& ctx)
    : Engine(name, kind, engine.clock_ghz, ctx), engine_(engine) {}

sc_time ElementwiseEngine::schedule(std::initializer_list<const arch::AccessPattern*> reads,
                                    std::initializer_list<const arch::AccessPattern*> writes,
                                    const ElementwiseCycles& stream) {
  const sc_time now = sc_core::sc_time_stamp();
  const sc_time period = clock_period();
  const sc_time overhead = cycles(static_cast<double>(engine_.overhead_cycles));
  const sc_time interval = cycles(static_cast<double>(engine_.min_interval_cycles));

  // The front end takes the instruction when it has room (a pipelined one
  // the minimum interval after the previous instruction entered, otherwise
  // once that one is done), and not before every result it reads is committed.
  sc_time front = now;
  if (any_) front = std::max(front, engine_.pipelined ? front_prev_ + interval : done_);
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [&](const PendingWrite& w) { return w.committed <= now; }),
                 pending_.end());
  sc_time dependency_ready = sc_core::SC_ZERO_TIME;
  for (const arch::AccessPattern* r : reads)
    for (const PendingWrite& w : pending_)
      if (overlaps(*r, w.ap)) dependency_ready = std::max(dependency_ready, w.committed);
  front = std::max(front, dependency_ready);
  // Elements stream once the overhead is paid and the lanes are free.
  const sc_time start = std::max(front + overhead, done_);
  const sc_time end = start + cycles(stream.total);

  // Busy from the later of this instruction's arrival and the previous one's
  // last element, so that an overhead hidden under that one is not counted
  // again. Waiting for a result's commit is SBUF/PSUM time beyond the
  // compute: memory stall, like the strided-access penalty.
  const sc_time busy_from = std::max(now, done_);
  const double commit_wait = dependency_ready > busy_from ? (dependency_ready - busy_from) / period : 0.0;
  cycles(0, stream.memory_stall + commit_wait);  // counts the memory stall
  add_busy(end - busy_from);

  const sc_time commit = end + cycles(static_cast<double>(engine_.dependency_cycles));
  for (const arch::AccessPattern* w : writes)
    if (w->valid()) pending_.push_back({*w, commit});
  const sc_time previous_start = any_ ? stream_prev_ : sc_core::SC_ZERO_TIME;
  front_prev_ = front;
  stream_prev_ = start;
  done_ = end;
  committed_ = commit;
  any_ = true;

  if (!engine_.pipelined) return end - now;
  // The front end holds two instructions: the next may enter once the
  // interval has passed and the instruction before this one is streaming.
  const sc_time next = std::max(front + interval, previous_start);
  return next > now ? next - now : sc_core::SC_ZERO_TIME;
}

}  // namespace tessera::engines
