// reduce: sum or max of an fp32 [R, C] tensor along one axis.
//   *_axis1 (along rows, out [R, 1]): rows on SBUF partitions; each column
//     chunk is one vector-engine free-axis reduction, chunks combined into a
//     running [P, 1] result.
//   *_axis0 (down columns, out [1, C]): rows on partitions; the GpSimd engine
//     reduces across partitions ([P, F] -> [1, F]), the vector engine
//     combines row blocks into a running [1, F] result. A generation without
//     GpSimd (neuroncore-v1) loads columns onto partitions with a strided DMA
//     instead and reduces them on the vector engine.
// Tiles rotate through three buffers so loads overlap the reductions; both
// directions read the tensor once, so both are bounded by DMA unless the
// tiles are small.
//
// cumsum: out[r, c] = sum_{k <= c} x[r, k], bf16 in, fp32 out.
//   matmul (default): the prefix sum as a product with an upper-triangular
//     ones matrix U on the tensor engine: a [P, T] block of x is transposed
//     through the array (to put the summed axis on partitions), and
//     x_block @ U[k, j] = (k <= j) gives every prefix within the block. G
//     blocks share one PSUM bank: block i adds its prefix to the columns at
//     and after its own (the same U, sliced), so one bank holds the prefix of
//     G*T columns. The vector engine evacuates the bank adding the row's
//     carry (a per-partition scalar) and keeps the last column as the next
//     carry.
//   scan: the vector engine alone, a Hillis-Steele scan: log2(F) passes, pass
//     s adding to each element the one s to its left; then the carry.
#include "reduce/reduce.h"

#include "common/bounds.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tessera::kernels {
namespace {

std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

constexpr std::int64_t kMaxResultColumns = 512;  // row blocks whose results are stored together

class Reduce : public KernelInstance {
public:
  Reduce(Device& dev, const KernelArgs& args)
      : dev_(dev), R_(args.shape.at("R")), C_(args.shape.at("C")), sum_(args.variant.rfind("sum", 0) == 0),
        axis0_(args.variant.find("axis0") != std::string::npos), buffers_(args.params.integer("bufs")),
        max_chunk_(args.params.integer("F")) {
    const std::uint64_t seed = args.seed;
    x_ = dev.allocate("x", {R_, C_}, DType::Fp32);
    out_ = axis0_ ? dev.allocate("out", {1, C_}, DType::Fp32) : dev.allocate("out", {R_, 1}, DType::Fp32);
    if (dev.no_data()) return;
    std::mt19937_64 rng(seed);
    xv_ = random_values(static_cast<std::size_t>(R_ * C_), -1, 1, DType::Fp32, rng);
    dev.upload(x_, xv_);
  }

