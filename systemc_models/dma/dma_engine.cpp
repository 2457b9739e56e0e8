#include "dma/dma_engine.h"

#include "dma/dma_scheduler.h"

#include "arch/dma_descriptor_check.h"
#include "dma/dma_pattern.h"
#include "memory/hbm.h"
#include "memory/partitioned_memory.h"
#include "trace/sim_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace tessera::dma {

using sc_core::sc_time;
using sc_core::SC_NS;
using sc_core::SC_ZERO_TIME;

namespace {

// Cycle counts of the RTL (rtl/dma/tsr_dma_engine.sv), measured through the
// AXI4-to-TLM bridge (cosim/, TESSERA_DMA_BRIDGE_LOG): see docs/cosim.md.
constexpr std::uint64_t kDoorbellToFetch = 2;   // Q_TAIL write to the fetch AR
constexpr std::uint64_t kFetchAhead = 4;        // fetch data back to the next descriptor's fetch AR
constexpr std::uint64_t kDecode = 4;            // fetch data back to the first data AR
constexpr std::uint64_t kHandoffToRead = 5;     // previous descriptor's last W beat to the first data AR
constexpr std::uint64_t kReadSlotReuse = 2;     // last R beat of a burst to the AR that reuses its slot
constexpr std::uint64_t kReadToWrite = 3;       // last R beat a write burst needs to its first W beat
constexpr std::uint64_t kWriteToCompletion = 3; // last B to the semaphore write
constexpr std::uint64_t kWriteSlotReuse = 2;    // B of a write to the first W beat of the write that reuses its slot
constexpr std::uint64_t kCompletionToStatus = 1;
constexpr std::uint64_t kStatusAwToHandoff = 2;  // a waiting descriptor enters the completion stage this much before the status W beat
constexpr std::uint64_t kBarrierToRead = 2;      // the last write response a BARRIER waits for to its first data AR

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
  const std::uint32_t in_flight = (tail + s.ring_size - head_for_doorbell(q)) % s.ring_size;
  if (count >= s.ring_size - in_flight)
    return fmt::format("{}.q{}: {} more descriptors overflow a ring of {} ({} in flight)", name(), q, count,
                       s.ring_size, in_flight);
  // Tails that land at the same picosecond are written in queue order, not
  // in the order their doorbells were rung: two sequencers that ring in the
  // same picosecond run in whatever order SystemC's event heap wakes them,
  // which no model should depend on (and which the DMA scheduler, running
  // the engines ahead, does not reproduce).
  const sc_time visible = trace::current_time() + visible_after;
  auto at = pending_.end();
  while (at != pending_.begin() && (std::prev(at)->visible > visible ||
                                    (std::prev(at)->visible == visible && std::prev(at)->queue > q)))
    --at;
  pending_.insert(at, {visible, q, (tail + count) % s.ring_size});
  doorbells_.push_back({q, tail, count, visible});
  ring(visible_after);
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
  if (turn_ever_ && turn_taken_ == trace::current_time()) return;
  for (std::uint32_t i = 0; i < rank_; ++i) sc_core::wait(SC_ZERO_TIME);
  turn_taken_ = trace::current_time();
  turn_ever_ = true;
}

void DmaTurnOrder::add(std::uint32_t rank) {
  while (next_.size() <= rank) {
    next_.push_back(sc_core::sc_max_time());
    moved_.push_back(std::make_unique<sc_core::sc_event>());
    waiting_.push_back(0);
  }
  next_[rank] = trace::current_time();
}

void DmaTurnOrder::next_access(std::uint32_t rank, const sc_time& t) {
  next_[rank] = t;
  if (waiting_[rank] > 0 && t > trace::current_time()) moved_[rank]->notify(SC_ZERO_TIME);
}

void DmaTurnOrder::wait_for_lower(std::uint32_t rank) {
  for (;;) {
    const sc_time now = trace::current_time();
    std::uint32_t due = 0;
    while (due < rank && next_[due] > now) ++due;
    if (due == rank) return;
    ++waiting_[due];
    sc_core::wait(*moved_[due]);
    --waiting_[due];
  }
}

void DmaEngine::share_turn_order(std::shared_ptr<DmaTurnOrder> order, std::uint32_t turn_rank) {
  turns_ = std::move(order);
  turn_rank_ = turn_rank;
  turns_->add(turn_rank_);
}

void DmaEngine::share_burst_cache(std::shared_ptr<BurstCache> cache) {
  if (!cache || cache->max_burst_bytes() != burst_cache_->max_burst_bytes())
    throw std::logic_error(fmt::format("{}: a burst cache for another bus width", name()));
  burst_cache_ = std::move(cache);
}

void DmaEngine::sleep_for(const sc_time& d) {
  turns_->next_access(turn_rank_, trace::current_time() + d);
  sc_core::wait(d);
}

void DmaEngine::sleep_for(const sc_time& d, sc_core::sc_event& e) {
  turns_->next_access(turn_rank_, trace::current_time() + d);
  sc_core::wait(d, e);
}

void DmaEngine::sleep_on(sc_core::sc_event& e) {
  turns_->next_access(turn_rank_, sc_core::sc_max_time());
  sc_core::wait(e);
}

void DmaEngine::take_turn_in_order() {
  const sc_time now = trace::current_time();
  if (turn_at_ == now) return;
  turns_->next_access(turn_rank_, now);
  turns_->wait_for_lower(turn_rank_);
  turn_at_ = now;
}

DmaEngine::DmaEngine(sc_core::sc_module_name name, core::CoreContext& ctx, std::uint32_t queues)
    : DmaEngineBase(name, queues, ctx.stats),
      ctx_(ctx),
      // The engine moves one data beat per cycle, so its clock is what gives
      // the configured bandwidth.
      period_(sc_time(static_cast<double>(ctx.cfg.dma.axi_data_bytes) / ctx.cfg.dma.bytes_per_ns, SC_NS)),
      clock_(period_),
      bus_(static_cast<std::uint32_t>(ctx.cfg.dma.axi_data_bytes)),
      burst_cache_(
          std::make_shared<BurstCache>(max_burst_bytes(static_cast<std::uint32_t>(ctx.cfg.dma.axi_data_bytes)))),
      data_(!ctx.no_data),
      max_outstanding_(static_cast<std::uint32_t>(ctx.cfg.dma.max_outstanding)),
      run_gap_(period_.times(static_cast<double>(ctx.cfg.dma.run_gap_cycles))),
      descriptor_gap_(period_.times(static_cast<double>(ctx.cfg.dma.descriptor_gap_cycles))),
      fetch_ptr_(queues, 0),
      tail_visible_(queues),
      last_fetched_queue_(queues - 1),
      heads_seen_(queues, 0) {
  if (queues > 64)
    throw std::invalid_argument(
        fmt::format("{}: {} descriptor queues; a DMA engine has at most 64 (dma.queues_per_engine)", this->name(), queues));
  buffer_size_ = buffer_bytes(max_outstanding_);
  writes_b_.assign(max_outstanding_, Time());
  // TESSERA_DMA_BRIDGE_LOG=1 prints every memory access with its time, as the
  // RTL bridge does, so the two can be compared line by line.
  log_ = std::getenv("TESSERA_DMA_BRIDGE_LOG") != nullptr;
  share_turn_order(std::make_shared<DmaTurnOrder>(), rank());
  SC_THREAD(run);
}

