#include "run_timing.h"

#include "core/neuron_core.h"
#include "trace/sim_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <tuple>

namespace tessera::timing {

std::map<std::uint32_t, QueueTimes> queue_times(const dma::DmaEngineBase& engine) {
  std::map<std::uint32_t, QueueTimes> out;
  // Each queue's entry found once, not once per doorbell and start (a large
  // run has half a million): a map's nodes stay where they are.
  std::vector<QueueTimes*> by_queue;
  const auto times_of = [&](std::uint32_t q) -> QueueTimes& {
    if (by_queue.size() <= q) by_queue.resize(std::size_t{q} + 1, nullptr);
    if (!by_queue[q]) {
      by_queue[q] = &out[q];
      // Indexes run up to the ring's size: every slot made at once, not a
      // growth (a call, and at times a copy) at each index past the last.
      by_queue[q]->visible.assign(engine.queue(q).ring_size, std::nullopt);  // a queue its records name
      by_queue[q]->started.assign(engine.queue(q).ring_size, std::nullopt);
    }
    return *by_queue[q];
  };
  const auto slot = [](std::vector<std::optional<sc_core::sc_time>>& times,
                       std::uint32_t index) -> std::optional<sc_core::sc_time>& {
    if (times.size() <= index) times.resize(std::size_t{index} + 1);
    return times[index];
  };
  for (const auto& d : engine.doorbells()) {
    auto& visible = times_of(d.queue).visible;
    for (std::uint32_t i = 0; i < d.count; ++i) slot(visible, d.first + i) = d.visible;
  }
  for (const auto& st : engine.starts())
    if (auto& at = slot(times_of(st.queue).started, st.index); !at) at = st.at;
  return out;
}

std::map<std::uint32_t, std::vector<std::pair<std::uint32_t, sc_core::sc_time>>> completions_by_queue(
    const dma::DmaEngineBase& engine) {
  std::map<std::uint32_t, std::vector<std::pair<std::uint32_t, sc_core::sc_time>>> out;
  for (const auto& c : engine.completions()) out[c.queue].emplace_back(c.index, c.done);
  // A queue completes its descriptors in ring order: sorted already but for
  // a ring run more than once, and a sort of a sorted list was 1 % of a large
  // run's instructions, in each of the report's two users.
  for (auto& [q, list] : out)
    if (!std::is_sorted(list.begin(), list.end())) std::sort(list.begin(), list.end());
  return out;
}

namespace {

// Calls visit(t) for every completed descriptor, in descriptor_times' order:
// a large run's half a million are used as they come, not held.
template <class Visit>
void each_descriptor_time(const Program& program, core::NeuronCore& core, Visit&& visit) {
  using trace::ns;
  // The semaphores' increments as they landed, by semaphore, in time order.
  // By semaphore index (a core has a few hundred at most).
  std::vector<std::vector<double>> increments;
  for (const auto& inc : core.semaphores().increments()) {
    if (increments.size() <= inc.index) increments.resize(std::size_t{inc.index} + 1);
    increments[inc.index].push_back(ns(inc.at));
  }
  for (std::size_t e = 0; e < core.dma().engines(); ++e) {
    const dma::DmaEngineBase& engine = core.dma().engine(e);
    const auto e32 = static_cast<std::uint32_t>(e);
    const std::map<std::uint32_t, QueueTimes> times = queue_times(engine);
    for (const auto& [q, list] : completions_by_queue(engine)) {
      const auto ring = program.rings.find({e32, q});
      const std::string owner = fmt::format("dma {}.{}", e32, q);
      const auto owned = std::find(program.semaphore_owners.begin(), program.semaphore_owners.end(), owner);
      const auto sem = owned == program.semaphore_owners.end()
                           ? -1
                           : static_cast<std::int64_t>(owned - program.semaphore_owners.begin());
      const std::vector<double>* writes =
          sem >= 0 && static_cast<std::size_t>(sem) < increments.size() ? &increments[static_cast<std::size_t>(sem)]
                                                                          : nullptr;
      std::size_t next_write = 0;  // the queue's semaphore writes land in ring order
      double previous_release = 0;
      const auto found = times.find(q);
      const QueueTimes* queue = found == times.end() ? nullptr : &found->second;
      for (const auto& [index, done] : list) {
        const double status = ns(done);
        const arch::DmaDescriptor* d =
            ring != program.rings.end() && index < ring->second.size() ? &ring->second[index] : nullptr;
        DescriptorTime t;
        t.engine = e32;
        t.queue = q;
        t.index = index;
        t.status_ns = status;
        t.semaphore = sem;
        t.release_ns = status;
        if (d && (d->flags & arch::kDmaFlagCompletion) && writes && next_write < writes->size()) {
          t.release_ns = (*writes)[next_write++];
          t.delta = d->sem_value;
        }
        const auto ns_or_never = [](std::optional<sc_core::sc_time> at) { return at ? ns(*at) : -1.0; };
        const double shown = ns_or_never(queue ? queue->visible_at(index) : std::nullopt);
        const double start = ns_or_never(queue ? queue->started_at(index) : std::nullopt);
        t.visible_ns = shown < 0 ? previous_release : shown;
        if (start >= 0) t.first_read_ns = start;
        t.queued_from_ns = std::max(t.visible_ns, previous_release);
        t.moving_from_ns = std::min(t.release_ns, std::max(start < 0 ? t.queued_from_ns : start, previous_release));
        previous_release = t.release_ns;
        visit(t);
      }
    }
  }
}

}  // namespace

std::vector<DescriptorTime> descriptor_times(const Program& program, core::NeuronCore& core) {
  std::vector<DescriptorTime> out;
  std::size_t completed = 0;
  for (std::size_t e = 0; e < core.dma().engines(); ++e) completed += core.dma().engine(e).completions().size();
  out.reserve(completed);
  each_descriptor_time(program, core, [&](const DescriptorTime& t) { out.push_back(t); });
  return out;
}

namespace {

// The strings events view that the Program does not hold: one per DMA
// queue and per call site, however many events name it.
class Interned {
 public:
  Interned(const Program& program, std::deque<std::string>& store) : program_(program), store_(store) {}
  std::string_view site(const CallSite& site) {
    // Neighbouring operations mostly share a call site.
    if (last_ && site == last_site_) return *last_;
    auto it = sites_.find(site);
    if (it == sites_.end()) it = sites_.emplace(site, store_.emplace_back(program_.site_name(site))).first;
    last_site_ = site;
    last_ = &it->second;
    return it->second;
  }
  std::string_view queue(std::uint32_t engine, std::uint32_t queue) {
    const auto it = queues_.find({engine, queue});
    if (it != queues_.end()) return it->second;
    return queues_.emplace(DmaQueueId{engine, queue}, store_.emplace_back(fmt::format("dma {}.{}", engine, queue)))
        .first->second;
  }

