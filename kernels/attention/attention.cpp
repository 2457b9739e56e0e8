// Attention forward, O = softmax(Q K^T / sqrt(D) + mask) V for each of H
// heads, in two ways (docs/kernels.md, attention):
//
//  - flash: for a block of queries, keys stream by in blocks; each block's
//    scores live only in PSUM/SBUF, a running row max m and row sum l are
//    kept per query (per partition), and the output accumulator in PSUM is
//    rescaled by exp(scale (m_old - m_new)) before the block's P V is added to it.
//  - naive: the straightforward three steps: the scaled (and masked) score
//    matrix is written to HBM, read back a row block at a time for a
//    max-subtracted softmax, then multiplied by V.
//
// The `_causal` variants mask key j > query i. Layout (per head, stacked):
// Q^T and K^T [H*D, S] (head dim on partitions, as the score matmul wants
// it), V [H*S, D], O [H*S, D] fp32; inputs bf16, or the --dtype given
// (docs/formats.md, attention in every format): Q, K, V and the weights P
// fed to the second matmul are of that dtype, scores, softmax state and O
// fp32 whatever it is.
#include "attention/attention.h"

#include "arch/numerics.h"
#include "common/bounds.h"
#include "common/reference_matmul.h"
#include "common/input_format.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

namespace tessera::kernels {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

Tile fit(const Tile& t, std::int64_t partitions, std::int64_t free) { return t.slice(0, u32(partitions), 0, u32(free)); }

// Added to a masked score. Finite, so that scores and maxima stay finite;
// scaled and exponentiated it gives exactly 0, as -inf would.
constexpr float kMasked = -1e30f;

// The query block and key chunk c: array rows and columns, stationary
// width, partitions.
std::int64_t chunk_of(const arch::HwConfig& cfg) {
  return std::min({cfg.tensor.rows, cfg.tensor.cols, cfg.tensor.stationary_max_free, cfg.sbuf.partitions,
                   cfg.psum.partitions});
}

// Key chunks per block: as many as the moving free size and one PSUM bank
// of fp32 take (at least one).
std::int64_t max_key_chunks(const arch::HwConfig& cfg) {
  return std::max<std::int64_t>(1, std::min(cfg.tensor.moving_max_free, cfg.psum.bank_kib * 1024 / 4) / chunk_of(cfg));
}

// The kernel's sizes. c: query block and key chunk; bk: keys per block
// (whole chunks); nd: head-dim chunks; dn: output columns per PSUM tile, nv
// of them; nkc: key chunks of the sequence; per_head: bytes per partition
// of one head's resident K^T and V; working: of everything else. e: bytes
// of an input element (Q, K, V, P^T); P itself is at least bf16 (2 bytes),
// since the array transposes only bf16 and fp32 tiles.
struct AttentionPlan {
  std::int64_t c, bk, nd, dn, nv, nkc, per_head, working;
  AttentionPlan(const arch::HwConfig& cfg, std::int64_t S, std::int64_t D, bool flash, bool causal,
                std::int64_t key_chunks, std::int64_t e) {
    const std::int64_t bank_fp32 = cfg.psum.bank_kib * 1024 / 4;
    c = chunk_of(cfg);
    bk = key_chunks * c;
    if (key_chunks > max_key_chunks(cfg))
      throw KernelError(fmt::format("attention: key_chunks={} makes key blocks of {} keys; a block's scores stream "
                                    "through one matmul and one PSUM bank, which take {} (key_chunks <= {})",
                                    key_chunks, bk, std::min(cfg.tensor.moving_max_free, bank_fp32),
                                    max_key_chunks(cfg)));
    nd = ceil_div(D, c);
    dn = std::min(cfg.tensor.moving_max_free, bank_fp32);
    nv = ceil_div(D, dn);
    nkc = ceil_div(S, c);
    per_head = nd * S * e + nkc * D * e;
    const std::int64_t ep = std::max<std::int64_t>(e, 2);
    // Q (3 buffers), masked scores, P, P^T (2 each), outputs (3), the bf16
    // mask table, per-query state; naive adds a row of scores, exps and weights.
    working = 3 * nd * c * e + 2 * bk * 4 + 2 * bk * ep + 2 * bk * e + 3 * nv * dn * 4 + (causal ? (2 * bk + c) * 2 : 0) +
              16 * 4 + (flash ? 0 : S * (4 + 4 + ep));
  }
};

// Why a point does not fit the core, or nothing: a key block wider than one
// matmul and one PSUM bank take, or K^T and V of a head (kv_sets of them)
// with the working tiles past a partition of SBUF. The kernel's own checks,
// which the tuner and the tuning database's fallback read without building
// (KernelSpec::fits), and which the kernel itself raises.
std::optional<std::string> attention_fits(const arch::HwConfig& cfg, const KernelArgs& args) {
  const std::int64_t S = args.shape.at("S"), D = args.shape.at("D"), sets = args.params.integer("kv_sets");
  const auto e = static_cast<std::int64_t>(arch::size_of(input_format(args.dtype, cfg).dtype));
  try {
    const AttentionPlan p(cfg, S, D, args.variant.rfind("flash", 0) == 0,
                          args.variant.find("causal") != std::string::npos, args.params.integer("key_chunks"), e);
    const std::int64_t sbuf = cfg.sbuf.partition_kib * 1024;
    if (p.per_head + p.working > sbuf)
      return fmt::format("attention: K^T and V of one head (S={}, D={}) need {} bytes per partition and the working "
                         "tiles {} more; SBUF has {} per partition",
                         S, D, p.per_head, p.working, sbuf);
    if (sets * p.per_head + p.working > sbuf)
      return fmt::format("attention: kv_sets={}: {} sets of K^T and V (S={}, D={}) need {} bytes per partition and "
                         "the working tiles {} more; SBUF has {} per partition",
                         sets, sets, S, D, sets * p.per_head, p.working, sbuf);
  } catch (const KernelError& err) {
    return std::string(err.what());
  }
  return std::nullopt;
}

class Attention : public KernelInstance {
public:
  Attention(Device& dev, const KernelArgs& args)
      : dev_(dev), flash_(args.variant.rfind("flash", 0) == 0),
        causal_(args.variant.find("causal") != std::string::npos), S_(args.shape.at("S")), D_(args.shape.at("D")),
        H_(args.shape.at("H")), h_hi_(H_), scale_(1.0f / std::sqrt(static_cast<float>(D_))), params_(args.params),
        in_(input_format(args.dtype, dev.config()).dtype), p_(arch::size_of(in_) == 1 ? DType::Bf16 : in_) {
    const std::uint64_t seed = args.seed;
    qt_ = dev.allocate("qt", {H_ * D_, S_}, in_);
    kt_ = dev.allocate("kt", {H_ * D_, S_}, in_);
    v_ = dev.allocate("v", {H_ * S_, D_}, in_);
    o_ = dev.allocate("o", {H_ * S_, D_}, DType::Fp32);
    if (!flash_) scores_ = dev.allocate("scores", {H_ * S_, S_}, DType::Fp32);
    plan(dev.config(), args);
    // The causal mask as an input, the `+ mask` of the formula: one
    // [c, 2 bk + c] table whose windows are every block's additive mask
    // (mask()). A table rather than GpSimd iota, which not every generation has.
    if (causal_) mask_table_ = dev.allocate("mask", {c_, 2 * bk_ + c_}, DType::Bf16);
    if (dev.no_data()) return;
    if (causal_) {
      // bf16 holds -1e30 (as -1.0004e30): as good as -inf for exp, half the bytes of fp32.
      std::vector<float> table(static_cast<std::size_t>(c_ * (2 * bk_ + c_)));
      for (std::int64_t p = 0; p < c_; ++p)
        for (std::int64_t j = 0; j < 2 * bk_ + c_; ++j) table[p * (2 * bk_ + c_) + j] = j - p - bk_ > 0 ? kMasked : 0.0f;
      dev.upload(mask_table_, table);
    }
    // Scores / sqrt(D) spread with a standard deviation of about 1.3, so the
    // softmax is neither flat nor one-hot; well inside fp8's range, so no
    // input needs a scale.
    std::mt19937_64 rng(seed);
    const auto fill = [&](std::vector<float>& v, std::size_t n, double half_range) {
      std::uniform_real_distribution<double> dist(-half_range, half_range);
      v.resize(n);
      for (auto& e : v) e = held_value(in_, static_cast<float>(dist(rng)));
    };
    fill(q_, static_cast<std::size_t>(H_ * D_ * S_), 2.0);
    fill(k_, static_cast<std::size_t>(H_ * D_ * S_), 2.0);
    fill(vv_, static_cast<std::size_t>(H_ * S_ * D_), 1.0);
    dev.upload(qt_, q_);
    dev.upload(kt_, k_);
    dev.upload(v_, vv_);
  }

