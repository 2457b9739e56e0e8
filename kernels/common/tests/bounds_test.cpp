// The numerics helpers the kernel references share, and the registry entries
// of the library's kernels (default shapes, variants).
#include "common/bounds.h"
#include "common/kernel.h"
#include "common/reference_matmul.h"
#include "testing/child_process.h"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

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

TEST(Bounds, WorstElementGivesCheckWithinsAnswerOneElementAtATime) {
  const auto where = [](std::size_t i) { return "out[" + std::to_string(i) + "]"; };
  const std::vector<float> got = {1.0f, 2.5f, 3.0f, 2.5f};
  const std::vector<double> expect = {1.0, 2.1, 3.0, 2.1}, bound = {0.0, 0.2, 0.0, 0.2};
  WorstElement w;
  for (std::size_t i = 0; i < got.size(); ++i) w.add(i, got[i], expect[i], bound[i]);
  const NumericsCheck a = w.result(where), b = check_within(got, expect, bound, where);
  EXPECT_FALSE(a.correct);
  EXPECT_EQ(a.detail, b.detail);  // the first of two equal ratios, as check_within
  EXPECT_EQ(a.max_abs_error, b.max_abs_error);
  EXPECT_TRUE(WorstElement().result(where).correct);
}

// Sets an environment variable for one test, and puts it back.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

private:
  const char* name_;
  std::optional<std::string> old_;
};

// Elements whose worst ratio ties across blocks (the first must win, as in
// one pass), with a NaN result and an element past its bound among them.
struct Elements {
  std::vector<float> got;
  std::vector<double> expect, bound;
  explicit Elements(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      got.push_back(static_cast<float>(i % 7) * 0.5f);
      expect.push_back(static_cast<double>(i % 7) * 0.5 + (i % 5 == 3 ? 0.25 : 0.0));
      bound.push_back(i % 11 == 4 ? 0.0 : 0.5);
    }
  }
  void add(std::size_t first, std::size_t last, std::size_t per_block, WorstElement& w) const {
    for (std::size_t i = first * per_block; i < std::min(got.size(), last * per_block); ++i)
      w.add(i, got[i], expect[i], bound[i]);
  }
};

TEST(Bounds, WorstOverBlocksGivesOnePassAnswerForEveryThreadCount) {
  const auto where = [](std::size_t i) { return "out[" + std::to_string(i) + "]"; };
  for (const std::size_t n : {1u, 10u, 97u, 1000u}) {
    Elements e(n);
    e.got[n / 2] = std::nanf("");
    const std::size_t per_block = 8, blocks = (n + per_block - 1) / per_block;
    WorstElement one;
    e.add(0, blocks, per_block, one);
    const NumericsCheck expected = one.result(where);
    for (const char* threads : {"1", "2", "3", "7", "64"}) {
      ScopedEnv env("TESSERA_CHECK_THREADS", threads);
      const NumericsCheck got =
          worst_over_blocks(blocks, [&](std::size_t first, std::size_t last, WorstElement& w) {
            e.add(first, last, per_block, w);
          }).result(where);
      EXPECT_EQ(got.correct, expected.correct) << n << " elements, " << threads << " threads";
      EXPECT_EQ(got.detail, expected.detail) << n << " elements, " << threads << " threads";
      EXPECT_EQ(got.max_abs_error, expected.max_abs_error);
      EXPECT_EQ(got.tolerance, expected.tolerance);
    }
  }
}

TEST(Bounds, WorstOverBlocksTiesGoToTheEarlierBlock) {
  ScopedEnv env("TESSERA_CHECK_THREADS", "4");
  // Every block's element has error / bound = 2: one pass names element 0.
  const WorstElement w = worst_over_blocks(4, [](std::size_t first, std::size_t last, WorstElement& worst) {
    for (std::size_t b = first; b < last; ++b) worst.add(b, 3.0f, 1.0, 1.0);
  });
  const NumericsCheck c = w.result([](std::size_t i) { return "out[" + std::to_string(i) + "]"; });
  EXPECT_FALSE(c.correct);
  EXPECT_EQ(c.detail.rfind("out[0] = 3", 0), 0u) << c.detail;
}

TEST(Bounds, WorstOverBlocksCoversEachBlockOnceAndRethrows) {
  ScopedEnv env("TESSERA_CHECK_THREADS", "3");
  std::vector<int> seen(10, 0);
  worst_over_blocks(10, [&](std::size_t first, std::size_t last, WorstElement&) {
    for (std::size_t b = first; b < last; ++b) ++seen[b];  // ranges are disjoint: no two threads meet here
  });
  EXPECT_EQ(seen, std::vector<int>(10, 1));
  EXPECT_TRUE(worst_over_blocks(0, [](std::size_t, std::size_t, WorstElement&) { FAIL(); })
                  .result([](std::size_t) { return std::string(); })
                  .correct);
  EXPECT_THROW(worst_over_blocks(10,
                                 [](std::size_t first, std::size_t, WorstElement&) {
                                   if (first > 0) throw std::runtime_error("block failed");
                                 }),
               std::runtime_error);
}

