#include "core/interconnect.h"

namespace tessera::core {

Interconnect::Interconnect(sc_core::sc_module_name name, const arch::AddressMap& map)
    : sc_module(name), target("target"), to_hbm("to_hbm"), to_sbuf("to_sbuf"), to_psum("to_psum"),
      to_semaphores("to_semaphores"), map_(map) {
  target.register_b_transport(this, &Interconnect::b_transport);
}

void Interconnect::b_transport(int, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const std::uint64_t address = trans.get_address();
  const std::uint64_t length = trans.get_data_length();
  std::uint64_t base = 0;
  tlm_utils::simple_initiator_socket<Interconnect>* out = nullptr;
  switch (map_.region_of(address, length)) {
    case arch::Region::Hbm: base = arch::kHbmBase; out = &to_hbm; break;
    case arch::Region::Sbuf: base = arch::kSbufBase; out = &to_sbuf; break;
    case arch::Region::Psum: base = arch::kPsumBase; out = &to_psum; break;
    case arch::Region::Semaphore: base = arch::kSemaphoreBase; out = &to_semaphores; break;
    case arch::Region::None:
      trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
  }
  // Targets see region-relative addresses; the initiator gets its own back.
  trans.set_address(address - base);
  (*out)->b_transport(trans, delay);
  trans.set_address(address);
}

}  // namespace tessera::core
