#include "core/neuron_core.h"

#include "engines/gpsimd_engine.h"
#include "engines/scalar_engine.h"
#include "engines/sync_engine.h"
#include "engines/tensor_engine.h"
#include "engines/vector_engine.h"

#include "trace/sim_time.h"

#include <fmt/format.h>

namespace tessera::core {


// Bandwidth used over the whole run (bytes / end time); 1 byte/ns = 1 GB/s.
NeuronCore::Bandwidth::Bandwidth(trace::Stats& stats, const sc_core::sc_object& memory, const NeuronCore& core,
                                 std::function<double()> bytes)
    : Group(stats, memory),
      used_gbps(*this, "bandwidth_used_gbps", "GB/s", "bytes read and written per second over the run",
                [&core, bytes = std::move(bytes)] {
                  const double ns = trace::ns(core.end_time_);
                  return ns > 0 ? bytes() / ns : 0.0;
                }) {}

NeuronCore::NeuronCore(sc_core::sc_module_name name, const arch::HwConfig& cfg, trace::Stats& stats,
                       const CoreOptions& options)
    : sc_module(name), cfg_(cfg), stats_(stats) {
  // A core of a chip (a shared HBM) reaches the other cores through the chip's fabric.
  mem_ = std::make_unique<MemorySystem>(cfg, stats, options.shared_hbm, options.shared_hbm != nullptr);
  if (options.program_slices == 0 || options.program_slice >= options.program_slices)
    throw std::runtime_error(fmt::format("program slice {} of {}: no such slice", options.program_slice,
                                         options.program_slices));
  // 256-byte aligned slices, as every stream placed in them is.
  program_bytes_ = mem_->map.program_area_bytes() / options.program_slices / 256 * 256;
  program_base_ = mem_->map.program_area_base() + program_bytes_ * options.program_slice;
  ctx_ = std::make_unique<CoreContext>(mem_->context(cfg, stats, options.no_data));
  ctx_->waves = options.waves;
  ctx_->timeline = options.timeline;
  ctx_->origin_of = options.origin_of;
  ctx_->descriptor_origin_of = options.descriptor_origin_of;
  if (options.shared_hbm) {
    ctx_->dma_totals_name = std::string(this->name()) + ".dma";
    ctx_->on_chip = true;
  }
  if (options.waves) {
    mem_->sbuf->set_wave_probe(options.waves, trace::WaveProbe::Memory::Sbuf);
    mem_->psum->set_wave_probe(options.waves, trace::WaveProbe::Memory::Psum);
    mem_->semaphores->set_wave_probe(options.waves);
  }
  std::unique_ptr<engines::TensorDatapath> datapath;
  if (options.tensor_datapath) {
    datapath = options.tensor_datapath(cfg, options.fidelity);
  } else if (options.fidelity == arch::Fidelity::Tlm) {
    datapath = engines::make_fast_tensor_datapath(arch::tensor_timing_params(cfg.tensor), !options.no_data);
  } else {
    throw std::runtime_error(fmt::format("{} fidelity needs the Verilated tensor engine, which this program does not link",
                                         arch::to_string(options.fidelity)));
  }
  engines_[static_cast<std::size_t>(arch::Engine::Tensor)] =
      std::make_unique<engines::TensorEngine>("tensor", *ctx_, std::move(datapath));
  engines_[static_cast<std::size_t>(arch::Engine::Vector)] = std::make_unique<engines::VectorEngine>("vector", *ctx_);
  engines_[static_cast<std::size_t>(arch::Engine::Scalar)] = std::make_unique<engines::ScalarEngine>("scalar", *ctx_);
  engines_[static_cast<std::size_t>(arch::Engine::GpSimd)] = std::make_unique<engines::GpSimdEngine>("gpsimd", *ctx_);
  engines_[static_cast<std::size_t>(arch::Engine::Sync)] = std::make_unique<engines::SyncEngine>("sync", *ctx_);
  for (auto& e : engines_)
    if (e) mem_->interconnect->bind_initiator(e->fetch, false);
  dma_ = std::make_unique<dma::DmaSubsystem>(*ctx_, options.dma_engine, options.dma_order);
  // A chip's HBM has its own bandwidth figure over all its cores (core/chip.h).
  if (!options.shared_hbm) {
    const auto& hbm = mem_->hbm->stats();
    bandwidth_.push_back(std::make_unique<Bandwidth>(stats, *mem_->hbm, *this, [&hbm] {
      return hbm.bytes_read.value() + hbm.bytes_written.value() + hbm.bytes_timing_only.value();
    }));
  }
  for (const memory::PartitionedMemory* m : {mem_->sbuf.get(), mem_->psum.get()}) {
    const auto& s = m->stats();
    bandwidth_.push_back(std::make_unique<Bandwidth>(stats, *m, *this, [&s] {
      return s.bytes_read.value() + s.bytes_written.value() + s.bytes_timing_only.value();
    }));
  }
  // The first chip.peer_dma_engines engines reach the other cores' SBUF and semaphores.
  for (std::size_t i = 0; i < dma_->engines(); ++i) {
    mem_->interconnect->bind_initiator(dma_->engine(i).socket, i < static_cast<std::size_t>(arch::peer_dma_engines(cfg)));
    if (auto* fast = dynamic_cast<dma::DmaEngine*>(&dma_->engine(i))) fast->route_through(*mem_->interconnect);
  }
  ctx_->dma = dma_.get();
  if (options.dma_sampler) {
    dma_sampler_ = options.dma_sampler(*ctx_);
    for (std::size_t i = 0; i < dma_->engines(); ++i)
      if (auto* fast = dynamic_cast<dma::DmaEngine*>(&dma_->engine(i))) fast->set_sampler(dma_sampler_.get());
  }
}

void NeuronCore::configure_dma_queue(std::uint32_t engine, std::uint32_t queue, std::uint64_t base,
                                     std::uint32_t size) {
  if (engine >= dma_->engines()) throw std::runtime_error(fmt::format("no DMA engine {}", engine));
  dma_->engine(engine).configure_queue(queue, base, size);
}

NeuronCore::~NeuronCore() = default;

engines::TensorEngine& NeuronCore::tensor() {
  return static_cast<engines::TensorEngine&>(engine(arch::Engine::Tensor));
}

void NeuronCore::release_records() {
  for (auto& e : engines_)
    if (e) e->release_costs();
  for (std::size_t i = 0; i < dma_->engines(); ++i) dma_->engine(i).release_records();
  semaphores().release_increments();
}

std::uint64_t NeuronCore::reserve_program(std::uint64_t bytes) {
  const std::uint64_t address = program_base_ + program_next_;
  if (bytes > program_bytes_ - program_next_)
    throw std::runtime_error(
        program_bytes_ == ctx_->map.program_area_bytes()
            ? fmt::format("programs exceed the {} MiB program area at the top of HBM", program_bytes_ >> 20)
            : fmt::format("programs exceed this core's {} KiB slice of the {} MiB program area at the top of HBM",
                          program_bytes_ >> 10, ctx_->map.program_area_bytes() >> 20));
  program_next_ += (bytes + 255) / 256 * 256;  // keep every stream 256-byte aligned
  return address;
}

std::uint64_t NeuronCore::place(const std::vector<std::uint8_t>& bytes) {
  const std::uint64_t address = reserve_program(bytes.size());
  mem_->hbm->backdoor_write(address, bytes.data(), bytes.size());
  return address;
}

Engine& NeuronCore::sequenced(arch::Engine e) {
  auto& engine = engines_.at(static_cast<std::size_t>(e));
  if (!engine) throw std::runtime_error(fmt::format("this core has no {} engine model", arch::to_string(e)));
  return *engine;
}

void NeuronCore::start_program(arch::Engine e, std::uint64_t address, std::uint64_t bytes) {
  sequenced(e).set_program(address, bytes);
}

void NeuronCore::load_program(arch::Engine e, const std::vector<std::uint8_t>& stream) {
  Engine& engine = sequenced(e);
  engine.set_program(place(stream), stream.size());
}

RunResult NeuronCore::run() {
  // Past the limit the run is an error, not a saturated or wrapped time.
  // It stops when nothing is left to happen, so that a deadlock is reported
  // at the time the last engine stopped, not at the limit.
  const sc_core::sc_time limit(arch::kMaxSimulatedSeconds, sc_core::SC_SEC);
  sc_core::sc_start(limit, sc_core::SC_EXIT_ON_STARVATION);
  return result();
}

RunResult NeuronCore::result() {
  RunResult r;
  if (!ctx_->error && sc_core::sc_pending_activity()) {
    r.status = RunResult::Status::Error;
    r.message = fmt::format("simulated time passed the limit of {} s (arch::kMaxSimulatedSeconds): a config whose "
                            "costs make the run that long is almost certainly a mistake",
                            arch::kMaxSimulatedSeconds);
    return r;
  }
  for (auto& e : engines_)
    if (e && e->finished()) r.end_time = std::max(r.end_time, e->end_time());
  end_time_ = r.end_time;
  if (ctx_->error) {
    r.status = RunResult::Status::Error;
    r.message = *ctx_->error;
    return r;
  }
  std::vector<std::string> unfinished;
  for (auto& e : engines_)
    if (e && !e->finished()) unfinished.push_back(e->name());
  if (!unfinished.empty()) {
    r.status = RunResult::Status::Deadlock;
    r.waiting = mem_->semaphores->blocked_waiters();
    r.message = fmt::format("deadlock at {:.3f} us: no engine can make progress; waiting: {}",
                            trace::ns(sc_core::sc_time_stamp()) / 1000.0,
                            r.waiting.empty() ? fmt::format("{}", fmt::join(unfinished, ", "))
                                              : fmt::format("{}", fmt::join(r.waiting, "; ")));
  }
  return r;
}

}  // namespace tessera::core
