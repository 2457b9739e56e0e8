// The Verilated tensor engine against the numerics reference (bit for bit) and
// the timing schedule (cycle for cycle). Compiled once per array size: TE_MODEL
// names the Verilated class, TE_ROWS x TE_COLS its size, TE_N_LIMIT the moving
// free size limit to test, TE_FULL whether to run the whole suite (the 32 x 32
// build runs a subset), TE_CONFIG (if defined) the shipped config of this size.
#include "cosim/engine_driver.h"

#include "arch/config.h"
#include "arch/numerics.h"
#include "arch/tensor_timing.h"

#include TE_MODEL_HEADER

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::rtl::tensor_engine {
namespace {

using namespace ::tessera::cosim;
using arch::Bf16;
using arch::Bf16Matrix;
using Driver = EngineDriver<TE_MODEL>;

constexpr int kRows = TE_ROWS;
constexpr int kCols = TE_COLS;
constexpr int kNLimit = TE_N_LIMIT;
// The shipped generations' load path: as wide as the build allows.
constexpr int kLoadCols = std::min(kLoadColumns, kCols);

arch::TensorTimingParams timing(int ii, int w = kLoadCols) { return {kRows, kCols, ii, w}; }

// Load path widths to try: one column per beat, an odd width that leaves a
// partial last beat, and the widest.
std::vector<int> load_widths() {
  std::vector<int> w{1};
  if (kLoadCols >= 3) w.push_back(3);
  if (kLoadCols > 1) w.push_back(kLoadCols);
  return w;
}

// A driver with the widest load path (what the shipped configs use).
struct WideDriver : Driver {
  explicit WideDriver(const std::string& name, int w = kLoadCols) : Driver(kRows, kCols, name) { set_load_columns(w); }
};

std::string test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name() + "_" +
         std::to_string(kRows) + "x" + std::to_string(kCols);
}

Bf16Matrix random_matrix(std::size_t r, std::size_t c, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  Bf16Matrix m(r, c);
  for (auto& v : m.data) v = arch::to_bf16(dist(rng));
  return m;
}

// Values that exercise every special path of the product and the adder.
[[maybe_unused]] Bf16Matrix special_matrix(std::size_t r, std::size_t c, std::mt19937& rng) {
  static const std::uint16_t pool[] = {
      0x0000, 0x8000,                  // zeros
      0x7F80, 0xFF80,                  // infinities
      0x7FC0, 0xFFC1, 0x7F81,          // NaNs (quiet, negative, signalling)
      0x0001, 0x807F, 0x0040,          // subnormals
      0x0080, 0x8080,                  // smallest normals
      0x7F7F, 0xFF7F, 0x7F00,          // largest finite, 2^127
      0x1F80, 0x2000, 0x9F80,          // 2^-64, 2^-63: products underflow
      0x3F80, 0xBF80, 0x4000, 0x3F81,  // ordinary values
  };
  std::uniform_int_distribution<std::size_t> pick(0, std::size(pool) - 1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::bernoulli_distribution special(0.5);
  Bf16Matrix m(r, c);
  for (auto& v : m.data) v = special(rng) ? Bf16::from_bits(pool[pick(rng)]) : arch::to_bf16(dist(rng));
  return m;
}

// Expected PSUM contents, updated with the reference matmul as instructions
// are queued, and compared with the driver's PSUM cell by cell.
class PsumModel {
 public:
  explicit PsumModel(Driver& d, std::mt19937& rng, int depth = 1024) : depth_(depth) {
    std::uniform_int_distribution<std::uint32_t> bits;
    cells_.resize(static_cast<std::size_t>(kCols) * depth_);
    for (int p = 0; p < kCols; ++p)
      for (int a = 0; a < depth_; ++a) {
        // Finite random starting values, so overwrite and accumulate differ.
        const std::uint32_t v = arch::fp32_bits(std::normal_distribution<float>(0, 4)(rng));
        (void)bits;
        cells_[p * depth_ + a] = v;
        d.set_psum(p, a, v);
      }
  }

  void matmul(const Bf16Matrix& st, const Bf16Matrix& mv, int addr, bool acc) {
    arch::Fp32Matrix dst(st.cols, mv.cols);
    for (std::size_t m = 0; m < st.cols; ++m)
      for (std::size_t n = 0; n < mv.cols; ++n)
        dst.at(m, n) = arch::fp32_from_bits(cells_[m * depth_ + addr + n]);
    arch::matmul(st, mv, acc ? arch::PsumMode::Accumulate : arch::PsumMode::Overwrite, dst);
    for (std::size_t m = 0; m < st.cols; ++m)
      for (std::size_t n = 0; n < mv.cols; ++n)
        cells_[m * depth_ + addr + n] = arch::fp32_bits(dst.at(m, n));
  }

  // Every cell, including those no instruction should have touched.
  ::testing::AssertionResult matches(const Driver& d) const {
    int bad = 0;
    std::ostringstream msg;
    for (int p = 0; p < kCols; ++p)
      for (int a = 0; a < depth_; ++a) {
        const std::uint32_t want = cells_[p * depth_ + a];
        const std::uint32_t got = d.psum(p, a);
        if (want == got) continue;
        if (++bad <= 8) {
          char line[96];
          std::snprintf(line, sizeof line, "\n  psum[%d][%d]: rtl 0x%08x, reference 0x%08x", p, a, got,
                        want);
          msg << line;
        }
      }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << bad << " PSUM cells differ" << msg.str();
  }

 private:
  int depth_;
  std::vector<std::uint32_t> cells_;
};

// One LoadStationary + MultiplyMoving of the given shape, queued on both.
void queue_matmul(Driver& d, PsumModel& ref, const Bf16Matrix& st, const Bf16Matrix& mv, int addr,
                  bool acc) {
  d.load_stationary(st);
  d.multiply_moving(mv, addr, acc);
  ref.matmul(st, mv, addr, acc);
}

TEST(TensorEngine, RandomFullTileMatchesReference) {
  std::mt19937 rng(11);
  WideDriver d(test_name());
  PsumModel ref(d, rng);
  for (int i = 0; i < 4; ++i) {
    const int n = std::uniform_int_distribution<int>(1, kNLimit)(rng);
    queue_matmul(d, ref, random_matrix(kRows, kCols, rng), random_matrix(kRows, n, rng), 0, false);
    d.run_until_idle();
    ASSERT_TRUE(ref.matches(d)) << "matmul " << i << " n " << n;
  }
}

TEST(TensorEngine, MovingFreeSizeAtTheLimit) {
  std::mt19937 rng(12);
  WideDriver d(test_name());
  PsumModel ref(d, rng);
  queue_matmul(d, ref, random_matrix(kRows, kCols, rng), random_matrix(kRows, kNLimit, rng), 3, false);
  queue_matmul(d, ref, random_matrix(kRows, kCols, rng), random_matrix(kRows, kNLimit, rng), 3, true);
  d.run_until_idle();
  EXPECT_TRUE(ref.matches(d));
}

TEST(TensorEngine, BackToBackWithOverlappedLoadsMatchesScheduleAndReference) {
  // Overlapped LoadStationary: each load streams while the previous multiply
  // still injects, and writes its buffer behind the wave of the one before;
  // six pairs, so that the fifth and sixth loads reuse the first buffers.
  std::mt19937 rng(13);
  const int ii = 4;
  constexpr int kPairs = 6;
  for (int w : load_widths())
  for (int n : {1, 2, kCols / 2 + 1, kCols + kRows, kNLimit}) {
    for (int m : {1, kCols}) {
      WideDriver d(test_name() + "_n" + std::to_string(n) + "_m" + std::to_string(m) + "_w" + std::to_string(w), w);
      d.set_min_ii(ii);
      PsumModel ref(d, rng);
      std::vector<arch::TensorInstr> prog;
      for (int i = 0; i < kPairs; ++i) {
        const int k = std::uniform_int_distribution<int>(1, kRows)(rng);
        queue_matmul(d, ref, random_matrix(k, m, rng), random_matrix(k, n, rng), (i % 2) * n, i >= 2);
        prog.push_back({arch::TensorOp::LoadStationary, m, 0});
        prog.push_back({arch::TensorOp::MultiplyMoving, 0, n});
      }
      d.run_until_idle();
      EXPECT_TRUE(ref.matches(d)) << "n " << n << " m " << m << " w " << w;
      const auto s = arch::schedule(timing(ii, w), prog);
      const auto t0 = d.accept_edges.front();
      ASSERT_EQ(d.write_edges.size(), static_cast<std::size_t>(kPairs * n));
      EXPECT_EQ(d.write_edges.back() - t0, static_cast<std::uint64_t>(s.end)) << "n " << n << " m " << m << " w " << w;
      EXPECT_EQ(s.end, arch::back_to_back_cycles(timing(ii, w), m, n, kPairs));
      for (std::size_t i = 0; i < prog.size(); ++i)
        EXPECT_EQ(d.accept_edges[i] - t0, static_cast<std::uint64_t>(s.accept[i])) << "instr " << i << " w " << w;
      EXPECT_EQ(d.model().perf_busy_o, static_cast<std::uint64_t>(s.busy));
    }
  }
}

TEST(TensorEngine, WideLoadsWaitForTheMultiplyThatUsedTheirBuffer) {
  // A multiply of one column, three one-column loads, then a full load into
  // the multiply's buffer (four buffers in turn): a beat several columns wide
  // would overtake that multiply's moving wave, still crossing the array,
  // unless the load waits. The last multiply's results prove it read its own
  // weights; the schedule must show the wait where there is one.
  std::mt19937 rng(17);
  for (int w : load_widths()) {
    WideDriver d(test_name() + "_w" + std::to_string(w), w);
    d.set_min_ii(1);
    PsumModel ref(d, rng);
    queue_matmul(d, ref, random_matrix(kRows, kCols, rng), random_matrix(kRows, 1, rng), 0, false);
    for (int i = 0; i < 3; ++i) d.load_stationary(random_matrix(kRows, 1, rng));
    queue_matmul(d, ref, random_matrix(kRows, kCols, rng), random_matrix(kRows, 2, rng), 4, true);
    const std::vector<arch::TensorInstr> prog = {
        {arch::TensorOp::LoadStationary, kCols, 0}, {arch::TensorOp::MultiplyMoving, 0, 1},
        {arch::TensorOp::LoadStationary, 1, 0},     {arch::TensorOp::LoadStationary, 1, 0},
        {arch::TensorOp::LoadStationary, 1, 0},     {arch::TensorOp::LoadStationary, kCols, 0},
        {arch::TensorOp::MultiplyMoving, 0, 2}};
    d.run_until_idle();
    EXPECT_TRUE(ref.matches(d)) << "w " << w;
    const auto s = arch::schedule(timing(1, w), prog);
    const auto t0 = d.accept_edges.front();
    for (std::size_t i = 0; i < prog.size(); ++i)
      EXPECT_EQ(d.accept_edges[i] - t0, static_cast<std::uint64_t>(s.accept[i])) << "instr " << i << " w " << w;
    // The multiply injected at edge accept[1] + 1; the full load needs
    // Cols - 1 - ceil(Cols / W) edges after it, more than the three small
    // loads take (three edges) when that is above 3.
    const int gap = kCols - 1 - (kCols + w - 1) / w;
    if (gap > 3) EXPECT_EQ(s.accept[5], s.accept[1] + 1 + gap) << "w " << w;
    else EXPECT_EQ(s.accept[5], s.accept[4] + 1) << "w " << w;
  }
}

TEST(TensorEngine, BackpressureAndStarvationLoseNothing) {
  std::mt19937 rng(14);
  WideDriver d(test_name());
  d.set_noise({0.4, 0.7, 0.8}, 99);
  PsumModel ref(d, rng);
  int addr = 0;
  for (int i = 0; i < 6; ++i) {
    const int k = std::uniform_int_distribution<int>(1, kRows)(rng);
    const int m = std::uniform_int_distribution<int>(1, kCols)(rng);
    const int n = std::uniform_int_distribution<int>(1, std::min(kNLimit, 3 * kCols))(rng);
    queue_matmul(d, ref, random_matrix(k, m, rng), random_matrix(k, n, rng), addr, i % 3 != 0);
    addr = (addr + n / 2) % 256;
  }
  d.run_until_idle();
  EXPECT_TRUE(ref.matches(d));
  EXPECT_GT(d.model().perf_stall_o, 0u);
}

#ifdef TE_CONFIG
// The shipped generation built at this size: its array, moving limit and
// initiation interval drive the engine, results and timing as specified.
TEST(TensorEngine, ShippedConfigRunsAtItsLimitsAndTiming) {
  const arch::ResolvedConfig cfg = arch::load_config(TE_CONFIG);
  const arch::TensorEngineConfig& t = cfg.hw.tensor;
  ASSERT_EQ(t.rows, kRows);
  ASSERT_EQ(t.cols, kCols);
  ASSERT_EQ(t.moving_max_free, kNLimit);
  EXPECT_TRUE(cfg.derived.rtl_build_available);
  const int ii = static_cast<int>(t.min_initiation_interval_cycles);
  const int m = static_cast<int>(t.stationary_max_free);
  const arch::TensorTimingParams p = arch::tensor_timing_params(t);
  std::mt19937 rng(31);
  for (int n : {1, static_cast<int>(t.moving_max_free) / 4, static_cast<int>(t.moving_max_free)}) {
    Driver d(kRows, kCols, test_name() + "_n" + std::to_string(n));
    d.set_min_ii(ii);
    d.set_load_columns(static_cast<int>(t.stationary_columns_per_cycle));
    PsumModel ref(d, rng);
    for (int i = 0; i < 3; ++i)
      queue_matmul(d, ref, random_matrix(kRows, m, rng), random_matrix(kRows, n, rng), 0, i > 0);
    d.run_until_idle();
    EXPECT_TRUE(ref.matches(d)) << "n " << n;
    EXPECT_EQ(d.write_edges.back() - d.accept_edges.front(),
              static_cast<std::uint64_t>(arch::back_to_back_cycles(p, m, n, 3)))
        << "n " << n;
  }
}
#endif

#if TE_FULL

TEST(TensorEngine, ShapeEdgesMatchReference) {
  std::mt19937 rng(21);
  for (int k : {1, std::max(1, kRows / 2), kRows - 1, kRows})
    for (int m : {1, std::max(1, kCols / 2), kCols - 1, kCols})
      for (int n : {1, 2, kNLimit}) {
        if (k < 1 || m < 1) continue;
        WideDriver d(test_name());
        PsumModel ref(d, rng, kNLimit + 8);
        queue_matmul(d, ref, random_matrix(k, m, rng), random_matrix(k, n, rng), 5, false);
        d.run_until_idle();
        ASSERT_TRUE(ref.matches(d)) << "k " << k << " m " << m << " n " << n;
        EXPECT_EQ(d.model().perf_mac_o, static_cast<std::uint64_t>(k) * m * n);
      }
}

TEST(TensorEngine, UnusedRowsNeverReachTheSum) {
  // Rows at and below K carry infinities and NaNs in both operands; a row that
  // leaked into the column sum would turn it into inf or NaN.
  std::mt19937 rng(22);
  WideDriver d(test_name());
  PsumModel ref(d, rng);
  const int k = std::max(1, kRows / 2);
  d.load_stationary(random_matrix(k, kCols, rng), 0x7F80);
  const Bf16Matrix st = random_matrix(k, kCols, rng);
  const Bf16Matrix mv = random_matrix(k, 16, rng);
  d.load_stationary(st, 0xFF80);
  d.multiply_moving(mv, 0, false, 0x7FC0);
  ref.matmul(st, mv, 0, false);
  d.run_until_idle();
  EXPECT_TRUE(ref.matches(d));
}

TEST(TensorEngine, AccumulateChainIntoPsum) {
  std::mt19937 rng(23);
  WideDriver d(test_name());
  PsumModel ref(d, rng);
  const int n = std::min(kNLimit, 24);
  for (int i = 0; i < 8; ++i) {
    const int k = std::uniform_int_distribution<int>(1, kRows)(rng);
    queue_matmul(d, ref, random_matrix(k, kCols, rng), random_matrix(k, n, rng, 8.0f), 40, i != 0);
  }
  d.run_until_idle();
  EXPECT_TRUE(ref.matches(d));
}

TEST(TensorEngine, SpecialValuesMatchReference) {
  std::mt19937 rng(24);
  for (int trial = 0; trial < 6; ++trial) {
    WideDriver d(test_name());
    PsumModel ref(d, rng);
    const int k = std::uniform_int_distribution<int>(1, kRows)(rng);
    queue_matmul(d, ref, special_matrix(k, kCols, rng), special_matrix(k, 32, rng), 0, trial % 2);
    d.run_until_idle();
    ASSERT_TRUE(ref.matches(d)) << "trial " << trial;
  }
}

TEST(TensorEngine, OverflowUnderflowAndCancellation) {
  std::mt19937 rng(25);
  WideDriver d(test_name());
  PsumModel ref(d, rng);
  const Bf16 big = Bf16::from_bits(0x7F00);   // 2^127: big x 2 overflows, big + big overflows
  const Bf16 tiny = Bf16::from_bits(0x1F80);  // 2^-64: tiny x tiny underflows
  Bf16Matrix st(kRows, kCols), mv(kRows, 4);
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < kCols; ++c) st.at(r, c) = (c % 2) ? tiny : big;
    mv.at(r, 0) = arch::to_bf16(2.0f);                        // overflow in the product
    mv.at(r, 1) = arch::to_bf16(r % 2 ? -1.0f : 1.0f);        // cancels to +0 or big
    mv.at(r, 2) = tiny;                                       // underflow to zero
    mv.at(r, 3) = arch::to_bf16(r == 0 ? 1.0f : 0.5f);        // sums past the largest finite
  }
  queue_matmul(d, ref, st, mv, 0, false);
  d.run_until_idle();
  EXPECT_TRUE(ref.matches(d));
}

