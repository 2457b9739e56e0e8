#include "arch/spelling.h"

#include <algorithm>

namespace tessera::arch {

std::optional<std::size_t> bounded_edit_distance(const std::string& a, const std::string& b, std::size_t limit) {
  const std::size_t longer = std::max(a.size(), b.size()), shorter = std::min(a.size(), b.size());
  if (longer - shorter > limit) return std::nullopt;
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    std::size_t row_min = cur[0];
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      row_min = std::min(row_min, cur[j]);
    }
    // Distances never fall from one row to the next's minimum.
    if (row_min > limit) return std::nullopt;
    std::swap(prev, cur);
  }
  if (prev[b.size()] > limit) return std::nullopt;
  return prev[b.size()];
}

std::optional<std::string> closest_spelling(const std::string& word, const std::vector<std::string>& candidates,
                                            std::size_t limit) {
  std::optional<std::string> best;
  std::size_t best_d = limit + 1;
  for (const auto& c : candidates) {
    if (best_d == 0) break;
    // Only a strictly closer candidate replaces the best so far.
    const std::optional<std::size_t> d = bounded_edit_distance(word, c, best_d - 1);
    if (d) {
      best_d = *d;
      best = c;
    }
  }
  return best;
}

}  // namespace tessera::arch
