#include "trace/stats.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tessera::trace {

Counter& Stats::counter(const std::string& name, const std::string& unit, const std::string& description) {
  auto& e = entries_[name];
  if (!e.counter) {
    e.counter = std::make_unique<Counter>();
    e.unit = unit;
    e.description = description;
  }
  return *e.counter;
}

void Stats::formula(const std::string& name, const std::string& unit, const std::string& description,
                    std::function<double()> compute) {
  auto& e = entries_[name];
  e.compute = std::move(compute);
  e.unit = unit;
  e.description = description;
}

double Stats::value(const std::string& name) const {
  const Entry& e = entries_.at(name);
  return e.compute ? e.compute() : e.counter->value();
}

void Stats::dump(std::ostream& os) const {
  for (const auto& [name, e] : entries_) {
    os << fmt::format("{:<52} {:>18.6g} # {} ({})\n", name, e.compute ? e.compute() : e.counter->value(),
                      e.description, e.unit);
  }
}

nlohmann::json Stats::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, e] : entries_) j[name] = e.compute ? e.compute() : e.counter->value();
  return j;
}

}  // namespace tessera::trace
