// GEMM: C[M,N] = A[M,K] @ B[K,N] with variants naive, hoisted, blocked_mn,
// blocked_mnk (README.md beside this file).
#pragma once

#include "common/kernel.h"

namespace tessera::kernels {

KernelSpec gemm_spec();

}  // namespace tessera::kernels
