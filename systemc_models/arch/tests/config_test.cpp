#include "arch/config.h"
#include "arch/config_format.h"
#include "arch/config_schema.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tessera::arch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Each test writes its YAML into its own temporary folder.
class ConfigTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessera_config_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  // Loads `file` expecting failure; returns the diagnostics.
  std::vector<Diagnostic> errors_of(const std::string& file, const std::vector<Override>& overrides = {}) {
    try {
      load_config(file, overrides);
    } catch (const ConfigError& e) {
      return e.diagnostics();
    }
    ADD_FAILURE() << file << " loaded without error";
    return {};
  }

  fs::path dir_;
};

TEST_F(ConfigTest, NeuronCoreV2PeakIs91Point8Tflops) {
  const auto rc = load_config("neuroncore-v2");
  EXPECT_EQ(rc.hw.tensor.rows, 128);
  EXPECT_NEAR(rc.derived.peak_tflops.at(TensorDType::Bf16), 91.75, 0.01);
  EXPECT_EQ(fmt::format("{:.1f}", rc.derived.peak_tflops.at(TensorDType::Bf16)), "91.8");
}

// Every shipped generation's derived figures, against the public numbers they
// were written from (docs/sources.md).
TEST_F(ConfigTest, DerivedFiguresOfEveryShippedConfig) {
  struct Expect {
    const char* name;
    double bf16_tflops, fp8_tflops, fp32_tflops, mx_tflops, sbuf_mib, psum_kib, hbm_bytes_per_cycle;
  };
  // fp8 at the bf16 rate on v2 and double on v3 / v4 (158 TFLOPS), MX quad on
  // v4 (315), fp32 a quarter everywhere it runs; the test generations have
  // every mode so that the RTL tests reach each.
  const Expect expected[] = {
      {"neuroncore-v1", 15.99, 0, 0, 0, 8, 2048, 13.4 / 0.488},
      {"neuroncore-v2", 91.75, 91.75, 22.94, 0, 24, 2048, 410 / 2.8},
      {"neuroncore-v3", 78.64, 157.29, 19.66, 0, 28, 2048, 362.5 / 2.4},
      {"neuroncore-v4", 78.64, 157.29, 19.66, 314.57, 32, 2048, 612.5 / 2.4},
      {"small", 2.87, 5.73, 0.72, 11.47, 2, 512, 64 / 1.4},
      {"tiny", 0.128, 0.256, 0.032, 0.512, 0.125, 32, 16},
  };
  EXPECT_EQ(list_config_names().size(), std::size(expected));
  for (const auto& e : expected) {
    SCOPED_TRACE(e.name);
    const auto d = load_config(e.name).derived;
    EXPECT_NEAR(d.peak_tflops.at(TensorDType::Bf16), e.bf16_tflops, 0.01);
    const auto peak = [&](TensorDType t) { return d.peak_tflops.count(t) ? d.peak_tflops.at(t) : 0.0; };
    EXPECT_NEAR(peak(TensorDType::Fp8E4m3), e.fp8_tflops, 0.01);
    EXPECT_NEAR(peak(TensorDType::Fp8E5m2), e.fp8_tflops, 0.01);
    EXPECT_NEAR(peak(TensorDType::Fp32), e.fp32_tflops, 0.01);
    EXPECT_NEAR(peak(TensorDType::Mx), e.mx_tflops, 0.01);
    EXPECT_DOUBLE_EQ(d.sbuf_total_mib, e.sbuf_mib);
    EXPECT_DOUBLE_EQ(d.psum_total_kib, e.psum_kib);
    EXPECT_NEAR(d.hbm_bytes_per_tensor_cycle, e.hbm_bytes_per_cycle, 1e-9);
  }
}

TEST_F(ConfigTest, InheritanceChainAppliesMostDerivedLast) {
  // v4 <- v3 <- v2: v4 keeps v3's clock, v3 keeps v2's array.
  const auto rc = load_config("neuroncore-v4");
  EXPECT_EQ(rc.chain.size(), 3u);
  EXPECT_EQ(rc.hw.name, "neuroncore-v4");
  EXPECT_DOUBLE_EQ(rc.hw.tensor.clock_ghz, 2.4);     // from v3
  EXPECT_EQ(rc.hw.tensor.moving_max_free, 512);      // from v2
  EXPECT_EQ(rc.hw.sbuf.partition_kib, 256);          // v4's own
  EXPECT_THAT(rc.from.at("tensor.clock_ghz").file, HasSubstr("neuroncore-v3.yaml"));
  EXPECT_THAT(rc.from.at("sbuf.partition_kib").file, HasSubstr("neuroncore-v4.yaml"));
}

