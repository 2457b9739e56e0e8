// HBM and SBUF/PSUM, each driven through its real TLM socket by a test
// initiator, checking data and simulated time.
#include "memory/hbm.h"
#include "memory/partitioned_memory.h"
#include "memory/sparse_store.h"
#include "memory/time_bins.h"
#include "testing/tlm_initiator.h"

#include <gtest/gtest.h>
#include <systemc>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <functional>
#include <map>
#include <random>

namespace tessera {
namespace {

using sc_core::sc_time;
using sc_core::SC_NS;

using testing::Initiator;

arch::HbmConfig hbm_config() {
  arch::HbmConfig c;
  c.capacity_gib = 32;
  c.bandwidth_gbps = 64;  // 64 bytes per ns
  c.latency_ns = 100;
  c.channels = 4;
  return c;
}

TEST(Hbm, ReadBackWhatWasWrittenWithLatencyPlusBandwidth) {
  trace::Stats stats;
  memory::Hbm hbm("hbm", hbm_config(), stats);
  Initiator init("init");
  init.socket.bind(hbm.socket);
  sc_time write_delay, read_delay;
  std::vector<std::uint8_t> out(4096);
  init.body = [&](Initiator& i) {
    std::vector<std::uint8_t> in(4096);
    for (std::size_t k = 0; k < in.size(); ++k) in[k] = static_cast<std::uint8_t>(k * 7);
    write_delay = i.transport(tlm::TLM_WRITE_COMMAND, 30ull << 30, in.data(), 4096).first;
    sc_core::wait(write_delay);
    read_delay = i.transport(tlm::TLM_READ_COMMAND, 30ull << 30, out.data(), 4096).first;
  };
  sc_core::sc_start();
  for (std::size_t k = 0; k < out.size(); ++k) ASSERT_EQ(out[k], static_cast<std::uint8_t>(k * 7));
  // 4096 bytes over 4 channels of 16 B/ns each: 64 ns, plus 100 ns latency.
  EXPECT_EQ(read_delay, sc_time(164, SC_NS));
  EXPECT_EQ(write_delay, sc_time(164, SC_NS));
  EXPECT_EQ(stats.value("hbm.bytes_read"), 4096);
  // A 32 GiB device written at 30 GiB costs one 64 KiB page.
  EXPECT_EQ(hbm.store().pages_allocated(), 1u);
}

// A run that is over drops HBM's store (Device, before its report): every
// page goes back, and what the store holds afterwards reads as zeros.
TEST(SparseStore, ClearReturnsEveryPageAndTheStoreReadsAsZeros) {
  memory::SparseStore store;
  const std::vector<std::uint8_t> in(3 * memory::SparseStore::kPageBytes + 100, 0xab);
  store.write(5000, in.data(), in.size());
  EXPECT_EQ(store.pages_allocated(), 4u);
  store.clear();
  EXPECT_EQ(store.pages_allocated(), 0u);
  std::vector<std::uint8_t> out(in.size(), 1);
  store.read(5000, out.data(), out.size());
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::uint8_t b) { return b == 0; }));
  store.write(7, in.data(), 10);
  store.read(0, out.data(), 17);
  EXPECT_EQ(out[6], 0);
  EXPECT_EQ(out[7], 0xab);
  EXPECT_EQ(out[16], 0xab);
  EXPECT_EQ(store.pages_allocated(), 1u);
}

TEST(Hbm, OverlappingTransfersShareTheBandwidth) {
  trace::Stats stats;
  memory::Hbm hbm("hbm", hbm_config(), stats);
  Initiator init("init");
  init.socket.bind(hbm.socket);
  sc_time first, second;
  init.body = [&](Initiator& i) {
    std::vector<std::uint8_t> buf(8192);
    first = i.transport(tlm::TLM_READ_COMMAND, 0, buf.data(), 8192).first;
    second = i.transport(tlm::TLM_READ_COMMAND, 1 << 20, buf.data(), 8192).first;  // issued at the same time
  };
  sc_core::sc_start();
  EXPECT_EQ(first, sc_time(228, SC_NS));   // 8192 / 64 = 128 ns + 100
  EXPECT_EQ(second, sc_time(356, SC_NS));  // queued behind the first on every channel
}

