#include "arch/isa.h"
#include "arch/dma_descriptor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <tuple>
#include <vector>

namespace tessera::arch {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

HwConfig tiny() {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  return load_config("tiny").hw;
}

Instruction matmul(std::uint16_t k, std::uint16_t m, std::uint32_t n) {
  Instruction in;
  in.engine = Engine::Tensor;
  in.opcode = Opcode::MultiplyMoving;
  in.flags = kFlagAccumulate;
  in.a = tile(Memory::Sbuf, DType::Bf16, 0, k, 256, n);
  in.dst = tile(Memory::Psum, DType::Fp32, 0, m, 0, n);
  return in;
}

bool same(const AccessPattern& x, const AccessPattern& y) {
  return x.memory == y.memory && x.dtype == y.dtype && x.start_partition == y.start_partition &&
         x.partition_count == y.partition_count && x.offset_bytes == y.offset_bytes && x.num_dims == y.num_dims &&
         x.size == y.size && x.stride == y.stride;
}

// pack() and unpack() move each descriptor field as one word (read straight
// from memory where it fits): the bytes must be those a bit-by-bit copy of
// each field to its place gives, and unpack() must read the fields back.
TEST(DmaDescriptor, PackPutsEveryFieldAtItsBitsAndUnpackReadsThemBack) {
  std::mt19937_64 rng(5);
  for (int n = 0; n < 2000; ++n) {
    DmaDescriptor d;
    const auto r = [&](unsigned bits) { return rng() & dma_detail::field_mask(bits); };
    d.src_addr = r(48);
    d.dst_addr = r(48);
    d.sem_addr = r(48);
    d.sem_value = static_cast<std::uint16_t>(r(16));
    for (auto& v : d.src_size) v = static_cast<std::uint16_t>(r(16));
    for (auto& v : d.dst_size) v = static_cast<std::uint16_t>(r(16));
    for (auto& v : d.src_stride) v = static_cast<std::uint32_t>(r(24));
    for (auto& v : d.dst_stride) v = static_cast<std::uint32_t>(r(24));
    d.elem_log2 = static_cast<std::uint8_t>(r(4));
    d.flags = static_cast<std::uint8_t>(r(4));
    d.magic = static_cast<std::uint8_t>(r(8));
    d.status = static_cast<std::uint16_t>(r(16));
    // The layout, field by field (lsb, width, value), each bit set on its own.
    std::vector<std::tuple<unsigned, unsigned, std::uint64_t>> fields = {
        {0, 48, d.src_addr}, {48, 48, d.dst_addr}, {96, 48, d.sem_addr}, {144, 16, d.sem_value},
        {480, 4, d.elem_log2}, {484, 4, d.flags}, {488, 8, d.magic}, {496, 16, d.status}};
    for (unsigned i = 0; i < 4; ++i) {
      fields.emplace_back(160 + i * 16, 16, d.src_size[i]);
      fields.emplace_back(224 + i * 16, 16, d.dst_size[i]);
      fields.emplace_back(288 + i * 24, 24, d.src_stride[i]);
      fields.emplace_back(384 + i * 24, 24, d.dst_stride[i]);
    }
    std::array<std::uint8_t, kDmaDescriptorBytes> expected{};
    for (const auto& [lsb, bits, value] : fields)
      for (unsigned k = 0; k < bits; ++k)
        if ((value >> k) & 1) expected[(lsb + k) / 8] |= static_cast<std::uint8_t>(1u << ((lsb + k) % 8));
    ASSERT_EQ(pack(d), expected) << n;
    const DmaDescriptor back = unpack(expected);
    ASSERT_EQ(pack(back), expected) << n;
    EXPECT_EQ(back.src_addr, d.src_addr);
    EXPECT_EQ(back.dst_stride, d.dst_stride);
    EXPECT_EQ(back.status, d.status);
  }
}

TEST(Isa, EncodeDecodeRoundTripsRandomInstructions) {
  std::mt19937 rng(7);
  const Opcode ops[] = {Opcode::Nop, Opcode::End, Opcode::SemWait, Opcode::SemIncr, Opcode::DmaTrigger, Opcode::SemSignal,
                        Opcode::LoadStationary, Opcode::MultiplyMoving, Opcode::Transpose, Opcode::TensorTensor,
                        Opcode::TensorScalar, Opcode::Reduce, Opcode::Copy, Opcode::Memset, Opcode::Select,
                        Opcode::Activation, Opcode::Iota, Opcode::PartitionReduce};
  std::vector<std::uint8_t> stream;
  std::vector<Instruction> written;
  for (int i = 0; i < 500; ++i) {
    Instruction in;
    in.engine = static_cast<Engine>(rng() % kNumEngines);
    in.opcode = ops[rng() % std::size(ops)];
    in.flags = rng() & 1;
    in.alu = static_cast<AluOp>(rng() % 12);
    in.alu2 = static_cast<AluOp>(rng() % 12);
    in.func = static_cast<ActFunc>(rng() % 10);
    in.imm0 = static_cast<float>(rng()) / 7.0f;
    in.imm1 = -1.5f;
    in.imm2 = 3.25f;
    in.sem = rng() % 256;
    in.value = rng();
    in.dma_engine = rng() % 16;
    in.dma_queue = rng() % 16;
    in.address = (static_cast<std::uint64_t>(rng()) << 32) | rng();
    AccessPattern* aps[] = {&in.dst, &in.a, &in.b, &in.c};
    for (auto* ap : aps) {
      if (rng() % 2) continue;
      ap->memory = rng() % 2 ? Memory::Sbuf : Memory::Psum;
      ap->dtype = static_cast<DType>(rng() % 5);
      ap->start_partition = rng() % 128;
      ap->partition_count = 1 + rng() % 128;
      ap->offset_bytes = rng() % 65536;
      ap->num_dims = 1 + rng() % 4;
      for (int d = 0; d < ap->num_dims; ++d) {
        ap->size[d] = 1 + rng() % 512;
        ap->stride[d] = static_cast<std::int32_t>(rng() % 1024) - 512;
      }
    }
    const auto bytes = encode(in);
    // The device and the report read these from the header alone.
    const HeaderFields h = header_fields(bytes.data());
    EXPECT_EQ(h.opcode, in.opcode);
    EXPECT_EQ(h.sem, in.sem);
    EXPECT_EQ(h.dma_engine, in.dma_engine);
    EXPECT_EQ(h.dma_queue, in.dma_queue);
    EXPECT_EQ(h.value, in.value);
    EXPECT_EQ(h.address, in.address);
    stream.insert(stream.end(), bytes.begin(), bytes.end());
    written.push_back(in);
  }
  const auto read = decode_all(stream);
  ASSERT_EQ(read.size(), written.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    SCOPED_TRACE(disassemble(written[i]));
    EXPECT_EQ(read[i].engine, written[i].engine);
    EXPECT_EQ(read[i].opcode, written[i].opcode);
    EXPECT_EQ(read[i].flags, written[i].flags);
    EXPECT_EQ(read[i].alu, written[i].alu);
    EXPECT_EQ(read[i].alu2, written[i].alu2);
    EXPECT_EQ(read[i].func, written[i].func);
    EXPECT_EQ(read[i].imm0, written[i].imm0);
    EXPECT_EQ(read[i].imm1, written[i].imm1);
    EXPECT_EQ(read[i].imm2, written[i].imm2);
    EXPECT_EQ(read[i].sem, written[i].sem);
    EXPECT_EQ(read[i].value, written[i].value);
    EXPECT_EQ(read[i].dma_engine, written[i].dma_engine);
    EXPECT_EQ(read[i].dma_queue, written[i].dma_queue);
    EXPECT_EQ(read[i].address, written[i].address);
    EXPECT_TRUE(same(read[i].dst, written[i].dst));
    EXPECT_TRUE(same(read[i].a, written[i].a));
    EXPECT_TRUE(same(read[i].b, written[i].b));
    EXPECT_TRUE(same(read[i].c, written[i].c));
  }
}

TEST(Isa, EncodedSizeIsHeaderPlusOperands) {
  EXPECT_EQ(encode(matmul(8, 8, 64)).size(), kInstrHeaderBytes + 2 * kOperandBytes);
  Instruction end;
  end.opcode = Opcode::End;
  EXPECT_EQ(encode(end).size(), kInstrHeaderBytes);
  // The header says how long the instruction is, for a sequencer to fetch it whole.
  const auto bytes = encode(matmul(8, 8, 64));
  EXPECT_EQ(encoded_length(bytes.data()), bytes.size());
  EXPECT_EQ(encoded_length(encode(end).data()), kInstrHeaderBytes);
}

TEST(Isa, DisassemblesEveryField) {
  EXPECT_EQ(disassemble(matmul(8, 4, 64)),
            "tensor MultiplyMoving acc dst=psum[p0:4 +0B fp32 (64,1)] a=sbuf[p0:8 +256B bf16 (64,1)]");
  Instruction w;
  w.engine = Engine::Vector;
  w.opcode = Opcode::SemWait;
  w.sem = 3;
  w.value = 2;
  EXPECT_EQ(disassemble(w), "vector SemWait sem[3] >= 2");
  Instruction act;
  act.engine = Engine::Scalar;
  act.opcode = Opcode::Activation;
  act.func = ActFunc::Gelu;
  act.imm0 = 0.5f;
  act.imm1 = 1;
  act.a = tile(Memory::Psum, DType::Fp32, 0, 8, 0, 16);
  act.dst = tile(Memory::Sbuf, DType::Bf16, 0, 8, 0, 16);
  EXPECT_EQ(disassemble(act),
            "scalar Activation gelu scale=0.5 bias=1 dst=sbuf[p0:8 +0B bf16 (16,1)] a=psum[p0:8 +0B fp32 (16,1)]");
  const auto bytes = encode(w);
  EXPECT_EQ(disassemble(bytes), "     0: vector SemWait sem[3] >= 2\n");
}

// Each opcode's own text, immediates as the shortest float that reads back,
// and patterns of several dimensions with negative strides.
TEST(Isa, DisassemblesEachOpcodesOperands) {
  Instruction i;
  i.engine = Engine::Sync;
  i.opcode = Opcode::DmaTrigger;
  i.dma_engine = 15;
  i.dma_queue = 2;
  i.value = 16;
  i.address = 0x12345f40;
  EXPECT_EQ(disassemble(i), "sync   DmaTrigger dma15.q2 16 descriptor(s) @0x12345f40");
  i = {};
  i.engine = Engine::Vector;
  i.opcode = Opcode::SemSignal;
  i.address = 0xabc0;
  i.value = 3;
  EXPECT_EQ(disassemble(i), "vector SemSignal peer sem @0xabc0 += 3");
  i = {};
  i.engine = Engine::Tensor;
  i.opcode = Opcode::LoadStationary;
  i.flags = kFlagDoubleRow;
  i.a = tile(Memory::Sbuf, DType::Fp8E4m3, 0, 128, 4096, 128);
  i.a.num_dims = 2;
  i.a.size = {2, 64, 0, 0};
  i.a.stride = {64, 1, 0, 0};
  EXPECT_EQ(disassemble(i), "tensor LoadStationary double_row a=sbuf[p0:128 +4096B fp8_e4m3 (2,64)(64,1)]");
  i = {};
  i.engine = Engine::Vector;
  i.opcode = Opcode::Reduce;
  i.alu = AluOp::Add;
  i.dst = tile(Memory::Sbuf, DType::Fp32, 0, 128, 0, 1);
  i.a = tile(Memory::Sbuf, DType::Fp32, 0, 128, 512, 4096);
  i.a.num_dims = 3;
  i.a.size = {4, 8, 128, 0};
  i.a.stride = {1024, -128, 1, 0};
  EXPECT_EQ(disassemble(i),
            "vector Reduce add dst=sbuf[p0:128 +0B fp32 (1,1)] a=sbuf[p0:128 +512B fp32 (4,1024)(8,-128)(128,1)]");
  i = {};
  i.engine = Engine::Vector;
  i.opcode = Opcode::TensorScalar;
  i.alu = AluOp::Multiply;
  i.alu2 = AluOp::Subtract;
  i.imm0 = 0.125f;
  i.imm1 = -1.5e-7f;
  i.dst = tile(Memory::Sbuf, DType::Fp32, 0, 8, 0, 16);
  i.a = tile(Memory::Sbuf, DType::Fp32, 0, 8, 64, 16);
  EXPECT_EQ(disassemble(i), "vector TensorScalar multiply 0.125 subtract -1.5e-07 dst=sbuf[p0:8 +0B fp32 (16,1)] "
                            "a=sbuf[p0:8 +64B fp32 (16,1)]");
  i = {};
  i.engine = Engine::GpSimd;
  i.opcode = Opcode::Memset;
  i.imm0 = -3.4028235e38f;
  i.dst = tile(Memory::Psum, DType::Fp32, 0, 128, 0, 512);
  EXPECT_EQ(disassemble(i), "gpsimd Memset -3.4028235e+38 dst=psum[p0:128 +0B fp32 (512,1)]");
  i = {};
  i.engine = Engine::Scalar;
  i.opcode = Opcode::Activation;
  i.func = ActFunc::Exp;
  i.imm0 = 1.4426950f;
  i.dst = tile(Memory::Sbuf, DType::Bf16, 0, 128, 0, 512);
  i.a = tile(Memory::Psum, DType::Fp32, 0, 128, 0, 512);
  i.b = tile(Memory::Sbuf, DType::Fp32, 0, 128, 8192, 1);
  EXPECT_EQ(disassemble(i), "scalar Activation exp scale=1.442695 bias=b dst=sbuf[p0:128 +0B bf16 (512,1)] "
                            "a=psum[p0:128 +0B fp32 (512,1)] b=sbuf[p0:128 +8192B fp32 (1,1)]");
  i = {};
  i.engine = Engine::GpSimd;
  i.opcode = Opcode::Iota;
  i.imm0 = 100;
  i.imm1 = 1;
  i.imm2 = 0.5f;
  i.dst = tile(Memory::Sbuf, DType::Fp32, 0, 128, 0, 64);
  EXPECT_EQ(disassemble(i), "gpsimd Iota base=100 partition_step=1 free_step=0.5 dst=sbuf[p0:128 +0B fp32 (64,1)]");
  i = {};
  EXPECT_EQ(disassemble(i), "sync   Nop");
  EXPECT_EQ(AccessPattern{}.str(), "-");
}

TEST(Isa, TensorScalarWithPerPartitionScalarsValidatesAndDisassembles) {
  const auto cfg = tiny();
  Instruction ts;
  ts.engine = Engine::Vector;
  ts.opcode = Opcode::TensorScalar;
  ts.alu = AluOp::Multiply;
  ts.alu2 = AluOp::Add;
  ts.imm1 = 2;
  ts.a = tile(Memory::Psum, DType::Fp32, 0, 8, 0, 16);
  ts.b = tile(Memory::Sbuf, DType::Fp32, 0, 8, 256, 1);
  ts.dst = tile(Memory::Sbuf, DType::Fp32, 0, 8, 0, 16);
  EXPECT_THAT(validate(ts, cfg), IsEmpty());
  EXPECT_EQ(disassemble(ts), "vector TensorScalar multiply b[p] add 2 dst=sbuf[p0:8 +0B fp32 (16,1)] "
                             "a=psum[p0:8 +0B fp32 (16,1)] b=sbuf[p0:8 +256B fp32 (1,1)]");
  ts.c = tile(Memory::Sbuf, DType::Fp32, 0, 8, 260, 1);
  EXPECT_THAT(validate(ts, cfg), IsEmpty());
  EXPECT_THAT(disassemble(ts), HasSubstr("multiply b[p] add c[p] dst="));
  std::size_t pos = 0;
  const auto bytes = encode(ts);
  EXPECT_EQ(disassemble(decode(bytes, pos)), disassemble(ts));

  ts.b = tile(Memory::Sbuf, DType::Fp32, 0, 8, 256, 2);
  EXPECT_THAT(validate(ts, cfg), ElementsAre("b (per-partition scalar) must be [8 x 1], not [8 x 2]"));
  ts.b = tile(Memory::Sbuf, DType::Fp32, 0, 4, 256, 1);
  ts.c = tile(Memory::Sbuf, DType::Fp32, 0, 8, 260, 3);
  EXPECT_THAT(validate(ts, cfg), ElementsAre("b (per-partition scalar) must be [8 x 1], not [4 x 1]",
                                               "c (per-partition scalar) must be [8 x 1], not [8 x 3]"));
}

TEST(Isa, MalformedEncodingsAreErrorsNamingTheByte) {
  auto bytes = encode(matmul(8, 8, 8));
  std::size_t pos = 0;
  auto bad = bytes;
  bad[1] = 0x7f;
  EXPECT_THROW(
      {
        try {
          decode(bad, pos);
        } catch (const IsaError& e) {
          EXPECT_STREQ(e.what(), "byte 1: unknown opcode 0x7f");
          throw;
        }
      },
      IsaError);
  bad = bytes;
  bad.resize(bytes.size() - 1);
  pos = 0;
  EXPECT_THROW(decode(bad, pos), IsaError);
  bad = bytes;
  bad[0] = 9;
  pos = 0;
  EXPECT_THROW(decode(bad, pos), IsaError);
  bad = bytes;
  bad[kInstrHeaderBytes + 2] = 5;  // five free dimensions
  pos = 0;
  EXPECT_THROW(decode(bad, pos), IsaError);
  bad = bytes;
  bad[kInstrHeaderBytes] = static_cast<std::uint8_t>(Memory::Hbm);  // engines do not reach HBM
  pos = 0;
  try {
    decode(bad, pos);
    ADD_FAILURE() << "an HBM operand decoded";
  } catch (const IsaError& e) {
    EXPECT_STREQ(e.what(), "byte 48: operand memory 3 is not sbuf (1) or psum (2)");
  }
}

TEST(Isa, AccessPatternOffsetsFollowStridesInnermostFastest) {
  AccessPattern ap;
  ap.memory = Memory::Sbuf;
  ap.dtype = DType::Bf16;
  ap.partition_count = 1;
  ap.offset_bytes = 100;
  ap.num_dims = 2;
  ap.size = {2, 3};
  ap.stride = {10, -1};
  EXPECT_THAT(ap.byte_offsets(), ElementsAre(100, 98, 96, 120, 118, 116));
  EXPECT_EQ(ap.byte_extent(), (std::pair<std::int64_t, std::int64_t>(96, 122)));
  EXPECT_EQ(ap.free_elements(), 6u);
}

// A decoded pattern may hold any 32-bit sizes and strides (the ISA fuzzer
// found one whose extent overflowed 64 bits): the extent saturates and the
// instruction is refused as out of range.
TEST(Isa, HugePatternsSaturateTheirExtentAndAreRefused) {
  AccessPattern ap = tile(Memory::Sbuf, DType::Fp32, 0, 1, 0, 1);
  ap.num_dims = 4;
  ap.size = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
  ap.stride = {0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF};
  EXPECT_EQ(ap.byte_extent().second, std::numeric_limits<std::int64_t>::max());
  ap.stride = {-0x7FFFFFFF - 1, -0x7FFFFFFF - 1, -0x7FFFFFFF - 1, -0x7FFFFFFF - 1};
  EXPECT_EQ(ap.byte_extent().first, std::numeric_limits<std::int64_t>::min());
  Instruction in;
  in.engine = Engine::Vector;
  in.opcode = Opcode::Memset;
  in.dst = ap;
  EXPECT_THAT(validate(in, tiny()), Contains(HasSubstr("fall outside")));
}

TEST(Isa, LegalInstructionsValidate) {
  const auto cfg = tiny();
  EXPECT_THAT(validate(matmul(8, 8, 64), cfg), IsEmpty());
  Instruction ls;
  ls.engine = Engine::Tensor;
  ls.opcode = Opcode::LoadStationary;
  ls.a = tile(Memory::Sbuf, DType::Bf16, 0, 8, 0, 8);
  EXPECT_THAT(validate(ls, cfg), IsEmpty());
}

TEST(Isa, ValidationNamesEachBrokenRule) {
  const auto cfg = tiny();  // 8x8 array, 8 partitions x 16 KiB SBUF, PSUM 4 banks x 1 KiB, moving <= 64
  const auto problems = [&](const Instruction& in) {
    const auto p = validate(in, cfg);
    return p.empty() ? std::string() : p.front();
  };
  EXPECT_EQ(problems(matmul(9, 8, 8)), "a: partitions 0..8 exceed the 8 sbuf partitions");
  EXPECT_EQ(problems(matmul(8, 8, 65)), "a: moving free size 65 exceeds tensor.moving_max_free 64");
  auto in = matmul(8, 8, 64);
  in.dst.offset_bytes = 1024 - 8;
  EXPECT_EQ(problems(in), "dst: bytes 1016..1271 cross a PSUM bank boundary (banks of 1024 bytes)");
  in = matmul(8, 8, 64);
  in.a.dtype = DType::Fp8E4m3;
  auto no_fp8 = cfg;  // tiny runs every format; a generation without fp8
  no_fp8.tensor.fp8_rows_per_pe = 0;
  EXPECT_EQ(validate(in, no_fp8).front(),
            "a: fp8_e4m3 inputs are not supported by this config's tensor engine (tensor.fp8_rows_per_pe is 0)");
  in = matmul(8, 8, 64);
  in.engine = Engine::Vector;
  EXPECT_EQ(problems(in), "MultiplyMoving does not run on the vector engine");
  in = matmul(8, 8, 64);
  in.a.offset_bytes = 16 * 1024 - 64;
  EXPECT_EQ(problems(in), "a: bytes 16320..16447 of each partition fall outside sbuf's 16384 bytes per partition");

  Instruction tt;
  tt.engine = Engine::Vector;
  tt.opcode = Opcode::TensorTensor;
  tt.a = tile(Memory::Sbuf, DType::Fp32, 0, 8, 0, 16);
  tt.b = tile(Memory::Sbuf, DType::Fp32, 0, 8, 64, 8);
  tt.dst = tile(Memory::Sbuf, DType::Fp32, 0, 8, 128, 16);
  EXPECT_EQ(problems(tt), "dst [8 x 16] and b [8 x 8] differ in shape");
  Instruction from_hbm = tt;
  from_hbm.b = from_hbm.a;
  from_hbm.a.memory = Memory::Hbm;
  EXPECT_EQ(problems(from_hbm), "a: engines read and write SBUF and PSUM only, not hbm");

  Instruction gp;
  gp.engine = Engine::GpSimd;
  gp.opcode = Opcode::Copy;
  gp.a = tile(Memory::Psum, DType::Fp32, 0, 8, 0, 16);
  gp.dst = tile(Memory::Sbuf, DType::Fp32, 0, 8, 0, 16);
  EXPECT_EQ(problems(gp), "a: the GpSimd engine cannot access PSUM");

  Instruction sem;
  sem.engine = Engine::Sync;
  sem.opcode = Opcode::SemWait;
  sem.sem = 32;
  EXPECT_EQ(problems(sem), "semaphore 32 does not exist (the config has 32)");

  Instruction dma;
  dma.engine = Engine::Sync;
  dma.opcode = Opcode::DmaTrigger;
  dma.dma_engine = 2;
  dma.value = 1;
  EXPECT_EQ(problems(dma), "DMA engine 2 does not exist (the config has 2)");

  Instruction red;
  red.engine = Engine::Vector;
  red.opcode = Opcode::Reduce;
  red.a = tile(Memory::Sbuf, DType::Fp32, 0, 8, 0, 16);
  red.dst = tile(Memory::Sbuf, DType::Fp32, 0, 8, 128, 2);
  EXPECT_EQ(problems(red), "dst must be [8 x 1] for a free-axis reduction of a [8 x 16]");

  Instruction ts;
  ts.engine = Engine::Vector;
  ts.opcode = Opcode::TensorScalar;
  ts.a = tile(Memory::Sbuf, DType::Fp32, 0, 8, 0, 16);
  ts.dst = tile(Memory::Sbuf, DType::Fp32, 0, 8, 128, 16);
  ts.b = tile(Memory::Sbuf, DType::Fp32, 0, 8, 256, 1);
  ts.c = tile(Memory::Sbuf, DType::Fp32, 0, 8, 260, 1);
  EXPECT_EQ(problems(ts), "");
  ts.c = tile(Memory::Sbuf, DType::Fp32, 0, 4, 260, 1);
  EXPECT_EQ(problems(ts), "c (per-partition scalar) must be [8 x 1], not [4 x 1]");
  ts.c = {};
  ts.b = tile(Memory::Sbuf, DType::Fp32, 0, 8, 256, 2);
  EXPECT_EQ(problems(ts), "b (per-partition scalar) must be [8 x 1], not [8 x 2]");
}

TEST(Isa, PerPartitionScalarsAndSquareRoundTripAndDisassemble) {
  Instruction ts;
  ts.engine = Engine::Vector;
  ts.opcode = Opcode::TensorScalar;
  ts.alu = AluOp::Subtract;
  ts.alu2 = AluOp::Multiply;
  ts.imm1 = 2;
  ts.a = tile(Memory::Sbuf, DType::Fp32, 0, 8, 0, 16);
  ts.dst = tile(Memory::Sbuf, DType::Fp32, 0, 8, 128, 16);
  ts.b = tile(Memory::Sbuf, DType::Fp32, 0, 8, 256, 1);
  EXPECT_EQ(disassemble(ts),
            "vector TensorScalar subtract b[p] multiply 2 dst=sbuf[p0:8 +128B fp32 (16,1)] "
            "a=sbuf[p0:8 +0B fp32 (16,1)] b=sbuf[p0:8 +256B fp32 (1,1)]");
  Instruction act;
  act.engine = Engine::Scalar;
  act.opcode = Opcode::Activation;
  act.func = ActFunc::Square;
  act.a = ts.a;
  act.dst = ts.dst;
  const auto bytes = encode(act);
  std::size_t pos = 0;
  EXPECT_EQ(decode(bytes, pos).func, ActFunc::Square);
  EXPECT_EQ(parse_act_func("square"), ActFunc::Square);
}

}  // namespace
}  // namespace tessera::arch
