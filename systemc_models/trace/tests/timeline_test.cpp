// The run timeline: tracks, slices and their totals, counters, and the
// arrows from a semaphore increment to the wait it released, in the Chrome
// trace-event format Perfetto reads.
#include "trace/timeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::trace {
namespace {

std::vector<nlohmann::json> events(const Timeline& t, const std::string& phase) {
  std::vector<nlohmann::json> out;
  const nlohmann::json trace = t.to_json();
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == phase) out.push_back(e);
  return out;
}

TEST(Timeline, TracksAreNamedOnceAndKeepTheOrderTheyWereAskedFor) {
  Timeline t;
  const int tensor = t.track("engines", "tensor");
  const int queue = t.track("DMA queues", "dma 0.0");
  const int vector = t.track("engines", "vector");
  EXPECT_EQ(t.track("engines", "tensor"), tensor);
  EXPECT_NE(tensor, vector);
  std::vector<std::pair<std::string, int>> names;  // (track name, pid)
  for (const auto& e : events(t, "M"))
    if (e["name"] == "thread_name") names.emplace_back(e["args"]["name"], e["pid"]);
  EXPECT_THAT(names, ::testing::ElementsAre(std::make_pair("tensor", 1), std::make_pair("dma 0.0", 2),
                                            std::make_pair("vector", 1)));
  (void)queue;
}