Time DmaEngine::on_clock(Time t) const { return clock_.at_or_after(t); }

void DmaEngine::start_of_simulation() {
  if (router_)
    for (std::size_t r = 0; r < direct_.size(); ++r) direct_[r] = router_->direct(static_cast<arch::Region>(r));
}

void DmaEngineBase::expect_ring(std::uint32_t ring_size) {
  expected_descriptors_ += ring_size > 0 ? ring_size - 1 : 0;
  completions_.reserve(expected_descriptors_);
  starts_.reserve(expected_descriptors_);
  doorbells_.reserve(expected_descriptors_);
}

void DmaEngine::configure_queue(std::uint32_t q, std::uint64_t ring_base, std::uint32_t ring_size) {
  expect_ring(ring_size);
  QueueState& s = queues_.at(q);
  s = QueueState{};
  s.ring_base = ring_base;
  s.ring_size = ring_size;
  fetch_ptr_.at(q) = 0;
  heads_seen_.at(q) = 0;
  fetchable_known_ = false;
  note_work(q);
}

std::uint32_t DmaEngine::head_for_doorbell(std::uint32_t q) {
  if (!scheduler_) return queues_[q].head;
  // Completions up to now are seen (one at the doorbell's own time too, as
  // if the engine had run first in that cycle); later ones are the engine's future.
  const Time now = trace::current_time();
  while (!heads_ahead_.empty() && heads_ahead_.front().at <= now) {
    heads_seen_[heads_ahead_.front().queue] = heads_ahead_.front().head;
    heads_ahead_.pop_front();
  }
  return heads_seen_[q];
}

void DmaEngine::ring(const sc_time& visible_after) {
  if (!scheduler_) return DmaEngineBase::ring(visible_after);
  // doorbell_event_.notify(visible_after) as SystemC would keep it: a
  // pending notification whose time has come has fired; of two pending, the
  // earlier stays.
  const Time now = trace::current_time(), at = now + visible_after;
  if (bell_ && *bell_ <= now) bell_.reset();
  if (!bell_ || at < *bell_) bell_ = at;
  scheduler_->doorbell(slot_, next_step(), visible_after);
}

void DmaEngine::apply_landed_doorbells() {
  while (!pending_.empty() && pending_.front().visible <= now_) {
    const PendingTail& p = pending_.front();
    const Time write = std::max(on_clock(p.visible), next_tail_write_);
    next_tail_write_ = write + period_;
    const Time before = fetch_time(p.queue);
    // A queue that still had descriptors to fetch was ready before this write.
    if (fetch_ptr_[p.queue] == queues_[p.queue].tail) tail_visible_[p.queue] = write;
    queues_[p.queue].tail = p.tail;
    note_work(p.queue);
    fetch_time_changed(p.queue, before);
    wave_queue(p.queue);
    pending_.pop_front();
  }
}

Time DmaEngine::fetch_time(std::uint32_t q) const {
  return has_descriptors_to_fetch(q) ? tail_visible_[q] + clock_.cycles(kDoorbellToFetch) : kNever;
}

void DmaEngine::fetch_time_changed(std::uint32_t q, Time before) {
  // The earliest over the queues moves down with one queue, and needs a scan
  // only when the queue that held it moved up: a doorbell or a fetch leaves
  // most queues' times (and mostly its own) as they were, where a scan after
  // each was about 0.6 % of a large GEMM's instructions.
  if (!fetchable_known_) return;
  const Time after = fetch_time(q);
  if (after < fetchable_at_) fetchable_at_ = after;
  else if (after > before && before == fetchable_at_) fetchable_known_ = false;
}

Time DmaEngine::fetch_ready_at(Time not_before) const {
  // The earliest over the queues of max(not_before, their time) is max(not_before, the earliest time).
  if (!fetchable_known_) {
    fetchable_at_ = kNever;
    for (std::uint64_t left = has_work_; left != 0; left &= left - 1)
      fetchable_at_ = std::min(fetchable_at_, fetch_time(static_cast<std::uint32_t>(__builtin_ctzll(left))));
    fetchable_known_ = true;
  }
  return fetchable_at_ == kNever ? kNever : std::max(not_before, fetchable_at_);
}

std::int64_t DmaEngine::ready_queue(std::uint32_t after, Time ar) const {
  // Round robin from the queue after `after`: the queues with work above it,
  // then those up to it, each in order; the first whose tail was visible by `ar`.
  const std::uint32_t from = after + 1;  // `after` is a queue's number, below 64
  const std::uint64_t above = from < 64 ? has_work_ & (~std::uint64_t{0} << from) : 0;
  for (std::uint64_t left : {above, has_work_ & ~above})
    for (; left != 0; left &= left - 1) {
      const auto q = static_cast<std::uint32_t>(__builtin_ctzll(left));
      if (tail_visible_[q] + clock_.cycles(kDoorbellToFetch) <= ar) return q;
    }
  return -1;
}

void DmaEngine::run() {
  if (scheduler_) return;  // the scheduler steps it
  for (;;) {
    now_ = trace::current_time();
    const Wait w = step();
    switch (w.kind) {
      case Wait::kTime: sleep_for((w.until - now_).sc()); break;
      case Wait::kTimeOrDoorbell: sleep_for((w.until - now_).sc(), doorbell_event_); break;
      case Wait::kDoorbell: sleep_on(doorbell_event_); break;
    }
  }
}

bool DmaEngine::wait_turn(Time t, bool on_chip_target) {
  if (!on_chip_target) return t > now_ || ahead_of_turn_;
  if (t <= now_) return false;
  // What the other engines do before t reaches this engine only through the
  // answers of memories that keep state (HBM's bandwidth, the semaphores)
  // and through doorbells, none of which this access asks or any step
  // before the horizon can see: so it goes now, ahead of their steps, and
  // the engine's next access to such a memory waits for its turn.
  if (!scheduler_ || data_ || t >= scheduler_->horizon()) return true;
  move_to(t);
  ahead_of_turn_ = true;
  return false;
}

void DmaEngine::fail(std::uint32_t q, std::uint32_t index, arch::DmaError code, const std::string& detail) {
  QueueState& s = queues_[q];
  s.error = code;
  fetchable_known_ = false;
  note_work(q);
  s.error_index = index;
  ctx_.fail(fmt::format("{}.q{} descriptor {} (at 0x{:x}): {}: {}", name(), q, index,
                        s.ring_base + std::uint64_t{index} * arch::kDmaDescriptorBytes, arch::to_string(code),
                        detail));
}

