// The core's hardware semaphores. Engines wait for a semaphore to reach a
// value and increment semaphores when work completes; DMA engines increment
// them by writing the increment to the semaphore's address (a TLM write).
#pragma once

#include "trace/stats.h"
#include "trace/wave_probe.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <functional>
#include <map>
#include <queue>
#include <string>
#include <vector>

namespace tessera::core {

class Semaphores : public sc_core::sc_module {
public:
  tlm_utils::simple_target_socket<Semaphores> socket;

  // `wake_latency`: from the increment that satisfies a wait to the waiter running.
  SC_HAS_PROCESS(Semaphores);
  Semaphores(sc_core::sc_module_name name, std::size_t count, sc_core::sc_time wake_latency, trace::Stats& stats);

  std::size_t size() const { return values_.size(); }
  std::uint32_t value(std::size_t index) const { return values_.at(index); }
  // The value a wait made now compares: as it was before the first
  // increment of the current picosecond (see wait_at_least).
  std::uint32_t visible_value(std::size_t index) const;
  void increment(std::size_t index, std::uint32_t delta);
  // The same, taking effect at simulated time `when` (>= now): a TLM write
  // annotated with a delay lands when its delay has passed, not when sent.
  void increment_at(std::size_t index, std::uint32_t delta, const sc_core::sc_time& when);

  // Blocks the calling SC_THREAD until semaphore `index` >= `target`. `who`
  // names the waiter for deadlock reports. A wait sees the value as it was
  // when its picosecond began, as a register read in the increment's own
  // cycle would: reached by an increment of the same picosecond, the waiter
  // wakes for it wake_latency later, whether that increment was made before
  // or after the wait in SystemC's order of the picosecond's processes (an
  // order no model should depend on).
  void wait_at_least(std::size_t index, std::uint32_t target, const std::string& who);

  // Waiters still blocked, as "who: sem[i] >= v (value now u)".
  std::vector<std::string> blocked_waiters() const;

  void set_wave_probe(trace::WaveProbe* probe) { waves_ = probe; }

  struct SemaphoreStats : trace::Group {
    SemaphoreStats(trace::Stats& stats, const sc_core::sc_object& owner);
    trace::Scalar increments, waits;
  };
  const SemaphoreStats& stats() const { return stats_; }

  // Every increment as it landed, when asked to keep them (for traces: the
  // moment a DMA's semaphore write released its waiters).
  struct Increment {
    std::uint32_t index;
    std::uint32_t delta;
    sc_core::sc_time at;
  };
  void keep_increments(bool on) { keep_increments_ = on; }
  // Room for `n` kept increments at once (a program's count of them, when
  // it knows it): a large run's half million would otherwise be copied, and
  // faulted in afresh, at each doubling.
  void expect_increments(std::size_t n) {
    if (keep_increments_) increment_log_.reserve(n);
  }
  const std::vector<Increment>& increments() const { return increment_log_; }
  void release_increments() { std::vector<Increment>().swap(increment_log_); }

private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  void apply_due();  // SC_METHOD: applies the delayed increments whose time has come

  struct Waiter {
    std::size_t index;
    std::uint32_t target;
  };

  std::vector<std::uint32_t> values_;
  // Each semaphore's value before the first increment of the picosecond
  // of its last increment (changed_at_), for visible_value.
  std::vector<std::uint32_t> value_before_;
  std::vector<sc_core::sc_time> changed_at_;
  sc_core::sc_event changed_;
  sc_core::sc_time wake_latency_;
  std::map<std::string, Waiter> waiting_;
  // Increments written ahead of their time (a DMA engine run ahead of
  // SystemC), applied in time order and, at one time, in the order they were
  // written: a heap on (time, arrival). A multimap did the same with a node
  // allocated per increment, half a million of them on a large GEMM.
  struct Delayed {
    sc_core::sc_time when;
    std::uint64_t arrival;
    std::size_t index;
    std::uint32_t delta;
    bool operator>(const Delayed& o) const { return when != o.when ? when > o.when : arrival > o.arrival; }
  };
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<Delayed>> delayed_;
  std::uint64_t arrivals_ = 0;
  sc_core::sc_event delayed_event_;
  SemaphoreStats stats_;
  trace::WaveProbe* waves_ = nullptr;
  bool keep_increments_ = false;
  std::vector<Increment> increment_log_;
};

}  // namespace tessera::core
