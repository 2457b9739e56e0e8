"""py_gemm: C[M,N] = A[M,K] @ B[K,N] in Python, step for step the C++ kernel
of kernels/gemm/gemm.cpp (the same four variants, tiles, loops, labels and
tunable parameters), so both build the same program byte for byte."""

import numpy as np

import tessera
from tessera import Act, Alu, Engine, Param, bf16, fp32  # noqa: F401


def ceil_div(a, b):
    return (a + b - 1) // b


class Tiling:
    """Tile sizes the hardware allows: K on partitions (array rows), M up to
    the stationary limit, N up to the moving limit and one PSUM bank of fp32."""

    def __init__(self, cfg, M, N, K):
        self.tk = min(cfg.tensor.rows, cfg.sbuf.partitions)
        self.tm = min(cfg.tensor.cols, cfg.tensor.stationary_max_free)
        self.tn = min(cfg.tensor.moving_max_free, cfg.psum.bank_kib * 1024 // 4)
        self.mt, self.nt, self.kt = ceil_div(M, self.tm), ceil_div(N, self.tn), ceil_div(K, self.tk)


def fits(budget, bytes_per_tile):
    return budget // bytes_per_tile if bytes_per_tile > 0 else 0


def clamp(v, lo, hi):
    return max(lo, min(v, hi))


def default_blocking(ctx):
    """(bm, bn, bk) as the C++ kernel derives them, around what the run sets."""
    cfg, s, given = ctx.config, ctx.shape, ctx.given
    t = Tiling(cfg, s["M"], s["N"], s["K"])
    partition_bytes = cfg.sbuf.partition_kib * 1024
    if ctx.variant == "blocked_mn":
        a_col, b_col, budget = t.kt * t.tm * 2, t.kt * t.tn * 2, partition_bytes - 2 * t.tn * 4
        bn = given.get("bn", clamp(fits(budget // 2, b_col), 1, t.nt))
        bm = given.get("bm", clamp(fits(budget - min(bn, t.nt) * b_col, a_col), 1, t.mt))
        return bm, bn, 1
    banks = cfg.psum.banks
    bn = given.get("bn", clamp(banks // 4, 1, t.nt))
    bm = given.get("bm", clamp(banks // (2 * min(bn, t.nt)), 1, t.mt))
    out_bytes = 2 * t.tn * 4

    def k_block(bm, bn):
        per_k = 2 * (min(bm, t.mt) * t.tm * 2 + min(bn, t.nt) * t.tn * 2)
        return clamp(fits(partition_bytes - out_bytes, per_k), 1, t.kt)

    bk = given.get("bk", k_block(bm, bn))
    per_k = 2 * (min(bm, t.mt) * t.tm * 2 + min(bn, t.nt) * t.tn * 2)
    if min(bk, t.kt) * per_k + out_bytes > partition_bytes and "bm" not in given and "bn" not in given:
        bm = bn = 1
        bk = given.get("bk", k_block(1, 1))
    return bm, bn, bk


def _tiles(dim):
    def f(ctx):
        t = Tiling(ctx.config, ctx.shape["M"], ctx.shape["N"], ctx.shape["K"])
        return {"M": t.mt, "N": t.nt, "K": t.kt}[dim]

    return f


@tessera.register_kernel
class Gemm(tessera.Kernel):
    name = "py_gemm"
    description = "C[M,N] = A[M,K] @ B[K,N]; A given transposed ([K,M]); bf16 in, fp32 out (Python)"
    variants = [
        ("blocked_mnk", "blocks of bm x bn output tiles, K in blocks of bk tiles, every load double-buffered"),
        ("naive", "every tile loaded right before its multiply, one buffer each"),
        ("hoisted", "loads hoisted out of the K loop, one buffer per K tile"),
        ("blocked_mn", "blocks of bm x bn output tiles whose A and B tiles (all of K) are loaded once"),
    ]
    shape = [("M", 256, "rows of A and C"), ("N", 512, "columns of B and C"), ("K", 256, "contraction")]
    params = [
        Param.integer("bm", 1, 1024, 1, "output tiles along M per block (tiles of the array's stationary width)")
        .derived(lambda ctx: default_blocking(ctx)[0]).useful_up_to(_tiles("M")).only_for(["blocked_mn", "blocked_mnk"]),
        Param.integer("bn", 1, 1024, 1, "output tiles along N per block (tiles of one PSUM bank)")
        .derived(lambda ctx: default_blocking(ctx)[1]).useful_up_to(_tiles("N")).only_for(["blocked_mn", "blocked_mnk"]),
        Param.integer("bk", 1, 1024, 1, "K tiles per block (tiles of the array's rows), each loaded into one of two "
                      "buffer sets")
        .derived(lambda ctx: default_blocking(ctx)[2]).useful_up_to(_tiles("K")).only_for(["blocked_mnk"]),
        Param.choice("evacuate", ["vector", "scalar"], "vector", "the engine that copies accumulators from PSUM to SBUF"),
        Param.choice("psum", ["fp32", "bf16"], "fp32", "accumulator dtype: bf16 rounds the sum once per matmul, where "
                     "the config has tensor.psum_bf16 (numerics, not tuned)")
        .only_for(["blocked_mnk", "naive"]).changes_numerics(),
    ]

    def setup(self):
        M, N, K = self.shape["M"], self.shape["N"], self.shape["K"]
        self.M, self.N, self.K = M, N, K
        # A arrives transposed, [K, M], as NKI's matmul takes it.
        self.at = self.device.allocate("at", [K, M], bf16)
        self.b = self.device.allocate("b", [K, N], bf16)
        self.c = self.device.allocate("c", [M, N], fp32)
        self.model_flops = 2.0 * M * N * K
        if self.device.no_data:
            return
        # Rounded on the host (tessera.to_bf16) so the reference sees exactly the device's inputs.
        self.at_bits = tessera.to_bf16(self.rng.uniform(-1, 1, (K, M)).astype(np.float32))
        self.b_bits = tessera.to_bf16(self.rng.uniform(-1, 1, (K, N)).astype(np.float32))
        self.device.upload(self.at, self.at_bits)
        self.device.upload(self.b, self.b_bits)

    # The reference in float64 from the same bf16 inputs; each element within
    # gamma_K * sum_k |a_mk b_kn| (fp32 sums of exact products).
    def reference(self):
        at = tessera.from_bf16(self.at_bits).astype(np.float64)
        b = tessera.from_bf16(self.b_bits).astype(np.float64)
        self._magnitude = np.abs(at).T @ np.abs(b)
        return [(self.c, at.T @ b)]

    # bf16 accumulators (psum=bf16) add one bf16 rounding per matmul into a
    # cell, kt of them: gamma_kt(u') (1 + gamma_K), u' = u_bf16 + u32 + u_bf16 u32.
    def tolerance(self, expected):
        g = tessera.gamma(self.K)
        if self.params.get("psum") == "bf16":
            u16, u32 = 2.0 ** -8, 2.0 ** -24
            g += tessera.gamma(self.t.kt, u16 + u32 + u16 * u32) * (1 + g)
        return g * self._magnitude

    def acc_dtype(self):
        return bf16 if self.params.get("psum") == "bf16" else fp32

    def build(self, kb):
        self.t = Tiling(kb.config, self.M, self.N, self.K)
        getattr(self, self.variant)(kb)

    # Views of the current tiles, clipped at the matrix edges.
    def at_tile(self, k0, m0):
        t = self.t
        return self.at[k0:k0 + min(t.tk, self.K - k0), m0:m0 + min(t.tm, self.M - m0)]

    def b_tile(self, k0, n0):
        t = self.t
        return self.b[k0:k0 + min(t.tk, self.K - k0), n0:n0 + min(t.tn, self.N - n0)]

    @staticmethod
    def rows_of(i, tile, total):
        return min(tile, total - i * tile)

    def store(self, kb, acc, out, m0, n0, mm, nn):
        o = out[:mm, :nn]
        kb.copy(o, acc[:mm, :nn], Engine.scalar if self.params["evacuate"] == "scalar" else Engine.vector)
        kb.dma(self.c[m0:m0 + mm, n0:n0 + nn], o)

    def naive(self, kb):
        t, rows_of = self.t, self.rows_of
        a, b = kb.sbuf("a", t.tk, t.tm, bf16), kb.sbuf("b", t.tk, t.tn, bf16)
        acc, out = kb.psum("acc", t.tm, t.tn, self.acc_dtype()), kb.sbuf("out", t.tm, t.tn, fp32)
        for mi in range(t.mt):
            for ni in range(t.nt):
                mm, nn = rows_of(mi, t.tm, self.M), rows_of(ni, t.tn, self.N)
                kb.label(f"C tile m{mi} n{ni}")
                for ki in range(t.kt):
                    kk = rows_of(ki, t.tk, self.K)
                    kb.dma(a[:kk, :mm], self.at_tile(ki * t.tk, mi * t.tm))
                    kb.dma(b[:kk, :nn], self.b_tile(ki * t.tk, ni * t.tn))
                    kb.matmul(acc[:mm, :nn], a[:kk, :mm], b[:kk, :nn], ki > 0)
                self.store(kb, acc, out, mi * t.tm, ni * t.tn, mm, nn)

    def hoisted(self, kb):
        t, rows_of = self.t, self.rows_of
        a, b = [], []
        for ki in range(t.kt):
            a.append(kb.sbuf(f"a{ki}", t.tk, t.tm, bf16))
            b.append(kb.sbuf(f"b{ki}", t.tk, t.tn, bf16))
        acc, out = kb.psum("acc", t.tm, t.tn), kb.sbuf("out", t.tm, t.tn, fp32)
        for mi in range(t.mt):
            kb.label(f"C row block m{mi}")
            mm = rows_of(mi, t.tm, self.M)
            for ki in range(t.kt):
                kb.dma(a[ki][:rows_of(ki, t.tk, self.K), :mm], self.at_tile(ki * t.tk, mi * t.tm))
            for ni in range(t.nt):
                nn = rows_of(ni, t.tn, self.N)
                for ki in range(t.kt):
                    kb.dma(b[ki][:rows_of(ki, t.tk, self.K), :nn], self.b_tile(ki * t.tk, ni * t.tn))
                for ki in range(t.kt):
                    kk = rows_of(ki, t.tk, self.K)
                    kb.matmul(acc[:mm, :nn], a[ki][:kk, :mm], b[ki][:kk, :nn], ki > 0)
                self.store(kb, acc, out, mi * t.tm, ni * t.tn, mm, nn)

    def blocked_mn(self, kb):
        t, rows_of, cfg = self.t, self.rows_of, kb.config
        a_col, b_col = t.kt * t.tm * 2, t.kt * t.tn * 2
        budget = cfg.sbuf.partition_kib * 1024 - 2 * t.tn * 4
        bm, bn = min(self.params["bm"], t.mt), min(self.params["bn"], t.nt)
        if bm * a_col + bn * b_col > budget:
            raise tessera.KernelError(f"py_gemm blocked_mn: bm={bm} A and bn={bn} B columns of K={self.K} need "
                                      f"{bm * a_col + bn * b_col} bytes per partition, SBUF has {budget}")
        a = [[kb.sbuf(f"a{i}_{ki}", t.tk, t.tm, bf16) for ki in range(t.kt)] for i in range(bm)]
        b = [[kb.sbuf(f"b{j}_{ki}", t.tk, t.tn, bf16) for ki in range(t.kt)] for j in range(bn)]
        acc = [kb.psum("acc0", t.tm, t.tn), kb.psum("acc1", t.tm, t.tn)]
        out = [kb.sbuf("out0", t.tm, t.tn, fp32), kb.sbuf("out1", t.tm, t.tn, fp32)]
        turn = 0
        for m0 in range(0, t.mt, bm):
            for n0 in range(0, t.nt, bn):
                bms, bns = min(bm, t.mt - m0), min(bn, t.nt - n0)
                kb.label(f"C block m{m0} n{n0}")
                for i in range(bms):
                    for ki in range(t.kt):
                        kb.dma(a[i][ki][:rows_of(ki, t.tk, self.K), :rows_of(m0 + i, t.tm, self.M)],
                               self.at_tile(ki * t.tk, (m0 + i) * t.tm))
                for j in range(bns):
                    for ki in range(t.kt):
                        kb.dma(b[j][ki][:rows_of(ki, t.tk, self.K), :rows_of(n0 + j, t.tn, self.N)],
                               self.b_tile(ki * t.tk, (n0 + j) * t.tn))
                for i in range(bms):
                    for j in range(bns):
                        mm, nn = rows_of(m0 + i, t.tm, self.M), rows_of(n0 + j, t.tn, self.N)
                        for ki in range(t.kt):
                            kk = rows_of(ki, t.tk, self.K)
                            kb.matmul(acc[turn][:mm, :nn], a[i][ki][:kk, :mm], b[j][ki][:kk, :nn], ki > 0)
                        self.store(kb, acc[turn], out[turn], (m0 + i) * t.tm, (n0 + j) * t.tn, mm, nn)
                        turn ^= 1

    def blocked_mnk(self, kb):
        t, rows_of = self.t, self.rows_of
        bm, bn = min(self.params["bm"], t.mt), min(self.params["bn"], t.nt)
        bk = min(self.params["bk"], t.kt)
        a, b = [], []
        for s in range(2):  # two buffer sets, each A's tiles then B's
            a.append([[kb.sbuf(f"a{s}_{i}_{k}", t.tk, t.tm, bf16) for k in range(bk)] for i in range(bm)])
            b.append([[kb.sbuf(f"b{s}_{j}_{k}", t.tk, t.tn, bf16) for k in range(bk)] for j in range(bn)])
        acc = [[kb.psum(f"acc{s}_{i}", t.tm, t.tn, self.acc_dtype()) for i in range(bm * bn)] for s in range(2)]
        out = [kb.sbuf("out0", t.tm, t.tn, fp32), kb.sbuf("out1", t.tm, t.tn, fp32)]
        buf = accset = outturn = 0
        for m0 in range(0, t.mt, bm):
            for n0 in range(0, t.nt, bn):
                bms, bns = min(bm, t.mt - m0), min(bn, t.nt - n0)
                for k0 in range(0, t.kt, bk):
                    bks = min(bk, t.kt - k0)
                    kb.label(f"C block m{m0} n{n0}, K block k{k0}")
                    for i in range(bms):
                        for k in range(bks):
                            kb.dma(a[buf][i][k][:rows_of(k0 + k, t.tk, self.K), :rows_of(m0 + i, t.tm, self.M)],
                                   self.at_tile((k0 + k) * t.tk, (m0 + i) * t.tm))
                    for j in range(bns):
                        for k in range(bks):
                            kb.dma(b[buf][j][k][:rows_of(k0 + k, t.tk, self.K), :rows_of(n0 + j, t.tn, self.N)],
                                   self.b_tile((k0 + k) * t.tk, (n0 + j) * t.tn))
                    for i in range(bms):
                        for k in range(bks):
                            kk, mm = rows_of(k0 + k, t.tk, self.K), rows_of(m0 + i, t.tm, self.M)
                            for j in range(bns):
                                nn = rows_of(n0 + j, t.tn, self.N)
                                kb.matmul(acc[accset][i * bn + j][:mm, :nn], a[buf][i][k][:kk, :mm],
                                          b[buf][j][k][:kk, :nn], k0 + k > 0)
                    buf ^= 1
                kb.label(f"C block m{m0} n{n0}, store")
                for i in range(bms):
                    for j in range(bns):
                        self.store(kb, acc[accset][i * bn + j], out[outturn], (m0 + i) * t.tm, (n0 + j) * t.tn,
                                   rows_of(m0 + i, t.tm, self.M), rows_of(n0 + j, t.tn, self.N))
                        outturn ^= 1
                accset ^= 1
