#include "dma/dma_engine.h"

#include "dma/dma_pattern.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tessera::dma {

using sc_core::sc_time;
using sc_core::sc_time_stamp;
using sc_core::SC_NS;
using sc_core::SC_ZERO_TIME;

namespace {

// Bursts of at most 256 beats that never cross a 4 KiB page.
std::uint32_t max_burst_bytes(std::uint32_t data_bytes) { return std::min<std::uint32_t>(4096, 256 * data_bytes); }

// Cycle counts of the RTL (rtl/dma/tsr_dma_engine.sv), measured through the
// AXI4-to-TLM bridge (cosim/, TESSERA_DMA_BRIDGE_LOG): see docs/cosim.md.
constexpr double kDoorbellToFetch = 2;   // Q_TAIL write to the fetch AR
constexpr double kFetchAhead = 4;        // fetch data back to the next descriptor's fetch AR
constexpr double kDecode = 5;            // fetch data back (or hand-off) to the first data AR
constexpr double kReadSlotReuse = 2;     // last R beat of a burst to the AR that reuses its slot
constexpr double kReadToWrite = 3;       // last R beat a write burst needs to its first W beat
constexpr double kWriteToCompletion = 3; // last B to the semaphore write
constexpr double kCompletionToStatus = 1;

}  // namespace

sc_time DmaEngine::on_clock(const sc_time& t) const {
  return period_ * std::ceil(t / period_ - 1e-9);
}

DmaEngine::DmaEngine(sc_core::sc_module_name name, core::CoreContext& ctx, std::uint32_t queues)
    : DmaEngineBase(name),
      ctx_(ctx),
      // The engine moves one data beat per cycle, so its clock is what gives
      // the configured bandwidth.
      period_(static_cast<double>(ctx.cfg.dma.axi_data_bytes) / ctx.cfg.dma.bytes_per_ns, SC_NS),
      max_outstanding_(static_cast<std::uint32_t>(ctx.cfg.dma.max_outstanding)),
      queues_(queues),
      tail_visible_(queues),
      bytes_(ctx.stats.counter(std::string(this->name()) + ".bytes", "bytes", "bytes moved")),
      descriptors_(ctx.stats.counter(std::string(this->name()) + ".descriptors", "count", "descriptors completed")),
      busy_ns_(ctx.stats.counter(std::string(this->name()) + ".busy_ns", "ns", "time with a descriptor running")) {
  SC_THREAD(run);
}

void DmaEngine::configure_queue(std::uint32_t q, std::uint64_t ring_base, std::uint32_t ring_size) {
  QueueState& s = queues_.at(q);
  s = QueueState{};
  s.ring_base = ring_base;
  s.ring_size = ring_size;
}

std::string DmaEngine::doorbell(std::uint32_t q, std::uint64_t address, std::uint32_t count,
                                sc_time visible_after) {
  if (q >= queues_.size()) return fmt::format("{}: no queue {}", name(), q);
  QueueState& s = queues_[q];
  if (s.ring_size == 0) return fmt::format("{}.q{}: doorbell on a queue without a descriptor ring", name(), q);
  // The tail the engine will see once every earlier doorbell has landed.
  const std::uint32_t tail = pending_.empty() ? s.tail : [&] {
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it)
      if (it->queue == q) return it->tail;
    return s.tail;
  }();
  const std::uint64_t expected = s.ring_base + std::uint64_t{tail} * arch::kDmaDescriptorBytes;
  if (address != expected)
    return fmt::format("{}.q{}: doorbell names descriptor 0x{:x}, but the ring's next slot is 0x{:x}", name(), q,
                       address, expected);
  const std::uint32_t in_flight = (tail + s.ring_size - s.head) % s.ring_size;
  if (count >= s.ring_size - in_flight)
    return fmt::format("{}.q{}: {} more descriptors overflow a ring of {} ({} in flight)", name(), q, count,
                       s.ring_size, in_flight);
  pending_.push_back({sc_time_stamp() + visible_after, q, (tail + count) % s.ring_size});
  doorbell_event_.notify(visible_after);
  return {};
}

void DmaEngine::apply_due_doorbells() {
  while (!pending_.empty() && pending_.front().visible <= sc_time_stamp()) {
    queues_[pending_.front().queue].tail = pending_.front().tail;
    tail_visible_.resize(queues_.size());
    tail_visible_[pending_.front().queue] = pending_.front().visible;
    pending_.pop_front();
  }
}

