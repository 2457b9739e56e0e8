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
// and their measured agreement with the RTL are in docs/cosim.md. It is a
// state machine (DmaEngine::step) that stops at each of those waits, stepped
// by its own SystemC thread or, opt-in, with the core's other fast engines by
// a DmaScheduler that runs them ahead of SystemC's time (dma/dma_scheduler.h).
#pragma once

#include "arch/dma_descriptor.h"
#include "core/core_context.h"
#include "core/interconnect.h"
#include "dma/bus_clock.h"
#include "dma/dma_time.h"
#include "dma/descriptor_sampler.h"
#include "dma/dma_pattern.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
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

  DmaEngineBase(sc_core::sc_module_name name, std::uint32_t queues, trace::Stats& stats);

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
  // When each descriptor began to move data (its first read request goes
  // out), in start order: a trace splits its time into queued and moving.
  struct Start {
    std::uint32_t queue;
    std::uint32_t index;
    sc_core::sc_time at;
  };
  const std::vector<Start>& starts() const { return starts_; }

  void set_wave_probe(trace::WaveProbe* probe) { waves_ = probe; }
  // Every doorbell: descriptors [first, first + count) of a queue, visible
  // to the engine from `visible` (what a trace places descriptors by).
  struct Doorbell {
    std::uint32_t queue, first, count;
    sc_core::sc_time visible;
  };
  const std::vector<Doorbell>& doorbells() const { return doorbells_; }
  // Frees completions(), starts() and doorbells() once nothing will read them
  // (NeuronCore::release_records).
  void release_records() {
    std::vector<Completion>().swap(completions_);
    std::vector<Start>().swap(starts_);
    std::vector<Doorbell>().swap(doorbells_);
  }

  // What every DMA engine model counts.
  struct DmaEngineStats : trace::Group {
    DmaEngineStats(trace::Stats& stats, const sc_core::sc_object& owner);
    trace::Scalar bytes, descriptors;
    // Time a descriptor moves data, from its first read beat to its last
    // write beat, in both models (the RTL's moving_o): what a profile shows as
    // a transfer. The fetch, decode and first read latency before it are the
    // tail of the trigger-to-start path; the completion writes after it the
    // start of the semaphore's way back.
    trace::Scalar busy_ns;
  };
  const DmaEngineStats& stats() const { return stats_; }

protected:
  DmaEngineStats stats_;

  // What doorbell() checks a ring's room against: the head as it stands now.
  // An engine that runs ahead of SystemC time overrides it, so that a
  // completion in its future does not make room in the present.
  virtual std::uint32_t head_for_doorbell(std::uint32_t q) { return queues_[q].head; }
  // Tells the engine a doorbell becomes visible `visible_after` from now;
  // the base notifies doorbell_event_.
  virtual void ring(const sc_core::sc_time& visible_after) { doorbell_event_.notify(visible_after); }

  struct PendingTail {
    sc_core::sc_time visible;
    std::uint32_t queue;
    std::uint32_t tail;
  };

  std::vector<QueueState> queues_;
  std::deque<PendingTail> pending_;  // doorbells not yet visible, by (visible, queue)
  sc_core::sc_event doorbell_event_;

  // Engines that reach memory in the same cycle do so in engine order (engine
  // e after e delta cycles), so that memory sees one order whichever model
  // runs and however SystemC orders its processes: call after reaching the
  // cycle's time, before any access in it. The RTL engines use it; the fast
  // engines keep the same order through DmaTurnOrder, without delta cycles.
  void take_turn();

  std::vector<Completion> completions_;
  std::vector<Start> starts_;
  std::vector<Doorbell> doorbells_;
  // Room in the records above for a ring of `ring_size` slots run once (as
  // Device places a program: a slot per descriptor, and one spare), so that
  // a large run's records are not copied, and faulted in afresh, at each
  // doubling. A configure_queue calls it; a ring run more than once grows
  // them as before.
  void expect_ring(std::uint32_t ring_size);

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
  std::size_t expected_descriptors_ = 0;  // over the rings configured so far
};

