// 2-D convolution, y = conv(x, w) with stride and zero padding, as tiled
// matmuls that accumulate over the kernel taps in PSUM: no im2col buffer is
// ever built (docs/kernels.md, conv2d).
//
// Layout: NCHW. x [N*C, H*W] (one row per image and channel), y [N*K, OH*OW]
// fp32, weights [C, R*S*K] ("C R S K": for each input channel, each tap's K
// output channels side by side, so a tap's [C, K] block is the stationary
// operand as it lies). Inputs bf16.
//
// How a tap becomes one matmul: input channels lie on partitions; each
// partition holds its channel's zero-padded image split into stride x stride
// phases, phase (a, b) holding padded pixels (i * stride + a, j * stride + b)
// in rows of Wq elements. Output pixel (oh, ow) under tap (r, s) reads phase
// (r % stride, s % stride) at (oh + r / stride, ow + s / stride), so for a
// block of output rows computed at the full row width Wq (the columns past
// OW are discarded), the tap's moving operand is one contiguous run of the
// phase: element oh0 * Wq + (r / stride) * Wq + s / stride onwards.
#include "conv2d/conv2d.h"

#include "arch/numerics.h"
#include "common/bounds.h"
#include "common/input_format.h"
#include "common/reference_matmul.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace tessera::kernels {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

Tile fit(const Tile& t, std::int64_t partitions, std::int64_t free) { return t.slice(0, u32(partitions), 0, u32(free)); }

// Output rows computed per matmul (at the padded row width Wq), and row
// blocks per group.
struct ConvGeometry {
  std::int64_t OH, OW, Wq, max_n, rows_per_block, nblocks;
  ConvGeometry(const arch::HwConfig& cfg, const Shape& s) {
    const std::int64_t H = s.at("H"), W = s.at("W"), R = s.at("R"), S = s.at("S"), st = s.at("stride"),
                       pad = s.at("pad");
    if (H + 2 * pad < R || W + 2 * pad < S)
      throw KernelError(fmt::format("conv2d: a {}x{} kernel is larger than the padded {}x{} input (pad {})", R, S,
                                    H + 2 * pad, W + 2 * pad, pad));
    OH = (H + 2 * pad - R) / st + 1;
    OW = (W + 2 * pad - S) / st + 1;
    Wq = OW + (S - 1) / st;
    max_n = std::min(cfg.tensor.moving_max_free, cfg.psum.bank_kib * 1024 / 4);
    rows_per_block = std::max<std::int64_t>(1, std::min(OH, max_n / Wq));
    nblocks = ceil_div(OH, rows_per_block);
  }
  // blocked: as many row blocks as PSUM holds twice over, one bank kept spare.
  std::int64_t default_group(const arch::HwConfig& cfg) const {
    const std::int64_t per_bank = cfg.psum.bank_kib * 1024 / (rows_per_block * Wq * 4);
    return std::clamp<std::int64_t>((cfg.psum.banks - 1) * per_bank / 2, 1, nblocks);
  }
};

class Conv2d : public KernelInstance {
public:
  Conv2d(Device& dev, const KernelArgs& args)
      : dev_(dev), blocked_(args.variant == "blocked"), N_(args.shape.at("N")), C_(args.shape.at("C")),
        H_(args.shape.at("H")), W_(args.shape.at("W")), K_(args.shape.at("K")), R_(args.shape.at("R")),
        S_(args.shape.at("S")), st_(args.shape.at("stride")), pad_(args.shape.at("pad")), params_(args.params),
        fmt_(input_format(args.dtype, dev.config())) {
    const std::uint64_t seed = args.seed;
    const ConvGeometry g(dev.config(), args.shape);
    OH_ = g.OH;
    OW_ = g.OW;
    x_ = dev.allocate("x", {N_ * C_, H_ * W_}, fmt_.dtype);
    w_ = dev.allocate("w", {C_, R_ * S_ * K_}, fmt_.dtype);
    y_ = dev.allocate("y", {N_ * K_, OH_ * OW_}, DType::Fp32);
    if (dev.no_data()) return;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    xv_.resize(static_cast<std::size_t>(N_ * C_ * H_ * W_));
    wv_.resize(static_cast<std::size_t>(C_ * R_ * S_ * K_));
    // In [-1, 1]: well inside fp8's range, so no tensor needs a scale.
    for (auto& v : xv_) v = held_value(fmt_.dtype, dist(rng));
    for (auto& v : wv_) v = held_value(fmt_.dtype, dist(rng));
    dev.upload(x_, xv_);
    dev.upload(w_, wv_);
  }

