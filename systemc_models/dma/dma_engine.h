// A DMA engine as the core sees it: `queues` descriptor rings in device
// memory, served round-robin, each in order, and an initiator socket into the
// interconnect. Two models implement it: the fast model below, and the
// Verilated RTL behind an AXI4-to-TLM bridge (cosim/).
//
// The fast model: one DMA engine's queues served round-robin, each in order. A descriptor (arch/dma_descriptor.h) moves an
// access pattern of elements from its source to its destination, then, if it
// asks, writes its semaphore increment; the engine writes the descriptor's
// status word back either way. Errors stop the queue with a code
// (arch::DmaError) and stop the run, naming the descriptor.
//
// This is the fast model: it walks the same bursts as the RTL
// (rtl/dma/tsr_dma_walker.sv) as TLM transactions, each at the cycle the RTL
// would issue it (fetch one ahead, outstanding read and write slots, R and W
// channels, a one-descriptor completion stage), and times them from the
// memories' own answers. It waits per access rather than per cycle; its rules
// and their measured agreement with the RTL are in docs/cosim.md.
#pragma once

#include "arch/dma_descriptor.h"
#include "core/core_context.h"
#include "dma/descriptor_sampler.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <array>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace tessera::dma {

struct QueueState {
  std::uint64_t ring_base = 0;
  std::uint32_t ring_size = 0;  // descriptors
  std::uint32_t head = 0;
  std::uint32_t tail = 0;
  arch::DmaError error = arch::DmaError::kNone;
  std::uint32_t error_index = 0;
  std::uint64_t descriptors_done = 0;
};

class DmaEngineBase : public sc_core::sc_module {
public:
  tlm_utils::simple_initiator_socket<DmaEngineBase> socket;  // to the interconnect

  // `busy_description` says what counts as busy for the model.
  DmaEngineBase(sc_core::sc_module_name name, std::uint32_t queues, trace::Stats& stats, const char* busy_description);

  virtual void configure_queue(std::uint32_t queue, std::uint64_t ring_base, std::uint32_t ring_size) = 0;
  // The doorbell: `count` more descriptors, the first at `address`, become
  // visible to the engine `visible_after` from now (the model applies the new
  // tail then, from pending_). Returns an error, or empty.
  std::string doorbell(std::uint32_t queue, std::uint64_t address, std::uint32_t count,
                       sc_core::sc_time visible_after);
  const QueueState& queue(std::uint32_t q) const { return queues_.at(q); }
  std::uint32_t rank() const { return rank_; }  // the engine number in the name ("dma3" is 3)

  // When each descriptor's status write-back completed, in completion order:
  // what the fast model is calibrated against the RTL on.
  struct Completion {
    std::uint32_t queue;
    std::uint32_t index;
    sc_core::sc_time done;
  };
  const std::vector<Completion>& completions() const { return completions_; }

  void set_wave_probe(trace::WaveProbe* probe) { waves_ = probe; }
  // Every doorbell: descriptors [first, first + count) of a queue, visible
  // to the engine from `visible` (what a trace places descriptors by).
  struct Doorbell {
    std::uint32_t queue, first, count;
    sc_core::sc_time visible;
  };
  const std::vector<Doorbell>& doorbells() const { return doorbells_; }

  // What every DMA engine model counts.
  struct DmaEngineStats : trace::Group {
    DmaEngineStats(trace::Stats& stats, const sc_core::sc_object& owner, const char* busy_description);
    trace::Scalar bytes, descriptors, busy_ns;
  };
  const DmaEngineStats& stats() const { return stats_; }

protected:
  DmaEngineStats stats_;

  struct PendingTail {
    sc_core::sc_time visible;
    std::uint32_t queue;
    std::uint32_t tail;
  };

  std::vector<QueueState> queues_;
  std::deque<PendingTail> pending_;  // doorbells not yet visible, in time order
  sc_core::sc_event doorbell_event_;

  // Engines that reach memory in the same cycle do so in engine order (engine
  // e after e delta cycles), so that memory sees one order whichever model
  // runs and however SystemC orders its processes: call after reaching the
  // cycle's time, before any access in it.
  void take_turn();

