// Running another program: always by an argument vector (execvp), never
// through a shell, so that no value a user gave is ever parsed as a command.
#pragma once

#include <string>
#include <vector>

namespace tessera::cli {

// Runs argv[0] (looked up on PATH) with the arguments; its stdout and stderr
// go to `out` and `err` when given, else to ours. Its exit status, or -1 when
// it could not start or did not exit normally (a signal).
int run_program(const std::vector<std::string>& argv, std::string* out = nullptr, std::string* err = nullptr);

}  // namespace tessera::cli
