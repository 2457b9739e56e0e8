// SBUF and PSUM: on-chip memories of `partitions` rows, each with its own
// interface of `bytes_per_cycle`. Addresses are partition-major (see
// arch/address_map.h). DMA reaches them through the TLM socket; engines use
// the bounds-checked backdoor and charge their own time from the config.
#pragma once

#include "arch/divider.h"
#include "trace/stats.h"
#include "trace/wave_probe.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

namespace tessera::memory {

class MemoryError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct PartitionedMemoryParams {
  std::uint64_t partitions = 0;
  std::uint64_t partition_bytes = 0;
  sc_core::sc_time clock_period;
  std::uint64_t access_latency_cycles = 0;
  std::uint64_t bytes_per_cycle = 0;  // per partition interface
  // The rate at which a socket access's bytes stream over the initiator's
  // bus (a DMA engine: one beat per cycle, dma.bytes_per_ns); 0: not at all.
  // A write reaches the memory at its last beat, its bytes having arrived at
  // this rate; a read's beats leave at this rate from its first. Either way
  // the memory charges only the part of its own transfer time that the
  // beats do not cover, not the whole burst again after its last beat.
  double stream_bytes_per_ns = 0;
};

class PartitionedMemory : public sc_core::sc_module {
public:
  tlm_utils::simple_target_socket<PartitionedMemory> socket;

  PartitionedMemory(sc_core::sc_module_name name, const PartitionedMemoryParams& params, trace::Stats& stats);

  // Pointer to `length` bytes of one partition; throws MemoryError naming the
  // memory, partition and bytes when the range is outside it.
  std::uint8_t* at(std::uint64_t partition, std::uint64_t byte, std::uint64_t length);
  const std::uint8_t* at(std::uint64_t partition, std::uint64_t byte, std::uint64_t length) const;

  // Traffic through the socket and the engines' backdoor.
  struct MemoryStats : trace::Group {
    MemoryStats(trace::Stats& stats, const sc_core::sc_object& owner);
    trace::Scalar bytes_read, bytes_written, bytes_timing_only;
  };
  const MemoryStats& stats() const { return stats_; }

  void count_read(std::uint64_t bytes) {
    stats_.bytes_read += static_cast<double>(bytes);
    if (waves_) waves_->memory_traffic(wave_id_, false, bytes);
  }
  void count_write(std::uint64_t bytes) {
    stats_.bytes_written += static_cast<double>(bytes);
    if (waves_) waves_->memory_traffic(wave_id_, true, bytes);
  }
  void set_wave_probe(trace::WaveProbe* probe, trace::WaveProbe::Memory id) {
    waves_ = probe;
    wave_id_ = id;
  }

  const PartitionedMemoryParams& params() const { return p_; }

  // Time a transfer of `length` bytes at flat `offset` takes: the access
  // latency, then the bytes spread over the partition interfaces it touches.
  sc_core::sc_time transfer_time(std::uint64_t offset, std::uint64_t length) const {
    // Divisions by a multiply (a 64-bit division is tens of cycles, and
    // partitions are rarely a power of two bytes), the second only for an
    // access that leaves its partition.
    const std::uint64_t within = partition_bytes_.remainder(offset);
    const std::uint64_t partitions =
        within + length <= p_.partition_bytes ? 1 : 1 + partition_bytes_.quotient(within + length - 1);
    if (length != last_spread_.length || partitions != last_spread_.partitions)
      last_spread_ = {length, partitions, spread_time(length, partitions)};
    return last_spread_.time;
  }

  // b_transport without the payload and the socket's calls, for an
  // initiator that reaches the memory directly (a fast DMA engine): a read,
  // a write (every byte: no byte enables) or a timing-only
  // TLM_IGNORE_COMMAND of `length` bytes at flat `offset`, adding its time
  // to `delay` as b_transport does. TLM_ADDRESS_ERROR_RESPONSE for a range
  // outside the memory, else TLM_OK_RESPONSE. Inline, with transfer_time():
  // a fast DMA engine makes one call per SBUF or PSUM burst.
  tlm::tlm_response_status access(tlm::tlm_command cmd, std::uint64_t offset, std::uint8_t* data,
                                  std::uint64_t length, sc_core::sc_time& delay) {
    if (!move(cmd, offset, data, length)) return tlm::TLM_ADDRESS_ERROR_RESPONSE;
    delay += transfer_time(offset, length);
    return tlm::TLM_OK_RESPONSE;
  }
  // The same in resolution units (sc_time values), as the fast DMA engines
  // keep time: sent at `start`, done when it returns (`start` when `status`
  // is an error).
  std::uint64_t access_ticks(tlm::tlm_command cmd, std::uint64_t offset, std::uint8_t* data, std::uint64_t length,
                             std::uint64_t start, tlm::tlm_response_status& status) {
    if (!move(cmd, offset, data, length)) {
      status = tlm::TLM_ADDRESS_ERROR_RESPONSE;
      return start;
    }
    status = tlm::TLM_OK_RESPONSE;
    return start + transfer_time(offset, length).value();
  }

private:
  // access()'s bytes and statistics; false, touching nothing, for a range
  // outside the memory.
  bool move(tlm::tlm_command cmd, std::uint64_t offset, std::uint8_t* data, std::uint64_t length) {
    if (!in_range(offset, length)) return false;
    if (cmd == tlm::TLM_READ_COMMAND) {
      std::memcpy(data, data_.get() + offset, length);
      count_read(length);
    } else if (cmd == tlm::TLM_WRITE_COMMAND) {
      std::memcpy(data_.get() + offset, data, length);  // a byte loop was 6 % of a with-data layernorm
      count_write(length);
    } else {
      stats_.bytes_timing_only += static_cast<double>(length);
    }
    return true;
  }
  sc_core::sc_time spread_time(std::uint64_t length, std::uint64_t partitions) const;
  bool in_range(std::uint64_t offset, std::uint64_t length) const {
    return offset <= size_ && length <= size_ - offset;
  }

  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  // Reads and writes without time or statistics, for loaders and checkers.
  unsigned transport_dbg(tlm::tlm_generic_payload& trans);

  PartitionedMemoryParams p_;
  arch::Divider partition_bytes_;  // p_.partition_bytes (1 for none: such a memory takes no access)
  struct Free {
    void operator()(std::uint8_t* p) const { std::free(p); }
  };
  std::uint64_t size_;
  std::unique_ptr<std::uint8_t[], Free> data_;
  MemoryStats stats_;
  trace::WaveProbe* waves_ = nullptr;
  trace::WaveProbe::Memory wave_id_ = trace::WaveProbe::Memory::Sbuf;
  // The last spread_time asked for: a DMA engine's bursts come in runs of one
  // length over one partition count, and the time's sc_time arithmetic was
  // about 2 % of a large run's instructions.
  struct LastSpread {
    std::uint64_t length = 0, partitions = 0;
    sc_core::sc_time time;
  };
  mutable LastSpread last_spread_;
};

}  // namespace tessera::memory
