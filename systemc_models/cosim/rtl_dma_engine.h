// The Verilated DMA engine (rtl/dma) as a DmaEngineBase: the RTL is a plain
// Verilated C++ model ticked from an SC_THREAD at the DMA clock, its AXI4
// manager port bridged to TLM b_transport calls on `socket`, its register port
// driven for ring setup and doorbells. See docs/cosim.md.
#pragma once

#include "arch/config.h"
#include "dma/dma_engine.h"
#include "dma/dma_subsystem.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace tessera::cosim {

// What the bridge drives into the RTL for one cycle and what it samples back;
// the Verilated model behind it is chosen by parameters (one class per build).
struct DmaPortIn {
  bool reg_req = false, reg_we = false;
  std::uint32_t reg_addr = 0, reg_wdata = 0;
  bool arready = false, awready = false, wready = false;
  bool rvalid = false, rlast = false;
  std::uint32_t rid = 0, rresp = 0;
  const std::uint8_t* rdata = nullptr;  // data_bytes of beat
  bool bvalid = false;
  std::uint32_t bid = 0, bresp = 0;
};

struct DmaPortOut {
  bool arvalid = false, awvalid = false, wvalid = false, wlast = false, rready = false, bready = false, busy = false,
       moving = false;
  std::uint32_t arid = 0, arlen = 0, awid = 0, awlen = 0;
  std::uint64_t araddr = 0, awaddr = 0, wstrb = 0;
  std::vector<std::uint8_t> wdata;  // filled only when wvalid
  std::uint32_t reg_rdata = 0;      // after the rising edge
};

class DmaRtlPort {
public:
  virtual ~DmaRtlPort() = default;
  virtual void reset() = 0;
  // One clock: drive `in`, sample the outputs that handshake with it, then the rising edge.
  virtual void cycle(const DmaPortIn& in, DmaPortOut& out) = 0;
  // Traces the RTL into the FST `path` from now on, on the simulated time axis
  // in picoseconds (inputs settled at the cycle's start, the clock rising half
  // a period later); cycles outside [from_ps, to_ps] are not written.
  virtual void trace_to(const std::string& path, std::uint64_t from_ps, std::uint64_t to_ps, double period_ps) = 0;
};

// Verilated parameter sets compiled in (systemc_models/cosim/CMakeLists.txt,
// TESSERA_DMA_RTL_VARIANTS), as "DATAxQUEUESxOUTSTANDING".
const std::vector<std::string>& rtl_dma_variants();
// The Verilated engine for a config's dma.* fields; throws, naming the list to
// extend, when that parameter set was not built.
std::unique_ptr<DmaRtlPort> make_dma_rtl_port(const arch::HwConfig& cfg);

class RtlDmaEngine : public dma::DmaEngineBase {
public:
  SC_HAS_PROCESS(RtlDmaEngine);
  RtlDmaEngine(sc_core::sc_module_name name, core::CoreContext& ctx, std::uint32_t queues);

  void configure_queue(std::uint32_t queue, std::uint64_t ring_base, std::uint32_t ring_size) override;
  sc_core::sc_time clock_period() const { return period_; }
  std::uint64_t cycles_ticked() const { return ticks_; }

private:
  struct RegOp {
    std::uint32_t addr, value;
    bool write;
  };
  struct ReadBurst {
    std::uint32_t id, beats, beat = 0;
    std::uint64_t ready_cycle, seq;
    bool error;
    std::vector<std::uint8_t> data;
  };
  // A fetched descriptor whose data reads have not all gone out: the
  // walker takes descriptors in fetch order, one at a time, each as the
  // bursts of its source side (dma/dma_pattern.h), so the first data AR after
  // the one before it is done starts it.
  struct Walking {
    std::uint32_t queue, index;
    std::size_t reads, issued = 0;
  };
  std::deque<Walking> walking_;
  struct WriteBurst {
    std::uint64_t addr;
    std::uint32_t beats, beat = 0;
    std::uint64_t ready_cycle = 0;
    bool data_done = false, error = false;
    std::vector<std::uint8_t> data, strb;
  };

  void run();
  // One DMA clock cycle of the RTL and the bridge; returns after the cycle's time has passed.
  void step(const RegOp* op = nullptr);
  std::uint32_t read_reg(std::uint32_t addr);
  void write_reg_now(std::uint32_t addr, std::uint32_t value);  // before the run: no simulated time
  bool idle_and_caught_up();
  void accept_read(std::uint32_t id, std::uint64_t addr, std::uint32_t beats);
  // Follows the walker through its reads, for starts(): a descriptor fetch
  // (its bytes `data`) joins the walk, a data read advances it.
  void note_walk(std::uint32_t id, std::uint64_t addr, const std::vector<std::uint8_t>& data);
  void finish_write(WriteBurst& w);
  sc_core::sc_time transport(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data, std::uint32_t length,
                             bool& error);
  std::uint64_t cycles_for(const sc_core::sc_time& delay) const;

  core::CoreContext& ctx_;
  sc_core::sc_time period_;
  std::uint32_t data_bytes_, fetch_id_;
  std::unique_ptr<DmaRtlPort> port_;
  std::deque<RegOp> reg_ops_;

  std::uint64_t cycle_ = 0, ticks_ = 0, read_seq_ = 0;
  std::vector<ReadBurst> reads_;
  int r_current_ = -1;  // index into reads_ of the burst whose beats are on R
  std::deque<WriteBurst> writes_;  // AW order; B in that order (one write ID)
  std::uint32_t idle_cycles_ = 0;
  bool log_ = false;
  DmaPortIn in_;
  DmaPortOut out_;

};

// The DMA engine factory for the rtl fidelity; throws if `cfg` needs a
// Verilated parameter set that was not built.
dma::DmaEngineFactory rtl_dma_factory(const arch::HwConfig& cfg);

}  // namespace tessera::cosim
