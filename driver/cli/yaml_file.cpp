#include "yaml_file.h"

#include "files.h"

#include "arch/config_input.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>

namespace tessera::cli {
namespace {

constexpr std::uintmax_t kMaxBytes = 16u << 20;

int line_of(const YAML::Node& n) { return n.Mark().is_null() ? 0 : n.Mark().line + 1; }

void check_duplicates(const std::string& path, const YAML::Node& n) {
  if (n.IsMap()) {
    std::set<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (it->first.IsScalar() && !seen.insert(it->first.Scalar()).second)
        throw YamlFileError(fmt::format("{}:{}: duplicate key '{}'", path, line_of(it->first),
                                        arch::quote_input(it->first.Scalar())));
      check_duplicates(path, it->second);
    }
  } else if (n.IsSequence()) {
    for (const auto& item : n) check_duplicates(path, item);
  }
}

// The line of the first C0 control character other than tab, line feed and
// carriage return, which YAML does not allow in a stream (YAML 1.2, 5.1
// c-printable): yaml-cpp reads them anyway, and turned a NUL inside a plain
// scalar into a lone 0xA0 byte, which is not UTF-8 (found by fuzz_study:
// results.json could not be written).
std::optional<std::pair<int, unsigned>> control_character(const std::string& text) {
  int line = 1;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') ++line;
    else if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) return std::make_pair(line, unsigned{c});
  }
  return std::nullopt;
}

}  // namespace

YAML::Node load_yaml_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!ec && size > kMaxBytes)
    throw YamlFileError(fmt::format("{}: {} bytes: too large for a suite or study (at most {} MiB)", path, size,
                                    kMaxBytes >> 20));
  std::string text;
  try {
    text = read_file(path);
  } catch (const FileError& e) {
    throw YamlFileError(e.what());
  }
  // Names, values and descriptions go into results.json and junit.xml.
  if (const auto line = arch::not_utf8(text))
    throw YamlFileError(fmt::format("{}:{}: not UTF-8 text (a suite or study is a UTF-8 YAML file)", path, *line));
  if (const auto found = control_character(text))
    throw YamlFileError(fmt::format("{}:{}: holds the control character 0x{:02X} (YAML allows tab, line feed and "
                                    "carriage return only)",
                                    path, found->first, found->second));
  if (const auto line = arch::too_deep(text))
    throw YamlFileError(fmt::format("{}:{}: nested more than {} deep", path, *line, arch::kMaxYamlDepth));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw YamlFileError(fmt::format("{}:{}: YAML syntax error: {}", path, e.mark.line + 1, e.msg));
  } catch (const YAML::Exception& e) {
    throw YamlFileError(fmt::format("{}: cannot read: {}", path, e.msg));
  }
  check_duplicates(path, root);
  return root;
}

bool parse_u64(const std::string& text, std::uint64_t* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

}  // namespace tessera::cli
