// The fast DMA model's hook for the sampled fidelity: after each descriptor
// it ran, the engine tells a sampler what it moved, and the sampler may
// re-execute it on the RTL (cosim/dma_sampler.h). The core library only
// knows this interface, so it never depends on a Verilated build.
#pragma once

#include "arch/dma_descriptor.h"

#include <cstdint>
#include <vector>

namespace tessera::dma {

struct ExecutedDescriptor {
  std::uint32_t engine = 0, queue = 0, index = 0;
  std::uint64_t slot_address = 0;  // where the descriptor sits in its ring
  arch::DmaDescriptor descriptor;
  // The bytes read, in stream order (what the destination received); empty
  // in timing-only runs.
  const std::vector<std::uint8_t>* data = nullptr;
};

class DescriptorSampler {
public:
  virtual ~DescriptorSampler() = default;
  // Called from the engine's thread when the descriptor's last write beat is
  // out; must not wait.
  virtual void executed(const ExecutedDescriptor& d) = 0;
};

}  // namespace tessera::dma
