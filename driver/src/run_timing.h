// What a run's recorded timing says after the run: each DMA descriptor's
// queued and moving time (for traces and the critical path), and the chain
// of work and waits that set the end time (docs/profiling.md "The critical
// path").
#pragma once

#include "tessera/program.h"
#include "tessera/run_report.h"

#include <systemc>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::core {
class NeuronCore;
}
namespace tessera::dma {
class DmaEngineBase;
}

namespace tessera::timing {

// One DMA queue's descriptors by ring index, from its engine's records:
// when each became visible (the last doorbell naming it landed) and when its
// first read went out; nullopt: never.
struct QueueTimes {
  std::vector<std::optional<sc_core::sc_time>> visible, started;
  std::optional<sc_core::sc_time> visible_at(std::uint32_t index) const {
    return index < visible.size() ? visible[index] : std::nullopt;
  }
  std::optional<sc_core::sc_time> started_at(std::uint32_t index) const {
    return index < started.size() ? started[index] : std::nullopt;
  }
};
// Every queue of `engine` that a doorbell or a start names, by queue number.
// Vectors by ring index, not maps by (queue, index): an engine of a large
// run has tens of thousands of descriptors.
std::map<std::uint32_t, QueueTimes> queue_times(const dma::DmaEngineBase& engine);
// Each queue's completed descriptors of `engine` (ring index, status
// written), in ring order, by queue number.
std::map<std::uint32_t, std::vector<std::pair<std::uint32_t, sc_core::sc_time>>> completions_by_queue(
    const dma::DmaEngineBase& engine);

// One descriptor as its queue ran it. A queue runs its descriptors in
// order: one is queued from when its doorbell landed or the one before it
// was released, and moves from its first read (or that release, when its
// reads began while the one before it waited for its last write responses)
// until it is released: its semaphore write landed, or without one, its
// status was written.
struct DescriptorTime {
  std::uint32_t engine = 0, queue = 0, index = 0;
  double visible_ns = 0;     // its doorbell landed (or the one before it was released, when unknown)
  double first_read_ns = -1; // its first read went out; -1: not recorded
  double status_ns = 0;      // its status write
  double queued_from_ns = 0, moving_from_ns = 0, release_ns = 0;
  std::int64_t semaphore = -1;  // the queue's semaphore, -1: none
  std::uint32_t delta = 0;      // what its release added to it (0: it signals nothing)
};
// Every completed descriptor of the core's DMA engines, by engine, queue
// and ring order. Needs the semaphores' increments (Semaphores::keep_increments).
std::vector<DescriptorTime> descriptor_times(const Program& program, core::NeuronCore& core);

// The events one event could not start before, in the order they were
// found (the critical path takes the first of equal ends). Held inline: a
// large run has millions of events, and each has at most two (the one
// before it on its engine or queue; the DmaTrigger that rang a descriptor,
// or the signal that released a wait); one more is room to spare. Event
// numbers are never negative, so an unused slot holds -1 and no count is
// kept (12 bytes, not 16).
class Predecessors {
 public:
  static constexpr std::size_t kCapacity = 3;
  Predecessors() = default;
  Predecessors(std::initializer_list<int> ids) {
    for (const int id : ids) push_back(id);
  }
  void push_back(int id);  // throws std::length_error past kCapacity
  const int* begin() const { return ids_.data(); }
  const int* end() const { return ids_.data() + size(); }
  std::size_t size() const { return static_cast<std::size_t>(std::find(ids_.begin(), ids_.end(), -1) - ids_.begin()); }
  bool empty() const { return ids_[0] < 0; }

