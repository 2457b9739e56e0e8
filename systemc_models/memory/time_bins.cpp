#include "memory/time_bins.h"

#include <algorithm>

namespace tessera::memory {

void TimeBins::reserve(std::size_t n) {
  if (n <= used_.size()) return;
  std::size_t cap = used_.empty() ? 64 : used_.size();
  while (cap < n) cap *= 2;
  std::vector<double> grown(cap, 0.0);
  for (std::size_t i = 0; i < size_; ++i) grown[i] = used_[(head_ + i) & (used_.size() - 1)];
  used_.swap(grown);
  head_ = 0;
}

double& TimeBins::add(std::int64_t bin) {
  if (size_ == 0) first_ = bin;
  if (bin < first_) {  // a bin never booked before the first one kept
    const auto more = static_cast<std::size_t>(first_ - bin);
    reserve(size_ + more);
    head_ = (head_ - more) & (used_.size() - 1);
    for (std::size_t i = 0; i < more; ++i) used_[(head_ + i) & (used_.size() - 1)] = 0.0;
    size_ += more;
    first_ = bin;
  }
  const auto i = static_cast<std::size_t>(bin - first_);
  if (i >= size_) {
    reserve(i + 1);
    for (std::size_t k = size_; k <= i; ++k) used_[(head_ + k) & (used_.size() - 1)] = 0.0;
    size_ = i + 1;
  }
  return used_[(head_ + i) & (used_.size() - 1)];
}

}  // namespace tessera::memory
