// The interconnect, driven through its real TLM socket: every region of the
// address map reaches its target, holes and straddling accesses are errors.
#include "core/interconnect.h"

#include "arch/address_map.h"
#include "core/semaphores.h"
#include "memory/hbm.h"
#include "memory/partitioned_memory.h"
#include "testing/tlm_initiator.h"

#include <gtest/gtest.h>
#include <systemc>

#include <utility>
#include <vector>

namespace tessera {
namespace {

using sc_core::sc_time;
using sc_core::SC_NS;
using testing::Initiator;

memory::PartitionedMemoryParams on_chip_params() { return {8, 1024, sc_time(1, SC_NS), 10, 4}; }

TEST(Interconnect, RoutesTheAddressMapAndRejectsHoles) {
  trace::Stats stats;
  arch::HwConfig cfg;
  cfg.hbm.capacity_gib = 1;
  cfg.sbuf.partitions = 8;
  cfg.sbuf.partition_kib = 1;
  cfg.psum.partitions = 8;
  cfg.psum.banks = 1;
  cfg.psum.bank_kib = 1;
  cfg.sync.semaphores = 4;
  const arch::AddressMap map(cfg);
  arch::HbmConfig hbm_cfg;
  hbm_cfg.capacity_gib = 1;
  hbm_cfg.bandwidth_gbps = 64;
  hbm_cfg.latency_ns = 100;
  hbm_cfg.channels = 4;
  core::Interconnect ic("ic", map);
  memory::Hbm hbm("hbm", hbm_cfg, stats);
  memory::PartitionedMemory sbuf("sbuf", on_chip_params(), stats);
  memory::PartitionedMemory psum("psum", on_chip_params(), stats);
  core::Semaphores sems("sems", 4, sc_time(5, SC_NS), stats);
  ic.to_hbm.bind(hbm.socket);
  ic.to_sbuf.bind(sbuf.socket);
  ic.to_psum.bind(psum.socket);
  ic.to_semaphores.bind(sems.socket);
  Initiator init("init");
  init.socket.bind(ic.target);
  std::vector<tlm::tlm_response_status> status;
  init.body = [&](Initiator& i) {
    std::uint32_t v = 3;
    auto* p = reinterpret_cast<std::uint8_t*>(&v);
    status.push_back(i.transport(tlm::TLM_WRITE_COMMAND, map.sbuf_address(2, 16), p, 4).second);
    status.push_back(i.transport(tlm::TLM_WRITE_COMMAND, map.psum_address(1, 0), p, 4).second);
    status.push_back(i.transport(tlm::TLM_WRITE_COMMAND, map.semaphore_address(2), p, 4).second);
    status.push_back(i.transport(tlm::TLM_WRITE_COMMAND, map.semaphore_address(2), p, 4).second);
    status.push_back(i.transport(tlm::TLM_WRITE_COMMAND, arch::kSbufBase + 8 * 1024, p, 4).second);  // past SBUF
    status.push_back(i.transport(tlm::TLM_WRITE_COMMAND, (1ull << 30) - 2, p, 4).second);            // straddles HBM end
  };
  sc_core::sc_start();
  ASSERT_EQ(status.size(), 6u);
  EXPECT_EQ(status[0], tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(status[1], tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(status[2], tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(status[4], tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(status[5], tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(sbuf.at(2, 16, 1)[0], 3);
  EXPECT_EQ(psum.at(1, 0, 1)[0], 3);
  EXPECT_EQ(sems.value(2), 6u);  // two writes of 3 add up

  // The direct routes a fast DMA engine takes (Interconnect::direct): each
  // local region's own target, its addresses relative to the region's base,
  // as b_transport forwards them.
  const std::pair<arch::Region, std::uint64_t> local[] = {{arch::Region::Sbuf, map.sbuf_address(3, 8)},
                                                          {arch::Region::Psum, map.psum_address(2, 4)},
                                                          {arch::Region::Semaphore, map.semaphore_address(1)},
                                                          {arch::Region::Hbm, arch::kHbmBase + 4096}};
  for (const auto& [region, address] : local) {
    ASSERT_EQ(map.region_of(address, 4), region);
    const core::Interconnect::Direct d = ic.direct(region);
    ASSERT_NE(d.target, nullptr);
    std::uint32_t v = 5;
    tlm::tlm_generic_payload t;
    t.set_command(tlm::TLM_WRITE_COMMAND);
    t.set_address(address - d.base);
    t.set_data_ptr(reinterpret_cast<std::uint8_t*>(&v));
    t.set_data_length(4);
    t.set_streaming_width(4);
    t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_time delay = sc_core::SC_ZERO_TIME;
    d.target->b_transport(t, delay);
    EXPECT_EQ(t.get_response_status(), tlm::TLM_OK_RESPONSE) << static_cast<int>(region);
  }
  EXPECT_EQ(sbuf.at(3, 8, 1)[0], 5);
  EXPECT_EQ(psum.at(2, 4, 1)[0], 5);
  EXPECT_EQ(sems.value(1), 5u);
  std::uint8_t byte = 0;
  hbm.backdoor_read(4096, &byte, 1);
  EXPECT_EQ(byte, 5);
  EXPECT_EQ(ic.direct(arch::Region::Peer).target, nullptr);
  EXPECT_EQ(ic.direct(arch::Region::None).target, nullptr);
}

}  // namespace
}  // namespace tessera
