// Hand-written programs on the tiny config, run on the whole core: data,
// cross-engine ordering through semaphores, timing from the config's cost
// model, and the failure reports (rule-breaking instruction, deadlock).
#include "core/neuron_core.h"

#include "arch/numerics.h"
#include "testing/dma_programs.h"
#include "testing/shipped_config.h"
#include "testing/stream.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace tessera::core {
namespace {

using arch::AccessPattern;
using arch::DType;
using arch::Instruction;
using arch::Memory;
using arch::Opcode;
using ::testing::HasSubstr;
using test_support::Stream;

const arch::HwConfig& tiny() { return test_support::shipped_config("tiny"); }

AccessPattern sbuf_f32(std::uint32_t offset, std::uint32_t n, std::uint16_t parts = 8) {
  return arch::tile(Memory::Sbuf, DType::Fp32, 0, parts, offset, n);
}

float sbuf_float(NeuronCore& core, std::uint32_t partition, std::uint32_t byte) {
  float v;
  std::memcpy(&v, core.sbuf().at(partition, byte, 4), 4);
  return v;
}

TEST(NeuronCore, VectorScalarChainComputesAndTakesTheModelledTime) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream vec{arch::Engine::Vector};
  vec.op(Opcode::Memset, sbuf_f32(0, 16));  // imm0 = 0 -> all zeros, then:
  Instruction ts;
  ts.opcode = Opcode::TensorScalar;
  ts.alu = arch::AluOp::Add;
  ts.imm0 = 1.5f;
  ts.alu2 = arch::AluOp::Multiply;
  ts.imm1 = 2.0f;
  ts.a = sbuf_f32(0, 16);
  ts.dst = sbuf_f32(64, 16);
  vec.add(ts).incr(0).end();
  Stream sca{arch::Engine::Scalar};
  Instruction act;
  act.opcode = Opcode::Activation;
  act.func = arch::ActFunc::Relu;
  act.imm0 = -1.0f;
  act.imm1 = 10.0f;
  act.a = sbuf_f32(64, 16);
  act.dst = arch::tile(Memory::Sbuf, DType::Bf16, 0, 8, 256, 16);
  act.c = sbuf_f32(512, 1);
  sca.wait(0, 1).add(act).end();
  core.load_program(arch::Engine::Vector, vec.bytes);
  core.load_program(arch::Engine::Scalar, sca.bytes);
  const RunResult r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;

  EXPECT_EQ(sbuf_float(core, 7, 64 + 4 * 15), 3.0f);  // (0 + 1.5) * 2
  std::uint16_t bits;
  std::memcpy(&bits, core.sbuf().at(3, 256 + 2 * 5, 2), 2);
  EXPECT_EQ(arch::to_float(arch::Bf16::from_bits(bits)), 7.0f);  // relu(3 * -1 + 10)
  EXPECT_EQ(sbuf_float(core, 0, 512), 16 * 7.0f);                 // accumulate-reduce

  // Two vector instructions of 10 + 16 cycles at 0.5 GHz (the second reads the
  // first's result, so it pays its overhead after it), then the scalar one,
  // which waits for the semaphore (10 ns wake-up) and takes 10 + 16 cycles
  // plus 6 to write its sums back.
  EXPECT_EQ(stats.value("core.vector.instructions"), 4);
  EXPECT_EQ(stats.value("core.vector.busy_ns"), 2 * 26 * 2.0);
  EXPECT_EQ(stats.value("core.scalar.busy_ns"), 32 * 2.0);
  EXPECT_GT(stats.value("core.scalar.semaphore_wait_ns"), 0.0);
  // The activation starts after the vector engine's increment (vector End
  // follows it at once) plus the 10 ns semaphore wake-up, and takes 64 ns.
  const auto vector_end = core.engine(arch::Engine::Vector).end_time();
  EXPECT_GE(core.engine(arch::Engine::Scalar).end_time(), vector_end + sc_core::sc_time(74, sc_core::SC_NS));
  EXPECT_EQ(r.end_time, core.engine(arch::Engine::Scalar).end_time());
}

