// Kernels from a plugin (docs/examples/kernel-project/axpy.cpp built as a
// shared library) run everywhere the library's do: list, run, regress,
// sweep, loaded by --plugin or $TESSERA_PLUGINS; bad plugins are errors
// naming the file.
#include "tessera_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using tessera::test_support::run_tessera;

const std::string kPlugin = TESSERA_AXPY_PLUGIN;
const std::string kExample = std::string(TESSERA_SOURCE_DIR) + "/docs/examples/kernel-project";

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / fmt::format("tessera_plugin_test_{}_{}", name, ::getpid());
  fs::remove_all(p);
  return p;
}

TEST(Plugin, ItsKernelsAreListedWithTheirOrigin) {
  const auto r = run_tessera("list kernels --plugin " + kPlugin);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("axpy"));
  EXPECT_THAT(r.out, HasSubstr("F=512,B=2"));
  EXPECT_THAT(r.out, HasSubstr("[" + fs::canonical(kPlugin).string() + "]"));
  EXPECT_THAT(r.out, HasSubstr("gemm"));  // and the library's still
}

TEST(Plugin, ItsKernelRunsLikeALibraryKernel) {
  const auto r = run_tessera("run --plugin " + kPlugin +
                             " --config small --kernel axpy --variant scalar --fidelity tlm --shape R=37,C=300 "
                             "--param F=64 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kernel"], "axpy");
  EXPECT_EQ(j["variant"], "scalar");
  EXPECT_EQ(j["params"], (nlohmann::json{{"B", 2}, {"F", 64}}));
  EXPECT_TRUE(j["correct"]);
  EXPECT_GT(j["time_ns"].get<double>(), 0);
}

TEST(Plugin, TheEnvironmentLoadsItToo) {
  const auto r = run_tessera("run --config tiny --kernel axpy --fidelity tlm --shape R=8,C=64",
                             "TESSERA_PLUGINS=/nowhere-empty-entries-are-skipped::" + kPlugin);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("TESSERA_PLUGINS: plugin /nowhere-empty-entries-are-skipped: no such file"));
  const auto ok = run_tessera("run --config tiny --kernel axpy --fidelity tlm --shape R=8,C=64",
                              "TESSERA_PLUGINS=" + kPlugin);
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("numerics: match"));
}

TEST(Plugin, RegressPassesItToEveryJob) {
  const fs::path out = scratch("regress");
  const auto r = run_tessera(fmt::format("regress {}/axpy-suite.yaml --plugin={} -j 2 --out {}", kExample, kPlugin,
                                         out.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::ifstream in(out / "results.json");
  const auto j = nlohmann::json::parse(in);
  int passed = 0;
  for (const auto& job : j) {
    EXPECT_EQ(job["status"], "pass") << job.dump();
    EXPECT_TRUE(job.contains("params")) << job.dump();
    passed += job["status"] == "pass";
  }
  EXPECT_EQ(passed, 8);  // 2 variants x 2 configs x 2 parameter sets
  fs::remove_all(out);
}

TEST(Plugin, SweepPassesItToEveryPoint) {
  const fs::path out = scratch("sweep");
  const auto r = run_tessera(fmt::format("sweep {}/axpy-study.yaml --plugin {} -j 2 --no-plots --out {}", kExample,
                                         kPlugin, out.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::ifstream in(out / "results.json");
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["points"].size(), 6u) << j.dump();  // 3 bandwidths x 2 tile sizes
  for (const auto& p : j["points"]) EXPECT_EQ(p["status"], "pass") << p.dump();
  fs::remove_all(out);
}

TEST(Plugin, ANameTheLibraryHasIsAnErrorNamingBoth) {
  const auto r = run_tessera("list kernels --plugin " + std::string(TESSERA_DUPLICATE_PLUGIN));
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("kernel 'gemm' is already registered by the kernel library"));
  EXPECT_THAT(r.err, HasSubstr("duplicate_plugin"));
}

TEST(Plugin, AFileThatIsNoPluginIsAnError) {
  auto r = run_tessera("list kernels --plugin /no/such/lib.so");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("tessera: plugin /no/such/lib.so: no such file"));
  r = run_tessera(fmt::format("list kernels --plugin {}/configs/tiny.yaml", TESSERA_SOURCE_DIR));
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("cannot load"));
}

}  // namespace
