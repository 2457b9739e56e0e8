// The numerics helpers the kernel references share, and the registry entries
// of the library's kernels (default shapes, variants).
#include "common/bounds.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::kernels {
namespace {

TEST(Bounds, GammaIsTheCompoundedRoundingBound) {
  const double u = unit_roundoff(DType::Fp32);
  EXPECT_EQ(u, std::ldexp(1.0, -24));
  EXPECT_EQ(unit_roundoff(DType::Bf16), std::ldexp(1.0, -8));
  EXPECT_DOUBLE_EQ(gamma(3), 3 * u / (1 - 3 * u));
  EXPECT_EQ(gamma(0), 0);
  EXPECT_TRUE(std::isinf(gamma(std::int64_t{1} << 25)));
}

TEST(Bounds, CheckWithinReportsTheWorstElementOverItsBound) {
  const auto where = [](std::size_t i) { return "out[" + std::to_string(i) + "]"; };
  NumericsCheck c = check_within({1.0f, 2.0f, 3.0f}, {1.0, 2.1, 3.0}, {0.0, 0.2, 0.0}, where);
  EXPECT_TRUE(c.correct);
  c = check_within({1.0f, 2.0f, 3.75f}, {1.0, 2.1, 3.0}, {0.0, 0.2, 1.0}, where);
  EXPECT_TRUE(c.correct);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 0.75);  // the worst ratio: 0.75 of 1.0 (element 1: 0.5)
  EXPECT_DOUBLE_EQ(c.tolerance, 1.0);
  c = check_within({1.0f, 2.5f, 3.0f}, {1.0, 2.1, 3.0}, {0.0, 0.2, 0.0}, where);
  EXPECT_FALSE(c.correct);
  EXPECT_EQ(c.detail.rfind("out[1] = 2.5, reference 2.1, bound 0.2", 0), 0u) << c.detail;
  c = check_within({NAN}, {1.0}, {1.0}, where);
  EXPECT_FALSE(c.correct);
  c = check_within({1.0f}, {1.0, 2.0}, {0.0, 0.0}, where);
  EXPECT_FALSE(c.correct);
  EXPECT_EQ(c.detail, "1 results for 2 expected");
}

TEST(Registry, LibraryKernelsHaveVariantsAndDefaultShapes) {
  for (const char* name : {"elementwise", "transpose", "softmax", "layernorm", "rmsnorm", "reduce", "cumsum"}) {
    const KernelSpec* k = find_kernel(name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_FALSE(k->variants.empty()) << name;
    EXPECT_FALSE(k->shape.empty()) << name;
    for (const auto& p : k->shape) EXPECT_GT(p.default_value, 0) << name << " " << p.name;
  }
}

}  // namespace
}  // namespace tessera::kernels
