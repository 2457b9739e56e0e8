#include "arch/tensor_timing.h"

#include <gtest/gtest.h>

namespace tessera::arch {
namespace {

using Op = TensorOp;

TEST(TensorTiming, SinglePairIsLoadThenStreamThenDrain) {
  const TensorTimingParams p{8, 8, 4};
  const auto s = schedule(p, {{Op::LoadStationary, 5, 0}, {Op::MultiplyMoving, 0, 7}});
  EXPECT_EQ(s.accept[0], 0);
  EXPECT_EQ(s.accept[1], 5);
  EXPECT_EQ(s.end, 5 + 7 + 8 + 8);
}

TEST(TensorTiming, ScheduleAgreesWithClosedFormForBackToBackPairs) {
  for (std::int64_t ii : {1, 4, 64})
    for (std::int64_t m : {1, 3, 8, 128})
      for (std::int64_t n : {1, 2, 9, 64, 512})
        for (std::int64_t pairs : {1, 2, 5}) {
          const TensorTimingParams p{128, 128, ii};
          std::vector<TensorInstr> prog;
          for (int i = 0; i < pairs; ++i) {
            prog.push_back({Op::LoadStationary, m, 0});
            prog.push_back({Op::MultiplyMoving, 0, n});
          }
          EXPECT_EQ(schedule(p, prog).end, back_to_back_cycles(p, m, n, pairs))
              << "ii " << ii << " m " << m << " n " << n << " pairs " << pairs;
        }
}

TEST(TensorTiming, InitiationIntervalSpacesMultiplies) {
  const TensorTimingParams p{4, 4, 64};
  const auto s = schedule(p, {{Op::LoadStationary, 4, 0},
                              {Op::MultiplyMoving, 0, 3},
                              {Op::MultiplyMoving, 0, 3}});
  EXPECT_EQ(s.accept[2] - s.accept[1], 64);
}

TEST(TensorTiming, SecondLoadIntoABufferWaitsForItsMultiply) {
  // LS(b0) MM(b0) LS(b1) LS(b0): the last load must wait until the multiply
  // reading buffer 0 has injected its last column.
  const TensorTimingParams p{4, 4, 1};
  const auto s = schedule(p, {{Op::LoadStationary, 2, 0},
                              {Op::MultiplyMoving, 0, 100},
                              {Op::LoadStationary, 2, 0},
                              {Op::LoadStationary, 2, 0}});
  EXPECT_EQ(s.accept[1], 2);
  EXPECT_EQ(s.accept[2], 3);
  EXPECT_EQ(s.accept[3], 102);
}

}  // namespace
}  // namespace tessera::arch
