// GEMM, C[M, N] = A[M, K] @ B[K, N]: the four kernels of the public NKI
// matrix multiplication tutorial (tiled, hoist_load, block_free_dimension,
// fully_optimized: same loop nests, tile shapes and DMA shapes), and four
// variants of the same steps written before them (naive, hoisted, blocked_mn,
// blocked_mnk). docs/gemm.md measures them all.
#include "gemm/gemm.h"
#include "collectives/collectives.h"
#include "common/bounds.h"
#include "common/input_format.h"
#include "common/reference_matmul.h"

#include "arch/numerics.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

namespace tessera::kernels {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Tile sizes the hardware allows: K on partitions (array rows), M up to the
// stationary limit, N up to the moving limit and one PSUM bank of fp32.
struct Tiling {
  std::int64_t tk, tm, tn;
  std::int64_t mt, nt, kt;  // tile counts
  explicit Tiling(const arch::HwConfig& cfg, std::int64_t M, std::int64_t N, std::int64_t K)
      : tk(std::min(cfg.tensor.rows, cfg.sbuf.partitions)),
        tm(std::min(cfg.tensor.cols, cfg.tensor.stationary_max_free)),
        tn(std::min(cfg.tensor.moving_max_free, cfg.psum.bank_kib * 1024 / 4)),
        mt(ceil_div(M, tm)),
        nt(ceil_div(N, tn)),
        kt(ceil_div(K, tk)) {}
};

// What --dtype takes, the default first.
const std::vector<std::string> kGemmDtypes = {"bf16", "fp32", "fp8_e4m3", "fp8_e5m2", "mxfp8", "mxfp4"};
// The variants written for every dtype; the others read bf16 only.
const std::vector<std::string> kEveryDtypeVariants = {"blocked_mnk", "naive"};

// How many tiles of `bytes_per_tile` fit `budget` bytes per partition.
std::int64_t fits(std::int64_t budget, std::int64_t bytes_per_tile) {
  return bytes_per_tile > 0 ? budget / bytes_per_tile : 0;
}

// blocked_mn's SBUF budget: bytes per partition of one A / B tile column
// (all of K), and the room left beside two output tiles.
struct MnBudget {
  std::int64_t a_col, b_col, budget;
  MnBudget(const arch::HwConfig& cfg, const Tiling& t)
      : a_col(t.kt * t.tm * 2), b_col(t.kt * t.tn * 2), budget(cfg.sbuf.partition_kib * 1024 - 2 * t.tn * 4) {}
};

// The block (in tiles) blocked_mn and blocked_mnk take when a run does not
// set bm, bn or bk; what a run sets is kept, the rest sized around it.
struct Blocking {
  std::int64_t bm, bn, bk;
};

Blocking default_blocking(const ParamContext& ctx) {
  const arch::HwConfig& cfg = ctx.config;
  const Tiling t(cfg, ctx.shape.at("M"), ctx.shape.at("N"), ctx.shape.at("K"));
  const auto given = [&](const char* name) -> std::optional<std::int64_t> {
    if (!ctx.given.has(name)) return std::nullopt;
    return ctx.given.integer(name);
  };
  const std::int64_t partition_bytes = cfg.sbuf.partition_kib * 1024;
  Blocking b{1, 1, 1};
  if (ctx.variant == "blocked_mn") {
    // Favour B reuse (N blocks), then give A what is left.
    const MnBudget m(cfg, t);
    b.bn = given("bn").value_or(std::clamp<std::int64_t>(fits(m.budget / 2, m.b_col), 1, t.nt));
    b.bm = given("bm").value_or(
        std::clamp<std::int64_t>(fits(m.budget - std::min(b.bn, t.nt) * m.b_col, m.a_col), 1, t.mt));
    return b;
  }
  // blocked_mnk. Output block: as many accumulators as PSUM banks allow, two
  // sets so one block's evacuation overlaps the next block's multiplies.
  const std::int64_t banks = cfg.psum.banks;
  b.bn = given("bn").value_or(std::clamp<std::int64_t>(banks / 4, 1, t.nt));
  b.bm = given("bm").value_or(std::clamp<std::int64_t>(banks / (2 * std::min(b.bn, t.nt)), 1, t.mt));
  // K block: the largest that fits two buffer sets of A and B tiles.
  const std::int64_t out_bytes = 2 * t.tn * 4;
  const auto k_block = [&](std::int64_t bm, std::int64_t bn) {
    const std::int64_t per_k = 2 * (std::min(bm, t.mt) * t.tm * 2 + std::min(bn, t.nt) * t.tn * 2);
    return std::clamp<std::int64_t>(fits(partition_bytes - out_bytes, per_k), 1, t.kt);
  };
  b.bk = given("bk").value_or(k_block(b.bm, b.bn));
  const std::int64_t per_k = 2 * (std::min(b.bm, t.mt) * t.tm * 2 + std::min(b.bn, t.nt) * t.tn * 2);
  if (std::min(b.bk, t.kt) * per_k + out_bytes > partition_bytes && !given("bm") && !given("bn")) {
    // Not even one K tile of that block fits: fall back to single tiles.
    b.bm = b.bn = 1;
    b.bk = given("bk").value_or(k_block(1, 1));
  }
  return b;
}

// SBUF and PSUM bytes per partition the variant allocates, from the same
// tile sizes and counts as its builder (an analytic check, no build).
std::optional<std::string> gemm_fits(const arch::HwConfig& cfg, const KernelArgs& args) {
  const Tiling t(cfg, args.shape.at("M"), args.shape.at("N"), args.shape.at("K"));
  std::int64_t sbuf = 0, accumulators = 0;
  const std::int64_t out = t.tn * 4;  // one fp32 output tile
  if (args.variant == "naive") {
    sbuf = t.tm * 2 + t.tn * 2 + out;
    accumulators = 1;
  } else if (args.variant == "hoisted") {
    sbuf = t.kt * (t.tm * 2 + t.tn * 2) + out;
    accumulators = 1;
  } else if (args.variant == "blocked_mn") {
    const std::int64_t bm = std::min(args.params.integer("bm"), t.mt), bn = std::min(args.params.integer("bn"), t.nt);
    sbuf = t.kt * (bm * t.tm * 2 + bn * t.tn * 2) + 2 * out;
    accumulators = 2;
  } else if (args.variant == "blocked_mnk") {
    const std::int64_t bm = std::min(args.params.integer("bm"), t.mt), bn = std::min(args.params.integer("bn"), t.nt);
    const std::int64_t bk = std::min(args.params.integer("bk"), t.kt);
    sbuf = 2 * bk * (bm * t.tm * 2 + bn * t.tn * 2) + 2 * out;
    accumulators = 2 * bm * bn;
  } else {
    return std::nullopt;  // the tutorial variants size their buffers to fit: the builder's check
  }
  const std::int64_t sbuf_room = cfg.sbuf.partition_kib * 1024;
  if (sbuf > sbuf_room)
    return fmt::format("gemm {} with {}: {} bytes of SBUF per partition, {} available", args.variant,
                       args.params.text(), sbuf, sbuf_room);
  const std::int64_t bank = cfg.psum.bank_kib * 1024;
  const std::int64_t per_bank = bank / (t.tn * 4);
  if (accumulators > per_bank * cfg.psum.banks)
    return fmt::format("gemm {} with {}: {} PSUM accumulators of {} bytes, {} banks of {} hold {}", args.variant,
                       args.params.text(), accumulators, t.tn * 4, cfg.psum.banks, bank, per_bank * cfg.psum.banks);
  return std::nullopt;
}

// The tutorial's meta-parameters (nki_matmul_block_free_dimension_ and
// nki_matmul_fully_optimized_). `buffers`: a tile the tutorial declares inside
// a loop body is allocated afresh each iteration by the NKI compiler, which
// may give it several buffers so that iterations overlap; here such a tile
// rotates through this many copies (fewer when SBUF has no room).
struct TutorialParams {
  std::int64_t tiles_in_block_m = 16, tiles_in_block_n = 2, tiles_in_block_k = 8;  // fully_optimized
  std::int64_t free_block_m = 2, free_block_n = 2;                                 // block_free_dimension
  std::int64_t buffers = 2;
};

// The tutorial's meta-parameters as the run resolved them (each read by the
// variants that take it; the others keep the tutorial's values).
TutorialParams tutorial_params(const Params& p) {
  TutorialParams tp;
  const auto take = [&](const char* name, std::int64_t& field) {
    if (p.has(name)) field = p.integer(name);
  };
  take("tiles_in_block_m", tp.tiles_in_block_m);
  take("tiles_in_block_n", tp.tiles_in_block_n);
  take("tiles_in_block_k", tp.tiles_in_block_k);
  take("free_block_m", tp.free_block_m);
  take("free_block_n", tp.free_block_n);
  take("buffers", tp.buffers);
  return tp;
}

class Gemm : public KernelInstance {
public:
  Gemm(Device& dev, const KernelArgs& args)
      : dev_(dev), variant_(args.variant), params_(args.params), full_m_(args.shape.at("M")),
        full_n_(args.shape.at("N")), M_(full_m_), N_(full_n_), K_(args.shape.at("K")), full_k_(K_),
        tp_(tutorial_params(args.params)), fmt_(input_format(args.dtype, dev.config())) {
    const std::uint64_t seed = args.seed;
    if (fmt_.mx() && K_ % 32 != 0)
      throw KernelError(fmt::format("gemm --dtype {}: K = {} is not a multiple of 32 (an MX scale serves a block of "
                                    "32 contraction rows)", args.dtype, K_));
    // A arrives transposed, [K, M], as NKI's matmul takes it: the contraction
    // dimension lies on partitions without a transpose on chip. MX inputs
    // hold four rows per element ([K / 4, M]) and a scale per 32 rows.
    const std::int64_t rows = fmt_.mx() ? K_ / arch::kMxQuad : K_;
    at_ = dev.allocate("at", {rows, M_}, fmt_.dtype);
    b_ = dev.allocate("b", {rows, N_}, fmt_.dtype);
    if (fmt_.mx()) {
      at_scale_ = dev.allocate("at_scale", {K_ / 32, M_}, DType::Uint8);
      b_scale_ = dev.allocate("b_scale", {K_ / 32, N_}, DType::Uint8);
    }
    c_ = dev.allocate("c", {M_, N_}, DType::Fp32);
    if (dev.no_data()) return;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> at_raw(static_cast<std::size_t>(K_ * M_)), b_raw(static_cast<std::size_t>(K_ * N_));
    for (auto& v : at_raw) v = dist(rng);
    for (auto& v : b_raw) v = dist(rng);
    // Rounded (or quantized) on the host so the reference sees exactly the device's inputs.
    at_values_ = upload_input(at_raw, M_, at_, at_scale_);
    b_values_ = upload_input(b_raw, N_, b_, b_scale_);
  }