 private:
  const Program& program_;
  std::deque<std::string>& store_;
  std::map<CallSite, std::string_view> sites_;
  std::map<DmaQueueId, std::string_view> queues_;
  CallSite last_site_;
  const std::string_view* last_ = nullptr;
};

bool descriptor_part(EventKind kind) { return kind == EventKind::Dma || kind == EventKind::DmaQueued; }

// Each distinct EventName once, in `store`. Neighbouring events mostly share
// theirs, so the last one found is tried first.
class EventNames {
 public:
  explicit EventNames(std::deque<EventName>& store) : store_(store) {}
  const EventName* of(const EventName& n) {
    const Key key{n.resource, n.label, n.site, n.stream};
    if (last_ && key == last_->first) return last_->second;
    auto it = index_.find(key);
    if (it == index_.end()) it = index_.emplace(key, &store_.emplace_back(n)).first;
    last_ = &*it;
    return it->second;
  }

 private:
  using Key = std::tuple<const char*, const char*, const char*, const InstructionStream*>;
  std::deque<EventName>& store_;
  std::map<Key, const EventName*> index_;
  const std::pair<const Key, const EventName*>* last_ = nullptr;  // map nodes stay where they are
};

}  // namespace

const char* to_string(EventKind kind) {
  switch (kind) {
    case EventKind::Instruction: return "instruction";
    case EventKind::Wait: return "wait";
    case EventKind::DmaQueued: return "dma queued";
    case EventKind::Dma: return "dma";
  }
  return "?";
}

void Predecessors::push_back(int id) {
  const std::size_t n = size();
  if (n == kCapacity)
    throw std::length_error(fmt::format("an event of the critical path with more than {} predecessors", kCapacity));
  ids_[n] = id;
}

const EventName Event::kUnnamed{};

std::string name_of(const Event& e) {
  if (e.stream()) return arch::disassemble((*e.stream())[static_cast<std::size_t>(e.index)]);
  if (descriptor_part(e.kind)) return fmt::format("descriptor {}", e.index);
  return e.label();
}

std::string name_of(const Work& w) {
  return w.stream ? arch::disassemble((*w.stream)[static_cast<std::size_t>(w.index)]) : std::string(w.label);
}

RunEvents run_events(const Program& program, core::NeuronCore& core) {
  RunEvents run;
  std::vector<Event>& events = run.events;
  Interned interned(program, run.names);
  EventNames names(run.names_of);
  // Sized once (at most an event per instruction and two per descriptor):
  // growing it by doubling would hold the old and the new copy at once, at
  // the run's peak of memory.
  std::size_t most = 0;
  for (const auto& stream : program.streams) most += stream.size();
  for (const auto& [queue, ring] : program.rings) most += 2 * ring.size();
  events.reserve(most);
  const auto add = [&](Event e) {
    events.push_back(std::move(e));
    return static_cast<int>(events.size()) - 1;
  };
  // Instructions, each after the one before it on its engine.
  std::vector<std::vector<int>> of_instruction(arch::kNumEngines);
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const auto kind = static_cast<arch::Engine>(e);
    const auto& stream = program.streams[static_cast<std::size_t>(e)];
    const auto& costs = core.engine(kind).instruction_costs();
    of_instruction[static_cast<std::size_t>(e)].assign(stream.size(), -1);
    const auto& sites = program.sites[static_cast<std::size_t>(e)];
    int previous = -1;
    for (std::size_t i = 0; i < stream.size() && i < costs.size(); ++i) {
      const auto& c = costs[i];
      if (c.issue_ns < 0 || c.done_ns < 0) break;  // not reached: the run stopped
      Event x;
      EventName name;
      name.resource = to_string(kind);
      x.kind = stream.opcode(i) == arch::Opcode::SemWait && c.done_ns > c.issue_ns ? EventKind::Wait : EventKind::Instruction;
      name.stream = &stream;
      name.label = program.label(kind, i).c_str();
      // Interned views are of whole strings, so their data is NUL-terminated.
      if (i < sites.size()) name.site = interned.site(sites[i]).data();
      x.name = names.of(name);
      x.index = static_cast<std::int32_t>(i);
      x.start = c.issue_ns;
      x.end = c.done_ns;
      if (previous >= 0) x.after.push_back(previous);
      previous = of_instruction[static_cast<std::size_t>(e)][i] = add(std::move(x));
    }
  }
  // Per DMA queue, numbered in ring order: each descriptor's first event, the
  // queue's last event, and its semaphore signals (moving event, delta).
  // Vectors by number and ring slot, not maps by (engine, queue, index): a
  // large run has half a million descriptors.
  std::map<DmaQueueId, std::size_t> queue_number;
  std::vector<std::vector<int>> first_part;
  for (const auto& [id, ring] : program.rings) {
    queue_number.emplace(id, first_part.size());
    first_part.emplace_back(ring.size(), -1);
  }
  std::vector<int> last_of_queue(first_part.size(), -1);
  std::vector<std::vector<std::pair<int, std::uint32_t>>> signals_of_queue(first_part.size());
  std::size_t number = 0;
  DmaQueueId numbered{~0u, ~0u};
  // What a queue's descriptors share, looked up once per run of them.
  std::string_view resource;
  const std::vector<CallSite>* sites = nullptr;
  const std::vector<std::uint32_t>* labels = nullptr;
  // Descriptors: queued, then moving; each after the one before it in its
  // queue, and the first part after the DmaTrigger that rang it.
  each_descriptor_time(program, core, [&](const DescriptorTime& t) {
    const DmaQueueId id{t.engine, t.queue};
    if (id != numbered) {
      const auto n = queue_number.find(id);
      if (n == queue_number.end()) return;  // a descriptor of no ring of this program
      number = n->second;
      numbered = id;
      resource = interned.queue(t.engine, t.queue);
      const auto s = program.ring_sites.find(id);
      sites = s == program.ring_sites.end() ? nullptr : &s->second;
      const auto l = program.ring_labels.find(id);
      labels = l == program.ring_labels.end() ? nullptr : &l->second;
    }
    Event x;
    EventName name;
    name.resource = resource.data();
    x.index = static_cast<std::int32_t>(t.index);
    name.label = program.label(labels, t.index).c_str();
    if (sites && t.index < sites->size()) name.site = interned.site((*sites)[t.index]).data();
    x.name = names.of(name);
    if (last_of_queue[number] >= 0) x.after.push_back(last_of_queue[number]);
    int first = -1;
    if (t.moving_from_ns > t.queued_from_ns) {
      Event queued = x;
      queued.kind = EventKind::DmaQueued;
      queued.start = t.queued_from_ns;
      queued.end = t.moving_from_ns;
      first = add(std::move(queued));
      x.after = {first};
    }
    x.kind = EventKind::Dma;
    x.start = t.moving_from_ns;
    x.end = t.release_ns;
    const int moving = add(std::move(x));
    if (t.index < first_part[number].size() && first_part[number][t.index] < 0)
      first_part[number][t.index] = first >= 0 ? first : moving;
    last_of_queue[number] = moving;
    if (t.delta > 0) signals_of_queue[number].emplace_back(moving, t.delta);
  });
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const auto& stream = program.streams[static_cast<std::size_t>(e)];
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const int trigger = of_instruction[static_cast<std::size_t>(e)][i];
      if (trigger < 0 || stream.opcode(i) != arch::Opcode::DmaTrigger) continue;
      const arch::HeaderFields in = stream.header(i);
      const auto n = queue_number.find({in.dma_engine, in.dma_queue});
      if (n == queue_number.end()) continue;
      const std::vector<int>& parts = first_part[n->second];
      for (std::uint64_t k = 0; k < std::max<std::uint64_t>(1, in.value); ++k) {
        const std::uint64_t slot = in.address + k;
        if (slot < parts.size() && parts[slot] >= 0) events[static_cast<std::size_t>(parts[slot])].after.push_back(trigger);
      }
    }
  }
  // Each blocked wait after the signal that took its semaphore to its value:
  // a semaphore has one owner (Program::semaphore_owners), whose signals
  // land in its program order. One pass over the streams gathers every
  // semaphore's signals (from its owning engine) and waits.
  const std::size_t sems = program.semaphore_owners.size();
  std::vector<std::vector<std::pair<int, std::uint32_t>>> signals(sems);
  std::vector<std::vector<std::pair<int, std::uint32_t>>> waits(sems);  // (event, the value it waits for)
  std::vector<int> owner_engine(sems, -1);
  for (std::size_t sem = 0; sem < sems; ++sem) {
    const std::string& owner = program.semaphore_owners[sem];
    if (owner.rfind("dma ", 0) == 0) {
      std::uint32_t de = 0, dq = 0;
      if (std::sscanf(owner.c_str(), "dma %u.%u", &de, &dq) == 2)
        if (const auto n = queue_number.find({de, dq}); n != queue_number.end()) signals[sem] = signals_of_queue[n->second];
      continue;
    }
    for (int e = 0; e < arch::kNumEngines; ++e)
      if (owner == to_string(static_cast<arch::Engine>(e))) owner_engine[sem] = e;
  }
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const auto& stream = program.streams[static_cast<std::size_t>(e)];
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const int id = of_instruction[static_cast<std::size_t>(e)][i];
      const arch::Opcode opcode = stream.opcode(i);
      if (id < 0 || (opcode != arch::Opcode::SemIncr && opcode != arch::Opcode::SemWait)) continue;
      const arch::HeaderFields in = stream.header(i);
      if (in.sem >= sems) continue;
      if (in.opcode == arch::Opcode::SemIncr && owner_engine[in.sem] == e) signals[in.sem].emplace_back(id, in.value);
      else if (in.opcode == arch::Opcode::SemWait) waits[in.sem].emplace_back(id, in.value);
    }
  }
  std::vector<std::uint64_t> value_after;
  for (std::size_t sem = 0; sem < sems; ++sem) {
    value_after.clear();
    std::uint64_t v = 0;
    for (const auto& [id, delta] : signals[sem]) value_after.push_back(v += delta);
    for (const auto& [id, value] : waits[sem]) {
      Event& w = events[static_cast<std::size_t>(id)];
      if (w.kind != EventKind::Wait) continue;
      const auto it = std::lower_bound(value_after.begin(), value_after.end(), std::uint64_t{value});
      if (it == value_after.end()) continue;
      w.released_by = signals[sem][static_cast<std::size_t>(it - value_after.begin())].first;
      w.after.push_back(w.released_by);
    }
  }
  return run;
}

