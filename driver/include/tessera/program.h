// A built kernel: one instruction stream per engine plus the DMA descriptors
// of each queue, ready to load on a core. Made by KernelBuilder; run by Device.
#pragma once

#include "arch/dma_descriptor.h"
#include "arch/isa.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

// A DMA queue: (engine, queue index).
using DmaQueueId = std::pair<std::uint32_t, std::uint32_t>;

struct Program {
  // Instructions per engine, indexed by arch::Engine.
  std::vector<std::vector<arch::Instruction>> streams = std::vector<std::vector<arch::Instruction>>(arch::kNumEngines);
  // Descriptors per queue, in ring order. A DmaTrigger's `address` holds the
  // ring slot of its first descriptor until Device places the rings and
  // turns slots into device addresses.
  std::map<DmaQueueId, std::vector<arch::DmaDescriptor>> rings;
  // Useful matmul FLOPs (2 per MAC), for the hardware FLOPs utilisation.
  double matmul_flops = 0;
  std::string name;

  std::size_t instruction_count() const;
  std::string disassemble() const;
  std::vector<std::uint8_t> encode(arch::Engine e) const;
};

}  // namespace tessera
