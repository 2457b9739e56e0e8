#include "arch/config_input.h"

#include <algorithm>

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

std::optional<int> not_utf8(const std::string& text) {
  int line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') ++line;
    if (c < 0x80) {
      ++i;
      continue;
    }
    // A lead byte and its continuation bytes, shortest form, no surrogates,
    // nothing above U+10FFFF.
    const std::size_t n = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || i + n > text.size()) return line;
    char32_t cp = c & (0xff >> (n + 1));
    for (std::size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xc0) != 0x80) return line;
      cp = (cp << 6) | (b & 0x3f);
    }
    const char32_t least = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return line;
    i += n;
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

bool has_control_character(const std::string& text) {
  return std::any_of(text.begin(), text.end(),
                     [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; });
}

}  // namespace tessera::arch
