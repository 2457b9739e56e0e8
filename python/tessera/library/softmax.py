"""py_softmax: softmax along rows in Python, step for step the C++ kernel of
kernels/softmax/softmax.cpp (rows on partitions, row blocks rotating through
`bufs` buffers, the fused and unfused variants), building the same program."""

import numpy as np

import tessera
from tessera import Act, Alu, Param, fp32


@tessera.register_kernel
class Softmax(tessera.Kernel):
    name = "py_softmax"
    description = "out[r,:] = exp(x[r,:] - max) / sum(exp(x[r,:] - max)), fp32 [R,C] (Python)"
    variants = [
        ("fused", "exp with the row's -max as bias, summing as it goes; one multiply by 1/sum"),
        ("unfused", "max, subtract, exp, sum, divide: one pass each"),
    ]
    shape = [("R", 1024, "rows"), ("C", 1024, "row length (the softmax axis)")]
    params = [Param.integer("bufs", 1, 8, 6,
                            "row blocks in flight (load, compute, store overlap), at most (fewer when SBUF is short)")]

    def setup(self):
        self.R, self.C = self.shape["R"], self.shape["C"]
        self.x = self.device.allocate("x", [self.R, self.C], fp32)
        self.out = self.device.allocate("out", [self.R, self.C], fp32)
        if self.device.no_data:
            return
        self.xv = self.rng.uniform(-4, 4, (self.R, self.C)).astype(np.float32)
        self.device.upload(self.x, self.xv)

    def build(self, kb):
        cfg, R, C = kb.config, self.R, self.C
        P = cfg.sbuf.partitions
        per_buffer = C * 4 + 4 * 4  # the row, then four [P, 1] statistics
        buffers = min(self.params["bufs"], cfg.sbuf.partition_kib * 1024 // per_buffer)
        if buffers < 1:
            raise tessera.KernelError(f"py_softmax: a row of C={C} fp32 needs {per_buffer} bytes in one SBUF "
                                      f"partition, which has {cfg.sbuf.partition_kib * 1024}")
        sets = [dict(x=kb.sbuf(f"x{i}", P, C, fp32), mx=kb.sbuf(f"max{i}", P, 1, fp32),
                     nmx=kb.sbuf(f"negmax{i}", P, 1, fp32), sum=kb.sbuf(f"sum{i}", P, 1, fp32),
                     rs=kb.sbuf(f"rsum{i}", P, 1, fp32))
                for i in range(buffers)]
        # Each block's load is issued buffers - 1 blocks ahead in program order.
        blocks = (R + P - 1) // P

        def rows_of(b):
            return min(P, R - b * P)

        def load(b):
            if b < blocks:
                kb.dma(sets[b % buffers]["x"][:rows_of(b), :C], self.x[b * P:b * P + rows_of(b), :C])

        for b in range(buffers - 1):
            load(b)

        def block(b):
            pr = rows_of(b)
            return b * P, pr, {k: t[:pr, :] for k, t in sets[b % buffers].items()}

        def head(k):
            _, _, s = k
            kb.reduce(s["mx"], s["x"], Alu.max)
            kb.tensor_scalar(s["nmx"], s["mx"], Alu.multiply, -1.0)
            kb.activation(s["x"], s["x"], Act.exp, 1.0, 0.0, s["nmx"], s["sum"])
            kb.activation(s["rs"], s["sum"], Act.reciprocal)

        def tail(k):
            r0, pr, s = k
            kb.tensor_scalar(s["x"], s["x"], Alu.multiply, s["rs"])
            kb.dma(self.out[r0:r0 + pr, :C], s["x"])

        # fused: block b + 1's max and exp are issued before block b's final
        # multiply, so the vector engine has the next max to work on while the
        # scalar engine exponentiates. Needs two buffers.
        if self.variant == "fused" and buffers >= 2:
            if blocks > 0:
                head(block(0))
            for b in range(blocks):
                load(b + buffers - 1)
                if b + 1 < blocks:
                    head(block(b + 1))
                tail(block(b))
            return
        for b in range(blocks):
            load(b + buffers - 1)
            k = block(b)
            if self.variant == "fused":
                head(k)
                tail(k)
                continue
            r0, pr, s = k
            x, mx, sm = s["x"], s["mx"], s["sum"]
            kb.reduce(mx, x, Alu.max)
            kb.tensor_scalar(x, x, Alu.subtract, mx)
            kb.activation(x, x, Act.exp)
            kb.reduce(sm, x, Alu.add)
            kb.tensor_scalar(x, x, Alu.divide, sm)
            kb.dma(self.out[r0:r0 + pr, :C], x)

    # The reference in float64; the bound is the C++ kernel's (softmax.cpp):
    # gamma_n relative, n = C + 5 + (m - x_i) + max_j (m - x_j).
    def reference(self):
        x = self.xv.astype(np.float64)
        m = x.max(axis=1, keepdims=True)
        e = np.exp(x - m)
        ref = e / e.sum(axis=1, keepdims=True)
        n = np.ceil(self.C + 5 + (m - x) + (m - x).max(axis=1, keepdims=True))
        u = 2.0 ** -24
        self._bound = n * u / (1 - n * u) * ref
        return [(self.out, ref)]

    def tolerance(self, expected):
        return self._bound
