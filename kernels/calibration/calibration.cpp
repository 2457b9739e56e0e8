// Calibration microbenchmarks (calibration.h). Each one repeats the cost it
// measures R (or N) times between a fixed prologue (loading its inputs) and a
// fixed epilogue (storing one result for the numerics check), so that the
// difference between two repeat counts is the cost alone.
#include "calibration/calibration.h"

#include "common/bounds.h"
#include "tessera/kernel_builder.h"

#include "arch/numerics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tessera::kernels {
namespace {

std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

// Exact comparison: every microbenchmark below moves data or applies exact
// operations (powers of two, max/min), so any difference is a wrong result.
NumericsCheck exact(const std::vector<float>& got, const std::vector<float>& expect) {
  return compare(got, expect, 0.0);
}

// ---------------------------------------------------------------------------
// calib_dma

class CalibDma : public KernelInstance {
public:
  CalibDma(Device& dev, const Shape& shape, std::string variant, std::uint64_t seed)
      : dev_(dev), variant_(std::move(variant)), P_(shape.at("P")), B_(shape.at("B")), N_(shape.at("N")),
        S_(shape.at("S") == 0 ? shape.at("B") : shape.at("S")) {
    const auto& cfg = dev.config();
    if (P_ > cfg.sbuf.partitions)
      throw KernelError(fmt::format("calib_dma: P={} partitions; SBUF has {}", P_, cfg.sbuf.partitions));
    if (B_ % 4 != 0) throw KernelError(fmt::format("calib_dma: B={} bytes per partition is not a multiple of 4 (the "
                                                   "copies move fp32 elements)", B_));
    if (B_ > cfg.sbuf.partition_kib * 1024)
      throw KernelError(fmt::format("calib_dma: B={} bytes per partition; an SBUF partition holds {}", B_,
                                    cfg.sbuf.partition_kib * 1024));
    if (S_ < B_ || S_ % 4 != 0)
      throw KernelError(fmt::format("calib_dma: S={} bytes between HBM rows must be a multiple of 4 and at least "
                                    "B={}", S_, B_));
    if (S_ != B_ && variant_ == "chain") throw KernelError("calib_dma: the chain copies packed rows (S=0)");
    F_ = B_ / 4;
    // HBM rows of S bytes, of which each copy moves the first B.
    const std::int64_t pitch = S_ / 4;
    const std::int64_t rows = variant_ == "load" ? N_ * P_ : P_;
    src_ = dev.allocate("src", {rows, pitch}, DType::Fp32);
    dst_ = dev.allocate("dst", {variant_ == "store" ? N_ * P_ : P_, variant_ == "store" ? pitch : F_}, DType::Fp32);
    if (dev.no_data()) return;
    std::mt19937_64 rng(seed);
    src_values_ = random_values(static_cast<std::size_t>(rows * pitch), -1, 1, DType::Fp32, rng);
    dev.upload(src_, src_values_);
  }

  Program build() override {
    KernelBuilder kb(dev_.config(), "calib_dma");
    if (variant_ == "load") load(kb);
    else if (variant_ == "store") store(kb);
    else if (variant_ == "chain") chain(kb);
    else throw KernelError(fmt::format("calib_dma: no variant '{}'", variant_));
    return kb.build();
  }

