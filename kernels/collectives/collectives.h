// Collectives across the cores of a chip, built from the kernel builder's
// own primitives: copies into another core's SBUF (dma_to_core) and
// semaphores other cores raise (core_semaphore, signal_core, wait_core).
// Every instance of an SPMD launch calls them alike on its own fp32 tile
// `data` of [P x F]; F splits into one chunk of F / cores columns per core,
// core i owning chunk i. docs/multicore.md, "Collectives".
#pragma once

#include "tessera/kernel_builder.h"

#include <optional>
#include <string>
#include <vector>

namespace tessera::kernels::collectives {

enum class Algorithm {
  Ring,    // cores - 1 steps, each core sending one chunk to the next: every port busy, one copy each way
  Direct,  // one step, each core sending each other core its chunk: cores - 1 copies through every port at once
};
const char* to_string(Algorithm a);
std::optional<Algorithm> parse_algorithm(const std::string& text);
const std::vector<std::string>& algorithm_names();

// A reduce-scatter that a kernel runs many times (a GEMM reducing its
// partial products block by block): its receive buffers and semaphores are
// made once, and each run waits until the cores it sends to have freed
// the buffers the previous run filled. Every run takes an fp32 tile of at
// most `partitions` x `columns`, its columns split into one chunk per core.
class ReduceScatter {
public:
  ReduceScatter(KernelBuilder& kb, std::uint32_t partitions, std::uint32_t columns, Algorithm algorithm,
                const std::string& name = "rs");
  // Afterwards core i's chunk i of `data` holds the sum over the cores.
  void operator()(const Tile& data);

private:
  KernelBuilder& kb_;
  Algorithm algorithm_;
  std::string name_;
  int cores_, rank_;
  std::uint32_t partitions_, columns_, chunk_;
  std::uint32_t runs_ = 0;
  Tile recv_;
  std::vector<CoreSemaphore> arrived_, free_;  // per ring step; direct: one each
};

// An all-gather that a kernel runs many times, on the same tile or on
// tiles of the same shape that it alternates between: its semaphores are
// made once (the counts run on from run to run). Each run first waits
// until the cores it writes into say their tile is free. Every core's
// tile must sit at the same SBUF address (allocate it before anything
// whose size differs between the cores).
class AllGather {
public:
  AllGather(KernelBuilder& kb, Algorithm algorithm, const std::string& name = "ag");
  // Before: core i's chunk i of `data` holds its part; afterwards every core's tile holds every core's part.
  void operator()(const Tile& data);

private:
  KernelBuilder& kb_;
  Algorithm algorithm_;
  std::string name_;
  std::uint32_t runs_ = 0;
  CoreSemaphore ready_;
  std::vector<CoreSemaphore> arrived_;  // ring: per step; direct: one
};

// Both, reusable: afterwards every core's tile holds the sum over the cores.
class AllReduce {
public:
  AllReduce(KernelBuilder& kb, std::uint32_t partitions, std::uint32_t columns, Algorithm algorithm,
            const std::string& name = "ar");
  void operator()(const Tile& data);

private:
  ReduceScatter reduce_scatter_;
  AllGather all_gather_;
};

// Afterwards core i's chunk i holds the sum over the cores of their chunk i
// (the other chunks hold partial sums). Each call's semaphores and scratch
// tiles are named after `name`, so a kernel can make several.
void reduce_scatter(KernelBuilder& kb, const Tile& data, Algorithm algorithm, const std::string& name = "rs");
// Before: core i's chunk i holds its part; afterwards every core's tile holds every core's part.
void all_gather(KernelBuilder& kb, const Tile& data, Algorithm algorithm, const std::string& name = "ag");
// Both: afterwards every core's tile holds the sum over the cores.
void all_reduce(KernelBuilder& kb, const Tile& data, Algorithm algorithm, const std::string& name = "ar");

}  // namespace tessera::kernels::collectives
