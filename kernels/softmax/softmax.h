// Softmax along the last axis of an fp32 [R, C] tensor, max-subtracted.
#pragma once

#include "common/kernel.h"

namespace tessera::kernels {

KernelSpec softmax_spec();

}  // namespace tessera::kernels
