// Softmax along rows: out[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).
// Rows lie on SBUF partitions (one row per partition, P rows per block) so
// that every statistic is a free-axis reduction, and each row block rotates
// through `bufs` buffers (6): the loads of the next blocks and the stores of
// the last ones overlap the work on this one (with three, 4096 x 4096 on
// neuroncore-v3 took 456 us, a buffer's store and its next load queued
// behind each other; with six 407 us, 91 % of the DMA roofline).
//
// fused (default): max on the vector engine; exp(x - max) on the scalar
// engine, which takes the row's -max as its per-partition bias and sums its
// results as it goes (the accumulate output); the reciprocal of the sum on
// the scalar engine; one vector pass multiplies by it. Two vector passes
// and one scalar pass per element.
// unfused: the textbook sequence, each step its own pass: max, subtract
// (vector), exp (scalar), sum, divide (vector). Four vector passes.
#include "softmax/softmax.h"

#include "common/bounds.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tessera::kernels {
namespace {

class Softmax : public KernelInstance {
public:
  Softmax(Device& dev, const KernelArgs& args)
      : dev_(dev), fused_(args.variant == "fused"), R_(args.shape.at("R")), C_(args.shape.at("C")),
        max_buffers_(args.params.integer("bufs")) {
    const std::uint64_t seed = args.seed;
    x_ = dev.allocate("x", {R_, C_}, DType::Fp32);
    out_ = dev.allocate("out", {R_, C_}, DType::Fp32);
    if (dev.no_data()) return;
    std::mt19937_64 rng(seed);
    xv_ = random_values(static_cast<std::size_t>(R_ * C_), -4, 4, DType::Fp32, rng);
    dev.upload(x_, xv_);
  }

  Program build() override {
    const auto& cfg = dev_.config();
    KernelBuilder kb(cfg, "softmax");
    const std::int64_t P = cfg.sbuf.partitions;
    const std::int64_t per_buffer = C_ * 4 + 4 * 4;  // the row, then four [P, 1] statistics
    const std::int64_t buffers = std::min(max_buffers_, cfg.sbuf.partition_kib * 1024 / per_buffer);
    if (buffers < 1)
      throw KernelError(fmt::format("softmax: a row of C={} fp32 needs {} bytes in one SBUF partition, which has {}; "
                                    "rows this long need a softmax tiled along the row",
                                    C_, per_buffer, cfg.sbuf.partition_kib * 1024));
    struct Set {
      Tile x, mx, nmx, sum, rs;
    };
    std::vector<Set> sets;
    const auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
    for (std::int64_t i = 0; i < buffers; ++i)
      sets.push_back({kb.sbuf(fmt::format("x{}", i), u32(P), u32(C_), DType::Fp32),
                      kb.sbuf(fmt::format("max{}", i), u32(P), 1, DType::Fp32),
                      kb.sbuf(fmt::format("negmax{}", i), u32(P), 1, DType::Fp32),
                      kb.sbuf(fmt::format("sum{}", i), u32(P), 1, DType::Fp32),
                      kb.sbuf(fmt::format("rsum{}", i), u32(P), 1, DType::Fp32)});
    // Each block's load is issued buffers - 1 blocks ahead in program order,
    // so that no ring holds it behind the stores of the blocks in between.
    const std::int64_t blocks = ceil_div(R_, P);
    const auto rows_of = [&](std::int64_t b) { return u32(std::min(P, R_ - b * P)); };
    const auto load = [&](std::int64_t b) {
      if (b < blocks)
        kb.dma(sets[static_cast<std::size_t>(b % buffers)].x.slice(0, rows_of(b), 0, u32(C_)),
               x_.region(b * P, 0, rows_of(b), C_));
    };
    for (std::int64_t b = 0; b + 1 < buffers; ++b) load(b);
    struct Block {
      std::int64_t r0;
      std::uint32_t pr;
      Tile x, mx, nmx, sum, rs;
    };
    const auto block = [&](std::int64_t b) {
      const std::uint32_t pr = rows_of(b);
      const Set& s = sets[static_cast<std::size_t>(b % buffers)];
      const auto rows = [&](const Tile& t) { return t.slice(0, pr, 0, t.free); };
      return Block{b * P, pr, rows(s.x), rows(s.mx), rows(s.nmx), rows(s.sum), rows(s.rs)};
    };
    // fused: block b's max (vector) and exp (scalar) are issued before block
    // b - 1's final multiply, so the vector engine finds the next block's
    // max to work on while the scalar engine exponentiates (the streams run
    // in order; issued block by block, each engine waited for the other
    // within every block). Needs two buffers.
    const bool ahead = fused_ && buffers >= 2;
    const auto head = [&](const Block& k) {
      kb.reduce(k.mx, k.x, arch::AluOp::Max);
      kb.tensor_scalar(k.nmx, k.mx, arch::AluOp::Multiply, -1.0f);
      kb.activation(k.x, k.x, arch::ActFunc::Exp, 1.0f, 0.0f, &k.nmx, &k.sum);
      kb.activation(k.rs, k.sum, arch::ActFunc::Reciprocal);
    };
    const auto tail = [&](const Block& k) {
      kb.tensor_scalar(k.x, k.x, arch::AluOp::Multiply, k.rs);
      kb.dma(out_.region(k.r0, 0, k.pr, C_), k.x);
    };
    if (ahead) {
      if (blocks > 0) head(block(0));
      for (std::int64_t b = 0; b < blocks; ++b) {
        load(b + buffers - 1);
        if (b + 1 < blocks) head(block(b + 1));
        tail(block(b));
      }
      return kb.build();
    }
    for (std::int64_t b = 0; b < blocks; ++b) {
      load(b + buffers - 1);
      const Block k = block(b);
      if (fused_) {  // one buffer: no other block to overlap with
        head(k);
        tail(k);
        continue;
      }
      kb.reduce(k.mx, k.x, arch::AluOp::Max);
      kb.tensor_scalar(k.x, k.x, arch::AluOp::Subtract, k.mx);
      kb.activation(k.x, k.x, arch::ActFunc::Exp);
      kb.reduce(k.sum, k.x, arch::AluOp::Add);
      kb.tensor_scalar(k.x, k.x, arch::AluOp::Divide, k.sum);
      kb.dma(out_.region(k.r0, 0, k.pr, C_), k.x);
    }
    return kb.build();
  }