Time DmaEngine::access(tlm::tlm_command cmd, arch::Region region, std::uint64_t address, std::uint8_t* data,
                       std::uint32_t length, bool& error) {
  // Alone, the engine is at SystemC's time and takes its turn among the
  // engines of the cycle; under a scheduler the turn is the scheduler's
  // order, and a time ahead of SystemC's goes as the annotated delay.
  // SystemC's time stands still while the scheduler runs the engines (it
  // reads it once per wake-up, and no memory target waits).
  if (!scheduler_) take_turn_in_order();
  if (region == arch::Region::Hbm || on_chip(region)) {
    // A local memory's b_transport without the payload, the sockets' calls
    // (a third of the cost of a timing-only burst) and sc_time (3.6 % of a
    // large GEMM's instructions for HBM alone): the access is sent at now_,
    // ahead of SystemC's time under a scheduler and at it alone; HBM's bins
    // before SystemC's time are stale. The memories are the targets the
    // interconnect routes these regions to (core::MemorySystem).
    const Time systemc = scheduler_ ? Time(scheduler_->systemc_time()) : Time(trace::current_time());
    const std::uint64_t sent = (scheduler_ ? now_ : systemc).value();
    const std::uint64_t at = address - direct_[static_cast<std::size_t>(region)].base;
    tlm::tlm_response_status status;
    const std::uint64_t answer =
        region == arch::Region::Hbm
            ? ctx_.hbm.access_ticks(cmd, at, data, length, sent, systemc.value(), status)
            : (region == arch::Region::Sbuf ? ctx_.sbuf : ctx_.psum).access_ticks(cmd, at, data, length, sent, status);
    error = status != tlm::TLM_OK_RESPONSE;
    return answered(cmd, address, length, Time::units(answer));
  }
  return access_through_socket(cmd, region, address, data, length, error);
}

Time DmaEngine::access_through_socket(tlm::tlm_command cmd, arch::Region region, std::uint64_t address,
                                      std::uint8_t* data, std::uint32_t length, bool& error) {
  sc_time stamp = sc_core::SC_ZERO_TIME, delay = sc_core::SC_ZERO_TIME;
  if (scheduler_) {
    stamp = scheduler_->systemc_time();
    delay = (now_ - stamp).sc();
  }
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
  const core::Interconnect::Direct* direct = &direct_[static_cast<std::size_t>(region)];
  if (direct->target) {
    t.set_address(address - direct->base);
    direct->target->b_transport(t, delay);
    t.set_address(address);
  } else {
    socket->b_transport(t, delay);
  }
  error = t.is_response_error();
  if (!scheduler_) stamp = trace::current_time();  // the target may have waited
  assert(stamp == trace::current_time());
  return answered(cmd, address, length, Time(stamp) + Time(delay));
}

void DmaEngine::log_access(tlm::tlm_command cmd, std::uint64_t address, std::uint32_t length, Time answer) const {
  std::fprintf(stderr, "%s %.3f %s 0x%llx bytes %u answer %.3f\n", name(), trace::ns(now_.sc()),
               cmd == tlm::TLM_WRITE_COMMAND ? "W" : "R", static_cast<unsigned long long>(address), length,
               trace::ns(answer.sc()));
}

void DmaEngine::fetch_begin(std::uint32_t q, Time issue) {
  const QueueState& s = queues_[q];
  fetching_ = {q, fetch_ptr_[q], issue};
  const Time before = fetch_time(q);
  fetch_ptr_[q] = fetch_ptr_[q] + 1 == s.ring_size ? 0 : fetch_ptr_[q] + 1;
  note_work(q);
  fetch_time_changed(q, before);
  last_fetched_queue_ = q;
}

DmaEngine::Fetched DmaEngine::fetch_end() {
  Fetched f;
  f.queue = fetching_.queue;
  f.index = fetching_.index;
  const QueueState& s = queues_[f.queue];
  f.ready = on_clock(access(tlm::TLM_READ_COMMAND, s.ring_base + std::uint64_t{f.index} * arch::kDmaDescriptorBytes,
                            f.raw.data(), arch::kDmaDescriptorBytes, f.error));
  last_fetch_ready_ = f.ready;
  return f;
}

Time DmaEngine::write_slot_free() const {
  // A write holds one of max_outstanding slots from AW to B.
  return writes_b_count_ < max_outstanding_ ? Time() : writes_b_[writes_b_next_] + clock_.cycles(kWriteSlotReuse);
}

void DmaEngine::write_answered(Time b) {
  b_last_ = std::max(b, b_last_ + period_);
  writes_b_[writes_b_next_] = b_last_;
  if (++writes_b_next_ == max_outstanding_) writes_b_next_ = 0;  // no division by a run-time count
  if (writes_b_count_ < max_outstanding_) ++writes_b_count_;
}

Time DmaEngine::completion_aw() const {
  const Time slot = write_slot_free();
  const Time aw = completing_->aw;
  return slot > Time() ? std::max(aw, slot - period_) : aw;
}

Time DmaEngine::completion_time() const {
  // Completion writes go ahead of data bursts, between bursts.
  return std::max(std::max(completing_->ready, w_free_), write_slot_free());
}

void DmaEngine::complete_oldest() {
  // One write per call (semaphore, then status), each a W beat of its own, so
  // that data bursts of the next descriptor interleave with them as in the RTL.
  const Time at = completion_time();
  const Time aw = completion_aw();
  next_aw_ = std::max(next_aw_, aw + period_);  // a data AW goes in a later cycle
  PendingCompletion& c = *completing_;
  QueueState& s = queues_[c.queue];
  bool err = false;
  w_free_ = at + period_;
  if (c.semaphore) {
    std::uint32_t v = c.sem_value;
    const Time resp = on_clock(access(tlm::TLM_WRITE_COMMAND, c.sem_addr, reinterpret_cast<std::uint8_t*>(&v), 4, err));
    if (err) return fail(c.queue, c.index, arch::DmaError::kWriteResp,
                         fmt::format("semaphore write to 0x{:x} failed", c.sem_addr));
    write_answered(resp);
    c.semaphore = false;
    c.ready = at + clock_.cycles(kCompletionToStatus);
    c.aw = aw + clock_.cycles(kCompletionToStatus);
    return;
  }
  const PendingCompletion done = c;
  completing_.reset();
  std::uint16_t status = 1u << arch::kDmaStatusDoneBit;
  const std::uint64_t slot = s.ring_base + std::uint64_t{done.index} * arch::kDmaDescriptorBytes;
  const Time answered =
      access(tlm::TLM_WRITE_COMMAND, slot + arch::kDmaStatusOffset, reinterpret_cast<std::uint8_t*>(&status), 2, err);
  write_answered(on_clock(answered));
  completions_.push_back({done.queue, done.index, answered.sc()});
  ++stats_.descriptors;
  ++s.descriptors_done;
  s.head = done.index + 1 == s.ring_size ? 0 : done.index + 1;
  if (scheduler_) {
    const Time now = trace::current_time();
    while (!heads_ahead_.empty() && heads_ahead_.front().at <= now) {
      heads_seen_[heads_ahead_.front().queue] = heads_ahead_.front().head;
      heads_ahead_.pop_front();
    }
    if (now_ <= now) heads_seen_[done.queue] = s.head;
    else heads_ahead_.push_back({now_, done.queue, s.head});
  }
  wave_queue(done.queue);
}

