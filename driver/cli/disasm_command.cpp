// `tessera disasm`: the program a kernel builds, as the engines and DMA
// queues will run it, each instruction and descriptor with the builder call
// (file:line) and label that made it. Nothing is simulated.
#include "commands.h"
#include "files.h"
#include "kernel_command.h"

#include "arch/config_format.h"
#include "common/kernel.h"
#include "tessera/device.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

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
  const kernels::KernelRequest request = checked_request(o.kernel, o.variant, o.shape, o.params, 1);
  if (!o.out.empty()) prepare_output(o.out);

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
  cmd->callback(
      [o, exit_code] { *exit_code = run_reporting_errors("tessera disasm", [&] { return disasm(*o); }); });
}

}  // namespace tessera::cli
