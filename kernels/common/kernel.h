// The kernel registry: every kernel under one name, with its variants, its
// shape parameters (problem sizes), its tunable parameters (choices: block
// sizes, buffer counts, which engine evacuates PSUM), and how to set it up on
// a Device, build its program and check its results against its reference.
//
// A kernel registers itself beside its code (TESSERA_REGISTER_KERNEL), so
// adding one touches no central list: library kernels, kernels of a plugin
// library loaded at run time (load_plugin), and Python kernels all land here,
// and `tessera run`, `regress` and `sweep` treat them alike.
#pragma once

#include "tessera/device.h"
#include "tessera/program.h"
#include "tessera/run_report.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessera::kernels {

using Shape = std::map<std::string, std::int64_t>;

struct ShapeParam {
  std::string name;
  std::int64_t default_value;
  std::string description;
  std::int64_t min_value = 1;  // 0 for a parameter that may be absent, such as padding
};

// A variant: one way of computing the kernel (an algorithm, or for a family
// such as elementwise the operation). The first of a kernel's is its default.
struct Variant {
  std::string name;
  std::string description;
};

// A tunable parameter's value: an integer, or one of its named choices.
using ParamValue = std::variant<std::int64_t, std::string>;
std::string to_string(const ParamValue& v);

// The tunable parameters of one run, every one the variant reads present
// (resolve_params), or some of them (what a user gave, before resolving).
class Params {
public:
  Params() = default;
  Params(std::initializer_list<std::pair<const std::string, ParamValue>> values) : values_(values) {}

  // The value of an integer parameter; throws KernelError when absent or a choice.
  std::int64_t integer(const std::string& name) const;
  // The value of a named-choice parameter; throws KernelError when absent or an integer.
  const std::string& choice(const std::string& name) const;
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  const ParamValue* find(const std::string& name) const;
  void set(const std::string& name, ParamValue v) { values_[name] = std::move(v); }

  const std::map<std::string, ParamValue>& values() const { return values_; }
  bool empty() const { return values_.empty(); }
  // "bm=2,bn=2" in name order; empty when there are none.
  std::string text() const;
  nlohmann::json to_json() const;
  bool operator==(const Params& o) const { return values_ == o.values_; }

private:
  std::map<std::string, ParamValue> values_;
};

// What a tunable parameter's derived default, or its useful upper bound, may
// depend on: the hardware, the problem, the variant and the parameters the
// run sets explicitly (so that one derivation can size several parameters
// together around what a user fixed).
struct ParamContext {
  const arch::HwConfig& config;
  const Shape& shape;
  const std::string& variant;
  const Params& given;
  std::string dtype = "bf16";  // the run's input dtype (sizes its tiles)
};

// A choice the kernel makes that does not change what it computes, only how
// fast (or, marked `numerics`, only how it rounds): declared with its legal values so that a user (`--param`), a suite,
// a study or a tuner can set it. Integers take [min, max]; named choices one
// of `choices`.
struct TunableParam {
  std::string name;
  std::string description;
  std::int64_t min = 1, max = 1;  // integers: the legal range
  std::vector<std::string> choices;  // named choices; empty for an integer
  // The value a run gets when nobody sets it: `derive`'s, when the kernel
  // sizes it from the config and shape (a block that fits SBUF, say), else
  // `default_value`. (A tuning database, later, sits between the two.)
  ParamValue default_value = std::int64_t{1};
  std::function<ParamValue(const ParamContext&)> derive;
  // Integers: the largest value that still changes the program for this
  // config and shape (a block of every tile there is); a search need not
  // go further. Unset: max.
  std::function<std::int64_t(const ParamContext&)> useful_max;
  std::vector<std::string> variants;  // the variants that read it; empty: all
  // A choice of numerics rather than speed (bf16 accumulation, say): set
  // only by the user, never by a tuner, whose points must all compute the
  // same thing.
  bool numerics = false;
  // Integers: a search tries every value up to the useful bound, not powers
  // of two (a count of engines to split, where 6 of 16 may beat 4 and 8).
  bool every_value = false;

