#include "dma/dma_engine.h"

#include "arch/dma_descriptor_check.h"
#include "dma/dma_pattern.h"
#include "trace/sim_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tessera::dma {

using sc_core::sc_time;
using sc_core::sc_time_stamp;
using sc_core::SC_NS;
using sc_core::SC_ZERO_TIME;

namespace {

// Cycle counts of the RTL (rtl/dma/tsr_dma_engine.sv), measured through the
// AXI4-to-TLM bridge (cosim/, TESSERA_DMA_BRIDGE_LOG): see docs/cosim.md.
constexpr double kDoorbellToFetch = 2;   // Q_TAIL write to the fetch AR
constexpr double kFetchAhead = 4;        // fetch data back to the next descriptor's fetch AR
constexpr double kDecode = 4;            // fetch data back to the first data AR
constexpr double kHandoffToRead = 5;     // previous descriptor's last W beat to the first data AR
constexpr double kReadSlotReuse = 2;     // last R beat of a burst to the AR that reuses its slot
constexpr double kReadToWrite = 3;       // last R beat a write burst needs to its first W beat
constexpr double kWriteToCompletion = 3; // last B to the semaphore write
constexpr double kWriteSlotReuse = 2;    // B of a write to the first W beat of the write that reuses its slot
constexpr double kCompletionToStatus = 1;
constexpr double kStatusAwToHandoff = 2;  // a waiting descriptor enters the completion stage this much before the status W beat
constexpr double kBarrierToRead = 2;      // the last write response a BARRIER waits for to its first data AR

}  // namespace

std::string DmaEngineBase::doorbell(std::uint32_t q, std::uint64_t address, std::uint32_t count,
                                    sc_time visible_after) {
  if (q >= queues_.size()) return fmt::format("{}: no queue {}", name(), q);
  QueueState& s = queues_[q];
  if (s.ring_size == 0) return fmt::format("{}.q{}: doorbell on a queue without a descriptor ring", name(), q);
  // The tail the engine will see once every earlier doorbell has landed.
  std::uint32_t tail = s.tail;
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it)
    if (it->queue == q) {
      tail = it->tail;
      break;
    }
  const std::uint64_t expected = s.ring_base + std::uint64_t{tail} * arch::kDmaDescriptorBytes;
  if (address != expected)
    return fmt::format("{}.q{}: doorbell names descriptor 0x{:x}, but the ring's next slot is 0x{:x}", name(), q,
                       address, expected);
  const std::uint32_t in_flight = (tail + s.ring_size - s.head) % s.ring_size;
  if (count >= s.ring_size - in_flight)
    return fmt::format("{}.q{}: {} more descriptors overflow a ring of {} ({} in flight)", name(), q, count,
                       s.ring_size, in_flight);
  pending_.push_back({sc_time_stamp() + visible_after, q, (tail + count) % s.ring_size});
  doorbells_.push_back({q, tail, count, sc_time_stamp() + visible_after});
  doorbell_event_.notify(visible_after);
  return {};
}

DmaEngineBase::DmaEngineStats::DmaEngineStats(trace::Stats& stats, const sc_core::sc_object& owner)
    : Group(stats, owner),
      bytes(*this, "bytes", "bytes", "bytes moved"),
      descriptors(*this, "descriptors", "count", "descriptors completed"),
      busy_ns(*this, "busy_ns", "ns", "time moving a descriptor's data, first read beat to last write beat") {}

DmaEngineBase::DmaEngineBase(sc_core::sc_module_name name, std::uint32_t queues, trace::Stats& stats)
    : sc_module(name), socket("socket"), stats_(stats, *this), queues_(queues) {
  const std::string base = basename();
  std::size_t digits = base.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(base[digits - 1]))) --digits;
  if (digits < base.size()) rank_ = static_cast<std::uint32_t>(std::stoul(base.substr(digits)));
}

void DmaEngineBase::take_turn() {
  if (turn_ever_ && turn_taken_ == sc_time_stamp()) return;
  for (std::uint32_t i = 0; i < rank_; ++i) sc_core::wait(SC_ZERO_TIME);
  turn_taken_ = sc_time_stamp();
  turn_ever_ = true;
}

void DmaTurnOrder::add(std::uint32_t rank) {
  if (next_.size() <= rank) next_.resize(rank + 1, sc_core::sc_max_time());
  next_[rank] = sc_time_stamp();
}

void DmaTurnOrder::next_access(std::uint32_t rank, const sc_time& t) {
  next_[rank] = t;
  if (waiting_ > 0 && t > sc_time_stamp()) moved_.notify(SC_ZERO_TIME);
}

void DmaTurnOrder::wait_for_lower(std::uint32_t rank) {
  for (;;) {
    const sc_time now = sc_time_stamp();
    bool lower_due = false;
    for (std::uint32_t j = 0; j < rank && !lower_due; ++j) lower_due = next_[j] <= now;
    if (!lower_due) return;
    ++waiting_;
    sc_core::wait(moved_);
    --waiting_;
  }
}

void DmaEngine::share_turn_order(std::shared_ptr<DmaTurnOrder> order) {
  turns_ = std::move(order);
  turns_->add(rank());
}

