// HBM and SBUF/PSUM, each driven through its real TLM socket by a test
// initiator, checking data and simulated time.
#include "memory/hbm.h"
#include "memory/partitioned_memory.h"
#include "testing/tlm_initiator.h"

#include <gtest/gtest.h>
#include <systemc>

#include <cstring>
#include <functional>

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
