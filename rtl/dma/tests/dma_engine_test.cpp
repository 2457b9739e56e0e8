// The DMA engine built small (4 queues, 8-byte data, 4 outstanding, 4 KiB
// buffer) so that every pointer wraps often, driven against the AXI4 memory
// model and checked byte for byte against the reference copy.
#include "Vdma_small.h"
#include "arch/dma_descriptor_check.h"
#include "dma_harness.h"

#include <gtest/gtest.h>

namespace tessera::rtl::dma {
namespace {

namespace reg = arch::dma_reg;
using arch::DmaError;

constexpr unsigned kQueues = 4;
constexpr unsigned kDataBytes = 8;
constexpr std::uint64_t kMemBytes = 0x800000;
constexpr std::uint64_t kRing = 0x1000;  // queue q's ring at kRing + q * 0x1000
constexpr std::uint32_t kRingSize = 64;
constexpr AddrRange kSem{0x8000, 0x8100};
constexpr std::uint64_t kSrc = 0x10000, kSrcEnd = 0x210000;
constexpr std::uint64_t kDst = 0x400000, kDstEnd = 0x7F0000;
constexpr std::uint64_t kWinLo = 0x1000, kWinHi = 0x7F8000;

using Bench = EngineBench<Vdma_small>;

std::uint64_t ring(unsigned q) { return kRing + q * 0x1000ull; }

// An engine with random source data, the window set and every queue enabled.
struct Fixture {
  explicit Fixture(std::uint64_t seed) : bench(kQueues, kDataBytes, kMemBytes, seed), rng(seed) {
    for (std::uint64_t a = kSrc; a < kSrcEnd; ++a) bench.mem.bytes[a] = static_cast<std::uint8_t>(rng());
    bench.mem.semaphores = kSem;
    bench.set_window(kWinLo, kWinHi);
    for (unsigned q = 0; q < kQueues; ++q) bench.setup_queue(q, ring(q), kRingSize);
    bench.enable();
    ref = bench.mem.bytes;
  }

  std::uint64_t post(unsigned q, const DmaDescriptor& d, bool apply_to_ref = true) {
    const std::uint64_t slot = bench.post(q, d, &ref);
    if (apply_to_ref) reference_copy(d, slot, ref, kSem);
    return slot;
  }

  void expect_memory_matches_reference() {
    const std::int64_t at = first_difference(bench.mem.bytes, ref);
    EXPECT_EQ(at, -1) << "memory differs from the reference at 0x" << std::hex << at << ": engine wrote 0x"
                      << unsigned(bench.mem.bytes[at < 0 ? 0 : at]) << ", reference 0x"
                      << unsigned(ref[at < 0 ? 0 : at]);
  }

  void expect_protocol_clean() {
    for (const std::string& v : bench.mem.violations) ADD_FAILURE() << "AXI: " << v;
  }

  std::uint32_t queue_status(unsigned q) { return bench.read_reg(reg::queue(q, reg::kQStatus)); }
  DmaError queue_error(unsigned q) { return static_cast<DmaError>((queue_status(q) >> 8) & 0xFF); }
  std::uint32_t head(unsigned q) { return bench.read_reg(reg::queue(q, reg::kQHead)); }

  Bench bench;
  std::mt19937_64 rng;
  std::vector<std::uint8_t> ref;
};

DmaDescriptor contiguous(std::uint64_t src, std::uint64_t dst, std::uint32_t bytes) {
  DmaDescriptor d;
  d.magic = arch::kDmaDescriptorMagic;
  d.src_addr = src;
  d.dst_addr = dst;
  d.elem_log2 = 0;
  d.src_size = {static_cast<std::uint16_t>(bytes), 1, 1, 1};
  d.dst_size = d.src_size;
  d.src_stride = {1, 0, 0, 0};
  d.dst_stride = d.src_stride;
  return d;
}

TEST(DmaContract, PackUnpackRoundTripsEveryField) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    DmaDescriptor d;
    d.src_addr = rng() & 0xFFFFFFFFFFFFull;
    d.dst_addr = rng() & 0xFFFFFFFFFFFFull;
    d.sem_addr = rng() & 0xFFFFFFFFFFFFull;
    d.sem_value = static_cast<std::uint16_t>(rng());
    for (int k = 0; k < 4; ++k) {
      d.src_size[k] = static_cast<std::uint16_t>(rng());
      d.dst_size[k] = static_cast<std::uint16_t>(rng());
      d.src_stride[k] = static_cast<std::uint32_t>(rng() & 0xFFFFFF);
      d.dst_stride[k] = static_cast<std::uint32_t>(rng() & 0xFFFFFF);
    }
    d.elem_log2 = rng() & 0xF;
    d.flags = rng() & 0xF;
    d.magic = static_cast<std::uint8_t>(rng());
    d.status = static_cast<std::uint16_t>(rng());
    const DmaDescriptor back = arch::unpack(arch::pack(d));
    ASSERT_EQ(arch::pack(back), arch::pack(d));
    EXPECT_EQ(back.src_addr, d.src_addr);
    EXPECT_EQ(back.dst_stride, d.dst_stride);
    EXPECT_EQ(back.status, d.status);
  }
  // The layout fixes where the engine writes status: the last two bytes.
  EXPECT_EQ(arch::kDmaStatusOffset, 62u);
}

TEST(DmaRegisters, IdentifyAndReadBack) {
  Fixture f(1);
  EXPECT_EQ(f.bench.read_reg(reg::kId), 0x54444D41u);
  EXPECT_EQ(f.bench.read_reg(reg::kParams), kQueues | (kDataBytes << 8) | (4u << 16));
  EXPECT_EQ(f.bench.read_reg(reg::kWinLimitLo), kWinHi);
  EXPECT_EQ(f.bench.read_reg(reg::queue(2, reg::kQBaseLo)), ring(2));
  EXPECT_EQ(f.bench.read_reg(reg::queue(3, reg::kQSize)), kRingSize);
  EXPECT_EQ(f.bench.read_reg(reg::queue(1, reg::kQCtrl)), 1u);
  EXPECT_EQ(f.bench.read_reg(reg::kStatus), 0u);
}

