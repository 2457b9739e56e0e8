// A test process: runs `body` in an SC_THREAD, so that a test can act at a
// time (and delta cycle) it chooses, as an engine or a sequencer would.
#pragma once

#include <systemc>

#include <functional>

namespace tessera::testing {

struct Process : sc_core::sc_module {
  std::function<void()> body;
  SC_HAS_PROCESS(Process);
  explicit Process(sc_core::sc_module_name n) : sc_module(n) { SC_THREAD(run); }
  void run() {
    if (body) body();
  }
};

}  // namespace tessera::testing