// A strided read costs the config's stride penalty; that extra time is the
// engine's memory stall, counted apart from the compute.
TEST(NeuronCore, StridedAccessIsCountedAsMemoryStall) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  const auto& cfg = tiny();
  // Every 16th fp32 (64-byte stride): beyond the penalty threshold.
  const auto elem_stride = static_cast<std::uint32_t>(cfg.sbuf.stride_penalty_threshold_bytes / 4 + 1);
  AccessPattern strided = sbuf_f32(0, 16);
  strided.stride[strided.num_dims - 1] = elem_stride;
  Stream vec{arch::Engine::Vector};
  vec.op(Opcode::Copy, sbuf_f32(4096, 16), sbuf_f32(0, 16));  // contiguous: no stall
  vec.op(Opcode::Copy, sbuf_f32(8192, 16), strided).end();
  core.load_program(arch::Engine::Vector, vec.bytes);
  const RunResult r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  const double period_ns = 1.0 / cfg.vector.clock_ghz;
  const double compute = 16 * cfg.vector.costs.at("copy");  // one pass: 8 partitions <= lanes
  EXPECT_DOUBLE_EQ(stats.value("core.vector.memory_stall_ns"),
                   compute * (cfg.sbuf.stride_penalty_factor - 1.0) * period_ns);
  EXPECT_GT(stats.value("core.vector.memory_stall_ns"), 0.0);
  EXPECT_EQ(stats.value("core.scalar.memory_stall_ns"), 0.0);
}

TEST(NeuronCore, GpSimdIotaFeedsVectorReduceThroughASemaphore) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream gp{arch::Engine::GpSimd};
  Instruction iota;
  iota.opcode = Opcode::Iota;
  iota.imm0 = 1.0f;
  iota.imm1 = 100.0f;
  iota.imm2 = 1.0f;
  iota.dst = sbuf_f32(0, 10);
  gp.add(iota).incr(5).end();
  Stream vec{arch::Engine::Vector};
  Instruction red;
  red.opcode = Opcode::Reduce;
  red.alu = arch::AluOp::Add;
  red.a = sbuf_f32(0, 10);
  red.dst = sbuf_f32(128, 1);
  vec.wait(5, 1).add(red).end();
  core.load_program(arch::Engine::GpSimd, gp.bytes);
  core.load_program(arch::Engine::Vector, vec.bytes);
  const RunResult r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  for (std::uint32_t p = 0; p < 8; ++p) EXPECT_EQ(sbuf_float(core, p, 128), 10.0f * (1 + 100.0f * p) + 45.0f);
}