// Same-cycle order between the fast engines of a core, without delta cycles.
// Engines that reach memory in the same cycle do so in engine order, as with
// DmaEngineBase::take_turn(), but an engine waits only when a lower-numbered
// engine may still reach memory in that cycle: every engine publishes the
// earliest time it may next reach memory before it suspends (its timed wait;
// a doorbell that wakes it earlier leads to a fetch cycles later, never to an
// access in the cycle it wakes in).
class DmaTurnOrder {
public:
  void add(std::uint32_t rank);  // an engine that is running now
  // Engine `rank` reaches memory no earlier than `t` from now on.
  void next_access(std::uint32_t rank, const sc_core::sc_time& t);
  // Returns once no engine below `rank` may still reach memory now.
  void wait_for_lower(std::uint32_t rank);

private:
  std::vector<sc_core::sc_time> next_;  // by rank; sc_max_time for a rank with no engine
  // By rank: the engine's next access moved past now, and how many engines
  // wait for that. An engine waits for the first lower one still due, not
  // for any to move: a chip's order has every engine of its cores, and one
  // event for all woke each waiting engine at every other's move.
  std::vector<std::unique_ptr<sc_core::sc_event>> moved_;
  std::vector<std::uint32_t> waiting_;
};

class DmaScheduler;

class DmaEngine : public DmaEngineBase {
public:
  SC_HAS_PROCESS(DmaEngine);
  DmaEngine(sc_core::sc_module_name name, core::CoreContext& ctx, std::uint32_t queues);

  void configure_queue(std::uint32_t queue, std::uint64_t ring_base, std::uint32_t ring_size) override;
  sc_core::sc_time clock_period() const { return period_.sc(); }
  // Sampled fidelity: every descriptor run is offered to `sampler` (not owned).
  void set_sampler(DescriptorSampler* sampler) { sampler_ = sampler; }
  bool has_sampler() const { return sampler_ != nullptr; }
  // The engines of one core share one order (DmaSubsystem), the engines of a
  // chip's cores one for the chip (DmaChipOrder); alone, an engine has its
  // own. `turn_rank`: the engine's place in it (the lower goes first at a
  // time): its rank() in a core's order, after the earlier cores' engines in
  // a chip's.
  void share_turn_order(std::shared_ptr<DmaTurnOrder> order, std::uint32_t turn_rank);
  // The engines of one core share one burst cache (DmaSubsystem); alone, an
  // engine has its own. The bursts of a shape are the same for every engine
  // of a bus width, and a core's engines move the same shapes: in one cache
  // their entries stay in the processor's caches, where sixteen caches of
  // 16 KiB each missed at most lookups. `cache` must cut bursts as this
  // engine's own does (its AXI data width).
  void share_burst_cache(std::shared_ptr<BurstCache> cache);
  const std::shared_ptr<BurstCache>& burst_cache() const { return burst_cache_; }
  // Routes its own requests for local regions straight to their targets, as
  // `interconnect` would forward them (Interconnect::direct): HBM, SBUF and
  // PSUM by their access() (b_transport without the payload; the memories
  // core::MemorySystem binds there, which are the context's), the semaphores
  // through their socket. Peer and unmapped addresses still go through it.
  // Before the simulation starts.
  void route_through(core::Interconnect& interconnect) { router_ = &interconnect; }

  // What the engine waits for before its next step: a time, a time or a
  // doorbell (whichever comes first), or a doorbell. Every suspension of the
  // model is one of these, at the same points and with the same arguments
  // whether the engine steps in its own SC_THREAD or under a DmaScheduler.
  struct Wait {
    enum Kind : std::uint8_t { kTime, kTimeOrDoorbell, kDoorbell } kind = kDoorbell;
    Time until = kNever;
  };

protected:
  std::uint32_t head_for_doorbell(std::uint32_t q) override;
  void ring(const sc_core::sc_time& visible_after) override;

private:
  friend class DmaScheduler;

  // A descriptor read by the fetch unit, which runs one descriptor ahead.
  struct Fetched {
    std::uint32_t queue = 0, index = 0;
    std::array<std::uint8_t, arch::kDmaDescriptorBytes> raw{};
    Time ready;
    bool error = false;
  };
  // A descriptor whose data is written, waiting for its write responses
  // before its semaphore and status writes (the RTL's completion stage).
  struct PendingCompletion {
    std::uint32_t queue, index;
    Time ready;  // when the next completion write's W beat may go out
    Time aw;     // when its AW may go out (W beats follow AWs in order)
    bool semaphore;
    std::uint64_t sem_addr;
    std::uint32_t sem_value;
  };

