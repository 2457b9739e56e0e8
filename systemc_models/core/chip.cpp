#include "core/chip.h"

#include "trace/sim_time.h"

#include <fmt/format.h>

#include <optional>

namespace tessera::core {

Chip::Bandwidth::Bandwidth(trace::Stats& stats, const memory::Hbm& hbm, const Chip& chip)
    : Group(stats, hbm),
      used_gbps(*this, "bandwidth_used_gbps", "GB/s", "bytes all cores read and wrote per second over the run",
                [&hbm, &chip] {
                  const auto& s = hbm.stats();
                  const double ns = trace::ns(chip.end_time_);
                  return ns > 0 ? (s.bytes_read.value() + s.bytes_written.value() + s.bytes_timing_only.value()) / ns
                                : 0.0;
                }) {}

Chip::Chip(const arch::HwConfig& cfg, std::size_t cores, trace::Stats& stats,
           const std::function<CoreOptions(std::size_t)>& options)
    : core_cfg_(arch::core_on_chip(cfg)) {
  if (cores < 1 || cores > static_cast<std::size_t>(cfg.chip.cores))
    throw std::runtime_error(fmt::format("{} cores: a {} chip has 1 to {} (chip.cores)", cores, cfg.name, cfg.chip.cores));
  hbm_ = std::make_unique<memory::Hbm>("hbm", core_cfg_.hbm, stats);
  dma_order_ = std::make_unique<dma::DmaChipOrder>(core_cfg_);
  for (std::size_t i = 0; i < cores; ++i) {
    CoreOptions o = options ? options(i) : CoreOptions{};
    o.shared_hbm = hbm_.get();
    o.dma_order = dma_order_.get();
    o.program_slice = static_cast<std::uint32_t>(i);
    o.program_slices = static_cast<std::uint32_t>(cores);
    cores_.push_back(std::make_unique<NeuronCore>(fmt::format("core{}", i).c_str(), core_cfg_, stats, o));
  }
  fabric_ = std::make_unique<ChipFabric>("fabric", core_cfg_, cores, stats);
  for (std::size_t i = 0; i < cores; ++i) {
    fabric_->attach(i, cores_[i]->interconnect(), cores_[i]->semaphores());
    cores_[i]->context().peers = &fabric_->signals(i);
  }
  bandwidth_ = std::make_unique<Bandwidth>(stats, *hbm_, *this);
}

Chip::~Chip() = default;

ChipRunResult Chip::run() {
  const sc_core::sc_time limit(arch::kMaxSimulatedSeconds, sc_core::SC_SEC);
  sc_core::sc_start(limit, sc_core::SC_EXIT_ON_STARVATION);  // as NeuronCore::run
  ChipRunResult out;
  // An error on one core stops them all (sc_stop); the others then look
  // unfinished, which is not their fault: the error is the chip's result.
  std::optional<std::size_t> failed;
  for (std::size_t i = 0; i < cores_.size() && !failed; ++i)
    if (cores_[i]->context().error) failed = i;
  for (std::size_t i = 0; i < cores_.size(); ++i) {
    RunResult r = cores_[i]->result();
    out.chip.end_time = std::max(out.chip.end_time, r.end_time);
    out.cores.push_back(std::move(r));
  }
  end_time_ = out.chip.end_time;
  if (failed) {
    out.chip.status = RunResult::Status::Error;
    out.chip.message = fmt::format("core {}: {}", *failed, out.cores[*failed].message);
    return out;
  }
  for (std::size_t i = 0; i < out.cores.size(); ++i) {
    const RunResult& r = out.cores[i];
    if (r.ok()) continue;
    out.chip.status = r.status;
    out.chip.message = fmt::format("core {}: {}", i, r.message);
    for (const auto& w : r.waiting) out.chip.waiting.push_back(fmt::format("core {}: {}", i, w));
    return out;
  }
  return out;
}

}  // namespace tessera::core