  // SPMD over heads: instance i computes a contiguous run of whole heads,
  // as evenly as they split; heads are independent, so nothing is exchanged
  // and each core reads only its heads' Q, K and V.
  Program build_instance(const Spmd& spmd, const std::string& shard) override {
    if (spmd.grid == 1) return build();
    if (shard != "H") throw KernelError(fmt::format("attention: shards over H, not {}", shard));
    if (H_ < spmd.grid)
      throw KernelError(fmt::format("attention: H={} head{} too few for {} cores to get one each: grow H", H_,
                                    H_ == 1 ? " is" : "s are", spmd.grid));
    h_lo_ = H_ * spmd.instance / spmd.grid;
    h_hi_ = H_ * (spmd.instance + 1) / spmd.grid;
    Program p = build();
    h_lo_ = 0;
    h_hi_ = H_;
    return p;
  }

  Program build() override {
    KernelBuilder kb(dev_.config(), flash_ ? "attention_flash" : "attention_naive");
    mask_tile_.reset();
    if (flash_) flash(kb);
    else naive(kb);
    return kb.build();
  }

  NumericsCheck check() override;

private:
  // c: query block and key chunk (array rows and columns, stationary width,
  // partitions); bk: keys per block (moving free size, one PSUM bank of
  // fp32, whole chunks); dn: output columns per PSUM tile.
  std::int64_t c_ = 0, bk_ = 0, nd_ = 0, dn_ = 0, nv_ = 0, nkc_ = 0, sets_ = 0;

  void plan(const arch::HwConfig& cfg, const KernelArgs& args) {
    if (auto why = attention_fits(cfg, args)) throw KernelError(*why);
    const AttentionPlan p(cfg, S_, D_, flash_, causal_, params_.integer("key_chunks"),
                          static_cast<std::int64_t>(arch::size_of(in_)));
    c_ = p.c;
    bk_ = p.bk;
    nd_ = p.nd;
    dn_ = p.dn;
    nv_ = p.nv;
    nkc_ = p.nkc;
    sets_ = params_.integer("kv_sets");
    rescale_engine_ = params_.has("rescale") && params_.choice("rescale") == "scalar" ? arch::Engine::Scalar
                                                                                  : arch::Engine::Vector;
  }

private:
  struct HeadTiles {
    std::vector<Tile> kt;  // per head-dim chunk: [dd, S]
    Tile v;                // [c, nkc * D]: key chunk i at columns i * D
  };