  // The engine's process when no scheduler runs it: steps and suspends in
  // SystemC at every wait.
  void run();
  // Runs the engine from where it stopped, at now_, to its next wait. The
  // model was one SC_THREAD whose every wait() is now a return from here:
  // resume_ says where it goes on, and what the thread kept on its stack
  // between two waits is in exec_ and the members below.
  Wait step();
  // Applies the tail writes that have landed by now_; inline when none has.
  void apply_due_doorbells() {
    if (!pending_.empty() && pending_.front().visible <= now_) apply_landed_doorbells();
  }
  void apply_landed_doorbells();
  // The fetch unit picks among the queues whose tail write it has seen: a
  // queue is ready for a fetch AR from kDoorbellToFetch cycles after the
  // Q_TAIL write that made it non-empty. fetch_ready_at: the earliest AR at
  // or after `not_before` for any queue (never if none has a descriptor to
  // fetch); ready_queue: the queue an AR at `ar` reads, round-robin after
  // `after`, -1 if none.
  Time fetch_ready_at(Time not_before) const;
  // Queue q's earliest fetch AR (never if it has nothing to fetch), and the
  // update of the earliest over the queues once q's changed from `before`.
  Time fetch_time(std::uint32_t q) const;
  void fetch_time_changed(std::uint32_t q, Time before);
  std::int64_t ready_queue(std::uint32_t after, Time ar) const;
  // The fetch of queue q's next descriptor: the fetch unit takes it at
  // `issue` (fetch_begin), its AR goes to memory then (fetch_end, at now_ == issue).
  void fetch_begin(std::uint32_t q, Time issue);
  Fetched fetch_end();
  // The decode rules on a fetched descriptor: its fields and bursts, or the
  // error that stops its queue.
  std::optional<std::pair<arch::DmaError, std::string>> decode(const Fetched& f, arch::DmaDescriptor& d,
                                                               std::vector<Run>& src, std::vector<Run>& dst);
  // Starts moving the descriptor in `f` from the queue's ring through
  // memory, and every descriptor that reads ahead behind it (the next one of
  // its queue starts reading once it has issued its last read, and takes over
  // the write side when it moves to the completion stage); the engine is idle
  // again at the hand-off of the last of them (the next descriptor may start).
  void begin(const Fetched& f);
  // When the oldest pending completion's writes go out, given the W channel.
  Time completion_time() const;
  // When the oldest pending completion's next AW goes out: it goes ahead of
  // data AWs of the same cycle, behind those of earlier cycles.
  Time completion_aw() const;
  Time write_slot_free() const;  // when a write may take an outstanding slot
  void write_answered(Time b);   // B responses come back in order
  void complete_oldest();  // at completion_time(), which the caller has reached
  void fail(std::uint32_t q, std::uint32_t index, arch::DmaError code, const std::string& detail);
  // b_transport at now_, which the caller has reached (transactions go to
  // memory in time order, as the RTL's do); returns when memory answered.
  // Under a scheduler now_ may be ahead of SystemC time: the difference is
  // the transaction's annotated delay.
  // The local memories answer in a call; the socket's way is a function of
  // its own, whose frame the ten million accesses of a large GEMM no longer
  // set up and take down.
  Time access(tlm::tlm_command cmd, arch::Region region, std::uint64_t address, std::uint8_t* data,
              std::uint32_t length, bool& error);
  [[gnu::noinline]] Time access_through_socket(tlm::tlm_command cmd, arch::Region region, std::uint64_t address,
                                               std::uint8_t* data, std::uint32_t length, bool& error);
  Time access(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data, std::uint32_t length, bool& error) {
    return access(cmd, region_of(address, length), address, data, length, error);
  }
  // Where the engine's own routing sends an access (route_through): None
  // without it, which the interconnect then routes.
  arch::Region region_of(std::uint64_t address, std::uint32_t length) const {
    return router_ ? router_->map().region_of(address, length) : arch::Region::None;
  }
  // An access's answer, logged when TESSERA_DMA_BRIDGE_LOG is set.
  Time answered(tlm::tlm_command cmd, std::uint64_t address, std::uint32_t length, Time answer) const {
    if (log_) log_access(cmd, address, length, answer);
    return answer;
  }
  void log_access(tlm::tlm_command cmd, std::uint64_t address, std::uint32_t length, Time answer) const;
  Time on_clock(Time t) const;  // the first DMA clock edge at or after t
  // Whether the engine waits (returns its step) before an access at `t`.
  // Under a scheduler it needs its turn among the engines only for memories
  // whose answers depend on the order requests come in: a timing-only access
  // to an on-chip one goes at once, the engine moving to `t` ahead of its
  // turn, and its next access to another memory waits for the turn even at
  // the same time.
  bool wait_turn(Time t, bool on_chip_target);
  // The engine's time becomes `t`: a doorbell notification due by then fires
  // now, or fired while nobody waited for it.
  void move_to(Time t) {
    now_ = t;
    if (bell_ && *bell_ <= t) bell_.reset();
  }
  // SBUF and PSUM, which the engine reaches through PartitionedMemory::access:
  // they time an access from its address and length alone (transfer_time),
  // so a timing-only access's answer does not depend on the accesses before
  // it. HBM books bandwidth and the semaphores count.
  static bool on_chip(arch::Region region) { return region == arch::Region::Sbuf || region == arch::Region::Psum; }
  // Every suspension of run() goes through these, so that the turn order
  // knows when this engine may next reach memory.
  void sleep_for(const sc_core::sc_time& d);
  void sleep_for(const sc_core::sc_time& d, sc_core::sc_event& e);
  void sleep_on(sc_core::sc_event& e);
  void take_turn_in_order();

