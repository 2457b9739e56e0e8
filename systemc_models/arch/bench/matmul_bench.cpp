// Prints how fast arch::matmul runs on this machine: multiply-adds per CPU
// second on full neuroncore-v2 tiles (K = 128, M = 128, N = 512, random
// normal bf16), for arch::matmul (the vector path) and for the scalar
// reference it must equal (dot_rows per element), and checks that the two
// agree bit for bit on the data timed. Usage: arch_matmul_bench [SECONDS]
#include "arch/numerics.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>

namespace {

using namespace tessera::arch;

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

Bf16Matrix random_tile(std::size_t r, std::size_t c, std::mt19937& rng) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  Bf16Matrix m(r, c);
  for (auto& v : m.data) v = to_bf16(g(rng));
  return m;
}

void reference(const Bf16Matrix& st, const Bf16Matrix& mv, Fp32Matrix& dst) {
  for (std::size_t i = 0; i < st.cols; ++i)
    for (std::size_t j = 0; j < mv.cols; ++j) dst.at(i, j) = dot_rows(&st.data[i], st.cols, &mv.data[j], mv.cols, st.rows);
}

}  // namespace

int main(int argc, char** argv) {
  const double budget = argc > 1 ? std::atof(argv[1]) : 1.0;
  constexpr std::size_t k = 128, m = 128, n = 512;
  std::mt19937 rng(1);
  const Bf16Matrix st = random_tile(k, m, rng), mv = random_tile(k, n, rng);
  Fp32Matrix fast(m, n), slow(m, n);
  const double macs = static_cast<double>(k * m * n);

  long reps = 0;
  const double t0 = cpu_seconds();
  while (cpu_seconds() - t0 < budget) {
    matmul(st, mv, PsumMode::Overwrite, fast);
    ++reps;
  }
  const double fast_rate = macs * static_cast<double>(reps) / (cpu_seconds() - t0) / 1e9;

  long ref_reps = 0;
  const double t1 = cpu_seconds();
  while (cpu_seconds() - t1 < budget / 4) {
    reference(st, mv, slow);
    ++ref_reps;
  }
  const double slow_rate = macs * static_cast<double>(ref_reps) / (cpu_seconds() - t1) / 1e9;

  std::size_t differ = 0;
  for (std::size_t i = 0; i < fast.data.size(); ++i) differ += fp32_bits(fast.data[i]) != fp32_bits(slow.data[i]);
  std::printf("arch::matmul %zux%zux%zu bf16 tiles: %.2f G multiply-adds per CPU second (%ld tiles); "
              "scalar reference %.2f G (%ld tiles); %.1fx; %zu of %zu results differ\n",
              k, m, n, fast_rate, reps, slow_rate, ref_reps, fast_rate / slow_rate, differ, fast.data.size());
  return differ == 0 ? 0 : 1;
}
