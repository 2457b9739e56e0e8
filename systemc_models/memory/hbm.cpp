#include "memory/hbm.h"
#include "trace/sim_time.h"

#include <algorithm>

namespace tessera::memory {

using sc_core::sc_time;
using sc_core::SC_NS;

Hbm::HbmStats::HbmStats(trace::Stats& stats, const sc_core::sc_object& owner)
    : Group(stats, owner),
      bytes_read(*this, "bytes_read", "bytes", "bytes read from HBM"),
      bytes_written(*this, "bytes_written", "bytes", "bytes written to HBM"),
      bytes_timing_only(*this, "bytes_timing_only", "bytes",
                        "bytes moved by timing-only (--no-data) accesses, direction not recorded"),
      transactions(*this, "transactions", "count", "TLM transactions served") {}

Hbm::Hbm(sc_core::sc_module_name name, const arch::HbmConfig& cfg, trace::Stats& stats)
    : sc_module(name),
      socket("socket"),
      size_(static_cast<std::uint64_t>(cfg.capacity_gib) << 30),
      hash_(static_cast<std::uint64_t>(cfg.channels)),
      latency_(cfg.latency_ns, SC_NS),
      bandwidth_gbps_(cfg.bandwidth_gbps),
      // GB/s is bytes per ns; each of the channels carries an equal share.
      ns_per_byte_per_channel_(static_cast<double>(cfg.channels) / cfg.bandwidth_gbps),
      bin_capacity_bytes_(cfg.bandwidth_gbps / static_cast<double>(cfg.channels) * kBinNs),
      channel_bins_(static_cast<std::size_t>(cfg.channels), ns_per_byte_per_channel_, bin_capacity_bytes_, kBinNs),
      per_channel_(static_cast<std::size_t>(cfg.channels), 0),
      stats_(stats, *this) {
  touched_.assign((per_channel_.size() + 63) / 64, 0);
  socket.register_b_transport(this, &Hbm::b_transport);
  socket.register_transport_dbg(this, &Hbm::transport_dbg);
}

sc_time Hbm::unloaded_read_time(std::uint64_t length) const {
  return latency_ + sc_time(static_cast<double>(length) / bandwidth_gbps_, SC_NS);
}

unsigned Hbm::transport_dbg(int, tlm::tlm_generic_payload& trans) {
  const std::uint64_t address = trans.get_address(), length = trans.get_data_length();
  if (address > size_ || length > size_ - address) return 0;
  if (trans.is_read()) store_.read(address, trans.get_data_ptr(), length);
  else if (trans.is_write()) store_.write(address, trans.get_data_ptr(), length);
  return static_cast<unsigned>(length);
}

void Hbm::backdoor_read(std::uint64_t address, std::uint8_t* out, std::uint64_t length) const {
  store_.read(address, out, length);
}

void Hbm::backdoor_write(std::uint64_t address, const std::uint8_t* in, std::uint64_t length) {
  store_.write(address, in, length);
}

std::uint64_t Hbm::book(std::uint64_t address, std::uint64_t length, std::uint64_t start, std::uint64_t now) {
  const std::size_t channels = channel_bins_.channels();
  // The hash is linear and maps every granule index below `channels` to
  // itself, so within an aligned block of `channels` granules the channel is
  // the block's channel XOR the granule's place in it: one table lookup per
  // block rather than per granule.
  const std::uint64_t in_block = channels - 1;
  const trace::Resolution& resolution = trace::resolution();
  const double start_ns = trace::ns_of_ticks(start, resolution);
  // Every channel's bins are kBinNs wide: the first bin once for all.
  const auto start_bin = static_cast<std::int64_t>(start_ns / kBinNs);
  // Bins before now can take no more requests.
  if (now != stale_now_) {
    stale_now_ = now;
    stale_bin_ = static_cast<std::int64_t>(trace::ns_of_ticks(now, resolution) / kBinNs) - 1;
  }
  const std::int64_t stale = stale_bin_;
  double done_ns = start_ns;
  // Nearly every access lies in one block (with 16 channels a block is a
  // 4 KiB page, which no burst leaves), where each granule has a channel of
  // its own: each channel's share is that granule's bytes, booked as the
  // granule is reached. The channels' bins are independent and the answer is
  // the latest of their finishes, so the order they are booked in changes
  // nothing but the order a trace's traffic bins add up in, which the
  // general way keeps.
  const std::uint64_t first = address / kInterleaveBytes;
  if (length > 0 && !record_traffic_ && ((first ^ ((address + length - 1) / kInterleaveBytes)) & ~in_block) == 0) {
    const std::uint64_t block_channel = hash_.channel_of_granule(first & ~in_block);
    channel_bins_.drop_before(stale);
    TimeBins::From from = channel_bins_.from(start_ns, start_bin);
    // Each granule finishes at the later of its bins and its bytes streamed
    // at a channel's bandwidth; the answer is the latest of those, so the
    // whole granules' one streaming time is taken once, and a partial first
    // or last granule's on its own.
    const std::uint64_t end = address + length;
    std::uint64_t a = address, g = first;
    const auto partial = [&](std::uint64_t bytes) {
      const auto n = static_cast<double>(bytes);
      done_ns = std::max(std::max(done_ns, from.fill_for_latest(block_channel ^ (g & in_block), n)), from.streamed(n));
    };
    if (a % kInterleaveBytes != 0 || end - a < kInterleaveBytes) {  // a partial first granule
      partial(std::min(end, (g + 1) * kInterleaveBytes) - a);
      a = (g + 1) * kInterleaveBytes;
      ++g;
    }
    if (a + kInterleaveBytes <= end) {
      constexpr auto kWhole = static_cast<double>(kInterleaveBytes);
      done_ns = std::max(done_ns, from.streamed(kWhole));
      for (; a + kInterleaveBytes <= end; a += kInterleaveBytes, ++g)
        done_ns = std::max(done_ns, from.fill_for_latest(block_channel ^ (g & in_block), kWhole));
    }
    if (a < end) partial(end - a);  // a partial last granule
    done_ns = std::max(done_ns, from.latest_in_start_bin());
    return trace::ticks_of_ns(done_ns, resolution);
  }
  std::uint32_t block_channel = 0;
  // The word of touched_ being filled, held in a register: or-ing into
  // memory at every granule made each wait for the store before it.
  std::size_t word = 0;
  std::uint64_t bits = 0;
  for (std::uint64_t a = address, end = address + length; a < end;) {
    const std::uint64_t g = a / kInterleaveBytes;
    if (a == address || (g & in_block) == 0) block_channel = hash_.channel_of_granule(g & ~in_block);
    const std::uint64_t n = std::min(end, (g + 1) * kInterleaveBytes) - a;
    const std::uint64_t c = block_channel ^ (g & in_block);
    if (c / 64 != word) {
      touched_[word] |= bits;
      word = c / 64;
      bits = 0;
    }
    bits |= std::uint64_t{1} << (c % 64);
    per_channel_[c] += n;
    a += n;
  }
  touched_[word] |= bits;
  // Channels in index order, so that a trace's traffic bins add up in one order.
  for (std::size_t w = 0; w < touched_.size(); ++w)
    for (std::uint64_t left = touched_[w]; left != 0; left &= left - 1) {
      const std::size_t c = w * 64 + static_cast<std::size_t>(__builtin_ctzll(left));
      const double finish = channel_bins_.book(c, static_cast<double>(per_channel_[c]), start_ns, start_bin, stale,
                                               record_traffic_ ? &traffic_ : nullptr);
      done_ns = std::max(done_ns, finish);
      per_channel_[c] = 0;
    }
  std::fill(touched_.begin(), touched_.end(), 0);
  return trace::ticks_of_ns(done_ns, resolution);
}

tlm::tlm_response_status Hbm::access(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data,
                                     std::uint64_t length, const sc_time& now, sc_time& delay) {
  tlm::tlm_response_status status;
  const std::uint64_t answer = access_ticks(cmd, address, data, length, (now + delay).value(), now.value(), status);
  // The target adds its latency to the initiator's delay and never waits.
  if (status == tlm::TLM_OK_RESPONSE) delay = trace::ticks(answer - now.value());
  return status;
}

std::uint64_t Hbm::access_ticks(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data, std::uint64_t length,
                                std::uint64_t start, std::uint64_t now, tlm::tlm_response_status& status) {
  if (!in_range(address, length)) {
    status = tlm::TLM_ADDRESS_ERROR_RESPONSE;
    return start;
  }
  status = tlm::TLM_OK_RESPONSE;
  ++stats_.transactions;
  if (cmd == tlm::TLM_READ_COMMAND) {
    store_.read(address, data, length);
    stats_.bytes_read += static_cast<double>(length);
  } else if (cmd == tlm::TLM_WRITE_COMMAND) {
    store_.write(address, data, length);
    stats_.bytes_written += static_cast<double>(length);
  } else {
    stats_.bytes_timing_only += static_cast<double>(length);
  }
  return book(address, length, start, now) + latency_.value();
}

void Hbm::b_transport(int, tlm::tlm_generic_payload& trans, sc_time& delay) {
  const std::uint64_t address = trans.get_address();
  const std::uint64_t length = trans.get_data_length();
  if (in_range(address, length) && trans.get_byte_enable_ptr()) {
    trans.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return;
  }
  trans.set_response_status(
      access(trans.get_command(), address, trans.get_data_ptr(), length, sc_core::sc_time_stamp(), delay));
}

}  // namespace tessera::memory