  // The running descriptor's steps (execute() of the one-thread model, cut at its waits).
  void place();
  void place_again();  // place()'s work, when the R channel's order may have changed
  // A burst on the R channel's way (scratch_.open): read burst k, or the
  // fetch as kFetchBurst, with what place_again() reads of it at every call,
  // fixed from its issue to its delivery: when memory answered it, its
  // issue order (the fetch between the data bursts issued before and after
  // it), and its beats after the first.
  static constexpr std::size_t kFetchBurst = static_cast<std::size_t>(-1);
  static constexpr std::size_t kOpenCompactAt = 32;  // delivered entries a list keeps before it drops them
  struct OpenBurst {
    // Made in place in the list, field by field: a copy from the stack read
    // the fields just stored there in 16-byte halves, which the stores
    // could not forward (place_again took twice its time).
    OpenBurst() = default;
    OpenBurst(Time ready_at, std::int64_t issue_order, Time beats_after_first, std::size_t burst)
        : ready(ready_at), issued(issue_order), more_beats(beats_after_first), k(burst) {}
    Time ready;
    std::int64_t issued = 0;
    Time more_beats;
    std::size_t k = 0;
  };
  // When read burst k retires (dma_engine.cpp says how); inline for the
  // delivered prefix, where it is final already: most calls.
  Time retire(std::size_t k) const {
    return k < exec_.placed ? scratch_.reads[k].retired : retire_beyond_placed(k);
  }
  Time retire_beyond_placed(std::size_t k) const;
  // The beat-aligned range of a burst. Inline (defined in dma_engine.cpp, its
  // only user): the step loop's calls were 1 % of a large run's CPU.
  inline std::pair<std::uint64_t, std::uint32_t> aligned(const Run& r) const;
  std::uint64_t sent_bytes() const;
  Time beat_with(const Run& w, Time start, std::uint64_t sent, std::uint64_t target) const;
  // When a read of `bytes` finds room in the buffer (dma_engine.cpp says how);
  // inline for the common case, a buffer with room now.
  Time room_at(std::uint64_t bytes, std::size_t next_write, Time next_write_start) const {
    return exec_.read_at + bytes <= buffer_size_ ? Time() : room_later(bytes, next_write, next_write_start);
  }
  Time room_later(std::uint64_t bytes, std::size_t next_write, Time next_write_start) const;
  void hand_off();

  // Under a DmaScheduler: when the engine wants its next step (its wait's
  // time, or the doorbell notification's if that comes first), and that step.
  // Inline: the scheduler takes millions of steps, each one call to step().
  Time next_step() const {
    Time t = wait_.kind == Wait::kDoorbell ? kNever : wait_.until;
    // A notification at the very time the wait began had fired before it (SystemC
    // triggers timed notifications before it runs the processes of that time).
    if (wait_.kind != Wait::kTime && bell_ && *bell_ > waited_from_) t = std::min(t, *bell_);
    return t;
  }
  Time step_at(Time t) {  // returns next_step()
    move_to(t);
    ahead_of_turn_ = false;
    wait_ = step();
    waited_from_ = now_;
    return next_step();
  }

