// The DMA scheduler (dma/dma_scheduler.h) runs the fast engines ahead of
// SystemC's time; these tests run one program on two cores of one
// simulation, one under the scheduler and one whose engines step alone in
// their own threads, and require every engine's access sequence (time,
// address, bytes, answer) to be the same, in programs where the order of
// same-time accesses, or a doorbell rung while an engine runs ahead, decides
// the answers.
#include "core/chip.h"
#include "core/neuron_core.h"
#include "dma/dma_scheduler.h"

#include "arch/dma_descriptor.h"
#include "testing/child_process.h"
#include "testing/dma_programs.h"
#include "testing/process.h"
#include "testing/shipped_config.h"
#include "testing/stream.h"
#include "trace/sim_time.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::dma {
namespace {

using core::NeuronCore;
using test_support::ring_of;
using test_support::Stream;
using test_support::tile_descriptor;
using test_support::trigger;

const arch::HwConfig& tiny() { return test_support::shipped_config("tiny"); }

// One line of TESSERA_DMA_BRIDGE_LOG.
struct Access {
  double at;
  std::string kind;
  std::uint64_t address;
  std::uint32_t bytes;
  double answer;
  bool operator==(const Access& o) const {
    return at == o.at && kind == o.kind && address == o.address && bytes == o.bytes && answer == o.answer;
  }
};

// The log's lines by engine ("dma0", ...) for the core named `core`.
std::map<std::string, std::vector<Access>> accesses_of(const std::string& log, const std::string& core) {
  std::map<std::string, std::vector<Access>> out;
  std::istringstream in(log);
  std::string who;
  while (in >> who) {
    Access a;
    std::string word;
    in >> a.at >> a.kind >> std::hex >> a.address >> std::dec >> word >> a.bytes >> word >> a.answer;
    if (who.rfind(core + ".", 0) == 0) out[who.substr(core.size() + 1)].push_back(a);
  }
  return out;
}

// Runs `program` (which loads both cores) with the bridge log on and returns it.
template <typename Program>
std::string run_logged(NeuronCore& ahead, NeuronCore& alone, Program program) {
  program(ahead);
  program(alone);
  ahead.dma().scheduler()->run_ahead(true);
  alone.dma().scheduler()->run_ahead(false);
  ::testing::internal::CaptureStderr();
  const auto ra = ahead.run();
  const auto rb = alone.run();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(ra.ok()) << ra.message;
  EXPECT_TRUE(rb.ok()) << rb.message;
  EXPECT_EQ(ra.end_time, rb.end_time);
  EXPECT_TRUE(ahead.dma().scheduler()->active());
  EXPECT_FALSE(alone.dma().scheduler()->active());
  return log;
}

void expect_same_completions(NeuronCore& a, NeuronCore& b) {
  for (std::size_t e = 0; e < a.dma().engines(); ++e) {
    const auto& x = a.dma().engine(e).completions();
    const auto& y = b.dma().engine(e).completions();
    ASSERT_EQ(x.size(), y.size()) << "dma" << e;
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i].queue, y[i].queue);
      EXPECT_EQ(x[i].index, y[i].index);
      EXPECT_EQ(x[i].done, y[i].done) << "dma" << e << " completion " << i;
    }
    EXPECT_EQ(a.dma().engine(e).stats().busy_ns.value(), b.dma().engine(e).stats().busy_ns.value());
  }
}

class DmaScheduler : public ::testing::Test {
protected:
  void SetUp() override { setenv("TESSERA_DMA_BRIDGE_LOG", "1", 1); }
  void TearDown() override { unsetenv("TESSERA_DMA_BRIDGE_LOG"); }
};