// Bytes of `rows` rows of 256 B at `pitch` from `base`, per channel.
std::vector<int> rows_per_channel(const memory::ChannelHash& h, std::uint64_t base, std::uint64_t pitch, int rows) {
  std::vector<int> n(h.channels(), 0);
  for (int i = 0; i < rows; ++i) ++n[h.channel_of(base + static_cast<std::uint64_t>(i) * pitch)];
  return n;
}

TEST(ChannelHash, ConsecutiveGranulesCoverEveryChannelOncePerAlignedGroup) {
  for (const std::uint64_t channels : {1, 2, 4, 16, 64, 256}) {
    const memory::ChannelHash h(channels);
    for (const std::uint64_t group : {0ull, 1ull, 7ull, 12345ull, (1ull << 30) + 3}) {
      const auto n = rows_per_channel(h, group * channels * 256, 256, static_cast<int>(channels));
      for (std::uint64_t c = 0; c < channels; ++c) ASSERT_EQ(n[c], 1) << channels << " channels, group " << group;
    }
  }
}

// The row pitches kernels use: every power of two from one granule to 1 MiB
// (a GEMM A tile at M=4096 has rows 8 KiB apart; elementwise on 8192 fp32
// columns 32 KiB). Plain modulo put every pitch of 4 KiB and more on one of
// 16 channels.
TEST(ChannelHash, RowsAtEveryPowerOfTwoPitchSpreadEvenly) {
  for (const std::uint64_t channels : {2, 4, 16, 256}) {
    const memory::ChannelHash h(channels);
    for (std::uint64_t pitch = 256; pitch <= (1u << 20); pitch *= 2) {
      // `channels` rows from an aligned base: each channel exactly once.
      for (const std::uint64_t base : {0ull, 3ull << 32, 0x240000000ull}) {
        const auto n = rows_per_channel(h, base * channels, pitch, static_cast<int>(channels));
        for (std::uint64_t c = 0; c < channels; ++c) ASSERT_EQ(n[c], 1) << pitch << " B pitch, " << channels << " channels";
      }
      // A 128-partition tile from any granule: within 2 rows of even.
      if (channels > 128) continue;
      for (const std::uint64_t base : {256ull, 0x12300ull, 0x7fff00ull}) {
        const auto n = rows_per_channel(h, base, pitch, 128);
        const auto [lo, hi] = std::minmax_element(n.begin(), n.end());
        EXPECT_LE(*hi - *lo, 2) << pitch << " B pitch from 0x" << std::hex << base;
      }
    }
  }
}

// Pitches that are not powers of two (a row of 3 KiB, 6 KiB, 1.5 KiB; odd
// shapes in tests): spread within a bound over 1,024 rows.
TEST(ChannelHash, OtherPitchesSpreadWithinABound) {
  const memory::ChannelHash h(16);
  for (const std::uint64_t pitch : {768ull, 1536ull, 3072ull, 6144ull, 12288ull, 24576ull, 2304ull, 74ull * 256}) {
    const auto n = rows_per_channel(h, 0, pitch, 1024);
    const auto [lo, hi] = std::minmax_element(n.begin(), n.end());
    // Measured: 56 .. 74 rows per channel at worst (2,304 B); plain modulo gave
    // 1,536 B rows to 8 channels only and 6,144 B rows to 4.
    EXPECT_GE(*lo, 48) << pitch;
    EXPECT_LE(*hi, 80) << pitch;
  }
}

// The channel of a granule is the channel of its aligned block of `channels`
// granules XOR its place in the block (what Hbm::book uses to look the hash up
// once per block).
TEST(ChannelHash, GranuleInABlockIsTheBlocksChannelXorItsPlace) {
  for (const std::uint64_t channels : {1u, 2u, 16u, 32u, 256u}) {
    const memory::ChannelHash h(channels);
    std::mt19937_64 rng(channels);
    for (int i = 0; i < 2000; ++i) {
      const std::uint64_t g = rng() & ((std::uint64_t{1} << 40) - 1);
      EXPECT_EQ(h.channel_of_granule(g), h.channel_of_granule(g & ~(channels - 1)) ^ (g & (channels - 1))) << g;
    }
  }
}

