// The builder's dependency tracking, on its own: which earlier operations a
// new one must follow, from the partitions and bytes each reads and writes.
// The on-chip index files accesses by 2 KiB columns and blocks of 16
// partitions, and an access of every block in its column's own cell; these
// cases sit on and across those lines. And the waits the schedule keeps
// from them.
#include "builder/hazards.h"
#include "builder/schedule.h"

#include "arch/address_map.h"
#include "arch/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

namespace tessera::builder {
namespace {

Region sbuf(std::uint64_t p0, std::uint64_t p1, std::uint64_t b0, std::uint64_t b1) {
  return Region{arch::Memory::Sbuf, p0, p1, b0, b1};
}

std::vector<int> deps(HazardTracker& t, int agent, const RegionList& reads, const RegionList& writes) {
  std::vector<int> out;
  t.dependencies(agent, reads, writes, out);
  return out;
}

TEST(HazardTracker, AReadFollowsAWriteOnlyWhereTheirPartitionsMeet) {
  HazardTracker t;
  t.record(0, 0, {}, {sbuf(0, 8, 0, 64)});
  EXPECT_TRUE(deps(t, 1, {sbuf(120, 128, 0, 64)}, {}).empty());  // same bytes, another partition block
  EXPECT_TRUE(deps(t, 1, {sbuf(8, 16, 0, 64)}, {}).empty());      // same block, next partitions
  EXPECT_EQ(deps(t, 1, {sbuf(4, 20, 0, 64)}, {}), std::vector<int>{0});  // across the block line
  EXPECT_EQ(deps(t, 1, {sbuf(7, 8, 63, 64)}, {}), std::vector<int>{0});  // its last byte
  EXPECT_TRUE(deps(t, 1, {sbuf(0, 8, 64, 4096)}, {}).empty());    // the bytes after it
}

TEST(HazardTracker, PartitionsPastTheLastBlockAreTrackedExactly) {
  // A memory of more than 128 partitions: its upper ones share the index's
  // last block, and still meet only what they overlap.
  HazardTracker t;
  t.record(0, 0, {}, {sbuf(130, 140, 0, 64)});
  EXPECT_EQ(deps(t, 1, {sbuf(135, 136, 0, 64)}, {}), std::vector<int>{0});
  EXPECT_TRUE(deps(t, 1, {sbuf(112, 130, 0, 64)}, {}).empty());
  EXPECT_TRUE(deps(t, 1, {sbuf(140, 192, 0, 64)}, {}).empty());
  EXPECT_EQ(deps(t, 1, {sbuf(0, 192, 0, 64)}, {}), std::vector<int>{0});
}

TEST(HazardTracker, AnAccessOfEveryBlockIsMetFromEachOfThem) {
  // Filed once per column, not per block: queries of one block, of the
  // partitions past the last block, and of every block all meet it, and
  // a write that covers it removes it from every query's sight.
  HazardTracker t;
  t.record(0, 0, {}, {sbuf(0, 192, 0, 4096)});
  EXPECT_EQ(deps(t, 1, {sbuf(0, 1, 0, 1)}, {}), std::vector<int>{0});
  EXPECT_EQ(deps(t, 1, {sbuf(70, 72, 2048, 2050)}, {}), std::vector<int>{0});
  EXPECT_EQ(deps(t, 1, {sbuf(150, 160, 4000, 4096)}, {}), std::vector<int>{0});
  EXPECT_TRUE(deps(t, 1, {sbuf(0, 192, 4096, 6144)}, {}).empty());
  t.record(1, 2, {}, {sbuf(0, 192, 0, 4096)});
  EXPECT_EQ(deps(t, 1, {sbuf(100, 101, 0, 64)}, {}), std::vector<int>{1});
}

TEST(HazardTracker, AnAccessOverManyCellsIsMetOnce) {
  HazardTracker t;
  t.record(0, 0, {}, {sbuf(0, 128, 0, 8192)});  // 8 blocks x 4 columns
  EXPECT_EQ(deps(t, 1, {sbuf(0, 128, 0, 8192)}, {}), std::vector<int>{0});
  t.record(1, 1, {sbuf(0, 128, 0, 8192)}, {});
  // A write after the write and the read waits for the latest of each other agent.
  EXPECT_EQ(deps(t, 2, {}, {sbuf(3, 100, 100, 5000)}), (std::vector<int>{0, 1}));
}

TEST(HazardTracker, AWriteThatCoversEarlierAccessesTakesTheirPlace) {
  HazardTracker t;
  t.record(0, 0, {}, {sbuf(16, 32, 2048, 4096)});
  t.record(1, 1, {sbuf(16, 32, 2048, 4096)}, {});
  t.record(2, 2, {}, {sbuf(0, 128, 0, 8192)});  // covers both
  // Later ops order against the covering write alone.
  EXPECT_EQ(deps(t, 3, {sbuf(20, 21, 3000, 3001)}, {}), std::vector<int>{2});
  // A write that covers part of one block leaves the rest of the earlier write live.
  t.record(4, 0, {}, {sbuf(40, 56, 8192, 8256)});
  t.record(5, 1, {}, {sbuf(40, 48, 8192, 8256)});
  EXPECT_EQ(deps(t, 3, {sbuf(48, 56, 8192, 8256)}, {}), std::vector<int>{4});
  EXPECT_EQ(deps(t, 3, {sbuf(40, 56, 8192, 8256)}, {}), (std::vector<int>{4, 5}));
  // And one that covers nothing whole leaves the covering write live under it.
  t.record(6, 0, {}, {sbuf(60, 70, 0, 64)});
  EXPECT_EQ(deps(t, 3, {sbuf(64, 66, 0, 64)}, {}), (std::vector<int>{6, 2}));
}

// A DMA piece is searched for once, before its queue is chosen; what it
// then waits for as that queue's op must be what a search as that queue
// gives, the same-queue read-after-write flag included. Random ops of a few
// agents over SBUF and one HBM tensor.
TEST(HazardTracker, OneSearchForAnUnplacedOpGivesEachAgentsDependencies) {
  std::srand(11);
  const auto pick = [](std::uint64_t n) { return static_cast<std::uint64_t>(std::rand()) % n; };
  const auto region = [&] {
    Region r;
    if (pick(4) == 0) {
      r.memory = arch::Memory::Hbm;
      r.tensor = 0x1000;
    }
    r.p0 = pick(120);
    r.p1 = r.p0 + 1 + pick(16);
    r.b0 = pick(6000);
    r.b1 = r.b0 + 1 + pick(3000);
    return r;
  };
  HazardTracker t;
  int raw_seen = 0;
  for (int op = 0; op < 3000; ++op) {
    const RegionList reads{region()}, writes{region()};
    std::vector<int> any, unplaced, as, expected;
    t.dependencies(-1, reads, writes, any);
    t.dependencies_of_unplaced(reads, writes, unplaced);
    ASSERT_EQ(unplaced, any) << "op " << op;
    for (int agent = 0; agent < 5; ++agent) {
      bool raw = false, expected_raw = false;
      t.dependencies_as(agent, as, &raw);
      t.dependencies(agent, reads, writes, expected, &expected_raw);
      ASSERT_EQ(as, expected) << "op " << op << " as agent " << agent;
      ASSERT_EQ(raw, expected_raw) << "op " << op << " as agent " << agent;
      raw_seen += raw;
      t.dependencies_of_unplaced(reads, writes, unplaced);  // dependencies() replaced the search
    }
    t.record(op, static_cast<int>(pick(5)), reads, writes);
  }
  EXPECT_GT(raw_seen, 0);  // the flag was exercised
}

// record() drops what a write covers. After a search for the same op it
// drops what the search found covered instead of searching again: the two
// ways must leave the same index. One tracker records after searching,
// the other after a search for something else; both must then answer
// every query alike. Writes are often wide enough to cover earlier ones.
TEST(HazardTracker, RecordAfterASearchDropsWhatRecordAloneDrops) {
  std::srand(5);
  const auto pick = [](std::uint64_t n) { return static_cast<std::uint64_t>(std::rand()) % n; };
  const auto region = [&](bool wide) {
    Region r;
    r.p0 = pick(wide ? 64 : 120);
    r.p1 = r.p0 + 1 + pick(wide ? 64 : 16);
    r.b0 = pick(6000);
    r.b1 = r.b0 + 1 + pick(wide ? 6000 : 1500);
    return r;
  };
  HazardTracker listed, scanned;
  std::size_t met = 0;
  for (int op = 0; op < 4000; ++op) {
    const RegionList reads{region(false)}, writes{region(pick(3) == 0)};
    const int agent = static_cast<int>(pick(5));
    std::vector<int> a, b;
    listed.dependencies(agent, reads, writes, a);
    scanned.dependencies(agent, reads, writes, b);
    ASSERT_EQ(a, b) << "op " << op;
    met += a.size();
    scanned.dependencies(agent, {}, {}, b);  // its record() cannot use the search above
    listed.record(op, agent, reads, writes);
    scanned.record(op, agent, reads, writes);
  }
  EXPECT_GT(met, 4000u);  // the ops met each other
}

// HBM writes are indexed so that a query meets few of them: by blocks of
// rows, wide writes (many rows, a view taken as whole rows) by their first
// row, and a wide query by each agent's newest write. Whatever the index
// skips, the answers must be a full scan's: random reads and writes of two
// tensors, narrow and wide, in shifting bands per agent (as an elementwise
// kernel's store pieces), some ops reading the tensor they write, against
// a tracker that keeps every live write in one list.
// A wide HBM write drops the narrow writes it covers, those that lie in its
// first and last row blocks included, whether it finds them under its row
// blocks (many narrow writes live elsewhere) or among all writes (few).
TEST(HazardTracker, AWideHbmWriteDropsTheNarrowWritesItCovers) {
  constexpr std::uint64_t kTensor = 0x100000, kRowBytes = 512;
  const auto hbm = [&](std::uint64_t p0, std::uint64_t p1) {
    Region r;
    r.memory = arch::Memory::Hbm;
    r.tensor = kTensor;
    r.p0 = p0;
    r.p1 = p1;
    r.b0 = kTensor;
    r.b1 = kTensor + kRowBytes;
    return r;
  };
  for (const int elsewhere : {0, 200}) {
    HazardTracker t;
    int op = 0;
    // Agent 1's narrow writes far from the rest: whether the wide write
    // looks under its 13 row blocks or at every write.
    for (int i = 0; i < elsewhere; ++i, ++op) t.record(op, 1, {}, {hbm(10000 + 20 * i, 10002 + 20 * i)});
    const int partly = op++, first_block = op++, last_block = op++, middle = op++;
    t.record(partly, 5, {}, {hbm(300, 310)});  // reaches past it: stays
    t.record(first_block, 2, {}, {hbm(96, 98)});  // rows 96..111 are block 6, the wide write's first
    t.record(last_block, 3, {}, {hbm(300, 302)});  // rows 288..303 are block 18, its last
    t.record(middle, 4, {}, {hbm(200, 230)});
    const int wide = op++;
    t.record(wide, 6, {}, {hbm(96, 302)});
    EXPECT_EQ(deps(t, 7, {hbm(96, 302)}, {}), (std::vector<int>{partly, wide})) << elsewhere << " elsewhere";
    EXPECT_EQ(deps(t, 7, {hbm(96, 98)}, {}), std::vector<int>{wide}) << elsewhere << " elsewhere";
    EXPECT_EQ(deps(t, 7, {hbm(300, 301)}, {}), (std::vector<int>{partly, wide})) << elsewhere << " elsewhere";
  }
}

// `narrow_percent`: the share of the first tensor's writes that are narrow.
void check_hbm_against_full_scan(std::uint64_t seed, std::uint64_t narrow_percent) {
  struct Write {
    Region region;
    int op, agent;
  };
  struct Reference {
    std::vector<Write> writes;                        // live: none covered by a later one
    std::vector<std::pair<std::uint64_t, std::pair<int, int>>> readers;  // (tensor, (agent, latest read))
    std::vector<int> dependencies(int agent, const RegionList& reads, const RegionList& writes_of_op, bool& raw) const {
      std::vector<std::pair<int, int>> latest;  // (agent, op)
      const auto consider = [&](int op, int op_agent, bool is_write, const Region& region) {
        if (op_agent == agent) {
          for (const Region& r : reads) raw |= is_write && region.overlaps(r);
          return;
        }
        for (auto& l : latest)
          if (l.first == op_agent) {
            l.second = std::max(l.second, op);
            return;
          }
        latest.emplace_back(op_agent, op);
      };
      for (const Region& x : reads)
        for (const Write& w : writes)
          if (w.region.overlaps(x)) consider(w.op, w.agent, true, w.region);
      for (const Region& x : writes_of_op) {
        for (const Write& w : writes)
          if (w.region.overlaps(x)) consider(w.op, w.agent, true, w.region);
        for (const auto& [tensor, reader] : readers)
          if (tensor == x.tensor) consider(reader.second, reader.first, false, x);
      }
      std::sort(latest.begin(), latest.end());
      std::vector<int> out;
      for (const auto& l : latest) out.push_back(l.second);
      return out;
    }
    // Writes a wide write covered, by the kind of write covered: the index
    // looks for them among the narrow and the wide ones its own ways.
    std::size_t narrow_covered_by_wide = 0, wide_covered_by_wide = 0;
    static bool wide(const Region& r) { return (r.p1 - 1) / 16 - r.p0 / 16 >= 8; }
    void record(int op, int agent, const RegionList& reads, const RegionList& writes_of_op) {
      for (const Region& w : writes_of_op) {
        if (wide(w))
          for (const Write& o : writes)
            if (w.covers(o.region)) ++(wide(o.region) ? wide_covered_by_wide : narrow_covered_by_wide);
        writes.erase(std::remove_if(writes.begin(), writes.end(), [&](const Write& o) { return w.covers(o.region); }),
                     writes.end());
        writes.push_back({w, op, agent});
      }
      for (const Region& r : reads) {
        const auto it = std::find_if(readers.begin(), readers.end(),
                                     [&](const auto& x) { return x.first == r.tensor && x.second.first == agent; });
        if (it == readers.end()) readers.push_back({r.tensor, {agent, op}});
        else it->second.second = op;
      }
    }
  };
  std::mt19937_64 random(seed);
  const auto pick = [&](std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(random); };
  constexpr std::uint64_t kRowBytes = 512, kTensors[] = {0x100000, 0x200000}, kWidest = 1350;
  // Rows of a write: narrow (a few row blocks), around the line between
  // narrow and wide (8 blocks of 16 rows, so 113 to 144 rows either side
  // of it depending on the first row), wide, and the widest of all, which
  // bounds how far back a wide write that overlaps a query may start.
  const auto rows = [&](bool wide) -> std::uint64_t {
    if (!wide) return pick(4) == 0 ? 41 + pick(110) : 1 + pick(40);
    switch (pick(4)) {
      case 0: return 100 + pick(60);
      case 1: return kWidest;
      default: return 151 + pick(kWidest - 151);
    }
  };
  const auto region = [&](int agent, int op) {
    Region r;
    r.memory = arch::Memory::Hbm;
    r.tensor = kTensors[pick(3) == 0];
    const bool wide = r.tensor == kTensors[1] || pick(100) >= narrow_percent;  // the second tensor's are all wide
    // An agent's band moves on with the ops, as an elementwise kernel's does.
    const std::uint64_t band = static_cast<std::uint64_t>(agent) * 1500 + static_cast<std::uint64_t>(op) / 8;
    r.p0 = pick(4) == 0 ? pick(6000) : band + 8 * pick(25);  // often the same first row
    r.p1 = r.p0 + rows(wide);
    const bool whole = pick(2) == 0;
    r.b0 = r.tensor + (whole ? 0 : pick(kRowBytes - 1));
    r.b1 = whole ? r.tensor + kRowBytes : r.b0 + 1 + pick(r.tensor + kRowBytes - r.b0 - 1);
    return r;
  };
  HazardTracker t;
  Reference ref;
  std::size_t met = 0;
  for (int op = 0; op < 4000; ++op) {
    const int agent = static_cast<int>(pick(5));
    RegionList reads, writes;
    if (pick(3) != 0) reads.push_back(region(agent, op));
    if (pick(4) != 0) writes.push_back(region(agent, op));
    if (pick(8) == 0) writes.push_back(region(agent, op));
    std::vector<int> got, unplaced, as;
    bool raw = false, expected_raw = false;
    t.dependencies(agent, reads, writes, got, &raw);
    ASSERT_EQ(got, ref.dependencies(agent, reads, writes, expected_raw)) << "op " << op;
    ASSERT_EQ(raw, expected_raw) << "op " << op;
    t.dependencies_of_unplaced(reads, writes, unplaced);
    bool unused = false;
    ASSERT_EQ(unplaced, ref.dependencies(-1, reads, writes, unused)) << "op " << op;
    for (int as_agent = 0; as_agent < 5; ++as_agent) {
      bool as_raw = false, ref_raw = false;
      t.dependencies_as(as_agent, as, &as_raw);
      ASSERT_EQ(as, ref.dependencies(as_agent, reads, writes, ref_raw)) << "op " << op << " as agent " << as_agent;
      ASSERT_EQ(as_raw, ref_raw) << "op " << op << " as agent " << as_agent;
    }
    met += got.size();
    t.record(op, agent, reads, writes);
    ref.record(op, agent, reads, writes);
  }
  EXPECT_GT(met, 2000u);  // the ops met each other
  EXPECT_LT(ref.writes.size(), 3000u);  // and writes covered earlier ones
  EXPECT_GT(ref.narrow_covered_by_wide, 50u);
  EXPECT_GT(ref.wide_covered_by_wide, 50u);
}

TEST(HazardTracker, HbmDependenciesAreAFullScans) { check_hbm_against_full_scan(17, 33); }

// Many narrow writes live beside the wide ones: a wide write finds those it
// covers under its row blocks, not among every write.
TEST(HazardTracker, HbmDependenciesAreAFullScansAmongManyNarrowWrites) { check_hbm_against_full_scan(18, 90); }

// A wait its stream has made already (on the same op, or a later op of the
// same agent) is not kept; the same op is still waited for from another
// stream, and its producer still signals.
TEST(Schedule, KeepsAWaitOnlyWhereItsStreamHasNotMadeItAlready) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  const arch::HwConfig cfg = arch::load_config("tiny").hw;
  const arch::AddressMap map(cfg);
  Schedule s(cfg, map);
  const Region in_hbm{arch::Memory::Hbm, 0, 8, 0, 64, 0};
  arch::Instruction copy;
  copy.opcode = arch::Opcode::Copy;
  const int load = s.add_dma(arch::DmaDescriptor{}, in_hbm, sbuf(0, 8, 0, 64), -1);
  const int first = s.add_instruction(arch::Engine::Vector, copy, {sbuf(0, 8, 0, 64)}, {sbuf(0, 8, 64, 128)}, -1);
  const int again = s.add_instruction(arch::Engine::Vector, copy, {sbuf(0, 8, 0, 64)}, {sbuf(0, 8, 128, 192)}, -1);
  const int other = s.add_instruction(arch::Engine::Scalar, copy, {sbuf(0, 8, 0, 64)}, {sbuf(0, 8, 192, 256)}, -1);
  const int last = s.add_instruction(arch::Engine::Scalar, copy, {sbuf(0, 8, 64, 128)}, {sbuf(0, 8, 256, 320)}, -1);
  const auto waits = [&](int op) { return std::vector<int>(s.waits_begin(op), s.waits_end(op)); };
  EXPECT_EQ(waits(first), std::vector<int>{load});
  EXPECT_TRUE(waits(again).empty());
  EXPECT_EQ(waits(other), std::vector<int>{load});
  EXPECT_EQ(waits(last), std::vector<int>{first});  // the vector engine's own op
  EXPECT_TRUE(s.ops()[static_cast<std::size_t>(first)].signal);
}

}  // namespace
}  // namespace tessera::builder