  // Reference in double. Relative error of out[r, i], u = 2^-24, m the row
  // max, D = max_j |x_j - m|: x_i - m rounds once (an absolute u |x_i - m|,
  // which exp turns into that relative error) and expf adds 1 ulp (2u), so
  // each term errs by u (|x_i - m| + 2); the sum of C terms adds gamma_{C-1}
  // and inherits at most u (D + 2); the reciprocal and the multiply (or the
  // divide) add 2u. In all: gamma_n with n = C + 5 + |x_i - m| + D, rounded up.
  NumericsCheck check() override {
    const auto got = dev_.download(out_);
    WorstElement worst;
    std::vector<double> e(static_cast<std::size_t>(C_));
    for (std::int64_t r = 0; r < R_; ++r) {
      const float* x = &xv_[static_cast<std::size_t>(r * C_)];
      double m = x[0];
      for (std::int64_t i = 1; i < C_; ++i) m = std::max<double>(m, x[i]);
      double sum = 0, spread = 0;
      for (std::int64_t i = 0; i < C_; ++i) {
        sum += (e[i] = std::exp(x[i] - m));
        spread = std::max(spread, m - x[i]);
      }
      for (std::int64_t i = 0; i < C_; ++i) {
        const std::size_t k = static_cast<std::size_t>(r * C_ + i);
        const double ref = e[i] / sum;
        const auto n = static_cast<std::int64_t>(std::ceil(C_ + 5 + (m - x[i]) + spread));
        worst.add(k, got[k], ref, gamma(n) * ref);
      }
    }
    return worst.result([&](std::size_t k) {
      return fmt::format("out[{}, {}]", static_cast<std::int64_t>(k) / C_, static_cast<std::int64_t>(k) % C_);
    });
  }

private:
  Device& dev_;
  bool fused_;
  std::int64_t R_, C_, max_buffers_;
  Tensor x_, out_;
  std::vector<float> xv_;
};

}  // namespace

KernelSpec softmax_spec() {
  KernelSpec spec;
  spec.name = "softmax";
  spec.description = "out[r,:] = exp(x[r,:] - max) / sum(exp(x[r,:] - max)), fp32 [R,C]";
  spec.variants = {{"fused", "exp with the row's -max as bias, summing as it goes; one multiply by 1/sum"},
                   {"unfused", "max, subtract, exp, sum, divide: one pass each"}};
  spec.shape = {{"R", 1024, "rows"}, {"C", 1024, "row length (the softmax axis)"}};
  spec.params = {TunableParam::integer(
      "bufs", 1, 8, 6, "row blocks in flight (load, compute, store overlap), at most (fewer when SBUF is short)")};
  spec.make = [](Device& dev, const KernelArgs& args) { return std::make_unique<Softmax>(dev, args); };
  return spec;
}

TESSERA_REGISTER_KERNEL(softmax_spec);

}  // namespace tessera::kernels