  // The variants, in the order a kernel engineer takes them; the spec's
  // variant list is this table, the default first.
  struct Step {
    const char* name;
    const char* description;
    void (Gemm::*build)(KernelBuilder&);
  };
  static const std::vector<Step>& steps();
  static const Step& variant_step(const std::string& name) {
    for (const Step& s : steps())
      if (name == s.name) return s;
    throw KernelError(fmt::format("gemm: no variant '{}'", name));
  }

  // SPMD: instance i of the grid computes a window of C, a contiguous run
  // of whole M tiles (shard M: its rows of C, its columns of A) or N tiles
  // (shard N: its columns of B and C), split as evenly as whole tiles allow;
  // every instance reads all of K, so no partial sums need combining. The
  // window's program is the variant's, on the window's M x N.
  Program build_instance(const Spmd& spmd, const std::string& shard) override {
    if (spmd.grid == 1) return build();
    if (shard == "K") return build_k_instance(spmd);
    const Tiling t(dev_.config(), full_m_, full_n_, K_);
    const bool along_m = shard == "M";
    const std::int64_t tiles = along_m ? t.mt : t.nt, tile = along_m ? t.tm : t.tn;
    const std::int64_t full = along_m ? full_m_ : full_n_;
    if (tiles < spmd.grid)
      throw KernelError(fmt::format("gemm: {}={} is {} tile{} of {}, too few for {} cores to get one each: shard over "
                                    "{}, or grow {}",
                                    shard, full, tiles, tiles == 1 ? "" : "s", tile, spmd.grid,
                                    along_m ? "N" : "M", shard));
    const std::int64_t lo = tiles * spmd.instance / spmd.grid, hi = tiles * (spmd.instance + 1) / spmd.grid;
    const std::int64_t offset = lo * tile, size = std::min(hi * tile, full) - offset;
    (along_m ? m_off_ : n_off_) = offset;
    (along_m ? M_ : N_) = size;
    Program p = build();
    m_off_ = n_off_ = 0;
    M_ = full_m_;
    N_ = full_n_;
    return p;
  }

  Program build() override {
    KernelBuilder kb(dev_.config(), "gemm");
    (this->*variant_step(variant_).build)(kb);
    Program p = kb.build();
    p.model_flops = 2.0 * static_cast<double>(M_) * static_cast<double>(N_) * static_cast<double>(K_);
    return p;
  }

  // SPMD over K: instance i multiplies a contiguous run of whole K steps
  // (as evenly as they go) into a partial C of its own in HBM, with its
  // variant's loop nest; then the cores sum the partials block by block
  // through a ring reduce-scatter (collectives::ReduceScatter), each core
  // storing its chunk of the columns of every
  // block of C. The partials go to HBM and back, which the M and N shards
  // never pay: that and the exchange are the price of splitting K.
  Program build_k_instance(const Spmd& spmd) {
    const Tiling t = tiling();
    const std::int64_t step = t.tk * (fmt_.double_row() ? 2 : 1) * (fmt_.mx() ? arch::kMxQuad : 1);
    const std::int64_t steps = ceil_div(full_k_, step);
    if (steps < spmd.grid)
      throw KernelError(fmt::format("gemm: K={} is {} step{} of {}, too few for {} cores to get one each: shard over "
                                    "M or N, or grow K",
                                    full_k_, steps, steps == 1 ? "" : "s", step, spmd.grid));
    if (full_n_ % spmd.grid != 0)
      throw KernelError(fmt::format("gemm: shard K: N={} does not split into {} equal column chunks, one per core, for "
                                    "the reduce-scatter of the partial products",
                                    full_n_, spmd.grid));
    if (partials_.empty())
      for (int i = 0; i < spmd.grid; ++i)
        partials_.push_back(dev_.allocate(fmt::format("c_partial{}", i), {full_m_, full_n_}, DType::Fp32));
    const std::int64_t lo = steps * spmd.instance / spmd.grid, hi = steps * (spmd.instance + 1) / spmd.grid;
    k_off_ = lo * step;
    K_ = std::min(hi * step, full_k_) - k_off_;
    c_target_ = &partials_.at(static_cast<std::size_t>(spmd.instance));
    KernelBuilder kb(dev_.config(), "gemm", spmd);
    // The tiles other cores write come first, at the same SBUF address on
    // every core: the instances' own loop nests differ when their K
    // windows do, and so would anything allocated after them.
    KReduction reduction(kb, dev_.config(), full_n_, k_reduction_);
    (this->*variant_step(variant_).build)(kb);
    reduce_partials(kb, reduction);
    Program p = kb.build();
    p.model_flops = 2.0 * static_cast<double>(M_) * static_cast<double>(N_) * static_cast<double>(K_);
    k_off_ = 0;
    K_ = full_k_;
    c_target_ = &c_;
    return p;
  }

