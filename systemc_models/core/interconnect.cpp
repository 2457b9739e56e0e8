#include "core/interconnect.h"

namespace tessera::core {

Interconnect::Interconnect(sc_core::sc_module_name name, const arch::AddressMap& map, bool fabric_port)
    : sc_module(name), target("target"), to_hbm("to_hbm"), to_sbuf("to_sbuf"), to_psum("to_psum"),
      to_semaphores("to_semaphores"), map_(map) {
  if (fabric_port) to_fabric = std::make_unique<tlm_utils::simple_initiator_socket<Interconnect>>("to_fabric");
  target.register_b_transport(this, &Interconnect::b_transport);
  target.register_transport_dbg(this, &Interconnect::transport_dbg);
}

tlm_utils::simple_initiator_socket<Interconnect>* Interconnect::local(arch::Region region, std::uint64_t& base) {
  switch (region) {
    case arch::Region::Hbm: base = arch::kHbmBase; return &to_hbm;
    case arch::Region::Sbuf: base = arch::kSbufBase; return &to_sbuf;
    case arch::Region::Psum: base = arch::kPsumBase; return &to_psum;
    case arch::Region::Semaphore: base = arch::kSemaphoreBase; return &to_semaphores;
    case arch::Region::Peer:
    case arch::Region::None: break;
  }
  return nullptr;
}

tlm_utils::simple_initiator_socket<Interconnect>* Interconnect::route(int initiator, tlm::tlm_generic_payload& trans,
                                                                      std::uint64_t& base) {
  const arch::Region region = map_.region_of(trans.get_address(), trans.get_data_length());
  if (region != arch::Region::Peer) return local(region, base);
  // The fabric takes the whole peer address: it names the core.
  const auto i = static_cast<std::size_t>(initiator);
  base = 0;
  if (to_fabric && i < reaches_peers_.size() && reaches_peers_[i]) return to_fabric.get();
  return nullptr;
}

Interconnect::Direct Interconnect::direct(arch::Region region) {
  std::uint64_t base = 0;
  auto* out = local(region, base);
  return out ? Direct{out->operator->(), base} : Direct{};
}

void Interconnect::b_transport(int initiator, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  std::uint64_t base = 0;
  auto* out = route(initiator, trans, base);
  if (!out) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  // Targets see region-relative addresses; the initiator gets its own back.
  const std::uint64_t address = trans.get_address();
  trans.set_address(address - base);
  (*out)->b_transport(trans, delay);
  trans.set_address(address);
}

unsigned Interconnect::transport_dbg(int initiator, tlm::tlm_generic_payload& trans) {
  std::uint64_t base = 0;
  auto* out = route(initiator, trans, base);
  if (!out) return 0;
  const std::uint64_t address = trans.get_address();
  trans.set_address(address - base);
  const unsigned n = (*out)->transport_dbg(trans);
  trans.set_address(address);
  return n;
}

}  // namespace tessera::core
