#include "tessera/kernel_builder.h"

#include "arch/address_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

namespace tessera {
namespace {

// Agents own an instruction stream or a DMA queue, and a semaphore each.
// Engines are agents 0..4 (arch::Engine); DMA queues follow.
constexpr int kSyncAgent = static_cast<int>(arch::Engine::Sync);
constexpr int kFirstQueueAgent = arch::kNumEngines;

// A rectangle of memory an instruction touches: partitions [p0, p1) and
// bytes [b0, b1) of each. In HBM (space 2) a tensor is seen as rows of its
// last dimension: rows [p0, p1), and b the byte range within a row, offset
// by the tensor's address so that distinct tensors never overlap.
struct Region {
  int space = 0;  // 0 SBUF, 1 PSUM, 2 HBM
  std::uint64_t p0 = 0, p1 = 0, b0 = 0, b1 = 0;
  std::uint64_t tensor = 0;  // HBM: the tensor's address

  bool overlaps(const Region& o) const {
    return space == o.space && tensor == o.tensor && p0 < o.p1 && o.p0 < p1 && b0 < o.b1 && o.b0 < b1;
  }
  bool covers(const Region& o) const {
    return space == o.space && tensor == o.tensor && p0 <= o.p0 && o.p1 <= p1 && b0 <= o.b0 && o.b1 <= b1;
  }
  bool operator==(const Region& o) const {
    return space == o.space && tensor == o.tensor && p0 == o.p0 && p1 == o.p1 && b0 == o.b0 && b1 == o.b1;
  }
};

Region region_of(const Tile& t) {
  const auto [lo, hi] = t.pattern().byte_extent();
  return {t.memory == arch::Memory::Psum ? 1 : 0, t.partition, std::uint64_t{t.partition} + t.partitions,
          static_cast<std::uint64_t>(lo), static_cast<std::uint64_t>(hi)};
}

Region region_of(const View& v) {
  const Tensor& t = *v.tensor;
  const std::int64_t pitch = t.shape.back();
  const std::uint64_t e = arch::size_of(t.dtype);
  std::int64_t lo = v.offset, hi = v.offset;
  for (std::size_t d = 0; d < v.sizes.size(); ++d) {
    const std::int64_t span = (v.sizes[d] - 1) * v.strides[d];
    (span < 0 ? lo : hi) += span;
  }
  Region r{2, static_cast<std::uint64_t>(lo / pitch), static_cast<std::uint64_t>(hi / pitch + 1), t.address,
           t.address + static_cast<std::uint64_t>(pitch) * e, t.address};
  // A window of whole rows' columns (the usual 2-D tile) is exact; any other
  // pattern is taken as whole rows, which only adds ordering.
  if (v.sizes.size() == 2 && v.strides[0] == pitch && v.strides[1] == 1) {
    const std::uint64_t c0 = static_cast<std::uint64_t>(v.offset % pitch);
    r.b0 = t.address + c0 * e;
    r.b1 = r.b0 + static_cast<std::uint64_t>(v.sizes[1]) * e;
  }
  return r;
}

// An operation in program order: an engine instruction (placed in a stream)
// or a DMA descriptor (placed in a queue's ring).
struct Op {
  int agent = 0;
  std::int64_t seq = 0;            // program order
  std::uint32_t slot = 0;          // DMA: ring slot
  arch::Instruction in;            // engine op
  std::vector<int> waits;          // ops to wait for first
  bool signal = false;             // engine op: increment the agent's semaphore after it
  int pos = -1;                    // engine op: index in its stream
  std::vector<int> triggers;       // DMA triggers issued right after this op
  int label = -1;                  // index into Impl::labels
};

struct Access {
  Region region;
  int op;
};

// Reads are kept one per (region, agent): a newer read of the same bytes by
// the same agent supersedes the older, since the agent finishes in order.
struct ReadKey {
  Region region;
  int agent;
  bool operator==(const ReadKey& o) const { return agent == o.agent && region == o.region; }
};
struct ReadKeyHash {
  std::size_t operator()(const ReadKey& k) const {
    std::size_t h = std::hash<std::uint64_t>()(k.region.b0);
    for (std::uint64_t v : {k.region.b1, k.region.p0, k.region.p1, std::uint64_t(k.region.space), std::uint64_t(k.agent)})
      h = h * 1000003u ^ std::hash<std::uint64_t>()(v);
    return h;
  }
};

// The live accesses of one on-chip memory, indexed by 2 KiB column buckets so
// that a query meets only the accesses near its bytes (a large kernel has
// hundreds of thousands of DMA pieces and a few hundred live tiles).
class OnChipIndex {
public:
  void add_write(const Region& r, int op) { add(r, op, -1); }
  void add_read(const Region& r, int agent, int op) {
    const ReadKey key{r, agent};
    if (auto it = reads_.find(key); it != reads_.end()) kill(it->second);  // superseded: same agent, same bytes
    reads_[key] = add(r, op, agent);
  }
  // Calls f(region, op, is_write) once for each live access overlapping r.
  template <typename F>
  void for_each_overlapping(const Region& r, F&& f) {
    ++stamp_;
    for (std::uint64_t b = r.b0 / kBucketBytes; b <= (r.b1 - 1) / kBucketBytes; ++b) {
      auto it = buckets_.find(b);
      if (it == buckets_.end()) continue;
      auto& list = it->second;
      std::size_t keep = 0;
      for (std::size_t i = 0; i < list.size(); ++i) {
        Entry& e = entries_[list[i]];
        if (!e.alive) continue;  // compacted away below
        list[keep++] = list[i];
        if (e.stamp == stamp_ || !e.region.overlaps(r)) continue;
        e.stamp = stamp_;
        f(e.region, e.op, e.agent < 0);
      }
      list.resize(keep);
    }
  }
  // Drops every access that the write `w` covers: later ops order against w.
  void remove_covered(const Region& w) {
    std::vector<std::size_t> dead;
    ++stamp_;
    for (std::uint64_t b = w.b0 / kBucketBytes; b <= (w.b1 - 1) / kBucketBytes; ++b) {
      auto it = buckets_.find(b);
      if (it == buckets_.end()) continue;
      for (std::size_t idx : it->second) {
        Entry& e = entries_[idx];
        if (e.alive && e.stamp != stamp_ && w.covers(e.region)) {
          e.stamp = stamp_;
          dead.push_back(idx);
        }
      }
    }
    for (std::size_t idx : dead) {
      if (entries_[idx].agent >= 0) reads_.erase(ReadKey{entries_[idx].region, entries_[idx].agent});
      kill(idx);
    }
  }

private:
  static constexpr std::uint64_t kBucketBytes = 2048;
  struct Entry {
    Region region;
    int op;
    int agent;  // readers: the agent; writers: -1
    bool alive;
    std::uint64_t stamp;
  };
  std::size_t add(const Region& r, int op, int agent) {
    const std::size_t idx = entries_.size();
    entries_.push_back({r, op, agent, true, 0});
    for (std::uint64_t b = r.b0 / kBucketBytes; b <= (r.b1 - 1) / kBucketBytes; ++b) buckets_[b].push_back(idx);
    return idx;
  }
  void kill(std::size_t idx) { entries_[idx].alive = false; }

