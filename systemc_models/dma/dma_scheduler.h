// Runs the fast DMA engines of one core without a SystemC process switch per
// memory access. Each engine's model is a state machine (DmaEngine::step) that
// stops at every point where its one-thread form waited; the scheduler takes
// the engine with the earliest next step, the lower engine number first at the
// same time (the order DmaTurnOrder gives the engines' own threads), and runs
// it at that time, which may be ahead of SystemC's: its accesses reach memory
// with the difference as their annotated delay.
//
// How far ahead: the engines' only input from the rest of the core is the
// doorbell, which a sequencer rings at SystemC's time and which the engine sees
// dma.start_latency_ns later (the lookahead). So no process can change what an
// engine does before SystemC's time plus the lookahead, and every step before
// then runs in the same order, against the same memory state, as when each
// engine waited in SystemC for its own time. The scheduler then sleeps until a
// picosecond before the next step, not until it is within a lookahead: each
// wake-up takes a whole lookahead of steps (hundreds of accesses) instead of
// the few that came within reach since the last one, and every step at a time
// is still taken before any other process of that time can observe it. What
// other processes observe follows their own time: a semaphore write is applied
// by the semaphores at its time (Semaphores::increment_at), and a doorbell
// checks a ring's room against the heads completed by then.
//
// On by default. Without it (TESSERA_DMA_RUN_AHEAD=0, or run_ahead(false))
// each engine steps in its own thread (DmaEngine::run) with exactly the waits
// the one-thread model had; both ways give the same run. That rests on one
// rule outside this file: two doorbells whose tails land in the same
// picosecond are applied in queue order (DmaEngineBase::doorbell), not in the
// order their sequencers rang them. Sequencers woken at the same picosecond
// run in the order SystemC takes their timed notifications from its queue, a
// binary heap that is not first-in first-out for equal times, so that order
// depends on every other timed notification in the heap, the engines' waits
// among them, and running the engines here changes it.
//
// A chip's cores share one scheduler (DmaChipOrder): their engines meet at
// one HBM and at the fabric, so they take their steps in one order, core 0's
// engines before core 1's at the same time, as their threads take turns in
// the chip's one DmaTurnOrder. The lookahead holds for every core alike: an
// engine is rung only by its own core's sequencers, and a peer's semaphore
// write or SBUF access lands at its own time as a local one does.
//
// Only memories whose answers depend on the order requests come in need the
// turns: HBM books its channels first come, first served, and the semaphores
// count. SBUF and PSUM time an access from its address and length alone, so
// in a timing-only run an engine makes its SBUF and PSUM accesses at once,
// ahead of its turn, up to the horizon, and waits for the turn again at its
// next access to the others (DmaEngine::wait_turn). With data the turns stay,
// so that bytes land in the order the engines' threads would write them.
//
// Also never with a lookahead of 0, a waveform being recorded (its probes
// sample engine state at SystemC's time) or the sampled fidelity (its
// sampler is told of each descriptor as it finishes).
#pragma once

#include "core/core_context.h"
#include "dma/dma_time.h"
#include "trace/sim_time.h"

#include <systemc>

#include <cstdint>
#include <optional>
#include <vector>

namespace tessera::dma {

class DmaEngine;

class DmaScheduler : public sc_core::sc_module {
public:
  SC_HAS_PROCESS(DmaScheduler);
  DmaScheduler(sc_core::sc_module_name name, sc_core::sc_time lookahead);

  // Engines in their same-time order (a core's in rank order, a chip's core
  // by core); before the simulation starts.
  void add(DmaEngine& engine);
  // Whether the scheduler runs the engines (decided when elaboration ends).
  bool active() const { return active_; }
  // Whether to run the engines ahead where it can (before the simulation
  // starts). It overrides TESSERA_DMA_RUN_AHEAD, which sets it for every core
  // (0 to step each engine in its own thread); without either, on.
  void run_ahead(bool on) { requested_ = on; }
  // How often the scheduler woke in SystemC, and how many engine steps it
  // took: a wake-up takes a lookahead's worth of steps, not one.
  std::uint64_t wake_ups() const { return wake_ups_; }
  std::uint64_t steps() const { return steps_; }
  // SystemC's time while the scheduler runs the engines, which it stands
  // still for, read once per wake-up. Valid only during their steps, in
  // run(); otherwise the last wake-up's time.
  const sc_core::sc_time& systemc_time() const { return systemc_time_; }
  // SystemC's time plus the lookahead: no doorbell rung from now on changes
  // a step before it. Valid, like systemc_time(), during the steps.
  Time horizon() const { return horizon_; }

  // A doorbell of the engine in `slot` becomes visible `visible_after` from
  // now, and the engine's next step is `next`: it may be within the
  // lookahead of a time before the scheduler's next wake-up.
  void doorbell(std::size_t slot, Time next, const sc_core::sc_time& visible_after);

private:
  void end_of_elaboration() override;
  void run();
  // The tournament over the engines' next steps: after one engine's step
  // changes, replaying its path to the root is log2(engines) comparisons,
  // where a scan of every engine at each step cost 7 % of a GEMM's run.
  void replay(std::size_t slot);
  // An engine's place in the tournament: its next step's time in the high
  // bits, its slot in the low slot_bits_, so that the lower slot wins at the
  // same time. 64 bits, not 128: a replay's compares were 10 % of the
  // scheduler's instructions. Times from key_time_cap_ on (2^60 ps, about 13
  // days, with 16 engines; 2^52 ps, 75 minutes, with a chip's most, 64 cores
  // of 64 engines) share one key time; the run ends at
  // arch::kMaxSimulatedSeconds (an hour), before, and never takes such a step.
  using Key = std::uint64_t;
  Key key(std::size_t slot) const {
    return std::min<std::uint64_t>(next_[slot].value(), key_time_cap_) << slot_bits_ | slot;
  }
  std::size_t slot_of(Key k) const { return static_cast<std::size_t>(k & slot_mask_); }

  // The cores the engines belong to, once each: an error in any of them
  // stops the run. Checked as the scheduler wakes; while it steps the
  // engines no other process runs, and only the engine stepping can fail.
  std::vector<const core::CoreContext*> cores_;
  sc_core::sc_time lookahead_;
  Time resolution_;  // SystemC's time resolution (a library call), from elaboration's end on
  std::vector<DmaEngine*> engines_;
  // Each engine's next step, by slot (rank order). The tree's padding leaves
  // past the last engine hold kNever and, having higher slots, lose
  // every tie.
  std::vector<Time> next_;
  // winner_[k] is the key of the earliest step under node k; node 1 is the
  // root, leaves_ + slot the leaves. Keys, not slots: a replay's compares
  // then read only the siblings on the path, none of which it changes, and
  // carry the winner in registers (slots to look up made each level wait for
  // the one below: no faster than the scan in CPU time).
  std::vector<Key> winner_;
  std::size_t leaves_ = 1;
  unsigned slot_bits_ = 0;  // log2(leaves_)
  std::uint64_t slot_mask_ = 0, key_time_cap_ = ~std::uint64_t{0};
  bool active_ = false;
  std::optional<bool> requested_;
  sc_core::sc_event wake_;
  Time planned_ = kNever;  // when run() wakes next (never: only on wake_)
  // The latest step taken: SystemC's time is brought there before the
  // scheduler idles, so that a run ends at the time it ended at when each
  // engine waited in SystemC for its own steps.
  Time reached_;
  std::uint64_t wake_ups_ = 0, steps_ = 0;
  sc_core::sc_time systemc_time_;
  Time horizon_;
};

}  // namespace tessera::dma
