// The waveform options' syntax and the merge of FST parts into one file,
// without a simulation (the whole path is tested through `tessera run` in
// driver/cli/tests/waves_cli_test.cpp).
#include "cosim/waves.h"

#include "testing/fst_file.h"
#include "testing/shipped_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::cosim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(WaveWindow, BoundsInNanosecondsUnitsOrCycles) {
  const auto& cfg = test_support::shipped_config("tiny");
  auto w = parse_wave_window("1000:5000", cfg);
  EXPECT_EQ(w.from_ps, 1'000'000u);
  EXPECT_EQ(w.to_ps, 5'000'000u);
  w = parse_wave_window("2us:4.5us", cfg);
  EXPECT_EQ(w.from_ps, 2'000'000u);
  EXPECT_EQ(w.to_ps, 4'500'000u);
  w = parse_wave_window("800ps:1ms", cfg);
  EXPECT_EQ(w.from_ps, 800u);
  EXPECT_EQ(w.to_ps, 1'000'000'000u);
  w = parse_wave_window(":5us", cfg);
  EXPECT_EQ(w.from_ps, 0u);
  EXPECT_EQ(w.to_ps, 5'000'000u);
  w = parse_wave_window("3000:", cfg);
  EXPECT_EQ(w.to_ps, UINT64_MAX);
  const double tensor_ps = 1000.0 / cfg.tensor.clock_ghz;
  w = parse_wave_window("tensor@100:400", cfg);
  EXPECT_EQ(w.from_ps, static_cast<std::uint64_t>(std::llround(100 * tensor_ps)));
  EXPECT_EQ(w.to_ps, static_cast<std::uint64_t>(std::llround(400 * tensor_ps)));
  const double dma_ps = 1000.0 * static_cast<double>(cfg.dma.axi_data_bytes) / cfg.dma.bytes_per_ns;
  w = parse_wave_window("dma@10:20", cfg);
  EXPECT_EQ(w.from_ps, static_cast<std::uint64_t>(std::llround(10 * dma_ps)));
}

TEST(WaveWindow, BadSpecsNameTheProblem) {
  const auto& cfg = test_support::shipped_config("tiny");
  EXPECT_THAT(error_of([&] { parse_wave_window("1000", cfg); }), HasSubstr("expected FROM:TO"));
  EXPECT_THAT(error_of([&] { parse_wave_window("1:2:3", cfg); }), HasSubstr("expected FROM:TO"));
  EXPECT_THAT(error_of([&] { parse_wave_window("abc:5", cfg); }), HasSubstr("start bound 'abc' is not a number"));
  EXPECT_THAT(error_of([&] { parse_wave_window("1:2xs", cfg); }), HasSubstr("unknown unit 'xs'"));
  EXPECT_THAT(error_of([&] { parse_wave_window("5us:1us", cfg); }), HasSubstr("the start is after the end"));
  EXPECT_THAT(error_of([&] { parse_wave_window("-5:10", cfg); }), HasSubstr("must not be negative"));
  EXPECT_THAT(error_of([&] { parse_wave_window("tensr@1:2", cfg); }), HasSubstr("unknown clock 'tensr'"));
  EXPECT_THAT(error_of([&] { parse_wave_window("tensor@1ns:2", cfg); }), HasSubstr("take no unit"));
}

TEST(WaveScope, ItemsAndDepths) {
  auto s = parse_wave_scope("tlm,tensor:2,dma1,dma3");
  EXPECT_TRUE(s.tlm);
  EXPECT_EQ(s.tensor_depth, 2);
  EXPECT_EQ(s.dma_depth, -1);
  EXPECT_EQ(s.dma, (std::set<std::uint32_t>{1, 3}));
  s = parse_wave_scope("tensor");
  EXPECT_FALSE(s.tlm);
  EXPECT_EQ(s.tensor_depth, -1);
  EXPECT_EQ(s.dma_depth, 0);
  s = parse_wave_scope("dma:1");
  EXPECT_EQ(s.tensor_depth, 0);
  EXPECT_EQ(s.dma_depth, 1);
  EXPECT_TRUE(s.dma.empty());
  const WaveScope all;  // the default: everything
  EXPECT_TRUE(all.tlm);
  EXPECT_EQ(all.tensor_depth, -1);
  EXPECT_EQ(all.dma_depth, -1);
}