  // Loads head h's K^T (one DMA per head-dim chunk, S elements a partition)
  // and V (key chunks of c rows side by side, one strided DMA for the whole
  // chunks and one for a partial last chunk).
  void load_keys(KernelBuilder& kb, const HeadTiles& t, std::int64_t h) {
    for (std::int64_t j = 0; j < nd_; ++j) {
      const std::int64_t dd = std::min(c_, D_ - j * c_);
      kb.dma(fit(t.kt[j], dd, S_), kt_.region(h * D_ + j * c_, 0, dd, S_));
    }
  }
  void load_values(KernelBuilder& kb, const HeadTiles& t, std::int64_t h) {
    const std::int64_t full = S_ / c_, rem = S_ % c_;
    if (full > 0) {
      View vw{&v_, h * S_ * D_, {c_, full, D_}, {D_, c_ * D_, 1}};
      kb.dma(t.v.slice(0, u32(c_), 0, u32(full * D_)), vw);
    }
    if (rem > 0) kb.dma(t.v.slice(0, u32(rem), u32(full * D_), u32(D_)), v_.region(h * S_ + full * c_, 0, rem, D_));
  }

  std::vector<HeadTiles> head_tiles(KernelBuilder& kb) {
    std::vector<HeadTiles> sets(static_cast<std::size_t>(sets_));
    for (std::int64_t s = 0; s < sets_; ++s) {
      for (std::int64_t j = 0; j < nd_; ++j) sets[s].kt.push_back(kb.sbuf(fmt::format("kt{}_{}", s, j), c_, S_, in_));
      sets[s].v = kb.sbuf(fmt::format("v{}", s), c_, nkc_ * D_, in_);
    }
    return sets;
  }

  // Loads the Q^T chunks of queries [q0, q0 + qq) into `q` ([c, nd * c]).
  std::vector<Tile> load_queries(KernelBuilder& kb, const Tile& q, std::int64_t h, std::int64_t q0, std::int64_t qq) {
    std::vector<Tile> out;
    for (std::int64_t j = 0; j < nd_; ++j) {
      const std::int64_t dd = std::min(c_, D_ - j * c_);
      out.push_back(q.slice(0, u32(dd), u32(j * c_), u32(qq)));
      kb.dma(out.back(), qt_.region(h * D_ + j * c_, q0, dd, qq));
    }
    return out;
  }

  // Scores of a query block against keys [k0, k0 + kn) into PSUM.
  void scores(KernelBuilder& kb, const Tile& s, const std::vector<Tile>& q, const HeadTiles& t, std::int64_t k0,
              std::int64_t kn) {
    for (std::int64_t j = 0; j < nd_; ++j) kb.matmul(s, q[j], t.kt[j].slice(0, q[j].partitions, u32(k0), u32(kn)), j > 0);
  }

  // The additive causal mask of a block whose keys start `offset` after its
  // queries: mask[p, i] = kMasked where i - p + offset > 0, else 0, which is
  // the table's window from column offset + bk. The table is loaded into
  // SBUF at first use (one DMA); every block's mask is a slice of it.
  // Only the columns the kernel's blocks use are loaded: for short
  // sequences that is much less than the table.
  std::optional<Tile> mask_tile_;
  std::int64_t mask_lo_ = 0;  // the smallest offset loaded
  Tile mask(KernelBuilder& kb, std::int64_t offset) {
    offset = std::min(offset, c_);  // from c on, every key of the block is masked
    if (!mask_tile_) {
      // Offsets of masked blocks: k0 - q0 for every (query block, key block) that needs a mask.
      std::int64_t lo = c_, hi = -bk_;
      for (std::int64_t q0 = 0; q0 < S_; q0 += c_)
        for (std::int64_t k0 = 0; k0 < S_; k0 += bk_)
          if (needs_mask(q0, k0, std::min(bk_, S_ - k0))) {
            lo = std::min(lo, std::min(k0 - q0, c_));
            hi = std::max(hi, std::min(k0 - q0, c_));
          }
      mask_lo_ = lo;
      mask_tile_ = kb.sbuf("mask", c_, hi - lo + bk_, DType::Bf16);
      kb.dma(*mask_tile_, mask_table_.region(0, lo + bk_, c_, hi - lo + bk_));
    }
    return mask_tile_->slice(0, u32(c_), u32(offset - mask_lo_), u32(bk_));
  }
  bool needs_mask(std::int64_t q0, std::int64_t k0, std::int64_t kn) const {
    return causal_ && k0 + kn - 1 > q0;  // the last key is after the first query
  }

