// What a run tells a kernel author: time, tensor-engine cycles, where each
// engine spent its time, utilisation, DMA traffic, and (filled in by the
// kernel runner) whether the numbers matched the reference.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace tessera {

struct EngineReport {
  double instructions = 0;
  double busy_ns = 0;
  double semaphore_wait_ns = 0;
  double fetch_wait_ns = 0;
  double memory_stall_ns = 0;  // part of busy_ns spent on SBUF/PSUM access beyond the compute
};

struct RunReport {
  std::string kernel, variant, config, fidelity;
  std::map<std::string, std::int64_t> shape;
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
