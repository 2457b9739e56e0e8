// The hardware configuration of a NeuronCore-class core: one typed schema,
// read from YAML by one loader, used by every layer (RTL wrappers, SystemC
// models, driver, command line). See docs/configs.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::arch {

enum class Fidelity { Rtl, Sampled, Tlm };
const char* to_string(Fidelity f);
std::optional<Fidelity> parse_fidelity(const std::string& text);

// Matmul input types of the tensor engine, each with its own rate (what a
// config's modes give it, TensorEngineConfig::rate) and peak. Mx: MXFP8 and
// MXFP4 (OCP microscaling, E8M0 scales per 32 elements).
enum class TensorDType { Bf16, Fp8E4m3, Fp8E5m2, Fp32, Mx };
inline constexpr TensorDType kTensorDTypes[] = {TensorDType::Bf16, TensorDType::Fp8E4m3, TensorDType::Fp8E5m2,
                                                 TensorDType::Fp32, TensorDType::Mx};
const char* to_string(TensorDType t);

struct TensorEngineConfig {
  std::int64_t rows = 0;  // contraction (partition) dimension
  std::int64_t cols = 0;
  double clock_ghz = 0;
  // Input formats and modes (docs/formats.md). bf16 always runs, one pair
  // per PE per cycle.
  std::int64_t fp8_rows_per_pe = 0;         // fp8 pairs per PE per cycle: 0 none, 1, 2 (double row)
  std::int64_t mx_rows_per_pe = 0;          // MX pairs per PE per cycle: 0 none, 4 (quad)
  std::int64_t fp32_cycles_per_column = 0;  // cycles per fp32 moving column; 0 none
  bool psum_bf16 = false;                   // matmuls may write and accumulate bf16 PSUM tiles
  std::int64_t stationary_max_free = 0;
  std::int64_t moving_max_free = 0;
  std::int64_t min_initiation_interval_cycles = 0;
  std::int64_t stationary_columns_per_cycle = 0;  // LoadStationary load path width (fast LoadStationary)

  // MACs per PE per cycle for an input type (0: not supported): bf16 1,
  // fp8 fp8_rows_per_pe, MX mx_rows_per_pe, fp32 1 / fp32_cycles_per_column.
  double rate(TensorDType t) const;
};

// Vector, scalar and GpSimd engines share this shape; `costs` holds cycles per
// element per lane for each operation class that engine executes.
// Timing (docs/core.md, "Vector, scalar and GpSimd timing"): an instruction
// spends overhead_cycles in the engine's front end (decode, starting its
// SBUF/PSUM accesses), then streams its elements. When `pipelined`, the front
// end takes the next instruction min_interval_cycles after this one, so the
// overhead hides behind the instruction before it; an instruction that reads
// what an earlier one of the same engine wrote starts only once that result
// is committed, dependency_cycles after its last element.
struct EngineConfig {
  bool present = true;
  double clock_ghz = 0;
  std::int64_t lanes = 0;
  std::int64_t overhead_cycles = 0;
  std::int64_t min_interval_cycles = 0;
  std::int64_t dependency_cycles = 0;
  bool pipelined = true;
  std::int64_t accumulate_cycles = 0;  // scalar: writing an activation's per-partition sums back
  std::map<std::string, double> costs;
};

struct SbufConfig {
  std::int64_t partitions = 0;
  std::int64_t partition_kib = 0;
  std::int64_t access_latency_cycles = 0;
  std::int64_t bytes_per_cycle = 0;  // per partition interface
  std::int64_t stride_penalty_threshold_bytes = 0;
  double stride_penalty_factor = 1;
};

struct PsumConfig {
  std::int64_t partitions = 0;
  std::int64_t banks = 0;
  std::int64_t bank_kib = 0;  // per partition
  std::int64_t access_latency_cycles = 0;
};

struct HbmConfig {
  std::int64_t capacity_gib = 0;
  double bandwidth_gbps = 0;  // GB/s, 1e9 bytes per second
  double latency_ns = 0;
  std::int64_t channels = 0;
};

struct DmaConfig {
  std::int64_t engines = 0;
  std::int64_t queues_per_engine = 0;
  double bytes_per_ns = 0;  // per engine
  double start_latency_ns = 0;
  std::int64_t descriptor_bytes = 0;
  std::int64_t axi_data_bytes = 0;
  std::int64_t max_outstanding = 0;
  // A burst that starts a contiguous run issues at least this many engine
  // cycles after the previous run start of its side (0, 1: no limit).
  std::int64_t run_gap_cycles = 0;
  // A descriptor's first write burst issues at least this many engine cycles
  // after the previous descriptor's last write beat (0, 1: no limit).
  std::int64_t descriptor_gap_cycles = 0;
};

struct SyncConfig {
  std::int64_t semaphores = 0;
  double latency_ns = 0;
};

struct SimulationConfig {
  std::string default_fidelity = "sampled";
  std::int64_t sample_every = 0;  // sampled fidelity: RTL re-runs every Nth instruction
  double sample_rtl_budget_percent = 0;  // sampled fidelity: RTL wall-time budget beyond the first of each shape
};

