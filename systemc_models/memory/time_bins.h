// A bandwidth booked in fixed time bins, for targets that loosely-timed
// initiators reach out of time order (memory/hbm.h says why): a request
// fills the bins from its own start time on, so an early request is not
// queued behind a later one, and overlapping requests together never exceed
// the bandwidth. An HBM channel is one; so is each direction of a core's
// port into the chip's fabric (core/fabric.h).
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <vector>
#include <map>

namespace tessera::memory {

class TimeBins {
public:
  // `ns_per_byte`: the bandwidth's inverse; `bin_capacity_bytes`: what one
  // bin of `bin_ns` carries (the bandwidth times bin_ns). Both given, not
  // derived, so a caller keeps its own rounding of them.
  TimeBins(double ns_per_byte, double bin_capacity_bytes, double bin_ns)
      : ns_per_byte_(ns_per_byte), capacity_(bin_capacity_bytes), bin_ns_(bin_ns) {}

  // Books `bytes` from `start_ns` on and returns when the last of them is
  // through: never sooner than streaming them at the full bandwidth. Bins
  // before `stale_bin` take no more requests and are dropped first. With
  // `traffic`, adds what each bin took to it (bin index -> bytes).
  double book(double bytes, double start_ns, std::int64_t stale_bin, std::map<std::int64_t, double>* traffic = nullptr) {
    return book(bytes, start_ns, static_cast<std::int64_t>(start_ns / bin_ns_), stale_bin, traffic);
  }
  // The same with start_ns's bin given (start_ns / bin_ns(), truncated): a
  // caller that books many bins of one width at one time divides once.
  double book(double bytes, double start_ns, std::int64_t start_bin, std::int64_t stale_bin,
              std::map<std::int64_t, double>* traffic = nullptr);

  double bin_ns() const { return bin_ns_; }

private:
  // A bin never booked holds 0. Inline for the bins already held and for the
  // bin after the last when the ring has room, nearly every booking between
  // them: out of line, this was a few percent of a large run's CPU.
  double& at(std::int64_t bin) {
    const auto i = static_cast<std::uint64_t>(bin - first_);  // wraps past size_ for a bin before first_
    if (i < size_) return used_[(head_ + i) & (used_.size() - 1)];
    if (i == size_ && size_ < used_.size()) {  // the bin after the last, with room: how the ring mostly grows
      double& fresh = used_[(head_ + i) & (used_.size() - 1)];
      fresh = 0.0;
      ++size_;
      return fresh;
    }
    return add(bin);
  }
  double& add(std::int64_t bin);  // at() of a bin neither held nor the next one with room
  void drop_before(std::int64_t bin) {
    if (size_ == 0 || first_ >= bin) return;
    const auto n = static_cast<std::size_t>(std::min<std::int64_t>(bin - first_, static_cast<std::int64_t>(size_)));
    head_ = (head_ + n) & (used_.size() - 1);
    size_ -= n;
    first_ += static_cast<std::int64_t>(n);
  }

  double ns_per_byte_, capacity_, bin_ns_;
  std::int64_t first_ = 0;
  // Bytes booked in bin first_ + i, i < size_: a ring (slot (head_ + i) & mask),
  // which a booking reaches with an index rather than a deque's block lookup.
  std::vector<double> used_;
  std::size_t head_ = 0, size_ = 0;
  void reserve(std::size_t n);  // room for n bins, the ring grown by doubling
};

// Inline, with at() and drop_before(): HBM books each channel of every
// access, and the call was a few percent of a large run's instructions.
// Always: GCC kept it a call in Hbm::book's loop over channels, which cost
// 0.8 % of the mid GEMM's instructions (docs/performance.md).
[[gnu::always_inline]] inline double TimeBins::book(double bytes, double start_ns, std::int64_t start_bin,
                                                    std::int64_t stale_bin, std::map<std::int64_t, double>* traffic) {
  assert(start_bin == static_cast<std::int64_t>(start_ns / bin_ns_));
  drop_before(stale_bin);
  double left = bytes;
  std::int64_t b = start_bin;
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
