// The tensor engine on RTL inside the core: a hand-written program on tiny
// (two interleaved accumulate chains with weight loads overlapping the
// multiplies, a shape under the initiation interval, a K < Rows shape, a
// vector engine reading PSUM between chains, a transpose) run in tlm, rtl and
// sampled, each in its own process. Results must be bit-identical to the
// reference in every fidelity, and the RTL's accept and completion cycles
// equal to the fast model's, instruction by instruction.
#include "cosim/dma_sampler.h"
#include "cosim/rtl_dma_engine.h"
#include "cosim/rtl_tensor_datapath.h"

#include "arch/dma_descriptor.h"
#include "arch/numerics.h"
#include "engines/tensor_engine.h"
#include "testing/child_process.h"
#include "testing/dma_programs.h"
#include "testing/shipped_config.h"
#include "testing/stream.h"
#include "testing/tensor_programs.h"
#include "trace/sim_time.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <random>

namespace tessera::cosim {
namespace {

using arch::Bf16Matrix;
using arch::DType;
using arch::Fp32Matrix;
using arch::Memory;
using arch::Opcode;
using core::NeuronCore;
using test_support::Stream;
using test_support::load_stationary;
using test_support::multiply;
using test_support::random_bf16;
using test_support::ring_of;
using test_support::tile_descriptor;
using test_support::trigger;
using nlohmann::json;

const arch::HwConfig& tiny() { return test_support::shipped_config("tiny"); }

// One operand tile in SBUF (bytes from `offset`) and where its result goes.
struct Tile {
  Bf16Matrix data;
  std::uint32_t offset;
};

// The program and its data. PSUM regions: A (bank 0), B (bank 1), C (bank 2),
// D and the transpose T (bank 3). SBUF: weights, then moving tiles, then the
// vector engine's copy of A.
struct Pipeline {
  Tile w0, w1, w2, w3, xa0, xa1, xa2, xb0, xb1, xc0, xc1, xs0, xs1, t;
  static constexpr std::uint32_t kA = 0, kB = 1024, kC = 2048, kD = 3072, kT = 3328, kCopy = 8192;

  Pipeline() {
    std::mt19937 rng(23);
    w0 = {random_bf16(8, 8, rng), 0};
    w1 = {random_bf16(8, 8, rng), 16};
    w2 = {random_bf16(8, 8, rng), 32};
    w3 = {random_bf16(5, 6, rng), 48};
    xa0 = {random_bf16(8, 64, rng), 256};
    xa1 = {random_bf16(8, 64, rng), 384};
    xa2 = {random_bf16(8, 64, rng), 512};
    xb0 = {random_bf16(8, 32, rng), 640};
    xb1 = {random_bf16(8, 32, rng), 704};
    xc0 = {random_bf16(5, 24, rng), 768};
    xc1 = {random_bf16(5, 24, rng), 832};
    xs0 = {random_bf16(8, 3, rng), 896};
    xs1 = {random_bf16(8, 3, rng), 912};
    t = {random_bf16(8, 6, rng), 1024};
  }

  void place(NeuronCore& core) const {
    for (const Tile* tile : {&w0, &w1, &w2, &w3, &xa0, &xa1, &xa2, &xb0, &xb1, &xc0, &xc1, &xs0, &xs1, &t}) {
      const auto& m = tile->data;
      for (std::size_t p = 0; p < m.rows; ++p)
        std::memcpy(core.sbuf().at(p, tile->offset, m.cols * 2), &m.data[p * m.cols], m.cols * 2);
    }
  }

  void load(NeuronCore& core) const {
    Stream te(arch::Engine::Tensor);
    te.add(load_stationary(8, 8, w0.offset)).add(multiply(8, 8, 64, xa0.offset, kA, false));  // #0 #1
    te.add(load_stationary(8, 8, w1.offset)).add(multiply(8, 8, 32, xb0.offset, kB, false));  // #2 #3
    te.add(load_stationary(8, 8, w2.offset)).add(multiply(8, 8, 64, xa1.offset, kA, true));   // #4 #5
    te.add(load_stationary(5, 6, w3.offset)).add(multiply(5, 6, 24, xc0.offset, kC, false));  // #6 #7
    te.add(multiply(5, 6, 24, xc1.offset, kC, true));                                         // #8
    te.add(load_stationary(8, 8, w1.offset)).add(multiply(8, 8, 32, xb1.offset, kB, true));   // #9 #10
    te.add(multiply(8, 8, 3, xs0.offset, kD, false)).add(multiply(8, 8, 3, xs1.offset, kD, true));
    te.incr(0).wait(1, 1);  // the vector engine copies A, then the chain goes on
    te.add(load_stationary(8, 8, w0.offset)).add(multiply(8, 8, 64, xa2.offset, kA, true));
    arch::Instruction tr;
    tr.opcode = Opcode::Transpose;
    tr.a = arch::tile(Memory::Sbuf, DType::Bf16, 0, 8, t.offset, 6);
    tr.dst = arch::tile(Memory::Psum, DType::Fp32, 0, 6, kT, 8);
    te.add(tr).end();
    core.load_program(arch::Engine::Tensor, te.bytes);

    Stream ve(arch::Engine::Vector);
    ve.wait(0, 1)
        .op(Opcode::Copy, arch::tile(Memory::Sbuf, DType::Fp32, 0, 8, kCopy, 64),
            arch::tile(Memory::Psum, DType::Fp32, 0, 8, kA, 64))
        .incr(1)
        .end();
    core.load_program(arch::Engine::Vector, ve.bytes);
  }