TEST_F(ConfigTest, WhatIfVariantIsAFewLinesOverABaseByName) {
  const auto f = write("wide.yaml",
                       "base: neuroncore-v2\n"
                       "name: v2-wide\n"
                       "tensor:\n"
                       "  cols: 256\n"
                       "psum:\n"
                       "  partitions: 256\n");
  const auto rc = load_config(f);
  EXPECT_EQ(rc.hw.name, "v2-wide");
  EXPECT_EQ(rc.hw.tensor.cols, 256);
  EXPECT_NEAR(rc.derived.peak_tflops.at(TensorDType::Bf16), 2 * 91.75, 0.01);
}

TEST_F(ConfigTest, BaseByRelativePathAndNameDefaultsToFileStem) {
  write("parent.yaml", "base: tiny\nsbuf:\n  partition_kib: 32\n");
  const auto f = write("child.yaml", "base: ./parent.yaml\nhbm:\n  bandwidth_gbps: 32\n");
  const auto rc = load_config(f);
  EXPECT_EQ(rc.hw.name, "tiny");  // inherited name field
  EXPECT_EQ(rc.hw.sbuf.partition_kib, 32);
  EXPECT_DOUBLE_EQ(rc.hw.hbm.bandwidth_gbps, 32);
  const auto g = write("unnamed.yaml", "base: ./parent.yaml\nname: ''\n");
  EXPECT_EQ(load_config(g).hw.name, "unnamed");
}

TEST_F(ConfigTest, SetOverridesWinAndAreRecorded) {
  const auto rc = load_config("neuroncore-v2", {parse_override("tensor.clock_ghz=1.4"),
                                                parse_override("simulation.default_fidelity=tlm")});
  EXPECT_DOUBLE_EQ(rc.hw.tensor.clock_ghz, 1.4);
  EXPECT_NEAR(rc.derived.peak_tflops.at(TensorDType::Bf16), 45.8752, 1e-9);
  EXPECT_EQ(rc.hw.default_fidelity(), Fidelity::Tlm);
  EXPECT_THAT(rc.from.at("tensor.clock_ghz").str(), HasSubstr("--set tensor.clock_ghz=1.4"));
}

TEST_F(ConfigTest, SetErrorsNameTheOverride) {
  auto errs = errors_of("tiny", {parse_override("tensor.rowz=4")});
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), "--set tensor.rowz=4: unknown key 'tensor.rowz' (did you mean 'tensor.rows'?)");
  errs = errors_of("tiny", {parse_override("tensor.rows=eight")});
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_THAT(errs[0].str(), HasSubstr("tensor.rows: expected an integer, got 'eight'"));
  EXPECT_THROW(parse_override("tensor.rows"), ConfigError);
}

TEST_F(ConfigTest, UnknownKeyNamesFileLineAndSuggests) {
  const auto f = write("typo.yaml", "base: tiny\ntensor:\n  rows: 8\n  colz: 8\n");
  const auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), f + ":4: unknown key 'tensor.colz' (did you mean 'tensor.cols'?)");
  EXPECT_EQ(errs[0].key, "tensor.colz");
}

TEST_F(ConfigTest, UnknownSectionSuggests) {
  const auto f = write("typo.yaml", "base: tiny\nsbfu:\n  partitions: 8\n");
  const auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), f + ":2: unknown key 'sbfu' (did you mean 'sbuf'?)");
}

TEST_F(ConfigTest, WrongTypesNameTheKey) {
  const auto f = write("types.yaml",
                       "base: tiny\n"
                       "tensor:\n"
                       "  rows: 8.5\n"
                       "  clock_ghz: fast\n"
                       "gpsimd:\n"
                       "  present: maybe\n"
                       "sbuf: 12\n"
                       "hbm:\n"
                       "  channels: [1, 2]\n");
  const auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 5u);
  EXPECT_EQ(errs[0].str(), f + ":3: tensor.rows: expected an integer, got '8.5'");
  EXPECT_EQ(errs[1].str(), f + ":4: tensor.clock_ghz: expected a number, got 'fast'");
  EXPECT_EQ(errs[2].str(), f + ":6: gpsimd.present: expected true or false, got 'maybe'");
  EXPECT_EQ(errs[3].str(), f + ":7: 'sbuf' is a section: expected a mapping of keys");
  EXPECT_EQ(errs[4].str(), f + ":9: hbm.channels: expected a single value, not a list or mapping");
}

