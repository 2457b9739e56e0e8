// The Verilated models are plain C++ (not SC modules): their headers must come
// before any SystemC header, or verilated.h assumes a SystemC build.
#include "cosim/dma_variants.h"  // generated: one #include per Verilated build

#include "cosim/rtl_dma_engine.h"

#include "arch/dma_descriptor.h"
#include "trace/sim_time.h"
#include "arch/dma_descriptor_check.h"
#include "dma/dma_pattern.h"

#include <fmt/format.h>
#include <verilated.h>
#include <verilated_fst_c.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace tessera::cosim {

using sc_core::sc_time;
using sc_core::sc_time_stamp;
using sc_core::SC_NS;
using sc_core::SC_ZERO_TIME;

namespace {

// Verilated ports are integers up to 64 bits and VlWide beyond.
inline void set_bytes(std::uint64_t& v, const std::uint8_t* in, unsigned n) {
  v = 0;
  for (unsigned i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(in[i]) << (8 * i);
}
template <std::size_t W>
void set_bytes(VlWide<W>& v, const std::uint8_t* in, unsigned n) {
  for (std::size_t w = 0; w < W; ++w) v[w] = 0;
  for (unsigned i = 0; i < n; ++i) v[i / 4] |= static_cast<std::uint32_t>(in[i]) << (8 * (i % 4));
}
inline void get_bytes(std::uint64_t v, std::uint8_t* out, unsigned n) {
  for (unsigned i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
template <std::size_t W>
void get_bytes(const VlWide<W>& v, std::uint8_t* out, unsigned n) {
  for (unsigned i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(v[i / 4] >> (8 * (i % 4)));
}

template <class V>
class VerilatedDmaPort final : public DmaRtlPort {
public:
  explicit VerilatedDmaPort(unsigned data_bytes) : data_bytes_(data_bytes) {
    ctx_.debug(0);
    top_ = std::make_unique<V>(&ctx_);
  }
  ~VerilatedDmaPort() override {
    // Verilator 5.006 unregisters a model's scopes from the thread's current
    // context, not the model's own: with several models (each with its own
    // context) that may be one already destroyed, so point it at ours first.
    Verilated::threadContextp(&ctx_);
    if (fst_) fst_->close();
    top_->final();
    top_.reset();
  }

  void reset() override {
    top_->rst_ni = 0;
    DmaPortIn idle;
    DmaPortOut ignored;
    for (int i = 0; i < 4; ++i) cycle(idle, ignored);
    top_->rst_ni = 1;
    cycle(idle, ignored);
  }

  void cycle(const DmaPortIn& in, DmaPortOut& out) override {
    V& t = *top_;
    hold_at_window_start();
    t.reg_req_i = in.reg_req;
    t.reg_we_i = in.reg_we;
    t.reg_addr_i = in.reg_addr;
    t.reg_wdata_i = in.reg_wdata;
    t.arready_i = in.arready;
    t.awready_i = in.awready;
    t.wready_i = in.wready;
    t.rvalid_i = in.rvalid;
    if (in.rvalid) {
      t.rid_i = in.rid;
      t.rresp_i = in.rresp;
      t.rlast_i = in.rlast;
      set_wide(t.rdata_i, in.rdata);
    }
    t.bvalid_i = in.bvalid;
    t.bid_i = in.bid;
    t.bresp_i = in.bresp;
    t.clk_i = 0;
    t.eval();
    dump(false);
    out.arvalid = t.arvalid_o;
    if (out.arvalid) {
      out.arid = t.arid_o;
      out.araddr = t.araddr_o;
      out.arlen = t.arlen_o;
    }
    out.awvalid = t.awvalid_o;
    if (out.awvalid) {
      out.awid = t.awid_o;
      out.awaddr = t.awaddr_o;
      out.awlen = t.awlen_o;
    }
    out.wvalid = t.wvalid_o;
    if (out.wvalid) {
      out.wdata.resize(data_bytes_);
      get_bytes(t.wdata_o, out.wdata.data(), data_bytes_);
      out.wstrb = t.wstrb_o;
      out.wlast = t.wlast_o;
    }
    out.rready = t.rready_o;
    out.bready = t.bready_o;
    out.busy = t.busy_o;
    out.moving = t.moving_o;
    t.clk_i = 1;
    t.eval();
    dump(true);
    ctx_.timeInc(2);  // assertion messages carry the time: 2 units per cycle
    out.reg_rdata = t.reg_rdata_o;
  }

  void trace_to(const std::string& path, std::uint64_t from_ps, std::uint64_t to_ps, double period_ps) override {
    ctx_.traceEverOn(true);
    fst_ = std::make_unique<VerilatedFstC>();
    top_->trace(fst_.get(), 99);
    fst_->open(path.c_str());
    from_ps_ = from_ps;
    to_ps_ = to_ps;
    half_ps_ = period_ps / 2;
  }

private:
  // An idle engine is not clocked: when the trace's window opened since the
  // last cycle, it opens with the values held since then.
  void hold_at_window_start() {
    if (!fst_ || dumped_ || from_ps_ > to_ps_) return;
    if (trace::ps(sc_core::sc_time_stamp()) <= static_cast<double>(from_ps_)) return;
    fst_->dump(from_ps_);
    dumped_ = true;
    last_ps_ = from_ps_;
  }

  void dump(bool rising) {
    if (!fst_) return;
    const double now = trace::ps(sc_core::sc_time_stamp()) + (rising ? half_ps_ : 0.0);
    const auto t = static_cast<std::uint64_t>(std::llround(now));
    if (t < from_ps_ || t > to_ps_ || (dumped_ && t <= last_ps_)) return;
    fst_->dump(t);
    dumped_ = true;
    last_ps_ = t;
  }

  template <class T>
  void set_wide(T& port, const std::uint8_t* bytes) {
    if constexpr (std::is_integral_v<T>) {
      std::uint64_t v = 0;
      set_bytes(v, bytes, data_bytes_);
      port = static_cast<T>(v);
    } else {
      set_bytes(port, bytes, data_bytes_);
    }
  }

  unsigned data_bytes_;
  VerilatedContext ctx_;
  std::unique_ptr<V> top_;
  std::unique_ptr<VerilatedFstC> fst_;
  std::uint64_t from_ps_ = 0, to_ps_ = 0, last_ps_ = 0;
  double half_ps_ = 0;
  bool dumped_ = false;
};

struct Variant {
  unsigned data_bytes, queues, outstanding;
  std::unique_ptr<DmaRtlPort> (*make)();
};

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
#define TESSERA_DMA_VARIANT(D, Q, O, PREFIX) \
  {D, Q, O, [] { return std::unique_ptr<DmaRtlPort>(std::make_unique<VerilatedDmaPort<PREFIX>>(D)); }},
      TESSERA_DMA_VARIANTS
#undef TESSERA_DMA_VARIANT
  };
  return v;
}

std::string variant_name(std::uint64_t d, std::uint64_t q, std::uint64_t o) { return fmt::format("{}x{}x{}", d, q, o); }

}  // namespace

const std::vector<std::string>& rtl_dma_variants() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Variant& v : variants()) n.push_back(variant_name(v.data_bytes, v.queues, v.outstanding));
    return n;
  }();
  return names;
}

