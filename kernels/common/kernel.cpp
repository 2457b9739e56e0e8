#include "common/kernel.h"

#include "common/bounds.h"
#include "common/tuning_db.h"

#include "tessera/kernel_builder.h"

#include "arch/spelling.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace tessera::kernels {
namespace {

// Never destroyed: a Python kernel's spec holds Python objects, which must
// not be released after the interpreter has gone at exit.
struct Registry {
  std::vector<KernelSpec> specs;  // sorted by name
  std::vector<std::string> errors;  // invalid registrations, reported by registry()
  std::string origin;  // where registrations come from right now ("" the library, else a plugin)
  std::vector<std::string> plugins;
  bool env_loaded = false;
};

Registry& the_registry() {
  static Registry* r = new Registry;
  return *r;
}

std::string origin_text(const std::string& origin) { return origin.empty() ? "the kernel library" : origin; }

// "; did you mean 'x'?" when one of `names` is a likely typo of `name`.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& names) {
  const auto best = arch::closest_spelling(name, names, 2);
  return best ? fmt::format("; did you mean '{}'?", *best) : std::string();
}

std::vector<std::pair<std::string, std::string>> split_assignments(const std::string& text, const char* option) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw KernelError(fmt::format("{}: '{}' is not NAME=VALUE", option, item));
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    start = end + 1;
  }
  return out;
}

std::optional<std::int64_t> parse_integer(const std::string& text) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used != text.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<std::string> names_of(const std::vector<TunableParam>& params) {
  std::vector<std::string> n;
  for (const auto& p : params) n.push_back(p.name);
  return n;
}

// Why a spec cannot be registered, or empty.
std::string invalid_spec(const KernelSpec& s) {
  if (s.name.empty()) return "a kernel without a name";
  if (s.variants.empty()) return fmt::format("kernel '{}' has no variants", s.name);
  if (!s.make) return fmt::format("kernel '{}' has no make function", s.name);
  std::vector<std::string> seen;
  for (const auto& v : s.variants) {
    if (v.name.empty()) return fmt::format("kernel '{}' has a variant without a name", s.name);
    if (std::find(seen.begin(), seen.end(), v.name) != seen.end())
      return fmt::format("kernel '{}' has variant '{}' twice", s.name, v.name);
    seen.push_back(v.name);
  }
  std::vector<std::string> names;
  for (const auto& p : s.shape) names.push_back(p.name);
  for (const auto& p : s.params) {
    if (std::find(names.begin(), names.end(), p.name) != names.end())
      return fmt::format("kernel '{}' declares '{}' twice (shape and tunable parameters share one namespace)", s.name,
                         p.name);
    names.push_back(p.name);
    for (const auto& v : p.variants)
      if (std::find(seen.begin(), seen.end(), v) == seen.end())
        return fmt::format("kernel '{}': parameter '{}' names variant '{}', which the kernel does not have", s.name,
                           p.name, v);
    const bool default_is_choice = std::holds_alternative<std::string>(p.default_value);
    if (p.is_choice() != default_is_choice && !p.derive)
      return fmt::format("kernel '{}': parameter '{}' has a default of the wrong kind", s.name, p.name);
    if (p.is_choice() && !p.derive &&
        std::find(p.choices.begin(), p.choices.end(), std::get<std::string>(p.default_value)) == p.choices.end())
      return fmt::format("kernel '{}': parameter '{}' defaults to '{}', not one of its choices", s.name, p.name,
                         std::get<std::string>(p.default_value));
    if (!p.is_choice()) {
      if (p.min > p.max)
        return fmt::format("kernel '{}': parameter '{}' has an empty range {}..{}", s.name, p.name, p.min, p.max);
      if (!p.derive) {
        const std::int64_t d = std::get<std::int64_t>(p.default_value);
        if (d < p.min || d > p.max)
          return fmt::format("kernel '{}': parameter '{}' defaults to {}, outside {}..{}", s.name, p.name, d, p.min,
                             p.max);
      }
    }
  }
  return "";
}