// TensorScalar with [P, 1] operands: each partition's own scalars, as a row
// normalisation needs ((x - mean[p]) * rstd[p]); Activation Square with the
// accumulate output gives each partition's sum of squares.
TEST(NeuronCore, TensorScalarTakesPerPartitionScalarsAndSquareAccumulates) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream gp{arch::Engine::GpSimd};
  Instruction iota;  // x[p, i] = 100 p + i; s0[p] = p; s1[p] = 2 p + 1
  iota.opcode = Opcode::Iota;
  iota.imm1 = 100.0f;
  iota.imm2 = 1.0f;
  iota.dst = sbuf_f32(0, 6);
  gp.add(iota);
  iota.imm1 = 1.0f;
  iota.imm2 = 0.0f;
  iota.dst = sbuf_f32(64, 1);
  gp.add(iota);
  iota.imm0 = 1.0f;
  iota.imm1 = 2.0f;
  iota.dst = sbuf_f32(96, 1);
  gp.add(iota).incr(5).end();
  Stream vec{arch::Engine::Vector};
  Instruction ts;
  ts.opcode = Opcode::TensorScalar;
  ts.alu = arch::AluOp::Subtract;
  ts.imm0 = 1000.0f;  // ignored: b given
  ts.alu2 = arch::AluOp::Multiply;
  ts.imm1 = 1000.0f;  // ignored: c given
  ts.a = sbuf_f32(0, 6);
  ts.b = sbuf_f32(64, 1);
  ts.c = sbuf_f32(96, 1);
  ts.dst = sbuf_f32(128, 6);
  vec.wait(5, 1).add(ts);
  ts.b = {};  // b absent: imm0 again, c still per partition
  ts.imm0 = 1.0f;
  ts.dst = sbuf_f32(192, 6);
  vec.add(ts).incr(1).end();
  Stream sca{arch::Engine::Scalar};
  Instruction act;
  act.opcode = Opcode::Activation;
  act.func = arch::ActFunc::Square;
  act.imm0 = 1.0f;
  act.a = sbuf_f32(0, 6);
  act.dst = sbuf_f32(256, 6);
  act.c = sbuf_f32(320, 1);
  sca.wait(1, 1).add(act).end();
  core.load_program(arch::Engine::GpSimd, gp.bytes);
  core.load_program(arch::Engine::Vector, vec.bytes);
  core.load_program(arch::Engine::Scalar, sca.bytes);
  const RunResult r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  for (std::uint32_t p = 0; p < 8; ++p) {
    float squares = 0;
    for (std::uint32_t i = 0; i < 6; ++i) {
      const float x = 100.0f * p + i;
      EXPECT_EQ(sbuf_float(core, p, 128 + 4 * i), (x - p) * (2.0f * p + 1)) << p << "," << i;
      EXPECT_EQ(sbuf_float(core, p, 192 + 4 * i), (x - 1.0f) * (2.0f * p + 1)) << p << "," << i;
      EXPECT_EQ(sbuf_float(core, p, 256 + 4 * i), x * x);
      squares += x * x;
    }
    EXPECT_EQ(sbuf_float(core, p, 320), squares);
  }
}

// Per-partition scalars: row p is scaled by b[p] and offset by c[p], the
// step a softmax's max subtraction or an attention rescale takes.
TEST(NeuronCore, TensorScalarTakesPerPartitionScalarsFromTiles) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream gp{arch::Engine::GpSimd};
  Instruction iota;
  iota.opcode = Opcode::Iota;
  iota.imm0 = 1.0f;   // x[p, i] = 1 + 10 p + i
  iota.imm1 = 10.0f;
  iota.imm2 = 1.0f;
  iota.dst = sbuf_f32(0, 12);
  gp.add(iota);
  iota.imm0 = 2.0f;  // s0[p] = 2 - p
  iota.imm1 = -1.0f;
  iota.imm2 = 0.0f;
  iota.dst = sbuf_f32(64, 1);
  gp.add(iota);
  iota.imm0 = 0.5f;  // s1[p] = 0.5 + 3 p
  iota.imm1 = 3.0f;
  iota.dst = sbuf_f32(68, 1);
  gp.add(iota).incr(3).end();
  Stream vec{arch::Engine::Vector};
  Instruction ts;
  ts.opcode = Opcode::TensorScalar;
  ts.alu = arch::AluOp::Multiply;
  ts.alu2 = arch::AluOp::Subtract;
  ts.a = sbuf_f32(0, 12);
  ts.b = sbuf_f32(64, 1);
  ts.c = sbuf_f32(68, 1);
  ts.dst = sbuf_f32(128, 12);
  vec.wait(3, 1).add(ts);
  ts.c = {};  // the second scalar from the immediate
  ts.imm1 = 100.0f;
  ts.alu2 = arch::AluOp::Add;
  ts.dst = sbuf_f32(192, 12);
  vec.add(ts).end();
  core.load_program(arch::Engine::GpSimd, gp.bytes);
  core.load_program(arch::Engine::Vector, vec.bytes);
  const RunResult r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  for (std::uint32_t p = 0; p < 8; ++p)
    for (std::uint32_t i = 0; i < 12; ++i) {
      const float x = 1.0f + 10.0f * p + i, s0 = 2.0f - p, s1 = 0.5f + 3.0f * p;
      EXPECT_EQ(sbuf_float(core, p, 128 + 4 * i), x * s0 - s1) << p << ", " << i;
      EXPECT_EQ(sbuf_float(core, p, 192 + 4 * i), x * s0 + 100.0f) << p << ", " << i;
    }
  // The scalars cost nothing extra: 10 + 12 cycles at 0.5 GHz as with
  // immediates, and the second instruction (independent of the first) streams
  // its 12 right after, its overhead hidden.
  EXPECT_NEAR(stats.value("core.vector.busy_ns"), (22 + 12) * 2.0, 1e-6);
}

