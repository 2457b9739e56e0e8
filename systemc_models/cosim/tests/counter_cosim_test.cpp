// Proves the Verilator -> SystemC -> GoogleTest chain end to end: the RTL
// counter primitive, Verilated as an SC_MODULE, counts pulses that a SystemC
// module drives through sc_signals, and the test checks simulated time.
#include "Vtsr_counter.h"

#include <gtest/gtest.h>
#include <systemc>

namespace {

using namespace sc_core;

// Drives `pulses` one-cycle increment pulses, one every other clock, then stops.
SC_MODULE(PulseSource) {
  sc_in<bool> clk;
  sc_out<bool> incr;
  sc_out<bool> clear;
  sc_out<bool> rst_n;
  int pulses = 0;
  sc_event done;

  SC_CTOR(PulseSource) { SC_THREAD(drive); }

  void drive() {
    rst_n.write(false);
    incr.write(false);
    clear.write(false);
    wait(clk.negedge_event());
    rst_n.write(true);
    for (int i = 0; i < pulses; ++i) {
      wait(clk.negedge_event());
      incr.write(true);
      wait(clk.negedge_event());
      incr.write(false);
    }
    wait(clk.negedge_event());
    done.notify(SC_ZERO_TIME);
  }
};

TEST(CosimCounter, CountsPulsesFromSystemCModuleInSimulatedTime) {
  sc_clock clk("clk", 1, SC_NS);
  sc_signal<bool> incr("incr"), clear("clear"), rst_n("rst_n"), saturated("saturated");
  sc_signal<uint32_t> count("count");

  Vtsr_counter dut("dut");
  dut.clk_i(clk);
  dut.rst_ni(rst_n);
  dut.clear_i(clear);
  dut.incr_i(incr);
  dut.count_o(count);
  dut.saturated_o(saturated);

  PulseSource src("src");
  src.pulses = 37;
  src.clk(clk);
  src.incr(incr);
  src.clear(clear);
  src.rst_n(rst_n);

  sc_start(SC_ZERO_TIME);
  const sc_time start = sc_time_stamp();
  sc_start(200, SC_NS);

  EXPECT_EQ(count.read(), 37u);
  EXPECT_FALSE(saturated.read());
  EXPECT_EQ(sc_time_stamp(), start + sc_time(200, SC_NS));
}

}  // namespace
