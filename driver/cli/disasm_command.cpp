// `tessera disasm`: the program a kernel builds, as the engines and DMA
// queues will run it, each instruction and descriptor with the builder call
// (file:line) and label that made it. Nothing is simulated.
#include "commands.h"
#include "files.h"

#include "arch/config_format.h"
#include "common/kernel.h"
#include "tessera/device.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

namespace tessera::cli {
namespace {

struct DisasmOptions {
  std::string config, kernel, variant, shape, out;
  std::vector<std::string> params, sets;
};

int disasm(const DisasmOptions& o) {
  for (const auto& [value, option] : {std::pair{&o.config, "--config"}, std::pair{&o.kernel, "--kernel"}})
    if (value->empty()) {
      std::cerr << fmt::format("tessera disasm: {} is required (tessera disasm --help)\n", option);
      return kExitBadInput;
    }
  kernels::KernelRequest request{o.kernel, o.variant, kernels::parse_shape(o.shape), {}, 1};
  for (const auto& text : o.params)
    for (const auto& [name, value] : kernels::parse_param_text(text)) {
      if (request.params.count(name)) throw KernelError(fmt::format("--param: '{}' is given twice", name));
      request.params[name] = value;
    }
  const kernels::KernelSpec& spec = kernels::kernel_named(o.kernel);
  kernels::check_params(spec, o.variant, request.params);
  kernels::resolve_shape(spec, request.shape);
  if (!o.out.empty()) {
    const std::filesystem::path path(o.out);
    if (path.has_parent_path()) make_dirs(path.parent_path());
    check_writable(path);
  }

  DeviceOptions dev_opts;
  dev_opts.config = o.config;
  dev_opts.no_data = true;  // the program does not depend on the data
  for (const auto& s : o.sets) dev_opts.overrides.push_back(arch::parse_override(s));
  Device dev(dev_opts);
  const kernels::Instance instance = kernels::instantiate(dev, request);
  const std::string text = instance.kernel->build().disassemble();
  if (o.out.empty()) std::cout << text;
  else write_file(o.out, text);
  return 0;
}

}  // namespace

void add_disasm_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<DisasmOptions>();
  CLI::App* cmd = app.add_subcommand(
      "disasm", "Print the program a kernel builds: every engine's instructions and every DMA queue's descriptors, "
                "each with its call site and label (nothing is simulated)");
  cmd->add_option("--config", o->config, "Config name or YAML file (required)");
  cmd->add_option("--kernel", o->kernel, "Kernel name, tessera list kernels (required)");
  cmd->add_option("--variant", o->variant, "Kernel variant (default: the kernel's first)");
  cmd->add_option("--shape", o->shape, "Shape parameters, e.g. M=512,N=1024,K=256 (default: the kernel's)");
  cmd->add_option("--param", o->params, "Tunable parameters, e.g. bm=4,bk=8 (repeatable; default: the kernel's)");
  cmd->add_option("--set", o->sets, "Override a config key: path.to.key=value (repeatable)");
  cmd->add_option("--out", o->out, "Write the listing to this file instead of standard output");
  cmd->callback([o, exit_code] {
    try {
      *exit_code = disasm(*o);
    } catch (const arch::ConfigError& e) {
      for (const auto& d : e.diagnostics()) std::cerr << d.str() << '\n';
      *exit_code = kExitBadInput;
    } catch (const KernelError& e) {
      std::cerr << "tessera disasm: " << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const FileError& e) {
      std::cerr << "tessera disasm: " << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const std::exception& e) {
      std::cerr << "tessera disasm: " << e.what() << '\n';
      *exit_code = 1;
    }
  });
}

}  // namespace tessera::cli
