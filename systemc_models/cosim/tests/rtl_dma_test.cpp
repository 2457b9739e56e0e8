// DMA programs on tiny.yaml run twice in one simulation, once on a core with
// the fast DMA model and once on a core with the Verilated RTL engines: memory
// must match byte for byte, and each program's times are printed (and bounded)
// so that docs/cosim.md's agreement table can be regenerated.
#include "cosim/dma_sampler.h"
#include "cosim/rtl_dma_engine.h"
#include "cosim/rtl_tensor_datapath.h"

#include "arch/dma_descriptor.h"
#include "arch/dma_descriptor_check.h"
#include "arch/numerics.h"
#include "core/neuron_core.h"
#include "testing/dma_programs.h"
#include "testing/stream.h"
#include "trace/sim_time.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

namespace tessera::cosim {
namespace {

using arch::DType;
using arch::Memory;
using arch::Opcode;
using core::NeuronCore;
using test_support::Stream;
using test_support::ring_of;
using test_support::tile_descriptor;
using test_support::trigger;
using ::testing::HasSubstr;

const arch::HwConfig& config(const char* name) {
  static std::map<std::string, arch::HwConfig> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
    it = loaded.emplace(name, arch::load_config(name).hw).first;
  }
  return it->second;
}
const arch::HwConfig& tiny() { return config("tiny"); }

// Descriptors posted on one queue with one doorbell, rung once `after`
// descriptors of the program have completed (0: at the start).
struct Job {
  std::uint16_t engine, queue;
  std::vector<arch::DmaDescriptor> descriptors;
  std::uint32_t after = 0;
};

// A program of DMA jobs: the sync engine rings every doorbell in job order
// (waiting on semaphore 0 for a job's `after`, so jobs come in non-decreasing
// `after`), then waits on semaphore 0 for every descriptor's completion increment.
struct Program {
  std::vector<Job> jobs;
  std::vector<std::uint8_t> hbm_image;  // written at HBM 0 before the run
};

std::uint32_t descriptor_count(const Program& p) {
  std::uint32_t n = 0;
  for (const Job& j : p.jobs) n += static_cast<std::uint32_t>(j.descriptors.size());
  return n;
}

void load(NeuronCore& core, const Program& p) {
  core.hbm().backdoor_write(0, p.hbm_image.data(), p.hbm_image.size());
  Stream sync(arch::Engine::Sync);
  std::uint32_t waited = 0;
  for (const Job& j : p.jobs) {
    const std::uint64_t base = core.place(ring_of(j.descriptors, 32));
    core.configure_dma_queue(j.engine, j.queue, base, 32);
    if (j.after > waited) sync.wait(0, waited = j.after);
    sync.add(trigger(j.engine, j.queue, base, static_cast<std::uint32_t>(j.descriptors.size())));
  }
  sync.wait(0, descriptor_count(p)).end();
  core.load_program(arch::Engine::Sync, sync.bytes);
}

// Every byte a program can touch: low HBM, the program area (rings and their
// status words), SBUF and semaphores.
std::vector<std::uint8_t> memory_image(NeuronCore& core, std::size_t hbm_bytes) {
  std::vector<std::uint8_t> img(hbm_bytes + (1u << 16));
  core.hbm().backdoor_read(0, img.data(), hbm_bytes);
  core.hbm().backdoor_read(core.address_map().program_area_base(), img.data() + hbm_bytes, 1u << 16);
  const auto& map = core.address_map();
  for (std::uint64_t p = 0; p < map.sbuf_partitions; ++p) {
    const std::uint8_t* b = core.sbuf().at(p, 0, map.sbuf_partition_bytes);
    img.insert(img.end(), b, b + map.sbuf_partition_bytes);
  }
  for (std::uint64_t s = 0; s < map.semaphores; ++s) {
    const std::uint32_t v = core.semaphores().value(s);
    img.insert(img.end(), reinterpret_cast<const std::uint8_t*>(&v), reinterpret_cast<const std::uint8_t*>(&v) + 4);
  }
  return img;
}

core::CoreOptions rtl_options(const arch::HwConfig& cfg = tiny()) {
  core::CoreOptions o;
  o.dma_engine = rtl_dma_factory(cfg);
  return o;
}

// How the two models' descriptor completion times compare.
struct Agreement {
  double fast_ns = 0, rtl_ns = 0;  // end of the program
  std::size_t descriptors = 0, identical = 0;
  double max_abs_diff_ns = 0;
};

Agreement compare(const char* name, const core::RunResult& rf, const core::RunResult& rr, dma::DmaSubsystem& fast,
                  dma::DmaSubsystem& rtl) {
  Agreement a;
  a.fast_ns = trace::ns(rf.end_time);
  a.rtl_ns = trace::ns(rr.end_time);
  const bool print = std::getenv("TESSERA_DMA_COMPLETIONS") != nullptr;
  for (std::size_t e = 0; e < rtl.engines(); ++e) {
    std::map<std::pair<std::uint32_t, std::uint32_t>, double> fast_done;
    for (const auto& c : fast.engine(e).completions()) fast_done[{c.queue, c.index}] = trace::ns(c.done);
    for (const auto& c : rtl.engine(e).completions()) {
      const double r = trace::ns(c.done);
      const auto it = fast_done.find({c.queue, c.index});
      EXPECT_NE(it, fast_done.end()) << "dma" << e << ".q" << c.queue << "[" << c.index << "]";
      if (it == fast_done.end()) continue;
      const double diff = it->second - r;
      ++a.descriptors;
      a.identical += std::abs(diff) < 1e-3;
      a.max_abs_diff_ns = std::max(a.max_abs_diff_ns, std::abs(diff));
      if (print) std::printf("  dma%zu.q%u[%u] done: fast %.3f ns, rtl %.3f ns\n", e, c.queue, c.index, it->second, r);
    }
  }
  std::printf("%s: fast %.1f ns, rtl %.1f ns, difference %+.1f ns (%+.2f%%); descriptors %zu, identical %zu, "
              "max |difference| %.1f ns\n",
              name, a.fast_ns, a.rtl_ns, a.fast_ns - a.rtl_ns, 100.0 * (a.fast_ns - a.rtl_ns) / a.rtl_ns,
              a.descriptors, a.identical, a.max_abs_diff_ns);
  return a;
}

// Runs `p` on a fast-model core and an RTL core in one simulation and checks
// they leave the same bytes.
Agreement run_both(const char* name, const Program& p, const arch::HwConfig& cfg = tiny()) {
  trace::Stats fast_stats, rtl_stats;
  NeuronCore fast("fast", cfg, fast_stats);
  NeuronCore rtl("rtl", cfg, rtl_stats, rtl_options(cfg));
  load(fast, p);
  load(rtl, p);
  const auto rf = fast.run();
  const auto rr = rtl.run();
  EXPECT_TRUE(rf.ok()) << rf.message;
  EXPECT_TRUE(rr.ok()) << rr.message;
  const auto a = memory_image(fast, p.hbm_image.size()), b = memory_image(rtl, p.hbm_image.size());
  EXPECT_EQ(a.size(), b.size());
  std::size_t diffs = 0, first = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i] && diffs++ == 0) first = i;
  EXPECT_EQ(diffs, 0u) << "first difference at image byte " << first;
  EXPECT_EQ(fast_stats.value("dma.bytes"), rtl_stats.value("dma.bytes"));
  EXPECT_EQ(fast_stats.value("dma.descriptors"), descriptor_count(p));
  EXPECT_EQ(rtl_stats.value("dma.descriptors"), descriptor_count(p));
  // Busy (first read beat to last write beat of each descriptor) is one
  // definition in both models, so it agrees to the cycle too.
  for (std::size_t e = 0; e < rtl.dma().engines(); ++e)
    EXPECT_NEAR(fast.dma().engine(e).stats().busy_ns.value(), rtl.dma().engine(e).stats().busy_ns.value(), 1e-3)
        << "dma" << e << " busy";
  return compare(name, rf, rr, fast.dma(), rtl.dma());
}

