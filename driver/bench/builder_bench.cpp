// What building a program costs (Google Benchmark): library kernels built
// through KernelBuilder on neuroncore-v2, timing-only devices, nothing
// simulated. Per builder op (an engine instruction, DMA triggers and
// semaphore instructions included, or a DMA descriptor), counters give
//   cpu/op    CPU time of KernelInstance::build(), per op;
//   peak_B/op the most heap bytes build() held at once (the builder's state
//             and the Program it returns), per op;
//   prog_B/op what the returned Program alone holds, per op;
//   allocs/op operator new calls in build(), per op.
// docs/performance.md lists the figures. Usage:
//   build/driver/bench/builder_bench [--benchmark_filter=REGEX] [--benchmark_repetitions=N]
#include "heap_counter.h"

#include "common/kernel.h"
#include "tessera/device.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <systemc>  // declares sc_main with C linkage
#include <vector>

namespace {

using tessera::bench::HeapCounter;

struct BuildCase {
  std::string kernel, variant, shape;
};

// The largest runs of scripts/bench-sim, and the GEMM of issue 20's figures first.
const std::vector<BuildCase> kCases = {
    {"gemm", "blocked_mnk", "M=4096,N=8192,K=8192"},
    {"gemm", "fully_optimized", "M=4096,N=8192,K=8192"},
    {"gemm", "blocked_mnk", "M=1024,N=2048,K=2048"},
    {"attention", "flash", "S=4096,D=64,H=8"},
    {"elementwise", "gelu", "R=8192,C=8192"},
};

std::size_t ops_of(const tessera::Program& p) {
  std::size_t n = p.instruction_count();
  for (const auto& [queue, ring] : p.rings) n += ring.size();
  return n;
}

void build_program(benchmark::State& state, const BuildCase& c) {
  tessera::DeviceOptions options;
  options.config = "neuroncore-v2";
  options.no_data = true;
  tessera::Device dev(options);
  const tessera::kernels::KernelSpec* spec = tessera::kernels::find_kernel(c.kernel);
  if (!spec) {
    state.SkipWithError(fmt::format("no kernel '{}'", c.kernel).c_str());
    return;
  }
  // Resolved as `tessera run` resolves them: the variant's tunable
  // parameters at their defaults (or the tuning database's) for this shape.
  tessera::kernels::KernelRequest request;
  request.kernel = c.kernel;
  request.variant = c.variant;
  request.shape = tessera::kernels::parse_shape(c.shape);
  const tessera::kernels::KernelArgs args = tessera::kernels::resolve(*spec, dev.config(), request);
  auto instance = spec->make(dev, args);
  std::size_t ops = 0, instructions = 0;
  std::int64_t peak = 0, program_bytes = 0;
  std::uint64_t allocations = 0;
  for (auto _ : state) {
    const std::int64_t before = HeapCounter::live();
    const std::uint64_t allocations_before = HeapCounter::allocations();
    HeapCounter::reset_peak();
    tessera::Program p = instance->build();
    allocations = HeapCounter::allocations() - allocations_before;
    peak = HeapCounter::peak() - before;
    program_bytes = HeapCounter::live() - before;
    ops = ops_of(p);
    instructions = p.instruction_count();
    benchmark::DoNotOptimize(p);
    state.PauseTiming();  // the Program's destruction is not the build's
    { tessera::Program gone = std::move(p); }
    state.ResumeTiming();
  }
  const auto per_op = [&](double v) { return v / static_cast<double>(ops); };
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["instructions"] = static_cast<double>(instructions);
  state.counters["descriptors"] = static_cast<double>(ops - instructions);
  state.counters["cpu/op"] =
      benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsIterationInvariantRate |
                                                       benchmark::Counter::kInvert);
  state.counters["peak_B/op"] = per_op(static_cast<double>(peak));
  state.counters["prog_B/op"] = per_op(static_cast<double>(program_bytes));
  state.counters["allocs/op"] = per_op(static_cast<double>(allocations));
}

}  // namespace

// SystemC's library has a main() that calls sc_main; ours keeps its banner
// out of the benchmark's output.
int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int argc, char** argv) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 0);
  for (const BuildCase& c : kCases)
    benchmark::RegisterBenchmark(fmt::format("build/{}/{}/{}", c.kernel, c.variant, c.shape).c_str(), build_program, c)
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
