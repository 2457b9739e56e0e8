// The scalar (activation) engine: dst = f(x * scale + bias) for the ISA's
// table of functions, with an optional per-partition sum of the results.
// fp32 internal math with the C library's functions; rounding on store.
#pragma once

#include "engines/elementwise_engine.h"

namespace tessera::engines {

// The activation functions in fp32, shared with kernel references.
float activation(arch::ActFunc f, float x);

class ScalarEngine : public ElementwiseEngine {
public:
  ScalarEngine(sc_core::sc_module_name name, core::CoreContext& ctx);

protected:
  sc_core::sc_time execute(const arch::Instruction& in) override;
};

}  // namespace tessera::engines
