#include "memory/time_bins.h"

#include <algorithm>

namespace tessera::memory {

double& TimeBins::at(std::int64_t bin) {
  if (used_.empty()) first_ = bin;
  while (bin < first_) {
    used_.push_front(0);
    --first_;
  }
  const auto i = static_cast<std::size_t>(bin - first_);
  if (i >= used_.size()) used_.resize(i + 1, 0.0);
  return used_[i];
}

void TimeBins::drop_before(std::int64_t bin) {
  while (!used_.empty() && first_ < bin) {
    used_.pop_front();
    ++first_;
  }
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
