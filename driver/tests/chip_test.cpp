// Cores of a chip reaching each other (docs/multicore.md, "Between cores"):
// a copy into another core's SBUF lands and raises that core's semaphore, in
// tlm and rtl alike; the copy is costed on the cores' fabric ports, which
// senders to one receiver share; and every bad request names the builder
// call, or at run time the core and what it asked for. Each test is its own
// process (SystemC runs one simulation per process).
#include "tessera/device.h"
#include "tessera/kernel_builder.h"

#include "arch/address_map.h"
#include "testing/child_process.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <vector>

namespace tessera {
namespace {

using ::testing::HasSubstr;

DeviceOptions chip_options(const std::string& config, int cores, arch::Fidelity fidelity = arch::Fidelity::Tlm,
                           std::vector<arch::Override> overrides = {}) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  DeviceOptions o;
  o.config = config;
  o.cores = cores;
  o.fidelity = fidelity;
  o.overrides = std::move(overrides);
  return o;
}

std::vector<float> ramp(std::size_t n, float base) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = base + static_cast<float>(i);
  return v;
}

// Every core sends row `instance` of `in` ([cores, P * F] viewed as P x F
// per core) to core `to(instance)`, which stores what it received into row
// `to(instance)` of `out`. With to = i + 1 mod N, out row j holds in row j - 1.
RunReport exchange(Device& dev, Tensor& in, Tensor& out, std::uint32_t P, std::uint32_t F,
                   int (*to)(int instance, int grid)) {
  const int n = dev.cores();
  return dev.launch(
      [&](const Spmd& s) {
        KernelBuilder kb(dev.config(), "exchange", s);
        const CoreSemaphore arrived = kb.core_semaphore("arrived");
        Tile mine = kb.sbuf("mine", P, F, DType::Fp32);
        Tile theirs = kb.sbuf("theirs", P, F, DType::Fp32);
        kb.dma(mine, in.region(s.instance * P, 0, P, F));
        kb.dma_to_core(to(s.instance, s.grid), theirs, mine, arrived);
        // Every core receives from exactly one other here.
        kb.wait_core(arrived, 1, theirs);
        kb.dma(out.region(s.instance * P, 0, P, F), theirs);
        return kb.build();
      },
      n);
}

int next_core(int i, int grid) { return (i + 1) % grid; }

void expect_exchanged(Device& dev, const Tensor& in, const Tensor& out, std::size_t row) {
  const std::vector<float> a = dev.download(in), b = dev.download(out);
  const int n = dev.cores();
  for (int j = 0; j < n; ++j) {
    const int from = (j + n - 1) % n;
    for (std::size_t k = 0; k < row; ++k)
      ASSERT_EQ(b[static_cast<std::size_t>(j) * row + k], a[static_cast<std::size_t>(from) * row + k])
          << "core " << j << " element " << k;
  }
}

class CrossCoreCopy : public ::testing::TestWithParam<arch::Fidelity> {};

