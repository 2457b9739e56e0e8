// Calibration microbenchmarks: the smallest programs that show one documented
// cost of the hardware (a DMA descriptor, a matmul issue interval, a vector
// instruction). `tessera calibrate` runs them at two repeat counts and takes
// the difference, so the fixed costs of starting and ending a program cancel
// (docs/calibration.md).
#pragma once

#include "common/kernel.h"

namespace tessera::kernels {

// calib_dma: N copies of [P partitions x B bytes] between HBM and SBUF;
// variants load, store, chain (each copy waits for the one before).
KernelSpec calib_dma_spec();
// calib_matmul: R MultiplyMoving of a [K, N] moving tile against [K, M]
// stationary tiles; variants moving (one stationary for all), pairs (a new
// stationary before each), fp32 (moving with fp32 inputs).
KernelSpec calib_matmul_spec();
// calib_vector: R vector or scalar engine instructions on [P, N] fp32 tiles,
// independent or each reading the one before.
KernelSpec calib_vector_spec();

}  // namespace tessera::kernels