std::optional<std::pair<arch::DmaError, std::string>> DmaEngine::decode(const Fetched& f, arch::DmaDescriptor& d,
                                                                         std::vector<Run>& src,
                                                                         std::vector<Run>& dst) {
  if (f.error) return std::make_pair(arch::DmaError::kFetch, std::string("descriptor fetch failed"));
  d = arch::unpack(f.raw);
  if (const arch::DmaCheck c = arch::check(d); !c.ok()) return std::make_pair(c.code, c.detail);
  burst_cache_->bursts(d.src_addr, d.src_size, d.src_stride, d.elem_log2, src);
  burst_cache_->bursts(d.dst_addr, d.dst_size, d.dst_stride, d.elem_log2, dst);
  // A side whose bursts all lie in one region (its span, from its base to its
  // last byte, does: check() has ruled out empty sides) is checked once;
  // otherwise burst by burst, for the first one outside. Regions are ranges,
  // so a burst inside the span's region is inside it too.
  const auto first_outside = [&](const std::vector<Run>& bursts, std::uint64_t base,
                                 const std::array<std::uint16_t, 4>& size,
                                 const std::array<std::uint32_t, 4>& stride) -> const Run* {
    const std::uint64_t last = arch::dma_pattern_last_byte(base, size, stride, d.elem_log2);
    if (ctx_.map.region_of(base, last - base + 1) != arch::Region::None) return nullptr;
    for (const Run& r : bursts)
      if (ctx_.map.region_of(r.address, r.bytes) == arch::Region::None) return &r;
    return nullptr;
  };
  const Run* outside = first_outside(src, d.src_addr, d.src_size, d.src_stride);
  if (!outside) outside = first_outside(dst, d.dst_addr, d.dst_size, d.dst_stride);
  if (outside)
    return std::make_pair(arch::DmaError::kAddrWindow,
                          fmt::format("bytes 0x{:x}..0x{:x} are outside the device address map", outside->address,
                                      outside->address + outside->bytes - 1));
  return std::nullopt;
}

void DmaEngine::begin(const Fetched& f) {
  Exec& x = exec_;
  std::vector<Run>& src = scratch_.src;  // read bursts: the running descriptor's, then the read-ahead one's
  std::vector<Run>& dst = scratch_.dst;  // the running descriptor's write bursts
  // The running descriptor (the write side).
  x.q = f.queue;
  x.index = f.index;
  if (auto e = decode(f, x.d, src, dst)) {
    resume_ = Resume::kIdle;
    return fail(x.q, x.index, e->first, e->second);
  }
  x.total = arch::dma_elements(x.d.src_size) << x.d.elem_log2;
  // The bytes of the stream from the running descriptor's first on (the
  // read-ahead descriptor's follow it). Timing-only runs move no bytes:
  // TLM_IGNORE_COMMAND costs the same time.
  scratch_.buffer.assign(data_ ? x.total : 0, 0);
  // Every access goes to memory at its own time, in time order: reads (one
  // AR per cycle, a slot per outstanding burst freed a little after its last
  // beat), write bursts (first W beat after the last R beat of their data),
  // the completion writes of earlier descriptors (ahead of data bursts, between
  // bursts) and the fetch of the next descriptor (one ahead).
  const Time data_start = std::max(f.ready + clock_.cycles(kDecode), last_handoff_ + clock_.cycles(kHandoffToRead));
  // A BARRIER holds the first read until the completion stage is empty and
  // every write of the engine (completion writes too) is acknowledged; the
  // fetch unit goes on meanwhile. (A BARRIER descriptor never reads ahead.)
  x.barrier = (x.d.flags & arch::kDmaFlagBarrier) != 0;
  scratch_.reads.assign(src.size(), ReadBurst{});
  x.ri = x.wi = 0;
  x.src_end = src.size();  // the running descriptor's read bursts: [0, src_end)
  // Bursts [0, placed) are delivered: their last beats are final, and so is
  // retired[k] for them. The others are placed again on each call.
  x.placed = 0;
  x.need = 0;  // the read bursts the next write burst waits for: [0, need]
  x.need_settled = false;
  x.next_read = x.r_channel = x.last_w = data_start;
  x.retired_floor = Time();  // the earliest burst 0 retires (after a hand-off: after the last one before it)
  // The next descriptor's fetch, once issued, comes back on the same R
  // channel and takes its place among the data bursts (after the bursts
  // issued before it when they are ready in the same cycle).
  x.fetch_on_r = false;
  x.fetch_open = false;
  scratch_.open.clear();
  x.open_head = 0;
  x.opened = 0;
  x.unplaced = 0;
  x.fetch_after = 0;            // data bursts issued before the fetch
  x.fetch_last = Time();        // the fetch's R beat as placed so far
  x.read_at = x.written = 0;
  // The write bursts sent so far, in order; a burst's W beats go one per cycle
  // from its first, the first beat up to the next bus boundary, then whole beats.
  scratch_.sent.clear();
  x.prefetch_done = false;
  x.fetch_unit_free = std::max(f.ready + clock_.cycles(kFetchAhead), data_start);
  // The read-ahead descriptor: once the running one has issued its last read,
  // the next fetched descriptor of its queue (decoded without error, no
  // BARRIER) starts reading the cycle after both that and two cycles after its
  // fetch data (the RTL's fetch port), as long as that is before the running
  // one's hand-off. It takes over the write side at the hand-off.
  x.ahead = false;
  x.ahead_ok = -1;  // whether prefetched_ may read ahead: -1 not decided yet
  x.last_ar = Time();      // the last data AR
  x.ahead_floor = Time();  // the earliest cycle a read-ahead may start
  x.aw_floor = Time();     // the earliest AW of the running descriptor
  x.start_at = 0;          // the read burst that starts a descriptor (its first AR is its start)
  x.start_q = x.q;
  x.start_index = x.index;
  // The hand-off: once the running descriptor's last write burst is out
  // and the completion stage has finished the previous descriptor.
  x.writes_done = x.handoff_known = x.behind_valid = x.queued_behind = false;
  x.handoff = Time();
  x.handoff_at = kNever;
  resume_ = Resume::kTop;
}

