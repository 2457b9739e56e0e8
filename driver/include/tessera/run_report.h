// What a run tells a kernel author: time, tensor-engine cycles, where each
// engine spent its time, utilisation, DMA traffic, and (filled in by the
// kernel runner) whether the numbers matched the reference.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
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

// What the operations of one engine (or "dma") made at one kernel call
// site, or under one label, cost over the run (docs/profiling.md "Time by
// call site"). Each instruction and descriptor counts once, under its own
// call site and label; a semaphore wait the builder inserted counts under
// the operation it held back.
struct SiteCost {
  std::string engine;
  std::string site;   // "kernels/gemm/gemm.cpp:88"; empty: none (End, the program's last waits)
  std::string label;  // by_label rows; empty: none
  double count = 0;   // instructions, or descriptors
  double busy_ns = 0;     // the engine's busy time; a descriptor's moving time (first read to release)
  double waiting_ns = 0;  // semaphore waits; a descriptor's time queued behind its queue's earlier ones
  double fetch_wait_ns = 0;
  double dma_bytes = 0;
  std::map<std::string, double> waiting_for;  // whom the waits were for ("DMA", "vector"), ns
  double total_ns() const { return busy_ns + waiting_ns + fetch_wait_ns; }
};

// The chain of work and waits that set a run's end time (docs/profiling.md
// "The critical path"), walked back from the event that ended last: each
// step is one instruction (its sequencer's issue to done), one semaphore
// wait, or a DMA descriptor's queued or moving time, and covers the part of
// the end time [from_ns, to_ns] the step held; the steps tile [0, end].
struct PathStep {
  std::string resource;  // an engine ("tensor"), or a DMA queue ("dma 0.1")
  std::string kind;      // "instruction", "wait", "dma queued", "dma"
  std::string name;      // the instruction's disassembly, or "descriptor N"
  std::string label, site;
  std::int64_t index = -1;     // in its engine's stream, or its queue's ring
  double start_ns = 0, end_ns = 0;  // the event's own times
  double from_ns = 0, to_ns = 0;    // the part of the end time on this step
  // The part of [from_ns, to_ns] before the event began, and why: the
  // "instruction fetch", the "doorbell" (a DmaTrigger to its descriptor
  // being visible), the "queue" (behind the queue's previous descriptor),
  // or "start" (the run's first event); empty when none.
  double gap_ns = 0;
  std::string gap;
  double ns() const { return to_ns - from_ns; }
};

// A semaphore wait the path goes through: the engine waited [start_ns,
// end_ns] and the event that released it is the step before it.
struct PathWait {
  std::string engine, label, site;
  std::int64_t index = -1;
  double start_ns = 0, end_ns = 0;
  std::string released_by;  // "dma 0.1 descriptor 3", "vector TensorScalar ..."
  std::string released_by_label;
};

// Time on the path of one engine ("dma": every DMA queue) or (engine, label).
struct PathShare {
  std::string engine, label;
  double ns = 0;          // of the end time
  double waiting_ns = 0;  // of which waits, queued time and gaps
};

struct CriticalPath {
  std::vector<PathStep> steps;      // in time order
  std::vector<PathShare> by_engine; // largest first
  std::vector<PathShare> by_label;  // largest first
  std::vector<PathWait> waits;      // in time order
  double end_ns = 0;
  bool empty() const { return steps.empty(); }
};

// One core of a multi-core run (docs/multicore.md).
struct CoreReport {
  double time_ns = 0;           // when its last engine ended
  double matmul_flops = 0;
  double hfu_percent = 0;       // its matmul FLOPs / (the run's time x one core's bf16 peak)
  double tensor_active_ns = 0;
  double tensor_waiting_ns = 0;
  double dma_bytes = 0;
  double hbm_bytes = 0;         // what its descriptors moved to and from HBM
  double hbm_bandwidth_gbps = 0;  // hbm_bytes over its own time
  std::string bound_by;         // its busiest engine
  double collective_ns = 0;     // wall time with an operation of a collective phase in flight (waits included)
  // Its port into the chip's core-to-core fabric (fabric.coreI.*): bytes
  // each way and the time each direction was busy.
  double link_bytes_sent = 0, link_bytes_received = 0;
  double link_send_busy_ns = 0, link_receive_busy_ns = 0;
};

// The wall time of one phase of a collective (KernelBuilder::collective_label)
// on one core: the union of the intervals in which any of its instructions
// (semaphore waits included) or descriptors (queued or moving) was in flight.
struct CollectivePhase {
  std::string label;
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
  // Time by (engine, call site) and by (engine, label), largest total first;
  // the sync engine is left out (see top_stalls), DMA descriptors are "dma".
  std::vector<SiteCost> by_site, by_label;
  // What set the end time (single-core runs; empty on a chip).
  CriticalPath critical_path;
  // Numerics, from the kernel's reference.
  bool checked = false;
  bool correct = false;
  double max_abs_error = 0;
  double tolerance = 0;
  // Host time of the run's phases (wall clock, seconds), for the simulation
  // speed figures of docs/performance.md: wall_seconds is the device's part
  // (setting up the core, simulating, analysing); build_seconds is the
  // program's build before it (run_kernel), check_seconds the reference check
  // after it (runs with data).
  double wall_seconds = 0;
  double build_seconds = 0;     // the kernel building its program
  double simulate_seconds = 0;  // SystemC running the program
  double analysis_seconds = 0;  // the report: statistics, attribution, critical path
  double check_seconds = 0;
  int check_threads = 0;  // host threads the reference check may spread over (TESSERA_CHECK_THREADS)
  nlohmann::json stats;  // every statistic, by name

  // A multi-core run (Device::launch, docs/multicore.md): one row per core,
  // empty for a single core. The figures above are then the chip's: time
  // is the last core's end, FLOPs, bytes and HBM bandwidth are all cores'
  // (HBM against the chip's peak), HFU and MFU against the cores' combined
  // peak; engines, stalls and call sites are those of the core that ended
  // last (critical_core), the one that sets the time.
  std::vector<CoreReport> per_core;
  int critical_core = 0;
  std::string shard;  // the dimension the kernel split across the cores
  int lnc = 1;        // the cores are one logical core of this many (chip.lnc, no --cores); 1: physical cores
  // Against the same kernel on one core of the same chip (set_baseline):
  // speed-up and scaling efficiency (speed-up / cores); 0 when not measured.
  double baseline_time_ns = 0;
  double speedup = 0;
  double scaling_efficiency_percent = 0;
  void set_baseline(double one_core_time_ns);
  // The collectives of the core that ended last, by phase in order of
  // first use, and the union of them all: how much of the run the cores
  // spent exchanging and combining (docs/multicore.md, "The report").
  std::vector<CollectivePhase> collectives;
  double collective_ns = 0;

  // The engine (or "dma") with the most busy time: what bounds the run when
  // it is busy most of it; empty when nothing was busy.
  std::string bound_by() const;
  // report.json's text: two-space indents, each object's keys sorted, with
  // the members of `extra` (an object) added at the top level, replacing any
  // of the same name. Written straight out, not built as a document first
  // (a large run's report has tens of thousands of rows).
  std::string json_text(const nlohmann::json& extra = nlohmann::json::object()) const;
  nlohmann::json to_json() const;  // json_text() as a document
  // The text of one top-level member's value, as json_text() writes it
  // (Python's report["key"] without the rest), or nullopt if there is none.
  std::optional<std::string> json_member(std::string_view key) const;
  std::string summary() const;     // readable, a few lines
};

}  // namespace tessera
