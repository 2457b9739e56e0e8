#include "builder/schedule.h"

#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::builder {

Schedule::Schedule(const arch::HwConfig& cfg, const arch::AddressMap& map) : cfg_(cfg), map_(map) {}

void Schedule::set_waits(Op& o, const std::vector<int>& deps) {
  o.waits_begin = static_cast<std::uint32_t>(waits_.size());
  for (int d : deps) {
    waits_.push_back(d);
    if (ops_[static_cast<std::size_t>(d)].agent < kFirstQueueAgent) ops_[static_cast<std::size_t>(d)].signal = true;
  }
  o.waits_end = static_cast<std::uint32_t>(waits_.size());
}

int Schedule::add_instruction(arch::Engine engine, arch::Instruction in, const RegionList& reads,
                              const RegionList& writes, int origin) {
  const int agent = static_cast<int>(engine);
  in.engine = engine;
  Op op;
  op.agent = agent;
  op.instruction = static_cast<int>(instructions_.size());
  instructions_.push_back(in);
  op.origin = origin;
  hazards_.dependencies(agent, reads, writes, deps_);
  set_waits(op, deps_);
  const int id = static_cast<int>(ops_.size());
  ops_.push_back(op);
  streams_[static_cast<std::size_t>(agent)].push_back(id);
  hazards_.record(id, agent, reads, writes);
  return id;
}

int Schedule::queue_for(int placer, std::uint32_t first, std::uint32_t usable) {
  // Each queue is fed by one stream only, so its doorbells come in ring order.
  const auto all = static_cast<std::uint32_t>(cfg_.dma.engines);
  first = std::min(first, all - 1);
  const auto engines = usable > 0 ? std::min(usable, all - first) : all - first;
  for (std::uint32_t tries = 0; tries < engines; ++tries) {
    const std::uint32_t e = first + next_engine_of_placer_[static_cast<std::size_t>(placer)]++ % engines;
    for (std::size_t i = 0; i < queues_.size(); ++i)
      if (queues_[i].engine == e && queues_[i].owner == placer) return kFirstQueueAgent + static_cast<int>(i);
    std::uint32_t used = 0;
    for (const auto& q : queues_) used += q.engine == e;
    if (used < static_cast<std::uint32_t>(cfg_.dma.queues_per_engine)) {
      queues_.push_back({e, used, placer, {}, {}});
      return kFirstQueueAgent + static_cast<int>(queues_.size()) - 1;
    }
  }
  throw KernelError(fmt::format("dma: no free DMA queue for the {} stream ({} engines x {} queues in use)",
                                to_string(static_cast<arch::Engine>(placer)), cfg_.dma.engines,
                                cfg_.dma.queues_per_engine));
}

int Schedule::add_dma(arch::DmaDescriptor d, const Region& read, const Region& write, int origin,
                      std::uint32_t first_engine, std::uint32_t engines) {
  const RegionList reads{read}, writes{write};
  hazards_.dependencies(-1, reads, writes, deps_);
  int placer = kSyncAgent;
  int anchor = -1;  // the op to issue the trigger after
  if (!deps_.empty()) {
    const int latest = *std::max_element(deps_.begin(), deps_.end());  // ids grow in program order
    const int agent = ops_[static_cast<std::size_t>(latest)].agent;
    if (agent < kFirstQueueAgent && agent != kSyncAgent) {
      placer = agent;
      anchor = latest;
    }
  }
  const int qagent = queue_for(placer, first_engine, engines);
  DmaQueue& q = queues_[static_cast<std::size_t>(qagent - kFirstQueueAgent)];
  // Ring order is doorbell order: never ring before an earlier trigger of
  // this queue (ids grow along the placer's stream, as positions do).
  anchor = std::max(anchor, q.last_anchor);
  if (placer != kSyncAgent) q.last_anchor = anchor;
  // Same-queue read-after-write: the queue itself orders it, with a barrier.
  bool same_queue_raw = false;
  hazards_.dependencies(qagent, reads, writes, deps_, &same_queue_raw);
  if (same_queue_raw) d.flags |= arch::kDmaFlagBarrier;

  Op desc;
  desc.agent = qagent;
  desc.slot = static_cast<std::uint32_t>(q.descriptors.size());
  desc.origin = origin;
  d.flags |= arch::kDmaFlagCompletion;
  d.sem_addr = map_.semaphore_address(static_cast<std::uint64_t>(qagent));
  d.sem_value = 1;
  d.magic = arch::kDmaDescriptorMagic;
  q.ring.push_back(d);
  const int desc_id = static_cast<int>(ops_.size());
  const std::uint32_t slot = desc.slot;
  ops_.push_back(desc);
  q.descriptors.push_back(desc_id);

  Op trig;
  trig.agent = placer;
  arch::Instruction in;
  in.engine = static_cast<arch::Engine>(placer);
  in.opcode = arch::Opcode::DmaTrigger;
  in.dma_engine = static_cast<std::uint16_t>(q.engine);
  in.dma_queue = static_cast<std::uint16_t>(q.queue);
  in.address = slot;  // a ring slot until Device places the ring
  in.value = 1;
  trig.instruction = static_cast<int>(instructions_.size());
  instructions_.push_back(in);
  trig.origin = origin;
  // Ops of the placer's own stream up to the anchor are done by then.
  deps_.erase(std::remove_if(deps_.begin(), deps_.end(),
                             [&](int dep) { return ops_[static_cast<std::size_t>(dep)].agent == placer; }),
              deps_.end());
  set_waits(trig, deps_);
  const int trig_id = static_cast<int>(ops_.size());
  ops_.push_back(trig);
  if (placer == kSyncAgent || anchor < 0) {
    // The sync stream holds triggers and waits only: append.
    streams_[static_cast<std::size_t>(placer)].push_back(trig_id);
  } else {
    Op& a = ops_[static_cast<std::size_t>(anchor)];
    if (a.last_trigger < 0) a.first_trigger = trig_id;
    else ops_[static_cast<std::size_t>(a.last_trigger)].next_trigger = trig_id;
    a.last_trigger = trig_id;
  }
  hazards_.record(desc_id, qagent, reads, writes);
  return desc_id;
}

}  // namespace tessera::builder
