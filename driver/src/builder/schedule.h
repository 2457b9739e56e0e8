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
#include <vector>

namespace tessera::builder {

constexpr int kSyncAgent = static_cast<int>(arch::Engine::Sync);
constexpr int kFirstQueueAgent = arch::kNumEngines;

// An operation: an engine instruction (placed in a stream), a DMA descriptor
// (placed in a queue's ring) or the trigger that rings a descriptor's
// doorbell (issued right after an operation of its stream, or appended to it).
struct Op {
  int agent = 0;
  std::uint32_t slot = 0;          // descriptor: ring slot
  int descriptor = -1;             // descriptor: index into Schedule::descriptors()
  arch::Instruction in;            // instruction or trigger
  std::vector<int> waits;          // ops to wait for first
  bool signal = false;             // instruction: increment the agent's semaphore after it
  std::vector<int> triggers;       // instruction: DMA triggers issued right after it
  int origin = -1;                 // its label and call site (Origins)
};

struct DmaQueue {
  std::uint32_t engine, queue;
  int owner;                     // the stream whose triggers feed this queue
  std::vector<int> descriptors;  // op ids in ring order
  int last_anchor = -1;          // the op this queue's latest trigger follows
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
  int add_dma(arch::DmaDescriptor d, const Region& read, const Region& write, int origin);

  const std::vector<Op>& ops() const { return ops_; }
  // Op ids of each engine's stream, without the triggers issued after them.
  const std::vector<int>& stream(int engine) const { return streams_[static_cast<std::size_t>(engine)]; }
  const std::vector<DmaQueue>& queues() const { return queues_; }
  const arch::DmaDescriptor& descriptor(const Op& op) const { return descriptors_[static_cast<std::size_t>(op.descriptor)]; }

private:
  int queue_for(int placer);
  void mark_signal(const std::vector<int>& deps);

  const arch::HwConfig& cfg_;
  const arch::AddressMap& map_;
  HazardTracker hazards_;
  std::vector<Op> ops_;
  std::vector<std::vector<int>> streams_ = std::vector<std::vector<int>>(arch::kNumEngines);
  std::vector<DmaQueue> queues_;  // agent kFirstQueueAgent + i
  std::vector<arch::DmaDescriptor> descriptors_;
  std::vector<std::uint32_t> next_engine_of_placer_ = std::vector<std::uint32_t>(arch::kNumEngines, 0);
};

}  // namespace tessera::builder