// The vector and scalar engines pipeline their static overhead
// (ElementwiseEngine): independent instructions stream back to back, at
// least min_interval_cycles apart; a chain pays overhead + elements + the
// commit each; GpSimd pays its start-up every time.
struct PipelineRun {
  double busy_ns, memory_stall_ns;
};

PipelineRun run_stream(const arch::HwConfig& cfg, const Stream& s) {
  trace::Stats stats;
  NeuronCore core("core", cfg, stats);
  core.load_program(s.engine, s.bytes);
  const RunResult r = core.run();
  EXPECT_TRUE(r.ok()) << r.message;
  const std::string e = s.engine == arch::Engine::GpSimd ? "gpsimd" : s.engine == arch::Engine::Scalar ? "scalar" : "vector";
  return {stats.value("core." + e + ".busy_ns"), stats.value("core." + e + ".memory_stall_ns")};
}

TEST(NeuronCore, IndependentVectorInstructionsHideTheirOverhead) {
  Stream vec{arch::Engine::Vector};
  for (std::uint32_t i = 0; i < 4; ++i) vec.op(Opcode::Copy, sbuf_f32(1024 + 256 * i, 64), sbuf_f32(0, 64));
  vec.end();
  // 10 cycles of overhead once, then 4 x 64 elements, at 0.5 GHz.
  EXPECT_DOUBLE_EQ(run_stream(tiny(), vec).busy_ns, (10 + 4 * 64) * 2.0);
}

TEST(NeuronCore, SmallIndependentInstructionsIssueAtTheMinimumInterval) {
  Stream vec{arch::Engine::Vector};
  for (std::uint32_t i = 0; i < 5; ++i) vec.op(Opcode::Copy, sbuf_f32(1024 + 16 * i, 1), sbuf_f32(0, 1));
  vec.end();
  // The first takes 10 + 1 cycles; each next enters the front end 6 cycles
  // (tiny's min_interval_cycles) after the one before.
  EXPECT_DOUBLE_EQ(run_stream(tiny(), vec).busy_ns, (11 + 4 * 6) * 2.0);
}

TEST(NeuronCore, DependentInstructionsPayOverheadAndCommit) {
  arch::HwConfig cfg = tiny();
  cfg.vector.dependency_cycles = 5;
  Stream vec{arch::Engine::Vector};
  vec.op(Opcode::Copy, sbuf_f32(1024, 16), sbuf_f32(0, 16));
  vec.op(Opcode::Copy, sbuf_f32(2048, 4), sbuf_f32(1024 + 32, 4));  // reads part of the first's result
  // Reads the second's result on 4 of its partitions (and bytes past it).
  vec.op(Opcode::Copy, arch::tile(Memory::Sbuf, DType::Fp32, 0, 4, 4096, 16),
         arch::tile(Memory::Sbuf, DType::Fp32, 0, 4, 2048, 16));
  vec.end();
  const PipelineRun r = run_stream(cfg, vec);
  // 10 + 16, then twice 5 (the commit) + 10 + the elements (4, then 16).
  EXPECT_DOUBLE_EQ(r.busy_ns, (26 + 19 + 31) * 2.0);
  EXPECT_DOUBLE_EQ(r.memory_stall_ns, 2 * 5 * 2.0);
}

TEST(NeuronCore, ReadingDisjointBytesIsNotADependency) {
  arch::HwConfig cfg = tiny();
  cfg.vector.dependency_cycles = 5;
  Stream vec{arch::Engine::Vector};
  vec.op(Opcode::Copy, sbuf_f32(1024, 16), sbuf_f32(0, 16));
  vec.op(Opcode::Copy, sbuf_f32(2048, 16), sbuf_f32(1024 + 64, 16));  // just past the first's result
  vec.op(Opcode::Copy, sbuf_f32(4096, 16), arch::tile(Memory::Psum, DType::Fp32, 0, 8, 1024, 16));  // PSUM, not SBUF
  vec.end();
  const PipelineRun r = run_stream(cfg, vec);
  EXPECT_DOUBLE_EQ(r.busy_ns, (10 + 3 * 16) * 2.0);
  EXPECT_DOUBLE_EQ(r.memory_stall_ns, 0.0);
}