  std::vector<Entry> entries_;
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> buckets_;
  std::unordered_map<ReadKey, std::size_t, ReadKeyHash> reads_;
  std::uint64_t stamp_ = 0;
};

// First-fit allocator of byte ranges inside [0, limit), never across a
// `boundary` (PSUM banks), at `align`.
class RangeAllocator {
public:
  RangeAllocator(std::uint64_t limit, std::uint64_t boundary, std::uint64_t align)
      : limit_(limit), boundary_(boundary), align_(align) {
    free_[0] = limit;
  }

  std::optional<std::uint64_t> allocate(std::uint64_t bytes) {
    for (auto& [start, end] : free_) {
      std::uint64_t at = (start + align_ - 1) / align_ * align_;
      if (boundary_ && at / boundary_ != (at + bytes - 1) / boundary_) at = (at / boundary_ + 1) * boundary_;
      if (at + bytes > end) continue;
      const std::uint64_t s = start, e = end;
      free_.erase(s);
      if (at > s) free_[s] = at;
      if (at + bytes < e) free_[at + bytes] = e;
      return at;
    }
    return std::nullopt;
  }

  void release(std::uint64_t at, std::uint64_t bytes) {
    std::uint64_t s = at, e = at + bytes;
    auto next = free_.lower_bound(s);
    if (next != free_.end() && next->first == e) {
      e = next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->second == s) {
        s = prev->first;
        free_.erase(prev);
      }
    }
    free_[s] = e;
  }

  std::uint64_t free_bytes() const {
    std::uint64_t n = 0;
    for (const auto& [s, e] : free_) n += e - s;
    return n;
  }
  std::uint64_t largest() const {
    std::uint64_t n = 0;
    for (const auto& [s, e] : free_) n = std::max(n, e - s);
    return n;
  }
  std::uint64_t limit() const { return limit_; }

private:
  std::uint64_t limit_, boundary_, align_;
  std::map<std::uint64_t, std::uint64_t> free_;  // start -> end
};

}  // namespace

struct KernelBuilder::Impl {
  const arch::HwConfig& cfg;
  arch::AddressMap map;
  std::string name;
  RangeAllocator sbuf_alloc;
  RangeAllocator psum_alloc;

  std::vector<Op> ops;
  std::vector<std::vector<int>> streams = std::vector<std::vector<int>>(arch::kNumEngines);  // op ids
  struct Queue {
    std::uint32_t engine, queue;
    int owner;  // the stream whose triggers feed this queue
    std::vector<int> descriptors;  // op ids in ring order
    int last_anchor = -1;          // stream position of this queue's latest trigger
  };
  std::vector<Queue> queues;  // agent kFirstQueueAgent + i
  std::vector<std::uint32_t> next_engine_of_placer = std::vector<std::uint32_t>(arch::kNumEngines, 0);
  // On-chip accesses not yet superseded, by Region::space (SBUF, PSUM).
  // mutable: queries compact their buckets as they go
  mutable OnChipIndex on_chip[2];
  // HBM, per tensor: writes exactly, reads summarised as each agent's latest
  // (a write waits for all of them). Kernels rarely write what they read, and
  // a large kernel reads tens of thousands of distinct tiles.
  struct HbmTensor {
    std::vector<Access> writes;
    std::map<int, int> readers;  // agent -> latest read op
  };
  std::unordered_map<std::uint64_t, HbmTensor> hbm;
  struct Allocation {
    std::string name;
    bool written = false;
    bool released = false;
    int space = 0;           // Region::space
    std::uint64_t bytes = 0;  // over all partitions
    int first_op = -1, last_op = -1;
  };
  std::vector<Allocation> tiles;
  // Live allocations by space and start byte, to find the one a region is in.
  std::map<std::uint64_t, int> live[2];
  std::vector<std::string> labels;
  int current_label = -1;
  std::optional<Region> stationary;  // weights now in the array, while nothing overwrote them
  std::int64_t seq = 0;
  double matmul_flops = 0;
  bool built = false;
  bool splitting = false;  // inside dma(): the pieces are not split again

  Impl(const arch::HwConfig& c, std::string n)
      // 4-byte alignment: any dtype's elements stay aligned, and small tiles
      // on small configs waste nothing.
      : cfg(c), map(c), name(std::move(n)), sbuf_alloc(map.sbuf_partition_bytes, 0, 4),
        psum_alloc(map.psum_partition_bytes, static_cast<std::uint64_t>(c.psum.bank_kib) * 1024, 4) {}

  // --- checks ---------------------------------------------------------------

  void check_live(const std::string& call) const {
    if (built) throw KernelError(fmt::format("{}: the kernel was already built", call));
  }

  void check_tile(const std::string& call, const char* role, const Tile& t) const {
    if (t.id < 0 || t.id >= static_cast<int>(tiles.size()))
      throw KernelError(fmt::format("{}: {} is not a tile of this kernel", call, role));
    if (tiles[t.id].released)
      throw KernelError(fmt::format("{}: {} tile '{}' was released", call, role, t.name));
  }