std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

// The dma_test.cpp pipeline (W and X tiles in, matmul, vector copy, result out)
// on the RTL engines: bit-exact result and the same memory as the fast model.
TEST(RtlDma, MatmulTilePipelineMatchesTheFastModel) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  trace::Stats fast_stats, rtl_stats;
  NeuronCore fast("fast", tiny(), fast_stats);
  NeuronCore rtl("rtl", tiny(), rtl_stats, rtl_options());
  arch::Bf16Matrix w(8, 8), x(8, 64);
  for (auto& v : w.data) v = arch::to_bf16(dist(rng));
  for (auto& v : x.data) v = arch::to_bf16(dist(rng));
  const std::uint64_t w_at = 0x1000, x_at = 0x2000, out_at = 0x10000;
  for (NeuronCore* core : {&fast, &rtl}) {
    const auto& map = core->address_map();
    core->hbm().backdoor_write(w_at, reinterpret_cast<const std::uint8_t*>(w.data.data()), w.data.size() * 2);
    core->hbm().backdoor_write(x_at, reinterpret_cast<const std::uint8_t*>(x.data.data()), x.data.size() * 2);
    const std::uint32_t pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
    const auto in_ring = ring_of({tile_descriptor(w_at, 16, map.sbuf_address(0, 0), pbytes, 8, 8, 1, map.semaphore_address(0)),
                                  tile_descriptor(x_at, 128, map.sbuf_address(0, 64), pbytes, 8, 64, 1,
                                         map.semaphore_address(0))},
                                 32);
    const auto out_ring =
        ring_of({tile_descriptor(map.sbuf_address(0, 512), pbytes, out_at, 256, 8, 64, 2, map.semaphore_address(3))}, 32);
    const std::uint64_t in_base = core->place(in_ring), out_base = core->place(out_ring);
    core->configure_dma_queue(0, 0, in_base, 32);
    core->configure_dma_queue(1, 2, out_base, 32);
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
    core->load_program(arch::Engine::Sync, sync.bytes);
    core->load_program(arch::Engine::Tensor, te.bytes);
    core->load_program(arch::Engine::Vector, vec.bytes);
  }
  const auto rf = fast.run();
  const auto rr = rtl.run();
  ASSERT_TRUE(rf.ok()) << rf.message;
  ASSERT_TRUE(rr.ok()) << rr.message;

  arch::Fp32Matrix expect(8, 64);
  arch::matmul(w, x, arch::PsumMode::Overwrite, expect);
  std::vector<float> got(8 * 64);
  rtl.hbm().backdoor_read(out_at, reinterpret_cast<std::uint8_t*>(got.data()), got.size() * 4);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(arch::fp32_bits(got[i]), arch::fp32_bits(expect.data[i])) << i;
  EXPECT_EQ(memory_image(fast, 0x20000), memory_image(rtl, 0x20000));
  EXPECT_EQ(rtl_stats.value("dma.bytes"), 8 * 8 * 2 + 8 * 64 * 2 + 8 * 64 * 4);
  EXPECT_EQ(rtl_stats.value("dma.descriptors"), 3);
  // Idle engines do not tick: dma1 works only on the output tile, late in the run.
  const auto& out_engine = dynamic_cast<const RtlDmaEngine&>(rtl.dma().engine(1));
  const double run_cycles = rr.end_time / out_engine.clock_period();
  std::printf("dma1 ticked %llu of %.0f cycles\n", static_cast<unsigned long long>(out_engine.cycles_ticked()),
              run_cycles);
  EXPECT_LT(static_cast<double>(out_engine.cycles_ticked()), run_cycles / 2);
  const Agreement a = compare("matmul_tile_pipeline", rf, rr, fast.dma(), rtl.dma());
  // Calibrated to the cycle (docs/cosim.md): a change to either model's timing shows here.
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