  // A write burst whose W beats are scheduled: its index, first beat, and the
  // descriptor's bytes sent before and after it.
  struct SentBurst {
    std::size_t write;
    Time start;
    std::uint64_t sent_before, sent_after;
  };
  // A read burst's progress: when memory answered it (ready_at), its last
  // beat on the R channel (last_beat), when it retired (retired: final for
  // the delivered prefix, see retire()), its beats, whether its place on R
  // is final (delivered), and the stream's bytes after it (read_end).
  struct ReadBurst {
    Time last_beat, ready_at, retired;
    std::uint64_t read_end = 0;
    std::uint32_t beats = 0;
    bool delivered = false;
  };
  // The running descriptor's working storage, kept between descriptors so
  // that a descriptor allocates nothing once the buffers have grown.
  struct Scratch {
    std::vector<Run> src, dst, ahead_src, ahead_dst;
    std::vector<std::uint8_t> sampled;
    std::vector<std::uint8_t> buffer, burst;
    // One per read burst of the stream (src's), in one array: a read-ahead
    // descriptor appends its bursts and a hand-off drops the finished ones
    // at once, where six parallel arrays each grew and shrank on their own
    // (about 1 % of a large GEMM's instructions).
    std::vector<ReadBurst> reads;
    // The bursts on the R channel's way, in its order (place()): those from
    // Exec::open_head on; the delivered ones before it go at once now and then.
    std::vector<OpenBurst> open;
    std::vector<SentBurst> sent;
  };
  // The running descriptor's state between steps (see begin() for each field).
  struct Exec {
    std::uint32_t q = 0, index = 0;
    arch::DmaDescriptor d;
    std::uint64_t total = 0;
    bool barrier = false;
    std::size_t ri = 0, wi = 0, src_end = 0, placed = 0, need = 0;
    // Whether `need` is final for write burst wi: read burst `need` is issued
    // and ends past the write's bytes, so later reads do not move it.
    bool need_settled = false;
    Time next_read, r_channel, last_w, retired_floor;
    bool fetch_on_r = false;
    bool fetch_open = false;  // the fetch is in scratch_.open
    std::size_t opened = 0;   // the read bursts placed in scratch_.open so far: [0, opened)
    std::size_t unplaced = 0; // scratch_.open's first entry whose place (last beat) is not current
    std::size_t open_head = 0; // scratch_.open's first entry not yet delivered
    std::size_t fetch_after = 0;
    Time fetch_last;
    std::uint64_t read_at = 0, written = 0;
    bool prefetch_done = false;
    Time fetch_unit_free;
    bool ahead = false;
    int ahead_ok = -1;
    Fetched ahead_f;
    arch::DmaDescriptor ahead_d;
    Time last_ar, ahead_floor, aw_floor;
    std::size_t start_at = 0;
    std::uint32_t start_q = 0, start_index = 0;
    bool writes_done = false, handoff_known = false, behind_valid = false, queued_behind = false;
    Time handoff, handoff_at;
    // The step chosen at the top of the loop, kept while the engine waits for its time.
    Time t_fetch, t_read, t_write, t_write_start, t_aw;
  };
  // Where step() goes on: the idle loop (run() of the one-thread model) or
  // the running descriptor's loop (its execute()), each at its top or at an
  // access it waits to make.
  enum class Resume : std::uint8_t {
    kIdle,          // the idle loop's top
    kIdleSlept,     // slept toward a completion write, unless a doorbell came first
    kIdleComplete,  // the completion stage's next write
    kIdleFetch,     // the fetch AR of the next descriptor to run
    kTop,           // the running descriptor's loop
    kComplete,      // a completion write between its bursts
    kFetch,         // the fetch unit's next pick
    kFetchIssue,    // the fetch AR it picked
    kRead,          // the next read burst
    kWrite,         // the next write burst
  };