 private:
  std::array<int, kCapacity> ids_{-1, -1, -1};
};

enum class EventKind : std::uint8_t {
  Instruction,  // an engine's sequencer from issue to done
  Wait,         // a SemWait that blocked
  DmaQueued,    // a descriptor waiting behind its queue's earlier ones
  Dma,          // a descriptor moving data, to its release
};
const char* to_string(EventKind kind);  // "instruction", "wait", "dma queued", "dma"

// What an event is called: its resource, its instruction's stream and its
// label and call site. Neighbouring events mostly share all four, so a run
// keeps each distinct set once (RunEvents::names_of) and its events point
// at it. The strings are NUL-terminated and outlive the events (literals,
// the Program's labels, RunEvents::names).
struct EventName {
  const char* resource = "";  // "tensor", "dma 0.1"
  const char* label = "";     // also what it is called where it has no instruction and is no descriptor part
  const char* site = "";
  const InstructionStream* stream = nullptr;  // an engine's instruction, stream[index], named by its disassembly
};

// An interval of work one resource did, and the events it could not start
// before (its own previous one, a DmaTrigger that rang it, the signal that
// released its wait): each of those ends at or before its end.
// A run has an event per instruction and per descriptor part (1.27 million
// for the 4096x8192x8192 GEMM, where they were the report's memory peak), so
// an event is 48 bytes: what it is called is a pointer to a shared
// EventName, and its name as the path prints it is made only for the few
// that end up on the path (name_of).
struct Event {
  double start = 0, end = 0;
  const EventName* name = &kUnnamed;
  std::int32_t index = -1;        // the instruction's place in its stream, or the descriptor's in its ring
  std::int32_t released_by = -1;  // a wait: the event whose semaphore signal released it
  Predecessors after;             // indices into the event list
  EventKind kind = EventKind::Instruction;

  const char* resource() const { return name->resource; }
  const char* label() const { return name->label; }
  const char* site() const { return name->site; }
  const InstructionStream* stream() const { return name->stream; }

  static const EventName kUnnamed;
};
static_assert(sizeof(Event) <= 48, "an event is held per instruction and descriptor part: keep it small");

// When one instruction's own work ran on its engine (a pipelined engine
// works on an instruction after its sequencer has moved on). A run has one
// per instruction, so, as an event, its strings are pointers to strings that
// outlive it (56 bytes, not the 96 of views).
struct Work {
  const char* resource = "";
  const char* label = "";  // also what it is called where it has no instruction (made by hand)
  const char* site = "";
  const InstructionStream* stream = nullptr;  // its instruction is stream[index]
  double start = 0, end = 0;
  std::int32_t index = -1;
};

// The disassembly of its instruction; "descriptor N" for a descriptor's
// parts; else its label.
std::string name_of(const Event& e);
std::string name_of(const Work& w);

// A run's events and the names their views point into (the DMA queues' and
// the call sites'; labels are the Program's own, which must outlive them).
struct RunEvents {
  std::vector<Event> events;
  std::deque<std::string> names;  // a deque: its strings stay where they are as it grows
  std::deque<EventName> names_of;  // what the events point at, each distinct one once
};

// The run's events from what the core recorded: every instruction each
// engine's sequencer reached (issue to done; a SemWait that blocked is a
// "wait"), every descriptor's queued and moving parts, and the semaphore
// signal that released each blocked wait.
RunEvents run_events(const Program& program, core::NeuronCore& core);
// Every instruction's own work, by engine, in time order; its site views
// point into `names` of the RunEvents of the same run.
std::vector<Work> run_work(const Program& program, core::NeuronCore& core, RunEvents& names);

// Walks back from the event that ended last: at each event, to whichever of
// the events it could not start before ended last (its engine busy with the
// one before, or the signal it waited for), until the run's start. A step
// on an engine is then split by the work that engine was doing meanwhile
// (`work`): a sequencer held at issue, or draining before a SemIncr, waits
// for an earlier instruction's work, and the time is that one's.
CriticalPath critical_path(const std::vector<Event>& events, const std::vector<Work>& work = {});

// The wall time of each label of `labels` (a program's collective phases)
// and of all of them together: the union of the intervals of the events
// under it, whatever their resource, so overlapping work counts once. A
// semaphore wait under such a label counts only from the end of the last
// event under no such label that ended before it: an engine that reaches
// a collective's wait early, while the core still has its own work to
// finish, is not held back by the collective until that work is done.
struct LabelTime {
  std::vector<CollectivePhase> phases;  // in the order of `labels`; labels no event has are left out
  double total_ns = 0;
};
LabelTime label_time(const std::vector<Event>& events, const std::vector<std::string>& labels);

}  // namespace tessera::timing
