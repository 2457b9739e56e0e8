// KernelBuilder's rules (each broken rule an error naming the call) and the
// program it builds: semaphores between engines and DMA queues, reuse of
// loaded weights, streams that end.
#include "tessera/kernel_builder.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace tessera {
namespace {

using ::testing::HasSubstr;

const arch::HwConfig& config(const char* name) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  static std::map<std::string, arch::HwConfig> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, arch::load_config(name).hw).first;
  return it->second;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const KernelError& e) {
    return e.what();
  }
  return "(no error)";
}

Tensor hbm_tensor(const char* name, std::int64_t rows, std::int64_t cols, DType t, std::uint64_t at) {
  return Tensor{name, {rows, cols}, t, at};
}

std::size_t count(const std::vector<arch::Instruction>& s, arch::Opcode op) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [&](const auto& in) { return in.opcode == op; }));
}

std::vector<arch::Instruction> decoded(const InstructionStream& s) { return {s.begin(), s.end()}; }

std::size_t count(const InstructionStream& s, arch::Opcode op) { return count(decoded(s), op); }

TEST(KernelBuilder, SbufOverflowNamesTheCallAndTheSizes) {
  KernelBuilder kb(config("tiny"), "k");  // 8 partitions x 16 KiB
  kb.sbuf("a", 8, 4096, DType::Fp32);
  EXPECT_EQ(error_of([&] { kb.sbuf("b", 8, 4096, DType::Bf16); }),
            "sbuf('b', 8, 4096, bf16): SBUF overflow: needs 8192 bytes per partition, 0 of 16384 free (largest block 0)");
}

TEST(KernelBuilder, ReleasedSpaceIsReused) {
  KernelBuilder kb(config("tiny"), "k");
  const Tile a = kb.sbuf("a", 8, 4096, DType::Fp32);
  kb.release(a);
  const Tile b = kb.sbuf("b", 8, 4096, DType::Fp32);
  EXPECT_EQ(b.offset, a.offset);
  EXPECT_THAT(error_of([&] { kb.memset(a, 0); }), HasSubstr("tile 'a' was released"));
}

TEST(KernelBuilder, TileAcrossTooManyPartitions) {
  KernelBuilder kb(config("neuroncore-v2"), "k");
  EXPECT_EQ(error_of([&] { kb.sbuf("x", 129, 16, DType::Bf16); }),
            "sbuf('x', 129, 16, bf16): 129 partitions; SBUF has 128 (a tile spans at most that many)");
}

TEST(KernelBuilder, PsumBankOverrun) {
  KernelBuilder kb(config("neuroncore-v2"), "k");
  EXPECT_EQ(error_of([&] { kb.psum("acc", 128, 513); }),
            "psum('acc', 128, 513, fp32): 2052 bytes per partition overrun a PSUM bank of 2048 bytes (512 fp32)");
}

TEST(KernelBuilder, ReadingATileNeverWritten) {
  KernelBuilder kb(config("tiny"), "k");
  const Tile a = kb.sbuf("a", 8, 16, DType::Fp32), b = kb.sbuf("b", 8, 16, DType::Fp32);
  EXPECT_EQ(error_of([&] { kb.copy(b, a); }), "copy('b' = 'a' on vector): reads source tile 'a' before anything wrote it");
}

TEST(KernelBuilder, DtypeTheEngineCannotRead) {
  KernelBuilder kb(config("neuroncore-v1"), "k");  // no fp32 matmul on v1
  const Tile w = kb.sbuf("w", 128, 128, DType::Fp32), x = kb.sbuf("x", 128, 512, DType::Fp32);
  const Tile acc = kb.psum("acc", 128, 512);
  kb.memset(w, 1);
  kb.memset(x, 1);
  EXPECT_EQ(error_of([&] { kb.matmul(acc, w, x, false); }),
            "matmul(psum 'acc', stationary 'w', moving 'x'): a: fp32 inputs are not supported by this config's tensor "
            "engine (tensor.fp32_cycles_per_column is 0)");
}

TEST(KernelBuilder, MatmulShapeRules) {
  KernelBuilder kb(config("tiny"), "k");
  const Tile w = kb.sbuf("w", 8, 8, DType::Bf16), x = kb.sbuf("x", 4, 16, DType::Bf16);
  const Tile acc = kb.psum("acc", 8, 16);
  kb.memset(w, 1);
  kb.memset(x, 1);
  EXPECT_THAT(error_of([&] { kb.matmul(acc, w, x, false); }),
              HasSubstr("contraction mismatch: stationary has 8 partitions, moving 4"));
}

TEST(KernelBuilder, DmaViewMustFillTheTile) {
  KernelBuilder kb(config("tiny"), "k");
  const Tensor a = hbm_tensor("a", 16, 16, DType::Bf16, 0);
  const Tile t = kb.sbuf("t", 8, 16, DType::Bf16);
  EXPECT_THAT(error_of([&] { kb.dma(t, a.region(0, 0, 8, 8)); }), HasSubstr("view [8 x 8] does not fill tile [8 x 16]"));
  EXPECT_THAT(error_of([&] { kb.dma(t, a.region(10, 0, 8, 16)); }), HasSubstr("region rows 10..17, cols 0..15 is outside it"));
  const Tile f = kb.sbuf("f", 8, 16, DType::Fp32);
  EXPECT_THAT(error_of([&] { kb.dma(f, a.region(0, 0, 8, 16)); }), HasSubstr("DMA does not convert"));
}