TEST_P(CrossCoreCopy, LandsInTheOtherCoresSbufAndRaisesItsSemaphore) {
  Device dev(chip_options("tiny", 2, GetParam()));
  const std::uint32_t P = 8, F = 128;  // 4 KiB per core: two pieces, one per engine
  Tensor in = dev.allocate("in", {2 * P, F}, DType::Fp32);
  Tensor out = dev.allocate("out", {2 * P, F}, DType::Fp32);
  dev.upload(in, ramp(2 * P * F, 1));
  dev.upload(out, std::vector<float>(2 * P * F, -1));
  const RunReport r = exchange(dev, in, out, P, F, next_core);
  ASSERT_TRUE(r.ok) << r.error;
  expect_exchanged(dev, in, out, P * F);
  // Each core's port carried its copy out and the other's in.
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(r.stats.at(fmt::format("fabric.core{}.bytes_sent", c)).get<double>(), P * F * 4.0 + 4.0)
        << "the copy and its semaphore increment";
    EXPECT_EQ(r.stats.at(fmt::format("fabric.core{}.bytes_received", c)).get<double>(), P * F * 4.0 + 4.0);
    EXPECT_EQ(r.stats.at(fmt::format("fabric.core{}.signals_sent", c)).get<double>(), 1.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Fidelities, CrossCoreCopy, ::testing::Values(arch::Fidelity::Tlm, arch::Fidelity::Rtl),
                         [](const auto& info) { return std::string(arch::to_string(info.param)); });

// The exchange's end on `cores` cores of `config` where every core sends to
// core 0 (fan-in) or to the next (a ring), with `gbps` fabric ports; run in
// a child process.
double exchange_ns(const std::string& config, int cores, bool fan_in, double gbps) {
  const std::string text = test_support::run_in_child([&]() -> std::string {
  Device dev(chip_options(config, cores, arch::Fidelity::Tlm,
                          {{"chip.core_link_bandwidth_gbps", std::to_string(gbps)}}));
  const std::uint32_t P = 32, F = 1024;  // 128 KiB per core
  Tensor in = dev.allocate("in", {cores * std::int64_t{P}, F}, DType::Fp32);
  Tensor out = dev.allocate("out", {cores * std::int64_t{P}, F}, DType::Fp32);
  const RunReport r = dev.launch(
      [&](const Spmd& s) {
        KernelBuilder kb(dev.config(), "fan", s);
        const CoreSemaphore arrived = kb.core_semaphore("arrived");
        Tile mine = kb.sbuf("mine", P, F, DType::Fp32);
        kb.dma(mine, in.region(s.instance * P, 0, P, F));
        Tile theirs = kb.sbuf("theirs", P, F, DType::Fp32);
        if (fan_in) {
          if (s.instance != 0) kb.dma_to_core(0, theirs, mine, arrived);
          if (s.instance == 0) {
            kb.wait_core(arrived, static_cast<std::uint32_t>(s.grid - 1), theirs);
            kb.dma(out.region(0, 0, P, F), theirs);
          } else {
            kb.dma(out.region(s.instance * P, 0, P, F), mine);
          }
        } else {
          kb.dma_to_core(next_core(s.instance, s.grid), theirs, mine, arrived);
          kb.wait_core(arrived, 1, theirs);
          kb.dma(out.region(s.instance * P, 0, P, F), theirs);
        }
        return kb.build();
      },
      cores);
  return r.ok ? std::to_string(r.time_ns) : "error: " + r.error;
  });
  EXPECT_EQ(text.find("e"), std::string::npos) << text;
  return std::atof(text.c_str());
}

TEST(CrossCoreCopy, IsCostedOnTheFabricPorts) {
  // 128 KiB at 64 GB/s is 2 us on the port; at 16 GB/s 8 us.
  const double fast = exchange_ns("small", 2, false, 64), slow = exchange_ns("small", 2, false, 16);
  EXPECT_GT(slow - fast, 5000) << fast << " ns vs " << slow << " ns";
}

TEST(CrossCoreCopy, SendersToOneCoreShareItsPort) {
  // A ring moves one copy through each port; three cores sending to core 0
  // put three through its incoming direction.
  const double ring = exchange_ns("small", 4, false, 16), fan_in = exchange_ns("small", 4, true, 16);
  EXPECT_GT(fan_in - ring, 2 * 8000 * 0.8) << ring << " ns vs " << fan_in << " ns";
}

// --- builder errors, each naming its call ---------------------------------

std::string build_error(const std::string& config, const Spmd& spmd,
                        const std::function<void(KernelBuilder&, Tile&, Tile&, const CoreSemaphore&)>& body) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  const arch::ResolvedConfig cfg = arch::load_config(config);
  KernelBuilder kb(cfg.hw, "bad", spmd);
  Tensor t{"t", {8, 64}, DType::Fp32, 0};
  Tile a = kb.sbuf("a", 8, 64, DType::Fp32);
  Tile b = kb.sbuf("b", 8, 64, DType::Fp32);
  kb.dma(a, t.all());
  const CoreSemaphore sem = kb.core_semaphore("s");
  try {
    body(kb, a, b, sem);
  } catch (const KernelError& e) {
    return e.what();
  }
  return "";
}