TEST(DmaEngine, CopiesOneContiguousBlock) {
  Fixture f(2);
  f.post(0, contiguous(kSrc + 3, kDst + 5, 1000));
  f.bench.doorbell(0);
  ASSERT_TRUE(f.bench.run_until_idle(20000));
  f.expect_memory_matches_reference();
  f.expect_protocol_clean();
  EXPECT_EQ(f.head(0), 1u);
  EXPECT_EQ(f.queue_status(0) & 2, 0u);
}

// Batches of random descriptors over every queue; the reference image is
// compared after each batch, so a wrong byte names its batch.
void run_random(std::uint64_t seed, unsigned descriptors, const MemoryTiming& timing) {
  Fixture f(seed);
  f.bench.mem.timing = timing;
  const RandomArea area{kSrc, kSrcEnd, kDst, kDstEnd, kSem, 8192};
  unsigned done = 0, batch = 0;
  while (done < descriptors) {
    std::uint64_t cursor = kDst;
    unsigned posted = 0;
    for (unsigned q = 0; q < kQueues; ++q) {
      const unsigned n = static_cast<unsigned>(f.rng() % 40) + 1;
      for (unsigned i = 0; i < n && done + posted < descriptors; ++i) {
        DmaDescriptor d;
        if (!random_descriptor(f.rng, area, cursor, d)) break;
        f.post(q, d);
        ++posted;
      }
    }
    for (unsigned q = 0; q < kQueues; ++q) f.bench.doorbell(q);
    ASSERT_TRUE(f.bench.run_until_idle(4000000)) << "engine hung in batch " << batch;
    for (unsigned q = 0; q < kQueues; ++q) {
      ASSERT_EQ(f.queue_status(q) & 2, 0u) << "queue " << q << " stopped: " << to_string(f.queue_error(q));
      ASSERT_EQ(f.head(q), f.bench.tail(q));
    }
    f.expect_memory_matches_reference();
    f.expect_protocol_clean();
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "first failing batch " << batch;
      return;
    }
    done += posted;
    ++batch;
  }
  EXPECT_EQ(f.bench.read_reg64(reg::kDescDoneLo), descriptors);
}

TEST(DmaEngine, RandomDescriptorsMatchReferenceWithFixedLatency) {
  MemoryTiming t;
  t.read_latency = 12;
  t.write_latency = 12;
  run_random(11, 800, t);
}

TEST(DmaEngine, RandomDescriptorsMatchReferenceWithBackpressureOnEveryChannel) {
  MemoryTiming t;
  t.read_latency = 5;
  t.write_latency = 30;
  t.jitter = 20;
  t.ar_ready = 0.4;
  t.aw_ready = 0.5;
  t.w_ready = 0.6;
  t.r_valid = 0.5;
  t.b_valid = 0.5;
  run_random(12, 800, t);
}

TEST(DmaEngine, RandomDescriptorsMatchReferenceWithResponsesReordered) {
  MemoryTiming t;
  t.read_latency = 3;
  t.write_latency = 3;
  t.jitter = 60;
  t.reorder = true;
  t.r_valid = 0.7;
  t.w_ready = 0.8;
  run_random(13, 800, t);
}

TEST(DmaEngine, RandomDescriptorsMatchReferenceAtLongLatency) {
  MemoryTiming t;
  t.read_latency = 150;
  t.write_latency = 200;
  t.jitter = 50;
  t.reorder = true;
  run_random(14, 300, t);
}

// The status write-backs of a queue's descriptors, in the order memory saw them.
std::vector<std::pair<unsigned, unsigned>> completions(const AxiMemory& m) {
  std::vector<std::pair<unsigned, unsigned>> out;
  for (const auto& w : m.write_log) {
    if (w.addr < kRing || w.addr >= kRing + kQueues * 0x1000ull) continue;
    const unsigned q = static_cast<unsigned>((w.addr - kRing) / 0x1000);
    out.emplace_back(q, static_cast<unsigned>((w.addr - ring(q)) / arch::kDmaDescriptorBytes));
  }
  return out;
}

TEST(DmaEngine, QueueRunsDescriptorsInOrderAcrossRingWrap) {
  Fixture f(3);
  f.bench.mem.timing.reorder = true;
  f.bench.mem.timing.jitter = 40;
  f.bench.setup_queue(0, ring(0), 8);  // small ring: 20 descriptors wrap it twice
  // Every descriptor writes the same destination from a different source: only
  // in-order execution leaves the last one's bytes.
  std::vector<std::pair<unsigned, unsigned>> expect;
  for (unsigned i = 0; i < 20; ++i) {
    f.post(0, contiguous(kSrc + 1000 * i + i, kDst + 7, 300));
    expect.emplace_back(0, i % 8);
    if (i % 7 == 6 || i == 19) {
      f.bench.doorbell(0);
      ASSERT_TRUE(f.bench.run_until_idle(200000));
    }
  }
  f.expect_memory_matches_reference();
  f.expect_protocol_clean();
  EXPECT_EQ(completions(f.bench.mem), expect);
}

TEST(DmaEngine, ServesReadyQueuesRoundRobin) {
  Fixture f(4);
  f.bench.write_reg(reg::kCtrl, 0);  // engine off while the queues fill
  const unsigned per_queue[kQueues] = {5, 3, 0, 5};
  for (unsigned q = 0; q < kQueues; ++q) {
    for (unsigned i = 0; i < per_queue[q]; ++i) f.post(q, contiguous(kSrc + 64 * i, kDst + 4096 * (q * 8 + i), 64));
    f.bench.doorbell(q);
  }
  f.bench.enable();
  ASSERT_TRUE(f.bench.run_until_idle(100000));
  // One descriptor per ready queue per round, skipping empty queues.
  std::vector<std::pair<unsigned, unsigned>> expect = {{0, 0}, {1, 0}, {3, 0}, {0, 1}, {1, 1}, {3, 1},
                                                       {0, 2}, {1, 2}, {3, 2}, {0, 3}, {3, 3}, {0, 4},
                                                       {3, 4}};
  EXPECT_EQ(completions(f.bench.mem), expect);
  f.expect_memory_matches_reference();
}

