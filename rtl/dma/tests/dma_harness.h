// Test and benchmark harness for the Verilated DMA engine: an AXI4 memory
// model with configurable latency, random backpressure on every channel and
// random response order across IDs, a protocol checker on the manager's
// outputs, a register-port driver and a reference copy model.
#pragma once

#include "arch/dma_descriptor.h"

#include <verilated.h>
#include <verilated_fst_c.h>

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace tessera::rtl::dma {

using arch::DmaDescriptor;

// Verilated ports are uint64_t up to 64 bits and VlWide beyond.
inline void to_bytes(std::uint64_t v, std::uint8_t* out, unsigned n) {
  for (unsigned i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
template <std::size_t W>
void to_bytes(const VlWide<W>& v, std::uint8_t* out, unsigned n) {
  for (unsigned i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(v[i / 4] >> (8 * (i % 4)));
}
inline void from_bytes(std::uint64_t& v, const std::uint8_t* in, unsigned n) {
  v = 0;
  for (unsigned i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(in[i]) << (8 * i);
}
template <std::size_t W>
void from_bytes(VlWide<W>& v, const std::uint8_t* in, unsigned n) {
  for (std::size_t w = 0; w < W; ++w) v[w] = 0;
  for (unsigned i = 0; i < n; ++i) v[i / 4] |= static_cast<std::uint32_t>(in[i]) << (8 * (i % 4));
}
inline void from_bytes(std::uint32_t& v, const std::uint8_t* in, unsigned n) {
  std::uint64_t t = 0;
  from_bytes(t, in, n);
  v = static_cast<std::uint32_t>(t);
}
inline void from_bytes(std::uint8_t& v, const std::uint8_t* in, unsigned n) {
  std::uint64_t t = 0;
  from_bytes(t, in, n);
  v = static_cast<std::uint8_t>(t);
}

struct MemoryTiming {
  unsigned read_latency = 20;   // cycles from AR accepted to the first R beat
  unsigned write_latency = 20;  // cycles from the last W beat to B
  unsigned jitter = 0;          // each latency gets + uniform [0, jitter]
  double ar_ready = 1.0;        // probability a channel is ready / a response presented
  double aw_ready = 1.0;
  double w_ready = 1.0;
  double r_valid = 1.0;
  double b_valid = 1.0;
  bool reorder = false;  // pick among IDs at random (and interleave R beats)
};

struct AddrRange {
  std::uint64_t lo = 0, hi = 0;  // [lo, hi)
  bool overlaps(std::uint64_t a, std::uint64_t b) const { return a < hi && lo < b; }
  bool contains(std::uint64_t a) const { return a >= lo && a < hi; }
};

// AXI4 subordinate over a flat byte array. Reads see memory when the R beat is
// sent; a write burst becomes visible when its B response is sent, so a late
// write response makes ordering hazards observable.
class AxiMemory {
public:
  AxiMemory(std::uint64_t size, unsigned data_bytes, std::uint64_t seed)
      : bytes(size, 0), data_bytes_(data_bytes), rng_(seed) {}

  std::vector<std::uint8_t> bytes;
  MemoryTiming timing;
  std::vector<AddrRange> read_errors, write_errors;  // SLVERR regions
  AddrRange semaphores;  // 32-bit words here add the written value
  std::vector<std::string> violations;

  struct WriteEvent {
    std::uint64_t cycle, addr;
    unsigned beats;
  };
  std::vector<WriteEvent> write_log;  // applied bursts, in B order
  std::function<void(std::uint64_t addr, std::uint32_t value)> on_semaphore;
  std::uint64_t max_reads_in_flight = 0, max_writes_in_flight = 0;
  // First R and last W beat handed over: the span in which data streamed.
  std::uint64_t first_r_cycle = ~0ull, last_w_cycle = 0;
  // Every AR and AW handshake, and every R and W beat (with its burst's
  // address): its cycle and address.
  struct AddressEvent {
    std::uint64_t cycle, addr;
  };
  std::vector<AddressEvent> ar_log, aw_log, r_log, w_log;

  template <class V>
  void drive(V& t, std::uint64_t now) {
    now_ = now;
    t.arready_i = coin(timing.ar_ready);
    t.awready_i = coin(timing.aw_ready);
    t.wready_i = pending_w() != nullptr && coin(timing.w_ready);

    if (!r_holding_) r_pick_ = pick_read();
    t.rvalid_i = 0;
    if (r_pick_ >= 0 && (r_holding_ || coin(timing.r_valid))) {
      Read& r = reads_[static_cast<std::size_t>(r_pick_)];
      std::vector<std::uint8_t> beat(data_bytes_, 0);
      const std::uint64_t a = r.addr + static_cast<std::uint64_t>(r.beat) * data_bytes_;
      if (!r.decerr) std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(a), data_bytes_, beat.begin());
      t.rvalid_i = 1;
      t.rid_i = r.id;
      from_bytes(t.rdata_i, beat.data(), data_bytes_);
      t.rresp_i = r.decerr ? 3 : r.slverr ? 2 : 0;
      t.rlast_i = r.beat + 1 == r.beats;
    }
    r_valid_ = t.rvalid_i;

    if (!b_holding_) b_pick_ = pick_write_response();
    t.bvalid_i = 0;
    if (b_pick_ >= 0 && (b_holding_ || coin(timing.b_valid))) {
      Write& w = writes_[static_cast<std::size_t>(b_pick_)];
      t.bvalid_i = 1;
      t.bid_i = w.id;
      t.bresp_i = w.decerr ? 3 : w.slverr ? 2 : 0;
    }
    b_valid_ = t.bvalid_i;
  }

  // Called after the falling-edge evaluation: the cycle's handshakes.
  template <class V>
  void sample(V& t) {
    check_stable("AR", t.arvalid_o, t.arready_i, ar_prev_, payload_ar(t));
    check_stable("AW", t.awvalid_o, t.awready_i, aw_prev_, payload_aw(t));
    std::vector<std::uint8_t> wbytes(data_bytes_), wstrb(8, 0);
    to_bytes(t.wdata_o, wbytes.data(), data_bytes_);
    to_bytes(t.wstrb_o, wstrb.data(), (data_bytes_ + 7) / 8);
    std::string wp(wbytes.begin(), wbytes.end());
    wp += std::string(wstrb.begin(), wstrb.end());
    wp += static_cast<char>(t.wlast_o);
    check_stable("W", t.wvalid_o, t.wready_i, w_prev_, wp);

    if (t.arvalid_o && t.arready_i) {
      ar_log.push_back({now_, static_cast<std::uint64_t>(t.araddr_o)});
      accept_read(t.arid_o, t.araddr_o, t.arlen_o, t.arsize_o, t.arburst_o);
    }
    if (t.awvalid_o && t.awready_i) {
      aw_log.push_back({now_, static_cast<std::uint64_t>(t.awaddr_o)});
      accept_write(t.awid_o, t.awaddr_o, t.awlen_o, t.awsize_o, t.awburst_o);
    }
    w_fire_ = t.wvalid_o && t.wready_i;
    if (w_fire_) accept_beat(wbytes, wstrb, t.wlast_o);
    r_fire_ = r_valid_ && t.rready_o;
    if (r_fire_ && first_r_cycle == ~0ull) first_r_cycle = now_;
    if (r_fire_) r_log.push_back({now_, reads_[static_cast<std::size_t>(r_pick_)].addr});
    if (w_fire_) last_w_cycle = now_;
    b_fire_ = b_valid_ && t.bready_o;
    r_holding_ = r_valid_ && !t.rready_o;
    b_holding_ = b_valid_ && !t.bready_o;
  }

  // After the rising edge: retire what was handed over.
  void commit() {
    if (r_fire_) {
      Read& r = reads_[static_cast<std::size_t>(r_pick_)];
      if (++r.beat == r.beats) reads_.erase(reads_.begin() + r_pick_);
    }
    if (b_fire_) {
      apply(writes_[static_cast<std::size_t>(b_pick_)]);
      writes_.erase(writes_.begin() + b_pick_);
    }
    if (r_fire_) r_pick_ = -1;
    if (b_fire_) b_pick_ = -1;
    max_reads_in_flight = std::max<std::uint64_t>(max_reads_in_flight, reads_.size());
    max_writes_in_flight = std::max<std::uint64_t>(max_writes_in_flight, writes_.size());
  }

  bool quiet() const { return reads_.empty() && writes_.empty(); }

private:
  struct Read {
    unsigned id;
    std::uint64_t addr, ready_at, seq;
    unsigned beats, beat = 0;
    bool slverr, decerr;
  };
  struct Write {
    unsigned id;
    std::uint64_t addr, ready_at = 0, seq;
    unsigned beats, beat = 0;
    bool slverr, decerr, data_done = false;
    std::vector<std::uint8_t> data, strb;
  };

  bool coin(double p) { return p >= 1.0 || std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  std::uint64_t jitter() {
    return timing.jitter ? std::uniform_int_distribution<unsigned>(0, timing.jitter)(rng_) : 0;
  }
  void violation(const std::string& what) {
    if (violations.size() < 20) violations.push_back("cycle " + std::to_string(now_) + ": " + what);
  }

  template <class V>
  static std::string payload_ar(V& t) {
    return std::to_string(t.araddr_o) + "/" + std::to_string(t.arlen_o) + "/" + std::to_string(t.arid_o) +
           "/" + std::to_string(t.arsize_o) + "/" + std::to_string(t.arburst_o);
  }
  template <class V>
  static std::string payload_aw(V& t) {
    return std::to_string(t.awaddr_o) + "/" + std::to_string(t.awlen_o) + "/" + std::to_string(t.awid_o) +
           "/" + std::to_string(t.awsize_o) + "/" + std::to_string(t.awburst_o);
  }

  struct Held {
    bool waiting = false;
    std::string payload;
  };
  void check_stable(const char* ch, bool valid, bool ready, Held& h, const std::string& payload) {
    if (h.waiting && !valid) violation(std::string(ch) + "VALID dropped before READY");
    if (h.waiting && valid && payload != h.payload) violation(std::string(ch) + " payload changed while VALID && !READY");
    h.waiting = valid && !ready;
    h.payload = payload;
  }

  bool check_burst(const char* ch, std::uint64_t addr, unsigned len, unsigned size, unsigned burst) {
    bool ok = true;
    if ((1u << size) != data_bytes_) violation(std::string(ch) + "SIZE is not the bus width"), ok = false;
    if (burst != 1) violation(std::string(ch) + "BURST is not INCR"), ok = false;
    if (addr % data_bytes_) violation(std::string(ch) + "ADDR not aligned to the bus width"), ok = false;
    if (len > 255) violation(std::string(ch) + "LEN above 255"), ok = false;
    if ((addr % 4096) + static_cast<std::uint64_t>(len + 1) * data_bytes_ > 4096)
      violation(std::string(ch) + " burst crosses a 4 KiB boundary at " + std::to_string(addr)), ok = false;
    return ok;
  }

  void accept_read(unsigned id, std::uint64_t addr, unsigned len, unsigned size, unsigned burst) {
    check_burst("AR", addr, len, size, burst);
    Read r{id, addr, now_ + timing.read_latency + jitter(), seq_++, len + 1, 0, false, false};
    const std::uint64_t end = addr + static_cast<std::uint64_t>(len + 1) * data_bytes_;
    r.decerr = end > bytes.size();
    for (const AddrRange& e : read_errors) r.slverr |= e.overlaps(addr, end);
    for (const Read& o : reads_)
      if (o.id == id) violation("AR reuses an ID with a read outstanding (allowed, but the engine never does)");
    reads_.push_back(r);
  }

  void accept_write(unsigned id, std::uint64_t addr, unsigned len, unsigned size, unsigned burst) {
    check_burst("AW", addr, len, size, burst);
    Write w{id, addr, 0, seq_++, len + 1, 0, false, false, false, {}, {}};
    const std::uint64_t end = addr + static_cast<std::uint64_t>(len + 1) * data_bytes_;
    w.decerr = end > bytes.size();
    for (const AddrRange& e : write_errors) w.slverr |= e.overlaps(addr, end);
    w.data.assign(static_cast<std::size_t>(w.beats) * data_bytes_, 0);
    w.strb.assign(w.data.size(), 0);
    writes_.push_back(w);
  }

  Write* pending_w() {
    for (Write& w : writes_)
      if (!w.data_done) return &w;
    return nullptr;
  }

  void accept_beat(const std::vector<std::uint8_t>& data, const std::vector<std::uint8_t>& strb, bool last) {
    Write* w = pending_w();
    if (!w) return violation("W beat without a write burst");
    w_log.push_back({now_, w->addr});
    bool any = false;
    for (unsigned i = 0; i < data_bytes_; ++i) {
      const bool on = (strb[i / 8] >> (i % 8)) & 1;
      any |= on;
      w->data[w->beat * data_bytes_ + i] = data[i];
      w->strb[w->beat * data_bytes_ + i] = on;
    }
    if (!any) violation("W beat with no strobe set");
    const bool expect_last = w->beat + 1 == w->beats;
    if (last != expect_last) violation(last ? "WLAST before the last beat" : "WLAST missing on the last beat");
    if (++w->beat == w->beats) {
      w->data_done = true;
      w->ready_at = now_ + timing.write_latency + jitter();
    }
  }

  // The oldest burst of each ID is eligible; AXI keeps same-ID order.
  template <class T>
  int pick(const std::vector<T>& v, bool need_data) {
    std::vector<int> eligible;
    std::map<unsigned, bool> seen;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const T& x = v[i];
      if (seen[x.id]) continue;
      seen[x.id] = true;
      if (x.ready_at <= now_ && (!need_data || data_done(x))) eligible.push_back(static_cast<int>(i));
    }
    if (eligible.empty()) return -1;
    if (!timing.reorder) {
      // In order across IDs too: only the oldest overall may go.
      return eligible.front() == first_live(v, need_data) ? eligible.front() : -1;
    }
    return eligible[std::uniform_int_distribution<std::size_t>(0, eligible.size() - 1)(rng_)];
  }
  static bool data_done(const Read&) { return true; }
  static bool data_done(const Write& w) { return w.data_done; }
  template <class T>
  static int first_live(const std::vector<T>& v, bool need_data) {
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!need_data || data_done(v[i])) return static_cast<int>(i);
    return -1;
  }
  int pick_read() {
    // Without reordering a started burst finishes first; with it, R beats of
    // different IDs interleave.
    return pick(reads_, false);
  }
  int pick_write_response() { return pick(writes_, true); }

  void apply(const Write& w) {
    write_log.push_back({now_, w.addr, w.beats});
    if (w.slverr || w.decerr) return;
    for (std::size_t i = 0; i < w.data.size(); ++i) {
      const std::uint64_t a = w.addr + i;
      if (!w.strb[i]) continue;
      if (semaphores.contains(a)) {
        if (a % 4) continue;  // handled with its word
        bool full = i + 3 < w.data.size() && w.strb[i + 1] && w.strb[i + 2] && w.strb[i + 3];
        if (!full) {
          violation("partial write to a semaphore word");
          continue;
        }
        std::uint32_t add = 0, cur = 0;
        for (unsigned k = 0; k < 4; ++k) {
          add |= static_cast<std::uint32_t>(w.data[i + k]) << (8 * k);
          cur |= static_cast<std::uint32_t>(bytes[a + k]) << (8 * k);
        }
        cur += add;
        for (unsigned k = 0; k < 4; ++k) bytes[a + k] = static_cast<std::uint8_t>(cur >> (8 * k));
        if (on_semaphore) on_semaphore(a, add);
        continue;
      }
      bytes[a] = w.data[i];
    }
  }

  unsigned data_bytes_;
  std::mt19937_64 rng_;
  std::uint64_t now_ = 0, seq_ = 0;
  std::vector<Read> reads_;
  std::vector<Write> writes_;
  int r_pick_ = -1, b_pick_ = -1;
  bool r_valid_ = false, b_valid_ = false, r_fire_ = false, b_fire_ = false, w_fire_ = false;
  bool r_holding_ = false, b_holding_ = false;
  Held ar_prev_, aw_prev_, w_prev_;
};

// Calls fn(address) for each element of one side of a descriptor, in order.
template <class Fn>
void for_each_element(std::uint64_t base, const std::array<std::uint16_t, 4>& size,
                      const std::array<std::uint32_t, 4>& stride, Fn fn) {
  for (std::uint64_t i3 = 0; i3 < size[3]; ++i3)
    for (std::uint64_t i2 = 0; i2 < size[2]; ++i2)
      for (std::uint64_t i1 = 0; i1 < size[1]; ++i1)
        for (std::uint64_t i0 = 0; i0 < size[0]; ++i0)
          fn(base + i0 * stride[0] + i1 * stride[1] + i2 * stride[2] + i3 * stride[3]);
}

// What a correct engine does to memory for one descriptor at ring address slot.
inline void reference_copy(const DmaDescriptor& d, std::uint64_t slot, std::vector<std::uint8_t>& mem,
                           const AddrRange& semaphores) {
  const std::uint64_t e = 1ull << d.elem_log2;
  std::vector<std::uint8_t> stream;
  for_each_element(d.src_addr, d.src_size, d.src_stride, [&](std::uint64_t a) {
    stream.insert(stream.end(), mem.begin() + static_cast<std::ptrdiff_t>(a),
                  mem.begin() + static_cast<std::ptrdiff_t>(a + e));
  });
  std::size_t at = 0;
  for_each_element(d.dst_addr, d.dst_size, d.dst_stride, [&](std::uint64_t a) {
    std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(at), e, mem.begin() + static_cast<std::ptrdiff_t>(a));
    at += e;
  });
  if ((d.flags & arch::kDmaFlagCompletion) && semaphores.contains(d.sem_addr)) {
    std::uint32_t cur = 0;
    for (unsigned k = 0; k < 4; ++k) cur |= static_cast<std::uint32_t>(mem[d.sem_addr + k]) << (8 * k);
    cur += d.sem_value;
    for (unsigned k = 0; k < 4; ++k) mem[d.sem_addr + k] = static_cast<std::uint8_t>(cur >> (8 * k));
  }
  mem[slot + arch::kDmaStatusOffset] = 1;  // done, no error
  mem[slot + arch::kDmaStatusOffset + 1] = 0;
}

// Drives one Verilated engine V from a C++ cycle loop.
template <class V>
class EngineBench {
public:
  EngineBench(unsigned queues, unsigned data_bytes, std::uint64_t mem_bytes, std::uint64_t seed)
      : mem(mem_bytes, data_bytes, seed), queues_(queues), tails_(queues, 0), sizes_(queues, 0),
        bases_(queues, 0) {
    ctx_.debug(0);
    top_ = std::make_unique<V>(&ctx_);
    // TESSERA_DMA_FST=file.fst records a waveform of the whole run for GTKWave.
    if (const char* fst = std::getenv("TESSERA_DMA_FST")) {
      ctx_.traceEverOn(true);
      trace_ = std::make_unique<VerilatedFstC>();
      top_->trace(trace_.get(), 99);
      trace_->open(fst);
    }
    top_->rst_ni = 0;
    top_->reg_req_i = 0;
    for (int i = 0; i < 4; ++i) tick();
    top_->rst_ni = 1;
    tick();
  }

  AxiMemory mem;
  V& top() { return *top_; }
  std::uint64_t cycle() const { return cycle_; }
  std::uint64_t moving_cycles = 0;  // cycles with moving_o set

  void tick() {
    mem.drive(*top_, cycle_);
    top_->clk_i = 0;
    top_->eval();
    if (trace_) trace_->dump(2 * cycle_);
    if (top_->rst_ni) mem.sample(*top_);
    if (top_->rst_ni && top_->moving_o) ++moving_cycles;
    top_->clk_i = 1;
    top_->eval();
    if (trace_) trace_->dump(2 * cycle_ + 1);
    ctx_.timeInc(2);  // assertion messages then carry the time: 2 units per cycle
    if (top_->rst_ni) mem.commit();
    ++cycle_;
  }

  void write_reg(std::uint32_t addr, std::uint32_t value) {
    top_->reg_req_i = 1;
    top_->reg_we_i = 1;
    top_->reg_addr_i = addr;
    top_->reg_wdata_i = value;
    tick();
    top_->reg_req_i = 0;
    top_->reg_we_i = 0;
  }
  std::uint32_t read_reg(std::uint32_t addr) {
    top_->reg_req_i = 1;
    top_->reg_we_i = 0;
    top_->reg_addr_i = addr;
    tick();
    top_->reg_req_i = 0;
    return top_->reg_rdata_o;
  }
  std::uint64_t read_reg64(std::uint32_t lo) {
    const std::uint64_t l = read_reg(lo);
    return l | (static_cast<std::uint64_t>(read_reg(lo + 4)) << 32);
  }

  void set_window(std::uint64_t base, std::uint64_t limit) {
    namespace r = arch::dma_reg;
    write_reg(r::kWinBaseLo, static_cast<std::uint32_t>(base));
    write_reg(r::kWinBaseHi, static_cast<std::uint32_t>(base >> 32));
    write_reg(r::kWinLimitLo, static_cast<std::uint32_t>(limit));
    write_reg(r::kWinLimitHi, static_cast<std::uint32_t>(limit >> 32));
  }
  void enable(unsigned rd_limit = 0, unsigned wr_limit = 0, unsigned run_gap = 0) {
    write_reg(arch::dma_reg::kCtrl, 1u | (rd_limit << 8) | (wr_limit << 16) | (run_gap << 24));
  }
  void setup_queue(unsigned q, std::uint64_t base, std::uint32_t size, bool enabled = true) {
    namespace r = arch::dma_reg;
    bases_[q] = base;
    sizes_[q] = size;
    tails_[q] = 0;
    write_reg(r::queue(q, r::kQBaseLo), static_cast<std::uint32_t>(base));
    write_reg(r::queue(q, r::kQBaseHi), static_cast<std::uint32_t>(base >> 32));
    write_reg(r::queue(q, r::kQSize), size);
    write_reg(r::queue(q, r::kQHead), 0);
    write_reg(r::queue(q, r::kQTail), 0);
    write_reg(r::queue(q, r::kQCtrl), enabled ? 1 : 0);
  }

  // Writes a descriptor into the next ring slot (and into `also`, a reference
  // image, when given); the doorbell is separate so that several can be posted
  // at once. Returns the slot address.
  std::uint64_t post(unsigned q, const DmaDescriptor& d, std::vector<std::uint8_t>* also = nullptr) {
    const std::uint64_t slot = bases_[q] + static_cast<std::uint64_t>(tails_[q]) * arch::kDmaDescriptorBytes;
    const auto b = arch::pack(d);
    std::copy(b.begin(), b.end(), mem.bytes.begin() + static_cast<std::ptrdiff_t>(slot));
    if (also) std::copy(b.begin(), b.end(), also->begin() + static_cast<std::ptrdiff_t>(slot));
    tails_[q] = (tails_[q] + 1) % sizes_[q];
    return slot;
  }
  void doorbell(unsigned q) { write_reg(arch::dma_reg::queue(q, arch::dma_reg::kQTail), tails_[q]); }
  std::uint32_t tail(unsigned q) const { return tails_[q]; }

  // Runs until every queue is drained or stopped and nothing is outstanding.
  // Returns false if that has not happened within max_cycles (a hang).
  bool run_until_idle(std::uint64_t max_cycles) {
    namespace r = arch::dma_reg;
    const std::uint64_t end = cycle_ + max_cycles;
    while (cycle_ < end) {
      for (int i = 0; i < 16; ++i) tick();
      if (top_->busy_o || !mem.quiet()) continue;
      bool all = true;
      for (unsigned q = 0; q < queues_ && all; ++q) {
        const std::uint32_t st = read_reg(r::queue(q, r::kQStatus));
        const bool enabled = read_reg(r::queue(q, r::kQCtrl)) & 1;
        all = !enabled || (st & 2) || read_reg(r::queue(q, r::kQHead)) == read_reg(r::queue(q, r::kQTail));
      }
      if (all && !top_->busy_o) return true;
    }
    return false;
  }

  ~EngineBench() {
    top_->final();
    if (trace_) trace_->close();
  }

private:
  VerilatedContext ctx_;
  std::unique_ptr<V> top_;
  std::unique_ptr<VerilatedFstC> trace_;
  unsigned queues_;
  std::vector<std::uint32_t> tails_, sizes_;
  std::vector<std::uint64_t> bases_;
  std::uint64_t cycle_ = 0;
};


// Random descriptors for the byte-for-byte tests. Source patterns may overlap
// themselves (stride 0 broadcasts); destination elements never overlap, so the
// result does not depend on write order.
struct RandomArea {
  std::uint64_t src_lo, src_hi;  // source data lives here
  std::uint64_t dst_lo, dst_hi;  // destinations are carved from here, in order
  AddrRange semaphores;
  std::uint32_t max_bytes = 16384;
};

inline std::uint64_t pattern_extent(const std::array<std::uint16_t, 4>& n, const std::array<std::uint32_t, 4>& s,
                                    std::uint64_t e) {
  std::uint64_t last = 0;
  for (int k = 0; k < 4; ++k) last += static_cast<std::uint64_t>(n[k] - 1) * s[k];
  return last + e;
}

// Returns false when the destination area is used up.
inline bool random_descriptor(std::mt19937_64& rng, const RandomArea& area, std::uint64_t& dst_cursor,
                              DmaDescriptor& d) {
  auto uni = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  d = DmaDescriptor{};
  d.magic = arch::kDmaDescriptorMagic;
  static const unsigned kElemLog2[] = {0, 0, 1, 2, 2, 3, 3, 4, 6};
  d.elem_log2 = static_cast<std::uint8_t>(kElemLog2[uni(0, 8)]);
  const std::uint64_t e = 1ull << d.elem_log2;
  const bool contiguous = uni(0, 9) < 6;
  // Element-sized runs cost one burst each: keep those descriptors short.
  const std::uint64_t max_elems = std::max<std::uint64_t>(1, (contiguous ? area.max_bytes : 2048) / e / (contiguous ? 1 : 8));
  std::uint64_t total = 0;
  do {
    d.src_size[0] = static_cast<std::uint16_t>(uni(1, uni(0, 3) == 0 ? 600 : 64));
    for (int k = 1; k < 4; ++k) d.src_size[k] = static_cast<std::uint16_t>(uni(0, 1) ? 1 : uni(1, k == 1 ? 8 : 3));
    total = 1;
    for (int k = 0; k < 4; ++k) total *= d.src_size[k];
  } while (total > max_elems);

  // Source strides: contiguous, padded, or broadcast.
  const unsigned pick0 = static_cast<unsigned>(uni(0, 19));
  d.src_stride[0] = static_cast<std::uint32_t>(contiguous ? e : pick0 == 0 ? 0 : e * uni(1, 3) + uni(0, 7));
  std::uint64_t extent = d.src_size[0] * std::max<std::uint64_t>(d.src_stride[0], e);
  for (int k = 1; k < 4; ++k) {
    const unsigned how = static_cast<unsigned>(uni(0, 9));
    d.src_stride[k] = static_cast<std::uint32_t>(how < 4 ? extent : how < 8 ? extent + uni(0, 200) : uni(0, 300));
    extent = std::max<std::uint64_t>(extent, d.src_size[k] * static_cast<std::uint64_t>(d.src_stride[k]));
  }
  const std::uint64_t src_ext = pattern_extent(d.src_size, d.src_stride, e);
  if (src_ext >= area.src_hi - area.src_lo) return false;
  d.src_addr = area.src_lo + uni(0, area.src_hi - area.src_lo - src_ext);

  // Destination: another factorisation of the element count.
  std::uint64_t left = total;
  for (int k = 0; k < 3; ++k) {
    std::vector<std::uint64_t> divs;
    for (std::uint64_t x = 1; x <= left; ++x)
      if (left % x == 0) divs.push_back(x);
    const std::uint64_t pickd = divs[uni(0, divs.size() - 1)];
    d.dst_size[k] = static_cast<std::uint16_t>(pickd);
    left /= pickd;
  }
  d.dst_size[3] = static_cast<std::uint16_t>(left);
  d.dst_stride[0] = static_cast<std::uint32_t>(uni(0, 9) < 6 ? e : e + uni(1, 9));
  std::uint64_t span = static_cast<std::uint64_t>(d.dst_size[0] - 1) * d.dst_stride[0] + e;
  for (int k = 1; k < 4; ++k) {
    d.dst_stride[k] = static_cast<std::uint32_t>(span + (uni(0, 1) ? 0 : uni(1, 40)));
    span = static_cast<std::uint64_t>(d.dst_size[k] - 1) * d.dst_stride[k] + span;
  }
  const std::uint64_t dst_ext = pattern_extent(d.dst_size, d.dst_stride, e);
  const std::uint64_t at = dst_cursor + uni(0, 63);
  if (at + dst_ext + 64 > area.dst_hi) return false;
  d.dst_addr = at;
  dst_cursor = (at + dst_ext + 64) & ~63ull;

  const unsigned f = static_cast<unsigned>(uni(0, 9));
  if (f < 2 && area.semaphores.hi > area.semaphores.lo) {
    d.flags |= arch::kDmaFlagCompletion;
    d.sem_addr = area.semaphores.lo + 4 * uni(0, (area.semaphores.hi - area.semaphores.lo) / 4 - 1);
    d.sem_value = static_cast<std::uint16_t>(uni(1, 1000));
  }
  if (uni(0, 9) == 0) d.flags |= arch::kDmaFlagBarrier;
  if (uni(0, 9) == 0) d.flags |= arch::kDmaFlagLast;
  return true;
}

// First differing address between two memory images, or -1.
inline std::int64_t first_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  const auto m = std::mismatch(a.begin(), a.end(), b.begin());
  return m.first == a.end() ? -1 : static_cast<std::int64_t>(m.first - a.begin());
}

}  // namespace tessera::rtl::dma
