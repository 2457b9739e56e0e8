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

void TimeBins::drop_before(std::int64_t bin) {
  if (size_ == 0 || first_ >= bin) return;
  const auto n = static_cast<std::size_t>(std::min<std::int64_t>(bin - first_, static_cast<std::int64_t>(size_)));
  head_ = (head_ + n) & (used_.size() - 1);
  size_ -= n;
  first_ += static_cast<std::int64_t>(n);
}

double TimeBins::book(double bytes, double start_ns, std::int64_t stale_bin, std::map<std::int64_t, double>* traffic) {
  drop_before(stale_bin);
  double left = bytes;
  std::int64_t b = static_cast<std::int64_t>(start_ns / bin_ns_);
  double finish = start_ns;
  while (left > 0) {
    double& used = at(b);
    const double take = std::min(left, capacity_ - used);
    used += take;
    left -= take;
    if (traffic) (*traffic)[b] += take;
    finish = (static_cast<double>(b) + used / capacity_) * bin_ns_;
    ++b;
  }
  return std::max(finish, start_ns + ns_per_byte_ * bytes);
}

}  // namespace tessera::memory
