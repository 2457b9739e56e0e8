// Row normalisations of an fp32 [R, D] tensor: layernorm (scale and bias) and
// rmsnorm (scale).
#pragma once

#include "common/kernel.h"

namespace tessera::kernels {

KernelSpec layernorm_spec();
KernelSpec rmsnorm_spec();

}  // namespace tessera::kernels