  // P^T V for the keys of P [qq, kn] (the input dtype, SBUF), a key block
  // (up to bk keys, bk / c chunks) at a time, in two parts. transpose_p:
  // each chunk of P is transposed through the array into its columns of one
  // PSUM tile, and one engine (copy_engine) copies the whole tile to SBUF in P's
  // dtype in one instruction (exact: the values are of that dtype). multiply_v: each chunk of P^T
  // is the stationary operand of the multiply by V's rows of its keys.
  // Who copies step `step`'s P^T out of PSUM: the vector engine for
  // vector_pt_copies of every four steps, spread evenly, the scalar engine
  // for the rest. Both engines are near their bound in the flash loop (the
  // scalar engine's exp, the vector engine's max and rescale), so the copy
  // is what balances them.
  arch::Engine copy_engine(std::size_t step) const {
    const auto k = static_cast<std::size_t>(params_.integer("vector_pt_copies"));
    const std::size_t i = step % 4;
    return (i + 1) * k / 4 > i * k / 4 ? arch::Engine::Vector : arch::Engine::Scalar;
  }
  void transpose_p(KernelBuilder& kb, const Tile& p, std::int64_t qq, std::int64_t kn, const Tile& pt_ps) {
    for (std::int64_t i = 0; i * c_ < kn; ++i) {
      const std::int64_t ki = std::min(c_, kn - i * c_);
      kb.transpose(pt_ps.slice(0, u32(ki), u32(i * c_), u32(qq)), p.slice(0, u32(qq), u32(i * c_), u32(ki)));
    }
  }
  void copy_pt(KernelBuilder& kb, std::int64_t kn, const Tile& pt_ps, const Tile& pt_sb, arch::Engine engine) {
    const std::int64_t rows = std::min(c_, kn), cols = ceil_div(kn, c_) * c_;
    kb.copy(fit(pt_sb, rows, cols), fit(pt_ps, rows, cols), engine);
  }
  void multiply_v(KernelBuilder& kb, const Tile& pt_sb, std::int64_t qq, std::int64_t k0, std::int64_t kn,
                  const HeadTiles& t, const std::vector<Tile>& o, bool overwrite) {
    for (std::int64_t i = 0; i * c_ < kn; ++i) {
      const std::int64_t ki = std::min(c_, kn - i * c_), chunk = (k0 + i * c_) / c_;
      const Tile ts = pt_sb.slice(0, u32(ki), u32(i * c_), u32(qq));
      for (std::int64_t n = 0; n < nv_; ++n) {
        const std::int64_t dv = std::min(dn_, D_ - n * dn_);
        kb.matmul(fit(o[n], qq, dv), ts, t.v.slice(0, u32(ki), u32(chunk * D_ + n * dn_), u32(dv)),
                  !(overwrite && i == 0));
      }
    }
  }

  // O[rows of queries q0.., all D] = o_ps / l (o_ps itself without l),
  // evacuated to SBUF and stored.
  void store(KernelBuilder& kb, const std::vector<Tile>& o_ps, const Tile& o_sb, const Tile* l, std::int64_t h,
             std::int64_t q0, std::int64_t qq) {
    for (std::int64_t n = 0; n < nv_; ++n) {
      const std::int64_t dv = std::min(dn_, D_ - n * dn_);
      const Tile out = o_sb.slice(0, u32(qq), u32(n * dn_), u32(dv));
      if (l) kb.tensor_scalar(out, fit(o_ps[n], qq, dv), arch::AluOp::Divide, *l);
      else kb.copy(out, fit(o_ps[n], qq, dv));
    }
    kb.dma(o_.region(h * S_ + q0, 0, qq, D_), fit(o_sb, qq, D_));
  }

  // One step of the flash loop: a query block against one key block.
  struct Step {
    std::int64_t h, q0, qq, k0, kn;
    bool first, last;  // the query block's first and last key block
    int qslot;         // the query block's index mod 3: its Q tile, accumulator and row sums
  };

