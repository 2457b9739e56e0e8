// 2-D transpose of a bf16 [R, C] tensor.
#pragma once

#include "common/kernel.h"

namespace tessera::kernels {

KernelSpec transpose_spec();

}  // namespace tessera::kernels