std::unique_ptr<DmaRtlPort> make_dma_rtl_port(const arch::HwConfig& cfg) {
  const auto d = static_cast<unsigned>(cfg.dma.axi_data_bytes);
  const auto q = static_cast<unsigned>(cfg.dma.queues_per_engine);
  const auto o = static_cast<unsigned>(cfg.dma.max_outstanding);
  for (const Variant& v : variants())
    if (v.data_bytes == d && v.queues == q && v.outstanding == o) return v.make();
  throw std::runtime_error(fmt::format(
      "no Verilated DMA engine for dma.axi_data_bytes={}, dma.queues_per_engine={}, dma.max_outstanding={} "
      "(built: {}); add \"{}\" to TESSERA_DMA_RTL_VARIANTS in systemc_models/cosim/CMakeLists.txt and rebuild",
      d, q, o, fmt::join(rtl_dma_variants(), ", "), variant_name(d, q, o)));
}

RtlDmaEngine::RtlDmaEngine(sc_core::sc_module_name name, core::CoreContext& ctx, std::uint32_t queues)
    : DmaEngineBase(name, queues, ctx.stats),
      ctx_(ctx),
      // The same clock as the fast model: one data beat per cycle gives the configured bandwidth.
      period_(static_cast<double>(ctx.cfg.dma.axi_data_bytes) / ctx.cfg.dma.bytes_per_ns, SC_NS),
      data_bytes_(static_cast<std::uint32_t>(ctx.cfg.dma.axi_data_bytes)),
      fetch_id_(static_cast<std::uint32_t>(ctx.cfg.dma.max_outstanding)),
      port_(make_dma_rtl_port(ctx.cfg)) {
  if (queues != ctx.cfg.dma.queues_per_engine)
    throw std::runtime_error(fmt::format("{}: {} queues asked, the Verilated build has {}", this->name(), queues,
                                         ctx.cfg.dma.queues_per_engine));
  // TESSERA_DMA_BRIDGE_LOG=1 prints every burst with its times: what the fast
  // model's timing rules were calibrated from.
  log_ = std::getenv("TESSERA_DMA_BRIDGE_LOG") != nullptr;
  port_->reset();
  namespace r = arch::dma_reg;
  // The window is the whole device map, so the RTL's ADDR_WINDOW check rejects
  // what lies beyond it; holes inside it come back as decode errors instead.
  const std::uint64_t limit = ctx.map.dma_window_limit(ctx.on_chip);
  write_reg_now(r::kWinBaseLo, 0);
  write_reg_now(r::kWinBaseHi, 0);
  write_reg_now(r::kWinLimitLo, static_cast<std::uint32_t>(limit));
  write_reg_now(r::kWinLimitHi, static_cast<std::uint32_t>(limit >> 32));
  write_reg_now(r::kTiming, static_cast<std::uint32_t>(ctx.cfg.dma.descriptor_gap_cycles));
  write_reg_now(r::kCtrl, 1u | static_cast<std::uint32_t>(ctx.cfg.dma.run_gap_cycles) << 24);
  if (ctx.waves) {
    if (const auto t = ctx.waves->rtl_trace(basename()))
      port_->trace_to(t->path, t->from_ps, t->to_ps, trace::ps(period_));
  }
  SC_THREAD(run);
}

