#include "tune.h"

#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <chrono>
#include <set>

namespace tessera::cli::tune {
namespace {

using kernels::KernelSpec;
using kernels::Params;
using kernels::TunableParam;

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find(',', start)) != std::string::npos; start = end + 1)
    out.push_back(text.substr(start, end - start));
  out.push_back(text.substr(start));
  return out;
}

std::optional<std::int64_t> to_integer(const std::string& text) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

Dimension dimension(const TunableParam& p, const kernels::ParamContext& ctx, const kernels::ParamValue& def) {
  Dimension d;
  d.name = p.name;
  d.default_value = kernels::to_string(def);
  if (p.is_choice()) {
    d.values = p.choices;
    return d;
  }
  const std::int64_t top = std::clamp<std::int64_t>(p.useful_max ? p.useful_max(ctx) : p.max, p.min, p.max);
  // Powers of two cover a block size's range in log steps; the bound itself
  // (a block of every tile) and the default are kept when they fall between.
  std::set<std::int64_t> values;
  if (p.every_value)
    for (std::int64_t v = p.min; v <= top; ++v) values.insert(v);
  for (std::int64_t v = 1; v <= top; v *= 2)
    if (v >= p.min) values.insert(v);
  values.insert(p.min);
  values.insert(top);
  if (const auto* i = std::get_if<std::int64_t>(&def)) {
    // A default past the useful bound builds the same program as the bound.
    const std::int64_t v = std::clamp(*i, p.min, top);
    values.insert(v);
    d.default_value = std::to_string(v);
  }
  for (std::int64_t v : values) d.values.push_back(std::to_string(v));
  return d;
}

using Clock = std::chrono::steady_clock;

// The bookkeeping every strategy shares: a cache of every point seen, the
// budget, and the order points were proposed in.
class Search {
public:
  Search(const Limits& limits, const Evaluator& evaluate)
      : limits_(limits), evaluate_(evaluate), start_(Clock::now()) {}

  // Whether another round may start.
  bool may_continue() {
    if (evaluate_.stop && evaluate_.stop()) return stop();
    if (limits_.budget && result_.timed >= limits_.budget) return stop();
    if (limits_.time_s > 0 && std::chrono::duration<double>(Clock::now() - start_).count() >= limits_.time_s)
      return stop();
    return true;
  }

  // Checks and times the points of `batch` not seen before (as many as the
  // budget allows) as one round.
  void evaluate(const std::vector<Candidate>& batch) {
    std::vector<Candidate> to_run;
    std::set<std::string> proposed;
    for (const Candidate& c : batch) {
      const std::string key = c.key();
      if (index_.count(key) || !proposed.insert(key).second) continue;
      if (auto why = evaluate_.fits(c)) {
        Outcome o;
        o.kind = Outcome::Kind::Pruned;
        o.reason = *why;
        record(c, o);
        ++result_.pruned;
        continue;
      }
      if (limits_.budget && result_.timed + to_run.size() >= limits_.budget) {
        stop();
        break;
      }
      to_run.push_back(c);
    }
    if (to_run.empty()) return;
    const std::vector<Outcome> outcomes = evaluate_.run(to_run);
    for (std::size_t i = 0; i < to_run.size(); ++i) {
      Outcome o = i < outcomes.size() ? outcomes[i] : Outcome{};
      if (i >= outcomes.size()) o.reason = "no outcome returned";
      // A run refused by the builder's rules before simulating is pruned too.
      if (o.kind == Outcome::Kind::Pruned)
        ++result_.pruned;
      else
        ++result_.timed;
      record(to_run[i], o);
    }
    ++result_.rounds;
  }

  // The time of a point seen before; nullopt when it was pruned, failed or not seen.
  std::optional<double> time(const Candidate& c) const {
    const auto it = index_.find(c.key());
    if (it == index_.end()) return std::nullopt;
    const Outcome& o = result_.evaluated[it->second].outcome;
    if (o.kind != Outcome::Kind::Timed) return std::nullopt;
    return o.time_ns;
  }

