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
  // "bp": "e" binds the arrow's head to the slice that encloses it (the work
  // held back), not the next slice to begin on that track.
  events_.push_back({{"ph", "f"}, {"bp", "e"}, {"name", name}, {"cat", "semaphore"}, {"id", id}, {"pid", b.pid},
                     {"tid", b.tid}, {"ts", us(to_ns)}});
}

void Timeline::signal(std::uint32_t sem, std::uint32_t delta, int track, double end_ns, double at_ns) {
  signals_[sem].push_back({delta, track, end_ns, at_ns});
}

void Timeline::wait(std::uint32_t sem, std::uint32_t value, int stall_track, int engine_track, std::uint64_t index,
                    double start_ns, double end_ns) {
  waits_[sem].push_back({value, stall_track, engine_track, index, start_ns, end_ns});
}

void Timeline::link_semaphores(const ConsumerOf& consumer_of) {
  for (auto& [sem, signals] : signals_) {
    std::stable_sort(signals.begin(), signals.end(), [](const Signal& a, const Signal& b) { return a.at < b.at; });
    const auto waits = waits_.find(sem);
    if (waits == waits_.end()) continue;
    // The semaphore's value after each increment: a wait for `value` was
    // released by the first increment that took it there.
    std::vector<std::uint64_t> value_after;
    std::uint64_t v = 0;
    for (const Signal& x : signals) value_after.push_back(v += x.delta);
    for (const Wait& w : waits->second) {
      const auto it = std::lower_bound(value_after.begin(), value_after.end(), std::uint64_t{w.value});
      if (w.value == 0 || it == value_after.end()) continue;
      const Signal& from = signals[static_cast<std::size_t>(it - value_after.begin())];
      if (from.track < 0) continue;  // an increment that announced no work
      const std::optional<Point> to = consumer_of ? consumer_of(w.engine_track, w.index) : std::nullopt;
      const std::string name = "sem " + std::to_string(sem);
      if (to) flow(from.track, from.end - inside(1.0), to->track, to->ns + inside(1.0), name);
      else flow(from.track, from.end - inside(1.0), w.stall_track, w.end - inside(w.end - w.start), name);
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

void Timeline::instruction_slice(int engine_track, std::uint64_t index, int slice_track, double start_ns) {
  first_slices_.emplace(std::make_pair(engine_track, index), Point{slice_track, start_ns});
}

std::optional<Timeline::Point> Timeline::instruction_slice(int engine_track, std::uint64_t index) const {
  const auto it = first_slices_.find({engine_track, index});
  if (it == first_slices_.end()) return std::nullopt;
  return it->second;
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