// Tile::rows: one engine instruction walks rows with a pitch (a padded
// image's interior); DMA and the tensor engine refuse such a view by name.
TEST(KernelBuilder, ViewsOfRowsAreOneEngineInstructionAndNotForDmaOrTheArray) {
  KernelBuilder kb(config("tiny"), "k");
  const Tile img = kb.sbuf("img", 8, 36, DType::Bf16), pad = kb.sbuf("pad", 8, 64, DType::Bf16);
  kb.memset(img, 1);
  kb.memset(pad, 0);
  // 6 x 6 into the interior of an 8 x 8 plane (rows 8 apart), and every
  // second element of the first 3 rows.
  kb.copy(pad.rows(9, 6, 6, 8), img.rows(0, 6, 6, 6), arch::Engine::GpSimd);
  kb.copy(pad.rows(0, 3, 3, 8), img.rows(0, 3, 3, 12, 2));
  const Program p = kb.build();
  const std::vector<arch::Instruction> g = decoded(p.streams.at(static_cast<std::size_t>(arch::Engine::GpSimd)));
  const auto copy = std::find_if(g.begin(), g.end(), [](const auto& in) { return in.opcode == arch::Opcode::Copy; });
  ASSERT_NE(copy, g.end());
  EXPECT_EQ(copy->dst.num_dims, 2);
  EXPECT_EQ(copy->dst.size[0], 6u);
  EXPECT_EQ(copy->dst.size[1], 6u);
  EXPECT_EQ(copy->dst.stride[0], 8);
  EXPECT_EQ(copy->dst.offset_bytes, pad.offset + 9 * 2);
  const std::vector<arch::Instruction> v = decoded(p.streams.at(static_cast<std::size_t>(arch::Engine::Vector)));
  const auto strided = std::find_if(v.begin(), v.end(), [](const auto& in) {
    return in.opcode == arch::Opcode::Copy && in.a.num_dims == 2;
  });
  ASSERT_NE(strided, v.end());
  EXPECT_EQ(strided->a.stride[0], 12);
  EXPECT_EQ(strided->a.stride[1], 2);

  KernelBuilder kb2(config("tiny"), "k");
  const Tile t = kb2.sbuf("t", 8, 64, DType::Bf16);
  kb2.memset(t, 0);
  EXPECT_THAT(error_of([&] { t.rows(0, 4, 10, 8); }), HasSubstr("the pitch is shorter than a row (10 elements)"));
  EXPECT_THAT(error_of([&] { t.rows(10, 8, 8, 8); }), HasSubstr("reaches element 73, past the tile's 64"));
  EXPECT_THAT(error_of([&] { t.rows(0, 2, 2, 8).slice(0, 4, 1, 2); }), HasSubstr("slices by partitions only"));
  EXPECT_THAT(error_of([&] { t.rows(0, 2, 2, 8).rows(0, 1, 1, 1); }), HasSubstr("already a view of rows"));
  const Tensor a = hbm_tensor("a", 8, 64, DType::Bf16, 0);
  EXPECT_THAT(error_of([&] { kb2.dma(t.rows(0, 2, 4, 8), a.region(0, 0, 8, 8)); }),
              HasSubstr("destination tile 't' is a view of rows (Tile::rows), which only the vector, scalar and "
                        "GpSimd engines take"));
  EXPECT_THAT(error_of([&] { kb2.dma(a.region(0, 0, 8, 8), t.rows(0, 2, 4, 8)); }),
              HasSubstr("source tile 't' is a view of rows"));
  const Tile acc = kb2.psum("acc", 8, 8);
  EXPECT_THAT(error_of([&] { kb2.matmul(acc, t.slice(0, 8, 0, 8), t.rows(0, 2, 4, 8), false); }),
              HasSubstr("moving tile 't' is a view of rows"));
}

TEST(KernelBuilder, PerPartitionScalarOperandsAreCheckedAndOrdered) {
  KernelBuilder kb(config("tiny"), "k");
  const Tile x = kb.sbuf("x", 8, 16, DType::Fp32), y = kb.sbuf("y", 8, 16, DType::Fp32);
  const Tile m = kb.sbuf("m", 8, 1, DType::Fp32), r = kb.sbuf("r", 8, 1, DType::Fp32), w = kb.sbuf("w", 8, 2, DType::Fp32);
  kb.memset(x, 1);
  EXPECT_EQ(error_of([&] { kb.tensor_scalar(y, x, arch::AluOp::Subtract, m); }),
            "tensor_scalar('y' = 'x' subtract 'm'[p]): reads scalar tile 'm' before anything wrote it");
  kb.memset(w, 0);
  EXPECT_EQ(error_of([&] { kb.tensor_scalar(y, x, arch::AluOp::Subtract, w); }),
            "tensor_scalar('y' = 'x' subtract 'w'[p]): b (per-partition scalar) must be [8 x 1], not [8 x 2]");
  kb.reduce(m, x, arch::AluOp::Max);                       // vector writes m
  kb.activation(r, m, arch::ActFunc::Reciprocal);          // scalar writes r
  kb.tensor_scalar(y, x, arch::AluOp::Subtract, m, arch::AluOp::Multiply, &r);  // vector waits for the scalar engine
  const Program p = kb.build();
  const std::vector<arch::Instruction> vec = decoded(p.streams[static_cast<int>(arch::Engine::Vector)]);
  const auto ts = std::find_if(vec.begin(), vec.end(), [](const auto& in) {
    return in.opcode == arch::Opcode::TensorScalar;
  });
  ASSERT_NE(ts, vec.end());
  EXPECT_TRUE(ts->b.valid());
  EXPECT_TRUE(ts->c.valid());
  EXPECT_EQ(ts->alu2, arch::AluOp::Multiply);
  const auto before = std::prev(ts);
  EXPECT_EQ(before->opcode, arch::Opcode::SemWait);
  EXPECT_EQ(before->sem, static_cast<int>(arch::Engine::Scalar));
}

