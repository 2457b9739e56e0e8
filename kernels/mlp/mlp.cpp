// The gated MLP block of a transformer, y = down(act(gate(x)) * up(x)), in one
// kernel: the hidden activations never leave SBUF (docs/kernels.md, mlp).
//
// Layout: activations are feature-major, x^T [D, T] in and y^T [D, T] out,
// so every contraction already lies on partitions and no transpose is needed
// anywhere (the output feeds the next block as it is). Weights are stored
// [in, out]: Wg, Wu [D, F], Wd [F, D].
//
//   h^T[f, t] = act(sum_d Wg[d, f] x^T[d, t]) * sum_d Wu[d, f] x^T[d, t]   (stationary Wg/Wu, moving x^T)
//   y^T[m, t] = sum_f Wd[f, m] h^T[f, t]                                   (stationary Wd, moving h^T)
#include "mlp/mlp.h"

#include "arch/numerics.h"
#include "common/bounds.h"
#include "common/input_format.h"
#include "collectives/collectives.h"
#include "common/reference_matmul.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

namespace tessera::kernels {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

Tile fit(const Tile& t, std::int64_t partitions, std::int64_t free) {
  return t.slice(0, static_cast<std::uint32_t>(partitions), 0, static_cast<std::uint32_t>(free));
}

double act_ref(arch::ActFunc f, double x) {
  return f == arch::ActFunc::Silu ? x / (1 + std::exp(-x)) : 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

// max |act'(x)|: silu' peaks at 1.0998 (x = 2.40), gelu' at 1.1289 (x = 1.41).
double act_lipschitz(arch::ActFunc f) { return f == arch::ActFunc::Silu ? 1.1 : 1.13; }

// What --dtype takes, the default first (docs/formats.md, "MLP in every format").
const std::vector<std::string> kMlpDtypes = {"bf16", "fp32", "fp8_e4m3", "fp8_e5m2"};


// The sizes the kernel is built from. c: one chunk of any dimension that
// meets the array (contraction on partitions, or stationary columns / PSUM
// partitions); the weights stay resident; a block of tb tokens (the moving
// free size, one PSUM bank of fp32 at most) needs `working(tb)` bytes more
// per partition; e is the bytes of an element of x, the weights and h.
struct MlpPlan {
  std::int64_t c, nk, nf, e, weight_bytes, sbuf_bytes, tb_max;
  MlpPlan(const arch::HwConfig& cfg, std::int64_t T, std::int64_t D, std::int64_t F, std::int64_t element_bytes)
      : c(std::min({cfg.tensor.rows, cfg.tensor.cols, cfg.tensor.stationary_max_free, cfg.sbuf.partitions,
                    cfg.psum.partitions})),
        nk(ceil_div(D, c)),
        nf(ceil_div(F, c)),
        e(element_bytes),
        weight_bytes((2 * nk * F + nf * D) * e),
        sbuf_bytes(cfg.sbuf.partition_kib * 1024),
        tb_max(std::min<std::int64_t>({cfg.tensor.moving_max_free, cfg.psum.bank_kib * 1024 / 4, T})) {}
  // Working set per token block: x (double-buffered), h, two act results, two outputs.
  std::int64_t working(std::int64_t tb) const { return 2 * nk * tb * e + nf * tb * e + 2 * tb * 4 + 2 * tb * 4; }
  // The default block: the largest that fits, halving down to c.
  std::int64_t default_tb() const {
    std::int64_t tb = tb_max;
    while (tb > c && weight_bytes + working(tb) > sbuf_bytes) tb = std::max(c, tb / 2);
    return tb;
  }
};

class Mlp : public KernelInstance {
public:
  Mlp(Device& dev, const KernelArgs& args)
      : dev_(dev), act_(args.variant == "gelu" ? arch::ActFunc::Gelu : arch::ActFunc::Silu), T_(args.shape.at("T")),
        D_(args.shape.at("D")), F_(args.shape.at("F")), params_(args.params), fmt_(input_format(args.dtype, dev.config())) {
    const std::uint64_t seed = args.seed;
    const DType in = fmt_.dtype;
    xt_ = dev.allocate("xt", {D_, T_}, in);
    wg_ = dev.allocate("wg", {D_, F_}, in);
    wu_ = dev.allocate("wu", {D_, F_}, in);
    wd_ = dev.allocate("wd", {F_, D_}, in);
    yt_ = dev.allocate("yt", {D_, T_}, DType::Fp32);
    if (dev.no_data()) return;
    // Scaled so that gate values spread over about [-4, 4], where silu and
    // gelu are far from linear, and y stays of order one; well inside fp8's
    // range, so no tensor needs a scale.
    std::mt19937_64 rng(seed);
    const auto fill = [&](std::vector<float>& v, std::size_t n, double half_range) {
      std::uniform_real_distribution<double> dist(-half_range, half_range);
      v.resize(n);
      for (auto& e : v) e = held_value(in, static_cast<float>(dist(rng)));
    };
    fill(x_, static_cast<std::size_t>(D_ * T_), 2.0);
    fill(g_, static_cast<std::size_t>(D_ * F_), 3.0 / std::sqrt(double(D_)));
    fill(u_, static_cast<std::size_t>(D_ * F_), 3.0 / std::sqrt(double(D_)));
    fill(d_, static_cast<std::size_t>(F_ * D_), 1.0 / std::sqrt(double(F_)));
    dev.upload(xt_, x_);
    dev.upload(wg_, g_);
    dev.upload(wu_, u_);
    dev.upload(wd_, d_);
  }

  Program build() override {
    KernelBuilder kb(dev_.config(), "mlp");
    build_into(kb, 0, F_);
    return kb.build();
  }

  // SPMD over F, tensor-parallel as in Megatron-style layers: instance i
  // holds a contiguous run of whole hidden chunks (its columns of Wg and
  // Wu, its rows of Wd), computes h for them and the partial down
  // projection they give, and the cores sum their partials with an
  // all-reduce per token block (direct: on this fabric each copy pays the
  // DMA start latency, which a ring pays cores - 1 times in a row), so
  // that every core ends with the whole y as the next tensor-parallel
  // layer needs it; each stores its chunk of the block.
  Program build_instance(const Spmd& spmd, const std::string& shard) override {
    if (spmd.grid == 1) return build();
    if (shard != "F") throw KernelError(fmt::format("mlp: shards over F, not {}", shard));
    const MlpPlan full(dev_.config(), T_, D_, F_, arch::size_of(fmt_.dtype));
    if (full.nf < spmd.grid)
      throw KernelError(fmt::format("mlp: F={} is {} chunk{} of {}, too few for {} cores to get one each: grow F", F_,
                                    full.nf, full.nf == 1 ? "" : "s", full.c, spmd.grid));
    if (T_ % spmd.grid != 0)
      throw KernelError(fmt::format("mlp: shard F: T={} does not split into {} equal token chunks, one per core, for "
                                    "the all-reduce of the partial outputs",
                                    T_, spmd.grid));
    const std::int64_t lo = full.nf * spmd.instance / spmd.grid, hi = full.nf * (spmd.instance + 1) / spmd.grid;
    KernelBuilder kb(dev_.config(), "mlp", spmd);
    build_into(kb, lo * full.c, std::min(hi * full.c, F_) - lo * full.c);
    return kb.build();
  }

  // The program for hidden units [f_off, f_off + Fl) of F: all of them on
  // one core; an SPMD instance's run, whose partial y the cores sum.
  void build_into(KernelBuilder& kb, std::int64_t f_off, std::int64_t Fl) {
    const auto& cfg = dev_.config();
    const int cores = kb.spmd().grid, rank = kb.spmd().instance;
    const bool sharded = cores > 1;
    const MlpPlan plan(cfg, T_, D_, Fl, arch::size_of(fmt_.dtype));
    const DType in = fmt_.dtype;
    const std::int64_t c = plan.c, nk = plan.nk, nf = plan.nf, weight_bytes = plan.weight_bytes;
    const std::int64_t sbuf_bytes = plan.sbuf_bytes;
    // Sharded, a block's whole partial y^T (every output chunk side by side,
    // nk x tb columns) is one all-reduce, so the collective's fixed costs
    // are paid once per block, and it overlaps the next block's matmuls
    // (two such tiles alternate); its columns split into one chunk per core
    // (T is a multiple of the cores, so a block of a multiple is too). The
    // tiles and the direct receive slots (one block's columns) take room.
    std::int64_t tb = std::min(params_.integer("tb"), plan.tb_max);
    if (sharded) tb = std::max<std::int64_t>(cores, tb / cores * cores);
    const std::int64_t reduce_bytes = sharded ? (2 * nk * tb - 2 * tb + nk * tb) * 4 : 0;
    const auto working = [&](std::int64_t b) { return plan.working(b) + reduce_bytes; };
    if (weight_bytes + working(tb) > sbuf_bytes)
      throw KernelError(fmt::format("mlp: weights of D={}, F={} need {} bytes per partition and a block of {} tokens "
                                    "{} more; SBUF has {} per partition (the weights stay resident: use a smaller D or F)",
                                    D_, Fl, weight_bytes, tb, working(tb), sbuf_bytes));

    // What other cores write into comes first, at the same SBUF address on
    // every core: the instances' weights differ in size when F does not
    // split evenly. One core keeps the order it always had.
    std::optional<collectives::AllReduce> reduce;
    Tile out[2];
    const std::int64_t out_cols = sharded ? nk * tb : tb;
    const auto make_out = [&] {
      out[0] = kb.sbuf("y0", c, out_cols, DType::Fp32), out[1] = kb.sbuf("y1", c, out_cols, DType::Fp32);
    };
    if (sharded) {
      reduce.emplace(kb, static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(out_cols),
                     collectives::Algorithm::Direct, "mlp-reduce");
      make_out();
    }

    // Weights resident for the whole kernel, loaded in row chunks so each
    // DMA moves a whole row per partition (Fl or D elements).
    std::vector<Tile> wg(nk), wu(nk), wd(nf);
    for (std::int64_t k = 0; k < nk; ++k) {
      const std::int64_t kk = std::min(c, D_ - k * c);
      wg[k] = kb.sbuf(fmt::format("wg{}", k), c, Fl, in);
      wu[k] = kb.sbuf(fmt::format("wu{}", k), c, Fl, in);
      kb.dma(fit(wg[k], kk, Fl), wg_.region(k * c, f_off, kk, Fl));
      kb.dma(fit(wu[k], kk, Fl), wu_.region(k * c, f_off, kk, Fl));
    }
    for (std::int64_t f = 0; f < nf; ++f) {
      const std::int64_t ff = std::min(c, Fl - f * c);
      wd[f] = kb.sbuf(fmt::format("wd{}", f), c, D_, in);
      kb.dma(fit(wd[f], ff, D_), wd_.region(f_off + f * c, 0, ff, D_));
    }
    const Tile x[2] = {kb.sbuf("x0", c, nk * tb, in), kb.sbuf("x1", c, nk * tb, in)};
    const Tile h = kb.sbuf("h", c, nf * tb, in);
    const Tile a[2] = {kb.sbuf("a0", c, tb, DType::Fp32), kb.sbuf("a1", c, tb, DType::Fp32)};
    if (!sharded) make_out();
    const Tile gate[2] = {kb.psum("gate0", c, tb), kb.psum("gate1", c, tb)};
    const Tile up[2] = {kb.psum("up0", c, tb), kb.psum("up1", c, tb)};
    const Tile acc[2] = {kb.psum("acc0", c, tb), kb.psum("acc1", c, tb)};

    const arch::Engine evacuation = params_.choice("evacuate") == "scalar" ? arch::Engine::Scalar : arch::Engine::Vector;
    int xs = 0, turn = 0, oturn = 0, block = 0;
    for (std::int64_t t0 = 0; t0 < T_; t0 += tb, xs ^= 1) {
      const std::int64_t tt = std::min(tb, T_ - t0);
      std::vector<Tile> xk(nk);
      for (std::int64_t k = 0; k < nk; ++k) {
        const std::int64_t kk = std::min(c, D_ - k * c);
        xk[k] = x[xs].slice(0, static_cast<std::uint32_t>(kk), static_cast<std::uint32_t>(k * tb),
                            static_cast<std::uint32_t>(tt));
        kb.dma(xk[k], xt_.region(k * c, t0, kk, tt));
      }
      // Gate and up projections, one hidden chunk at a time; the scalar
      // engine applies the activation while the tensor engine moves on to
      // the next chunk, the vector engine multiplies into h (the input dtype).
      std::vector<Tile> hf(nf);
      const auto columns = [&](const std::vector<Tile>& w, std::int64_t at, std::int64_t n) {
        std::vector<Tile> out(w.size());
        for (std::size_t k = 0; k < w.size(); ++k)
          out[k] = w[k].slice(0, xk[k].partitions, static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(n));
        return out;
      };
      for (std::int64_t f = 0; f < nf; ++f, turn ^= 1) {
        const std::int64_t ff = std::min(c, Fl - f * c);
        const Tile g = fit(gate[turn], ff, tt), u = fit(up[turn], ff, tt);
        contract(kb, g, columns(wg, f * c, ff), xk);
        contract(kb, u, columns(wu, f * c, ff), xk);
        const Tile av = fit(a[turn], ff, tt);
        kb.activation(av, g, act_);
        hf[f] = h.slice(0, static_cast<std::uint32_t>(ff), static_cast<std::uint32_t>(f * tb), static_cast<std::uint32_t>(tt));
        kb.tensor_tensor(hf[f], av, u, arch::AluOp::Multiply);
      }
      // Down projection: each output chunk accumulates over all of F in one
      // PSUM tile; two alternate so one is evacuated while the next fills.
      for (std::int64_t m = 0; m < nk; ++m, oturn ^= 1) {
        const std::int64_t mm = std::min(c, D_ - m * c);
        const Tile y = fit(acc[oturn], mm, tt);
        std::vector<Tile> wdm(nf);
        for (std::int64_t f = 0; f < nf; ++f)
          wdm[f] = wd[f].slice(0, hf[f].partitions, static_cast<std::uint32_t>(m * c), static_cast<std::uint32_t>(mm));
        contract(kb, y, wdm, hf);
        if (!sharded) {
          const Tile o = fit(out[oturn], mm, tt);
          kb.copy(o, y, evacuation);
          kb.dma(yt_.region(m * c, t0, mm, tt), o);
          continue;
        }
        // Chunk m of the block's partial, at columns [m tt, (m + 1) tt).
        kb.copy(out[block % 2].slice(0, static_cast<std::uint32_t>(mm), static_cast<std::uint32_t>(m * tt),
                                     static_cast<std::uint32_t>(tt)),
                y, evacuation);
      }
      if (!sharded) continue;
      const Tile partial = fit(out[block % 2], c, nk * tt);
      (*reduce)(partial);
      // This core's chunk of the summed columns, stored piece by piece:
      // column j is token j % tt of output chunk j / tt.
      kb.label("mlp store");
      const std::int64_t width = nk * tt / cores, lo = rank * width, hi = lo + width;
      for (std::int64_t m = lo / tt; m * tt < hi; ++m) {
        const std::int64_t mm = std::min(c, D_ - m * c), a = std::max(lo, m * tt), b = std::min(hi, (m + 1) * tt);
        kb.dma(yt_.region(m * c, t0 + a - m * tt, mm, b - a),
               partial.slice(0, static_cast<std::uint32_t>(mm), static_cast<std::uint32_t>(a),
                             static_cast<std::uint32_t>(b - a)));
      }
      kb.label("");
      ++block;
    }
  }

  // Reference in double from the same inputs (as the device holds them), and
  // a per-element bound derived from the kernel's roundings (docs/kernels.md,
  // mlp; docs/formats.md for the other dtypes):
  //  - g, u: fp32 sums of D products, exact for bf16 and fp8 inputs:
  //    |dg| <= Eg = gamma_D sum|x wg|, same for u; fp32 inputs round each
  //    product too, gamma_(D+1);
  //  - a = act(g) in fp32: |da| <= L Eg + 4 u32 (|g| + |a|) (L the activation's
  //    Lipschitz bound; libm exp/erf within an ulp and four roundings);
  //  - h = dtype(fp32(a * u)): |dh| <= |a| Eu + |u| da + da Eu + (u32 + u_h)(1 + u32) |a' u'| + d_h
  //    (u_h the dtype's unit roundoff, d_h its error below the normal range);
  //  - y: fp32 sum of F products of h and Wd: |dy| <= sum |dh||wd| + gamma_F sum |h'||wd|
  //    (gamma_(F+1) for fp32), plus F flushed subnormal products.
  NumericsCheck check() override {
    const auto got = dev_.download(yt_);
    const double L = act_lipschitz(act_), u32 = unit_roundoff(DType::Fp32);
    const std::int64_t rounded_products = fmt_.dtype == DType::Fp32 ? 1 : 0;
    const double gamma_d = gamma(D_ + rounded_products), gamma_f = gamma(F_ + rounded_products);
    const double u_h = unit_roundoff(fmt_.dtype), d_h = absolute_roundoff(fmt_.dtype);
    double max_wd = 0;
    for (float v : d_) max_wd = std::max(max_wd, std::fabs(double{v}));
    // Tokens in blocks. The gate and up projections, x.T @ Wg and x.T @ Wu,
    // with the sums of their products' magnitudes, then h and its error
    // bound dh per element, then y = h Wd with sum_f |h||w| and sum_f dh |w|
    // (the magnitudes of the products of h and of dh with Wd): each a
    // vectorized reference product (reference_matmul) over f in order.
    const auto sz = [](std::int64_t v) { return static_cast<std::size_t>(v); };
    const std::size_t T = sz(T_), D = sz(D_), F = sz(F_);
    constexpr std::size_t kTokens = 64;
    const ReferenceRight wg(g_.data(), D, F), wu(u_.data(), D, F), wd(d_.data(), F, D);
    const auto tokens = [&](std::size_t first, std::size_t last, WorstElement& worst) {
      std::vector<double> ht(F * kTokens), dht(F * kTokens);
      ReferenceProduct gate, up, y, ey;
      for (std::size_t t0 = first * kTokens; t0 < std::min(T, last * kTokens); t0 += kTokens) {
        const std::size_t nt = std::min(kTokens, T - t0);
        reference_matmul(x_.data() + t0, nt, T, wg, gate);
        reference_matmul(x_.data() + t0, nt, T, wu, up);
        for (std::size_t tt = 0; tt < nt; ++tt)
          for (std::size_t f = 0; f < F; ++f) {
            const std::size_t tf = tt * F + f;
            const double g = gate.sum[tf], gm = gate.mag[tf], u = up.sum[tf], um = up.mag[tf];
            const double eg = gamma_d * gm, eu = gamma_d * um;
            const double a = act_ref(act_, g);
            const double da = L * eg + 4 * u32 * (std::fabs(g) + eg + std::fabs(a) + L * eg);
            const double prod = (std::fabs(a) + da) * (std::fabs(u) + eu);
            ht[f * nt + tt] = a * u;
            dht[f * nt + tt] =
                std::fabs(a) * eu + std::fabs(u) * da + da * eu + (u32 + u_h) * (1 + u32) * prod + d_h;
          }
        reference_matmul(ht.data(), nt, wd, y);
        reference_matmul(dht.data(), nt, wd, ey);  // its mag: sum_f dh |w|
        for (std::size_t tt = 0; tt < nt; ++tt)
          for (std::size_t m = 0; m < D; ++m) {
            const double err = ey.mag[tt * D + m], mag = y.mag[tt * D + m] + err;
            const double tol = err + gamma_f * mag + F_ * kMinNormalFp32 * max_wd;
            const std::size_t k = m * T + t0 + tt;
            worst.add(k, got[k], y.sum[tt * D + m], tol);
          }
      }
    };
    const WorstElement worst = worst_over_blocks((T + kTokens - 1) / kTokens, tokens);
    return worst.result([&](std::size_t k) { return fmt::format("y^T[{}, {}]", k / T, k % T); });
  }

private:
  // acc (+)= the sum over chunks i of st[i].T @ mv[i]: in double row two
  // chunks of equal partitions a matmul (the second as the upper half of the
  // contraction), else one chunk a matmul.
  void contract(KernelBuilder& kb, const Tile& acc, const std::vector<Tile>& st, const std::vector<Tile>& mv,
                SourceLocation where = SourceLocation::current()) const {
    bool accumulate = false;
    for (std::size_t i = 0; i < st.size(); accumulate = true) {
      if (fmt_.double_row() && i + 1 < st.size() && st[i + 1].partitions == st[i].partitions) {
        kb.matmul(acc, MatmulInput::double_row(st[i], st[i + 1]), MatmulInput::double_row(mv[i], mv[i + 1]),
                  accumulate, where);
        i += 2;
      } else {
        kb.matmul(acc, st[i], mv[i], accumulate, where);
        i += 1;
      }
    }
  }

  Device& dev_;
  arch::ActFunc act_;
  std::int64_t T_, D_, F_;
  Params params_;
  // x, the weights and h (the down projection's moving input, which the
  // vector engine writes, rounding and saturating) are all of its dtype; in
  // double row two chunks of contraction rows go to one matmul.
  InputFormat fmt_;
  Tensor xt_, wg_, wu_, wd_, yt_;
  std::vector<float> x_, g_, u_, d_;
};

}  // namespace

KernelSpec mlp_spec() {
  KernelSpec spec;
  spec.name = "mlp";
  spec.description =
      "y^T = Wd^T (act(Wg^T x^T) * Wu^T x^T), gated MLP; x^T [D,T], Wg/Wu [D,F], Wd [F,D] bf16 (or --dtype fp32, fp8; "
      "fp8 in double row where the config has it); y^T fp32";
  spec.dtypes = kMlpDtypes;
  spec.variants = {{"silu", "SwiGLU: silu(gate) * up"}, {"gelu", "GeGLU: gelu(gate) * up"}};
  spec.shard_dims = {"F"};
  spec.shape = {{"T", 512, "tokens"}, {"D", 128, "model dimension"}, {"F", 256, "hidden dimension"}};
  const auto plan = [](const ParamContext& ctx) {
    return MlpPlan(ctx.config, ctx.shape.at("T"), ctx.shape.at("D"), ctx.shape.at("F"),
                   arch::size_of(input_format(ctx.dtype, ctx.config).dtype));
  };
  spec.params = {
      TunableParam::integer("tb", 1, 1 << 16, 1,
                            "tokens per block (the moving free size), at most one PSUM bank of fp32; default: the "
                            "largest that fits SBUF beside the weights")
          .derived([plan](const ParamContext& ctx) -> ParamValue { return plan(ctx).default_tb(); })
          .useful_up_to([plan](const ParamContext& ctx) { return plan(ctx).tb_max; }),
      TunableParam::choice("evacuate", {"vector", "scalar"}, "vector",
                           "the engine that copies the down projection from PSUM to SBUF"),
  };
  spec.make = [](Device& dev, const KernelArgs& args) { return std::make_unique<Mlp>(dev, args); };
  return spec;
}

TESSERA_REGISTER_KERNEL(mlp_spec);

}  // namespace tessera::kernels
