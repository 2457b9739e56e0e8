// The vector engine: element-wise tensor-tensor and tensor-scalar operations,
// free-axis reductions, copies, memset and select; fp32 internal math,
// rounding on store; timed as overhead + elements / lanes x cost.
#pragma once

#include "core/engine.h"

namespace tessera::engines {

class VectorEngine : public core::Engine {
public:
  VectorEngine(sc_core::sc_module_name name, core::CoreContext& ctx);

protected:
  sc_core::sc_time execute(const arch::Instruction& in) override;
};

}  // namespace tessera::engines