  // The K shard's reduction: blocks of [partitions x W] columns of C, two
  // in flight, and the reduce-scatter that sums them.
  struct KReduction {
    std::int64_t P, W;
    collectives::ReduceScatter rs;
    Tile bufs[2];
    KReduction(KernelBuilder& kb, const arch::HwConfig& cfg, std::int64_t N, collectives::Algorithm algorithm)
        : P(cfg.sbuf.partitions),
          W(std::max<std::int64_t>(kb.spmd().grid,
                                   std::min<std::int64_t>(N, kReduceColumns) / kb.spmd().grid * kb.spmd().grid)),
          rs(kb, u32(P), u32(W), algorithm, "k-reduce"),
          bufs{kb.sbuf("k-reduce block0", u32(P), u32(W), DType::Fp32),
               kb.sbuf("k-reduce block1", u32(P), u32(W), DType::Fp32)} {}
  };

  // C = the sum of the cores' partials: each core loads its partial of a
  // block, the reduce-scatter leaves it the sum of its chunk of the block's
  // columns, and it stores that chunk of C.
  void reduce_partials(KernelBuilder& kb, KReduction& red) {
    const int n = kb.spmd().grid, rank = kb.spmd().instance;
    const std::int64_t P = red.P, W = red.W;
    const Tensor& partial = partials_.at(static_cast<std::size_t>(rank));
    int block = 0;
    for (std::int64_t r0 = 0; r0 < full_m_; r0 += P)
      for (std::int64_t c0 = 0; c0 < full_n_; c0 += W, ++block) {
        const std::int64_t rows = std::min(P, full_m_ - r0), cols = std::min(W, full_n_ - c0), chunk = cols / n;
        const Tile data = red.bufs[block % 2].slice(0, u32(rows), 0, u32(cols));
        kb.label("k-reduce load");
        kb.dma(data, partial.region(r0, c0, rows, cols));
        red.rs(data);
        kb.label("k-reduce store");
        kb.dma(c_.region(r0, c0 + rank * chunk, rows, chunk), data.columns(u32(rank * chunk), u32(chunk)));
      }
    kb.label("");
  }

  // Reference in double from the inputs the device held (reference_matmul). Each element's
  // tolerance is the standard bound for summing K products in fp32 with
  // round-to-nearest: gamma_K * sum_k |a_mk * b_kn|, gamma_K = K u / (1 - K u),
  // u = 2^-24. Products of bf16, fp8 and fp4 inputs are exact, so only the
  // additions round (K - 1 of them however the K steps split the sum); fp32
  // inputs round each product once more (gamma_(K+1)); MX products scaled
  // below fp32's normal range flush to zero, at most 2^-126 each
  // (docs/formats.md, "GEMM in every format"). bf16 PSUM (psum=bf16) rounds
  // the accumulator to bf16 once per matmul, after an fp32 add: s matmuls
  // into a cell (s <= its K steps, one more in double row for the split
  // edge step) add gamma_s(u') (1 + gamma_K) sum |a b|, u' = u_bf16 + u32 + u_bf16 u32.
  NumericsCheck check() override {
    const auto got = dev_.download(c_);
    double gamma_k = gamma(K_ + (fmt_.dtype == DType::Fp32 ? 1 : 0));
    if (bf16_psum()) {
      const std::int64_t s = tiling().kt + (fmt_.double_row() ? 1 : 0);
      gamma_k += gamma(s, rounded_twice(unit_roundoff(DType::Fp32), unit_roundoff(DType::Bf16))) * (1 + gamma_k);
    }
    const double flushed = fmt_.mx() ? static_cast<double>(K_) * kMinNormalFp32 : 0.0;
    // Rows of C in blocks against B packed once, so that no array of the
    // whole product is held (allocating those cost more than the sums).
    const auto M = static_cast<std::size_t>(full_m_), N = static_cast<std::size_t>(full_n_),
               K = static_cast<std::size_t>(K_);
    constexpr std::size_t kRows = 64;
    const ReferenceRight b(b_values_.data(), K, N);
    const WorstElement worst =
        worst_over_blocks((M + kRows - 1) / kRows, [&](std::size_t first, std::size_t last, WorstElement& rows) {
          ReferenceProduct ref;
          for (std::size_t m0 = first * kRows; m0 < std::min(M, last * kRows); m0 += kRows) {
            const std::size_t nm = std::min(kRows, M - m0);
            reference_matmul(at_values_.data() + m0, nm, M, b, ref);
            for (std::size_t mm = 0; mm < nm; ++mm)
              for (std::size_t n = 0; n < N; ++n) {
                const std::size_t at = (m0 + mm) * N + n;
                rows.add(at, got[at], ref.sum[mm * N + n], gamma_k * ref.mag[mm * N + n] + flushed);
              }
          }
        });
    return worst.result([&](std::size_t at) { return fmt::format("C[{}, {}]", at / N, at % N); });
  }

private:
  // `raw` ([K, cols] row-major) as the device holds it, uploaded: rounded to
  // the input dtype, or MX-quantized (a scale per 32 rows of a column,
  // arch::mx_scale_of, and each element V / scale, saturating); returns the
  // values the inputs stand for ([K, cols]).
  std::vector<float> upload_input(const std::vector<float>& raw, std::int64_t cols, const Tensor& data,
                                  const Tensor& scale) {
    std::vector<float> held(raw.size());
    if (!fmt_.mx()) {
      for (std::size_t i = 0; i < raw.size(); ++i) held[i] = held_value(fmt_.dtype, raw[i]);
      dev_.upload(data, held);
      return held;
    }
    const arch::ElementFormat e = *arch::element_format(fmt_.dtype);
    std::vector<float> elements(raw.size()), scales(static_cast<std::size_t>(K_ / 32 * cols));
    float block[32];
    for (std::int64_t g = 0; g < K_ / 32; ++g)
      for (std::int64_t c = 0; c < cols; ++c) {
        for (std::int64_t r = 0; r < 32; ++r) block[r] = raw[(g * 32 + r) * cols + c];
        const std::uint8_t s = arch::mx_scale_of(block, 32, e);
        scales[g * cols + c] = s;
        for (std::int64_t r = 0; r < 32; ++r) {
          const std::int64_t k = g * 32 + r;
          const std::uint8_t bits = arch::mx_quantize(block[r], s, e);
          // Element (k / 4, c) of the x4 tensor, its value k % 4.
          elements[((k / 4) * cols + c) * 4 + k % 4] = arch::narrow_value(e, bits);
          held[k * cols + c] = static_cast<float>(arch::mx_value(e, bits, s));
        }
      }
    dev_.upload(data, elements);
    dev_.upload(scale, scales);
    return held;
  }