  Program build() override {
    const auto& cfg = dev_.config();
    KernelBuilder kb(cfg, "reduce");
    const std::int64_t P = cfg.sbuf.partitions;
    const arch::AluOp op = sum_ ? arch::AluOp::Add : arch::AluOp::Max;
    // Three input tiles of F fp32 per partition, plus the results: along
    // rows one column per row block, down columns two running and two
    // partial [1, F] rows.
    const std::int64_t blocks = std::min(ceil_div(axis0_ ? C_ : R_, P), kMaxResultColumns);
    const std::int64_t F = std::min(
        {C_, max_chunk_, (cfg.sbuf.partition_kib * 1024 - 8 - 4 * blocks) / (4 * (buffers_ + (axis0_ ? 4 : 0)))});
    std::vector<Tile> in;
    for (std::int64_t i = 0; i < buffers_; ++i) in.push_back(kb.sbuf(fmt::format("x{}", i), u32(P), u32(F), DType::Fp32));
    // The tiles in the order they are reduced; each load is issued
    // buffers_ - 1 tiles ahead in program order, so that in every DMA ring it
    // comes before the stores of the tiles reduced meanwhile (a ring rings in
    // program order, and a load stuck behind a later store waits for it).
    struct Step {
      std::int64_t r0, c0;
      std::uint32_t np, nf;  // partitions, free elements of the tile
      View view;
    };
    std::vector<Step> steps;
    const bool columns_by_dma = axis0_ && !cfg.gpsimd.present;
    if (!axis0_) {
      for (std::int64_t r0 = 0; r0 < R_; r0 += P)
        for (std::int64_t c0 = 0; c0 < C_; c0 += F) {
          const std::int64_t pr = std::min(P, R_ - r0), nf = std::min(F, C_ - c0);
          steps.push_back({r0, c0, u32(pr), u32(nf), x_.region(r0, c0, pr, nf)});
        }
    } else if (columns_by_dma) {
      // No GpSimd engine (neuroncore-v1): columns go onto partitions through
      // a strided (column-wise) DMA and the vector engine reduces each row
      // of that, at the DMA's element-granular cost.
      for (std::int64_t c0 = 0; c0 < C_; c0 += P)
        for (std::int64_t r0 = 0; r0 < R_; r0 += F) {
          const std::int64_t pc = std::min(P, C_ - c0), nr = std::min(F, R_ - r0);
          steps.push_back({r0, c0, u32(pc), u32(nr), View{&x_, r0 * C_ + c0, {pc, nr}, {1, C_}}});
        }
    } else {
      for (std::int64_t c0 = 0; c0 < C_; c0 += F)
        for (std::int64_t r0 = 0; r0 < R_; r0 += P) {
          const std::int64_t pr = std::min(P, R_ - r0), nf = std::min(F, C_ - c0);
          steps.push_back({r0, c0, u32(pr), u32(nf), x_.region(r0, c0, pr, nf)});
        }
    }
    std::vector<Tile> loaded(steps.size());
    const auto load = [&](std::size_t i) {
      if (i >= steps.size()) return;
      loaded[i] = in[i % buffers_].slice(0, steps[i].np, 0, steps[i].nf);
      kb.dma(loaded[i], steps[i].view);
    };
    for (std::size_t i = 0; i + 1 < static_cast<std::size_t>(buffers_); ++i) load(i);

    if (!axis0_ || columns_by_dma) {
      // One result column per block of P rows (or P columns), stored once a
      // group of them is complete: no small store sits in a ring between loads.
      const Tile res = kb.sbuf("result", u32(P), u32(blocks), DType::Fp32);
      const Tile part[2] = {kb.sbuf("part0", u32(P), 1, DType::Fp32), kb.sbuf("part1", u32(P), 1, DType::Fp32)};
      std::vector<std::pair<std::int64_t, Tile>> done;  // (first row or column, result)
      const auto flush = [&] {
        for (const auto& [first, r] : done) {
          if (axis0_) kb.dma(View{&out_, first, {r.partitions, 1}, {1, 1}}, r);
          else kb.dma(out_.region(first, 0, r.partitions, 1), r);
        }
        done.clear();
      };
      std::int64_t block = -1, inner = 0;
      Tile acc;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        load(i + static_cast<std::size_t>(buffers_) - 1);
        const Step& st = steps[i];
        const bool first = axis0_ ? st.r0 == 0 : st.c0 == 0;
        if (first) {
          if (static_cast<std::int64_t>(done.size()) == blocks) flush();
          ++block;
          acc = res.slice(0, st.np, u32(block % blocks), 1);
          done.emplace_back(axis0_ ? st.c0 : st.r0, acc);
          kb.reduce(acc, loaded[i], op);
          inner = 0;
        } else {
          const Tile pt = part[++inner % 2].slice(0, st.np, 0, 1);
          kb.reduce(pt, loaded[i], op);
          kb.tensor_tensor(acc, acc, pt, op);
        }
      }
      flush();
    } else {
      const Tile acc[2] = {kb.sbuf("acc0", 1, u32(F), DType::Fp32), kb.sbuf("acc1", 1, u32(F), DType::Fp32)};
      const Tile part[2] = {kb.sbuf("part0", 1, u32(F), DType::Fp32), kb.sbuf("part1", 1, u32(F), DType::Fp32)};
      int chunk = -1;
      Tile a;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        load(i + static_cast<std::size_t>(buffers_) - 1);
        const Step& st = steps[i];
        if (st.r0 == 0) {
          a = acc[++chunk % 2].slice(0, 1, 0, st.nf);
          kb.partition_reduce(a, loaded[i], op);
        } else {
          const Tile pt = part[(st.r0 / P) % 2].slice(0, 1, 0, st.nf);
          kb.partition_reduce(pt, loaded[i], op);
          kb.tensor_tensor(a, a, pt, op);
        }
        if (st.r0 + P >= R_) kb.dma(out_.region(0, st.c0, 1, st.nf), a);
      }
    }
    return kb.build();
  }

  // Reference in double. max is exact; a sum of n fp32 terms in any order errs
  // by at most gamma_{n-1} times the sum of their magnitudes.
  NumericsCheck check() override {
    const auto got = dev_.download(out_);
    const std::int64_t outer = axis0_ ? C_ : R_, n = axis0_ ? R_ : C_;
    std::vector<double> ref(static_cast<std::size_t>(outer)), bound(static_cast<std::size_t>(outer));
    for (std::int64_t o = 0; o < outer; ++o) {
      double acc = sum_ ? 0 : -INFINITY, mag = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        const double v = xv_[static_cast<std::size_t>(axis0_ ? i * C_ + o : o * C_ + i)];
        acc = sum_ ? acc + v : std::max(acc, v);
        mag += std::fabs(v);
      }
      ref[static_cast<std::size_t>(o)] = acc;
      bound[static_cast<std::size_t>(o)] = sum_ ? gamma(n - 1) * mag : 0;
    }
    return check_within(got, ref, bound,
                        [&](std::size_t o) { return fmt::format(axis0_ ? "out[0, {}]" : "out[{}, 0]", o); });
  }

