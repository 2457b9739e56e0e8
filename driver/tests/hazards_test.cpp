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

#include <cstdlib>
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