TEST(WaveScope, BadItemsAreNamed) {
  EXPECT_THAT(error_of([] { parse_wave_scope("tlm,tensr"); }), HasSubstr("unknown item 'tensr'"));
  EXPECT_THAT(error_of([] { parse_wave_scope("tensor:0"); }), HasSubstr("'tensor:0'"));
  EXPECT_THAT(error_of([] { parse_wave_scope("tensor:x"); }), HasSubstr("whole number"));
  EXPECT_THAT(error_of([] { parse_wave_scope("tlm:2"); }), HasSubstr("tlm takes no depth"));
  EXPECT_THAT(error_of([] { parse_wave_scope("dma1:1,dma2:3"); }), HasSubstr("one depth"));
  EXPECT_THAT(error_of([] { parse_wave_scope("tlm,,tensor"); }), HasSubstr("empty item"));
  EXPECT_THAT(error_of([] { parse_wave_scope("dmax"); }), HasSubstr("unknown item 'dmax'"));
}

// A part shaped like Verilator's: ports in TOP and again in the top module,
// a submodule below, a clock toggling every 5 ps from 0 to 100.
void write_rtl_part(const std::string& path) {
  void* w = fstWriterCreate(path.c_str(), 1);
  fstWriterSetScope(w, FST_ST_VCD_MODULE, "TOP", nullptr);
  const fstHandle clk = fstWriterCreateVar(w, FST_VT_VCD_WIRE, FST_VD_INPUT, 1, "clk_i", 0);
  fstWriterSetScope(w, FST_ST_VCD_MODULE, "top_mod", nullptr);
  fstWriterCreateVar(w, FST_VT_VCD_WIRE, FST_VD_INPUT, 1, "clk_i", clk);
  const fstHandle count = fstWriterCreateVar(w, FST_VT_VCD_REG, FST_VD_IMPLICIT, 8, "count_q [7:0]", 0);
  fstWriterSetScope(w, FST_ST_VCD_MODULE, "u_sub", nullptr);
  const fstHandle deep = fstWriterCreateVar(w, FST_VT_VCD_REG, FST_VD_IMPLICIT, 4, "deep_q [3:0]", 0);
  fstWriterSetUpscope(w);
  fstWriterSetUpscope(w);
  fstWriterSetUpscope(w);
  for (std::uint64_t t = 0; t <= 100; t += 5) {
    fstWriterEmitTimeChange(w, t);
    fstWriterEmitValueChange(w, clk, (t / 5) % 2 ? "1" : "0");
    if ((t / 5) % 2) {
      std::string bits(8, '0');
      const unsigned v = static_cast<unsigned>(t / 10);
      for (int i = 0; i < 8; ++i) bits[7 - i] = (v >> i) & 1 ? '1' : '0';
      fstWriterEmitValueChange(w, count, bits.c_str());
      fstWriterEmitValueChange(w, deep, bits.c_str() + 4);
    }
  }
  fstWriterClose(w);
}

// A transaction-level part: one signal changing at 12, 37 and 90.
void write_tlm_part(const std::string& path) {
  void* w = fstWriterCreate(path.c_str(), 1);
  fstWriterSetScope(w, FST_ST_VCD_MODULE, "tlm", nullptr);
  fstWriterSetScope(w, FST_ST_VCD_MODULE, "tensor", nullptr);
  const fstHandle busy = fstWriterCreateVar(w, FST_VT_VCD_WIRE, FST_VD_IMPLICIT, 1, "busy", 0);
  fstWriterSetUpscope(w);
  fstWriterSetUpscope(w);
  for (const auto& [t, v] : std::vector<std::pair<std::uint64_t, const char*>>{{12, "1"}, {37, "0"}, {90, "1"}}) {
    fstWriterEmitTimeChange(w, t);
    fstWriterEmitValueChange(w, busy, v);
  }
  fstWriterClose(w);
}

