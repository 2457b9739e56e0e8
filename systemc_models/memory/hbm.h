// Device memory (HBM) as a TLM-2.0 target: a sparse backing store, a fixed
// read latency and a bandwidth shared by channels, each 256-byte granule on
// the channel its address hashes to (memory/channel_hash.h).
//
// Initiators run ahead of simulated time (loosely timed), so requests reach
// the memory out of time order: a DMA engine may book a burst for 2 us from
// now before another asks for one now. Each channel therefore keeps its
// bandwidth in time bins: a request fills the bins from its own start time
// on, so an early request is not queued behind a later one, and overlapping
// requests together never exceed the channel's bandwidth.
#pragma once

#include "arch/config.h"
#include "memory/channel_hash.h"
#include "memory/sparse_store.h"
#include "memory/time_bins.h"
#include "trace/stats.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <map>
#include <vector>

namespace tessera::memory {

class Hbm : public sc_core::sc_module {
public:
  // The unit of the channel hash: a granule is never split between channels.
  static constexpr std::uint64_t kInterleaveBytes = ChannelHash::kGranuleBytes;

  // Every core of a chip binds its interconnect here (one binding for a
  // single core): their requests contend at the channels.
  tlm_utils::multi_passthrough_target_socket<Hbm> socket;

  Hbm(sc_core::sc_module_name name, const arch::HbmConfig& cfg, trace::Stats& stats);

  // Functional access without timing, for hosts loading and reading tensors.
  void backdoor_read(std::uint64_t address, std::uint8_t* out, std::uint64_t length) const;
  void backdoor_write(std::uint64_t address, const std::uint8_t* in, std::uint64_t length);
  // Drops every byte the store holds (it reads as zeros again), for a run
  // that is over and has read back what it needs.
  void release_contents() { store_.clear(); }
  std::uint64_t size_bytes() const { return size_; }
  const SparseStore& store() const { return store_; }

  // The channel that serves the byte at `address` (a CRC of its granule index).
  std::size_t channel_of(std::uint64_t address) const { return hash_.channel_of(address); }

  // The time a read of `length` bytes takes on an idle device: latency plus
  // the bytes at full bandwidth (what an instruction fetch costs).
  sc_core::sc_time unloaded_read_time(std::uint64_t length) const;

  // Keeps the bytes moved in each bin_ns()-wide time bin (all channels) for
  // a trace's bandwidth counter; off unless a run is traced.
  void record_traffic(bool on) { record_traffic_ = on; }
  const std::map<std::int64_t, double>& traffic() const { return traffic_; }
  static constexpr double bin_ns() { return kBinNs; }

  // b_transport without the payload and the socket's calls, for an
  // initiator that reaches HBM directly (a fast DMA engine, whose every
  // burst this was a third of the cost of): a read, a write or a timing-only
  // TLM_IGNORE_COMMAND of `length` bytes at `address`, sent at SystemC's
  // time `now` with annotated `delay`, which it sets as b_transport does.
  // TLM_ADDRESS_ERROR_RESPONSE for a range past the end, else TLM_OK_RESPONSE.
  tlm::tlm_response_status access(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data,
                                  std::uint64_t length, const sc_core::sc_time& now, sc_core::sc_time& delay);
  // The same in resolution units (sc_time values): sent at `start`, SystemC's
  // time being `now`; returns when it is answered (`start` when `status` is
  // an error). For the fast DMA engines, which keep time in these units: the
  // conversions to and from sc_time were 3.6 % of a large GEMM's instructions.
  std::uint64_t access_ticks(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data, std::uint64_t length,
                             std::uint64_t start, std::uint64_t now, tlm::tlm_response_status& status);

  struct HbmStats : trace::Group {
    HbmStats(trace::Stats& stats, const sc_core::sc_object& owner);
    trace::Scalar bytes_read, bytes_written, bytes_timing_only, transactions;
  };
  const HbmStats& stats() const { return stats_; }

private:
  // When a transfer of `length` bytes at `address`, issued at `start`, has
  // moved its last byte; books the channels it uses. `now` is SystemC's time,
  // which b_transport has read already.
  // In resolution units, as access_ticks(), its one caller, inline there
  // (0.8 % fewer instructions for a DMA-bound GEMM).
  [[gnu::always_inline]] inline std::uint64_t book(std::uint64_t address, std::uint64_t length, std::uint64_t start,
                                                  std::uint64_t now);
  void b_transport(int initiator, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  bool in_range(std::uint64_t address, std::uint64_t length) const {
    return address <= size_ && length <= size_ - address;
  }
  unsigned transport_dbg(int initiator, tlm::tlm_generic_payload& trans);

  SparseStore store_;
  std::uint64_t size_;
  ChannelHash hash_;
  sc_core::sc_time latency_;
  double bandwidth_gbps_;
  double ns_per_byte_per_channel_;  // kept in ns: a per-byte sc_time would round to the time resolution
  static constexpr double kBinNs = 64;
  double bin_capacity_bytes_;  // per channel per bin
  TimeBins channel_bins_;  // every channel's bandwidth
  std::vector<std::uint64_t> per_channel_;  // book()'s scratch: bytes of the request per channel
  std::vector<std::uint64_t> touched_;      // and the channels it touches, a bit each (read in index order)
  bool record_traffic_ = false;
  // book()'s last `now` and the bins before it that are stale: SystemC's
  // time stands still over the hundreds of accesses a DMA scheduler's
  // wake-up makes, so the conversion is made once per time.
  std::uint64_t stale_now_ = ~std::uint64_t{0};
  std::int64_t stale_bin_ = 0;
  std::map<std::int64_t, double> traffic_;  // bin index -> bytes
  HbmStats stats_;
};

}  // namespace tessera::memory