  // What every fidelity must leave behind, from the numerics reference.
  json expected() const {
    Fp32Matrix a(8, 64), b(8, 32), c(6, 24), d(8, 3), t_out(6, 8);
    arch::matmul(w0.data, xa0.data, arch::PsumMode::Overwrite, a);
    arch::matmul(w2.data, xa1.data, arch::PsumMode::Accumulate, a);
    const Fp32Matrix copy = a;
    arch::matmul(w0.data, xa2.data, arch::PsumMode::Accumulate, a);
    arch::matmul(w1.data, xb0.data, arch::PsumMode::Overwrite, b);
    arch::matmul(w1.data, xb1.data, arch::PsumMode::Accumulate, b);
    arch::matmul(w3.data, xc0.data, arch::PsumMode::Overwrite, c);
    arch::matmul(w3.data, xc1.data, arch::PsumMode::Accumulate, c);
    arch::matmul(w1.data, xs0.data, arch::PsumMode::Overwrite, d);
    arch::matmul(w1.data, xs1.data, arch::PsumMode::Accumulate, d);
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t j = 0; j < 8; ++j) t_out.at(i, j) = arch::flush_subnormal(arch::to_float(t.data.at(j, i)));
    return {{"A", bits(a)}, {"B", bits(b)}, {"C", bits(c)}, {"D", bits(d)}, {"T", bits(t_out)}, {"copy", bits(copy)}};
  }