class WaveMerge : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_wave_merge_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    write_rtl_part((dir_ / "rtl.fst").string());
    write_tlm_part((dir_ / "tlm.fst").string());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(WaveMerge, InterleavesPartsInTimeOrderUnderTheirScopes) {
  const auto signals =
      merge_waves({{path("tlm.fst"), "", -1, false}, {path("rtl.fst"), "rtl.tensor", -1, true}}, path("out.fst"), {});
  const test_support::FstFile f(path("out.fst"));
  EXPECT_EQ(f.timescale, -12);
  EXPECT_TRUE(f.has("tlm.tensor.busy"));
  EXPECT_TRUE(f.has("rtl.tensor.top_mod.clk_i"));
  EXPECT_TRUE(f.has("rtl.tensor.top_mod.count_q"));
  EXPECT_TRUE(f.has("rtl.tensor.top_mod.u_sub.deep_q"));
  EXPECT_FALSE(f.has("rtl.tensor.clk_i")) << "Verilator's TOP copy of the ports is dropped";
  EXPECT_EQ(signals.size(), 4u);
  EXPECT_EQ(f.at("tlm.tensor.busy").changes.size(), 3u);
  EXPECT_EQ(f.at("tlm.tensor.busy").first_value(0), 37);
  EXPECT_EQ(f.at("rtl.tensor.top_mod.clk_i").changes.size(), 21u);
  EXPECT_EQ(f.at("rtl.tensor.top_mod.count_q").last_value(), 9u);
  EXPECT_EQ(f.end_time, 100u);
}

TEST_F(WaveMerge, DepthOneKeepsTheTopModuleOnly) {
  const auto signals = merge_waves({{path("rtl.fst"), "rtl.dma0", 1, true}}, path("out.fst"), {});
  const test_support::FstFile f(path("out.fst"));
  EXPECT_TRUE(f.has("rtl.dma0.top_mod.count_q"));
  EXPECT_FALSE(f.has("rtl.dma0.top_mod.u_sub.deep_q"));
  EXPECT_EQ(signals.size(), 2u);
}

TEST_F(WaveMerge, NothingOutsideTheWindow) {
  merge_waves({{path("tlm.fst"), "", -1, false}, {path("rtl.fst"), "rtl.tensor", -1, true}}, path("out.fst"),
              {30, 60});
  const test_support::FstFile f(path("out.fst"));
  std::size_t changes = 0;
  for (const auto& [name, s] : f.signals)
    for (const auto& [t, v] : s.changes) {
      EXPECT_GE(t, 30u) << name;
      EXPECT_LE(t, 60u) << name;
      ++changes;
    }
  EXPECT_GT(changes, 0u);
  EXPECT_EQ(f.at("tlm.tensor.busy").first_value(0), 37);
}

TEST_F(WaveMerge, UnreadablePartIsNamed) {
  std::ofstream(path("junk.fst")) << "not an FST";
  try {
    merge_waves({{path("junk.fst"), "rtl.tensor", -1, true}}, path("out.fst"), {});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("junk.fst"));
  }
}

TEST_F(WaveMerge, SaveFileGroupsAndNamesSignals) {
  const auto signals =
      merge_waves({{path("tlm.fst"), "", -1, false}, {path("rtl.fst"), "rtl.tensor", -1, true}}, path("out.fst"), {});
  write_gtkw(path("out.fst"), path("out.gtkw"), signals, {"tlm.tensor.busy"}, {0, 100});
  std::ifstream in(path("out.gtkw"));
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("[dumpfile] \"" + path("out.fst") + "\""));
  EXPECT_THAT(text.str(), HasSubstr("-Engine activity"));
  EXPECT_THAT(text.str(), HasSubstr("+{tensor busy} tlm.tensor.busy\n"));
  EXPECT_THAT(text.str(), HasSubstr("-Tensor engine control"));
  EXPECT_THAT(text.str(), HasSubstr("rtl.tensor.top_mod.clk_i\n"));
  EXPECT_THAT(text.str(), Not(HasSubstr("count_q"))) << "internal registers are not in the groups";
}

}  // namespace
}  // namespace tessera::cosim