TEST(NeuronCore, GpSimdPaysItsStartUpForEveryInstruction) {
  Stream gp{arch::Engine::GpSimd};
  Instruction iota;
  iota.opcode = Opcode::Iota;
  for (std::uint32_t i = 0; i < 3; ++i) {
    iota.dst = sbuf_f32(1024 + 256 * i, 16);
    gp.add(iota);
  }
  gp.end();
  EXPECT_DOUBLE_EQ(run_stream(tiny(), gp).busy_ns, 3 * (10 + 16) * 2.0);
}

TEST(NeuronCore, DeadlockIsReportedWithTheWaitingEngines) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream vec{arch::Engine::Vector};
  vec.wait(1, 1).incr(2).end();
  Stream sca{arch::Engine::Scalar};
  sca.wait(2, 1).incr(1).end();
  core.load_program(arch::Engine::Vector, vec.bytes);
  core.load_program(arch::Engine::Scalar, sca.bytes);
  const RunResult r = core.run();
  ASSERT_EQ(r.status, RunResult::Status::Deadlock);
  EXPECT_THAT(r.message, HasSubstr("deadlock"));
  EXPECT_THAT(r.message, HasSubstr("core.vector: sem[1] >= 1 (value now 0)"));
  EXPECT_THAT(r.message, HasSubstr("core.scalar: sem[2] >= 1 (value now 0)"));
}

TEST(NeuronCore, RuleBreakingInstructionStopsTheRunNamingIt) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream vec{arch::Engine::Vector};
  vec.op(Opcode::Copy, sbuf_f32(0, 16), sbuf_f32(16 * 1024 - 32, 16)).end();
  core.load_program(arch::Engine::Vector, vec.bytes);
  const RunResult r = core.run();
  ASSERT_EQ(r.status, RunResult::Status::Error);
  EXPECT_THAT(r.message, HasSubstr("vector instruction #0 (byte 0): vector Copy"));
  EXPECT_THAT(r.message, HasSubstr("a: bytes 16352..16415 of each partition fall outside sbuf's 16384 bytes"));
}

TEST(NeuronCore, StreamWithoutEndIsAnError) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream vec{arch::Engine::Vector};
  vec.incr(0);
  core.load_program(arch::Engine::Vector, vec.bytes);
  const RunResult r = core.run();
  ASSERT_EQ(r.status, RunResult::Status::Error);
  EXPECT_THAT(r.message, HasSubstr("stream ends at byte 48 without End"));
}

// The sequencer keeps only the last few fetch blocks: a stream of several
// times its buffer, whose 192-byte pairs straddle block boundaries and the
// buffer's wrap, must still decode every instruction it runs.
TEST(NeuronCore, AStreamLongerThanTheFetchBufferRunsEveryInstruction) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream vec{arch::Engine::Vector};
  constexpr int kPairs = 200;  // 38,400 bytes
  for (int i = 0; i < kPairs; ++i) vec.incr(0).op(Opcode::Copy, sbuf_f32(4096, 16), sbuf_f32(0, 16));
  vec.end();
  ASSERT_GT(vec.bytes.size(), 4 * 8 * 1024u);
  core.load_program(arch::Engine::Vector, vec.bytes);
  const RunResult r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(core.semaphores().value(0), static_cast<std::uint32_t>(kPairs));
  EXPECT_EQ(stats.value("core.vector.instructions"), 2 * kPairs + 1);
}

