// axpy: out = alpha x + y over an fp32 [R, C] tensor (alpha = 2.5), a kernel
// written outside the Tessera tree. Rows lie on SBUF partitions, P rows per
// block; each block goes through in column tiles of at most F elements,
// rotating through B buffers so loads, compute and stores overlap.
//
//   vector (default): x * alpha, then + y, both on the vector engine;
//   scalar: the scalar engine scales x (activation Identity with a scale)
//           while the vector engine adds the previous tile's y.
//
// The same file is built into a plugin (loaded with tessera --plugin) and
// into a program; TESSERA_REGISTER_KERNEL registers it in either.
#include "common/bounds.h"
#include "common/kernel.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace axpy {

using namespace tessera;
using namespace tessera::kernels;

constexpr float kAlpha = 2.5f;

class Axpy : public KernelInstance {
public:
  Axpy(Device& dev, const KernelArgs& args)
      : dev_(dev), scalar_(args.variant == "scalar"), R_(args.shape.at("R")), C_(args.shape.at("C")),
        F_(args.params.integer("F")), B_(args.params.integer("B")) {
    x_ = dev.allocate("x", {R_, C_}, DType::Fp32);
    y_ = dev.allocate("y", {R_, C_}, DType::Fp32);
    out_ = dev.allocate("out", {R_, C_}, DType::Fp32);
    if (dev.no_data()) return;
    std::mt19937_64 rng(args.seed);
    xv_ = random_values(static_cast<std::size_t>(R_ * C_), -1, 1, DType::Fp32, rng);
    yv_ = random_values(static_cast<std::size_t>(R_ * C_), -1, 1, DType::Fp32, rng);
    dev.upload(x_, xv_);
    dev.upload(y_, yv_);
  }

  Program build() override {
    const auto& cfg = dev_.config();
    KernelBuilder kb(cfg, "axpy");
    const auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
    const std::int64_t P = cfg.sbuf.partitions, F = std::min(F_, C_);
    std::vector<Tile> xs, ys;
    for (std::int64_t b = 0; b < B_; ++b) {
      xs.push_back(kb.sbuf(fmt::format("x{}", b), u32(P), u32(F), DType::Fp32));
      ys.push_back(kb.sbuf(fmt::format("y{}", b), u32(P), u32(F), DType::Fp32));
    }
    std::int64_t turn = 0;
    for (std::int64_t r0 = 0; r0 < R_; r0 += P)
      for (std::int64_t c0 = 0; c0 < C_; c0 += F, ++turn) {
        const std::int64_t rows = std::min(P, R_ - r0), cols = std::min(F, C_ - c0);
        kb.label(fmt::format("rows {}, columns {}", r0, c0));
        const Tile x = xs[turn % B_].slice(0, u32(rows), 0, u32(cols));
        const Tile y = ys[turn % B_].slice(0, u32(rows), 0, u32(cols));
        kb.dma(x, x_.region(r0, c0, rows, cols));
        kb.dma(y, y_.region(r0, c0, rows, cols));
        if (scalar_) kb.activation(x, x, arch::ActFunc::Identity, kAlpha);
        else kb.tensor_scalar(x, x, arch::AluOp::Multiply, kAlpha);
        kb.tensor_tensor(x, x, y, arch::AluOp::Add);
        kb.dma(out_.region(r0, c0, rows, cols), x);
      }
    return kb.build();
  }

  // Reference in double; two fp32 roundings (the product, the sum):
  // within gamma_2 (|alpha x| + |y|).
  NumericsCheck check() override {
    const auto got = dev_.download(out_);
    std::vector<double> ref(got.size()), bound(got.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      ref[i] = double{kAlpha} * xv_[i] + yv_[i];
      bound[i] = kernels::gamma(2) * (std::fabs(double{kAlpha} * xv_[i]) + std::fabs(double{yv_[i]}));
    }
    return check_within(got, ref, bound, [&](std::size_t i) {
      return fmt::format("out[{}, {}]", static_cast<std::int64_t>(i) / C_, static_cast<std::int64_t>(i) % C_);
    });
  }

private:
  Device& dev_;
  bool scalar_;
  std::int64_t R_, C_, F_, B_;
  Tensor x_, y_, out_;
  std::vector<float> xv_, yv_;
};

KernelSpec axpy_spec() {
  KernelSpec spec;
  spec.name = "axpy";
  spec.description = "out = 2.5 x + y, fp32 [R,C] (an out-of-tree example kernel)";
  spec.variants = {{"vector", "scale and add on the vector engine"},
                   {"scalar", "scale on the scalar engine, add on the vector engine"}};
  spec.shape = {{"R", 256, "rows"}, {"C", 1024, "columns"}};
  spec.params = {TunableParam::integer("F", 1, 1 << 16, 512, "columns per tile, at most"),
                 TunableParam::integer("B", 1, 8, 2, "buffers the tiles rotate through")};
  spec.make = [](Device& dev, const KernelArgs& args) { return std::make_unique<Axpy>(dev, args); };
  return spec;
}

TESSERA_REGISTER_KERNEL(axpy_spec);

}  // namespace axpy
