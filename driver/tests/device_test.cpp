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
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
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

// The report's time by call site: each engine's rows add up to its busy,
// waiting and fetch time, the DMA rows to every descriptor and byte moved,
// and the rows name this file's lines.
TEST(Device, TimeByCallSiteAddsUpToTheEnginesTotals) {
  Device dev(tiny_options());
  const std::int64_t M = 8, K = 8, N = 24;
  Tensor a = dev.allocate("a", {M, K}, DType::Bf16);
  Tensor b = dev.allocate("b", {K, N}, DType::Bf16);
  Tensor c = dev.allocate("c", {M, N}, DType::Fp32);
  KernelBuilder kb(dev.config(), "matmul");
  const Tile at = kb.sbuf("aT", K, M, DType::Bf16), bt = kb.sbuf("b", K, N, DType::Bf16);
  const Tile acc = kb.psum("acc", M, N), out = kb.sbuf("out", M, N, DType::Fp32);
  kb.label("load");
  kb.dma(at, View{&a, 0, {K, M}, {1, K}});
  kb.dma(bt, b.all());
  kb.label("multiply");
  const int matmul_line = __LINE__ + 1;
  kb.matmul(acc, at, bt, false);
  kb.label("store");
  kb.copy(out, acc);
  kb.dma(c.all(), out);
  const RunReport r = dev.run(kb.build());
  ASSERT_TRUE(r.ok) << r.error;

  for (const auto* rows : {&r.by_site, &r.by_label}) {
    std::map<std::string, SiteCost> sum;
    for (const SiteCost& row : *rows) {
      SiteCost& s = sum[row.engine];
      s.count += row.count;
      s.busy_ns += row.busy_ns;
      s.waiting_ns += row.waiting_ns;
      s.fetch_wait_ns += row.fetch_wait_ns;
      s.dma_bytes += row.dma_bytes;
    }
    EXPECT_EQ(sum.count("sync"), 0u);  // its waiting costs nothing, as in top_stalls
    for (const char* engine : {"tensor", "vector", "scalar", "gpsimd"}) {
      const EngineReport& e = r.engines.at(engine);
      EXPECT_NEAR(sum[engine].busy_ns, e.busy_ns, 1e-6) << engine;
      EXPECT_NEAR(sum[engine].waiting_ns, e.semaphore_wait_ns, 1e-6) << engine;
      EXPECT_NEAR(sum[engine].fetch_wait_ns, e.fetch_wait_ns, 1e-6) << engine;
    }
    EXPECT_EQ(sum["tensor"].count, 2);  // the weight load and the multiply; waits and increments are not counted
    EXPECT_EQ(sum["dma"].count, r.dma_transfers);
    EXPECT_DOUBLE_EQ(sum["dma"].dma_bytes, r.dma_bytes);
    EXPECT_GT(sum["dma"].busy_ns, 0);
    for (std::size_t i = 1; i < rows->size(); ++i) EXPECT_GE((*rows)[i - 1].total_ns(), (*rows)[i].total_ns());
  }
  const std::string here = fmt::format("driver/tests/device_test.cpp:{}", matmul_line);
  const auto matmul = std::find_if(r.by_site.begin(), r.by_site.end(),
                                   [&](const SiteCost& row) { return row.site == here; });
  ASSERT_NE(matmul, r.by_site.end());
  EXPECT_EQ(matmul->engine, "tensor");
  EXPECT_EQ(matmul->count, 2);
  EXPECT_GT(matmul->busy_ns, 0);
  // The tensor engine's semaphore waits are for the two loads: DMA.
  ASSERT_GT(matmul->waiting_ns, 0);
  EXPECT_NEAR(matmul->waiting_for.at("DMA"), matmul->waiting_ns, 1e-6);
  EXPECT_NEAR(matmul->waiting_for.count("instruction fetch") ? matmul->waiting_for.at("instruction fetch") : 0.0,
              matmul->fetch_wait_ns, 1e-6);
  std::set<std::string> labels;
  for (const SiteCost& row : r.by_label) labels.insert(row.engine + " " + row.label);
  EXPECT_TRUE(labels.count("tensor multiply") && labels.count("dma load") && labels.count("vector store"));
  EXPECT_THAT(r.summary(), ::testing::HasSubstr(here));
  const nlohmann::json j = r.to_json();
  ASSERT_EQ(j["by_site"].size(), r.by_site.size());
  EXPECT_EQ(j["by_site"][0]["site"], r.by_site[0].site);
  EXPECT_EQ(j["by_label"][0]["label"], r.by_label[0].label);
}

