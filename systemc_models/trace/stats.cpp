#include "trace/stats.h"

#include <fmt/format.h>
#include <systemc>

namespace tessera::trace {

Group::Group(Stats& stats, const sc_core::sc_object& owner) : stats_(&stats), prefix_(owner.name()) {}

Group::Group(Group& parent, const std::string& name)
    : stats_(parent.stats_), prefix_(parent.prefix_.empty() ? name : parent.prefix_ + "." + name) {}

Group::Group(Stats& stats, const char* prefix) : stats_(&stats), prefix_(prefix) {}

Statistic::Statistic(Group& group, const std::string& name, std::string unit, std::string description)
    : stats_(&group.stats()),
      name_(group.prefix().empty() ? name : group.prefix() + "." + name),
      unit_(std::move(unit)),
      description_(std::move(description)) {
  stats_->add(*this);
}

Statistic::~Statistic() { stats_->remove(*this); }

Stats::Stats() = default;
Stats::~Stats() = default;

void Stats::add(const Statistic& s) {
  if (!by_name_.emplace(s.name(), &s).second)
    throw StatsError(fmt::format("statistic '{}' is defined twice; each statistic needs a name of its own", s.name()));
}

void Stats::remove(const Statistic& s) {
  const auto it = by_name_.find(s.name());
  if (it != by_name_.end() && it->second == &s) by_name_.erase(it);
}

double Stats::value(const std::string& name) const {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) throw StatsError(fmt::format("no statistic '{}'", name));
  return it->second->value();
}

void Stats::dump(std::ostream& os) const {
  for (const auto& [name, s] : by_name_)
    os << fmt::format("{:<52} {:>18.6g} # {} ({})\n", name, s->value(), s->description(), s->unit());
}

nlohmann::json Stats::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, s] : by_name_) j[name] = s->value();
  return j;
}

}  // namespace tessera::trace