// What TimeBins must answer, written plainly: one channel's bins as a map (a
// bin never booked holds 0), the bins before `stale` dropped, then `bytes`
// booked from `start_ns` on, bin by bin.
double reference_book(std::map<std::int64_t, double>& bins, double bytes, double start_ns, std::int64_t stale,
                      double ns_per_byte, double capacity, double bin_ns) {
  bins.erase(bins.begin(), bins.lower_bound(stale));
  double left = bytes, finish = start_ns;
  for (auto b = static_cast<std::int64_t>(start_ns / bin_ns); left > 0; ++b) {
    double& used = bins[b];
    const double take = std::min(left, capacity - used);
    used += take;
    left -= take;
    finish = (static_cast<double>(b) + used / capacity) * bin_ns;
  }
  return std::max(finish, start_ns + ns_per_byte * bytes);
}

// TimeBins keeps its bins in a ring; against a map of bins with the same
// rules (a bin never booked holds 0, bins before the stale one are dropped),
// every booking finishes at the same time, bit for bit, bookings earlier than
// the first bin kept and bins dropped and booked again included.
TEST(TimeBins, RingBooksAsAMapOfBinsDoes) {
  const double ns_per_byte = 1.0 / 3.7, bin_ns = 64, capacity = 3.7 * bin_ns;
  memory::TimeBins bins(1, ns_per_byte, capacity, bin_ns);
  std::map<std::int64_t, double> reference;
  std::mt19937_64 rng(7);
  double now = 0;
  for (int i = 0; i < 20000; ++i) {
    // About 92 % of the bandwidth on average (4 KiB per 1.2 us against 3.7
    // B/ns): bookings queue behind each other, but the backlog stays bounded.
    // (At 25 ns per booking it grew without end, and each booking walked the
    // whole backlog of full bins: the test took over three minutes.)
    now += static_cast<double>(rng() % 2400);
    const auto stale = static_cast<std::int64_t>(now / bin_ns) - 1 - static_cast<std::int64_t>(rng() % 3);
    // Mostly ahead of now, sometimes far ahead (the ring grows), sometimes
    // before the first bin kept.
    const double start = now + static_cast<double>(rng() % (i % 97 == 0 ? 200000 : 3000)) - 64.0 * static_cast<double>(rng() % 2);
    const double bytes = static_cast<double>(1 + rng() % 8192);
    ASSERT_EQ(bins.book(0, bytes, std::max(start, 0.0), stale),
              reference_book(reference, bytes, std::max(start, 0.0), stale, ns_per_byte, capacity, bin_ns))
        << i;
  }
}

// Several channels share one ring of bins; each books as a map of its own
// bins would, whether a request books its channels one by one (book) or all
// from one start (from: the start's bin found once), with a stale bin that
// only moves on, as SystemC's time does. Requests of 1 to 24 granules at
// random channels, some far ahead (the ring grows), some spilling over full
// bins.
TEST(TimeBins, ChannelsBookAsMapsOfTheirOwnBinsDo) {
  const std::size_t channels = 16;
  const double ns_per_byte = 1.0 / 1.7, bin_ns = 64, capacity = 1.7 * bin_ns;
  memory::TimeBins bins(channels, ns_per_byte, capacity, bin_ns);
  std::vector<std::map<std::int64_t, double>> reference(channels);
  std::mt19937_64 rng(11);
  double now = 0;
  std::size_t spilled = 0;
  for (int i = 0; i < 20000; ++i) {
    now += static_cast<double>(rng() % 300);
    const auto stale = static_cast<std::int64_t>(now / bin_ns) - 1;
    const double start = now + static_cast<double>(rng() % (i % 89 == 0 ? 100000 : 2000));
    const auto start_bin = static_cast<std::int64_t>(start / bin_ns);
    const std::size_t granules = 1 + rng() % 24;
    const bool together = rng() % 2 == 0;
    if (together) bins.drop_before(stale);
    memory::TimeBins::From from = bins.from(start, start_bin);
    for (std::size_t g = 0; g < granules; ++g) {
      const std::size_t c = rng() % channels;
      const double bytes = static_cast<double>(1 + rng() % 256);
      const double expected = reference_book(reference[c], bytes, start, stale, ns_per_byte, capacity, bin_ns);
      const double got = together ? std::max(from.fill(c, bytes), from.streamed(bytes))
                                  : bins.book(c, bytes, start, start_bin, stale);
      ASSERT_EQ(got, expected) << i << " granule " << g;
      spilled += expected > start + ns_per_byte * bytes;
    }
  }
  EXPECT_GT(spilled, 1000u);  // bins fill up: bookings queue behind each other
}

