// The vector engine: element-wise tensor-tensor and tensor-scalar operations,
// free-axis reductions, copies, memset and select; fp32 internal math,
// rounding on store; timed by ElementwiseEngine (elements / lanes x cost per
// element, behind a front end that pipelines the static overhead).
#pragma once

#include "engines/elementwise_engine.h"

namespace tessera::engines {

class VectorEngine : public ElementwiseEngine {
public:
  VectorEngine(sc_core::sc_module_name name, core::CoreContext& ctx);

protected:
  sc_core::sc_time execute(const arch::Instruction& in) override;
};

}  // namespace tessera::engines