  // One operand's buffers for a K step: its tile (the lower half in double
  // row), the upper half, the scales (MX).
  struct Slot {
    Tile lo, hi, scale;
  };
  Slot slot(KernelBuilder& kb, const std::string& name, std::int64_t partitions, std::int64_t cols) {
    Slot s;
    s.lo = kb.sbuf(name, u32(partitions), u32(cols), fmt_.dtype);
    if (fmt_.double_row()) s.hi = kb.sbuf(name + "_hi", u32(partitions), u32(cols), fmt_.dtype);
    if (fmt_.mx())
      s.scale = kb.sbuf(name + "_scale", u32(arch::mx_scale_partitions(static_cast<std::size_t>(partitions))),
                        u32(cols), DType::Uint8);
    return s;
  }
  // The partitions K step `step` fills in its lower and upper halves (the
  // upper is 0 but in double row), with steps of `tk` partitions.
  std::pair<std::int64_t, std::int64_t> step_rows(std::int64_t step, std::int64_t tk) const {
    const std::int64_t rows = fmt_.mx() ? K_ / arch::kMxQuad : K_;
    const std::int64_t k0 = step * tk * (fmt_.double_row() ? 2 : 1);
    const std::int64_t lo = std::min(tk, rows - k0);
    const std::int64_t hi = fmt_.double_row() ? std::clamp<std::int64_t>(rows - k0 - tk, 0, tk) : 0;
    return {lo, hi};
  }
  // Loads K step `step` of `data` (and its `scale`), columns [c0, c0 + cc)
  // of the whole tensor (a shard's offset included), into s.
  void load(KernelBuilder& kb, const Slot& s, const Tensor& data, const Tensor& scale, std::int64_t step,
            std::int64_t tk, std::int64_t c0, std::int64_t cc, SourceLocation where = SourceLocation::current()) const {
    const auto [lo, hi] = step_rows(step, tk);
    // A K shard's window starts k_off_ contraction rows in (tensor rows: a
    // quarter of them in MX, whose scale rows are a 32nd).
    const std::int64_t k0 = step * tk * (fmt_.double_row() ? 2 : 1) + (fmt_.mx() ? k_off_ / arch::kMxQuad : k_off_);
    kb.dma(fit(s.lo, lo, cc), data.region(k0, c0, lo, cc), where);
    if (hi > 0) kb.dma(fit(s.hi, hi, cc), data.region(k0 + tk, c0, hi, cc), where);
    if (!fmt_.mx()) return;
    // The scales of quadrant q's groups of 8 partitions sit on its first
    // partitions (arch::mx_scale_partition): one copy per quadrant.
    for (std::int64_t p = 0; p < lo; p += 32) {
      const std::int64_t groups = std::min<std::int64_t>(32, lo - p) / arch::kMxGroupPartitions;
      kb.dma(s.scale.slice(u32(p), u32(groups), 0, u32(cc)),
             scale.region((k0 + p) / arch::kMxGroupPartitions, c0, groups, cc), where);  // k0 holds the window's start
    }
  }
  // acc (+)= K step `step` of a.T @ b: one matmul in the format's mode; a
  // double-row step whose halves differ (at K's edge) as two single-row ones.
  void multiply(KernelBuilder& kb, const Tile& acc, const Slot& a, const Slot& b, std::int64_t step, std::int64_t tk,
                std::int64_t mm, std::int64_t nn, bool accumulate,
                SourceLocation where = SourceLocation::current()) const {
    const auto [lo, hi] = step_rows(step, tk);
    if (fmt_.mx()) {
      const auto sp = static_cast<std::int64_t>(arch::mx_scale_partitions(static_cast<std::size_t>(lo)));
      kb.matmul(acc, MatmulInput::mx(fit(a.lo, lo, mm), fit(a.scale, sp, mm)),
                MatmulInput::mx(fit(b.lo, lo, nn), fit(b.scale, sp, nn)), accumulate, where);
    } else if (fmt_.double_row() && hi == lo) {
      kb.matmul(acc, MatmulInput::double_row(fit(a.lo, lo, mm), fit(a.hi, lo, mm)),
                MatmulInput::double_row(fit(b.lo, lo, nn), fit(b.hi, lo, nn)), accumulate, where);
    } else {
      kb.matmul(acc, fit(a.lo, lo, mm), fit(b.lo, lo, nn), accumulate, where);
      if (hi > 0) kb.matmul(acc, fit(a.hi, hi, mm), fit(b.hi, hi, nn), true, where);
    }
  }

  // The accumulators' dtype (psum=bf16: where tensor.psum_bf16 allows it).
  bool bf16_psum() const { return params_.has("psum") && params_.choice("psum") == "bf16"; }
  DType psum_dtype() const { return bf16_psum() ? DType::Bf16 : DType::Fp32; }

  // The tiling in K steps: a step of tensor.rows partitions holds rows x
  // as many contraction rows.
  Tiling tiling() const {
    return Tiling(dev_.config(), M_, N_, fmt_.mx() ? K_ / arch::kMxQuad : ceil_div(K_, fmt_.rows));
  }


  // Windows of A (transposed), B and C in the coordinates of the window of
  // C this program computes (all of C but on several cores).
  View a_region(std::int64_t k0, std::int64_t m0, std::int64_t rows, std::int64_t cols) const {
    return at_.region(k_off_ + k0, m_off_ + m0, rows, cols);
  }
  View b_region(std::int64_t k0, std::int64_t n0, std::int64_t rows, std::int64_t cols) const {
    return b_.region(k_off_ + k0, n_off_ + n0, rows, cols);
  }
  View c_region(std::int64_t m0, std::int64_t n0, std::int64_t rows, std::int64_t cols) const {
    return c_target_->region(m_off_ + m0, n_off_ + n0, rows, cols);
  }
  // Views of the current tiles, clipped at the matrix edges.
  View at_tile(std::int64_t k0, std::int64_t m0, const Tiling& t) const {
    return a_region(k0, m0, std::min(t.tk, K_ - k0), std::min(t.tm, M_ - m0));
  }
  View b_tile(std::int64_t k0, std::int64_t n0, const Tiling& t) const {
    return b_region(k0, n0, std::min(t.tk, K_ - k0), std::min(t.tn, N_ - n0));
  }
  static Tile fit(const Tile& tile, std::int64_t p, std::int64_t f) {
    return tile.slice(0, static_cast<std::uint32_t>(p), 0, static_cast<std::uint32_t>(f));
  }
  std::int64_t rows_of(std::int64_t i, std::int64_t tile, std::int64_t total) const {
    return std::min(tile, total - i * tile);
  }

  // Evacuates an accumulator to SBUF (on the `evacuate` engine) and stores it.
  void store(KernelBuilder& kb, const Tile& acc, const Tile& out, std::int64_t m0, std::int64_t n0, std::int64_t mm,
             std::int64_t nn) {
    const Tile o = fit(out, mm, nn);
    kb.copy(o, fit(acc, mm, nn), params_.choice("evacuate") == "scalar" ? arch::Engine::Scalar : arch::Engine::Vector);
    kb.dma(c_region(m0, n0, mm, nn), o);
  }

  // Step 1: every tile loaded right before its multiply, one buffer each: the
  // tensor engine waits for each load, and each load for the multiply before.
  void naive(KernelBuilder& kb) {
    const Tiling t = tiling();
    const Slot a = slot(kb, "a", t.tk, t.tm), b = slot(kb, "b", t.tk, t.tn);
    const Tile acc = kb.psum("acc", t.tm, t.tn, psum_dtype()), out = kb.sbuf("out", t.tm, t.tn, DType::Fp32);
    for (std::int64_t mi = 0; mi < t.mt; ++mi)
      for (std::int64_t ni = 0; ni < t.nt; ++ni) {
        const std::int64_t mm = rows_of(mi, t.tm, M_), nn = rows_of(ni, t.tn, N_);
        kb.label(fmt::format("C tile m{} n{}", mi, ni));
        for (std::int64_t ki = 0; ki < t.kt; ++ki) {
          load(kb, a, at_, at_scale_, ki, t.tk, m_off_ + mi * t.tm, mm);
          load(kb, b, b_, b_scale_, ki, t.tk, n_off_ + ni * t.tn, nn);
          multiply(kb, fit(acc, mm, nn), a, b, ki, t.tk, mm, nn, ki > 0);
        }
        store(kb, acc, out, mi * t.tm, ni * t.tn, mm, nn);
      }
  }

  // Step 2: loads hoisted out of the K loop. The A tiles of a row block are
  // loaded once per row block; the B tiles of an output tile all go out
  // before its multiplies, each into its own buffer, so they travel in
  // parallel and the next tile's loads start as soon as each buffer is free.
  void hoisted(KernelBuilder& kb) {
    const Tiling t(dev_.config(), M_, N_, K_);
    std::vector<Tile> a, b;
    for (std::int64_t ki = 0; ki < t.kt; ++ki) {
      a.push_back(kb.sbuf(fmt::format("a{}", ki), t.tk, t.tm, DType::Bf16));
      b.push_back(kb.sbuf(fmt::format("b{}", ki), t.tk, t.tn, DType::Bf16));
    }
    const Tile acc = kb.psum("acc", t.tm, t.tn), out = kb.sbuf("out", t.tm, t.tn, DType::Fp32);
    for (std::int64_t mi = 0; mi < t.mt; ++mi) {
      kb.label(fmt::format("C row block m{}", mi));
      const std::int64_t mm = rows_of(mi, t.tm, M_);
      for (std::int64_t ki = 0; ki < t.kt; ++ki)
        kb.dma(fit(a[ki], rows_of(ki, t.tk, K_), mm), at_tile(ki * t.tk, mi * t.tm, t));
      for (std::int64_t ni = 0; ni < t.nt; ++ni) {
        const std::int64_t nn = rows_of(ni, t.tn, N_);
        for (std::int64_t ki = 0; ki < t.kt; ++ki)
          kb.dma(fit(b[ki], rows_of(ki, t.tk, K_), nn), b_tile(ki * t.tk, ni * t.tn, t));
        for (std::int64_t ki = 0; ki < t.kt; ++ki) {
          const std::int64_t kk = rows_of(ki, t.tk, K_);
          kb.matmul(fit(acc, mm, nn), fit(a[ki], kk, mm), fit(b[ki], kk, nn), ki > 0);
        }
        store(kb, acc, out, mi * t.tm, ni * t.tn, mm, nn);
      }
    }
  }