  void check_written(const std::string& call, const char* role, const Tile& t) const {
    check_tile(call, role, t);
    if (!tiles[t.id].written)
      throw KernelError(fmt::format("{}: reads {} tile '{}' before anything wrote it", call, role, t.name));
  }

  void check_instruction(const std::string& call, const arch::Instruction& in) const {
    const auto problems = arch::validate(in, cfg);
    if (!problems.empty()) throw KernelError(fmt::format("{}: {}", call, problems.front()));
  }

  // --- dependencies ---------------------------------------------------------

  // The latest op of each other agent that `reads`/`writes` must follow:
  // true (read after write), anti (write after read) and output (write after
  // write) dependencies.
  std::vector<int> dependencies(int agent, const std::vector<Region>& reads, const std::vector<Region>& writes,
                                bool* same_agent_raw) const {
    std::map<int, int> latest;  // agent -> op id with the highest seq
    const auto consider = [&](int op_id, bool is_write, const Region& region) {
      const Op& producer = ops[op_id];
      if (producer.agent == agent) {
        if (same_agent_raw && is_write)
          for (const Region& r : reads) *same_agent_raw |= region.overlaps(r);
        return;
      }
      auto [it, fresh] = latest.emplace(producer.agent, op_id);
      if (!fresh && ops[it->second].seq < producer.seq) it->second = op_id;
    };
    for (const Region& x : reads) {
      if (x.space != 2) continue;
      const auto it = hbm.find(x.tensor);
      if (it == hbm.end()) continue;
      for (const Access& a : it->second.writes)
        if (a.region.overlaps(x)) consider(a.op, true, a.region);
    }
    for (const Region& x : writes) {
      if (x.space != 2) continue;
      const auto it = hbm.find(x.tensor);
      if (it == hbm.end()) continue;
      for (const Access& a : it->second.writes)
        if (a.region.overlaps(x)) consider(a.op, true, a.region);
      for (const auto& [ag, op_id] : it->second.readers) consider(op_id, false, x);
    }
    // On chip: a read meets earlier writes (true dependency); a write meets
    // earlier writes (output) and reads (anti).
    for (const Region& r : reads)
      if (r.space < 2)
        on_chip[r.space].for_each_overlapping(r, [&](const Region& region, int op_id, bool is_write) {
          if (is_write) consider(op_id, true, region);
        });
    for (const Region& w : writes)
      if (w.space < 2)
        on_chip[w.space].for_each_overlapping(w, [&](const Region& region, int op_id, bool is_write) {
          consider(op_id, is_write, region);
        });
    std::vector<int> out;
    for (const auto& [ag, op] : latest) out.push_back(op);
    return out;
  }

  void note_use(int op, const Region& r) {
    if (r.space > 1) return;
    auto it = live[r.space].upper_bound(r.b0);
    if (it == live[r.space].begin()) return;
    Allocation& a = tiles[static_cast<std::size_t>(std::prev(it)->second)];
    if (a.first_op < 0) a.first_op = op;
    a.last_op = op;
  }

  void record(int op, const std::vector<Region>& reads, const std::vector<Region>& writes) {
    ops[op].label = current_label;
    for (const Region& r : reads) note_use(op, r);
    for (const Region& w : writes) note_use(op, w);
    for (const Region& w : writes) {
      if (w.space == 2) {
        auto& ws = hbm[w.tensor].writes;
        ws.erase(std::remove_if(ws.begin(), ws.end(), [&](const Access& a) { return w.covers(a.region); }), ws.end());
        ws.push_back({w, op});
        continue;
      }
      on_chip[w.space].remove_covered(w);
      if (stationary && stationary->overlaps(w)) stationary.reset();
    }
    for (const Region& r : reads) {
      if (r.space == 2) hbm[r.tensor].readers[ops[op].agent] = op;
      else on_chip[r.space].add_read(r, ops[op].agent, op);
    }
    for (const Region& w : writes)
      if (w.space != 2) on_chip[w.space].add_write(w, op);
  }

  void mark_signal(const std::vector<int>& deps) {
    for (int d : deps)
      if (ops[d].agent < kFirstQueueAgent) ops[d].signal = true;
  }

  // Places a compute instruction at the end of `engine`'s stream.
  void emit(arch::Engine engine, arch::Instruction in, const std::vector<Region>& reads,
            const std::vector<Region>& writes) {
    const int agent = static_cast<int>(engine);
    in.engine = engine;
    Op op;
    op.agent = agent;
    op.seq = seq++;
    op.in = in;
    op.waits = dependencies(agent, reads, writes, nullptr);
    mark_signal(op.waits);
    const int id = static_cast<int>(ops.size());
    op.pos = static_cast<int>(streams[agent].size());
    ops.push_back(op);
    streams[agent].push_back(id);
    record(id, reads, writes);
  }

  int queue_for(int placer) {
    // Each queue is fed by one stream only, so its doorbells come in ring order.
    const auto engines = static_cast<std::uint32_t>(cfg.dma.engines);
    for (std::uint32_t tries = 0; tries < engines; ++tries) {
      const std::uint32_t e = next_engine_of_placer[placer]++ % engines;
      for (std::size_t i = 0; i < queues.size(); ++i)
        if (queues[i].engine == e && queues[i].owner == placer) return kFirstQueueAgent + static_cast<int>(i);
      std::uint32_t used = 0;
      for (const auto& q : queues) used += q.engine == e;
      if (used < static_cast<std::uint32_t>(cfg.dma.queues_per_engine)) {
        queues.push_back({e, used, placer, {}});
        return kFirstQueueAgent + static_cast<int>(queues.size()) - 1;
      }
    }
    throw KernelError(fmt::format("dma: no free DMA queue for the {} stream ({} engines x {} queues in use)",
                                  to_string(static_cast<arch::Engine>(placer)), cfg.dma.engines,
                                  cfg.dma.queues_per_engine));
  }

