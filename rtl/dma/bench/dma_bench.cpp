// Throughput of the real DMA engine (64-byte AXI port) against its peak of one
// data beat per cycle: achieved bytes per cycle for transfer sizes 64 B .. 1 MiB
// and memory latencies 10 .. 500 cycles, then the outstanding-transaction limit
// (CTRL read/write limits) needed to reach 90% of peak on a 1 MiB copy.
// Prints Markdown tables (docs/dma.md holds a copy).
#include "Vdma_real.h"
#include "dma_harness.h"

#include <cstdio>
#include <cstdlib>

namespace {

using namespace tessera::rtl::dma;
namespace arch = tessera::arch;

constexpr unsigned kDataBytes = 64;
constexpr std::uint64_t kRing = 0x10000;
constexpr std::uint64_t kSrc = 0x100000;
constexpr std::uint64_t kDst = 0x1000000;
constexpr std::uint64_t kMem = 0x2000000;

// Bytes per cycle for `count` back-to-back descriptors of `bytes` each on one
// queue, from the doorbell to the last status write.
double measure(std::uint64_t bytes, unsigned latency, unsigned limit, unsigned count) {
  EngineBench<Vdma_real> b(16, kDataBytes, kMem, 1);
  b.mem.timing.read_latency = latency;
  b.mem.timing.write_latency = latency;
  b.set_window(0x1000, kMem);
  b.setup_queue(0, kRing, 256);
  b.enable(limit, limit);
  for (unsigned i = 0; i < count; ++i) {
    arch::DmaDescriptor d;
    d.magic = arch::kDmaDescriptorMagic;
    const std::uint64_t off = (i * bytes) % (kDst - kSrc - bytes);
    d.src_addr = kSrc + off;
    d.dst_addr = kDst + off;
    // Whole 4 KiB elements when possible keeps the sizes within 16 bits.
    const unsigned elog2 = bytes >= 4096 ? 12 : 0;
    d.elem_log2 = static_cast<std::uint8_t>(elog2);
    d.src_size = {static_cast<std::uint16_t>(bytes >> elog2), 1, 1, 1};
    d.dst_size = d.src_size;
    d.src_stride = {1u << elog2, 0, 0, 0};
    d.dst_stride = d.src_stride;
    b.post(0, d);
  }
  const std::uint64_t start = b.cycle();
  b.doorbell(0);
  if (!b.run_until_idle(100000000)) {
    std::fprintf(stderr, "engine did not finish (bytes %llu, latency %u)\n", (unsigned long long)bytes, latency);
    std::exit(1);
  }
  if (!b.mem.violations.empty()) {
    std::fprintf(stderr, "AXI violation: %s\n", b.mem.violations.front().c_str());
    std::exit(1);
  }
  return double(bytes) * count / double(b.cycle() - start);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  const std::vector<unsigned> latencies = quick ? std::vector<unsigned>{10, 200}
                                                : std::vector<unsigned>{10, 50, 100, 200, 500};
  const std::vector<std::uint64_t> sizes = quick ? std::vector<std::uint64_t>{64, 4096, 1 << 20}
                                                 : std::vector<std::uint64_t>{64, 256, 1024, 4096, 16384, 65536,
                                                                              262144, 1 << 20};
  std::printf("Peak: %u B/cycle (one %u-byte beat per cycle on R and on W).\n\n", kDataBytes, kDataBytes);
  std::printf("Achieved B/cycle (%% of peak), 16 outstanding reads and writes, one queue:\n\n");
  std::printf("| transfer |");
  for (unsigned l : latencies) std::printf(" lat %u |", l);
  std::printf("\n|---|");
  for (std::size_t i = 0; i < latencies.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (std::uint64_t s : sizes) {
    if (s >= 1024 * 1024) std::printf("| %llu MiB |", (unsigned long long)(s >> 20));
    else if (s >= 1024) std::printf("| %llu KiB |", (unsigned long long)(s >> 10));
    else std::printf("| %llu B |", (unsigned long long)s);
    // Enough descriptors that one transfer's fixed cost is not the whole figure.
    const unsigned count = static_cast<unsigned>(std::min<std::uint64_t>(64, std::max<std::uint64_t>(2, (4ull << 20) / s / 4)));
    for (unsigned l : latencies) {
      const double bpc = measure(s, l, 0, count);
      std::printf(" %.1f (%.0f%%) |", bpc, 100.0 * bpc / kDataBytes);
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  std::printf("\nOutstanding transactions (read and write limit) needed for 90%% of peak, 1 MiB copy:\n\n");
  std::printf("| latency (cycles) | minimum outstanding | B/cycle at that limit | B/cycle at limit - 1 |\n|---|---|---|---|\n");
  for (unsigned l : latencies) {
    double prev = 0;
    unsigned found = 0;
    double at = 0;
    for (unsigned lim = 1; lim <= 16; ++lim) {
      const double bpc = measure(1 << 20, l, lim, 1);
      if (bpc >= 0.9 * kDataBytes) {
        found = lim;
        at = bpc;
        break;
      }
      prev = bpc;
    }
    if (found) std::printf("| %u | %u | %.1f | %.1f |\n", l, found, at, prev);
    else std::printf("| %u | > 16 (not reached) | - | %.1f |\n", l, prev);
    std::fflush(stdout);
  }
  return 0;
}
