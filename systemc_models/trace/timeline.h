// A timeline of one run in the Chrome trace-event JSON format, which
// Perfetto's UI (ui.perfetto.dev) and chrome://tracing load: tracks grouped
// in rows (engines, DMA queues, memories), a slice per instruction or
// descriptor, counters, and flow arrows from the work that released a
// semaphore wait to the work the wait held back. Models record into it only
// when a run asks for a trace (CoreContext::timeline is null otherwise).
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessera::trace {

class Timeline {
public:
  // The track `name` in the group `group` (a process row in the viewer);
  // the same names give the same track. Groups and tracks keep the order
  // they were first asked for.
  int track(const std::string& group, const std::string& name);
  const std::string& track_name(int track) const { return tracks_.at(static_cast<std::size_t>(track)).name; }

  // A slice [start_ns, start_ns + dur_ns) on a track. Slices of one track
  // must nest or follow each other; the recorders keep them sequential.
  void slice(int track, double start_ns, double dur_ns, const std::string& name, const std::string& category,
             nlohmann::json args = nlohmann::json::object());
  // A sample of counter `name` (a track of its own in `group`).
  void counter(const std::string& group, const std::string& name, double t_ns, double value);

  // Semaphore traffic, turned into flow arrows by link_semaphores(). An
  // increment of semaphore `sem` by `delta` landed at `at_ns`, announcing
  // the work of the slice on `track` that ended at `end_ns` (<= at_ns): the
  // arrow starts at that end.
  void signal(std::uint32_t sem, std::uint32_t delta, int track, double end_ns, double at_ns);
  // Instruction `index` of the engine whose instructions are on `engine_track`
  // blocked on `sem` >= `value` over [start_ns, end_ns], on `stall_track`.
  void wait(std::uint32_t sem, std::uint32_t value, int stall_track, int engine_track, std::uint64_t index,
            double start_ns, double end_ns);
  // Where the work a wait held back starts: a slice on some track starting at
  // or after the wait's end (the engine's next compute instruction, or the
  // descriptors its next DmaTrigger rang); nullopt when nothing follows.
  struct Point {
    int track;
    double ns;
  };
  using ConsumerOf = std::function<std::optional<Point>(int engine_track, std::uint64_t wait_index)>;
  // One arrow per blocked wait, from the end of the work whose increment
  // took the semaphore to the wait's value, to the start of the work the wait
  // held back (or the wait's own end when nothing follows it): never backwards.
  void link_semaphores(const ConsumerOf& consumer_of);

  // Labels of a track's instructions by index (KernelBuilder::label).
  void set_labels(int track, std::vector<std::string> labels) { labels_[track] = std::move(labels); }
  // The label of instruction `index`, or null when it has none.
  const std::string* label(int track, std::uint64_t index) const {
    const auto it = labels_.find(track);
    if (it == labels_.end() || index >= it->second.size() || it->second[index].empty()) return nullptr;
    return &it->second[index];
  }

  // When instruction `index` of a track ran, for profiles drawn after the
  // run (memory occupancy from the first and last use of each tile).
  void instruction(int track, std::uint64_t index, double start_ns, double end_ns);
  std::optional<std::pair<double, double>> instruction_time(int track, std::uint64_t index) const;
  // The first slice instruction `index` of the engine on `engine_track` drew
  // (on that track or one of its lanes): where the instruction's work began.
  void instruction_slice(int engine_track, std::uint64_t index, int slice_track, double start_ns);
  std::optional<Point> instruction_slice(int engine_track, std::uint64_t index) const;

  // Sum of the durations of the slices of `category` on each track, by track name.
  std::map<std::string, double> total_ns(const std::string& category) const;

  nlohmann::json to_json() const;  // {"traceEvents": [...], "displayTimeUnit": "ns"}

  // How far inside a slice an arrow's end is placed (the format binds each
  // end to the slice enclosing it): a picosecond, or half a shorter slice.
  static double inside(double dur_ns) { return std::min(0.001, dur_ns / 2); }

private:
  struct Track {
    int pid, tid;
    std::string group, name;
  };
  struct Signal {
    std::uint32_t delta;
    int track;
    double end, at;
  };
  struct Wait {
    std::uint32_t value;
    int stall_track, engine_track;
    std::uint64_t index;
    double start, end;
  };
  int group_id(const std::string& group);
  void flow(int from_track, double from_ns, int to_track, double to_ns, const std::string& name);

  std::vector<std::string> groups_;
  std::vector<Track> tracks_;
  std::map<std::pair<std::string, std::string>, int> track_ids_;
  nlohmann::json events_ = nlohmann::json::array();
  std::map<std::pair<int, std::string>, double> totals_;  // (track, category) -> ns
  std::map<std::uint32_t, std::vector<Signal>> signals_;
  std::map<std::uint32_t, std::vector<Wait>> waits_;
  std::map<int, std::vector<std::pair<double, double>>> instructions_;  // track -> index -> (start, end)
  std::map<std::pair<int, std::uint64_t>, Point> first_slices_;         // (engine track, index) -> slice start
  std::map<int, std::vector<std::string>> labels_;
  std::uint64_t next_flow_ = 1;
};

}  // namespace tessera::trace