// A descriptor that reads what the previous one wrote. Write responses (and so
// visibility) are slow, reads fast.
struct Hazard {
  explicit Hazard(bool barrier) : f(5) {
    f.bench.mem.timing.read_latency = 5;
    f.bench.mem.timing.write_latency = 300;
    first = contiguous(kSrc, kDst, 256);
    second = contiguous(kDst, kDst + 0x10000, 256);
    if (barrier) second.flags |= arch::kDmaFlagBarrier;
    f.post(0, first);
    f.post(0, second);
    f.bench.doorbell(0);
    EXPECT_TRUE(f.bench.run_until_idle(100000));
  }
  bool second_saw_first() {
    return std::equal(f.bench.mem.bytes.begin() + kDst + 0x10000, f.bench.mem.bytes.begin() + kDst + 0x10000 + 256,
                      f.bench.mem.bytes.begin() + kSrc);
  }
  Fixture f;
  DmaDescriptor first, second;
};

TEST(DmaEngine, BarrierMakesReadsWaitForEarlierWrites) {
  Hazard h(true);
  EXPECT_TRUE(h.second_saw_first());
  h.f.expect_memory_matches_reference();
}

TEST(DmaEngine, WithoutBarrierReadsMayOvertakeEarlierWrites) {
  // Documents the cost of leaving BARRIER out: writes are posted.
  Hazard h(false);
  EXPECT_FALSE(h.second_saw_first());
}

TEST(DmaEngine, CompletionSemaphoreIsWrittenAfterTheDataIsVisible) {
  Fixture f(6);
  f.bench.mem.timing.write_latency = 80;
  f.bench.mem.timing.jitter = 40;
  f.bench.mem.timing.reorder = true;
  std::vector<DmaDescriptor> posted;
  unsigned checked = 0;
  f.bench.mem.on_semaphore = [&](std::uint64_t addr, std::uint32_t value) {
    ASSERT_LT(checked, posted.size());
    const DmaDescriptor& d = posted[checked++];
    EXPECT_EQ(addr, d.sem_addr);
    EXPECT_EQ(value, d.sem_value);
    EXPECT_TRUE(std::equal(f.bench.mem.bytes.begin() + d.dst_addr,
                           f.bench.mem.bytes.begin() + d.dst_addr + d.src_size[0],
                           f.bench.mem.bytes.begin() + d.src_addr))
        << "semaphore incremented before descriptor " << checked - 1 << " was visible";
  };
  for (unsigned i = 0; i < 12; ++i) {
    DmaDescriptor d = contiguous(kSrc + 999 * i, kDst + 5000 * i + i, 700 + 13 * i);
    d.flags = arch::kDmaFlagCompletion;
    d.sem_addr = kSem.lo + 4 * (i % 3);
    d.sem_value = static_cast<std::uint16_t>(i + 1);
    posted.push_back(d);
    f.post(i % 2, d);
  }
  f.bench.doorbell(0);
  f.bench.doorbell(1);
  ASSERT_TRUE(f.bench.run_until_idle(200000));
  EXPECT_EQ(checked, 12u);
  f.expect_memory_matches_reference();  // includes the semaphore totals
  f.expect_protocol_clean();
}

TEST(DmaEngine, DisablingAQueueStopsItBetweenDescriptorsAndEnablingResumes) {
  Fixture f(8);
  f.bench.mem.timing.read_latency = 30;
  for (unsigned i = 0; i < 10; ++i) f.post(0, contiguous(kSrc + 3000 * i, kDst + 4096 * i, 2000));
  f.bench.doorbell(0);
  for (int i = 0; i < 600; ++i) f.bench.tick();
  f.bench.write_reg(reg::queue(0, reg::kQCtrl), 0);
  ASSERT_TRUE(f.bench.run_until_idle(100000));
  const std::uint32_t stopped_at = f.head(0);
  EXPECT_GT(stopped_at, 0u);
  EXPECT_LT(stopped_at, 10u) << "a disabled queue must stop taking descriptors";
  EXPECT_EQ(f.queue_status(0) & 3, 0u);  // idle, no error
  f.bench.write_reg(reg::queue(0, reg::kQCtrl), 1);
  ASSERT_TRUE(f.bench.run_until_idle(200000));
  EXPECT_EQ(f.head(0), 10u);
  f.expect_memory_matches_reference();
  f.expect_protocol_clean();
}

TEST(DmaEngine, LastFlagSetsLastSeenUntilCleared) {
  Fixture f(7);
  DmaDescriptor d = contiguous(kSrc, kDst, 64);
  f.post(1, d);
  f.bench.doorbell(1);
  ASSERT_TRUE(f.bench.run_until_idle(20000));
  EXPECT_EQ(f.queue_status(1) & 4, 0u);
  d.flags = arch::kDmaFlagLast;
  f.post(1, d);
  f.bench.doorbell(1);
  ASSERT_TRUE(f.bench.run_until_idle(20000));
  EXPECT_EQ(f.queue_status(1) & 4, 4u);
  f.bench.write_reg(reg::queue(1, reg::kQCtrl), 3);
  EXPECT_EQ(f.queue_status(1) & 4, 0u);
}

// ---------------------------------------------------------------------------
// Errors: each stops its queue with a code, never hangs, never writes memory
// it should not, and leaves the other queues running.
// ---------------------------------------------------------------------------

