// The critical path (docs/profiling.md "The critical path"): the walk on
// made-up events, then hand-built programs on the tiny config whose chain
// is known.
#include "run_timing.h"

#include "tessera/device.h"
#include "tessera/kernel_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {
namespace {

using timing::Event;

// The strings are literals, which outlive the events, and so do the names.
Event event(const char* resource, double start, double end, std::vector<int> after, const char* label) {
  static std::deque<timing::EventName> names;
  Event e;
  e.name = &names.emplace_back(timing::EventName{resource, label, "", nullptr});
  e.kind = timing::EventKind::Instruction;
  e.start = start;
  e.end = end;
  for (const int p : after) e.after.push_back(p);
  return e;
}

// The steps cover the run from 0 to its end, one after another.
void expect_tiles(const CriticalPath& p, double end_ns) {
  ASSERT_FALSE(p.steps.empty());
  EXPECT_DOUBLE_EQ(p.end_ns, end_ns);
  EXPECT_DOUBLE_EQ(p.steps.front().from_ns, 0);
  EXPECT_DOUBLE_EQ(p.steps.back().to_ns, end_ns);
  for (std::size_t i = 1; i < p.steps.size(); ++i)
    EXPECT_DOUBLE_EQ(p.steps[i].from_ns, p.steps[i - 1].to_ns) << "step " << i;
  double on_path = 0;
  for (const PathShare& s : p.by_engine) on_path += s.ns;
  EXPECT_NEAR(on_path, end_ns, 1e-9);
}

std::vector<std::string> labels_of(const CriticalPath& p) {
  std::vector<std::string> out;
  for (const PathStep& s : p.steps) out.push_back(s.label);
  return out;
}

// Unused slots hold -1 (event numbers are never negative), so the three
// predecessors take 12 bytes and keep their order.
TEST(Predecessors, HoldsUpToThreeInOrderAndRefusesAFourth) {
  timing::Predecessors p;
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(p.size(), 0u);
  p.push_back(7);
  p.push_back(0);
  EXPECT_EQ(std::vector<int>(p.begin(), p.end()), (std::vector<int>{7, 0}));
  p.push_back(3);
  EXPECT_EQ(p.size(), 3u);
  EXPECT_EQ(std::vector<int>(p.begin(), p.end()), (std::vector<int>{7, 0, 3}));
  EXPECT_THROW(p.push_back(4), std::length_error);
  EXPECT_EQ(timing::Predecessors({5}).size(), 1u);
  EXPECT_EQ(sizeof(timing::Predecessors), 3 * sizeof(int));
}

TEST(CriticalPath, FollowsWhicheverDependencyEndedLast) {
  std::vector<Event> events = {
      event("x", 2, 10, {}, "a"),         // 0
      event("x", 10, 30, {0}, "b"),       // 1
      event("y", 0, 5, {}, "c"),          // 2
      event("y", 5, 12, {2}, "d"),        // 3
      event("z", 31, 35, {1, 3}, "e"),    // 4: held back by b (ends 30), not d (12)
      event("y", 12, 20, {3}, "f"),       // 5: ends before e
  };
  const CriticalPath p = timing::critical_path(events);
  EXPECT_THAT(labels_of(p), ::testing::ElementsAre("a", "b", "e"));
  expect_tiles(p, 35);
  EXPECT_EQ(p.steps[0].gap, "start");
  EXPECT_DOUBLE_EQ(p.steps[0].gap_ns, 2);
  EXPECT_EQ(p.steps[2].gap, "instruction fetch");  // 30 to 31, across resources: not a queue or doorbell
  EXPECT_DOUBLE_EQ(p.steps[2].gap_ns, 1);
  ASSERT_EQ(p.by_engine.size(), 2u);
  EXPECT_EQ(p.by_engine[0].engine, "x");
  EXPECT_DOUBLE_EQ(p.by_engine[0].ns, 30);
}

TEST(CriticalPath, AWaitIsOnThePathOnlyForItsLatencyAfterTheRelease) {
  std::vector<Event> events = {
      event("vector", 0, 4, {}, "own work"),  // 0
      event("dma 0.0", 0, 50, {}, "load"),     // 1
  };
  Event wait = event("vector", 4, 52, {0, 1}, "wait");
  wait.kind = timing::EventKind::Wait;
  wait.released_by = 1;
  events.push_back(wait);                              // 2
  events.push_back(event("vector", 52, 60, {2}, "use"));  // 3
  const CriticalPath p = timing::critical_path(events);
  EXPECT_THAT(labels_of(p), ::testing::ElementsAre("load", "wait", "use"));
  expect_tiles(p, 60);
  EXPECT_DOUBLE_EQ(p.steps[1].ns(), 2);  // the wake latency
  ASSERT_EQ(p.waits.size(), 1u);
  EXPECT_EQ(p.waits[0].released_by, "dma 0.0 load");
  EXPECT_DOUBLE_EQ(p.waits[0].end_ns - p.waits[0].start_ns, 48);
}

// A pipelined engine: its sequencer issues a, is held issuing b until a's
// work is nearly done, then drains b before its SemIncr. The path's time on
// the engine is the work's: a for its work, b for the rest.
TEST(CriticalPath, AnEnginesTimeIsTheWorkItWasDoing) {
  std::vector<Event> events = {
      event("vector", 0, 1, {}, "a"),       // 0: issues a
      event("vector", 1, 10, {0}, "b"),     // 1: held issuing b while a's work runs
      event("vector", 10, 12, {1}, "incr"), // 2: drains b
  };
  std::vector<timing::Work> work(2);
  work[0].resource = work[1].resource = "vector";
  work[0].label = "a";
  work[0].index = 0;
  work[0].start = 1;
  work[0].end = 9;
  work[1].label = "b";
  work[1].index = 1;
  work[1].start = 9.5;
  work[1].end = 12;
  const CriticalPath p = timing::critical_path(events, work);
  expect_tiles(p, 12);
  EXPECT_THAT(labels_of(p), ::testing::ElementsAre("a", "a", "b", "b", "b"));
  std::map<std::string, double> by_label;
  for (const PathShare& s : p.by_label) by_label[s.label] = s.ns;
  EXPECT_DOUBLE_EQ(by_label["a"], 9);  // its issue, then its work
  EXPECT_DOUBLE_EQ(by_label["b"], 3);  // its issue once a was done, then its work
  EXPECT_EQ(by_label.count("incr"), 0u);
}

DeviceOptions tiny_options() {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  DeviceOptions o;
  o.config = "tiny";
  o.fidelity = arch::Fidelity::Tlm;
  o.no_data = true;
  return o;
}

// The engine (DMA queues as "dma") of each step, runs of one engine once.
std::vector<std::string> engines_along(const CriticalPath& p) {
  std::vector<std::string> out;
  for (const PathStep& s : p.steps) {
    const std::string e = s.resource.rfind("dma", 0) == 0 ? "dma" : s.resource;
    if (s.ns() > 0 && (out.empty() || out.back() != e)) out.push_back(e);
  }
  return out;
}

TEST(CriticalPath, RunsThroughALoadTheMultiplyTheEvacuationAndTheStore) {
  Device dev(tiny_options());
  const std::int64_t M = 8, K = 8, N = 64;
  Tensor a = dev.allocate("a", {M, K}, DType::Bf16);
  Tensor b = dev.allocate("b", {K, N}, DType::Bf16);
  Tensor c = dev.allocate("c", {M, N}, DType::Fp32);
  KernelBuilder kb(dev.config(), "matmul");
  const Tile at = kb.sbuf("aT", K, M, DType::Bf16), bt = kb.sbuf("b", K, N, DType::Bf16);
  const Tile acc = kb.psum("acc", M, N), out = kb.sbuf("out", M, N, DType::Fp32);
  kb.label("load");
  kb.dma(at, View{&a, 0, {K, M}, {1, K}});
  kb.dma(bt, b.all());
  kb.label("multiply");
  kb.matmul(acc, at, bt, false);
  kb.label("evacuate");
  kb.copy(out, acc);
  kb.label("store");
  kb.dma(c.all(), out);
  const RunReport r = dev.run(kb.build());
  ASSERT_TRUE(r.ok) << r.error;
  const CriticalPath& p = r.critical_path;
  expect_tiles(p, r.time_ns);
  // In that order, with nothing else between them but the sync engine's
  // doorbells before the loads and its last wait after the store.
  std::vector<std::string> along = engines_along(p);
  along.erase(std::remove(along.begin(), along.end(), "sync"), along.end());
  EXPECT_THAT(along, ::testing::ElementsAre("dma", "tensor", "vector", "dma")) << r.summary();
  std::vector<std::string> labels;
  for (const PathStep& s : p.steps)
    if (s.ns() > 0 && s.resource != "sync" && (labels.empty() || labels.back() != s.label)) labels.push_back(s.label);
  EXPECT_THAT(labels, ::testing::ElementsAre("load", "multiply", "evacuate", "store")) << r.summary();
  // Each engine hands over through a semaphore wait released by the step before.
  ASSERT_GE(p.waits.size(), 3u);
  EXPECT_THAT(r.summary(), ::testing::HasSubstr("critical path: "));
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j["critical_path"]["steps"].size(), p.steps.size());
  EXPECT_DOUBLE_EQ(j["critical_path"]["end_ns"].get<double>(), r.time_ns);
}

