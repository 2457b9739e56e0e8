#include "cosim/dma_sampler.h"

#include "cosim/rtl_dma_engine.h"
#include "arch/dma_descriptor_check.h"
#include "dma/dma_engine.h"
#include "dma/dma_pattern.h"

#include <fmt/format.h>

#include <cstring>

namespace tessera::cosim {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

namespace {

// A sample's descriptor sits in a two-slot ring at the bottom of the program
// area, where no kernel data goes.
constexpr std::uint32_t kRingSlots = 2;
// A sample that has not completed after this many DMA cycles is reported
// rather than waited for (the largest descriptor moves 2^64 bytes in theory,
// 64 KiB^4 elements in practice; samples run on idle memory).
constexpr double kSampleTimeoutCycles = 5e7;
// After a sample completes, the engines are left this long to go quiet.
constexpr double kSettleCycles = 64;

std::string shape_key(const arch::DmaDescriptor& d, const arch::AddressMap& map, std::uint32_t beat) {
  const auto region = [&](std::uint64_t a) { return static_cast<int>(map.region_of(a, 1)); };
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", d.elem_log2, fmt::join(d.src_size, ","),
                     fmt::join(d.src_stride, ","), fmt::join(d.dst_size, ","), fmt::join(d.dst_stride, ","),
                     region(d.src_addr), region(d.dst_addr), d.src_addr % beat, d.dst_addr % beat,
                     d.flags & (arch::kDmaFlagBarrier | arch::kDmaFlagCompletion));
}

}  // namespace

struct DmaSampler::Shadow : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Shadow> backdoor;
  core::MemorySystem mem;
  core::CoreContext ctx;
  std::unique_ptr<dma::DmaEngineBase> engine;
  sc_time period;

  Shadow(sc_core::sc_module_name name, const arch::HwConfig& cfg, trace::Stats& stats, bool no_data,
         const dma::DmaEngineFactory& factory)
      : sc_module(name),
        backdoor("backdoor"),
        mem(cfg, stats),
        ctx(mem.context(cfg, stats, no_data)),
        period(static_cast<double>(cfg.dma.axi_data_bytes) / cfg.dma.bytes_per_ns, sc_core::SC_NS) {
    const auto queues = static_cast<std::uint32_t>(cfg.dma.queues_per_engine);
    engine = factory ? factory("dma", ctx, queues) : std::make_unique<dma::DmaEngine>("dma", ctx, queues);
    engine->socket.bind(mem.interconnect->target);
    backdoor.bind(mem.interconnect->target);
    engine->configure_queue(0, ring_base(), kRingSlots);
  }

  std::uint64_t ring_base() const { return mem.map.program_area_base(); }

  void debug(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data, std::uint32_t length) {
    tlm::tlm_generic_payload t;
    t.set_command(cmd);
    t.set_address(address);
    t.set_data_ptr(data);
    t.set_data_length(length);
    if (backdoor->transport_dbg(t) != length)
      throw std::runtime_error(fmt::format("{}: backdoor access of {} bytes at 0x{:x} failed", name(), length, address));
  }
};

DmaSampler::SamplerStats::SamplerStats(trace::Stats& stats, const sc_core::sc_object& owner)
    : Group(stats, owner),
      sampled_descriptors(*this, "sampled_descriptors", "count",
                          "descriptors re-executed on the RTL DMA engine and compared"),
      sampled_shapes(*this, "sampled_shapes", "count", "distinct descriptor shapes seen (each sampled at least once)"),
      unsampled_descriptors(*this, "unsampled_descriptors", "count", "descriptors run by the fast model only"),
      sample_seconds(*this, "sample_seconds", "s",
                     "wall time while a sample was in flight (an upper bound of the RTL's)") {}

DmaSampler::DmaSampler(sc_core::sc_module_name name, core::CoreContext& core, DmaSamplingPolicy policy,
                       const dma::DmaEngineFactory& reference)
    : sc_module(name),
      core_(core),
      policy_(policy),
      stats_(core.stats, *this) {
  reference_ = std::make_unique<Shadow>("reference", core.cfg, shadow_stats_, core.no_data, reference);
  fast_ = std::make_unique<Shadow>("fast", core.cfg, shadow_stats_, core.no_data, dma::DmaEngineFactory{});
  SC_THREAD(run);
}

DmaSampler::~DmaSampler() = default;

