// The GpSimd engine: index generation (iota), reductions across partitions,
// copies. It cannot reach PSUM (the ISA's validation rejects that).
#pragma once

#include "engines/elementwise_engine.h"

namespace tessera::engines {

class GpSimdEngine : public ElementwiseEngine {
public:
  GpSimdEngine(sc_core::sc_module_name name, core::CoreContext& ctx);

protected:
  sc_core::sc_time execute(const arch::Instruction& in) override;
};

}  // namespace tessera::engines
