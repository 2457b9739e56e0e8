// Device end to end on the tiny config: tensors up, a kernel built with
// KernelBuilder, run on the core, results down, against a reference.
#include "tessera/device.h"
#include "tessera/kernel_builder.h"

#include "arch/numerics.h"
#include "cosim/waves.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <unistd.h>

namespace tessera {
namespace {

DeviceOptions tiny_options() {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  DeviceOptions o;
  o.config = "tiny";
  o.fidelity = arch::Fidelity::Tlm;
  return o;
}

TEST(Device, SmallMatmulThroughHbmMatchesTheReference) {
  Device dev(tiny_options());
  const std::int64_t M = 8, K = 8, N = 24;
  Tensor a = dev.allocate("a", {M, K}, DType::Bf16);
  Tensor b = dev.allocate("b", {K, N}, DType::Bf16);
  Tensor c = dev.allocate("c", {M, N}, DType::Fp32);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  std::vector<float> av(M * K), bv(K * N);
  for (auto& v : av) v = dist(rng);
  for (auto& v : bv) v = dist(rng);
  dev.upload(a, av);
  dev.upload(b, bv);

  KernelBuilder kb(dev.config(), "matmul");
  const Tile at = kb.sbuf("aT", K, M, DType::Bf16), bt = kb.sbuf("b", K, N, DType::Bf16);
  const Tile acc = kb.psum("acc", M, N), out = kb.sbuf("out", M, N, DType::Fp32);
  kb.dma(at, View{&a, 0, {K, M}, {1, K}});  // A transposed: contraction on partitions
  kb.dma(bt, b.all());
  kb.matmul(acc, at, bt, false);
  kb.copy(out, acc);
  kb.dma(c.all(), out);
  const RunReport r = dev.run(kb.build());
  ASSERT_TRUE(r.ok) << r.error;

  arch::Bf16Matrix st(K, M), mv(K, N);
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t m = 0; m < M; ++m) st.at(k, m) = arch::to_bf16(av[m * K + k]);
  for (std::int64_t i = 0; i < K * N; ++i) mv.data[i] = arch::to_bf16(bv[i]);
  arch::Fp32Matrix expect(M, N);
  arch::matmul(st, mv, arch::PsumMode::Overwrite, expect);
  const auto got = dev.download(c);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(arch::fp32_bits(got[i]), arch::fp32_bits(expect.data[i])) << i;

  EXPECT_GT(r.time_ns, 0);
  EXPECT_DOUBLE_EQ(r.matmul_flops, 2.0 * M * N * K);
  EXPECT_GT(r.hfu_percent, 0);
  EXPECT_EQ(r.dma_transfers, 3);
  // Two waits (the two loads ride different DMA queues), load, multiply, signal, end.
  EXPECT_EQ(r.engines.at("tensor").instructions, 6);
  // stats.txt: one line per statistic, sorted, name padded to 52, value in 18 columns, "# description (unit)".
  const std::string& text = dev.stats_text();
  EXPECT_THAT(text, ::testing::HasSubstr("core.tensor.macs                                                   1536 # multiply-accumulates performed (count)\n"
                                         "core.tensor.matmuls                                                   1 # MultiplyMoving instructions (count)\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("dma.descriptors                                                       3 # descriptors completed by every DMA engine (count)\n"));
  std::istringstream lines(text);
  std::string previous;
  for (std::string l; std::getline(lines, l);) {
    EXPECT_THAT(l, ::testing::MatchesRegex("[a-z0-9_.]+ +[-+.e0-9]+ # .+ \\([a-zA-Z/]+\\)")) << l;
    const std::string name = l.substr(0, l.find(' '));
    EXPECT_LT(previous, name);
    previous = name;
  }
  // The dma row: every descriptor, and the busiest DMA engine's busy time;
  // the report names the engine with the most busy time.
  EXPECT_EQ(r.engines.at("dma").instructions, 3);
  EXPECT_GT(r.engines.at("dma").busy_ns, 0);
  EXPECT_LE(r.engines.at("dma").busy_ns, r.time_ns);
  std::string busiest;
  double most = 0;
  for (const auto& [name, e] : r.engines)
    if (e.busy_ns > most) {
      most = e.busy_ns;
      busiest = name;
    }
  EXPECT_EQ(r.bound_by(), busiest);
  EXPECT_EQ(r.to_json()["bound_by"], busiest);
  EXPECT_THAT(r.summary(), ::testing::HasSubstr("bound by: " + busiest + " (busy "));
}

// The save file names the RTL ports it shows from a list; each must exist in
// the Verilated tensor engine and DMA engines, or it would silently drop out.
TEST(Device, WaveSaveFileShowsEveryListedRtlPort) {
  DeviceOptions o = tiny_options();
  o.fidelity = arch::Fidelity::Rtl;
  const std::string fst = (std::filesystem::temp_directory_path() /
                           ("tessera_device_waves_" + std::to_string(::getpid()) + ".fst")).string();
  o.waves = fst;
  Device dev(o);
  Tensor a = dev.allocate("a", {8, 8}, DType::Bf16);
  Tensor c = dev.allocate("c", {8, 8}, DType::Fp32);
  KernelBuilder kb(dev.config(), "waves");
  const Tile t = kb.sbuf("t", 8, 8, DType::Bf16), out = kb.sbuf("out", 8, 8, DType::Fp32);
  const Tile acc = kb.psum("acc", 8, 8);
  kb.dma(t, a.all());
  kb.matmul(acc, t, t, false);
  kb.copy(out, acc);
  kb.dma(c.all(), out);
  const RunReport r = dev.run(kb.build());
  ASSERT_TRUE(r.ok) << r.error;
  std::ifstream in(dev.waves_save_file());
  ASSERT_TRUE(in) << dev.waves_save_file();
  std::set<std::string> shown;  // the leaf of every RTL signal row
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("rtl.", 0) != 0 && line.find("} rtl.") == std::string::npos) continue;
    std::string leaf = line.substr(line.rfind('.') + 1);
    leaf = leaf.substr(0, leaf.find('['));
    shown.insert(leaf);
  }
  for (const auto& group : cosim::tensor_engine_save_file_groups())
    for (const auto& port : group.ports) EXPECT_TRUE(shown.count(port)) << group.title << ": " << port;
  for (const auto& group : cosim::dma_engine_save_file_groups())
    for (const auto& port : group.ports) EXPECT_TRUE(shown.count(port)) << "DMA " << group.title << ": " << port;
  std::filesystem::remove(fst);
  std::filesystem::remove(dev.waves_save_file());
}

TEST(Device, SecondRunInOneProcessIsAClearError) {
  Device dev(tiny_options());
  KernelBuilder kb(dev.config(), "empty");
  dev.run(kb.build());
  KernelBuilder kb2(dev.config(), "again");
  EXPECT_THROW(dev.run(kb2.build()), KernelError);
}

TEST(Device, RtlFidelityOnASizeThatWasNotVerilatedIsAClearError) {
  auto o = tiny_options();
  o.fidelity = arch::Fidelity::Rtl;
  o.overrides = {{"tensor.rows", "4"}, {"tensor.cols", "4"}, {"tensor.stationary_max_free", "4"}};
  Device dev(o);
  KernelBuilder kb(dev.config(), "empty");
  try {
    dev.run(kb.build());
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("no Verilated tensor engine of 4x4"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("rtl/tensor_engine/array_sizes.cmake"));
  }
}

}  // namespace
}  // namespace tessera
