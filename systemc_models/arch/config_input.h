// Checks on YAML text before it is parsed, shared by every YAML input of
// the project (configs here; suites and studies in the command line): a
// file a user points at may be anything.
#pragma once

#include <optional>
#include <string>

namespace tessera::arch {

// Deepest nesting a YAML input may have: yaml-cpp parses by recursion.
inline constexpr int kMaxYamlDepth = 64;

// The 1-based line where `text` nests deeper than kMaxYamlDepth (flow
// brackets and braces, or block indentation), if it does.
std::optional<int> too_deep(const std::string& text);

// The 1-based line of the first byte of `text` that is not part of valid
// UTF-8, if there is one. yaml-cpp passes such bytes through, and the JSON
// written from what was read (report.json, results.json) cannot hold them.
std::optional<int> not_utf8(const std::string& text);

// Whether `text` holds a control character (below 0x20, tab and newline
// included, or DEL): what a one-line text value (a config string, a study's
// description) may not hold.
bool has_control_character(const std::string& text);

// `text` cut to `max` characters with control characters shown as \xNN,
// for quoting a user's input back in a message.
std::string quote_input(const std::string& text, std::size_t max = 40);

}  // namespace tessera::arch