void DmaEngine::run() {
  for (;;) {
    apply_due_doorbells();
    std::int64_t pick = -1;
    for (std::uint32_t i = 0; i < queues_.size(); ++i) {
      const std::uint32_t q = (next_queue_ + i) % static_cast<std::uint32_t>(queues_.size());
      const QueueState& s = queues_[q];
      if (s.error == arch::DmaError::kNone && s.ring_size > 0 && s.head != s.tail) {
        pick = q;
        break;
      }
    }
    if (pick < 0) {
      sc_core::wait(doorbell_event_);
      continue;
    }
    next_queue_ = (static_cast<std::uint32_t>(pick) + 1) % static_cast<std::uint32_t>(queues_.size());
    const sc_time start = sc_time_stamp();
    execute(static_cast<std::uint32_t>(pick));
    busy_ns_ += (sc_time_stamp() - start).to_seconds() * 1e9;
  }
}

void DmaEngine::fail(std::uint32_t q, arch::DmaError code, const std::string& detail) {
  QueueState& s = queues_[q];
  s.error = code;
  s.error_index = s.head;
  ctx_.fail(fmt::format("{}.q{} descriptor {} (at 0x{:x}): {}: {}", name(), q, s.head,
                        s.ring_base + std::uint64_t{s.head} * arch::kDmaDescriptorBytes, arch::to_string(code),
                        detail));
}

sc_time DmaEngine::transport(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data, std::uint32_t length,
                             sc_time at, bool& error) {
  tlm::tlm_generic_payload t;
  t.set_command(cmd);
  t.set_address(address);
  t.set_data_ptr(data);
  t.set_data_length(length);
  t.set_streaming_width(length);
  t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_time delay = at > sc_time_stamp() ? at - sc_time_stamp() : SC_ZERO_TIME;
  socket->b_transport(t, delay);
  error = t.is_response_error();
  return sc_time_stamp() + delay;
}

