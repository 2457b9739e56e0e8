// The "did you mean" search: the bounded distance is the Levenshtein
// distance whenever that is within the limit, and the closest candidate is
// the first of equals, as messages have always named it.
#include "arch/spelling.h"

#include <gtest/gtest.h>

#include <random>

namespace tessera::arch {
namespace {

std::size_t full_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j)
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
  return d[a.size()][b.size()];
}

TEST(Spelling, BoundedDistanceIsTheDistanceWithinItsLimit) {
  std::mt19937 rng(7);
  const auto word = [&] {
    std::string s(rng() % 12, 'a');
    for (char& c : s) c = static_cast<char>('a' + rng() % 3);
    return s;
  };
  for (int n = 0; n < 5000; ++n) {
    const std::string a = word(), b = word();
    const std::size_t limit = rng() % 6, d = full_distance(a, b);
    const auto got = bounded_edit_distance(a, b, limit);
    if (d <= limit) {
      ASSERT_TRUE(got) << a << " / " << b << " limit " << limit;
      EXPECT_EQ(*got, d) << a << " / " << b;
    } else {
      EXPECT_FALSE(got) << a << " / " << b << " limit " << limit << " distance " << d;
    }
  }
}

TEST(Spelling, ClosestIsTheFirstOfEqualsWithinTheLimit) {
  const std::vector<std::string> keys = {"sbuf.partitions", "psum.partitions", "sbuf.bytes_per_partition"};
  EXPECT_EQ(closest_spelling("sbuf.partitons", keys, 4).value_or(""), "sbuf.partitions");
  EXPECT_EQ(closest_spelling("gemx", {"gemm", "gemv"}, 2).value_or(""), "gemm");  // one edit from both
  EXPECT_FALSE(closest_spelling("dma.engines", keys, 3));
  EXPECT_EQ(closest_spelling("gemm", {"gemm", "gemv"}, 2).value_or(""), "gemm");
  // A kilobyte-long word costs a length compare per candidate.
  EXPECT_FALSE(closest_spelling(std::string(4096, 'k'), keys, 4096 / 3));
}

}  // namespace
}  // namespace tessera::arch
