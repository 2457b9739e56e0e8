// layernorm: out = (x - mean) / sqrt(var + eps) * gamma + beta
// rmsnorm:   out = x / sqrt(mean(x^2) + eps) * gamma
// over each row of an fp32 [R, D] tensor, eps = 1e-5, var the biased
// variance. Rows lie on SBUF partitions (P rows per block), so the row
// statistics are free-axis reductions and [P, 1] per-partition scalars; gamma
// and beta are loaded once, broadcast to every partition by a DMA whose
// partition stride is 0. Row blocks rotate through `bufs` buffers (6) so
// loads, compute and stores of consecutive blocks overlap: with three, a
// buffer's store, its next load and that block's statistics queued behind
// one another and set the end time (docs/profiling.md "A worked example").
//
// split (default): the row statistics come from the scalar engine, whose
// activation sums each row as it goes (layernorm: an identity pass for the
// mean, then squares of (x - mean); rmsnorm: squares of x), while the vector
// engine normalises: one pass with two per-partition scalars
// ((x + -mean) * rstd), then gamma (and beta); with stage=psum (default)
// the intermediate rows go through PSUM banks, so that each multiply by
// gamma (and the add of beta) reads one input from PSUM and one from SBUF
// at 1 cycle per element instead of 2.
// vector: every pass on the vector engine (square, reduce, subtract and
// scale as separate instructions); the scalar engine only takes the [P, 1]
// rsqrt.
#include "norms/norms.h"

#include "common/bounds.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tessera::kernels {
namespace {

constexpr float kEps = 1e-5f;

class Norm : public KernelInstance {
public:
  Norm(Device& dev, const KernelArgs& args, bool layer)
      : dev_(dev), variant_(args.variant), layer_(layer), R_(args.shape.at("R")), D_(args.shape.at("D")),
        max_buffers_(args.params.integer("bufs")), params_(args.params) {
    const std::uint64_t seed = args.seed;
    const char* name = layer ? "layernorm" : "rmsnorm";
    x_ = dev.allocate("x", {R_, D_}, DType::Fp32);
    gamma_ = dev.allocate("gamma", {1, D_}, DType::Fp32);
    if (layer_) beta_ = dev.allocate("beta", {1, D_}, DType::Fp32);
    out_ = dev.allocate("out", {R_, D_}, DType::Fp32);
    name_ = name;
    if (dev.no_data()) return;
    std::mt19937_64 rng(seed);
    // An offset mean, so that layernorm's centring matters.
    xv_ = random_values(static_cast<std::size_t>(R_ * D_), -1, 3, DType::Fp32, rng);
    gv_ = random_values(static_cast<std::size_t>(D_), 0.5f, 1.5f, DType::Fp32, rng);
    dev.upload(x_, xv_);
    dev.upload(gamma_, gv_);
    if (layer_) {
      bv_ = random_values(static_cast<std::size_t>(D_), -1, 1, DType::Fp32, rng);
      dev.upload(beta_, bv_);
    }
  }