// Posts `bad` on queue 1 between good descriptors on every queue; checks the
// error code, that queue 1 stopped at `bad`, and that the rest completed.
// `may_write` is a destination range the failing descriptor may have partly
// written (with correct bytes) before the error.
void expect_queue_error(Fixture& f, const DmaDescriptor& bad, DmaError code, AddrRange may_write = {}) {
  std::uint64_t cursor = kDst + 0x100000;
  const RandomArea area{kSrc, kSrcEnd, kDst + 0x100000, kDstEnd, {}, 4096};
  for (unsigned q = 0; q < kQueues; ++q) {
    for (unsigned i = 0; i < 3; ++i) {
      DmaDescriptor d;
      ASSERT_TRUE(random_descriptor(f.rng, area, cursor, d));
      d.flags = 0;
      f.post(q, d);
    }
  }
  const std::uint64_t bad_slot = f.post(1, bad, false);
  const unsigned bad_index = static_cast<unsigned>((bad_slot - ring(1)) / arch::kDmaDescriptorBytes);
  // What the failing descriptor would write, for the `may_write` check.
  std::vector<std::uint8_t> would;
  if (may_write.hi > may_write.lo) {
    would = f.ref;
    reference_copy(bad, bad_slot, would, kSem);
  }
  // A later descriptor of the same queue: it must never complete. Write errors
  // are reported when their response arrives, so after a WRITE_RESP it may
  // already have started and written (only) its own correct bytes.
  DmaDescriptor after = contiguous(kSrc, kDst + 0x90000, 128);
  const std::uint64_t after_slot = f.post(1, after, false);
  if (code == DmaError::kWriteResp) {
    reference_copy(after, after_slot, would, kSem);
  }
  for (unsigned q = 0; q < kQueues; ++q) f.bench.doorbell(q);
  ASSERT_TRUE(f.bench.run_until_idle(400000)) << "engine hung after " << to_string(code);

  EXPECT_EQ(f.queue_error(1), code) << "got " << to_string(f.queue_error(1));
  // The decode rules the C++ layers share say the same of the descriptor alone.
  if (code == DmaError::kMagic || code == DmaError::kZeroLength || code == DmaError::kMalformed) {
    EXPECT_EQ(arch::check(bad).code, code) << arch::check(bad).detail;
  }
  EXPECT_EQ(f.queue_status(1) & 2, 2u);
  EXPECT_EQ(f.bench.read_reg(reg::queue(1, reg::kQErrInfo)), bad_index);
  EXPECT_EQ(f.head(1), bad_index) << "queue 1 must stop at the failing descriptor";
  for (unsigned q : {0u, 2u, 3u}) {
    EXPECT_EQ(f.queue_status(q) & 2, 0u) << "queue " << q;
    EXPECT_EQ(f.head(q), f.bench.tail(q)) << "queue " << q;
  }
  // Bytes the failing descriptor may have written must be its own correct bytes.
  for (std::uint64_t a = may_write.lo; a < may_write.hi; ++a) {
    if (f.bench.mem.bytes[a] == would[a]) f.ref[a] = would[a];
  }
  if (code == DmaError::kWriteResp) {
    for (std::uint64_t a = after.dst_addr; a < after.dst_addr + 128; ++a)
      if (f.bench.mem.bytes[a] == would[a]) f.ref[a] = would[a];
  }
  f.expect_memory_matches_reference();
  f.expect_protocol_clean();
}

TEST(DmaErrors, ReadErrorResponseStopsOnlyThatQueue) {
  Fixture f(21);
  f.bench.mem.timing.reorder = true;
  f.bench.mem.timing.jitter = 30;
  // The error sits in the middle of the source: earlier bursts succeed.
  f.bench.mem.read_errors.push_back({kSrc + 0x1F0000 + 3000, kSrc + 0x1F0000 + 3001});
  DmaDescriptor bad = contiguous(kSrc + 0x1F0000, kDst + 0x80000, 6000);
  expect_queue_error(f, bad, DmaError::kReadResp, {kDst + 0x80000, kDst + 0x80000 + 6000});
  // Nothing at or after the failing burst may have been written.
  for (std::uint64_t a = kDst + 0x80000 + 2048; a < kDst + 0x80000 + 6000; ++a)
    ASSERT_EQ(f.bench.mem.bytes[a], 0) << "byte written after a failed read at 0x" << std::hex << a;
}

// The first and last cycle a logged AR or W beat addressed [lo, lo + n).
template <typename Log>
std::uint64_t first_cycle_in(const Log& log, std::uint64_t lo, std::uint64_t n) {
  std::uint64_t first = ~0ull;
  for (const auto& e : log)
    if (e.addr >= lo && e.addr < lo + n) first = std::min<std::uint64_t>(first, e.cycle);
  return first;
}
template <typename Log>
std::uint64_t last_cycle_in(const Log& log, std::uint64_t lo, std::uint64_t n) {
  std::uint64_t last = 0;
  for (const auto& e : log)
    if (e.addr >= lo && e.addr < lo + n) last = std::max<std::uint64_t>(last, e.cycle);
  return last;
}

// Read-ahead: the next descriptor of the queue starts reading once the
// running one has issued its last read, before the running one's last write.
TEST(DmaEngine, NextDescriptorOfAQueueReadsWhileThePreviousWritesDrain) {
  Fixture f(31);
  f.bench.mem.timing.read_latency = 40;
  const DmaDescriptor a = contiguous(kSrc, kDst, 8000);
  const DmaDescriptor b = contiguous(kSrc + 0x20000, kDst + 0x20000, 8000);
  f.post(0, a);
  f.post(0, b);
  f.bench.doorbell(0);
  ASSERT_TRUE(f.bench.run_until_idle(200000));
  EXPECT_EQ(f.head(0), 2u);
  const std::uint64_t b_first_ar = first_cycle_in(f.bench.mem.ar_log, b.src_addr, 8000);
  const std::uint64_t a_last_w = last_cycle_in(f.bench.mem.w_log, a.dst_addr, 8000);
  EXPECT_LT(b_first_ar, a_last_w) << "the second descriptor's reads waited for the first one's last write";
  f.expect_memory_matches_reference();
  f.expect_protocol_clean();
}