TEST_F(ConfigTest, EnumChoicesAreChecked) {
  const auto f = write("fid.yaml", "base: tiny\nsimulation:\n  default_fidelity: sampeld\n");
  const auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(),
            f + ":3: simulation.default_fidelity: 'sampeld' is not one of rtl, sampled, tlm (did you mean 'sampled'?)");
}

TEST_F(ConfigTest, MissingRequiredFieldsAreListed) {
  const auto f = write("bare.yaml", "tensor:\n  rows: 8\n");
  const auto errs = errors_of(f);
  ASSERT_FALSE(errs.empty());
  EXPECT_THAT(errs[0].str(), HasSubstr(f + ":1: missing required key 'tensor.cols'"));
  std::size_t required = 0;
  for (const auto& field : schema()) required += field.required();
  EXPECT_EQ(errs.size(), required - 1);  // all but tensor.rows
}

TEST_F(ConfigTest, ImpossibleValuesNameTheKeyAndLine) {
  auto f = write("zero.yaml", "base: tiny\nsbuf:\n  partitions: 0\n");
  auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), f + ":3: sbuf.partitions: must be at least 1, got 0");

  f = write("clock.yaml", "base: tiny\ntensor:\n  clock_ghz: 0\n");
  errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), f + ":3: tensor.clock_ghz: must be at least 0.01, got 0");
}

TEST_F(ConfigTest, MovingLimitOverPsumBankIsRejected) {
  const auto f = write("moving.yaml", "base: neuroncore-v2\ntensor:\n  moving_max_free: 1024\n");
  const auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), f +
                               ":3: tensor.moving_max_free: 1024 fp32 results per partition do not fit a PSUM bank "
                               "of 2 KiB (512 fp32)");
}

TEST_F(ConfigTest, CrossFieldRulesNameTheFieldToChange) {
  auto f = write("stat.yaml", "base: tiny\ntensor:\n  stationary_max_free: 16\n");
  auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), f + ":3: tensor.stationary_max_free: 16 exceeds the array's 8 columns");

  f = write("rows.yaml", "base: tiny\ntensor:\n  rows: 16\n");
  errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), f + ":3: tensor.rows: 16 array rows need as many SBUF partitions, but sbuf.partitions is 8");
}

TEST_F(ConfigTest, HbmChannelsMustBeAPowerOfTwo) {
  const auto f = write("channels.yaml", "base: tiny\nhbm:\n  channels: 12\n");
  const auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), f + ":3: hbm.channels: 12 is not a power of two (the channel hash takes the address "
                               "modulo a polynomial of degree log2(channels))");
}

TEST_F(ConfigTest, BaseCycleIsReportedAtTheBaseKey) {
  write("a.yaml", "base: b\n");
  write("b.yaml", "\n\nbase: ./a.yaml\n");
  const auto errs = errors_of((dir_ / "a.yaml").string());
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), (dir_ / "b.yaml").string() + ":3: base cycle: a.yaml -> b.yaml -> a.yaml");
}

TEST_F(ConfigTest, SelfBaseIsACycle) {
  const auto f = write("self.yaml", "base: self\n");
  const auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_THAT(errs[0].str(), HasSubstr("base cycle: self.yaml -> self.yaml"));
}

TEST_F(ConfigTest, UnknownBaseSuggestsAShippedName) {
  const auto f = write("nobase.yaml", "base: neuroncore-v9\n");
  const auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_THAT(errs[0].str(), HasSubstr(f + ":1: base config 'neuroncore-v9' not found"));
  EXPECT_THAT(errs[0].str(), HasSubstr("did you mean 'neuroncore-v1'?"));
}

TEST_F(ConfigTest, UnknownConfigNameSuggests) {
  const auto errs = errors_of("tinny");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_THAT(errs[0].str(), HasSubstr("unknown config 'tinny'"));
  EXPECT_THAT(errs[0].str(), HasSubstr("did you mean 'tiny'?"));
}

TEST_F(ConfigTest, YamlSyntaxErrorNamesTheLine) {
  const auto f = write("broken.yaml", "base: tiny\ntensor:\n  rows: [8\n");
  const auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_THAT(errs[0].str(), HasSubstr(f + ":"));
  EXPECT_THAT(errs[0].str(), HasSubstr("YAML syntax error"));
}

TEST_F(ConfigTest, DuplicateKeyIsAnError) {
  const auto f = write("dup.yaml", "base: tiny\ntensor:\n  rows: 8\n  rows: 4\n");
  const auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].str(), f + ":4: duplicate key 'tensor.rows'");
}

TEST_F(ConfigTest, TopLevelMustBeAMapping) {
  const auto f = write("list.yaml", "- 1\n- 2\n");
  const auto errs = errors_of(f);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_THAT(errs[0].str(), HasSubstr("not a Tessera config: a config is a mapping"));
}