  // A DMA: a descriptor on a queue and the trigger that rings its doorbell,
  // placed in the stream of its latest producer, so that it starts as soon
  // as its data is ready without holding up any other stream.
  void emit_dma(arch::DmaDescriptor d, const Region& read, const Region& write) {
    const std::vector<Region> reads{read}, writes{write};
    std::vector<int> deps = dependencies(-1, reads, writes, nullptr);
    int placer = kSyncAgent;
    int anchor = -1;  // stream position of the op to issue the trigger after
    if (!deps.empty()) {
      const int latest = *std::max_element(deps.begin(), deps.end(),
                                           [&](int a, int b) { return ops[a].seq < ops[b].seq; });
      if (ops[latest].agent < kFirstQueueAgent && ops[latest].agent != kSyncAgent) {
        placer = ops[latest].agent;
        anchor = ops[latest].pos;
      }
    }
    const int qagent = queue_for(placer);
    Queue& q = queues[qagent - kFirstQueueAgent];
    // Ring order is doorbell order: never ring before an earlier trigger of this queue.
    anchor = std::max(anchor, q.last_anchor);
    if (placer != kSyncAgent) q.last_anchor = anchor;
    // Same-queue read-after-write: the queue itself orders it, with a barrier.
    bool same_queue_raw = false;
    deps = dependencies(qagent, reads, writes, &same_queue_raw);
    if (same_queue_raw) d.flags |= arch::kDmaFlagBarrier;

    Op desc;
    desc.agent = qagent;
    desc.seq = seq++;
    desc.slot = static_cast<std::uint32_t>(q.descriptors.size());
    d.flags |= arch::kDmaFlagCompletion;
    d.sem_addr = map.semaphore_address(static_cast<std::uint64_t>(qagent));
    d.sem_value = 1;
    d.magic = arch::kDmaDescriptorMagic;
    const int desc_id = static_cast<int>(ops.size());
    ops.push_back(desc);
    descriptors.emplace(desc_id, d);
    q.descriptors.push_back(desc_id);

    Op trig;
    trig.agent = placer;
    trig.seq = ops[desc_id].seq;
    trig.in.engine = static_cast<arch::Engine>(placer);
    trig.in.opcode = arch::Opcode::DmaTrigger;
    trig.in.dma_engine = static_cast<std::uint16_t>(q.engine);
    trig.in.dma_queue = static_cast<std::uint16_t>(q.queue);
    trig.in.address = ops[desc_id].slot;  // a ring slot until Device places the ring
    trig.in.value = 1;
    trig.label = current_label;
    for (int dep : deps) {
      // Ops of the placer's own stream up to the anchor are done by then.
      if (ops[dep].agent == placer) continue;
      trig.waits.push_back(dep);
    }
    mark_signal(trig.waits);
    const int trig_id = static_cast<int>(ops.size());
    if (placer == kSyncAgent || anchor < 0) {
      // The sync stream holds triggers and waits only: append.
      trig.pos = static_cast<int>(streams[placer].size());
      ops.push_back(trig);
      streams[placer].push_back(trig_id);
    } else {
      ops.push_back(trig);
      ops[streams[placer][anchor]].triggers.push_back(trig_id);
    }
    record(desc_id, reads, writes);
  }

  std::map<int, arch::DmaDescriptor> descriptors;  // op id -> descriptor
};

KernelBuilder::KernelBuilder(const arch::HwConfig& cfg, std::string kernel_name)
    : cfg_(cfg), impl_(std::make_unique<Impl>(cfg, std::move(kernel_name))) {}

KernelBuilder::~KernelBuilder() = default;

// --------------------------------------------------------------------- tiles

Tile KernelBuilder::sbuf(const std::string& name, std::uint32_t partitions, std::uint32_t free, DType dtype) {
  const std::string call = fmt::format("sbuf('{}', {}, {}, {})", name, partitions, free, to_string(dtype));
  impl_->check_live(call);
  if (partitions == 0 || free == 0) throw KernelError(fmt::format("{}: a tile needs at least one element", call));
  if (partitions > static_cast<std::uint32_t>(cfg_.sbuf.partitions))
    throw KernelError(fmt::format("{}: {} partitions; SBUF has {} (a tile spans at most that many)", call,
                                  partitions, cfg_.sbuf.partitions));
  const std::uint64_t bytes = std::uint64_t{free} * arch::size_of(dtype);
  const auto at = impl_->sbuf_alloc.allocate(bytes);
  if (!at)
    throw KernelError(fmt::format("{}: SBUF overflow: needs {} bytes per partition, {} of {} free (largest block {})",
                                  call, bytes, impl_->sbuf_alloc.free_bytes(), impl_->sbuf_alloc.limit(),
                                  impl_->sbuf_alloc.largest()));
  Tile t{arch::Memory::Sbuf, dtype, 0, partitions, static_cast<std::uint32_t>(*at), free,
         static_cast<int>(impl_->tiles.size()), name};
  impl_->tiles.push_back({name, false, false, 0, bytes * partitions});
  impl_->live[0][*at] = t.id;
  return t;
}

Tile KernelBuilder::psum(const std::string& name, std::uint32_t partitions, std::uint32_t free, DType dtype) {
  const std::string call = fmt::format("psum('{}', {}, {}, {})", name, partitions, free, to_string(dtype));
  impl_->check_live(call);
  if (partitions == 0 || free == 0) throw KernelError(fmt::format("{}: a tile needs at least one element", call));
  if (partitions > static_cast<std::uint32_t>(cfg_.psum.partitions))
    throw KernelError(fmt::format("{}: {} partitions; PSUM has {}", call, partitions, cfg_.psum.partitions));
  const std::uint64_t bytes = std::uint64_t{free} * arch::size_of(dtype);
  const std::uint64_t bank = static_cast<std::uint64_t>(cfg_.psum.bank_kib) * 1024;
  if (bytes > bank)
    throw KernelError(fmt::format("{}: {} bytes per partition overrun a PSUM bank of {} bytes ({} fp32)", call, bytes,
                                  bank, bank / 4));
  const auto at = impl_->psum_alloc.allocate(bytes);
  if (!at)
    throw KernelError(fmt::format("{}: PSUM full: needs {} bytes in one bank, {} of {} bytes free", call, bytes,
                                  impl_->psum_alloc.free_bytes(), impl_->psum_alloc.limit()));
  Tile t{arch::Memory::Psum, dtype, 0, partitions, static_cast<std::uint32_t>(*at), free,
         static_cast<int>(impl_->tiles.size()), name};
  impl_->tiles.push_back({name, false, false, 1, bytes * partitions});
  impl_->live[1][*at] = t.id;
  return t;
}

