// The core's DMA engines (dma.engines of them, dma.queues_per_engine queues
// each) behind the sequencers' doorbell: a DmaTrigger becomes visible to its
// engine dma.start_latency_ns later, the documented start cost of a transfer.
#pragma once

#include "core/core_context.h"
#include "dma/dma_engine.h"

#include <memory>
#include <vector>

namespace tessera::dma {

class DmaSubsystem : public core::DmaDoorbell {
public:
  explicit DmaSubsystem(core::CoreContext& ctx);

  std::size_t engines() const { return engines_.size(); }
  DmaEngine& engine(std::size_t i) { return *engines_.at(i); }

  std::string ring(std::uint32_t engine, std::uint32_t queue, std::uint64_t address, std::uint32_t count) override;

private:
  core::CoreContext& ctx_;
  std::vector<std::unique_ptr<DmaEngine>> engines_;
};

}  // namespace tessera::dma
