// Speed of the tensor datapaths alone (no SystemC core around them): a
// matmul-heavy stream of LoadStationary [Rows, Cols] + MultiplyMoving
// [Rows, N = moving_max_free] pairs, issued as the engine issues them (each
// command the cycle after the previous was accepted), results delivered and
// dropped. Prints one markdown row per (config, datapath, data) with
// simulated tensor cycles per wall second.
// Usage: tensor_datapath_bench CONFIG_DIR CONFIG RTL_PAIRS FAST_PAIRS
#include "cosim/rtl_tensor_datapath.h"

#include "arch/config.h"

#include <fmt/format.h>
#include <systemc>

#include <chrono>
#include <cstdlib>
#include <random>

using namespace tessera;

namespace {

struct Result {
  std::uint64_t cycles = 0;
  double seconds = 0;
};

Result run(engines::TensorDatapath& dp, const arch::HwConfig& cfg, long pairs, bool data) {
  const auto rows = static_cast<std::size_t>(cfg.tensor.rows), cols = static_cast<std::size_t>(cfg.tensor.cols);
  const auto n = static_cast<std::size_t>(cfg.tensor.moving_max_free);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  auto tile = [&](std::size_t r, std::size_t c) {
    arch::Bf16Matrix m;
    m.rows = r;
    m.cols = c;
    if (data) {
      m.data.resize(r * c);
      for (auto& v : m.data) v = arch::to_bf16(dist(rng));
    }
    return m;
  };
  // A few distinct tiles, reused: the cost measured is the datapath's, not the generator's.
  const arch::Bf16Matrix w[2] = {tile(rows, cols), tile(rows, cols)};
  const arch::Bf16Matrix x[2] = {tile(rows, n), tile(rows, n)};
  std::uint64_t delivered = 0;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t next = 0;
  for (long i = 0; i < pairs; ++i) {
    engines::TensorCommand load{engines::TensorCommand::Op::LoadStationary, w[i % 2], arch::PsumMode::Overwrite, {}};
    next = dp.issue(load, next).accepted + 1;
    engines::TensorCommand mul{engines::TensorCommand::Op::MultiplyMoving, x[i % 2],
                               i % 4 == 0 ? arch::PsumMode::Overwrite : arch::PsumMode::Accumulate, {}};
    if (data) mul.write_psum = [&delivered](const arch::Fp32Matrix& out) { delivered += out.data.size(); };
    next = dp.issue(mul, next).accepted + 1;
  }
  Result r;
  r.cycles = dp.flush();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (data && delivered != static_cast<std::uint64_t>(pairs) * cols * n) std::abort();
  return r;
}

std::string grouped(double v) {
  std::string s = fmt::format("{:.0f}", v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

}  // namespace

int sc_main(int argc, char** argv) {
  if (argc != 5) {
    fmt::print(stderr, "usage: {} CONFIG_DIR CONFIG RTL_PAIRS FAST_PAIRS\n", argv[0]);
    return 2;
  }
  setenv("TESSERA_CONFIG_DIR", argv[1], 1);
  const arch::HwConfig cfg = arch::load_config(argv[2]).hw;
  const long rtl_pairs = std::atol(argv[3]), fast_pairs = std::atol(argv[4]);
  const auto rows = static_cast<std::uint32_t>(cfg.tensor.rows), cols = static_cast<std::uint32_t>(cfg.tensor.cols);
  const arch::TensorTimingParams timing = arch::tensor_timing_params(cfg.tensor);
  const cosim::SamplingPolicy policy{cfg.simulation.sample_every, cfg.simulation.sample_rtl_budget_percent};
  for (bool data : {true, false}) {
    for (const char* kind : {"rtl", "sampled", "tlm"}) {
      std::unique_ptr<engines::TensorDatapath> dp;
      long pairs = fast_pairs;
      if (std::string(kind) == "rtl") {
        dp = cosim::make_rtl_tensor_datapath(timing);
        pairs = rtl_pairs;
      } else if (std::string(kind) == "sampled") {
        dp = cosim::make_sampled_tensor_datapath(engines::make_fast_tensor_datapath(timing),
                                                 cosim::make_rtl_tensor_datapath(timing), timing, policy);
      } else {
        dp = engines::make_fast_tensor_datapath(timing);
      }
      const Result r = run(*dp, cfg, pairs, data);
      fmt::print("| {} | {}x{} | {} | {} | {} | {} | {:.3f} | {} |\n", cfg.name, rows, cols, kind,
                 data ? "bits" : "timing only", pairs, grouped(static_cast<double>(r.cycles)), r.seconds,
                 grouped(static_cast<double>(r.cycles) / r.seconds));
      std::fflush(stdout);
    }
  }
  return 0;
}
