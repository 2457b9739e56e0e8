// libFuzzer harness: the config loader with --set overrides. The input is a
// config file, then (after a NUL byte) one override per line. Whatever it
// is, the loader returns a config or throws ConfigError; a config it returns
// must write out (config.resolved.yaml) as text that loads back to the same
// values.
#include "arch/config.h"
#include "arch/config_format.h"
#include "arch/config_schema.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

std::string temp_path(const char* name) {
  return std::string("/tmp/tessera_fuzz_") + std::to_string(getpid()) + "_" + name;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tessera::arch;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string yaml = input.substr(0, nul);
  std::vector<Override> overrides;
  if (nul != std::string::npos) {
    std::size_t start = nul + 1;
    while (start < input.size() && overrides.size() < 16) {
      std::size_t end = input.find('\n', start);
      if (end == std::string::npos) end = input.size();
      try {
        overrides.push_back(parse_override(input.substr(start, end - start)));
      } catch (const ConfigError&) {
      }
      start = end + 1;
    }
  }
  const std::string file = temp_path("config.yaml");
  std::ofstream(file) << yaml;
  try {
    const ResolvedConfig rc = load_config(file, overrides);
    // The resolved config loads back to the same values.
    const std::string back_file = temp_path("resolved.yaml");
    std::ofstream(back_file) << to_annotated_yaml(rc);
    const ResolvedConfig back = load_config(back_file);
    for (const auto& f : schema())
      if (f.path != "name" && field_value_text(f, rc.hw) != field_value_text(f, back.hw)) {
        std::fprintf(stderr, "%s does not round-trip: %s vs %s\n", f.path.c_str(), field_value_text(f, rc.hw).c_str(),
                     field_value_text(f, back.hw).c_str());
        std::abort();
      }
    (void)to_json(rc);
  } catch (const ConfigError&) {
  }
  return 0;
}