void DmaSampler::executed(const dma::ExecutedDescriptor& d) {
  const auto now = std::chrono::steady_clock::now();
  if (!started_) {
    started_ = true;
    start_ = now;
  }
  ++offered_;
  const auto beat = static_cast<std::uint32_t>(core_.cfg.dma.axi_data_bytes);
  const bool new_shape = shapes_.insert(shape_key(d.descriptor, core_.map, beat)).second;
  if (new_shape) ++stats_.sampled_shapes;
  bool take = new_shape;
  if (!take && !in_flight_ && queue_.empty() && offered_ % static_cast<std::uint64_t>(policy_.sample_every) == 0) {
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    take = sample_seconds_ < policy_.rtl_budget_percent / 100.0 * elapsed;
  }
  // A descriptor that touches the shadows' ring cannot run there unchanged.
  const std::uint64_t ring = reference_->ring_base(), ring_end = ring + kRingSlots * arch::kDmaDescriptorBytes;
  const auto touches_ring = [&](std::uint64_t base, const std::array<std::uint16_t, 4>& size,
                                const std::array<std::uint32_t, 4>& stride) {
    // Every byte a side touches lies in [base, last]: most sides are nowhere near the ring.
    if (base >= ring_end || arch::dma_pattern_last_byte(base, size, stride, d.descriptor.elem_log2) < ring)
      return false;
    for (const dma::Run& r : dma::pattern_runs(base, size, stride, d.descriptor.elem_log2))
      if (r.address < ring_end && r.address + r.bytes > ring) return true;
    return false;
  };
  // Semaphore windows read back nothing to compare and change on every write.
  const auto plain = [&](std::uint64_t a) {
    const arch::Region r = core_.map.region_of(a, 1);
    return r == arch::Region::Hbm || r == arch::Region::Sbuf || r == arch::Region::Psum;
  };
  if (take && (!plain(d.descriptor.src_addr) || !plain(d.descriptor.dst_addr))) take = false;
  if (take && (touches_ring(d.descriptor.src_addr, d.descriptor.src_size, d.descriptor.src_stride) ||
               touches_ring(d.descriptor.dst_addr, d.descriptor.dst_size, d.descriptor.dst_stride)))
    take = false;
  if (!take) {
    ++stats_.unsampled_descriptors;
    return;
  }
  queue_.push_back({d, d.data ? *d.data : std::vector<std::uint8_t>{}});
  queued_.notify(SC_ZERO_TIME);
}

void DmaSampler::run() {
  for (;;) {
    while (queue_.empty()) sc_core::wait(queued_);
    in_flight_ = true;
    const auto t0 = std::chrono::steady_clock::now();
    check(queue_.front());
    queue_.pop_front();
    in_flight_ = false;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sample_seconds_ += s;
    stats_.sample_seconds += s;
    ++stats_.sampled_descriptors;
    if (core_.error) return;
  }
}

std::vector<std::uint8_t> DmaSampler::read_destination(Shadow& sh, const arch::DmaDescriptor& d) {
  std::vector<std::uint8_t> out;
  for (const dma::Run& r : dma::pattern_runs(d.dst_addr, d.dst_size, d.dst_stride, d.elem_log2)) {
    const std::size_t at = out.size();
    out.resize(at + r.bytes);
    sh.debug(tlm::TLM_READ_COMMAND, r.address, out.data() + at, r.bytes);
  }
  return out;
}

std::string DmaSampler::describe(const Sample& s) const {
  const dma::ExecutedDescriptor& w = s.what;
  const arch::DmaDescriptor& d = w.descriptor;
  const std::string origin =
      core_.descriptor_origin_of ? core_.descriptor_origin_of(w.engine, w.queue, w.index) : std::string();
  return fmt::format("dma{}.q{} descriptor {}{} (at 0x{:x}: 0x{:x} sizes {} strides {} -> 0x{:x} sizes {} strides {}, "
                     "{}-byte elements{}): sampled check failed",
                     w.engine, w.queue, w.index, origin.empty() ? "" : " " + origin, w.slot_address, d.src_addr, fmt::join(d.src_size, "x"),
                     fmt::join(d.src_stride, ","), d.dst_addr, fmt::join(d.dst_size, "x"), fmt::join(d.dst_stride, ","),
                     1u << d.elem_log2, (d.flags & arch::kDmaFlagBarrier) ? ", barrier" : "");
}

