#include "memory/partitioned_memory.h"
#include "trace/sim_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace tessera::memory {

PartitionedMemory::MemoryStats::MemoryStats(trace::Stats& stats, const sc_core::sc_object& owner)
    : Group(stats, owner),
      bytes_read(*this, "bytes_read", "bytes", "bytes read"),
      bytes_written(*this, "bytes_written", "bytes", "bytes written"),
      bytes_timing_only(*this, "bytes_timing_only", "bytes",
                        "bytes moved by timing-only (--no-data) accesses, direction not recorded") {}

PartitionedMemory::PartitionedMemory(sc_core::sc_module_name name, const PartitionedMemoryParams& params,
                                     trace::Stats& stats)
    : sc_module(name),
      socket("socket"),
      p_(params),
      partition_bytes_(std::max<std::uint64_t>(params.partition_bytes, 1)),
      size_(params.partitions * params.partition_bytes),
      // calloc: the OS maps zero pages on first touch, so a large SBUF costs
      // only the bytes a kernel uses.
      data_(static_cast<std::uint8_t*>(std::calloc(size_ ? size_ : 1, 1))),
      stats_(stats, *this) {
  if (!data_)
    throw MemoryError(fmt::format("{}: cannot allocate {} bytes ({} partitions of {} bytes)", this->name(), size_,
                                  p_.partitions, p_.partition_bytes));
  socket.register_b_transport(this, &PartitionedMemory::b_transport);
  socket.register_transport_dbg(this, &PartitionedMemory::transport_dbg);
}

std::uint8_t* PartitionedMemory::at(std::uint64_t partition, std::uint64_t byte, std::uint64_t length) {
  if (partition >= p_.partitions || byte > p_.partition_bytes || length > p_.partition_bytes - byte)
    throw MemoryError(fmt::format("{}: partition {} bytes {}..{} outside {} partitions of {} bytes", name(), partition,
                                  byte, byte + length - 1, p_.partitions, p_.partition_bytes));
  return data_.get() + partition * p_.partition_bytes + byte;
}

const std::uint8_t* PartitionedMemory::at(std::uint64_t partition, std::uint64_t byte, std::uint64_t length) const {
  return const_cast<PartitionedMemory*>(this)->at(partition, byte, length);
}

sc_core::sc_time PartitionedMemory::spread_time(std::uint64_t length, std::uint64_t partitions) const {
  const std::uint64_t lanes_bytes = partitions * p_.bytes_per_cycle;
  const sc_core::sc_time latency = p_.clock_period * static_cast<double>(p_.access_latency_cycles);
  const sc_core::sc_time own = p_.clock_period * static_cast<double>((length + lanes_bytes - 1) / lanes_bytes);
  if (p_.stream_bytes_per_ns <= 0) return latency + own;
  const sc_core::sc_time streamed = trace::from_ns(static_cast<double>(length) / p_.stream_bytes_per_ns);
  return own > streamed ? latency + (own - streamed) : latency;
}

void PartitionedMemory::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const std::uint64_t offset = trans.get_address();
  const std::uint64_t length = trans.get_data_length();
  const unsigned char* be = trans.get_byte_enable_ptr();
  if (!be || !trans.is_write()) {
    trans.set_response_status(access(trans.get_command(), offset, trans.get_data_ptr(), length, delay));
    return;
  }
  // A write with byte enables: only the enabled bytes land.
  if (!in_range(offset, length)) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  std::uint8_t* mem = data_.get() + offset;
  const unsigned be_len = trans.get_byte_enable_length();
  for (std::uint64_t i = 0; i < length; ++i)
    if (be[i % be_len] == TLM_BYTE_ENABLED) mem[i] = trans.get_data_ptr()[i];
  count_write(length);
  delay += transfer_time(offset, length);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

unsigned PartitionedMemory::transport_dbg(tlm::tlm_generic_payload& trans) {
  const std::uint64_t offset = trans.get_address();
  const std::uint64_t length = trans.get_data_length();
  if (!in_range(offset, length)) return 0;
  if (trans.is_read()) std::memcpy(trans.get_data_ptr(), data_.get() + offset, length);
  if (trans.is_write()) std::memcpy(data_.get() + offset, trans.get_data_ptr(), length);
  return static_cast<unsigned>(length);
}

}  // namespace tessera::memory