private:
  Device& dev_;
  std::int64_t R_, C_;
  bool sum_, axis0_;
  // Input tiles in flight, and elements per partition per tile (at most).
  std::int64_t buffers_, max_chunk_;
  Tensor x_, out_;
  std::vector<float> xv_;
};

// The matmul variant's blocking. Rows of a block: the stationary free size
// and the result partitions; columns of a block (T): the contraction (array
// rows) and the transpose's output partitions; G blocks (W columns) share a
// PSUM bank.
struct Blocks {
  std::int64_t pr_max, T, G, W;
  Blocks(const arch::HwConfig& cfg, std::int64_t C)
      : pr_max(std::min({static_cast<std::int64_t>(cfg.sbuf.partitions), cfg.tensor.rows, cfg.tensor.cols,
                         cfg.tensor.stationary_max_free})),
        T(std::min({cfg.tensor.rows, cfg.tensor.cols, static_cast<std::int64_t>(cfg.psum.partitions),
                    static_cast<std::int64_t>(cfg.sbuf.partitions)})),
        G(std::max<std::int64_t>(1, std::min({cfg.tensor.moving_max_free / T, cfg.psum.bank_kib * 1024 / 4 / T,
                                              cfg.psum.bank_kib * 1024 / 4 / pr_max, ceil_div(C, T)}))),
        W(G * T) {}
};

class Cumsum : public KernelInstance {
public:
  Cumsum(Device& dev, const KernelArgs& args)
      : dev_(dev), variant_(args.variant), params_(args.params), R_(args.shape.at("R")), C_(args.shape.at("C")) {
    const std::uint64_t seed = args.seed;
    x_ = dev.allocate("x", {R_, C_}, DType::Bf16);
    out_ = dev.allocate("out", {R_, C_}, DType::Fp32);
    const bool host_u = variant_ == "matmul" && !dev.config().gpsimd.present;
    const Blocks b(dev.config(), C_);
    if (host_u) u_ = dev.allocate("U", {b.T, b.W}, DType::Bf16);
    if (dev.no_data()) return;
    std::mt19937_64 rng(seed);
    xv_ = random_values(static_cast<std::size_t>(R_ * C_), -1, 1, DType::Bf16, rng);
    dev.upload(x_, xv_);
    if (host_u) {
      std::vector<float> u(static_cast<std::size_t>(b.T * b.W));
      for (std::int64_t k = 0; k < b.T; ++k)
        for (std::int64_t j = 0; j < b.W; ++j) u[static_cast<std::size_t>(k * b.W + j)] = j >= k ? 1.0f : 0.0f;
      dev.upload(u_, u);
    }
  }

  Program build() override {
    KernelBuilder kb(dev_.config(), "cumsum");
    if (variant_ == "matmul") matmul(kb);
    else if (variant_ == "scan") scan(kb);
    else throw KernelError(fmt::format("cumsum: no variant '{}'", variant_));
    return kb.build();
  }

