#include "core/fabric.h"

#include "core/interconnect.h"
#include "core/semaphores.h"
#include "trace/sim_time.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::core {

using sc_core::sc_time;
using sc_core::SC_NS;

namespace {
// The bins a port's bandwidth is booked in, as the HBM's channels do.
constexpr double kBinNs = 64;
}  // namespace

class ChipFabric::Port : public PeerSignals {
public:
  Port(ChipFabric& fabric, std::size_t core) : fabric_(fabric), core_(core) {}
  std::string signal(std::uint64_t address, std::uint32_t value) override {
    return fabric_.signal(core_, address, value);
  }

private:
  ChipFabric& fabric_;
  std::size_t core_;
};

ChipFabric::PortStats::PortStats(Group& fabric, std::size_t core, double gbps)
    : Group(fabric, fmt::format("core{}", core)),
      bytes_sent(*this, "bytes_sent", "bytes", "bytes this core's DMA sent to (or read from it by) other cores"),
      bytes_received(*this, "bytes_received", "bytes", "bytes that reached this core from other cores"),
      signals_sent(*this, "signals_sent", "count", "semaphore increments this core sent to other cores"),
      send_busy_ns(*this, "send_busy_ns", "ns", "time the outgoing direction of this core's port was busy",
                   [this, gbps] { return bytes_sent.value() / gbps; }),
      receive_busy_ns(*this, "receive_busy_ns", "ns", "time the incoming direction of this core's port was busy",
                      [this, gbps] { return bytes_received.value() / gbps; }) {}

ChipFabric::ChipFabric(sc_core::sc_module_name name, const arch::HwConfig& cfg, std::size_t cores,
                       trace::Stats& stats)
    : sc_module(name),
      socket("socket"),
      map_(cfg),
      cores_(cores),
      latency_(cfg.chip.core_link_latency_ns, SC_NS),
      semaphores_(cores, nullptr),
      sending_(cores, 1.0 / cfg.chip.core_link_bandwidth_gbps, cfg.chip.core_link_bandwidth_gbps * kBinNs, kBinNs),
      receiving_(sending_),
      group_(stats, *this) {
  socket.register_b_transport(this, &ChipFabric::b_transport);
  for (std::size_t i = 0; i < cores; ++i) {
    to_core_.push_back(std::make_unique<tlm_utils::simple_initiator_socket<ChipFabric>>(
        fmt::format("to_core{}", i).c_str()));
    ports_.push_back(std::make_unique<Port>(*this, i));
    stats_.push_back(std::make_unique<PortStats>(group_, i, cfg.chip.core_link_bandwidth_gbps));
  }
}

ChipFabric::~ChipFabric() = default;

PeerSignals& ChipFabric::signals(std::size_t index) { return *ports_.at(index); }

void ChipFabric::attach(std::size_t index, Interconnect& interconnect, Semaphores& semaphores) {
  if (!interconnect.to_fabric) throw std::logic_error("the interconnect of a chip's core needs its fabric port");
  interconnect.to_fabric->bind(socket);
  to_core_.at(index)->bind(interconnect.target);
  semaphores_.at(index) = &semaphores;
}

sc_time ChipFabric::move(std::size_t from, std::size_t to, std::uint64_t bytes, const sc_time& start) {
  const double start_ns = trace::ns(start);
  const auto stale = static_cast<std::int64_t>(trace::ns(sc_core::sc_time_stamp()) / kBinNs) - 1;
  const double n = static_cast<double>(bytes);
  const double done = std::max(sending_.book(from, n, start_ns, stale), receiving_.book(to, n, start_ns, stale));
  stats_[from]->bytes_sent += n;
  stats_[to]->bytes_received += n;
  return trace::from_ns(done) + latency_;
}

void ChipFabric::b_transport(int from_index, tlm::tlm_generic_payload& trans, sc_time& delay) {
  const auto from = static_cast<std::size_t>(from_index);
  const std::uint64_t address = trans.get_address();
  arch::PeerAddress peer;
  if (!map_.decode_peer(address, trans.get_data_length(), peer) || peer.core >= cores_) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  const auto to = static_cast<std::size_t>(peer.core);
  // A read's bytes come back from the peer; a write's (or a timing-only
  // access's: DMA moves data outward unless it reads) go to it.
  const bool read = trans.is_read();
  const sc_time arrived =
      move(read ? to : from, read ? from : to, trans.get_data_length(), sc_core::sc_time_stamp() + delay);
  delay = arrived - sc_core::sc_time_stamp();
  trans.set_address(peer.local);
  (*to_core_[to])->b_transport(trans, delay);
  trans.set_address(address);
}

std::string ChipFabric::signal(std::size_t from, std::uint64_t address, std::uint32_t value) {
  arch::PeerAddress peer;
  if (!map_.decode_peer(address, arch::kSemaphoreStride, peer) || peer.local < arch::kSemaphoreBase ||
      (peer.local - arch::kSemaphoreBase) % arch::kSemaphoreStride != 0)
    return fmt::format("SemSignal: 0x{:x} is not another core's semaphore ({})", address, map_.describe(address));
  if (peer.core >= cores_)
    return fmt::format("SemSignal: semaphore of core {}, but the chip runs {} cores", peer.core, cores_);
  const auto to = static_cast<std::size_t>(peer.core);
  const sc_time arrives = move(from, to, arch::kSemaphoreStride, sc_core::sc_time_stamp());
  ++stats_[from]->signals_sent;
  semaphores_[to]->increment_at((peer.local - arch::kSemaphoreBase) / arch::kSemaphoreStride, value, arrives);
  return {};
}

}  // namespace tessera::core