TEST(TensorEngine, SingleInstructionTimingMatchesScheduleForManyShapes) {
  std::mt19937 rng(26);
  WideDriver d(test_name());
  for (int trial = 0; trial < 24; ++trial) {
    const int m = std::uniform_int_distribution<int>(1, kCols)(rng);
    const int n = std::uniform_int_distribution<int>(1, kNLimit)(rng);
    const int k = std::uniform_int_distribution<int>(1, kRows)(rng);
    d.accept_edges.clear();
    d.write_edges.clear();
    d.command({Op::LoadStationary, k, m, 0, false, 0});
    d.command({Op::MultiplyMoving, k, 0, n, false, 0});
    d.run_until_idle();
    const auto s = arch::schedule(timing(1), {{arch::TensorOp::LoadStationary, m, 0},
                                              {arch::TensorOp::MultiplyMoving, 0, n}});
    const int beats = (m + kLoadCols - 1) / kLoadCols;
    const auto t0 = d.accept_edges.front();
    EXPECT_EQ(d.accept_edges[1] - t0, static_cast<std::uint64_t>(s.accept[1]));
    EXPECT_EQ(s.accept[1], beats);
    EXPECT_EQ(d.write_edges.back() - t0, static_cast<std::uint64_t>(beats + n + kRows + kCols))
        << "m " << m << " n " << n;
    EXPECT_EQ(s.end, beats + n + kRows + kCols);
    // The first write comes Rows + Cols edges after the first injection.
    EXPECT_EQ(d.write_edges.front() - t0, static_cast<std::uint64_t>(beats + 1 + kRows + kCols));
  }
}

