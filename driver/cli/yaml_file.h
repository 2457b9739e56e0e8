// Reading the command line's own YAML inputs (suites, studies): one place
// for what every such file must be before its keys are looked at.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::cli {

// "FILE:LINE: message" or "FILE: message" for a file that cannot be used.
class YamlFileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Parses `path`: a readable file (not a folder), at most 16 MiB, valid YAML
// nested at most 64 deep, without a key given twice in any mapping (YAML
// would silently keep one of them). Throws YamlFileError naming the file and
// line; parse errors quote none of the file's text.
YAML::Node load_yaml_file(const std::string& path);

// The line `n` starts on (from 1), or 0 where yaml-cpp kept no mark.
inline int line_of(const YAML::Node& n) { return n.Mark().is_null() ? 0 : n.Mark().line + 1; }

// Each reader throws its own error type (SuiteError, StudyError, ...); the
// messages are the same everywhere: "FILE:LINE: message".
template <typename Error>
[[noreturn]] void fail_at(const std::string& file, const YAML::Node& at, const std::string& message) {
  throw Error(fmt::format("{}:{}: {}", file, line_of(at), message));
}

// `map` is a mapping whose keys are all in `allowed`; `where` names it.
template <typename Error>
void check_keys(const std::string& file, const YAML::Node& map, const std::set<std::string>& allowed,
                const std::string& where) {
  if (!map.IsMap()) fail_at<Error>(file, map, fmt::format("{} must be a mapping", where));
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (!allowed.count(key))
      fail_at<Error>(file, it->first,
                     fmt::format("unknown key '{}' in {} (allowed: {})", key, where, fmt::join(allowed, ", ")));
  }
}

// `n` read as a T, the value of `key`.
template <typename T, typename Error>
T scalar_as(const std::string& file, const YAML::Node& n, const std::string& key) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    fail_at<Error>(file, n, fmt::format("'{}' has the wrong type", key));
  }
}

// A plain decimal integer that fits 64 bits ("-1", "1e23" and "2^64" are not).
bool parse_u64(const std::string& text, std::uint64_t* out);

// `cores` of a suite test or a study kernel entry: a core count (tessera run
// --cores N) or a list of them, each from 1 to `most` (a chip's limit).
template <typename Error>
std::vector<int> core_counts(const std::string& file, const YAML::Node& n, int most) {
  std::vector<YAML::Node> items;
  if (n.IsSequence()) {
    if (n.size() == 0) fail_at<Error>(file, n, "'cores' must not be empty");
    for (const auto& item : n) items.push_back(item);
  } else {
    items.push_back(n);
  }
  std::vector<int> out;
  for (const auto& item : items) {
    std::uint64_t v = 0;
    if (!item.IsScalar() || !parse_u64(item.Scalar(), &v) || v < 1 || v > static_cast<std::uint64_t>(most))
      fail_at<Error>(file, item, fmt::format("'cores' must be core counts from 1 to {}, not {}", most,
                                             item.IsScalar() ? item.Scalar() : std::string("a mapping")));
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) != out.end())
      fail_at<Error>(file, item, fmt::format("'cores': {} appears twice", v));
    out.push_back(static_cast<int>(v));
  }
  return out;
}

}  // namespace tessera::cli
