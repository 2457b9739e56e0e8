// Simulation statistics, gem5's way: each model owns a group of typed
// statistics (trace::Group, named after the model's place in the hierarchy,
// e.g. "core.tensor"), each statistic a member with a unit and a
// description; code reads a statistic through its member, never by name.
// Stats is the registry of one run: it knows every statistic by its full
// name ("core.tensor.macs"), rejects a name defined twice, and dumps them
// all as `stats.txt`, one line each.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sc_core {
class sc_object;
}

namespace tessera::trace {

class Stats;

// A statistic defined twice, or a statistic name no one defined.
class StatsError : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

// The statistics of one model. Its prefix is the hierarchical name of the
// SystemC object that owns it, or its parent group's prefix and a name of its
// own; its statistics are named `prefix.name`.
class Group {
public:
  Group(Stats& stats, const sc_core::sc_object& owner);
  Group(Group& parent, const std::string& name);
  // A group outside the model hierarchy (totals over several models).
  Group(Stats& stats, const char* prefix);
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  const std::string& prefix() const { return prefix_; }
  Stats& stats() const { return *stats_; }

private:
  Stats* stats_;
  std::string prefix_;
};

// One statistic, registered with its group's Stats for as long as it lives.
class Statistic {
public:
  Statistic(const Statistic&) = delete;
  Statistic& operator=(const Statistic&) = delete;

  const std::string& name() const { return name_; }  // the full name
  const std::string& unit() const { return unit_; }
  const std::string& description() const { return description_; }
  virtual double value() const = 0;

protected:
  // Throws StatsError when the full name is already defined.
  Statistic(Group& group, const std::string& name, std::string unit, std::string description);
  virtual ~Statistic();

private:
  Stats* stats_;
  std::string name_, unit_, description_;
};

// A value a model adds to as it runs.
class Scalar final : public Statistic {
public:
  Scalar(Group& group, const std::string& name, std::string unit, std::string description)
      : Statistic(group, name, std::move(unit), std::move(description)) {}

  Scalar& operator+=(double v) {
    value_ += v;
    return *this;
  }
  Scalar& operator++() {
    value_ += 1;
    return *this;
  }
  double value() const override { return value_; }
  void reset() { value_ = 0; }

private:
  double value_ = 0;
};

// A statistic computed when read, from others (a ratio, a rate).
class Formula final : public Statistic {
public:
  Formula(Group& group, const std::string& name, std::string unit, std::string description,
          std::function<double()> compute)
      : Statistic(group, name, std::move(unit), std::move(description)), compute_(std::move(compute)) {}

  double value() const override { return compute_(); }

private:
  std::function<double()> compute_;
};

// Every statistic of a run. It must outlive the models that define statistics in it.
class Stats {
public:
  Stats();
  ~Stats();
  Stats(const Stats&) = delete;
  Stats& operator=(const Stats&) = delete;

  // "name value # description (unit)", sorted by name.
  void dump(std::ostream& os) const;
  nlohmann::json to_json() const;  // {name: value}

  // A statistic by its full name, for tests and tools that name statistics
  // as stats.txt does; models and the driver read the members.
  double value(const std::string& name) const;  // throws StatsError naming it
  bool has(const std::string& name) const { return by_name_.count(name) != 0; }

private:
  friend class Statistic;
  void add(const Statistic& s);
  void remove(const Statistic& s);

  std::map<std::string, const Statistic*> by_name_;
};

}  // namespace tessera::trace
