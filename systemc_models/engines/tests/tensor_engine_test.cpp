// The tensor engine inside the core (tlm fidelity): matmul tiles from SBUF
// into PSUM, bit for bit against the numerics reference, with the timing of
// the fast model and the ordering a semaphore after a matmul must give.
#include "core/neuron_core.h"

#include "arch/numerics.h"
#include "arch/tensor_timing.h"
#include "testing/shipped_config.h"
#include "testing/stream.h"
#include "testing/tensor_programs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace tessera::engines {
namespace {

using arch::Bf16Matrix;
using arch::DType;
using arch::Fp32Matrix;
using arch::Memory;
using arch::Opcode;
using core::NeuronCore;
using test_support::Stream;
using test_support::load_stationary;
using test_support::multiply;
using test_support::random_bf16;

const arch::HwConfig& tiny() { return test_support::shipped_config("tiny"); }

void put_tile(NeuronCore& core, const Bf16Matrix& m, std::uint32_t offset) {
  for (std::size_t p = 0; p < m.rows; ++p)
    std::memcpy(core.sbuf().at(p, offset, m.cols * 2), &m.data[p * m.cols], m.cols * 2);
}

Fp32Matrix psum_tile(NeuronCore& core, std::size_t rows, std::size_t cols, std::uint32_t offset) {
  Fp32Matrix m(rows, cols);
  for (std::size_t p = 0; p < rows; ++p) std::memcpy(&m.data[p * cols], core.psum().at(p, offset, cols * 4), cols * 4);
  return m;
}

TEST(TensorEngine, AccumulatedMatmulsMatchTheReferenceBitForBit) {
  std::mt19937 rng(11);
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  const auto w0 = random_bf16(8, 8, rng), w1 = random_bf16(8, 8, rng);
  const auto x0 = random_bf16(8, 64, rng), x1 = random_bf16(8, 64, rng);
  put_tile(core, w0, 0);
  put_tile(core, w1, 16);
  put_tile(core, x0, 32);
  put_tile(core, x1, 32 + 128);
  Stream te(arch::Engine::Tensor);
  te.add(load_stationary(8, 8, 0)).add(multiply(8, 8, 64, 32, 0, false));
  te.add(load_stationary(8, 8, 16)).add(multiply(8, 8, 64, 32 + 128, 0, true));
  te.incr(0).end();
  core.load_program(arch::Engine::Tensor, te.bytes);
  const auto r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;

  Fp32Matrix expect(8, 64);
  arch::matmul(w0, x0, arch::PsumMode::Overwrite, expect);
  arch::matmul(w1, x1, arch::PsumMode::Accumulate, expect);
  const auto got = psum_tile(core, 8, 64, 0);
  for (std::size_t i = 0; i < expect.data.size(); ++i)
    ASSERT_EQ(arch::fp32_bits(got.data[i]), arch::fp32_bits(expect.data[i])) << "element " << i;
  EXPECT_EQ(stats.value("core.tensor.macs"), 2 * 8 * 8 * 64);
}

TEST(TensorEngine, SemaphoreAfterAMatmulWaitsForItsResults) {
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream te(arch::Engine::Tensor);
  te.add(load_stationary(8, 8, 0)).add(multiply(8, 8, 64, 32, 0, false)).incr(0).end();
  core.load_program(arch::Engine::Tensor, te.bytes);
  const auto r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  // The closed form of docs/tensor-engine.md for one (LoadStationary[8],
  // MultiplyMoving[64]) pair: ceil(M / W) + N + Rows + Cols cycles (W = 4 on
  // tiny), 1 ns each at 1 GHz, counted from the cycle that accepts the load.
  const std::int64_t cycles = arch::back_to_back_cycles(arch::tensor_timing_params(tiny().tensor), 8, 64, 1);
  EXPECT_EQ(cycles, 2 + 64 + 8 + 8);
  const auto& te_engine = core.engine(arch::Engine::Tensor);
  EXPECT_EQ(r.end_time - te_engine.first_issue_time(), sc_core::sc_time(static_cast<double>(cycles), sc_core::SC_NS));
  // Busy from the load's acceptance to the last result, once; the array
  // took in moving columns for 64 of those cycles.
  EXPECT_EQ(stats.value("core.tensor.busy_ns"), static_cast<double>(cycles));
  EXPECT_EQ(stats.value("core.tensor.multiplying_ns"), 64.0);
}

TEST(TensorEngine, BusyCountsOverlappedInstructionsOnce) {
  // Four pairs back to back: every load after the first is hidden under the
  // multiply before it, so busy is the closed form's span, not the sum of
  // the instructions' own times.
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  Stream te(arch::Engine::Tensor);
  for (int i = 0; i < 4; ++i) te.add(load_stationary(8, 8, 0)).add(multiply(8, 8, 32, 32, 0, i > 0));
  te.end();
  core.load_program(arch::Engine::Tensor, te.bytes);
  const auto r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  const double span = static_cast<double>(arch::back_to_back_cycles(arch::tensor_timing_params(tiny().tensor), 8, 32, 4));
  EXPECT_EQ(span, 2 + 3 * 32 + 32 + 8 + 8);
  EXPECT_EQ(stats.value("core.tensor.busy_ns"), span);
  EXPECT_EQ(stats.value("core.tensor.multiplying_ns"), 4 * 32.0);
}

TEST(TensorEngine, TransposeThroughTheArray) {
  std::mt19937 rng(5);
  trace::Stats stats;
  NeuronCore core("core", tiny(), stats);
  const auto a = random_bf16(8, 6, rng);
  put_tile(core, a, 0);
  Stream te(arch::Engine::Tensor);
  arch::Instruction t;
  t.opcode = Opcode::Transpose;
  t.a = arch::tile(Memory::Sbuf, DType::Bf16, 0, 8, 0, 6);
  t.dst = arch::tile(Memory::Psum, DType::Fp32, 0, 6, 0, 8);
  te.add(t).end();
  core.load_program(arch::Engine::Tensor, te.bytes);
  const auto r = core.run();
  ASSERT_TRUE(r.ok()) << r.message;
  const auto got = psum_tile(core, 6, 8, 0);
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 8; ++j)
      EXPECT_EQ(got.at(i, j), arch::flush_subnormal(arch::to_float(a.at(j, i))));
}

}  // namespace
}  // namespace tessera::engines
