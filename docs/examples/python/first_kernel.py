"""A first kernel in Python: y = relu(2 x - 0.5) over an fp32 [R, C] tensor.

  PYTHONPATH=build/python python3 docs/examples/python/first_kernel.py
  build/tessera run --plugin docs/examples/python/first_kernel.py --config small --kernel scaled_relu
"""
import numpy as np

import tessera
from tessera import Act, Param, fp32


@tessera.register_kernel
class ScaledRelu(tessera.Kernel):
    name = "scaled_relu"
    description = "y = relu(2 x - 0.5), fp32 [R,C]"
    variants = [("scalar", "the whole function in one scalar-engine activation")]
    shape = {"R": 256, "C": 1024}
    params = [Param.integer("F", 1, 65536, 512, "columns per tile, at most"),
              Param.integer("bufs", 1, 8, 2, "tiles in flight (load, compute and store overlap)")]

    def setup(self):  # allocate the tensors in HBM, upload the inputs
        R, C = self.shape["R"], self.shape["C"]
        self.x = self.device.allocate("x", [R, C], fp32)
        self.y = self.device.allocate("y", [R, C], fp32)
        self.xv = self.rng.uniform(-1, 1, (R, C)).astype(np.float32)
        self.device.upload(self.x, self.xv)

    def build(self, kb):  # one KernelBuilder call per instruction; loops in Python
        R, C = self.shape["R"], self.shape["C"]
        P, F = kb.config.sbuf.partitions, min(self.params["F"], C)
        tiles = [kb.sbuf(f"t{i}", P, F, fp32) for i in range(self.params["bufs"])]
        turn = 0
        for r0 in range(0, R, P):  # rows on partitions
            for c0 in range(0, C, F):
                rows, cols = min(P, R - r0), min(F, C - c0)
                t = tiles[turn % len(tiles)][:rows, :cols]
                kb.label(f"rows {r0}, columns {c0}")
                kb.dma(t, self.x[r0:r0 + rows, c0:c0 + cols])                 # HBM -> SBUF
                kb.activation(t, t, Act.relu, scale=2.0, bias=-0.5)           # scalar engine
                kb.dma(self.y[r0:r0 + rows, c0:c0 + cols], t)                 # SBUF -> HBM
                turn += 1

    def reference(self):  # [(output tensor, expected values)], numpy in float64
        return [(self.y, np.maximum(2 * self.xv.astype(np.float64) - 0.5, 0))]

    def tolerance(self, expected):  # per element: two fp32 roundings (the scale, the bias)
        return tessera.gamma(2) * (2 * np.abs(self.xv) + 0.5)


if __name__ == "__main__":
    report = tessera.run("scaled_relu", config="small", fidelity="tlm", params={"F": 256})
    print(f"{report['kernel']} on {report['config']}: {report['time_ns'] / 1000:.2f} us, "
          f"bound by {report['bound_by']}, numerics {'match' if report['correct'] else 'MISMATCH'} "
          f"(max error {report['max_abs_error']:.2g} within {report['tolerance']:.2g})")