// Two chains that share nothing but the start and the end: the path takes
// the longer, whichever engine runs it.
class TwoChains : public ::testing::TestWithParam<bool> {};

TEST_P(TwoChains, ThePathTakesTheLongerChain) {
  const bool vector_long = GetParam();
  Device dev(tiny_options());
  Tensor x = dev.allocate("x", {8, 64}, DType::Fp32), y = dev.allocate("y", {8, 64}, DType::Fp32);
  Tensor xo = dev.allocate("xo", {8, 64}, DType::Fp32), yo = dev.allocate("yo", {8, 64}, DType::Fp32);
  KernelBuilder kb(dev.config(), "two chains");
  const Tile xt = kb.sbuf("x", 8, 64, DType::Fp32), yt = kb.sbuf("y", 8, 64, DType::Fp32);
  kb.label("vector chain");
  kb.dma(xt, x.all());
  for (int i = 0; i < (vector_long ? 16 : 1); ++i) kb.tensor_scalar(xt, xt, arch::AluOp::Add, 1.0f);
  kb.dma(xo.all(), xt);
  kb.label("scalar chain");
  kb.dma(yt, y.all());
  for (int i = 0; i < (vector_long ? 1 : 16); ++i) kb.activation(yt, yt, arch::ActFunc::Identity, 1.0f, 1.0f);
  kb.dma(yo.all(), yt);
  const RunReport r = dev.run(kb.build());
  ASSERT_TRUE(r.ok) << r.error;
  const CriticalPath& p = r.critical_path;
  expect_tiles(p, r.time_ns);
  const std::string long_engine = vector_long ? "vector" : "scalar", short_engine = vector_long ? "scalar" : "vector";
  double long_ns = 0;
  for (const PathStep& s : p.steps) {
    EXPECT_NE(s.resource, short_engine) << s.name << " is on the path\n" << r.summary();
    if (s.resource == long_engine) long_ns += s.ns();
  }
  EXPECT_GT(long_ns, 0.5 * r.time_ns) << r.summary();
}