  NumericsCheck check() override {
    const auto got = dev_.download(dst_);
    const std::int64_t pitch = S_ / 4;
    // The first F elements of each of `count` HBM rows of `pitch` from row `first`.
    const auto rows = [&](const std::vector<float>& v, std::int64_t first, std::int64_t count, std::int64_t stride) {
      std::vector<float> out;
      for (std::int64_t r = first; r < first + count; ++r)
        out.insert(out.end(), v.begin() + r * stride, v.begin() + r * stride + F_);
      return out;
    };
    if (variant_ == "load")  // the last copy's slot, stored back
      return exact(got, rows(src_values_, (N_ - 1) * P_, P_, pitch));
    if (variant_ == "store") {  // every block a copy of the one tile
      std::vector<float> expect;
      for (std::int64_t i = 0; i < N_; ++i) {
        const auto block = rows(src_values_, 0, P_, pitch);
        expect.insert(expect.end(), block.begin(), block.end());
      }
      return exact(rows(got, 0, N_ * P_, pitch), expect);
    }
    return exact(got, src_values_);  // the chain hands the source on unchanged
  }

private:
  // N copies, each into its own slot of SBUF while there is room (slots run
  // down the partitions first, then along the free axis), so that no copy
  // waits for an earlier one.
  void load(KernelBuilder& kb) {
    const auto& cfg = dev_.config();
    const std::int64_t groups = cfg.sbuf.partitions / P_;
    const std::int64_t columns =
        std::clamp<std::int64_t>(ceil_div(N_, groups), 1, cfg.sbuf.partition_kib * 1024 / B_);
    const Tile pool = kb.sbuf("pool", u32(std::min(groups, N_) * P_), u32(columns * F_), DType::Fp32);
    const auto slot = [&](std::int64_t i) {
      return pool.slice(u32((i % groups) * P_), u32(P_), u32(((i / groups) % columns) * F_), u32(F_));
    };
    for (std::int64_t i = 0; i < N_; ++i) {
      kb.label(fmt::format("copy {} of {}", i + 1, N_));
      kb.dma(slot(i), src_.region(i * P_, 0, P_, F_));
    }
    kb.label("check");
    kb.dma(dst_.all(), slot(N_ - 1));
  }

  // One tile loaded once, then stored N times (the stores only read it).
  void store(KernelBuilder& kb) {
    const Tile t = kb.sbuf("t", u32(P_), u32(F_), DType::Fp32);
    kb.dma(t, src_.region(0, 0, P_, F_));
    for (std::int64_t i = 0; i < N_; ++i) {
      kb.label(fmt::format("copy {} of {}", i + 1, N_));
      kb.dma(dst_.region(i * P_, 0, P_, F_), t);
    }
  }

  // N links of a load and a store, each reading what the one before wrote:
  // every copy waits for the completion of the last, so a link's time is two
  // trigger-to-completion round trips.
  void chain(KernelBuilder& kb) {
    const Tile t[2] = {kb.sbuf("t0", u32(P_), u32(F_), DType::Fp32), kb.sbuf("t1", u32(P_), u32(F_), DType::Fp32)};
    for (std::int64_t i = 0; i < N_; ++i) {
      kb.label(fmt::format("link {} of {}", i + 1, N_));
      kb.dma(t[i % 2], i == 0 ? src_.all() : dst_.all());
      kb.dma(dst_.all(), t[i % 2]);
    }
  }

  Device& dev_;
  std::string variant_;
  std::int64_t P_, B_, N_, S_, F_ = 0;
  Tensor src_, dst_;
  std::vector<float> src_values_;
};

// ---------------------------------------------------------------------------
// calib_matmul

class CalibMatmul : public KernelInstance {
public:
  CalibMatmul(Device& dev, const Shape& shape, std::string variant, std::uint64_t seed)
      : dev_(dev), variant_(std::move(variant)), K_(shape.at("K")), M_(shape.at("M")), N_(shape.at("N")),
        R_(shape.at("R")), dtype_(variant_ == "fp32" ? DType::Fp32 : DType::Bf16) {
    const auto& t = dev.config().tensor;
    if (K_ > t.rows) throw KernelError(fmt::format("calib_matmul: K={}; the array has {} rows", K_, t.rows));
    if (M_ > t.stationary_max_free)
      throw KernelError(fmt::format("calib_matmul: M={}; a stationary tile has at most {} columns", M_,
                                    t.stationary_max_free));
    if (N_ > t.moving_max_free)
      throw KernelError(fmt::format("calib_matmul: N={}; a moving tile has at most {} columns", N_, t.moving_max_free));
    const int stationaries = variant_ == "pairs" ? 2 : 1;
    for (int i = 0; i < stationaries; ++i)
      s_.push_back(dev.allocate(fmt::format("s{}", i), {K_, M_}, dtype_));
    mv_ = dev.allocate("mv", {K_, N_}, dtype_);
    out_ = dev.allocate("out", {M_, N_}, DType::Fp32);
    if (dev.no_data()) return;
    std::mt19937_64 rng(seed);
    for (const auto& s : s_) {
      s_values_.push_back(random_values(static_cast<std::size_t>(K_ * M_), -1, 1, dtype_, rng));
      dev.upload(s, s_values_.back());
    }
    mv_values_ = random_values(static_cast<std::size_t>(K_ * N_), -1, 1, dtype_, rng);
    dev.upload(mv_, mv_values_);
  }