void KernelBuilder::release(const Tile& t) {
  const std::string call = fmt::format("release('{}')", t.name);
  impl_->check_tile(call, "the", t);
  impl_->tiles[t.id].released = true;
  // A slice releases the whole allocation it belongs to.
  const std::uint64_t bytes = std::uint64_t{t.free} * arch::size_of(t.dtype);
  (t.memory == arch::Memory::Psum ? impl_->psum_alloc : impl_->sbuf_alloc).release(t.offset, bytes);
  auto& live = impl_->live[t.memory == arch::Memory::Psum ? 1 : 0];
  for (auto it = live.begin(); it != live.end(); ++it)
    if (it->second == t.id) {
      live.erase(it);
      break;
    }
}

// ----------------------------------------------------------------------- DMA

namespace {

std::uint8_t log2_of(std::uint32_t v) {
  std::uint8_t n = 0;
  while ((1u << n) < v) ++n;
  return n;
}

// Fills one side of a descriptor from (sizes, strides) outermost first, in
// elements; throws when the pattern does not fit the descriptor's fields.
void fill_side(const std::string& call, const char* side, std::uint64_t base, std::vector<std::int64_t> sizes,
               std::vector<std::int64_t> strides, std::uint32_t esize, std::uint64_t& addr,
               std::array<std::uint16_t, 4>& size, std::array<std::uint32_t, 4>& stride) {
  // Drop unit dimensions, then check the four the descriptor holds.
  std::vector<std::int64_t> sz, st;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] != 1) {
      sz.push_back(sizes[i]);
      st.push_back(strides[i]);
    }
  if (sz.size() > 4)
    throw KernelError(fmt::format("{}: the {} pattern has {} dimensions; a DMA descriptor takes 4", call, side,
                                  sz.size()));
  addr = base;
  size = {1, 1, 1, 1};
  stride = {esize, 0, 0, 0};
  for (std::size_t i = 0; i < sz.size(); ++i) {
    const std::size_t d = sz.size() - 1 - i;  // descriptor dim 0 is innermost
    const std::int64_t bytes = st[i] * esize;
    if (sz[i] > 65535)
      throw KernelError(fmt::format("{}: {} dimension of {} elements exceeds a descriptor's 65535", call, side, sz[i]));
    if (bytes < 0 || bytes >= (1 << 24))
      throw KernelError(fmt::format("{}: {} stride of {} bytes is outside a descriptor's 0..16 MiB", call, side, bytes));
    size[d] = static_cast<std::uint16_t>(sz[i]);
    stride[d] = static_cast<std::uint32_t>(bytes);
  }
}

}  // namespace

namespace {

constexpr std::uint64_t kMinDmaPieceBytes = 2048;

// Partition ranges for the pieces of one copy.
std::vector<std::pair<std::uint32_t, std::uint32_t>> dma_pieces(const arch::HwConfig& cfg, std::uint32_t partitions,
                                                                std::uint64_t bytes) {
  const std::uint64_t by_size = std::max<std::uint64_t>(1, bytes / kMinDmaPieceBytes);
  const std::uint32_t n = static_cast<std::uint32_t>(
      std::min<std::uint64_t>({static_cast<std::uint64_t>(cfg.dma.engines), partitions, by_size}));
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (std::uint32_t i = 0, p = 0; i < n; ++i) {
    const std::uint32_t np = partitions / n + (i < partitions % n ? 1 : 0);
    out.emplace_back(p, np);
    p += np;
  }
  return out;
}

View rows_of_view(const View& v, std::uint32_t p, std::uint32_t np) {
  View out = v;
  out.offset += static_cast<std::int64_t>(p) * v.strides[0];
  out.sizes[0] = np;
  return out;
}

}  // namespace

void KernelBuilder::dma(const Tile& dst, const View& src) { dma_to_tile(dst, src, 0); }

void KernelBuilder::dma(const Tile& dst, const View& src, std::uint32_t pitch) {
  const std::string call =
      fmt::format("dma(tile '{}' <- tensor '{}', pitch {})", dst.name, src.tensor ? src.tensor->name : "?", pitch);
  if (pitch == 0) throw KernelError(fmt::format("{}: the row pitch must be positive", call));
  if (src.sizes.size() != 3)
    throw KernelError(fmt::format("{}: a pitched copy takes a view of [partitions x rows x columns], not [{}]", call,
                                  fmt::join(src.sizes, " x ")));
  if (src.sizes[2] > pitch)
    throw KernelError(fmt::format("{}: rows of {} elements overlap at a pitch of {}", call, src.sizes[2], pitch));
  if ((src.sizes[1] - 1) * pitch + src.sizes[2] > dst.free)
    throw KernelError(fmt::format("{}: {} rows at a pitch of {} overrun the tile's {} elements", call, src.sizes[1],
                                  pitch, dst.free));
  dma_to_tile(dst, src, pitch);
}