  // Step 3: blocks of BM x BN output tiles; the A tiles of BM row tiles and
  // the B tiles of BN column tiles (all of K) are loaded once per block and
  // reused by every output tile in it.
  void blocked_mn(KernelBuilder& kb) {
    const auto& cfg = dev_.config();
    const Tiling t(cfg, M_, N_, K_);
    const MnBudget room(cfg, t);
    const std::int64_t bm = std::min(params_.integer("bm"), t.mt), bn = std::min(params_.integer("bn"), t.nt);
    if (bm * room.a_col + bn * room.b_col > room.budget) {
      if (bm == 1 && bn == 1)
        throw KernelError(fmt::format("gemm blocked_mn: one A and one B column of K={} need {} bytes per partition, "
                                      "SBUF has {}; use blocked_mnk, which blocks K",
                                      K_, room.a_col + room.b_col, room.budget));
      throw KernelError(fmt::format("gemm blocked_mn: bm={} A and bn={} B columns of K={} need {} bytes per partition, "
                                    "SBUF has {}", bm, bn, K_, bm * room.a_col + bn * room.b_col, room.budget));
    }
    std::vector<std::vector<Tile>> a(bm), b(bn);
    for (std::int64_t i = 0; i < bm; ++i)
      for (std::int64_t ki = 0; ki < t.kt; ++ki) a[i].push_back(kb.sbuf(fmt::format("a{}_{}", i, ki), t.tk, t.tm, DType::Bf16));
    for (std::int64_t j = 0; j < bn; ++j)
      for (std::int64_t ki = 0; ki < t.kt; ++ki) b[j].push_back(kb.sbuf(fmt::format("b{}_{}", j, ki), t.tk, t.tn, DType::Bf16));
    const Tile acc[2] = {kb.psum("acc0", t.tm, t.tn), kb.psum("acc1", t.tm, t.tn)};
    const Tile out[2] = {kb.sbuf("out0", t.tm, t.tn, DType::Fp32), kb.sbuf("out1", t.tm, t.tn, DType::Fp32)};
    int turn = 0;
    for (std::int64_t m0 = 0; m0 < t.mt; m0 += bm)
      for (std::int64_t n0 = 0; n0 < t.nt; n0 += bn) {
        const std::int64_t bms = std::min(bm, t.mt - m0), bns = std::min(bn, t.nt - n0);
        kb.label(fmt::format("C block m{} n{}", m0, n0));
        for (std::int64_t i = 0; i < bms; ++i)
          for (std::int64_t ki = 0; ki < t.kt; ++ki)
            kb.dma(fit(a[i][ki], rows_of(ki, t.tk, K_), rows_of(m0 + i, t.tm, M_)), at_tile(ki * t.tk, (m0 + i) * t.tm, t));
        for (std::int64_t j = 0; j < bns; ++j)
          for (std::int64_t ki = 0; ki < t.kt; ++ki)
            kb.dma(fit(b[j][ki], rows_of(ki, t.tk, K_), rows_of(n0 + j, t.tn, N_)), b_tile(ki * t.tk, (n0 + j) * t.tn, t));
        for (std::int64_t i = 0; i < bms; ++i)
          for (std::int64_t j = 0; j < bns; ++j) {
            const std::int64_t mm = rows_of(m0 + i, t.tm, M_), nn = rows_of(n0 + j, t.tn, N_);
            const Tile& ac = acc[turn];
            for (std::int64_t ki = 0; ki < t.kt; ++ki) {
              const std::int64_t kk = rows_of(ki, t.tk, K_);
              kb.matmul(fit(ac, mm, nn), fit(a[i][ki], kk, mm), fit(b[j][ki], kk, nn), ki > 0);
            }
            store(kb, ac, out[turn], (m0 + i) * t.tm, (n0 + j) * t.tn, mm, nn);
            turn ^= 1;  // the next tile accumulates while this one is evacuated
          }
      }
  }

  // Step 4: K blocked too, so blocks stay small whatever K is, and every
  // load double-buffered: the next K block streams in while the tensor
  // engine works on this one. Accumulators for a whole BM x BN block stay in
  // PSUM across K blocks; each stationary tile is loaded once and used for
  // all BN moving tiles.
  void blocked_mnk(KernelBuilder& kb) {
    const auto& cfg = dev_.config();
    const Tiling t = tiling();
    const std::int64_t bm = std::min(params_.integer("bm"), t.mt), bn = std::min(params_.integer("bn"), t.nt);
    std::int64_t bk = std::min(params_.integer("bk"), t.kt);
    // The blocks' defaults count bf16 tiles (2 bytes per column of a K step);
    // a format of more bytes per step (fp32, MX with its scales) gets the K
    // block SBUF holds.
    const std::int64_t per_k = 2 * (bm * t.tm + bn * t.tn) * fmt_.step_bytes();
    const std::int64_t room = cfg.sbuf.partition_kib * 1024 - 2 * t.tn * 4;
    if (fmt_.step_bytes() > 2 && bk * per_k > room) bk = std::max<std::int64_t>(1, room / per_k);
    std::vector<std::vector<Slot>> a[2], b[2];
    for (int s = 0; s < 2; ++s) {
      a[s].resize(bm);
      b[s].resize(bn);
      for (std::int64_t i = 0; i < bm; ++i)
        for (std::int64_t k = 0; k < bk; ++k) a[s][i].push_back(slot(kb, fmt::format("a{}_{}_{}", s, i, k), t.tk, t.tm));
      for (std::int64_t j = 0; j < bn; ++j)
        for (std::int64_t k = 0; k < bk; ++k) b[s][j].push_back(slot(kb, fmt::format("b{}_{}_{}", s, j, k), t.tk, t.tn));
    }
    std::vector<Tile> acc[2];
    for (int s = 0; s < 2; ++s)
      for (std::int64_t i = 0; i < bm * bn; ++i) acc[s].push_back(kb.psum(fmt::format("acc{}_{}", s, i), t.tm, t.tn, psum_dtype()));
    const Tile out[2] = {kb.sbuf("out0", t.tm, t.tn, DType::Fp32), kb.sbuf("out1", t.tm, t.tn, DType::Fp32)};
    int buf = 0, accset = 0, outturn = 0;
    for (std::int64_t m0 = 0; m0 < t.mt; m0 += bm)
      for (std::int64_t n0 = 0; n0 < t.nt; n0 += bn) {
        const std::int64_t bms = std::min(bm, t.mt - m0), bns = std::min(bn, t.nt - n0);
        for (std::int64_t k0 = 0; k0 < t.kt; k0 += bk) {
          const std::int64_t bks = std::min(bk, t.kt - k0);
          kb.label(fmt::format("C block m{} n{}, K block k{}", m0, n0, k0));
          for (std::int64_t i = 0; i < bms; ++i)
            for (std::int64_t k = 0; k < bks; ++k)
              load(kb, a[buf][i][k], at_, at_scale_, k0 + k, t.tk, m_off_ + (m0 + i) * t.tm, rows_of(m0 + i, t.tm, M_));
          for (std::int64_t j = 0; j < bns; ++j)
            for (std::int64_t k = 0; k < bks; ++k)
              load(kb, b[buf][j][k], b_, b_scale_, k0 + k, t.tk, n_off_ + (n0 + j) * t.tn, rows_of(n0 + j, t.tn, N_));
          for (std::int64_t i = 0; i < bms; ++i)
            for (std::int64_t k = 0; k < bks; ++k) {
              const std::int64_t mm = rows_of(m0 + i, t.tm, M_);
              for (std::int64_t j = 0; j < bns; ++j) {
                const std::int64_t nn = rows_of(n0 + j, t.tn, N_);
                multiply(kb, fit(acc[accset][i * bn + j], mm, nn), a[buf][i][k], b[buf][j][k], k0 + k, t.tk, mm, nn,
                         k0 + k > 0);
              }
            }
          buf ^= 1;
        }
        kb.label(fmt::format("C block m{} n{}, store", m0, n0));
        for (std::int64_t i = 0; i < bms; ++i)
          for (std::int64_t j = 0; j < bns; ++j) {
            store(kb, acc[accset][i * bn + j], out[outturn], (m0 + i) * t.tm, (n0 + j) * t.tn,
                  rows_of(m0 + i, t.tm, M_), rows_of(n0 + j, t.tn, N_));
            outturn ^= 1;
          }
        accset ^= 1;
      }
  }