TEST(CrossCoreErrors, ACoreOutsideTheLaunch) {
  const std::string e = build_error("tiny", {0, 2}, [](KernelBuilder& kb, Tile& a, Tile& b, const CoreSemaphore& s) {
    kb.dma_to_core(2, b, a, s);
  });
  EXPECT_THAT(e, HasSubstr("dma_to_core(2, tile 'b' <- tile 'a', 's'): core 2 is outside the launch's 2 cores (0 .. 1)"));
  EXPECT_THAT(build_error("tiny", {0, 2},
                          [](KernelBuilder& kb, Tile& a, Tile&, const CoreSemaphore& s) { kb.signal_core(-1, s, a); }),
              HasSubstr("signal_core(-1, 's', after tile 'a'): core -1 is outside"));
  EXPECT_THAT(build_error("tiny", {1, 2},
                          [](KernelBuilder& kb, Tile&, Tile& b, const CoreSemaphore& s) { kb.wait_core(s, 1, b, 5); }),
              HasSubstr("wait_core('s' >= 1, tile 'b' of core 5): core 5 is outside"));
}

TEST(CrossCoreErrors, ThisCoreAndAKernelOfOneCore) {
  EXPECT_THAT(build_error("tiny", {1, 2},
                          [](KernelBuilder& kb, Tile& a, Tile& b, const CoreSemaphore& s) { kb.dma_to_core(1, b, a, s); }),
              HasSubstr("core 1 is this core"));
  EXPECT_THAT(build_error("tiny", {0, 1},
                          [](KernelBuilder& kb, Tile& a, Tile& b, const CoreSemaphore& s) { kb.dma_to_core(1, b, a, s); }),
              HasSubstr("this kernel is built for one core"));
}

TEST(CrossCoreErrors, AChipWhoseDmaReachesNoOtherCore) {
  EXPECT_THAT(build_error("neuroncore-v2", {0, 2},
                          [](KernelBuilder& kb, Tile& a, Tile& b, const CoreSemaphore& s) { kb.dma_to_core(1, b, a, s); }),
              HasSubstr("no DMA engine of a neuroncore-v2 core reaches another core's SBUF (chip.peer_dma_engines is 0)"));
  // Semaphores still reach the other core.
  EXPECT_EQ(build_error("neuroncore-v2", {0, 2},
                        [](KernelBuilder& kb, Tile& a, Tile&, const CoreSemaphore& s) { kb.signal_core(1, s, a); }),
            "");
}

TEST(CrossCoreErrors, ASemaphoreOfAnotherKernelOrAnEmptyWait) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  const arch::ResolvedConfig cfg = arch::load_config("tiny");
  KernelBuilder other(cfg.hw, "other", {0, 2});
  const CoreSemaphore foreign = other.core_semaphore("foreign");
  EXPECT_THAT(build_error("tiny", {0, 2},
                          [&](KernelBuilder& kb, Tile& a, Tile&, const CoreSemaphore&) { kb.signal_core(1, foreign, a); }),
              HasSubstr("semaphore 'foreign' was not made by this kernel's core_semaphore()"));
  EXPECT_THAT(build_error("tiny", {0, 2},
                          [](KernelBuilder& kb, Tile&, Tile& b, const CoreSemaphore& s) { kb.wait_core(s, 0, b); }),
              HasSubstr("wait_core('s' >= 0, tile 'b'): a wait for 0 raises waits for nothing"));
  EXPECT_THAT(build_error("tiny", {0, 2},
                          [](KernelBuilder& kb, Tile&, Tile&, const CoreSemaphore&) { kb.core_semaphore("s"); }),
              HasSubstr("core_semaphore('s'): the kernel already has a semaphore of that name"));
}

// --- run-time errors: a program the builder did not check ------------------

