// out[C, R] = x[R, C].T, bf16 (exact: nothing is rounded).
//
// tensor (default): NB row blocks of x, [pr, W] each, are loaded with rows on
// partitions (contiguous DMA runs of W elements). For each T columns, the
// [pr, T] blocks go through the array (a transpose is a multiply by the
// identity), H of them side by side in one PSUM bank as [T, H pr]; one copy
// per bank converts it back to bf16 into its columns of an SBUF output stage
// (alternating between the vector and scalar engines, which share the
// evacuation), and one store writes the stage as T rows of out, each a
// contiguous run of NB pr elements.
// dma: no engine touches the data. Each load reads a [pc, fr] block of x
// column-wise (partition p takes column c0 + p: a strided pattern of one
// element per run), which lands transposed in SBUF; the store writes it as
// rows of out. The DMA engines move two-byte runs, so this variant shows
// what an element-granular access pattern costs.
#include "transpose/transpose.h"

#include "common/bounds.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::kernels {
namespace {

std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

class Transpose : public KernelInstance {
public:
  Transpose(Device& dev, const KernelArgs& args)
      : dev_(dev), variant_(args.variant), params_(args.params), R_(args.shape.at("R")), C_(args.shape.at("C")) {
    const std::uint64_t seed = args.seed;
    x_ = dev.allocate("x", {R_, C_}, DType::Bf16);
    out_ = dev.allocate("out", {C_, R_}, DType::Bf16);
    if (dev.no_data()) return;
    std::mt19937_64 rng(seed);
    xv_ = random_values(static_cast<std::size_t>(R_ * C_), -1, 1, DType::Bf16, rng);
    dev.upload(x_, xv_);
  }

  Program build() override {
    KernelBuilder kb(dev_.config(), "transpose");
    if (variant_ == "tensor") tensor(kb);
    else if (variant_ == "dma") dma(kb);
    else throw KernelError(fmt::format("transpose: no variant '{}'", variant_));
    return kb.build();
  }

