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
// (rtl/dma/tsr_dma_walker.sv) as TLM transactions, overlapping up to
// `max_outstanding` reads, and times them from the memories' own answers.
#pragma once

#include "arch/dma_descriptor.h"
#include "core/core_context.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <deque>
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

  explicit DmaEngineBase(sc_core::sc_module_name name) : sc_module(name), socket("socket") {}

  virtual void configure_queue(std::uint32_t queue, std::uint64_t ring_base, std::uint32_t ring_size) = 0;
  // The doorbell: `count` more descriptors, the first at `address`, become
  // visible to the engine `visible_after` from now. Returns an error, or empty.
  virtual std::string doorbell(std::uint32_t queue, std::uint64_t address, std::uint32_t count,
                               sc_core::sc_time visible_after) = 0;
  virtual const QueueState& queue(std::uint32_t q) const = 0;

  // When each descriptor's status write-back completed, in completion order:
  // what the fast model is calibrated against the RTL on.
  struct Completion {
    std::uint32_t queue;
    std::uint32_t index;
    sc_core::sc_time done;
  };
  const std::vector<Completion>& completions() const { return completions_; }

protected:
  std::vector<Completion> completions_;
};

class DmaEngine : public DmaEngineBase {
public:
  SC_HAS_PROCESS(DmaEngine);
  DmaEngine(sc_core::sc_module_name name, core::CoreContext& ctx, std::uint32_t queues);

  void configure_queue(std::uint32_t queue, std::uint64_t ring_base, std::uint32_t ring_size) override;
  std::string doorbell(std::uint32_t queue, std::uint64_t address, std::uint32_t count,
                       sc_core::sc_time visible_after) override;
  const QueueState& queue(std::uint32_t q) const override { return queues_.at(q); }
  sc_core::sc_time clock_period() const { return period_; }

private:
  struct PendingTail {
    sc_core::sc_time visible;
    std::uint32_t queue;
    std::uint32_t tail;
  };

  void run();
  void apply_due_doorbells();
  // Runs the descriptor at the head of `q`; returns when the engine may start the next one.
  void execute(std::uint32_t q);
  void fail(std::uint32_t q, arch::DmaError code, const std::string& detail);
  sc_core::sc_time transport(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data, std::uint32_t length,
                             sc_core::sc_time at, bool& error);

  core::CoreContext& ctx_;
  sc_core::sc_time period_;
  std::uint32_t max_outstanding_;
  std::vector<QueueState> queues_;
  std::deque<PendingTail> pending_;
  sc_core::sc_event doorbell_event_;
  std::uint32_t next_queue_ = 0;  // round-robin pointer
  // The RTL fetches one descriptor ahead: when the previous fetch's data came
  // back, and when the previous descriptor handed off to its completion stage.
  sc_core::sc_time last_fetch_ready_, last_handoff_;
  std::vector<sc_core::sc_time> tail_visible_;  // per queue: when its latest doorbell landed
  sc_core::sc_time on_clock(const sc_core::sc_time& t) const;  // the first DMA clock edge at or after t

  trace::Counter& bytes_;
  trace::Counter& descriptors_;
  trace::Counter& busy_ns_;
};

}  // namespace tessera::dma