// A header whose length is past the longest encoding is named as such, from
// the header alone, even where the stream has the bytes it claims.
TEST(NeuronCore, AnInstructionLengthPastTheLongestEncodingIsAnError) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream vec{arch::Engine::Vector};
  for (int i = 0; i < 200; ++i) vec.incr(0);
  vec.end();
  const std::size_t at = 48 * 3;
  vec.bytes[at + arch::kInstrLengthOffset] = 4000 & 0xff;
  vec.bytes[at + arch::kInstrLengthOffset + 1] = 4000 >> 8;
  core.load_program(arch::Engine::Vector, vec.bytes);
  const RunResult r = core.run();
  ASSERT_EQ(r.status, RunResult::Status::Error);
  EXPECT_THAT(r.message, HasSubstr("byte 184: length 4000 does not match 0 operands"));
}

TEST(NeuronCore, InstructionInTheWrongStreamIsAnError) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream vec{arch::Engine::Vector};
  Instruction in;
  in.engine = arch::Engine::Scalar;
  in.opcode = Opcode::End;
  vec.bytes = arch::encode(in);
  core.load_program(arch::Engine::Vector, vec.bytes);
  const RunResult r = core.run();
  ASSERT_EQ(r.status, RunResult::Status::Error);
  EXPECT_THAT(r.message, HasSubstr("instruction for the scalar engine in the vector stream"));
}

// What the run recorded for its report (instruction costs, the DMA engines'
// completions, starts and doorbells, the semaphore increments) is held until
// the caller releases it, and then freed whole.
TEST(NeuronCore, ReleaseRecordsFreesWhatTheReportWasDrawnFrom) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  core.semaphores().keep_increments(true);
  const auto& map = core.address_map();
  std::vector<arch::DmaDescriptor> ds;
  for (std::uint32_t i = 0; i < 3; ++i)
    ds.push_back(test_support::tile_descriptor(0x10000 + i * 512u, 64, map.sbuf_address(0, i * 64u),
                                               static_cast<std::uint32_t>(map.sbuf_partition_bytes), 8, 32, 1,
                                               map.semaphore_address(0)));
  const std::uint64_t ring = core.place(test_support::ring_of(ds, 4));
  core.configure_dma_queue(0, 0, ring, 4);
  Stream sync(arch::Engine::Sync);
  sync.add(test_support::trigger(0, 0, ring, 3)).wait(0, 3).end();
  core.load_program(arch::Engine::Sync, sync.bytes);
  const RunResult r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  const dma::DmaEngineBase& dma0 = core.dma().engine(0);
  ASSERT_EQ(core.engine(arch::Engine::Sync).instruction_costs().size(), 3u);
  ASSERT_EQ(dma0.completions().size(), 3u);
  ASSERT_EQ(dma0.starts().size(), 3u);
  ASSERT_EQ(dma0.doorbells().size(), 1u);
  ASSERT_EQ(core.semaphores().increments().size(), 3u);

  core.release_records();
  for (int e = 0; e < arch::kNumEngines; ++e)
    EXPECT_EQ(core.engine(static_cast<arch::Engine>(e)).instruction_costs().capacity(), 0u) << e;
  for (std::size_t e = 0; e < core.dma().engines(); ++e) {
    EXPECT_EQ(core.dma().engine(e).completions().capacity(), 0u) << e;
    EXPECT_EQ(core.dma().engine(e).starts().capacity(), 0u) << e;
    EXPECT_EQ(core.dma().engine(e).doorbells().capacity(), 0u) << e;
  }
  EXPECT_EQ(core.semaphores().increments().capacity(), 0u);
}

// The program area is reserved in 256-byte steps from its bottom; a request
// past its top is an error that names the area, and takes nothing, so that
// a smaller one still fits.
TEST(NeuronCore, ProgramsPastTheProgramAreaAreAClearError) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  const std::uint64_t area = core.address_map().program_area_bytes();
  const std::uint64_t first = core.reserve_program(100);
  EXPECT_EQ(first, core.address_map().program_area_base());
  EXPECT_EQ(core.reserve_program(1), first + 256);
  try {
    core.reserve_program(area - 512 + 1);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(fmt::format("programs exceed the {} MiB program area at the top of HBM", area >> 20)));
  }
  EXPECT_EQ(core.reserve_program(area - 512), first + 512);
  EXPECT_THROW(core.reserve_program(1), std::runtime_error);
}

}  // namespace
}  // namespace tessera::core
