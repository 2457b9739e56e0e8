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

TEST(Timeline, AWaitIsLinkedToTheIncrementThatReachedItsValue) {
  Timeline t;
  const int dma = t.track("DMA queues", "dma 0.0");
  const int tensor = t.track("engines", "tensor");
  // Increments arrive out of time order; the second in time releases `>= 2`.
  t.signal(7, dma, 300);
  t.signal(7, dma, 100);
  t.wait(7, 2, tensor, 50, 320);
  t.wait(7, 3, tensor, 400, 500);  // never reached: no arrow
  t.wait(8, 1, tensor, 0, 10);     // no increments of semaphore 8
  t.link_semaphores();
  const auto starts = events(t, "s"), ends = events(t, "f");
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_DOUBLE_EQ(starts[0]["ts"].get<double>(), 0.3);
  EXPECT_EQ(starts[0]["name"], "sem 7");
  // The head sits just inside the end of the wait's slice.
  EXPECT_DOUBLE_EQ(ends[0]["ts"].get<double>(), Timeline::inside_end(50, 320) / 1000);
  EXPECT_DOUBLE_EQ(Timeline::inside_end(50, 320), 319.5);
  EXPECT_DOUBLE_EQ(Timeline::inside_end(10, 10.4), 10.2);
  EXPECT_EQ(starts[0]["id"], ends[0]["id"]);
  EXPECT_EQ(ends[0]["bp"], "e");
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
