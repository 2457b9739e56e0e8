// DMA patterns and the DMA engine model inside the core: a matmul tile
// pipeline with DMA in and out of HBM, semaphores between every stage, and
// the error paths (bad descriptor, doorbell out of step).
#include "core/neuron_core.h"
#include "dma/dma_pattern.h"

#include "arch/dma_descriptor.h"
#include "arch/numerics.h"
#include "testing/shipped_config.h"
#include "testing/dma_programs.h"
#include "testing/stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace tessera::dma {
namespace {

using arch::DType;
using arch::Memory;
using arch::Opcode;
using core::NeuronCore;
using test_support::Stream;
using test_support::ring_of;
using test_support::tile_descriptor;
using test_support::trigger;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const arch::HwConfig& tiny() { return test_support::shipped_config("tiny"); }

TEST(DmaPattern, ContiguousInnerDimensionIsOneRunPerRow) {
  const auto runs = pattern_runs(0x100, {8, 3, 1, 1}, {2, 1000, 0, 0}, 1);
  EXPECT_THAT(runs, ElementsAre(dma::Run{0x100, 16}, dma::Run{0x100 + 1000, 16}, dma::Run{0x100 + 2000, 16}));
}

TEST(DmaPattern, StridedInnerDimensionIsOneRunPerElement) {
  const auto runs = pattern_runs(0, {3, 1, 1, 1}, {8, 0, 0, 0}, 2);
  EXPECT_THAT(runs, ElementsAre(dma::Run{0, 4}, dma::Run{8, 4}, dma::Run{16, 4}));
}

TEST(DmaPattern, BurstsNeverCrossTheBurstBoundary) {
  const auto b = bursts({{4000, 200}, {8192, 9000}}, 4096);
  EXPECT_THAT(b, ElementsAre(dma::Run{4000, 96}, dma::Run{4096, 104}, dma::Run{8192, 4096}, dma::Run{12288, 4096}, dma::Run{16384, 808}));
}

// A burst starts a run unless it carries on where the burst before it ended,
// rows of the pattern included; pattern_bursts gives what bursts gives on the
// pattern's runs.
TEST(DmaPattern, ABurstStartsARunWhereTheBytesBreak) {
  const std::array<std::uint16_t, 4> size{64, 4, 1, 1};
  std::vector<dma::Run> out;
  for (const std::uint32_t row_stride : {128u, 200u}) {
    const std::array<std::uint32_t, 4> stride{2, row_stride, 0, 0};
    pattern_bursts(4000, size, stride, 1, 256, out);
    const auto expected = bursts(pattern_runs(4000, size, stride, 1), 256);
    ASSERT_EQ(out, expected);
    std::vector<bool> first;
    for (const auto& b : out) first.push_back(b.first);
    std::vector<bool> first_expected;
    for (const auto& b : expected) first_expected.push_back(b.first);
    EXPECT_EQ(first, first_expected);
    if (row_stride == 128) {
      // Four rows of 128 bytes back to back from 4000: each row cut where it
      // crosses a 256-byte boundary, and only the first burst starts a run.
      EXPECT_THAT(out, ElementsAre(dma::Run{4000, 96}, dma::Run{4096, 32}, dma::Run{4128, 128}, dma::Run{4256, 96},
                                   dma::Run{4352, 32}, dma::Run{4384, 128}));
      EXPECT_EQ(first, (std::vector<bool>{true, false, false, false, false, false}));
    } else {
      // Rows at 4000, 4200, 4400 and 4600: the first crosses 4096 and the last 4608.
      EXPECT_EQ(out.size(), 6u);
      EXPECT_EQ(first, (std::vector<bool>{true, false, true, true, true, false}));
    }
  }
  pattern_bursts(4000, {64, 0, 1, 1}, {2, 128, 0, 0}, 1, 256, out);
  EXPECT_TRUE(out.empty());
}

// The cache gives exactly what pattern_bursts gives, first flags included:
// for shapes repeated at many bases (the same offset within a burst and
// others), for more shapes than it has entries, for patterns longer than it
// keeps, and for a burst size that is not a power of two.
TEST(DmaPattern, BurstCacheGivesWhatPatternBurstsGives) {
  std::mt19937_64 rng(20261206);
  const auto pick = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  struct Shape {
    std::array<std::uint16_t, 4> size;
    std::array<std::uint32_t, 4> stride;
    std::uint8_t elem_log2;
  };
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < 2 * BurstCache::kEntries; ++i) {
    Shape s;
    s.elem_log2 = static_cast<std::uint8_t>(pick(0, 3));
    const std::uint32_t elem = 1u << s.elem_log2;
    s.size = {static_cast<std::uint16_t>(pick(1, 300)), static_cast<std::uint16_t>(pick(1, 6)),
              static_cast<std::uint16_t>(pick(1, 2)), 1};
    // Contiguous rows (one run each) or strided elements, rows apart or back to back.
    s.stride[0] = pick(0, 3) == 0 ? elem * static_cast<std::uint32_t>(pick(2, 4)) : elem;
    s.stride[1] = pick(0, 3) == 0 ? s.stride[0] * s.size[0] : static_cast<std::uint32_t>(pick(1, 8192));
    s.stride[2] = static_cast<std::uint32_t>(pick(0, 1 << 20));
    s.stride[3] = 0;
    shapes.push_back(s);
  }
  // Shapes that differ only in their strides, or only in their sizes, more
  // of them than the cache has entries: some meet in an entry.
  for (std::size_t i = 0; i < 2 * BurstCache::kEntries; ++i) {
    shapes.push_back({{64, 4, 1, 1}, {2, static_cast<std::uint32_t>(pick(128, 4096)), 0, 0}, 1});
    shapes.push_back({{static_cast<std::uint16_t>(pick(1, 400)), 4, 1, 1}, {2, 1024, 0, 0}, 1});
  }
  // A pattern of far more bursts than the cache keeps.
  shapes.push_back({{1, 2000, 1, 1}, {4, 64, 0, 0}, 2});
  for (const std::uint32_t max_burst : {256u, 4096u, 3072u}) {
    BurstCache cache(max_burst);
    std::vector<dma::Run> got, want;
    for (int round = 0; round < 4000; ++round) {
      const Shape& s = shapes[pick(0, shapes.size() - 1)];
      // Bases that share an offset within max_burst (cache hits) and bases that do not.
      const std::uint64_t base = pick(0, 3) == 0 ? (pick(0, 1 << 20) * max_burst + 96) : pick(0, std::uint64_t{1} << 40);
      cache.bursts(base, s.size, s.stride, s.elem_log2, got);
      pattern_bursts(base, s.size, s.stride, s.elem_log2, max_burst, want);
      ASSERT_EQ(got, want) << "round " << round << " max_burst " << max_burst;
      for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i].first, want[i].first) << i;
    }
  }
}

