// tessera: the one command line of the testbench (README.md, "The `tessera` command line").
#include "commands.h"
#include "files.h"
#include "heap_pages.h"

#include "common/kernel.h"
#include "tessera/kernel_builder.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>
#include <systemc>  // declares sc_main with C linkage

namespace {

// Plugins load before the command line is parsed, so that every subcommand
// sees their kernels; all of them go into TESSERA_PLUGINS (absolute paths),
// so that the `tessera run` processes regress and sweep start, here or
// under Slurm, load them too.
bool load_plugins(int argc, char** argv) {
  try {
    tessera::kernels::load_env_plugins();
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--plugin") == 0 && i + 1 < argc) tessera::kernels::load_plugin(argv[++i]);
      else if (std::strncmp(argv[i], "--plugin=", 9) == 0) tessera::kernels::load_plugin(argv[i] + 9);
    }
    tessera::kernels::registry();  // a plugin's bad registration is reported here
  } catch (const std::exception& e) {
    std::cerr << "tessera: " << e.what() << '\n';
    return false;
  }
  const auto& loaded = tessera::kernels::loaded_plugins();
  if (!loaded.empty()) setenv("TESSERA_PLUGINS", fmt::format("{}", fmt::join(loaded, ":")).c_str(), 1);
  return true;
}

// The heap in huge pages (heap_pages.h), decided before the libraries' and
// the program's static initialisers run (an executable's .preinit_array runs
// first), so that a new start does not run them twice.
void start_with_huge_page_heap(int, char** argv, char** envp) { tessera::cli::restart_with_huge_page_heap(argv, envp); }
[[gnu::section(".preinit_array"), gnu::used]] void (*const huge_page_heap_first)(int, char**, char**) =
    start_with_huge_page_heap;

}  // namespace

// SystemC's library has a main() that prints a banner, then calls sc_main.
// Ours replaces it, so that the banner stays out of reports.
int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int argc, char** argv) {
  CLI::App app{"Tessera: a NeuronCore-class accelerator testbench"};
  app.require_subcommand(1);
  if (!load_plugins(argc, argv)) return tessera::cli::kExitBadInput;
  // Accepted anywhere on the line (subcommands fall through to it); loaded above.
  std::vector<std::string> plugins;
  app.add_option("--plugin", plugins,
                 "Load kernels from a plugin: a shared library or a Python file (repeatable; also $TESSERA_PLUGINS, "
                 "':'-separated)");
  app.fallthrough();
  int exit_code = 0;
  tessera::cli::add_config_command(app, &exit_code);
  tessera::cli::add_list_command(app, &exit_code);
  tessera::cli::add_run_command(app, &exit_code);
  tessera::cli::add_disasm_command(app, &exit_code);
  tessera::cli::add_regress_command(app, &exit_code);
  tessera::cli::add_sweep_command(app, &exit_code);
  tessera::cli::add_calibrate_command(app, &exit_code);
  tessera::cli::add_tune_command(app, &exit_code);
  tessera::cli::add_compare_command(app, &exit_code);
  // A first word that is no command is named as such (CLI11 would only say
  // that a subcommand is required).
  std::vector<std::string> names;
  for (const CLI::App* c : app.get_subcommands({})) names.push_back(c->get_name());
  if (argc > 1 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    std::cerr << "tessera: unknown command '" << argv[1] << "' (commands: ";
    for (std::size_t i = 0; i < names.size(); ++i) std::cerr << (i ? ", " : "") << names[i];
    std::cerr << "; tessera --help)\n";
    return tessera::cli::kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return tessera::cli::kExitBadInput;
  } catch (const tessera::cli::FileError& e) {
    // A file that cannot be read or written, by its name.
    std::cerr << "tessera: " << e.what() << '\n';
    return tessera::cli::kExitBadInput;
  } catch (const std::exception& e) {
    // Anything else a command let through, rather than SystemC's report of
    // an uncaught exception.
    std::cerr << "tessera: " << e.what() << '\n';
    return tessera::cli::kExitBadInput;
  }
  return exit_code;
}