  // A transpose moves values without arithmetic: exact, tolerance 0 (the
  // array multiplies each by 1 and adds exact zeros).
  NumericsCheck check() override {
    const auto got = dev_.download(out_);
    WorstElement worst;
    for (std::int64_t c = 0; c < C_; ++c)
      for (std::int64_t r = 0; r < R_; ++r) {
        const auto k = static_cast<std::size_t>(c * R_ + r);
        worst.add(k, got[k], xv_[static_cast<std::size_t>(r * C_ + c)], 0.0);
      }
    return worst.result([&](std::size_t k) {
      return fmt::format("out[{}, {}]", static_cast<std::int64_t>(k) / R_, static_cast<std::int64_t>(k) % R_);
    });
  }

private:
  void tensor(KernelBuilder& kb) {
    const auto& cfg = kb.config();
    // Rows per block: the transpose's input partitions (array rows); columns
    // per block: its output partitions (array columns, PSUM partitions).
    const std::int64_t pr_max = std::min<std::int64_t>(cfg.sbuf.partitions, cfg.tensor.rows);
    const std::int64_t T = std::min({cfg.tensor.cols, static_cast<std::int64_t>(cfg.psum.partitions),
                                     static_cast<std::int64_t>(cfg.sbuf.partitions)});
    // H row blocks share a PSUM bank; NB row blocks (whole banks' worth, G
    // banks) go out in one store, so that each store writes rows of out
    // NB * pr_max elements long (4 KiB and more by default: the DMA guide's
    // efficient run, where the 1 KiB runs of one bank's worth kept the DMA
    // engines at about half their peak). W columns of x are loaded per row
    // block.
    const std::int64_t bank = cfg.psum.bank_kib * 1024 / 4;
    const std::int64_t H = std::max<std::int64_t>(1, std::min(bank / pr_max, ceil_div(R_, pr_max)));
    const std::int64_t NB = std::max<std::int64_t>(
        1, std::min(params_.integer("row_blocks"), ceil_div(R_, pr_max)));
    const std::int64_t G = ceil_div(NB, H);
    // Two sets of input tiles; several SBUF output stages, so that stores are
    // in flight while the next blocks go through the array (a store's start
    // latency is longer than one block's transposes and copies); the PSUM
    // banks rotate on their own, each copied out as soon as it is full.
    constexpr int kSets = 2;
    const int out_sets = static_cast<int>(params_.integer("out_sets"));
    const std::int64_t budget = cfg.sbuf.partition_kib * 1024 - out_sets * NB * pr_max * 2;
    std::int64_t W = std::min<std::int64_t>({C_, params_.integer("F"), budget / (kSets * NB * 2)});
    if (W < C_) W = W / T * T;
    if (W < 1)
      throw KernelError(fmt::format("transpose: {} row blocks of one column and {} output stages of {} rows do not "
                                    "fit SBUF (row_blocks, out_sets)",
                                    NB, out_sets, NB * pr_max));
    std::vector<Tile> xin[kSets];
    std::vector<Tile> pT, xo;
    for (int s = 0; s < kSets; ++s)
      for (std::int64_t j = 0; j < NB; ++j)
        xin[s].push_back(kb.sbuf(fmt::format("x{}_{}", s, j), u32(pr_max), u32(W), DType::Bf16));
    const std::int64_t psum_sets = std::max<std::int64_t>(1, cfg.psum.banks);
    for (std::int64_t b = 0; b < psum_sets; ++b) pT.push_back(kb.psum(fmt::format("pT{}", b), u32(T), u32(H * pr_max)));
    for (int s = 0; s < out_sets; ++s) xo.push_back(kb.sbuf(fmt::format("xT{}", s), u32(T), u32(NB * pr_max), DType::Bf16));
    int s = 0, t = 0;
    std::int64_t pb = 0, store = 0;  // PSUM bank turn, also the evacuating engine's
    for (std::int64_t R0 = 0; R0 < R_; R0 += NB * pr_max)
      for (std::int64_t C0 = 0; C0 < C_; C0 += W, s = (s + 1) % kSets) {
        const std::int64_t nb = std::min(NB, ceil_div(R_ - R0, pr_max)), cw = std::min(W, C_ - C0);
        const std::int64_t hr = std::min(NB * pr_max, R_ - R0);
        std::vector<Tile> x;
        for (std::int64_t j = 0; j < nb; ++j) {
          const std::int64_t pr = std::min(pr_max, R_ - R0 - j * pr_max);
          x.push_back(xin[s][static_cast<std::size_t>(j)].slice(0, u32(pr), 0, u32(cw)));
          kb.dma(x.back(), x_.region(R0 + j * pr_max, C0, pr, cw));
        }
        for (std::int64_t i = 0; i * T < cw; ++i, t = (t + 1) % out_sets) {
          const std::int64_t w = std::min(T, cw - i * T);
          for (std::int64_t g = 0; g < G && g * H < nb; ++g, ++pb) {
            const Tile& ps = pT[static_cast<std::size_t>(pb % psum_sets)];
            const std::int64_t j0 = g * H, j1 = std::min(nb, (g + 1) * H);
            for (std::int64_t j = j0; j < j1; ++j) {
              const Tile& xj = x[static_cast<std::size_t>(j)];
              kb.transpose(ps.slice(0, u32(w), u32((j - j0) * pr_max), xj.partitions),
                           xj.slice(0, xj.partitions, u32(i * T), u32(w)));
            }
            const std::int64_t rows = std::min(hr, j1 * pr_max) - j0 * pr_max;
            kb.copy(xo[t].slice(0, u32(w), u32(j0 * pr_max), u32(rows)), ps.slice(0, u32(w), 0, u32(rows)),
                    evacuation_engine(pb));
          }
          kb.dma(out_.region(C0 + i * T, R0, w, hr), xo[t].slice(0, u32(w), 0, u32(hr)), store_spread(cfg, store++));
        }
      }
  }

  // Store k's descriptors: one per engine of a group of store_engines
  // engines, the groups in turn; 0 leaves the builder's policy (every engine).
  DmaSpread store_spread(const arch::HwConfig& cfg, std::int64_t k) const {
    const std::int64_t n = std::min<std::int64_t>(params_.integer("store_engines"), cfg.dma.engines);
    if (n <= 0) return {};
    const std::int64_t groups = cfg.dma.engines / n;
    return DmaSpread{u32(n), 0, u32((k % groups) * n), u32(n)};
  }

