// Simulation statistics, gem5-style: every statistic has a hierarchical name
// following the model hierarchy, a unit and a description, and the run dumps
// them as `stats.txt`, one line each.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>

namespace tessera::trace {

// A counter a model adds to while it runs.
class Counter {
public:
  Counter& operator+=(double v) {
    value_ += v;
    return *this;
  }
  Counter& operator++() {
    value_ += 1;
    return *this;
  }
  double value() const { return value_; }
  void reset() { value_ = 0; }

private:
  double value_ = 0;
};

class Stats {
public:
  // Registers (or returns the existing) counter `name`. The reference stays
  // valid for the life of the Stats object.
  Counter& counter(const std::string& name, const std::string& unit, const std::string& description);

  // A statistic computed when dumped, from other statistics (a ratio, a rate).
  void formula(const std::string& name, const std::string& unit, const std::string& description,
               std::function<double()> compute);

  double value(const std::string& name) const;  // throws std::out_of_range
  bool has(const std::string& name) const { return entries_.count(name) != 0; }

  // "name value # description (unit)", sorted by name.
  void dump(std::ostream& os) const;
  nlohmann::json to_json() const;  // {name: value}

private:
  struct Entry {
    std::unique_ptr<Counter> counter;
    std::function<double()> compute;
    std::string unit;
    std::string description;
  };
  std::map<std::string, Entry> entries_;
};

}  // namespace tessera::trace
