// Element-wise kernels: out = op(x[, y]) over an fp32 [R, C] tensor. The
// tensor is seen as one flat run of R*C elements split evenly across the SBUF
// partitions (partition p holds elements [p*L, (p+1)*L), L = R*C / P), so
// every lane works whatever the shape; the R*C % P elements left over go
// through one partition at the end. Tiles of F elements per partition rotate
// through B buffers: with B >= 2 the load of one tile, the compute of the one
// before and the store of the one before that overlap. Binary operations run
// on the vector engine (tensor_tensor), activations on the scalar engine.
#include "elementwise/elementwise.h"

#include "common/bounds.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tessera::kernels {
namespace {

struct Op {
  const char* name;
  bool binary;
  arch::AluOp alu;    // binary: the vector operation
  arch::ActFunc act;  // unary: the scalar-engine function
  float lo, hi;       // input range: where the function is interesting
};

const Op kOps[] = {
    {"gelu", false, arch::AluOp::Bypass, arch::ActFunc::Gelu, -6, 6},
    {"silu", false, arch::AluOp::Bypass, arch::ActFunc::Silu, -6, 6},
    {"relu", false, arch::AluOp::Bypass, arch::ActFunc::Relu, -1, 1},
    {"exp", false, arch::AluOp::Bypass, arch::ActFunc::Exp, -8, 8},
    {"add", true, arch::AluOp::Add, arch::ActFunc::Identity, -1, 1},
    {"multiply", true, arch::AluOp::Multiply, arch::ActFunc::Identity, -1, 1},
};

const Op& op_named(const std::string& name) {
  for (const Op& op : kOps)
    if (name == op.name) return op;
  throw KernelError(fmt::format("elementwise: no operation '{}'", name));
}

class Elementwise : public KernelInstance {
public:
  Elementwise(Device& dev, const KernelArgs& args)
      : dev_(dev), op_(op_named(args.variant)), R_(args.shape.at("R")), C_(args.shape.at("C")),
        F_(args.params.integer("F")), B_(args.params.integer("B")), SE_(args.params.integer("store_engines")) {
    const std::uint64_t seed = args.seed;
    x_ = dev.allocate("x", {R_, C_}, DType::Fp32);
    if (op_.binary) y_ = dev.allocate("y", {R_, C_}, DType::Fp32);
    out_ = dev.allocate("out", {R_, C_}, DType::Fp32);
    if (dev.no_data()) return;
    std::mt19937_64 rng(seed);
    const auto n = static_cast<std::size_t>(R_ * C_);
    xv_ = random_values(n, op_.lo, op_.hi, DType::Fp32, rng);
    dev.upload(x_, xv_);
    if (op_.binary) {
      yv_ = random_values(n, op_.lo, op_.hi, DType::Fp32, rng);
      dev.upload(y_, yv_);
    }
  }

  Program build() override {
    const auto& cfg = dev_.config();
    KernelBuilder kb(cfg, "elementwise");
    const std::int64_t P = cfg.sbuf.partitions, N = R_ * C_;
    const std::int64_t L = N / P, rest = N % P;
    const std::int64_t tiles_per_buffer = op_.binary ? 2 : 1;
    const std::int64_t fit = cfg.sbuf.partition_kib * 1024 / (B_ * tiles_per_buffer * 4);
    // F is the most per tile; a small SBUF (or a small tensor) gets less.
    const std::int64_t F = std::min({F_, std::max(L, rest), fit});
    if (F < 1)
      throw KernelError(fmt::format("elementwise: {} buffers of {} fp32 tile(s) do not fit a {} KiB SBUF partition",
                                    B_, tiles_per_buffer, cfg.sbuf.partition_kib));
    std::vector<Tile> a, b;
    for (std::int64_t i = 0; i < B_; ++i) {
      a.push_back(kb.sbuf(fmt::format("a{}", i), static_cast<std::uint32_t>(P), static_cast<std::uint32_t>(F), DType::Fp32));
      if (op_.binary)
        b.push_back(kb.sbuf(fmt::format("b{}", i), static_cast<std::uint32_t>(P), static_cast<std::uint32_t>(F), DType::Fp32));
    }
    // Stores on the last store_engines DMA engines, loads on the others
    // (0: every copy on every engine, the builder's policy).
    const std::int64_t E = cfg.dma.engines, se = std::min(SE_, E - 1);
    const DmaSpread loads = se > 0 ? DmaSpread{0, 0, 0, static_cast<std::uint32_t>(E - se)} : DmaSpread{};
    const DmaSpread stores = se > 0 ? DmaSpread{0, 0, static_cast<std::uint32_t>(E - se), static_cast<std::uint32_t>(se)} : DmaSpread{};
    std::int64_t turn = 0;
    // One tile: partitions [0, np) each take nf elements at element
    // `first + p * pitch` of the flat tensor.
    const auto tile = [&](std::int64_t first, std::int64_t np, std::int64_t pitch, std::int64_t nf) {
      const std::size_t s = static_cast<std::size_t>(turn++ % B_);
      const auto view = [&](const Tensor& t) { return View{&t, first, {np, nf}, {pitch, 1}}; };
      const Tile ta = a[s].slice(0, static_cast<std::uint32_t>(np), 0, static_cast<std::uint32_t>(nf));
      kb.dma(ta, view(x_), loads);
      if (op_.binary) {
        const Tile tb = b[s].slice(0, static_cast<std::uint32_t>(np), 0, static_cast<std::uint32_t>(nf));
        kb.dma(tb, view(y_), loads);
        kb.tensor_tensor(ta, ta, tb, op_.alu);
      } else {
        kb.activation(ta, ta, op_.act);
      }
      kb.dma(view(out_), ta, stores);
    };
    for (std::int64_t f0 = 0; f0 < L; f0 += F) tile(f0, P, L, std::min(F, L - f0));
    for (std::int64_t f0 = 0; f0 < rest; f0 += F) tile(P * L + f0, 1, rest, std::min(F, rest - f0));
    return kb.build();
  }