  // The flash kernel as a software pipeline over steps t (a query block
  // against a key block). Per step:
  //   A1: S = Q K^T (tensor);
  //   A2: mask; row max, n_new = min(n_old, -scale rowmax) (vector; n =
  //       -scale m, the running max as the exponentials' bias); P =
  //       exp(scale S + n_new) with its row sums, alpha = exp(n_new - n_old)
  //       (scalar);
  //   B:  P transposed (tensor), copied to SBUF (scalar, or vector: copy_engine);
  //   C1: O *= alpha, l = l alpha + rowsum (vector, or scalar: rescale);
  //   C2: O += P^T V (tensor); after a query block's last key block, O / l
  //       (vector) stored.
  // Tick t issues A1(t + 3), B(t + 1), C1(t), the scalar engine's copy of
  // t + 1, A2(t + 2), the vector engine's copy of t + 1, C2(t): each
  // engine's in-order stream then holds work whose inputs were produced a
  // tick earlier, and the chain S -> max -> exp -> transpose of one step
  // overlaps the other steps' work instead of serialising the engines.
  // Tiles a step holds from one stage to the next rotate over enough buffers
  // (2 or 3) that a later step never overwrites them early.
  void flash(KernelBuilder& kb) {
    const std::vector<HeadTiles> sets = head_tiles(kb);
    const auto three = [&](const char* name, auto make) {
      std::vector<Tile> v;
      for (int i = 0; i < 3; ++i) v.push_back(make(fmt::format("{}{}", name, i)));
      return v;
    };
    const auto q = three("q", [&](const std::string& n) { return kb.sbuf(n, c_, nd_ * c_, in_); });
    const auto s_ps = three("s", [&](const std::string& n) { return kb.psum(n, c_, bk_); });
    const Tile s_sb[2] = {kb.sbuf("sm0", c_, bk_, DType::Fp32), kb.sbuf("sm1", c_, bk_, DType::Fp32)};
    const Tile p[2] = {kb.sbuf("p0", c_, bk_, p_), kb.sbuf("p1", c_, bk_, p_)};
    const Tile pt_ps[2] = {kb.psum("pt0", c_, bk_), kb.psum("pt1", c_, bk_)};
    const Tile pt_sb[2] = {kb.sbuf("pts0", c_, bk_, in_), kb.sbuf("pts1", c_, bk_, in_)};
    std::vector<Tile> o_ps[3];
    for (int s = 0; s < 3; ++s)
      for (std::int64_t n = 0; n < nv_; ++n) o_ps[s].push_back(kb.psum(fmt::format("o{}_{}", s, n), c_, std::min(dn_, D_)));
    const auto o_sb = three("out", [&](const std::string& n) { return kb.sbuf(n, c_, D_, DType::Fp32); });
    // Per-query state, one value per partition.
    const auto col = [&](const std::string& n) { return kb.sbuf(n, c_, 1, DType::Fp32); };
    const Tile m[2] = {col("m0"), col("m1")}, mx[2] = {col("mx0"), col("mx1")};
    const auto rs = three("rs", col), alpha = three("alpha", col), l = three("l", col);

    std::vector<Step> steps;
    int qslot = 0;
    for (std::int64_t h = h_lo_; h < h_hi_; ++h)
      for (std::int64_t q0 = 0; q0 < S_; q0 += c_, qslot = (qslot + 1) % 3) {
        const std::int64_t qq = std::min(c_, S_ - q0);
        // Causal: keys after the block's last query contribute nothing.
        const std::int64_t keys = causal_ ? std::min(S_, q0 + qq) : S_;
        for (std::int64_t k0 = 0; k0 < keys; k0 += bk_)
          steps.push_back({h, q0, qq, k0, std::min(bk_, keys - k0), k0 == 0, k0 + bk_ >= keys, qslot});
      }
    const auto head = [&](const Step& st) -> const HeadTiles& { return sets[static_cast<std::size_t>(st.h % sets_)]; };

    std::vector<Tile> qj;  // Q^T chunks of the query block stage A1 is on
    const auto stage_a1 = [&](std::size_t t) {
      const Step& st = steps[t];
      if (st.first && st.q0 == 0) load_keys(kb, head(st), st.h);
      if (st.first) qj = load_queries(kb, q[st.qslot], st.h, st.q0, st.qq);
      scores(kb, fit(s_ps[t % 3], st.qq, st.kn), qj, head(st), st.k0, st.kn);
    };
    const auto stage_a2 = [&](std::size_t t) {
      const Step& st = steps[t];
      const int b = static_cast<int>(t % 2);
      const Tile sp = fit(s_ps[t % 3], st.qq, st.kn);
      Tile src = sp;
      if (needs_mask(st.q0, st.k0, st.kn)) {
        src = fit(s_sb[b], st.qq, st.kn);
        kb.tensor_tensor(src, sp, fit(mask(kb, st.k0 - st.q0), st.qq, st.kn), arch::AluOp::Add);
      }
      // The running max is kept negated and scaled, n = -scale m, which is
      // the bias of the exponentials as it is: n_new = min(n_old, -scale rowmax).
      const Tile mxt = fit(mx[b], st.qq, 1), rst = fit(rs[t % 3], st.qq, 1);
      const Tile n_old = fit(m[b ^ 1], st.qq, 1), n_new = fit(m[b], st.qq, 1), lt = fit(l[st.qslot], st.qq, 1);
      kb.reduce(mxt, src, arch::AluOp::Max);
      if (st.first) kb.tensor_scalar(n_new, mxt, arch::AluOp::Multiply, -scale_);
      else kb.tensor_scalar(n_new, mxt, arch::AluOp::Multiply, -scale_, arch::AluOp::Min, n_old);
      // P = exp(scale S + n_new) and its row sums (straight into l on a query block's first key block).
      kb.activation(fit(p[b], st.qq, st.kn), src, arch::ActFunc::Exp, scale_, 0.0f, &n_new, st.first ? &lt : &rst);
      if (st.first) return;
      // alpha = exp(n_new - n_old) = exp(scale (m_old - m_new)) rescales what came before.
      kb.activation(fit(alpha[t % 3], st.qq, 1), n_old, arch::ActFunc::Exp, -1.0f, 0.0f, &n_new);
    };
    const auto stage_b = [&](std::size_t t) {
      const Step& st = steps[t];
      transpose_p(kb, fit(p[t % 2], st.qq, st.kn), st.qq, st.kn, pt_ps[t % 2]);
    };
    const auto stage_b_copy = [&](std::size_t t, arch::Engine on) {
      if (copy_engine(t) == on) copy_pt(kb, steps[t].kn, pt_ps[t % 2], pt_sb[t % 2], on);
    };
    const auto stage_c1 = [&](std::size_t t) {
      const Step& st = steps[t];
      if (st.first) return;
      const Tile at = fit(alpha[t % 3], st.qq, 1), lt = fit(l[st.qslot], st.qq, 1), rst = fit(rs[t % 3], st.qq, 1);
      const arch::Engine on_engine = rescale_engine_;
      for (std::int64_t n = 0; n < nv_; ++n) {
        const Tile on = fit(o_ps[st.qslot][n], st.qq, std::min(dn_, D_ - n * dn_));
        kb.tensor_scalar(on, on, arch::AluOp::Multiply, at, arch::AluOp::Bypass, nullptr, 0.0f, on_engine);
      }
      kb.tensor_scalar(lt, lt, arch::AluOp::Multiply, at, arch::AluOp::Add, &rst, 0.0f, on_engine);
    };
    const auto stage_c2 = [&](std::size_t t) {
      const Step& st = steps[t];
      multiply_v(kb, pt_sb[t % 2], st.qq, st.k0, st.kn, head(st), o_ps[st.qslot], st.first);
      if (st.last) {
        const Tile lq = fit(l[st.qslot], st.qq, 1);
        store(kb, o_ps[st.qslot], o_sb[st.qslot], &lq, st.h, st.q0, st.qq);
      }
    };
    // Tick u issues A1(u), B(u - 2), C1(u - 3), A2(u - 1), C2(u - 3).
    const auto n = static_cast<std::int64_t>(steps.size());
    const auto at = [&](std::int64_t t, const auto& stage) {
      if (t >= 0 && t < n) stage(static_cast<std::size_t>(t));
    };
    // V of head h goes into the set of head h - sets once the last P V of
    // that head was issued (C2 lags A1 by three steps, so with short heads
    // or one set the load cannot simply follow K^T), and no later than the
    // head's first P V.
    std::vector<std::int64_t> last_step(static_cast<std::size_t>(H_), -1);
    for (std::int64_t t = 0; t < n; ++t) last_step[static_cast<std::size_t>(steps[t].h)] = t;
    std::int64_t v_loaded = h_lo_, c2_done = -1, a1_head = -1;
    const auto load_due_values = [&] {
      for (; v_loaded < h_hi_ && v_loaded <= a1_head; ++v_loaded) {
        const std::int64_t prev = v_loaded - sets_;
        if (prev >= h_lo_ && last_step[static_cast<std::size_t>(prev)] > c2_done) break;
        load_values(kb, sets[static_cast<std::size_t>(v_loaded % sets_)], v_loaded);
      }
    };
    for (std::int64_t u = 0; u < n + 3; ++u) {
      if (u < n) a1_head = steps[u].h;
      at(u, stage_a1);
      load_due_values();
      at(u - 2, stage_b);
      at(u - 3, stage_c1);
      at(u - 2, [&](std::size_t t) { stage_b_copy(t, arch::Engine::Scalar); });
      at(u - 1, stage_a2);
      at(u - 2, [&](std::size_t t) { stage_b_copy(t, arch::Engine::Vector); });
      at(u - 3, stage_c2);
      if (u - 3 >= 0) c2_done = u - 3;
      load_due_values();
    }
  }