void DmaEngine::sleep_for(const sc_time& d) {
  turns_->next_access(rank(), sc_time_stamp() + d);
  sc_core::wait(d);
}

void DmaEngine::sleep_for(const sc_time& d, sc_core::sc_event& e) {
  turns_->next_access(rank(), sc_time_stamp() + d);
  sc_core::wait(d, e);
}

void DmaEngine::sleep_on(sc_core::sc_event& e) {
  turns_->next_access(rank(), sc_core::sc_max_time());
  sc_core::wait(e);
}

void DmaEngine::take_turn_in_order() {
  const sc_time now = sc_time_stamp();
  if (turn_at_ == now) return;
  turns_->next_access(rank(), now);
  turns_->wait_for_lower(rank());
  turn_at_ = now;
}

DmaEngine::DmaEngine(sc_core::sc_module_name name, core::CoreContext& ctx, std::uint32_t queues)
    : DmaEngineBase(name, queues, ctx.stats),
      ctx_(ctx),
      // The engine moves one data beat per cycle, so its clock is what gives
      // the configured bandwidth.
      period_(static_cast<double>(ctx.cfg.dma.axi_data_bytes) / ctx.cfg.dma.bytes_per_ns, SC_NS),
      max_outstanding_(static_cast<std::uint32_t>(ctx.cfg.dma.max_outstanding)),
      run_gap_(period_ * static_cast<double>(ctx.cfg.dma.run_gap_cycles)),
      descriptor_gap_(period_ * static_cast<double>(ctx.cfg.dma.descriptor_gap_cycles)),
      fetch_ptr_(queues, 0),
      tail_visible_(queues),
      last_fetched_queue_(queues - 1) {
  // TESSERA_DMA_BRIDGE_LOG=1 prints every memory access with its time, as the
  // RTL bridge does, so the two can be compared line by line.
  log_ = std::getenv("TESSERA_DMA_BRIDGE_LOG") != nullptr;
  share_turn_order(std::make_shared<DmaTurnOrder>());
  SC_THREAD(run);
}

sc_time DmaEngine::on_clock(const sc_time& t) const { return period_ * std::ceil(t / period_ - 1e-9); }

void DmaEngine::configure_queue(std::uint32_t q, std::uint64_t ring_base, std::uint32_t ring_size) {
  QueueState& s = queues_.at(q);
  s = QueueState{};
  s.ring_base = ring_base;
  s.ring_size = ring_size;
  fetch_ptr_.at(q) = 0;
}

void DmaEngine::apply_due_doorbells() {
  while (!pending_.empty() && pending_.front().visible <= sc_time_stamp()) {
    const PendingTail& p = pending_.front();
    const sc_time write = std::max(on_clock(p.visible), next_tail_write_);
    next_tail_write_ = write + period_;
    // A queue that still had descriptors to fetch was ready before this write.
    if (fetch_ptr_[p.queue] == queues_[p.queue].tail) tail_visible_[p.queue] = write;
    queues_[p.queue].tail = p.tail;
    wave_queue(p.queue);
    pending_.pop_front();
  }
}

sc_time DmaEngine::fetch_ready_at(const sc_time& not_before) const {
  sc_time at = sc_core::sc_max_time();
  for (std::uint32_t q = 0; q < queues_.size(); ++q) {
    const QueueState& s = queues_[q];
    if (s.error == arch::DmaError::kNone && s.ring_size > 0 && fetch_ptr_[q] != s.tail)
      at = std::min(at, std::max(not_before, tail_visible_[q] + period_ * kDoorbellToFetch));
  }
  return at;
}

std::int64_t DmaEngine::ready_queue(std::uint32_t after, const sc_time& ar) const {
  const auto n = static_cast<std::uint32_t>(queues_.size());
  for (std::uint32_t i = 1; i <= n; ++i) {
    const std::uint32_t q = (after + i) % n;
    const QueueState& s = queues_[q];
    if (s.error == arch::DmaError::kNone && s.ring_size > 0 && fetch_ptr_[q] != s.tail &&
        tail_visible_[q] + period_ * kDoorbellToFetch <= ar)
      return q;
  }
  return -1;
}

void DmaEngine::run() {
  for (;;) {
    apply_due_doorbells();
    if (prefetched_) {
      const Fetched next = *prefetched_;
      prefetched_.reset();
      execute(next);
      continue;
    }
    // An idle fetch unit fetches two cycles after the doorbell's register
    // write, four after the previous fetch's data.
    const sc_time never = sc_core::sc_max_time();
    const sc_time issue =
        fetch_ready_at(std::max(on_clock(sc_time_stamp()), last_fetch_ready_ + period_ * kFetchAhead));
    // The completion stage's writes go out in their own cycles meanwhile
    // (within one cycle the fetch's AR goes before a W).
    const sc_time due = completions_pending_.empty() ? never : completion_time();
    if (issue != never && issue <= due) {
      const std::int64_t q = ready_queue(last_fetched_queue_, issue);
      execute(fetch(static_cast<std::uint32_t>(q), issue));
      continue;
    }
    // A doorbell rung while the engine was busy may still be on its way; its
    // notification can be lost (an sc_event keeps only its earliest pending
    // notification), so wait for its visible time too.
    if (due == never) {
      if (pending_.empty()) sleep_on(doorbell_event_);
      else sleep_for(pending_.front().visible - sc_time_stamp(), doorbell_event_);
      continue;
    }
    // Finish the completion stage, unless a doorbell comes first.
    const sc_time until = pending_.empty() ? due : std::min(due, pending_.front().visible);
    if (until > sc_time_stamp()) {
      sleep_for(until - sc_time_stamp(), doorbell_event_);
      if (sc_time_stamp() < due) continue;
    }
    complete_oldest();
  }
}

