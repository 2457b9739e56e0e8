// One engine of the core with its sequencer: fetches its instruction stream
// from device memory through the interconnect (prefetching ahead of
// execution), executes control instructions itself (semaphores, DMA
// triggers, end) and hands compute instructions to the engine model.
#pragma once

#include "arch/isa.h"
#include "core/core_context.h"

#include <array>
#include <map>
#include <string>
#include <vector>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

namespace tessera::core {

class Engine : public sc_core::sc_module {
public:
  tlm_utils::simple_initiator_socket<Engine> fetch;  // to the interconnect

  SC_HAS_PROCESS(Engine);
  // `lanes`: more tracks for its work in traces, beside its own ("weights"
  // makes "tensor weights"), for units that work at the same time.
  Engine(sc_core::sc_module_name name, arch::Engine kind, double clock_ghz, CoreContext& ctx,
         const std::vector<std::string>& lanes = {});

  // The stream this engine runs: `bytes` bytes at device address `address`.
  void set_program(std::uint64_t address, std::uint64_t bytes);

  arch::Engine engine_kind() const { return kind_; }
  bool finished() const { return finished_; }
  sc_core::sc_time clock_period() const { return period_; }
  sc_core::sc_time end_time() const { return end_time_; }
  sc_core::sc_time first_issue_time() const { return first_issue_time_; }
  // Time stalled on each semaphore (by semaphore index), in ns: the stall reasons.
  const std::map<std::uint16_t, double>& semaphore_wait_by_semaphore() const { return wait_by_semaphore_; }

  struct EngineStats : trace::Group {
    EngineStats(trace::Stats& stats, const sc_core::sc_object& owner);
    trace::Scalar instructions, busy_ns, semaphore_wait_ns, fetch_wait_ns, memory_stall_ns;
  };
  const EngineStats& stats() const { return stats_; }

  // What each instruction of the stream cost, by stream index (profiles by
  // call site): busy time counted while it was the current instruction (a
  // pipelined engine's work learnt later counts for the instruction that
  // waited for it), time blocked on its semaphore (a SemWait), and on its
  // fetch. Each adds up over the stream to the engine's statistic. And when
  // the sequencer held it: from its issue (its fetch done) to when the next
  // could issue (a SemWait's release, a drain's end), and when its own work
  // ran on the engine (its slices on the engine's first lane: a pipelined
  // engine works on it after the sequencer has moved on), for the critical
  // path (docs/profiling.md); -1 where none.
  struct InstructionCost {
    double busy_ns = 0, semaphore_wait_ns = 0, fetch_wait_ns = 0;
    double issue_ns = -1, done_ns = -1;
    double work_start_ns = -1, work_end_ns = -1;
  };
  const std::vector<InstructionCost>& instruction_costs() const { return costs_; }
  // Frees the records above once nothing will read them (NeuronCore::release_records).
  void release_costs() { std::vector<InstructionCost>().swap(costs_); }

protected:
  // Executes one compute instruction functionally and returns how long the
  // engine is busy with it. Throws std::exception with a message naming the
  // broken rule; the sequencer adds which instruction it was.
  virtual sc_core::sc_time execute(const arch::Instruction& in) = 0;

  sc_core::sc_time cycles(double n) const;
  // `n` cycles of which `memory_stall` were spent on SBUF/PSUM access beyond
  // the compute (e.g. the strided-access penalty): counted as memory stall.
  sc_core::sc_time cycles(double n, double memory_stall);
  // The same for a cost with `total` and `memory_stall` cycles (engines/operand_io.h).
  template <class Cost>
  sc_core::sc_time cycles_of(const Cost& c) {
    return cycles(c.total, c.memory_stall);
  }

  // Engines whose instructions overlap (the tensor engine pipelines them)
  // report their own busy time with add_busy instead of the issue time.
  virtual bool reports_own_busy() const { return false; }
  // Busy time `t` of the current instruction, drawn in traces from when the
  // engine is free of the work before it.
  void add_busy(const sc_core::sc_time& t);
  // Busy time counted without a slice (an engine that draws its own).
  void count_busy(const sc_core::sc_time& t);
  // A slice of the current instruction's work known to run over [start,
  // start + t) (a pipelined unit's accept time), on lane `lane` (0: the
  // engine's own track, i: the i-th of the constructor's lanes).
  void trace_work(const sc_core::sc_time& start, const sc_core::sc_time& t, std::size_t lane);