  SearchResult& result() { return result_; }

private:
  bool stop() {
    result_.stopped_early = true;
    return false;
  }
  void record(const Candidate& c, Outcome o) {
    index_[c.key()] = result_.evaluated.size();
    result_.evaluated.push_back({c, std::move(o), result_.rounds});
  }

  Limits limits_;
  const Evaluator& evaluate_;
  Clock::time_point start_;
  SearchResult result_;
  std::map<std::string, std::size_t> index_;
};

void exhaustive(Search& s, const std::vector<Space>& spaces, std::size_t round_size) {
  std::vector<Candidate> all;
  for (const Space& sp : spaces)
    for (Candidate& c : points(sp)) all.push_back(std::move(c));
  for (std::size_t i = 0; i < all.size(); i += round_size) {
    if (!s.may_continue()) return;
    s.evaluate(std::vector<Candidate>(all.begin() + static_cast<std::ptrdiff_t>(i),
                                      all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), i + round_size))));
  }
}

// Coordinate descent, every variant at once: from its default point (and
// from each of its space's seeds, as walks of their own), a round
// times every value of one parameter with the others held at the variant's
// best point so far (the whole line at once, so a round fills the runners),
// and moves to the line's fastest point. Parameters are taken in turn; a
// variant has converged when a full turn of lines moved it nowhere. A default
// that does not fit starts from the first fitting point of its lines.
void descent(Search& s, const std::vector<Space>& spaces) {
  struct Walk {
    const Space* space;
    Candidate at;
    std::optional<double> time;
    std::size_t dim = 0, still = 0;  // next dimension; lines in a row that did not move
    bool done = false;
  };
  std::vector<Walk> walks;
  std::vector<Candidate> starts;
  for (const Space& sp : spaces) {
    walks.push_back({&sp, default_point(sp), std::nullopt});
    starts.push_back(walks.back().at);
    for (const Candidate& seed : sp.seeds) {
      walks.push_back({&sp, seed, std::nullopt});
      starts.push_back(seed);
    }
  }
  if (!s.may_continue()) return;
  s.evaluate(starts);
  for (Walk& w : walks) {
    w.time = s.time(w.at);
    w.done = w.space->dims.empty();
  }
  while (std::any_of(walks.begin(), walks.end(), [](const Walk& w) { return !w.done; })) {
    if (!s.may_continue()) return;
    std::vector<Candidate> batch;
    for (const Walk& w : walks) {
      if (w.done) continue;
      const Dimension& d = w.space->dims[w.dim];
      for (const std::string& v : d.values) {
        Candidate c = w.at;
        c.params[d.name] = v;
        batch.push_back(std::move(c));
      }
    }
    s.evaluate(batch);
    for (Walk& w : walks) {
      if (w.done) continue;
      const Dimension& d = w.space->dims[w.dim];
      bool moved = false;
      for (const std::string& v : d.values) {
        Candidate c = w.at;
        c.params[d.name] = v;
        const auto t = s.time(c);
        if (t && (!w.time || *t < *w.time)) {
          w.at = c;
          w.time = t;
          moved = true;
        }
      }
      w.still = moved ? 0 : w.still + 1;
      w.dim = (w.dim + 1) % w.space->dims.size();
      // Converged: no line of a full turn moved it.
      w.done = w.still >= w.space->dims.size();
    }
  }
}

}  // namespace

std::size_t Space::size() const {
  std::size_t n = 1;
  for (const auto& d : dims) n *= d.values.size();
  return n;
}

std::string Candidate::key() const {
  std::string text;
  for (const auto& [k, v] : params) text += fmt::format("{}{}={}", text.empty() ? "" : ",", k, v);
  return text.empty() ? variant : variant + ":" + text;
}