  void naive(KernelBuilder& kb) {
    const std::vector<HeadTiles> sets = head_tiles(kb);
    const Tile q[2] = {kb.sbuf("q0", c_, nd_ * c_, in_), kb.sbuf("q1", c_, nd_ * c_, in_)};
    const Tile s_ps[2] = {kb.psum("s0", c_, bk_), kb.psum("s1", c_, bk_)};
    const Tile s_sb[2] = {kb.sbuf("sc0", c_, bk_, DType::Fp32), kb.sbuf("sc1", c_, bk_, DType::Fp32)};
    // Step 1: scaled, masked scores to HBM.
    int turn = 0, qs = 0;
    for (std::int64_t h = h_lo_; h < h_hi_; ++h) {
      const HeadTiles& t = sets[static_cast<std::size_t>(h % sets_)];
      load_keys(kb, t, h);
      for (std::int64_t q0 = 0; q0 < S_; q0 += c_, qs ^= 1) {
        const std::int64_t qq = std::min(c_, S_ - q0);
        const std::vector<Tile> qj = load_queries(kb, q[qs], h, q0, qq);
        for (std::int64_t k0 = 0; k0 < S_; k0 += bk_, turn ^= 1) {
          const std::int64_t kn = std::min(bk_, S_ - k0);
          const Tile sp = fit(s_ps[turn], qq, kn), sb = fit(s_sb[turn], qq, kn);
          scores(kb, sp, qj, t, k0, kn);
          kb.tensor_scalar(sb, sp, arch::AluOp::Multiply, scale_);
          if (needs_mask(q0, k0, kn)) kb.tensor_tensor(sb, sb, fit(mask(kb, k0 - q0), qq, kn), arch::AluOp::Add);
          kb.dma(scores_.region(h * S_ + q0, k0, qq, kn), sb);
        }
      }
    }
    // Step 2: per row block, softmax over the whole row (max, exp with row
    // sums, divide), then P V.
    const Tile row = kb.sbuf("row", c_, S_, DType::Fp32), e = kb.sbuf("e", c_, S_, DType::Fp32);
    const Tile pn = kb.sbuf("pn", c_, S_, p_);
    const Tile mx = kb.sbuf("mx", c_, 1, DType::Fp32), l = kb.sbuf("l", c_, 1, DType::Fp32);
    const Tile pt_ps[2] = {kb.psum("pt0", c_, bk_), kb.psum("pt1", c_, bk_)};
    const Tile pt_sb[2] = {kb.sbuf("pts0", c_, bk_, in_), kb.sbuf("pts1", c_, bk_, in_)};
    std::vector<Tile> o_ps;
    for (std::int64_t n = 0; n < nv_; ++n) o_ps.push_back(kb.psum(fmt::format("o{}", n), c_, std::min(dn_, D_)));
    const Tile o_sb = kb.sbuf("out", c_, D_, DType::Fp32);
    int tturn = 0;
    for (std::int64_t h = h_lo_; h < h_hi_; ++h) {
      const HeadTiles& t = sets[static_cast<std::size_t>(h % sets_)];
      load_values(kb, t, h);
      for (std::int64_t q0 = 0; q0 < S_; q0 += c_) {
        const std::int64_t qq = std::min(c_, S_ - q0);
        const Tile r = fit(row, qq, S_), ex = fit(e, qq, S_), pq = fit(pn, qq, S_);
        const Tile mq = fit(mx, qq, 1), lq = fit(l, qq, 1);
        kb.dma(r, scores_.region(h * S_ + q0, 0, qq, S_));
        kb.reduce(mq, r, arch::AluOp::Max);
        kb.tensor_scalar(mq, mq, arch::AluOp::Multiply, -1.0f);
        kb.activation(ex, r, arch::ActFunc::Exp, 1.0f, 0.0f, &mq, &lq);
        kb.tensor_scalar(pq, ex, arch::AluOp::Divide, lq);
        for (std::int64_t k0 = 0; k0 < S_; k0 += bk_, tturn ^= 1) {
          const std::int64_t kn = std::min(bk_, S_ - k0);
          transpose_p(kb, pq.slice(0, u32(qq), u32(k0), u32(kn)), qq, kn, pt_ps[tturn]);
          copy_pt(kb, kn, pt_ps[tturn], pt_sb[tturn], copy_engine(static_cast<std::size_t>(k0 / bk_)));
          multiply_v(kb, pt_sb[tturn], qq, k0, kn, t, o_ps, k0 == 0);
        }
        store(kb, o_ps, o_sb, nullptr, h, q0, qq);
      }
    }
  }