TEST(TensorEngine, RandomProgramsMatchSchedule) {
  // Random mixes, including two loads in a row (the second waits for the
  // buffer its predecessor-but-one multiply reads) and runs of multiplies
  // spaced by the initiation interval.
  std::mt19937 rng(27);
  for (int trial = 0; trial < 12; ++trial) {
    const int ii = std::uniform_int_distribution<int>(1, 2 * kCols)(rng);
    const int w = std::uniform_int_distribution<int>(1, kLoadCols)(rng);
    WideDriver d(test_name(), w);
    d.set_min_ii(ii);
    std::vector<arch::TensorInstr> prog;
    for (int i = 0; i < 12; ++i) {
      const bool load = i == 0 || std::bernoulli_distribution(0.45)(rng);
      if (load) {
        const int m = std::uniform_int_distribution<int>(1, kCols)(rng);
        d.command({Op::LoadStationary, 1, m, 0, false, 0});
        prog.push_back({arch::TensorOp::LoadStationary, m, 0});
      } else {
        const int n = std::uniform_int_distribution<int>(1, 3 * kCols)(rng);
        d.command({Op::MultiplyMoving, kRows, 0, n, false, 0});
        prog.push_back({arch::TensorOp::MultiplyMoving, 0, n});
      }
    }
    d.run_until_idle();
    const auto s = arch::schedule(timing(ii, w), prog);
    const auto t0 = d.accept_edges.front();
    std::size_t writes = 0;
    for (std::size_t i = 0; i < prog.size(); ++i) {
      ASSERT_EQ(d.accept_edges[i] - t0, static_cast<std::uint64_t>(s.accept[i]))
          << "trial " << trial << " instr " << i;
      if (prog[i].op != arch::TensorOp::MultiplyMoving) continue;
      writes += static_cast<std::size_t>(prog[i].n);
      ASSERT_LE(writes, d.write_edges.size());
      EXPECT_EQ(d.write_edges[writes - 1] - t0, static_cast<std::uint64_t>(s.last_write[i]))
          << "trial " << trial << " instr " << i;
    }
    EXPECT_EQ(writes, d.write_edges.size());
    // Busy: each cycle with an instruction in flight, once.
    EXPECT_EQ(d.model().perf_busy_o, static_cast<std::uint64_t>(s.busy)) << "trial " << trial;
  }
}