// fill_for_latest() books as fill() does, and the latest of its finishes with
// latest_in_start_bin() is the latest of fill()'s, bit for bit: HBM takes a
// request's finish that way, one division for the granules that end in the
// start's bin instead of one each. Two sets of bins, one booked each way.
TEST(TimeBins, TheLatestFinishOfAFromsBookingsNeedsOneDivision) {
  const std::size_t channels = 16;
  const double ns_per_byte = 1.0 / 1.7, bin_ns = 64, capacity = 1.7 * bin_ns;
  memory::TimeBins each(channels, ns_per_byte, capacity, bin_ns), latest(channels, ns_per_byte, capacity, bin_ns);
  std::mt19937_64 rng(23);
  double now = 0;
  std::size_t spilled = 0, within = 0;
  for (int i = 0; i < 20000; ++i) {
    now += static_cast<double>(rng() % 300);
    const auto stale = static_cast<std::int64_t>(now / bin_ns) - 1;
    const double start = now + static_cast<double>(rng() % (i % 89 == 0 ? 100000 : 2000));
    const auto start_bin = static_cast<std::int64_t>(start / bin_ns);
    each.drop_before(stale);
    latest.drop_before(stale);
    memory::TimeBins::From a = each.from(start, start_bin), b = latest.from(start, start_bin);
    double expected = start, got = start;
    const std::size_t granules = 1 + rng() % 16;
    for (std::size_t g = 0; g < granules; ++g) {
      const std::size_t c = rng() % channels;
      const double bytes = static_cast<double>(1 + rng() % 256);
      const double finish = a.fill(c, bytes);
      expected = std::max({expected, finish, a.streamed(bytes)});
      got = std::max({got, b.fill_for_latest(c, bytes), b.streamed(bytes)});
      const bool spills = finish >= static_cast<double>(start_bin + 1) * bin_ns;
      spilled += spills;
      within += !spills;
    }
    got = std::max(got, b.latest_in_start_bin());
    ASSERT_EQ(got, expected) << i;
  }
  EXPECT_GT(spilled, 1000u);
  EXPECT_GT(within, 1000u);
}

TEST(ChannelHash, ChannelCountMustBeAPowerOfTwo) {
  EXPECT_THROW(memory::ChannelHash(12), std::invalid_argument);
  EXPECT_THROW(memory::ChannelHash(0), std::invalid_argument);
  EXPECT_THROW(memory::ChannelHash(512), std::invalid_argument);
  EXPECT_EQ(memory::ChannelHash(16).polynomial(), 0x3u);  // x^4 + x + 1
}

// 16 rows of 256 B at an 8 KiB pitch, issued together, take as long as 4 KiB
// of packed rows: every row on its own channel.
TEST(Hbm, RowsAtAPowerOfTwoPitchTakeTheBandwidthOfPackedRows) {
  arch::HbmConfig c = hbm_config();
  c.channels = 16;
  trace::Stats stats;
  memory::Hbm hbm("hbm", c, stats);
  Initiator init("init");
  init.socket.bind(hbm.socket);
  sc_time packed, strided;
  init.body = [&](Initiator& i) {
    std::vector<std::uint8_t> buf(256);
    for (int r = 0; r < 16; ++r)
      packed = std::max(packed, i.transport(tlm::TLM_READ_COMMAND, 256ull * r, buf.data(), 256).first);
    sc_core::wait(sc_time(10, sc_core::SC_US));
    for (int r = 0; r < 16; ++r)
      strided = std::max(strided, i.transport(tlm::TLM_READ_COMMAND, (1ull << 24) + 8192ull * r, buf.data(), 256).first);
  };
  sc_core::sc_start();
  EXPECT_EQ(packed, sc_time(164, SC_NS));  // 4096 B at 64 B/ns + 100 ns
  EXPECT_EQ(strided, packed);
}