// A descriptor for a [rows, cols] bf16 tile between a row-major HBM matrix and
// SBUF partitions.
TEST(DmaInCore, MatmulTilePipelineThroughHbm) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  const auto& map = core.address_map();

  arch::Bf16Matrix w(8, 8), x(8, 64);
  for (auto& v : w.data) v = arch::to_bf16(dist(rng));
  for (auto& v : x.data) v = arch::to_bf16(dist(rng));
  const std::uint64_t w_at = 0x1000, x_at = 0x2000, out_at = 0x10000;
  core.hbm().backdoor_write(w_at, reinterpret_cast<const std::uint8_t*>(w.data.data()), w.data.size() * 2);
  core.hbm().backdoor_write(x_at, reinterpret_cast<const std::uint8_t*>(x.data.data()), x.data.size() * 2);

  const std::uint32_t pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
  const auto in_ring = ring_of({tile_descriptor(w_at, 16, map.sbuf_address(0, 0), pbytes, 8, 8, 1,
                                                map.semaphore_address(0)),
                                tile_descriptor(x_at, 128, map.sbuf_address(0, 64), pbytes, 8, 64, 1,
                                                map.semaphore_address(0))},
                               32);
  const auto out_ring = ring_of({tile_descriptor(map.sbuf_address(0, 512), pbytes, out_at, 256, 8, 64, 2,
                                                 map.semaphore_address(3))},
                                32);
  const std::uint64_t in_base = core.place(in_ring), out_base = core.place(out_ring);
  core.configure_dma_queue(0, 0, in_base, 32);
  core.configure_dma_queue(1, 2, out_base, 32);

  Stream sync(arch::Engine::Sync);
  sync.add(trigger(0, 0, in_base, 2)).wait(2, 1).add(trigger(1, 2, out_base, 1)).wait(3, 1).end();
  Stream te(arch::Engine::Tensor);
  arch::Instruction ls, mm;
  ls.opcode = Opcode::LoadStationary;
  ls.a = arch::tile(Memory::Sbuf, DType::Bf16, 0, 8, 0, 8);
  mm.opcode = Opcode::MultiplyMoving;
  mm.a = arch::tile(Memory::Sbuf, DType::Bf16, 0, 8, 64, 64);
  mm.dst = arch::tile(Memory::Psum, DType::Fp32, 0, 8, 0, 64);
  te.wait(0, 2).add(ls).add(mm).incr(1).end();
  Stream vec(arch::Engine::Vector);
  vec.wait(1, 1)
      .op(Opcode::Copy, arch::tile(Memory::Sbuf, DType::Fp32, 0, 8, 512, 64),
          arch::tile(Memory::Psum, DType::Fp32, 0, 8, 0, 64))
      .incr(2)
      .end();
  core.load_program(arch::Engine::Sync, sync.bytes);
  core.load_program(arch::Engine::Tensor, te.bytes);
  core.load_program(arch::Engine::Vector, vec.bytes);
  const auto r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;

  arch::Fp32Matrix expect(8, 64);
  arch::matmul(w, x, arch::PsumMode::Overwrite, expect);
  std::vector<float> got(8 * 64);
  core.hbm().backdoor_read(out_at, reinterpret_cast<std::uint8_t*>(got.data()), got.size() * 4);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(arch::fp32_bits(got[i]), arch::fp32_bits(expect.data[i])) << i;

  EXPECT_EQ(stats.value("dma.bytes"), 8 * 8 * 2 + 8 * 64 * 2 + 8 * 64 * 4);
  EXPECT_EQ(stats.value("dma.descriptors"), 3);
  // Two DMA start latencies (100 ns each on tiny) lie on the critical path.
  EXPECT_GT(r.end_time, sc_core::sc_time(200, sc_core::SC_NS));
  // The engine wrote each descriptor's status word back: done, no error.
  std::uint16_t status = 0;
  core.hbm().backdoor_read(in_base + arch::kDmaStatusOffset, reinterpret_cast<std::uint8_t*>(&status), 2);
  EXPECT_EQ(status, 1u << arch::kDmaStatusDoneBit);
}

