// How a kernel's `--dtype` reaches the tensor engine (docs/formats.md): the
// dtype of its HBM inputs and SBUF tiles, and the contraction rows each
// partition of a step holds on the run's config. One mapping for every
// kernel that takes narrow formats.
#pragma once

#include "arch/config.h"
#include "arch/formats.h"
#include "arch/isa.h"

#include <cstdint>
#include <string>

namespace tessera::kernels {

// rows: 1; 2 for fp8 where the config runs it in double row
// (tensor.fp8_rows_per_pe 2: two tiles per operand, the rows [0, P) and
// [P, 2P) of the step); 4 for MX (one x4 tile and its scales).
struct InputFormat {
  arch::DType dtype = arch::DType::Bf16;
  int rows = 1;
  bool mx() const { return arch::is_mx(dtype); }
  bool double_row() const { return rows == 2; }
  // SBUF bytes per partition of one operand column of a step: its tiles
  // and, for MX, its scale tile's byte.
  std::int64_t step_bytes() const {
    return (double_row() ? 2 : 1) * static_cast<std::int64_t>(arch::size_of(dtype)) + (mx() ? 1 : 0);
  }
};

// The format of a --dtype name (bf16, fp32, fp8_e4m3, fp8_e5m2, mxfp8,
// mxfp4) on `cfg`; bf16 for any other name (the kernel's spec checks the
// name first).
InputFormat input_format(const std::string& dtype, const arch::HwConfig& cfg);

}  // namespace tessera::kernels
