// Test helper: one engine's instruction stream, written an instruction at a
// time (the driver's KernelBuilder does this for real kernels).
#pragma once

#include "arch/isa.h"

#include <vector>

namespace tessera::test_support {

// A program for one engine, written one instruction at a time.
struct Stream {
  explicit Stream(arch::Engine e) : engine(e) {}
  arch::Engine engine;
  std::vector<std::uint8_t> bytes;

  Stream& add(arch::Instruction in) {
    in.engine = engine;
    const auto enc = arch::encode(in);
    bytes.insert(bytes.end(), enc.begin(), enc.end());
    return *this;
  }
  Stream& op(arch::Opcode opc, arch::AccessPattern dst, arch::AccessPattern a = {}, arch::AccessPattern b = {}) {
    arch::Instruction in;
    in.opcode = opc;
    in.dst = dst;
    in.a = a;
    in.b = b;
    return add(in);
  }
  Stream& wait(std::uint16_t sem, std::uint32_t value) {
    arch::Instruction in;
    in.opcode = arch::Opcode::SemWait;
    in.sem = sem;
    in.value = value;
    return add(in);
  }
  Stream& incr(std::uint16_t sem, std::uint32_t delta = 1) {
    arch::Instruction in;
    in.opcode = arch::Opcode::SemIncr;
    in.sem = sem;
    in.value = delta;
    return add(in);
  }
  Stream& end() {
    arch::Instruction in;
    in.opcode = arch::Opcode::End;
    return add(in);
  }
};

}  // namespace tessera::test_support