  core::CoreContext& ctx_;
  Scratch scratch_;
  Exec exec_;
  Resume resume_ = Resume::kIdle;
  Time now_;         // the engine's time: SystemC's, or ahead of it under a scheduler
  Time idle_due_;    // kIdleSlept: the completion write it slept toward
  struct Fetching {
    std::uint32_t queue = 0, index = 0;
    Time issue;
  } fetching_;
  tlm::tlm_generic_payload payload_;  // reused by every access
  core::Interconnect* router_ = nullptr;  // route_through's
  // Its targets by arch::Region, taken when binding is complete (start_of_simulation).
  std::array<core::Interconnect::Direct, static_cast<std::size_t>(arch::Region::None) + 1> direct_{};
  void start_of_simulation() override;
  std::uint8_t no_bytes_[arch::kDmaDescriptorBytes] = {};  // what timing-only accesses point at
  Time period_;
  ClockEdges clock_;               // period_'s edges (on_clock)
  BusWidth bus_;                   // dma.axi_data_bytes
  std::shared_ptr<BurstCache> burst_cache_;  // decode's bursts, by pattern shape
  bool data_;                      // bytes move (not a timing-only run)
  std::uint64_t buffer_size_;      // the read-to-write byte buffer
  std::uint32_t max_outstanding_;
  Time run_gap_;  // dma.run_gap_cycles: between two run starts of one side
  // dma.descriptor_gap_cycles: from a descriptor's last write beat to the next
  // one's first write burst, the earliest of which is next_descriptor_aw_ (the
  // RTL's gap_q.desc).
  Time descriptor_gap_;
  Time next_descriptor_aw_;
  // The earliest next data AR and AW that start a run (a run gap after the
  // last ones, as the RTL's gap_q counts), and the earliest next data AW (one
  // per cycle, in order).
  Time next_run_ar_, next_run_aw_, next_aw_;
  std::vector<std::uint32_t> fetch_ptr_;         // per queue: next descriptor to fetch
  // Per queue: the cycle of the Q_TAIL write that made it ready to fetch
  // (doorbells go to the RTL's register port one write per cycle, in order).
  std::vector<Time> tail_visible_;
  // The earliest fetch over the queues ready to fetch (fetch_ready_at), kept
  // until a queue's fetch pointer, tail or error changes: the scan of every
  // queue was about 2 % of a large run's instructions.
  mutable Time fetchable_at_;
  mutable bool fetchable_known_ = false;
  // Bit q: queue q has descriptors to fetch (fetch_time(q)'s condition:
  // configured, without an error, its fetch pointer short of its tail). The
  // fetch unit's picks look at these queues only: a scan of every queue's
  // state at each pick missed the L1 cache about ten times (a queue's state
  // is a line of its own) and was 1.5 % of a large GEMM's instructions.
  // The config allows at most 64 queues an engine (dma.queues_per_engine).
  std::uint64_t has_work_ = 0;
  bool has_descriptors_to_fetch(std::uint32_t q) const {
    const QueueState& s = queues_[q];
    return s.error == arch::DmaError::kNone && s.ring_size > 0 && fetch_ptr_[q] != s.tail;
  }
  void note_work(std::uint32_t q) {
    const std::uint64_t bit = std::uint64_t{1} << q;
    if (has_descriptors_to_fetch(q)) has_work_ |= bit;
    else has_work_ &= ~bit;
  }
  Time next_tail_write_;  // the first cycle the register port is free for a Q_TAIL write
  std::uint32_t last_fetched_queue_;  // round-robin: the search starts after it
  std::optional<Fetched> prefetched_;
  // The completion stage: at most one descriptor (hand_off() moves the next
  // one in only once it is empty). An optional in the engine, not a deque
  // whose blocks lie elsewhere: the step loop asks after it at every turn.
  std::optional<PendingCompletion> completing_;
  Time last_fetch_ready_, last_handoff_;
  // The last write beat of the last descriptor that moved: a read-ahead
  // descriptor's moving time counts from after it (the RTL's moving_o).
  Time moving_until_;
  bool moving_any_ = false;
  Time w_free_, b_last_;  // the engine's W channel and in-order write responses
  // B times of the last max_outstanding writes, a ring: when it is full,
  // writes_b_[writes_b_next_] is the oldest, whose slot the next write takes.
  std::vector<Time> writes_b_;
  std::uint32_t writes_b_count_ = 0, writes_b_next_ = 0;
  bool log_ = false;
  DescriptorSampler* sampler_ = nullptr;
  std::shared_ptr<DmaTurnOrder> turns_;
  std::uint32_t turn_rank_ = 0;  // the engine's place in turns_
  sc_core::sc_time turn_at_ = sc_core::sc_max_time();  // the time of the turn taken last

  // Under a DmaScheduler (set before the simulation starts; null: run() steps the engine).
  DmaScheduler* scheduler_ = nullptr;
  Wait wait_;                     // the wait the last step ended in
  bool ahead_of_turn_ = false;    // wait_turn moved now_ past the turn the scheduler gave
  Time waited_from_;  // and when it began
  // doorbell_event_ as SystemC would hold it: its one pending notification
  // (an sc_event keeps only the earliest), which wakes the engine only if it
  // waits for a doorbell then, and is gone once its time has passed.
  std::optional<Time> bell_;
  std::size_t slot_ = 0;  // the engine's place in its scheduler
  // Head updates a doorbell may not see yet (their time is still to come).
  struct HeadUpdate {
    Time at;
    std::uint32_t queue, head;
  };
  std::deque<HeadUpdate> heads_ahead_;
  std::vector<std::uint32_t> heads_seen_;  // per queue: the head doorbells see
};

}  // namespace tessera::dma