// Alters every Copy of a built program's vector stream, as a broken
// program would hold it.
void change_copies(Program& p, const std::function<void(arch::Instruction&)>& change) {
  InstructionStream& vec = p.streams[static_cast<int>(arch::Engine::Vector)];
  for (std::size_t i = 0; i < vec.size(); ++i) {
    arch::Instruction in = vec[i];
    if (in.opcode != arch::Opcode::Copy) continue;
    change(in);
    vec.set(i, in);
  }
}

// An instruction that breaks a rule at run time (here, altered after
// building) stops the run with an error naming its call site and label.
TEST(Device, ARunTimeErrorNamesTheCallSiteAndLabel) {
  Device dev(tiny_options());
  KernelBuilder kb(dev.config(), "broken");
  const Tile t = kb.sbuf("t", 8, 16, DType::Fp32), u = kb.sbuf("u", 8, 16, DType::Fp32);
  kb.memset(t, 1);
  kb.label("the copy");
  const int copy_line = __LINE__ + 1;
  kb.copy(u, t);
  Program p = kb.build();
  change_copies(p, [](arch::Instruction& in) { in.a.offset_bytes = 16 * 1024 - 32; });  // past the end of tiny's SBUF
  const RunReport r = dev.run(p);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::MatchesRegex(fmt::format(
                           ".*vector instruction #[0-9]+ \\(byte [0-9]+\\) at driver/tests/device_test.cpp:{}, "
                           "label 'the copy': vector Copy.*outside sbuf.*",
                           copy_line)));
}

// An instruction the core cannot decode (here an operand in HBM, which no
// engine reaches) stops the run at it, named; the report is still made.
TEST(Device, AnUndecodableInstructionStopsTheRunNamed) {
  Device dev(tiny_options());
  KernelBuilder kb(dev.config(), "broken");
  const Tile t = kb.sbuf("t", 8, 16, DType::Fp32), u = kb.sbuf("u", 8, 16, DType::Fp32);
  kb.memset(t, 1);
  kb.copy(u, t);
  Program p = kb.build();
  change_copies(p, [](arch::Instruction& in) { in.a.memory = arch::Memory::Hbm; });
  EXPECT_THAT(p.disassemble(), ::testing::HasSubstr("(cannot be decoded: byte"));
  const RunReport r = dev.run(p);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::MatchesRegex(".*vector instruction #[0-9]+ \\(byte [0-9]+\\).*operand memory 3 is not "
                                               "sbuf.*"));
}

// A large program goes into HBM piece by piece (256 KiB at a time): its
// streams and rings must arrive whole, each DmaTrigger pointing at its
// descriptor, across the pieces' edges. Thousands of row copies through SBUF
// make a stream and rings longer than several pieces; every row must come back
// where it belongs.
TEST(Device, AProgramLongerThanTheLoadersPiecesRunsWhole) {
  Device dev(tiny_options());
  const std::int64_t blocks = 13000, rows = 8, cols = 4;
  Tensor x = dev.allocate("x", {blocks * rows, cols}, DType::Fp32);
  Tensor y = dev.allocate("y", {blocks * rows, cols}, DType::Fp32);
  std::vector<float> xv(static_cast<std::size_t>(blocks * rows * cols));
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i);
  dev.upload(x, xv);
  KernelBuilder kb(dev.config(), "copy_rows");
  const Tile t[2] = {kb.sbuf("t0", rows, cols, DType::Fp32), kb.sbuf("t1", rows, cols, DType::Fp32)};
  for (std::int64_t b = 0; b < blocks; ++b) {
    const Tile& tile = t[b % 2];
    kb.dma(tile, View{&x, b * rows * cols, {rows, cols}, {cols, 1}});
    kb.dma(View{&y, b * rows * cols, {rows, cols}, {cols, 1}}, tile);
  }
  const Program p = kb.build();
  std::size_t longest_stream = 0, longest_ring = 0;
  for (const InstructionStream& stream : p.streams) longest_stream = std::max(longest_stream, stream.bytes().size());
  for (const auto& [queue, ring] : p.rings) longest_ring = std::max(longest_ring, ring.size());
  ASSERT_GT(longest_stream, std::size_t{3} << 18);  // over three pieces
  ASSERT_GT(longest_ring, std::size_t{3} << 12);    // 64-byte descriptors: over three pieces
  const RunReport r = dev.run(p);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(dev.download(y), xv);
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
  // MX scaling groups span 8 partitions: a 4-row array has no MX mode.
  o.overrides = {{"tensor.rows", "4"}, {"tensor.cols", "4"}, {"tensor.stationary_max_free", "4"},
                 {"tensor.mx_rows_per_pe", "0"}};
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