  Program build() override {
    KernelBuilder kb(dev_.config(), "calib_matmul");
    std::vector<Tile> st;
    for (std::size_t i = 0; i < s_.size(); ++i) {
      st.push_back(kb.sbuf(fmt::format("st{}", i), u32(K_), u32(M_), dtype_));
      kb.dma(st.back(), s_[i].all());
    }
    const Tile mv = kb.sbuf("mv", u32(K_), u32(N_), dtype_);
    kb.dma(mv, mv_.all());
    const Tile acc = kb.psum("acc", u32(M_), u32(N_));
    for (std::int64_t r = 0; r < R_; ++r)
      kb.matmul(acc, st[static_cast<std::size_t>(r) % st.size()], mv, r > 0);
    const Tile o = kb.sbuf("o", u32(M_), u32(N_), DType::Fp32);
    kb.copy(o, acc);
    kb.dma(out_.all(), o);
    Program p = kb.build();
    p.model_flops = 2.0 * static_cast<double>(K_ * M_ * N_ * R_);
    return p;
  }

  // out = sum over the R multiplies of s_r.T @ mv, the stationaries taken in
  // turn; bf16 products are exact in fp32, so only the K R additions round
  // (gamma_{KR}); fp32 products round too (one more u per term).
  NumericsCheck check() override {
    const auto got = dev_.download(out_);
    const std::size_t count = static_cast<std::size_t>(M_ * N_);
    std::vector<double> ref(count, 0.0), mag(count, 0.0);
    for (std::size_t i = 0; i < s_values_.size(); ++i) {
      const auto uses = static_cast<double>(R_ / static_cast<std::int64_t>(s_values_.size()) +
                                            (static_cast<std::int64_t>(i) < R_ % static_cast<std::int64_t>(s_values_.size()) ? 1 : 0));
      for (std::int64_t m = 0; m < M_; ++m)
        for (std::int64_t n = 0; n < N_; ++n) {
          double sum = 0, abs = 0;
          for (std::int64_t k = 0; k < K_; ++k) {
            const double p = double{s_values_[i][static_cast<std::size_t>(k * M_ + m)]} *
                             mv_values_[static_cast<std::size_t>(k * N_ + n)];
            sum += p;
            abs += std::fabs(p);
          }
          ref[static_cast<std::size_t>(m * N_ + n)] += uses * sum;
          mag[static_cast<std::size_t>(m * N_ + n)] += uses * abs;
        }
    }
    const double g = gamma(K_ * R_ + (dtype_ == DType::Fp32 ? 1 : 0));
    std::vector<double> bound(count);
    for (std::size_t i = 0; i < count; ++i) bound[i] = g * mag[i];
    return check_within(got, ref, bound,
                        [&](std::size_t i) { return fmt::format("out[{}, {}]", i / static_cast<std::size_t>(N_),
                                                                i % static_cast<std::size_t>(N_)); });
  }

private:
  Device& dev_;
  std::string variant_;
  std::int64_t K_, M_, N_, R_;
  DType dtype_;
  std::vector<Tensor> s_;
  Tensor mv_, out_;
  std::vector<std::vector<float>> s_values_;
  std::vector<float> mv_values_;
};

// ---------------------------------------------------------------------------
// calib_vector

// What one repeat is: an instruction on the vector, scalar or GpSimd engine.
enum class VectorOp {
  TensorScalar,          // vector tensor_scalar (one input)
  TensorTensor,          // vector tensor_tensor, both inputs in SBUF
  TensorTensorPsum,      // vector tensor_tensor, the second input in PSUM
  Activation,            // scalar activation
  ActivationAccumulate,  // scalar activation with per-partition sums
  Iota,                  // GpSimd iota (no input)
};

struct VectorVariant {
  const char* name;
  bool chain;  // each instruction reads the one before's result
  VectorOp op;
  bool two_inputs() const { return op == VectorOp::TensorTensor || op == VectorOp::TensorTensorPsum; }
};

const VectorVariant kVectorVariants[] = {
    {"tensor_scalar", false, VectorOp::TensorScalar},
    {"tensor_scalar_chain", true, VectorOp::TensorScalar},
    {"tensor_tensor", false, VectorOp::TensorTensor},
    {"tensor_tensor_chain", true, VectorOp::TensorTensor},
    {"tensor_tensor_psum", false, VectorOp::TensorTensorPsum},
    {"activation", false, VectorOp::Activation},
    {"activation_chain", true, VectorOp::Activation},
    {"activation_accumulate", false, VectorOp::ActivationAccumulate},
    {"iota", false, VectorOp::Iota},
};

const char* vector_op_name(VectorOp op) {
  switch (op) {
    case VectorOp::TensorScalar: return "tensor_scalar on the vector engine";
    case VectorOp::TensorTensor: return "tensor_tensor on the vector engine, both inputs in SBUF";
    case VectorOp::TensorTensorPsum: return "tensor_tensor on the vector engine, the second input in PSUM";
    case VectorOp::Activation: return "activation on the scalar engine";
    case VectorOp::ActivationAccumulate: return "activation on the scalar engine with per-partition sums";
    case VectorOp::Iota: return "iota on the GpSimd engine";
  }
  return "?";
}

const VectorVariant& vector_variant(const std::string& name) {
  for (const auto& v : kVectorVariants)
    if (name == v.name) return v;
  throw KernelError(fmt::format("calib_vector: no variant '{}'", name));
}

class CalibVector : public KernelInstance {
public:
  CalibVector(Device& dev, const Shape& shape, const std::string& variant, std::uint64_t seed)
      : dev_(dev), v_(vector_variant(variant)), P_(shape.at("P")), N_(shape.at("N")), R_(shape.at("R")) {
    if (P_ > dev.config().sbuf.partitions)
      throw KernelError(fmt::format("calib_vector: P={} partitions; SBUF has {}", P_, dev.config().sbuf.partitions));
    x_ = dev.allocate("x", {P_, N_}, DType::Fp32);
    if (v_.two_inputs()) y_ = dev.allocate("y", {P_, N_}, DType::Fp32);
    out_ = dev.allocate("out", {P_, N_}, DType::Fp32);
    if (dev.no_data()) return;
    std::mt19937_64 rng(seed);
    xv_ = random_values(static_cast<std::size_t>(P_ * N_), -1, 1, DType::Fp32, rng);
    dev.upload(x_, xv_);
    if (v_.two_inputs()) {
      yv_ = random_values(static_cast<std::size_t>(P_ * N_), -1, 1, DType::Fp32, rng);
      dev.upload(y_, yv_);
    }
  }