std::vector<Work> run_work(const Program& program, core::NeuronCore& core, RunEvents& names) {
  std::vector<Work> out;
  std::size_t most = 0;
  for (const auto& stream : program.streams) most += stream.size();
  out.reserve(most);
  Interned interned(program, names.names);
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const auto kind = static_cast<arch::Engine>(e);
    const auto& stream = program.streams[static_cast<std::size_t>(e)];
    const auto& costs = core.engine(kind).instruction_costs();
    const std::size_t first = out.size();
    for (std::size_t i = 0; i < stream.size() && i < costs.size(); ++i) {
      if (costs[i].work_start_ns < 0 || costs[i].work_end_ns <= costs[i].work_start_ns) continue;
      Work w;
      w.resource = to_string(kind);
      w.stream = &stream;
      w.label = program.label(kind, i).c_str();
      // Interned views are of whole strings, so their data is NUL-terminated.
      if (i < program.sites[static_cast<std::size_t>(e)].size())
        w.site = interned.site(program.sites[static_cast<std::size_t>(e)][i]).data();
      w.index = static_cast<std::int32_t>(i);
      w.start = costs[i].work_start_ns;
      w.end = costs[i].work_end_ns;
      out.push_back(std::move(w));
    }
    std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                     [](const Work& a, const Work& b) { return a.start < b.start; });
  }
  return out;
}

