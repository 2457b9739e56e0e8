#include "builder/schedule.h"

#include "builder/large_arrays.h"

#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::builder {

Schedule::Schedule(const arch::HwConfig& cfg, const arch::AddressMap& map) : cfg_(cfg), map_(map) {}

void Schedule::add_waits(std::vector<int>& waits, const std::vector<int>& deps) {
  for (int d : deps) {
    push_large(waits, d);
    Op& dep = ops_[static_cast<std::size_t>(d)];
    if (dep.agent < kFirstQueueAgent) dep.signal = true;
  }
}

int Schedule::add_instruction(arch::Engine engine, const arch::Instruction& in, const RegionList& reads,
                              const RegionList& writes, int origin) {
  const int agent = static_cast<int>(engine);
  hazards_.dependencies(agent, reads, writes, deps_);
  Op op;
  op.agent = static_cast<std::uint16_t>(agent);
  op.origin = origin;
  op.waits_begin = static_cast<std::uint32_t>(waits_.size());
  // Assembly emits a wait only when it asks its agent's semaphore for more
  // than the stream has waited for already. An earlier instruction of this
  // stream that waited for the same agent's op `dep` or a later one makes
  // the wait redundant (values grow with ids along an agent), so it is not
  // kept: most of a large kernel's waits are of this kind (96 % of a
  // fully_optimized GEMM's). Its op still signals, so the program is the same.
  auto& latest = latest_waited_[static_cast<std::size_t>(agent)];
  for (const int dep : deps_) {
    Op& d = ops_[static_cast<std::size_t>(dep)];
    if (d.agent < kFirstQueueAgent) d.signal = true;
    if (d.agent >= latest.size()) latest.resize(d.agent + 1u, -1);
    if (dep <= latest[d.agent]) continue;
    latest[d.agent] = dep;
    push_large(waits_, dep);
  }
  const int id = static_cast<int>(ops_.size());
  push_large(ops_, op);
  push_large(order_[static_cast<std::size_t>(agent)], static_cast<std::uint32_t>(id));
  auto& code = code_[static_cast<std::size_t>(agent)];
  push_large(code, in);
  code.back().engine = engine;
  hazards_.record(id, agent, reads, writes);
  return id;
}

int Schedule::queue_for(int placer, std::uint32_t first, std::uint32_t usable) {
  // Each queue is fed by one stream only, so its doorbells come in ring order.
  const auto all = static_cast<std::uint32_t>(cfg_.dma.engines);
  first = std::min(first, all - 1);
  const auto engines = usable > 0 ? std::min(usable, all - first) : all - first;
  if (queues_on_engine_.empty()) {
    queues_on_engine_.assign(all, 0);
    queue_of_placer_on_engine_.assign(std::size_t{all} * next_engine_of_placer_.size(), -1);
  }
  for (std::uint32_t tries = 0; tries < engines; ++tries) {
    const std::uint32_t e = first + next_engine_of_placer_[static_cast<std::size_t>(placer)]++ % engines;
    int& mine = queue_of_placer_on_engine_[static_cast<std::size_t>(placer) * all + e];
    if (mine >= 0) return kFirstQueueAgent + mine;
    std::uint32_t& used = queues_on_engine_[e];
    if (used < static_cast<std::uint32_t>(cfg_.dma.queues_per_engine)) {
      queues_.push_back({e, used++, placer, {}, {}});
      mine = static_cast<int>(queues_.size()) - 1;
      return kFirstQueueAgent + mine;
    }
  }
  throw KernelError(fmt::format("dma: no free DMA queue for the {} stream ({} engines x {} queues in use)",
                                to_string(static_cast<arch::Engine>(placer)), cfg_.dma.engines,
                                cfg_.dma.queues_per_engine));
}

int Schedule::add_dma(arch::DmaDescriptor d, const Region& read, const Region& write, int origin,
                      std::uint32_t first_engine, std::uint32_t engines) {
  const RegionList reads{read}, writes{write};
  hazards_.dependencies_of_unplaced(reads, writes, deps_);
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
  const auto qindex = static_cast<std::size_t>(qagent - kFirstQueueAgent);
  DmaQueue& q = queues_[qindex];
  // Ring order is doorbell order: never ring before an earlier trigger of
  // this queue (ids grow along the placer's stream, as positions do).
  anchor = std::max(anchor, q.last_anchor);
  if (placer != kSyncAgent) q.last_anchor = anchor;
  // Same-queue read-after-write: the queue itself orders it, with a barrier.
  bool same_queue_raw = false;
  hazards_.dependencies_as(qagent, deps_, &same_queue_raw);
  if (same_queue_raw) d.flags |= arch::kDmaFlagBarrier;

  const auto slot = static_cast<std::uint32_t>(q.descriptors.size());
  Op desc;
  desc.agent = static_cast<std::uint16_t>(qagent);
  desc.value = slot;
  desc.origin = origin;
  desc.waits_begin = static_cast<std::uint32_t>(waits_.size());
  d.flags |= arch::kDmaFlagCompletion;
  d.sem_addr = map_.semaphore_address(static_cast<std::uint64_t>(qagent));
  d.sem_value = 1;
  d.magic = arch::kDmaDescriptorMagic;
  push_large(q.ring, d);
  const int desc_id = static_cast<int>(ops_.size());
  push_large(ops_, desc);
  push_large(q.descriptors, desc_id);

  Trigger trig;
  trig.queue = static_cast<std::uint32_t>(qindex);
  trig.slot = slot;
  trig.origin = origin;
  trig.waits_begin = static_cast<std::uint32_t>(trigger_waits_.size());
  // Ops of the placer's own stream up to the anchor are done by then.
  deps_.erase(std::remove_if(deps_.begin(), deps_.end(),
                             [&](int dep) { return ops_[static_cast<std::size_t>(dep)].agent == placer; }),
              deps_.end());
  add_waits(trigger_waits_, deps_);
  const auto trig_id = static_cast<std::int32_t>(triggers_.size());
  if (placer == kSyncAgent || anchor < 0) {
    // The sync stream holds triggers and waits only: append.
    push_large(order_[static_cast<std::size_t>(placer)], kTriggerEntry | static_cast<std::uint32_t>(trig_id));
  } else {
    Op& a = ops_[static_cast<std::size_t>(anchor)];
    trig.previous = a.last_trigger;
    a.last_trigger = trig_id;
  }
  push_large(triggers_, trig);
  hazards_.record(desc_id, qagent, reads, writes);
  return desc_id;
}

}  // namespace tessera::builder
