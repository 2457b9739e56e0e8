// The DMA scheduler (dma/dma_scheduler.h) runs the fast engines ahead of
// SystemC's time; these tests run one program on two cores of one
// simulation, one under the scheduler and one whose engines step alone in
// their own threads, and require every engine's access sequence (time,
// address, bytes, answer) to be the same, in programs where the order of
// same-time accesses, or a doorbell rung while an engine runs ahead, decides
// the answers.
#include "core/neuron_core.h"
#include "dma/dma_scheduler.h"

#include "arch/dma_descriptor.h"
#include "testing/dma_programs.h"
#include "testing/shipped_config.h"
#include "testing/stream.h"
#include "trace/sim_time.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
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
  ahead.dma().scheduler()->enable();
  testing::internal::CaptureStderr();
  const auto ra = ahead.run();
  const auto rb = alone.run();
  const std::string log = testing::internal::GetCapturedStderr();
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
  // The core that steps alone must, whatever the environment asks of the others.
  void SetUp() override {
    setenv("TESSERA_DMA_BRIDGE_LOG", "1", 1);
    unsetenv("TESSERA_DMA_RUN_AHEAD");
  }
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

// With a lookahead of 0 (a doorbell could land in the very cycle it is rung)
// the scheduler cannot run ahead, and leaves the engines to their threads.
TEST(DmaSchedulerMode, NoLookaheadLeavesTheEnginesAlone) {
  arch::HwConfig cfg = tiny();
  cfg.dma.start_latency_ns = 0;
  trace::Stats stats;
  NeuronCore core("core", cfg, stats);
  core.dma().scheduler()->enable();
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  EXPECT_FALSE(core.dma().scheduler()->active());
}

}  // namespace
}  // namespace tessera::dma