  Program build() override {
    KernelBuilder kb(dev_.config(), "calib_vector");
    const Tile a = kb.sbuf("a", u32(P_), u32(N_), DType::Fp32);
    kb.dma(a, x_.all());
    Tile b;
    if (v_.two_inputs()) {
      b = kb.sbuf("b", u32(P_), u32(N_), DType::Fp32);
      kb.dma(b, y_.all());
      if (v_.op == VectorOp::TensorTensorPsum) {  // DMA does not reach PSUM: the vector engine copies it there
        const Tile bp = kb.psum("b_psum", u32(P_), u32(N_), DType::Fp32);
        kb.copy(bp, b);
        b = bp;
      }
    }
    const Tile d = kb.sbuf("d", u32(P_), u32(N_), DType::Fp32);
    Tile sums;
    if (v_.op == VectorOp::ActivationAccumulate) sums = kb.sbuf("sums", u32(P_), 1, DType::Fp32);
    for (std::int64_t r = 0; r < R_; ++r) {
      // A chain reads the last result (from the second instruction on); an
      // independent instruction always reads the inputs. Scales of 2 and 1/2,
      // max and min keep every result exact.
      const Tile& in = v_.chain && r > 0 ? d : a;
      const bool even = r % 2 == 0;
      switch (v_.op) {
        case VectorOp::TensorScalar: kb.tensor_scalar(d, in, arch::AluOp::Multiply, even ? 2.0f : 0.5f); break;
        case VectorOp::TensorTensor:
        case VectorOp::TensorTensorPsum: kb.tensor_tensor(d, in, b, even ? arch::AluOp::Max : arch::AluOp::Min); break;
        case VectorOp::Activation: kb.activation(d, in, arch::ActFunc::Identity, even ? 2.0f : 0.5f); break;
        case VectorOp::ActivationAccumulate:
          kb.activation(d, in, arch::ActFunc::Identity, even ? 2.0f : 0.5f, 0.0f, nullptr, &sums);
          break;
        case VectorOp::Iota: kb.iota(d, static_cast<float>(r), 1.0f, 0.5f); break;
      }
    }
    kb.dma(out_.all(), d);
    return kb.build();
  }

