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
struct Result {
  double transfer;   // bytes / cycles from doorbell to the last HEAD update
  double streaming;  // bytes / cycles from the first R beat to the last W beat
};

Result measure(std::uint64_t bytes, unsigned latency, unsigned limit, unsigned count) {
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
  const double total = double(bytes) * count;
  return {total / double(b.cycle() - start), total / double(b.mem.last_w_cycle + 1 - b.mem.first_r_cycle)};
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
      const double bpc = measure(s, l, 0, count).transfer;
      std::printf(" %.1f (%.0f%%) |", bpc, 100.0 * bpc / kDataBytes);
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  std::printf("\nOutstanding transactions (CTRL read and write limit) needed for 90%% of peak on one 1 MiB\n"
              "descriptor: streaming = first R beat to last W beat; transfer = doorbell to HEAD update,\n"
              "which adds the descriptor fetch, the first read and the last write response:\n\n");
  std::printf("| latency (cycles) | outstanding for 90%% streaming | streaming B/cycle at 1 / 2 / 4 / 8 / 16 |"
              " outstanding for 90%% transfer | transfer B/cycle at 16 |\n|---|---|---|---|---|\n");
  for (unsigned l : latencies) {
    unsigned need_stream = 0, need_transfer = 0;
    std::vector<double> at;
    double transfer16 = 0;
    for (unsigned lim = 1; lim <= 16; ++lim) {
      const Result r = measure(1 << 20, l, lim, 1);
      if (!need_stream && r.streaming >= 0.9 * kDataBytes) need_stream = lim;
      if (!need_transfer && r.transfer >= 0.9 * kDataBytes) need_transfer = lim;
      if (lim == 1 || lim == 2 || lim == 4 || lim == 8 || lim == 16) at.push_back(r.streaming);
      if (lim == 16) transfer16 = r.transfer;
    }
    auto show = [](unsigned n) { return n ? std::to_string(n) : std::string("> 16"); };
    std::printf("| %u | %s | %.1f / %.1f / %.1f / %.1f / %.1f | %s | %.1f |\n", l, show(need_stream).c_str(), at[0],
                at[1], at[2], at[3], at[4], show(need_transfer).c_str(), transfer16);
    std::fflush(stdout);
  }
  return 0;
}
