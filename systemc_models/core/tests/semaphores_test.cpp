// The semaphores, driven by engine-like SC_THREADs and through their TLM
// socket as a DMA engine reaches them: waits block until the value is
// reached and wake `wake_latency` later (also when reached in the wait's own
// picosecond, in either order); a write adds its value when its
// annotated delay has passed; waiters still blocked are listed for deadlock
// reports.
#include "core/semaphores.h"

#include "testing/process.h"
#include "testing/tlm_initiator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <systemc>

#include <cstring>

namespace tessera {
namespace {

using sc_core::sc_time;
using sc_core::SC_NS;
using testing::Initiator;
using testing::Process;  // engine-like: reaches the semaphores through their methods

TEST(Semaphores, AWaitBlocksUntilTheValueIsReachedAndWakesAfterTheLatency) {
  trace::Stats stats;
  core::Semaphores sems("semaphores", 4, sc_time(5, SC_NS), stats);
  Process waiter("waiter"), signaller("signaller");
  Initiator unused("unused");  // SystemC elaborates only with the socket bound
  unused.socket.bind(sems.socket);
  sc_time woke, satisfied_at_once;
  waiter.body = [&] {
    sems.wait_at_least(1, 2, "waiter");
    woke = sc_core::sc_time_stamp();
    sems.wait_at_least(1, 2, "waiter");  // already there: no wait, no latency
    satisfied_at_once = sc_core::sc_time_stamp();
  };
  signaller.body = [&] {
    sc_core::wait(10, SC_NS);
    sems.increment(1, 1);
    sc_core::wait(10, SC_NS);
    sems.increment(1, 1);
  };
  sc_core::sc_start();
  EXPECT_EQ(woke, sc_time(25, SC_NS));  // reached at 20, plus the wake latency
  EXPECT_EQ(satisfied_at_once, woke);
  EXPECT_EQ(sems.value(1), 2u);
  EXPECT_EQ(sems.stats().increments.value(), 2);
  EXPECT_EQ(sems.stats().waits.value(), 1);
}

// An increment and a wait in the same picosecond: the wait sees the value
// the picosecond began with, so the waiter wakes a latency after the
// increment whichever of the two SystemC runs first (here forced by a delta
// cycle each way).
TEST(Semaphores, AWaitInTheIncrementsPicosecondWakesAfterTheLatencyInEitherOrder) {
  trace::Stats stats;
  core::Semaphores first("increment_first", 4, sc_time(5, SC_NS), stats),
      second("increment_second", 4, sc_time(5, SC_NS), stats);
  Initiator unused_a("unused_a"), unused_b("unused_b");
  unused_a.socket.bind(first.socket);
  unused_b.socket.bind(second.socket);
  Process sig_a("sig_a"), wait_a("wait_a"), sig_b("sig_b"), wait_b("wait_b");
  sc_time woke_a, woke_b;
  sig_a.body = [&] {
    sc_core::wait(10, SC_NS);
    first.increment(0, 1);
  };
  wait_a.body = [&] {
    sc_core::wait(10, SC_NS);
    sc_core::wait(sc_core::SC_ZERO_TIME);  // after the increment
    first.wait_at_least(0, 1, "wait_a");
    woke_a = sc_core::sc_time_stamp();
  };
  sig_b.body = [&] {
    sc_core::wait(10, SC_NS);
    sc_core::wait(sc_core::SC_ZERO_TIME);  // after the wait began
    second.increment(0, 1);
  };
  wait_b.body = [&] {
    sc_core::wait(10, SC_NS);
    second.wait_at_least(0, 1, "wait_b");
    woke_b = sc_core::sc_time_stamp();
  };
  sc_core::sc_start();
  EXPECT_EQ(woke_a, sc_time(15, SC_NS));
  EXPECT_EQ(woke_b, sc_time(15, SC_NS));
  EXPECT_EQ(first.stats().waits.value(), 1);
  EXPECT_EQ(second.stats().waits.value(), 1);
}

TEST(Semaphores, AWriteAddsItsValueWhenItsDelayHasPassed) {
  trace::Stats stats;
  core::Semaphores sems("semaphores", 4, sc_time(5, SC_NS), stats);
  Initiator dma("dma");
  Process waiter("waiter");
  sc_time write_delay, woke;
  std::uint32_t read_back = 0;
  tlm::tlm_response_status read_status = tlm::TLM_INCOMPLETE_RESPONSE;
  dma.socket.bind(sems.socket);
  dma.body = [&](Initiator& i) {
    std::uint32_t v = 3;
    sc_core::wait(10, SC_NS);
    // A loosely timed initiator: the write lands 40 ns after it is sent.
    tlm::tlm_generic_payload t;
    t.set_command(tlm::TLM_WRITE_COMMAND);
    t.set_address(2 * 4);
    t.set_data_ptr(reinterpret_cast<std::uint8_t*>(&v));
    t.set_data_length(4);
    t.set_streaming_width(4);
    sc_time delay(40, SC_NS);
    i.socket->b_transport(t, delay);
    write_delay = delay;
    sc_core::wait(100, SC_NS);
    std::uint8_t bytes[4];
    read_status = i.transport(tlm::TLM_READ_COMMAND, 2 * 4, bytes, 4).second;
    std::memcpy(&read_back, bytes, 4);
  };
  waiter.body = [&] {
    sems.wait_at_least(2, 3, "waiter");
    woke = sc_core::sc_time_stamp();
  };
  sc_core::sc_start();
  EXPECT_EQ(write_delay, sc_time(45, SC_NS));  // the target adds its latency
  EXPECT_EQ(woke, sc_time(55, SC_NS));         // landed at 50, plus the wake latency
  EXPECT_EQ(read_status, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(read_back, 3u);
}

TEST(Semaphores, MisalignedWideOrOutOfRangeAccessesAreAddressErrors) {
  trace::Stats stats;
  core::Semaphores sems("semaphores", 4, sc_time(5, SC_NS), stats);
  Initiator init("init");
  init.socket.bind(sems.socket);
  std::vector<tlm::tlm_response_status> status;
  init.body = [&](Initiator& i) {
    std::uint8_t bytes[8] = {1, 0, 0, 0, 1, 0, 0, 0};
    status.push_back(i.transport(tlm::TLM_WRITE_COMMAND, 2, bytes, 4).second);      // misaligned
    status.push_back(i.transport(tlm::TLM_WRITE_COMMAND, 0, bytes, 8).second);      // two registers at once
    status.push_back(i.transport(tlm::TLM_WRITE_COMMAND, 4 * 4, bytes, 4).second);  // past the last
  };
  sc_core::sc_start();
  EXPECT_THAT(status, ::testing::Each(tlm::TLM_ADDRESS_ERROR_RESPONSE));
  for (std::size_t s = 0; s < sems.size(); ++s) EXPECT_EQ(sems.value(s), 0u);
}

TEST(Semaphores, WaitersStillBlockedAreListedForTheDeadlockReport) {
  trace::Stats stats;
  core::Semaphores sems("semaphores", 4, sc_time(5, SC_NS), stats);
  Process a("a"), b("b");
  Initiator unused("unused");
  unused.socket.bind(sems.socket);
  a.body = [&] { sems.wait_at_least(0, 1, "core.vector"); };
  b.body = [&] {
    sems.increment(3, 1);
    sems.wait_at_least(3, 2, "core.tensor");
  };
  sc_core::sc_start();
  EXPECT_THAT(sems.blocked_waiters(), ::testing::ElementsAre("core.tensor: sem[3] >= 2 (value now 1)",
                                                             "core.vector: sem[0] >= 1 (value now 0)"));
}

}  // namespace
}  // namespace tessera