// Core 0 signals core 1; `patch` edits core 0's program before the run.
RunReport run_patched(const DeviceOptions& options, const arch::HwConfig* build_cfg,
                      const std::function<void(Program&)>& patch) {
  Device dev(options);
  Tensor t = dev.allocate("t", {8, 512}, DType::Fp32);
  std::vector<Program> programs;
  for (int i = 0; i < 2; ++i) {
    KernelBuilder kb(build_cfg ? *build_cfg : dev.config(), "patched", {i, 2});
    const CoreSemaphore s = kb.core_semaphore("s");
    Tile a = kb.sbuf("a", 8, 512, DType::Fp32);
    if (i == 0) {
      kb.dma(a, t.all());
      kb.dma_to_core(1, a, a, s);
    } else {
      kb.wait_core(s, 1, a);
      kb.dma(t.all(), a);
    }
    programs.push_back(kb.build());
  }
  patch(programs[0]);
  return dev.run(programs);
}

void move_signal(Program& p, std::uint64_t cores) {
  InstructionStream& s = p.streams[static_cast<std::size_t>(arch::Engine::GpSimd)];
  for (std::size_t i = 0; i < s.size(); ++i) {
    arch::Instruction in = s[i];
    if (in.opcode != arch::Opcode::SemSignal) continue;
    in.address += cores * arch::kPeerStride;
    s.set(i, in);
  }
}

TEST(CrossCoreRunErrors, ASemaphoreOnACoreTheChipDoesNotHave) {
  const RunReport r = run_patched(chip_options("tiny", 2), nullptr, [](Program& p) { move_signal(p, 4); });
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("core 0: gpsimd instruction #"));
  EXPECT_THAT(r.error, HasSubstr("SemSignal: core 5 does not exist (chip.cores is 2)"));
}

TEST(CrossCoreRunErrors, ASemaphoreOnACoreTheRunDoesNotUse) {
  // A chip of four running two: core 3 exists but takes no part.
  const RunReport r = run_patched(chip_options("small", 2), nullptr, [](Program& p) { move_signal(p, 2); });
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("core 0: gpsimd instruction #"));
  EXPECT_THAT(r.error, HasSubstr("SemSignal: semaphore of core 3, but the chip runs 2 cores"));
}

// Core 1 waits for two arrivals and gets one, while core 0's DMA engines
// (run ahead by the chip's scheduler) move data: the chip ends, stuck, and
// the report names the core and the wait, rather than hanging.
TEST(CrossCoreRunErrors, AWaitNoCoreSatisfiesEndsTheRun) {
  Device dev(chip_options("tiny", 2));
  Tensor t = dev.allocate("t", {8, 512}, DType::Fp32);
  const RunReport r = dev.launch(
      [&](const Spmd& s) {
        KernelBuilder kb(dev.config(), "stuck", s);
        const CoreSemaphore arrived = kb.core_semaphore("arrived");
        Tile a = kb.sbuf("a", 8, 512, DType::Fp32);
        if (s.instance == 0) {
          kb.dma(a, t.all());
          kb.dma_to_core(1, a, a, arrived);
        } else {
          kb.wait_core(arrived, 2, a);
          kb.dma(t.all(), a);
        }
        return kb.build();
      },
      2);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("core 1: deadlock at "));
  EXPECT_THAT(r.error, HasSubstr("core1.gpsimd: sem["));
  EXPECT_THAT(r.error, HasSubstr(">= 2 (value now 1)"));
  // At the time the last engine stopped, microseconds in, not at the run's limit.
  EXPECT_THAT(r.error, HasSubstr(" us: no engine can make progress"));
}

TEST(CrossCoreRunErrors, ADmaEngineWithNoPathToTheOtherCores) {
  // Built for two engines that reach the other core; run where only engine 0 does.
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  const arch::HwConfig both = arch::core_on_chip(arch::load_config("tiny").hw);
  const RunReport r = run_patched(chip_options("tiny", 2, arch::Fidelity::Tlm, {{"chip.peer_dma_engines", "1"}}),
                                  &both, [](Program&) {});
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("core 0"));
  EXPECT_THAT(r.error, HasSubstr("dma1"));
}

}  // namespace
}  // namespace tessera