// A value from a derive() hook, checked like a user's (a kernel bug otherwise).
ParamValue checked_value(const KernelSpec& spec, const TunableParam& p, const ParamValue& v) {
  const auto bad = [&](const std::string& why) {
    return KernelError(fmt::format("kernel '{}': the derived default of '{}' is {}: {}", spec.name, p.name,
                                   to_string(v), why));
  };
  if (p.is_choice()) {
    const auto* s = std::get_if<std::string>(&v);
    if (!s || std::find(p.choices.begin(), p.choices.end(), *s) == p.choices.end())
      throw bad(fmt::format("not one of {}", p.legal_text()));
  } else {
    const auto* i = std::get_if<std::int64_t>(&v);
    if (!i || *i < p.min || *i > p.max) throw bad(fmt::format("outside {}", p.legal_text()));
  }
  return v;
}

}  // namespace

// --- Params --------------------------------------------------------------------

std::string to_string(const ParamValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return std::get<std::string>(v);
}

const ParamValue* Params::find(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

std::int64_t Params::integer(const std::string& name) const {
  const ParamValue* v = find(name);
  if (!v) throw KernelError(fmt::format("no parameter '{}' was resolved for this run", name));
  const auto* i = std::get_if<std::int64_t>(v);
  if (!i) throw KernelError(fmt::format("parameter '{}' is a named choice ('{}'), not an integer", name, to_string(*v)));
  return *i;
}

const std::string& Params::choice(const std::string& name) const {
  const ParamValue* v = find(name);
  if (!v) throw KernelError(fmt::format("no parameter '{}' was resolved for this run", name));
  const auto* s = std::get_if<std::string>(v);
  if (!s) throw KernelError(fmt::format("parameter '{}' is an integer ({}), not a named choice", name, to_string(*v)));
  return *s;
}

std::string Params::text() const {
  std::string s;
  for (const auto& [k, v] : values_) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, to_string(v));
  return s;
}

nlohmann::json Params::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : values_) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) j[k] = *i;
    else j[k] = std::get<std::string>(v);
  }
  return j;
}

TunableParam TunableParam::integer(std::string name, std::int64_t min, std::int64_t max, std::int64_t default_value,
                                   std::string description) {
  TunableParam p;
  p.name = std::move(name);
  p.description = std::move(description);
  p.min = min;
  p.max = max;
  p.default_value = default_value;
  return p;
}

TunableParam TunableParam::choice(std::string name, std::vector<std::string> choices, std::string default_value,
                                  std::string description) {
  TunableParam p;
  p.name = std::move(name);
  p.description = std::move(description);
  p.choices = std::move(choices);
  p.default_value = std::move(default_value);
  return p;
}

TunableParam TunableParam::derived(std::function<ParamValue(const ParamContext&)> f) const {
  TunableParam p = *this;
  p.derive = std::move(f);
  return p;
}

TunableParam TunableParam::useful_up_to(std::function<std::int64_t(const ParamContext&)> f) const {
  TunableParam p = *this;
  p.useful_max = std::move(f);
  return p;
}

TunableParam TunableParam::only_for(std::vector<std::string> names) const {
  TunableParam p = *this;
  p.variants = std::move(names);
  return p;
}

TunableParam TunableParam::changes_numerics() const {
  TunableParam p = *this;
  p.numerics = true;
  return p;
}

TunableParam TunableParam::searched_at_every_value() const {
  TunableParam p = *this;
  p.every_value = true;
  return p;
}

bool TunableParam::applies_to(const std::string& variant) const {
  return variants.empty() || std::find(variants.begin(), variants.end(), variant) != variants.end();
}

std::string TunableParam::legal_text() const {
  if (is_choice()) return fmt::format("{}", fmt::join(choices, "|"));
  return fmt::format("{}..{}", min, max);
}

std::string TunableParam::default_text() const { return derive ? "auto" : to_string(default_value); }

// --- The registry ----------------------------------------------------------------

