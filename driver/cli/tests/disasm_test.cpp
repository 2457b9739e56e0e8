// `tessera disasm` as a user runs it: the listing names every engine and DMA
// queue, each line its builder call and label, and agrees with what a run
// executes; bad input is refused with exit status 2 and a named problem.
#include "tessera_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using tessera::test_support::run_tessera;

TEST(Disasm, ListsEveryEngineAndQueueWithCallSitesAndLabels) {
  const auto r = run_tessera("disasm --config tiny --kernel gemm --variant blocked_mnk --shape M=16,N=24,K=16");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("program 'gemm'"));
  for (const char* section : {"[tensor]", "[vector]", "[scalar]", "[gpsimd]", "[sync]", "[dma0.q"})
    EXPECT_THAT(r.out, HasSubstr(section));
  EXPECT_THAT(r.out, HasSubstr("MultiplyMoving"));
  EXPECT_THAT(r.out, HasSubstr("; at kernels/gemm/gemm.cpp:"));
  EXPECT_THAT(r.out, HasSubstr("label 'C block m0 n0"));

  // As many instructions as the run executes (its report counts them).
  const std::regex header(R"(: (\d+) instructions, (\d+) DMA queues)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, header)) << r.out.substr(0, 200);
  const auto run = run_tessera("run --config tiny --kernel gemm --variant blocked_mnk --shape M=16,N=24,K=16 "
                               "--fidelity tlm --no-data --json");
  ASSERT_EQ(run.status, 0) << run.err;
  const auto report = nlohmann::json::parse(run.out);
  double executed = 0;
  for (const auto& [engine, figures] : report["engines"].items())
    if (engine != "dma") executed += figures["instructions"].get<double>();
  EXPECT_EQ(std::stoul(m[1]), static_cast<unsigned long>(executed));
}

TEST(Disasm, OutWritesTheSameListing) {
  const fs::path out = tessera::test_support::scratch_dir() / "listing" / "gemm.txt";
  const std::string args = "disasm --config small --kernel softmax --shape R=40,C=70";
  const auto printed = run_tessera(args);
  ASSERT_EQ(printed.status, 0) << printed.err;
  const auto written = run_tessera(args + " --out " + out.string());
  ASSERT_EQ(written.status, 0) << written.err;
  EXPECT_TRUE(written.out.empty());
  std::ifstream in(out);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), printed.out);
}

TEST(Disasm, BadInputIsNamed) {
  auto r = run_tessera("disasm --config tiny");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--kernel is required"));
  r = run_tessera("disasm --config tiny --kernel gemmm");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("gemmm"));
  r = run_tessera("disasm --config tiny --kernel gemm --param nope=1");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("nope"));
  // A shape whose tiles overflow SBUF: the builder's rule and the call.
  r = run_tessera("disasm --config tiny --kernel gemm --variant blocked_mn --shape K=4096");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("use blocked_mnk"));
  r = run_tessera("disasm --config tiny --kernel gemm --set sbuf.partitions=0");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("sbuf.partitions"));
  r = run_tessera("disasm --config tiny --kernel gemm --out /proc/version/listing.txt");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("/proc/version"));
}

}  // namespace