// A read error in the read-ahead descriptor's data: the running descriptor's
// bytes all come before it in the stream, so it completes (semaphore, HEAD);
// the read-ahead one stops the queue with READ_RESP and writes nothing.
TEST(DmaErrors, ReadErrorInTheReadAheadDescriptorLetsTheRunningOneComplete) {
  Fixture f(32);
  f.bench.mem.timing.read_latency = 40;
  f.bench.mem.timing.write_latency = 80;
  DmaDescriptor a = contiguous(kSrc, kDst, 8000);
  a.flags = arch::kDmaFlagCompletion;
  a.sem_addr = kSem.lo;
  a.sem_value = 1;
  const DmaDescriptor b = contiguous(kSrc + 0x20000, kDst + 0x20000, 3000);
  f.bench.mem.read_errors.push_back({b.src_addr + 100, b.src_addr + 101});  // its first burst fails
  f.post(0, a);
  f.post(0, b, false);
  f.post(0, contiguous(kSrc + 0x30000, kDst + 0x30000, 500), false);  // never runs
  f.bench.doorbell(0);
  ASSERT_TRUE(f.bench.run_until_idle(200000));
  EXPECT_EQ(f.queue_error(0), DmaError::kReadResp) << "got " << to_string(f.queue_error(0));
  EXPECT_EQ(f.bench.read_reg(reg::queue(0, reg::kQErrInfo)), 1u);
  EXPECT_EQ(f.head(0), 1u) << "the running descriptor completes, the read-ahead one does not";
  const std::uint64_t b_first_ar = first_cycle_in(f.bench.mem.ar_log, b.src_addr, 3000);
  const std::uint64_t a_last_w = last_cycle_in(f.bench.mem.w_log, a.dst_addr, 8000);
  EXPECT_LT(b_first_ar, a_last_w) << "the failing descriptor did not read ahead";
  f.expect_memory_matches_reference();  // the semaphore word too: incremented once
  f.expect_protocol_clean();
}

TEST(DmaErrors, WriteErrorResponseStopsOnlyThatQueue) {
  Fixture f(22);
  // The failing burst is the descriptor's last, so its response arrives after
  // every beat was sent: the completion stage must still hold the semaphore
  // and the DONE status back, and HEAD must stay at the descriptor.
  f.bench.mem.timing.write_latency = 60;
  f.bench.mem.write_errors.push_back({kDst + 0x80000 + 2990, kDst + 0x80000 + 2991});
  DmaDescriptor bad = contiguous(kSrc, kDst + 0x80000, 3000);
  bad.flags = arch::kDmaFlagCompletion;
  bad.sem_addr = kSem.lo;
  bad.sem_value = 1;
  expect_queue_error(f, bad, DmaError::kWriteResp, {kDst + 0x80000, kDst + 0x80000 + 3000});
  EXPECT_EQ(f.bench.mem.bytes[kSem.lo], 0) << "semaphore incremented for a failed descriptor";
}

TEST(DmaErrors, SourceOutsideWindowIsRejectedBeforeAnyAccess) {
  Fixture f(23);
  DmaDescriptor bad = contiguous(kWinHi - 100, kDst + 0x80000, 200);
  expect_queue_error(f, bad, DmaError::kAddrWindow);
}

TEST(DmaErrors, StridedDestinationLeavingWindowIsRejected) {
  Fixture f(24);
  DmaDescriptor bad = contiguous(kSrc, kDst, 16);
  bad.dst_size = {16, 1, 1, 1};
  bad.src_size = {4, 4, 1, 1};
  bad.src_stride = {1, 4, 0, 0};
  bad.dst_stride = {0x44000, 0, 0, 0};  // the last element lands beyond the window, inside memory
  expect_queue_error(f, bad, DmaError::kAddrWindow);
}

TEST(DmaErrors, SemaphoreOutsideWindowIsRejected) {
  Fixture f(25);
  DmaDescriptor bad = contiguous(kSrc, kDst + 0x80000, 64);
  bad.flags = arch::kDmaFlagCompletion;
  bad.sem_addr = 0x800;
  bad.sem_value = 1;
  expect_queue_error(f, bad, DmaError::kAddrWindow);
}

TEST(DmaErrors, ZeroLengthDimensionIsRejected) {
  Fixture f(26);
  DmaDescriptor bad = contiguous(kSrc, kDst + 0x80000, 64);
  bad.src_size[2] = 0;
  bad.dst_size = {0, 1, 1, 1};
  expect_queue_error(f, bad, DmaError::kZeroLength);
}

TEST(DmaErrors, ElementCountMismatchIsMalformed) {
  Fixture f(27);
  DmaDescriptor bad = contiguous(kSrc, kDst + 0x80000, 64);
  bad.dst_size[0] = 63;
  expect_queue_error(f, bad, DmaError::kMalformed);
}

TEST(DmaErrors, ReservedFlagAndUnalignedSemaphoreAreMalformed) {
  {
    Fixture f(28);
    DmaDescriptor bad = contiguous(kSrc, kDst + 0x80000, 64);
    bad.flags = 8;
    expect_queue_error(f, bad, DmaError::kMalformed);
  }
  {
    Fixture f(29);
    DmaDescriptor bad = contiguous(kSrc, kDst + 0x80000, 64);
    bad.flags = arch::kDmaFlagCompletion;
    bad.sem_addr = kSem.lo + 2;
    expect_queue_error(f, bad, DmaError::kMalformed);
  }
}

