// The timing the vector, scalar and GpSimd engines share (docs/core.md,
// "Vector, scalar and GpSimd timing"). An instruction spends
// `overhead_cycles` in the engine's front end (decoding it, starting its
// SBUF/PSUM accesses), then streams its elements through the lanes. A
// pipelined engine (vector, scalar) takes the next instruction into its front
// end `min_interval_cycles` after this one, while this one streams, so
// back-to-back independent instructions cost about max(N, min interval) each
// and the overhead shows only after an idle engine; an instruction that reads
// what an earlier one of the same engine wrote must wait until that result is
// committed (`dependency_cycles` after its last element) before its front end
// starts, so a chain of them pays overhead + N (+ dependency) each.
#pragma once

#include "core/engine.h"
#include "engines/operand_io.h"

#include <initializer_list>
#include <vector>

namespace tessera::engines {

class ElementwiseEngine : public core::Engine {
protected:
  ElementwiseEngine(sc_core::sc_module_name name, arch::Engine kind, const arch::EngineConfig& engine,
                    core::CoreContext& ctx);

  // Schedules an instruction that reads `reads`, writes `writes` (invalid
  // operands are skipped) and streams for `stream` cycles; adds its busy time
  // and returns how long the sequencer waits before it may hand over the next
  // instruction (the front end has room for it then).
  sc_core::sc_time schedule(std::initializer_list<const arch::AccessPattern*> reads,
                            std::initializer_list<const arch::AccessPattern*> writes, const ElementwiseCycles& stream);

  // Semaphore increments, DMA triggers and End wait until the results are committed.
  sc_core::sc_time work_done_at() const override { return committed_; }
  // Busy: the time from an instruction's front end (or the end of the one
  // before it, when they overlap) to its last element, each cycle once.
  bool reports_own_busy() const override { return true; }

private:
  struct PendingWrite {
    arch::AccessPattern ap;
    sc_core::sc_time committed;
  };

  const arch::EngineConfig& engine_;
  std::vector<PendingWrite> pending_;  // writes not yet committed when last looked at
  sc_core::sc_time front_prev_;        // when the previous instruction entered the front end
  sc_core::sc_time stream_prev_;       // when it started streaming
  sc_core::sc_time done_;              // last element of everything issued
  sc_core::sc_time committed_;         // and its results committed
  bool any_ = false;
};

// Whether two operands touch a common byte (same memory, overlapping
// partitions and per-partition byte extents).
bool overlaps(const arch::AccessPattern& x, const arch::AccessPattern& y);

}  // namespace tessera::engines