// 48 descriptors of 64 B .. 8 KiB over four queues of each of the two engines:
// HBM to SBUF, SBUF to HBM and HBM to HBM, unaligned heads and tails.
TEST(RtlDma, ManyDescriptorsOverQueuesAndEnginesMatchTheFastModel) {
  Program p;
  p.hbm_image = random_bytes(1u << 20, 11);
  std::mt19937 rng(5);
  const arch::AddressMap map(tiny());
  std::uint64_t hbm_dst = 0x80000, sbuf_dst = 0;
  for (std::uint16_t e = 0; e < 2; ++e)
    for (std::uint16_t q = 0; q < 4; ++q) {
      Job j{e, q, {}};
      for (int i = 0; i < 6; ++i) {
        const std::uint16_t bytes = static_cast<std::uint16_t>(64u << (rng() % 8));  // 64 B .. 8 KiB
        const std::uint64_t src = (rng() % 0x70000) + (rng() % 3);
        const int kind = static_cast<int>(rng() % 3);
        arch::DmaDescriptor d;
        if (kind == 0) {  // HBM -> SBUF, one partition row
          const std::uint16_t n = std::min<std::uint16_t>(bytes, 4096);
          d = tile_descriptor(src, 0, map.sbuf_address(sbuf_dst / 16384, sbuf_dst % 16384), 0, 1, n, 0,
                     map.semaphore_address(0));
          sbuf_dst += 4096;
        } else if (kind == 1) {  // SBUF -> HBM
          d = tile_descriptor(map.sbuf_address(rng() % 8, rng() % 8192), 0, hbm_dst + 5, 0, 1, 2048, 0,
                     map.semaphore_address(0));
          hbm_dst += 4096;
        } else {  // HBM -> HBM
          d = tile_descriptor(src, 0, hbm_dst + 3, 0, 1, bytes, 0, map.semaphore_address(0));
          hbm_dst += (bytes + 4095) / 4096 * 4096;
        }
        j.descriptors.push_back(d);
      }
      p.jobs.push_back(j);
    }
  ASSERT_LT(hbm_dst, 1u << 20);
  const Agreement a = run_both("many_descriptors", p);
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

// Strided and reshaping patterns: one run per element (2-byte elements every
// 6 bytes), a row gather with a 3-dimensional source, a broadcast source
// (stride 0) and a scatter into SBUF partitions.
TEST(RtlDma, StridedPatternsMatchTheFastModel) {
  Program p;
  p.hbm_image = random_bytes(1u << 19, 12);
  const arch::AddressMap map(tiny());
  const std::uint64_t sem = map.semaphore_address(0);
  auto strided = tile_descriptor(0x100, 0, 0x40000, 0, 1, 300, 1, sem);
  strided.src_stride[0] = 6;
  auto gather = tile_descriptor(0x2000, 0, 0x50000, 0, 1, 1, 2, sem);
  gather.src_size = {16, 4, 8, 1};
  gather.src_stride = {4, 256, 4096, 0};
  gather.dst_size = {512, 1, 1, 1};
  gather.dst_stride = {4, 0, 0, 0};
  auto broadcast = tile_descriptor(0x3000, 0, 0x60000, 0, 1, 1, 3, sem);
  broadcast.src_size = {8, 64, 1, 1};
  broadcast.src_stride = {8, 0, 0, 0};
  broadcast.dst_size = {512, 1, 1, 1};
  broadcast.dst_stride = {8, 0, 0, 0};
  const auto scatter = tile_descriptor(0x8000, 1024, map.sbuf_address(0, 100), static_cast<std::uint32_t>(map.sbuf_partition_bytes),
                              8, 1000, 0, sem);
  auto column = tile_descriptor(0x9000, 0, 0x70000, 0, 1, 1, 2, sem);  // a column of a 64 x 64 fp32 matrix
  column.src_size = {64, 1, 1, 1};
  column.src_stride = {256, 0, 0, 0};
  column.dst_size = {64, 1, 1, 1};
  column.dst_stride = {4, 0, 0, 0};
  p.jobs = {{0, 0, {strided, gather}}, {0, 1, {broadcast}}, {1, 0, {scatter, column}}};
  const Agreement a = run_both("strided_patterns", p);
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

// The run gap (dma.run_gap_cycles, CTRL[31:24]): short rows on both sides,
// contiguous rows that merge into one run, and element runs, on two engines.
// (DmaEngine.RunGapSpacesRunStartsOnEachSide checks the gap itself.)
TEST(RtlDma, RunGapMatchesTheFastModel) {
  Program p;
  p.hbm_image = random_bytes(1u << 19, 21);
  arch::HwConfig cfg = tiny();
  const arch::AddressMap map(cfg);
  const std::uint64_t sem = map.semaphore_address(0);
  const auto pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
  const auto rows_in = tile_descriptor(0x1000, 128, map.sbuf_address(0, 0), pbytes, 8, 128, 0, sem);   // 128 B rows
  const auto packed_in = tile_descriptor(0x4000, 64, map.sbuf_address(0, 256), pbytes, 8, 64, 0, sem); // one source run
  const auto rows_out = tile_descriptor(map.sbuf_address(0, 0), pbytes, 0x40000, 512, 8, 128, 0, sem);
  auto elements = tile_descriptor(0x8000, 0, 0x50000, 0, 1, 64, 1, sem);
  elements.src_stride[0] = 6;
  p.jobs = {{0, 0, {rows_in, packed_in, rows_out}}, {0, 1, {elements}}, {1, 0, {rows_in, rows_out}}};
  cfg.dma.run_gap_cycles = 8;
  const Agreement a = run_both("run_gap_8", p, cfg);
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

// The descriptor gap (dma.descriptor_gap_cycles, TIMING[15:0]) behind
// read-ahead chains of mid-sized copies, short rows under a run gap,
// BARRIER descriptors and a second queue, on both engines.
// (DmaEngine.DescriptorGapHoldsTheNextDescriptorsFirstWrite checks the gap itself.)
class RtlDmaDescriptorGap : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(RtlDmaDescriptorGap, MatchesTheFastModel) {
  const auto [run_gap, descriptor_gap] = GetParam();
  Program p;
  p.hbm_image = random_bytes(1u << 19, 22);
  arch::HwConfig cfg = tiny();
  const arch::AddressMap map(cfg);
  const std::uint64_t sem = map.semaphore_address(0);
  const auto pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
  const auto copy = [&](std::uint64_t src, std::uint64_t dst, std::uint16_t bytes) {
    return tile_descriptor(src, 0, dst, 0, 1, bytes, 0, sem);
  };
  const auto rows_in = tile_descriptor(0x1000, 256, map.sbuf_address(0, 0), pbytes, 8, 256, 0, sem);
  const auto rows_elsewhere = tile_descriptor(0x1000, 256, map.sbuf_address(0, 512), pbytes, 8, 256, 0, sem);
  auto back = tile_descriptor(map.sbuf_address(0, 0), pbytes, 0x40000, 256, 8, 256, 0, sem);
  back.flags |= arch::kDmaFlagBarrier;
  p.jobs = {{0, 0, {copy(0x2000, 0x50000, 1024), copy(0x3000, 0x51000, 2048), copy(0x4000, 0x52000, 4096),
                    copy(0x6000, 0x54000, 8192)}},
            {0, 1, {rows_in, back}},
            {1, 0, {copy(0x9000, 0x60000, 4096), rows_elsewhere, copy(0xb000, 0x62000, 300)}}};
  cfg.dma.run_gap_cycles = run_gap;
  cfg.dma.descriptor_gap_cycles = descriptor_gap;
  const Agreement a = run_both(fmt::format("descriptor_gap_{}_{}", run_gap, descriptor_gap).c_str(), p, cfg);
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

// (run gap, descriptor gap): the shipped pair, each alone, one too short to
// hold anything and one longer than any descriptor here.
INSTANTIATE_TEST_SUITE_P(Gaps, RtlDmaDescriptorGap,
                         ::testing::Values(std::pair{0, 56}, std::pair{8, 56}, std::pair{8, 2}, std::pair{3, 300}),
                         [](const auto& info) {
                           return fmt::format("run{}_descriptor{}", info.param.first, info.param.second);
                         });

// BARRIER descriptors: each reads what the one before it wrote, so it waits
// for the completion stage and every write response; on two queues, so the
// barrier also waits for the other queue's writes.
TEST(RtlDma, BarrierDescriptorsMatchTheFastModel) {
  Program p;
  p.hbm_image = random_bytes(1u << 19, 16);
  const arch::AddressMap map(tiny());
  const std::uint64_t sem = map.semaphore_address(0);
  auto in = tile_descriptor(0x1000, 0, map.sbuf_address(0, 0), 0, 1, 4096, 0, sem);
  auto back = tile_descriptor(map.sbuf_address(0, 0), 0, 0x40000, 0, 1, 4096, 0, sem);
  back.flags |= arch::kDmaFlagBarrier;
  auto again = tile_descriptor(0x40000, 0, 0x48003, 0, 1, 1000, 0, sem);
  again.flags |= arch::kDmaFlagBarrier;
  auto other = tile_descriptor(0x20000, 0, 0x50000, 0, 1, 8192, 0, sem);
  auto after_other = tile_descriptor(0x50000, 0, map.sbuf_address(1, 64), 0, 1, 2048, 0, sem);
  after_other.flags |= arch::kDmaFlagBarrier;
  p.jobs = {{0, 0, {in, back, again}}, {0, 1, {other, after_other}}, {1, 0, {in, back}}};
  const Agreement a = run_both("barrier", p);
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

// A contiguous source written as 2-byte elements 6 bytes apart: one write
// beat per element, so reads run ahead until the read-to-write buffer
// (4 KiB per outstanding read) is full and wait for writes to free it.
TEST(RtlDma, BufferFullReadsWaitForWrites) {
  Program p;
  p.hbm_image = random_bytes(1u << 20, 17);
  const arch::AddressMap map(tiny());
  auto d = tile_descriptor(0x1000, 0, 0x40000, 0, 1, 16384, 1, map.semaphore_address(0));
  d.dst_stride[0] = 6;
  p.jobs = {{0, 0, {d, tile_descriptor(0x9000, 0, 0x30000, 0, 1, 8192, 0, map.semaphore_address(0))}}};
  const Agreement a = run_both("buffer_full", p);
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

// One large transfer, where bandwidth rather than latency decides the time.
TEST(RtlDma, LargeCopyMatchesTheFastModel) {
  Program p;
  p.hbm_image = random_bytes(1u << 20, 13);
  const arch::AddressMap map(tiny());
  p.jobs = {{0, 0, {tile_descriptor(0x1000, 0, 0x80000, 0, 1, 0, 0, map.semaphore_address(0))}}};
  // 256 KiB as 64 rows of 4 KiB.
  auto& d = p.jobs[0].descriptors[0];
  d.src_size = {4096, 64, 1, 1};
  d.dst_size = {4096, 64, 1, 1};
  d.src_stride = {1, 4096, 0, 0};
  d.dst_stride = {1, 4096, 0, 0};
  const Agreement a = run_both("large_copy_256k", p);
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

// HBM-to-HBM copies of 64 B .. 16 KiB on every queue of every engine of
// small.yaml (4 engines x 8 queues, 8 outstanding: the 64x8x8 build).
TEST(RtlDma, SmallConfigEveryQueueMatchesTheFastModel) {
  const arch::HwConfig& cfg = config("small");
  Program p;
  p.hbm_image = random_bytes(4u << 20, 15);
  std::mt19937 rng(6);
  const arch::AddressMap map(cfg);
  std::uint64_t dst = 2u << 20;
  for (std::uint16_t e = 0; e < cfg.dma.engines; ++e)
    for (std::uint16_t q = 0; q < cfg.dma.queues_per_engine; ++q) {
      Job j{e, q, {}};
      for (int i = 0; i < 2; ++i) {
        const auto bytes = static_cast<std::uint16_t>(64u << (rng() % 9));  // 64 B .. 16 KiB
        j.descriptors.push_back(tile_descriptor(rng() % (1u << 20), 0, dst + rng() % 64, 0, 1, bytes, 0,
                                       map.semaphore_address(0)));
        dst += 16384 + 64;
      }
      p.jobs.push_back(j);
    }
  ASSERT_LT(dst, 4u << 20);
  const Agreement a = run_both("small_every_queue", p, cfg);
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

// Kernel-shaped transfers between HBM and SBUF on small and neuroncore-v2
// (8 and 16 outstanding reads, SBUF on the tensor clock): rows into
// partitions, rows out of them, a column gathered across partitions, a
// padded image, and rows longer than the read buffer (reads wait for room
// that the W beats of a burst free one by one).
class RtlDmaSbufRows : public ::testing::TestWithParam<const char*> {};

Program sbuf_rows_program(const arch::HwConfig& cfg) {
  const arch::AddressMap map(cfg);
  const auto pstride = static_cast<std::uint32_t>(map.sbuf_address(1, 0) - map.sbuf_address(0, 0));
  const std::uint64_t sem = map.semaphore_address(0);
  Program p;
  p.hbm_image = random_bytes(1u << 20, 23);
  // 8 rows of 256 B into 8 partitions (an mlp weight tile).
  auto rows_in = tile_descriptor(0x42800, 256, map.sbuf_address(0, 0x400), pstride, 8, 128, 1, sem);
  // 8 partitions of 2 KiB out to HBM rows (a cumsum result).
  auto rows_out = tile_descriptor(map.sbuf_address(0, 0xc00), pstride, 0x80000, 4096, 8, 512, 2, sem);
  // One fp32 from each of 32 partitions into 128 contiguous bytes (a reduce column).
  auto column = tile_descriptor(map.sbuf_address(0, 0x3014), 0, 0x90280, 0, 1, 1, 2, sem);
  column.src_size = {32, 1, 1, 1};
  column.src_stride = {pstride, 0, 0, 0};
  column.dst_size = {32, 1, 1, 1};
  column.dst_stride = {4, 0, 0, 0};
  // 4 x 16 rows of 32 B into a padded image at an odd offset (conv2d).
  auto image = tile_descriptor(0x0, 32, map.sbuf_address(0, 0x266), 36, 16, 16, 1, sem);
  image.src_size = {16, 16, 4, 1};
  image.src_stride = {2, 32, 512, 0};
  image.dst_size = {16, 16, 4, 1};
  image.dst_stride = {2, 36, pstride, 0};
  // 8 rows of 21,844 B into 8 partitions (an elementwise tile): longer than the read buffer.
  auto long_rows = tile_descriptor(0x0, 131072, map.sbuf_address(0, 0x8000), pstride, 8, 5461, 2, sem);
  p.jobs = {{0, 0, {rows_in}}, {1, 0, {rows_out}}, {2, 0, {column}}, {3, 0, {image}}, {0, 1, {long_rows}}};
  return p;
}

TEST_P(RtlDmaSbufRows, MatchTheFastModel) {
  const arch::HwConfig& cfg = config(GetParam());
  const Program p = sbuf_rows_program(cfg);
  const Agreement a = run_both(fmt::format("sbuf_rows_{}", GetParam()).c_str(), p, cfg);
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

INSTANTIATE_TEST_SUITE_P(Configs, RtlDmaSbufRows, ::testing::Values("small", "neuroncore-v2"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Random programs: element sizes 1 .. 64 B, contiguous and strided inner
// dimensions, broadcast sources, 2-dimensional patterns, HBM and SBUF on
// either side, over every queue of both tiny engines.
class RtlDmaRandom : public ::testing::TestWithParam<unsigned> {};

// tiny, with a run gap and a descriptor gap drawn from the seed for even
// seeds (odd seeds keep tiny's: none).
arch::HwConfig gapped_tiny(unsigned seed) {
  arch::HwConfig cfg = tiny();
  if (seed % 2 == 0) {
    std::mt19937 rng(seed * 7919u);
    cfg.dma.run_gap_cycles = static_cast<std::int64_t>(rng() % 12);
    cfg.dma.descriptor_gap_cycles = static_cast<std::int64_t>(rng() % 120);
  }
  return cfg;
}

// A random descriptor: element sizes 1 .. 64 B, contiguous and strided inner
// dimensions, broadcast sources, 2-dimensional patterns, HBM or SBUF
// destinations (placed from hbm_dst and sbuf_dst on, which advance).
arch::DmaDescriptor random_descriptor(std::mt19937& rng, const arch::AddressMap& map, std::uint64_t& hbm_dst,
                                      std::uint64_t& sbuf_dst) {
  const auto pick = [&](unsigned n) { return static_cast<std::uint32_t>(rng() % n); };
  arch::DmaDescriptor d = tile_descriptor(0, 0, 0, 0, 1, 1, 0, map.semaphore_address(0));
  d.elem_log2 = static_cast<std::uint8_t>(pick(7));
  const std::uint32_t elem = 1u << d.elem_log2;
  const auto cols = static_cast<std::uint16_t>(1 + pick(std::max(1u, 2048u / elem)));
  const auto rows = static_cast<std::uint16_t>(1 + pick(4));
  const std::uint32_t src_step = pick(4) == 0 ? 0 : elem * (1 + (pick(3) == 0 ? pick(3) : 0));
  d.src_size = {cols, rows, 1, 1};
  d.src_stride = {src_step, cols * std::max(src_step, elem) + pick(2) * 64 * (1 + pick(3)), 0, 0};
  d.src_addr = pick(0x30000);
  const bool to_sbuf = pick(3) == 0;
  const std::uint32_t dst_step = pick(3) == 0 ? elem * 2 : elem;
  const std::uint32_t dst_row = cols * dst_step + pick(4) * 64;
  d.dst_size = {cols, rows, 1, 1};
  d.dst_stride = {dst_step, dst_row, 0, 0};
  const std::uint64_t span = std::uint64_t{rows} * dst_row;
  if (to_sbuf && sbuf_dst + span + 64 <= map.sbuf_bytes()) {
    d.dst_addr = map.sbuf_address(0, sbuf_dst + pick(64));
    sbuf_dst += span + 128;
  } else {
    d.dst_addr = hbm_dst + pick(64);
    hbm_dst += span + 128;
  }
  return d;
}

TEST_P(RtlDmaRandom, ProgramMatchesTheFastModel) {
  const unsigned seed = GetParam();
  Program p;
  p.hbm_image = random_bytes(1u << 20, seed);
  std::mt19937 rng(seed);
  const arch::AddressMap map(tiny());
  std::uint64_t hbm_dst = 0x80000, sbuf_dst = 0;
  for (std::uint16_t e = 0; e < 2; ++e)
    for (std::uint16_t q = 0; q < 4; ++q) {
      Job j{e, q, {}};
      for (unsigned i = 0, n = 1 + static_cast<unsigned>(rng() % 5); i < n; ++i)
        j.descriptors.push_back(random_descriptor(rng, map, hbm_dst, sbuf_dst));
      p.jobs.push_back(j);
    }
  ASSERT_LT(hbm_dst, 1u << 20);
  const Agreement a = run_both(fmt::format("random_seed_{}", seed).c_str(), p, gapped_tiny(seed));
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RtlDmaRandom, ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u));

// Doorbells rung while the engines are busy, as kernels ring them: each
// queue's job is rung once some earlier descriptors have completed, so a
// doorbell lands while its engine waits between two accesses of a
// descriptor, while the completion stage still holds the previous one, or
// while another queue of the engine has descriptors left to fetch. (The fast
// model used to fetch as soon as such a doorbell was visible, or only at its
// next access, or after the completion writes it owed; whole kernels ended
// 8 to 312 ns apart.)
class RtlDmaStaggered : public ::testing::TestWithParam<unsigned> {};

TEST_P(RtlDmaStaggered, DoorbellsDuringTransfersMatchTheFastModel) {
  const unsigned seed = GetParam();
  Program p;
  p.hbm_image = random_bytes(1u << 20, seed + 100);
  std::mt19937 rng(seed);
  const arch::AddressMap map(tiny());
  std::uint64_t hbm_dst = 0x80000, sbuf_dst = 0;
  // Every queue of both engines once (a queue has one ring), in random order.
  std::vector<std::pair<std::uint16_t, std::uint16_t>> queues;
  for (std::uint16_t e = 0; e < 2; ++e)
    for (std::uint16_t q = 0; q < 4; ++q) queues.emplace_back(e, q);
  std::shuffle(queues.begin(), queues.end(), rng);
  std::uint32_t rung = 0;  // descriptors of the jobs rung so far
  for (const auto& [engine, queue] : queues) {
    Job j{engine, queue, {}};
    for (unsigned i = 0, n = 1 + static_cast<unsigned>(rng() % 4); i < n; ++i)
      j.descriptors.push_back(random_descriptor(rng, map, hbm_dst, sbuf_dst));
    if (rung > 0) j.after = std::max(p.jobs.back().after, static_cast<std::uint32_t>(1 + rng() % rung));
    rung += static_cast<std::uint32_t>(j.descriptors.size());
    p.jobs.push_back(j);
  }
  ASSERT_LT(hbm_dst, 1u << 20);
  const Agreement a = run_both(fmt::format("staggered_seed_{}", seed).c_str(), p, gapped_tiny(seed));
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RtlDmaStaggered, ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u));

// neuroncore-v2 (16 engines x 16 queues, 16 outstanding: the real build):
// copies on the first and last queue of the first and last engine.
TEST(RtlDma, NeuronCoreV2OuterQueuesMatchTheFastModel) {
  const arch::HwConfig& cfg = config("neuroncore-v2");
  Program p;
  p.hbm_image = random_bytes(4u << 20, 16);
  std::mt19937 rng(7);
  const arch::AddressMap map(cfg);
  std::uint64_t dst = 2u << 20;
  for (std::uint16_t e : {0, 15})
    for (std::uint16_t q : {0, 15}) {
      Job j{e, q, {}};
      for (int i = 0; i < 3; ++i) {
        const auto bytes = static_cast<std::uint16_t>(1024u << (rng() % 6));  // 1 .. 32 KiB
        j.descriptors.push_back(tile_descriptor(rng() % (1u << 20), 0, dst, 0, 1, bytes, 0, map.semaphore_address(0)));
        dst += 32768;
      }
      p.jobs.push_back(j);
    }
  ASSERT_LT(dst, 4u << 20);
  const Agreement a = run_both("v2_outer_queues", p, cfg);
  EXPECT_EQ(a.fast_ns, a.rtl_ns);
  EXPECT_EQ(a.identical, a.descriptors);
}

// Timing-only runs move no data but must take the same time, in both models.
TEST(RtlDma, TimingOnlyRunTakesTheSameTime) {
  std::mt19937 rng(8);
  const arch::AddressMap map(tiny());
  Program p;
  p.hbm_image = random_bytes(1u << 20, 17);
  for (std::uint16_t q = 0; q < 4; ++q) {
    Job j{static_cast<std::uint16_t>(q % 2), q, {}};
    for (int i = 0; i < 4; ++i)
      j.descriptors.push_back(tile_descriptor(rng() % 0x40000, 0, 0x80000 + (q * 4u + i) * 0x4000u + rng() % 64, 0, 1,
                                     static_cast<std::uint16_t>(64u << (rng() % 8)), 0, map.semaphore_address(0)));
    p.jobs.push_back(j);
  }
  trace::Stats s[4];
  core::CoreOptions fast_nd, rtl_nd = rtl_options();
  fast_nd.no_data = rtl_nd.no_data = true;
  NeuronCore fast("fast", tiny(), s[0]), rtl("rtl", tiny(), s[1], rtl_options());
  NeuronCore fast_timing("fast_timing", tiny(), s[2], fast_nd), rtl_timing("rtl_timing", tiny(), s[3], rtl_nd);
  for (NeuronCore* c : {&fast, &rtl, &fast_timing, &rtl_timing}) load(*c, p);
  std::vector<double> end;
  for (NeuronCore* c : {&fast, &rtl, &fast_timing, &rtl_timing}) {
    const auto r = c->run();
    ASSERT_TRUE(r.ok()) << r.message;
    end.push_back(trace::ns(r.end_time));
  }
  std::printf("timing only: fast %.1f / %.1f ns, rtl %.1f / %.1f ns (with data / without)\n", end[0], end[2], end[1],
              end[3]);
  EXPECT_EQ(end[0], end[1]);
  EXPECT_EQ(end[2], end[0]);
  EXPECT_EQ(end[3], end[1]);
  // The same traffic, counted without data (direction not recorded). These
  // copies are HBM to HBM.
  for (const char* mem : {"hbm", "sbuf"}) {
    const auto moved = [&](int i, const char* core) {
      const std::string n = std::string(core) + "." + mem;
      return s[i].value(n + ".bytes_read") + s[i].value(n + ".bytes_written") + s[i].value(n + ".bytes_timing_only");
    };
    if (std::string(mem) == "hbm") {
      EXPECT_GT(moved(0, "fast"), 0);
    }
    EXPECT_EQ(moved(2, "fast_timing"), moved(0, "fast")) << mem;
    EXPECT_EQ(moved(3, "rtl_timing"), moved(1, "rtl")) << mem;
  }
}

TEST(RtlDma, BadDescriptorStopsTheRunNamingEngineQueueAndDescriptor) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats, rtl_options());
  const auto& map = core.address_map();
  const auto good = tile_descriptor(0, 16, map.sbuf_address(0, 0), 1024, 8, 8, 1, map.semaphore_address(1));
  auto bad = good;
  bad.magic = 0;
  const std::uint64_t base = core.place(ring_of({good, bad}, 32));
  core.configure_dma_queue(1, 3, base, 32);
  Stream sync(arch::Engine::Sync);
  sync.add(trigger(1, 3, base, 2)).wait(1, 2).end();
  core.load_program(arch::Engine::Sync, sync.bytes);
  const auto r = core.run();
  ASSERT_EQ(r.status, core::RunResult::Status::Error) << r.message;
  EXPECT_THAT(r.message, HasSubstr("core.dma1.q3 descriptor 1"));
  EXPECT_THAT(r.message, HasSubstr("magic"));
  EXPECT_EQ(core.dma().engine(1).queue(3).error, arch::DmaError::kMagic);
  EXPECT_EQ(core.dma().engine(1).queue(3).head, 1u);  // the good one completed
}

TEST(RtlDma, TransferBeyondTheAddressMapIsAWindowError) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats, rtl_options());
  const auto d = tile_descriptor(0, 16, arch::kSemaphoreBase + 0x10000, 16, 8, 8, 1, 0);
  const std::uint64_t base = core.place(ring_of({d}, 32));
  core.configure_dma_queue(0, 0, base, 32);
  Stream sync(arch::Engine::Sync);
  sync.add(trigger(0, 0, base, 1)).end();
  core.load_program(arch::Engine::Sync, sync.bytes);
  const auto r = core.run();
  ASSERT_EQ(r.status, core::RunResult::Status::Error);
  EXPECT_THAT(r.message, HasSubstr("core.dma0.q0 descriptor 0"));
  EXPECT_THAT(r.message, HasSubstr("addr_window"));
}

// Every kind of descriptor the decode rules reject, each run on the fast model
// and on the RTL (one simulation per process, so one model per test): both stop
// the queue with the code arch::check gives, or, for the address window, which
// arch::check leaves to its caller, with ADDR_WINDOW.
struct MalformedCase {
  const char* name;
  std::function<void(arch::DmaDescriptor&)> edit;
  arch::DmaError code;
};

const std::vector<MalformedCase>& malformed_cases() {
  static const std::vector<MalformedCase> cases = {
      {"magic", [](arch::DmaDescriptor& d) { d.magic = 0x5D; }, arch::DmaError::kMagic},
      {"zero_source_size", [](arch::DmaDescriptor& d) { d.src_size[2] = 0; }, arch::DmaError::kZeroLength},
      {"zero_destination_size", [](arch::DmaDescriptor& d) { d.dst_size[0] = 0; }, arch::DmaError::kZeroLength},
      {"zero_size_before_malformed",
       [](arch::DmaDescriptor& d) {
         d.src_size[3] = 0;
         d.flags |= 8;
       },
       arch::DmaError::kZeroLength},
      {"reserved_flag", [](arch::DmaDescriptor& d) { d.flags |= 8; }, arch::DmaError::kMalformed},
      {"element_counts_differ", [](arch::DmaDescriptor& d) { d.dst_size[1] = 4; }, arch::DmaError::kMalformed},
      {"four_gibibytes",
       [](arch::DmaDescriptor& d) {
         d.elem_log2 = 0;
         d.src_size = d.dst_size = {256, 256, 256, 256};  // exactly 2^32 bytes
         d.src_stride = d.dst_stride = {1, 0, 0, 0};
       },
       arch::DmaError::kMalformed},
      {"semaphore_unaligned", [](arch::DmaDescriptor& d) { d.sem_addr += 2; }, arch::DmaError::kMalformed},
      {"outside_the_address_map", [](arch::DmaDescriptor& d) { d.dst_addr = arch::kSemaphoreBase + 0x10000; },
       arch::DmaError::kAddrWindow},
  };
  return cases;
}

class RtlDmaMalformed : public ::testing::TestWithParam<std::tuple<std::size_t, bool>> {};

TEST_P(RtlDmaMalformed, StopsTheQueueWithTheSharedCode) {
  const auto [which, use_rtl] = GetParam();
  const MalformedCase& c = malformed_cases()[which];
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats, use_rtl ? rtl_options() : core::CoreOptions{});
  const auto& map = core.address_map();
  const auto good = tile_descriptor(0, 16, map.sbuf_address(0, 0), 1024, 8, 8, 1, map.semaphore_address(1));
  auto bad = good;
  c.edit(bad);
  if (c.code != arch::DmaError::kAddrWindow) {
    EXPECT_EQ(arch::check(bad).code, c.code) << arch::check(bad).detail;
  }
  const std::uint64_t base = core.place(ring_of({good, bad}, 32));
  core.configure_dma_queue(0, 1, base, 32);
  Stream sync(arch::Engine::Sync);
  sync.add(trigger(0, 1, base, 2)).wait(1, 2).end();
  core.load_program(arch::Engine::Sync, sync.bytes);
  const auto r = core.run();
  ASSERT_EQ(r.status, core::RunResult::Status::Error) << r.message;
  EXPECT_THAT(r.message, HasSubstr("core.dma0.q1 descriptor 1"));
  EXPECT_THAT(r.message, HasSubstr(arch::to_string(c.code)));
  EXPECT_EQ(core.dma().engine(0).queue(1).error, c.code) << arch::to_string(core.dma().engine(0).queue(1).error);
  // The fast model stops the run when it decodes the bad descriptor, which may
  // be before the good one's status write; neither model gets past the bad one.
  EXPECT_LE(core.dma().engine(0).queue(1).head, 1u);
}

INSTANTIATE_TEST_SUITE_P(Kinds, RtlDmaMalformed,
                         ::testing::Combine(::testing::Range<std::size_t>(0, malformed_cases().size()),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(malformed_cases()[std::get<0>(info.param)].name) +
                                  (std::get<1>(info.param) ? "_rtl" : "_fast");
                         });

TEST(RtlDma, UnbuiltParameterSetIsAClearError) {
  arch::HwConfig cfg = tiny();
  cfg.dma.queues_per_engine = 5;
  try {
    rtl_dma_factory(cfg);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("64x5x4"));
    EXPECT_THAT(e.what(), HasSubstr("TESSERA_DMA_RTL_VARIANTS"));
  }
}

// Simulated DMA nanoseconds per wall-clock second for each model (printed for
// docs/cosim.md): 32 descriptors of 64 KiB (16 rows of 4 KiB) over the four
// queues of one tiny engine, 2 MiB in all.
void measure_speed(bool use_rtl) {
  Program p;
  p.hbm_image = random_bytes(4u << 20, 14);
  const arch::AddressMap map(tiny());
  for (std::uint16_t q = 0; q < 4; ++q) {
    Job j{0, q, {}};
    for (unsigned i = 0; i < 8; ++i) {
      const std::uint64_t at = (q * 8u + i) * 0x10000u;
      j.descriptors.push_back(tile_descriptor(at, 4096, (2u << 20) + at, 4096, 16, 4096, 0, map.semaphore_address(0)));
    }
    p.jobs.push_back(j);
  }
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats, use_rtl ? rtl_options() : core::CoreOptions{});
  load(core, p);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = core.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.message;
  const double ns = trace::ns(r.end_time);
  std::printf("%s: %.0f simulated ns in %.4f s wall: %.3g simulated ns per wall second\n",
              use_rtl ? "rtl" : "fast", ns, wall, ns / wall);
}

TEST(RtlDmaSpeed, FastModel) { measure_speed(false); }
TEST(RtlDmaSpeed, RtlModel) { measure_speed(true); }

}  // namespace
}  // namespace tessera::cosim