  Device& dev_;
  bool flash_, causal_;
  std::int64_t S_, D_, H_;
  // The heads this program computes: all of them, or an SPMD instance's run.
  std::int64_t h_lo_ = 0, h_hi_ = 0;
  float scale_;
  Params params_;
  arch::Engine rescale_engine_ = arch::Engine::Vector;
  DType in_;  // Q, K, V and P^T
  DType p_;   // P, which the array transposes: bf16 where the inputs are fp8
  Tensor qt_, kt_, v_, o_, scores_, mask_table_;
  std::vector<float> q_, k_, vv_;
};

// Reference in double from the same inputs (held in the input dtype), with
// a per-element bound derived from the roundings the kernel makes
// (docs/kernels.md, attention; docs/formats.md for the dtypes). Each weight
// p_j = exp(scale s_j - scale m) reaches numerator and denominator with a
// relative error of at most
//   dp = scale E + 4 u32 M + 2 u32 + nb (4 u32 M + 3 u32)
// (E = gamma_D sum_d |q k|: the fp32 score, gamma_(D+1) for fp32 inputs,
// whose products round; 4 u32 M: scaling, the max subtraction and its sum,
// M = max scale |s|; 2 u32: exp; per rescale block, alpha's argument and exp
// and the multiply by it); the numerator adds the rounding of P to the input
// dtype (u_p: 2^-8 bf16, 0 for fp32, which keeps P's fp32 value; fp8 P
// rounds twice, to bf16 for the array's transpose and then to the input
// format: u_bf16 + u_8 + u_bf16 u_8, u_8 2^-4 e4m3, 2^-3 e5m2) and its fp32
// accumulation over the keys (gamma_(S+nb), one more for fp32 products),
// the denominator its own (gamma_(S+2nb)); the row
// sums are of P before its rounding, so u_p counts once. With
// e = 2 dp + u_p + u32 + gamma_(S+nb) + gamma_(S+2nb):
//   |O - O_ref| <= (e / (1 - e) + 2 u32) sum_j w_j |v_j|
//                  + d_p sum_j |v_j| / (sum_j exp(s_j - s_max) (1 - e)) + S 2^-126 max|v|
// (w the exact softmax weights; d_p: fp8's error for a weight below its
// normal range, half its subnormal spacing, which a later rescale only
// shrinks; the last term: flushed subnormal weights). naive divides P by l
// before the multiply (its u32 and u_p are in e) and has no rescales (nb = 0).
NumericsCheck Attention::check() {
  const auto got = dev_.download(o_);
  const double scale = scale_, u = unit_roundoff(DType::Fp32);
  const std::int64_t nb = flash_ ? ceil_div(S_, bk_) : 0;
  const bool fp32 = in_ == DType::Fp32, fp8 = arch::size_of(in_) == 1;
  const std::int64_t rounded_products = fp32 ? 1 : 0;
  const double gamma_d = gamma(D_ + rounded_products), gamma_num = gamma(S_ + nb + rounded_products),
               gamma_den = gamma(S_ + 2 * nb);
  const double u16 = unit_roundoff(DType::Bf16);
  const double u_p = fp32 ? 0.0 : fp8 ? rounded_twice(u16, unit_roundoff(in_)) : u16;
  const double d_p = fp8 ? absolute_roundoff(in_) : 0.0;
  double max_v = 0;
  for (float x : vv_) max_v = std::max(max_v, std::fabs(double{x}));
  // Queries in blocks: Q K^T of a block against every key, then its
  // weights times V, each a vectorized reference product (reference_matmul)
  // over the same terms in the same order as a loop over d, then over j.
  const auto S = static_cast<std::size_t>(S_), D = static_cast<std::size_t>(D_);
  constexpr std::size_t kQueries = 64;
  const std::size_t per_head = (S + kQueries - 1) / kQueries;
  const auto blocks = [&](std::size_t first, std::size_t last, WorstElement& worst) {
    std::vector<double> wt(S * kQueries), vsum((S + 1) * D), row_e(kQueries), row_sum(kQueries);
    ReferenceProduct scores, pv;
    std::optional<ReferenceRight> kt, v;  // of head h
    std::size_t h = 0;
    for (std::size_t b = first; b < last; ++b) {
      if (b == first || b / per_head != h) {
        h = b / per_head;
        kt.emplace(&k_[h * D * S], D, S);
        v.emplace(&vv_[h * S * D], S, D);
        // vsum[keys * D + n]: sum of |v[j, n]| over the first `keys` keys.
        for (std::size_t j = 0; j < S; ++j)
          for (std::size_t n = 0; n < D; ++n)
            vsum[(j + 1) * D + n] = vsum[j * D + n] + std::fabs(double{vv_[(h * S + j) * D + n]});
      }
      const std::size_t i0 = b % per_head * kQueries, nq = std::min(kQueries, S - i0);
      reference_matmul(&q_[h * D * S + i0], nq, S, *kt, scores);
      for (std::size_t ii = 0; ii < nq; ++ii) {
        const std::size_t i = i0 + ii, keys = causal_ ? i + 1 : S;
        const double* dot = &scores.sum[ii * S];
        const double* mag = &scores.mag[ii * S];
        double smax = -INFINITY, M = 0, E = 0;
        for (std::size_t j = 0; j < keys; ++j) {
          const double sj = scale * dot[j];
          smax = std::max(smax, sj);
          M = std::max(M, std::fabs(sj));
          E = std::max(E, scale * gamma_d * mag[j]);
        }
        double sum = 0;
        for (std::size_t j = 0; j < keys; ++j) sum += (wt[j * nq + ii] = std::exp(scale * dot[j] - smax));
        for (std::size_t j = 0; j < keys; ++j) wt[j * nq + ii] /= sum;
        for (std::size_t j = keys; j < S; ++j) wt[j * nq + ii] = 0;  // masked: adds nothing
        const double dp = E + 4 * u * M + 2 * u + nb * (4 * u * M + 3 * u);
        row_e[ii] = 2 * dp + u_p + u + gamma_num + gamma_den;
        row_sum[ii] = sum;
      }
      reference_matmul(wt.data(), nq, *v, pv);
      for (std::size_t ii = 0; ii < nq; ++ii) {
        const std::size_t i = i0 + ii, keys = causal_ ? i + 1 : S;
        const double e = row_e[ii];
        for (std::size_t n = 0; n < D; ++n) {
          const double tol = (e / (1 - e) + 2 * u) * pv.mag[ii * D + n] +
                             d_p * vsum[keys * D + n] / (row_sum[ii] * (1 - e)) + S_ * kMinNormalFp32 * max_v;
          const std::size_t k = (h * S + i) * D + n;
          worst.add(k, got[k], pv.sum[ii * D + n], tol);
        }
      }
    }
  };
  const WorstElement worst = worst_over_blocks(static_cast<std::size_t>(H_) * per_head, blocks);
  return worst.result([&](std::size_t k) {
    return fmt::format("O[head {}, query {}, {}]", k / (S * D), k / D % S, k % D);
  });
}

}  // namespace