  // --- The NKI matmul tutorial ------------------------------------------------
  // The kernels of aws-neuron-sdk's matrix multiplication tutorial
  // (matrix_multiplication_nki_kernels.py), loop for loop. Tiles are TILE_K x
  // TILE_M = 128 x 128 (lhsT, stationary) and TILE_K x TILE_N = 128 x 512
  // (rhs, moving) on the real generations; sizes that are not multiples of a
  // tile or block clip at the edges (the tutorial asserts multiples). C is
  // fp32 (the tutorial's result takes lhsT's dtype, bf16).

  // Copies of a loop body's tiles that fit SBUF: tp_.buffers, else 1. `per`
  // is the bytes per partition of one copy of every rotating tile, `fixed`
  // what the kernel keeps besides.
  std::int64_t copies_that_fit(std::int64_t per, std::int64_t fixed, const char* variant) const {
    const std::int64_t budget = dev_.config().sbuf.partition_kib * 1024;
    for (std::int64_t c = std::max<std::int64_t>(tp_.buffers, 1); c >= 1; --c)
      if (fixed + c * per <= budget) return c;
    throw KernelError(fmt::format("gemm {}: its tiles need {} bytes per partition at K={}; SBUF has {}", variant,
                                  fixed + per, K_, budget));
  }

  // nki_matmul_tiled_: for m, for n, for k: load one lhsT and one rhs tile,
  // multiply into PSUM; copy the result to SBUF and store it.
  void tiled(KernelBuilder& kb) {
    const Tiling t(dev_.config(), M_, N_, K_);
    const std::int64_t c = copies_that_fit(t.tm * 2 + t.tn * 2 + t.tn * 4, 0, "tiled");
    std::vector<Tile> lhs, rhs, res_sb, res_psum;
    for (std::int64_t i = 0; i < c; ++i) {
      lhs.push_back(kb.sbuf(fmt::format("lhsT_tile{}", i), t.tk, t.tm, DType::Bf16));
      rhs.push_back(kb.sbuf(fmt::format("rhs_tile{}", i), t.tk, t.tn, DType::Bf16));
      res_sb.push_back(kb.sbuf(fmt::format("res_sb{}", i), t.tm, t.tn, DType::Fp32));
      res_psum.push_back(kb.psum(fmt::format("res_psum{}", i), t.tm, t.tn));
    }
    std::size_t kturn = 0, nturn = 0;
    for (std::int64_t mi = 0; mi < t.mt; ++mi)
      for (std::int64_t ni = 0; ni < t.nt; ++ni) {
        const std::int64_t mm = rows_of(mi, t.tm, M_), nn = rows_of(ni, t.tn, N_);
        kb.label(fmt::format("m{} n{}", mi, ni));
        const Tile& acc = res_psum[nturn % res_psum.size()];
        for (std::int64_t ki = 0; ki < t.kt; ++ki, ++kturn) {
          const std::int64_t kk = rows_of(ki, t.tk, K_);
          const Tile a = fit(lhs[kturn % lhs.size()], kk, mm), b = fit(rhs[kturn % rhs.size()], kk, nn);
          kb.dma(a, at_tile(ki * t.tk, mi * t.tm, t));
          kb.dma(b, b_tile(ki * t.tk, ni * t.tn, t));
          kb.matmul(fit(acc, mm, nn), a, b, ki > 0);
        }
        store(kb, acc, res_sb[nturn++ % res_sb.size()], mi * t.tm, ni * t.tn, mm, nn);
      }
  }

  // nki_matmul_hoist_load_: for m, load the K column of lhsT tiles; for n,
  // load the K column of rhs tiles, then multiply them all into PSUM.
  void hoist_load(KernelBuilder& kb) {
    const Tiling t(dev_.config(), M_, N_, K_);
    const std::int64_t c = copies_that_fit(t.kt * (t.tm + t.tn) * 2 + t.tn * 4, 0, "hoist_load");
    std::vector<Tile> lhs, rhs, res_sb, res_psum;
    for (std::int64_t i = 0; i < c; ++i) {
      lhs.push_back(kb.sbuf(fmt::format("lhsT_tiles{}", i), t.tk, t.kt * t.tm, DType::Bf16));
      rhs.push_back(kb.sbuf(fmt::format("rhs_tiles{}", i), t.tk, t.kt * t.tn, DType::Bf16));
      res_sb.push_back(kb.sbuf(fmt::format("res_sb{}", i), t.tm, t.tn, DType::Fp32));
      res_psum.push_back(kb.psum(fmt::format("res_psum{}", i), t.tm, t.tn));
    }
    std::size_t nturn = 0;
    for (std::int64_t mi = 0; mi < t.mt; ++mi) {
      const std::int64_t mm = rows_of(mi, t.tm, M_);
      const Tile& l = lhs[static_cast<std::size_t>(mi) % lhs.size()];
      kb.label(fmt::format("m{}: lhsT tiles", mi));
      for (std::int64_t ki = 0; ki < t.kt; ++ki)
        kb.dma(column(l, ki, t.tm, rows_of(ki, t.tk, K_), mm), at_tile(ki * t.tk, mi * t.tm, t));
      for (std::int64_t ni = 0; ni < t.nt; ++ni, ++nturn) {
        const std::int64_t nn = rows_of(ni, t.tn, N_);
        const Tile& r = rhs[nturn % rhs.size()];
        kb.label(fmt::format("m{} n{}", mi, ni));
        for (std::int64_t ki = 0; ki < t.kt; ++ki)
          kb.dma(column(r, ki, t.tn, rows_of(ki, t.tk, K_), nn), b_tile(ki * t.tk, ni * t.tn, t));
        const Tile& acc = res_psum[nturn % res_psum.size()];
        for (std::int64_t ki = 0; ki < t.kt; ++ki) {
          const std::int64_t kk = rows_of(ki, t.tk, K_);
          kb.matmul(fit(acc, mm, nn), column(l, ki, t.tm, kk, mm), column(r, ki, t.tn, kk, nn), ki > 0);
        }
        store(kb, acc, res_sb[nturn % res_sb.size()], mi * t.tm, ni * t.tn, mm, nn);
      }
    }
  }