// Both engines fetch in the same cycle (their doorbells land within one DMA
// cycle) and then read the same HBM bytes in the same cycles: the HBM books
// first come first served, so engine 0 must go first at every shared time, as
// it does when the engines take turns in SystemC.
TEST_F(DmaScheduler, SameTimeAccessesGoInEngineOrder) {
  trace::Stats sa, sb;
  NeuronCore ahead("ahead", tiny(), sa), alone("alone", tiny(), sb);
  const auto program = [](NeuronCore& core) {
    const auto& map = core.address_map();
    const auto pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
    std::vector<std::uint64_t> rings;
    for (std::uint16_t e = 0; e < 2; ++e) {
      // Every descriptor reads the same 4 KiB of HBM into the engine's own SBUF columns.
      std::vector<arch::DmaDescriptor> ds;
      for (std::uint16_t i = 0; i < 4; ++i)
        ds.push_back(tile_descriptor(0x4000, 512, map.sbuf_address(0, e * 1024u), pbytes, 8, 256, 1,
                                     map.semaphore_address(e)));
      rings.push_back(core.place(ring_of(ds, 8)));
      core.configure_dma_queue(e, 0, rings.back(), 8);
    }
    Stream sync(arch::Engine::Sync);
    sync.add(trigger(0, 0, rings[0], 4)).add(trigger(1, 0, rings[1], 4)).wait(0, 4).wait(1, 4).end();
    core.load_program(arch::Engine::Sync, sync.bytes);
  };
  const std::string log = run_logged(ahead, alone, program);
  const auto a = accesses_of(log, "ahead"), b = accesses_of(log, "alone");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a, b);
  expect_same_completions(ahead, alone);
  // The program does what it is meant to test: the engines meet on the same
  // bytes at the same time, and the first to book is answered first.
  std::size_t shared = 0;
  for (const Access& x : a.at("dma0"))
    for (const Access& y : a.at("dma1"))
      if (x.at == y.at && x.address == y.address && x.kind == "R") {
        ++shared;
        EXPECT_LT(x.answer, y.answer) << "at " << x.at << " ns";
      }
  EXPECT_GT(shared, 0u);
}

// The two cores of a chip read the same HBM bytes in the same cycles, core
// 0 with its engine 1, core 1 with its engine 0. The chip's engines share one
// order, every engine of core 0 before any of core 1 at the same time, so the
// runs are the same with the engines ahead under the chip's one scheduler or
// stepping in their threads, and core 0 is answered first wherever the two
// meet. Each run is a chip of its own, in a child process (one simulation per
// process).
TEST_F(DmaScheduler, AChipsCoresTakeTheirTurnsInCoreOrder) {
  const auto run_chip = [](bool ahead) {
    return test_support::run_in_child([ahead]() -> std::string {
      trace::Stats stats;
      core::Chip chip(tiny(), 2, stats);
      for (std::size_t c = 0; c < chip.size(); ++c) {
        NeuronCore& core = chip.core(c);
        const auto& map = core.address_map();
        const auto pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
        std::vector<arch::DmaDescriptor> ds;
        for (std::uint16_t i = 0; i < 4; ++i)
          ds.push_back(tile_descriptor(0x4000, 512, map.sbuf_address(0, 0), pbytes, 8, 256, 1, map.semaphore_address(0)));
        const std::uint64_t ring = core.place(ring_of(ds, 8));
        const auto engine = static_cast<std::uint32_t>(1 - c);
        core.configure_dma_queue(engine, 0, ring, 8);
        Stream sync(arch::Engine::Sync);
        sync.add(trigger(engine, 0, ring, 4)).wait(0, 4).end();
        core.load_program(arch::Engine::Sync, sync.bytes);
      }
      // One scheduler for the chip: either core's is the same.
      EXPECT_EQ(chip.core(0).dma().scheduler(), chip.core(1).dma().scheduler());
      chip.core(0).dma().scheduler()->run_ahead(ahead);
      ::testing::internal::CaptureStderr();
      const core::ChipRunResult r = chip.run();
      const std::string log = ::testing::internal::GetCapturedStderr();
      if (!r.chip.ok()) return "error: " + r.chip.message;
      return std::string(chip.core(1).dma().scheduler()->active() ? "active\n" : "alone\n") + log;
    });
  };
  const std::string ahead = run_chip(true), alone = run_chip(false);
  ASSERT_EQ(ahead.rfind("active\n", 0), 0u) << ahead.substr(0, 200);
  ASSERT_EQ(alone.rfind("alone\n", 0), 0u) << alone.substr(0, 200);
  for (const char* core : {"core0", "core1"}) {
    const auto a = accesses_of(ahead.substr(7), core), b = accesses_of(alone.substr(6), core);
    ASSERT_EQ(a.size(), 1u) << core;
    EXPECT_EQ(a, b) << core;
  }
  const auto first = accesses_of(ahead.substr(7), "core0").at("dma1");
  const auto second = accesses_of(ahead.substr(7), "core1").at("dma0");
  std::size_t shared = 0, behind = 0;
  for (const Access& x : first)
    for (const Access& y : second)
      if (x.at == y.at && x.address == y.address && x.kind == "R") {
        ++shared;
        EXPECT_LE(x.answer, y.answer) << "at " << x.at << " ns";
        behind += x.answer < y.answer;
      }
  EXPECT_GT(shared, 0u);
  EXPECT_GT(behind, 0u);  // where the channel is full, the second to book waits
}