void DmaEngine::execute(std::uint32_t q) {
  QueueState& s = queues_[q];
  const std::uint64_t desc_addr = s.ring_base + std::uint64_t{s.head} * arch::kDmaDescriptorBytes;
  const sc_time cycle = period_;
  const std::uint32_t beat = static_cast<std::uint32_t>(ctx_.cfg.dma.axi_data_bytes);
  bool err = false;
  // AXI moves whole beats aligned to the bus: a burst's beat count and the
  // bytes memory is asked for follow from the aligned range.
  const auto aligned = [&](const Run& r) {
    const std::uint64_t lo = r.address / beat * beat, hi = (r.address + r.bytes + beat - 1) / beat * beat;
    return std::make_pair(lo, static_cast<std::uint32_t>(hi - lo));
  };
  const auto on_clock_after = [&](const sc_time& t) { return on_clock(t); };

  // Fetch: one descriptor ahead of the data, as the RTL's fetch unit does; an
  // idle engine starts from the doorbell's register write.
  // A fetch that the RTL issued while the previous descriptor ran lies in the
  // past here; memory is asked now and its latency counted from that issue.
  const sc_time fetch_issue = std::max(on_clock(tail_visible_.at(q)) + cycle * kDoorbellToFetch,
                                       last_fetch_ready_ + cycle * kFetchAhead);
  std::array<std::uint8_t, arch::kDmaDescriptorBytes> raw{};
  const sc_time asked = std::max(fetch_issue, sc_time_stamp());
  const sc_time fetched = on_clock_after(
      fetch_issue + (transport(tlm::TLM_READ_COMMAND, desc_addr, raw.data(), arch::kDmaDescriptorBytes, asked, err) -
                     asked));
  last_fetch_ready_ = fetched;
  if (err) return fail(q, arch::DmaError::kFetch, "descriptor fetch failed");
  const arch::DmaDescriptor d = arch::unpack(raw);
  if (d.magic != arch::kDmaDescriptorMagic)
    return fail(q, arch::DmaError::kMagic, fmt::format("magic byte 0x{:02x}, not 0x{:02x}", d.magic,
                                                       arch::kDmaDescriptorMagic));
  for (int i = 0; i < 4; ++i)
    if (d.src_size[i] == 0 || d.dst_size[i] == 0)
      return fail(q, arch::DmaError::kZeroLength, fmt::format("dimension {} has size 0", i));
  const auto count = [](const std::array<std::uint16_t, 4>& sz) {
    return std::uint64_t{sz[0]} * sz[1] * sz[2] * sz[3];
  };
  const std::uint64_t elem = 1ull << d.elem_log2;
  if (count(d.src_size) != count(d.dst_size))
    return fail(q, arch::DmaError::kMalformed, fmt::format("source has {} elements, destination {}",
                                                           count(d.src_size), count(d.dst_size)));
  if ((d.flags & arch::kDmaFlagCompletion) && d.sem_addr % 4 != 0)
    return fail(q, arch::DmaError::kMalformed, "semaphore address not 4-byte aligned");

  const auto src = bursts(pattern_runs(d.src_addr, d.src_size, d.src_stride, d.elem_log2), max_burst_bytes(beat));
  const auto dst = bursts(pattern_runs(d.dst_addr, d.dst_size, d.dst_stride, d.elem_log2), max_burst_bytes(beat));
  for (const auto* side : {&src, &dst})
    for (const Run& r : *side)
      if (ctx_.map.region_of(r.address, r.bytes) == arch::Region::None)
        return fail(q, arch::DmaError::kAddrWindow,
                    fmt::format("bytes 0x{:x}..0x{:x} are outside the device address map", r.address,
                                r.address + r.bytes - 1));
  const std::uint64_t total = count(d.src_size) * elem;
  // Timing-only runs move no bytes: TLM_IGNORE_COMMAND costs the same time.
  const bool data = !ctx_.no_data;
  std::vector<std::uint8_t> buffer(data ? total : 0), beats_in(data ? 0 : 1);
  const tlm::tlm_command read_cmd = data ? tlm::TLM_READ_COMMAND : tlm::TLM_IGNORE_COMMAND;
  const tlm::tlm_command write_cmd = data ? tlm::TLM_WRITE_COMMAND : tlm::TLM_IGNORE_COMMAND;
  std::uint8_t scratch[1];

  // Reads: one AR per cycle from the end of decode, a slot per outstanding
  // burst freed a little after its last beat; one R beat per cycle.
  const sc_time data_start = std::max(fetched, last_handoff_) + cycle * kDecode;
  std::vector<sc_time> last_beat(src.size());
  sc_time issue = data_start, r_channel = data_start;
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (i >= max_outstanding_) issue = std::max(issue, last_beat[i - max_outstanding_] + cycle * kReadSlotReuse);
    const auto [lo, len] = aligned(src[i]);
    std::vector<std::uint8_t> burst(data ? len : 0);
    const sc_time mem = on_clock_after(transport(read_cmd, lo, data ? burst.data() : scratch, len, issue, err));
    if (err) return fail(q, arch::DmaError::kReadResp, fmt::format("read of 0x{:x} failed", src[i].address));
    if (data) std::memcpy(buffer.data() + at, burst.data() + (src[i].address - lo), src[i].bytes);
    const sc_time first = std::max(mem, r_channel);
    last_beat[i] = first + cycle * static_cast<double>(len / beat - 1);
    r_channel = last_beat[i] + cycle;
    at += src[i].bytes;
    issue += cycle;
  }

  // Writes: a burst's first W beat follows the last R beat of the data it
  // carries; beats one per cycle; B responses in order, one per cycle.
  sc_time w_channel = data_start, b_channel = data_start, last_w = data_start;
  std::size_t read_idx = 0;
  std::uint64_t read_bytes = 0, written = 0;
  for (const Run& w : dst) {
    while (read_bytes < written + w.bytes) read_bytes += src[read_idx++].bytes;
    const std::uint32_t beats = aligned(w).second / beat;
    const sc_time start = std::max(w_channel, last_beat[read_idx - 1] + cycle * kReadToWrite);
    last_w = start + cycle * static_cast<double>(beats - 1);
    w_channel = last_w + cycle;
    const sc_time resp = on_clock_after(transport(write_cmd, w.address, data ? buffer.data() + written : scratch,
                                                  w.bytes, last_w, err));
    if (err) return fail(q, arch::DmaError::kWriteResp, fmt::format("write of 0x{:x} failed", w.address));
    b_channel = std::max(resp, b_channel + cycle);
    written += w.bytes;
  }

  // Completion: the semaphore increment, then the status word.
  sc_time done = b_channel + cycle * kWriteToCompletion;
  if (d.flags & arch::kDmaFlagCompletion) {
    std::uint32_t v = d.sem_value;
    transport(tlm::TLM_WRITE_COMMAND, d.sem_addr, reinterpret_cast<std::uint8_t*>(&v), 4, done, err);
    if (err) return fail(q, arch::DmaError::kWriteResp, fmt::format("semaphore write to 0x{:x} failed", d.sem_addr));
    done += cycle * kCompletionToStatus;
  }
  std::uint16_t status = 1u << arch::kDmaStatusDoneBit;
  const sc_time status_done = transport(tlm::TLM_WRITE_COMMAND, desc_addr + arch::kDmaStatusOffset,
                                        reinterpret_cast<std::uint8_t*>(&status), 2, done, err);
  completions_.push_back({q, s.head, status_done});

  bytes_ += static_cast<double>(total);
  ++descriptors_;
  ++s.descriptors_done;
  s.head = (s.head + 1) % s.ring_size;
  // The next descriptor may start once this one's last write beat is out;
  // its completion writes overlap the next transfer, as in the RTL.
  last_handoff_ = last_w;
  if (last_w > sc_time_stamp()) sc_core::wait(last_w - sc_time_stamp());
}

}  // namespace tessera::dma