TEST(Bounds, CheckThreadsComesFromTheEnvironmentWhenSet) {
  {
    ScopedEnv env("TESSERA_CHECK_THREADS", "3");
    EXPECT_EQ(check_threads(), 3u);
  }
  for (const char* bad : {"0", "-2", "two", "4x"}) {
    ScopedEnv env("TESSERA_CHECK_THREADS", bad);
    try {
      check_threads();
      ADD_FAILURE() << bad << " was taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("TESSERA_CHECK_THREADS=") + bad), std::string::npos)
          << e.what();
    }
  }
  ScopedEnv unset("TESSERA_CHECK_THREADS", "");
  EXPECT_GE(check_threads(), 1u);
}

// A kernel's own check, run once on one thread and again on 3 and 7 (which
// split its blocks mid-head and mid-image), gives the same figures: what a
// block's range holds of its own (a head's packed K^T and V and sums of
// |V|, an image's patches) is made afresh where a range starts.
void expect_same_check_on_every_thread_count(const std::string& kernel, const std::string& variant,
                                             const Shape& shape) {
  const std::string out = test_support::run_in_child([&] {
    setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
    DeviceOptions o;
    o.config = "small";
    o.fidelity = arch::Fidelity::Tlm;
    Device dev(o);
    auto k = instantiate(dev, {kernel, variant, shape, {}, 7, ""}).kernel;
    if (!dev.run(k->build()).ok) return std::string("the run failed");
    std::string figures;
    for (const char* threads : {"1", "3", "7"}) {
      setenv("TESSERA_CHECK_THREADS", threads, 1);
      const NumericsCheck c = k->check();
      figures += fmt::format("{} {:a} {:a} {}\n", c.correct, c.max_abs_error, c.tolerance, c.detail);
    }
    return figures;
  });
  const auto first = out.substr(0, out.find('\n') + 1);
  EXPECT_EQ(out, first + first + first) << out;
  EXPECT_EQ(first.rfind("true ", 0), 0u) << out;
}

TEST(Bounds, AttentionCheckIsTheSameOnEveryThreadCount) {
  // 3 heads of 4 blocks of 64 queries: 7 ranges start mid-head.
  expect_same_check_on_every_thread_count("attention", "flash_causal", {{"S", 256}, {"D", 64}, {"H", 3}});
}

TEST(Bounds, Conv2dCheckIsTheSameOnEveryThreadCount) {
  // 2 images of 3 blocks of 256 pixels (24 x 24 out): ranges start mid-image.
  expect_same_check_on_every_thread_count(
      "conv2d", "blocked",
      {{"N", 2}, {"C", 8}, {"H", 24}, {"W", 24}, {"K", 16}, {"R", 3}, {"S", 3}, {"stride", 1}, {"pad", 1}});
}

// The plain loop the reference products stand for.
void loop(const float* at, const float* b, std::size_t K, std::size_t M, std::size_t N, std::vector<double>& sum,
          std::vector<double>& mag) {
  sum.assign(M * N, 0);
  mag.assign(M * N, 0);
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t k = 0; k < K; ++k) {
        const double p = double{at[k * M + m]} * b[k * N + n];
        sum[m * N + n] += p;
        mag[m * N + n] += std::fabs(p);
      }
}

TEST(ReferenceMatmul, BlocksOfRowsAgainstOnePackedRightOperandEqualTheLoopBitForBit) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  // Sizes off the register blocks (4 rows, panels of 16) on purpose.
  const std::size_t K = 37, M = 23, N = 41;
  std::vector<float> at(K * M), b(K * N);
  for (auto& v : at) v = dist(rng);
  for (auto& v : b) v = dist(rng);
  std::vector<double> sum, mag;
  loop(at.data(), b.data(), K, M, N, sum, mag);
  const ReferenceProduct whole = reference_matmul(at.data(), b.data(), K, M, N);
  EXPECT_EQ(whole.sum, sum);
  EXPECT_EQ(whole.mag, mag);
  const ReferenceRight right(b.data(), K, N);
  ReferenceProduct part;
  for (std::size_t m0 = 0; m0 < M; m0 += 5) {
    const std::size_t nm = std::min<std::size_t>(5, M - m0);
    std::vector<float> block(K * nm);
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t mm = 0; mm < nm; ++mm) block[k * nm + mm] = at[k * M + m0 + mm];
    reference_matmul(block.data(), nm, right, part);
    ASSERT_EQ(part.sum.size(), nm * N);
    for (std::size_t i = 0; i < nm * N; ++i) {
      EXPECT_EQ(part.sum[i], sum[m0 * N + i]);
      EXPECT_EQ(part.mag[i], mag[m0 * N + i]);
    }
  }
  // A left operand in double (softmax weights): one rounding per step, so
  // within a few ulps of the loop's sums, not bit for bit.
  std::vector<double> wide(at.begin(), at.end());
  for (auto& v : wide) v /= 3;  // no longer fp32 values: the products are inexact
  ReferenceProduct d;
  reference_matmul(wide.data(), M, right, d);
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) {
      double s = 0, a = 0;
      for (std::size_t k = 0; k < K; ++k) {
        s += wide[k * M + m] * b[k * N + n];
        a += std::fabs(wide[k * M + m] * b[k * N + n]);
      }
      EXPECT_NEAR(d.sum[m * N + n], s, 1e-14 * a);
      EXPECT_NEAR(d.mag[m * N + n], a, 1e-14 * a);
    }
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
