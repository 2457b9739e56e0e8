// What a run tells a kernel author: time, tensor-engine cycles, where each
// engine spent its time, utilisation, DMA traffic, and (filled in by the
// kernel runner) whether the numbers matched the reference.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace tessera {

struct EngineReport {
  double instructions = 0;
  double busy_ns = 0;
  double semaphore_wait_ns = 0;
  double fetch_wait_ns = 0;
  double memory_stall_ns = 0;  // part of busy_ns spent on SBUF/PSUM access beyond the compute
};

// Time an engine spent stalled for one reason.
struct Stall {
  std::string engine;
  std::string reason;  // "waiting for DMA", "waiting for vector", "instruction fetch"
  double ns = 0;
};

struct RunReport {
  std::string kernel, variant, config, fidelity;
  std::map<std::string, std::int64_t> shape;
  // The kernel's tunable parameters as the run used them (name -> integer or choice).
  nlohmann::json params = nlohmann::json::object();
  bool ok = false;        // the simulation ran to its end
  std::string error;      // why not
  double time_ns = 0;
  double cycles = 0;      // tensor-engine cycles
  double tensor_utilisation = 0;  // MACs / (PEs x cycles)
  double hfu_percent = 0;         // useful matmul FLOPs / (time x bf16 peak)
  double matmul_flops = 0;
  double dma_bytes = 0;
  double dma_transfers = 0;
  double dma_average_bytes = 0;
  // The five instruction streams by engine name, and "dma": descriptors
  // completed by all DMA engines, busy time of the busiest one.
  std::map<std::string, EngineReport> engines;
  // Kernel-tuning figures (docs/profiling.md).
  double model_flops = 0;         // the kernel's nominal FLOPs (e.g. 2MNK), without repeated work
  double mfu_percent = 0;         // model FLOPs / (time x bf16 peak)
  double peak_tflops = 0;         // bf16 tensor-engine peak of the config
  double achieved_tflops = 0;     // matmul FLOPs / time
  double hbm_bytes = 0;           // read and written
  double arithmetic_intensity = 0;  // matmul FLOPs per HBM byte
  double hbm_bandwidth_gbps = 0;  // achieved over the run
  double hbm_peak_gbps = 0;       // the config's
  double hbm_utilisation_percent = 0;
  double tensor_active_ns = 0;    // an instruction in flight (each cycle once, overlaps included)
  double tensor_multiplying_ns = 0;  // the array taking in moving columns: what bounds HFU
  double tensor_waiting_ns = 0;   // stalled on semaphores or instruction fetch
  double dma_busy_ns = 0;         // mean over the DMA engines of the time with a descriptor running
  std::vector<Stall> top_stalls;  // the three longest, longest first
  // Numerics, from the kernel's reference.
  bool checked = false;
  bool correct = false;
  double max_abs_error = 0;
  double tolerance = 0;
  double wall_seconds = 0;
  nlohmann::json stats;  // every statistic, by name

  // The engine (or "dma") with the most busy time: what bounds the run when
  // it is busy most of it; empty when nothing was busy.
  std::string bound_by() const;
  nlohmann::json to_json() const;
  std::string summary() const;  // readable, a few lines
};

}  // namespace tessera