// The chip a core belongs to: how many cores it has and the HBM they all
// share (docs/multicore.md). A multi-core run (`tessera run --cores N`) puts N
// cores on this HBM; a one-core run keeps the core's own share (`hbm:`).
// Zero for an HBM figure means `cores` times the core's share.
struct ChipConfig {
  std::int64_t cores = 1;
  std::int64_t hbm_capacity_gib = 0;
  double hbm_bandwidth_gbps = 0;
  std::int64_t hbm_channels = 0;
  // The core-to-core path (docs/multicore.md, "Between cores"): each core's
  // port into the chip's fabric, one direction each way, and how many of its
  // DMA engines (the first ones) reach another core's SBUF and semaphores.
  double core_link_bandwidth_gbps = 0;
  double core_link_latency_ns = 0;
  std::int64_t peer_dma_engines = 0;  // more than dma.engines: all of them (peer_dma_engines())
  // Physical cores per logical core (NKI's LNC degree): a run that names no
  // core count runs one logical core, its kernel split across these cores.
  std::int64_t lnc = 1;
};

struct HwConfig;
// The DMA engines of a core that reach other cores: chip.peer_dma_engines,
// at most the core's dma.engines (a what-if with fewer engines keeps its path).
std::int64_t peer_dma_engines(const HwConfig& cfg);

struct HwConfig {
  std::string name;
  std::string description;
  TensorEngineConfig tensor;
  EngineConfig vector;
  EngineConfig scalar;
  EngineConfig gpsimd;
  SbufConfig sbuf;
  PsumConfig psum;
  HbmConfig hbm;
  DmaConfig dma;
  SyncConfig sync;
  SimulationConfig simulation;
  ChipConfig chip;

  Fidelity default_fidelity() const;
};

// The HBM of the whole chip, shared by its cores: chip.hbm_* with each zero
// replaced by chip.cores times the core's share; the core's latency.
HbmConfig chip_hbm(const HwConfig& cfg);
// The config one core of a multi-core run sees: the same core, addressing
// the whole chip's HBM (chip_hbm) rather than its own share.
HwConfig core_on_chip(const HwConfig& cfg);

// The longest a simulation may run, in simulated time: a run that would pass
// it is an error ("simulated time passed the limit"), not a silently
// saturated or wrapped time. An hour is far beyond any kernel's run and far
// below SystemC's 64-bit picosecond clock (213 days).
inline constexpr double kMaxSimulatedSeconds = 3600;

// Ceilings on the on-chip memories a config may declare (both are
// allocated whole by the models): 8x and 32x the largest shipped generation.
inline constexpr std::int64_t kMaxSbufTotalKib = 256 * 1024;
inline constexpr std::int64_t kMaxPsumTotalKib = 64 * 1024;

// Figures that follow from a config's own fields, computed here and nowhere else.
struct DerivedFigures {
  std::map<TensorDType, double> peak_tflops;  // supported dtypes only
  double sbuf_total_mib = 0;
  double psum_total_kib = 0;
  std::int64_t psum_bank_fp32_per_partition = 0;
  double hbm_bytes_per_tensor_cycle = 0;
  double dma_total_gbps = 0;
  bool rtl_build_available = false;  // a Verilated tensor engine exists for rows x cols
  HbmConfig chip_hbm;                // chip_hbm(cfg)
};
DerivedFigures derive(const HwConfig& cfg);

// Tensor-engine array sizes with a Verilated RTL build (the one list, kept in
// rtl/tensor_engine/array_sizes.cmake), as "ROWSxCOLS".
const std::vector<std::string>& rtl_array_sizes();

// Where a value came from: a file and line, or a command-line override.
struct Source {
  std::string file;  // file path, or "--set" for command-line overrides
  int line = 0;      // 1-based; 0 when unknown
  std::string str() const;
};

struct Diagnostic {
  Source where;
  std::string key;  // dotted path, may be empty (e.g. a syntax error)
  std::string message;
  std::string str() const;  // "FILE:LINE: message"
};

// Thrown by the loader; carries every problem found, each with its place.
class ConfigError : public std::runtime_error {
public:
  explicit ConfigError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

private:
  std::vector<Diagnostic> diagnostics_;
};

struct Override {
  std::string key;    // dotted path
  std::string value;  // YAML scalar text
};
// Parses "path.to.key=value"; throws ConfigError on a malformed override.
Override parse_override(const std::string& text);

struct ResolvedConfig {
  HwConfig hw;
  DerivedFigures derived;
  std::vector<std::string> chain;      // files, most-derived first
  std::map<std::string, Source> from;  // where each leaf's value was set
};

// Resolves a config name (a file in the config directory) or a path to a YAML
// file, following `base:` and then applying overrides.
ResolvedConfig load_config(const std::string& name_or_file,
                           const std::vector<Override>& overrides = {});

// The directory holding the shipped configs: $TESSERA_CONFIG_DIR, else an
// installed tree's share/tessera/configs beside this library's lib/, else
// the source tree's configs/ (fixed at build time).
std::string config_dir();

// Names of the shipped configs (configs/*.yaml), sorted.
std::vector<std::string> list_config_names();

}  // namespace tessera::arch
