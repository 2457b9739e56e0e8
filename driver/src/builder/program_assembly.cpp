#include "builder/program_assembly.h"

#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <map>

namespace tessera::builder {

Program assemble(const arch::HwConfig& cfg, const Schedule& s, const std::vector<std::string>& label_names,
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
  const auto label_of = [&](const Op& op) {
    const int label = op.origin < 0 ? -1 : origins[op.origin].label;
    return label < 0 ? std::string() : label_names[static_cast<std::size_t>(label)];
  };
  const auto site_of = [&](const Op& op) { return op.origin < 0 ? CallSite{} : origins[op.origin].site; };
  std::vector<Program::OpRef> where(ops.size());  // op id -> its place in the program
  for (int e = 0; e < arch::kNumEngines; ++e) {
    auto& out = p.streams[static_cast<std::size_t>(e)];
    auto& labels = p.labels[static_cast<std::size_t>(e)];
    auto& sites = p.sites[static_cast<std::size_t>(e)];
    std::map<std::uint16_t, std::uint32_t> waited;  // semaphore -> value already waited for
    const auto wait_for = [&](int dep) {
      const auto sem = static_cast<std::uint16_t>(ops[static_cast<std::size_t>(dep)].agent);
      const std::uint32_t value = signal_count[static_cast<std::size_t>(dep)];
      if (waited[sem] >= value) return;
      waited[sem] = value;
      arch::Instruction w;
      w.engine = static_cast<arch::Engine>(e);
      w.opcode = arch::Opcode::SemWait;
      w.sem = sem;
      w.value = value;
      out.push_back(w);
    };
    const auto emit_op = [&](int id) {
      const Op& op = ops[static_cast<std::size_t>(id)];
      for (int dep : op.waits) wait_for(dep);
      labels.resize(out.size(), label_of(op));  // the waits carry the label of what they hold up
      sites.resize(out.size(), site_of(op));
      where[static_cast<std::size_t>(id)] = {false, static_cast<std::uint32_t>(e), 0, static_cast<std::uint32_t>(out.size())};
      out.push_back(op.in);
      if (op.signal) {
        arch::Instruction inc;
        inc.engine = static_cast<arch::Engine>(e);
        inc.opcode = arch::Opcode::SemIncr;
        inc.sem = static_cast<std::uint16_t>(e);
        inc.value = 1;
        out.push_back(inc);
      }
      labels.resize(out.size(), label_of(op));
      sites.resize(out.size(), site_of(op));
    };
    for (int id : s.stream(e)) {
      emit_op(id);
      for (int t : ops[static_cast<std::size_t>(id)].triggers) emit_op(t);
    }
    if (e == kSyncAgent) {
      // The program ends when every DMA has landed, not just been started.
      for (const auto& q : queues)
        if (!q.descriptors.empty()) wait_for(q.descriptors.back());
    }
    arch::Instruction end;
    end.engine = static_cast<arch::Engine>(e);
    end.opcode = arch::Opcode::End;
    out.push_back(end);
    labels.resize(out.size());
    sites.resize(out.size());
  }
  for (const auto& q : queues) {
    auto& ring = p.rings[{q.engine, q.queue}];
    auto& ring_labels = p.ring_labels[{q.engine, q.queue}];
    auto& ring_sites = p.ring_sites[{q.engine, q.queue}];
    for (int id : q.descriptors) {
      const Op& op = ops[static_cast<std::size_t>(id)];
      where[static_cast<std::size_t>(id)] = {true, q.engine, q.queue, static_cast<std::uint32_t>(ring.size())};
      ring.push_back(s.descriptor(op));
      ring_labels.push_back(label_of(op));
      ring_sites.push_back(site_of(op));
    }
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
