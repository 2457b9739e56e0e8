#include "arch/config_schema.h"

#include "arch/address_map.h"
#include "arch/dma_descriptor.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::arch {
namespace {

// HBM sits below SBUF in the one address space (address_map.h).
constexpr double kHbmWindowGib = static_cast<double>((kSbufBase - kHbmBase) >> 30);

FieldSpec field(std::string path, FieldSpec::Ref ref, std::string unit, std::string description) {
  FieldSpec f;
  f.path = std::move(path);
  f.ref = ref;
  f.unit = std::move(unit);
  f.description = std::move(description);
  return f;
}

// Accessors are captureless lambdas so the table stays data, not code paths.
#define TSR_REF(T, expr) static_cast<FieldSpec::T>([](HwConfig& c) -> auto& { return expr; })

std::vector<FieldSpec> build_schema() {
  std::vector<FieldSpec> s;
  s.push_back(field("name", TSR_REF(StringRef, c.name), "", "Generation name; defaults to the file name").def("''"));
  s.push_back(field("description", TSR_REF(StringRef, c.description), "", "One line for `tessera list configs`").def("''"));

  // Tensor engine: the systolic array.
  s.push_back(field("tensor.rows", TSR_REF(IntRef, c.tensor.rows), "PEs",
                    "Array rows = contraction (partition) dimension K").at_least(1).at_most(1024));
  s.push_back(field("tensor.cols", TSR_REF(IntRef, c.tensor.cols), "PEs",
                    "Array columns = stationary free size M").at_least(1).at_most(1024));
  s.push_back(field("tensor.clock_ghz", TSR_REF(FloatRef, c.tensor.clock_ghz), "GHz", "Tensor engine clock").at_least(0.01).at_most(10));
  s.push_back(field("tensor.fp8_rows_per_pe", TSR_REF(IntRef, c.tensor.fp8_rows_per_pe), "pairs/PE/cycle",
                    "fp8 (e4m3, e5m2) matmul inputs: 0 = not supported; 1 = one pair per PE per cycle (the bf16 rate); "
                    "2 = double row: two pairs, the array taking a contraction of 2 x tensor.rows")
                  .at_least(0).at_most(2).def("0"));
  s.push_back(field("tensor.mx_rows_per_pe", TSR_REF(IntRef, c.tensor.mx_rows_per_pe), "pairs/PE/cycle",
                    "MX (MXFP8, MXFP4 with E8M0 scales per 32 elements) matmul inputs: 0 = not supported; "
                    "4 = quad: the array taking a contraction of 4 x tensor.rows")
                  .at_least(0).at_most(4).def("0"));
  s.push_back(field("tensor.fp32_cycles_per_column", TSR_REF(IntRef, c.tensor.fp32_cycles_per_column), "cycles",
                    "fp32 matmul inputs: cycles the array takes per moving column (bf16: 1); 0 = not supported")
                  .at_least(0).at_most(64).def("0"));
  s.push_back(field("tensor.psum_bf16", TSR_REF(BoolRef, c.tensor.psum_bf16), "",
                    "Matmuls may write and accumulate into bf16 PSUM tiles (the sum still fp32, rounded at the write)")
                  .def("false"));
  s.push_back(field("tensor.stationary_max_free", TSR_REF(IntRef, c.tensor.stationary_max_free), "elements",
                    "LoadStationary free size limit (M); at most tensor.cols").at_least(1).at_most(1024));
  s.push_back(field("tensor.moving_max_free", TSR_REF(IntRef, c.tensor.moving_max_free), "elements",
                    "MultiplyMoving free size limit (N); its fp32 results must fit one PSUM bank").at_least(1).at_most(65536));
  s.push_back(field("tensor.min_initiation_interval_cycles", TSR_REF(IntRef, c.tensor.min_initiation_interval_cycles), "cycles",
                    "Shortest MultiplyMoving issue interval: an N-column matmul takes max(N, this)").at_least(1).at_most(65536).def("64"));
  s.push_back(field("tensor.stationary_columns_per_cycle", TSR_REF(IntRef, c.tensor.stationary_columns_per_cycle), "columns",
                    "LoadStationary load path width: stationary columns taken per cycle (a load of M columns takes ceil(M / this) cycles); at most tensor.cols").at_least(1).at_most(1024).def("4"));

  // Vector, scalar and GpSimd engines: approximately-timed models everywhere.
  s.push_back(field("vector.clock_ghz", TSR_REF(FloatRef, c.vector.clock_ghz), "GHz", "Vector engine clock").at_least(0.01).at_most(10));
  s.push_back(field("vector.lanes", TSR_REF(IntRef, c.vector.lanes), "lanes", "Elements processed per cycle (one per partition)").at_least(1).at_most(1024));
  s.push_back(field("vector.overhead_cycles", TSR_REF(IntRef, c.vector.overhead_cycles), "cycles",
                    "Static cost of an instruction in the front end, before its first element streams").at_least(0).at_most(1e6).def("100"));
  s.push_back(field("vector.min_interval_cycles", TSR_REF(IntRef, c.vector.min_interval_cycles), "cycles",
                    "Shortest interval between two instructions entering the front end (when pipelined)").at_least(1).at_most(1e6).def("64"));
  s.push_back(field("vector.dependency_cycles", TSR_REF(IntRef, c.vector.dependency_cycles), "cycles",
                    "From an instruction's last element to its result being readable by the next instruction of this engine (the SBUF/PSUM write commit)").at_least(0).at_most(1e6).def("0"));
  s.push_back(field("vector.pipelined", TSR_REF(BoolRef, c.vector.pipelined), "",
                    "Whether an instruction's overhead overlaps the streaming of the one before it").def("true"));
  s.push_back(field("vector.costs.tensor_scalar", TSR_REF(FloatRef, c.vector.costs["tensor_scalar"]), "cycles/element", "One tensor input, one scalar operand").at_least(1.0 / 1024).at_most(1024).def("1"));
  s.push_back(field("vector.costs.tensor_tensor", TSR_REF(FloatRef, c.vector.costs["tensor_tensor"]), "cycles/element", "Two tensor inputs").at_least(1.0 / 1024).at_most(1024).def("2"));
  s.push_back(field("vector.costs.tensor_tensor_sbuf_psum", TSR_REF(FloatRef, c.vector.costs["tensor_tensor_sbuf_psum"]), "cycles/element",
                    "Two tensor inputs, one in SBUF and one in PSUM (each through its own read interface)").at_least(1.0 / 1024).at_most(1024).def("1"));
  s.push_back(field("vector.costs.reduce", TSR_REF(FloatRef, c.vector.costs["reduce"]), "cycles/element", "Reduction along the free axis").at_least(1.0 / 1024).at_most(1024).def("1"));
  s.push_back(field("vector.costs.copy", TSR_REF(FloatRef, c.vector.costs["copy"]), "cycles/element", "Copy and dtype conversion").at_least(1.0 / 1024).at_most(1024).def("1"));
  s.push_back(field("vector.costs.memset", TSR_REF(FloatRef, c.vector.costs["memset"]), "cycles/element", "Fill with a constant").at_least(1.0 / 1024).at_most(1024).def("1"));
  s.push_back(field("vector.costs.select", TSR_REF(FloatRef, c.vector.costs["select"]), "cycles/element", "Predicated select of two inputs").at_least(1.0 / 1024).at_most(1024).def("2"));

  s.push_back(field("scalar.clock_ghz", TSR_REF(FloatRef, c.scalar.clock_ghz), "GHz", "Scalar (activation) engine clock").at_least(0.01).at_most(10));
  s.push_back(field("scalar.lanes", TSR_REF(IntRef, c.scalar.lanes), "lanes", "Elements processed per cycle").at_least(1).at_most(1024));
  s.push_back(field("scalar.overhead_cycles", TSR_REF(IntRef, c.scalar.overhead_cycles), "cycles",
                    "Static cost of an instruction in the front end, before its first element streams").at_least(0).at_most(1e6).def("100"));
  s.push_back(field("scalar.min_interval_cycles", TSR_REF(IntRef, c.scalar.min_interval_cycles), "cycles",
                    "Shortest interval between two instructions entering the front end (when pipelined)").at_least(1).at_most(1e6).def("64"));
  s.push_back(field("scalar.dependency_cycles", TSR_REF(IntRef, c.scalar.dependency_cycles), "cycles",
                    "From an instruction's last element to its result being readable by the next instruction of this engine (the SBUF/PSUM write commit)").at_least(0).at_most(1e6).def("0"));
  s.push_back(field("scalar.pipelined", TSR_REF(BoolRef, c.scalar.pipelined), "",
                    "Whether an instruction's overhead overlaps the streaming of the one before it").def("true"));
  s.push_back(field("scalar.accumulate_cycles", TSR_REF(IntRef, c.scalar.accumulate_cycles), "cycles",
                    "Writing an activation's per-partition sums back to SBUF/PSUM, per instruction that has them").at_least(0).at_most(1e6).def("64"));
  s.push_back(field("scalar.costs.activation", TSR_REF(FloatRef, c.scalar.costs["activation"]), "cycles/element", "f(x * scale + bias) for any table function").at_least(1.0 / 1024).at_most(1024).def("1"));
  s.push_back(field("scalar.costs.accumulate", TSR_REF(FloatRef, c.scalar.costs["accumulate"]), "cycles/element", "Extra cost of the optional accumulate-reduce").at_least(0).at_most(1024).def("0"));

  s.push_back(field("gpsimd.present", TSR_REF(BoolRef, c.gpsimd.present), "",
                    "Whether the generation has a GpSimd engine (NeuronCore-v1 has none)").def("true"));
  s.push_back(field("gpsimd.clock_ghz", TSR_REF(FloatRef, c.gpsimd.clock_ghz), "GHz", "GpSimd engine clock").at_least(0.01).at_most(10));
  s.push_back(field("gpsimd.lanes", TSR_REF(IntRef, c.gpsimd.lanes), "lanes", "Elements processed per cycle").at_least(1).at_most(1024));
  s.push_back(field("gpsimd.overhead_cycles", TSR_REF(IntRef, c.gpsimd.overhead_cycles), "cycles",
                    "Start-up cost of an instruction, before its first element streams").at_least(0).at_most(1e6).def("150"));
  s.push_back(field("gpsimd.min_interval_cycles", TSR_REF(IntRef, c.gpsimd.min_interval_cycles), "cycles",
                    "Shortest interval between two instructions entering the front end (when pipelined)").at_least(1).at_most(1e6).def("64"));
  s.push_back(field("gpsimd.dependency_cycles", TSR_REF(IntRef, c.gpsimd.dependency_cycles), "cycles",
                    "From an instruction's last element to its result being readable by the next instruction of this engine (the SBUF/PSUM write commit)").at_least(0).at_most(1e6).def("0"));
  s.push_back(field("gpsimd.pipelined", TSR_REF(BoolRef, c.gpsimd.pipelined), "",
                    "Whether an instruction's overhead overlaps the streaming of the one before it").def("false"));
  s.push_back(field("gpsimd.costs.iota", TSR_REF(FloatRef, c.gpsimd.costs["iota"]), "cycles/element", "Index generation").at_least(1.0 / 1024).at_most(1024).def("1"));
  s.push_back(field("gpsimd.costs.copy", TSR_REF(FloatRef, c.gpsimd.costs["copy"]), "cycles/element", "Copy").at_least(1.0 / 1024).at_most(1024).def("1"));
  s.push_back(field("gpsimd.costs.partition_reduce", TSR_REF(FloatRef, c.gpsimd.costs["partition_reduce"]), "cycles/element",
                    "Reduction across partitions").at_least(1.0 / 1024).at_most(1024).def("4"));

  // On-chip memories.
  s.push_back(field("sbuf.partitions", TSR_REF(IntRef, c.sbuf.partitions), "partitions", "SBUF partitions (P dimension)").at_least(1).at_most(1024));
  s.push_back(field("sbuf.partition_kib", TSR_REF(IntRef, c.sbuf.partition_kib), "KiB", "Bytes per partition").at_least(1).at_most(4096));
  s.push_back(field("sbuf.access_latency_cycles", TSR_REF(IntRef, c.sbuf.access_latency_cycles), "cycles", "Cost of starting an access").at_least(0).at_most(1e6).def("60"));
  s.push_back(field("sbuf.bytes_per_cycle", TSR_REF(IntRef, c.sbuf.bytes_per_cycle), "bytes/cycle", "Per-partition interface width").at_least(1).at_most(4096).def("4"));
  s.push_back(field("sbuf.stride_penalty_threshold_bytes", TSR_REF(IntRef, c.sbuf.stride_penalty_threshold_bytes), "bytes",
                    "An innermost stride above this is slowed").at_least(1).at_most(1 << 20).def("16"));
  s.push_back(field("sbuf.stride_penalty_factor", TSR_REF(FloatRef, c.sbuf.stride_penalty_factor), "x",
                    "Slow-down of such strided accesses").at_least(1).at_most(1024).def("2"));

  s.push_back(field("psum.partitions", TSR_REF(IntRef, c.psum.partitions), "partitions", "PSUM partitions").at_least(1).at_most(1024));
  s.push_back(field("psum.banks", TSR_REF(IntRef, c.psum.banks), "banks", "Accumulation banks per partition").at_least(1).at_most(64));
  s.push_back(field("psum.bank_kib", TSR_REF(IntRef, c.psum.bank_kib), "KiB", "Bytes per bank per partition").at_least(1).at_most(1024));
  s.push_back(field("psum.access_latency_cycles", TSR_REF(IntRef, c.psum.access_latency_cycles), "cycles", "Cost of starting an access").at_least(0).at_most(1e6).def("60"));

  s.push_back(field("hbm.capacity_gib", TSR_REF(IntRef, c.hbm.capacity_gib), "GiB", "Device memory this core can address").at_least(1).at_most(kHbmWindowGib));
  s.push_back(field("hbm.bandwidth_gbps", TSR_REF(FloatRef, c.hbm.bandwidth_gbps), "GB/s", "Bandwidth this core sees (1e9 bytes/s)").at_least(1).at_most(100000));
  s.push_back(field("hbm.latency_ns", TSR_REF(FloatRef, c.hbm.latency_ns), "ns", "Read latency").at_least(0).at_most(1e6));
  s.push_back(field("hbm.channels", TSR_REF(IntRef, c.hbm.channels), "channels", "Independent channels; addresses are hashed over them (a power of two); each carries at least 1 GB/s").at_least(1).at_most(256));

  s.push_back(field("dma.engines", TSR_REF(IntRef, c.dma.engines), "engines", "DMA engines per core").at_least(1).at_most(64));
  s.push_back(field("dma.queues_per_engine", TSR_REF(IntRef, c.dma.queues_per_engine), "queues", "Descriptor queues per engine").at_least(1).at_most(64));
  s.push_back(field("dma.bytes_per_ns", TSR_REF(FloatRef, c.dma.bytes_per_ns), "B/ns", "Bandwidth of one engine").at_least(0.01).at_most(4096));
  s.push_back(field("dma.start_latency_ns", TSR_REF(FloatRef, c.dma.start_latency_ns), "ns", 
                    "Time from trigger to the engine seeing the doorbell (its descriptor fetch and first read follow)")
                  .at_least(0).at_most(1e6));
  s.push_back(field("dma.descriptor_bytes", TSR_REF(IntRef, c.dma.descriptor_bytes), "bytes", "Size of one descriptor in its ring: fixed by the descriptor format (docs/dma.md)").at_least(kDmaDescriptorBytes).at_most(kDmaDescriptorBytes).def("64"));
  s.push_back(field("dma.axi_data_bytes", TSR_REF(IntRef, c.dma.axi_data_bytes), "bytes", "AXI data bus width of one engine").at_least(4).at_most(128).def("64"));
  s.push_back(field("dma.max_outstanding", TSR_REF(IntRef, c.dma.max_outstanding), "transactions",
                    "Outstanding AXI reads (and writes) per engine").at_least(1).at_most(256).def("16"));
  s.push_back(field("dma.run_gap_cycles", TSR_REF(IntRef, c.dma.run_gap_cycles), "cycles",
                    "Least engine cycles between the starts of two contiguous runs of one side (0, 1: no limit)")
                  .at_least(0).at_most(255).def("0"));
  s.push_back(field("dma.descriptor_gap_cycles", TSR_REF(IntRef, c.dma.descriptor_gap_cycles), "cycles",
                    "Least engine cycles from a descriptor's last write beat to the next descriptor's first write burst (0, 1: no limit)")
                  .at_least(0).at_most(65535).def("0"));

  s.push_back(field("sync.semaphores", TSR_REF(IntRef, c.sync.semaphores), "semaphores", "Hardware semaphores").at_least(1).at_most(4096));
  s.push_back(field("sync.latency_ns", TSR_REF(FloatRef, c.sync.latency_ns), "ns", "Semaphore update to waiter wake-up").at_least(0).at_most(1e6).def("10"));

  // The chip: cores sharing one HBM (docs/multicore.md).
  s.push_back(field("chip.cores", TSR_REF(IntRef, c.chip.cores), "cores",
                    "NeuronCores per chip, all sharing the chip's HBM; `tessera run --cores N` runs N of them").at_least(1).at_most(static_cast<double>(kMaxChipCores)).def("1"));
  s.push_back(field("chip.hbm_capacity_gib", TSR_REF(IntRef, c.chip.hbm_capacity_gib), "GiB",
                    "HBM of the whole chip; 0: chip.cores x hbm.capacity_gib").or_zero().at_least(1).at_most(kHbmWindowGib).def("0"));
  s.push_back(field("chip.hbm_bandwidth_gbps", TSR_REF(FloatRef, c.chip.hbm_bandwidth_gbps), "GB/s",
                    "HBM bandwidth of the whole chip, over its channels, which every core's requests contend for; 0: chip.cores x hbm.bandwidth_gbps").or_zero().at_least(1).at_most(1000000).def("0"));
  s.push_back(field("chip.hbm_channels", TSR_REF(IntRef, c.chip.hbm_channels), "channels",
                    "HBM channels of the whole chip (a power of two); 0: chip.cores x hbm.channels").or_zero().at_least(1).at_most(4096).def("0"));
  s.push_back(field("chip.core_link_bandwidth_gbps", TSR_REF(FloatRef, c.chip.core_link_bandwidth_gbps), "GB/s",
                    "Each core's port into the chip's core-to-core fabric, per direction: every byte a core's DMA sends to (or reads from) another core's SBUF crosses the sender's and the receiver's port, whose bandwidth all such transfers share").at_least(1).at_most(1000000).def("64"));
  s.push_back(field("chip.core_link_latency_ns", TSR_REF(FloatRef, c.chip.core_link_latency_ns), "ns",
                    "From a core's request leaving its port to its arrival at another core (data, or a semaphore increment)").at_least(0).at_most(1e6).def("100"));
  s.push_back(field("chip.peer_dma_engines", TSR_REF(IntRef, c.chip.peer_dma_engines), "engines",
                    "How many of a core's DMA engines (engines 0 .. N-1, at most dma.engines) reach another core's SBUF and semaphores; 0: none (cores share HBM only)").at_least(0).at_most(256).def("0"));

  s.push_back(field("chip.lnc", TSR_REF(IntRef, c.chip.lnc), "cores",
                    "Physical cores per logical core (the Neuron SDK's LNC degree, 1 or 2): a run that names no core count (no `--cores`) runs one logical core, the kernel split across its cores as an SPMD launch; at most chip.cores, which it must divide").at_least(1).at_most(2).def("1"));

  s.push_back(field("simulation.default_fidelity", TSR_REF(StringRef, c.simulation.default_fidelity), "",
                    "rtl, sampled or tlm; a run may override it").def("sampled").one_of({"rtl", "sampled", "tlm"}));
  s.push_back(field("simulation.sample_every", TSR_REF(IntRef, c.simulation.sample_every), "instructions",
                    "sampled fidelity: RTL re-executes the first of each shape, then every Nth while within the budget").at_least(1).at_most(1e9).def("64"));
  s.push_back(field("simulation.sample_rtl_budget_percent", TSR_REF(FloatRef, c.simulation.sample_rtl_budget_percent), "%",
                    "sampled fidelity: wall time the RTL may use for samples beyond the first of each shape").at_least(0).at_most(100).def("20"));
  return s;
}

#undef TSR_REF

}  // namespace