void KernelBuilder::dma_to_tile(const Tile& dst, const View& src, std::uint32_t pitch) {
  if (!impl_->splitting && src.tensor && !src.sizes.empty() && src.sizes[0] == dst.partitions) {
    const auto pieces = dma_pieces(cfg_, dst.partitions, static_cast<std::uint64_t>(src.elements()) * arch::size_of(dst.dtype));
    if (pieces.size() > 1) {
      impl_->splitting = true;
      for (const auto& [p, np] : pieces) {
        Tile piece = dst;  // same allocation, fewer partitions
        piece.partition = dst.partition + p;
        piece.partitions = np;
        dma_to_tile(piece, rows_of_view(src, p, np), pitch);
      }
      impl_->splitting = false;
      return;
    }
  }
  const std::string call = fmt::format("dma(tile '{}' <- tensor '{}')", dst.name, src.tensor ? src.tensor->name : "?");
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  if (!src.tensor) throw KernelError(fmt::format("{}: the source view has no tensor", call));
  if (dst.memory != arch::Memory::Sbuf) throw KernelError(fmt::format("{}: DMA moves HBM tensors to SBUF tiles", call));
  if (dst.dtype != src.tensor->dtype)
    throw KernelError(fmt::format("{}: DMA does not convert: tile is {}, tensor is {}", call, to_string(dst.dtype),
                                  to_string(src.tensor->dtype)));
  // A pitched copy fills rows x columns of each partition, row r at element r * pitch.
  const bool pitched = pitch > 0;
  if (src.sizes.empty() || src.sizes[0] != dst.partitions ||
      (!pitched && src.elements() != std::int64_t{dst.partitions} * dst.free))
    throw KernelError(fmt::format("{}: view [{}] does not fill tile [{} x {}] (the view's first dimension lies on "
                                  "partitions)", call, fmt::join(src.sizes, " x "), dst.partitions, dst.free));
  const std::uint32_t e = arch::size_of(dst.dtype);
  arch::DmaDescriptor d;
  d.elem_log2 = log2_of(e);
  fill_side(call, "source", src.tensor->address + static_cast<std::uint64_t>(src.offset) * e, src.sizes, src.strides,
            e, d.src_addr, d.src_size, d.src_stride);
  const std::int64_t partition_elems = static_cast<std::int64_t>(impl_->map.sbuf_partition_bytes / e);
  if (pitched)
    fill_side(call, "destination", impl_->map.sbuf_address(dst.partition, dst.offset),
              {dst.partitions, src.sizes[1], src.sizes[2]}, {partition_elems, pitch, 1}, e, d.dst_addr, d.dst_size,
              d.dst_stride);
  else
    fill_side(call, "destination", impl_->map.sbuf_address(dst.partition, dst.offset), {dst.partitions, dst.free},
              {partition_elems, 1}, e, d.dst_addr, d.dst_size, d.dst_stride);
  impl_->emit_dma(d, region_of(src), region_of(dst));
  impl_->tiles[dst.id].written = true;
}

void KernelBuilder::dma(const View& dst, const Tile& src) {
  if (!impl_->splitting && dst.tensor && !dst.sizes.empty() && dst.sizes[0] == src.partitions) {
    const auto pieces = dma_pieces(cfg_, src.partitions, std::uint64_t{src.partitions} * src.bytes_per_partition());
    if (pieces.size() > 1) {
      impl_->splitting = true;
      for (const auto& [p, np] : pieces) {
        Tile piece = src;
        piece.partition = src.partition + p;
        piece.partitions = np;
        dma(rows_of_view(dst, p, np), piece);
      }
      impl_->splitting = false;
      return;
    }
  }
  const std::string call = fmt::format("dma(tensor '{}' <- tile '{}')", dst.tensor ? dst.tensor->name : "?", src.name);
  impl_->check_live(call);
  impl_->check_written(call, "source", src);
  if (!dst.tensor) throw KernelError(fmt::format("{}: the destination view has no tensor", call));
  if (src.memory != arch::Memory::Sbuf) throw KernelError(fmt::format("{}: DMA moves SBUF tiles to HBM tensors", call));
  if (src.dtype != dst.tensor->dtype)
    throw KernelError(fmt::format("{}: DMA does not convert: tile is {}, tensor is {}", call, to_string(src.dtype),
                                  to_string(dst.tensor->dtype)));
  if (dst.sizes.empty() || dst.sizes[0] != src.partitions || dst.elements() != std::int64_t{src.partitions} * src.free)
    throw KernelError(fmt::format("{}: view [{}] does not match tile [{} x {}] (the view's first dimension lies on "
                                  "partitions)", call, fmt::join(dst.sizes, " x "), src.partitions, src.free));
  const std::uint32_t e = arch::size_of(src.dtype);
  arch::DmaDescriptor d;
  d.elem_log2 = log2_of(e);
  fill_side(call, "source", impl_->map.sbuf_address(src.partition, src.offset), {src.partitions, src.free},
            {static_cast<std::int64_t>(impl_->map.sbuf_partition_bytes / e), 1}, e, d.src_addr, d.src_size,
            d.src_stride);
  fill_side(call, "destination", dst.tensor->address + static_cast<std::uint64_t>(dst.offset) * e, dst.sizes,
            dst.strides, e, d.dst_addr, d.dst_size, d.dst_stride);
  impl_->emit_dma(d, region_of(src), region_of(dst));
}

// ------------------------------------------------------------- tensor engine

void KernelBuilder::matmul(const Tile& psum, const Tile& stationary, const Tile& moving, bool accumulate) {
  const std::string call = fmt::format("matmul(psum '{}', stationary '{}', moving '{}')", psum.name, stationary.name,
                                       moving.name);
  impl_->check_live(call);
  impl_->check_written(call, "stationary", stationary);
  impl_->check_written(call, "moving", moving);
  impl_->check_tile(call, "psum", psum);
  if (accumulate) impl_->check_written(call, "psum (accumulate)", psum);
  if (moving.partitions != stationary.partitions)
    throw KernelError(fmt::format("{}: contraction mismatch: stationary has {} partitions, moving {}", call,
                                  stationary.partitions, moving.partitions));
  if (psum.partitions != stationary.free || psum.free != moving.free)
    throw KernelError(fmt::format("{}: psum is [{} x {}], the product is [{} x {}]", call, psum.partitions, psum.free,
                                  stationary.free, moving.free));
  const Region st = region_of(stationary);
  if (!impl_->stationary || !(*impl_->stationary == st)) {
    arch::Instruction ls;
    ls.engine = arch::Engine::Tensor;
    ls.opcode = arch::Opcode::LoadStationary;
    ls.a = stationary.pattern();
    impl_->check_instruction(call, ls);
    impl_->emit(arch::Engine::Tensor, ls, {st}, {});
    impl_->stationary = st;
  }
  arch::Instruction mm;
  mm.engine = arch::Engine::Tensor;
  mm.opcode = arch::Opcode::MultiplyMoving;
  mm.flags = accumulate ? arch::kFlagAccumulate : 0;
  mm.a = moving.pattern();
  mm.dst = psum.pattern();
  impl_->check_instruction(call, mm);
  std::vector<Region> reads{region_of(moving)};
  if (accumulate) reads.push_back(region_of(psum));
  impl_->emit(arch::Engine::Tensor, mm, reads, {region_of(psum)});
  impl_->tiles[psum.id].written = true;
  impl_->matmul_flops += 2.0 * stationary.partitions * stationary.free * moving.free;
}