const Variant& KernelSpec::variant(const std::string& n) const {
  if (n.empty()) return variants.front();
  for (const auto& v : variants)
    if (v.name == n) return v;
  const auto names = variant_names();
  throw KernelError(fmt::format("kernel '{}' has no variant '{}' (variants: {}){}", name, n, fmt::join(names, ", "),
                                did_you_mean(n, names)));
}

std::vector<std::string> KernelSpec::variant_names() const {
  std::vector<std::string> n;
  for (const auto& v : variants) n.push_back(v.name);
  return n;
}

const TunableParam* KernelSpec::param(const std::string& n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

void register_kernel(KernelSpec spec) {
  Registry& r = the_registry();
  spec.origin = r.origin;
  if (const std::string why = invalid_spec(spec); !why.empty()) {
    r.errors.push_back(fmt::format("{}: {}", origin_text(r.origin), why));
    return;
  }
  const auto at = std::lower_bound(r.specs.begin(), r.specs.end(), spec.name,
                                   [](const KernelSpec& s, const std::string& n) { return s.name < n; });
  if (at != r.specs.end() && at->name == spec.name) {
    r.errors.push_back(fmt::format("{}: kernel '{}' is already registered by {}", origin_text(r.origin), spec.name,
                                   origin_text(at->origin)));
    return;
  }
  r.specs.insert(at, std::move(spec));
}

const std::vector<KernelSpec>& registry() {
  Registry& r = the_registry();
  if (!r.errors.empty()) {
    const std::string message = fmt::format("invalid kernel registration: {}", fmt::join(r.errors, "; "));
    r.errors.clear();
    throw KernelError(message);
  }
  return r.specs;
}

const KernelSpec* find_kernel(const std::string& name) {
  for (const auto& k : registry())
    if (k.name == name) return &k;
  return nullptr;
}

const KernelSpec& kernel_named(const std::string& name) {
  if (const KernelSpec* k = find_kernel(name)) return *k;
  std::vector<std::string> names;
  for (const auto& k : registry()) names.push_back(k.name);
  throw KernelError(
      fmt::format("unknown kernel '{}' (kernels: {}){}", name, fmt::join(names, ", "), did_you_mean(name, names)));
}

Shape resolve_shape(const KernelSpec& spec, const Shape& overrides) {
  Shape s;
  for (const auto& p : spec.shape) s[p.name] = p.default_value;
  for (const auto& [k, v] : overrides) {
    if (!s.count(k)) {
      std::string known;
      for (const auto& p : spec.shape) known += (known.empty() ? "" : ", ") + p.name;
      // A name that is a tunable parameter was a shape parameter once, or is
      // easily taken for one: say where it goes.
      if (spec.param(k))
        throw KernelError(fmt::format("kernel '{}': '{}' is a tunable parameter, not a shape parameter: set it with "
                                      "--param {}={} (a suite's or study's 'params')",
                                      spec.name, k, k, v));
      throw KernelError(fmt::format("kernel '{}' has no shape parameter '{}' (it has {})", spec.name, k, known));
    }
    const auto param = std::find_if(spec.shape.begin(), spec.shape.end(), [&](const ShapeParam& p) { return p.name == k; });
    if (v < param->min_value)
      throw KernelError(param->min_value == 1
                            ? fmt::format("kernel '{}': shape {}={} must be positive", spec.name, k, v)
                            : fmt::format("kernel '{}': shape {}={} must be at least {}", spec.name, k, v,
                                          param->min_value));
    s[k] = v;
  }
  // Kernels multiply their dimensions in int64: a shape beyond these could
  // not fit the largest HBM a config may declare anyway (16 TiB).
  constexpr std::int64_t kMaxDimension = std::int64_t{1} << 24, kMaxElements = std::int64_t{1} << 50;
  double elements = 1;
  std::string text;
  for (const auto& [k, v] : s) {
    text += fmt::format("{}{}={}", text.empty() ? "" : ",", k, v);
    if (v > kMaxDimension)
      throw KernelError(fmt::format("kernel '{}': shape {}={} is beyond the largest dimension, {}", spec.name, k, v,
                                    kMaxDimension));
    elements *= static_cast<double>(v);
  }
  if (elements > static_cast<double>(kMaxElements))
    throw KernelError(fmt::format("kernel '{}': shape {} has {:.3g} elements in all, beyond the {:.3g} any HBM could "
                                  "hold", spec.name, text, elements, static_cast<double>(kMaxElements)));
  return s;
}

Shape parse_shape(const std::string& text) {
  Shape s;
  for (const auto& [name, value] : split_assignments(text, "--shape")) {
    const auto v = parse_integer(value);
    if (!v) throw KernelError(fmt::format("--shape: '{}' is not an integer", value));
    if (!s.emplace(name, *v).second) throw KernelError(fmt::format("--shape: '{}' is given twice", name));
  }
  return s;
}

std::map<std::string, std::string> parse_param_text(const std::string& text) {
  std::map<std::string, std::string> out;
  for (auto& [name, value] : split_assignments(text, "--param")) {
    if (out.count(name)) throw KernelError(fmt::format("--param: '{}' is given twice", name));
    out[name] = value;
  }
  return out;
}

Params check_params(const KernelSpec& spec, const std::string& variant_name,
                    const std::map<std::string, std::string>& given) {
  const Variant& variant = spec.variant(variant_name);
  Params out;
  for (const auto& [name, text] : given) {
    const TunableParam* p = spec.param(name);
    if (!p) {
      if (spec.params.empty())
        throw KernelError(fmt::format("kernel '{}' has no tunable parameters (given '{}')", spec.name, name));
      const bool is_shape =
          std::any_of(spec.shape.begin(), spec.shape.end(), [&](const ShapeParam& s) { return s.name == name; });
      if (is_shape)
        throw KernelError(fmt::format("kernel '{}': '{}' is a shape parameter, not a tunable one: set it with --shape "
                                      "{}={}",
                                      spec.name, name, name, text));
      throw KernelError(fmt::format("kernel '{}' has no tunable parameter '{}' (it has {}){}", spec.name, name,
                                    fmt::join(names_of(spec.params), ", "), did_you_mean(name, names_of(spec.params))));
    }
    if (!p->applies_to(variant.name))
      throw KernelError(fmt::format("kernel '{}': variant '{}' does not read parameter '{}' (it applies to {})",
                                    spec.name, variant.name, name, fmt::join(p->variants, ", ")));
    if (p->is_choice()) {
      if (std::find(p->choices.begin(), p->choices.end(), text) == p->choices.end())
        throw KernelError(fmt::format("kernel '{}': parameter {}={}: expected one of {}{}", spec.name, name, text,
                                      p->legal_text(), did_you_mean(text, p->choices)));
      out.set(name, text);
    } else {
      const auto v = parse_integer(text);
      if (!v) throw KernelError(fmt::format("kernel '{}': parameter {}={}: not an integer", spec.name, name, text));
      if (*v < p->min || *v > p->max)
        throw KernelError(fmt::format("kernel '{}': parameter {}={} is outside its legal range {}", spec.name, name, *v,
                                      p->legal_text()));
      out.set(name, *v);
    }
  }
  return out;
}

namespace {

// `given` completed with the kernel's defaults (derived or declared).
Params complete_params(const KernelSpec& spec, const std::string& variant, const arch::HwConfig& config,
                       const Shape& shape, const Params& given, const std::string& dtype) {
  Params out = given;
  for (const auto& p : spec.params) {
    if (!p.applies_to(variant) || out.has(p.name)) continue;
    if (p.derive) {
      const ParamContext ctx{config, shape, variant, given, dtype};
      out.set(p.name, checked_value(spec, p, p.derive(ctx)));
    } else {
      out.set(p.name, p.default_value);
    }
  }
  return out;
}

}  // namespace

Params derived_params(const KernelSpec& spec, const std::string& variant_name, const arch::HwConfig& config,
                      const Shape& shape, const Params& given, const std::string& dtype) {
  return complete_params(spec, spec.variant(variant_name).name, config, shape, given, dtype);
}

Params resolve_params(const KernelSpec& spec, const std::string& variant_name, const arch::HwConfig& config,
                      const Shape& shape, const Params& given, const std::string& dtype) {
  const std::string& variant = spec.variant(variant_name).name;
  const TuningEntry* tuned = default_tuning_db().find(spec.name, variant, config.name, shape);
  if (!tuned) return complete_params(spec, variant, config, shape, given, dtype);
  // The database's point for what the run does not set, then the defaults.
  Params with_db = given;
  Params stored;
  try {
    stored = check_params(spec, variant, tuned->params);
  } catch (const KernelError& e) {
    throw KernelError(fmt::format("{}: the entry of {} {} on {} at {}: {} (retune: tessera tune --config {} --kernel {} "
                                  "--variant {} --update-db)",
                                  default_tuning_db_path(), spec.name, variant, config.name, tuned->bucket, e.what(),
                                  config.name, spec.name, variant));
  }
  for (const auto& [name, value] : stored.values())
    if (!with_db.has(name)) with_db.set(name, value);
  with_db = complete_params(spec, variant, config, shape, with_db, dtype);
  // An entry tuned at another shape of the bucket, for bf16 when the run's
  // tiles are wider, or on the generation before a run's --set or a what-if
  // study changed it (a wider array, a smaller SBUF) may not fit this run:
  // the kernel's own defaults then.
  if (spec.fits && spec.fits(config, KernelArgs{variant, shape, with_db, 1, dtype}))
    return complete_params(spec, variant, config, shape, given, dtype);
  return with_db;
}

const std::string& check_dtype(const KernelSpec& spec, const std::string& dtype) {
  if (dtype.empty()) return spec.dtypes.front();
  for (const auto& d : spec.dtypes)
    if (d == dtype) return d;
  throw KernelError(fmt::format("kernel '{}' takes --dtype {}, not '{}'", spec.name,
                                spec.dtypes.size() == 1 ? spec.dtypes.front() + " only" : fmt::format("{}", fmt::join(spec.dtypes, ", ")),
                                dtype));
}

const std::string& check_dtype(const KernelSpec& spec, const std::string& variant, const std::string& dtype) {
  const std::string& d = check_dtype(spec, dtype);
  const auto& takes = spec.dtype_variants;
  if (d == spec.dtypes.front() || takes.empty() || std::find(takes.begin(), takes.end(), variant) != takes.end())
    return d;
  throw KernelError(fmt::format("{} {}: --dtype {}: this variant reads {} inputs only; {} run every dtype", spec.name,
                                variant, d, spec.dtypes.front(), fmt::join(takes, " and ")));
}

Program KernelInstance::build_instance(const Spmd& spmd, const std::string&) {
  if (spmd.grid == 1) return build();
  throw KernelError(fmt::format("this kernel does not split its work across {} cores (it declares no shard "
                                "dimensions)", spmd.grid));
}

std::string resolve_shard(const KernelSpec& spec, const std::string& shard) {
  if (shard.empty()) return spec.shard_dims.empty() ? "" : spec.shard_dims.front();
  if (spec.shard_dims.empty())
    throw KernelError(fmt::format("--shard {}: kernel '{}' runs on one core only (it declares no shard dimensions)",
                                  shard, spec.name));
  if (std::find(spec.shard_dims.begin(), spec.shard_dims.end(), shard) == spec.shard_dims.end())
    throw KernelError(
        fmt::format("--shard {}: kernel '{}' shards over {}", shard, spec.name, fmt::join(spec.shard_dims, " or ")));
  return shard;
}

KernelArgs resolve(const KernelSpec& spec, const arch::HwConfig& config, const KernelRequest& request) {
  KernelArgs a;
  a.variant = spec.variant(request.variant).name;
  a.dtype = check_dtype(spec, a.variant, request.dtype);
  a.shape = resolve_shape(spec, request.shape);
  a.params =
      resolve_params(spec, a.variant, config, a.shape, check_params(spec, a.variant, request.params), a.dtype);
  a.seed = request.seed;
  return a;
}

Instance instantiate(Device& dev, const KernelRequest& request) {
  const KernelSpec& spec = kernel_named(request.kernel);
  if (dev.cores() > 1 && spec.shard_dims.empty()) {
    const auto from = dev.resolved().from.find("chip.lnc");
    throw KernelError(
        dev.logical_core()
            ? fmt::format("kernel '{}' cannot be split across the {} cores of a logical core (chip.lnc {}{}): it "
                          "declares no shard dimensions (KernelSpec::shard_dims); run it with --cores 1 or --set "
                          "chip.lnc=1",
                          spec.name, dev.cores(), dev.cores(),
                          from == dev.resolved().from.end() ? "" : ", " + from->second.str())
            : fmt::format("kernel '{}' cannot be split across {} cores: it declares no shard dimensions "
                          "(KernelSpec::shard_dims); run it on one core",
                          spec.name, dev.cores()));
  }
  Instance i;
  i.args = resolve(spec, dev.config(), request);
  i.kernel = spec.make(dev, i.args);
  return i;
}

RunReport run_kernel(Device& dev, const KernelRequest& request, const std::string& shard_text) {
  const std::string shard = resolve_shard(kernel_named(request.kernel), shard_text);
  // A bad TESSERA_CHECK_THREADS is named now, not after the simulation.
  const std::size_t threads = dev.no_data() ? 0 : check_threads();
  const Instance i = instantiate(dev, request);
  const KernelArgs& args = i.args;
  KernelInstance* instance = i.kernel.get();
  // A chip's programs are built inside launch(), which times them itself.
  double build_seconds = 0;
  auto build = [&] {
    const auto start = std::chrono::steady_clock::now();
    Program program = instance->build();
    build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return program;
  };
  RunReport report = dev.on_chip()
                         ? dev.launch([&](const Spmd& spmd) { return instance->build_instance(spmd, shard); },
                                      dev.cores())
                         : dev.run(build());
  if (!dev.on_chip()) report.build_seconds = build_seconds;
  if (dev.on_chip()) report.shard = shard;
  if (dev.logical_core()) report.lnc = dev.cores();
  report.variant = args.variant;
  report.shape = args.shape;
  report.params = args.params.to_json();
  if (report.ok && !dev.no_data()) {
    const auto start = std::chrono::steady_clock::now();
    const NumericsCheck c = instance->check();
    report.check_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.check_threads = static_cast<int>(threads);
    report.checked = true;
    report.correct = c.correct;
    report.max_abs_error = c.max_abs_error;
    report.tolerance = c.tolerance;
    if (!c.correct) report.error = "numerics mismatch: " + c.detail;
  }
  return report;
}

std::optional<std::string> check_fits(const DeviceOptions& device, const KernelRequest& request) {
  DeviceOptions o = device;
  o.no_data = true;
  o.waves.clear();
  o.trace = false;
  Device dev(o);
  const KernelSpec& spec = kernel_named(request.kernel);
  try {
    const KernelArgs args = resolve(spec, dev.config(), request);
    if (spec.fits)
      if (auto why = spec.fits(dev.config(), args)) return why;
    spec.make(dev, args)->build();
  } catch (const KernelError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

NumericsCheck compare(const std::vector<float>& got, const std::vector<float>& expect, double tolerance) {
  NumericsCheck c;
  c.tolerance = tolerance;
  if (got.size() != expect.size()) {
    c.detail = fmt::format("{} results for {} expected", got.size(), expect.size());
    return c;
  }
  std::size_t worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::isnan(got[i]) != std::isnan(expect[i]) ? INFINITY
                       : std::isnan(got[i])                        ? 0.0
                                                                   : std::fabs(double{got[i]} - expect[i]);
    if (err > c.max_abs_error || std::isnan(err)) {
      c.max_abs_error = err;
      worst = i;
    }
  }
  c.correct = c.max_abs_error <= tolerance;
  if (!c.correct)
    c.detail = fmt::format("element {}: got {}, expected {}", worst, got[worst], expect[worst]);
  return c;
}

// --- Plugins ---------------------------------------------------------------------

namespace {

namespace fs = std::filesystem;

// The directory of the shared library holding this code: the Python plugin
// bridge sits beside it, in the build tree and after install alike.
fs::path library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&register_kernel), &info) && info.dli_fname)
    return fs::absolute(info.dli_fname).parent_path();
  return {};
}