KernelSpec attention_spec() {
  KernelSpec spec;
  spec.name = "attention";
  spec.description =
      "O = softmax(Q K^T / sqrt(D) [+ causal mask]) V per head; Q^T, K^T [H*D,S], V [H*S,D] bf16 (or --dtype fp32, "
      "fp8; P rounded to it for P V); O [H*S,D] fp32";
  spec.dtypes = {"bf16", "fp32", "fp8_e4m3", "fp8_e5m2"};
  spec.variants = {
      {"flash", "keys stream by in blocks; running max and sum per query; scores never leave the core"},
      {"flash_causal", "flash with key j > query i masked (blocks past the diagonal skipped)"},
      {"naive", "scores written to HBM, read back a row block at a time for the softmax, then P V"},
      {"naive_causal", "naive with key j > query i masked"},
  };
  spec.shape = {{"S", 1024, "sequence length (queries and keys)"}, {"D", 64, "head dimension"}, {"H", 2, "heads"}};
  spec.shard_dims = {"H"};
  spec.params = {
      TunableParam::integer("key_chunks", 1, 1024, 1,
                            "keys per block, in chunks of the array width; default: as many as one matmul and PSUM "
                            "bank take")
          .derived([](const ParamContext& ctx) -> ParamValue { return max_key_chunks(ctx.config); })
          .useful_up_to([](const ParamContext& ctx) { return max_key_chunks(ctx.config); }),
      TunableParam::choice("rescale", {"vector", "scalar"}, "vector",
                           "engine of the flash loop's O *= alpha and l = l alpha + rowsum (tensor_scalar)")
          .only_for({"flash", "flash_causal"}),
      TunableParam::integer("vector_pt_copies", 0, 4, 0,
                            "of every 4 key blocks' P^T copies out of PSUM, how many the vector engine makes (the "
                            "scalar engine the rest)")
          .searched_at_every_value(),
      // K^T and V of a head stay resident; two sets so the next head's load
      // overlaps this head's work, one when only one fits.
      TunableParam::integer("kv_sets", 1, 2, 1,
                            "sets of a head's K^T and V kept in SBUF (2: the next head loads while this one works); "
                            "default: 2 when they fit")
          .derived([](const ParamContext& ctx) -> ParamValue {
            const std::int64_t key_chunks =
                ctx.given.has("key_chunks") ? ctx.given.integer("key_chunks") : max_key_chunks(ctx.config);
            const AttentionPlan p(ctx.config, ctx.shape.at("S"), ctx.shape.at("D"),
                                  ctx.variant.rfind("flash", 0) == 0, ctx.variant.find("causal") != std::string::npos,
                                  key_chunks,
                                  static_cast<std::int64_t>(arch::size_of(input_format(ctx.dtype, ctx.config).dtype)));
            return std::int64_t{2 * p.per_head + p.working <= ctx.config.sbuf.partition_kib * 1024 ? 2 : 1};
          }),
  };
  spec.fits = attention_fits;
  spec.make = [](Device& dev, const KernelArgs& args) { return std::make_unique<Attention>(dev, args); };
  return spec;
}

TESSERA_REGISTER_KERNEL(attention_spec);

}  // namespace tessera::kernels