INSTANTIATE_TEST_SUITE_P(Either, TwoChains, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "VectorLonger" : "ScalarLonger"; });

TEST(CriticalPath, AWaitReleasedLateIsOnThePathWithItsReleaser) {
  Device dev(tiny_options());
  Tensor big = dev.allocate("big", {8, 1024}, DType::Fp32), out = dev.allocate("out", {8, 64}, DType::Fp32);
  KernelBuilder kb(dev.config(), "late release");
  const Tile b = kb.sbuf("big", 8, 1024, DType::Fp32), t = kb.sbuf("t", 8, 64, DType::Fp32);
  kb.label("big load");
  kb.dma(b, big.all());
  kb.label("own work");
  kb.memset(t, 1);
  kb.tensor_scalar(t, t, arch::AluOp::Multiply, 2.0f);
  kb.label("combine");
  kb.tensor_tensor(t, t, b.columns(0, 64), arch::AluOp::Add);
  kb.label("store");
  kb.dma(out.all(), t);
  const RunReport r = dev.run(kb.build());
  ASSERT_TRUE(r.ok) << r.error;
  const CriticalPath& p = r.critical_path;
  expect_tiles(p, r.time_ns);
  const auto wait = std::find_if(p.waits.begin(), p.waits.end(), [](const PathWait& w) {
    return w.engine == "vector" && w.label == "combine";
  });
  ASSERT_NE(wait, p.waits.end()) << r.summary();
  EXPECT_THAT(wait->released_by, ::testing::StartsWith("dma "));
  EXPECT_EQ(wait->released_by_label, "big load");
  // The load is split over the DMA engines, and the vector engine waits for
  // each piece: the wait on the path is the one for the piece that landed
  // last, which the walk reaches from the load itself.
  EXPECT_GT(wait->end_ns - wait->start_ns, 0);
  const auto load = std::find_if(p.by_label.begin(), p.by_label.end(), [](const PathShare& s) {
    return s.engine == "dma" && s.label == "big load";
  });
  ASSERT_NE(load, p.by_label.end());
  EXPECT_GT(load->ns, 0.5 * r.time_ns) << r.summary();  // 32 KiB at 16 GB/s: ~2 us of ~5
  for (const PathStep& s : p.steps) EXPECT_NE(s.label, "own work") << s.resource << " " << s.name;
  EXPECT_THAT(r.summary(), ::testing::HasSubstr("critical path by label: dma 'big load'"));
}

}  // namespace
}  // namespace tessera