TEST_F(ConfigTest, MissingFileIsAnError) {
  const auto errs = errors_of((dir_ / "nope.yaml").string());
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_THAT(errs[0].str(), HasSubstr("no such config file"));
}

// The annotated YAML a run writes beside its results must load back to the
// same config.
TEST_F(ConfigTest, AnnotatedYamlRoundTrips) {
  for (const auto& name : list_config_names()) {
    SCOPED_TRACE(name);
    const auto rc = load_config(name, {parse_override("hbm.latency_ns=123.5")});
    const auto f = write(name + ".resolved.yaml", to_annotated_yaml(rc));
    const auto again = load_config(f);
    EXPECT_EQ(to_json(again)["config"], to_json(rc)["config"]);
    EXPECT_EQ(again.chain.size(), 1u);
  }
}

TEST_F(ConfigTest, JsonHasConfigDerivedAndSources) {
  const auto j = to_json(load_config("neuroncore-v2"));
  EXPECT_EQ(j["config"]["tensor"]["rows"], 128);
  EXPECT_EQ(j["config"]["tensor"]["fp8_rows_per_pe"], 1);
  EXPECT_EQ(j["config"]["tensor"]["fp32_cycles_per_column"], 4);
  EXPECT_NEAR(j["derived"]["peak_tflops"]["bf16"].get<double>(), 91.75, 0.01);
  EXPECT_THAT(j["sources"]["tensor.rows"].get<std::string>(), HasSubstr("neuroncore-v2.yaml:"));
}

TEST_F(ConfigTest, EverySchemaFieldHasUnitlessOrUnitAndDescription) {
  for (const auto& f : schema()) {
    SCOPED_TRACE(f.path);
    EXPECT_FALSE(f.description.empty());
    const bool numeric = f.kind() == FieldSpec::Kind::Int || f.kind() == FieldSpec::Kind::Float;
    if (numeric) {
      EXPECT_FALSE(f.unit.empty());
    }
  }
}

// Every numeric key has a lower and an upper limit, so that no valid config
// reaches an overflowing size or time (a key added later declares both).
TEST(ConfigSchema, EveryNumericKeyIsBoundedBothWays) {
  for (const auto& f : schema()) {
    if (f.kind() != FieldSpec::Kind::Int && f.kind() != FieldSpec::Kind::Float) continue;
    EXPECT_TRUE(std::isfinite(f.min)) << f.path << " has no lower limit";
    EXPECT_TRUE(std::isfinite(f.max)) << f.path << " has no upper limit";
    EXPECT_LE(f.min, f.max) << f.path;
  }
}

TEST(ConfigSchema, SectionGivenAsAKeyNamesItsKeys) {
  try {
    load_config(TESSERA_SOURCE_CONFIG_DIR "/tiny.yaml", {parse_override("tensor=8")});
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("'tensor' is a section, not a key: set one of its keys (tensor.rows,"));
  }
}