void DmaEngine::fail(std::uint32_t q, std::uint32_t index, arch::DmaError code, const std::string& detail) {
  QueueState& s = queues_[q];
  s.error = code;
  s.error_index = index;
  ctx_.fail(fmt::format("{}.q{} descriptor {} (at 0x{:x}): {}: {}", name(), q, index,
                        s.ring_base + std::uint64_t{index} * arch::kDmaDescriptorBytes, arch::to_string(code),
                        detail));
}

sc_time DmaEngine::transport_at(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data,
                                std::uint32_t length, sc_time at, bool& error) {
  if (at > sc_time_stamp()) sleep_for(at - sc_time_stamp());
  take_turn_in_order();
  tlm::tlm_generic_payload& t = payload_;
  t.set_command(cmd);
  t.set_address(address);
  t.set_data_ptr(data);
  t.set_data_length(length);
  t.set_streaming_width(length);
  t.set_byte_enable_ptr(nullptr);
  t.set_byte_enable_length(0);
  t.set_dmi_allowed(false);
  t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_time delay = SC_ZERO_TIME;
  socket->b_transport(t, delay);
  error = t.is_response_error();
  if (log_)
    std::fprintf(stderr, "%s %.3f %s 0x%llx bytes %u answer %.3f\n", name(), trace::ns(sc_time_stamp()),
                 cmd == tlm::TLM_WRITE_COMMAND ? "W" : "R", static_cast<unsigned long long>(address), length,
                 trace::ns(sc_time_stamp() + delay));
  return sc_time_stamp() + delay;
}

DmaEngine::Fetched DmaEngine::fetch(std::uint32_t q, sc_time issue) {
  QueueState& s = queues_[q];
  Fetched f;
  f.queue = q;
  f.index = fetch_ptr_[q];
  fetch_ptr_[q] = (fetch_ptr_[q] + 1) % s.ring_size;
  last_fetched_queue_ = q;
  f.ready = on_clock(transport_at(tlm::TLM_READ_COMMAND, s.ring_base + std::uint64_t{f.index} * arch::kDmaDescriptorBytes,
                         f.raw.data(), arch::kDmaDescriptorBytes, issue, f.error));
  last_fetch_ready_ = f.ready;
  return f;
}

sc_time DmaEngine::write_slot_free() const {
  // A write holds one of max_outstanding slots from AW to B.
  return writes_b_.size() < max_outstanding_ ? SC_ZERO_TIME
                                             : writes_b_[writes_b_.size() - max_outstanding_] + period_ * kWriteSlotReuse;
}

void DmaEngine::write_answered(const sc_time& b) {
  b_last_ = std::max(b, b_last_ + period_);
  writes_b_.push_back(b_last_);
  if (writes_b_.size() > max_outstanding_) writes_b_.pop_front();
}

sc_time DmaEngine::completion_aw() const {
  const sc_time slot = write_slot_free();
  const sc_time aw = completions_pending_.front().aw;
  return slot > SC_ZERO_TIME ? std::max(aw, slot - period_) : aw;
}

sc_time DmaEngine::completion_time() const {
  // Completion writes go ahead of data bursts, between bursts.
  return std::max({completions_pending_.front().ready, w_free_, write_slot_free()});
}

void DmaEngine::complete_oldest() {
  // One write per call (semaphore, then status), each a W beat of its own, so
  // that data bursts of the next descriptor interleave with them as in the RTL.
  const sc_time at = completion_time();
  const sc_time aw = completion_aw();
  next_aw_ = std::max(next_aw_, aw + period_);  // a data AW goes in a later cycle
  PendingCompletion& c = completions_pending_.front();
  QueueState& s = queues_[c.queue];
  bool err = false;
  w_free_ = at + period_;
  if (c.semaphore) {
    std::uint32_t v = c.sem_value;
    const sc_time resp =
        on_clock(transport_at(tlm::TLM_WRITE_COMMAND, c.sem_addr, reinterpret_cast<std::uint8_t*>(&v), 4, at, err));
    if (err) return fail(c.queue, c.index, arch::DmaError::kWriteResp,
                         fmt::format("semaphore write to 0x{:x} failed", c.sem_addr));
    write_answered(resp);
    c.semaphore = false;
    c.ready = at + period_ * kCompletionToStatus;
    c.aw = aw + period_ * kCompletionToStatus;
    return;
  }
  const PendingCompletion done = c;
  completions_pending_.pop_front();
  std::uint16_t status = 1u << arch::kDmaStatusDoneBit;
  const std::uint64_t slot = s.ring_base + std::uint64_t{done.index} * arch::kDmaDescriptorBytes;
  const sc_time answered = transport_at(tlm::TLM_WRITE_COMMAND, slot + arch::kDmaStatusOffset,
                                        reinterpret_cast<std::uint8_t*>(&status), 2, at, err);
  write_answered(on_clock(answered));
  completions_.push_back({done.queue, done.index, answered});
  ++stats_.descriptors;
  ++s.descriptors_done;
  s.head = (done.index + 1) % s.ring_size;
  wave_queue(done.queue);
}