  // Reference in double from the same bf16 inputs. The products with U are
  // exact (x * 1 or x * 0) and adding an exact zero is exact, so out[r, c] is
  // a sum of c + 1 terms in some order (any variant): within
  // gamma_c * sum_{k <= c} |x[r, k]|.
  NumericsCheck check() override {
    const auto got = dev_.download(out_);
    WorstElement worst;
    std::vector<double> gammas(static_cast<std::size_t>(C_));
    for (std::int64_t c = 0; c < C_; ++c) gammas[static_cast<std::size_t>(c)] = gamma(c);
    for (std::int64_t r = 0; r < R_; ++r) {
      double acc = 0, mag = 0;
      for (std::int64_t c = 0; c < C_; ++c) {
        const std::size_t k = static_cast<std::size_t>(r * C_ + c);
        acc += xv_[k];
        mag += std::fabs(xv_[k]);
        worst.add(k, got[k], acc, gammas[static_cast<std::size_t>(c)] * mag);
      }
    }
    return worst.result([&](std::size_t k) {
      return fmt::format("out[{}, {}]", static_cast<std::int64_t>(k) / C_, static_cast<std::int64_t>(k) % C_);
    });
  }

private:
  void matmul(KernelBuilder& kb) {
    const auto& cfg = kb.config();
    const Blocks b(cfg, C_);
    const std::int64_t pr_max = b.pr_max, T = b.T, G = b.G, W = b.W;
    // U[k, j] = (j - k >= 0), built once: iota on GpSimd, compare on vector;
    // a generation without GpSimd loads it from HBM (a constant the host
    // wrote, like a weight).
    const Tile U = kb.sbuf("U", u32(T), u32(W), DType::Bf16);
    if (cfg.gpsimd.present) {
      const Tile ramp = kb.sbuf("ramp", u32(T), u32(W), DType::Fp32);
      kb.iota(ramp, 0, -1, 1);
      kb.tensor_scalar(U, ramp, arch::AluOp::IsGreaterEqual, 0.0f);
      kb.release(ramp);
    } else {
      kb.dma(U, u_.region(0, 0, T, W));
    }
    Tile xin[2], xT[2], pT[2], acc[2], y[2];
    for (int s = 0; s < 2; ++s) {
      xin[s] = kb.sbuf(fmt::format("x{}", s), u32(pr_max), u32(W), DType::Bf16);
      xT[s] = kb.sbuf(fmt::format("xT{}", s), u32(T), u32(G * pr_max), DType::Bf16);
      pT[s] = kb.psum(fmt::format("pT{}", s), u32(T), u32(G * pr_max));
      acc[s] = kb.psum(fmt::format("acc{}", s), u32(pr_max), u32(W));
      y[s] = kb.sbuf(fmt::format("y{}", s), u32(pr_max), u32(W), DType::Fp32);
    }
    const Tile carry_tile = kb.sbuf("carry", u32(pr_max), 1, DType::Fp32);
    int s = 0;
    for (std::int64_t r0 = 0; r0 < R_; r0 += pr_max) {
      const std::int64_t pr = std::min(pr_max, R_ - r0);
      const Tile carry = carry_tile.slice(0, u32(pr), 0, 1);
      kb.memset(carry, 0);
      for (std::int64_t c0 = 0; c0 < C_; c0 += W, s ^= 1) {
        const std::int64_t gw = std::min(W, C_ - c0), nb = ceil_div(gw, T);
        const Tile x = xin[s].slice(0, u32(pr), 0, u32(gw));
        kb.dma(x, x_.region(r0, c0, pr, gw));
        // Block i's transpose, [w_i, pr], goes to columns [i pr, (i+1) pr).
        for (std::int64_t i = 0; i < nb; ++i) {
          const std::int64_t w = std::min(T, gw - i * T);
          kb.transpose(pT[s].slice(0, u32(w), u32(i * pr), u32(pr)), x.slice(0, u32(pr), u32(i * T), u32(w)));
        }
        const std::uint32_t tp = u32(std::min(T, gw));
        kb.copy(xT[s].slice(0, tp, 0, u32(nb * pr)), pT[s].slice(0, tp, 0, u32(nb * pr)),
                params_.choice("evacuate") == "vector" ? arch::Engine::Vector : arch::Engine::Scalar);
        for (std::int64_t i = 0; i < nb; ++i) {
          const std::int64_t w = std::min(T, gw - i * T);
          kb.matmul(acc[s].slice(0, u32(pr), u32(i * T), u32(gw - i * T)), xT[s].slice(0, u32(w), u32(i * pr), u32(pr)),
                    U.slice(0, u32(w), 0, u32(gw - i * T)), i > 0);
        }
        const Tile out = y[s].slice(0, u32(pr), 0, u32(gw));
        kb.tensor_scalar(out, acc[s].slice(0, u32(pr), 0, u32(gw)), arch::AluOp::Add, carry);
        if (c0 + gw < C_) kb.copy(carry, out.slice(0, u32(pr), u32(gw - 1), 1));
        kb.dma(out_.region(r0, c0, pr, gw), out);
      }
    }
  }

