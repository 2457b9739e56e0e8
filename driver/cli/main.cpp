// tessera: the one command line of the testbench (see docs/cli.md).
#include "commands.h"

#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"Tessera: a NeuronCore-class accelerator testbench"};
  app.require_subcommand(1);
  int exit_code = 0;
  tessera::cli::add_config_command(app, &exit_code);
  tessera::cli::add_list_command(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return tessera::cli::kExitBadInput;
  }
  return exit_code;
}