  NumericsCheck check() override {
    std::vector<float> d(xv_.size());
    const auto n = static_cast<std::size_t>(N_);
    for (std::int64_t r = 0; r < R_; ++r) {
      const bool even = r % 2 == 0;
      for (std::size_t i = 0; i < d.size(); ++i) {
        const float in = v_.chain && r > 0 ? d[i] : xv_[i];
        if (v_.op == VectorOp::Iota)
          d[i] = static_cast<float>(r) + static_cast<float>(i / n) + 0.5f * static_cast<float>(i % n);
        else if (v_.two_inputs())
          d[i] = even ? std::fmax(in, yv_[i]) : std::fmin(in, yv_[i]);
        else
          d[i] = in * (even ? 2.0f : 0.5f);
      }
    }
    return exact(dev_.download(out_), d);
  }

private:
  Device& dev_;
  const VectorVariant& v_;
  std::int64_t P_, N_, R_;
  Tensor x_, y_, out_;
  std::vector<float> xv_, yv_;
};

}  // namespace

KernelSpec calib_dma_spec() {
  KernelSpec spec;
  spec.name = "calib_dma";
  spec.description =
      "calibration: N copies of [P x B bytes] between HBM and SBUF (load, store, or a chain of dependent copies)";
  spec.variants = {{"load", "N loads HBM -> SBUF"}, {"store", "N stores SBUF -> HBM"},
                   {"chain", "N copies, each waiting for the one before"}};
  spec.shape = {{"P", 8, "partitions per copy"},
                {"B", 256, "bytes per partition (a multiple of 4)"},
                {"N", 2, "copies"},
                {"S", 0, "bytes from one HBM row to the next (0: B, rows packed)", 0}};
  spec.make = [](Device& dev, const KernelArgs& a) { return std::make_unique<CalibDma>(dev, a.shape, a.variant, a.seed); };
  return spec;
}

KernelSpec calib_matmul_spec() {
  KernelSpec spec;
  spec.name = "calib_matmul";
  spec.description =
      "calibration: R matmuls of a [K, N] moving tile against one [K, M] stationary (moving, fp32) or a new one "
      "each time (pairs)";
  spec.variants = {{"moving", "one stationary for all, bf16"},
                   {"pairs", "a new stationary before each matmul"},
                   {"fp32", "one stationary for all, fp32 inputs"}};
  spec.shape = {{"K", 8, "contraction (partitions)"}, {"M", 8, "stationary columns"}, {"N", 64, "moving columns"},
                {"R", 2, "matmuls"}};
  spec.make = [](Device& dev, const KernelArgs& a) {
    return std::make_unique<CalibMatmul>(dev, a.shape, a.variant, a.seed);
  };
  return spec;
}

KernelSpec calib_vector_spec() {
  KernelSpec spec;
  spec.name = "calib_vector";
  spec.description =
      "calibration: R instructions on [P, N] fp32 tiles (vector tensor_scalar / tensor_tensor, the second input "
      "in SBUF or PSUM; scalar activation, with or without per-partition sums; GpSimd iota), independent or each "
      "reading the one before (_chain)";
  for (const auto& v : kVectorVariants)
    spec.variants.push_back({v.name, fmt::format("{}{}", vector_op_name(v.op),
                                                 v.chain ? ", each reading the one before" : ", independent")});
  spec.shape = {{"P", 8, "partitions"}, {"N", 64, "free elements"}, {"R", 2, "instructions"}};
  spec.make = [](Device& dev, const KernelArgs& a) {
    return std::make_unique<CalibVector>(dev, a.shape, a.variant, a.seed);
  };
  return spec;
}

TESSERA_REGISTER_KERNEL(calib_dma_spec);
TESSERA_REGISTER_KERNEL(calib_matmul_spec);
TESSERA_REGISTER_KERNEL(calib_vector_spec);

}  // namespace tessera::kernels
