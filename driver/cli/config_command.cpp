#include "commands.h"

#include "arch/config.h"
#include "arch/config_format.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>

namespace tessera::cli {
namespace {

void print_errors(const arch::ConfigError& e) {
  for (const auto& d : e.diagnostics()) std::cerr << d.str() << '\n';
}

struct ShowOptions {
  std::string name;
  std::vector<std::string> sets;
  bool json = false;
};

}  // namespace

void add_config_command(CLI::App& app, int* exit_code) {
  CLI::App* config = app.add_subcommand("config", "Validate and show hardware configs");
  config->require_subcommand(1);

  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* validate = config->add_subcommand("validate", "Check config files; errors as FILE:LINE: message");
  validate->add_option("files", *files, "Config names or YAML files")->required();
  validate->callback([files, exit_code] {
    for (const auto& f : *files) {
      try {
        const auto rc = arch::load_config(f);
        fmt::print("{}: ok ({})\n", f, rc.hw.name);
      } catch (const arch::ConfigError& e) {
        print_errors(e);
        *exit_code = kExitBadInput;
      }
    }
  });

  auto show_opts = std::make_shared<ShowOptions>();
  CLI::App* show = config->add_subcommand("show", "Print the fully resolved config with derived figures");
  show->add_option("config", show_opts->name, "Config name or YAML file")->required();
  show->add_option("--set", show_opts->sets, "Override a key: path.to.key=value (repeatable)");
  show->add_flag("--json", show_opts->json, "Print JSON instead of annotated YAML");
  show->callback([show_opts, exit_code] {
    try {
      std::vector<arch::Override> overrides;
      for (const auto& s : show_opts->sets) overrides.push_back(arch::parse_override(s));
      const auto rc = arch::load_config(show_opts->name, overrides);
      if (show_opts->json) {
        std::cout << arch::to_json(rc).dump(2) << '\n';
      } else {
        std::cout << arch::to_annotated_yaml(rc);
      }
    } catch (const arch::ConfigError& e) {
      print_errors(e);
      *exit_code = kExitBadInput;
    }
  });

  CLI::App* schema = config->add_subcommand("schema", "Print the config schema as a Markdown table");
  schema->callback([] { std::cout << arch::schema_markdown(); });
}

}  // namespace tessera::cli
