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

// What the cores of a chip share so that their fast engines reach the HBM
// and the fabric in one order, in their own threads or run ahead: at the same
// time, core 0's engines before core 1's, each core's in engine order (core
// c's engine e takes turn rank c * dma.engines + e), and one scheduler for
// them all. Without it, engines of different cores that reach memory in the
// same cycle would go in SystemC's process order, which a scheduler running
// them ahead cannot reproduce. Made by core::Chip before its cores.
struct DmaChipOrder {
  explicit DmaChipOrder(const arch::HwConfig& cfg);
  std::shared_ptr<DmaTurnOrder> turns = std::make_shared<DmaTurnOrder>();
  DmaScheduler scheduler;
  std::uint32_t ranks = 0;  // the engines given a turn rank so far
};

class DmaSubsystem : public core::DmaDoorbell {
public:
  // `factory` empty: the fast model. `chip`: the order of the chip this core
  // is one of (none: the core's own).
  DmaSubsystem(core::CoreContext& ctx, const DmaEngineFactory& factory = {}, DmaChipOrder* chip = nullptr);

  std::size_t engines() const { return engines_.size(); }
  DmaEngineBase& engine(std::size_t i) { return *engines_.at(i); }
  // The fast engines' scheduler (a chip's core: the chip's); null when the engines are the RTL's.
  DmaScheduler* scheduler() { return scheduler_; }

  std::string ring(std::uint32_t engine, std::uint32_t queue, std::uint64_t address, std::uint32_t count) override;

  // Totals over every engine, named "dma.*" (outside the model hierarchy).
  struct DmaTotals : trace::Group {
    DmaTotals(trace::Stats& stats, const DmaSubsystem& dma);
    trace::Formula bytes, descriptors, average_transfer_bytes;
  };
  const DmaTotals& stats() const { return *stats_; }

private:
  core::CoreContext& ctx_;
  std::unique_ptr<DmaScheduler> own_scheduler_;  // a lone core's fast engines' (none for the RTL's)
  DmaScheduler* scheduler_ = nullptr;            // it, or the chip's
  std::vector<std::unique_ptr<DmaEngineBase>> engines_;
  std::unique_ptr<DmaTotals> stats_;
};

}  // namespace tessera::dma
