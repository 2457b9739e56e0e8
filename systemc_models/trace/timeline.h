// A timeline of one run in the Chrome trace-event JSON format, which
// Perfetto's UI (ui.perfetto.dev) and chrome://tracing load: tracks grouped
// in rows (engines, DMA queues, memories), a slice per instruction or
// descriptor, counters, and flow arrows from a semaphore's signal to the
// wait it releases. Models record into it only when a run asks for a trace
// (CoreContext::timeline is null otherwise).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
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

  // A slice [start_ns, start_ns + dur_ns) on a track. Slices of one track
  // must nest or follow each other; the recorders keep them sequential.
  void slice(int track, double start_ns, double dur_ns, const std::string& name, const std::string& category,
             nlohmann::json args = nlohmann::json::object());
  // A sample of counter `name` (a track of its own in `group`).
  void counter(const std::string& group, const std::string& name, double t_ns, double value);
  // An arrow from a point of one track to a point of another.
  void flow(int from_track, double from_ns, int to_track, double to_ns, const std::string& name);

  // Semaphore traffic, turned into flow arrows by link_semaphores(): every
  // increment of semaphore `sem` (each by one), placed inside the slice that
  // produced it, and every wait that blocked until it reached `value`. The
  // format binds an arrow to the slice enclosing each end, so each end
  // should lie inside a slice.
  void signal(std::uint32_t sem, int track, double t_ns);
  void wait(std::uint32_t sem, std::uint32_t value, int track, double start_ns, double end_ns);
  // A point just inside the end of the slice [start_ns, end_ns].
  static double inside_end(double start_ns, double end_ns);
  // One arrow per blocked wait, from the increment that released it (the
  // value-th; increments are sorted by time first).
  void link_semaphores();

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

  // Sum of the durations of the slices of `category` on each track, by track name.
  std::map<std::string, double> total_ns(const std::string& category) const;

  nlohmann::json to_json() const;  // {"traceEvents": [...], "displayTimeUnit": "ns"}

private:
  struct Track {
    int pid, tid;
    std::string group, name;
  };
  struct Signal {
    double t;
    int track;
  };
  struct Wait {
    std::uint32_t value;
    int track;
    double at;  // inside the wait's slice
  };
  int group_id(const std::string& group);

  std::vector<std::string> groups_;
  std::vector<Track> tracks_;
  std::map<std::pair<std::string, std::string>, int> track_ids_;
  nlohmann::json events_ = nlohmann::json::array();
  std::map<std::pair<int, std::string>, double> totals_;  // (track, category) -> ns
  std::map<std::uint32_t, std::vector<Signal>> signals_;
  std::map<std::uint32_t, std::vector<Wait>> waits_;
  std::map<int, std::vector<std::pair<double, double>>> instructions_;  // track -> index -> (start, end)
  std::map<int, std::vector<std::string>> labels_;
  std::uint64_t next_flow_ = 1;
};

}  // namespace tessera::trace