// AXI moves whole beats aligned to the bus: a burst's beat count and the
// bytes memory is asked for follow from the aligned range.
inline std::pair<std::uint64_t, std::uint32_t> DmaEngine::aligned(const Run& r) const {
  const std::uint64_t lo = bus_.down(r.address), hi = bus_.down(r.address + r.bytes + bus_.bytes() - 1);
  return std::make_pair(lo, static_cast<std::uint32_t>(hi - lo));
}

// The R channel carries whole bursts, the one whose data came back first
// next (as the bridge does). A burst's place is final once it has started:
// any read issued later comes back later. The others are placed again
// whenever a read is issued.
void DmaEngine::place() {
  // Nothing changes unless a read or the fetch went out since the last call,
  // or the first burst on its way is due. The step loop calls this at its
  // every turn; on the big GEMM 39 % of the calls return here.
  const Exec& x = exec_;
  if (x.opened == x.ri && (!x.fetch_on_r || x.fetch_open)) {
    const std::vector<OpenBurst>& open = scratch_.open;
    if (x.open_head == open.size() || std::max(open[x.open_head].ready, x.r_channel) > now_) return;
  }
  place_again();
}

void DmaEngine::place_again() {
  Exec& x = exec_;
  const Time cycle = period_;
  std::vector<OpenBurst>& open = scratch_.open;
  std::vector<ReadBurst>& reads = scratch_.reads;
  const auto goes_before = [](Time ready, std::int64_t issued, const OpenBurst& b) {
    return ready != b.ready ? ready < b.ready : issued < b.issued;
  };
  const auto before = [&](const OpenBurst& a, const OpenBurst& b) { return goes_before(a.ready, a.issued, b); };
  // The bursts on their way, in the order the R channel takes them. A
  // burst's key is fixed once it is issued (and the fetch's until it is
  // delivered), so the list is kept sorted from call to call: the reads
  // issued since the last call, and the fetch, go in at their places.
  // A burst's place follows from its key and the places before it alone, so
  // only those from the first one put in are placed again.
  const auto add = [&](Time ready, std::int64_t issued, Time more_beats, std::size_t k) {
    // Most go last (reads come back mostly in the order they went out): the
    // search only when one does not.
    if (open.size() == x.open_head || !goes_before(ready, issued, open.back())) {
      x.unplaced = std::min(x.unplaced, open.size());
      open.emplace_back(ready, issued, more_beats, k);
      return;
    }
    const OpenBurst b(ready, issued, more_beats, k);
    const auto at = std::upper_bound(open.begin() + static_cast<std::ptrdiff_t>(x.open_head), open.end(), b, before);
    x.unplaced = std::min(x.unplaced, static_cast<std::size_t>(at - open.begin()));
    open.insert(at, b);
  };
  for (; x.opened < x.ri; ++x.opened) {
    const ReadBurst& r = reads[x.opened];
    add(r.ready_at, 2 * static_cast<std::int64_t>(x.opened), clock_.cycles(r.beats - 1), x.opened);
  }
  if (x.fetch_on_r && !x.fetch_open) {
    add(prefetched_->ready, 2 * static_cast<std::int64_t>(x.fetch_after) - 1,
        clock_.cycles(bus_.beats(arch::kDmaDescriptorBytes) - 1), kFetchBurst);
    x.fetch_open = true;
  }
  const auto last_of = [&](std::size_t k) -> Time& { return k == kFetchBurst ? x.fetch_last : reads[k].last_beat; };
  if (x.unplaced < open.size()) {
    Time ch = x.unplaced == x.open_head ? x.r_channel : last_of(open[x.unplaced - 1].k) + cycle;
    for (std::size_t i = x.unplaced; i < open.size(); ++i) {
      const Time last = std::max(open[i].ready, ch) + open[i].more_beats;
      last_of(open[i].k) = last;
      ch = last + cycle;
    }
  }
  // A place is final once its first beat is due: the final ones are a prefix
  // of the list, which moves its head past them rather than moving the rest
  // down at every delivery.
  std::size_t head = x.open_head;
  for (; head < open.size(); ++head) {
    const OpenBurst& b = open[head];
    if (std::max(b.ready, x.r_channel) > now_) break;
    if (b.k == kFetchBurst) {
      x.fetch_on_r = false;
      x.fetch_open = false;
      prefetched_->ready = x.fetch_last;
    } else {
      reads[b.k].delivered = true;
    }
    x.r_channel = last_of(b.k) + cycle;
  }
  if (head == open.size()) {
    open.clear();
    head = 0;
  } else if (2 * head >= open.size() && head >= kOpenCompactAt) {
    open.erase(open.begin(), open.begin() + static_cast<std::ptrdiff_t>(head));
    head = 0;
  }
  x.open_head = head;
  x.unplaced = open.size();
  for (; x.placed < x.ri && reads[x.placed].delivered; ++x.placed)
    reads[x.placed].retired = x.placed == 0 ? std::max(reads[0].last_beat, x.retired_floor)
                                            : std::max(reads[x.placed].last_beat, reads[x.placed - 1].retired + cycle);
}

// Reads retire in issue order, one per cycle: a burst's data is writable,
// and its slot reusable, once it and every burst before it have arrived.
Time DmaEngine::retire_beyond_placed(std::size_t k) const {
  const Exec& x = exec_;
  const std::vector<ReadBurst>& reads = scratch_.reads;
  Time t = x.placed == 0 ? std::max(reads[0].last_beat, x.retired_floor)
                         : std::max(reads[x.placed].last_beat, reads[x.placed - 1].retired + period_);
  for (std::size_t i = x.placed + 1; i <= k; ++i) t = std::max(reads[i].last_beat, t + period_);
  return t;
}

// Bytes leave the buffer beat by beat as W sends them; a read reserves its
// bytes at issue and waits for room (the cycle after the beat that made it).
// The stream runs on into a read-ahead descriptor, so its reads find room
// only as the running descriptor's writes drain.
std::uint64_t DmaEngine::sent_bytes() const {
  return scratch_.sent.empty() ? exec_.written : scratch_.sent.back().sent_after;
}

// The cycle of the first W beat of `w` (first beat at `start`, `sent` bytes
// before it) by which `target` bytes in all have been sent; never if none.
Time DmaEngine::beat_with(const Run& w, Time start, std::uint64_t sent, std::uint64_t target) const {
  if (sent + w.bytes < target) return kNever;
  const std::uint64_t beat = bus_.bytes();
  const std::uint64_t first = std::min<std::uint64_t>(w.bytes, beat - (w.address - bus_.down(w.address)));
  if (sent + first >= target) return start;
  const std::uint64_t more = bus_.beats(target - sent - first + beat - 1);  // whole beats after the first
  return start + clock_.cycles(more);
}