namespace tessera::cosim {
namespace {

// A program that deadlocks, with a DMA transfer in flight, in every
// fidelity (rtl: both RTL blocks in the core; sampled: both samplers):
// reported with the waiting engines, no hang.
class CoreDeadlock : public ::testing::TestWithParam<arch::Fidelity> {};

TEST_P(CoreDeadlock, IsReportedWithTheWaitingEngines) {
  trace::Stats stats;
  core::CoreOptions o;
  o.fidelity = GetParam();
  o.tensor_datapath = rtl_tensor_factory();
  if (GetParam() == arch::Fidelity::Rtl) o.dma_engine = rtl_dma_factory(tiny());
  if (GetParam() == arch::Fidelity::Sampled) o.dma_sampler = rtl_dma_sampler_factory(tiny());
  NeuronCore core("core", tiny(), stats, o);
  const auto& map = core.address_map();
  const std::uint64_t base =
      core.place(ring_of({tile_descriptor(0, 16, map.sbuf_address(0, 0), 1024, 8, 8, 1, map.semaphore_address(1))}, 32));
  core.configure_dma_queue(0, 0, base, 32);
  Stream sync(arch::Engine::Sync);
  sync.add(trigger(0, 0, base, 1)).wait(1, 1).wait(2, 1).end();  // semaphore 2 is never incremented
  Stream te(arch::Engine::Tensor);
  te.wait(3, 1).end();  // nor is semaphore 3
  core.load_program(arch::Engine::Sync, sync.bytes);
  core.load_program(arch::Engine::Tensor, te.bytes);
  const auto r = core.run();
  ASSERT_EQ(r.status, core::RunResult::Status::Deadlock) << r.message;
  EXPECT_THAT(r.message, HasSubstr("core.sync: sem[2] >= 1 (value now 0)"));
  EXPECT_THAT(r.message, HasSubstr("core.tensor: sem[3] >= 1 (value now 0)"));
  EXPECT_EQ(core.semaphores().value(1), 1u);  // the DMA itself completed
}

INSTANTIATE_TEST_SUITE_P(Fidelities, CoreDeadlock,
                         ::testing::Values(arch::Fidelity::Rtl, arch::Fidelity::Sampled, arch::Fidelity::Tlm),
                         [](const auto& info) { return arch::to_string(info.param); });

}  // namespace
}  // namespace tessera::cosim