// Engine 0 moves 64 KiB; engine 1's short descriptor completes meanwhile and
// releases the sync engine, which rings another queue of engine 0 while the
// scheduler has run engine 0 ahead of SystemC's time: its fetch must come at
// the same cycle, between the same bursts, as when the engine waited in SystemC.
TEST_F(DmaScheduler, DoorbellDuringRunAheadLandsAsInSystemC) {
  trace::Stats sa, sb;
  NeuronCore ahead("ahead", tiny(), sa), alone("alone", tiny(), sb);
  const auto program = [](NeuronCore& core) {
    const auto& map = core.address_map();
    const auto pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
    const std::uint64_t big = core.place(ring_of(
        {tile_descriptor(0x10000, 8192, map.sbuf_address(0, 0), pbytes, 8, 4096, 1, map.semaphore_address(0))}, 4));
    const std::uint64_t next = core.place(ring_of(
        {tile_descriptor(0x40000, 256, map.sbuf_address(0, 8192), pbytes, 8, 128, 1, map.semaphore_address(0))}, 4));
    const std::uint64_t small = core.place(ring_of(
        {tile_descriptor(0x50000, 64, map.sbuf_address(0, 12288), pbytes, 2, 32, 1, map.semaphore_address(1))}, 4));
    core.configure_dma_queue(0, 0, big, 4);
    core.configure_dma_queue(0, 1, next, 4);
    core.configure_dma_queue(1, 0, small, 4);
    Stream sync(arch::Engine::Sync);
    sync.add(trigger(0, 0, big, 1)).add(trigger(1, 0, small, 1)).wait(1, 1).add(trigger(0, 1, next, 1)).wait(0, 2).end();
    core.load_program(arch::Engine::Sync, sync.bytes);
  };
  const std::string log = run_logged(ahead, alone, program);
  const auto a = accesses_of(log, "ahead"), b = accesses_of(log, "alone");
  EXPECT_EQ(a, b);
  expect_same_completions(ahead, alone);
  // The second doorbell reached engine 0 while its 64 KiB were still moving,
  // well within a lookahead of its last write.
  const auto& done = ahead.dma().engine(0).completions();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].queue, 0u);
  const auto& bells = ahead.dma().engine(0).doorbells();
  ASSERT_EQ(bells.size(), 2u);
  EXPECT_LT(trace::ns(bells[1].visible), trace::ns(done[0].done) - 1000.0);
}

