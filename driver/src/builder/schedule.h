// The operations of a kernel in program order, each placed on its agent (an
// engine's instruction stream or a DMA queue) with the operations of other
// agents it waits for. Agents own a semaphore each: engines are agents 0..4
// (arch::Engine), DMA queues follow. A DMA descriptor is rung by a trigger
// placed in the stream of its latest producer, so that it starts as soon as
// its data is ready without holding up any other stream.
//
// program_assembly turns a schedule into the Program's streams and rings.
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

// An operation: an engine instruction (placed in a stream), a DMA descriptor
// (placed in a queue's ring) or the trigger that rings a descriptor's
// doorbell (issued right after an operation of its stream, or appended to it).
// A large kernel has over a million, so an op is a small record: its
// instruction, its waits and its descriptor live in the Schedule's arrays.
struct Op {
  int agent = 0;
  std::uint32_t slot = 0;          // descriptor: ring slot (its index in the queue's ring)
  int instruction = -1;            // instruction or trigger: index into Schedule::instruction(); descriptor: -1
  std::uint32_t waits_begin = 0;   // ops to wait for first: Schedule::waits()
  std::uint32_t waits_end = 0;
  int first_trigger = -1;          // instruction: the DMA triggers issued right after it, in order,
  int last_trigger = -1;           //   linked through next_trigger
  int next_trigger = -1;           // trigger: the next one issued after the same op
  int origin = -1;                 // its label and call site (Origins)
  bool signal = false;             // instruction: increment the agent's semaphore after it
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
  Schedule(const arch::HwConfig& cfg, const arch::AddressMap& map);

  // Places a compute instruction at the end of `engine`'s stream. Returns its op id.
  int add_instruction(arch::Engine engine, arch::Instruction in, const RegionList& reads, const RegionList& writes,
                      int origin);
  // Places descriptor `d`, which reads `read` and writes `write`, on a DMA
  // queue, and its trigger in the stream of its latest producer (the sync
  // stream when that is a DMA queue or there is none). Returns the
  // descriptor's op id. Throws KernelError when no queue is free.
  // The descriptor goes to one of engines first_engine .. first_engine +
  // engines - 1 (engines 0: through the last), each placer taking them in turn.
  int add_dma(arch::DmaDescriptor d, const Region& read, const Region& write, int origin,
              std::uint32_t first_engine = 0, std::uint32_t engines = 0);

  const std::vector<Op>& ops() const { return ops_; }
  // Op ids of each engine's stream, without the triggers issued after them.
  const std::vector<int>& stream(int engine) const { return streams_[static_cast<std::size_t>(engine)]; }
  const std::vector<DmaQueue>& queues() const { return queues_; }
  // Hands queue i's descriptors over (to the Program); the ring is empty after.
  std::vector<arch::DmaDescriptor> take_ring(std::size_t i) { return std::move(queues_[i].ring); }
  const arch::Instruction& instruction(const Op& op) const {
    return instructions_[static_cast<std::size_t>(op.instruction)];
  }
  // The ops `op` waits for, as [begin, end).
  const int* waits_begin(const Op& op) const { return waits_.data() + op.waits_begin; }
  const int* waits_end(const Op& op) const { return waits_.data() + op.waits_end; }

private:
  int queue_for(int placer, std::uint32_t first_engine, std::uint32_t engines);
  // Stores `deps` as the waits of op `o` and marks the engine ops among them as signalling.
  void set_waits(Op& o, const std::vector<int>& deps);

  const arch::HwConfig& cfg_;
  const arch::AddressMap& map_;
  HazardTracker hazards_;
  std::vector<Op> ops_;
  std::vector<std::vector<int>> streams_ = std::vector<std::vector<int>>(arch::kNumEngines);
  std::vector<DmaQueue> queues_;  // agent kFirstQueueAgent + i
  std::vector<arch::Instruction> instructions_;  // of instruction and trigger ops
  std::vector<int> waits_;                       // every op's waits, one after the other
  std::vector<int> deps_;                        // dependencies of the op being placed, reused
  std::vector<std::uint32_t> next_engine_of_placer_ = std::vector<std::uint32_t>(arch::kNumEngines, 0);
};

}  // namespace tessera::builder