  static json bits(const Fp32Matrix& m) {
    json out = json::array();
    for (float v : m.data) out.push_back(arch::fp32_bits(v));
    return out;
  }
  static json region(NeuronCore& core, bool psum, std::size_t rows, std::size_t cols, std::uint32_t offset) {
    Fp32Matrix m(rows, cols);
    auto& mem = psum ? core.psum() : core.sbuf();
    for (std::size_t p = 0; p < rows; ++p) std::memcpy(&m.data[p * cols], mem.at(p, offset, cols * 4), cols * 4);
    return bits(m);
  }
  static json results(NeuronCore& core) {
    return {{"A", region(core, true, 8, 64, kA)},  {"B", region(core, true, 8, 32, kB)},
            {"C", region(core, true, 6, 24, kC)},  {"D", region(core, true, 8, 3, kD)},
            {"T", region(core, true, 6, 8, kT)},   {"copy", region(core, false, 8, 64, kCopy)}};
  }
};

// Records what a datapath answers at issue (the fast model's cycles are all
// known then).
class Recorder : public engines::TensorDatapath {
public:
  explicit Recorder(std::unique_ptr<engines::TensorDatapath> inner) : inner_(std::move(inner)) {}
  engines::TensorTiming issue(engines::TensorCommand& cmd, std::uint64_t earliest) override {
    const auto t = inner_->issue(cmd, earliest);
    log.push_back({{"accepted", t.accepted}, {"completed", t.completed}});
    return t;
  }
  std::uint64_t flush() override { return inner_->flush(); }
  std::uint64_t busy_cycles() const override { return inner_->busy_cycles(); }
  std::string name() const override { return inner_->name(); }
  void add_stats(trace::Group& engine) override { inner_->add_stats(engine); }
  json log = json::array();

private:
  std::unique_ptr<engines::TensorDatapath> inner_;
};

// Flips the lowest bit of one result of the `target`th MultiplyMoving.
class Perturb : public engines::TensorDatapath {
public:
  Perturb(std::unique_ptr<engines::TensorDatapath> inner, int target) : inner_(std::move(inner)), target_(target) {}
  engines::TensorTiming issue(engines::TensorCommand& cmd, std::uint64_t earliest) override {
    if (cmd.op == engines::TensorCommand::Op::MultiplyMoving && multiplies_++ == target_ && cmd.write_psum) {
      auto write = cmd.write_psum;
      cmd.write_psum = [write](const Fp32Matrix& out) {
        Fp32Matrix bad = out;
        bad.data[3] = arch::fp32_from_bits(arch::fp32_bits(bad.data[3]) ^ 1u);
        write(bad);
      };
    }
    return inner_->issue(cmd, earliest);
  }
  std::uint64_t flush() override { return inner_->flush(); }
  std::uint64_t busy_cycles() const override { return inner_->busy_cycles(); }
  std::string name() const override { return "perturbed " + inner_->name(); }

private:
  std::unique_ptr<engines::TensorDatapath> inner_;
  int target_;
  int multiplies_ = 0;
};

arch::TensorTimingParams timing() { return arch::tensor_timing_params(tiny().tensor); }

// Runs the pipeline in a child with `fidelity`; returns results, end times,
// per-command cycles and statistics.
json run_pipeline(arch::Fidelity fidelity, SamplingPolicy policy = {}) {
  const std::string text = test_support::run_in_child([fidelity, policy] {
    const Pipeline p;
    trace::Stats stats;
    core::CoreOptions o;
    o.fidelity = fidelity;
    Recorder* recorder = nullptr;
    RtlTensorDatapath* rtl = nullptr;
    o.tensor_datapath = [&](const arch::HwConfig&, arch::Fidelity f) -> std::unique_ptr<engines::TensorDatapath> {
      if (f == arch::Fidelity::Tlm) {
        auto r = std::make_unique<Recorder>(engines::make_fast_tensor_datapath(timing()));
        recorder = r.get();
        return r;
      }
      if (f == arch::Fidelity::Rtl) {
        auto r = make_rtl_tensor_datapath(timing());
        rtl = r.get();
        return r;
      }
      return make_sampled_tensor_datapath(engines::make_fast_tensor_datapath(timing()),
                                          make_rtl_tensor_datapath(timing()), timing(), policy);
    };
    NeuronCore core("core", tiny(), stats, o);
    p.place(core);
    p.load(core);
    const auto r = core.run();
    json out;
    out["ok"] = r.ok();
    out["message"] = r.message;
    out["end_ns"] = trace::ns(r.end_time);
    out["tensor_end_ns"] = trace::ns(core.engine(arch::Engine::Tensor).end_time());
    out["vector_end_ns"] = trace::ns(core.engine(arch::Engine::Vector).end_time());
    out["results"] = Pipeline::results(core);
    json cmds = json::array();
    if (recorder) cmds = recorder->log;
    if (rtl)
      for (const auto& c : rtl->records()) cmds.push_back({{"accepted", c.accepted}, {"completed", c.completed}});
    out["commands"] = cmds;
    out["stats"] = stats.to_json();
    return out.dump();
  });
  if (text.rfind("exception: ", 0) == 0) throw std::runtime_error(text);
  return json::parse(text);
}

TEST(RtlTensorDatapath, PipelineMatchesTheReferenceAndTheFastModelCycleForCycle) {
  const json expect = Pipeline().expected();
  const json tlm = run_pipeline(arch::Fidelity::Tlm);
  const json rtl = run_pipeline(arch::Fidelity::Rtl);
  ASSERT_TRUE(tlm["ok"].get<bool>()) << tlm["message"];
  ASSERT_TRUE(rtl["ok"].get<bool>()) << rtl["message"];
  for (const auto& [name, bits] : expect.items()) {
    EXPECT_EQ(tlm["results"][name], bits) << "tlm " << name;
    EXPECT_EQ(rtl["results"][name], bits) << "rtl " << name;
  }
  // Every command: LoadStationary and MultiplyMoving (a Transpose is one of each).
  ASSERT_EQ(rtl["commands"].size(), 17u);
  ASSERT_EQ(tlm["commands"].size(), rtl["commands"].size());
  for (std::size_t i = 0; i < rtl["commands"].size(); ++i) {
    EXPECT_EQ(rtl["commands"][i]["accepted"], tlm["commands"][i]["accepted"]) << "command " << i;
    EXPECT_EQ(rtl["commands"][i]["completed"], tlm["commands"][i]["completed"]) << "command " << i;
  }
  EXPECT_EQ(rtl["tensor_end_ns"], tlm["tensor_end_ns"]);
  EXPECT_EQ(rtl["vector_end_ns"], tlm["vector_end_ns"]);
  EXPECT_EQ(rtl["end_ns"], tlm["end_ns"]);
  // The engine waited on the vector engine: the RTL jumped over that gap.
  EXPECT_GT(rtl["stats"]["core.tensor.datapath.rtl_cycles_skipped"].get<double>(), 0);
}

TEST(RtlTensorDatapath, SampledChecksEveryShapeAndMatchesTlm) {
  const json tlm = run_pipeline(arch::Fidelity::Tlm);
  SamplingPolicy first_only{1'000'000, 0};
  const json sampled = run_pipeline(arch::Fidelity::Sampled, first_only);
  ASSERT_TRUE(sampled["ok"].get<bool>()) << sampled["message"];
  EXPECT_EQ(sampled["results"], tlm["results"]);
  EXPECT_EQ(sampled["end_ns"], tlm["end_ns"]);
  EXPECT_EQ(sampled["tensor_end_ns"], tlm["tensor_end_ns"]);
  // Shapes (K, M, N, accumulate): (8,8,64,f) (8,8,32,f) (8,8,64,t) (5,6,24,f)
  // (5,6,24,t) (8,8,32,t) (8,8,3,f) (8,8,3,t) and the transpose's (8,6,8,f).
  const json& s = sampled["stats"];
  EXPECT_EQ(s["core.tensor.datapath.sampled_shapes"], 9);
  EXPECT_EQ(s["core.tensor.datapath.sampled_instructions"], 9);
  EXPECT_EQ(s["core.tensor.datapath.unsampled_instructions"], 1);

  const json all = run_pipeline(arch::Fidelity::Sampled, {1, 100});
  ASSERT_TRUE(all["ok"].get<bool>()) << all["message"];
  EXPECT_EQ(all["stats"]["core.tensor.datapath.sampled_instructions"], 10);
  EXPECT_EQ(all["results"], tlm["results"]);
}

TEST(RtlTensorDatapath, SampledReportsADisagreementNamingTheInstruction) {
  const std::string text = test_support::run_in_child([] {
    const Pipeline p;
    trace::Stats stats;
    core::CoreOptions o;
    o.fidelity = arch::Fidelity::Sampled;
    o.tensor_datapath = [](const arch::HwConfig&, arch::Fidelity) {
      // The third multiply (#5, the first accumulate of N = 64) is wrong by one bit.
      return make_sampled_tensor_datapath(std::make_unique<Perturb>(engines::make_fast_tensor_datapath(timing()), 2),
                                          make_rtl_tensor_datapath(timing()), timing(), {});
    };
    NeuronCore core("core", tiny(), stats, o);
    p.place(core);
    p.load(core);
    const auto r = core.run();
    return std::string(r.ok() ? "ok" : "error: ") + r.message;
  });
  std::printf("%s\n", text.c_str());  // the report a user would see
  EXPECT_NE(text.find("error: "), std::string::npos) << text;
  EXPECT_NE(text.find("tensor instruction #5"), std::string::npos) << text;
  EXPECT_NE(text.find("MultiplyMoving K=8 M=8 N=64 accumulate"), std::string::npos) << text;
  EXPECT_NE(text.find("1 of 512 result values differ; first at [m 0, n 3]"), std::string::npos) << text;
  EXPECT_NE(text.find("RTL 0x"), std::string::npos) << text;
  EXPECT_NE(text.find("fast model 0x"), std::string::npos) << text;
}

TEST(RtlTensorDatapath, TimingOnlyRunGivesTheSameCycles) {
  const std::string text = test_support::run_in_child([] {
    const Pipeline p;
    trace::Stats stats;
    core::CoreOptions o;
    o.fidelity = arch::Fidelity::Rtl;
    o.no_data = true;
    o.tensor_datapath = rtl_tensor_factory();
    NeuronCore core("core", tiny(), stats, o);
    p.load(core);
    const auto r = core.run();
    return json{{"ok", r.ok()}, {"message", r.message}, {"end_ns", trace::ns(r.end_time)}}.dump();
  });
  const json no_data = json::parse(text);
  const json tlm = run_pipeline(arch::Fidelity::Tlm);
  ASSERT_TRUE(no_data["ok"].get<bool>()) << no_data["message"];
  EXPECT_EQ(no_data["end_ns"], tlm["end_ns"]);
}

// DMA in and out around a matmul chain: five tiles come in on one queue
// (weights, then four moving tiles) while the tensor engine starts on each as
// soon as it lands, accumulating all four; the vector engine copies PSUM to
// SBUF, the scalar engine applies gelu(x * 0.5 + 0.25) to it, and the result
// goes back to HBM. Semaphores chain DMA -> tensor -> vector -> scalar -> DMA.
// In rtl fidelity both Verilated blocks run; in sampled both samplers.
std::uint64_t place_ring(NeuronCore& core, const std::vector<arch::DmaDescriptor>& ds) {
  return core.place(ring_of(ds, 32));
}

json run_dma_pipeline(arch::Fidelity fidelity) {
  const std::string text = test_support::run_in_child([fidelity] {
    std::mt19937 rng(9);
    const Bf16Matrix w = random_bf16(8, 8, rng);
    std::vector<Bf16Matrix> x;
    for (int i = 0; i < 4; ++i) x.push_back(random_bf16(8, 64, rng));
    trace::Stats stats;
    core::CoreOptions o;
    o.fidelity = fidelity;
    o.tensor_datapath = rtl_tensor_factory();
    if (fidelity == arch::Fidelity::Rtl) o.dma_engine = rtl_dma_factory(tiny());
    if (fidelity == arch::Fidelity::Sampled) o.dma_sampler = rtl_dma_sampler_factory(tiny());
    NeuronCore core("core", tiny(), stats, o);
    const auto& map = core.address_map();
    const std::uint64_t w_at = 0x1000, x_at = 0x2000, out_at = 0x10000;
    core.hbm().backdoor_write(w_at, reinterpret_cast<const std::uint8_t*>(w.data.data()), w.data.size() * 2);
    for (int i = 0; i < 4; ++i)
      core.hbm().backdoor_write(x_at + 0x400 * i, reinterpret_cast<const std::uint8_t*>(x[i].data.data()), 8 * 64 * 2);
    const auto pbytes = static_cast<std::uint32_t>(map.sbuf_partition_bytes);
    std::vector<arch::DmaDescriptor> in = {
        tile_descriptor(w_at, 16, map.sbuf_address(0, 0), pbytes, 8, 8, 1, map.semaphore_address(0))};
    for (int i = 0; i < 4; ++i)
      in.push_back(tile_descriptor(x_at + 0x400 * i, 128, map.sbuf_address(0, 64 + 128 * i), pbytes, 8, 64, 1,
                                   map.semaphore_address(0)));
    const std::uint64_t in_base = place_ring(core, in);
    const std::uint64_t out_base = place_ring(
        core, {tile_descriptor(map.sbuf_address(0, 2048), pbytes, out_at, 256, 8, 64, 2, map.semaphore_address(3))});
    core.configure_dma_queue(0, 0, in_base, 32);
    core.configure_dma_queue(1, 2, out_base, 32);

    Stream sync(arch::Engine::Sync);
    sync.add(trigger(0, 0, in_base, 5)).wait(2, 1).add(trigger(1, 2, out_base, 1)).wait(3, 1).end();
    Stream te(arch::Engine::Tensor);
    te.wait(0, 2).add(load_stationary(8, 8, 0));
    for (int i = 0; i < 4; ++i) {
      if (i > 0) te.wait(0, static_cast<std::uint32_t>(2 + i));
      te.add(multiply(8, 8, 64, 64 + 128 * i, 0, i > 0));
    }
    te.incr(1).end();
    Stream vec(arch::Engine::Vector);
    vec.wait(1, 1)
        .op(Opcode::Copy, arch::tile(Memory::Sbuf, DType::Fp32, 0, 8, 1024, 64),
            arch::tile(Memory::Psum, DType::Fp32, 0, 8, 0, 64))
        .incr(4)
        .end();
    arch::Instruction gelu;
    gelu.opcode = Opcode::Activation;
    gelu.func = arch::ActFunc::Gelu;
    gelu.imm0 = 0.5f;
    gelu.imm1 = 0.25f;
    gelu.dst = arch::tile(Memory::Sbuf, DType::Fp32, 0, 8, 2048, 64);
    gelu.a = arch::tile(Memory::Sbuf, DType::Fp32, 0, 8, 1024, 64);
    Stream act(arch::Engine::Scalar);
    act.wait(4, 1).add(gelu).incr(2).end();
    core.load_program(arch::Engine::Sync, sync.bytes);
    core.load_program(arch::Engine::Tensor, te.bytes);
    core.load_program(arch::Engine::Vector, vec.bytes);
    core.load_program(arch::Engine::Scalar, act.bytes);
    const auto r = core.run();

    Fp32Matrix expect(8, 64);
    for (int i = 0; i < 4; ++i)
      arch::matmul(w, x[i], i == 0 ? arch::PsumMode::Overwrite : arch::PsumMode::Accumulate, expect);
    for (float& v : expect.data) {  // gelu, exact (erf) form, in fp32 as docs/core.md gives it
      const float x = v * 0.5f + 0.25f;
      v = 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    }
    std::vector<float> got(8 * 64);
    core.hbm().backdoor_read(out_at, reinterpret_cast<std::uint8_t*>(got.data()), got.size() * 4);
    json bits = json::array(), want = json::array();
    for (std::size_t i = 0; i < got.size(); ++i) {
      bits.push_back(arch::fp32_bits(got[i]));
      want.push_back(arch::fp32_bits(expect.data[i]));
    }
    return json{{"ok", r.ok()},
                {"message", r.message},
                {"end_ns", trace::ns(r.end_time)},
                {"tensor_end_ns", trace::ns(core.engine(arch::Engine::Tensor).end_time())},
                {"dma_descriptors", stats.value("dma.descriptors")},
                {"dma_sampled", fidelity == arch::Fidelity::Sampled ? stats.value("core.dma_sampler.sampled_descriptors") : 0},
                {"out", bits},
                {"expect", want}}
        .dump();
  });
  if (text.rfind("exception: ", 0) == 0) throw std::runtime_error(text);
  return json::parse(text);
}

TEST(RtlTensorDatapath, DmaFedPipelineIsIdenticalInEveryFidelity) {
  const json tlm = run_dma_pipeline(arch::Fidelity::Tlm);
  ASSERT_TRUE(tlm["ok"].get<bool>()) << tlm["message"];
  EXPECT_EQ(tlm["out"], tlm["expect"]);
  // The tensor engine waited on DMA (100 ns start latency on tiny) between multiplies.
  EXPECT_GT(tlm["tensor_end_ns"].get<double>(), 300.0);
  for (const auto f : {arch::Fidelity::Rtl, arch::Fidelity::Sampled}) {
    const json run = run_dma_pipeline(f);
    ASSERT_TRUE(run["ok"].get<bool>()) << arch::to_string(f) << ": " << run["message"];
    EXPECT_EQ(run["out"], tlm["expect"]) << arch::to_string(f);
    EXPECT_EQ(run["tensor_end_ns"], tlm["tensor_end_ns"]) << arch::to_string(f);
    EXPECT_EQ(run["end_ns"], tlm["end_ns"]) << arch::to_string(f);
    EXPECT_EQ(run["dma_descriptors"], 6) << arch::to_string(f);
  }
  // Weights, moving tiles and the result are three shapes.
  EXPECT_EQ(run_dma_pipeline(arch::Fidelity::Sampled)["dma_sampled"], 3);
}

// Every format and mode through the whole engine (SBUF reads, the instruction
// flags and scale tiles, PSUM writes): fp8 double row, MXFP8 and MXFP4 with
// scale tiles, fp32 at its quarter rate, bf16 PSUM accumulation. The SBUF
// bytes are written here from operands built word by word, so the layout the
// engine reads (formats.md) is checked against this independent statement of
// it; results against arch::matmul; rtl and sampled against tlm to the cycle.
struct FormatsPipeline {
  // SBUF byte offsets: operands 256 bytes apart; scale tiles after them.
  static constexpr std::uint32_t kDrSt = 0, kDrMv = 256, kMxSt = 512, kMxMv = 768, kMxSc = 1024, kMxMvSc = 1280,
                                 kF4St = 1536, kF4Mv = 1792, kF4Sc = 2048, kF4MvSc = 2304, kF32St = 2560,
                                 kF32Mv = 2816, kBfSt = 3328, kBfMv = 3584;
  // PSUM: one region per matmul.
  static constexpr std::uint32_t kPDr = 0, kPMx = 1024, kPF4 = 2048, kPF32 = 3072, kPBf = 3584;
  static constexpr int kN = 12;
  arch::TensorOperand dr_st, dr_mv, mx_st, mx_mv, f4_st, f4_mv, f32_st, f32_mv, bf_st, bf_mv0, bf_mv1;