// When a read of `bytes` finds room: after the beats already sent, or those
// of the next write burst, which goes out at `next_write_start` whatever
// the read does (writes wait only for earlier reads).
Time DmaEngine::room_later(std::uint64_t bytes, std::size_t next_write, Time next_write_start) const {
  const Exec& x = exec_;
  const std::vector<Run>& dst = scratch_.dst;
  const std::vector<SentBurst>& consumed = scratch_.sent;
  const std::uint64_t room = x.read_at + bytes - buffer_size_;  // bytes that must have left the buffer
  const auto it = std::lower_bound(consumed.begin(), consumed.end(), room,
                                   [](const SentBurst& b, std::uint64_t n) { return b.sent_after < n; });
  if (it != consumed.end()) return beat_with(dst[it->write], it->start, it->sent_before, room) + period_;
  if (next_write < dst.size() && next_write_start != kNever) {
    const Time t = beat_with(dst[next_write], next_write_start, sent_bytes(), room);
    if (t != kNever) return t + period_;
  }
  return kNever;
}

// The running descriptor's last write beat is out and the completion
// stage is free: it moves there (its semaphore and status writes go once
// every write the engine has issued is acknowledged).
void DmaEngine::hand_off() {
  Exec& x = exec_;
  const Time cycle = period_;
  const std::vector<Run>& src = scratch_.src;
  stats_.bytes += static_cast<double>(x.total);
  // Moving: from the first data beat on R (bursts may come back out of
  // order, and a read-ahead descriptor's may come back first) to the last
  // on W, both cycles included; overlapping descriptors count once, as
  // the RTL counts moving_o.
  Time first_r = kNever;
  for (std::size_t k = 0; k < src.size(); ++k)
    if (k < x.src_end || scratch_.reads[k].delivered)
      first_r = std::min(first_r, scratch_.reads[k].last_beat - clock_.cycles(scratch_.reads[k].beats - 1));
  const Time from = moving_any_ ? std::max(first_r, moving_until_ + cycle) : first_r;
  if (x.last_w >= from) stats_.busy_ns += trace::ns((x.last_w - from + cycle).sc());
  moving_any_ = true;
  moving_until_ = x.last_w;
  assert(!completing_);  // its callers hand off only to an empty stage
  completing_ = PendingCompletion{x.q,
                                  x.index,
                                  b_last_ + clock_.cycles(kWriteToCompletion),
                                  b_last_ + clock_.cycles(kWriteToCompletion - 1),
                                  (x.d.flags & arch::kDmaFlagCompletion) != 0,
                                  x.d.sem_addr,
                                  x.d.sem_value};
  last_handoff_ = x.handoff;
  x.handoff_known = true;
  // The control takes the hand-off two cycles after `handoff`.
  x.handoff_at = x.handoff + clock_.cycles(2);
  if (sampler_) {
    const std::vector<std::uint8_t>& buffer = scratch_.buffer;
    const std::vector<std::uint8_t>* bytes = nullptr;
    if (data_ && buffer.size() == x.total) bytes = &buffer;
    else if (data_) {
      scratch_.sampled.assign(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(x.total));
      bytes = &scratch_.sampled;
    }
    sampler_->executed({rank(), x.q, x.index,
                        queues_[x.q].ring_base + std::uint64_t{x.index} * arch::kDmaDescriptorBytes, x.d, bytes});
  }
}