  Program build() override;

  // Reference in double from the same inputs (as the device holds them).
  // Each output sums C*R*S products (padding contributes exact zeros) in
  // fp32; bf16 and fp8 products are exact, so its error is at most
  // gamma_{C R S} * sum |w x| (as for gemm); fp32 inputs round each product
  // too, gamma_{C R S + 1}.
  NumericsCheck check() override {
    const auto got = dev_.download(y_);
    const double g = gamma(C_ * R_ * S_ + (fmt_.dtype == DType::Fp32 ? 1 : 0));
    // Per image, blocks of output pixels: their input patches as the rows of
    // a reference product's left operand (im2col, [C R S, pixels], padding
    // as zeros, which add nothing) against the weights [C R S, K] as they
    // lie, so each output sums its C x R x S products in the loop's order
    // (c, then r, then s), vectorized (reference_matmul).
    const auto sz = [](std::int64_t v) { return static_cast<std::size_t>(v); };
    const std::size_t taps = sz(C_ * R_ * S_), K = sz(K_), pixels = sz(OH_ * OW_);
    constexpr std::size_t kPixels = 256;
    const ReferenceRight w(wv_.data(), taps, K);
    const std::size_t per_image = (pixels + kPixels - 1) / kPixels;
    const auto blocks = [&](std::size_t first, std::size_t last, WorstElement& worst) {
      std::vector<float> patches(taps * kPixels);
      std::vector<std::int64_t> ih0(kPixels), iw0(kPixels);  // each pixel's tap (0, 0), padded coordinates
      ReferenceProduct y;
      for (std::size_t b = first; b < last; ++b) {
        const auto n = static_cast<std::int64_t>(b / per_image);
        const std::size_t p0 = b % per_image * kPixels, np = std::min(kPixels, pixels - p0);
        for (std::size_t pp = 0; pp < np; ++pp) {
          ih0[pp] = static_cast<std::int64_t>((p0 + pp) / sz(OW_)) * st_ - pad_;
          iw0[pp] = static_cast<std::int64_t>((p0 + pp) % sz(OW_)) * st_ - pad_;
        }
        for (std::int64_t c = 0; c < C_; ++c) {
          const float* image = &xv_[sz((n * C_ + c) * H_ * W_)];
          for (std::int64_t r = 0; r < R_; ++r)
            for (std::int64_t s = 0; s < S_; ++s) {
              float* row = &patches[sz((c * R_ + r) * S_ + s) * np];
              for (std::size_t pp = 0; pp < np; ++pp) {
                const std::int64_t ih = ih0[pp] + r, iw = iw0[pp] + s;
                row[pp] = ih < 0 || ih >= H_ || iw < 0 || iw >= W_ ? 0.0f : image[ih * W_ + iw];
              }
            }
        }
        reference_matmul(patches.data(), np, w, y);
        // Outputs in the order y lies in: channel, then pixel.
        for (std::size_t k = 0; k < K; ++k)
          for (std::size_t pp = 0; pp < np; ++pp) {
            const std::size_t at = (sz(n) * K + k) * pixels + p0 + pp;
            worst.add(at, got[at], y.sum[pp * K + k], g * y.mag[pp * K + k]);
          }
      }
    };
    const WorstElement worst = worst_over_blocks(sz(N_) * per_image, blocks);
    return worst.result([&](std::size_t at) {
      const std::size_t pixel = at % pixels;
      return fmt::format("y[n {}, k {}, {}, {}]", at / pixels / K, at / pixels % K, pixel / sz(OW_), pixel % sz(OW_));
    });
  }

private:
  // The engine evacuating output block `turn` (0 or 1, alternating).
  arch::Engine evacuation_engine(int turn) const;
  // The engine spreading a staged image into its planes.
  static arch::Engine stage_engine(const std::string& stage);

  Device& dev_;
  bool blocked_;
  std::int64_t N_, C_, H_, W_, K_, R_, S_, st_, pad_;
  Params params_;
  std::int64_t OH_ = 0, OW_ = 0;
  // x and w are of its dtype; in double row two contraction steps (channel
  // chunk and tap) of equal channels go to one matmul.
  InputFormat fmt_;
  Tensor x_, w_, y_;
  std::vector<float> xv_, wv_;
};

