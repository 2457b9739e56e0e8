// A bandwidth booked in fixed time bins, for targets that loosely-timed
// initiators reach out of time order (memory/hbm.h says why): a request
// fills the bins from its own start time on, so an early request is not
// queued behind a later one, and overlapping requests together never exceed
// the bandwidth. The channels of an HBM are one set of bins; so are the
// incoming, and the outgoing, directions of the cores' ports into a chip's
// fabric (core/fabric.h).
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <map>
#include <vector>

namespace tessera::memory {

class TimeBins {
public:
  // `channels` bandwidths alike, booked on their own. `ns_per_byte`: a
  // channel's bandwidth's inverse; `bin_capacity_bytes`: what one bin of
  // `bin_ns` carries (the bandwidth times bin_ns). Both given, not derived,
  // so a caller keeps its own rounding of them.
  TimeBins(std::size_t channels, double ns_per_byte, double bin_capacity_bytes, double bin_ns)
      : channels_(channels), ns_per_byte_(ns_per_byte), capacity_(bin_capacity_bytes), bin_ns_(bin_ns) {}

  // Books `bytes` on `channel` from `start_ns` on and returns when the last
  // of them is through: never sooner than streaming them at the channel's
  // full bandwidth. Bins before `stale_bin` take no more requests and are
  // dropped first. With `traffic`, adds what each bin took to it (bin index
  // -> bytes).
  double book(std::size_t channel, double bytes, double start_ns, std::int64_t stale_bin,
              std::map<std::int64_t, double>* traffic = nullptr) {
    return book(channel, bytes, start_ns, static_cast<std::int64_t>(start_ns / bin_ns_), stale_bin, traffic);
  }
  // The same with start_ns's bin given (start_ns / bin_ns(), truncated): a
  // caller that books many bins of one width at one time divides once.
  double book(std::size_t channel, double bytes, double start_ns, std::int64_t start_bin, std::int64_t stale_bin,
              std::map<std::int64_t, double>* traffic = nullptr) {
    assert(start_bin == static_cast<std::int64_t>(start_ns / bin_ns_));
    drop_before(stale_bin);
    const double finish = bytes > 0 ? fill_from(channel, bytes, start_bin, traffic) : start_ns;
    return std::max(finish, start_ns + ns_per_byte_ * bytes);
  }

  // Bookings on several channels that start at one time (the granules of one
  // HBM request), after drop_before(): the start's bin is found once for all
  // of them, not once a channel. The later of fill(channel, bytes) and
  // streamed(bytes), bytes > 0, is the book() above, bit for bit; a caller
  // that takes the latest of many finishes takes streamed() once per size.
  // Valid until another booking of the same bins.
  class From {
  public:
    // When the bins' share of the bytes is through, and when streaming them
    // at the channel's full bandwidth would be.
    double fill(std::size_t channel, double bytes) {
      double past_start_bin = 0;
      return book(channel, bytes, past_start_bin) ? past_start_bin
                                                  : finish_of(start_bin_, row_[channel], bins_->capacity_, bins_->bin_ns_);
    }
    double streamed(double bytes) const { return start_ns_ + bins_->ns_per_byte_ * bytes; }
    // fill() for a caller that takes the latest of many finishes, without a
    // division per channel: a finish within the start's bin is (bin + used /
    // capacity) * bin_ns, which never falls as used grows (each operation
    // rounds monotonically), so the latest of them is the one of the most
    // used, taken once by latest_in_start_bin(). Returns the finish of a
    // booking that runs past the start's bin, 0 for one within it.
    double fill_for_latest(std::size_t channel, double bytes) {
      double past_start_bin = 0;
      if (book(channel, bytes, past_start_bin)) return past_start_bin;
      most_used_ = std::max(most_used_, row_[channel]);
      return 0;
    }
    // The latest finish within the start's bin of the fill_for_latest()
    // calls so far; 0 if none ended there.
    double latest_in_start_bin() const {
      return most_used_ > 0 ? finish_of(start_bin_, most_used_, bins_->capacity_, bins_->bin_ns_) : 0;
    }

