// Test helpers for hand-written tensor-engine programs: random bf16 tiles and
// the LoadStationary / MultiplyMoving instructions over contiguous tiles.
#pragma once

#include "arch/isa.h"
#include "arch/numerics.h"

#include <random>

namespace tessera::test_support {

inline arch::Bf16Matrix random_bf16(std::size_t rows, std::size_t cols, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  arch::Bf16Matrix m(rows, cols);
  for (auto& v : m.data) v = arch::to_bf16(dist(rng));
  return m;
}

// LoadStationary of SBUF [k partitions, m] bf16 at byte `offset`.
inline arch::Instruction load_stationary(std::uint32_t k, std::uint32_t m, std::uint32_t offset) {
  arch::Instruction in;
  in.opcode = arch::Opcode::LoadStationary;
  in.a = arch::tile(arch::Memory::Sbuf, arch::DType::Bf16, 0, static_cast<std::uint16_t>(k), offset, m);
  return in;
}

// MultiplyMoving of SBUF [k, n] bf16 at `src` into PSUM [m, n] fp32 at `dst`.
inline arch::Instruction multiply(std::uint32_t k, std::uint32_t m, std::uint32_t n, std::uint32_t src,
                                  std::uint32_t dst, bool acc) {
  arch::Instruction in;
  in.opcode = arch::Opcode::MultiplyMoving;
  in.flags = acc ? arch::kFlagAccumulate : 0;
  in.a = arch::tile(arch::Memory::Sbuf, arch::DType::Bf16, 0, static_cast<std::uint16_t>(k), src, n);
  in.dst = arch::tile(arch::Memory::Psum, arch::DType::Fp32, 0, static_cast<std::uint16_t>(m), dst, n);
  return in;
}

}  // namespace tessera::test_support
