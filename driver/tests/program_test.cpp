// A Program's instruction streams hold the core's encoding (arch::encode)
// and read back the instructions they were given.
#include "tessera/program.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include <vector>

namespace tessera {
namespace {

using ::testing::HasSubstr;

arch::AccessPattern sbuf_rows(std::uint32_t offset, std::uint16_t partitions, std::uint32_t elements) {
  arch::AccessPattern ap;
  ap.memory = arch::Memory::Sbuf;
  ap.dtype = arch::DType::Bf16;
  ap.num_dims = 1;
  ap.partition_count = partitions;
  ap.offset_bytes = offset;
  ap.size[0] = elements;
  ap.stride[0] = 1;
  return ap;
}

// A stream's worth of every shape: no operand, two, three.
std::vector<arch::Instruction> sample() {
  std::vector<arch::Instruction> out;
  arch::Instruction wait;
  wait.engine = arch::Engine::Vector;
  wait.opcode = arch::Opcode::SemWait;
  wait.sem = 7;
  wait.value = 123456;
  out.push_back(wait);
  arch::Instruction copy;
  copy.engine = arch::Engine::Vector;
  copy.opcode = arch::Opcode::Copy;
  copy.dst = sbuf_rows(4096, 128, 512);
  copy.a = sbuf_rows(0, 128, 512);
  out.push_back(copy);
  arch::Instruction add = copy;
  add.opcode = arch::Opcode::TensorTensor;
  add.alu = arch::AluOp::Add;
  add.b = sbuf_rows(8192, 128, 512);
  add.imm0 = -1.5f;
  out.push_back(add);
  arch::Instruction trigger;
  trigger.engine = arch::Engine::Vector;
  trigger.opcode = arch::Opcode::DmaTrigger;
  trigger.dma_engine = 3;
  trigger.dma_queue = 1;
  trigger.address = 42;
  trigger.value = 1;
  out.push_back(trigger);
  return out;
}

std::vector<std::uint8_t> encoded(const std::vector<arch::Instruction>& ins) {
  std::vector<std::uint8_t> out;
  for (const auto& in : ins) arch::encode_append(in, out);
  return out;
}

TEST(InstructionStream, HoldsTheEncodingAndReadsBackEachInstruction) {
  const std::vector<arch::Instruction> ins = sample();
  InstructionStream s;
  for (const auto& in : ins) s.push_back(in);
  ASSERT_EQ(s.size(), ins.size());
  EXPECT_EQ(s.bytes(), encoded(ins));
  std::size_t at = 0;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    EXPECT_EQ(s.begin_of(i), at);
    EXPECT_EQ(arch::encoded_size(ins[i]), arch::encode(ins[i]).size());
    at += arch::encoded_size(ins[i]);
    EXPECT_EQ(s.opcode(i), ins[i].opcode);
    EXPECT_EQ(arch::encode(s[i]), arch::encode(ins[i])) << i;
    const arch::HeaderFields h = s.header(i);
    EXPECT_EQ(h.opcode, ins[i].opcode);
    EXPECT_EQ(h.sem, ins[i].sem);
    EXPECT_EQ(h.value, ins[i].value);
    EXPECT_EQ(h.dma_engine, ins[i].dma_engine);
    EXPECT_EQ(h.dma_queue, ins[i].dma_queue);
    EXPECT_EQ(h.address, ins[i].address);
  }
  std::size_t i = 0;
  for (const arch::Instruction in : s) EXPECT_EQ(arch::encode(in), arch::encode(ins[i++]));
  EXPECT_EQ(i, ins.size());
  EXPECT_EQ(s.back().opcode, arch::Opcode::DmaTrigger);
  EXPECT_EQ(s.back().address, 42u);
}

TEST(InstructionStream, SetReplacesOneInstructionWhateverItsLength) {
  std::vector<arch::Instruction> ins = sample();
  InstructionStream s;
  for (const auto& in : ins) s.push_back(in);
  ins[1].opcode = arch::Opcode::TensorTensor;  // two operands -> three
  ins[1].b = sbuf_rows(12288, 64, 256);
  s.set(1, ins[1]);
  ins[2] = ins[0];  // three -> none
  s.set(2, ins[2]);
  ins[3].address = 99;  // the same length
  s.set(3, ins[3]);
  EXPECT_EQ(s.bytes(), encoded(ins));
  for (std::size_t i = 0; i < ins.size(); ++i) EXPECT_EQ(arch::encode(s[i]), arch::encode(ins[i])) << i;
}

TEST(InstructionStream, AProgramEncodesAStreamAsItHoldsIt) {
  Program p;
  for (const auto& in : sample()) p.streams[static_cast<int>(arch::Engine::Vector)].push_back(in);
  EXPECT_EQ(p.encode(arch::Engine::Vector), encoded(sample()));
  EXPECT_TRUE(p.encode(arch::Engine::Tensor).empty());
  EXPECT_EQ(p.instruction_count(), sample().size());
}

TEST(InstructionStream, BytesThatTheInstructionsDoNotTileAreNamed) {
  const std::vector<std::uint8_t> bytes = encoded(sample());
  std::vector<std::uint32_t> begins;
  InstructionStream s;
  for (const auto& in : sample()) s.push_back(in);
  for (std::size_t i = 0; i < s.size(); ++i) begins.push_back(static_cast<std::uint32_t>(s.begin_of(i)));
  EXPECT_EQ(InstructionStream(bytes, begins).bytes(), bytes);
  const auto error_of = [](std::vector<std::uint8_t> b, std::vector<std::uint32_t> at) -> std::string {
    try {
      InstructionStream(std::move(b), std::move(at));
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no error)";
  };
  std::vector<std::uint32_t> shifted = begins;
  shifted[2] += 48;
  EXPECT_THAT(error_of(bytes, shifted), HasSubstr("instruction 2 begins at byte"));
  EXPECT_THAT(error_of(bytes, {begins[0], begins[1]}), HasSubstr("end at byte"));  // instructions left over
  std::vector<std::uint8_t> cut(bytes.begin(), bytes.end() - 48);
  EXPECT_THAT(error_of(cut, begins), HasSubstr("instruction 3 at byte 384 runs past its end (384 bytes)"));
  std::vector<std::uint8_t> zero = bytes;
  zero[arch::kInstrLengthOffset] = zero[arch::kInstrLengthOffset + 1] = 0;
  EXPECT_THAT(error_of(zero, begins), HasSubstr("instruction 0 at byte 0 says it is 0 bytes long"));
}

TEST(InstructionStream, AnInstructionTheCoreCannotDecodeIsNamedNotPrinted) {
  Program p;
  arch::Instruction copy = sample()[1];
  copy.a.memory = arch::Memory::Hbm;  // engines do not reach HBM
  p.streams[static_cast<int>(arch::Engine::Vector)].push_back(sample()[0]);
  p.streams[static_cast<int>(arch::Engine::Vector)].push_back(copy);
  EXPECT_THROW(p.streams[static_cast<int>(arch::Engine::Vector)][1], arch::IsaError);
  const std::string text = p.disassemble();
  EXPECT_THAT(text, HasSubstr("SemWait"));
  EXPECT_THAT(text, HasSubstr("(cannot be decoded: byte"));
}

}  // namespace
}  // namespace tessera
