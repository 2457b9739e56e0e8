// Test helper: a shipped config by name, read from the source tree's configs/
// (TESSERA_SOURCE_CONFIG_DIR, set by the test's CMake target), loaded once.
#pragma once

#include "arch/config.h"

#include <cstdlib>
#include <map>
#include <string>

namespace tessera::test_support {

inline const arch::HwConfig& shipped_config(const std::string& name) {
  static std::map<std::string, arch::HwConfig> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
    it = cache.emplace(name, arch::load_config(name).hw).first;
  }
  return it->second;
}

}  // namespace tessera::test_support
