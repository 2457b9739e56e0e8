#include "tessera/device.h"

#include "arch/numerics.h"
#include "core/neuron_core.h"
#include "cosim/dma_sampler.h"
#include "cosim/rtl_dma_engine.h"
#include "cosim/rtl_tensor_datapath.h"
#include "cosim/waves.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

namespace tessera {

Device::Device(const DeviceOptions& options)
    : options_(options),
      resolved_(arch::load_config(options.config, options.overrides)),
      fidelity_(options.fidelity.value_or(resolved_.hw.default_fidelity())) {
  // Bad waveform options are caught before anything runs.
  if (!options_.waves.empty()) {
    try {
      if (!options_.waves_window.empty()) cosim::parse_wave_window(options_.waves_window, resolved_.hw);
      if (!options_.waves_scope.empty()) cosim::parse_wave_scope(options_.waves_scope);
    } catch (const std::invalid_argument& e) {
      throw KernelError(e.what());
    }
  }
}

Device::~Device() = default;

Tensor Device::allocate(const std::string& name, std::vector<std::int64_t> shape, DType dtype) {
  Tensor t{name, std::move(shape), dtype, 0};
  for (auto d : t.shape)
    if (d < 1) throw KernelError(fmt::format("allocate('{}'): dimension {} is not positive", name, d));
  const arch::AddressMap map(resolved_.hw);
  const std::uint64_t at = (hbm_next_ + 4095) / 4096 * 4096;
  if (at + t.bytes() > map.program_area_base())
    throw KernelError(fmt::format("allocate('{}'): {} bytes do not fit the {} bytes of HBM left for tensors", name,
                                  t.bytes(), map.program_area_base() - at));
  t.address = at;
  hbm_next_ = at + t.bytes();
  if (!options_.no_data) data_[at].assign(t.bytes(), 0);
  return t;
}

void Device::upload(const Tensor& t, const std::vector<float>& values) {
  if (static_cast<std::int64_t>(values.size()) != t.elements())
    throw KernelError(fmt::format("upload('{}'): {} values for {} elements", t.name, values.size(), t.elements()));
  if (options_.no_data) return;
  auto& bytes = data_.at(t.address);
  for (std::size_t i = 0; i < values.size(); ++i) {
    switch (t.dtype) {
      case DType::Fp32: std::memcpy(&bytes[i * 4], &values[i], 4); break;
      case DType::Bf16: {
        const std::uint16_t b = arch::to_bf16(values[i]).bits;
        std::memcpy(&bytes[i * 2], &b, 2);
        break;
      }
      default: throw KernelError(fmt::format("upload('{}'): host upload of {} is not supported", t.name, to_string(t.dtype)));
    }
  }
}

std::vector<float> Device::download(const Tensor& t) const {
  std::vector<float> out(static_cast<std::size_t>(t.elements()), 0.0f);
  if (options_.no_data) return out;
  const auto& bytes = data_.at(t.address);
  for (std::size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype) {
      case DType::Fp32: std::memcpy(&out[i], &bytes[i * 4], 4); break;
      case DType::Bf16: {
        std::uint16_t b;
        std::memcpy(&b, &bytes[i * 2], 2);
        out[i] = arch::to_float(arch::Bf16::from_bits(b));
        break;
      }
      default: throw KernelError(fmt::format("download('{}'): {} is not supported", t.name, to_string(t.dtype)));
    }
  }
  return out;
}