TEST(Hbm, OutOfRangeIsAnAddressError) {
  trace::Stats stats;
  memory::Hbm hbm("hbm", hbm_config(), stats);
  Initiator init("init");
  init.socket.bind(hbm.socket);
  tlm::tlm_response_status status = tlm::TLM_OK_RESPONSE;
  init.body = [&](Initiator& i) {
    std::uint8_t b[8];
    status = i.transport(tlm::TLM_READ_COMMAND, (32ull << 30) - 4, b, 8).second;
  };
  sc_core::sc_start();
  EXPECT_EQ(status, tlm::TLM_ADDRESS_ERROR_RESPONSE);
}

// A fast DMA engine's bursts reach HBM through access(), not the socket.
// Timing does not depend on data: two HBMs take the same random traffic at
// the same times (bursts that cross channel blocks, queue behind full bins,
// or lie past the end), one as reads through its socket, the other as
// timing-only accesses through access(), and answer alike.
TEST(Hbm, TimingOnlyAccessAnswersAsAReadThroughTheSocketDoes) {
  trace::Stats stats_a, stats_b;
  memory::Hbm socketed("socketed", hbm_config(), stats_a), direct("direct", hbm_config(), stats_b);
  Initiator init("init");
  init.socket.bind(socketed.socket);
  Initiator unused("unused");  // the direct one's socket must be bound too
  unused.socket.bind(direct.socket);
  std::size_t compared = 0, errors = 0;
  init.body = [&](Initiator& i) {
    std::mt19937_64 rng(7);
    std::vector<std::uint8_t> buffer(8192);
    const std::uint64_t end = socketed.size_bytes();
    for (int k = 0; k < 3000; ++k) {
      sc_core::wait(sc_time(static_cast<double>(rng() % 40), SC_NS));
      const unsigned length = 1 + static_cast<unsigned>(rng() % 8192);
      const std::uint64_t address = rng() % 64 == 0 ? end - rng() % 4096 : (rng() % (1u << 20)) * 64 + rng() % 64;
      const auto [delay, status] = i.transport(tlm::TLM_READ_COMMAND, address, buffer.data(), length);
      sc_time direct_delay = sc_core::SC_ZERO_TIME;
      const bool ok = direct.access(tlm::TLM_IGNORE_COMMAND, address, nullptr, length, sc_core::sc_time_stamp(),
                                    direct_delay) == tlm::TLM_OK_RESPONSE;
      EXPECT_EQ(ok, status == tlm::TLM_OK_RESPONSE) << "access " << k;
      if (ok) {
        EXPECT_EQ(direct_delay, delay) << "access " << k;
      }
      errors += ok ? 0 : 1;
      ++compared;
    }
  };
  sc_core::sc_start();
  EXPECT_EQ(compared, 3000u);
  EXPECT_GT(errors, 0u);
  EXPECT_EQ(stats_a.value("socketed.transactions"), stats_b.value("direct.transactions"));
  EXPECT_EQ(stats_a.value("socketed.bytes_read"), stats_b.value("direct.bytes_timing_only"));
}

// The DMA engines under a scheduler book HBM ahead of SystemC's time, in
// resolution units (access_ticks): the same answers as access() with the
// time ahead as the annotated delay, bins gone stale behind SystemC's time
// included, and the start itself for an access past the end.
TEST(Hbm, AccessInTicksAnswersAsAccessWithTheTimeAheadAsItsDelay) {
  trace::Stats stats_a, stats_b;
  memory::Hbm timed("timed", hbm_config(), stats_a), ticked("ticked", hbm_config(), stats_b);
  std::mt19937_64 rng(11);
  const std::uint64_t end = timed.size_bytes();
  sc_time now = sc_core::SC_ZERO_TIME;
  std::size_t errors = 0;
  for (int k = 0; k < 3000; ++k) {
    now += sc_time(static_cast<double>(rng() % 40), SC_NS);
    const sc_time ahead(static_cast<double>(rng() % 2000), SC_NS);
    const unsigned length = 1 + static_cast<unsigned>(rng() % 8192);
    const std::uint64_t address = rng() % 64 == 0 ? end - rng() % 4096 : (rng() % (1u << 20)) * 64 + rng() % 64;
    sc_time delay = ahead;
    const tlm::tlm_response_status want = timed.access(tlm::TLM_IGNORE_COMMAND, address, nullptr, length, now, delay);
    tlm::tlm_response_status got = tlm::TLM_INCOMPLETE_RESPONSE;
    const std::uint64_t answer =
        ticked.access_ticks(tlm::TLM_IGNORE_COMMAND, address, nullptr, length, (now + ahead).value(), now.value(), got);
    ASSERT_EQ(got, want) << "access " << k;
    EXPECT_EQ(answer, (now + delay).value()) << "access " << k;  // delay untouched on an error: the start
    errors += want == tlm::TLM_OK_RESPONSE ? 0 : 1;
  }
  EXPECT_GT(errors, 0u);
  EXPECT_EQ(stats_a.value("timed.transactions"), stats_b.value("ticked.transactions"));
}