void KernelBuilder::transpose(const Tile& psum, const Tile& src) {
  const std::string call = fmt::format("transpose(psum '{}', '{}')", psum.name, src.name);
  impl_->check_live(call);
  impl_->check_written(call, "source", src);
  impl_->check_tile(call, "psum", psum);
  arch::Instruction in;
  in.engine = arch::Engine::Tensor;
  in.opcode = arch::Opcode::Transpose;
  in.a = src.pattern();
  in.dst = psum.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Tensor, in, {region_of(src)}, {region_of(psum)});
  impl_->stationary.reset();  // the transpose replaced the array's weights
  impl_->tiles[psum.id].written = true;
}

// ------------------------------------------------------- vector, scalar, gpsimd

namespace {

arch::Instruction instr(arch::Engine e, arch::Opcode op, const Tile& dst) {
  arch::Instruction in;
  in.engine = e;
  in.opcode = op;
  in.dst = dst.pattern();
  return in;
}

}  // namespace

void KernelBuilder::tensor_tensor(const Tile& dst, const Tile& a, const Tile& b, arch::AluOp op) {
  const std::string call = fmt::format("tensor_tensor('{}' = '{}' {} '{}')", dst.name, a.name, to_string(op), b.name);
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "a", a);
  impl_->check_written(call, "b", b);
  auto in = instr(arch::Engine::Vector, arch::Opcode::TensorTensor, dst);
  in.alu = op;
  in.a = a.pattern();
  in.b = b.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Vector, in, {region_of(a), region_of(b)}, {region_of(dst)});
  impl_->tiles[dst.id].written = true;
}

void KernelBuilder::tensor_scalar(const Tile& dst, const Tile& a, arch::AluOp op, float s, arch::AluOp op2, float s2) {
  const std::string call = fmt::format("tensor_scalar('{}' = '{}' {} {})", dst.name, a.name, to_string(op), s);
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "a", a);
  auto in = instr(arch::Engine::Vector, arch::Opcode::TensorScalar, dst);
  in.alu = op;
  in.imm0 = s;
  in.alu2 = op2;
  in.imm1 = s2;
  in.a = a.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Vector, in, {region_of(a)}, {region_of(dst)});
  impl_->tiles[dst.id].written = true;
}

void KernelBuilder::tensor_scalar(const Tile& dst, const Tile& a, arch::AluOp op, const Tile& s, arch::AluOp op2,
                                  const Tile* s2, float s2_value) {
  const std::string call = fmt::format("tensor_scalar('{}' = '{}' {} '{}'[p])", dst.name, a.name, to_string(op), s.name);
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "a", a);
  impl_->check_written(call, "scalar", s);
  auto in = instr(arch::Engine::Vector, arch::Opcode::TensorScalar, dst);
  in.alu = op;
  in.alu2 = op2;
  in.imm1 = s2_value;
  in.a = a.pattern();
  in.b = s.pattern();
  std::vector<Region> reads{region_of(a), region_of(s)};
  if (s2) {
    impl_->check_written(call, "second scalar", *s2);
    in.c = s2->pattern();
    reads.push_back(region_of(*s2));
  }
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Vector, in, reads, {region_of(dst)});
  impl_->tiles[dst.id].written = true;
}

void KernelBuilder::tensor_scalar(const Tile& dst, const Tile& a, arch::AluOp op, float s, arch::AluOp op2,
                                  const Tile& s2) {
  const std::string call = fmt::format("tensor_scalar('{}' = '{}' {} {} {} '{}')", dst.name, a.name, to_string(op), s,
                                       to_string(op2), s2.name);
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "a", a);
  impl_->check_written(call, "second scalar", s2);
  auto in = instr(arch::Engine::Vector, arch::Opcode::TensorScalar, dst);
  in.alu = op;
  in.imm0 = s;
  in.alu2 = op2;
  in.a = a.pattern();
  in.c = s2.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Vector, in, {region_of(a), region_of(s2)}, {region_of(dst)});
  impl_->tiles[dst.id].written = true;
}

void KernelBuilder::reduce(const Tile& dst, const Tile& a, arch::AluOp op) {
  const std::string call = fmt::format("reduce('{}' = {}('{}'))", dst.name, to_string(op), a.name);
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "a", a);
  auto in = instr(arch::Engine::Vector, arch::Opcode::Reduce, dst);
  in.alu = op;
  in.a = a.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Vector, in, {region_of(a)}, {region_of(dst)});
  impl_->tiles[dst.id].written = true;
}

void KernelBuilder::copy(const Tile& dst, const Tile& src, arch::Engine engine) {
  const std::string call = fmt::format("copy('{}' = '{}' on {})", dst.name, src.name, to_string(engine));
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "source", src);
  auto in = instr(engine, arch::Opcode::Copy, dst);
  in.a = src.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(engine, in, {region_of(src)}, {region_of(dst)});
  impl_->tiles[dst.id].written = true;
}

void KernelBuilder::memset(const Tile& dst, float value) {
  const std::string call = fmt::format("memset('{}', {})", dst.name, value);
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  auto in = instr(arch::Engine::Vector, arch::Opcode::Memset, dst);
  in.imm0 = value;
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Vector, in, {}, {region_of(dst)});
  impl_->tiles[dst.id].written = true;
}

void KernelBuilder::select(const Tile& dst, const Tile& pred, const Tile& a, const Tile& b) {
  const std::string call = fmt::format("select('{}' = '{}' ? '{}' : '{}')", dst.name, pred.name, a.name, b.name);
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "pred", pred);
  impl_->check_written(call, "a", a);
  impl_->check_written(call, "b", b);
  auto in = instr(arch::Engine::Vector, arch::Opcode::Select, dst);
  in.a = a.pattern();
  in.b = b.pattern();
  in.c = pred.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Vector, in, {region_of(a), region_of(b), region_of(pred)}, {region_of(dst)});
  impl_->tiles[dst.id].written = true;
}