  Program build() override {
    const auto& cfg = dev_.config();
    KernelBuilder kb(cfg, name_);
    const auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
    const std::int64_t P = cfg.sbuf.partitions;
    const std::int64_t row = D_ * 4;
    // Fixed: gamma, beta (layernorm) and one scratch row; then per buffer the
    // row and four [P, 1] statistics.
    const std::int64_t fixed = row * (layer_ ? 3 : 2), per_buffer = row + 16;
    const std::int64_t buffers = std::min(max_buffers_, (cfg.sbuf.partition_kib * 1024 - fixed) / per_buffer);
    if (buffers < 1)
      throw KernelError(fmt::format("{}: rows of D={} fp32 need {} bytes in one SBUF partition (gamma{}, scratch and "
                                    "the row), which has {}",
                                    name_, D_, fixed + per_buffer, layer_ ? ", beta" : "",
                                    cfg.sbuf.partition_kib * 1024));
    const std::uint32_t pmax = u32(std::min(P, R_));
    const Tile g = kb.sbuf("gamma", pmax, u32(D_), DType::Fp32);
    kb.label(layer_ ? "gamma and beta" : "gamma");
    kb.dma(g, View{&gamma_, 0, {pmax, D_}, {0, 1}});
    Tile b;
    if (layer_) {
      b = kb.sbuf("beta", pmax, u32(D_), DType::Fp32);
      kb.dma(b, View{&beta_, 0, {pmax, D_}, {0, 1}});
    }
    const Tile scratch = kb.sbuf("scratch", pmax, u32(D_), DType::Fp32);
    struct Set {
      Tile x, s0, s1, s2, s3;
    };
    std::vector<Set> sets;
    for (std::int64_t i = 0; i < buffers; ++i)
      sets.push_back({kb.sbuf(fmt::format("x{}", i), pmax, u32(D_), DType::Fp32),
                      kb.sbuf(fmt::format("stat{}a", i), pmax, 1, DType::Fp32),
                      kb.sbuf(fmt::format("stat{}b", i), pmax, 1, DType::Fp32),
                      kb.sbuf(fmt::format("stat{}c", i), pmax, 1, DType::Fp32),
                      kb.sbuf(fmt::format("stat{}d", i), pmax, 1, DType::Fp32)});
    const float inv_d = 1.0f / static_cast<float>(D_);
    const bool split = variant_ == "split";
    // Each block's load is issued buffers - 1 blocks ahead in program order,
    // so that no ring holds it behind the stores of the blocks in between.
    const std::int64_t blocks = ceil_div(R_, P);
    const auto rows_of = [&](std::int64_t blk) { return u32(std::min(P, R_ - blk * P)); };
    const auto load = [&](std::int64_t blk) {
      kb.label("load");
      if (blk < blocks)
        kb.dma(sets[static_cast<std::size_t>(blk % buffers)].x.slice(0, rows_of(blk), 0, u32(D_)),
               x_.region(blk * P, 0, rows_of(blk), D_));
    };
    const auto rows = [&](std::int64_t blk, const Tile& t) { return t.slice(0, rows_of(blk), 0, t.free); };
    const auto set_of = [&](std::int64_t blk) -> const Set& { return sets[static_cast<std::size_t>(blk % buffers)]; };
    // Row statistics up to rstd (s3) of a block.
    const auto stats = [&](std::int64_t blk) {
      const Set& s = set_of(blk);
      const Tile x = rows(blk, s.x), junk = rows(blk, scratch), rstd = rows(blk, s.s3);
      kb.label("statistics");
      if (layer_) {
        const Tile sum = rows(blk, s.s0), negmean = rows(blk, s.s1), var = rows(blk, s.s2);
        if (split) {
          // The row sums on the scalar engine too (an identity pass that
          // accumulates), leaving the vector engine only the normalising.
          kb.activation(junk, x, arch::ActFunc::Identity, 1.0f, 0.0f, nullptr, &sum);
          kb.activation(negmean, sum, arch::ActFunc::Identity, -inv_d);
        } else {
          kb.reduce(sum, x, arch::AluOp::Add);
          kb.tensor_scalar(negmean, sum, arch::AluOp::Multiply, -inv_d);
        }
        if (split) {
          kb.activation(junk, x, arch::ActFunc::Square, 1.0f, 0.0f, &negmean, &var);
        } else {
          kb.tensor_scalar(x, x, arch::AluOp::Add, negmean);
          kb.tensor_tensor(junk, x, x, arch::AluOp::Multiply);
          kb.reduce(var, junk, arch::AluOp::Add);
        }
        kb.activation(rstd, var, arch::ActFunc::Rsqrt, inv_d, kEps);
      } else {
        const Tile ss = rows(blk, s.s0);
        if (split) {
          kb.activation(junk, x, arch::ActFunc::Square, 1.0f, 0.0f, nullptr, &ss);
        } else {
          kb.tensor_tensor(junk, x, x, arch::AluOp::Multiply);
          kb.reduce(ss, junk, arch::AluOp::Add);
        }
        kb.activation(rstd, ss, arch::ActFunc::Rsqrt, inv_d, kEps);
      }
    };
    // stage psum: the normalised row passes between the vector engine's
    // multiplies through PSUM banks, a bank's width (512 fp32) at a time, so
    // each tensor_tensor reads one input from PSUM and one from SBUF: they
    // stream through separate read interfaces, 1 cycle per element instead of
    // 2 with both in SBUF (vector.costs.tensor_tensor_sbuf_psum). Same
    // operations in the same order, so the same roundings.
    const bool via_psum = split && params_.choice("stage") == "psum";
    // scalar_normalise: of every 4 normalising passes, ((x + -mean) * rstd)
    // over a chunk of a row block, how many run on the scalar engine (a
    // tensor_scalar through its activation datapath), which also makes the
    // row statistics; the vector engine takes the rest and the gamma and
    // beta passes. Where the vector engine bounds the kernel (v3's runs at
    // 0.96 GHz against its scalar engine's 1.2) this balances the two.
    const std::int64_t scalar_share = split ? params_.integer("scalar_normalise") : 0;
    std::int64_t normalised = 0;  // passes issued so far, in turn
    const auto normaliser = [&] {
      return normalised++ % 4 < scalar_share ? arch::Engine::Scalar : arch::Engine::Vector;
    };
    const std::int64_t bank = cfg.psum.bank_kib * 1024 / 4;
    const std::int64_t banks = cfg.psum.banks;
    std::vector<Tile> stage;
    if (via_psum)
      for (std::int64_t i = 0; i < banks; ++i)
        stage.push_back(kb.psum(fmt::format("stage{}", i), pmax, u32(std::min(bank, D_))));
    std::int64_t turn = 0;  // the next PSUM stage
    // Normalise, scale, shift and store a block.
    const auto finish = [&](std::int64_t blk) {
      const Set& s = set_of(blk);
      const Tile x = rows(blk, s.x), rstd = rows(blk, s.s3), gr = rows(blk, g);
      kb.label("normalise");
      if (via_psum) {
        const Tile negmean = rows(blk, s.s1);
        // Chunk c's first step is issued before chunk c - 1's later ones, so
        // no instruction waits for the one just before it (v3 commits a
        // result 165 cycles after its last element).
        const std::int64_t chunks = ceil_div(D_, bank), steps = layer_ ? 3 : 2;
        std::vector<Tile> a(static_cast<std::size_t>(chunks)), m(static_cast<std::size_t>(chunks));
        const auto cols = [&](const Tile& t, std::int64_t c) {
          return t.slice(0, rows_of(blk), u32(c * bank), u32(std::min(bank, D_ - c * bank)));
        };
        const auto next_stage = [&](std::int64_t c) {
          return stage[static_cast<std::size_t>(turn++ % banks)].slice(0, rows_of(blk), 0,
                                                                       u32(std::min(bank, D_ - c * bank)));
        };
        for (std::int64_t u = 0; u < chunks + steps - 1; ++u) {
          const std::int64_t c0 = u, c1 = u - 1, c2 = u - 2;
          if (c0 < chunks) {
            a[c0] = next_stage(c0);
            if (layer_)
              kb.tensor_scalar(a[c0], cols(x, c0), arch::AluOp::Add, negmean, arch::AluOp::Multiply, &rstd, 0,
                               normaliser());
            else
              kb.tensor_scalar(a[c0], cols(x, c0), arch::AluOp::Multiply, rstd, arch::AluOp::Bypass, nullptr, 0,
                               normaliser());
          }
          if (c1 >= 0 && c1 < chunks) {
            if (layer_) {
              m[c1] = next_stage(c1);
              kb.tensor_tensor(m[c1], a[c1], cols(gr, c1), arch::AluOp::Multiply);
            } else {
              kb.tensor_tensor(cols(x, c1), a[c1], cols(gr, c1), arch::AluOp::Multiply);
            }
          }
          if (layer_ && c2 >= 0 && c2 < chunks)
            kb.tensor_tensor(cols(x, c2), m[c2], cols(rows(blk, b), c2), arch::AluOp::Add);
        }
      } else {
        if (layer_ && split) {
          const Tile negmean = rows(blk, s.s1);
          kb.tensor_scalar(x, x, arch::AluOp::Add, negmean, arch::AluOp::Multiply, &rstd, 0, normaliser());
        } else if (split) {
          kb.tensor_scalar(x, x, arch::AluOp::Multiply, rstd, arch::AluOp::Bypass, nullptr, 0, normaliser());
        } else {
          kb.tensor_scalar(x, x, arch::AluOp::Multiply, rstd);  // layernorm vector: x already centred
        }
        kb.tensor_tensor(x, x, gr, arch::AluOp::Multiply);
        if (layer_) kb.tensor_tensor(x, x, rows(blk, b), arch::AluOp::Add);
      }
      kb.label("store");
      kb.dma(out_.region(blk * P, 0, rows_of(blk), D_), x);
    };
    // split: the next block's statistics are issued before this block's
    // normalising, so the vector engine has work while the scalar engine
    // squares (the streams run in order). Needs two buffers.
    const std::int64_t ahead = split && buffers >= 2 ? 1 : 0;
    for (std::int64_t blk = 0; blk + 1 < buffers; ++blk) load(blk);
    if (ahead) stats(0);
    for (std::int64_t blk = 0; blk < blocks; ++blk) {
      load(blk + buffers - 1);
      if (!ahead) stats(blk);
      else if (blk + 1 < blocks) stats(blk + 1);
      finish(blk);
    }
    return kb.build();
  }