  private:
    friend class TimeBins;
    // Books `bytes` (> 0) on `channel` from the start's bin on. True, with
    // when they are through in `finish`, if they run past that bin; false if
    // they end in it (filled to row_[channel]).
    bool book(std::size_t channel, double bytes, double& finish) {
      assert(bytes > 0);
      double left = bytes;
      TimeBins::fill(row_[channel], left, bins_->capacity_);
      if (left <= 0) return false;
      finish = bins_->fill_from(channel, left, start_bin_ + 1, nullptr);
      row_ = bins_->row(start_bin_);  // that may have grown the ring
      return true;
    }
    From(TimeBins& bins, double start_ns, std::int64_t start_bin)
        : bins_(&bins), row_(bins.row(start_bin)), start_ns_(start_ns), start_bin_(start_bin) {}
    TimeBins* bins_;
    double* row_;
    double start_ns_;
    std::int64_t start_bin_;
    double most_used_ = 0;  // of the start's bin, by a fill_for_latest() that ended in it
  };
  From from(double start_ns, std::int64_t start_bin) {
    assert(start_bin == static_cast<std::int64_t>(start_ns / bin_ns_));
    return From(*this, start_ns, start_bin);
  }

  // Bins before `bin` take no more requests: no booking after starts before
  // it. Every channel's at once, so a caller's `bin` must not go back.
  void drop_before(std::int64_t bin) {
    if (size_ == 0 || first_ >= bin) return;
    const auto n = static_cast<std::size_t>(std::min<std::int64_t>(bin - first_, static_cast<std::int64_t>(size_)));
    head_ = (head_ + n) & (rows_ - 1);
    size_ -= n;
    first_ += static_cast<std::int64_t>(n);
  }

  std::size_t channels() const { return channels_; }
  double bin_ns() const { return bin_ns_; }

private:
  // One bin's share of a booking, the only arithmetic of one: it takes what
  // fits of `left` into a bin that holds `used`, and says what it took.
  static double fill(double& used, double& left, double capacity) {
    const double take = std::min(left, capacity - used);
    used += take;
    left -= take;
    return take;
  }
  // When the bytes booked so far in bin `b` are through.
  static double finish_of(std::int64_t b, double used, double capacity, double bin_ns) {
    return (static_cast<double>(b) + used / capacity) * bin_ns;
  }
  // Books `bytes` (> 0) on `channel` from bin `b` on; returns when the last
  // bin's bytes are through. Inline: HBM books each channel of every access, and
  // the call was a few percent of a large run's instructions.
  [[gnu::always_inline]] double fill_from(std::size_t channel, double bytes, std::int64_t b,
                                          std::map<std::int64_t, double>* traffic) {
    double left = bytes, finish = 0;
    do {
      double& used = row(b)[channel];
      const double take = fill(used, left, capacity_);
      if (traffic) (*traffic)[b] += take;
      finish = finish_of(b, used, capacity_, bin_ns_);
      ++b;
    } while (left > 0);
    return finish;
  }

  // Bin `bin`'s row, channels_ values (a bin never booked holds 0). Inline
  // for the bins already held and for the bin after the last when the ring
  // has room, nearly every booking between them.
  double* row(std::int64_t bin) {
    const auto i = static_cast<std::uint64_t>(bin - first_);  // wraps past size_ for a bin before first_
    if (i < size_) return slot(i);
    if (i == size_ && size_ < rows_) {  // the bin after the last, with room: how the ring mostly grows
      double* fresh = slot(i);
      std::fill(fresh, fresh + channels_, 0.0);
      ++size_;
      return fresh;
    }
    return add(bin);
  }
  double* add(std::int64_t bin);  // row() of a bin neither held nor the next one with room
  double* slot(std::size_t i) { return &used_[((head_ + i) & (rows_ - 1)) * channels_]; }  // bin first_ + i's row
  void reserve(std::size_t rows);  // room for `rows` bins, the ring grown by doubling

  std::size_t channels_;
  double ns_per_byte_, capacity_, bin_ns_;
  std::int64_t first_ = 0;
  // Bytes booked in bin first_ + i, i < size_, on channel c: a ring of rows
  // (row slot (head_ + i) & (rows_ - 1), channel c at c in it), which a
  // booking reaches with an index, and whose one row holds every channel's
  // share of a bin for the granules of a request that all start in it.
  std::vector<double> used_;
  std::size_t rows_ = 0, head_ = 0, size_ = 0;
};

}  // namespace tessera::memory