memory::PartitionedMemoryParams sbuf_params() {
  return {8, 1024, sc_time(1, SC_NS), 10, 4};
}

TEST(PartitionedMemory, TransferTimeSpreadsOverTouchedPartitions) {
  trace::Stats stats;
  memory::PartitionedMemory sbuf("sbuf", sbuf_params(), stats);
  Initiator init("init");
  init.socket.bind(sbuf.socket);
  sc_time one_partition, four_partitions;
  init.body = [&](Initiator& i) {
    std::vector<std::uint8_t> buf(4096, 0xab);
    one_partition = i.transport(tlm::TLM_WRITE_COMMAND, 0, buf.data(), 1024).first;
    four_partitions = i.transport(tlm::TLM_WRITE_COMMAND, 1024, buf.data(), 4096).first;
  };
  sc_core::sc_start();
  EXPECT_EQ(one_partition, sc_time(10 + 256, SC_NS));   // 1024 B at 4 B/cycle
  EXPECT_EQ(four_partitions, sc_time(10 + 256, SC_NS));  // 4 interfaces in parallel
  EXPECT_EQ(sbuf.at(3, 1000, 4)[0], 0xab);
  EXPECT_EQ(stats.value("sbuf.bytes_written"), 5120);
}

// A DMA burst's bytes stream over the engine's bus one beat per cycle; the
// memory charges only what its partition interfaces need beyond that.
TEST(PartitionedMemory, StreamedBytesAreNotChargedTwice) {
  memory::PartitionedMemoryParams p = sbuf_params();
  p.stream_bytes_per_ns = 8;  // the interfaces take 4 B/cycle at 1 GHz: half the bus rate
  trace::Stats stats;
  memory::PartitionedMemory sbuf("sbuf", p, stats);
  Initiator init("init");
  init.socket.bind(sbuf.socket);
  sc_time one_partition, four_partitions;
  init.body = [&](Initiator& i) {
    std::vector<std::uint8_t> buf(4096, 0xab);
    one_partition = i.transport(tlm::TLM_WRITE_COMMAND, 0, buf.data(), 1024).first;
    four_partitions = i.transport(tlm::TLM_READ_COMMAND, 1024, buf.data(), 4096).first;
  };
  sc_core::sc_start();
  EXPECT_EQ(one_partition, sc_time(10 + 256 - 128, SC_NS));  // 256 ns at the interface, 128 of them streaming in
  EXPECT_EQ(four_partitions, sc_time(10, SC_NS));            // faster than the bus: the latency alone
}