namespace {

// The names of the path's events and work, each instruction disassembled
// once: the steps, the work that splits them and the waits' releases name
// the same instructions again and again, and their disassembly was most of
// the critical path's cost where the path runs through instructions (flash
// attention: 400 M instructions of 2.1 G).
class PathNames {
public:
  // Valid until the next call (the caller copies it into its step).
  const std::string& of(const Event& e) {
    return e.stream() ? instruction(e.stream(), e.index) : (other_ = name_of(e));
  }
  const std::string& of(const Work& w) { return w.stream ? instruction(w.stream, w.index) : (other_ = name_of(w)); }

private:
  const std::string& instruction(const InstructionStream* stream, std::int32_t index) {
    auto [it, fresh] = names_.try_emplace({stream, index});
    if (fresh) it->second = arch::disassemble((*stream)[static_cast<std::size_t>(index)]);
    return it->second;
  }
  std::map<std::pair<const InstructionStream*, std::int32_t>, std::string> names_;
  std::string other_;  // the last name that is not an instruction's
};

// An instruction step split by the work its engine did over it: the parts
// no work covers stay the step's own (its gap with the first).
void split_by_work(const PathStep& s, const std::vector<const Work*>& work, PathNames& names,
                   std::vector<PathStep>& out) {
  // A part of the step: the step's own (with its gap when it is the first),
  // or the work `w` done over it.
  const auto piece = [&](double from, double to, const Work* w) {
    if (to <= from) return;
    PathStep& p = out.emplace_back();
    p.resource = s.resource;
    p.kind = s.kind;
    if (w) {
      p.name = names.of(*w);
      p.label = w->label;
      p.site = w->site;
      p.index = w->index;
      p.start_ns = w->start;
      p.end_ns = w->end;
    } else {
      p.name = s.name;
      p.label = s.label;
      p.site = s.site;
      p.index = s.index;
      p.start_ns = s.start_ns;
      p.end_ns = s.end_ns;
      if (from <= s.from_ns) {
        p.gap_ns = s.gap_ns;
        p.gap = s.gap;
      }
    }
    p.from_ns = from;
    p.to_ns = to;
  };
  const double own = s.from_ns + s.gap_ns;
  piece(s.from_ns, own, nullptr);
  // The first work ending after `own` (work on one lane runs in order).
  auto it = std::partition_point(work.begin(), work.end(), [&](const Work* w) { return w->end <= own; });
  double t = own;
  for (; it != work.end() && (*it)->start < s.to_ns; ++it) {
    const double from = std::max((*it)->start, t), to = std::min((*it)->end, s.to_ns);
    if (to <= t) continue;
    piece(t, from, nullptr);
    piece(from, to, *it);
    t = to;
  }
  piece(t, s.to_ns, nullptr);
}

std::string_view engine_of(std::string_view resource) { return resource.rfind("dma", 0) == 0 ? "dma" : resource; }

bool waiting_kind(const std::string& kind) { return kind == "wait" || kind == "dma queued"; }

// A path's time by engine (and label), keyed by views of its steps' own
// strings: a step adds to its rows without a string of its own.
using ShareRows = std::map<std::pair<std::string_view, std::string_view>, PathShare>;

std::vector<PathShare> largest_first(ShareRows& rows) {
  std::vector<PathShare> out;
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const PathShare& a, const PathShare& b) { return a.ns > b.ns; });
  return out;
}

}  // namespace