  // The engine copying output stage i from PSUM: alternating shares the
  // evacuation between the vector and scalar engines.
  arch::Engine evacuation_engine(std::int64_t i) const {
    const std::string& e = params_.choice("evacuate");
    if (e == "vector") return arch::Engine::Vector;
    if (e == "scalar") return arch::Engine::Scalar;
    return i % 2 ? arch::Engine::Scalar : arch::Engine::Vector;
  }

  void dma(KernelBuilder& kb) {
    const auto& cfg = kb.config();
    const std::int64_t P = cfg.sbuf.partitions;
    const int kSets = static_cast<int>(params_.integer("bufs"));
    const std::int64_t F =
        std::min<std::int64_t>({R_, params_.integer("F"), cfg.sbuf.partition_kib * 1024 / (2 * kSets)});
    std::vector<Tile> t(static_cast<std::size_t>(kSets));
    for (int s = 0; s < kSets; ++s) t[s] = kb.sbuf(fmt::format("t{}", s), u32(P), u32(F), DType::Bf16);
    int s = 0;
    for (std::int64_t c0 = 0; c0 < C_; c0 += P)
      for (std::int64_t r0 = 0; r0 < R_; r0 += F, s = (s + 1) % kSets) {
        const std::int64_t pc = std::min(P, C_ - c0), fr = std::min(F, R_ - r0);
        const Tile tile = t[s].slice(0, u32(pc), 0, u32(fr));
        // Partition p reads column c0 + p, rows r0 .. r0 + fr - 1.
        kb.dma(tile, View{&x_, r0 * C_ + c0, {pc, fr}, {1, C_}});
        kb.dma(out_.region(c0, r0, pc, fr), tile);
      }
  }

  Device& dev_;
  std::string variant_;
  Params params_;
  std::int64_t R_, C_;
  Tensor x_, out_;
  std::vector<float> xv_;
};

}  // namespace

KernelSpec transpose_spec() {
  KernelSpec spec;
  spec.name = "transpose";
  spec.description = "out[C,R] = x[R,C].T, bf16";
  spec.variants = {{"tensor", "row blocks through the array (a multiply by the identity) into PSUM, copied back to bf16"},
                   {"dma", "a column-wise (element-granular) DMA read lands each block transposed; no engine works"}};
  spec.shape = {{"R", 1024, "rows of x"}, {"C", 1024, "columns of x"}};
  spec.params = {
      TunableParam::integer(
          "F", 1, 1 << 20, 2048,
          "elements per partition per load, at most (tensor: columns of x, whole array widths; dma: rows of x)")
          // A load never takes more than the columns (tensor) or rows (dma)
          // there are: larger values are the same program.
          .useful_up_to([](const ParamContext& ctx) { return std::max(ctx.shape.at("R"), ctx.shape.at("C")); }),
      TunableParam::integer("row_blocks", 1, 256, 16,
                            "row blocks of x (array heights) per store: each store writes rows of out this many "
                            "blocks long")
          .useful_up_to([](const ParamContext& ctx) {
            const std::int64_t rows = std::min(ctx.config.sbuf.partitions, ctx.config.tensor.rows);
            return std::max<std::int64_t>(1, (ctx.shape.at("R") + rows - 1) / rows);
          })
          .only_for({"tensor"}),
      TunableParam::integer("out_sets", 1, 16, 1,
                            "output stages (an SBUF tile each) in flight; default: half the PSUM banks, 1..4")
          .derived([](const ParamContext& ctx) -> ParamValue {
            return std::clamp<std::int64_t>(ctx.config.psum.banks / 2, 1, 4);
          })
          .only_for({"tensor"}),
      TunableParam::integer("store_engines", 0, 64, 0,
                            "DMA engines each store is spread over (one descriptor each), groups of them in turn; "
                            "0: every engine (the builder's policy)")
          .useful_up_to([](const ParamContext& ctx) { return ctx.config.dma.engines; })
          .only_for({"tensor"}),
      TunableParam::choice("evacuate", {"alternate", "vector", "scalar"}, "alternate",
                           "the engine copying PSUM to SBUF: alternating shares the work")
          .only_for({"tensor"}),
      TunableParam::integer("bufs", 1, 8, 3, "blocks in flight (each load lands in its own buffer)").only_for({"dma"}),
  };
  spec.make = [](Device& dev, const KernelArgs& args) { return std::make_unique<Transpose>(dev, args); };
  return spec;
}

TESSERA_REGISTER_KERNEL(transpose_spec);

}  // namespace tessera::kernels
