// Reductions of an fp32 [R, C] tensor (sum, max along either axis) and the
// cumulative sum along the last axis.
#pragma once

#include "common/kernel.h"

namespace tessera::kernels {

KernelSpec reduce_spec();
KernelSpec cumsum_spec();

}  // namespace tessera::kernels