CriticalPath critical_path(const std::vector<Event>& events, const std::vector<Work>& work) {
  CriticalPath path;
  if (events.empty()) return path;
  int current = 0;
  for (std::size_t i = 1; i < events.size(); ++i)
    if (events[i].end > events[static_cast<std::size_t>(current)].end) current = static_cast<int>(i);
  double hi = events[static_cast<std::size_t>(current)].end;
  path.end_ns = hi;
  // The walk back from the end: each event, the one that held it back, and
  // the part of the end time it held. Its steps and waits are then made in
  // time order, each once (a step per link at most).
  struct Link {
    int event, bound;
    double from, to;
  };
  std::vector<Link> chain;
  std::vector<char> seen(events.size(), 0);  // a walk that came back to an event would loop
  while (current >= 0 && !seen[static_cast<std::size_t>(current)]) {
    seen[static_cast<std::size_t>(current)] = 1;
    const Event& x = events[static_cast<std::size_t>(current)];
    // The event it could not start before that ended last held it back.
    int bound = -1;
    for (const int p : x.after)
      if (bound < 0 || events[static_cast<std::size_t>(p)].end > events[static_cast<std::size_t>(bound)].end) bound = p;
    const double from = bound < 0 ? 0.0 : std::min(events[static_cast<std::size_t>(bound)].end, hi);
    chain.push_back({current, bound, from, hi});
    hi = from;
    current = bound;
  }
  path.steps.reserve(chain.size());
  PathNames names;
  for (auto link = chain.rbegin(); link != chain.rend(); ++link) {
    const Event& x = events[static_cast<std::size_t>(link->event)];
    const int bound = link->bound;
    const double from = link->from;
    PathStep s;
    s.resource = std::string(x.resource());
    s.kind = to_string(x.kind);
    s.name = names.of(x);
    s.label = std::string(x.label());
    s.site = std::string(x.site());
    s.index = x.index;
    s.start_ns = x.start;
    s.end_ns = x.end;
    s.from_ns = from;
    s.to_ns = link->to;
    s.gap_ns = std::max(0.0, std::min(x.start, link->to) - from);
    if (s.gap_ns > 0) {
      const bool same =
          bound >= 0 && std::string_view(events[static_cast<std::size_t>(bound)].resource()) == x.resource();
      if (bound < 0) s.gap = "start";
      else if (descriptor_part(x.kind)) s.gap = same ? "queue" : "doorbell";
      else s.gap = "instruction fetch";
    }
    if (x.kind == EventKind::Wait && bound >= 0 && bound == x.released_by) {
      const Event& by = events[static_cast<std::size_t>(bound)];
      const std::string by_name = names.of(by);
      path.waits.push_back({std::string(x.resource()), std::string(x.label()), std::string(x.site()), x.index, x.start,
                            x.end,
                            by_name.rfind(by.resource(), 0) == 0 ? by_name : fmt::format("{} {}", by.resource(), by_name),
                            std::string(by.label())});
    }
    if (s.ns() > 0 || x.kind == EventKind::Wait) path.steps.push_back(std::move(s));
  }
  if (!work.empty()) {
    // Each engine's work in start order. run_work lists it engine by engine,
    // each in order already: a run of one engine's is filed under it at
    // once, and a list in order is left as it is.
    std::map<std::string_view, std::vector<const Work*>> by_engine_work;
    std::vector<const Work*>* list = nullptr;
    const char* listed = nullptr;
    for (const Work& w : work) {
      if (w.resource != listed) {
        list = &by_engine_work[std::string_view(w.resource)];
        listed = w.resource;
      }
      list->push_back(&w);
    }
    const auto by_start = [](const Work* a, const Work* b) { return a->start < b->start; };
    for (auto& [engine, engine_work] : by_engine_work)
      if (!std::is_sorted(engine_work.begin(), engine_work.end(), by_start))
        std::stable_sort(engine_work.begin(), engine_work.end(), by_start);
    std::vector<PathStep> split;
    split.reserve(path.steps.size() + path.steps.size() / 2);
    for (PathStep& s : path.steps) {  // each kept whole is moved: path.steps is replaced below
      const auto w = by_engine_work.find(s.resource);
      if (s.kind != "instruction" || w == by_engine_work.end()) split.push_back(std::move(s));
      else split_by_work(s, w->second, names, split);
    }
    path.steps = std::move(split);
  }
  ShareRows by_engine, by_label;
  for (const PathStep& s : path.steps) {
    const double waiting = waiting_kind(s.kind) ? s.ns() : s.gap_ns;
    const std::string_view engine = engine_of(s.resource);
    for (auto* rows : {&by_engine, &by_label}) {
      const std::string_view label = rows == &by_label ? std::string_view(s.label) : std::string_view();
      const auto [it, fresh] = rows->try_emplace({engine, label});
      PathShare& r = it->second;
      if (fresh) {
        r.engine = std::string(engine);
        r.label = std::string(label);
      }
      r.ns += s.ns();
      r.waiting_ns += waiting;
    }
  }
  path.by_engine = largest_first(by_engine);
  path.by_label = largest_first(by_label);
  return path;
}

