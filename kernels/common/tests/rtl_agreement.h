// Whole-kernel agreement between the rtl fidelity (Verilated tensor and DMA
// engines) and tlm (their fast models): the end of the run to the cycle.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

namespace tessera::kernels::agreement {

// The runs whose rtl and tlm end times still differ: by 8 to 152 ns (at most
// 0.43 %), all of them kernels whose DMAs mix many small or strided
// descriptors across queues (docs/cosim.md, "Whole kernels"). Not explained
// yet; they are held within 1 % until they are. Every other run agrees exactly.
inline const std::set<std::string>& known_rtl_tlm_differences() {
  static const std::set<std::string> runs = {
      "Shapes/GemmRtlTest.RtlMatchesTlmCyclesAndTheReference/naive_tiny_21x100x37",
      "Shapes/GemmRtlTest.RtlMatchesTlmCyclesAndTheReference/naive_tiny_40x130x24",
      "Shapes/GemmRtlTest.RtlMatchesTlmCyclesAndTheReference/naive_small_33x40x65",
      "Shapes/GemmRtlTest.RtlMatchesTlmCyclesAndTheReference/fully_optimized_tiny_21x100x37",
      "Shapes/GemmRtlTest.RtlMatchesTlmCyclesAndTheReference/fully_optimized_tiny_40x130x24",
      "Elementwise/KernelRtlAgrees.WithTlmAndTheReference/gelu_tiny_C41_R37_F64",
      "Shapes/AttentionRtlTest.RtlMatchesTlmAndTheReference/naive_tiny_D13_H2_S37",
      "Shapes/AttentionRtlTest.RtlMatchesTlmAndTheReference/naive_tiny_D8_H1_S80",
  };
  return runs;
}

// Checks the current test's rtl and tlm end times: equal, or for a known
// difference within 1 % (and still different, so the list stays true).
inline void expect_rtl_matches_tlm(double rtl_ns, double tlm_ns) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = std::string(info->test_suite_name()) + "." + info->name();
  ::testing::Test::RecordProperty("rtl_ns", std::to_string(rtl_ns));
  ::testing::Test::RecordProperty("tlm_ns", std::to_string(tlm_ns));
  if (known_rtl_tlm_differences().count(name) == 0) {
    EXPECT_EQ(rtl_ns, tlm_ns) << "rtl " << rtl_ns << " ns, tlm " << tlm_ns << " ns";
    return;
  }
  EXPECT_LE(std::abs(rtl_ns - tlm_ns), 0.01 * tlm_ns) << "rtl " << rtl_ns << " ns, tlm " << tlm_ns << " ns";
  EXPECT_NE(rtl_ns, tlm_ns) << name << " now agrees exactly: take it off known_rtl_tlm_differences()";
}

}  // namespace tessera::kernels::agreement
