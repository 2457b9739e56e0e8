// What the commands that run or build one kernel (`run`, `disasm`) share:
// the request they name, checked before a device opens, and how their
// errors reach the user.
#pragma once

#include "common/kernel.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tessera::cli {

// The request of --kernel, --variant, --shape and --param (repeatable),
// checked against the registry so that a typo (an unknown kernel, variant,
// parameter or shape, a parameter given twice) is the error a user sees:
// throws KernelError.
kernels::KernelRequest checked_request(const std::string& kernel, const std::string& variant, const std::string& shape,
                                       const std::vector<std::string>& params, std::uint64_t seed);

// Runs the command's body and returns its exit status: a bad config, kernel
// request or file is printed and gives kExitBadInput, any other failure 1.
int run_reporting_errors(const char* command, const std::function<int()>& body);

}  // namespace tessera::cli
