// A test initiator: runs `body` in an SC_THREAD with a socket to bind to the
// target under test, and sends blocking transactions through it.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <functional>
#include <utility>

namespace tessera::testing {

struct Initiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Initiator> socket;
  std::function<void(Initiator&)> body;
  SC_HAS_PROCESS(Initiator);
  explicit Initiator(sc_core::sc_module_name n) : sc_module(n), socket("socket") { SC_THREAD(run); }
  void run() {
    if (body) body(*this);
  }

  // One blocking transaction; returns the annotated delay and the response.
  std::pair<sc_core::sc_time, tlm::tlm_response_status> transport(tlm::tlm_command cmd, std::uint64_t address,
                                                                  std::uint8_t* data, unsigned length) {
    tlm::tlm_generic_payload t;
    t.set_command(cmd);
    t.set_address(address);
    t.set_data_ptr(data);
    t.set_data_length(length);
    t.set_streaming_width(length);
    t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    socket->b_transport(t, delay);
    return {delay, t.get_response_status()};
  }
};

}  // namespace tessera::testing