namespace {
// The length of the union of half-open intervals.
double union_length(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0, from = 0, to = -1;
  for (const auto& [a, b] : spans) {
    if (a > to) {
      if (to > from) total += to - from;
      from = a;
      to = b;
    } else {
      to = std::max(to, b);
    }
  }
  if (to > from) total += to - from;
  return total;
}
}  // namespace

LabelTime label_time(const std::vector<Event>& events, const std::vector<std::string>& labels) {
  std::map<std::string, std::vector<std::pair<double, double>>, std::less<>> spans;
  for (const std::string& l : labels) spans[l];
  std::vector<double> own_ends;  // of the events under no such label
  for (const Event& e : events)
    if (spans.find(e.label()) == spans.end()) own_ends.push_back(e.end);
  std::sort(own_ends.begin(), own_ends.end());
  std::vector<std::pair<double, double>> all;
  for (const Event& e : events) {
    const auto it = spans.find(e.label());
    if (it == spans.end()) continue;
    double start = e.start;
    if (e.kind == EventKind::Wait) {
      const auto before = std::lower_bound(own_ends.begin(), own_ends.end(), e.end);
      if (before != own_ends.begin()) start = std::max(start, *std::prev(before));
    }
    if (e.end <= start) continue;
    it->second.emplace_back(start, e.end);
    all.emplace_back(start, e.end);
  }
  LabelTime t;
  for (const std::string& l : labels)
    if (const auto& s = spans.at(l); !s.empty()) t.phases.push_back({l, union_length(s)});
  t.total_ns = union_length(std::move(all));
  return t;
}

}  // namespace tessera::timing
