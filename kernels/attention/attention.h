// Attention forward, softmax(Q K^T / sqrt(d) + mask) V per head: a flash
// kernel (keys in blocks, running max and sum) and a straightforward one that
// writes the score matrix to HBM, each with a causal variant
// (docs/kernels.md, attention).
#pragma once

#include "common/kernel.h"

namespace tessera::kernels {

KernelSpec attention_spec();

}  // namespace tessera::kernels