TEST(DmaInCore, BadDescriptorStopsTheRunNamingIt) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  auto d = tile_descriptor(0, 16, core.address_map().sbuf_address(0, 0), 1024, 8, 8, 1, 0);
  d.magic = 0;
  const std::uint64_t base = core.place(ring_of({d}, 32));
  core.configure_dma_queue(1, 3, base, 32);
  Stream sync(arch::Engine::Sync);
  sync.add(trigger(1, 3, base, 1)).end();
  core.load_program(arch::Engine::Sync, sync.bytes);
  const auto r = core.run();
  ASSERT_EQ(r.status, core::RunResult::Status::Error);
  EXPECT_THAT(r.message, HasSubstr("core.dma1.q3 descriptor 0"));
  EXPECT_THAT(r.message, HasSubstr("magic: magic byte 0x00, not 0xd5"));
  EXPECT_EQ(core.dma().engine(1).queue(3).error, arch::DmaError::kMagic);
}

TEST(DmaInCore, TransferOutsideTheAddressMapIsAWindowError) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  const auto d = tile_descriptor(0, 16, arch::kSbufBase + core.address_map().sbuf_bytes(), 16, 8, 8, 1, 0);
  const std::uint64_t base = core.place(ring_of({d}, 32));
  core.configure_dma_queue(0, 0, base, 32);
  Stream sync(arch::Engine::Sync);
  sync.add(trigger(0, 0, base, 1)).end();
  core.load_program(arch::Engine::Sync, sync.bytes);
  const auto r = core.run();
  ASSERT_EQ(r.status, core::RunResult::Status::Error);
  EXPECT_THAT(r.message, HasSubstr("addr_window"));
}

