// Simulation speed of the Verilated tensor engine: back-to-back
// LoadStationary + MultiplyMoving (N = 512) with random bf16 data streaming on
// every port and PSUM always ready, so every PE does a MAC on every cycle of a
// multiply. Prints one row of the speed table (docs/tensor-engine.md).
// Compiled once per array size (TE_MODEL, TE_ROWS, TE_COLS).
#include TE_MODEL_HEADER

#include "cosim/engine_driver.h"

#include <verilated.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

namespace {

using tessera::cosim::set_field;

struct Result {
  std::uint64_t cycles = 0;
  std::uint64_t macs = 0;
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // this process, all threads
};

double cpu_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

Result run(double min_seconds) {
  constexpr int kRows = TE_ROWS;
  constexpr int kCols = TE_COLS;
  constexpr int kN = 512;
  auto ctx = std::make_unique<VerilatedContext>();
  auto m = std::make_unique<TE_MODEL>(ctx.get(), "te");

  // A pool of random beats, cycled through so that data change every cycle.
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<std::remove_reference_t<decltype(m->mv_data_i)>> pool(61);
  for (auto& beat : pool)
    for (int r = 0; r < kRows; ++r)
      set_field(beat, 16 * r, 16, tessera::arch::to_bf16(dist(rng)).bits);

  m->clk_i = 0;
  m->rst_ni = 0;
  m->eval();
  m->clk_i = 1;
  m->eval();
  m->clk_i = 0;
  m->rst_ni = 1;
  m->cfg_min_ii_i = 1;
  m->cmd_k_i = kRows;
  m->cmd_m_i = kCols;
  m->cmd_n_i = kN;
  m->cmd_addr_i = 0;
  m->st_valid_i = 1;
  m->mv_valid_i = 1;
  m->ps_ready_i = 1;
  m->cmd_valid_i = 1;

  bool next_is_multiply = false;
  std::size_t beat = 0;
  Result res;
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = cpu_now();
  for (;;) {
    for (int i = 0; i < 256; ++i) {
      m->cmd_op_i = next_is_multiply;
      m->cmd_acc_i = !m->cmd_acc_i;
      m->st_data_i = pool[beat % pool.size()];
      m->mv_data_i = pool[(beat + 7) % pool.size()];
      ++beat;
      m->clk_i = 0;
      m->eval();
      if (m->cmd_ready_o) next_is_multiply = !next_is_multiply;
      m->clk_i = 1;
      m->eval();
      ++res.cycles;
    }
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (res.seconds >= min_seconds) break;
  }
  res.cpu_seconds = cpu_now() - cpu_start;
  res.macs = m->perf_mac_o;
  m->final();
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  const Result r = run(seconds);
  // Wall-clock rates are what a user sees; CPU-time rates are steadier on a
  // shared machine (for a threaded model they add up the threads).
  std::printf("| %d x %d | %.0f | %.3g | %.0f | %.2f |\n", TE_ROWS, TE_COLS, r.cycles / r.seconds,
              r.macs / r.seconds, r.cycles / r.cpu_seconds,
              static_cast<double>(r.macs) / (static_cast<double>(r.cycles) * TE_ROWS * TE_COLS));
  return 0;
}
