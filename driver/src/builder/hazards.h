// Which earlier operations a new one must wait for: true (read after write),
// anti (write after read) and output (write after write) dependencies between
// agents, from the regions each operation reads and writes.
//
// Operations are named by their id, which grows in program order; each
// belongs to an agent (an engine's stream or a DMA queue) that finishes its
// own operations in order, so only the latest dependency on each other agent
// matters.
#pragma once

#include "builder/region.h"

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::builder {

// The live accesses of one on-chip memory, indexed by cells of 2 KiB columns
// and blocks of 16 partitions (an access of every block in a cell of its
// column's own), so that a query meets only the accesses near its bytes and
// partitions (a large kernel has hundreds of thousands of DMA pieces of a few
// partitions each, and a few hundred live tiles). An
// access that a later one supersedes or covers leaves the index at once and
// its slot is reused, so the index holds the live accesses only, however
// long the kernel.
class OnChipIndex {
public:
  void add_write(const Region& r, int op, int agent);
  // A newer read of the same bytes by the same agent supersedes the older,
  // since the agent finishes in order.
  void add_read(const Region& r, int op, int agent);
  // Calls f(region, op, agent, is_write) once for each live access
  // overlapping r. With `covered`, also lists there (ascending) the accesses
  // r covers: what remove_covered(r) would drop while the index stays as it is.
  template <typename F>
  void for_each_overlapping(const Region& r, F&& f, std::vector<std::uint32_t>* covered = nullptr);
  // Drops every access that the write `w` covers: later ops order against w.
  void remove_covered(const Region& w);
  // remove_covered() of a write whose covered accesses were listed already.
  void remove_listed(const std::vector<std::uint32_t>& covered);

private:
  // A column's bytes. Narrower columns list fewer accesses a query does not
  // overlap, wider ones list a wide access fewer times. Counted over whole
  // runs (docs/performance.md), 512 beat 2048: the mid GEMM 3 % and a tiny
  // config's GEMM 5 % fewer instructions; 256 and 1024 each lost one of them.
  static constexpr std::uint64_t kBucketBytes = 512;
  // Partitions past the last block share it (a memory of more than 128).
  static constexpr std::uint64_t kPartitionsPerBlock = 16, kBlocks = 8;
  // Partitions [p0, p1) and bytes [b0, b1) of each: an on-chip Region
  // (whose memory is the index's, and which names no tensor).
  struct Entry {
    std::uint32_t p0, p1, b0, b1;
    std::int32_t op;
    std::int32_t agent;
    std::uint32_t stamp;  // the query that last met it
    bool is_write;
    bool overlaps(const Region& r) const { return p0 < r.p1 && r.p0 < p1 && b0 < r.b1 && r.b0 < b1; }
    bool covered_by(const Region& w) const { return w.p0 <= p0 && p1 <= w.p1 && w.b0 <= b0 && b1 <= w.b1; }
  };
  struct ReadKey {
    std::uint32_t p0, p1, b0, b1;
    std::int32_t agent;
    bool operator==(const ReadKey& o) const {
      return p0 == o.p0 && p1 == o.p1 && b0 == o.b0 && b1 == o.b1 && agent == o.agent;
    }
  };
  struct ReadKeyHash {
    std::size_t operator()(const ReadKey& k) const;
  };
  std::uint32_t add(const Region& r, int op, int agent, bool is_write);
  void remove(std::uint32_t idx);
  void drop(const std::vector<std::uint32_t>& dead);  // ascending, each once
  // Each column has a cell per block of partitions and one more, listing the
  // accesses of every block: a tile across all partitions (the common case)
  // is listed once per column rather than once per block, so a query across
  // all partitions meets it once per column, not kBlocks times.
  static constexpr std::uint64_t kCellsPerColumn = kBlocks + 1;
  // Columns [first, last] (none if first > last: the index has no column
  // there yet) and blocks [k0, k1] of partitions [p0, p1) and bytes [b0, b1).
  struct Cells {
    std::uint64_t first, last, k0, k1;
  };
  Cells cells_of(std::uint64_t p0, std::uint64_t p1, std::uint64_t b0, std::uint64_t b1) const;
  // Calls f(cell list) for each cell that lists an access of partitions
  // [p0, p1) and bytes [b0, b1).
  template <typename F>
  void for_each_home(std::uint64_t p0, std::uint64_t p1, std::uint64_t b0, std::uint64_t b1, F&& f);
  // Calls f(cell list) for each cell that may list an access overlapping
  // partitions [p0, p1) and bytes [b0, b1): its blocks' cells and its
  // columns' all-block cells (columns past the index's end hold nothing).
  template <typename F>
  void for_each_cell(std::uint64_t p0, std::uint64_t p1, std::uint64_t b0, std::uint64_t b1, F&& f);

  std::vector<Entry> entries_;
  std::vector<std::uint32_t> free_;                  // slots of entries_ no access holds
  std::vector<std::vector<std::uint32_t>> buckets_;  // column * kCellsPerColumn + block (kBlocks: every block) -> live entries, in no order
  std::unordered_map<ReadKey, std::uint32_t, ReadKeyHash> reads_;
  std::vector<std::uint32_t> dead_;                  // remove_covered(), reused
  std::uint32_t stamp_ = 0;
};

// The live writes of one HBM tensor, indexed by blocks of its rows: a large
// kernel writes its output in thousands of pieces, and a query or a new
// write meets only those in its rows. A write of many rows (a view taken as
// whole rows) is wide: kept apart, by its first row. Elementwise kernels
// write nothing but wide pieces, thousands of them, so wide ones are never
// all visited: a narrow query meets those that start close enough to reach
// it, a wide write looks for what it covers among those that start in its
// rows, and a wide query asks each agent whose writes span its rows for that
// agent's newest overlapping write only.
class HbmWrites {
public:
  struct Access {
    Region region;
    int op;
    int agent;
  };
  // Appends to `out` each agent's newest live write overlapping r, and
  // maybe some older ones (once each): all a search that keeps each agent's
  // latest op needs, when what it learns from an agent's write does not
  // depend on which of its writes that is.
  void newest_overlapping(const Region& r, std::vector<const Access*>& out);
  // Adds `w` after dropping the writes it covers. Ops come in program order
  // (ids never go down): an agent's newest write is its latest op.
  void add(const Region& w, int op, int agent);
  bool empty() const { return entries_.size() == free_.size(); }

private:
  static constexpr std::uint64_t kRowsPerBlock = 16;
  static constexpr std::uint64_t kMostBlocks = 8;  // a write of more blocks is wide
  struct Entry {
    Access access;
    std::uint32_t stamp;
    std::uint64_t serial;  // which add() made it, as its slot is reused
    bool alive;
    std::multimap<std::uint64_t, std::uint32_t>::iterator wide_at;  // a wide write's place in wide_
  };
  // Calls f(access) once for each live write overlapping r, a narrow region.
  template <typename F>
  void for_each_overlapping(const Region& r, F&& f);
  template <typename F>
  void for_each_index(const Region& r, F&& f);
  static bool wide(const Region& r) { return (r.p1 - 1) / kRowsPerBlock - r.p0 / kRowsPerBlock >= kMostBlocks; }
  void remove(std::uint32_t idx);

  std::vector<Entry> entries_;
  std::vector<std::uint32_t> free_;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> blocks_;  // row block -> live narrow writes
  std::uint32_t narrow_ = 0;                                               // live narrow writes
  std::multimap<std::uint64_t, std::uint32_t> wide_;                       // first row -> live wide write
  std::uint64_t wide_rows_ = 0;  // the most rows of any wide write added: how far back one may start
  // One agent's live writes: the order they were added in, newest last, as
  // (slot, serial), where a slot whose entry is gone or reused is skipped
  // (and the list compacted once those, added.size() - live, are half of
  // it); and rows [p0, p1) spanning every write it held since it last held none.
  struct AgentWrites {
    std::vector<std::pair<std::uint32_t, std::uint64_t>> added;
    std::uint32_t live = 0;
    std::uint64_t p0 = 0, p1 = 0;
  };
  std::vector<AgentWrites> agents_;  // by agent + 1 (a DMA piece not yet placed is agent -1)
  std::uint64_t serial_ = 0;
  int newest_op_ = -1;               // the op of the last add(): program order checked
  std::vector<std::uint32_t> dead_;  // add(), reused
  std::uint32_t stamp_ = 0;
};

class HazardTracker {
public:
  // The latest op of each other agent that an op of `agent` reading `reads`
  // and writing `writes` must follow, by agent. agent -1: an op that belongs
  // to no agent yet (a DMA before its queue is chosen). When
  // `same_agent_raw` is given, it is set when the op reads what an earlier op
  // of its own agent wrote. The ops go into `out` (cleared first), in agent
  // order, so that a caller can reuse one buffer for every op.
  void dependencies(int agent, const RegionList& reads, const RegionList& writes, std::vector<int>& out,
                    bool* same_agent_raw = nullptr);
  // dependencies(-1, ...) for an op whose agent is chosen from them (a DMA
  // piece's queue), and then, by dependencies_as(), what
  // dependencies(agent, ...) would give for the agent chosen, from the same
  // search: a DMA piece was searched for twice, 4 % of a large GEMM's
  // instructions.
  void dependencies_of_unplaced(const RegionList& reads, const RegionList& writes, std::vector<int>& out);
  void dependencies_as(int agent, std::vector<int>& out, bool* same_agent_raw) const;
  // Records op `op` of `agent` as the latest access of what it reads and writes.
  void record(int op, int agent, const RegionList& reads, const RegionList& writes);

private:
  OnChipIndex& on_chip(arch::Memory m) { return on_chip_[m == arch::Memory::Psum ? 1 : 0]; }

  OnChipIndex on_chip_[2];  // SBUF, PSUM
  // Fills latest_, in agent order. raw_by_agent: each agent's `raw` too
  // (dependencies_as).
  void search(int agent, const RegionList& reads, const RegionList& writes, bool* same_agent_raw, bool raw_by_agent);
  struct Latest {
    int agent;
    int op;     // the agent's latest op to follow
    bool raw;   // one of its writes overlaps a read (kept only by dependencies_of_unplaced)
  };
  std::vector<Latest> latest_;  // search()'s, reused
  std::vector<const HbmWrites::Access*> hbm_met_;  // search()'s, reused
  // The accesses the last search's write covers, when it wrote one on-chip
  // region (nearly every op): record() of that op drops them without
  // searching the index again. Valid until the index changes.
  Region covered_write_;
  std::vector<std::uint32_t> covered_;
  bool covered_valid_ = false;
  // HBM, per tensor: writes exactly, reads summarised as each agent's latest
  // (a write waits for all of them). Kernels rarely write what they read, and
  // a large kernel reads tens of thousands of distinct tiles.
  struct HbmTensor {
    HbmWrites writes;
    std::vector<std::pair<int, int>> readers;  // (agent, latest read op)
  };
  std::unordered_map<std::uint64_t, HbmTensor> hbm_;
};

}  // namespace tessera::builder