// Rules that keep the models' allocations and clocks in range, each at the key to change.
TEST(ConfigSchema, RulesBoundMemoriesChannelsAndTheDmaClock) {
  const auto error_of = [](const std::vector<std::string>& sets) {
    std::vector<Override> o;
    for (const auto& s : sets) o.push_back(parse_override(s));
    try {
      load_config(TESSERA_SOURCE_CONFIG_DIR "/tiny.yaml", o);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_THAT(error_of({"sbuf.partitions=1024", "sbuf.partition_kib=2048"}),
              ::testing::HasSubstr("sbuf.partition_kib: 1024 partitions of 2048 KiB make 2048 MiB of SBUF; at most 256 MiB"));
  EXPECT_THAT(error_of({"psum.partitions=1024", "psum.banks=64", "psum.bank_kib=64"}),
              ::testing::HasSubstr("psum.bank_kib: 1024 partitions of 64 banks of 64 KiB"));
  EXPECT_THAT(error_of({"hbm.channels=32"}), ::testing::HasSubstr("hbm.channels: 32 channels share 16 GB/s"));
  EXPECT_THAT(error_of({"dma.bytes_per_ns=4000"}), ::testing::HasSubstr("dma.bytes_per_ns: 4000 B/ns over a"));
  EXPECT_THAT(error_of({"hbm.capacity_gib=16385"}), ::testing::HasSubstr("hbm.capacity_gib: must be at most 16384"));
  EXPECT_THAT(error_of({"tensor.fp32_cycles_per_column=65"}), ::testing::HasSubstr("must be at most 64"));
  EXPECT_EQ(error_of({"tensor.fp32_cycles_per_column=0"}), "(accepted)");
}

// The chip section: what each shipped generation's chip shares, a zero
// derived from the core's share, and the rules at the key to change.
TEST(ChipConfig, EveryGenerationDeclaresItsChip) {
  struct Expect {
    const char* name;
    std::int64_t cores, capacity_gib;
    double bandwidth_gbps;
    std::int64_t channels;
  };
  const Expect expected[] = {
      {"neuroncore-v1", 4, 8, 53.7, 8},   {"neuroncore-v2", 2, 32, 820, 32},  {"neuroncore-v3", 8, 96, 2900, 128},
      {"neuroncore-v4", 8, 144, 4900, 128}, {"tiny", 2, 2, 32, 4},            {"small", 4, 16, 256, 16},
  };
  for (const auto& e : expected) {
    SCOPED_TRACE(e.name);
    const auto rc = load_config(TESSERA_SOURCE_CONFIG_DIR "/" + std::string(e.name) + ".yaml");
    EXPECT_EQ(rc.hw.chip.cores, e.cores);
    EXPECT_EQ(rc.derived.chip_hbm.capacity_gib, e.capacity_gib);
    EXPECT_DOUBLE_EQ(rc.derived.chip_hbm.bandwidth_gbps, e.bandwidth_gbps);
    EXPECT_EQ(rc.derived.chip_hbm.channels, e.channels);
    EXPECT_DOUBLE_EQ(rc.derived.chip_hbm.latency_ns, rc.hw.hbm.latency_ns);
    // One core of the chip addresses all of it; nothing else changes.
    const HwConfig on_chip = core_on_chip(rc.hw);
    EXPECT_EQ(on_chip.hbm.capacity_gib, e.capacity_gib);
    EXPECT_EQ(on_chip.sbuf.partition_kib, rc.hw.sbuf.partition_kib);
  }
}

TEST(ChipConfig, BadChipsAreNamedAtTheirKey) {
  const auto error_of = [](const std::vector<std::string>& sets) {
    std::vector<Override> o;
    for (const auto& s : sets) o.push_back(parse_override(s));
    try {
      load_config(TESSERA_SOURCE_CONFIG_DIR "/tiny.yaml", o);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_THAT(error_of({"chip.cores=0"}), HasSubstr("chip.cores: must be at least 1"));
  EXPECT_THAT(error_of({"chip.cores=65"}), HasSubstr("chip.cores: must be at most 64"));
  EXPECT_THAT(error_of({"chip.cores=3"}),
              HasSubstr("chip.cores: the chip's HBM has 6 channels (chip.cores 3 x hbm.channels 2; set "
                        "chip.hbm_channels), not a power of two"));
  EXPECT_EQ(error_of({"chip.cores=3", "chip.hbm_channels=4"}), "(accepted)");
  EXPECT_THAT(error_of({"chip.hbm_channels=6"}), HasSubstr("chip.hbm_channels: the chip's HBM has 6 channels, not a power of two"));
  EXPECT_THAT(error_of({"chip.hbm_channels=64"}), HasSubstr("chip.hbm_channels: 64 channels share the chip's 32 GB/s"));
  EXPECT_THAT(error_of({"chip.hbm_capacity_gib=20000"}), HasSubstr("chip.hbm_capacity_gib: must be at most 16384"));
  EXPECT_THAT(error_of({"hbm.capacity_gib=4", "chip.hbm_capacity_gib=2"}),
              HasSubstr("chip.hbm_capacity_gib: the chip's 2 GiB of HBM are less than one core's 4 GiB"));
  EXPECT_THAT(error_of({"chip.hbm_bandwidth_gbps=0.5"}), HasSubstr("must be at least 1 (or 0)"));
  // Logical cores: the Neuron SDK's LNC degrees, 1 or 2, dividing the chip.
  EXPECT_EQ(error_of({"chip.lnc=2"}), "(accepted)");
  EXPECT_THAT(error_of({"chip.lnc=3"}), HasSubstr("chip.lnc: must be at most 2"));
  EXPECT_THAT(error_of({"chip.cores=1", "chip.hbm_channels=2", "chip.lnc=2"}),
              HasSubstr("chip.lnc: logical cores of 2 do not divide the chip's 1 core (chip.cores)"));
  // A core's own mistake is reported once, at the core's key.
  const std::string once = error_of({"hbm.channels=3"});
  EXPECT_THAT(once, HasSubstr("hbm.channels: 3 is not a power of two"));
  EXPECT_THAT(once, ::testing::Not(HasSubstr("chip")));
}

}  // namespace
}  // namespace tessera::arch