  void scan(KernelBuilder& kb) {
    const auto& cfg = kb.config();
    const std::int64_t P = cfg.sbuf.partitions;
    // Per set: the bf16 input and two fp32 ping-pong tiles.
    const std::int64_t F = std::min({C_, params_.integer("F"), (cfg.sbuf.partition_kib * 1024 - 64) / (2 * 10)});
    Tile xin[2], ping[2], pong[2];
    for (int s = 0; s < 2; ++s) {
      xin[s] = kb.sbuf(fmt::format("x{}", s), u32(P), u32(F), DType::Bf16);
      ping[s] = kb.sbuf(fmt::format("ping{}", s), u32(P), u32(F), DType::Fp32);
      pong[s] = kb.sbuf(fmt::format("pong{}", s), u32(P), u32(F), DType::Fp32);
    }
    const Tile carry_tile = kb.sbuf("carry", u32(P), 1, DType::Fp32);
    int s = 0;
    for (std::int64_t r0 = 0; r0 < R_; r0 += P) {
      const std::uint32_t pr = u32(std::min(P, R_ - r0));
      const Tile carry = carry_tile.slice(0, pr, 0, 1);
      for (std::int64_t c0 = 0; c0 < C_; c0 += F, s ^= 1) {
        const std::uint32_t nf = u32(std::min(F, C_ - c0));
        const Tile x = xin[s].slice(0, pr, 0, nf);
        kb.dma(x, x_.region(r0, c0, pr, nf));
        Tile src = x, dst = ping[s].slice(0, pr, 0, nf), other = pong[s].slice(0, pr, 0, nf);
        if (nf == 1) kb.copy(dst, src);
        for (std::uint32_t step = 1; step < nf; step *= 2) {
          kb.tensor_tensor(dst.slice(0, pr, step, nf - step), src.slice(0, pr, step, nf - step),
                           src.slice(0, pr, 0, nf - step), arch::AluOp::Add);
          kb.copy(dst.slice(0, pr, 0, step), src.slice(0, pr, 0, step));
          src = dst;
          std::swap(dst, other);
        }
        const Tile result = nf == 1 ? dst : src;
        if (c0 > 0) kb.tensor_scalar(result, result, arch::AluOp::Add, carry);
        if (c0 + nf < C_) kb.copy(carry, result.slice(0, pr, nf - 1, 1));
        kb.dma(out_.region(r0, c0, pr, nf), result);
      }
    }
  }

  Device& dev_;
  std::string variant_;
  Params params_;
  std::int64_t R_, C_;
  Tensor x_, out_, u_;
  std::vector<float> xv_;
};

}  // namespace

KernelSpec reduce_spec() {
  KernelSpec spec;
  spec.name = "reduce";
  spec.description = "sum or max of fp32 [R,C] along axis 1 (out [R,1]) or axis 0 (out [1,C])";
  spec.variants = {{"sum_axis1", "sum along rows: vector-engine free-axis reductions"},
                   {"max_axis1", "max along rows: vector-engine free-axis reductions"},
                   {"sum_axis0", "sum down columns: GpSimd partition reductions (a strided DMA without GpSimd)"},
                   {"max_axis0", "max down columns: GpSimd partition reductions (a strided DMA without GpSimd)"}};
  spec.shape = {{"R", 1024, "rows"}, {"C", 1024, "columns"}};
  spec.params = {
      TunableParam::integer("F", 1, 1 << 20, 4096, "elements per partition per tile, at most (fewer when SBUF is short)"),
      TunableParam::integer("bufs", 1, 8, 3, "input tiles in flight (loads overlap the reductions)"),
  };
  spec.make = [](Device& dev, const KernelArgs& args) { return std::make_unique<Reduce>(dev, args); };
  return spec;
}

KernelSpec cumsum_spec() {
  KernelSpec spec;
  spec.name = "cumsum";
  spec.description = "out[r,c] = sum_{k<=c} x[r,k], bf16 [R,C] in, fp32 out";
  spec.variants = {{"matmul", "transpose through the array, then a product with an upper-triangular ones matrix"},
                   {"scan", "a Hillis-Steele scan on the vector engine"}};
  spec.shape = {{"R", 512, "rows"}, {"C", 1024, "row length (the summed axis)"}};
  spec.params = {
      TunableParam::choice("evacuate", {"scalar", "vector"}, "scalar",
                           "the engine copying the transposed block from PSUM to SBUF")
          .only_for({"matmul"}),
      TunableParam::integer("F", 1, 1 << 20, 2048, "elements per partition per tile, at most (fewer when SBUF is short)")
          .only_for({"scan"}),
  };
  spec.make = [](Device& dev, const KernelArgs& args) { return std::make_unique<Cumsum>(dev, args); };
  return spec;
}

TESSERA_REGISTER_KERNEL(reduce_spec);
TESSERA_REGISTER_KERNEL(cumsum_spec);

}  // namespace tessera::kernels
