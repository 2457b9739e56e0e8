#include "arch/tensor_timing.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tessera::arch {
namespace {

using Op = TensorOp;

TEST(TensorTiming, SinglePairIsLoadThenStreamThenDrain) {
  // One column per beat: the load takes M cycles.
  const auto one = schedule({8, 8, 4, 1}, {{Op::LoadStationary, 5, 0}, {Op::MultiplyMoving, 0, 7}});
  EXPECT_EQ(one.accept[0], 0);
  EXPECT_EQ(one.accept[1], 5);
  EXPECT_EQ(one.end, 5 + 7 + 8 + 8);
  // Four columns per beat: ceil(5 / 4) = 2 cycles.
  const auto four = schedule({8, 8, 4, 4}, {{Op::LoadStationary, 5, 0}, {Op::MultiplyMoving, 0, 7}});
  EXPECT_EQ(four.accept[1], 2);
  EXPECT_EQ(four.end, 2 + 7 + 8 + 8);
}

TEST(TensorTiming, ScheduleAgreesWithClosedFormForBackToBackPairs) {
  int checked = 0;
  for (std::int64_t w : {1, 3, 4})
    for (std::int64_t ii : {1, 4, 64})
      for (std::int64_t m : {1, 3, 8, 128})
        for (std::int64_t n : {1, 2, 9, 64, 512})
          for (std::int64_t pairs : {1, 2, 5, 9}) {
            const TensorTimingParams p{128, 128, ii, w};
            std::vector<TensorInstr> prog;
            for (int i = 0; i < pairs; ++i) {
              prog.push_back({Op::LoadStationary, m, 0});
              prog.push_back({Op::MultiplyMoving, 0, n});
            }
            std::int64_t closed = 0;
            try {
              closed = back_to_back_cycles(p, m, n, pairs);
            } catch (const std::domain_error&) {
              EXPECT_LT(ii, 64) << "a v2-like interval is always inside the closed form";
              continue;
            }
            EXPECT_EQ(schedule(p, prog).end, closed)
                << "w " << w << " ii " << ii << " m " << m << " n " << n << " pairs " << pairs;
            ++checked;
          }
  EXPECT_GT(checked, 600);
}

TEST(TensorTiming, ClosedFormRefusesShapesWhoseLoadsWaitForTheirBuffers) {
  // II = 1, M = 128 in 32 beats, N = 9: the fifth load would be accepted 95
  // edges after the first multiply's last injection at the earliest.
  EXPECT_THROW(back_to_back_cycles({128, 128, 1, 4}, 128, 9, 5), std::domain_error);
  EXPECT_NO_THROW(back_to_back_cycles({128, 128, 1, 4}, 128, 9, 4));  // no buffer reused yet
}

TEST(TensorTiming, SteadyStateIsTheDocumentedIssueInterval) {
  // NeuronCore-v2 (128 x 128, II = 64, four columns per beat): one matmul
  // per max(ceil(M / 4) + 1, N, 64) cycles. A full 128-column stationary
  // with N <= 64 runs at the 64-cycle interval (before: 129).
  const TensorTimingParams v2{128, 128, 64, 4};
  for (std::int64_t n : {1, 32, 64})
    EXPECT_EQ(back_to_back_cycles(v2, 128, n, 11) - back_to_back_cycles(v2, 128, n, 10), 64) << "n " << n;
  EXPECT_EQ(back_to_back_cycles(v2, 128, 128, 11) - back_to_back_cycles(v2, 128, 128, 10), 128);
  EXPECT_EQ(back_to_back_cycles(v2, 128, 512, 11) - back_to_back_cycles(v2, 128, 512, 10), 512);
  // Short moving, II of 1: bound by the load, 128 / 4 + 1 cycles.
  EXPECT_EQ(back_to_back_cycles({128, 128, 1, 4}, 128, 1, 4) - back_to_back_cycles({128, 128, 1, 4}, 128, 1, 3), 33);
}

TEST(TensorTiming, InitiationIntervalSpacesMultiplies) {
  const TensorTimingParams p{4, 4, 64, 1};
  const auto s = schedule(p, {{Op::LoadStationary, 4, 0},
                              {Op::MultiplyMoving, 0, 3},
                              {Op::MultiplyMoving, 0, 3}});
  EXPECT_EQ(s.accept[2] - s.accept[1], 64);
}

TEST(TensorTiming, FifthLoadWaitsForTheMultiplyOfItsBuffer) {
  // LS(b0) MM(b0) LS(b1) LS(b2) LS(b3) LS(b0): the last load must wait until
  // the multiply reading buffer 0 has injected its last column.
  const auto one = schedule({4, 4, 1, 1}, {{Op::LoadStationary, 2, 0},
                                           {Op::MultiplyMoving, 0, 100},
                                           {Op::LoadStationary, 2, 0},
                                           {Op::LoadStationary, 2, 0},
                                           {Op::LoadStationary, 2, 0},
                                           {Op::LoadStationary, 2, 0}});
  EXPECT_EQ(one.accept[1], 2);
  EXPECT_EQ(one.accept[2], 3);
  EXPECT_EQ(one.accept[4], 7);
  EXPECT_EQ(one.accept[5], 102);
  // Four columns per beat: an 8-column load into buffer 0 also waits
  // 8 - 1 - 2 = 5 edges past that last injection (edge 3), so that its
  // beats do not overtake the moving wave.
  const auto four = schedule({8, 8, 1, 4}, {{Op::LoadStationary, 8, 0},
                                            {Op::MultiplyMoving, 0, 1},
                                            {Op::LoadStationary, 1, 0},
                                            {Op::LoadStationary, 1, 0},
                                            {Op::LoadStationary, 1, 0},
                                            {Op::LoadStationary, 8, 0}});
  EXPECT_EQ(four.accept[1], 2);
  EXPECT_EQ(four.accept[4], 5);
  EXPECT_EQ(four.accept[5], 3 + 5);
}

TEST(TensorTiming, BusyCountsEachCycleOnce) {
  // Overlapped pairs: busy is the span from the first acceptance to the last write.
  const TensorTimingParams p{8, 8, 4, 4};
  std::vector<TensorInstr> prog;
  for (int i = 0; i < 5; ++i) {
    prog.push_back({Op::LoadStationary, 8, 0});
    prog.push_back({Op::MultiplyMoving, 0, 16});
  }
  const auto s = schedule(p, prog);
  EXPECT_EQ(s.busy, s.end);
  EXPECT_EQ(s.multiplying, 5 * 16);
  // A gap with nothing in flight is not busy: LS(4) MM(3) MM(3) at II = 64
  // is in flight over (0, 4], (4, 15] and (68, 79].
  const auto gap = schedule({4, 4, 64, 1}, {{Op::LoadStationary, 4, 0},
                                            {Op::MultiplyMoving, 0, 3},
                                            {Op::MultiplyMoving, 0, 3}});
  EXPECT_EQ(gap.end, 79);
  EXPECT_EQ(gap.busy, 4 + 11 + 11);
  EXPECT_EQ(gap.multiplying, 6);
}

}  // namespace
}  // namespace tessera::arch