  static arch::TensorOperand random(arch::ElementFormat f, int pack, bool mx, std::size_t cols, std::mt19937& rng) {
    arch::TensorOperand op(f, pack, mx, 8, cols);
    std::normal_distribution<float> value(0.0f, 2.0f);
    for (std::size_t r = 0; r < 8; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        std::uint32_t w = 0;
        if (f == arch::ElementFormat::Fp32) w = arch::fp32_bits(value(rng));
        else if (f == arch::ElementFormat::Bf16) w = arch::to_bf16(value(rng)).bits;
        else
          for (int j = 0; j < pack; ++j) w |= std::uint32_t{arch::encode_narrow(f, value(rng))} << (arch::bits_of(f) * j);
        op.word(r, c) = w;
        if (mx) op.scales[r * cols + c] = static_cast<std::uint8_t>(124 + (r / 8 + c) % 7);
      }
    return op;
  }

  FormatsPipeline() {
    std::mt19937 rng(47);
    using F = arch::ElementFormat;
    dr_st = random(F::Fp8E4m3, 2, false, 8, rng);
    dr_mv = random(F::Fp8E5m2, 2, false, kN, rng);
    mx_st = random(F::Fp8E4m3, 4, true, 8, rng);
    mx_mv = random(F::Fp8E5m2, 4, true, kN, rng);
    f4_st = random(F::Fp4E2m1, 4, true, 8, rng);
    f4_mv = random(F::Fp4E2m1, 4, true, kN, rng);
    f32_st = random(F::Fp32, 1, false, 8, rng);
    f32_mv = random(F::Fp32, 1, false, kN, rng);
    bf_st = random(F::Bf16, 1, false, 8, rng);
    bf_mv0 = random(F::Bf16, 1, false, kN, rng);
    bf_mv1 = random(F::Bf16, 1, false, kN, rng);
  }

