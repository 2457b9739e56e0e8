#include "builder/hazards.h"

#include <algorithm>
#include <functional>

namespace tessera::builder {

// --------------------------------------------------------------- on chip

std::size_t OnChipIndex::ReadKeyHash::operator()(const ReadKey& k) const {
  std::size_t h = std::hash<std::uint64_t>()(k.region.b0);
  for (std::uint64_t v : {k.region.b1, k.region.p0, k.region.p1, std::uint64_t(k.region.memory), std::uint64_t(k.agent)})
    h = h * 1000003u ^ std::hash<std::uint64_t>()(v);
  return h;
}

void OnChipIndex::add_write(const Region& r, int op, int agent) { add(r, op, agent, true); }

void OnChipIndex::add_read(const Region& r, int op, int agent) {
  const ReadKey key{r, agent};
  if (auto it = reads_.find(key); it != reads_.end()) entries_[it->second].alive = false;  // superseded
  reads_[key] = add(r, op, agent, false);
}

template <typename F>
void OnChipIndex::for_each_overlapping(const Region& r, F&& f) {
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
      f(e.region, e.op, e.agent, e.is_write);
    }
    list.resize(keep);
  }
}

void OnChipIndex::remove_covered(const Region& w) {
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
    if (!entries_[idx].is_write) reads_.erase(ReadKey{entries_[idx].region, entries_[idx].agent});
    entries_[idx].alive = false;
  }
}

std::size_t OnChipIndex::add(const Region& r, int op, int agent, bool is_write) {
  const std::size_t idx = entries_.size();
  entries_.push_back({r, op, agent, is_write, true, 0});
  for (std::uint64_t b = r.b0 / kBucketBytes; b <= (r.b1 - 1) / kBucketBytes; ++b) buckets_[b].push_back(idx);
  return idx;
}

// --------------------------------------------------------------- tracker

void HazardTracker::dependencies(int agent, const RegionList& reads, const RegionList& writes, std::vector<int>& out,
                                 bool* same_agent_raw) {
  std::vector<std::pair<int, int>>& latest = latest_;
  latest.clear();
  const auto consider = [&](int op, int op_agent, bool is_write, const Region& region) {
    if (op_agent == agent) {
      if (same_agent_raw && is_write)
        for (const Region& r : reads) *same_agent_raw |= region.overlaps(r);
      return;
    }
    for (auto& [a, o] : latest)
      if (a == op_agent) {
        o = std::max(o, op);  // ids grow in program order
        return;
      }
    latest.emplace_back(op_agent, op);
  };
  for (const Region& x : reads) {
    if (x.memory != arch::Memory::Hbm) continue;
    const auto it = hbm_.find(x.tensor);
    if (it == hbm_.end()) continue;
    for (const HbmAccess& a : it->second.writes)
      if (a.region.overlaps(x)) consider(a.op, a.agent, true, a.region);
  }
  for (const Region& x : writes) {
    if (x.memory != arch::Memory::Hbm) continue;
    const auto it = hbm_.find(x.tensor);
    if (it == hbm_.end()) continue;
    for (const HbmAccess& a : it->second.writes)
      if (a.region.overlaps(x)) consider(a.op, a.agent, true, a.region);
    for (const auto& [reader, op] : it->second.readers) consider(op, reader, false, x);
  }
  // On chip: a read meets earlier writes (true dependency); a write meets
  // earlier writes (output) and reads (anti).
  for (const Region& r : reads)
    if (r.on_chip())
      on_chip(r.memory).for_each_overlapping(r, [&](const Region& region, int op, int op_agent, bool is_write) {
        if (is_write) consider(op, op_agent, true, region);
      });
  for (const Region& w : writes)
    if (w.on_chip())
      on_chip(w.memory).for_each_overlapping(w, [&](const Region& region, int op, int op_agent, bool is_write) {
        consider(op, op_agent, is_write, region);
      });
  std::sort(latest.begin(), latest.end());
  out.clear();
  for (const auto& [a, op] : latest) out.push_back(op);
}

void HazardTracker::record(int op, int agent, const RegionList& reads, const RegionList& writes) {
  for (const Region& w : writes) {
    if (w.memory == arch::Memory::Hbm) {
      auto& ws = hbm_[w.tensor].writes;
      ws.erase(std::remove_if(ws.begin(), ws.end(), [&](const HbmAccess& a) { return w.covers(a.region); }), ws.end());
      ws.push_back({w, op, agent});
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
