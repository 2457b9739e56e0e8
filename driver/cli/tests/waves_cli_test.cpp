// `tessera run --waves`: runs the real binary on a small GEMM and reads the
// FST back, checking that the signals exist, change where the program says
// they must, agree between the RTL and the transaction level, and that
// nothing lies outside a window.
#include "tessera_process.h"

#include "testing/fst_file.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using tessera::test_support::FstFile;
using tessera::test_support::FstSignal;
using tessera::test_support::run_tessera;
using ::testing::HasSubstr;

const char* kGemm = "run --config tiny --kernel gemm --shape M=16,N=64,K=16 --json";

class Waves : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("tessera_waves_{}_{}", info->name(), ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  nlohmann::json run_ok(const std::string& args, const std::string& env = {}) {
    const auto r = run_tessera(args, env);
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }

  fs::path dir_;
};

bool is_compute(const std::string& v) {
  const auto op = FstSignal::to_uint(v);
  return op >= 0x10;  // every opcode below 0x10 is a control instruction (arch/isa.h)
}

std::int64_t first_high(const FstSignal& s) { return s.first_value(1); }

// Each engine's `origin` signal names, through its enum table, the call site
// and label of the instruction it runs: the same text `tessera disasm`
// prints for that instruction.
TEST_F(Waves, EngineOriginSignalsNameTheCallSiteAndLabel) {
  const std::string fst = path("gemm.fst");
  run_ok(fmt::format("{} --fidelity tlm --waves {}", kGemm, fst));
  const FstFile f(fst);
  const FstSignal& origin = f.at("tlm.tensor.origin");
  ASSERT_FALSE(origin.enum_names.empty());
  EXPECT_EQ(origin.enum_names.at(0), "(none)");
  const std::int64_t first_multiply = f.at("tlm.tensor.opcode").first_value(0x11);  // MultiplyMoving
  ASSERT_GT(first_multiply, 0);
  std::uint64_t value = 0;
  for (const auto& [t, v] : origin.changes)
    if (static_cast<std::int64_t>(t) <= first_multiply) value = FstSignal::to_uint(v);
  ASSERT_TRUE(origin.enum_names.count(value)) << value;
  const std::string name = origin.enum_names.at(value);
  EXPECT_THAT(name, HasSubstr("at kernels/gemm/gemm.cpp:"));
  EXPECT_THAT(name, HasSubstr("label 'C block m0 n0"));

  const auto listing = run_tessera("disasm --config tiny --kernel gemm --shape M=16,N=64,K=16");
  ASSERT_EQ(listing.status, 0) << listing.err;
  const std::size_t line = listing.out.find("tensor MultiplyMoving");
  ASSERT_NE(line, std::string::npos);
  const std::size_t from = listing.out.find("; ", line) + 2, to = listing.out.find('\n', line);
  EXPECT_EQ(name, listing.out.substr(from, to - from));

  std::ifstream gtkw(path("gemm.gtkw"));
  const std::string save((std::istreambuf_iterator<char>(gtkw)), {});
  EXPECT_THAT(save, HasSubstr("{tensor call site, label} tlm.tensor.origin"));
}

