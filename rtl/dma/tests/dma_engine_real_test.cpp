// The DMA engine at the real cores' parameters (16 queues, 64-byte data, 16
// outstanding, 64 KiB buffer): random descriptors byte for byte, fairness over
// 16 queues, and the throughput requirement on a large copy.
#include "Vdma_real.h"
#include "arch/config.h"
#include "dma_harness.h"

#include <gtest/gtest.h>

namespace tessera::rtl::dma {
namespace {

namespace reg = arch::dma_reg;

constexpr unsigned kQueues = 16;
constexpr unsigned kDataBytes = 64;
constexpr std::uint64_t kMemBytes = 0x1000000;
constexpr std::uint64_t kRing = 0x10000;  // queue q's ring at kRing + q * 0x1000
constexpr AddrRange kSem{0x8000, 0x8100};
constexpr std::uint64_t kSrc = 0x100000, kSrcEnd = 0x500000;
constexpr std::uint64_t kDst = 0x800000, kDstEnd = 0xFF0000;

using Bench = EngineBench<Vdma_real>;

std::uint64_t ring(unsigned q) { return kRing + q * 0x1000ull; }

struct Fixture {
  explicit Fixture(std::uint64_t seed) : bench(kQueues, kDataBytes, kMemBytes, seed), rng(seed) {
    for (std::uint64_t a = kSrc; a < kSrcEnd; ++a) bench.mem.bytes[a] = static_cast<std::uint8_t>(rng());
    bench.mem.semaphores = kSem;
    bench.set_window(0x1000, kMemBytes);
    for (unsigned q = 0; q < kQueues; ++q) bench.setup_queue(q, ring(q), 64);
    bench.enable();
    ref = bench.mem.bytes;
  }
  Bench bench;
  std::mt19937_64 rng;
  std::vector<std::uint8_t> ref;
};

// One real build serves every shipped generation: a config with fewer queues
// leaves the rest disabled, one with fewer outstanding transactions sets the
// CTRL limits. A config outside that needs its own build, so it fails here.
TEST(DmaEngineReal, CoversEveryShippedConfig) {
  for (const std::string& name : arch::list_config_names()) {
    const arch::DmaConfig dma = arch::load_config(name).hw.dma;
    EXPECT_EQ(dma.descriptor_bytes, arch::kDmaDescriptorBytes) << name;
    EXPECT_EQ(dma.axi_data_bytes, kDataBytes) << name;
    EXPECT_LE(dma.queues_per_engine, kQueues) << name;
    EXPECT_LE(dma.max_outstanding, 16) << name;
  }
}

TEST(DmaEngineReal, ParamsReportTheRealGeometry) {
  Fixture f(1);
  EXPECT_EQ(f.bench.read_reg(reg::kParams), 16u | (64u << 8) | (16u << 16));
}

TEST(DmaEngineReal, RandomDescriptorsOverSixteenQueuesMatchReference) {
  Fixture f(2);
  f.bench.mem.timing.read_latency = 40;
  f.bench.mem.timing.write_latency = 40;
  f.bench.mem.timing.jitter = 40;
  f.bench.mem.timing.reorder = true;
  f.bench.mem.timing.ar_ready = 0.7;
  f.bench.mem.timing.w_ready = 0.7;
  f.bench.mem.timing.r_valid = 0.8;
  const RandomArea area{kSrc, kSrcEnd, kDst, kDstEnd, kSem, 65536};
  unsigned total = 0;
  for (int batch = 0; batch < 3; ++batch) {
    std::uint64_t cursor = kDst;
    for (unsigned q = 0; q < kQueues; ++q) {
      for (int i = 0; i < 8; ++i) {
        DmaDescriptor d;
        if (!random_descriptor(f.rng, area, cursor, d)) break;
        const std::uint64_t slot = f.bench.post(q, d, &f.ref);
        reference_copy(d, slot, f.ref, kSem);
        ++total;
      }
      f.bench.doorbell(q);
    }
    ASSERT_TRUE(f.bench.run_until_idle(4000000)) << "hung in batch " << batch;
    const std::int64_t at = first_difference(f.bench.mem.bytes, f.ref);
    ASSERT_EQ(at, -1) << "batch " << batch << ": memory differs at 0x" << std::hex << at;
    for (const std::string& v : f.bench.mem.violations) ADD_FAILURE() << "AXI: " << v;
  }
  EXPECT_EQ(f.bench.read_reg64(reg::kDescDoneLo), total);
  EXPECT_GE(total, 300u);
}

TEST(DmaEngineReal, LargeCopyAtRealisticLatencyReachesNinetyPercentOfPeak) {
  // 1 MiB at 200 cycles of memory latency (about 140 ns at 1.4 GHz).
  Fixture f(3);
  f.bench.mem.timing.read_latency = 200;
  f.bench.mem.timing.write_latency = 200;
  DmaDescriptor d;
  d.magic = arch::kDmaDescriptorMagic;
  d.src_addr = kSrc;
  d.dst_addr = kDst;
  d.elem_log2 = 12;  // 4 KiB elements x 256 = 1 MiB
  d.src_size = {256, 1, 1, 1};
  d.dst_size = d.src_size;
  d.src_stride = {4096, 0, 0, 0};
  d.dst_stride = d.src_stride;
  const std::uint64_t slot = f.bench.post(0, d, &f.ref);
  reference_copy(d, slot, f.ref, kSem);
  const std::uint64_t start = f.bench.cycle();
  f.bench.doorbell(0);
  ASSERT_TRUE(f.bench.run_until_idle(200000));
  const double bytes_per_cycle = double(1 << 20) / double(f.bench.cycle() - start);
  RecordProperty("bytes_per_cycle", std::to_string(bytes_per_cycle));
  EXPECT_GE(bytes_per_cycle, 0.9 * kDataBytes);
  EXPECT_EQ(first_difference(f.bench.mem.bytes, f.ref), -1);
}

TEST(DmaEngineReal, SixteenQueuesAreServedRoundRobin) {
  Fixture f(4);
  f.bench.write_reg(reg::kCtrl, 0);
  for (unsigned q = 0; q < kQueues; ++q) {
    for (unsigned i = 0; i < 3; ++i) {
      DmaDescriptor d;
      d.magic = arch::kDmaDescriptorMagic;
      d.src_addr = kSrc + 256 * i;
      d.dst_addr = kDst + 0x1000 * (q * 3 + i);
      d.src_size = {256, 1, 1, 1};
      d.dst_size = d.src_size;
      d.src_stride = {1, 0, 0, 0};
      d.dst_stride = d.src_stride;
      f.bench.post(q, d);
    }
    f.bench.doorbell(q);
  }
  f.bench.enable();
  ASSERT_TRUE(f.bench.run_until_idle(200000));
  std::vector<unsigned> order;
  for (const auto& w : f.bench.mem.write_log)
    if (w.addr >= kRing && w.addr < kRing + kQueues * 0x1000ull) order.push_back(unsigned((w.addr - kRing) / 0x1000));
  ASSERT_EQ(order.size(), 48u);
  for (unsigned i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i % kQueues) << "completion " << i;
}

}  // namespace
}  // namespace tessera::rtl::dma
