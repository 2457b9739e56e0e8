// 2-D convolution as tiled matmuls that accumulate over the kernel taps in
// PSUM, with no im2col buffer (docs/kernels.md, conv2d).
#pragma once

#include "common/kernel.h"

namespace tessera::kernels {

KernelSpec conv2d_spec();

}  // namespace tessera::kernels
