// The config schema: every field declared once with its type, unit, default,
// limits and description (gem5's Param habit). Every numeric field has both
// a lower and an upper limit, physically sensible ones: they keep every
// derived size, time and allocation of a valid config in range (a key added
// later declares its limits here too; a test checks each has them). The loader, `tessera config
// show`, the JSON dump and docs/configs.md are all generated from this table.
#pragma once

#include "arch/config.h"

#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

namespace tessera::arch {

struct FieldSpec {
  enum class Kind { Int, Float, Bool, String };

  using IntRef = std::int64_t& (*)(HwConfig&);
  using FloatRef = double& (*)(HwConfig&);
  using BoolRef = bool& (*)(HwConfig&);
  using StringRef = std::string& (*)(HwConfig&);
  using Ref = std::variant<IntRef, FloatRef, BoolRef, StringRef>;

  std::string path;  // dotted, e.g. "tensor.rows"
  Ref ref;
  std::string unit;
  std::string description;
  std::string default_value;  // YAML text; empty means the field is required
  double min = -std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  double max = std::numeric_limits<double>::infinity();
  bool zero_allowed = false;  // 0 is also valid (e.g. "unsupported"), besides [min, max]
  std::vector<std::string> choices;  // String fields: allowed values

  Kind kind() const { return static_cast<Kind>(ref.index()); }
  bool required() const { return default_value.empty(); }

  // Builder-style setters, so the table in config_schema.cpp reads as a list.
  FieldSpec& def(std::string v) { default_value = std::move(v); return *this; }
  FieldSpec& at_least(double v) { min = v; min_exclusive = false; return *this; }
  FieldSpec& above(double v) { min = v; min_exclusive = true; return *this; }
  FieldSpec& at_most(double v) { max = v; return *this; }
  FieldSpec& or_zero() { zero_allowed = true; return *this; }
  FieldSpec& one_of(std::vector<std::string> v) { choices = std::move(v); return *this; }
};

// Every leaf field, in the order configs and docs present them.
const std::vector<FieldSpec>& schema();

// Sections (non-leaf paths such as "tensor" or "tensor.rate"), for key checks.
const std::vector<std::string>& schema_sections();

// A FieldSpec for `path`, or nullptr.
const FieldSpec* find_field(const std::string& path);

// Reads a field's current value from a config as YAML text.
std::string field_value_text(const FieldSpec& f, const HwConfig& cfg);

}  // namespace tessera::arch