// transfer_time counts partitions with one division and remembers the last
// (length, partitions) it timed: against the plain formula, for partitions
// of a size that is not a power of two, ranges that start anywhere in one,
// and one length in turn over one and over two partitions.
TEST(PartitionedMemory, TransferTimeOfEveryRangeMatchesItsFormula) {
  for (const double stream : {0.0, 8.0}) {
    memory::PartitionedMemoryParams p{8, 1536, sc_time(1, SC_NS), 10, 4};
    p.stream_bytes_per_ns = stream;
    trace::Stats stats;
    memory::PartitionedMemory sbuf(stream == 0 ? "plain" : "streamed", p, stats);
    const auto expected = [&](std::uint64_t offset, std::uint64_t length) {
      const std::uint64_t parts = (offset + length - 1) / 1536 - offset / 1536 + 1;
      const std::uint64_t cycles = (length + parts * 4 - 1) / (parts * 4);
      const sc_time own(static_cast<double>(cycles), SC_NS), latency(10, SC_NS);
      if (stream == 0) return latency + own;
      const sc_time streamed(static_cast<double>(length) / stream, SC_NS);
      return own > streamed ? latency + (own - streamed) : latency;
    };
    for (const std::uint64_t length : {1, 4, 512, 836, 1535, 1536, 1537, 3000, 4096})
      for (const std::uint64_t offset : {0, 1, 700, 1535, 1536, 2000, 3071, 4607}) {
        if (offset + length > 8 * 1536) continue;
        EXPECT_EQ(sbuf.transfer_time(offset, length), expected(offset, length))
            << "offset " << offset << " length " << length << " stream " << stream;
      }
    EXPECT_EQ(sbuf.transfer_time(0, 0), sc_time(10, SC_NS));
  }
}

// The same for SBUF and PSUM: a timing-only access() is answered as a read
// of the same bytes through the socket is, out-of-range ones included.
// And through access_ticks() from a start of its own, as the fast DMA
// engines call it, which counts its bytes too.
TEST(PartitionedMemory, TimingOnlyAccessAnswersAsAReadThroughTheSocketDoes) {
  memory::PartitionedMemoryParams p = sbuf_params();
  p.stream_bytes_per_ns = 8;
  trace::Stats stats_a, stats_b;
  memory::PartitionedMemory socketed("socketed", p, stats_a), direct("direct", p, stats_b);
  Initiator init("init");
  init.socket.bind(socketed.socket);
  Initiator unused("unused");  // the direct one's socket must be bound too
  unused.socket.bind(direct.socket);
  std::size_t errors = 0;
  init.body = [&](Initiator& i) {
    std::mt19937_64 rng(11);
    std::vector<std::uint8_t> buffer(4096);
    for (int k = 0; k < 2000; ++k) {
      const std::uint64_t address = rng() % 9000;
      const unsigned length = 1 + static_cast<unsigned>(rng() % 4096);
      const auto [delay, status] = i.transport(tlm::TLM_READ_COMMAND, address, buffer.data(), length);
      sc_time direct_delay = sc_core::SC_ZERO_TIME;
      const bool ok = direct.access(tlm::TLM_IGNORE_COMMAND, address, nullptr, length, direct_delay) ==
                      tlm::TLM_OK_RESPONSE;
      EXPECT_EQ(ok, status == tlm::TLM_OK_RESPONSE) << "access " << k;
      if (ok) {
        EXPECT_EQ(direct_delay, delay) << "access " << k;
      }
      // In resolution units, as the fast DMA engines call it, from a start of their own.
      const std::uint64_t start = 1000 * static_cast<std::uint64_t>(k);
      tlm::tlm_response_status ticked = tlm::TLM_INCOMPLETE_RESPONSE;
      const std::uint64_t end = direct.access_ticks(tlm::TLM_IGNORE_COMMAND, address, nullptr, length, start, ticked);
      EXPECT_EQ(ticked == tlm::TLM_OK_RESPONSE, ok) << "access " << k;
      EXPECT_EQ(end, ok ? start + delay.value() : start) << "access " << k;
      errors += ok ? 0 : 1;
    }
  };
  sc_core::sc_start();
  EXPECT_GT(errors, 0u);
  EXPECT_GT(stats_b.value("direct.bytes_timing_only"), 0.0);
  EXPECT_EQ(2 * stats_a.value("socketed.bytes_read"), stats_b.value("direct.bytes_timing_only"));  // both ways
}

TEST(PartitionedMemory, BackdoorOutsideIsAnErrorNamingTheRange) {
  trace::Stats stats;
  memory::PartitionedMemory sbuf("sbuf", sbuf_params(), stats);
  try {
    sbuf.at(8, 0, 4);
    FAIL() << "no error";
  } catch (const memory::MemoryError& e) {
    EXPECT_STREQ(e.what(), "sbuf: partition 8 bytes 0..3 outside 8 partitions of 1024 bytes");
  }
  EXPECT_THROW(sbuf.at(0, 1020, 8), memory::MemoryError);
}

}  // namespace
}  // namespace tessera