const std::vector<FieldSpec>& schema() {
  static const std::vector<FieldSpec> s = build_schema();
  return s;
}

const std::vector<std::string>& schema_sections() {
  static const std::vector<std::string> sections = [] {
    std::vector<std::string> out;
    for (const auto& f : schema()) {
      for (std::size_t dot = f.path.find('.'); dot != std::string::npos; dot = f.path.find('.', dot + 1)) {
        std::string prefix = f.path.substr(0, dot);
        if (std::find(out.begin(), out.end(), prefix) == out.end()) out.push_back(prefix);
      }
    }
    return out;
  }();
  return sections;
}

const FieldSpec* find_field(const std::string& path) {
  for (const auto& f : schema())
    if (f.path == path) return &f;
  return nullptr;
}

std::string field_value_text(const FieldSpec& f, const HwConfig& cfg) {
  // The accessors are shared with the loader and so take a mutable config; every
  // map key they touch already exists (defaults are applied first), so nothing
  // is written here.
  auto& c = const_cast<HwConfig&>(cfg);
  switch (f.kind()) {
    case FieldSpec::Kind::Int: return fmt::format("{}", std::get<FieldSpec::IntRef>(f.ref)(c));
    case FieldSpec::Kind::Float: return fmt::format("{}", std::get<FieldSpec::FloatRef>(f.ref)(c));
    case FieldSpec::Kind::Bool: return std::get<FieldSpec::BoolRef>(f.ref)(c) ? "true" : "false";
    case FieldSpec::Kind::String: {
      std::string quoted = "'";
      for (char ch : std::get<FieldSpec::StringRef>(f.ref)(c)) quoted += ch == '\'' ? std::string("''") : std::string(1, ch);
      return quoted + "'";
    }
  }
  return {};
}

}  // namespace tessera::arch
