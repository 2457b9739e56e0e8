// The gated MLP block y = down(act(gate(x)) * up(x)) with silu or gelu as
// variants (docs/kernels.md, mlp).
#pragma once

#include "common/kernel.h"

namespace tessera::kernels {

KernelSpec mlp_spec();

}  // namespace tessera::kernels