RunReport Device::run(const Program& program) {
  static bool process_ran = false;
  if (process_ran || ran_)
    throw KernelError("Device::run: SystemC runs one simulation per process; run each program in its own process "
                      "(as `tessera run` does)");
  ran_ = process_ran = true;
  const auto wall_start = std::chrono::steady_clock::now();

  RunReport report;
  report.kernel = program.name;
  report.config = resolved_.hw.name;
  report.fidelity = arch::to_string(fidelity_);
  report.matmul_flops = program.matmul_flops;

  trace::Stats stats;
  std::unique_ptr<cosim::WaveRecorder> waves;
  if (!options_.waves.empty()) {
    cosim::WaveOptions w;
    w.path = options_.waves;
    if (!options_.waves_window.empty()) w.window = cosim::parse_wave_window(options_.waves_window, resolved_.hw);
    if (!options_.waves_scope.empty()) w.scope = cosim::parse_wave_scope(options_.waves_scope);
    waves = std::make_unique<cosim::WaveRecorder>(w, resolved_.hw);
  }
  core::CoreOptions core_options;
  core_options.fidelity = fidelity_;
  core_options.no_data = options_.no_data;
  core_options.waves = waves.get();
  // rtl and sampled need the Verilated tensor engine; tlm gets the fast model from it too.
  core_options.tensor_datapath = cosim::rtl_tensor_factory(waves.get(), options_.failure_waves_dir);
  // In rtl fidelity the DMA engines are the Verilated RTL too. sampled runs
  // the fast DMA model and re-executes a sample of descriptors on the RTL.
  if (fidelity_ == arch::Fidelity::Rtl) core_options.dma_engine = cosim::rtl_dma_factory(resolved_.hw);
  if (fidelity_ == arch::Fidelity::Sampled) core_options.dma_sampler = cosim::rtl_dma_sampler_factory(resolved_.hw);
  auto core_owner = std::make_unique<core::NeuronCore>("core", resolved_.hw, stats, core_options);
  core::NeuronCore& core = *core_owner;
  for (const auto& [address, bytes] : data_) core.hbm().backdoor_write(address, bytes.data(), bytes.size());

  // Rings get one spare slot: a full ring would have HEAD == TAIL, which reads as empty.
  std::map<DmaQueueId, std::uint64_t> ring_base;
  for (const auto& [q, descriptors] : program.rings) {
    const std::size_t slots = descriptors.size() + 1;
    std::vector<std::uint8_t> bytes(slots * arch::kDmaDescriptorBytes, 0);
    for (std::size_t i = 0; i < descriptors.size(); ++i) {
      const auto packed = arch::pack(descriptors[i]);
      std::memcpy(&bytes[i * arch::kDmaDescriptorBytes], packed.data(), packed.size());
    }
    ring_base[q] = core.place(bytes);
    core.configure_dma_queue(q.first, q.second, ring_base[q], static_cast<std::uint32_t>(slots));
  }
  for (int e = 0; e < arch::kNumEngines; ++e) {
    std::vector<std::uint8_t> stream;
    for (arch::Instruction in : program.streams[e]) {
      if (in.opcode == arch::Opcode::DmaTrigger)
        in.address = ring_base.at({in.dma_engine, in.dma_queue}) + in.address * arch::kDmaDescriptorBytes;
      const auto bytes = arch::encode(in);
      stream.insert(stream.end(), bytes.begin(), bytes.end());
    }
    core.load_program(static_cast<arch::Engine>(e), stream);
  }

  const core::RunResult r = core.run();
  report.ok = r.ok();
  report.error = r.message;
  report.time_ns = r.end_time.to_seconds() * 1e9;
  report.cycles = report.time_ns * resolved_.hw.tensor.clock_ghz;
  report.tensor_utilisation = stats.value("core.tensor.utilisation");
  const auto bf16 = resolved_.derived.peak_tflops.find(arch::TensorDType::Bf16);
  if (bf16 != resolved_.derived.peak_tflops.end() && report.time_ns > 0)
    report.hfu_percent = 100.0 * program.matmul_flops / (report.time_ns * 1e-9 * bf16->second * 1e12);
  report.dma_bytes = stats.value("dma.bytes");
  report.dma_transfers = stats.value("dma.descriptors");
  report.dma_average_bytes = stats.value("dma.average_transfer_bytes");
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const std::string n = std::string("core.") + to_string(static_cast<arch::Engine>(e));
    report.engines[to_string(static_cast<arch::Engine>(e))] =
        EngineReport{stats.value(n + ".instructions"), stats.value(n + ".busy_ns"),
                     stats.value(n + ".semaphore_wait_ns"), stats.value(n + ".fetch_wait_ns"),
                     stats.value(n + ".memory_stall_ns")};
  }
  EngineReport dma{stats.value("dma.descriptors"), 0, 0, 0};
  for (int e = 0; e < resolved_.hw.dma.engines; ++e)
    if (const std::string n = fmt::format("core.dma{}.busy_ns", e); stats.has(n))
      dma.busy_ns = std::max(dma.busy_ns, stats.value(n));
  report.engines["dma"] = dma;
  report.stats = stats.to_json();
  for (auto& [address, bytes] : data_) core.hbm().backdoor_read(address, bytes.data(), bytes.size());
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  stats_text_ = [&] {
    std::ostringstream os;
    stats.dump(os);
    return os.str();
  }();
  if (waves) {
    // The Verilated models close their traces when destroyed.
    core_owner.reset();
    const auto w = waves->finish(static_cast<std::uint64_t>(std::llround(sc_core::sc_time_stamp().to_seconds() * 1e12)));
    waves_gtkw_ = w.gtkw;
    report.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  }
  return report;
}

}  // namespace tessera