TEST(DmaErrors, TransferOfFourGibibytesOrMoreIsMalformed) {
  Fixture f(30);
  DmaDescriptor bad = contiguous(kSrc, kDst + 0x80000, 64);
  bad.elem_log2 = 15;
  bad.src_size = {1024, 128, 1, 1};  // 2^32 bytes
  bad.dst_size = bad.src_size;
  bad.src_stride = {0, 0, 0, 0};
  bad.dst_stride = {0, 0, 0, 0};
  expect_queue_error(f, bad, DmaError::kMalformed);
}

TEST(DmaErrors, StaleRingEntryIsRejectedByMagic) {
  Fixture f(31);
  DmaDescriptor bad = contiguous(kSrc, kDst + 0x80000, 64);
  bad.magic = 0;
  expect_queue_error(f, bad, DmaError::kMagic);
}

TEST(DmaErrors, DescriptorFetchErrorStopsQueue) {
  Fixture f(32);
  const std::uint64_t slot = ring(1) + 3 * arch::kDmaDescriptorBytes;  // where `bad` lands
  f.bench.mem.read_errors.push_back({slot, slot + 1});
  expect_queue_error(f, contiguous(kSrc, kDst + 0x80000, 64), DmaError::kFetch);
}

TEST(DmaErrors, MisconfiguredRingStopsQueueWithoutFetching) {
  Fixture f(33);
  f.bench.setup_queue(2, ring(2), 8);
  f.bench.write_reg(reg::queue(2, reg::kQTail), 9);  // tail beyond the ring
  ASSERT_TRUE(f.bench.run_until_idle(10000));
  EXPECT_EQ(f.queue_error(2), DmaError::kRing);
  f.bench.setup_queue(3, ring(3) + 8, 8);  // base not 64-byte aligned
  f.bench.write_reg(reg::queue(3, reg::kQTail), 1);
  ASSERT_TRUE(f.bench.run_until_idle(10000));
  EXPECT_EQ(f.queue_error(3), DmaError::kRing);
  f.bench.setup_queue(0, kWinHi - 128, 8);  // ring beyond the window
  f.bench.write_reg(reg::queue(0, reg::kQTail), 1);
  ASSERT_TRUE(f.bench.run_until_idle(10000));
  EXPECT_EQ(f.queue_error(0), DmaError::kAddrWindow);
  EXPECT_TRUE(f.bench.mem.write_log.empty());
  f.expect_memory_matches_reference();
}

TEST(DmaErrors, ClearingAnErrorLetsTheQueueResume) {
  Fixture f(34);
  DmaDescriptor bad = contiguous(kSrc, kDst, 64);
  bad.magic = 0;
  f.post(0, bad, false);
  const DmaDescriptor good = contiguous(kSrc + 64, kDst + 128, 64);
  f.bench.doorbell(0);
  ASSERT_TRUE(f.bench.run_until_idle(20000));
  ASSERT_EQ(f.queue_error(0), DmaError::kMagic);
  // The host skips the bad entry, posts a good one and clears the error.
  f.bench.write_reg(reg::queue(0, reg::kQHead), 1);
  f.post(0, good);
  f.bench.doorbell(0);
  f.bench.write_reg(reg::queue(0, reg::kQCtrl), 3);
  ASSERT_TRUE(f.bench.run_until_idle(20000));
  EXPECT_EQ(f.queue_error(0), DmaError::kNone);
  EXPECT_EQ(f.head(0), 2u);
  f.expect_memory_matches_reference();
}