namespace tessera::cosim {
namespace {

// The sampled fidelity's DMA half on the random programs' pattern mix: every
// shape re-executed on the RTL engine agrees with the fast model, and the
// run leaves the same memory as a tlm run.
TEST(SampledDma, EveryShapeAgreesWithTheRtl) {
  Program p;
  p.hbm_image = random_bytes(1u << 20, 21);
  const arch::AddressMap map(tiny());
  const std::uint64_t sem = map.semaphore_address(0);
  auto strided = tile_descriptor(0x100, 0, 0x40000, 0, 1, 300, 1, sem);
  strided.src_stride[0] = 6;
  auto back = tile_descriptor(map.sbuf_address(0, 0), 0, 0x48003, 0, 1, 1000, 0, sem);
  back.flags |= arch::kDmaFlagBarrier;
  auto scatter = tile_descriptor(0x8000, 1024, map.sbuf_address(0, 0), static_cast<std::uint32_t>(map.sbuf_partition_bytes),
                                 8, 1000, 0, sem);
  std::vector<arch::DmaDescriptor> copies;
  for (std::uint32_t i = 0; i < 30; ++i)  // one shape, many times: sampled by budget after the first
    copies.push_back(tile_descriptor(0x10000 + i * 256, 0, 0x60000 + i * 256, 0, 1, 256, 0, sem));
  p.jobs = {{0, 0, {scatter, strided, back}}, {1, 1, copies}};
  trace::Stats sampled_stats, tlm_stats;
  core::CoreOptions o;
  o.fidelity = arch::Fidelity::Sampled;
  o.tensor_datapath = rtl_tensor_factory();
  o.dma_sampler = rtl_dma_sampler_factory(tiny());
  NeuronCore sampled("sampled", tiny(), sampled_stats, o);
  NeuronCore tlm("tlm", tiny(), tlm_stats);
  load(sampled, p);
  load(tlm, p);
  const auto rs = sampled.run();  // both cores share the simulation: this runs both
  ASSERT_TRUE(rs.ok()) << rs.message;
  const auto rt = tlm.run();
  ASSERT_TRUE(rt.ok()) << rt.message;
  EXPECT_EQ(rs.end_time, rt.end_time);  // sampling never changes the timing
  EXPECT_EQ(memory_image(sampled, p.hbm_image.size()), memory_image(tlm, p.hbm_image.size()));
  EXPECT_EQ(sampled_stats.value("sampled.dma_sampler.sampled_shapes"), 4);
  EXPECT_GE(sampled_stats.value("sampled.dma_sampler.sampled_descriptors"), 4);
  EXPECT_EQ(sampled_stats.value("sampled.dma_sampler.sampled_descriptors") +
                sampled_stats.value("sampled.dma_sampler.unsampled_descriptors"),
            descriptor_count(p));
}

// A reference engine that disagrees (a fast model told the bus is half as
// wide, standing in for an RTL change the fast model did not follow) stops
// the run naming the descriptor and both cycle counts.
TEST(SampledDma, DisagreementStopsTheRunNamingTheDescriptor) {
  static arch::HwConfig narrow = tiny();
  narrow.dma.axi_data_bytes = tiny().dma.axi_data_bytes / 2;
  narrow.dma.bytes_per_ns = tiny().dma.bytes_per_ns / 2;  // same clock
  const dma::DmaEngineFactory narrow_reference = [](const char* name, core::CoreContext& ctx, std::uint32_t queues) {
    static std::vector<std::unique_ptr<core::CoreContext>> contexts;
    contexts.push_back(std::make_unique<core::CoreContext>(core::CoreContext{
        narrow, ctx.map, ctx.hbm, ctx.sbuf, ctx.psum, ctx.semaphores, ctx.stats, nullptr, ctx.no_data, {}}));
    return std::unique_ptr<dma::DmaEngineBase>(std::make_unique<dma::DmaEngine>(name, *contexts.back(), queues));
  };
  Program p;
  p.hbm_image = random_bytes(1u << 18, 22);
  const arch::AddressMap map(tiny());
  p.jobs = {{1, 2, {tile_descriptor(0x100, 0, 0x20000, 0, 1, 4096, 0, map.semaphore_address(0))}}};
  trace::Stats stats;
  core::CoreOptions o;
  o.fidelity = arch::Fidelity::Sampled;
  o.tensor_datapath = rtl_tensor_factory();
  o.dma_sampler = [&](core::CoreContext& ctx) -> std::unique_ptr<dma::DescriptorSampler> {
    return std::make_unique<DmaSampler>("dma_sampler", ctx, DmaSamplingPolicy{}, narrow_reference);
  };
  // Where the descriptor came from, as Device gives it from the program's
  // call sites and labels.
  o.descriptor_origin_of = [](std::uint32_t engine, std::uint32_t queue, std::uint64_t index) {
    return fmt::format("at kernel.cpp:{}, label 'load {}.{}'", 10 + index, engine, queue);
  };
  NeuronCore core("core", tiny(), stats, o);
  load(core, p);
  const auto r = core.run();
  std::printf("%s\n", r.message.c_str());  // the report a user would see
  ASSERT_EQ(r.status, core::RunResult::Status::Error);
  EXPECT_THAT(r.message, HasSubstr("dma1.q2 descriptor 0 at kernel.cpp:10, label 'load 1.2' (at 0x"));
  EXPECT_THAT(r.message, HasSubstr("sampled check failed"));
  EXPECT_THAT(r.message, HasSubstr("DMA cycles on the RTL"));
  EXPECT_THAT(r.message, HasSubstr("in the fast model"));
}

}  // namespace
}  // namespace tessera::cosim

namespace tessera::cosim {
namespace {

// The kernel-shaped HBM/SBUF transfers, sampled on small and neuroncore-v2.
class SampledDmaConfigs : public ::testing::TestWithParam<const char*> {};

TEST_P(SampledDmaConfigs, KernelShapedTransfersAgreeWithTheRtl) {
  const arch::HwConfig& cfg = config(GetParam());
  const Program p = sbuf_rows_program(cfg);
  trace::Stats stats;
  core::CoreOptions o;
  o.fidelity = arch::Fidelity::Sampled;
  o.tensor_datapath = rtl_tensor_factory();
  o.dma_sampler = rtl_dma_sampler_factory(cfg);
  NeuronCore core("core", cfg, stats, o);
  load(core, p);
  const auto r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(stats.value("core.dma_sampler.sampled_descriptors"), descriptor_count(p));
}

INSTANTIATE_TEST_SUITE_P(Configs, SampledDmaConfigs, ::testing::Values("small", "neuroncore-v2"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace tessera::cosim