  // When the work already issued (e.g. a pipelined matmul still leaving the
  // array) is complete. Semaphore increments, DMA triggers and End wait for
  // it, so that whoever they signal sees finished results.
  virtual sc_core::sc_time work_done_at() const { return sc_core::sc_time_stamp(); }
  // Called before work_done_at() when draining: an engine whose model runs
  // ahead of or behind simulated time (the tensor engine on RTL, whose results
  // leave the array late) finishes its issued work here, delivering results
  // and learning when the work completes.
  virtual void settle() {}

  CoreContext& ctx_;

private:
  void run();
  arch::Instruction fetch_next(std::uint64_t& pc, sc_core::sc_time& fetch_ready);
  // Makes sure the fetch block holding stream byte `pc` has been requested
  // (and the next kPrefetchBlocks after it); returns when that block arrives.
  // Inline when those are requested already, as for nearly every instruction.
  sc_core::sc_time block_ready(std::uint64_t pc) {
    const std::uint64_t block = pc / kFetchBlockBytes;
    return block + kPrefetchBlocks < block_time_.size() ? block_time_[block] : request_blocks(block);
  }
  sc_core::sc_time request_blocks(std::uint64_t block);  // block_ready() when blocks are still to request
  void read_device(std::uint64_t address, std::uint8_t* out, std::uint64_t length, sc_core::sc_time& at);
  void wait_for_clock_edge();
  void drain();
  void wave_state(trace::WaveProbe::EngineState s);

  // The sequencer fetches its stream in blocks and keeps a few in flight
  // ahead of the instruction it executes, hiding device-memory latency.
  static constexpr std::uint64_t kFetchBlockBytes = 1024;
  static constexpr std::uint64_t kPrefetchBlocks = 2;
  // The fetch buffer holds the last kBufferBlocks blocks fetched, block b in
  // slot b % kBufferBlocks, so stream byte o is buffer_[o % buffer_.size()].
  // An instruction spans at most two blocks and the fetch runs at most
  // kPrefetchBlocks past its last, so the blocks it reads are still held
  // when it is decoded. (A copy of the whole stream cost the 4096x8192x8192
  // GEMM 39 MB, a tenth of its peak memory.) Nothing is read from a slot
  // before its block is fetched into it.
  static constexpr std::uint64_t kBufferBlocks = 8;
  static_assert(arch::kMaxInstrBytes <= kFetchBlockBytes && kBufferBlocks >= 2 + kPrefetchBlocks,
                "an instruction being decoded must still be in the fetch buffer");
  std::array<std::uint8_t, kBufferBlocks * kFetchBlockBytes> buffer_{};
  // Copies stream bytes [at, at + n) out of the fetch buffer.
  void copy_fetched(std::uint64_t at, std::size_t n, std::uint8_t* out) const;
  std::vector<sc_core::sc_time> block_time_;  // arrival time of each requested block
  sc_core::sc_time fetch_port_free_;          // when the fetch port can send the next request

  arch::Engine kind_;
  sc_core::sc_time period_;
  std::uint64_t program_address_ = 0;
  std::uint64_t program_bytes_ = 0;
  bool finished_ = false;
  sc_core::sc_time end_time_;
  sc_core::sc_time first_issue_time_;

  // The instruction being executed, for the trace's slices.
  const arch::Instruction* current_ = nullptr;
  std::uint64_t current_index_ = 0;
  int track_ = -1;                     // this engine's trace track
  std::vector<int> lane_tracks_;       // its lanes' tracks: [0] is track_
  int stall_track_ = -1;               // and the track of its stalls
  sc_core::sc_time track_free_;        // end of the latest busy slice on track_: slices stay sequential
  // The slice ending last, on whichever lane: the work a SemIncr announces.
  sc_core::sc_time last_slice_end_;
  int last_slice_track_ = -1;
  std::map<std::uint16_t, double> wait_by_semaphore_;
  std::vector<InstructionCost> costs_;

  EngineStats stats_;
};

}  // namespace tessera::core