TEST_F(Waves, RtlRunHoldsRtlAndTransactionLevelSignalsOnOneTimeAxis) {
  const std::string fst = path("gemm.fst");
  const auto r = run_tessera(fmt::format("{} --fidelity rtl --waves {}", kGemm, fst));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("open it with: scripts/waves " + fst));
  const auto report = nlohmann::json::parse(r.out);
  ASSERT_TRUE(fs::exists(path("gemm.gtkw")));
  ASSERT_FALSE(fs::exists(fst + ".parts")) << "the parts are removed once merged";
  const FstFile f(fst);
  EXPECT_EQ(f.timescale, -12);

  for (const char* name : {"tlm.tensor.opcode", "tlm.tensor.instr_index", "tlm.tensor.busy", "tlm.tensor.stalled",
                           "tlm.tensor.state", "tlm.sync.opcode", "tlm.semaphores.sem0", "tlm.dma0.q0_depth",
                           "tlm.sbuf.bytes_read", "tlm.sbuf.bytes_written", "tlm.psum.bytes_written"})
    EXPECT_TRUE(f.has(name)) << name;
  const FstSignal* cmd_valid = f.find_suffix("rtl.tensor.", ".cmd_valid_i");
  const FstSignal* te_busy = f.find_suffix("rtl.tensor.", ".busy_o");
  const FstSignal* ps_valid = f.find_suffix("rtl.tensor.", ".ps_valid_o");
  const FstSignal* arvalid0 = f.find_suffix("rtl.dma0.", ".arvalid_o");
  ASSERT_TRUE(cmd_valid && te_busy && ps_valid && arvalid0);
  EXPECT_TRUE(f.find_suffix("rtl.dma1.", ".awvalid_o"));

  // The tensor engine is busy from the issue of its first compute
  // instruction, and the RTL is offered that command in the same cycle.
  const FstSignal& opcode = f.at("tlm.tensor.opcode");
  const std::int64_t first_compute = opcode.first(is_compute);
  ASSERT_GT(first_compute, 0);
  EXPECT_EQ(first_high(f.at("tlm.tensor.busy")), first_compute);
  EXPECT_EQ(first_high(*cmd_valid), first_compute);
  EXPECT_GT(first_high(*te_busy), first_compute);
  EXPECT_GT(first_high(*ps_valid), first_high(*te_busy));
  // Before it, the tensor engine waited on a semaphore for its operands' DMA.
  const std::int64_t sem_wait = f.at("tlm.tensor.state").first_value(3);
  ASSERT_GE(sem_wait, 0);
  EXPECT_LT(sem_wait, first_compute);
  EXPECT_LE(f.at("tlm.tensor.stalled").first_value(1), sem_wait);

  // Every instruction shows up, and the engine ends done.
  EXPECT_EQ(f.at("tlm.tensor.instr_index").last_value() + 1,
            report["engines"]["tensor"]["instructions"].get<std::uint64_t>());
  EXPECT_EQ(f.at("tlm.tensor.state").last_value(), 6u);
  EXPECT_EQ(f.at("tlm.tensor.busy").last_value(), 0u);

  // The DMA engine's RTL reads only after a queue of it holds descriptors.
  std::int64_t queued = -1;
  for (int q = 0; q < 4; ++q) {
    const std::int64_t t = f.at(fmt::format("tlm.dma0.q{}_depth", q)).first([](const std::string& v) {
      return FstSignal::to_uint(v) > 0;
    });
    if (t >= 0 && (queued < 0 || t < queued)) queued = t;
  }
  ASSERT_GE(queued, 0);
  EXPECT_GE(first_high(*arvalid0), queued);
  EXPECT_GT(f.at("tlm.sbuf.bytes_written").last_value(), 0u);

  // The file runs to the end of the simulation: the last engine's End, then
  // the DMA RTL ticking until it is quiet.
  EXPECT_GE(static_cast<double>(f.end_time), report["time_ns"].get<double>() * 1e3);
}

TEST_F(Waves, NothingOutsideTheWindowAndTheWindowStartsWithTheState) {
  const auto full_report = run_ok(fmt::format("{} --fidelity rtl --waves {}", kGemm, path("full.fst")));
  const double end_cycles = full_report["time_ns"].get<double>();  // tiny's tensor clock is 1 GHz
  const auto from = static_cast<std::uint64_t>(end_cycles / 3), to = static_cast<std::uint64_t>(2 * end_cycles / 3);
  run_ok(fmt::format("{} --fidelity rtl --waves {} --waves-window tensor@{}:{}", kGemm, path("window.fst"), from, to));
  const FstFile full(path("full.fst")), window(path("window.fst"));
  std::size_t changes = 0;
  for (const auto& [name, s] : window.signals)
    for (const auto& [t, v] : s.changes) {
      ASSERT_GE(t, from * 1000) << name;
      ASSERT_LE(t, to * 1000) << name;
      ++changes;
    }
  EXPECT_GT(changes, 100u);
  EXPECT_LT(fs::file_size(path("window.fst")), fs::file_size(path("full.fst")));
  // The RTL opens the window with its state then, idle or not.
  for (const char* prefix : {"rtl.tensor.", "rtl.dma0.", "rtl.dma1."}) {
    const FstSignal* clk = window.find_suffix(prefix, ".clk_i");
    ASSERT_TRUE(clk) << prefix;
    ASSERT_FALSE(clk->changes.empty()) << prefix;
    EXPECT_EQ(clk->changes.front().first, from * 1000) << prefix;
  }
  // The transaction-level signals open the window with their values then.
  for (const char* name : {"tlm.tensor.instr_index", "tlm.sync.instr_index", "tlm.sbuf.bytes_read"}) {
    std::string before;
    for (const auto& [t, v] : full.at(name).changes)
      if (t <= from * 1000) before = v;
    ASSERT_FALSE(window.at(name).changes.empty()) << name;
    EXPECT_EQ(window.at(name).changes.front().first, from * 1000) << name;
    EXPECT_EQ(window.at(name).changes.front().second, before) << name;
  }
}

