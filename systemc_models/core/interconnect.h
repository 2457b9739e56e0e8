// Routes the device address map (arch/address_map.h) to HBM, SBUF, PSUM and
// the semaphores, and on a chip the other cores' SBUF and semaphores to the
// chip's fabric (core/fabric.h). Any number of initiators (sequencers, DMA
// engines, the fabric delivering other cores' requests) bind to the one
// target socket; an unmapped address, or a peer address from an initiator
// with no path to the fabric, gets TLM_ADDRESS_ERROR_RESPONSE.
#pragma once

#include "arch/address_map.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <memory>
#include <vector>

namespace tessera::core {

class Interconnect : public sc_core::sc_module {
public:
  tlm_utils::multi_passthrough_target_socket<Interconnect> target;
  tlm_utils::simple_initiator_socket<Interconnect> to_hbm;
  tlm_utils::simple_initiator_socket<Interconnect> to_sbuf;
  tlm_utils::simple_initiator_socket<Interconnect> to_psum;
  tlm_utils::simple_initiator_socket<Interconnect> to_semaphores;

  // Only on a chip (`fabric_port`): to the chip's fabric, for other cores' addresses.
  std::unique_ptr<tlm_utils::simple_initiator_socket<Interconnect>> to_fabric;

  Interconnect(sc_core::sc_module_name name, const arch::AddressMap& map, bool fabric_port = false);

  // Binds an initiator to `target`; `reaches_peers`: its requests for other
  // cores' addresses go to the fabric (a DMA engine below chip.peer_dma_engines).
  template <typename Socket>
  void bind_initiator(Socket& socket, bool reaches_peers) {
    socket.bind(target);
    reaches_peers_.push_back(reaches_peers);
  }

  // Where requests for a local region go: the target, and the base their
  // addresses are made relative to. For an initiator that routes its own
  // requests with map() (the fast DMA engines: the crossing of this module's
  // socket and switch was about 3 % of a large GEMM's instructions). This
  // module forwards such a request to that target with nothing changed but
  // its address, so both ways reach the same target with the same request.
  // No target for a peer (the fabric's path depends on the initiator) or an
  // unmapped region. Valid once binding is complete (the simulation started).
  struct Direct {
    tlm::tlm_fw_transport_if<>* target = nullptr;
    std::uint64_t base = 0;
  };
  Direct direct(arch::Region region);
  const arch::AddressMap& map() const { return map_; }

private:
  void b_transport(int initiator, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  unsigned transport_dbg(int initiator, tlm::tlm_generic_payload& trans);
  tlm_utils::simple_initiator_socket<Interconnect>* route(int initiator, tlm::tlm_generic_payload& trans,
                                                          std::uint64_t& base);
  // The socket to a local region's target, and the base its addresses are relative to; null for the others.
  tlm_utils::simple_initiator_socket<Interconnect>* local(arch::Region region, std::uint64_t& base);

  arch::AddressMap map_;
  std::vector<bool> reaches_peers_;  // by initiator, in binding order (bind_initiator); others: no
};

}  // namespace tessera::core