TEST(KernelBuilder, ConsumersWaitOnProducersSemaphores) {
  KernelBuilder kb(config("tiny"), "k");
  const Tensor a = hbm_tensor("a", 8, 16, DType::Fp32, 0);
  const Tensor out = hbm_tensor("out", 8, 16, DType::Fp32, 4096);
  const Tile t = kb.sbuf("t", 8, 16, DType::Fp32), u = kb.sbuf("u", 8, 16, DType::Fp32);
  kb.dma(t, a.all());                                   // DMA writes t
  kb.tensor_scalar(u, t, arch::AluOp::Multiply, 2.0f);  // vector reads t: waits for the DMA queue
  kb.activation(t, u, arch::ActFunc::Exp);              // scalar reads u (waits vector), overwrites t (after vector read it)
  kb.dma(out.all(), t);                                 // DMA reads t: triggered from the scalar stream
  const Program p = kb.build();

  const std::vector<arch::Instruction> vec = decoded(p.streams[static_cast<int>(arch::Engine::Vector)]);
  ASSERT_GE(vec.size(), 3u);
  EXPECT_EQ(vec[0].opcode, arch::Opcode::SemWait);
  EXPECT_GE(vec[0].sem, arch::kNumEngines);  // a DMA queue's semaphore
  EXPECT_EQ(vec[0].value, 1u);
  EXPECT_EQ(vec[1].opcode, arch::Opcode::TensorScalar);
  EXPECT_EQ(vec[2].opcode, arch::Opcode::SemIncr);  // the scalar engine depends on it
  const std::vector<arch::Instruction> sca = decoded(p.streams[static_cast<int>(arch::Engine::Scalar)]);
  EXPECT_EQ(sca[0].opcode, arch::Opcode::SemWait);
  EXPECT_EQ(sca[0].sem, static_cast<int>(arch::Engine::Vector));
  EXPECT_EQ(count(sca, arch::Opcode::DmaTrigger), 1u);  // the store follows its producer
  // The sync stream waits for every queue's last descriptor before it ends.
  const std::vector<arch::Instruction> sync = decoded(p.streams[static_cast<int>(arch::Engine::Sync)]);
  EXPECT_EQ(count(sync, arch::Opcode::SemWait), 2u);
  EXPECT_EQ(sync.back().opcode, arch::Opcode::End);
  for (const auto& s : p.streams) EXPECT_EQ(s.back().opcode, arch::Opcode::End);
  EXPECT_EQ(p.rings.size(), 2u);
}