void RtlDmaEngine::write_reg_now(std::uint32_t addr, std::uint32_t value) {
  DmaPortIn in;
  in.reg_req = in.reg_we = true;
  in.reg_addr = addr;
  in.reg_wdata = value;
  DmaPortOut out;
  port_->cycle(in, out);
  if (out.arvalid || out.awvalid || out.busy)
    throw std::runtime_error(fmt::format("{}: rings are configured before the run, while the engine is idle", name()));
}

void RtlDmaEngine::configure_queue(std::uint32_t q, std::uint64_t ring_base, std::uint32_t ring_size) {
  expect_ring(ring_size);
  dma::QueueState& s = queues_.at(q);
  s = dma::QueueState{};
  s.ring_base = ring_base;
  s.ring_size = ring_size;
  namespace r = arch::dma_reg;
  write_reg_now(r::queue(q, r::kQBaseLo), static_cast<std::uint32_t>(ring_base));
  write_reg_now(r::queue(q, r::kQBaseHi), static_cast<std::uint32_t>(ring_base >> 32));
  write_reg_now(r::queue(q, r::kQSize), ring_size);
  write_reg_now(r::queue(q, r::kQHead), 0);
  write_reg_now(r::queue(q, r::kQTail), 0);
  write_reg_now(r::queue(q, r::kQCtrl), 1);
}

std::uint64_t RtlDmaEngine::cycles_for(const sc_time& delay) const {
  // A response is usable in the first cycle that starts at or after it is due.
  const double c = delay / period_;
  return static_cast<std::uint64_t>(std::ceil(c - 1e-9));
}

