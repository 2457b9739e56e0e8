#include "builder/program_assembly.h"

#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <map>

namespace tessera::builder {

namespace {

// Where stream emission goes: Count sizes a stream, Fill writes it (into
// vectors sized by Count, so that a large program holds no spare capacity).
struct Count {
  std::size_t n = 0;
  void push(const arch::Instruction&, int /*origin*/) { ++n; }
  void place(int /*op*/) {}
  std::size_t size() const { return n; }
};

}  // namespace

Program assemble(const arch::HwConfig& cfg, Schedule& s, const std::vector<std::string>& label_names,
                 const Origins& origins, const std::vector<Allocation>& tiles) {
  const auto& ops = s.ops();
  const auto& queues = s.queues();
  const std::size_t agents = kFirstQueueAgent + queues.size();
  if (agents > static_cast<std::size_t>(cfg.sync.semaphores))
    throw KernelError(fmt::format("build(): needs {} semaphores (5 engines + {} DMA queues); the config has {}",
                                  agents, queues.size(), cfg.sync.semaphores));

  // The value an agent's semaphore reaches when op `id` signals.
  std::vector<std::uint32_t> signal_count(ops.size(), 0);
  for (int e = 0; e < arch::kNumEngines; ++e) {
    std::uint32_t n = 0;
    for (int id : s.stream(e))
      if (ops[static_cast<std::size_t>(id)].signal) signal_count[static_cast<std::size_t>(id)] = ++n;
  }
  for (const auto& q : queues)
    for (int id : q.descriptors) signal_count[static_cast<std::size_t>(id)] = ops[static_cast<std::size_t>(id)].slot + 1;

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
  std::vector<Program::OpRef> where(ops.size());  // op id -> its place in the program

  // Engine e's stream, into `out`: each op after the semaphore waits it
  // needs (one per semaphore and value, never repeated), its increment when
  // others wait for it, the triggers issued after it, and an End.
  const auto emit_stream = [&](int e, auto& out) {
    std::map<std::uint16_t, std::uint32_t> waited;  // semaphore -> value already waited for
    const auto wait_for = [&](int dep, int origin) {
      const auto sem = static_cast<std::uint16_t>(ops[static_cast<std::size_t>(dep)].agent);
      const std::uint32_t value = signal_count[static_cast<std::size_t>(dep)];
      if (waited[sem] >= value) return;
      waited[sem] = value;
      arch::Instruction w;
      w.engine = static_cast<arch::Engine>(e);
      w.opcode = arch::Opcode::SemWait;
      w.sem = sem;
      w.value = value;
      out.push(w, origin);  // a wait carries the label and call site of what it holds up
    };
    const auto emit_op = [&](int id) {
      const Op& op = ops[static_cast<std::size_t>(id)];
      for (const int* dep = s.waits_begin(op); dep != s.waits_end(op); ++dep) wait_for(*dep, op.origin);
      out.place(id);
      out.push(s.instruction(op), op.origin);
      if (op.signal) {
        arch::Instruction inc;
        inc.engine = static_cast<arch::Engine>(e);
        inc.opcode = arch::Opcode::SemIncr;
        inc.sem = static_cast<std::uint16_t>(e);
        inc.value = 1;
        out.push(inc, op.origin);
      }
    };
    for (int id : s.stream(e)) {
      emit_op(id);
      for (int t = ops[static_cast<std::size_t>(id)].first_trigger; t >= 0; t = ops[static_cast<std::size_t>(t)].next_trigger)
        emit_op(t);
    }
    if (e == kSyncAgent) {
      // The program ends when every DMA has landed, not just been started.
      for (const auto& q : queues)
        if (!q.descriptors.empty()) wait_for(q.descriptors.back(), -1);
    }
    arch::Instruction end;
    end.engine = static_cast<arch::Engine>(e);
    end.opcode = arch::Opcode::End;
    out.push(end, -1);
  };

  struct Fill {
    std::vector<arch::Instruction>& stream;
    std::vector<std::uint32_t>& labels;
    std::vector<CallSite>& sites;
    std::vector<Program::OpRef>& where;
    std::uint32_t engine;
    const decltype(label_of)& label_text;
    const decltype(site_of)& site;
    void push(const arch::Instruction& in, int origin) {
      stream.push_back(in);
      labels.push_back(label_text(origin));
      sites.push_back(site(origin));
    }
    void place(int op) {
      where[static_cast<std::size_t>(op)] = {false, engine, 0, static_cast<std::uint32_t>(stream.size())};
    }
  };
  for (int e = 0; e < arch::kNumEngines; ++e) {
    Count count;
    emit_stream(e, count);
    auto& out = p.streams[static_cast<std::size_t>(e)];
    auto& labels = p.labels[static_cast<std::size_t>(e)];
    out.reserve(count.size());
    auto& sites = p.sites[static_cast<std::size_t>(e)];
    labels.reserve(count.size());
    sites.reserve(count.size());
    Fill fill{out, labels, sites, where, static_cast<std::uint32_t>(e), label_of, site_of};
    emit_stream(e, fill);
  }
  for (std::size_t i = 0; i < queues.size(); ++i) {
    const DmaQueue& q = queues[i];
    auto& ring_labels = p.ring_labels[{q.engine, q.queue}];
    auto& ring_sites = p.ring_sites[{q.engine, q.queue}];
    ring_labels.reserve(q.descriptors.size());
    ring_sites.reserve(q.descriptors.size());
    for (std::size_t slot = 0; slot < q.descriptors.size(); ++slot) {
      const Op& op = ops[static_cast<std::size_t>(q.descriptors[slot])];
      where[static_cast<std::size_t>(q.descriptors[slot])] = {true, q.engine, q.queue, static_cast<std::uint32_t>(slot)};
      ring_labels.push_back(label_of(op.origin));
      ring_sites.push_back(site_of(op.origin));
    }
    p.rings[{q.engine, q.queue}] = s.take_ring(i);
  }
  for (int e = 0; e < arch::kNumEngines; ++e) p.semaphore_owners.emplace_back(to_string(static_cast<arch::Engine>(e)));
  for (const auto& q : queues) p.semaphore_owners.push_back(fmt::format("dma {}.{}", q.engine, q.queue));
  for (const auto& a : tiles)
    if (a.first_op >= 0)
      p.tiles.push_back({a.name, a.memory, a.bytes, where[static_cast<std::size_t>(a.first_op)],
                         where[static_cast<std::size_t>(a.last_op)]});
  return p;
}

}  // namespace tessera::builder