  // nki_matmul_block_free_dimension_: blocks of TILES_IN_BLOCK_M x
  // TILES_IN_BLOCK_N output tiles (2 x 2); the lhsT tiles of a block row and
  // the rhs tiles of a block column (all of K) are loaded once per block.
  void block_free_dimension(KernelBuilder& kb) {
    const Tiling t(dev_.config(), M_, N_, K_);
    const std::int64_t bm = std::clamp<std::int64_t>(tp_.free_block_m, 1, t.mt);
    const std::int64_t bn = std::clamp<std::int64_t>(tp_.free_block_n, 1, t.nt);
    const std::int64_t c = copies_that_fit(t.kt * (bm * t.tm + bn * t.tn) * 2 + t.tn * 4, 0, "block_free_dimension");
    std::vector<Tile> lhs, rhs, res_sb, res_psum;
    for (std::int64_t i = 0; i < c; ++i) {
      lhs.push_back(kb.sbuf(fmt::format("lhsT_tiles{}", i), t.tk, bm * t.kt * t.tm, DType::Bf16));
      rhs.push_back(kb.sbuf(fmt::format("rhs_tiles{}", i), t.tk, bn * t.kt * t.tn, DType::Bf16));
      res_sb.push_back(kb.sbuf(fmt::format("result_tmp{}", i), t.tm, t.tn, DType::Fp32));
      res_psum.push_back(kb.psum(fmt::format("result_tile{}", i), t.tm, t.tn));
    }
    std::size_t nturn = 0, tturn = 0;
    for (std::int64_t m0 = 0, mblock = 0; m0 < t.mt; m0 += bm, ++mblock) {
      const std::int64_t bms = std::min(bm, t.mt - m0);
      const Tile& l = lhs[static_cast<std::size_t>(mblock) % lhs.size()];
      kb.label(fmt::format("M block {}: lhsT tiles", mblock));
      for (std::int64_t i = 0; i < bms; ++i)
        for (std::int64_t ki = 0; ki < t.kt; ++ki)
          kb.dma(column(l, i * t.kt + ki, t.tm, rows_of(ki, t.tk, K_), rows_of(m0 + i, t.tm, M_)),
                 at_tile(ki * t.tk, (m0 + i) * t.tm, t));
      for (std::int64_t n0 = 0; n0 < t.nt; n0 += bn, ++nturn) {
        const std::int64_t bns = std::min(bn, t.nt - n0);
        const Tile& r = rhs[nturn % rhs.size()];
        kb.label(fmt::format("M block {}, N block {}", mblock, n0 / bn));
        for (std::int64_t j = 0; j < bns; ++j)
          for (std::int64_t ki = 0; ki < t.kt; ++ki)
            kb.dma(column(r, j * t.kt + ki, t.tn, rows_of(ki, t.tk, K_), rows_of(n0 + j, t.tn, N_)),
                   b_tile(ki * t.tk, (n0 + j) * t.tn, t));
        for (std::int64_t i = 0; i < bms; ++i)
          for (std::int64_t j = 0; j < bns; ++j, ++tturn) {
            const std::int64_t mm = rows_of(m0 + i, t.tm, M_), nn = rows_of(n0 + j, t.tn, N_);
            const Tile& acc = res_psum[tturn % res_psum.size()];
            for (std::int64_t ki = 0; ki < t.kt; ++ki) {
              const std::int64_t kk = rows_of(ki, t.tk, K_);
              kb.matmul(fit(acc, mm, nn), column(l, i * t.kt + ki, t.tm, kk, mm),
                        column(r, j * t.kt + ki, t.tn, kk, nn), ki > 0);
            }
            store(kb, acc, res_sb[tturn % res_sb.size()], (m0 + i) * t.tm, (n0 + j) * t.tn, mm, nn);
          }
      }
    }
  }

  // nki_matmul_fully_optimized_ (TILES_IN_BLOCK_M=16, _N=2, _K=8): for each
  // N block, result tiles of [TILE_M, BLOCK_N] for the whole of M stay in SBUF
  // (zeroed first); for each K block, the block's rhs rows are loaded one
  // [TILE_K, BLOCK_N] DMA per K tile, then for each M block its lhsT rows one
  // [TILE_K, BLOCK_M] DMA per K tile; every output tile's K block is summed
  // in PSUM and added into its SBUF result tile (vector engine); the result
  // tiles leave as [TILE_M, BLOCK_N] stores.
  void fully_optimized(KernelBuilder& kb) {
    const Tiling t(dev_.config(), M_, N_, K_);
    const std::int64_t bm = std::clamp<std::int64_t>(tp_.tiles_in_block_m, 1, t.mt);
    const std::int64_t bn = std::clamp<std::int64_t>(tp_.tiles_in_block_n, 1, t.nt);
    const std::int64_t bk = std::clamp<std::int64_t>(tp_.tiles_in_block_k, 1, t.kt);
    const std::int64_t block_m = bm * t.tm, block_n = bn * t.tn;
    const std::int64_t result_bytes = t.mt * block_n * 4;
    const std::int64_t c = copies_that_fit(bk * (block_m + block_n) * 2, result_bytes, "fully_optimized");
    std::vector<Tile> result;
    for (std::int64_t i = 0; i < t.mt; ++i)
      result.push_back(kb.sbuf(fmt::format("result_m_tile{}", i), t.tm, block_n, DType::Fp32));
    std::vector<Tile> lhs, rhs, res_psum;
    for (std::int64_t i = 0; i < c; ++i) {
      rhs.push_back(kb.sbuf(fmt::format("rhs_tiles{}", i), t.tk, bk * block_n, DType::Bf16));
      lhs.push_back(kb.sbuf(fmt::format("lhsT_tiles{}", i), t.tk, bk * block_m, DType::Bf16));
    }
    for (std::int64_t i = 0; i < std::max<std::int64_t>(tp_.buffers, 1); ++i)
      res_psum.push_back(kb.psum(fmt::format("result_tile{}", i), t.tm, t.tn));
    std::size_t kturn = 0, mturn = 0, tturn = 0;
    for (std::int64_t n0 = 0; n0 < t.nt; n0 += bn) {
      const std::int64_t bns = std::min(bn, t.nt - n0);
      const std::int64_t width = std::min(block_n, N_ - n0 * t.tn);
      kb.label(fmt::format("N block {}: zero the result tiles", n0 / bn));
      for (std::int64_t mi = 0; mi < t.mt; ++mi) kb.memset(fit(result[mi], rows_of(mi, t.tm, M_), width), 0.0f);
      for (std::int64_t k0 = 0; k0 < t.kt; k0 += bk, ++kturn) {
        const std::int64_t bks = std::min(bk, t.kt - k0);
        const Tile& r = rhs[kturn % rhs.size()];
        kb.label(fmt::format("N block {}, K block {}: rhs", n0 / bn, k0 / bk));
        for (std::int64_t kt = 0; kt < bks; ++kt)
          kb.dma(column(r, kt, block_n, rows_of(k0 + kt, t.tk, K_), width),
                 b_region((k0 + kt) * t.tk, n0 * t.tn, rows_of(k0 + kt, t.tk, K_), width));
        for (std::int64_t m0 = 0; m0 < t.mt; m0 += bm, ++mturn) {
          const std::int64_t bms = std::min(bm, t.mt - m0);
          const std::int64_t height = std::min(block_m, M_ - m0 * t.tm);
          const Tile& l = lhs[mturn % lhs.size()];
          kb.label(fmt::format("N block {}, K block {}, M block {}", n0 / bn, k0 / bk, m0 / bm));
          for (std::int64_t kt = 0; kt < bks; ++kt)
            kb.dma(column(l, kt, block_m, rows_of(k0 + kt, t.tk, K_), height),
                   a_region((k0 + kt) * t.tk, m0 * t.tm, rows_of(k0 + kt, t.tk, K_), height));
          for (std::int64_t j = 0; j < bns; ++j)
            for (std::int64_t i = 0; i < bms; ++i, ++tturn) {
              const std::int64_t mm = rows_of(m0 + i, t.tm, M_), nn = rows_of(n0 + j, t.tn, N_);
              const Tile acc = fit(res_psum[tturn % res_psum.size()], mm, nn);
              for (std::int64_t kt = 0; kt < bks; ++kt) {
                const std::int64_t kk = rows_of(k0 + kt, t.tk, K_);
                kb.matmul(acc, l.slice(0, u32(kk), u32(kt * block_m + i * t.tm), u32(mm)),
                          r.slice(0, u32(kk), u32(kt * block_n + j * t.tn), u32(nn)), kt > 0);
              }
              const Tile out = result[m0 + i].slice(0, u32(mm), u32(j * t.tn), u32(nn));
              kb.tensor_tensor(out, out, acc, arch::AluOp::Add);
            }
        }
      }
      kb.label(fmt::format("N block {}: store", n0 / bn));
      for (std::int64_t mi = 0; mi < t.mt; ++mi) {
        const std::int64_t mm = rows_of(mi, t.tm, M_);
        kb.dma(c_region(mi * t.tm, n0 * t.tn, mm, width), fit(result[mi], mm, width));
      }
    }
  }