std::vector<Space> spaces(const KernelSpec& spec, const arch::HwConfig& config, const kernels::Shape& shape,
                          const std::vector<std::string>& variants) {
  std::vector<std::string> names = variants.empty() ? spec.variant_names() : variants;
  std::vector<Space> out;
  for (const std::string& name : names) {
    const std::string variant = spec.variant(name).name;  // throws, naming the variants, on a wrong name
    // The kernel's own defaults: the database's points enter as seeds (seed_from_db).
    const Params defaults = kernels::derived_params(spec, variant, config, shape, Params{});
    const Params none;
    const kernels::ParamContext ctx{config, shape, variant, none};
    Space sp;
    sp.variant = variant;
    for (const TunableParam& p : spec.params) {
      if (!p.applies_to(variant) || p.numerics) continue;
      const kernels::ParamValue* def = defaults.find(p.name);
      sp.dims.push_back(dimension(p, ctx, def ? *def : p.default_value));
    }
    out.push_back(std::move(sp));
  }
  return out;
}

std::vector<Candidate> points(const Space& space) {
  std::vector<Candidate> out;
  std::vector<std::size_t> at(space.dims.size(), 0);
  for (std::size_t n = 0; n < space.size(); ++n) {
    Candidate c;
    c.variant = space.variant;
    for (std::size_t d = 0; d < space.dims.size(); ++d) c.params[space.dims[d].name] = space.dims[d].values[at[d]];
    out.push_back(std::move(c));
    // The last dimension varies fastest.
    for (std::size_t d = space.dims.size(); d-- > 0;) {
      if (++at[d] < space.dims[d].values.size()) break;
      at[d] = 0;
    }
  }
  return out;
}

void restrict_values(std::vector<Space>& spaces, const KernelSpec& spec, const std::vector<std::string>& given) {
  constexpr std::int64_t kMaxRange = 4096;
  std::set<std::string> seen;
  for (const std::string& item : given) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw KernelError(fmt::format("--values '{}': expected NAME=V1,V2,... (an integer item may be LO..HI)", item));
    const std::string name = item.substr(0, eq);
    if (!seen.insert(name).second) throw KernelError(fmt::format("--values: '{}' is given twice", name));
    const TunableParam* p = spec.param(name);
    if (p && p->numerics)
      throw KernelError(fmt::format("--values {}: parameter '{}' changes what kernel '{}' computes, so it is not "
                                    "searched (set it with --param on tessera run)",
                                    item, name, spec.name));
    // Expand ranges; every value is then checked as --param would check it.
    std::vector<std::string> texts;
    for (const std::string& v : split_commas(item.substr(eq + 1))) {
      const std::size_t dots = v.find("..");
      if (dots == std::string::npos) {
        texts.push_back(v);
        continue;
      }
      const auto lo = to_integer(v.substr(0, dots)), hi = to_integer(v.substr(dots + 2));
      if (!lo || !hi || *lo > *hi)
        throw KernelError(fmt::format("--values {}: '{}' is not a range LO..HI of integers with LO <= HI", item, v));
      if (*hi - *lo >= kMaxRange)
        throw KernelError(fmt::format("--values {}: the range '{}' holds more than {} values", item, v, kMaxRange));
      for (std::int64_t x = *lo; x <= *hi; ++x) texts.push_back(std::to_string(x));
    }
    bool used = false;
    for (Space& sp : spaces) {
      const auto d = std::find_if(sp.dims.begin(), sp.dims.end(), [&](const Dimension& x) { return x.name == name; });
      if (d == sp.dims.end()) continue;
      used = true;
      std::vector<std::string> values;
      std::set<std::int64_t> integers;
      for (const std::string& t : texts) {
        const Params checked = kernels::check_params(spec, sp.variant, {{name, t}});
        if (const auto* i = std::get_if<std::int64_t>(checked.find(name)))
          integers.insert(*i);
        else if (std::find(values.begin(), values.end(), t) == values.end())
          values.push_back(t);
      }
      if (!integers.empty()) {
        // Ascending, as an integer dimension's values are; the default moves
        // to the nearest value (the lower on a tie).
        const auto def = to_integer(d->default_value);
        std::int64_t nearest = *integers.begin();
        for (std::int64_t v : integers) {
          values.push_back(std::to_string(v));
          if (def && std::abs(v - *def) < std::abs(nearest - *def)) nearest = v;
        }
        d->default_value = std::to_string(nearest);
      } else {
        // Choices keep their declaration order.
        std::vector<std::string> ordered;
        for (const std::string& c : d->values)
          if (std::find(values.begin(), values.end(), c) != values.end()) ordered.push_back(c);
        if (std::find(ordered.begin(), ordered.end(), d->default_value) == ordered.end())
          d->default_value = ordered.front();
        values = std::move(ordered);
      }
      d->values = std::move(values);
    }
    if (!used) {
      if (!p) kernels::check_params(spec, spaces.empty() ? spec.variant_names().front() : spaces.front().variant,
                                    {{name, texts.front()}});  // names the kernel's parameters
      throw KernelError(fmt::format("--values {}: no searched variant of kernel '{}' reads parameter '{}'", item,
                                    spec.name, name));
    }
  }
}

