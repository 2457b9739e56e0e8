// What every engine of a NeuronCore can reach: its config, memories,
// semaphores, the DMA subsystem and the statistics, plus the run's first
// error. Owned by NeuronCore; engines hold a reference.
#pragma once

#include "arch/address_map.h"
#include "arch/config.h"
#include "arch/isa.h"
#include "trace/stats.h"
#include "trace/wave_probe.h"
#include "trace/timeline.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace tessera::memory {
class Hbm;
class PartitionedMemory;
}  // namespace tessera::memory

namespace tessera::core {

class Semaphores;

// The DMA subsystem as the sequencers see it: a doorbell per queue.
class DmaDoorbell {
public:
  virtual ~DmaDoorbell() = default;
  // Enqueues `count` descriptors starting at device address `address` on
  // queue `queue` of DMA engine `engine`. Returns an error message, or empty.
  virtual std::string ring(std::uint32_t engine, std::uint32_t queue, std::uint64_t address, std::uint32_t count) = 0;
};

// The chip's fabric as a sequencer sees it (core/fabric.h): a SemSignal
// instruction increments another core's semaphore through it.
class PeerSignals {
public:
  virtual ~PeerSignals() = default;
  // Adds `value` to the semaphore at peer address `address`
  // (arch::AddressMap::peer_semaphore_address), arriving after the path's
  // latency. Returns an error message, or empty.
  virtual std::string signal(std::uint64_t address, std::uint32_t value) = 0;
};

struct CoreContext {
  const arch::HwConfig& cfg;
  arch::AddressMap map;
  memory::Hbm& hbm;
  memory::PartitionedMemory& sbuf;
  memory::PartitionedMemory& psum;
  Semaphores& semaphores;
  trace::Stats& stats;
  DmaDoorbell* dma = nullptr;
  bool no_data = false;  // timing only: engines and DMA skip the arithmetic and data movement

  // The first error of the run stops the simulation; later ones are dropped
  // because they usually follow from it.
  std::optional<std::string> error;
  void fail(const std::string& message);

  trace::WaveProbe* waves = nullptr;  // a waveform being recorded, or none
  // Where engines record their activity when the run is traced; null otherwise.
  trace::Timeline* timeline = nullptr;
  // Where instruction `index` of an engine's stream came from, for its
  // run-time errors ("at kernels/gemm/gemm.cpp:88, label 'k=2'"): the
  // program's call sites, which the core does not know; empty: by index only.
  std::function<std::string(arch::Engine, std::uint64_t)> origin_of = nullptr;
  // The same for descriptor `index` of DMA queue (engine, queue), for the
  // sampled fidelity's DMA disagreements.
  std::function<std::string(std::uint32_t, std::uint32_t, std::uint64_t)> descriptor_origin_of = nullptr;
  // Where the DMA subsystem's totals are named: "dma" for a lone core,
  // "coreN.dma" for core N of a chip, whose statistics share one registry.
  std::string dma_totals_name = "dma";
  // A core of a chip: its DMA engines' window takes in the other cores'
  // SBUF and semaphores (arch::AddressMap::dma_window_limit).
  bool on_chip = false;
  // A core of a chip: the fabric, for semaphores of other cores; else none.
  PeerSignals* peers = nullptr;
};

}  // namespace tessera::core