namespace tessera {
namespace {

// The narrow formats end to end in every fidelity (docs/formats.md): fp8
// tiles from HBM through a double-row matmul, the result cast back to fp8 on
// the vector and scalar engines (nearest even, saturating), and an MX matmul
// of MXFP8 by MXFP4 into a bf16 PSUM tile; every result bit for bit against
// the one numerics reference (arch::matmul on operands the test packs).
class DeviceFormats : public ::testing::TestWithParam<arch::Fidelity> {};

TEST_P(DeviceFormats, DoubleRowMxAndCastsMatchTheReference) {
  DeviceOptions o = tiny_options();
  o.fidelity = GetParam();
  Device dev(o);
  constexpr std::int64_t M = 8, N = 16, P = 8;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::uniform_int_distribution<int> byte(0, 255), nibble(0, 15), scale(120, 134);

  // fp8 double row: K = 2P, A transposed [K, M] in e4m3, B [K, N] in e5m2.
  Tensor at = dev.allocate("at", {2 * P, M}, DType::Fp8E4m3), b = dev.allocate("b", {2 * P, N}, DType::Fp8E5m2);
  std::vector<float> atv(2 * P * M), bv(2 * P * N);
  for (auto& v : atv) v = normal(rng);
  for (auto& v : bv) v = normal(rng);
  dev.upload(at, atv);
  dev.upload(b, bv);
  // MX: K = 4P; MXFP8 (e4m3) stationary, MXFP4 moving, one scale per column
  // of each 8-partition group, element codes drawn directly (no NaN codes).
  Tensor aq = dev.allocate("aq", {P, M}, DType::Fp8E4m3x4), as = dev.allocate("as", {1, M}, DType::Uint8);
  Tensor bq = dev.allocate("bq", {P, N}, DType::Fp4E2m1x4), bs = dev.allocate("bs", {1, N}, DType::Uint8);
  std::vector<std::uint8_t> aq_bits(P * M * 4), bq_bits(P * N * 4);
  std::vector<float> aqv, bqv, asv, bsv;
  for (auto& c : aq_bits) {
    do c = static_cast<std::uint8_t>(byte(rng));
    while ((c & 0x7F) == 0x7F);
    aqv.push_back(arch::fp8_e4m3_value(c));
  }
  for (auto& c : bq_bits) {
    c = static_cast<std::uint8_t>(nibble(rng));
    bqv.push_back(arch::fp4_e2m1_value(c));
  }
  for (std::int64_t i = 0; i < M; ++i) asv.push_back(static_cast<float>(scale(rng)));
  for (std::int64_t i = 0; i < N; ++i) bsv.push_back(static_cast<float>(scale(rng)));
  dev.upload(aq, aqv);
  dev.upload(bq, bqv);
  dev.upload(as, asv);
  dev.upload(bs, bsv);
  Tensor c = dev.allocate("c", {M, N}, DType::Fp32), c8 = dev.allocate("c8", {M, N}, DType::Fp8E4m3);
  Tensor c8s = dev.allocate("c8s", {M, N}, DType::Fp8E5m2), cmx = dev.allocate("cmx", {M, N}, DType::Fp32);

  KernelBuilder kb(dev.config(), "formats");
  const Tile al = kb.sbuf("al", P, M, DType::Fp8E4m3), ah = kb.sbuf("ah", P, M, DType::Fp8E4m3);
  const Tile bl = kb.sbuf("bl", P, N, DType::Fp8E5m2), bh = kb.sbuf("bh", P, N, DType::Fp8E5m2);
  kb.dma(al, at.region(0, 0, P, M));
  kb.dma(ah, at.region(P, 0, P, M));
  kb.dma(bl, b.region(0, 0, P, N));
  kb.dma(bh, b.region(P, 0, P, N));
  const Tile acc = kb.psum("acc", M, N);
  kb.matmul(acc, MatmulInput::double_row(al, ah), MatmulInput::double_row(bl, bh), false);
  const Tile out = kb.sbuf("out", M, N, DType::Fp32), out8 = kb.sbuf("out8", M, N, DType::Fp8E4m3);
  const Tile out8s = kb.sbuf("out8s", M, N, DType::Fp8E5m2);
  kb.copy(out, acc);
  kb.copy(out8, acc);                                               // vector: to e4m3
  kb.activation(out8s, acc, arch::ActFunc::Identity, 10000.0f);  // scalar: to e5m2, some saturate
  kb.dma(c.all(), out);
  kb.dma(c8.all(), out8);
  kb.dma(c8s.all(), out8s);
  const Tile aqt = kb.sbuf("aq", P, M, DType::Fp8E4m3x4), ast = kb.sbuf("as", 1, M, DType::Uint8);
  const Tile bqt = kb.sbuf("bq", P, N, DType::Fp4E2m1x4), bst = kb.sbuf("bs", 1, N, DType::Uint8);
  kb.dma(aqt, aq.all());
  kb.dma(ast, as.all());
  kb.dma(bqt, bq.all());
  kb.dma(bst, bs.all());
  const Tile accmx = kb.psum("accmx", M, N, DType::Bf16), outmx = kb.sbuf("outmx", M, N, DType::Fp32);
  kb.matmul(accmx, MatmulInput::mx(aqt, ast), MatmulInput::mx(bqt, bst), false);
  kb.copy(outmx, accmx);
  kb.dma(cmx.all(), outmx);
  const RunReport r = dev.run(kb.build());
  ASSERT_TRUE(r.ok) << r.error;

  // The reference's operands, packed as the array takes them.
  arch::TensorOperand st(arch::ElementFormat::Fp8E4m3, 2, false, P, M), mv(arch::ElementFormat::Fp8E5m2, 2, false, P, N);
  for (std::int64_t p = 0; p < P; ++p) {
    for (std::int64_t m = 0; m < M; ++m)
      st.word(p, m) = arch::to_fp8_e4m3(atv[p * M + m]) | arch::to_fp8_e4m3(atv[(p + P) * M + m]) << 8;
    for (std::int64_t n = 0; n < N; ++n)
      mv.word(p, n) = arch::to_fp8_e5m2(bv[p * N + n]) | arch::to_fp8_e5m2(bv[(p + P) * N + n]) << 8;
  }
  arch::Fp32Matrix expect(M, N);
  arch::matmul(st, mv, arch::PsumMode::Overwrite, expect);
  arch::TensorOperand sx(arch::ElementFormat::Fp8E4m3, 4, true, P, M), mx(arch::ElementFormat::Fp4E2m1, 4, true, P, N);
  for (std::int64_t p = 0; p < P; ++p) {
    for (std::int64_t m = 0; m < M; ++m) {
      for (int j = 0; j < 4; ++j) sx.word(p, m) |= std::uint32_t{aq_bits[(p * M + m) * 4 + j]} << (8 * j);
      sx.scales[p * M + m] = static_cast<std::uint8_t>(asv[m]);
    }
    for (std::int64_t n = 0; n < N; ++n) {
      for (int j = 0; j < 4; ++j) mx.word(p, n) |= std::uint32_t{bq_bits[(p * N + n) * 4 + j]} << (4 * j);
      mx.scales[p * N + n] = static_cast<std::uint8_t>(bsv[n]);
    }
  }
  arch::Fp32Matrix expect_mx(M, N);
  arch::matmul(sx, mx, arch::PsumMode::Overwrite, expect_mx);

  const auto got = dev.download(c), got8 = dev.download(c8), got8s = dev.download(c8s), gotmx = dev.download(cmx);
  int saturated = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(arch::fp32_bits(got[i]), arch::fp32_bits(expect.data[i])) << i;
    EXPECT_EQ(arch::to_fp8_e4m3(got8[i]), arch::to_fp8_e4m3(expect.data[i])) << i;
    const float scaled = expect.data[i] * 10000.0f;
    EXPECT_EQ(arch::to_fp8_e5m2(got8s[i]), arch::to_fp8_e5m2(scaled)) << i;
    if (std::fabs(scaled) > arch::kE5m2Max) {
      ++saturated;
      EXPECT_EQ(std::fabs(got8s[i]), arch::kE5m2Max) << i;
    }
    const float bf16 = arch::to_float(arch::psum_bf16_write(arch::Bf16{}, expect_mx.data[i], arch::PsumMode::Overwrite));
    ASSERT_EQ(arch::fp32_bits(gotmx[i]), arch::fp32_bits(bf16)) << i;
  }
  EXPECT_GT(saturated, 0);  // the test exercises saturation
  EXPECT_DOUBLE_EQ(r.matmul_flops, 2.0 * M * N * (2 * P) + 2.0 * M * N * (4 * P));
}

INSTANTIATE_TEST_SUITE_P(Fidelities, DeviceFormats,
                         ::testing::Values(arch::Fidelity::Tlm, arch::Fidelity::Sampled, arch::Fidelity::Rtl),
                         [](const auto& info) { return std::string(arch::to_string(info.param)); });

}  // namespace
}  // namespace tessera
