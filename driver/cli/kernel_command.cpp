#include "kernel_command.h"

#include "commands.h"
#include "files.h"

#include "arch/config.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <iostream>

namespace tessera::cli {

kernels::KernelRequest checked_request(const std::string& kernel, const std::string& variant, const std::string& shape,
                                       const std::vector<std::string>& params, std::uint64_t seed) {
  kernels::KernelRequest request;
  request.kernel = kernel;
  request.variant = variant;
  request.shape = kernels::parse_shape(shape);
  request.seed = seed;
  for (const auto& text : params)
    for (const auto& [name, value] : kernels::parse_param_text(text)) {
      if (request.params.count(name)) throw KernelError(fmt::format("--param: '{}' is given twice", name));
      request.params[name] = value;
    }
  const kernels::KernelSpec& spec = kernels::kernel_named(kernel);
  kernels::check_params(spec, variant, request.params);
  kernels::resolve_shape(spec, request.shape);
  return request;
}

int run_reporting_errors(const char* command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const arch::ConfigError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << d.str() << '\n';
  } catch (const KernelError& e) {
    std::cerr << command << ": " << e.what() << '\n';
  } catch (const FileError& e) {
    std::cerr << command << ": " << e.what() << '\n';
  } catch (const std::exception& e) {
    std::cerr << command << ": " << e.what() << '\n';
    return 1;
  }
  return kExitBadInput;
}

}  // namespace tessera::cli