TEST(TensorEngine, NotBackToBackPairsCostTheirSingleTimes) {
  WideDriver d(test_name());
  for (int m : {1, kCols})
    for (int n : {1, kNLimit}) {
      d.accept_edges.clear();
      d.write_edges.clear();
      d.command({Op::LoadStationary, kRows, m, 0, false, 0});
      d.command({Op::MultiplyMoving, kRows, 0, n, false, 0});
      d.run_until_idle();
      EXPECT_EQ(d.write_edges.back() - d.accept_edges.front(),
                static_cast<std::uint64_t>((m + kLoadCols - 1) / kLoadCols + n + kRows + kCols));
    }
}

TEST(TensorEngine, CountersAndBusy) {
  std::mt19937 rng(28);
  WideDriver d(test_name());
  EXPECT_FALSE(d.model().busy_o);
  PsumModel ref(d, rng);
  queue_matmul(d, ref, random_matrix(kRows, kCols, rng), random_matrix(kRows, 10, rng), 0, false);
  queue_matmul(d, ref, random_matrix(3, 2, rng), random_matrix(3, 7, rng), 20, false);
  d.step();
  EXPECT_TRUE(d.model().busy_o);
  d.run_until_idle();
  EXPECT_TRUE(ref.matches(d));
  EXPECT_EQ(d.model().perf_instr_o, 4u);
  EXPECT_EQ(d.model().perf_mac_o, static_cast<std::uint64_t>(kRows) * kCols * 10 + 3 * 2 * 7);
  EXPECT_EQ(d.model().perf_stall_o, 0u);
  // Busy from the edge after the first accept until the edge of the last write.
  EXPECT_EQ(d.model().perf_busy_o, d.write_edges.back() - d.accept_edges.front());
  for (int i = 0; i < 10; ++i) d.step();
  EXPECT_FALSE(d.model().busy_o);
}