std::optional<std::pair<arch::DmaError, std::string>> DmaEngine::decode(const Fetched& f, arch::DmaDescriptor& d,
                                                                         std::vector<Run>& src,
                                                                         std::vector<Run>& dst) const {
  if (f.error) return std::make_pair(arch::DmaError::kFetch, std::string("descriptor fetch failed"));
  d = arch::unpack(f.raw);
  if (const arch::DmaCheck c = arch::check(d); !c.ok()) return std::make_pair(c.code, c.detail);
  const std::uint32_t beat = static_cast<std::uint32_t>(ctx_.cfg.dma.axi_data_bytes);
  pattern_bursts(d.src_addr, d.src_size, d.src_stride, d.elem_log2, max_burst_bytes(beat), src);
  pattern_bursts(d.dst_addr, d.dst_size, d.dst_stride, d.elem_log2, max_burst_bytes(beat), dst);
  for (const auto* side : {&src, &dst})
    for (const Run& r : *side)
      if (ctx_.map.region_of(r.address, r.bytes) == arch::Region::None)
        return std::make_pair(arch::DmaError::kAddrWindow,
                              fmt::format("bytes 0x{:x}..0x{:x} are outside the device address map", r.address,
                                          r.address + r.bytes - 1));
  return std::nullopt;
}