  // A double-row operand: its outer free dimension holds the halves, byte h
  // of each word at column c of half h; the rest one word of `bytes` bytes
  // per column; an MX operand's scales in partition 0 (8 partitions are one
  // scaling group) at `scales`.
  static void put(NeuronCore& core, const arch::TensorOperand& op, std::uint32_t offset, std::uint32_t scales = 0) {
    const std::size_t bytes = op.pack == 2 ? 1 : op.format == arch::ElementFormat::Fp4E2m1 ? 2
                              : op.format == arch::ElementFormat::Bf16                  ? 2
                                                                                        : 4;
    for (std::size_t r = 0; r < op.rows; ++r)
      for (std::size_t c = 0; c < op.cols; ++c) {
        const std::uint32_t w = op.word(r, c);
        if (op.pack == 2) {
          for (std::size_t h = 0; h < 2; ++h) *core.sbuf().at(r, offset + h * op.cols + c, 1) = static_cast<std::uint8_t>(w >> (8 * h));
        } else {
          std::memcpy(core.sbuf().at(r, offset + c * bytes, bytes), &w, bytes);
        }
        if (op.mx) *core.sbuf().at(arch::mx_scale_partition(r), scales + c, 1) = op.scale(r, c);
      }
  }

  void place(NeuronCore& core) const {
    put(core, dr_st, kDrSt);
    put(core, dr_mv, kDrMv);
    put(core, mx_st, kMxSt, kMxSc);
    put(core, mx_mv, kMxMv, kMxMvSc);
    put(core, f4_st, kF4St, kF4Sc);
    put(core, f4_mv, kF4Mv, kF4MvSc);
    put(core, f32_st, kF32St);
    put(core, f32_mv, kF32Mv);
    put(core, bf_st, kBfSt);
    put(core, bf_mv0, kBfMv);
    put(core, bf_mv1, kBfMv + 2 * kN);
  }

