// A plugin that registers a name the kernel library already has, and one of
// its own: loading it must fail naming both origins (plugin_test.cpp).
#include "common/kernel.h"
#include "tessera/kernel_builder.h"

namespace {

tessera::kernels::KernelSpec spec(const char* name) {
  tessera::kernels::KernelSpec s;
  s.name = name;
  s.description = "a plugin kernel for the registry's tests";
  s.variants = {{"only", "the one variant"}};
  s.make = [](tessera::Device&, const tessera::kernels::KernelArgs&) -> std::unique_ptr<tessera::kernels::KernelInstance> {
    throw tessera::KernelError("not runnable");
  };
  return s;
}

tessera::kernels::KernelSpec gemm_again() { return spec("gemm"); }
tessera::kernels::KernelSpec its_own() { return spec("duplicate_plugin_own"); }

TESSERA_REGISTER_KERNEL(gemm_again);
TESSERA_REGISTER_KERNEL(its_own);

}  // namespace