// Random traffic with random faults: every queue stops exactly at its first
// faulty descriptor with that fault's code, every earlier descriptor of every
// queue completes, and no byte outside what the faulty descriptors (and, for
// imprecise write errors, the later ones of that queue) may write changes.
TEST(DmaErrors, RandomFaultsNeverHangAndNeverCorrupt) {
  constexpr std::uint64_t kPoison = 0x300000, kPoisonEnd = 0x380000;  // read-error sources
  enum Fault { kNoFault, kMagicFault, kZeroFault, kWindowFault, kMismatchFault, kReadFault, kWriteFault };
  const DmaError code_of[] = {DmaError::kNone, DmaError::kMagic, DmaError::kZeroLength, DmaError::kAddrWindow,
                              DmaError::kMalformed, DmaError::kReadResp, DmaError::kWriteResp};
  std::vector<unsigned> stops(7, 0);  // queues stopped, by fault kind
  for (unsigned round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Fixture f(1000 + round);
    MemoryTiming t;
    t.read_latency = static_cast<unsigned>(f.rng() % 60);
    t.write_latency = static_cast<unsigned>(f.rng() % 120);
    t.jitter = static_cast<unsigned>(f.rng() % 40);
    t.reorder = f.rng() % 2;
    t.ar_ready = t.aw_ready = t.w_ready = 0.5 + 0.5 * double(f.rng() % 2);
    f.bench.mem.timing = t;
    const RandomArea area{kSrc, kSrcEnd, kDst, kDstEnd, kSem, 4096};
    std::uint64_t cursor = kDst;
    struct Posted {
      DmaDescriptor d;
      std::uint64_t slot;
      Fault fault;
    };
    std::vector<std::vector<Posted>> queues(kQueues);
    std::vector<std::uint8_t> would = f.ref;  // every descriptor applied, faulty or not
    for (unsigned q = 0; q < kQueues; ++q) {
      const unsigned n = static_cast<unsigned>(f.rng() % 12) + 1;
      for (unsigned i = 0; i < n; ++i) {
        DmaDescriptor d;
        ASSERT_TRUE(random_descriptor(f.rng, area, cursor, d));
        Fault fault = f.rng() % 8 == 0 ? static_cast<Fault>(1 + f.rng() % 6) : kNoFault;
        switch (fault) {
          case kMagicFault: d.magic ^= 0x40; break;
          case kZeroFault: d.dst_size[f.rng() % 4] = 0; break;
          case kWindowFault: d.src_addr = kWinHi - 1; break;
          case kMismatchFault: d.dst_size[0] = static_cast<std::uint16_t>(d.dst_size[0] + 1); break;
          case kReadFault: {
            // A contiguous source in the poison area with one bad byte in it.
            d.src_size = {static_cast<std::uint16_t>(std::min<std::uint64_t>(
                              4096 >> d.elem_log2, d.src_size[0] * d.src_size[1] * d.src_size[2] * d.src_size[3])),
                          1, 1, 1};
            d.src_stride = {1u << d.elem_log2, 0, 0, 0};
            d.dst_size = {d.src_size[0], 1, 1, 1};
            d.dst_stride = d.src_stride;
            d.src_addr = kPoison + 8192 * (q * 16 + i) + f.rng() % 64;
            const std::uint64_t bytes = std::uint64_t(d.src_size[0]) << d.elem_log2;
            const std::uint64_t bad = d.src_addr + f.rng() % bytes;
            f.bench.mem.read_errors.push_back({bad, bad + 1});
            break;
          }
          case kWriteFault: {
            const std::uint64_t e = 1ull << d.elem_log2;
            const std::uint64_t bad = d.dst_addr + d.dst_stride[0] * (f.rng() % d.dst_size[0]) + f.rng() % e;
            f.bench.mem.write_errors.push_back({bad, bad + 1});
            break;
          }
          default: break;
        }
        ASSERT_LT(kPoison + 8192 * (q * 16 + i) + 8192, kPoisonEnd);
        const std::uint64_t slot = f.bench.post(q, d, &f.ref);
        std::copy_n(f.ref.begin() + slot, arch::kDmaDescriptorBytes, would.begin() + slot);
        queues[q].push_back({d, slot, fault});
      }
    }
    // The expected image: each queue's descriptors before its first fault.
    std::vector<AddrRange> may_write;
    std::vector<unsigned> first_fault(kQueues);
    for (unsigned q = 0; q < kQueues; ++q) {
      unsigned k = 0;
      while (k < queues[q].size() && queues[q][k].fault == kNoFault) {
        reference_copy(queues[q][k].d, queues[q][k].slot, f.ref, kSem);
        ++k;
      }
      first_fault[q] = k;
      for (unsigned i = k; i < queues[q].size(); ++i) {
        const Posted& p = queues[q][i];
        const bool partial = (i == k && (p.fault == kReadFault || p.fault == kWriteFault)) ||
                             (i > k && queues[q][k].fault == kWriteFault);
        if (!partial || p.fault == kZeroFault || p.fault == kMismatchFault || p.fault == kMagicFault ||
            p.fault == kWindowFault)
          continue;
        const std::uint64_t e = 1ull << p.d.elem_log2;
        may_write.push_back({p.d.dst_addr, p.d.dst_addr + pattern_extent(p.d.dst_size, p.d.dst_stride, e)});
        std::vector<std::uint8_t> scratch = would;
        reference_copy(p.d, p.slot, scratch, kSem);
        for (std::uint64_t a = may_write.back().lo; a < may_write.back().hi; ++a) would[a] = scratch[a];
      }
    }
    for (unsigned q = 0; q < kQueues; ++q) f.bench.doorbell(q);
    ASSERT_TRUE(f.bench.run_until_idle(2000000)) << "engine hung";
    for (unsigned q = 0; q < kQueues; ++q) {
      const unsigned k = first_fault[q];
      if (k == queues[q].size()) {
        EXPECT_EQ(f.queue_status(q) & 2, 0u) << "queue " << q << ": " << to_string(f.queue_error(q));
        EXPECT_EQ(f.head(q), f.bench.tail(q)) << "queue " << q;
        continue;
      }
      ++stops[queues[q][k].fault];
      EXPECT_EQ(f.queue_error(q), code_of[queues[q][k].fault]) << "queue " << q << " got " << to_string(f.queue_error(q));
      EXPECT_EQ(f.head(q), k) << "queue " << q;
      EXPECT_EQ(f.bench.read_reg(reg::queue(q, reg::kQErrInfo)), k) << "queue " << q;
    }
    for (const AddrRange& r : may_write)
      for (std::uint64_t a = r.lo; a < r.hi; ++a)
        if (f.bench.mem.bytes[a] == would[a]) f.ref[a] = would[a];
    f.expect_memory_matches_reference();
    f.expect_protocol_clean();
    if (::testing::Test::HasFailure()) return;
  }
  for (int kind = 1; kind < 7; ++kind) EXPECT_GE(stops[kind], 3u) << "fault kind " << kind << " rarely hit";
}

TEST(DmaCounters, CountBytesDescriptorsAndCycles) {
  Fixture f(40);
  f.bench.mem.timing.w_ready = 0.5;
  f.post(0, contiguous(kSrc + 1, kDst + 3, 1000));
  f.post(2, contiguous(kSrc + 5, kDst + 5000, 24));
  f.bench.doorbell(0);
  f.bench.doorbell(2);
  ASSERT_TRUE(f.bench.run_until_idle(20000));
  EXPECT_EQ(f.bench.read_reg64(reg::kBytesRdLo), 1024u);
  EXPECT_EQ(f.bench.read_reg64(reg::kBytesWrLo), 1024u);
  EXPECT_EQ(f.bench.read_reg64(reg::kDescDoneLo), 2u);
  const std::uint64_t busy = f.bench.read_reg64(reg::kBusyCyclesLo);
  const std::uint64_t stall = f.bench.read_reg64(reg::kStallCyclesLo);
  EXPECT_GE(busy, 1024u / kDataBytes);  // at least one cycle per beat
  EXPECT_LT(stall, busy);
  EXPECT_GT(stall, 0u);  // w_ready 0.5 and the fetch latency leave stalls
  f.bench.write_reg(reg::kCntClear, 1);
  EXPECT_EQ(f.bench.read_reg64(reg::kBytesRdLo), 0u);
  EXPECT_EQ(f.bench.read_reg64(reg::kBusyCyclesLo), 0u);
}

