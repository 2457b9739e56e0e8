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
  // The kernel's nominal FLOPs (e.g. 2MNK for GEMM), set by the kernel after
  // building, for the model FLOPs utilisation; 0 takes matmul_flops.
  double model_flops = 0;
  std::string name;

  // For profiles (traces, stall reasons); not part of what the core runs.
  // The label (KernelBuilder::label) of each instruction, parallel to
  // `streams`, and of each descriptor, parallel to `rings`; empty when none.
  std::vector<std::vector<std::string>> labels = std::vector<std::vector<std::string>>(arch::kNumEngines);
  std::map<DmaQueueId, std::vector<std::string>> ring_labels;
  // Who increments each semaphore: an engine name or "dma E.Q".
  std::vector<std::string> semaphore_owners;
  // Where an operation sits: instruction `index` of engine `engine`'s
  // stream, or (dma) descriptor `index` of queue (engine, queue).
  struct OpRef {
    bool dma = false;
    std::uint32_t engine = 0, queue = 0, index = 0;
  };
  // An SBUF or PSUM allocation and the first and last operations that touch
  // it: it holds live data from the start of the one to the end of the other.
  struct TileLife {
    std::string name;
    arch::Memory memory = arch::Memory::Sbuf;
    std::uint64_t bytes = 0;  // over all its partitions
    OpRef first, last;
  };
  std::vector<TileLife> tiles;  // allocations some operation touched

  std::size_t instruction_count() const;
  std::string disassemble() const;
  std::vector<std::uint8_t> encode(arch::Engine e) const;
};

}  // namespace tessera