void KernelBuilder::activation(const Tile& dst, const Tile& src, arch::ActFunc f, float scale, float bias,
                               const Tile* bias_tile, const Tile* accumulate) {
  const std::string call = fmt::format("activation('{}' = {}('{}'))", dst.name, to_string(f), src.name);
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "source", src);
  auto in = instr(arch::Engine::Scalar, arch::Opcode::Activation, dst);
  in.func = f;
  in.imm0 = scale;
  in.imm1 = bias;
  in.a = src.pattern();
  std::vector<Region> reads{region_of(src)};
  std::vector<Region> writes{region_of(dst)};
  if (bias_tile) {
    impl_->check_written(call, "bias", *bias_tile);
    in.b = bias_tile->pattern();
    reads.push_back(region_of(*bias_tile));
  }
  if (accumulate) {
    impl_->check_tile(call, "accumulate", *accumulate);
    in.c = accumulate->pattern();
    writes.push_back(region_of(*accumulate));
  }
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Scalar, in, reads, writes);
  impl_->tiles[dst.id].written = true;
  if (accumulate) impl_->tiles[accumulate->id].written = true;
}

void KernelBuilder::iota(const Tile& dst, float base, float partition_step, float free_step) {
  const std::string call = fmt::format("iota('{}')", dst.name);
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  auto in = instr(arch::Engine::GpSimd, arch::Opcode::Iota, dst);
  in.imm0 = base;
  in.imm1 = partition_step;
  in.imm2 = free_step;
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::GpSimd, in, {}, {region_of(dst)});
  impl_->tiles[dst.id].written = true;
}

void KernelBuilder::partition_reduce(const Tile& dst, const Tile& src, arch::AluOp op) {
  const std::string call = fmt::format("partition_reduce('{}' = {}('{}'))", dst.name, to_string(op), src.name);
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "source", src);
  auto in = instr(arch::Engine::GpSimd, arch::Opcode::PartitionReduce, dst);
  in.alu = op;
  in.a = src.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::GpSimd, in, {region_of(src)}, {region_of(dst)});
  impl_->tiles[dst.id].written = true;
}

// --------------------------------------------------------------------- build

void KernelBuilder::label(const std::string& text) {
  impl_->check_live(fmt::format("label('{}')", text));
  if (text.empty()) {
    impl_->current_label = -1;
    return;
  }
  if (impl_->current_label >= 0 && impl_->labels[impl_->current_label] == text) return;
  impl_->labels.push_back(text);
  impl_->current_label = static_cast<int>(impl_->labels.size()) - 1;
}

Program KernelBuilder::build() {
  impl_->check_live("build()");
  impl_->built = true;
  Impl& m = *impl_;
  const std::size_t agents = kFirstQueueAgent + m.queues.size();
  if (agents > static_cast<std::size_t>(cfg_.sync.semaphores))
    throw KernelError(fmt::format("build(): needs {} semaphores (5 engines + {} DMA queues); the config has {}",
                                  agents, m.queues.size(), cfg_.sync.semaphores));

  // The value an agent's semaphore reaches when op `id` signals.
  std::vector<std::uint32_t> signal_count(m.ops.size(), 0);
  for (int e = 0; e < arch::kNumEngines; ++e) {
    std::uint32_t n = 0;
    for (int id : m.streams[e])
      if (m.ops[id].signal) signal_count[id] = ++n;
  }
  for (const auto& q : m.queues)
    for (int id : q.descriptors) signal_count[id] = m.ops[id].slot + 1;

  Program p;
  p.name = m.name;
  p.matmul_flops = m.matmul_flops;
  const auto semaphore_of = [&](int op) { return static_cast<std::uint16_t>(m.ops[op].agent); };
  std::vector<Program::OpRef> where(m.ops.size());  // op id -> its place in the program
  for (int e = 0; e < arch::kNumEngines; ++e) {
    auto& out = p.streams[e];
    auto& labels = p.labels[e];
    const auto label_of = [&](const Op& op) { return op.label < 0 ? std::string() : m.labels[op.label]; };
    std::map<std::uint16_t, std::uint32_t> waited;  // semaphore -> value already waited for
    const auto wait_for = [&](int dep) {
      const std::uint16_t sem = semaphore_of(dep);
      const std::uint32_t value = signal_count[dep];
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
      const Op& op = m.ops[id];
      for (int dep : op.waits) wait_for(dep);
      labels.resize(out.size(), label_of(op));  // the waits carry the label of what they hold up
      where[id] = {false, static_cast<std::uint32_t>(e), 0, static_cast<std::uint32_t>(out.size())};
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
    };
    for (int id : m.streams[e]) {
      emit_op(id);
      for (int t : m.ops[id].triggers) emit_op(t);
    }
    if (e == kSyncAgent) {
      // The program ends when every DMA has landed, not just been started.
      for (std::size_t i = 0; i < m.queues.size(); ++i)
        if (!m.queues[i].descriptors.empty()) wait_for(m.queues[i].descriptors.back());
    }
    arch::Instruction end;
    end.engine = static_cast<arch::Engine>(e);
    end.opcode = arch::Opcode::End;
    out.push_back(end);
    labels.resize(out.size());
  }
  for (const auto& q : m.queues) {
    auto& ring = p.rings[{q.engine, q.queue}];
    auto& ring_labels = p.ring_labels[{q.engine, q.queue}];
    for (int id : q.descriptors) {
      where[id] = {true, q.engine, q.queue, static_cast<std::uint32_t>(ring.size())};
      ring.push_back(m.descriptors.at(id));
      ring_labels.push_back(m.ops[id].label < 0 ? std::string() : m.labels[m.ops[id].label]);
    }
  }
  for (int e = 0; e < arch::kNumEngines; ++e) p.semaphore_owners.emplace_back(to_string(static_cast<arch::Engine>(e)));
  for (const auto& q : m.queues) p.semaphore_owners.push_back(fmt::format("dma {}.{}", q.engine, q.queue));
  for (const auto& a : m.tiles)
    if (a.first_op >= 0)
      p.tiles.push_back({a.name, a.space == 1 ? arch::Memory::Psum : arch::Memory::Sbuf, a.bytes, where[a.first_op],
                         where[a.last_op]});
  return p;
}

}  // namespace tessera