TEST_F(Waves, TlmRunHasTheTransactionLevelSignalsAloneAtTheSameTimes) {
  run_ok(fmt::format("{} --fidelity tlm --waves {}", kGemm, path("tlm.fst")));
  run_ok(fmt::format("{} --fidelity rtl --waves {} --waves-scope tlm", kGemm, path("rtl.fst")));
  const FstFile tlm(path("tlm.fst")), rtl(path("rtl.fst"));
  for (const auto& [name, s] : tlm.signals) EXPECT_EQ(name.rfind("rtl.", 0), std::string::npos) << name;
  for (const auto& [name, s] : rtl.signals) EXPECT_EQ(name.rfind("rtl.", 0), std::string::npos) << name;
  // tiny's rtl and tlm agree cycle for cycle (docs/cosim.md), and so do their waveforms.
  for (const char* name : {"tlm.tensor.busy", "tlm.tensor.instr_index", "tlm.vector.instr_index"})
    EXPECT_EQ(tlm.at(name).changes, rtl.at(name).changes) << name;
}

TEST_F(Waves, ScopeChoosesBlocksAndDepth) {
  run_ok(fmt::format("{} --fidelity rtl --waves {} --waves-scope tensor:1,dma1", kGemm, path("s.fst")));
  const FstFile f(path("s.fst"));
  bool tensor = false, dma1 = false;
  for (const auto& [name, s] : f.signals) {
    EXPECT_EQ(name.rfind("tlm.", 0), std::string::npos) << name;
    EXPECT_EQ(name.rfind("rtl.dma0.", 0), std::string::npos) << name;
    if (name.rfind("rtl.tensor.", 0) == 0) {
      tensor = true;
      EXPECT_EQ(std::count(name.begin(), name.end(), '.'), 3) << "depth 1 is the top module: " << name;
    }
    dma1 |= name.rfind("rtl.dma1.", 0) == 0;
  }
  EXPECT_TRUE(tensor);
  EXPECT_TRUE(dma1);
}

TEST_F(Waves, SampledRunTracesTheSamplesOnTheRunsTimeAxis) {
  run_ok(fmt::format("{} --fidelity sampled --waves {}", kGemm, path("s.fst")));
  const FstFile f(path("s.fst"));
  const FstSignal* cmd_valid = f.find_suffix("rtl.tensor.", ".cmd_valid_i");
  ASSERT_TRUE(cmd_valid);
  // The first sample (the first multiply) re-runs its LoadStationary on the
  // RTL when the multiply issues.
  const FstSignal& opcode = f.at("tlm.tensor.opcode");
  const std::int64_t first_multiply = opcode.first_value(0x11);
  ASSERT_GT(first_multiply, 0);
  EXPECT_GE(first_high(*cmd_valid), first_multiply);
  EXPECT_FALSE(f.find_suffix("rtl.dma0.", ".arvalid_o")) << "sampled runs the fast DMA model";
}

TEST_F(Waves, SampledDisagreementWritesTheFailingInstructionsWaveform) {
  const auto r = run_tessera(fmt::format("run --config tiny --kernel gemm --shape M=16,N=64,K=16 --fidelity sampled "
                                         "--out {}",
                                         dir_.string()),
                             "TESSERA_INJECT_SAMPLED_FAULT=1");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("sampled check failed"));
  const std::string fst = path("sampled-failure-1.fst");
  EXPECT_THAT(r.err, HasSubstr("waveform of the failing instruction: scripts/waves " + fst));
  ASSERT_TRUE(fs::exists(fst));
  EXPECT_TRUE(fs::exists(path("sampled-failure-1.gtkw")));
  const FstFile f(fst);
  const FstSignal* cmd_valid = f.find_suffix("rtl.tensor.", ".cmd_valid_i");
  const FstSignal* ps_valid = f.find_suffix("rtl.tensor.", ".ps_valid_o");
  ASSERT_TRUE(cmd_valid && ps_valid);
  // The load and the multiply, then their results: the whole instruction.
  EXPECT_EQ(first_high(*cmd_valid), static_cast<std::int64_t>(f.start_time));
  EXPECT_GT(first_high(*ps_valid), first_high(*cmd_valid));
  EXPECT_EQ(ps_valid->last_value(), 0u);
}

TEST_F(Waves, BadOptionsAreErrorsNamingThem) {
  auto r = run_tessera(fmt::format("{} --fidelity tlm --waves {} --waves-window 5us:1us", kGemm, path("x.fst")));
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--waves-window '5us:1us': the start is after the end"));
  r = run_tessera(fmt::format("{} --fidelity tlm --waves {} --waves-scope tlm,tensr", kGemm, path("x.fst")));
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--waves-scope: unknown item 'tensr'"));
  r = run_tessera(fmt::format("{} --fidelity tlm --waves-window 1:2", kGemm));
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("need --waves"));
  EXPECT_FALSE(fs::exists(path("x.fst")));
}

}  // namespace
