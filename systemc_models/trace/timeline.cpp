#include "trace/timeline.h"

#include <algorithm>

namespace tessera::trace {
namespace {

// The format counts in microseconds; a double keeps picoseconds at run lengths we simulate.
double us(double ns) { return ns / 1000.0; }

}  // namespace

int Timeline::group_id(const std::string& group) {
  const auto it = std::find(groups_.begin(), groups_.end(), group);
  if (it != groups_.end()) return static_cast<int>(it - groups_.begin()) + 1;
  groups_.push_back(group);
  const int pid = static_cast<int>(groups_.size());
  events_.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", group}}}});
  events_.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", pid}}}});
  return pid;
}

int Timeline::track(const std::string& group, const std::string& name) {
  const auto key = std::make_pair(group, name);
  const auto found = track_ids_.find(key);
  if (found != track_ids_.end()) return found->second;
  const int pid = group_id(group);
  const int id = static_cast<int>(tracks_.size());
  const int tid = id + 1;
  tracks_.push_back({pid, tid, group, name});
  track_ids_[key] = id;
  events_.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
  events_.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
  return id;
}

void Timeline::slice(int track, double start_ns, double dur_ns, const std::string& name, const std::string& category,
                     nlohmann::json args) {
  const Track& t = tracks_.at(static_cast<std::size_t>(track));
  events_.push_back({{"ph", "X"}, {"name", name}, {"cat", category}, {"pid", t.pid}, {"tid", t.tid},
                     {"ts", us(start_ns)}, {"dur", us(dur_ns)}, {"args", std::move(args)}});
  totals_[{track, category}] += dur_ns;
}

void Timeline::counter(const std::string& group, const std::string& name, double t_ns, double value) {
  events_.push_back({{"ph", "C"}, {"name", name}, {"pid", group_id(group)}, {"ts", us(t_ns)}, {"args", {{"value", value}}}});
}

void Timeline::flow(int from_track, double from_ns, int to_track, double to_ns, const std::string& name) {
  const Track& a = tracks_.at(static_cast<std::size_t>(from_track));
  const Track& b = tracks_.at(static_cast<std::size_t>(to_track));
  const std::uint64_t id = next_flow_++;
  events_.push_back({{"ph", "s"}, {"name", name}, {"cat", "semaphore"}, {"id", id}, {"pid", a.pid}, {"tid", a.tid},
                     {"ts", us(from_ns)}});
  // "bp": "e" binds the arrow's head to the slice that encloses it (the wait), not the next one.
  events_.push_back({{"ph", "f"}, {"bp", "e"}, {"name", name}, {"cat", "semaphore"}, {"id", id}, {"pid", b.pid},
                     {"tid", b.tid}, {"ts", us(to_ns)}});
}

void Timeline::signal(std::uint32_t sem, int track, double t_ns) { signals_[sem].push_back({t_ns, track}); }

double Timeline::inside_end(double start_ns, double end_ns) {
  return end_ns - std::min(0.5, (end_ns - start_ns) / 2);
}

void Timeline::wait(std::uint32_t sem, std::uint32_t value, int track, double start_ns, double end_ns) {
  waits_[sem].push_back({value, track, inside_end(start_ns, end_ns)});
}

void Timeline::link_semaphores() {
  for (auto& [sem, signals] : signals_)
    std::stable_sort(signals.begin(), signals.end(), [](const Signal& a, const Signal& b) { return a.t < b.t; });
  for (const auto& [sem, waits] : waits_) {
    const auto it = signals_.find(sem);
    if (it == signals_.end()) continue;
    for (const Wait& w : waits) {
      if (w.value == 0 || w.value > it->second.size()) continue;
      const Signal& s = it->second[w.value - 1];
      flow(s.track, s.t, w.track, w.at, "sem " + std::to_string(sem));
    }
  }
  signals_.clear();
  waits_.clear();
}

void Timeline::instruction(int track, std::uint64_t index, double start_ns, double end_ns) {
  auto& v = instructions_[track];
  if (v.size() <= index) v.resize(index + 1, {-1.0, -1.0});
  v[index] = {start_ns, std::max(end_ns, v[index].second)};
}

std::optional<std::pair<double, double>> Timeline::instruction_time(int track, std::uint64_t index) const {
  const auto it = instructions_.find(track);
  if (it == instructions_.end() || index >= it->second.size() || it->second[index].first < 0) return std::nullopt;
  return it->second[index];
}

std::map<std::string, double> Timeline::total_ns(const std::string& category) const {
  std::map<std::string, double> out;
  for (const auto& [key, ns] : totals_)
    if (key.second == category) out[tracks_.at(static_cast<std::size_t>(key.first)).name] += ns;
  return out;
}

nlohmann::json Timeline::to_json() const {
  return {{"traceEvents", events_}, {"displayTimeUnit", "ns"}};
}

}  // namespace tessera::trace
