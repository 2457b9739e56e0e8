// Searching a kernel's tunable parameters (`tessera tune`): the space a
// kernel declares on one config and shape, and the strategies that walk it.
// The search only proposes points and reads back their times; how a point is
// checked (the builder's fits) and timed (a `tessera run` job, here or on
// Slurm) is the caller's Evaluator, so the strategies are tested without
// simulating anything.
#pragma once

#include "common/kernel.h"
#include "common/tuning_db.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::cli::tune {

// One tunable parameter's values in a search: its legal values up to the
// largest that still changes the program (TunableParam::useful_max), integers
// as powers of two plus that bound and the default (every value for a
// parameter searched_at_every_value), named choices all.
struct Dimension {
  std::string name;
  std::vector<std::string> values;  // ascending for integers, declaration order for choices
  std::string default_value;        // what a run gets when nobody sets it
};

// A point: a variant and a value of every parameter it reads.
struct Candidate {
  std::string variant;
  std::map<std::string, std::string> params;
  // "variant" or "variant:bm=2,bn=4" (parameters in name order): the cache key and job id.
  std::string key() const;
  bool operator==(const Candidate& o) const { return variant == o.variant && params == o.params; }
};

// The space of one variant: the product of its dimensions (one point when it
// reads no parameter).
struct Space {
  std::string variant;
  std::vector<Dimension> dims;
  // Points the descent walks from besides the default (seed_from_db): where
  // the search of another generation ended. Coordinate descent stops at the
  // first point no single parameter improves; parameters bound by one
  // resource (row blocks and output stages sharing SBUF) can hold it short of
  // a better point two moves away, which another generation may have found.
  std::vector<Candidate> seeds;
  std::size_t size() const;
};

// The spaces of `variants` (every variant of the kernel when empty) on a
// config and shape. Throws KernelError for an unknown variant.
std::vector<Space> spaces(const kernels::KernelSpec& spec, const arch::HwConfig& config, const kernels::Shape& shape,
                          const std::vector<std::string>& variants);

// Adds to each space, as seeds, the points the database stores for its
// variant at the bucket of `shape`: this config's own first (where its last
// search ended), then every other config's; each parameter at the stored
// value when that is a value of its dimension, else at the default. A seed
// equal to the default point or to another seed is not added.
void seed_from_db(std::vector<Space>& spaces, const kernels::TuningDb& db, const std::string& kernel,
                  const std::string& config, const kernels::Shape& shape);

// Narrows dimensions to the values a user names, one "NAME=V,V,..." each
// (an integer item may be a range LO..HI, every integer of it): to search a
// corner of a space whole, or a parameter at values its powers of two skip.
// Each value is checked as `tessera run --param` checks it; a dimension's
// default moves to the nearest named value. Throws KernelError naming the
// problem (no '=', a parameter no searched variant tunes, a name given
// twice, an illegal value, a range of more than 4,096 values).
void restrict_values(std::vector<Space>& spaces, const kernels::KernelSpec& spec,
                     const std::vector<std::string>& given);

// Every point of a space, the first dimension varying slowest.
std::vector<Candidate> points(const Space& space);
// The space's default point: every parameter at its default.
Candidate default_point(const Space& space);

// What became of a point.
struct Outcome {
  enum class Kind { Timed, Pruned, Failed } kind = Kind::Failed;
  double time_ns = 0;   // Timed
  std::string reason;   // Pruned: why it does not fit; Failed: the run's message
  nlohmann::json report = nlohmann::json::object();  // Timed (and Failed when the run left one)
};

// How a search checks and times points. `fits` is cheap and runs first, in
// the search (empty when the point fits, else why not); `run` times a batch
// of points that passed it (one round; they may run in parallel) and returns
// one outcome each, in order: Timed, Failed, or Pruned when the run refused
// the point before simulating it (the builder's rules). Only Timed and
// Failed count against the budget.
struct Evaluator {
  std::function<std::optional<std::string>(const Candidate&)> fits;
  std::function<std::vector<Outcome>(const std::vector<Candidate>&)> run;
  // Whether the search must stop now (an interrupt); unset: never.
  std::function<bool()> stop;
};

enum class Strategy {
  Exhaustive,  // every point of every space
  Descent,     // coordinate descent from each variant's default point (docs/tuning.md)
};
const char* to_string(Strategy s);

struct Limits {
  std::size_t budget = 0;    // timed runs at most; 0: no limit
  double time_s = 0;         // stop starting rounds after this long; 0: no limit
};

struct Evaluated {
  Candidate candidate;
  Outcome outcome;
  std::size_t round = 0;  // which batch it was in (0 first)
};

struct SearchResult {
  Strategy strategy = Strategy::Exhaustive;
  std::size_t space_size = 0;      // points of all the spaces searched
  std::size_t timed = 0;           // runs that simulated (pruned points cost none)
  std::size_t pruned = 0;
  std::size_t rounds = 0;
  bool stopped_early = false;      // the budget or time ran out before the strategy ended
  std::vector<Evaluated> evaluated;  // in the order they were proposed
  // The fastest timed point; nullptr when none ran.
  const Evaluated* best() const;
  // The `n` fastest timed points, fastest first.
  std::vector<const Evaluated*> top(std::size_t n) const;
};

// Searches the spaces. Exhaustive runs its points in rounds of `round_size`
// so that the limits are checked between them; Descent's rounds are its moves.
SearchResult search(const std::vector<Space>& spaces, Strategy strategy, const Limits& limits,
                    const Evaluator& evaluate, std::size_t round_size = 64);

}  // namespace tessera::cli::tune
