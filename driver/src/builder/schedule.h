// The operations of a kernel in program order, each placed on its agent (an
// engine's instruction stream or a DMA queue) with the operations of other
// agents it waits for. Agents own a semaphore each: engines are agents 0..4
// (arch::Engine), DMA queues follow. A DMA descriptor is rung by a trigger
// placed in the stream of its latest producer, so that it starts as soon as
// its data is ready without holding up any other stream.
//
// program_assembly turns a schedule into the Program's streams and rings.
// A large kernel has over a million operations, so the schedule holds each
// engine instruction once (assembly encodes it into the Program's stream
// between the semaphore instructions and the triggers it makes), and
// everything else as small records.
#pragma once

#include "arch/address_map.h"
#include "arch/config.h"
#include "arch/dma_descriptor.h"
#include "arch/isa.h"
#include "builder/hazards.h"
#include "builder/region.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace tessera::builder {

constexpr int kSyncAgent = static_cast<int>(arch::Engine::Sync);
constexpr int kFirstQueueAgent = arch::kNumEngines;

// An operation: an engine instruction or a DMA descriptor. Ids grow in
// program order. The trigger that rings a descriptor is not an operation
// (nothing waits for a trigger): it is a Trigger.
struct Op {
  std::uint32_t waits_begin = 0;  // its waits: Schedule::waits_begin(id) .. waits_end(id)
  std::int32_t origin = -1;       // its label and call site (Origins)
  // Descriptor: its ring slot. Instruction: the value its agent's semaphore
  // reaches when it signals (program_assembly sets it).
  std::uint32_t value = 0;
  std::int32_t last_trigger = -1;  // instruction: the latest trigger issued right after it (Trigger::previous)
  std::uint16_t agent = 0;
  bool signal = false;     // instruction: increment the agent's semaphore after it
  bool referenced = false; // program_assembly: a tile's first or last use, whose place the Program records
};

// The instruction that rings descriptor `slot` of queue `queue`, issued in
// its placer's stream right after an operation (Op::last_trigger) or, in the
// sync stream, appended in program order.
struct Trigger {
  std::uint32_t waits_begin = 0;  // Schedule::trigger_waits_begin(id) .. trigger_waits_end(id)
  std::int32_t origin = -1;
  std::uint32_t slot = 0;
  std::int32_t previous = -1;  // the trigger issued before this one after the same operation
  std::uint32_t queue = 0;     // index into Schedule::queues()
};

struct DmaQueue {
  std::uint32_t engine, queue;
  int owner;                             // the stream whose triggers feed this queue
  std::vector<int> descriptors;          // op ids in ring order
  std::vector<arch::DmaDescriptor> ring; // the descriptors, parallel to `descriptors`
  int last_anchor = -1;                  // the op this queue's latest trigger follows
};

class Schedule {
public:
  // An entry of a stream's order (stream()): an op id, or a trigger's id
  // with this bit set (the sync stream's appended triggers).
  static constexpr std::uint32_t kTriggerEntry = 1u << 31;

  Schedule(const arch::HwConfig& cfg, const arch::AddressMap& map);

  // Places a compute instruction at the end of `engine`'s stream. Returns its op id.
  int add_instruction(arch::Engine engine, const arch::Instruction& in, const RegionList& reads,
                      const RegionList& writes, int origin);
  // Places descriptor `d`, which reads `read` and writes `write`, on a DMA
  // queue, and its trigger in the stream of its latest producer (the sync
  // stream when that is a DMA queue or there is none). Returns the
  // descriptor's op id. Throws KernelError when no queue is free.
  // The descriptor goes to one of engines first_engine .. first_engine +
  // engines - 1 (engines 0: through the last), each placer taking them in turn.
  int add_dma(arch::DmaDescriptor d, const Region& read, const Region& write, int origin,
              std::uint32_t first_engine = 0, std::uint32_t engines = 0);

  std::vector<Op>& ops() { return ops_; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Trigger>& triggers() const { return triggers_; }
  // Each engine's stream in order, without the triggers issued after its
  // operations: op ids, and in the sync stream kTriggerEntry | trigger id.
  const std::vector<std::uint32_t>& stream(int engine) const { return order_[static_cast<std::size_t>(engine)]; }
  // Engine e's instructions, one per op of its stream in order. Program
  // assembly takes them over (the engine's code is empty after).
  std::vector<arch::Instruction> take_code(int engine) { return std::move(code_[static_cast<std::size_t>(engine)]); }
  const std::vector<DmaQueue>& queues() const { return queues_; }
  // Hands queue i's descriptors over (to the Program); the ring is empty after.
  std::vector<arch::DmaDescriptor> take_ring(std::size_t i) { return std::move(queues_[i].ring); }
  // The ops an op or a trigger waits for, as [begin, end). An instruction's
  // list leaves out an op when an earlier instruction of its stream waited
  // for it or for a later op of the same agent (assembly would not emit
  // that wait); a trigger's list is kept whole.
  const int* waits_begin(std::size_t op) const { return waits_.data() + ops_[op].waits_begin; }
  const int* waits_end(std::size_t op) const {
    return waits_.data() + (op + 1 < ops_.size() ? ops_[op + 1].waits_begin : waits_.size());
  }
  const int* trigger_waits_begin(std::size_t t) const { return trigger_waits_.data() + triggers_[t].waits_begin; }
  const int* trigger_waits_end(std::size_t t) const {
    return trigger_waits_.data() +
           (t + 1 < triggers_.size() ? triggers_[t + 1].waits_begin : trigger_waits_.size());
  }
  // The schedule's bookkeeping is not needed once the Program is assembled.
  void release_dependencies() { hazards_ = HazardTracker(); }

private:
  int queue_for(int placer, std::uint32_t first_engine, std::uint32_t engines);
  // Appends `deps` to `waits` and marks the engine ops among them as signalling.
  void add_waits(std::vector<int>& waits, const std::vector<int>& deps);

  const arch::HwConfig& cfg_;
  const arch::AddressMap& map_;
  HazardTracker hazards_;
  std::vector<Op> ops_;
  std::vector<Trigger> triggers_;
  std::vector<std::vector<std::uint32_t>> order_ = std::vector<std::vector<std::uint32_t>>(arch::kNumEngines);
  std::vector<std::vector<arch::Instruction>> code_ = std::vector<std::vector<arch::Instruction>>(arch::kNumEngines);
  std::vector<DmaQueue> queues_;  // agent kFirstQueueAgent + i
  std::vector<int> waits_;          // every op's waits, one after the other
  // Per engine stream: the latest op of each agent its instructions wait for.
  std::vector<std::vector<int>> latest_waited_ = std::vector<std::vector<int>>(arch::kNumEngines);
  std::vector<int> trigger_waits_;  // every trigger's waits, one after the other
  std::vector<int> deps_;           // dependencies of the op being placed, reused
  std::vector<std::uint32_t> next_engine_of_placer_ = std::vector<std::uint32_t>(arch::kNumEngines, 0);
  // queue_for()'s lookups, where it scanned every queue for each DMA piece:
  // the queue in queues_ of (placer, engine), at placer * engines + engine
  // (-1: none yet), and how many queues each engine has given out.
  std::vector<int> queue_of_placer_on_engine_;
  std::vector<std::uint32_t> queues_on_engine_;
};

}  // namespace tessera::builder