// Timing only, an engine's SBUF accesses go ahead of its turn (they ask
// nothing of the HBM, whose answers depend on the order requests come in):
// engine 0 loads rows from HBM into SBUF while engine 1 stores other rows
// from SBUF to the same HBM pages, so their HBM accesses meet. The runs are
// the same with the engines ahead or stepping alone, and the scheduler's log
// shows an SBUF access made before another engine's access of an earlier time.
TEST_F(DmaScheduler, TimingOnlySbufAccessesGoAheadOfTheirTurn) {
  core::CoreOptions options;
  options.no_data = true;
  trace::Stats sa, sb;
  NeuronCore ahead("ahead", tiny(), sa, options), alone("alone", tiny(), sb, options);
  const auto program = [](NeuronCore& core) {
    const auto& map = core.address_map();
    const auto pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
    std::vector<arch::DmaDescriptor> loads, stores;
    for (std::uint16_t i = 0; i < 4; ++i) {
      loads.push_back(tile_descriptor(0x20000 + i * 4096u, 512, map.sbuf_address(0, i * 512u), pbytes, 8, 256, 1,
                                      map.semaphore_address(0)));
      stores.push_back(tile_descriptor(map.sbuf_address(0, 4096 + i * 512u), pbytes, 0x20000 + i * 4096u + 256, 512,
                                       8, 128, 1, map.semaphore_address(1)));
    }
    const std::uint64_t load_ring = core.place(ring_of(loads, 8)), store_ring = core.place(ring_of(stores, 8));
    core.configure_dma_queue(0, 0, load_ring, 8);
    core.configure_dma_queue(1, 0, store_ring, 8);
    Stream sync(arch::Engine::Sync);
    sync.add(trigger(0, 0, load_ring, 4)).add(trigger(1, 0, store_ring, 4)).wait(0, 4).wait(1, 4).end();
    core.load_program(arch::Engine::Sync, sync.bytes);
  };
  const std::string log = run_logged(ahead, alone, program);
  EXPECT_EQ(accesses_of(log, "ahead"), accesses_of(log, "alone"));
  expect_same_completions(ahead, alone);
  // In the order the engines made them: an SBUF access of one engine, then
  // an access of the other at an earlier time.
  const auto& map = ahead.address_map();
  std::istringstream in(log);
  std::string who, kind, word;
  double at = 0, answer = 0;
  std::uint64_t address = 0;
  std::uint32_t bytes = 0;
  std::map<std::string, double> sbuf_reached;  // the latest SBUF access so far, by engine
  bool overtaken = false;
  while (in >> who >> at >> kind >> std::hex >> address >> std::dec >> word >> bytes >> word >> answer) {
    if (who.rfind("ahead.", 0) != 0) continue;
    for (const auto& [other, t] : sbuf_reached)
      if (other != who && at < t) overtaken = true;
    if (map.region_of(address, bytes) == arch::Region::Sbuf) sbuf_reached[who] = std::max(sbuf_reached[who], at);
  }
  EXPECT_TRUE(overtaken);
}

// Loads `count` descriptors of 8 rows of 64 bytes (a burst every few cycles)
// into queue 0 of engine 0, and a Sync stream that rings them and waits.
void load_row_copies(NeuronCore& core, std::uint16_t count) {
  const auto& map = core.address_map();
  const auto pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
  std::vector<arch::DmaDescriptor> ds;
  for (std::uint16_t i = 0; i < count; ++i)
    ds.push_back(tile_descriptor(0x10000 + i * 512u, 64, map.sbuf_address(0, i * 64u), pbytes, 8, 32, 1,
                                 map.semaphore_address(0)));
  const auto slots = static_cast<std::uint32_t>(2 * count);
  const std::uint64_t ring = core.place(ring_of(ds, slots));
  core.configure_dma_queue(0, 0, ring, slots);
  Stream sync(arch::Engine::Sync);
  sync.add(trigger(0, 0, ring, count)).wait(0, count).end();
  core.load_program(arch::Engine::Sync, sync.bytes);
}

// The scheduler sleeps until just before an engine's next step and then takes
// every step within a lookahead, so a long transfer costs a few wake-ups per
// lookahead of simulated time, not one per access (the run is the same either
// way: the tests above).
TEST(DmaSchedulerWakeUps, ALookaheadOfStepsPerWakeUp) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  load_row_copies(core, 16);
  const auto r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  const dma::DmaScheduler& scheduler = *core.dma().scheduler();
  ASSERT_TRUE(scheduler.active());
  const double lookahead_ns = tiny().dma.start_latency_ns;
  const double lookaheads = trace::ns(r.end_time) / lookahead_ns;
  EXPECT_GT(scheduler.steps(), 200u);
  EXPECT_LT(scheduler.wake_ups() * 4, scheduler.steps());
  EXPECT_LE(static_cast<double>(scheduler.wake_ups()), 2 * lookaheads + 4);
}

// A lookahead of one picosecond (dma.start_latency_ns may be any time from
// 0 up): the scheduler still moves SystemC's time on at every wake-up, and
// the run is the one the engines make alone.
TEST_F(DmaScheduler, APicosecondLookaheadStillMovesTimeOn) {
  arch::HwConfig cfg = tiny();
  cfg.dma.start_latency_ns = 0.001;
  trace::Stats sa, sb;
  NeuronCore ahead("ahead", cfg, sa), alone("alone", cfg, sb);
  const auto program = [](NeuronCore& core) { load_row_copies(core, 4); };
  const std::string log = run_logged(ahead, alone, program);
  EXPECT_EQ(accesses_of(log, "ahead"), accesses_of(log, "alone"));
  expect_same_completions(ahead, alone);
  EXPECT_EQ(ahead.dma().engine(0).completions().size(), 4u);
}