void seed_from_db(std::vector<Space>& spaces, const kernels::TuningDb& db, const std::string& kernel,
                  const std::string& config, const kernels::Shape& shape) {
  const std::string bucket = kernels::shape_bucket(shape);
  for (Space& sp : spaces) {
    const auto add = [&](const kernels::TuningEntry& e) {
      Candidate c = default_point(sp);
      for (const Dimension& d : sp.dims) {
        const auto it = e.params.find(d.name);
        if (it != e.params.end() && std::find(d.values.begin(), d.values.end(), it->second) != d.values.end())
          c.params[d.name] = it->second;
      }
      if (c == default_point(sp) || std::find(sp.seeds.begin(), sp.seeds.end(), c) != sp.seeds.end()) return;
      sp.seeds.push_back(std::move(c));
    };
    const auto matches = [&](const kernels::TuningEntry& e) {
      return e.kernel == kernel && e.variant == sp.variant && e.bucket == bucket;
    };
    // This config's own entry first: a retune starts where the last search
    // ended, so it does not store a worse point on an unchanged model.
    for (const kernels::TuningEntry& e : db.entries())
      if (matches(e) && e.config == config) add(e);
    for (const kernels::TuningEntry& e : db.entries())
      if (matches(e) && e.config != config) add(e);
  }
}

Candidate default_point(const Space& space) {
  Candidate c;
  c.variant = space.variant;
  for (const auto& d : space.dims) c.params[d.name] = d.default_value;
  return c;
}

const char* to_string(Strategy s) { return s == Strategy::Exhaustive ? "exhaustive" : "descent"; }

const Evaluated* SearchResult::best() const {
  const auto t = top(1);
  return t.empty() ? nullptr : t.front();
}

std::vector<const Evaluated*> SearchResult::top(std::size_t n) const {
  std::vector<const Evaluated*> timed;
  for (const auto& e : evaluated)
    if (e.outcome.kind == Outcome::Kind::Timed) timed.push_back(&e);
  // Ties keep the order they were proposed in, so the result is reproducible.
  std::stable_sort(timed.begin(), timed.end(),
                   [](const Evaluated* a, const Evaluated* b) { return a->outcome.time_ns < b->outcome.time_ns; });
  if (timed.size() > n) timed.resize(n);
  return timed;
}

SearchResult search(const std::vector<Space>& spaces, Strategy strategy, const Limits& limits,
                    const Evaluator& evaluate, std::size_t round_size) {
  Search s(limits, evaluate);
  s.result().strategy = strategy;
  for (const Space& sp : spaces) s.result().space_size += sp.size();
  if (strategy == Strategy::Exhaustive)
    exhaustive(s, spaces, std::max<std::size_t>(round_size, 1));
  else
    descent(s, spaces);
  return std::move(s.result());
}

}  // namespace tessera::cli::tune
