#include "builder/hazards.h"

#include <algorithm>
#include <cassert>
#include <functional>

namespace tessera::builder {

// --------------------------------------------------------------- on chip

std::size_t OnChipIndex::ReadKeyHash::operator()(const ReadKey& k) const {
  std::uint64_t h = (std::uint64_t{k.b0} << 32 | k.b1) * 0x9E3779B97F4A7C15ull;
  h ^= (std::uint64_t{k.p0} << 40 | std::uint64_t{k.p1} << 16 | static_cast<std::uint16_t>(k.agent)) +
       0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  return static_cast<std::size_t>(h ^ (h >> 29));
}

namespace {

std::uint32_t narrow(std::uint64_t v) { return static_cast<std::uint32_t>(v); }

// A slot of `entries` for a new entry: one `free` lists, else a new one.
template <typename Entry>
std::uint32_t take_slot(std::vector<Entry>& entries, std::vector<std::uint32_t>& free) {
  if (free.empty()) {
    entries.emplace_back();
    return static_cast<std::uint32_t>(entries.size() - 1);
  }
  const std::uint32_t idx = free.back();
  free.pop_back();
  return idx;
}

// The stamp of a new visit, which marks each entry met once however many
// buckets list it; when it wraps, no entry may look met already.
template <typename Entry>
void next_stamp(std::vector<Entry>& entries, std::uint32_t& stamp) {
  if (++stamp != 0) return;
  for (Entry& e : entries) e.stamp = 0;
  stamp = 1;
}

}  // namespace

void OnChipIndex::add_write(const Region& r, int op, int agent) { add(r, op, agent, true); }

void OnChipIndex::add_read(const Region& r, int op, int agent) {
  const ReadKey key{narrow(r.p0), narrow(r.p1), narrow(r.b0), narrow(r.b1), agent};
  const auto [it, added] = reads_.try_emplace(key, 0);
  if (!added) remove(it->second);  // superseded
  it->second = add(r, op, agent, false);
}

OnChipIndex::Cells OnChipIndex::cells_of(std::uint64_t p0, std::uint64_t p1, std::uint64_t b0,
                                         std::uint64_t b1) const {
  const std::uint64_t columns = buckets_.size() / kCellsPerColumn;
  if (columns == 0) return {1, 0, 0, 0};
  return {b0 / kBucketBytes, std::min<std::uint64_t>((b1 - 1) / kBucketBytes, columns - 1),
          std::min(p0 / kPartitionsPerBlock, kBlocks - 1), std::min((p1 - 1) / kPartitionsPerBlock, kBlocks - 1)};
}

template <typename F>
void OnChipIndex::for_each_home(std::uint64_t p0, std::uint64_t p1, std::uint64_t b0, std::uint64_t b1, F&& f) {
  Cells c = cells_of(p0, p1, b0, b1);
  if (c.k0 == 0 && c.k1 == kBlocks - 1) c.k0 = c.k1 = kBlocks;  // the column's all-block cell
  for (std::uint64_t b = c.first; b <= c.last; ++b)
    for (std::uint64_t k = c.k0; k <= c.k1; ++k) f(buckets_[b * kCellsPerColumn + k]);
}

template <typename F>
void OnChipIndex::for_each_cell(std::uint64_t p0, std::uint64_t p1, std::uint64_t b0, std::uint64_t b1, F&& f) {
  const Cells c = cells_of(p0, p1, b0, b1);
  for (std::uint64_t b = c.first; b <= c.last; ++b) {
    for (std::uint64_t k = c.k0; k <= c.k1; ++k) f(buckets_[b * kCellsPerColumn + k]);
    f(buckets_[b * kCellsPerColumn + kBlocks]);
  }
}

template <typename F>
void OnChipIndex::for_each_overlapping(const Region& r, F&& f, std::vector<std::uint32_t>* covered) {
  // Every entry of r's cells once (the stamp marks each met, overlapping or
  // not): the covered ones are remove_covered(r)'s, the overlapping ones f's.
  if (covered) covered->clear();
  next_stamp(entries_, stamp_);
  for_each_cell(r.p0, r.p1, r.b0, r.b1, [&](const std::vector<std::uint32_t>& cell) {
    for (const std::uint32_t idx : cell) {
      Entry& e = entries_[idx];
      if (e.stamp == stamp_) continue;
      e.stamp = stamp_;
      if (covered && e.covered_by(r)) covered->push_back(idx);
      if (e.overlaps(r)) f(Region{r.memory, e.p0, e.p1, e.b0, e.b1}, e.op, e.agent, e.is_write);
    }
  });
  if (covered) std::sort(covered->begin(), covered->end());  // the order remove_covered drops them in
}

void OnChipIndex::remove_covered(const Region& w) {
  dead_.clear();
  for_each_cell(w.p0, w.p1, w.b0, w.b1, [&](const std::vector<std::uint32_t>& cell) {
    for (const std::uint32_t idx : cell)
      if (entries_[idx].covered_by(w)) dead_.push_back(idx);
  });
  // An entry spanning several cells is met in each.
  std::sort(dead_.begin(), dead_.end());
  dead_.erase(std::unique(dead_.begin(), dead_.end()), dead_.end());
  drop(dead_);
}

void OnChipIndex::remove_listed(const std::vector<std::uint32_t>& covered) { drop(covered); }

void OnChipIndex::drop(const std::vector<std::uint32_t>& dead) {
  for (const std::uint32_t idx : dead) {
    const Entry& e = entries_[idx];
    if (!e.is_write) reads_.erase(ReadKey{e.p0, e.p1, e.b0, e.b1, e.agent});
    remove(idx);
  }
}

std::uint32_t OnChipIndex::add(const Region& r, int op, int agent, bool is_write) {
  const std::uint32_t idx = take_slot(entries_, free_);
  entries_[idx] = {narrow(r.p0), narrow(r.p1), narrow(r.b0), narrow(r.b1), op, agent, 0, is_write};
  const std::uint64_t cells = ((r.b1 - 1) / kBucketBytes + 1) * kCellsPerColumn;
  if (buckets_.size() < cells) buckets_.resize(cells);
  for_each_home(r.p0, r.p1, r.b0, r.b1, [&](std::vector<std::uint32_t>& cell) { cell.push_back(idx); });
  return idx;
}

void OnChipIndex::remove(std::uint32_t idx) {
  const Entry& e = entries_[idx];
  for_each_home(e.p0, e.p1, e.b0, e.b1, [&](std::vector<std::uint32_t>& cell) {
    const auto it = std::find(cell.begin(), cell.end(), idx);
    *it = cell.back();
    cell.pop_back();
  });
  free_.push_back(idx);
}

// --------------------------------------------------------------- HBM

template <typename F>
void HbmWrites::for_each_index(const Region& r, F&& f) {
  assert(!wide(r));  // wide queries and writes have their own ways (newest_overlapping, add)
  if (entries_.size() == free_.size()) return;
  next_stamp(entries_, stamp_);
  const auto meet = [&](std::uint32_t idx) {
    Entry& e = entries_[idx];
    if (e.stamp == stamp_ || !e.access.region.overlaps(r)) return;
    e.stamp = stamp_;
    f(idx);
  };
  // A wide write that starts more than wide_rows_ before r ends before it.
  for (auto it = wide_.lower_bound(r.p0 > wide_rows_ ? r.p0 - wide_rows_ : 0); it != wide_.end() && it->first < r.p1;
       ++it)
    meet(it->second);
  for (std::uint64_t b = r.p0 / kRowsPerBlock; b <= (r.p1 - 1) / kRowsPerBlock; ++b) {
    const auto it = blocks_.find(b);
    if (it != blocks_.end())
      for (const std::uint32_t idx : it->second) meet(idx);
  }
}

template <typename F>
void HbmWrites::for_each_overlapping(const Region& r, F&& f) {
  for_each_index(r, [&](std::uint32_t idx) { f(entries_[idx].access); });
}

void HbmWrites::newest_overlapping(const Region& r, std::vector<const Access*>& out) {
  if (empty()) return;
  if (!wide(r)) {  // a narrow query meets few writes anyway
    for_each_overlapping(r, [&](const Access& a) { out.push_back(&a); });
    return;
  }
  for (const AgentWrites& a : agents_) {
    if (a.live == 0 || a.p1 <= r.p0 || r.p1 <= a.p0) continue;
    // Newest first: the first one that overlaps is the one the caller keeps.
    for (auto it = a.added.rbegin(); it != a.added.rend(); ++it) {
      const Entry& e = entries_[it->first];
      if (!e.alive || e.serial != it->second || !e.access.region.overlaps(r)) continue;
      out.push_back(&e.access);
      break;
    }
  }
}

void HbmWrites::add(const Region& w, int op, int agent) {
  assert(op >= newest_op_);
  newest_op_ = op;
  dead_.clear();
  const auto if_covered = [&](std::uint32_t idx) {
    if (w.covers(entries_[idx].access.region)) dead_.push_back(idx);
  };
  if (wide(w)) {
    // What w covers lies in its rows: the wide writes that start there, and
    // the narrow ones filed under its row blocks, or, when it spans more
    // blocks than there are narrow writes, found among all.
    next_stamp(entries_, stamp_);
    const auto once = [&](std::uint32_t idx) {
      if (entries_[idx].stamp == stamp_) return;
      entries_[idx].stamp = stamp_;
      if_covered(idx);
    };
    for (auto it = wide_.lower_bound(w.p0); it != wide_.end() && it->first < w.p1; ++it) once(it->second);
    const std::uint64_t b0 = w.p0 / kRowsPerBlock, b1 = (w.p1 - 1) / kRowsPerBlock;
    if (narrow_ > 0 && b1 - b0 < narrow_) {
      for (std::uint64_t b = b0; b <= b1; ++b)
        if (const auto it = blocks_.find(b); it != blocks_.end())
          for (const std::uint32_t idx : it->second) once(idx);
    } else if (narrow_ > 0) {
      for (std::uint32_t idx = 0; idx < entries_.size(); ++idx)
        if (entries_[idx].alive && !wide(entries_[idx].access.region)) once(idx);
    }
  } else {
    for_each_index(w, if_covered);
  }
  for (const std::uint32_t idx : dead_) remove(idx);
  const std::uint32_t idx = take_slot(entries_, free_);
  entries_[idx] = {{w, op, agent}, 0, ++serial_, true, {}};
  const auto slot = static_cast<std::size_t>(agent + 1);  // agent >= -1
  if (slot >= agents_.size()) agents_.resize(slot + 1);
  AgentWrites& a = agents_[slot];
  a.p0 = a.live == 0 ? w.p0 : std::min(a.p0, w.p0);
  a.p1 = a.live == 0 ? w.p1 : std::max(a.p1, w.p1);
  ++a.live;
  a.added.emplace_back(idx, serial_);
  if (wide(w)) {
    entries_[idx].wide_at = wide_.emplace(w.p0, idx);
    wide_rows_ = std::max(wide_rows_, w.p1 - w.p0);
  } else {
    for (std::uint64_t b = w.p0 / kRowsPerBlock; b <= (w.p1 - 1) / kRowsPerBlock; ++b) blocks_[b].push_back(idx);
    ++narrow_;
  }
}

void HbmWrites::remove(std::uint32_t idx) {
  Entry& e = entries_[idx];
  const Region& r = e.access.region;
  if (wide(r)) {
    wide_.erase(e.wide_at);
  } else {
    for (std::uint64_t b = r.p0 / kRowsPerBlock; b <= (r.p1 - 1) / kRowsPerBlock; ++b) {
      std::vector<std::uint32_t>& list = blocks_[b];
      const auto it = std::find(list.begin(), list.end(), idx);
      *it = list.back();
      list.pop_back();
    }
    --narrow_;
  }
  e.alive = false;
  free_.push_back(idx);
  AgentWrites& a = agents_[static_cast<std::size_t>(e.access.agent + 1)];
  if (--a.live == 0) {
    a.added.clear();
  } else if ((a.added.size() - a.live) * 2 > a.added.size()) {
    std::size_t kept = 0;
    for (const auto& [slot, serial] : a.added)
      if (entries_[slot].alive && entries_[slot].serial == serial) a.added[kept++] = {slot, serial};
    a.added.resize(kept);
  }
}

// --------------------------------------------------------------- tracker

void HazardTracker::search(int agent, const RegionList& reads, const RegionList& writes, bool* same_agent_raw,
                           bool raw_by_agent) {
  std::vector<Latest>& latest = latest_;
  latest.clear();
  const auto overlaps_a_read = [&](const Region& region) {
    bool any = false;
    for (const Region& r : reads) any |= region.overlaps(r);
    return any;
  };
  const auto consider = [&](int op, int op_agent, bool is_write, const Region& region) {
    if (op_agent == agent) {
      if (same_agent_raw && is_write) *same_agent_raw |= overlaps_a_read(region);
      return;
    }
    const bool raw = raw_by_agent && is_write && overlaps_a_read(region);
    for (Latest& l : latest)
      if (l.agent == op_agent) {
        l.op = std::max(l.op, op);  // ids grow in program order
        l.raw |= raw;
        return;
      }
    latest.push_back({op_agent, op, raw});
  };
  // HBM writes: consider() keeps each agent's newest overlapping one, and
  // whether any of them overlaps a read of the op, which the reads' own
  // queries say (a write that overlaps a read is met under it).
  std::vector<const HbmWrites::Access*>& met = hbm_met_;
  met.clear();
  for (const Region& x : reads) {
    if (x.memory != arch::Memory::Hbm) continue;
    const auto it = hbm_.find(x.tensor);
    if (it == hbm_.end() || it->second.writes.empty()) continue;  // a tensor only read (a kernel's inputs)
    it->second.writes.newest_overlapping(x, met);
  }
  for (const Region& x : writes) {
    if (x.memory != arch::Memory::Hbm) continue;
    const auto it = hbm_.find(x.tensor);
    if (it == hbm_.end()) continue;
    it->second.writes.newest_overlapping(x, met);
    for (const auto& [reader, op] : it->second.readers) consider(op, reader, false, x);
  }
  for (const HbmWrites::Access* a : met) consider(a->op, a->agent, true, a->region);
  // On chip: a read meets earlier writes (true dependency); a write meets
  // earlier writes (output) and reads (anti).
  for (const Region& r : reads)
    if (r.on_chip())
      on_chip(r.memory).for_each_overlapping(r, [&](const Region& region, int op, int op_agent, bool is_write) {
        if (is_write) consider(op, op_agent, true, region);
      });
  covered_valid_ = writes.size() == 1 && writes.begin()->on_chip();
  if (covered_valid_) covered_write_ = *writes.begin();
  for (const Region& w : writes)
    if (w.on_chip())
      on_chip(w.memory).for_each_overlapping(
          w, [&](const Region& region, int op, int op_agent, bool is_write) { consider(op, op_agent, is_write, region); },
          covered_valid_ ? &covered_ : nullptr);
  // One entry per agent: in agent order.
  std::sort(latest.begin(), latest.end(), [](const Latest& a, const Latest& b) { return a.agent < b.agent; });
}

void HazardTracker::dependencies(int agent, const RegionList& reads, const RegionList& writes, std::vector<int>& out,
                                 bool* same_agent_raw) {
  search(agent, reads, writes, same_agent_raw, false);
  dependencies_as(agent, out, nullptr);  // search() left the agent's own ops out
}

void HazardTracker::dependencies_of_unplaced(const RegionList& reads, const RegionList& writes, std::vector<int>& out) {
  search(-1, reads, writes, nullptr, true);
  dependencies_as(-1, out, nullptr);
}

void HazardTracker::dependencies_as(int agent, std::vector<int>& out, bool* same_agent_raw) const {
  // What search(agent, ...) leaves out: the agent's own ops, whose writes
  // under its reads are what same_agent_raw tells.
  out.clear();
  for (const Latest& l : latest_) {
    if (l.agent != agent) out.push_back(l.op);
    else if (same_agent_raw) *same_agent_raw |= l.raw;
  }
}

void HazardTracker::record(int op, int agent, const RegionList& reads, const RegionList& writes) {
  const bool listed = covered_valid_ && writes.size() == 1 && *writes.begin() == covered_write_;
  covered_valid_ = false;  // the index changes from here
  for (const Region& w : writes) {
    if (w.memory == arch::Memory::Hbm) {
      hbm_[w.tensor].writes.add(w, op, agent);
    } else if (listed) {
      on_chip(w.memory).remove_listed(covered_);
    } else {
      on_chip(w.memory).remove_covered(w);
    }
  }
  for (const Region& r : reads) {
    if (r.memory == arch::Memory::Hbm) {
      auto& readers = hbm_[r.tensor].readers;
      const auto it = std::find_if(readers.begin(), readers.end(), [&](const auto& x) { return x.first == agent; });
      if (it == readers.end()) readers.emplace_back(agent, op);
      else it->second = op;
    } else {
      on_chip(r.memory).add_read(r, op, agent);
    }
  }
  for (const Region& w : writes)
    if (w.on_chip()) on_chip(w.memory).add_write(w, op, agent);
}

}  // namespace tessera::builder
