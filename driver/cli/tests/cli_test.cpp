// Runs the real `tessera` binary, as a user would, and checks exit status,
// stdout and stderr.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

Result run(const std::string& args) {
  const fs::path err_file = fs::temp_directory_path() / fmt::format("tessera_cli_err_{}", ::getpid());
  const std::string cmd = fmt::format("TESSERA_CONFIG_DIR={}/configs {} {} 2>{}", TESSERA_SOURCE_DIR, TESSERA_BIN,
                                      args, err_file.string());
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) r.out.append(buf.data(), n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(err_file);
  r.err.assign(std::istreambuf_iterator<char>(in), {});
  fs::remove(err_file);
  return r;
}

std::string configs(const std::string& name) { return fmt::format("{}/configs/{}", TESSERA_SOURCE_DIR, name); }

TEST(Cli, ListConfigsShowsEveryGenerationWithItsPeak) {
  const auto r = run("list configs");
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* name : {"neuroncore-v1", "neuroncore-v2", "neuroncore-v3", "neuroncore-v4", "small", "tiny"})
    EXPECT_THAT(r.out, HasSubstr(name));
  EXPECT_THAT(r.out, HasSubstr("91.8 TF/s"));
  EXPECT_THAT(r.out, HasSubstr("128x128"));
}

TEST(Cli, ListConfigsDerivedShowsPeaksPerDtype) {
  const auto r = run("list configs --derived");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("314.6"));  // v4 fp8
  EXPECT_THAT(r.out, HasSubstr("16x16"));  // v2 DMA engines x queues
}

TEST(Cli, ListKernelsRuns) {
  const auto r = run("list kernels");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("kernel"));
}

// tiny's default fidelity is rtl: the Verilated tensor engine runs the GEMM.
TEST(Cli, RunOnTinyDefaultsToRtl) {
  const auto r = run("run --config tiny --kernel gemm --shape M=16,N=64,K=16");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(rtl)"));
  EXPECT_THAT(r.out, HasSubstr("numerics: match"));
}

TEST(Cli, RunSampledTakesTheBudgetFromSet) {
  const fs::path out = fs::temp_directory_path() / fmt::format("tessera_cli_sampled_{}", ::getpid());
  const auto r = run(fmt::format("run --config tiny --kernel gemm --shape M=16,N=64,K=16 --fidelity sampled "
                                 "--set simulation.sample_every=1 --set simulation.sample_rtl_budget_percent=100 "
                                 "--out {}",
                                 out.string()));
  EXPECT_EQ(r.status, 0) << r.err;
  std::ifstream in(out / "stats.txt");
  const std::string stats((std::istreambuf_iterator<char>(in)), {});
  // Every multiply sampled (4: two 8-row tiles of M, two of K), none left to the fast model alone.
  EXPECT_THAT(stats, ::testing::ContainsRegex("core\\.tensor\\.datapath\\.sampled_instructions +4 #"));
  EXPECT_THAT(stats, ::testing::ContainsRegex("core\\.tensor\\.datapath\\.unsampled_instructions +0 #"));
  fs::remove_all(out);
}

TEST(Cli, ValidateShippedConfigsSucceeds) {
  const auto r = run(fmt::format("config validate {} {}", configs("neuroncore-v2.yaml"), configs("tiny.yaml")));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ok"));
  EXPECT_EQ(r.err, "");
}

TEST(Cli, ValidateBadConfigPrintsFileLineAndExits2) {
  const fs::path bad = fs::temp_directory_path() / "tessera_cli_bad.yaml";
  std::ofstream(bad) << "base: tiny\ntensor:\n  rows: 0\n";
  const auto r = run(fmt::format("config validate {}", bad.string()));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, bad.string() + ":3: tensor.rows: must be at least 1, got 0\n");
  fs::remove(bad);
}

TEST(Cli, ShowPrintsResolvedConfigWithDerivedFigures) {
  const auto r = run("config show neuroncore-v3");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("clock_ghz: 2.4"));
  EXPECT_THAT(r.out, HasSubstr("peak_tflops.bf16"));
  EXPECT_THAT(r.out, HasSubstr("78.6 TFLOPS"));
  EXPECT_THAT(r.out, Not(HasSubstr("base:")));
}

TEST(Cli, ShowAppliesSetAndPrintsJson) {
  const auto r = run("config show neuroncore-v2 --set tensor.clock_ghz=1.4 --json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"clock_ghz\": 1.4"));
  EXPECT_THAT(r.out, HasSubstr("\"bf16\": 45.875"));
}

TEST(Cli, ShowBadSetExits2WithSuggestion) {
  const auto r = run("config show tiny --set tensor.rowz=4");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("did you mean 'tensor.rows'?"));
}

TEST(Cli, UnknownSubcommandExits2) {
  const auto r = run("frobnicate");
  EXPECT_EQ(r.status, 2);
}

TEST(Cli, HelpOnEverySubcommand) {
  for (const char* sub : {"", "config", "config validate", "config show", "list", "list configs"}) {
    SCOPED_TRACE(sub);
    const auto r = run(fmt::format("{} --help", sub));
    EXPECT_EQ(r.status, 0);
    EXPECT_THAT(r.out, HasSubstr("Usage"));
  }
}

// docs/configs.md carries the schema table; it must match the schema.
TEST(Cli, ConfigDocsMatchTheSchema) {
  const auto r = run("config schema");
  EXPECT_EQ(r.status, 0);
  std::ifstream in(fmt::format("{}/docs/configs.md", TESSERA_SOURCE_DIR));
  const std::string doc((std::istreambuf_iterator<char>(in)), {});
  EXPECT_THAT(doc, HasSubstr(r.out)) << "docs/configs.md is out of date: regenerate its key table with "
                                        "`build/tessera config schema`";
}

}  // namespace