  std::vector<Completion> completions_;
  std::vector<Doorbell> doorbells_;

  // Reports queue q's depth (descriptors visible and not completed) to the waveform.
  void wave_queue(std::uint32_t q) const {
    if (!waves_) return;
    const QueueState& s = queues_[q];
    waves_->dma_queue_depth(rank_, q, s.ring_size ? (s.tail + s.ring_size - s.head) % s.ring_size : 0);
  }

private:
  trace::WaveProbe* waves_ = nullptr;
  std::uint32_t rank_ = 0;
  sc_core::sc_time turn_taken_ = sc_core::SC_ZERO_TIME;
  bool turn_ever_ = false;
};

class DmaEngine : public DmaEngineBase {
public:
  SC_HAS_PROCESS(DmaEngine);
  DmaEngine(sc_core::sc_module_name name, core::CoreContext& ctx, std::uint32_t queues);

  void configure_queue(std::uint32_t queue, std::uint64_t ring_base, std::uint32_t ring_size) override;
  sc_core::sc_time clock_period() const { return period_; }
  // Sampled fidelity: every descriptor run is offered to `sampler` (not owned).
  void set_sampler(DescriptorSampler* sampler) { sampler_ = sampler; }

private:
  // A descriptor read by the fetch unit, which runs one descriptor ahead.
  struct Fetched {
    std::uint32_t queue = 0, index = 0;
    std::array<std::uint8_t, arch::kDmaDescriptorBytes> raw{};
    sc_core::sc_time ready;
    bool error = false;
  };
  // A descriptor whose data is written, waiting for its write responses
  // before its semaphore and status writes (the RTL's completion stage).
  struct PendingCompletion {
    std::uint32_t queue, index;
    sc_core::sc_time ready;  // when the completion writes may go out
    bool semaphore;
    std::uint64_t sem_addr;
    std::uint32_t sem_value;
  };

  void run();
  void apply_due_doorbells();
  // The next queue with a descriptor to fetch, round-robin after `after`; -1 if none.
  std::int64_t ready_queue(std::uint32_t after) const;
  Fetched fetch(std::uint32_t q, sc_core::sc_time issue);
  // Moves the descriptor in `f` from the queue's ring through memory; returns
  // when its last write beat is out (the next descriptor may start).
  void execute(Fetched f);
  // When the oldest pending completion's writes go out, given the W channel.
  sc_core::sc_time completion_time() const;
  sc_core::sc_time write_slot_free() const;   // when a write may take an outstanding slot
  void write_answered(const sc_core::sc_time& b);  // B responses come back in order
  void complete_oldest();
  void fail(std::uint32_t q, std::uint32_t index, arch::DmaError code, const std::string& detail);
  // b_transport at time `at`: waits until then (transactions go to memory in
  // time order, as the RTL's do) and returns when memory answered.
  sc_core::sc_time transport_at(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data,
                                std::uint32_t length, sc_core::sc_time at, bool& error);
  sc_core::sc_time on_clock(const sc_core::sc_time& t) const;  // the first DMA clock edge at or after t

  core::CoreContext& ctx_;
  sc_core::sc_time period_;
  std::uint32_t max_outstanding_;
  std::vector<std::uint32_t> fetch_ptr_;         // per queue: next descriptor to fetch
  std::vector<sc_core::sc_time> tail_visible_;  // per queue: when its latest doorbell landed
  std::uint32_t last_fetched_queue_;  // round-robin: the search starts after it
  std::optional<Fetched> prefetched_;
  std::deque<PendingCompletion> completions_pending_;
  sc_core::sc_time last_fetch_ready_, last_handoff_;
  sc_core::sc_time w_free_, b_last_;  // the engine's W channel and in-order write responses
  std::deque<sc_core::sc_time> writes_b_;  // B times of the last max_outstanding writes
  bool log_ = false;
  DescriptorSampler* sampler_ = nullptr;

};

}  // namespace tessera::dma
