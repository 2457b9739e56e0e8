// Reading the command line's own YAML inputs (suites, studies): one place
// for what every such file must be before its keys are looked at.
#pragma once

#include <yaml-cpp/yaml.h>

#include <stdexcept>
#include <string>

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

// A plain decimal integer that fits 64 bits ("-1", "1e23" and "2^64" are not).
bool parse_u64(const std::string& text, std::uint64_t* out);

}  // namespace tessera::cli
