#include "arch/config_input.h"

#include <fmt/format.h>

namespace tessera::arch {

std::optional<int> too_deep(const std::string& text) {
  int depth = 0, line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (depth > kMaxYamlDepth) return line;
    if (c == '\n' || i + 1 == text.size()) {
      // Block nesting: each level indents at least one more column.
      const std::size_t indent = text.find_first_not_of(" -", line_start);
      if (indent != std::string::npos && indent <= i && indent - line_start > 2 * kMaxYamlDepth) return line;
      ++line;
      line_start = i + 1;
    }
  }
  return std::nullopt;
}

std::string quote_input(const std::string& text, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  if (text.size() > max) out += "...";
  return out;
}

}  // namespace tessera::arch