void DmaSampler::check(const Sample& s) {
  // Each sample starts on engines that have gone quiet after the last one
  // (its last write response back, the bridge's idle checks done), so that
  // its timing is its own.
  if (quiet_at_ > sc_core::sc_time_stamp()) sc_core::wait(quiet_at_ - sc_core::sc_time_stamp());
  const arch::DmaDescriptor& d = s.what.descriptor;
  const std::uint32_t slot = next_slot_;
  next_slot_ = (next_slot_ + 1) % kRingSlots;
  auto packed = arch::pack(d);
  for (Shadow* sh : {reference_.get(), fast_.get()}) {
    if (!s.data.empty()) {
      // The source holds what the real run read, so both engines move real data.
      std::size_t at = 0;
      for (const dma::Run& r : dma::pattern_runs(d.src_addr, d.src_size, d.src_stride, d.elem_log2)) {
        sh->debug(tlm::TLM_WRITE_COMMAND, r.address, const_cast<std::uint8_t*>(s.data.data() + at), r.bytes);
        at += r.bytes;
      }
    }
    sh->debug(tlm::TLM_WRITE_COMMAND, sh->ring_base() + slot * arch::kDmaDescriptorBytes, packed.data(),
              static_cast<std::uint32_t>(packed.size()));
  }
  const std::size_t done_before = reference_->engine->completions().size();
  const sc_time start = sc_core::sc_time_stamp();
  for (Shadow* sh : {reference_.get(), fast_.get()}) {
    const std::string err =
        sh->engine->doorbell(0, sh->ring_base() + slot * arch::kDmaDescriptorBytes, 1, SC_ZERO_TIME);
    if (!err.empty()) return core_.fail(fmt::format("{}: {}", describe(s), err));
  }
  const sc_time poll = reference_->period * 16.0;
  const auto finished = [&](Shadow& sh) { return sh.engine->completions().size() > done_before || sh.ctx.error; };
  while (!finished(*reference_) || !finished(*fast_)) {
    if (sc_core::sc_time_stamp() - start > reference_->period * kSampleTimeoutCycles)
      return core_.fail(fmt::format("{}: the re-execution did not complete within {:.0f} DMA cycles", describe(s),
                                    kSampleTimeoutCycles));
    sc_core::wait(poll);
  }
  quiet_at_ = sc_core::sc_time_stamp() + reference_->period * kSettleCycles;
  for (Shadow* sh : {reference_.get(), fast_.get()})
    if (sh->ctx.error)
      return core_.fail(fmt::format("{}: the {} engine failed on it: {}", describe(s),
                                    sh == reference_.get() ? "RTL" : "fast-model", *sh->ctx.error));

  const auto cycles = [&](Shadow& sh) {
    return (sh.engine->completions().back().done - start) / sh.period;
  };
  const double rtl_cycles = cycles(*reference_), fast_cycles = cycles(*fast_);
  if (std::abs(rtl_cycles - fast_cycles) > 1e-6)
    return core_.fail(fmt::format("{}: doorbell to status write-back takes {:.2f} DMA cycles on the RTL, {:.2f} in "
                                  "the fast model (each alone on idle memory)",
                                  describe(s), rtl_cycles, fast_cycles));
  if (core_.no_data) return;
  const auto rtl_bytes = read_destination(*reference_, d), fast_bytes = read_destination(*fast_, d);
  std::size_t differ = 0, first = 0;
  for (std::size_t i = 0; i < rtl_bytes.size(); ++i)
    if (rtl_bytes[i] != fast_bytes[i] && differ++ == 0) first = i;
  if (differ > 0)
    core_.fail(fmt::format("{}: {} of {} destination bytes differ; first at stream byte {}: RTL 0x{:02x}, fast model "
                           "0x{:02x}",
                           describe(s), differ, rtl_bytes.size(), first, rtl_bytes[first], fast_bytes[first]));
}

core::DmaSamplerFactory rtl_dma_sampler_factory(const arch::HwConfig& cfg) {
  const dma::DmaEngineFactory reference = rtl_dma_factory(cfg);  // throws now if the set was not built
  const DmaSamplingPolicy policy{cfg.simulation.sample_every, cfg.simulation.sample_rtl_budget_percent};
  return [reference, policy](core::CoreContext& ctx) -> std::unique_ptr<dma::DescriptorSampler> {
    return std::make_unique<DmaSampler>("dma_sampler", ctx, policy, reference);
  };
}

}  // namespace tessera::cosim