// Two doorbells on two queues of one engine, the second rung (about 620 ns
// in) before the first is visible (2 us): the second's notification is lost
// behind the first's, and the first descriptor's data has moved before the
// second becomes visible. The engine must still wake for it.
TEST(DmaInCore, DoorbellRungWhileTheEngineFinishesIsNotLost) {
  trace::Stats stats;
  arch::HwConfig cfg = tiny();
  cfg.dma.start_latency_ns = 2000;  // longer than the first descriptor's whole transfer
  NeuronCore core("core", cfg, stats);
  const auto& map = core.address_map();
  const std::uint32_t pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
  const auto a_ring = ring_of({tile_descriptor(0x1000, 16, map.sbuf_address(0, 0), pbytes, 8, 8, 1,
                                               map.semaphore_address(5))},
                              8);
  const auto b_ring = ring_of({tile_descriptor(0x2000, 16, map.sbuf_address(0, 64), pbytes, 8, 8, 1,
                                               map.semaphore_address(6))},
                              8);
  const std::uint64_t a_base = core.place(a_ring), b_base = core.place(b_ring);
  core.configure_dma_queue(0, 0, a_base, 8);
  core.configure_dma_queue(0, 1, b_base, 8);
  Stream sync(arch::Engine::Sync);
  sync.add(trigger(0, 0, a_base, 1)).wait(5, 1).wait(6, 1).end();
  Stream vec(arch::Engine::Vector);
  vec.op(Opcode::Memset, arch::tile(Memory::Sbuf, DType::Fp32, 0, 8, 1024, 300)).add(trigger(0, 1, b_base, 1)).end();
  core.load_program(arch::Engine::Sync, sync.bytes);
  core.load_program(arch::Engine::Vector, vec.bytes);
  const auto r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(stats.value("dma.descriptors"), 2);
}

// A doorbell rung while an earlier one is still on its way (start latency)
// becomes visible later than the earlier one; the engine, idle again after
// the first transfer, must still wake for it (an event holds one pending
// notification, so the later one cannot rely on its own).
TEST(DmaInCore, DoorbellRungWhileAnEarlierOneIsInFlightIsNotLost) {
  arch::HwConfig cfg = tiny();
  cfg.dma.start_latency_ns = 3000;  // the second doorbell lands long after the first transfer is done
  trace::Stats stats;
  NeuronCore core("core", cfg, stats);
  const auto& map = core.address_map();
  const std::uint32_t pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
  const auto ring_a = ring_of({tile_descriptor(0x1000, 16, map.sbuf_address(0, 0), pbytes, 8, 8, 1,
                                               map.semaphore_address(10))}, 32);
  const auto ring_b = ring_of({tile_descriptor(0x2000, 16, map.sbuf_address(0, 64), pbytes, 8, 8, 1,
                                               map.semaphore_address(11))}, 32);
  const std::uint64_t a = core.place(ring_a), b = core.place(ring_b);
  core.configure_dma_queue(0, 0, a, 32);
  core.configure_dma_queue(0, 1, b, 32);
  // The vector engine's memset (10 + 1000 cycles at 0.5 GHz) spaces the two doorbells by about 2 us.
  Stream vec(arch::Engine::Vector);
  vec.op(Opcode::Memset, arch::tile(Memory::Sbuf, DType::Fp32, 0, 8, 1024, 1000)).incr(1).end();
  Stream sync(arch::Engine::Sync);
  sync.add(trigger(0, 0, a, 1)).wait(1, 1).add(trigger(0, 1, b, 1)).wait(10, 1).wait(11, 1).end();
  core.load_program(arch::Engine::Vector, vec.bytes);
  core.load_program(arch::Engine::Sync, sync.bytes);
  const auto r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(stats.value("dma.descriptors"), 2);
  EXPECT_GT(r.end_time, sc_core::sc_time(5000, sc_core::SC_NS));  // the second doorbell's latency after ~2 us
}

TEST(DmaInCore, DoorbellOutOfStepWithTheRingIsAnError) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  const std::uint64_t base = core.place(ring_of({}, 32));
  core.configure_dma_queue(0, 0, base, 32);
  Stream sync(arch::Engine::Sync);
  sync.add(trigger(0, 0, base + 64, 1)).end();
  core.load_program(arch::Engine::Sync, sync.bytes);
  const auto r = core.run();
  ASSERT_EQ(r.status, core::RunResult::Status::Error);
  EXPECT_THAT(r.message, HasSubstr("doorbell names descriptor"));
  EXPECT_THAT(r.message, HasSubstr("sync instruction #0"));
}

}  // namespace
}  // namespace tessera::dma
