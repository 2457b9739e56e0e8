#include "arch/config_format.h"

#include "arch/config_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace tessera::arch {
namespace {

std::string section_of(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

std::string leaf_of(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::size_t depth_of(const std::string& path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '.'));
}

nlohmann::json json_value(const FieldSpec& f, const HwConfig& cfg) {
  auto& c = const_cast<HwConfig&>(cfg);  // read only; see field_value_text
  switch (f.kind()) {
    case FieldSpec::Kind::Int: return std::get<FieldSpec::IntRef>(f.ref)(c);
    case FieldSpec::Kind::Float: return std::get<FieldSpec::FloatRef>(f.ref)(c);
    case FieldSpec::Kind::Bool: return std::get<FieldSpec::BoolRef>(f.ref)(c);
    case FieldSpec::Kind::String: return std::get<FieldSpec::StringRef>(f.ref)(c);
  }
  return nullptr;
}

}  // namespace

std::string to_annotated_yaml(const ResolvedConfig& rc) {
  std::string out = fmt::format("# Resolved config '{}' from {}\n", rc.hw.name, fmt::join(rc.chain, " <- "));
  std::string open_section;
  for (const auto& f : schema()) {
    const std::string section = section_of(f.path);
    if (section != open_section) {
      // Open every level of the new section that the previous one did not share.
      std::string prefix;
      for (std::size_t start = 0; start <= section.size() && !section.empty();) {
        std::size_t dot = section.find('.', start);
        if (dot == std::string::npos) dot = section.size();
        prefix = section.substr(0, dot);
        if (open_section != prefix && open_section.rfind(prefix + ".", 0) != 0)
          out += fmt::format("{:{}}{}:\n", "", 2 * depth_of(prefix), leaf_of(prefix));
        start = dot + 1;
      }
      open_section = section;
    }
    const std::string unit = f.unit.empty() ? "" : fmt::format("[{}] ", f.unit);
    const auto from = rc.from.find(f.path);
    const std::string where = from == rc.from.end() ? "" : fmt::format(" ({})", from->second.str());
    const std::string lhs = fmt::format("{:{}}{}: {}", "", 2 * depth_of(f.path), leaf_of(f.path),
                                        field_value_text(f, rc.hw));
    out += fmt::format("{:<44} # {}{}{}\n", lhs, unit, f.description, where);
  }
  const DerivedFigures& d = rc.derived;
  out += "\n# Derived figures (computed from the fields above):\n";
  for (const auto& [dtype, tflops] : d.peak_tflops)
    out += fmt::format("#   peak_tflops.{:<10} {:.1f} TFLOPS\n", to_string(dtype), tflops);
  out += fmt::format("#   sbuf_total             {:.2f} MiB\n", d.sbuf_total_mib);
  out += fmt::format("#   psum_total             {:.0f} KiB ({} fp32 per bank per partition)\n", d.psum_total_kib,
                     d.psum_bank_fp32_per_partition);
  out += fmt::format("#   hbm_per_tensor_cycle   {:.1f} bytes/cycle\n", d.hbm_bytes_per_tensor_cycle);
  out += fmt::format("#   dma_total              {:.0f} GB/s over {} engines\n", d.dma_total_gbps, rc.hw.dma.engines);
  out += fmt::format("#   chip                   {} cores sharing {} GiB of HBM at {} GB/s over {} channels\n",
                     rc.hw.chip.cores, d.chip_hbm.capacity_gib, d.chip_hbm.bandwidth_gbps, d.chip_hbm.channels);
  out += fmt::format("#   rtl_build              {}\n",
                     d.rtl_build_available ? fmt::format("yes ({}x{})", rc.hw.tensor.rows, rc.hw.tensor.cols)
                                           : fmt::format("no {}x{} build (built: {})", rc.hw.tensor.rows,
                                                         rc.hw.tensor.cols, fmt::join(rtl_array_sizes(), ", ")));
  return out;
}

nlohmann::json to_json(const ResolvedConfig& rc) {
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json sources = nlohmann::json::object();
  for (const auto& f : schema()) {
    config[nlohmann::json::json_pointer("/" + [&] {
      std::string p = f.path;
      std::replace(p.begin(), p.end(), '.', '/');
      return p;
    }())] = json_value(f, rc.hw);
    if (auto it = rc.from.find(f.path); it != rc.from.end()) sources[f.path] = it->second.str();
  }
  nlohmann::json peak = nlohmann::json::object();
  for (const auto& [dtype, tflops] : rc.derived.peak_tflops) peak[to_string(dtype)] = tflops;
  const DerivedFigures& d = rc.derived;
  return {
      {"config", config},
      {"derived",
       {{"peak_tflops", peak},
        {"sbuf_total_mib", d.sbuf_total_mib},
        {"psum_total_kib", d.psum_total_kib},
        {"psum_bank_fp32_per_partition", d.psum_bank_fp32_per_partition},
        {"hbm_bytes_per_tensor_cycle", d.hbm_bytes_per_tensor_cycle},
        {"dma_total_gbps", d.dma_total_gbps},
        {"chip_hbm",
         {{"capacity_gib", d.chip_hbm.capacity_gib},
          {"bandwidth_gbps", d.chip_hbm.bandwidth_gbps},
          {"channels", d.chip_hbm.channels}}},
        {"rtl_build_available", d.rtl_build_available}}},
      {"sources", sources},
      {"chain", rc.chain},
  };
}

std::string schema_markdown() {
  std::string out = "| key | type | unit | default | limits | description |\n|---|---|---|---|---|---|\n";
  for (const auto& f : schema()) {
    static const char* kinds[] = {"int", "float", "bool", "string"};
    std::string limits;
    if (!f.choices.empty()) limits = fmt::format("{}", fmt::join(f.choices, " / "));
    const bool has_min = f.min != -std::numeric_limits<double>::infinity();
    const bool has_max = f.max != std::numeric_limits<double>::infinity();
    if (f.zero_allowed) limits += "0, or ";
    if (has_min) limits += fmt::format("{} {}", f.min_exclusive ? ">" : ">=", f.min);
    if (has_max) limits += fmt::format("{}<= {}", has_min ? ", " : "", f.max);
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", f.path, kinds[static_cast<int>(f.kind())], f.unit,
                       f.required() ? "**required**" : fmt::format("`{}`", f.default_value), limits, f.description);
  }
  return out;
}

}  // namespace tessera::arch
