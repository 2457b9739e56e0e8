#include "arch/config.h"

#include "arch/address_map.h"

#include "arch/config_input.h"
#include "arch/config_schema.h"
#include "arch/rtl_builds.h"
#include "arch/spelling.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>

namespace fs = std::filesystem;

namespace tessera::arch {
namespace {
// Partitions of one MX scaling group (formats.h, kMxGroupPartitions).
constexpr std::int64_t kMxRowsPerGroup = 8;
}  // namespace

const char* to_string(Fidelity f) {
  switch (f) {
    case Fidelity::Rtl: return "rtl";
    case Fidelity::Sampled: return "sampled";
    case Fidelity::Tlm: return "tlm";
  }
  return "?";
}

std::optional<Fidelity> parse_fidelity(const std::string& text) {
  if (text == "rtl") return Fidelity::Rtl;
  if (text == "sampled") return Fidelity::Sampled;
  if (text == "tlm") return Fidelity::Tlm;
  return std::nullopt;
}

const char* to_string(TensorDType t) {
  switch (t) {
    case TensorDType::Bf16: return "bf16";
    case TensorDType::Fp8E4m3: return "fp8_e4m3";
    case TensorDType::Fp8E5m2: return "fp8_e5m2";
    case TensorDType::Fp32: return "fp32";
    case TensorDType::Mx: return "mx";
  }
  return "?";
}

double TensorEngineConfig::rate(TensorDType t) const {
  switch (t) {
    case TensorDType::Bf16: return 1.0;
    case TensorDType::Fp8E4m3:
    case TensorDType::Fp8E5m2: return static_cast<double>(fp8_rows_per_pe);
    case TensorDType::Mx: return static_cast<double>(mx_rows_per_pe);
    case TensorDType::Fp32: return fp32_cycles_per_column > 0 ? 1.0 / static_cast<double>(fp32_cycles_per_column) : 0;
  }
  return 0;
}

Fidelity HwConfig::default_fidelity() const {
  // The schema admits only valid names, so a loaded config always parses.
  return parse_fidelity(simulation.default_fidelity).value_or(Fidelity::Sampled);
}

const std::vector<std::string>& rtl_array_sizes() {
  static const std::vector<std::string> sizes = [] {
    std::vector<std::string> out;
    std::string all = kRtlArraySizes;
    for (std::size_t start = 0; start < all.size();) {
      std::size_t end = all.find(';', start);
      if (end == std::string::npos) end = all.size();
      if (end > start) out.push_back(all.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }();
  return sizes;
}

std::int64_t peer_dma_engines(const HwConfig& cfg) { return std::min(cfg.chip.peer_dma_engines, cfg.dma.engines); }

HbmConfig chip_hbm(const HwConfig& cfg) {
  HbmConfig h = cfg.hbm;
  const std::int64_t n = cfg.chip.cores;
  h.capacity_gib = cfg.chip.hbm_capacity_gib > 0 ? cfg.chip.hbm_capacity_gib : n * cfg.hbm.capacity_gib;
  h.bandwidth_gbps = cfg.chip.hbm_bandwidth_gbps > 0 ? cfg.chip.hbm_bandwidth_gbps
                                                     : static_cast<double>(n) * cfg.hbm.bandwidth_gbps;
  h.channels = cfg.chip.hbm_channels > 0 ? cfg.chip.hbm_channels : n * cfg.hbm.channels;
  return h;
}

HwConfig core_on_chip(const HwConfig& cfg) {
  HwConfig c = cfg;
  c.hbm = chip_hbm(cfg);
  return c;
}

DerivedFigures derive(const HwConfig& cfg) {
  DerivedFigures d;
  d.chip_hbm = chip_hbm(cfg);
  const double pes = static_cast<double>(cfg.tensor.rows) * static_cast<double>(cfg.tensor.cols);
  for (const TensorDType dtype : kTensorDTypes) {
    // Two FLOPs (multiply, add) per MAC; GHz * 1e9 / 1e12 gives TFLOPS.
    const double rate = cfg.tensor.rate(dtype);
    if (rate > 0) d.peak_tflops[dtype] = pes * 2.0 * rate * cfg.tensor.clock_ghz / 1000.0;
  }
  // In double: a config being checked may hold any int64 before its limits are.
  d.sbuf_total_mib = static_cast<double>(cfg.sbuf.partitions) * static_cast<double>(cfg.sbuf.partition_kib) / 1024.0;
  d.psum_total_kib = static_cast<double>(cfg.psum.partitions) * static_cast<double>(cfg.psum.banks) *
                     static_cast<double>(cfg.psum.bank_kib);
  d.psum_bank_fp32_per_partition =
      static_cast<std::int64_t>(std::min(static_cast<double>(cfg.psum.bank_kib) * 256.0, 9.0e18));
  // GB/s divided by Gcycles/s is bytes per cycle.
  d.hbm_bytes_per_tensor_cycle = cfg.tensor.clock_ghz > 0 ? cfg.hbm.bandwidth_gbps / cfg.tensor.clock_ghz : 0;
  d.dma_total_gbps = static_cast<double>(cfg.dma.engines) * cfg.dma.bytes_per_ns;
  const std::string size = fmt::format("{}x{}", cfg.tensor.rows, cfg.tensor.cols);
  const auto& built = rtl_array_sizes();
  d.rtl_build_available = std::find(built.begin(), built.end(), size) != built.end();
  return d;
}

std::string Source::str() const {
  if (line > 0) return fmt::format("{}:{}", file, line);
  return file;
}

std::string Diagnostic::str() const { return fmt::format("{}: {}", where.str(), message); }

static std::string join_diagnostics(const std::vector<Diagnostic>& diags) {
  std::string out;
  for (const auto& d : diags) {
    if (!out.empty()) out += '\n';
    out += d.str();
  }
  return out;
}

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(join_diagnostics(diagnostics)), diagnostics_(std::move(diagnostics)) {}

std::string config_dir() {
  if (const char* env = std::getenv("TESSERA_CONFIG_DIR"); env && *env) return env;
  // Installed (cmake --install): <prefix>/lib/libtessera_arch.so finds
  // <prefix>/share/tessera/configs, wherever the prefix was moved.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&config_dir), &info) && info.dli_fname) {
    std::error_code ec;
    const fs::path lib = fs::canonical(info.dli_fname, ec).parent_path();
    for (const fs::path& share : {lib.parent_path() / "share", lib.parent_path().parent_path() / "share"})
      if (fs::is_directory(share / "tessera" / "configs", ec)) return (share / "tessera" / "configs").string();
  }
  return kDefaultConfigDir;
}

std::vector<std::string> list_config_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(config_dir(), ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// " (did you mean 'x'?)" for the closest candidate, when one is close enough.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const auto best = closest_spelling(word, candidates, std::max<std::size_t>(2, word.size() / 3));
  return best ? fmt::format(" (did you mean '{}'?)", *best) : std::string();
}

std::vector<std::string> all_key_paths() {
  std::vector<std::string> keys = schema_sections();
  for (const auto& f : schema()) keys.push_back(f.path);
  keys.push_back("base");
  return keys;
}

int line_of(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

struct Layer {
  std::string file;
  YAML::Node root;
};

// A config is a few KiB; a file far larger is something else.
constexpr std::uintmax_t kMaxConfigBytes = 1u << 20;

std::vector<std::string> top_level_keys() {
  std::vector<std::string> keys = {"base"};
  for (const auto& k : all_key_paths())
    if (k.find('.') == std::string::npos && std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  return keys;
}

bool has_config_key(const YAML::Node& root) {
  const auto keys = top_level_keys();
  for (auto it = root.begin(); it != root.end(); ++it)
    if (it->first.IsScalar() && std::find(keys.begin(), keys.end(), it->first.Scalar()) != keys.end()) return true;
  return false;
}

// Loads a config and the chain of bases beneath it. Layers are returned
// most-derived first.
class ChainLoader {
public:
  std::vector<Layer> layers;
  std::vector<Diagnostic> diags;

  void load(const std::string& name_or_file) {
    const std::optional<std::string> path = resolve_top(name_or_file);
    if (!path) return;
    load_file(*path, Source{}, {});
  }

private:
  std::optional<std::string> resolve_top(const std::string& name_or_file) {
    const fs::path p(name_or_file);
    if (p.has_extension() || name_or_file.find('/') != std::string::npos) {
      if (readable(p, {name_or_file, 0})) return p.string();
      if (diags.empty()) diags.push_back({{name_or_file, 0}, "", "no such config file"});
      return std::nullopt;
    }
    const fs::path named = fs::path(config_dir()) / (name_or_file + ".yaml");
    if (readable(named, {name_or_file, 0})) return named.string();
    if (!diags.empty()) return std::nullopt;
    diags.push_back({{name_or_file, 0},
                     "",
                     fmt::format("unknown config '{}' (not in {}){}", name_or_file, config_dir(),
                                 did_you_mean(name_or_file, list_config_names()))});
    return std::nullopt;
  }

  // A base is a path when it looks like one (relative to the file naming it),
  // else a config name: first beside that file, then in the config directory.
  std::optional<std::string> resolve_base(const std::string& base, const std::string& from_file,
                                          const Source& where) {
    const fs::path dir = fs::path(from_file).parent_path();
    std::vector<fs::path> candidates;
    if (fs::path(base).has_extension() || base.find('/') != std::string::npos) {
      candidates.push_back(fs::path(base).is_absolute() ? fs::path(base) : dir / base);
    } else {
      candidates.push_back(dir / (base + ".yaml"));
      candidates.push_back(fs::path(config_dir()) / (base + ".yaml"));
    }
    for (const auto& c : candidates) {
      if (readable(c, where)) return c.lexically_normal().string();
      if (!diags.empty()) return std::nullopt;
    }
    diags.push_back({where, "base",
                     fmt::format("base config '{}' not found (looked beside the file and in {}){}", base,
                                 config_dir(), did_you_mean(base, list_config_names()))});
    return std::nullopt;
  }

  // Whether `p` is a regular file; a problem other than its absence (a
  // symlink loop, a name too long, no permission) is a diagnostic at `where`.
  bool readable(const fs::path& p, const Source& where) {
    std::error_code ec;
    const bool regular = fs::is_regular_file(p, ec);
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
      diags.push_back({where, "", where.file == p.string()
                                      ? fmt::format("cannot read: {}", ec.message())
                                      : fmt::format("cannot read {}: {}", quote_input(p.string(), 300), ec.message())});
    return regular && !ec;
  }

  void load_file(const std::string& path, const Source& named_at, std::vector<std::string> seen) {
    std::error_code ec;
    const std::string canonical = fs::weakly_canonical(path, ec).string();
    if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) {
      std::string cycle;
      for (const auto& s : seen) cycle += fs::path(s).filename().string() + " -> ";
      cycle += fs::path(canonical).filename().string();
      diags.push_back({named_at, "base", fmt::format("base cycle: {}", cycle)});
      return;
    }
    seen.push_back(canonical);

    // Any readable file can be named: what is not a config is refused on
    // its first problem, without quoting its content back.
    std::string text;
    {
      std::error_code size_ec;
      const auto size = fs::file_size(path, size_ec);
      if (!size_ec && size > kMaxConfigBytes) {
        diags.push_back({{path, 0}, "", fmt::format("not a Tessera config: {} bytes (a config is at most {} KiB)", size,
                                                    kMaxConfigBytes >> 10)});
        return;
      }
      std::ifstream in(path, std::ios::binary);
      std::stringstream ss;
      if (!in || !(ss << in.rdbuf())) {
        diags.push_back({{path, 0}, "", fmt::format("cannot read: {}", std::strerror(errno))});
        return;
      }
      text = ss.str();
    }
    if (const auto line = too_deep(text)) {
      diags.push_back({{path, *line}, "", fmt::format("not a Tessera config: nested more than {} deep", kMaxYamlDepth)});
      return;
    }
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      diags.push_back({{path, e.mark.line + 1}, "", fmt::format("YAML syntax error: {}", e.msg)});
      return;
    } catch (const YAML::Exception& e) {
      diags.push_back({{path, 0}, "", fmt::format("cannot read: {}", e.msg)});
      return;
    }
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    if (!root.IsMap()) {
      diags.push_back({{path, line_of(root)}, "", "not a Tessera config: a config is a mapping of keys to values"});
      return;
    }
    if (root.size() > 0 && !has_config_key(root)) {
      diags.push_back({{path, line_of(root)}, "",
                       fmt::format("not a Tessera config: none of its top-level keys is a config section ({})",
                                   fmt::join(top_level_keys(), ", "))});
      return;
    }
    layers.push_back({path, root});

    const YAML::Node base = root["base"];
    if (!base) return;
    const Source base_at{path, line_of(base)};
    if (!base.IsScalar() || base.Scalar().empty()) {
      diags.push_back({base_at, "base", "base must name a config or a file"});
      return;
    }
    if (const auto base_path = resolve_base(base.Scalar(), path, base_at)) load_file(*base_path, base_at, seen);
  }
};

// Parses one scalar into a field, or explains why it cannot.
std::optional<std::string> assign(const FieldSpec& f, const std::string& text, HwConfig& cfg) {
  switch (f.kind()) {
    case FieldSpec::Kind::Int: {
      std::int64_t v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end != text.data() + text.size())
        return fmt::format("{}: expected an integer, got '{}'", f.path, text);
      std::get<FieldSpec::IntRef>(f.ref)(cfg) = v;
      return std::nullopt;
    }
    case FieldSpec::Kind::Float: {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
        return fmt::format("{}: expected a number, got '{}'", f.path, text);
      std::get<FieldSpec::FloatRef>(f.ref)(cfg) = v;
      return std::nullopt;
    }
    case FieldSpec::Kind::Bool: {
      if (text != "true" && text != "false") return fmt::format("{}: expected true or false, got '{}'", f.path, text);
      std::get<FieldSpec::BoolRef>(f.ref)(cfg) = text == "true";
      return std::nullopt;
    }
    case FieldSpec::Kind::String: {
      // One line of text: config.resolved.yaml must load back to the same value.
      // UTF-8 only: the value goes into report.json, which can hold nothing else.
      if (text.size() > 200 || not_utf8(text) || has_control_character(text))
        return fmt::format("{}: expected one line of text (UTF-8, at most 200 characters, no control characters)",
                           f.path);
      if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), text) == f.choices.end()) {
        return fmt::format("{}: '{}' is not one of {}{}", f.path, text, fmt::join(f.choices, ", "),
                           did_you_mean(text, f.choices));
      }
      std::get<FieldSpec::StringRef>(f.ref)(cfg) = text;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_range(const FieldSpec& f, const HwConfig& cfg) {
  double v = 0;
  auto& c = const_cast<HwConfig&>(cfg);  // read only; see field_value_text
  if (f.kind() == FieldSpec::Kind::Int) v = static_cast<double>(std::get<FieldSpec::IntRef>(f.ref)(c));
  else if (f.kind() == FieldSpec::Kind::Float) v = std::get<FieldSpec::FloatRef>(f.ref)(c);
  else return std::nullopt;
  const std::string shown = field_value_text(f, cfg);
  if (f.zero_allowed && v == 0) return std::nullopt;
  const std::string or_zero = f.zero_allowed ? " (or 0)" : "";
  if (!f.min_exclusive && v < f.min)
    return fmt::format("{}: must be at least {}{}, got {}", f.path, f.min, or_zero, shown);
  if (f.min_exclusive && !(v > f.min)) return fmt::format("{}: must be greater than {}, got {}", f.path, f.min, shown);
  if (v > f.max) return fmt::format("{}: must be at most {}, got {}", f.path, f.max, shown);
  return std::nullopt;
}

class Resolver {
public:
  ResolvedConfig out;
  std::vector<Diagnostic> diags;