  // Reference in double; first-order bounds on the engine's fp32 roundings
  // (u = 2^-24, gamma_n as in bounds.h; 1/D and eps are rounded to fp32,
  // 1/sqrtf rounds twice):
  //  rmsnorm: the sum of squares errs by u + gamma_{D-1} relative, scaling by
  //    fl(1/D) and adding eps by 4u more; rsqrt halves that and adds 2u; the
  //    two multiplies add 2u: |out| (e_ss + 4u) / 2 + 4u).
  //  layernorm: -mean errs by dm = gamma_{D-1} mean|x| + 2u |mean|; each
  //    centred value c = x - mean by dm + u |c|; the sum of squares S by
  //    dS = 2 dm sum|c| + D dm^2 + (3u + gamma_{D-1}) S; var + eps by
  //    e_v = dS / (S + D eps) + 4u relative; rstd by e_r = e_v / 2 + 2u; out
  //    by |gamma| rstd (dm + |c| (e_r + 3u)) + u |out|.
  // Each ku is taken as gamma_k so the bound also covers second-order terms.
  NumericsCheck check() override {
    const auto got = dev_.download(out_);
    const double u = unit_roundoff(DType::Fp32), gd = gamma(D_ - 1), gamma1 = gamma(1), gamma2 = gamma(2),
                 gamma3 = gamma(3), gamma4 = gamma(4);
    WorstElement worst;
    for (std::int64_t r = 0; r < R_; ++r) {
      const float* x = &xv_[static_cast<std::size_t>(r * D_)];
      const std::size_t base = static_cast<std::size_t>(r * D_);
      if (layer_) {
        double mean = 0, mag = 0;
        for (std::int64_t i = 0; i < D_; ++i) {
          mean += x[i];
          mag += std::fabs(x[i]);
        }
        mean /= static_cast<double>(D_);
        mag /= static_cast<double>(D_);
        double var = 0, sum_abs_c = 0;
        for (std::int64_t i = 0; i < D_; ++i) {
          var += (x[i] - mean) * (x[i] - mean);
          sum_abs_c += std::fabs(x[i] - mean);
        }
        const double S = var, Dd = static_cast<double>(D_);
        var /= Dd;
        const double rstd = 1 / std::sqrt(var + double{kEps});
        const double dm = gd * mag + gamma2 * std::fabs(mean);
        const double dS = 2 * dm * sum_abs_c + Dd * dm * dm + (gamma3 + gd) * S;
        const double e_v = dS / (S + Dd * double{kEps}) + gamma4;
        const double e_r = e_v / 2 + gamma2;
        for (std::int64_t i = 0; i < D_; ++i) {
          const double c = x[i] - mean, out = c * rstd * gv_[i] + bv_[i];
          worst.add(base + i, got[base + i], out,
                    std::fabs(gv_[i]) * rstd * (dm + std::fabs(c) * (e_r + gamma3)) + u * std::fabs(out));
        }
      } else {
        double ss = 0;
        for (std::int64_t i = 0; i < D_; ++i) ss += double{x[i]} * x[i];
        const double rstd = 1 / std::sqrt(ss / static_cast<double>(D_) + double{kEps});
        const double e_r = (gamma1 + gd + gamma4) / 2 + gamma4;
        for (std::int64_t i = 0; i < D_; ++i) {
          const double out = x[i] * rstd * gv_[i];
          worst.add(base + i, got[base + i], out, e_r * std::fabs(out));
        }
      }
    }
    return worst.result([&](std::size_t k) {
      return fmt::format("out[{}, {}]", static_cast<std::int64_t>(k) / D_, static_cast<std::int64_t>(k) % D_);
    });
  }

private:
  Device& dev_;
  std::string variant_;
  bool layer_;
  std::string name_;
  std::int64_t R_, D_, max_buffers_;
  Params params_;
  Tensor x_, gamma_, beta_, out_;
  std::vector<float> xv_, gv_, bv_;
};

KernelSpec norm_spec(bool layer) {
  KernelSpec spec;
  spec.name = layer ? "layernorm" : "rmsnorm";
  spec.description = layer ? "out = (x - mean) / sqrt(var + 1e-5) * gamma + beta per row, fp32 [R,D]"
                           : "out = x / sqrt(mean(x^2) + 1e-5) * gamma per row, fp32 [R,D]";
  spec.variants = {{"split", "the row statistics on the scalar engine (each sum in one pass), normalising on vector"},
                   {"vector", "every pass on the vector engine; the scalar engine only takes the rsqrt"}};
  spec.shape = {{"R", 1024, "rows (tokens)"}, {"D", 1024, "row length (the normalised axis)"}};
  spec.params = {TunableParam::integer(
                     "bufs", 1, 8, 6, "row blocks in flight (load, compute, store overlap), at most (fewer when SBUF is short)"),
                 TunableParam::choice("stage", {"psum", "sbuf"}, "psum",
                                      "where the normalised row waits between the vector engine's passes: psum (one "
                                      "input of each multiply in PSUM, 1 cycle per element) or sbuf (2)")
                     .only_for({"split"}),
                 TunableParam::integer("scalar_normalise", 0, 4, 0,
                                       "of every 4 normalising passes ((x - mean) * rstd over a chunk), how many the "
                                       "scalar engine makes (it also makes the row statistics; the vector engine the "
                                       "rest)")
                     .searched_at_every_value()
                     .only_for({"split"})};
  spec.make = [layer](Device& dev, const KernelArgs& args) { return std::make_unique<Norm>(dev, args, layer); };
  return spec;
}

}  // namespace

KernelSpec layernorm_spec() { return norm_spec(true); }
KernelSpec rmsnorm_spec() { return norm_spec(false); }

TESSERA_REGISTER_KERNEL(layernorm_spec);
TESSERA_REGISTER_KERNEL(rmsnorm_spec);

}  // namespace tessera::kernels
