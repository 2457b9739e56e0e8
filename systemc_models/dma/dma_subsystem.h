// The core's DMA engines (dma.engines of them, dma.queues_per_engine queues
// each) behind the sequencers' doorbell: a DmaTrigger becomes visible to its
// engine dma.start_latency_ns later, the documented start cost of a transfer.
#pragma once

#include "core/core_context.h"
#include "dma/dma_engine.h"
#include "dma/dma_scheduler.h"

#include <functional>
#include <memory>
#include <vector>

namespace tessera::dma {

// Builds one DMA engine model; the core library has the fast model, cosim/
// supplies the RTL one.
using DmaEngineFactory =
    std::function<std::unique_ptr<DmaEngineBase>(const char* name, core::CoreContext& ctx, std::uint32_t queues)>;

class DmaSubsystem : public core::DmaDoorbell {
public:
  // `factory` empty: the fast model.
  DmaSubsystem(core::CoreContext& ctx, const DmaEngineFactory& factory = {});

  std::size_t engines() const { return engines_.size(); }
  DmaEngineBase& engine(std::size_t i) { return *engines_.at(i); }
  // The fast engines' scheduler; null when the engines are the RTL's.
  DmaScheduler* scheduler() { return scheduler_.get(); }

  std::string ring(std::uint32_t engine, std::uint32_t queue, std::uint64_t address, std::uint32_t count) override;

  // Totals over every engine, named "dma.*" (outside the model hierarchy).
  struct DmaTotals : trace::Group {
    DmaTotals(trace::Stats& stats, const DmaSubsystem& dma);
    trace::Formula bytes, descriptors, average_transfer_bytes;
  };
  const DmaTotals& stats() const { return *stats_; }

private:
  core::CoreContext& ctx_;
  std::unique_ptr<DmaScheduler> scheduler_;  // the fast engines' (none for the RTL's)
  std::vector<std::unique_ptr<DmaEngineBase>> engines_;
  std::unique_ptr<DmaTotals> stats_;
};

}  // namespace tessera::dma