  // An integer parameter, legal in [min, max].
  static TunableParam integer(std::string name, std::int64_t min, std::int64_t max, std::int64_t default_value,
                              std::string description);
  // A named choice, one of `choices`.
  static TunableParam choice(std::string name, std::vector<std::string> choices, std::string default_value,
                             std::string description);
  // This parameter with its default derived from the config and shape.
  TunableParam derived(std::function<ParamValue(const ParamContext&)> f) const;
  // ... with its useful upper bound for a config and shape.
  TunableParam useful_up_to(std::function<std::int64_t(const ParamContext&)> f) const;
  // ... read only by these variants.
  TunableParam only_for(std::vector<std::string> names) const;
  // ... changing what the kernel computes (its rounding), so left out of tuning.
  TunableParam changes_numerics() const;
  // ... searched at every value of its range (a small count), not in powers of two.
  TunableParam searched_at_every_value() const;

  bool is_choice() const { return !choices.empty(); }
  bool applies_to(const std::string& variant) const;
  // "1..64", or "vector|scalar".
  std::string legal_text() const;
  // "4", "vector", or "auto" when derived.
  std::string default_text() const;
};

struct NumericsCheck {
  bool correct = false;
  double max_abs_error = 0;
  double tolerance = 0;
  std::string detail;  // the worst element, when wrong
};

// One kernel set up on a device: inputs allocated and uploaded.
class KernelInstance {
public:
  virtual ~KernelInstance() = default;
  virtual Program build() = 0;
  // The program of one instance of an SPMD launch over several cores
  // (Device::launch, docs/multicore.md), splitting the work along `shard`,
  // one of the kernel's shard dimensions; a kernel that declares shard
  // dimensions (KernelSpec::shard_dims) overrides it. A grid of one is build().
  virtual Program build_instance(const Spmd& spmd, const std::string& shard);
  // Compares the device's outputs with the CPU reference.
  virtual NumericsCheck check() = 0;
};

// What one instance is made for; shape and params are resolved (complete
// and checked), the variant is one of the spec's.
struct KernelArgs {
  std::string variant;
  Shape shape;
  Params params;
  std::uint64_t seed = 1;
  std::string dtype = "bf16";  // the input dtype, one of the spec's
};

struct KernelSpec {
  std::string name;
  std::string description;
  std::vector<Variant> variants;  // the first is the default
  std::vector<ShapeParam> shape;
  std::vector<TunableParam> params;
  std::function<std::unique_ptr<KernelInstance>(Device&, const KernelArgs&)> make;
  // The shape dimensions build_instance can split across the cores of a
  // chip, the default first ("M", "N"); empty: the kernel runs on one core.
  std::vector<std::string> shard_dims;
  // Optional, cheap: whether a parameter point can be built on a config
  // (SBUF and PSUM room), without building it. Empty when it fits, else the
  // reason. check_fits() uses it first, then the builder's own rules.
  std::function<std::optional<std::string>(const arch::HwConfig&, const KernelArgs&)> fits;
  // Where it came from: "" for the library, else the plugin's path.
  std::string origin;
  // The input dtypes it computes in (`--dtype`), the default first.
  std::vector<std::string> dtypes = {"bf16"};
  // The variants that take every one of them; empty: all variants do. The
  // others take the default dtype only (resolve refuses the rest).
  std::vector<std::string> dtype_variants;

  // The variant called `name`, the default for ""; throws KernelError naming
  // the choices for any other name.
  const Variant& variant(const std::string& name) const;
  std::vector<std::string> variant_names() const;
  const TunableParam* param(const std::string& name) const;
};

// Adds a kernel to the registry. Call it from a static initialiser
// (TESSERA_REGISTER_KERNEL) or from code. A spec without name, variants or
// make, or a name already taken, is an error reported by the next registry()
// (or by load_plugin, for a plugin's kernels), naming both origins.
void register_kernel(KernelSpec spec);

// Every registered kernel, by name. Throws KernelError when a registration was invalid.
const std::vector<KernelSpec>& registry();
const KernelSpec* find_kernel(const std::string& name);
// find_kernel, or a KernelError naming the kernels there are (and the closest).
const KernelSpec& kernel_named(const std::string& name);

// The kernel's default shape with `overrides` applied; throws KernelError on
// an unknown parameter or a value below its minimum.
Shape resolve_shape(const KernelSpec& spec, const Shape& overrides);
// Parses "M=128,N=256" into a shape.
Shape parse_shape(const std::string& text);

