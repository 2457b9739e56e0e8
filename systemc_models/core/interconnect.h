// Routes the device address map (arch/address_map.h) to HBM, SBUF, PSUM and
// the semaphores. Any number of initiators (sequencers, DMA engines) bind to
// the one target socket; an unmapped address gets TLM_ADDRESS_ERROR_RESPONSE.
#pragma once

#include "arch/address_map.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

namespace tessera::core {

class Interconnect : public sc_core::sc_module {
public:
  tlm_utils::multi_passthrough_target_socket<Interconnect> target;
  tlm_utils::simple_initiator_socket<Interconnect> to_hbm;
  tlm_utils::simple_initiator_socket<Interconnect> to_sbuf;
  tlm_utils::simple_initiator_socket<Interconnect> to_psum;
  tlm_utils::simple_initiator_socket<Interconnect> to_semaphores;

  Interconnect(sc_core::sc_module_name name, const arch::AddressMap& map);

private:
  void b_transport(int initiator, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  unsigned transport_dbg(int initiator, tlm::tlm_generic_payload& trans);
  tlm_utils::simple_initiator_socket<Interconnect>* route(tlm::tlm_generic_payload& trans, std::uint64_t& base);

  arch::AddressMap map_;
};

}  // namespace tessera::core