  static arch::Instruction tensor(Opcode op, DType t, std::uint32_t src, std::uint32_t cols, bool double_row,
                                  std::int64_t scales = -1) {
    arch::Instruction in;
    in.opcode = op;
    in.a = arch::tile(Memory::Sbuf, t, 0, 8, src, cols);
    if (double_row) {
      in.flags |= arch::kFlagDoubleRow;
      in.a.num_dims = 2;
      in.a.size = {2, cols, 0, 0};
      in.a.stride = {static_cast<std::int32_t>(cols), 1, 0, 0};
    }
    if (scales >= 0) in.b = arch::tile(Memory::Sbuf, DType::Uint8, 0, 1, static_cast<std::uint32_t>(scales), cols);
    return in;
  }
  static arch::Instruction multiply(arch::Instruction in, DType psum, std::uint32_t dst, bool acc) {
    if (acc) in.flags |= arch::kFlagAccumulate;
    in.dst = arch::tile(Memory::Psum, psum, 0, 8, dst, kN);
    return in;
  }

  void load(NeuronCore& core) const {
    Stream te(arch::Engine::Tensor);
    const auto L = Opcode::LoadStationary;
    const auto M = Opcode::MultiplyMoving;
    te.add(tensor(L, DType::Fp8E4m3, kDrSt, 8, true))
        .add(multiply(tensor(M, DType::Fp8E5m2, kDrMv, kN, true), DType::Fp32, kPDr, false));
    te.add(tensor(L, DType::Fp8E4m3x4, kMxSt, 8, false, kMxSc))
        .add(multiply(tensor(M, DType::Fp8E5m2x4, kMxMv, kN, false, kMxMvSc), DType::Fp32, kPMx, false));
    te.add(tensor(L, DType::Fp4E2m1x4, kF4St, 8, false, kF4Sc))
        .add(multiply(tensor(M, DType::Fp4E2m1x4, kF4Mv, kN, false, kF4MvSc), DType::Fp32, kPF4, false));
    te.add(tensor(L, DType::Fp32, kF32St, 8, false))
        .add(multiply(tensor(M, DType::Fp32, kF32Mv, kN, false), DType::Fp32, kPF32, false));
    te.add(tensor(L, DType::Bf16, kBfSt, 8, false))
        .add(multiply(tensor(M, DType::Bf16, kBfMv, kN, false), DType::Bf16, kPBf, false))
        .add(multiply(tensor(M, DType::Bf16, kBfMv + 2 * kN, kN, false), DType::Bf16, kPBf, true));
    te.end();
    core.load_program(arch::Engine::Tensor, te.bytes);
  }