// Python files go through a bridge library that embeds the interpreter
// (python/plugin.cpp), loaded only when a Python plugin is asked for, so
// that nothing else links libpython.
void load_python_plugin(const std::string& path) {
  const char* env = std::getenv("TESSERA_PYTHON_PLUGIN");
  const fs::path bridge = env && *env ? fs::path(env) : library_dir() / "libtessera_python_plugin.so";
  if (!fs::exists(bridge))
    throw KernelError(fmt::format("plugin {}: a Python plugin needs {}, which is not there (build the "
                                  "tessera_python_plugin target, or configure with Python 3, pybind11 and numpy)",
                                  path, bridge.string()));
  void* handle = dlopen(bridge.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) throw KernelError(fmt::format("plugin {}: cannot load {}: {}", path, bridge.string(), dlerror()));
  using LoadFn = int (*)(const char*, std::string*);
  auto load = reinterpret_cast<LoadFn>(dlsym(handle, "tessera_python_plugin_load"));
  if (!load) throw KernelError(fmt::format("plugin {}: {} has no tessera_python_plugin_load", path, bridge.string()));
  std::string error;
  if (load(path.c_str(), &error) != 0) throw KernelError(fmt::format("plugin {}: {}", path, error));
}

}  // namespace

void load_plugin(const std::string& path) {
  Registry& r = the_registry();
  std::error_code ec;
  const fs::path file = fs::absolute(path, ec);
  if (ec || !fs::is_regular_file(file))
    throw KernelError(fmt::format("plugin {}: no such file", path));
  const std::string abs = fs::canonical(file, ec).string();
  if (std::find(r.plugins.begin(), r.plugins.end(), abs) != r.plugins.end()) return;
  // Registrations made while the plugin loads are its own.
  const std::string previous = r.origin;
  r.origin = abs;
  const std::size_t errors_before = r.errors.size();
  try {
    if (file.extension() == ".py") {
      load_python_plugin(abs);
    } else {
      // RTLD_GLOBAL: a plugin's kernels may be used by a later plugin.
      void* handle = dlopen(abs.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (!handle) throw KernelError(fmt::format("plugin {}: cannot load: {}", path, dlerror()));
    }
  } catch (...) {
    r.origin = previous;
    throw;
  }
  r.origin = previous;
  r.plugins.push_back(abs);
  if (r.errors.size() > errors_before) {
    std::vector<std::string> mine(r.errors.begin() + static_cast<std::ptrdiff_t>(errors_before), r.errors.end());
    r.errors.resize(errors_before);
    throw KernelError(fmt::format("plugin {}: {}", path, fmt::join(mine, "; ")));
  }
}

void load_env_plugins() {
  Registry& r = the_registry();
  if (r.env_loaded) return;
  r.env_loaded = true;
  const char* env = std::getenv("TESSERA_PLUGINS");
  if (!env) return;
  const std::string list = env;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    const std::string item = list.substr(start, end - start);
    if (!item.empty()) {
      try {
        load_plugin(item);
      } catch (const KernelError& e) {
        throw KernelError(fmt::format("TESSERA_PLUGINS: {}", e.what()));
      }
    }
    start = end + 1;
  }
}

const std::vector<std::string>& loaded_plugins() { return the_registry().plugins; }

}  // namespace tessera::kernels
