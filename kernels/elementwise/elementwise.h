// Element-wise operations and activations over a large fp32 tensor: add,
// multiply (two inputs), gelu, silu, relu, exp (one input).
#pragma once

#include "common/kernel.h"

namespace tessera::kernels {

KernelSpec elementwise_spec();

}  // namespace tessera::kernels
