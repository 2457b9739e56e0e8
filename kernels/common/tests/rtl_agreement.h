// Whole-kernel agreement between the rtl fidelity (Verilated tensor and DMA
// engines) and tlm (their fast models): the end of the run to the cycle.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace tessera::kernels::agreement {

// Checks the current test's rtl and tlm end times: equal to the picosecond.
// Every kernel run agrees exactly (docs/cosim.md, "Whole kernels"); a
// difference is a bug in one of the two models, to find with the access logs
// of both (TESSERA_DMA_BRIDGE_LOG=1), not a tolerance to widen.
inline void expect_rtl_matches_tlm(double rtl_ns, double tlm_ns) {
  ::testing::Test::RecordProperty("rtl_ns", std::to_string(rtl_ns));
  ::testing::Test::RecordProperty("tlm_ns", std::to_string(tlm_ns));
  EXPECT_EQ(rtl_ns, tlm_ns) << "rtl " << rtl_ns << " ns, tlm " << tlm_ns << " ns";
}

}  // namespace tessera::kernels::agreement
