#include "dma/dma_subsystem.h"
#include "trace/sim_time.h"

#include <fmt/format.h>

namespace tessera::dma {

DmaSubsystem::DmaTotals::DmaTotals(trace::Stats& stats, const DmaSubsystem& dma)
    : Group(stats, dma.ctx_.dma_totals_name.c_str()),
      bytes(*this, "bytes", "bytes", "bytes moved by every DMA engine",
            [&dma] {
              double b = 0;
              for (const auto& e : dma.engines_) b += e->stats().bytes.value();
              return b;
            }),
      descriptors(*this, "descriptors", "count", "descriptors completed by every DMA engine",
                  [&dma] {
                    double n = 0;
                    for (const auto& e : dma.engines_) n += e->stats().descriptors.value();
                    return n;
                  }),
      average_transfer_bytes(*this, "average_transfer_bytes", "bytes", "bytes per descriptor", [this] {
        const double n = descriptors.value();
        return n > 0 ? bytes.value() / n : 0.0;
      }) {}

namespace {
sc_core::sc_time lookahead(const arch::HwConfig& cfg) { return sc_core::sc_time(cfg.dma.start_latency_ns, sc_core::SC_NS); }
}  // namespace

DmaChipOrder::DmaChipOrder(const arch::HwConfig& cfg) : scheduler("dma_scheduler", lookahead(cfg)) {}

DmaSubsystem::DmaSubsystem(core::CoreContext& ctx, const DmaEngineFactory& factory, DmaChipOrder* chip) : ctx_(ctx) {
  const auto queues = static_cast<std::uint32_t>(ctx.cfg.dma.queues_per_engine);
  // The fast engines of the core (of the chip) take same-cycle turns in one order.
  const auto turns = chip ? chip->turns : std::make_shared<DmaTurnOrder>();
  const std::uint32_t first_rank = chip ? chip->ranks : 0;
  // The fast engines run under one scheduler, which decides when elaboration
  // ends whether it can (dma/dma_scheduler.h); the RTL engines step
  // themselves cycle by cycle.
  if (!factory) {
    if (chip) {
      scheduler_ = &chip->scheduler;
    } else {
      own_scheduler_ = std::make_unique<DmaScheduler>("dma_scheduler", lookahead(ctx.cfg));
      scheduler_ = own_scheduler_.get();
    }
  }
  std::shared_ptr<BurstCache> bursts;  // the first fast engine's, for all of them
  for (std::int64_t e = 0; e < ctx.cfg.dma.engines; ++e) {
    const std::string name = fmt::format("dma{}", e);
    engines_.push_back(factory ? factory(name.c_str(), ctx, queues)
                               : std::make_unique<DmaEngine>(name.c_str(), ctx, queues));
    engines_.back()->set_wave_probe(ctx.waves);
    if (auto* fast = dynamic_cast<DmaEngine*>(engines_.back().get())) {
      fast->share_turn_order(turns, first_rank + static_cast<std::uint32_t>(e));
      if (bursts) fast->share_burst_cache(bursts);
      else bursts = fast->burst_cache();
      if (scheduler_) scheduler_->add(*fast);
    }
  }
  if (chip) chip->ranks += static_cast<std::uint32_t>(engines_.size());
  stats_ = std::make_unique<DmaTotals>(ctx.stats, *this);
}

std::string DmaSubsystem::ring(std::uint32_t engine, std::uint32_t queue, std::uint64_t address, std::uint32_t count) {
  if (engine >= engines_.size()) return fmt::format("no DMA engine {}", engine);
  return engines_[engine]->doorbell(queue, address, count, trace::from_ns(ctx_.cfg.dma.start_latency_ns));
}

}  // namespace tessera::dma