// Two queues of engine 0 rung in the same picosecond, one a delta cycle after
// the other (as two sequencers woken together are, in an order SystemC's
// event queue decides): the tails land in queue order either way, so the
// runs are the same with the rings in either order, the engines ahead or
// stepping alone.
TEST(DmaSchedulerMode, SameTimeDoorbellsLandInQueueOrder) {
  struct Case {
    const char* name;
    bool ahead;
    std::uint32_t first;  // the queue rung first
  };
  const Case cases[] = {{"ahead01", true, 0}, {"ahead10", true, 1}, {"alone01", false, 0}, {"alone10", false, 1}};
  std::vector<std::unique_ptr<trace::Stats>> stats;
  std::vector<std::unique_ptr<NeuronCore>> cores;
  std::vector<std::unique_ptr<testing::Process>> ringers;  // each rings its core's two doorbells
  std::vector<std::string> errors;
  for (const Case& c : cases) {
    stats.push_back(std::make_unique<trace::Stats>());
    cores.push_back(std::make_unique<NeuronCore>(c.name, tiny(), *stats.back()));
    NeuronCore& core = *cores.back();
    const auto& map = core.address_map();
    const auto pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
    std::array<std::uint64_t, 2> ring{};
    for (std::uint32_t q = 0; q < 2; ++q) {
      std::vector<arch::DmaDescriptor> ds;
      for (std::uint32_t i = 0; i < 2; ++i)
        ds.push_back(tile_descriptor(0x10000 + 0x4000 * q + 0x1000 * i, 512, map.sbuf_address(0, 2048 * q + 512 * i),
                                     pbytes, 8, 256, 1, map.semaphore_address(q)));
      ring[q] = core.place(ring_of(ds, 4));
      core.configure_dma_queue(0, q, ring[q], 4);
    }
    Stream sync(arch::Engine::Sync);
    sync.wait(0, 2).wait(1, 2).end();
    core.load_program(arch::Engine::Sync, sync.bytes);
    core.dma().scheduler()->run_ahead(c.ahead);
    ringers.push_back(std::make_unique<testing::Process>((std::string(c.name) + "_ringer").c_str()));
    ringers.back()->body = [&core, &errors, ring, first = c.first] {
      sc_core::wait(50, sc_core::SC_NS);
      errors.push_back(core.dma().ring(0, first, ring[first], 2));
      sc_core::wait(sc_core::SC_ZERO_TIME);
      errors.push_back(core.dma().ring(0, 1 - first, ring[1 - first], 2));
    };
  }
  for (auto& core : cores) {
    const auto r = core->run();
    ASSERT_TRUE(r.ok()) << r.message;
  }
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  for (std::size_t i = 0; i < cores.size(); ++i) {
    EXPECT_EQ(cores[i]->dma().scheduler()->active(), cases[i].ahead) << cases[i].name;
    const auto& bells = cores[i]->dma().engine(0).doorbells();
    ASSERT_EQ(bells.size(), 2u);
    EXPECT_EQ(bells[0].queue, cases[i].first) << cases[i].name;
    EXPECT_EQ(bells[0].visible, bells[1].visible) << cases[i].name;
    // Queue 0's tail was written first, so it is fetched and done first.
    EXPECT_EQ(cores[i]->dma().engine(0).completions().front().queue, 0u) << cases[i].name;
  }
  for (std::size_t i = 1; i < cores.size(); ++i) expect_same_completions(*cores[0], *cores[i]);
}

// With a lookahead of 0 (a doorbell could land in the very cycle it is rung)
// the scheduler cannot run ahead, and leaves the engines to their threads.
TEST(DmaSchedulerMode, NoLookaheadLeavesTheEnginesAlone) {
  arch::HwConfig cfg = tiny();
  cfg.dma.start_latency_ns = 0;
  trace::Stats stats;
  NeuronCore core("core", cfg, stats);
  core.dma().scheduler()->run_ahead(true);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  EXPECT_FALSE(core.dma().scheduler()->active());
}

}  // namespace
}  // namespace tessera::dma