// Parses "bm=4,evacuate=scalar" (what --param takes) into name -> text.
std::map<std::string, std::string> parse_param_text(const std::string& text);
// Checks given parameters against the spec and variant (a known name, read
// by this variant, a legal value) and types them; throws KernelError naming
// the parameter and what is legal.
Params check_params(const KernelSpec& spec, const std::string& variant, const std::map<std::string, std::string>& given);
// `given` (checked) completed with every other parameter the variant reads,
// at its default for this config and shape, in declaration order.
Params resolve_params(const KernelSpec& spec, const std::string& variant, const arch::HwConfig& config,
                      const Shape& shape, const Params& given, const std::string& dtype = "bf16");
// The same from the kernel's own defaults only, never the tuning database's
// point: what a search calls a variant's untuned default.
Params derived_params(const KernelSpec& spec, const std::string& variant, const arch::HwConfig& config,
                      const Shape& shape, const Params& given, const std::string& dtype = "bf16");

// What one run asks for: names as a user writes them, checked and resolved
// by make_instance.
struct KernelRequest {
  std::string kernel;
  std::string variant;  // "": the default
  Shape shape;          // overrides of the kernel's default shape
  std::map<std::string, std::string> params;  // as given (--param, a suite, a study)
  std::uint64_t seed = 1;
  std::string dtype{};  // "": the kernel's default (an initializer, so brace-initialised requests may omit it)
};

// The request's dtype: the spec's default for "", else one of spec.dtypes;
// throws KernelError naming the dtypes the kernel takes.
const std::string& check_dtype(const KernelSpec& spec, const std::string& dtype);
// check_dtype, and for a variant outside spec.dtype_variants the default
// dtype only (naming the variants that take the others).
const std::string& check_dtype(const KernelSpec& spec, const std::string& variant, const std::string& dtype);

// The resolved arguments of a request on a device's config.
KernelArgs resolve(const KernelSpec& spec, const arch::HwConfig& config, const KernelRequest& request);

// A request made on a device: its resolved arguments and the instance
// (inputs allocated and uploaded), ready to build.
struct Instance {
  KernelArgs args;
  std::unique_ptr<KernelInstance> kernel;
};
Instance instantiate(Device& dev, const KernelRequest& request);

// The dimension a multi-core run of `spec` splits: `shard` when it is one of
// the kernel's shard dimensions, its first for ""; throws KernelError naming
// the choices otherwise, or when the kernel declares none.
std::string resolve_shard(const KernelSpec& spec, const std::string& shard);

// Builds, runs and checks (unless the device is timing-only) one request:
// what `tessera run` does. On a device of several cores (Device::on_chip)
// it launches one instance per core, split along `shard` (resolve_shard).
// The report carries variant, shape and params; a numerics mismatch sets
// report.error. Throws KernelError on bad input.
RunReport run_kernel(Device& dev, const KernelRequest& request, const std::string& shard = "");

// Whether a parameter point fits: the spec's fits() when it has one, then a
// build (no simulation) on a timing-only device of `device`'s config. Empty
// when it fits, else the builder's or the kernel's reason.
std::optional<std::string> check_fits(const DeviceOptions& device, const KernelRequest& request);

// Compares `got` with `expect` elementwise: |got - expect| <= tolerance.
NumericsCheck compare(const std::vector<float>& got, const std::vector<float>& expect, double tolerance);

// --- Plugins ------------------------------------------------------------------
// Loads a plugin: a shared library whose kernels register themselves when
// it loads (TESSERA_REGISTER_KERNEL), or a Python file whose kernels register
// through the tessera Python package (docs/python.md). Loading the same path
// twice is a no-op. Throws KernelError naming the file and why.
void load_plugin(const std::string& path);
// Loads every plugin of $TESSERA_PLUGINS (paths separated by ':'), once.
void load_env_plugins();
// The plugins loaded so far, as absolute paths, in load order.
const std::vector<std::string>& loaded_plugins();

namespace detail {
struct Registration {
  explicit Registration(KernelSpec (*spec)()) { register_kernel(spec()); }
};
}  // namespace detail

}  // namespace tessera::kernels

// Registers the KernelSpec that `spec_function` (a function taking nothing)
// returns, when the library or plugin holding this line loads.
#define TESSERA_REGISTER_KERNEL(spec_function) \
  static const ::tessera::kernels::detail::Registration TESSERA_KERNEL_CONCAT_(tessera_kernel_, __LINE__){spec_function}
#define TESSERA_KERNEL_CONCAT_(a, b) TESSERA_KERNEL_CONCAT2_(a, b)
#define TESSERA_KERNEL_CONCAT2_(a, b) a##b