arch::Engine Conv2d::stage_engine(const std::string& stage) {
  if (stage == "scalar") return arch::Engine::Scalar;
  if (stage == "gpsimd") return arch::Engine::GpSimd;
  return arch::Engine::Vector;
}

arch::Engine Conv2d::evacuation_engine(int turn) const {
  const std::string& e = params_.choice("evacuate");
  if (e == "vector") return arch::Engine::Vector;
  if (e == "scalar") return arch::Engine::Scalar;
  return turn ? arch::Engine::Scalar : arch::Engine::Vector;
}

Program Conv2d::build() {
  const auto& cfg = dev_.config();
  KernelBuilder kb(cfg, "conv2d");
  const std::int64_t c = std::min({cfg.tensor.rows, cfg.tensor.cols, cfg.tensor.stationary_max_free,
                                   cfg.sbuf.partitions, cfg.psum.partitions});
  const std::int64_t max_n = std::min(cfg.tensor.moving_max_free, cfg.psum.bank_kib * 1024 / 4);
  // Phase geometry: rows and columns each phase needs (one spare row, as a
  // block's last row of the widest tap runs past its row end).
  const std::int64_t Wq = OW_ + (S_ - 1) / st_, Hq = OH_ + (R_ - 1) / st_ + 1;
  const std::int64_t pa = std::min(st_, R_), pb = std::min(st_, S_);  // phases some tap reads
  if (Wq > max_n)
    throw KernelError(fmt::format("conv2d: an output row at the padded width {} exceeds the {} elements one matmul "
                                  "streams (tensor.moving_max_free and a PSUM bank)", Wq, max_n));
  const std::int64_t nc = ceil_div(C_, c), nk = ceil_div(K_, c);
  const std::int64_t rows_per_block = std::min(OH_, max_n / Wq);
  const std::int64_t nblocks = ceil_div(OH_, rows_per_block);
  // blocked: a group of row blocks accumulates at once, one PSUM tile each,
  // so each tap's weights are loaded into the array once per group.
  const std::int64_t group = blocked_ ? std::min(params_.integer("group"), nblocks) : 1;
  const std::int64_t plane = Hq * Wq;
  const DType in = fmt_.dtype;
  const std::int64_t e = arch::size_of(in);
  // stage: an image comes in as one contiguous run per channel (a DMA guide
  // sized transfer) and an engine spreads it into the padded phase planes;
  // "none": a pitched DMA per phase writes the planes directly, one run per
  // image row, which the DMA's run gap slows for narrow images.
  const std::string& stage = params_.choice("stage");
  const bool staged = stage != "none";
  const std::int64_t sbuf_need = nc * R_ * S_ * K_ * e + 2 * nc * pa * pb * plane * e + 2 * rows_per_block * OW_ * 4 +
                                 (staged ? 2 * nc * H_ * W_ * e : 0);
  if (sbuf_need > cfg.sbuf.partition_kib * 1024)
    throw KernelError(fmt::format("conv2d: weights, two images' padded planes{} and the output tiles need {} bytes per "
                                  "partition; SBUF has {}",
                                  staged ? ", their staging copies" : "", sbuf_need, cfg.sbuf.partition_kib * 1024));

  // Weights resident: per input-channel chunk, every tap's K columns.
  std::vector<Tile> w(static_cast<std::size_t>(nc));
  for (std::int64_t ci = 0; ci < nc; ++ci) {
    const std::int64_t cc = std::min(c, C_ - ci * c);
    w[ci] = kb.sbuf(fmt::format("w{}", ci), c, R_ * S_ * K_, in);
    kb.dma(fit(w[ci], cc, R_ * S_ * K_), w_.region(ci * c, 0, cc, R_ * S_ * K_));
  }
  // Phase planes, two sets (images alternate). Zeroed once: every image
  // writes the same interior, so the padding stays zero.
  std::vector<Tile> planes[2];
  for (int s = 0; s < 2; ++s)
    for (std::int64_t i = 0; i < nc * pa * pb; ++i) {
      planes[s].push_back(kb.sbuf(fmt::format("x{}_{}", s, i), c, plane, in));
      kb.memset(planes[s].back(), 0.0f);
    }
  std::vector<Tile> staging[2];
  if (staged)
    for (int s = 0; s < 2; ++s)
      for (std::int64_t ci = 0; ci < nc; ++ci) staging[s].push_back(kb.sbuf(fmt::format("xs{}_{}", s, ci), c, H_ * W_, in));
  std::vector<Tile> acc;
  for (std::int64_t g = 0; g < 2 * group; ++g) acc.push_back(kb.psum(fmt::format("acc{}", g), c, rows_per_block * Wq));
  const Tile out[2] = {kb.sbuf("y0", c, rows_per_block * OW_, DType::Fp32),
                       kb.sbuf("y1", c, rows_per_block * OW_, DType::Fp32)};

  int aturn = 0, oturn = 0, evac = 0;
  for (std::int64_t n = 0; n < N_; ++n) {
    const auto& pl = planes[n % 2];
    // Load each phase's interior: padded pixel (i st + a, j st + b) is input
    // pixel (i st + a - pad, j st + b - pad) where that lies inside.
    for (std::int64_t ci = 0; ci < nc; ++ci) {
      const std::int64_t cc = std::min(c, C_ - ci * c);
      const Tile image = staged ? fit(staging[n % 2][ci], cc, H_ * W_) : Tile{};
      if (staged) kb.dma(image, x_.region(n * C_ + ci * c, 0, cc, H_ * W_));
      for (std::int64_t a = 0; a < pa; ++a)
        for (std::int64_t b = 0; b < pb; ++b) {
          const std::int64_t i0 = std::max<std::int64_t>(0, ceil_div(pad_ - a, st_));
          const std::int64_t i1 = std::min(Hq - 1, (H_ - 1 + pad_ - a) / st_);
          const std::int64_t j0 = std::max<std::int64_t>(0, ceil_div(pad_ - b, st_));
          const std::int64_t j1 = std::min(Wq - 1, (W_ - 1 + pad_ - b) / st_);
          if (i1 < i0 || j1 < j0) continue;  // this phase sees only padding
          const std::int64_t ih = i0 * st_ + a - pad_, iw = j0 * st_ + b - pad_;
          const Tile& t = pl[(ci * pa + a) * pb + b];
          if (staged) {
            kb.copy(fit(t, cc, plane).rows(u32(i0 * Wq + j0), u32(i1 - i0 + 1), u32(j1 - j0 + 1), u32(Wq)),
                    image.rows(u32(ih * W_ + iw), u32(i1 - i0 + 1), u32(j1 - j0 + 1), u32(st_ * W_), u32(st_)),
                    stage_engine(stage));
            continue;
          }
          View src{&x_, ((n * C_ + ci * c) * H_ + ih) * W_ + iw, {cc, i1 - i0 + 1, j1 - j0 + 1}, {H_ * W_, st_ * W_, st_}};
          kb.dma(t.slice(0, u32(cc), u32(i0 * Wq + j0), u32((i1 - i0) * Wq + (j1 - j0) + 1)), src, u32(Wq));
        }
    }
    for (std::int64_t ki = 0; ki < nk; ++ki) {
      const std::int64_t kk = std::min(c, K_ - ki * c);
      for (std::int64_t b0 = 0; b0 < nblocks; b0 += group) {
        const std::int64_t gn = std::min(group, nblocks - b0);
        // Taps outermost within the group: one stationary load serves gn
        // row blocks (blocked); the simple variant has gn = 1. A step is a
        // channel chunk and a tap. In double row two steps of equal
        // channels share a matmul (the second as the upper rows): a tap of
        // two chunks side by side, since two taps of one chunk read
        // overlapping runs of its planes, which the two halves may not.
        struct Step {
          std::int64_t ci, cc, r, s;
        };
        std::vector<Step> steps;
        const std::int64_t chunks_per_step = fmt_.double_row() ? 2 : 1;
        for (std::int64_t c0 = 0; c0 < nc; c0 += chunks_per_step)
          for (std::int64_t r = 0; r < R_; ++r)
            for (std::int64_t s = 0; s < S_; ++s)
              for (std::int64_t ci = c0; ci < std::min(nc, c0 + chunks_per_step); ++ci)
                steps.push_back({ci, std::min(c, C_ - ci * c), r, s});
        const auto weights = [&](const Step& t) {
          return w[t.ci].slice(0, u32(t.cc), u32((t.r * S_ + t.s) * K_ + ki * c), u32(kk));
        };
        const auto moving = [&](const Step& t, std::int64_t oh0, std::int64_t nr) {
          const Tile& ph = pl[(t.ci * pa + t.r % st_) * pb + t.s % st_];
          const std::int64_t start = (oh0 + t.r / st_) * Wq + t.s / st_;
          return ph.slice(0, u32(t.cc), u32(start), u32(nr * Wq));
        };
        bool first = true;
        for (std::size_t i = 0; i < steps.size(); first = false) {
          const bool pair = fmt_.double_row() && i + 1 < steps.size() && steps[i + 1].ci != steps[i].ci &&
                            steps[i + 1].cc == steps[i].cc;
          for (std::int64_t g = 0; g < gn; ++g) {
            const std::int64_t oh0 = (b0 + g) * rows_per_block, nr = std::min(rows_per_block, OH_ - oh0);
            const Tile dst = fit(acc[aturn * group + g], kk, nr * Wq);
            if (pair)
              kb.matmul(dst, MatmulInput::double_row(weights(steps[i]), weights(steps[i + 1])),
                        MatmulInput::double_row(moving(steps[i], oh0, nr), moving(steps[i + 1], oh0, nr)), !first);
            else
              kb.matmul(dst, weights(steps[i]), moving(steps[i], oh0, nr), !first);
          }
          i += pair ? 2 : 1;
        }
        // Evacuate the valid columns of the block's output rows in one
        // instruction (blocks alternate the vector and scalar engines),
        // then store the block.
        for (std::int64_t g = 0; g < gn; ++g, oturn ^= 1, evac ^= 1) {
          const std::int64_t oh0 = (b0 + g) * rows_per_block, nr = std::min(rows_per_block, OH_ - oh0);
          const Tile& a = acc[aturn * group + g];
          kb.copy(fit(out[oturn], kk, nr * OW_), fit(a, kk, nr * Wq).rows(0, u32(nr), u32(OW_), u32(Wq)),
                  evacuation_engine(evac));
          kb.dma(y_.region(n * K_ + ki * c, oh0 * OW_, kk, nr * OW_), fit(out[oturn], kk, nr * OW_));
        }
        aturn ^= 1;
      }
    }
  }
  return kb.build();
}

}  // namespace

