// The kernel registry (kernels/common/kernel.h) as the study parser's
// KernelLookup: what `tessera sweep` and the tests check studies against.
// The parser itself (study.cpp) does not link the kernel library, so that
// the study fuzz harness can drive it with a table of its own.
#pragma once

#include "study.h"

namespace tessera::cli::sweep {

// The registry's kernels, library and loaded plugins alike.
const KernelLookup& registry_kernels();

// A study checked against the registry.
inline Study load_study(const std::string& path, const std::set<std::string>& only_kernels = {}) {
  return load_study(path, registry_kernels(), only_kernels);
}

}  // namespace tessera::cli::sweep