  json expected() const {
    json out;
    const auto fp32 = [](const arch::TensorOperand& st, const arch::TensorOperand& mv) {
      Fp32Matrix m(8, kN);
      arch::matmul(st, mv, arch::PsumMode::Overwrite, m);
      return Pipeline::bits(m);
    };
    out["dr"] = fp32(dr_st, dr_mv);
    out["mx"] = fp32(mx_st, mx_mv);
    out["f4"] = fp32(f4_st, f4_mv);
    out["f32"] = fp32(f32_st, f32_mv);
    Fp32Matrix a(8, kN), b(8, kN);
    arch::matmul(bf_st, bf_mv0, arch::PsumMode::Overwrite, a);
    arch::matmul(bf_st, bf_mv1, arch::PsumMode::Overwrite, b);
    json bf = json::array();
    for (std::size_t i = 0; i < a.data.size(); ++i) {
      const arch::Bf16 first = arch::psum_bf16_write(arch::Bf16{}, a.data[i], arch::PsumMode::Overwrite);
      bf.push_back(arch::psum_bf16_write(first, b.data[i], arch::PsumMode::Accumulate).bits);
    }
    out["bf16"] = bf;
    return out;
  }

  static json results(NeuronCore& core) {
    json out;
    out["dr"] = Pipeline::region(core, true, 8, kN, kPDr);
    out["mx"] = Pipeline::region(core, true, 8, kN, kPMx);
    out["f4"] = Pipeline::region(core, true, 8, kN, kPF4);
    out["f32"] = Pipeline::region(core, true, 8, kN, kPF32);
    json bf = json::array();
    for (std::size_t p = 0; p < 8; ++p)
      for (std::size_t c = 0; c < kN; ++c) {
        std::uint16_t v = 0;
        std::memcpy(&v, core.psum().at(p, kPBf + 2 * c, 2), 2);
        bf.push_back(v);
      }
    out["bf16"] = bf;
    return out;
  }
};

json run_formats(arch::Fidelity fidelity) {
  const std::string text = test_support::run_in_child([fidelity] {
    const FormatsPipeline p;
    trace::Stats stats;
    core::CoreOptions o;
    o.fidelity = fidelity;
    Recorder* recorder = nullptr;
    RtlTensorDatapath* rtl = nullptr;
    o.tensor_datapath = [&](const arch::HwConfig&, arch::Fidelity f) -> std::unique_ptr<engines::TensorDatapath> {
      if (f == arch::Fidelity::Tlm) {
        auto r = std::make_unique<Recorder>(engines::make_fast_tensor_datapath(timing()));
        recorder = r.get();
        return r;
      }
      if (f == arch::Fidelity::Rtl) {
        auto r = make_rtl_tensor_datapath(timing());
        rtl = r.get();
        return r;
      }
      return make_sampled_tensor_datapath(engines::make_fast_tensor_datapath(timing()),
                                          make_rtl_tensor_datapath(timing()), timing(), {1, 100});
    };
    NeuronCore core("core", tiny(), stats, o);
    p.place(core);
    p.load(core);
    const auto r = core.run();
    json out;
    out["ok"] = r.ok();
    out["message"] = r.message;
    out["end_ns"] = trace::ns(r.end_time);
    out["results"] = FormatsPipeline::results(core);
    json cmds = json::array();
    if (recorder) cmds = recorder->log;
    if (rtl)
      for (const auto& c : rtl->records()) cmds.push_back({{"accepted", c.accepted}, {"completed", c.completed}});
    out["commands"] = cmds;
    out["stats"] = stats.to_json();
    return out.dump();
  });
  if (text.rfind("exception: ", 0) == 0) throw std::runtime_error(text);
  return json::parse(text);
}

TEST(RtlTensorDatapath, EveryFormatAndModeMatchesTheReferenceInEveryFidelity) {
  const json expect = FormatsPipeline().expected();
  const json tlm = run_formats(arch::Fidelity::Tlm);
  const json rtl = run_formats(arch::Fidelity::Rtl);
  const json sampled = run_formats(arch::Fidelity::Sampled);
  ASSERT_TRUE(tlm["ok"].get<bool>()) << tlm["message"];
  ASSERT_TRUE(rtl["ok"].get<bool>()) << rtl["message"];
  ASSERT_TRUE(sampled["ok"].get<bool>()) << sampled["message"];
  for (const auto& [name, bits] : expect.items()) {
    EXPECT_EQ(tlm["results"][name], bits) << "tlm " << name;
    EXPECT_EQ(rtl["results"][name], bits) << "rtl " << name;
    EXPECT_EQ(sampled["results"][name], bits) << "sampled " << name;
  }
  ASSERT_EQ(rtl["commands"].size(), 11u);
  ASSERT_EQ(tlm["commands"], rtl["commands"]);
  EXPECT_EQ(rtl["end_ns"], tlm["end_ns"]);
  EXPECT_EQ(sampled["end_ns"], tlm["end_ns"]);
  EXPECT_EQ(sampled["stats"]["core.tensor.datapath.sampled_instructions"], 6);
  // MACs: double row 2, MX 4 contraction rows per PE and column.
  EXPECT_EQ(tlm["stats"]["core.tensor.macs"], 8 * 8 * FormatsPipeline::kN * (2 + 4 + 4 + 1 + 1 + 1));
}

TEST(RtlTensorDatapath, ASizeWithoutAVerilatedModelSaysHowToAddIt) {
  try {
    make_rtl_tensor_datapath({8, 16, 1, 1});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("8x16"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rtl/tensor_engine/array_sizes.cmake"), std::string::npos) << e.what();
  }
  const auto sizes = rtl_tensor_sizes();
  EXPECT_NE(std::find(sizes.begin(), sizes.end(), "8x8"), sizes.end());
}

}  // namespace
}  // namespace tessera::cosim