KernelSpec conv2d_spec() {
  KernelSpec spec;
  spec.name = "conv2d";
  spec.description =
      "y = conv2d(x, w), NCHW: x [N*C, H*W], w [C, R*S*K] bf16 (C R S K; or --dtype fp32, fp8; fp8 in double row "
      "where the config has it), y [N*K, OH*OW] fp32; stride, zero padding";
  spec.dtypes = {"bf16", "fp32", "fp8_e4m3", "fp8_e5m2"};
  spec.variants = {{"blocked", "a group of row blocks accumulates at once: each tap's weights load once per group"},
                   {"simple", "one row block at a time: each tap's weights load once per row block"}};
  spec.shape = {{"N", 2, "images"},
                {"C", 32, "input channels"},
                {"H", 16, "input height"},
                {"W", 16, "input width"},
                {"K", 32, "output channels"},
                {"R", 3, "kernel height"},
                {"S", 3, "kernel width"},
                {"stride", 1, "stride (both axes)"},
                {"pad", 1, "zero padding (both axes)", 0}};
  spec.params = {
      TunableParam::integer("group", 1, 1024, 1,
                            "row blocks accumulating at once (a PSUM tile each); default: what PSUM holds twice, a "
                            "bank spare")
          .derived([](const ParamContext& ctx) -> ParamValue {
            return ConvGeometry(ctx.config, ctx.shape).default_group(ctx.config);
          })
          .useful_up_to([](const ParamContext& ctx) { return ConvGeometry(ctx.config, ctx.shape).nblocks; })
          .only_for({"blocked"}),
      TunableParam::choice("evacuate", {"alternate", "vector", "scalar"}, "alternate",
                           "the engine copying output blocks from PSUM to SBUF: alternating shares the work"),
      TunableParam::choice("stage", {"gpsimd", "vector", "scalar", "none"}, "gpsimd",
                           "how an image reaches its zero-padded planes: one contiguous DMA per channel chunk into a "
                           "staging tile, then a copy by this engine; none: a pitched DMA per phase, a run per image "
                           "row (slow where rows are short: the DMA's run gap); default: GpSimd, which nothing else "
                           "here uses, where the config has one, else the vector engine")
          .derived([](const ParamContext& ctx) -> ParamValue {
            return std::string(ctx.config.gpsimd.present ? "gpsimd" : "vector");
          }),
  };
  spec.make = [](Device& dev, const KernelArgs& args) { return std::make_unique<Conv2d>(dev, args); };
  return spec;
}

TESSERA_REGISTER_KERNEL(conv2d_spec);

}  // namespace tessera::kernels