DmaEngine::Wait DmaEngine::step() {
  const Time never = kNever;
  const Time cycle = period_;
  Exec& x = exec_;
  std::vector<Run>& src = scratch_.src;
  std::vector<Run>& dst = scratch_.dst;
  // The switch takes the step on where it stopped (resume_); within a step,
  // the running descriptor's loop goes from its top to the access it chose
  // and back by goto: through the switch, each of those was an indirect
  // jump whose target changes at nearly every turn.
  for (;;) {
    switch (resume_) {
      // The idle loop: the completion stage's writes, the fetch of the next
      // descriptor, or a doorbell.
      case Resume::kIdle: {
        apply_due_doorbells();
        if (prefetched_) {
          const Fetched next = *prefetched_;
          prefetched_.reset();
          begin(next);
          continue;
        }
        // An idle fetch unit fetches two cycles after the doorbell's register
        // write, four after the previous fetch's data.
        const Time issue = fetch_ready_at(std::max(on_clock(now_), last_fetch_ready_ + clock_.cycles(kFetchAhead)));
        // The completion stage's writes go out in their own cycles meanwhile
        // (within one cycle the fetch's AR goes before a W).
        const Time due = completing_ ? completion_time() : never;
        if (issue != never && issue <= due) {
          fetch_begin(static_cast<std::uint32_t>(ready_queue(last_fetched_queue_, issue)), issue);
          resume_ = Resume::kIdleFetch;
          continue;
        }
        // A doorbell rung while the engine was busy may still be on its way; its
        // notification can be lost (an sc_event keeps only its earliest pending
        // notification), so wait for its visible time too.
        if (due == never) {
          if (pending_.empty()) return {Wait::kDoorbell, never};
          return {Wait::kTimeOrDoorbell, pending_.front().visible};
        }
        // Finish the completion stage, unless a doorbell comes first.
        const Time until = pending_.empty() ? due : std::min(due, Time(pending_.front().visible));
        if (until > now_) {
          idle_due_ = due;
          resume_ = Resume::kIdleSlept;
          return {Wait::kTimeOrDoorbell, until};
        }
        resume_ = Resume::kIdleComplete;
        continue;
      }
      case Resume::kIdleSlept:
        resume_ = now_ < idle_due_ ? Resume::kIdle : Resume::kIdleComplete;
        continue;
      case Resume::kIdleComplete:
        if (const Time at = completion_time(); wait_turn(at, false)) return {Wait::kTime, at};
        complete_oldest();
        resume_ = Resume::kIdle;
        continue;
      case Resume::kIdleFetch:
        if (wait_turn(fetching_.issue, false)) return {Wait::kTime, fetching_.issue};
        begin(fetch_end());
        continue;

      // The running descriptor's loop.
      case Resume::kTop: {
      top:
        // Candidate times; "never" when not possible yet.
        place();
        Time t_complete = never, t_fetch = never, t_ahead = never;
        x.t_read = x.t_write = x.t_write_start = x.t_aw = never;
        std::uint32_t w_beats = 0;
        if (x.wi < dst.size()) {
          if (!x.need_settled) {
            const std::uint64_t upto = x.written + dst[x.wi].bytes;
            while (x.need < x.ri && scratch_.reads[x.need].read_end < upto) ++x.need;
            x.need_settled = x.need < x.ri;
          }
          if (x.need < x.ri) {
            w_beats = static_cast<std::uint32_t>(bus_.beats(aligned(dst[x.wi]).second));
            // Its AW goes a cycle before its first W beat can: once its data is
            // committed and a write slot is free, in order after the last AW,
            // and, for a run start, a run gap after the last run start.
            x.t_aw = std::max(std::max(retire(x.need) + clock_.cycles(kReadToWrite - 1), next_aw_), x.aw_floor);
            if (const Time slot = write_slot_free(); slot > Time()) x.t_aw = std::max(x.t_aw, slot - cycle);
            if (dst[x.wi].first) x.t_aw = std::max(x.t_aw, next_run_aw_);
            x.t_aw = std::max(x.t_aw, next_descriptor_aw_);  // set at a descriptor's last beat: binds only the next one's first AW
            x.t_write_start = std::max(w_free_, x.t_aw + cycle);
            x.t_write = x.t_write_start + clock_.cycles(w_beats - 1);
          }
        }
        if (x.ri < src.size()) {
          x.t_read = x.ri >= max_outstanding_
                         ? std::max(x.next_read, retire(x.ri - max_outstanding_) + clock_.cycles(kReadSlotReuse))
                         : x.next_read;
          if (src[x.ri].first) x.t_read = std::max(x.t_read, next_run_ar_);
        }
        if (x.ri < src.size() && x.t_read != never)
          x.t_read = std::max(x.t_read, room_at(src[x.ri].bytes, x.wi, x.t_write_start));
        if (x.barrier && x.ri == 0)  // the barrier state takes a cycle even when nothing is outstanding
          x.t_read = completing_ ? never
                     : writes_b_count_ == 0        ? x.t_read + cycle
                                                   : std::max(x.t_read + cycle, b_last_ + clock_.cycles(kBarrierToRead));
        // Completion writes go ahead of data bursts whose AW is not earlier than
        // theirs, and behind those whose AW is (W beats follow AWs in order): a
        // completion write behind the next data burst waits until that is out.
        if (completing_ && (x.t_aw == never || completion_aw() <= x.t_aw))
          t_complete = completion_time();
        if (!x.prefetch_done) {
          apply_due_doorbells();
          const Time unit_free = std::max(x.fetch_unit_free, now_);
          t_fetch = fetch_ready_at(unit_free);
          if (t_fetch == never && !pending_.empty())
            t_fetch = std::max(unit_free, std::max(on_clock(pending_.front().visible), next_tail_write_) +
                                              clock_.cycles(kDoorbellToFetch));
        } else if (!x.ahead && prefetched_ && x.ri == src.size()) {
          if (x.ahead_ok < 0) {
            x.ahead_ok = prefetched_->queue == x.q &&
                         !decode(*prefetched_, x.ahead_d, scratch_.ahead_src, scratch_.ahead_dst) &&
                         (x.ahead_d.flags & arch::kDmaFlagBarrier) == 0;
          }
          if (x.ahead_ok == 1) {
            t_ahead = std::max({x.last_ar + cycle, (x.fetch_on_r ? x.fetch_last : prefetched_->ready) + clock_.cycles(2),
                                x.ahead_floor});
            if (t_ahead >= x.handoff_at) t_ahead = never;
          }
        }
        // Pairwise: the list's form went through memory, 1 % of a GEMM's DMA model.
        const Time t_mem = std::min(std::min(t_complete, t_fetch), std::min(x.t_read, x.t_write));
        const Time t_own = std::min(t_ahead, x.handoff_at);  // the control's own steps, after memory's in a cycle
        // A doorbell rung while the engine waits for its next access may let the
        // fetch unit go first (the RTL's fetch unit sees the new tail the cycle
        // after its register write): wait for either, then decide again.
        if (!x.prefetch_done) {
          const Time next = std::min(t_mem, t_own);
          if (next != never && next > now_) return {Wait::kTimeOrDoorbell, next};
        }
        if (t_own < t_mem) {
          if (t_own > now_) return {Wait::kTime, t_own};  // the fetch's place on R may move meanwhile: decide again
          if (t_ahead <= x.handoff_at) {
            // Read ahead: its read bursts follow the running one's in the stream.
            x.ahead = true;
            x.ahead_f = *prefetched_;
            prefetched_.reset();
            x.prefetch_done = false;
            x.ahead_ok = -1;
            x.fetch_unit_free = now_ + clock_.cycles(2);  // the fetch unit picks the cycle after it is taken
            x.start_at = src.size();
            x.start_q = x.ahead_f.queue;
            x.start_index = x.ahead_f.index;
            src.insert(src.end(), scratch_.ahead_src.begin(), scratch_.ahead_src.end());
            scratch_.reads.resize(src.size());
            if (data_)
              scratch_.buffer.resize(scratch_.buffer.size() + (arch::dma_elements(x.ahead_d.src_size) << x.ahead_d.elem_log2), 0);
            x.next_read = std::max(x.next_read, now_ + cycle);
            goto top;
          }
          // The hand-off: without a read-ahead descriptor the engine goes idle
          // (the next descriptor starts kHandoffToRead after `handoff`).
          if (!x.ahead) {
            resume_ = Resume::kIdle;
            continue;
          }
          // The read-ahead descriptor becomes the running one: the stream drops
          // the bytes and bursts before it.
          const std::size_t k = x.src_end;
          const auto drop = static_cast<std::ptrdiff_t>(k);
          x.retired_floor = scratch_.reads[k - 1].retired + cycle;
          src.erase(src.begin(), src.begin() + drop);
          scratch_.reads.erase(scratch_.reads.begin(), scratch_.reads.begin() + drop);
          for (ReadBurst& b : scratch_.reads) b.read_end -= x.total;
          if (data_) scratch_.buffer.erase(scratch_.buffer.begin(), scratch_.buffer.begin() + static_cast<std::ptrdiff_t>(x.total));
          x.read_at -= x.total;
          x.written -= x.total;
          x.ri -= k;
          x.placed -= k;
          x.need = x.need > k ? x.need - k : 0;
          x.need_settled = false;
          x.fetch_after = x.fetch_after > k ? x.fetch_after - k : 0;
          if (x.start_at != static_cast<std::size_t>(-1)) x.start_at -= k;  // its first read may still be to come
          // The bursts on their way are the read-ahead descriptor's (the running
          // one's have all been delivered: its last write needed every one).
          std::vector<OpenBurst>& open = scratch_.open;
          std::size_t kept = 0;
          for (std::size_t i = x.open_head; i < open.size(); ++i) {
            OpenBurst b = open[i];
            if (b.k == kFetchBurst) b.issued = 2 * static_cast<std::int64_t>(x.fetch_after) - 1;
            else if (b.k >= k) b.issued = 2 * static_cast<std::int64_t>(b.k -= k);
            else continue;
            open[kept++] = b;
          }
          open.resize(kept);
          x.open_head = 0;
          x.unplaced = 0;
          x.opened -= k;
          scratch_.sent.clear();
          dst.swap(scratch_.ahead_dst);
          x.wi = 0;
          x.src_end = src.size();
          x.q = x.ahead_f.queue;
          x.index = x.ahead_f.index;
          x.d = x.ahead_d;
          x.total = arch::dma_elements(x.d.src_size) << x.d.elem_log2;
          x.barrier = false;
          x.ahead = false;
          // Its walk of the destination starts at the hand-off, its first AW the cycle after.
          x.aw_floor = now_ + cycle;
          x.ahead_floor = now_ + cycle;
          x.writes_done = x.handoff_known = x.behind_valid = false;
          x.handoff_at = never;
          goto top;
        }
        // Within one cycle the bridge hands memory the AR before the W: reads win ties.
        if (t_complete < std::min(x.t_read, t_fetch)) {
          resume_ = Resume::kComplete;
          goto complete;
        }
        if (t_fetch <= std::min(x.t_read, x.t_write)) {
          x.t_fetch = t_fetch;
          resume_ = Resume::kFetch;
          goto fetch;
        }
        if (x.t_read <= x.t_write) {
          resume_ = Resume::kRead;
          goto read;
        }
        resume_ = Resume::kWrite;
        goto write;
      }

      case Resume::kComplete: {
      complete:
        // The completion stage's writes for the previous descriptor; once the
        // running one's data is out, the last of them frees the stage for it.
        // The stage frees when the previous status write's AW goes out, a
        // cycle before its W beat; completion writes queued behind this
        // descriptor's data beats delay the hand-off until their W beats are
        // out too.
        if (const Time at = completion_time(); wait_turn(at, false)) return {Wait::kTime, at};
        if (x.writes_done && !x.handoff_known && !x.behind_valid) {
          x.queued_behind = completion_aw() <= x.last_w;  // its AW came by the last data beat: its W goes after
          x.behind_valid = true;
        }
        complete_oldest();
        if (ctx_.error) {
          resume_ = Resume::kIdle;
          continue;
        }
        // The status write empties the stage (the semaphore write before it does not).
        if (x.writes_done && !x.handoff_known && !completing_) {
          x.handoff = std::max(x.handoff, x.queued_behind ? now_ : now_ - clock_.cycles(kStatusAwToHandoff));
          x.behind_valid = false;
          hand_off();
        }
        resume_ = Resume::kTop;
        goto top;
      }

      case Resume::kFetch: {
      fetch:
        if (x.t_fetch > now_) return {Wait::kTime, x.t_fetch};
        apply_due_doorbells();
        const std::int64_t nq = ready_queue(x.q, now_);
        if (nq < 0) {
          resume_ = Resume::kTop;
          goto top;
        }
        fetch_begin(static_cast<std::uint32_t>(nq), on_clock(now_));
        resume_ = Resume::kFetchIssue;
        continue;
      }
      case Resume::kFetchIssue:
        if (wait_turn(fetching_.issue, false)) return {Wait::kTime, fetching_.issue};
        prefetched_ = fetch_end();
        x.fetch_on_r = true;
        x.fetch_last = prefetched_->ready;
        x.fetch_after = x.ri;
        x.prefetch_done = true;
        x.ahead_ok = -1;
        x.next_read = std::max(x.next_read, now_ + cycle);  // the fetch took this cycle's AR
        resume_ = Resume::kTop;
        goto top;

      case Resume::kRead: {
      read:
        const Run& r = src[x.ri];
        const auto [lo, len] = aligned(r);
        const arch::Region region = region_of(lo, len);
        if (wait_turn(x.t_read, on_chip(region))) return {Wait::kTime, x.t_read};
        const bool mine = x.ri < x.src_end;
        std::vector<std::uint8_t>& burst = scratch_.burst;
        burst.resize(data_ ? len : 0);
        bool err = false;
        const Time mem = on_clock(access(data_ ? tlm::TLM_READ_COMMAND : tlm::TLM_IGNORE_COMMAND, region, lo,
                                         data_ ? burst.data() : no_bytes_, len, err));
        if (err) {
          resume_ = Resume::kIdle;
          fail(mine ? x.q : x.ahead_f.queue, mine ? x.index : x.ahead_f.index, arch::DmaError::kReadResp,
               fmt::format("read of 0x{:x} failed", r.address));
          continue;
        }
        if (data_) std::memcpy(scratch_.buffer.data() + x.read_at, burst.data() + (r.address - lo), r.bytes);
        scratch_.reads[x.ri].ready_at = mem;
        scratch_.reads[x.ri].beats = static_cast<std::uint32_t>(bus_.beats(len));
        if (r.first) next_run_ar_ = now_ + run_gap_;
        x.read_at += r.bytes;
        scratch_.reads[x.ri].read_end = x.read_at;
        x.last_ar = now_;
        x.next_read = now_ + cycle;  // one AR per cycle, even when this one went out late
        if (x.ri == x.start_at) {
          starts_.push_back({x.start_q, x.start_index, x.t_read.sc()});
          x.start_at = static_cast<std::size_t>(-1);
        }
        ++x.ri;
        resume_ = Resume::kTop;
        goto top;
      }

      case Resume::kWrite: {
      write:
        const Run& w = dst[x.wi];
        const arch::Region region = region_of(w.address, w.bytes);
        if (wait_turn(x.t_write, on_chip(region))) return {Wait::kTime, x.t_write};
        next_aw_ = x.t_aw + cycle;
        if (w.first) next_run_aw_ = x.t_aw + run_gap_;
        w_free_ = x.t_write + cycle;
        x.last_w = x.t_write;
        {
          // Field by field into place: a braced copy went through the stack,
          // whose 8-byte stores its 16-byte loads could not take forwarded
          // (8 % of the step loop's time).
          const std::uint64_t before = sent_bytes();
          SentBurst& sent = scratch_.sent.emplace_back();
          sent.write = x.wi;
          sent.start = x.t_write_start;
          sent.sent_before = before;
          sent.sent_after = before + w.bytes;
        }
        bool err = false;
        const Time resp = on_clock(access(data_ ? tlm::TLM_WRITE_COMMAND : tlm::TLM_IGNORE_COMMAND, region, w.address,
                                          data_ ? scratch_.buffer.data() + x.written : no_bytes_, w.bytes, err));
        if (err) {
          resume_ = Resume::kIdle;
          fail(x.q, x.index, arch::DmaError::kWriteResp, fmt::format("write of 0x{:x} failed", w.address));
          continue;
        }
        write_answered(resp);
        x.written += w.bytes;
        ++x.wi;
        x.need_settled = false;
        if (x.wi == dst.size()) {
          next_descriptor_aw_ = x.t_write + descriptor_gap_;
          // The completion stage holds one descriptor: this one moves in once
          // its last write beat is out and the previous one has written its status.
          x.writes_done = true;
          x.handoff = x.last_w;
          if (!completing_) hand_off();
        }
        resume_ = Resume::kTop;
        goto top;
      }
    }
  }
}

}  // namespace tessera::dma
