#include "builder/program_assembly.h"

#include "builder/large_arrays.h"

#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <limits>
#include <unordered_map>

namespace tessera::builder {

namespace {

// One engine's stream as the Program holds it: each op after the semaphore
// waits it needs (one per semaphore and value, never repeated), its
// increment when others wait for it, the triggers issued after it, and an
// End. Emission runs twice over a stream: Count sizes it, Fill writes it.
template <typename Sink>
void emit_stream(const Schedule& s, int e, Sink& out) {
  const auto& ops = s.ops();
  const auto& triggers = s.triggers();
  const auto& queues = s.queues();
  std::vector<std::uint32_t> waited(kFirstQueueAgent + queues.size(), 0);  // semaphore -> value waited for
  const auto wait_for = [&](int dep, int origin) {
    const Op& d = ops[static_cast<std::size_t>(dep)];
    // The value its agent's semaphore reaches once it is done.
    const std::uint32_t value = d.agent < kFirstQueueAgent ? d.value : d.value + 1;
    if (waited[d.agent] >= value) return;
    waited[d.agent] = value;
    arch::Instruction w;
    w.engine = static_cast<arch::Engine>(e);
    w.opcode = arch::Opcode::SemWait;
    w.sem = d.agent;
    w.value = value;
    out.extra(w, origin);  // a wait carries the label and call site of what it holds up
  };
  const auto emit_trigger = [&](std::size_t t) {
    const Trigger& trig = triggers[t];
    for (const int* dep = s.trigger_waits_begin(t); dep != s.trigger_waits_end(t); ++dep) wait_for(*dep, trig.origin);
    const DmaQueue& q = queues[trig.queue];
    arch::Instruction in;
    in.engine = static_cast<arch::Engine>(e);
    in.opcode = arch::Opcode::DmaTrigger;
    in.dma_engine = static_cast<std::uint16_t>(q.engine);
    in.dma_queue = static_cast<std::uint16_t>(q.queue);
    in.address = trig.slot;  // a ring slot until Device places the ring
    in.value = 1;
    out.extra(in, trig.origin);
  };
  std::vector<std::int32_t> after;  // the triggers issued after one op, latest first
  for (const std::uint32_t entry : s.stream(e)) {
    if (entry & Schedule::kTriggerEntry) {
      emit_trigger(entry & ~Schedule::kTriggerEntry);
      continue;
    }
    const Op& op = ops[entry];
    for (const int* dep = s.waits_begin(entry); dep != s.waits_end(entry); ++dep) wait_for(*dep, op.origin);
    out.code(entry, op);
    if (op.signal) {
      arch::Instruction inc;
      inc.engine = static_cast<arch::Engine>(e);
      inc.opcode = arch::Opcode::SemIncr;
      inc.sem = static_cast<std::uint16_t>(e);
      inc.value = 1;
      out.extra(inc, op.origin);
    }
    if (op.last_trigger >= 0) {
      after.clear();
      for (std::int32_t t = op.last_trigger; t >= 0; t = triggers[static_cast<std::size_t>(t)].previous)
        after.push_back(t);
      for (auto t = after.rbegin(); t != after.rend(); ++t) emit_trigger(static_cast<std::size_t>(*t));
    }
  }
  if (e == kSyncAgent) {
    // The program ends when every DMA has landed, not just been started.
    for (const auto& q : queues)
      if (!q.descriptors.empty()) wait_for(q.descriptors.back(), -1);
  }
  arch::Instruction end;
  end.engine = static_cast<arch::Engine>(e);
  end.opcode = arch::Opcode::End;
  out.extra(end, -1);
}

// Sizes a stream: its instructions and their encoded bytes.
struct Count {
  const std::vector<arch::Instruction>& own;
  std::size_t n = 0, bytes = 0, next_code = 0;
  void extra(const arch::Instruction& in, int /*origin*/) {
    ++n;
    bytes += arch::encoded_size(in);
  }
  void code(std::uint32_t /*id*/, const Op&) {
    ++n;
    bytes += arch::encoded_size(own[next_code++]);
  }
};

}  // namespace

Program assemble(const arch::HwConfig& cfg, Schedule& s, const std::vector<std::string>& label_names,
                 const Origins& origins, const std::vector<Allocation>& tiles) {
  auto& ops = s.ops();
  const auto& queues = s.queues();
  const std::size_t agents = kFirstQueueAgent + queues.size();
  if (agents > static_cast<std::size_t>(cfg.sync.semaphores))
    throw KernelError(fmt::format("build(): needs {} semaphores (5 engines + {} DMA queues); the config has {}",
                                  agents, queues.size(), cfg.sync.semaphores));
  s.release_dependencies();

  // The value an engine's semaphore reaches when each of its signalling ops is done.
  for (int e = 0; e < arch::kNumEngines; ++e) {
    std::uint32_t n = 0;
    for (const std::uint32_t entry : s.stream(e))
      if (!(entry & Schedule::kTriggerEntry) && ops[entry].signal) ops[entry].value = ++n;
  }
  // Where the ops that begin and end a tile's life land (Program::tiles).
  std::unordered_map<int, Program::OpRef> where;
  for (const auto& a : tiles)
    if (a.first_op >= 0) {
      ops[static_cast<std::size_t>(a.first_op)].referenced = true;
      ops[static_cast<std::size_t>(a.last_op)].referenced = true;
    }

  Program p;
  p.source_files = origins.files();
  // The builder's labels after the empty one, so that builder label i is
  // the Program's i + 1.
  p.label_names.insert(p.label_names.end(), label_names.begin(), label_names.end());
  // An op's origin (Origins): the label in force and its call site.
  const auto label_of = [&](int origin) {
    const int label = origin < 0 ? -1 : origins[origin].label;
    return static_cast<std::uint32_t>(label + 1);
  };
  const auto site_of = [&](int origin) { return origin < 0 ? CallSite{} : origins[origin].site; };

  // Encodes a stream counted before, the engine's own instructions from its code.
  struct Fill {
    std::vector<std::uint8_t>& bytes;
    std::vector<std::uint32_t>& begins;
    const std::vector<arch::Instruction>& own;
    std::vector<std::uint32_t>& labels;
    std::vector<CallSite>& sites;
    std::unordered_map<int, Program::OpRef>& where;
    std::uint32_t engine;
    const decltype(label_of)& label_text;
    const decltype(site_of)& site;
    std::size_t next_code = 0;  // the engine's next own instruction
    void add(const arch::Instruction& in, int origin) {
      begins.push_back(static_cast<std::uint32_t>(bytes.size()));
      arch::encode_append(in, bytes);
      labels.push_back(label_text(origin));
      sites.push_back(site(origin));
    }
    void extra(const arch::Instruction& in, int origin) { add(in, origin); }
    void code(std::uint32_t id, const Op& op) {
      if (op.referenced) where[static_cast<int>(id)] = {false, engine, 0, static_cast<std::uint32_t>(begins.size())};
      add(own[next_code++], op.origin);
    }
  };

  for (int e = 0; e < arch::kNumEngines; ++e) {
    const std::vector<arch::Instruction> code = s.take_code(e);
    Count count{code};
    emit_stream(s, e, count);
    if (count.bytes > std::numeric_limits<std::uint32_t>::max())
      throw KernelError(fmt::format("build(): the {} engine's stream of {} instructions encodes to {} bytes, over 4 GiB",
                                    to_string(static_cast<arch::Engine>(e)), count.n, count.bytes));
    std::vector<std::uint8_t> bytes;
    std::vector<std::uint32_t> begins;
    auto& labels = p.labels[static_cast<std::size_t>(e)];
    auto& sites = p.sites[static_cast<std::size_t>(e)];
    reserve_large(bytes, count.bytes);
    reserve_large(begins, count.n);
    reserve_large(labels, count.n);
    reserve_large(sites, count.n);
    Fill fill{bytes, begins, code, labels, sites, where, static_cast<std::uint32_t>(e), label_of, site_of};
    emit_stream(s, e, fill);
    p.streams[static_cast<std::size_t>(e)] = InstructionStream(std::move(bytes), std::move(begins));
  }
  for (std::size_t i = 0; i < queues.size(); ++i) {
    const DmaQueue& q = queues[i];
    auto& ring_labels = p.ring_labels[{q.engine, q.queue}];
    auto& ring_sites = p.ring_sites[{q.engine, q.queue}];
    reserve_large(ring_labels, q.descriptors.size());
    reserve_large(ring_sites, q.descriptors.size());
    for (std::size_t slot = 0; slot < q.descriptors.size(); ++slot) {
      const Op& op = ops[static_cast<std::size_t>(q.descriptors[slot])];
      if (op.referenced) where[q.descriptors[slot]] = {true, q.engine, q.queue, static_cast<std::uint32_t>(slot)};
      ring_labels.push_back(label_of(op.origin));
      ring_sites.push_back(site_of(op.origin));
    }
    p.rings[{q.engine, q.queue}] = s.take_ring(i);
  }
  for (int e = 0; e < arch::kNumEngines; ++e) p.semaphore_owners.emplace_back(to_string(static_cast<arch::Engine>(e)));
  for (const auto& q : queues) p.semaphore_owners.push_back(fmt::format("dma {}.{}", q.engine, q.queue));
  for (const auto& a : tiles)
    if (a.first_op >= 0) p.tiles.push_back({a.name, a.memory, a.bytes, where.at(a.first_op), where.at(a.last_op)});
  return p;
}

}  // namespace tessera::builder
