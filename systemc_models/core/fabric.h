// The core-to-core path of a chip: every core's interconnect sends the
// requests it gets for another core's SBUF or semaphores (the peer windows
// of arch/address_map.h) here, and the fabric delivers them to that core's
// interconnect. Each core has one port into the fabric, of
// chip.core_link_bandwidth_gbps in each direction: a transfer from core i
// to core j books i's outgoing and j's incoming direction (time bins, as an
// HBM channel does, memory/time_bins.h), so two cores sending to one
// receiver, or one core sending to two, share the port; then it takes
// chip.core_link_latency_ns to arrive. docs/multicore.md, "Between cores".
#pragma once

#include "arch/address_map.h"
#include "arch/config.h"
#include "core/core_context.h"
#include "memory/time_bins.h"
#include "trace/stats.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <memory>
#include <string>
#include <vector>

namespace tessera::core {

class Interconnect;
class Semaphores;

class ChipFabric : public sc_core::sc_module {
public:
  // Core i's interconnect binds here i-th (attach).
  tlm_utils::multi_passthrough_target_socket<ChipFabric> socket;

  ChipFabric(sc_core::sc_module_name name, const arch::HwConfig& cfg, std::size_t cores, trace::Stats& stats);
  ~ChipFabric() override;

  // Connects core `index` (attached in order 0, 1, ...): its interconnect's
  // fabric port to the fabric, the fabric to its interconnect, and its
  // semaphores for SemSignal instructions of the other cores.
  void attach(std::size_t index, Interconnect& interconnect, Semaphores& semaphores);
  // What core `index`'s sequencers use for SemSignal.
  PeerSignals& signals(std::size_t index);

  // Each core's port: bytes through each direction and the time they kept it busy.
  struct PortStats : trace::Group {
    PortStats(Group& fabric, std::size_t core, double gbps);
    trace::Scalar bytes_sent, bytes_received, signals_sent;
    trace::Formula send_busy_ns, receive_busy_ns;
  };
  const PortStats& port_stats(std::size_t core) const { return *stats_.at(core); }

private:
  class Port;
  void b_transport(int from, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  // When `bytes` sent from core `from` to core `to` at `start` have arrived.
  sc_core::sc_time move(std::size_t from, std::size_t to, std::uint64_t bytes, const sc_core::sc_time& start);
  std::string signal(std::size_t from, std::uint64_t address, std::uint32_t value);

  arch::AddressMap map_;
  std::size_t cores_;
  sc_core::sc_time latency_;
  std::vector<std::unique_ptr<tlm_utils::simple_initiator_socket<ChipFabric>>> to_core_;
  std::vector<Semaphores*> semaphores_;
  memory::TimeBins sending_, receiving_;  // the cores' ports, one direction each, a channel a core
  std::vector<std::unique_ptr<Port>> ports_;
  trace::Group group_;
  std::vector<std::unique_ptr<PortStats>> stats_;
};

}  // namespace tessera::core
