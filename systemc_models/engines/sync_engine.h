// The sync engine: a sequencer with no datapath, for semaphore and DMA-trigger
// streams that should not hold up a compute engine.
#pragma once

#include "core/engine.h"

#include <stdexcept>

namespace tessera::engines {

class SyncEngine : public core::Engine {
public:
  SyncEngine(sc_core::sc_module_name name, core::CoreContext& ctx)
      : Engine(name, arch::Engine::Sync, ctx.cfg.vector.clock_ghz, ctx) {}

protected:
  sc_core::sc_time execute(const arch::Instruction&) override {
    throw std::runtime_error("the sync engine runs control instructions only");
  }
};

}  // namespace tessera::engines