// A stream waits once for what it has waited for already; another stream
// still waits for it, and a later op of the same queue is waited for anew.
TEST(KernelBuilder, EachStreamWaitsOnceForEachProducerOp) {
  KernelBuilder kb(config("tiny"), "k");
  const Tensor a = hbm_tensor("a", 8, 16, DType::Fp32, 0);
  const Tensor b = hbm_tensor("b", 8, 16, DType::Fp32, 4096);
  const Tile t = kb.sbuf("t", 8, 16, DType::Fp32), u = kb.sbuf("u", 8, 16, DType::Fp32);
  const Tile v = kb.sbuf("v", 8, 16, DType::Fp32), w = kb.sbuf("w", 8, 16, DType::Fp32);
  const Tile x = kb.sbuf("x", 8, 16, DType::Fp32);
  DmaSpread one;  // every copy on DMA engine 0, one queue
  one.engines = 1;
  kb.set_dma_spread(one);
  kb.dma(t, a.all());                                   // queue descriptor 1
  kb.tensor_scalar(u, t, arch::AluOp::Multiply, 2.0f);  // vector waits for it
  kb.tensor_scalar(v, t, arch::AluOp::Add, 1.0f);       // vector: already waited
  kb.activation(w, t, arch::ActFunc::Exp);              // scalar: waits for it too
  kb.dma(x, b.all());                                   // descriptor 2, on the same queue
  kb.tensor_scalar(u, x, arch::AluOp::Multiply, 3.0f);  // vector waits for the second
  const Program p = kb.build();

  const auto waits_of = [&](arch::Engine e) {
    std::vector<std::uint32_t> values;
    for (const auto& in : p.streams[static_cast<int>(e)])
      if (in.opcode == arch::Opcode::SemWait && in.sem >= arch::kNumEngines) values.push_back(in.value);
    return values;
  };
  ASSERT_EQ(p.rings.size(), 1u);
  EXPECT_EQ(waits_of(arch::Engine::Vector), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(waits_of(arch::Engine::Scalar), (std::vector<std::uint32_t>{1}));
}

TEST(KernelBuilder, PerPartitionScalarTilesAreReadAndChecked) {
  KernelBuilder kb(config("tiny"), "k");
  const Tile x = kb.sbuf("x", 8, 16, DType::Fp32), y = kb.sbuf("y", 8, 16, DType::Fp32);
  const Tile m = kb.sbuf("m", 8, 1, DType::Fp32), l = kb.sbuf("l", 8, 1, DType::Fp32);
  kb.memset(x, 1);
  EXPECT_THAT(error_of([&] { kb.tensor_scalar(y, x, arch::AluOp::Subtract, m); }),
              HasSubstr("reads scalar tile 'm' before anything wrote it"));
  kb.iota(m, 0, 1, 0);  // GpSimd writes m: the vector op must wait for it
  kb.memset(l, 2);
  EXPECT_THAT(error_of([&] { kb.tensor_scalar(y, x, arch::AluOp::Subtract, x); }),
              HasSubstr("b (per-partition scalar) must be [8 x 1], not [8 x 16]"));
  EXPECT_THAT(error_of([&] { kb.tensor_scalar(y, x, arch::AluOp::Subtract, m, arch::AluOp::Divide, &x); }),
              HasSubstr("c (per-partition scalar) must be [8 x 1], not [8 x 16]"));
  kb.tensor_scalar(y, x, arch::AluOp::Subtract, m, arch::AluOp::Divide, &l);
  kb.tensor_scalar(x, y, arch::AluOp::Multiply, 2.0f, arch::AluOp::Min, m);  // immediate, then per partition
  EXPECT_THAT(error_of([&] { kb.tensor_scalar(x, y, arch::AluOp::Multiply, 2.0f, arch::AluOp::Min, y); }),
              HasSubstr("c (per-partition scalar) must be [8 x 1], not [8 x 16]"));
  const Program p = kb.build();
  const std::vector<arch::Instruction> vec = decoded(p.streams[static_cast<int>(arch::Engine::Vector)]);
  const auto ts = std::find_if(vec.begin(), vec.end(), [](const auto& in) { return in.opcode == arch::Opcode::TensorScalar; });
  ASSERT_NE(ts, vec.end());
  EXPECT_TRUE(ts->b.valid());
  EXPECT_TRUE(ts->c.valid());
  const auto wait = std::prev(ts);
  EXPECT_EQ(wait->opcode, arch::Opcode::SemWait);
  EXPECT_EQ(wait->sem, static_cast<int>(arch::Engine::GpSimd));
  const auto mixed = std::find_if(std::next(ts), vec.end(), [](const auto& in) { return in.opcode == arch::Opcode::TensorScalar; });
  ASSERT_NE(mixed, vec.end());
  EXPECT_FALSE(mixed->b.valid());
  EXPECT_EQ(mixed->imm0, 2.0f);
  EXPECT_TRUE(mixed->c.valid());
  EXPECT_EQ(mixed->alu2, arch::AluOp::Min);
}

TEST(KernelBuilder, TensorScalarRunsOnTheVectorOrTheScalarEngine) {
  KernelBuilder kb(config("tiny"), "k");
  const Tile x = kb.sbuf("x", 8, 16, DType::Fp32), y = kb.sbuf("y", 8, 16, DType::Fp32);
  const Tile m = kb.sbuf("m", 8, 1, DType::Fp32);
  kb.memset(x, 1);
  kb.reduce(m, x, arch::AluOp::Max);
  kb.tensor_scalar(y, x, arch::AluOp::Multiply, m, arch::AluOp::Bypass, nullptr, 0.0f, arch::Engine::Scalar);
  kb.tensor_scalar(x, y, arch::AluOp::Add, 1.0f, arch::AluOp::Bypass, 0.0f, arch::Engine::Scalar);
  EXPECT_THAT(error_of([&] {
                kb.tensor_scalar(y, x, arch::AluOp::Add, 1.0f, arch::AluOp::Bypass, 0.0f, arch::Engine::GpSimd);
              }),
              HasSubstr("TensorScalar does not run on the gpsimd engine"));
  const Program p = kb.build();
  const std::vector<arch::Instruction> sc = decoded(p.streams[static_cast<int>(arch::Engine::Scalar)]);
  const auto n = std::count_if(sc.begin(), sc.end(), [](const auto& in) { return in.opcode == arch::Opcode::TensorScalar; });
  EXPECT_EQ(n, 2);
  // The scalar engine waits for the vector engine's max before reading it.
  const auto ts = std::find_if(sc.begin(), sc.end(), [](const auto& in) { return in.opcode == arch::Opcode::TensorScalar; });
  ASSERT_NE(ts, sc.begin());
  EXPECT_EQ(std::prev(ts)->opcode, arch::Opcode::SemWait);
  EXPECT_EQ(std::prev(ts)->sem, static_cast<int>(arch::Engine::Vector));
}

TEST(KernelBuilder, PitchedDmaLandsRowsAtThePitchAndChecksTheWindow) {
  KernelBuilder kb(config("tiny"), "k");
  const Tensor img = hbm_tensor("img", 8, 36, DType::Bf16, 0);  // 8 channels of a 6x6 image
  const Tile plane = kb.sbuf("plane", 8, 64, DType::Bf16);     // 8x8 with a border of 1
  const View interior{&img, 0, {8, 6, 6}, {36, 6, 1}};
  EXPECT_THAT(error_of([&] { kb.dma(plane, interior, 0); }), HasSubstr("the row pitch must be positive"));
  EXPECT_THAT(error_of([&] { kb.dma(plane, img.all(), 8); }),
              HasSubstr("a pitched copy takes a view of [partitions x rows x columns], not [8 x 36]"));
  EXPECT_THAT(error_of([&] { kb.dma(plane, interior, 4); }), HasSubstr("rows of 6 elements overlap at a pitch of 4"));
  EXPECT_THAT(error_of([&] { kb.dma(plane.slice(0, 8, 20, 44), interior, 8); }),
              HasSubstr("6 rows at a pitch of 8 overrun the tile's 44 elements"));
  kb.dma(plane.slice(0, 8, 9, 46), interior, 8);  // rows 1..6, columns 1..6
  const Program p = kb.build();
  ASSERT_EQ(p.rings.size(), 1u);
  const arch::DmaDescriptor& d = p.rings.begin()->second.at(0);
  // Destination: 8 partitions x 6 rows at a pitch of 8 elements (16 bytes) x 6 contiguous.
  EXPECT_EQ(d.dst_size[0], 6);
  EXPECT_EQ(d.dst_size[1], 6);
  EXPECT_EQ(d.dst_stride[1], 16u);
  EXPECT_EQ(d.dst_size[2], 8);
}

std::size_t descriptors(const Program& p) {
  std::size_t n = 0;
  for (const auto& [q, ring] : p.rings) n += ring.size();
  return n;
}

TEST(KernelBuilder, LargeCopiesAreSplitOverTheDmaEngines) {
  const arch::HwConfig& cfg = config("neuroncore-v2");  // 16 DMA engines
  KernelBuilder kb(cfg, "k");
  const Tensor a = hbm_tensor("a", 128, 1024, DType::Bf16, 0);   // 256 KiB: 16 pieces of 8 partitions
  const Tensor b = hbm_tensor("b", 128, 4, DType::Bf16, 1 << 20);  // 1 KiB: one piece
  const Tile t = kb.sbuf("t", 128, 1024, DType::Bf16), s = kb.sbuf("s", 128, 4, DType::Bf16);
  kb.dma(t, a.all());
  kb.dma(s, b.all());
  const Program p = kb.build();
  EXPECT_EQ(descriptors(p), static_cast<std::size_t>(cfg.dma.engines) + 1);
  EXPECT_EQ(p.rings.size(), static_cast<std::size_t>(cfg.dma.engines));
}

// A kernel chooses the spread per call or for the calls that follow.
TEST(KernelBuilder, AKernelChoosesTheDmaSpread) {
  const arch::HwConfig& cfg = config("neuroncore-v2");
  KernelBuilder kb(cfg, "k");
  const Tensor c = hbm_tensor("c", 128, 128, DType::Bf16, 0);
  const Tile u = kb.sbuf("u", 128, 128, DType::Bf16), v = kb.sbuf("v", 128, 128, DType::Bf16);
  DmaSpread sixteen;
  sixteen.pieces = 16;  // 16 pieces of 8 partitions x 256 B (the policy makes the same)
  kb.dma(u, c.all(), sixteen);
  DmaSpread upper;
  upper.first_engine = 12;
  upper.engines = 4;
  upper.min_piece_bytes = 4096;  // 8 pieces by size, at most one per engine: 4
  kb.set_dma_spread(upper);
  kb.dma(v, c.all());
  kb.dma(c.all(), v);  // the setting holds for stores too
  DmaSpread beyond;
  beyond.first_engine = 14;
  beyond.engines = 4;
  EXPECT_THAT(error_of([&] { kb.dma(v, c.all(), beyond); }),
              HasSubstr("DMA spread over engines 14..17; the config has engines 0..15"));
  EXPECT_THAT(error_of([&] { kb.set_dma_spread(beyond); }), HasSubstr("set_dma_spread: DMA spread over engines 14..17"));
  DmaSpread large;
  large.min_piece_bytes = DmaSpread::kLargePieceBytes;
  kb.set_dma_spread(large);
  const Tensor a = hbm_tensor("a", 128, 1024, DType::Bf16, 1 << 20);  // 256 KiB: 8 pieces of 32 KiB
  const Tile t = kb.sbuf("t", 128, 1024, DType::Bf16);
  kb.dma(t, a.all());
  const Program p = kb.build();
  EXPECT_EQ(descriptors(p), 16u + 4u + 4u + 8u);
  std::size_t on_upper = 0;
  for (const auto& [q, ring] : p.rings)
    for (const auto& d : ring)
      if (q.first >= 12 && d.src_size[0] * d.src_size[1] != 16u * 1024u) ++on_upper;  // not a's pieces
  // Engines 12..15: four of the sixteen pieces (they went to engines 0..15 in
  // turn), then all four of each copy under `upper`.
  EXPECT_EQ(on_upper, 4u + 4u + 4u);
}

// A copy that breaks a rule throws before placing anything, and the copies
// after it are split as usual (a copy that threw from one of its pieces used
// to leave the builder believing it was still splitting, so that no later
// copy was split).
TEST(KernelBuilder, ACopyThatThrowsLeavesNothingBehindAndLaterCopiesSplit) {
  const arch::HwConfig& cfg = config("neuroncore-v2");
  KernelBuilder kb(cfg, "k");
  const Tensor a = hbm_tensor("a", 128, 1024, DType::Bf16, 0);
  const Tensor far = hbm_tensor("far", 128, 16 << 20, DType::Bf16, 1 << 20);  // rows 32 MiB apart
  const Tile wrong = kb.sbuf("wrong", 128, 1024, DType::Fp32);
  const Tile t = kb.sbuf("t", 128, 1024, DType::Bf16);
  EXPECT_THAT(error_of([&] { kb.dma(wrong, a.all()); }), HasSubstr("DMA does not convert"));
  EXPECT_THAT(error_of([&] { kb.dma(t, far.region(0, 0, 128, 1024)); }),
              HasSubstr("source stride of 33554432 bytes is outside a descriptor's 0..16 MiB"));
  kb.dma(t, a.all());
  kb.memset(wrong, 0);
  kb.dma(a.all(), t);
  const Program p = kb.build();
  EXPECT_EQ(descriptors(p), 2u * static_cast<std::size_t>(cfg.dma.engines));
  std::size_t triggers = 0;
  for (const auto& s : p.streams) triggers += count(s, arch::Opcode::DmaTrigger);
  EXPECT_EQ(triggers, descriptors(p));
}

TEST(KernelBuilder, LoadedWeightsAreReusedUntilOverwritten) {
  KernelBuilder kb(config("tiny"), "k");
  const Tile w = kb.sbuf("w", 8, 8, DType::Bf16), x = kb.sbuf("x", 8, 16, DType::Bf16);
  const Tile acc = kb.psum("acc", 8, 16);
  kb.memset(w, 1);
  kb.memset(x, 1);
  kb.matmul(acc, w, x, false);
  kb.matmul(acc, w, x, true);
  kb.memset(w, 2);
  kb.matmul(acc, w, x, true);
  const Program p = kb.build();
  const std::vector<arch::Instruction> te = decoded(p.streams[static_cast<int>(arch::Engine::Tensor)]);
  EXPECT_EQ(count(te, arch::Opcode::LoadStationary), 2u);
  EXPECT_EQ(count(te, arch::Opcode::MultiplyMoving), 3u);
  EXPECT_DOUBLE_EQ(p.matmul_flops, 3 * 2.0 * 8 * 8 * 16);
  EXPECT_THAT(p.disassemble(), HasSubstr("tensor LoadStationary"));
}

TEST(KernelBuilder, BuildOnceOnly) {
  KernelBuilder kb(config("tiny"), "k");
  kb.build();
  EXPECT_THAT(error_of([&] { kb.build(); }), HasSubstr("already built"));
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// What profiles read from a program: labels beside every instruction and
// descriptor, who owns each semaphore, and each tile's first and last use.
TEST(KernelBuilder, LabelsOwnersAndTileLivesForProfiles) {
  KernelBuilder kb(config("tiny"), "k");
  const Tensor a = hbm_tensor("a", 8, 16, DType::Fp32, 0);
  const Tensor out = hbm_tensor("out", 8, 16, DType::Fp32, 4096);
  const Tile t = kb.sbuf("t", 8, 16, DType::Fp32), u = kb.sbuf("u", 8, 16, DType::Fp32);
  const Tile unused = kb.sbuf("unused", 8, 16, DType::Fp32);
  (void)unused;
  kb.label("load");
  kb.dma(t, a.all());
  kb.label("scale");
  kb.tensor_scalar(u, t, arch::AluOp::Multiply, 2.0f);
  kb.label("");
  kb.dma(out.all(), u);
  const Program p = kb.build();

  for (int e = 0; e < arch::kNumEngines; ++e) EXPECT_EQ(p.labels[e].size(), p.streams[e].size());
  const std::vector<arch::Instruction> vec = decoded(p.streams[static_cast<int>(arch::Engine::Vector)]);
  for (std::size_t i = 0; i < vec.size(); ++i) {
    if (vec[i].opcode == arch::Opcode::TensorScalar) {
      EXPECT_EQ(p.label(arch::Engine::Vector, i), "scale");
    }
  }
  std::vector<std::string> ring_labels;
  for (const auto& [q, labels] : p.ring_labels)
    for (std::size_t i = 0; i < labels.size(); ++i) ring_labels.push_back(p.label(q, i));
  EXPECT_THAT(ring_labels, ::testing::UnorderedElementsAre("load", ""));

  ASSERT_GE(p.semaphore_owners.size(), static_cast<std::size_t>(arch::kNumEngines) + 2);
  EXPECT_EQ(p.semaphore_owners[static_cast<int>(arch::Engine::Vector)], "vector");
  EXPECT_EQ(p.semaphore_owners[arch::kNumEngines].rfind("dma ", 0), 0u);

  // Untouched tiles have no life; t lives from its load to the multiply, u
  // from the multiply to its store.
  ASSERT_EQ(p.tiles.size(), 2u);
  EXPECT_EQ(p.tiles[0].name, "t");
  EXPECT_TRUE(p.tiles[0].first.dma);
  EXPECT_FALSE(p.tiles[0].last.dma);
  EXPECT_EQ(p.tiles[0].last.engine, static_cast<std::uint32_t>(arch::Engine::Vector));
  EXPECT_EQ(vec[p.tiles[0].last.index].opcode, arch::Opcode::TensorScalar);
  EXPECT_EQ(p.tiles[0].bytes, 8u * 16u * 4u);
  EXPECT_EQ(p.tiles[1].name, "u");
  EXPECT_FALSE(p.tiles[1].first.dma);
  EXPECT_TRUE(p.tiles[1].last.dma);
}

// Every instruction and descriptor carries the call site that made it (this
// file and line, relative to the source tree); the waits and increments the
// builder inserted carry the call site of the operation they were placed for.
TEST(KernelBuilder, CallSitesAreTheKernelsSourceLines) {
  KernelBuilder kb(config("tiny"), "k");
  const Tensor a = hbm_tensor("a", 8, 16, DType::Fp32, 0);
  const Tensor out = hbm_tensor("out", 8, 16, DType::Fp32, 4096);
  const Tile t = kb.sbuf("t", 8, 16, DType::Fp32), u = kb.sbuf("u", 8, 16, DType::Fp32);
  const std::uint32_t load_line = __LINE__ + 1;
  kb.dma(t, a.all());
  kb.label("scale");
  const std::uint32_t scale_line = __LINE__ + 1;
  kb.tensor_scalar(u, t, arch::AluOp::Multiply, 2.0f);
  kb.dma(out.all(), u, SourceLocation{"my_kernel.cpp", 7});  // a helper passing its caller's location
  const Program p = kb.build();

  const std::string here = "driver/tests/kernel_builder_test.cpp";
  for (int e = 0; e < arch::kNumEngines; ++e) EXPECT_EQ(p.sites[e].size(), p.streams[e].size());
  const std::vector<arch::Instruction> vec = decoded(p.streams[static_cast<int>(arch::Engine::Vector)]);
  const auto& vec_sites = p.sites[static_cast<int>(arch::Engine::Vector)];
  bool waited = false;
  for (std::size_t i = 0; i < vec.size(); ++i) {
    if (vec[i].opcode == arch::Opcode::End) {
      EXPECT_EQ(p.site_name(vec_sites[i]), "");
      continue;
    }
    if (vec[i].opcode == arch::Opcode::DmaTrigger) {  // rings the store, whose data the multiply made
      EXPECT_EQ(p.site_name(vec_sites[i]), "my_kernel.cpp:7");
      continue;
    }
    // The multiply, the wait for its load before it and its increment after.
    EXPECT_EQ(p.site_name(vec_sites[i]), fmt::format("{}:{}", here, scale_line)) << i << " " << arch::disassemble(vec[i]);
    waited |= vec[i].opcode == arch::Opcode::SemWait;
  }
  EXPECT_TRUE(waited);
  std::vector<std::string> ring_sites;
  for (const auto& [q, sites] : p.ring_sites)
    for (const CallSite& s : sites) ring_sites.push_back(p.site_name(s));
  EXPECT_THAT(ring_sites, ::testing::UnorderedElementsAre(fmt::format("{}:{}", here, load_line), "my_kernel.cpp:7"));
  EXPECT_THAT(p.source_files, ::testing::UnorderedElementsAre(here, "my_kernel.cpp"));

  std::size_t multiply = 0;
  while (vec[multiply].opcode != arch::Opcode::TensorScalar) ++multiply;
  EXPECT_EQ(p.origin(arch::Engine::Vector, multiply), fmt::format("at {}:{}, label 'scale'", here, scale_line));
  EXPECT_EQ(p.origin(arch::Engine::Vector, vec.size() - 1), "");  // End
  EXPECT_EQ(p.origin(arch::Engine::Vector, vec.size() + 5), "");  // past the stream
  EXPECT_THAT(p.disassemble(), HasSubstr(fmt::format("; at {}:{}, label 'scale'", here, scale_line)));
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// Inputs in the narrow formats' fast modes (docs/formats.md): the builder
// carries the mode and the scales into both tensor-engine instructions and
// names the call and the rule when an input or a pairing is wrong.
class NarrowMatmul : public ::testing::Test {
protected:
  // An MX tile comes from HBM (no engine but the tensor engine reads x4).
  Tile loaded(KernelBuilder& kb, const char* name, std::uint32_t partitions, std::uint32_t free, DType t) {
    tensors_.push_back(std::make_unique<Tensor>(hbm_tensor(name, partitions, free, t, next_)));
    next_ += 1 << 16;
    const Tile tile = kb.sbuf(name, partitions, free, t);
    kb.dma(tile, tensors_.back()->all());
    return tile;
  }
  Tile set(KernelBuilder& kb, const char* name, std::uint32_t partitions, std::uint32_t free, DType t, float v = 1) {
    const Tile tile = kb.sbuf(name, partitions, free, t);
    kb.memset(tile, v);
    return tile;
  }
  static arch::Instruction first(const Program& p, arch::Opcode op) {
    const std::vector<arch::Instruction> te = decoded(p.streams[static_cast<int>(arch::Engine::Tensor)]);
    return *std::find_if(te.begin(), te.end(), [&](const auto& in) { return in.opcode == op; });
  }

private:
  std::vector<std::unique_ptr<Tensor>> tensors_;
  std::uint64_t next_ = 0;
};

TEST_F(NarrowMatmul, DoubleRowReadsBothHalvesInOnePass) {
  KernelBuilder kb(config("tiny"), "k");
  const Tile wl = set(kb, "wl", 8, 8, DType::Fp8E4m3), wh = set(kb, "wh", 8, 8, DType::Fp8E4m3);
  const Tile xl = set(kb, "xl", 8, 16, DType::Fp8E5m2), xh = set(kb, "xh", 8, 16, DType::Fp8E5m2);
  const Tile acc = kb.psum("acc", 8, 16);
  kb.matmul(acc, MatmulInput::double_row(wl, wh), MatmulInput::double_row(xl, xh), false);
  kb.matmul(acc, MatmulInput::double_row(wl, wh), MatmulInput::double_row(xl, xh), true);
  const Program p = kb.build();
  const std::vector<arch::Instruction> te = decoded(p.streams[static_cast<int>(arch::Engine::Tensor)]);
  EXPECT_EQ(count(te, arch::Opcode::LoadStationary), 1u);  // the same halves: loaded once
  const arch::Instruction& ls = first(p, arch::Opcode::LoadStationary);
  EXPECT_TRUE(ls.double_row());
  EXPECT_EQ(ls.a.num_dims, 2);
  EXPECT_EQ(ls.a.size[0], 2u);
  EXPECT_EQ(ls.a.stride[0] * 1, static_cast<std::int32_t>(wh.offset - wl.offset));
  EXPECT_TRUE(first(p, arch::Opcode::MultiplyMoving).double_row());
  EXPECT_DOUBLE_EQ(p.matmul_flops, 2 * 2.0 * 16 * 8 * 16);  // K = 2 x 8 partitions
}

TEST_F(NarrowMatmul, MxCarriesItsScalesAndCountsFourRowsPerPartition) {
  KernelBuilder kb(config("tiny"), "k");
  const Tile w = loaded(kb, "w", 8, 8, DType::Fp8E4m3x4), x = loaded(kb, "x", 8, 16, DType::Fp4E2m1x4);
  const Tile ws = set(kb, "ws", 1, 8, DType::Uint8, 127), xs = set(kb, "xs", 1, 16, DType::Uint8, 120);
  const Tile acc = kb.psum("acc", 8, 16, DType::Bf16);  // tiny allows bf16 PSUM
  kb.matmul(acc, MatmulInput::mx(w, ws), MatmulInput::mx(x, xs), false);
  const Program p = kb.build();
  const arch::Instruction& ls = first(p, arch::Opcode::LoadStationary);
  const arch::Instruction& mm = first(p, arch::Opcode::MultiplyMoving);
  EXPECT_EQ(ls.b.dtype, DType::Uint8);
  EXPECT_EQ(ls.b.offset_bytes, ws.offset);
  EXPECT_EQ(mm.b.offset_bytes, xs.offset);
  EXPECT_EQ(mm.dst.dtype, DType::Bf16);
  EXPECT_DOUBLE_EQ(p.matmul_flops, 2.0 * 32 * 8 * 16);
}

TEST_F(NarrowMatmul, BrokenRulesNameTheCallAndTheRule) {
  KernelBuilder kb(config("tiny"), "k");
  const Tile w8 = set(kb, "w8", 8, 8, DType::Fp8E4m3), w8h = set(kb, "w8h", 8, 8, DType::Fp8E4m3);
  const Tile xb = set(kb, "xb", 8, 16, DType::Bf16), x8 = set(kb, "x8", 8, 16, DType::Fp8E4m3);
  const Tile wmx = loaded(kb, "wmx", 8, 8, DType::Fp8E4m3x4), xmx = loaded(kb, "xmx", 8, 16, DType::Fp8E4m3x4);
  const Tile w4 = loaded(kb, "w4", 4, 8, DType::Fp8E4m3x4), x4 = loaded(kb, "x4", 4, 16, DType::Fp8E4m3x4);
  const Tile ws = set(kb, "ws", 1, 8, DType::Uint8, 127), xs = set(kb, "xs", 1, 16, DType::Uint8, 127);
  const Tile acc = kb.psum("acc", 8, 16);
  EXPECT_EQ(error_of([&] { kb.matmul(acc, w8, xb, false); }),
            "matmul(psum 'acc', stationary 'w8', moving 'xb'): the tensor engine cannot multiply these inputs "
            "together: formats of different classes (stationary fp8_e4m3, moving bf16)");
  EXPECT_EQ(error_of([&] { kb.matmul(acc, MatmulInput::double_row(w8, w8h), x8, false); }),
            "matmul(psum 'acc', stationary 'w8', moving 'x8'): the tensor engine cannot multiply these inputs "
            "together: different modes (stationary fp8_e4m3 double row, moving fp8_e4m3)");
  EXPECT_EQ(error_of([&] { kb.matmul(acc, wmx, MatmulInput::mx(xmx, xs), false); }),
            "matmul(psum 'acc', stationary 'wmx', moving 'xmx'): stationary tile 'wmx' is fp8_e4m3_x4 (MX) and needs "
            "its scale tile: MatmulInput::mx(data, scale)");
  EXPECT_EQ(error_of([&] { kb.matmul(acc, MatmulInput::mx(w8, ws), x8, false); }),
            "matmul(psum 'acc', stationary 'w8', moving 'x8'): stationary tile 'w8' is fp8_e4m3; only MX (x4) tiles "
            "take a scale tile");
  EXPECT_EQ(error_of([&] { kb.matmul(acc, MatmulInput::double_row(w8, w8), x8, false); }),
            "matmul(psum 'acc', stationary 'w8', moving 'x8'): double row: the stationary halves 'w8' and 'w8' "
            "overlap");
  const Tile acc4 = kb.psum("acc4", 8, 16);
  EXPECT_EQ(error_of([&] { kb.matmul(acc4, MatmulInput::mx(w4, ws), MatmulInput::mx(x4, xs), false); }),
            "matmul(psum 'acc4', stationary 'w4', moving 'x4'): a: an MX operand spans whole scaling groups of 8 "
            "partitions x 4 elements; 4 partitions is not a multiple of 8");
}

TEST_F(NarrowMatmul, AFormatOrModeTheConfigLacksNamesItsKey) {
  {
    KernelBuilder kb(config("neuroncore-v2"), "k");  // fp8 at one row per PE: no double row
    const Tile wl = set(kb, "wl", 128, 128, DType::Fp8E4m3), wh = set(kb, "wh", 128, 128, DType::Fp8E4m3);
    const Tile xl = set(kb, "xl", 128, 512, DType::Fp8E4m3), xh = set(kb, "xh", 128, 512, DType::Fp8E4m3);
    const Tile acc = kb.psum("acc", 128, 512);
    kb.matmul(acc, wl, xl, false);  // single row is fine
    EXPECT_EQ(error_of([&] {
                kb.matmul(acc, MatmulInput::double_row(wl, wh), MatmulInput::double_row(xl, xh), false);
              }),
              "matmul(psum 'acc', stationary 'wl', moving 'xl'): a: double row needs tensor.fp8_rows_per_pe 2; this "
              "config has 1");
  }
  {
    KernelBuilder kb(config("neuroncore-v1"), "k");
    const Tile w = set(kb, "w", 128, 128, DType::Fp8E4m3), x = set(kb, "x", 128, 512, DType::Fp8E4m3);
    const Tile acc = kb.psum("acc", 128, 512);
    EXPECT_EQ(error_of([&] { kb.matmul(acc, w, x, false); }),
              "matmul(psum 'acc', stationary 'w', moving 'x'): a: fp8_e4m3 inputs are not supported by this config's "
              "tensor engine (tensor.fp8_rows_per_pe is 0)");
  }
  {
    KernelBuilder kb(config("neuroncore-v3"), "k");
    const Tile w = set(kb, "w", 128, 128, DType::Bf16), x = set(kb, "x", 128, 512, DType::Bf16);
    const Tile acc = kb.psum("acc", 128, 512, DType::Bf16);
    EXPECT_THAT(error_of([&] { kb.matmul(acc, w, x, false); }),
                HasSubstr("bf16 results in PSUM are not supported by this config's tensor engine (tensor.psum_bf16 "
                          "is false)"));
  }
}

}  // namespace
}  // namespace tessera