  void apply_defaults() {
    for (const auto& f : schema()) {
      if (f.required()) continue;
      const std::string text = f.kind() == FieldSpec::Kind::String && f.default_value == "''" ? "" : f.default_value;
      assign(f, text, out.hw);
      out.from[f.path] = Source{"default", 0};
    }
  }

  // Walks one file's mapping: every key must be known, every leaf a scalar of
  // the right type. Later layers overwrite earlier ones.
  void apply_layer(const Layer& layer) {
    walk(layer, layer.root, "");
  }

  void apply_override(const Override& o) {
    const Source where{fmt::format("--set {}={}", o.key, o.value), 0};
    const FieldSpec* f = find_field(o.key);
    const auto& sections = schema_sections();
    if (!f && std::find(sections.begin(), sections.end(), o.key) != sections.end()) {
      std::vector<std::string> keys;
      for (const auto& field : schema())
        if (field.path.rfind(o.key + ".", 0) == 0) keys.push_back(field.path);
      diags.push_back({where, o.key, fmt::format("'{}' is a section, not a key: set one of its keys ({})", o.key,
                                                 fmt::join(keys, ", "))});
      return;
    }
    if (!f) {
      diags.push_back({where, o.key, fmt::format("unknown key '{}'{}", quote_input(o.key), did_you_mean(o.key, all_key_paths()))});
      return;
    }
    std::string text = o.value;
    try {
      const YAML::Node n = YAML::Load(o.value);
      if (n.IsScalar()) text = n.Scalar();
    } catch (const YAML::Exception&) {
      // Not YAML: take the text as written and let the type check judge it.
    }
    if (auto err = assign(*f, text, out.hw)) {
      diags.push_back({where, o.key, *err});
      return;
    }
    out.from[o.key] = where;
  }