// CTRL[31:24], the run gap: a burst that starts a run (a row here; the rows
// are not back to back) issues at least that many cycles after the previous
// run start of its side; a back-to-back row carries on the run. moving_o spans
// the first R beat to the last W beat.
TEST(DmaEngine, RunGapSpacesRunStartsOnEachSide) {
  constexpr unsigned kGap = 7;
  Fixture f(41);
  f.bench.enable(0, 0, kGap);
  EXPECT_EQ(f.bench.read_reg(reg::kCtrl) >> 24, kGap);
  DmaDescriptor rows = contiguous(kSrc, kDst, 16);
  rows.src_size = {16, 12, 1, 1};
  rows.dst_size = rows.src_size;
  rows.src_stride = {1, 64, 0, 0};  // 12 rows of 16 B, 64 B apart on both sides
  rows.dst_stride = {1, 96, 0, 0};
  f.post(0, rows);
  f.bench.doorbell(0);
  ASSERT_TRUE(f.bench.run_until_idle(20000));
  f.expect_memory_matches_reference();
  f.expect_protocol_clean();
  const auto spaced = [](const std::vector<AxiMemory::AddressEvent>& log, std::uint64_t lo, std::uint64_t hi) {
    std::vector<std::uint64_t> cycles;
    for (const auto& e : log)
      if (e.addr >= lo && e.addr < hi) cycles.push_back(e.cycle);
    EXPECT_EQ(cycles.size(), 12u);  // one burst per row
    std::uint64_t least = ~0ull;
    for (std::size_t i = 1; i < cycles.size(); ++i) least = std::min(least, cycles[i] - cycles[i - 1]);
    return least;
  };
  EXPECT_EQ(spaced(f.bench.mem.ar_log, kSrc, kSrcEnd), kGap);  // reads issue as fast as the gap allows
  EXPECT_GE(spaced(f.bench.mem.aw_log, kDst, kDstEnd), kGap);
  // Moving: the first data beat on R to the last data beat on W, both included.
  const auto in = [](const AxiMemory::AddressEvent& e, std::uint64_t lo, std::uint64_t hi) {
    return e.addr >= lo && e.addr < hi;
  };
  std::uint64_t first_r = ~0ull, last_w = 0;
  for (const auto& e : f.bench.mem.r_log)
    if (in(e, kSrc, kSrcEnd)) first_r = std::min(first_r, e.cycle);
  for (const auto& e : f.bench.mem.w_log)
    if (in(e, kDst, kDstEnd)) last_w = std::max(last_w, e.cycle);
  EXPECT_EQ(f.bench.moving_cycles, last_w - first_r + 1);

}

// TIMING[15:0], the descriptor gap: a descriptor's first write burst issues
// at least that many cycles after the previous descriptor's last data beat
// on W, here exactly that many (the read-ahead descriptor's data is already
// in the buffer by then); without it the next one's first write goes as soon
// as its data is in. The first descriptor after reset waits for nothing.
TEST(DmaEngine, DescriptorGapHoldsTheNextDescriptorsFirstWrite) {
  constexpr unsigned kGap = 40;
  constexpr unsigned kCount = 3;
  const auto area = [](unsigned i) { return kDst + 0x10000ull * i; };
  const auto gaps = [&](unsigned gap) {
    Fixture f(43);
    f.bench.write_reg(reg::kTiming, gap);
    EXPECT_EQ(f.bench.read_reg(reg::kTiming), gap);
    for (unsigned i = 0; i < kCount; ++i) f.post(0, contiguous(kSrc + 0x1000 * i, area(i), 1024));
    f.bench.doorbell(0);
    EXPECT_TRUE(f.bench.run_until_idle(20000));
    f.expect_memory_matches_reference();
    f.expect_protocol_clean();
    const auto cycles_in = [&](const std::vector<AxiMemory::AddressEvent>& log, unsigned i) {
      std::vector<std::uint64_t> c;
      for (const auto& e : log)
        if (e.addr >= area(i) && e.addr < area(i) + 0x10000) c.push_back(e.cycle);
      return c;
    };
    std::vector<std::uint64_t> out;  // per later descriptor: its first AW after the last W beat before it
    for (unsigned i = 1; i < kCount; ++i) {
      const auto aw = cycles_in(f.bench.mem.aw_log, i);
      const auto w = cycles_in(f.bench.mem.w_log, i - 1);
      EXPECT_FALSE(aw.empty());
      EXPECT_FALSE(w.empty());
      if (!aw.empty() && !w.empty()) out.push_back(aw.front() - w.back());
    }
    return out;
  };
  for (const std::uint64_t g : gaps(kGap)) EXPECT_EQ(g, kGap);
  for (const std::uint64_t g : gaps(0)) EXPECT_LT(g, kGap);  // 27 here: the read-ahead data's memory latency
}

// Rows back to back carry on one run: bursts of their own, none held by the gap.
TEST(DmaEngine, RunGapDoesNotHoldRowsBackToBack) {
  constexpr unsigned kGap = 7;
  Fixture g(42);
  g.bench.enable(0, 0, kGap);
  DmaDescriptor rows = contiguous(kSrc, kDst, 16);
  rows.src_size = {16, 12, 1, 1};
  rows.dst_size = rows.src_size;
  rows.src_stride = {1, 16, 0, 0};
  rows.dst_stride = {1, 16, 0, 0};
  g.post(0, rows);
  g.bench.doorbell(0);
  ASSERT_TRUE(g.bench.run_until_idle(20000));
  g.expect_memory_matches_reference();
  std::vector<std::uint64_t> reads;
  for (const auto& e : g.bench.mem.ar_log)
    if (e.addr >= kSrc && e.addr < kSrcEnd) reads.push_back(e.cycle);
  ASSERT_EQ(reads.size(), 12u);
  for (std::size_t i = 1; i < 4; ++i) EXPECT_LT(reads[i] - reads[i - 1], kGap) << "read " << i;  // 4 outstanding
}

}  // namespace
}  // namespace tessera::rtl::dma
