// Speed of a whole core per fidelity on a matmul-heavy program: the tensor
// engine's sequencer fetches and issues one LoadStationary [Rows, Cols] and
// MULTIPLIES MultiplyMoving [Rows, N = moving_max_free] accumulating into one
// PSUM tile, operands already in SBUF, so the figure is the tensor engine's
// (and its sequencer's), not DMA's. Prints one markdown row: simulated
// tensor-engine cycles per wall second. One simulation per process, so one
// fidelity per run; scripts/bench-fidelity runs the table.
// Usage: core_fidelity_bench CONFIG_DIR CONFIG rtl|sampled|tlm MULTIPLIES [timing-only]
#include "cosim/dma_sampler.h"
#include "cosim/rtl_tensor_datapath.h"

#include "arch/config.h"
#include "core/neuron_core.h"
#include "testing/stream.h"
#include "testing/tensor_programs.h"
#include "trace/sim_time.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace tessera;

int sc_main(int argc, char** argv) {
  if (argc < 5) {
    fmt::print(stderr, "usage: {} CONFIG_DIR CONFIG rtl|sampled|tlm MULTIPLIES [timing-only]\n", argv[0]);
    return 2;
  }
  setenv("TESSERA_CONFIG_DIR", argv[1], 1);
  const arch::HwConfig cfg = arch::load_config(argv[2]).hw;
  const auto fidelity = arch::parse_fidelity(argv[3]);
  if (!fidelity) {
    fmt::print(stderr, "unknown fidelity {}\n", argv[3]);
    return 2;
  }
  const long multiplies = std::atol(argv[4]);
  const bool timing_only = argc > 5 && std::string(argv[5]) == "timing-only";
  const auto rows = static_cast<std::uint32_t>(cfg.tensor.rows), cols = static_cast<std::uint32_t>(cfg.tensor.cols);
  const auto n = static_cast<std::uint32_t>(cfg.tensor.moving_max_free);

  trace::Stats stats;
  core::CoreOptions o;
  o.fidelity = *fidelity;
  o.no_data = timing_only;
  o.tensor_datapath = cosim::rtl_tensor_factory();
  core::NeuronCore core("core", cfg, stats, o);
  // Weights at SBUF byte 0, the moving tile after them, random bf16 bits.
  std::mt19937 rng(1);
  const std::uint32_t moving_at = cols * 2;
  for (std::uint32_t p = 0; p < rows; ++p) {
    std::uint8_t* b = core.sbuf().at(p, 0, moving_at + n * 2);
    for (std::uint32_t i = 0; i < moving_at + n * 2; i += 2) {
      const arch::Bf16 v = arch::to_bf16(std::normal_distribution<float>(0, 1)(rng));
      std::memcpy(b + i, &v, 2);
    }
  }
  test_support::Stream te(arch::Engine::Tensor);
  te.add(test_support::load_stationary(rows, cols, 0));
  for (long i = 0; i < multiplies; ++i) te.add(test_support::multiply(rows, cols, n, moving_at, 0, i > 0));
  te.end();
  core.load_program(arch::Engine::Tensor, te.bytes);

  const auto t0 = std::chrono::steady_clock::now();
  const auto r = core.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) {
    fmt::print(stderr, "{}\n", r.message);
    return 1;
  }
  const double cycles = trace::ns(core.engine(arch::Engine::Tensor).end_time()) * cfg.tensor.clock_ghz;
  std::string sampled = "-";
  if (*fidelity == arch::Fidelity::Sampled)
    sampled = fmt::format("{:.0f}, {:.2f} s", stats.value("core.tensor.datapath.sampled_instructions"),
                          stats.value("core.tensor.datapath.sample_rtl_seconds"));
  fmt::print("| {} | {}x{} | {} | {} | {} | {:.0f} | {:.3f} | {:.0f} | {} |\n", cfg.name, rows, cols,
             arch::to_string(*fidelity), timing_only ? "timing only" : "bits", multiplies, cycles, wall, cycles / wall,
             sampled);
  return 0;
}
