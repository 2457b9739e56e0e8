// Subcommands of the `tessera` command line. Each registers itself on the
// app and sets `*exit_code` when it runs.
#pragma once

#include <CLI/CLI.hpp>

namespace tessera::cli {

// Exit status for invalid input (a bad config, an unknown name): distinct from
// 1 (a run that failed) so scripts can tell them apart.
inline constexpr int kExitBadInput = 2;
// Exit status of a run cut short by Ctrl-C (SIGINT) after writing what it had
// (the shell's 128 + SIGINT).
inline constexpr int kExitInterrupted = 130;

void add_config_command(CLI::App& app, int* exit_code);
void add_list_command(CLI::App& app, int* exit_code);
void add_run_command(CLI::App& app, int* exit_code);
void add_disasm_command(CLI::App& app, int* exit_code);
void add_regress_command(CLI::App& app, int* exit_code);
void add_sweep_command(CLI::App& app, int* exit_code);
void add_calibrate_command(CLI::App& app, int* exit_code);
void add_compare_command(CLI::App& app, int* exit_code);
void add_tune_command(CLI::App& app, int* exit_code);

}  // namespace tessera::cli