void RtlDmaEngine::run() {
  for (;;) {
    // Idle engines do not tick: sleep until a doorbell is due, then rejoin the
    // free-running clock at its next edge.
    while (pending_.empty() || pending_.front().visible > sc_time_stamp()) {
      if (pending_.empty())
        sc_core::wait(doorbell_event_);
      else
        sc_core::wait(pending_.front().visible - sc_time_stamp(), doorbell_event_);
    }
    cycle_ = static_cast<std::uint64_t>(std::ceil(sc_time_stamp() / period_ - 1e-9));
    const sc_time edge = period_ * static_cast<double>(cycle_);
    if (edge > sc_time_stamp()) sc_core::wait(edge - sc_time_stamp());
    idle_cycles_ = 0;
    do step();
    while (!idle_and_caught_up());
  }
}

std::uint32_t RtlDmaEngine::read_reg(std::uint32_t addr) {
  const RegOp op{addr, 0, false};
  step(&op);
  return out_.reg_rdata;
}

bool RtlDmaEngine::idle_and_caught_up() {
  const bool quiet = !out_.busy && reads_.empty() && writes_.empty() && reg_ops_.empty() &&
                     (pending_.empty() || pending_.front().visible > sc_time_stamp());
  idle_cycles_ = quiet ? idle_cycles_ + 1 : 0;
  // A doorbell takes a cycle or two to raise busy; look at the queues only once
  // the engine has stayed quiet.
  if (idle_cycles_ < 3) return false;
  namespace r = arch::dma_reg;
  bool caught_up = true;
  for (std::uint32_t q = 0; q < queues_.size(); ++q) {
    dma::QueueState& s = queues_[q];
    if (s.ring_size == 0 || s.error != arch::DmaError::kNone || s.head == s.tail) continue;
    const std::uint32_t status = read_reg(r::queue(q, r::kQStatus));
    if (!(status & 2u)) {
      caught_up = false;
      continue;
    }
    s.error = static_cast<arch::DmaError>((status >> 8) & 0xffu);
    s.error_index = read_reg(r::queue(q, r::kQErrInfo));
    ctx_.fail(fmt::format("{}.q{} descriptor {} (at 0x{:x}): {}: reported by the RTL engine (Q_STATUS 0x{:x})",
                          name(), q, s.error_index,
                          s.ring_base + std::uint64_t{s.error_index} * arch::kDmaDescriptorBytes,
                          arch::to_string(s.error), status));
  }
  idle_cycles_ = 0;
  return caught_up;
}

sc_time RtlDmaEngine::transport(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data,
                                std::uint32_t length, bool& error) {
  tlm::tlm_generic_payload t;
  t.set_command(cmd);
  t.set_address(address);
  t.set_data_ptr(data);
  t.set_data_length(length);
  t.set_streaming_width(length);
  t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_time delay = SC_ZERO_TIME;
  socket->b_transport(t, delay);
  error = t.is_response_error();
  return delay;
}

void RtlDmaEngine::accept_read(std::uint32_t id, std::uint64_t addr, std::uint32_t beats) {
  ReadBurst r{id, beats, 0, 0, read_seq_++, false, std::vector<std::uint8_t>(std::size_t{beats} * data_bytes_, 0)};
  // Timing-only runs move no data, but descriptors (the fetch ID) are real.
  const tlm::tlm_command cmd = ctx_.no_data && id != fetch_id_ ? tlm::TLM_IGNORE_COMMAND : tlm::TLM_READ_COMMAND;
  const sc_time delay = transport(cmd, addr, r.data.data(), static_cast<std::uint32_t>(r.data.size()), r.error);
  r.ready_cycle = cycle_ + cycles_for(delay);
  note_walk(id, addr, r.data);
  if (log_)
    std::fprintf(stderr, "%s %.3f AR id %u 0x%llx beats %u ready %.3f\n", name(), trace::ns(sc_time_stamp()),
                 id, static_cast<unsigned long long>(addr), beats,
                 trace::ns(period_ * static_cast<double>(r.ready_cycle)));
  reads_.push_back(std::move(r));
}