  void check_required(const std::string& top_file) {
    for (const auto& f : schema()) {
      if (f.required() && !out.from.count(f.path))
        diags.push_back({{top_file, 1}, f.path, fmt::format("missing required key '{}' ({})", f.path, f.description)});
    }
  }

  void check_ranges() {
    for (const auto& f : schema()) {
      if (auto err = check_range(f, out.hw)) diags.push_back({out.from[f.path], f.path, *err});
    }
  }

  // Rules that tie fields together; each error is placed at the field a user
  // would change.
  void check_consistency() {
    const HwConfig& c = out.hw;
    const auto fail = [&](const std::string& key, std::string msg) {
      diags.push_back({out.from[key], key, fmt::format("{}: {}", key, msg)});
    };
    if (c.tensor.stationary_max_free > c.tensor.cols)
      fail("tensor.stationary_max_free",
           fmt::format("{} exceeds the array's {} columns", c.tensor.stationary_max_free, c.tensor.cols));
    // Every product below is of fields already within their limits, far
    // from overflowing int64.
    const std::int64_t bank_fp32 = c.psum.bank_kib * 1024 / 4;
    if (c.tensor.stationary_columns_per_cycle > c.tensor.cols)
      fail("tensor.stationary_columns_per_cycle",
           fmt::format("{} exceeds the array's {} columns", c.tensor.stationary_columns_per_cycle, c.tensor.cols));
    if (c.tensor.moving_max_free > bank_fp32)
      fail("tensor.moving_max_free",
           fmt::format("{} fp32 results per partition do not fit a PSUM bank of {} KiB ({} fp32)",
                       c.tensor.moving_max_free, c.psum.bank_kib, bank_fp32));
    if (c.tensor.rows > c.sbuf.partitions)
      fail("tensor.rows", fmt::format("{} array rows need as many SBUF partitions, but sbuf.partitions is {}",
                                      c.tensor.rows, c.sbuf.partitions));
    if (c.tensor.cols > c.psum.partitions)
      fail("tensor.cols", fmt::format("{} array columns write as many PSUM partitions, but psum.partitions is {}",
                                      c.tensor.cols, c.psum.partitions));
    if (c.tensor.mx_rows_per_pe != 0 && c.tensor.mx_rows_per_pe != 4)
      fail("tensor.mx_rows_per_pe",
           fmt::format("{}: MX matmul takes quads of elements per PE (4), or is absent (0)", c.tensor.mx_rows_per_pe));
    if (c.tensor.mx_rows_per_pe != 0 && c.tensor.rows % kMxRowsPerGroup != 0)
      fail("tensor.mx_rows_per_pe", fmt::format("MX scaling groups span {} partitions; tensor.rows {} is not a multiple",
                                                kMxRowsPerGroup, c.tensor.rows));
    if ((c.hbm.channels & (c.hbm.channels - 1)) != 0)
      fail("hbm.channels", fmt::format("{} is not a power of two (the channel hash takes the address modulo a "
                                       "polynomial of degree log2(channels))", c.hbm.channels));
    if (c.vector.lanes > c.sbuf.partitions)
      fail("vector.lanes", fmt::format("{} lanes exceed the {} SBUF partitions that feed them", c.vector.lanes,
                                       c.sbuf.partitions));
    // The models allocate SBUF and PSUM whole.
    if (c.sbuf.partitions * c.sbuf.partition_kib > kMaxSbufTotalKib)
      fail("sbuf.partition_kib", fmt::format("{} partitions of {} KiB make {} MiB of SBUF; at most {} MiB",
                                             c.sbuf.partitions, c.sbuf.partition_kib,
                                             c.sbuf.partitions * c.sbuf.partition_kib / 1024, kMaxSbufTotalKib / 1024));
    if (c.psum.partitions * c.psum.banks * c.psum.bank_kib > kMaxPsumTotalKib)
      fail("psum.bank_kib", fmt::format("{} partitions of {} banks of {} KiB make {} KiB of PSUM; at most {} KiB",
                                        c.psum.partitions, c.psum.banks, c.psum.bank_kib,
                                        c.psum.partitions * c.psum.banks * c.psum.bank_kib, kMaxPsumTotalKib));
    // The HBM model books time per channel in 64 ns bins; a channel slower
    // than 1 GB/s would take a bin per few bytes.
    if (static_cast<double>(c.hbm.channels) > c.hbm.bandwidth_gbps)
      fail("hbm.channels", fmt::format("{} channels share {} GB/s: each needs at least 1 GB/s", c.hbm.channels,
                                       c.hbm.bandwidth_gbps));
    // The chip's HBM follows the same rules as a core's (checked once the
    // core's own pass: a derived chip figure repeats a core's mistake).
    const bool core_hbm_ok = (c.hbm.channels & (c.hbm.channels - 1)) == 0 &&
                             static_cast<double>(c.hbm.channels) <= c.hbm.bandwidth_gbps;
    const HbmConfig chip = chip_hbm(c);
    const std::string chip_key = c.chip.hbm_channels > 0 ? "chip.hbm_channels" : "chip.cores";
    if (core_hbm_ok && (chip.channels & (chip.channels - 1)) != 0)
      fail(chip_key, fmt::format("the chip's HBM has {} channels{}, not a power of two (the channel hash takes the "
                                 "address modulo a polynomial of degree log2(channels))",
                                 chip.channels,
                                 c.chip.hbm_channels > 0
                                     ? ""
                                     : fmt::format(" (chip.cores {} x hbm.channels {}; set chip.hbm_channels)",
                                                   c.chip.cores, c.hbm.channels)));
    if (core_hbm_ok && static_cast<double>(chip.channels) > chip.bandwidth_gbps)
      fail(chip_key, fmt::format("{} channels share the chip's {} GB/s: each needs at least 1 GB/s", chip.channels,
                                 chip.bandwidth_gbps));
    if (static_cast<double>(chip.capacity_gib) > static_cast<double>((kSbufBase - kHbmBase) >> 30))
      fail(c.chip.hbm_capacity_gib > 0 ? "chip.hbm_capacity_gib" : "chip.cores",
           fmt::format("the chip's {} GiB of HBM exceed the {} GiB window below SBUF in the address map", chip.capacity_gib,
                       (kSbufBase - kHbmBase) >> 30));
    if (c.chip.lnc > c.chip.cores || c.chip.cores % c.chip.lnc != 0)
      fail("chip.lnc", fmt::format("logical cores of {} do not divide the chip's {} core{} (chip.cores)", c.chip.lnc,
                                   c.chip.cores, c.chip.cores == 1 ? "" : "s"));
    // A chip's cores address all of its HBM; one core's share cannot be more.
    if (c.chip.hbm_capacity_gib > 0 && c.chip.hbm_capacity_gib < c.hbm.capacity_gib)
      fail("chip.hbm_capacity_gib", fmt::format("the chip's {} GiB of HBM are less than one core's {} GiB (hbm.capacity_gib)",
                                                c.chip.hbm_capacity_gib, c.hbm.capacity_gib));
    // A DMA engine moves one AXI beat per cycle of its clock; a clock above
    // 16 GHz (a period under 62.5 ps) would round to nothing on the 1 ps
    // time grid.
    if (c.dma.bytes_per_ns > 16.0 * static_cast<double>(c.dma.axi_data_bytes))
      fail("dma.bytes_per_ns", fmt::format("{} B/ns over a {}-byte AXI bus is a {:.1f} GHz DMA clock; at most 16 GHz "
                                           "(raise dma.axi_data_bytes)",
                                           c.dma.bytes_per_ns, c.dma.axi_data_bytes,
                                           c.dma.bytes_per_ns / static_cast<double>(c.dma.axi_data_bytes)));
  }

private:
  void walk(const Layer& layer, const YAML::Node& map, const std::string& prefix) {
    std::set<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const Source where{layer.file, line_of(it->first)};
      if (!it->first.IsScalar()) {
        diags.push_back({where, prefix, "keys must be plain names"});
        continue;
      }
      const std::string key = it->first.Scalar();
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      if (!seen.insert(key).second) {
        diags.push_back({where, path, fmt::format("duplicate key '{}'", path)});
        continue;
      }
      if (path == "base") continue;  // handled by the chain loader
      const auto& sections = schema_sections();
      if (std::find(sections.begin(), sections.end(), path) != sections.end()) {
        if (!it->second.IsMap()) {
          diags.push_back({where, path, fmt::format("'{}' is a section: expected a mapping of keys", path)});
          continue;
        }
        walk(layer, it->second, path);
        continue;
      }
      const FieldSpec* f = find_field(path);
      if (!f) {
        diags.push_back({where, path, fmt::format("unknown key '{}'{}", quote_input(path), did_you_mean(path, all_key_paths()))});
        continue;
      }
      if (it->second.IsNull()) {
        diags.push_back({where, path, fmt::format("{}: has no value", path)});
        continue;
      }
      if (!it->second.IsScalar()) {
        diags.push_back({where, path, fmt::format("{}: expected a single value, not a list or mapping", path)});
        continue;
      }
      if (auto err = assign(*f, it->second.Scalar(), out.hw)) {
        diags.push_back({where, path, *err});
        continue;
      }
      out.from[path] = where;
    }
  }
};

}  // namespace

Override parse_override(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw ConfigError({{{fmt::format("--set {}", text), 0}, "", "expected --set path.to.key=value"}});
  return {text.substr(0, eq), text.substr(eq + 1)};
}

ResolvedConfig load_config(const std::string& name_or_file, const std::vector<Override>& overrides) {
  ChainLoader chain;
  chain.load(name_or_file);
  if (!chain.diags.empty()) throw ConfigError(chain.diags);

  Resolver r;
  r.apply_defaults();
  for (auto it = chain.layers.rbegin(); it != chain.layers.rend(); ++it) r.apply_layer(*it);
  for (const auto& o : overrides) r.apply_override(o);
  const std::string& top = chain.layers.front().file;
  r.check_required(top);
  if (r.diags.empty()) r.check_ranges();
  if (r.diags.empty()) r.check_consistency();
  if (!r.diags.empty()) throw ConfigError(r.diags);

  ResolvedConfig out = std::move(r.out);
  if (out.hw.name.empty()) out.hw.name = fs::path(top).stem().string();
  for (const auto& l : chain.layers) out.chain.push_back(l.file);
  out.derived = derive(out.hw);
  return out;
}

}  // namespace tessera::arch