  // Reference in double from the same fp32 inputs; per-element bounds from
  // the roundings the engine makes (u = 2^-24; libm's expf and erff are
  // within 1 ulp, i.e. 2u relative):
  //   add, multiply: one rounding, u |r|;  relu: exact;
  //   exp: one libm call, gamma_2 |r|;
  //   silu = x / (1 + expf(-x)): exp 2u, add u, divide u, no cancellation: gamma_4 |r|;
  //   gelu = 0.5 x (1 + erff(c x)): c x errs 2u (c rounded, product rounded),
  //     which moves erf by at most max|t erf'(t)| 2u = 0.97u; erff adds 2u,
  //     1 + erf and the product u |r| each: 0.5 |x| (2.97u) + 2u |r|, taken as
  //     1.5u |x| + gamma_3 |r| to cover second-order terms. The |x| term is
  //     the cancellation in 1 + erf for negative x.
  NumericsCheck check() override {
    const auto got = dev_.download(out_);
    const double u = unit_roundoff(DType::Fp32);
    const double gamma2 = gamma(2), gamma3 = gamma(3), gamma4 = gamma(4);
    WorstElement worst;
    for (std::size_t i = 0; i < xv_.size(); ++i) {
      const double x = xv_[i];
      double r = 0, tol = 0;
      switch (op_.act) {
        case arch::ActFunc::Gelu:
          r = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
          tol = 1.5 * u * std::fabs(x) + gamma3 * std::fabs(r);
          break;
        case arch::ActFunc::Silu:
          r = x / (1 + std::exp(-x));
          tol = gamma4 * std::fabs(r);
          break;
        case arch::ActFunc::Relu: r = x > 0 ? x : 0; break;
        case arch::ActFunc::Exp:
          r = std::exp(x);
          tol = gamma2 * std::fabs(r);
          break;
        default:
          r = op_.alu == arch::AluOp::Add ? x + yv_[i] : x * yv_[i];
          tol = u * std::fabs(r);
          break;
      }
      worst.add(i, got[i], r, tol);
    }
    return worst.result([&](std::size_t i) {
      return fmt::format("out[{}, {}] ({}({}{}))", static_cast<std::int64_t>(i) / C_,
                         static_cast<std::int64_t>(i) % C_, op_.name, xv_[i],
                         op_.binary ? fmt::format(", {}", yv_[i]) : std::string());
    });
  }

private:
  Device& dev_;
  const Op& op_;
  std::int64_t R_, C_, F_, B_, SE_;
  Tensor x_, y_, out_;
  std::vector<float> xv_, yv_;
};

}  // namespace

KernelSpec elementwise_spec() {
  KernelSpec spec;
  spec.name = "elementwise";
  spec.description = "out = op(x) or op(x, y) element by element, fp32 [R,C]; the variant is the operation";
  for (const Op& op : kOps)
    spec.variants.push_back({op.name, op.binary ? fmt::format("x {} y on the vector engine", op.name)
                                                : fmt::format("{}(x) on the scalar engine", op.name)});
  spec.shape = {{"R", 1024, "rows"}, {"C", 1024, "columns"}};
  spec.params = {
      TunableParam::integer("F", 1, 1 << 20, 8192,
                            "tile: elements per partition per tile, at most (shrunk to fit SBUF and the tensor)")
          // A tile never takes more than a partition's share of the tensor.
          .useful_up_to([](const ParamContext& ctx) {
            const std::int64_t n = ctx.shape.at("R") * ctx.shape.at("C"), p = ctx.config.sbuf.partitions;
            return std::max<std::int64_t>(1, std::max(n / p, n % p));
          }),
      TunableParam::integer("B", 1, 16, 3, "buffers the tiles rotate through (1: no overlap of load, compute and store)"),
      TunableParam::integer("store_engines", 0, 64, 0,
                            "DMA engines that store (the last ones; the others load); 0: every engine does both")
          .useful_up_to([](const ParamContext& ctx) { return ctx.config.dma.engines - 1; })
          .searched_at_every_value(),
  };
  spec.make = [](Device& dev, const KernelArgs& args) { return std::make_unique<Elementwise>(dev, args); };
  return spec;
}

TESSERA_REGISTER_KERNEL(elementwise_spec);

}  // namespace tessera::kernels