void DmaEngine::execute(Fetched f) {
  const sc_time cycle = period_;
  const sc_time never = sc_core::sc_max_time();
  const std::uint32_t beat = static_cast<std::uint32_t>(ctx_.cfg.dma.axi_data_bytes);
  bool err = false;
  std::vector<Run>& src = scratch_.src;  // read bursts: the running descriptor's, then the read-ahead one's
  std::vector<Run>& dst = scratch_.dst;  // the running descriptor's write bursts
  // The running descriptor (the write side).
  std::uint32_t q = f.queue, index = f.index;
  arch::DmaDescriptor d;
  if (auto e = decode(f, d, src, dst)) return fail(q, index, e->first, e->second);
  std::uint64_t total = arch::dma_elements(d.src_size) << d.elem_log2;
  // Timing-only runs move no bytes: TLM_IGNORE_COMMAND costs the same time.
  const bool data = !ctx_.no_data;
  // The bytes of the stream from the running descriptor's first on (the
  // read-ahead descriptor's follow it).
  std::vector<std::uint8_t>& buffer = scratch_.buffer;
  buffer.assign(data ? total : 0, 0);
  std::uint8_t scratch[arch::kDmaDescriptorBytes];
  const tlm::tlm_command read_cmd = data ? tlm::TLM_READ_COMMAND : tlm::TLM_IGNORE_COMMAND;
  const tlm::tlm_command write_cmd = data ? tlm::TLM_WRITE_COMMAND : tlm::TLM_IGNORE_COMMAND;
  // AXI moves whole beats aligned to the bus: a burst's beat count and the
  // bytes memory is asked for follow from the aligned range.
  const auto aligned = [&](const Run& r) {
    const std::uint64_t lo = r.address / beat * beat, hi = (r.address + r.bytes + beat - 1) / beat * beat;
    return std::make_pair(lo, static_cast<std::uint32_t>(hi - lo));
  };

  // Every access goes to memory at its own time, in time order: reads (one
  // AR per cycle, a slot per outstanding burst freed a little after its last
  // beat), write bursts (first W beat after the last R beat of their data),
  // the completion writes of earlier descriptors (ahead of data bursts, between
  // bursts) and the fetch of the next descriptor (one ahead).
  const sc_time data_start = std::max(f.ready + cycle * kDecode, last_handoff_ + cycle * kHandoffToRead);
  // A BARRIER holds the first read until the completion stage is empty and
  // every write of the engine (completion writes too) is acknowledged; the
  // fetch unit goes on meanwhile. (A BARRIER descriptor never reads ahead.)
  bool barrier = (d.flags & arch::kDmaFlagBarrier) != 0;
  std::vector<sc_time>& last_beat = scratch_.last_beat;
  std::vector<sc_time>& ready_at = scratch_.ready_at;
  std::vector<sc_time>& retired = scratch_.retired;  // retire(k) of the final prefix
  std::vector<std::uint32_t>& read_beats = scratch_.read_beats;
  std::vector<char>& delivered = scratch_.delivered;
  std::vector<std::uint64_t>& read_end = scratch_.read_end;  // stream offset after each read burst
  last_beat.assign(src.size(), SC_ZERO_TIME);
  ready_at.assign(src.size(), SC_ZERO_TIME);
  retired.assign(src.size(), SC_ZERO_TIME);
  read_beats.assign(src.size(), 0);
  delivered.assign(src.size(), 0);
  read_end.assign(src.size(), 0);
  std::size_t ri = 0, wi = 0;
  std::size_t src_end = src.size();  // the running descriptor's read bursts: [0, src_end)
  // Bursts [0, placed) are delivered: their last beats are final, and so is
  // retired[k] for them. The others are placed again on each call.
  std::size_t placed = 0;
  std::size_t need = 0;  // the read bursts the next write burst waits for: [0, need]
  sc_time next_read = data_start, r_channel = data_start, last_w = data_start;
  sc_time retired_floor = SC_ZERO_TIME;  // the earliest burst 0 retires (after a hand-off: after the last one before it)
  // The R channel carries whole bursts, the one whose data came back first
  // next (as the bridge does). A burst's place is final once it has started:
  // any read issued later comes back later. The others are placed again
  // whenever a read is issued.
  // The next descriptor's fetch, once issued, comes back on the same R
  // channel and takes its place among the data bursts (after the bursts
  // issued before it when they are ready in the same cycle).
  constexpr std::size_t kFetch = static_cast<std::size_t>(-1);
  bool fetch_on_r = false;
  std::size_t fetch_after = 0;    // data bursts issued before the fetch
  sc_time fetch_last = SC_ZERO_TIME;  // the fetch's R beat as placed so far
  const auto place = [&]() {
    std::vector<std::size_t>& open = scratch_.open;
    open.clear();
    for (std::size_t i = placed; i < ri; ++i)
      if (!delivered[i]) open.push_back(i);
    if (fetch_on_r) open.push_back(kFetch);
    const auto ready = [&](std::size_t k) { return k == kFetch ? prefetched_->ready : ready_at[k]; };
    const auto issued = [&](std::size_t k) {
      return k == kFetch ? 2 * static_cast<std::int64_t>(fetch_after) - 1 : 2 * static_cast<std::int64_t>(k);
    };
    std::sort(open.begin(), open.end(), [&](std::size_t x, std::size_t y) {
      return ready(x) != ready(y) ? ready(x) < ready(y) : issued(x) < issued(y);
    });
    sc_time ch = r_channel;
    bool final_so_far = true;
    for (const std::size_t k : open) {
      const sc_time first = std::max(ready(k), ch);
      const std::uint32_t beats = k == kFetch ? arch::kDmaDescriptorBytes / beat : read_beats[k];
      const sc_time last = first + cycle * static_cast<double>(beats - 1);
      if (k != kFetch) last_beat[k] = last;
      else fetch_last = last;
      ch = last + cycle;
      final_so_far = final_so_far && first <= sc_time_stamp();
      if (final_so_far) {
        if (k == kFetch) {
          fetch_on_r = false;
          prefetched_->ready = last;
        } else {
          delivered[k] = true;
        }
        r_channel = ch;
      }
    }
    for (; placed < ri && delivered[placed]; ++placed)
      retired[placed] = placed == 0 ? std::max(last_beat[0], retired_floor)
                                    : std::max(last_beat[placed], retired[placed - 1] + cycle);
  };
  // Reads retire in issue order, one per cycle: a burst's data is writable,
  // and its slot reusable, once it and every burst before it have arrived.
  const auto retire = [&](std::size_t k) {
    if (k < placed) return retired[k];
    sc_time t = placed == 0 ? std::max(last_beat[0], retired_floor)
                            : std::max(last_beat[placed], retired[placed - 1] + cycle);
    for (std::size_t i = placed + 1; i <= k; ++i) t = std::max(last_beat[i], t + cycle);
    return t;
  };
  std::uint64_t read_at = 0, written = 0;
  // Bytes leave the buffer beat by beat as W sends them; a read reserves its
  // bytes at issue and waits for room (the cycle after the beat that made it).
  // The stream runs on into a read-ahead descriptor, so its reads find room
  // only as the running descriptor's writes drain.
  const std::uint64_t buffer_size = buffer_bytes(max_outstanding_);
  // The write bursts sent so far, in order; a burst's W beats go one per cycle
  // from its first, the first beat up to the next bus boundary, then whole beats.
  std::vector<SentBurst>& consumed = scratch_.sent;
  consumed.clear();
  const auto sent_bytes = [&]() -> std::uint64_t { return consumed.empty() ? written : consumed.back().sent_after; };
  // The cycle of the first W beat of `w` (first beat at `start`, `sent` bytes
  // before it) by which `target` bytes in all have been sent; never if none.
  const auto beat_with = [&](const Run& w, sc_time start, std::uint64_t sent, std::uint64_t target) {
    if (sent + w.bytes < target) return sc_core::sc_max_time();
    const std::uint64_t first = std::min<std::uint64_t>(w.bytes, beat - w.address % beat);
    if (sent + first >= target) return start;
    const std::uint64_t more = (target - sent - first + beat - 1) / beat;  // whole beats after the first
    return start + cycle * static_cast<double>(more);
  };
  // When a read of `bytes` finds room: after the beats already sent, or those
  // of the next write burst, which goes out at `next_write_start` whatever
  // the read does (writes wait only for earlier reads).
  const auto room_at = [&](std::uint64_t bytes, std::size_t next_write, sc_time next_write_start) {
    if (read_at + bytes <= buffer_size) return SC_ZERO_TIME;
    const std::uint64_t room = read_at + bytes - buffer_size;  // bytes that must have left the buffer
    const auto it = std::lower_bound(consumed.begin(), consumed.end(), room,
                                     [](const SentBurst& b, std::uint64_t n) { return b.sent_after < n; });
    if (it != consumed.end()) return beat_with(dst[it->write], it->start, it->sent_before, room) + cycle;
    if (next_write < dst.size() && next_write_start != sc_core::sc_max_time()) {
      const sc_time t = beat_with(dst[next_write], next_write_start, sent_bytes(), room);
      if (t != sc_core::sc_max_time()) return t + cycle;
    }
    return sc_core::sc_max_time();
  };
  bool prefetch_done = false;
  sc_time fetch_unit_free = std::max(f.ready + cycle * kFetchAhead, data_start);

  // The read-ahead descriptor: once the running one has issued its last read,
  // the next fetched descriptor of its queue (decoded without error, no
  // BARRIER) starts reading the cycle after both that and two cycles after its
  // fetch data (the RTL's fetch port), as long as that is before the running
  // one's hand-off. It takes over the write side at the hand-off.
  bool ahead = false;
  int ahead_ok = -1;  // whether prefetched_ may read ahead: -1 not decided yet
  Fetched ahead_f;
  arch::DmaDescriptor ahead_d;
  std::vector<Run>& ahead_src = scratch_.ahead_src;
  std::vector<Run>& ahead_dst = scratch_.ahead_dst;
  sc_time last_ar = SC_ZERO_TIME;        // the last data AR
  sc_time ahead_floor = SC_ZERO_TIME;    // the earliest cycle a read-ahead may start
  sc_time aw_floor = SC_ZERO_TIME;       // the earliest AW of the running descriptor
  std::size_t start_at = 0;              // the read burst that starts a descriptor (its first AR is its start)
  std::uint32_t start_q = q, start_index = index;
  // The hand-off: once the running descriptor's last write burst is out
  // and the completion stage has finished the previous descriptor.
  bool writes_done = false, handoff_known = false, behind_valid = false, queued_behind = false;
  sc_time handoff = SC_ZERO_TIME, handoff_at = never;

  // The running descriptor's last write beat is out and the completion
  // stage is free: it moves there (its semaphore and status writes go once
  // every write the engine has issued is acknowledged).
  const auto hand_off = [&]() {
    stats_.bytes += static_cast<double>(total);
    // Moving: from the first data beat on R (bursts may come back out of
    // order, and a read-ahead descriptor's may come back first) to the last
    // on W, both cycles included; overlapping descriptors count once, as
    // the RTL counts moving_o.
    sc_time first_r = sc_core::sc_max_time();
    for (std::size_t k = 0; k < src.size(); ++k)
      if (k < src_end || delivered[k])
        first_r = std::min(first_r, last_beat[k] - cycle * static_cast<double>(read_beats[k] - 1));
    const sc_time from = moving_any_ ? std::max(first_r, moving_until_ + cycle) : first_r;
    if (last_w >= from) stats_.busy_ns += trace::ns(last_w - from + cycle);
    moving_any_ = true;
    moving_until_ = last_w;
    completions_pending_.push_back({q, index, b_last_ + cycle * kWriteToCompletion,
                                    b_last_ + cycle * (kWriteToCompletion - 1), (d.flags & arch::kDmaFlagCompletion) != 0, d.sem_addr, d.sem_value});
    last_handoff_ = handoff;
    handoff_known = true;
    // The control takes the hand-off two cycles after `handoff`.
    handoff_at = handoff + cycle * 2;
    if (sampler_) {
      const std::vector<std::uint8_t>* bytes = nullptr;
      if (data && buffer.size() == total) bytes = &buffer;
      else if (data) {
        scratch_.sampled.assign(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(total));
        bytes = &scratch_.sampled;
      }
      sampler_->executed({rank(), q, index, queues_[q].ring_base + std::uint64_t{index} * arch::kDmaDescriptorBytes,
                          d, bytes});
    }
  };

  for (;;) {
    // Candidate times; "never" when not possible yet.
    place();
    sc_time t_read = never, t_write = never, t_write_start = never, t_complete = never, t_fetch = never;
    sc_time t_aw = never, t_ahead = never;
    std::uint32_t w_beats = 0;
    if (wi < dst.size()) {
      while (need < ri && read_end[need] < written + dst[wi].bytes) ++need;
      if (need < ri) {
        w_beats = aligned(dst[wi]).second / beat;
        // Its AW goes a cycle before its first W beat can: once its data is
        // committed and a write slot is free, in order after the last AW,
        // and, for a run start, a run gap after the last run start.
        t_aw = std::max({retire(need) + cycle * (kReadToWrite - 1), next_aw_, aw_floor});
        if (const sc_time slot = write_slot_free(); slot > SC_ZERO_TIME) t_aw = std::max(t_aw, slot - cycle);
        if (dst[wi].first) t_aw = std::max(t_aw, next_run_aw_);
        t_aw = std::max(t_aw, next_descriptor_aw_);  // set at a descriptor's last beat: binds only the next one's first AW
        t_write_start = std::max(w_free_, t_aw + cycle);
        t_write = t_write_start + cycle * static_cast<double>(w_beats - 1);
      }
    }
    if (ri < src.size()) {
      t_read = ri >= max_outstanding_ ? std::max(next_read, retire(ri - max_outstanding_) + cycle * kReadSlotReuse)
                                      : next_read;
      if (src[ri].first) t_read = std::max(t_read, next_run_ar_);
    }
    if (ri < src.size() && t_read != never) t_read = std::max(t_read, room_at(src[ri].bytes, wi, t_write_start));
    if (barrier && ri == 0)  // the barrier state takes a cycle even when nothing is outstanding
      t_read = !completions_pending_.empty() ? never
               : writes_b_.empty()           ? t_read + cycle
                                             : std::max(t_read + cycle, b_last_ + cycle * kBarrierToRead);
    // Completion writes go ahead of data bursts whose AW is not earlier than
    // theirs, and behind those whose AW is (W beats follow AWs in order): a
    // completion write behind the next data burst waits until that is out.
    if (!completions_pending_.empty() && (t_aw == never || completion_aw() <= t_aw)) t_complete = completion_time();
    if (!prefetch_done) {
      apply_due_doorbells();
      const sc_time unit_free = std::max(fetch_unit_free, sc_time_stamp());
      t_fetch = fetch_ready_at(unit_free);
      if (t_fetch == never && !pending_.empty())
        t_fetch = std::max(unit_free, std::max(on_clock(pending_.front().visible), next_tail_write_) +
                                          cycle * kDoorbellToFetch);
    } else if (!ahead && prefetched_ && ri == src.size()) {
      if (ahead_ok < 0) {
        ahead_ok = prefetched_->queue == q && !decode(*prefetched_, ahead_d, ahead_src, ahead_dst) &&
                   (ahead_d.flags & arch::kDmaFlagBarrier) == 0;
      }
      if (ahead_ok == 1) {
        t_ahead = std::max({last_ar + cycle, (fetch_on_r ? fetch_last : prefetched_->ready) + cycle * 2, ahead_floor});
        if (t_ahead >= handoff_at) t_ahead = never;
      }
    }
    const sc_time t_mem = std::min({t_complete, t_fetch, t_read, t_write});
    const sc_time t_own = std::min(t_ahead, handoff_at);  // the control's own steps, after memory's in a cycle
    // A doorbell rung while the engine waits for its next access may let the
    // fetch unit go first (the RTL's fetch unit sees the new tail the cycle
    // after its register write): wait for either, then decide again.
    if (!prefetch_done) {
      const sc_time next = std::min(t_mem, t_own);
      if (next != never && next > sc_time_stamp()) {
        sleep_for(next - sc_time_stamp(), doorbell_event_);
        continue;
      }
    }
    if (t_own < t_mem) {
      if (t_own > sc_time_stamp()) {
        sleep_for(t_own - sc_time_stamp());
        continue;  // the fetch's place on R may have moved meanwhile: decide again
      }
      if (t_ahead <= handoff_at) {
        // Read ahead: its read bursts follow the running one's in the stream.
        ahead = true;
        ahead_f = *prefetched_;
        prefetched_.reset();
        prefetch_done = false;
        ahead_ok = -1;
        fetch_unit_free = sc_time_stamp() + cycle * 2;  // the fetch unit picks the cycle after it is taken
        start_at = src.size();
        start_q = ahead_f.queue;
        start_index = ahead_f.index;
        src.insert(src.end(), ahead_src.begin(), ahead_src.end());
        for (auto* v : {&last_beat, &ready_at, &retired}) v->resize(src.size(), SC_ZERO_TIME);
        read_beats.resize(src.size(), 0);
        delivered.resize(src.size(), 0);
        read_end.resize(src.size(), 0);
        if (data) buffer.resize(buffer.size() + (arch::dma_elements(ahead_d.src_size) << ahead_d.elem_log2), 0);
        next_read = std::max(next_read, sc_time_stamp() + cycle);
        continue;
      }
      // The hand-off: without a read-ahead descriptor the engine goes idle
      // (the next descriptor starts kHandoffToRead after `handoff`).
      if (!ahead) return;
      // The read-ahead descriptor becomes the running one: the stream drops
      // the bytes and bursts before it.
      const std::size_t k = src_end;
      retired_floor = retired[k - 1] + cycle;
      src.erase(src.begin(), src.begin() + static_cast<std::ptrdiff_t>(k));
      for (auto* v : {&last_beat, &ready_at, &retired}) v->erase(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(k));
      read_beats.erase(read_beats.begin(), read_beats.begin() + static_cast<std::ptrdiff_t>(k));
      delivered.erase(delivered.begin(), delivered.begin() + static_cast<std::ptrdiff_t>(k));
      read_end.erase(read_end.begin(), read_end.begin() + static_cast<std::ptrdiff_t>(k));
      for (auto& e : read_end) e -= total;
      if (data) buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(total));
      read_at -= total;
      written -= total;
      ri -= k;
      placed -= k;
      need = need > k ? need - k : 0;
      fetch_after = fetch_after > k ? fetch_after - k : 0;
      if (start_at != static_cast<std::size_t>(-1)) start_at -= k;  // its first read may still be to come
      consumed.clear();
      dst.swap(ahead_dst);
      wi = 0;
      src_end = src.size();
      q = ahead_f.queue;
      index = ahead_f.index;
      d = ahead_d;
      total = arch::dma_elements(d.src_size) << d.elem_log2;
      barrier = false;
      ahead = false;
      // Its walk of the destination starts at the hand-off, its first AW the cycle after.
      aw_floor = sc_time_stamp() + cycle;
      ahead_floor = sc_time_stamp() + cycle;
      writes_done = handoff_known = behind_valid = false;
      handoff_at = never;
      continue;
    }

    // Within one cycle the bridge hands memory the AR before the W: reads win ties.
    if (t_complete < std::min(t_read, t_fetch)) {
      // The completion stage's writes for the previous descriptor; once the
      // running one's data is out, the last of them frees the stage for it.
      // The stage frees when the previous status write's AW goes out, a
      // cycle before its W beat; completion writes queued behind this
      // descriptor's data beats delay the hand-off until their W beats are
      // out too.
      if (writes_done && !handoff_known && !behind_valid) {
        queued_behind = completion_aw() <= last_w;  // its AW came by the last data beat: its W goes after
        behind_valid = true;
      }
      const std::size_t before = completions_pending_.size();
      complete_oldest();
      if (ctx_.error) return;
      if (writes_done && !handoff_known && completions_pending_.size() < before) {
        handoff = std::max(handoff, queued_behind ? sc_time_stamp() : sc_time_stamp() - cycle * kStatusAwToHandoff);
        behind_valid = false;
        if (completions_pending_.empty()) hand_off();
      }
    } else if (t_fetch <= std::min(t_read, t_write)) {
      if (t_fetch > sc_time_stamp()) sleep_for(t_fetch - sc_time_stamp());
      apply_due_doorbells();
      const std::int64_t nq = ready_queue(q, sc_time_stamp());
      if (nq >= 0) {
        prefetched_ = fetch(static_cast<std::uint32_t>(nq), on_clock(sc_time_stamp()));
        fetch_on_r = true;
        fetch_last = prefetched_->ready;
        fetch_after = ri;
        prefetch_done = true;
        ahead_ok = -1;
        next_read = std::max(next_read, sc_time_stamp() + cycle);  // the fetch took this cycle's AR
      }
    } else if (t_read <= t_write) {
      const auto [lo, len] = aligned(src[ri]);
      const bool mine = ri < src_end;
      std::vector<std::uint8_t>& burst = scratch_.burst;
      burst.resize(data ? len : 0);
      const sc_time mem = on_clock(transport_at(read_cmd, lo, data ? burst.data() : scratch, len, t_read, err));
      if (err)
        return fail(mine ? q : ahead_f.queue, mine ? index : ahead_f.index, arch::DmaError::kReadResp,
                    fmt::format("read of 0x{:x} failed", src[ri].address));
      if (data) std::memcpy(buffer.data() + read_at, burst.data() + (src[ri].address - lo), src[ri].bytes);
      ready_at[ri] = mem;
      read_beats[ri] = len / beat;
      if (src[ri].first) next_run_ar_ = sc_time_stamp() + run_gap_;
      read_at += src[ri].bytes;
      read_end[ri] = read_at;
      last_ar = sc_time_stamp();
      next_read = sc_time_stamp() + cycle;  // one AR per cycle, even when this one went out late
      if (ri == start_at) {
        starts_.push_back({start_q, start_index, t_read});
        start_at = static_cast<std::size_t>(-1);
      }
      ++ri;
    } else {
      const Run& w = dst[wi];
      next_aw_ = t_aw + cycle;
      if (w.first) next_run_aw_ = t_aw + run_gap_;
      w_free_ = t_write + cycle;
      last_w = t_write;
      consumed.push_back({wi, t_write_start, sent_bytes(), sent_bytes() + w.bytes});
      const sc_time resp = on_clock(
          transport_at(write_cmd, w.address, data ? buffer.data() + written : scratch, w.bytes, t_write, err));
      if (err) return fail(q, index, arch::DmaError::kWriteResp, fmt::format("write of 0x{:x} failed", w.address));
      write_answered(resp);
      written += w.bytes;
      ++wi;
      if (wi == dst.size()) {
        next_descriptor_aw_ = t_write + descriptor_gap_;
        // The completion stage holds one descriptor: this one moves in once
        // its last write beat is out and the previous one has written its status.
        writes_done = true;
        handoff = last_w;
        if (completions_pending_.empty()) hand_off();
      }
    }
  }
}

}  // namespace tessera::dma