void RtlDmaEngine::note_walk(std::uint32_t id, std::uint64_t addr, const std::vector<std::uint8_t>& data) {
  if (id != fetch_id_) {
    if (walking_.empty()) return;
    Walking& w = walking_.front();
    if (w.issued++ == 0) starts_.push_back({w.queue, w.index, sc_time_stamp()});
    if (w.issued == w.reads) walking_.pop_front();
    return;
  }
  for (std::uint32_t q = 0; q < queues_.size(); ++q) {
    const dma::QueueState& s = queues_[q];
    if (!s.ring_size || addr < s.ring_base || addr >= s.ring_base + std::uint64_t{s.ring_size} * arch::kDmaDescriptorBytes)
      continue;
    if (data.size() < arch::kDmaDescriptorBytes) return;
    std::array<std::uint8_t, arch::kDmaDescriptorBytes> raw{};
    std::memcpy(raw.data(), data.data(), raw.size());
    const arch::DmaDescriptor d = arch::unpack(raw);
    if (!arch::check(d).ok()) return;  // refused before any data moves
    std::vector<dma::Run> reads;
    dma::pattern_bursts(d.src_addr, d.src_size, d.src_stride, d.elem_log2, dma::max_burst_bytes(data_bytes_), reads);
    walking_.push_back({q, static_cast<std::uint32_t>((addr - s.ring_base) / arch::kDmaDescriptorBytes), reads.size()});
    return;
  }
}

void RtlDmaEngine::finish_write(WriteBurst& w) {
  // Strobes cover exactly the bytes of the transfer, so each contiguous run of
  // enabled bytes is one target access (the memories take no byte enables).
  sc_time latest = SC_ZERO_TIME;
  const std::size_t n = w.data.size();
  for (std::size_t i = 0; i < n;) {
    if (!w.strb[i]) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < n && w.strb[j]) ++j;
    const std::uint64_t addr = w.addr + i;
    const auto len = static_cast<std::uint32_t>(j - i);
    const arch::Region region = ctx_.map.region_of(addr, len);
    // A 2-byte write at offset 62 of a slot of one of this engine's rings is a
    // descriptor's status write-back: the descriptor is complete.
    std::int64_t ring_q = -1;
    std::uint32_t index = 0;
    if (len == 2 && (addr % arch::kDmaDescriptorBytes) == arch::kDmaStatusOffset)
      for (std::uint32_t q = 0; q < queues_.size(); ++q) {
        const dma::QueueState& s = queues_[q];
        const std::uint64_t slot = addr - arch::kDmaStatusOffset;
        if (s.ring_size && slot >= s.ring_base && slot < s.ring_base + std::uint64_t{s.ring_size} * arch::kDmaDescriptorBytes) {
          ring_q = q;
          index = static_cast<std::uint32_t>((slot - s.ring_base) / arch::kDmaDescriptorBytes);
          break;
        }
      }
    const bool is_data = ring_q < 0 && region != arch::Region::Semaphore;
    const tlm::tlm_command cmd = ctx_.no_data && is_data ? tlm::TLM_IGNORE_COMMAND : tlm::TLM_WRITE_COMMAND;
    bool err = false;
    const sc_time delay = transport(cmd, addr, w.data.data() + i, len, err);
    w.error |= err;
    latest = std::max(latest, delay);
    if (is_data) stats_.bytes += len;
    if (ring_q >= 0 && !err) {
      dma::QueueState& s = queues_[static_cast<std::size_t>(ring_q)];
      s.head = (index + 1) % s.ring_size;
      ++s.descriptors_done;
      ++stats_.descriptors;
      wave_queue(static_cast<std::uint32_t>(ring_q));
      completions_.push_back({static_cast<std::uint32_t>(ring_q), index, sc_time_stamp() + delay});
    }
    i = j;
  }
  w.data_done = true;
  w.ready_cycle = cycle_ + cycles_for(latest);
  if (log_)
    std::fprintf(stderr, "%s %.3f WLAST 0x%llx beats %u B at %.3f\n", name(), trace::ns(sc_time_stamp()),
                 static_cast<unsigned long long>(w.addr), w.beats,
                 trace::ns(period_ * static_cast<double>(w.ready_cycle)));
}