TEST(Timeline, SlicesAreInMicrosecondsAndAddUpPerTrackAndCategory) {
  Timeline t;
  const int tensor = t.track("engines", "tensor");
  const int vector = t.track("engines", "vector");
  t.slice(tensor, 1000, 250, "MultiplyMoving", "instruction", {{"index", 3}});
  t.slice(tensor, 1250, 50, "LoadStationary", "instruction");
  t.slice(vector, 0, 40, "wait sem 1 >= 1", "semaphore");
  const auto slices = events(t, "X");
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0]["name"], "MultiplyMoving");
  EXPECT_DOUBLE_EQ(slices[0]["ts"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(slices[0]["dur"].get<double>(), 0.25);
  EXPECT_EQ(slices[0]["args"]["index"], 3);
  EXPECT_EQ(t.total_ns("instruction"), (std::map<std::string, double>{{"tensor", 300}}));
  EXPECT_EQ(t.total_ns("semaphore"), (std::map<std::string, double>{{"vector", 40}}));
  EXPECT_EQ(t.to_json()["displayTimeUnit"], "ns");
}

TEST(Timeline, AWaitIsLinkedFromTheWorkThatReachedItsValueToTheWorkItHeldBack) {
  Timeline t;
  const int dma = t.track("DMA queues", "dma 0.0");
  const int tensor = t.track("engines", "tensor");
  const int stalls = t.track("engines", "tensor stalls");
  // Increments arrive out of time order; with deltas 1 then 2, the one at
  // 300 takes the semaphore from 1 to 3 and so releases `>= 2`.
  t.signal(7, 2, dma, 290, 300);
  t.signal(7, 1, dma, 95, 100);
  t.wait(7, 2, stalls, tensor, 4, 50, 320);
  t.wait(7, 4, stalls, tensor, 6, 400, 500);  // never reached: no arrow
  t.wait(8, 1, stalls, tensor, 8, 0, 10);     // no increments of semaphore 8
  t.wait(7, 1, stalls, tensor, 1, 20, 100);   // nothing follows it: the arrow ends in the wait
  t.link_semaphores([&](int engine_track, std::uint64_t index) -> std::optional<Timeline::Point> {
    EXPECT_EQ(engine_track, tensor);
    if (index == 4) return Timeline::Point{tensor, 320};  // the instruction after the wait
    return std::nullopt;
  });
  const auto starts = events(t, "s"), ends = events(t, "f");
  ASSERT_EQ(starts.size(), 2u);
  ASSERT_EQ(ends.size(), 2u);
  // From just inside the end of the producer's slice...
  EXPECT_DOUBLE_EQ(starts[0]["ts"].get<double>(), (290 - Timeline::inside(1.0)) / 1000);
  EXPECT_EQ(starts[0]["name"], "sem 7");
  EXPECT_EQ(starts[0]["tid"], 1);  // dma 0.0 is the DMA group's first track
  // ... to just inside the start of the work held back, never before the start.
  EXPECT_DOUBLE_EQ(ends[0]["ts"].get<double>(), (320 + Timeline::inside(1.0)) / 1000);
  EXPECT_EQ(starts[0]["id"], ends[0]["id"]);
  EXPECT_EQ(ends[0]["bp"], "e");
  EXPECT_DOUBLE_EQ(starts[1]["ts"].get<double>(), (95 - Timeline::inside(1.0)) / 1000);
  EXPECT_DOUBLE_EQ(ends[1]["ts"].get<double>(), (100 - Timeline::inside(80)) / 1000);
  for (std::size_t i = 0; i < starts.size(); ++i)
    EXPECT_LT(starts[i]["ts"].get<double>(), ends[i]["ts"].get<double>());
  EXPECT_DOUBLE_EQ(Timeline::inside(1.0), 0.001);
  EXPECT_DOUBLE_EQ(Timeline::inside(0.0008), 0.0004);
}

TEST(Timeline, AnIncrementThatAnnouncedNoWorkDrawsNoArrow) {
  Timeline t;
  const int tensor = t.track("engines", "tensor");
  const int stalls = t.track("engines", "vector stalls");
  t.signal(1, 1, -1, 0, 5);  // a SemIncr before the engine's first slice
  t.wait(1, 1, stalls, tensor, 0, 0, 5);
  t.link_semaphores(nullptr);
  EXPECT_TRUE(events(t, "s").empty());
}

TEST(Timeline, TheFirstSliceOfAnInstructionIsKept) {
  Timeline t;
  const int tensor = t.track("engines", "tensor");
  const int weights = t.track("engines", "tensor weights");
  t.instruction_slice(tensor, 3, weights, 40);
  t.instruction_slice(tensor, 3, tensor, 90);  // a later slice of the same instruction
  ASSERT_TRUE(t.instruction_slice(tensor, 3).has_value());
  EXPECT_EQ(t.instruction_slice(tensor, 3)->track, weights);
  EXPECT_DOUBLE_EQ(t.instruction_slice(tensor, 3)->ns, 40);
  EXPECT_FALSE(t.instruction_slice(tensor, 4).has_value());
}

TEST(Timeline, InstructionTimesAndLabelsAreKeptByIndex) {
  Timeline t;
  const int vector = t.track("engines", "vector");
  t.instruction(vector, 2, 10, 20);
  t.instruction(vector, 2, 10, 15);  // a later, shorter report does not shorten it
  EXPECT_EQ(t.instruction_time(vector, 2), (std::pair<double, double>(10, 20)));
  EXPECT_EQ(t.instruction_time(vector, 1), std::nullopt);
  EXPECT_EQ(t.instruction_time(vector, 9), std::nullopt);
  t.set_labels(vector, {"", "k=1", ""});
  EXPECT_EQ(t.label(vector, 0), nullptr);
  ASSERT_NE(t.label(vector, 1), nullptr);
  EXPECT_EQ(*t.label(vector, 1), "k=1");
  EXPECT_EQ(t.label(vector, 5), nullptr);
}

TEST(Timeline, CountersAreSamplesOfTheirGroup) {
  Timeline t;
  t.counter("memory", "HBM bandwidth (GB/s)", 64, 12.5);
  const auto counters = events(t, "C");
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0]["name"], "HBM bandwidth (GB/s)");
  EXPECT_DOUBLE_EQ(counters[0]["ts"].get<double>(), 0.064);
  EXPECT_EQ(counters[0]["args"]["value"], 12.5);
}

}  // namespace
}  // namespace tessera::trace