TEST(TensorEngine, RandomProgramsUnderRandomPortNoiseMatchReference) {
  // Many random shapes, modes, addresses, value mixes and port behaviours.
  std::mt19937 rng(30);
  for (int trial = 0; trial < 20; ++trial) {
    Driver d(kRows, kCols, test_name() + "_" + std::to_string(trial));
    std::uniform_real_distribution<double> p(0.2, 1.0);
    d.set_noise({p(rng), p(rng), p(rng)}, static_cast<std::uint32_t>(trial));
    d.set_min_ii(std::uniform_int_distribution<int>(1, kCols)(rng));
    d.set_load_columns(std::uniform_int_distribution<int>(1, kLoadCols)(rng));
    PsumModel ref(d, rng);
    for (int i = 0; i < 8; ++i) {
      const int k = std::uniform_int_distribution<int>(1, kRows)(rng);
      const int m = std::uniform_int_distribution<int>(1, kCols)(rng);
      const int n = std::uniform_int_distribution<int>(1, kNLimit)(rng);
      const int addr = std::uniform_int_distribution<int>(0, 1024 - n)(rng);
      const bool special = std::bernoulli_distribution(0.3)(rng);
      const Bf16Matrix st = special ? special_matrix(k, m, rng) : random_matrix(k, m, rng);
      const Bf16Matrix mv = special ? special_matrix(k, n, rng) : random_matrix(k, n, rng);
      queue_matmul(d, ref, st, mv, addr, std::bernoulli_distribution(0.5)(rng));
    }
    d.run_until_idle();
    ASSERT_TRUE(ref.matches(d)) << "trial " << trial;
  }
}

TEST(TensorEngine, WaveformOnRequest) {
  const auto dir = std::filesystem::temp_directory_path() / ("te_waves_" + std::to_string(kRows));
  std::filesystem::create_directories(dir);
  ::setenv("TESSERA_WAVES", "1", 1);
  ::setenv("TESSERA_WAVES_DIR", dir.c_str(), 1);
  std::string path;
  {
    std::mt19937 rng(29);
    Driver d(kRows, kCols, "wave_check");
    path = d.wave_path;
    PsumModel ref(d, rng);
    queue_matmul(d, ref, random_matrix(kRows, kCols, rng), random_matrix(kRows, 4, rng), 0, false);
    d.run_until_idle();
    EXPECT_TRUE(ref.matches(d));
  }
  ::unsetenv("TESSERA_WAVES");
  ::unsetenv("TESSERA_WAVES_DIR");
  ASSERT_FALSE(path.empty());
  EXPECT_GT(std::filesystem::file_size(path), 1000u);
  std::filesystem::remove_all(dir);
}

#endif  // TE_FULL

}  // namespace
}  // namespace tessera::rtl::tensor_engine