void RtlDmaEngine::step(const RegOp* op) {
  take_turn();
  // Doorbells that have become visible go out as Q_TAIL writes, one per cycle.
  while (!pending_.empty() && pending_.front().visible <= sc_time_stamp()) {
    const PendingTail& p = pending_.front();
    if (log_) std::fprintf(stderr, "%s %.3f doorbell q%u tail %u\n", name(), trace::ns(sc_time_stamp()), p.queue, p.tail);
    queues_[p.queue].tail = p.tail;
    wave_queue(p.queue);
    reg_ops_.push_back({arch::dma_reg::queue(p.queue, arch::dma_reg::kQTail), p.tail, true});
    pending_.pop_front();
  }
  RegOp queued{};
  if (!op && !reg_ops_.empty()) {
    queued = reg_ops_.front();
    reg_ops_.pop_front();
    op = &queued;
  }
  DmaPortIn& in = in_;
  in.reg_req = op != nullptr;
  in.reg_we = op && op->write;
  in.reg_addr = op ? op->addr : 0;
  in.reg_wdata = op ? op->value : 0;
  // The interconnect takes every address at once; the RTL limits its own outstanding bursts.
  in.arready = true;
  in.awready = true;
  WriteBurst* w_open = nullptr;
  for (WriteBurst& w : writes_)
    if (!w.data_done) {
      w_open = &w;
      break;
    }
  in.wready = w_open != nullptr;

  // R: a started burst finishes first; otherwise the one whose data came back first.
  if (r_current_ < 0) {
    for (std::size_t i = 0; i < reads_.size(); ++i) {
      const ReadBurst& r = reads_[i];
      if (r.ready_cycle > cycle_) continue;
      if (r_current_ < 0 || r.ready_cycle < reads_[static_cast<std::size_t>(r_current_)].ready_cycle)
        r_current_ = static_cast<int>(i);
    }
  }
  in.rvalid = r_current_ >= 0;
  if (in.rvalid) {
    const ReadBurst& r = reads_[static_cast<std::size_t>(r_current_)];
    in.rid = r.id;
    in.rdata = r.data.data() + std::size_t{r.beat} * data_bytes_;
    in.rresp = r.error ? 2 : 0;
    in.rlast = r.beat + 1 == r.beats;
  }
  // B: one write ID, so responses in AW order.
  in.bvalid = !writes_.empty() && writes_.front().data_done && writes_.front().ready_cycle <= cycle_;
  in.bid = 0;
  in.bresp = in.bvalid && writes_.front().error ? 2 : 0;

  port_->cycle(in, out_);
  ++ticks_;
  if (out_.moving) stats_.busy_ns += trace::ns(period_);

  if (out_.arvalid) accept_read(out_.arid, out_.araddr, out_.arlen + 1);
  if (out_.awvalid) {
    if (log_)
      std::fprintf(stderr, "%s %.3f AW 0x%llx beats %u\n", name(), trace::ns(sc_time_stamp()),
                   static_cast<unsigned long long>(out_.awaddr), out_.awlen + 1);
    WriteBurst w;
    w.addr = out_.awaddr;
    w.beats = out_.awlen + 1;
    w.data.assign(std::size_t{w.beats} * data_bytes_, 0);
    w.strb.assign(w.data.size(), 0);
    writes_.push_back(std::move(w));
  }
  if (out_.wvalid && in.wready) {
    WriteBurst& w = *w_open;
    const std::size_t at = std::size_t{w.beat} * data_bytes_;
    std::memcpy(w.data.data() + at, out_.wdata.data(), data_bytes_);
    for (std::uint32_t b = 0; b < data_bytes_; ++b) w.strb[at + b] = (out_.wstrb >> b) & 1u;
    if (++w.beat == w.beats) finish_write(w);
  }
  if (in.rvalid && out_.rready) {
    ReadBurst& r = reads_[static_cast<std::size_t>(r_current_)];
    if (++r.beat == r.beats) {
      reads_.erase(reads_.begin() + r_current_);
      r_current_ = -1;
    }
  }
  if (in.bvalid && out_.bready) writes_.pop_front();

  ++cycle_;
  sc_core::wait(period_);
}

dma::DmaEngineFactory rtl_dma_factory(const arch::HwConfig& cfg) {
  make_dma_rtl_port(cfg);  // fail now, with the list to extend, not at the first engine
  return [](const char* name, core::CoreContext& ctx, std::uint32_t queues) -> std::unique_ptr<dma::DmaEngineBase> {
    return std::make_unique<RtlDmaEngine>(name, ctx, queues);
  };
}

}  // namespace tessera::cosim