  // Sub-tile `index` of a row of equal sub-tiles `width` columns wide: rows
  // [0, rows), columns [index * width, index * width + cols).
  static Tile column(const Tile& tile, std::int64_t index, std::int64_t width, std::int64_t rows, std::int64_t cols) {
    return tile.slice(0, u32(rows), u32(index * width), u32(cols));
  }
  static std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

  Device& dev_;
  std::string variant_;
  Params params_;
  std::int64_t full_m_, full_n_;
  // The window of C being built: all of it, or one instance's.
  std::int64_t M_, N_, K_;
  std::int64_t m_off_ = 0, n_off_ = 0;
  // A K shard: the window's first contraction row, the full K, where the
  // window's product goes (its partial; else C) and every core's partial.
  std::int64_t k_off_ = 0;
  std::int64_t full_k_;
  const Tensor* c_target_ = &c_;
  std::vector<Tensor> partials_;
  // The reduce-scatter of the partials (the kernel 'collective' compares the algorithms).
  collectives::Algorithm k_reduction_ = collectives::Algorithm::Ring;
  // Columns of C per block of the K shard's reduction (fp32: 8 KiB per partition).
  static constexpr std::int64_t kReduceColumns = 2048;
  TutorialParams tp_;
  InputFormat fmt_;
  Tensor at_, b_, c_;
  Tensor at_scale_, b_scale_;  // MX only
  std::vector<float> at_values_, b_values_;
};

// Step 4 first: it is the default; then the NKI tutorial's four kernels.
const std::vector<Gemm::Step>& Gemm::steps() {
  static const std::vector<Step> table = {
      {"blocked_mnk", "blocks of bm x bn output tiles, K in blocks of bk tiles, every load double-buffered",
       &Gemm::blocked_mnk},
      {"naive", "every tile loaded right before its multiply, one buffer each", &Gemm::naive},
      {"hoisted", "loads hoisted out of the K loop, one buffer per K tile", &Gemm::hoisted},
      {"blocked_mn", "blocks of bm x bn output tiles whose A and B tiles (all of K) are loaded once", &Gemm::blocked_mn},
      {"tiled", "NKI tutorial nki_matmul_tiled_: for m, n, k, one lhsT and one rhs tile each", &Gemm::tiled},
      {"hoist_load", "NKI tutorial nki_matmul_hoist_load_: a row block's lhsT tiles loaded once", &Gemm::hoist_load},
      {"block_free_dimension", "NKI tutorial nki_matmul_block_free_dimension_: blocks of the M and N dimensions",
       &Gemm::block_free_dimension},
      {"fully_optimized", "NKI tutorial nki_matmul_fully_optimized_: M, N and K blocks, results accumulated in SBUF",
       &Gemm::fully_optimized},
  };
  return table;
}

}  // namespace

KernelSpec gemm_spec() {
  std::vector<Variant> variants;
  for (const auto& s : Gemm::steps()) variants.push_back({s.name, s.description});
  const auto blocking = [](std::int64_t Blocking::*field) {
    return [field](const ParamContext& ctx) -> ParamValue { return default_blocking(ctx).*field; };
  };
  const auto tiles = [](const char* dim) {
    return [dim](const ParamContext& ctx) {
      const Tiling t(ctx.config, ctx.shape.at("M"), ctx.shape.at("N"), ctx.shape.at("K"));
      return std::string(dim) == "M" ? t.mt : std::string(dim) == "N" ? t.nt : t.kt;
    };
  };
  const TutorialParams tutorial;
  KernelSpec spec;
  spec.name = "gemm";
  spec.description =
      "C[M,N] = A[M,K] @ B[K,N]; A given transposed ([K,M]); bf16 (or --dtype fp32, fp8, MX: blocked_mnk, naive) in, "
      "fp32 out";
  spec.dtypes = kGemmDtypes;
  spec.dtype_variants = kEveryDtypeVariants;
  spec.variants = variants;
  spec.shape = {{"M", 256, "rows of A and C"}, {"N", 512, "columns of B and C"}, {"K", 256, "contraction"}};
  // Defaults derived as the variants always sized their blocks: blocked_mn
  // from SBUF (B first), blocked_mnk from PSUM banks (bm x bn accumulators,
  // two sets) and then the largest K block SBUF holds double-buffered. The
  // tutorial variants' meta-parameters default to the tutorial's values.
  spec.params = {
      TunableParam::integer("bm", 1, 1024, 1, "output tiles along M per block (tiles of the array's stationary width)")
          .derived(blocking(&Blocking::bm))
          .useful_up_to(tiles("M"))
          .only_for({"blocked_mn", "blocked_mnk"}),
      TunableParam::integer("bn", 1, 1024, 1, "output tiles along N per block (tiles of one PSUM bank)")
          .derived(blocking(&Blocking::bn))
          .useful_up_to(tiles("N"))
          .only_for({"blocked_mn", "blocked_mnk"}),
      TunableParam::integer("bk", 1, 1024, 1,
                            "K tiles per block (tiles of the array's rows), each loaded into one of two buffer sets")
          .derived(blocking(&Blocking::bk))
          .useful_up_to(tiles("K"))
          .only_for({"blocked_mnk"}),
      TunableParam::integer("tiles_in_block_m", 1, 1024, tutorial.tiles_in_block_m, "TILES_IN_BLOCK_M: M tiles per block")
          .useful_up_to(tiles("M"))
          .only_for({"fully_optimized"}),
      TunableParam::integer("tiles_in_block_n", 1, 1024, tutorial.tiles_in_block_n, "TILES_IN_BLOCK_N: N tiles per block")
          .useful_up_to(tiles("N"))
          .only_for({"fully_optimized"}),
      TunableParam::integer("tiles_in_block_k", 1, 1024, tutorial.tiles_in_block_k, "TILES_IN_BLOCK_K: K tiles per block")
          .useful_up_to(tiles("K"))
          .only_for({"fully_optimized"}),
      TunableParam::integer("free_block_m", 1, 1024, tutorial.free_block_m, "M tiles per block of the free dimension")
          .useful_up_to(tiles("M"))
          .only_for({"block_free_dimension"}),
      TunableParam::integer("free_block_n", 1, 1024, tutorial.free_block_n, "N tiles per block of the free dimension")
          .useful_up_to(tiles("N"))
          .only_for({"block_free_dimension"}),
      TunableParam::integer("buffers", 1, 8, tutorial.buffers,
                            "copies a loop body's tiles rotate through, at most (fewer when SBUF has no room)")
          .only_for({"tiled", "hoist_load", "block_free_dimension", "fully_optimized"}),
      TunableParam::choice("evacuate", {"vector", "scalar"}, "vector",
                           "the engine that copies accumulators from PSUM to SBUF")
          .only_for({"blocked_mnk", "naive", "hoisted", "blocked_mn", "tiled", "hoist_load", "block_free_dimension"}),
      TunableParam::choice("psum", {"fp32", "bf16"}, "fp32",
                           "the accumulators' dtype: bf16 rounds each matmul's sum into a bf16 PSUM cell, where the "
                           "config has tensor.psum_bf16 (numerics, not tuned)")
          .only_for(kEveryDtypeVariants)
          .changes_numerics(),
  };
  spec.make = [](Device& dev, const KernelArgs& args) { return std::make_unique<Gemm>(dev, args); };
  spec.fits = gemm_fits;
  spec.shard_dims = {"M", "N", "K"};
  return spec;
}

TESSERA_REGISTER_KERNEL(gemm_spec);

}  // namespace tessera::kernels
