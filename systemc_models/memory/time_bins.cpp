#include "memory/time_bins.h"

#include <algorithm>

namespace tessera::memory {

void TimeBins::reserve(std::size_t rows) {
  if (rows <= rows_) return;
  std::size_t cap = rows_ == 0 ? 64 : rows_;
  while (cap < rows) cap *= 2;
  std::vector<double> grown(cap * channels_, 0.0);
  for (std::size_t i = 0; i < size_; ++i) std::copy(slot(i), slot(i) + channels_, &grown[i * channels_]);
  used_.swap(grown);
  rows_ = cap;
  head_ = 0;
}

double* TimeBins::add(std::int64_t bin) {
  if (size_ == 0) first_ = bin;
  if (bin < first_) {  // a bin never booked before the first one kept
    const auto more = static_cast<std::size_t>(first_ - bin);
    reserve(size_ + more);
    head_ = (head_ - more) & (rows_ - 1);
    for (std::size_t k = 0; k < more; ++k) std::fill(slot(k), slot(k) + channels_, 0.0);
    size_ += more;
    first_ = bin;
  }
  const auto i = static_cast<std::size_t>(bin - first_);
  if (i >= size_) {
    reserve(i + 1);
    for (std::size_t k = size_; k <= i; ++k) std::fill(slot(k), slot(k) + channels_, 0.0);
    size_ = i + 1;
  }
  return slot(i);
}

}  // namespace tessera::memory
