"""The registry from Python: library kernels, tunable parameters, the fits
check, and kernels written in Python registered beside the C++ ones."""
import numpy as np
import pytest

import tessera
from tessera import Act, Param, fp32


def test_the_library_kernels_are_there_with_their_parameters():
    names = [k.name for k in tessera.kernels()]
    for name in ("gemm", "softmax", "attention", "elementwise"):
        assert name in names
    gemm = tessera.kernel("gemm")
    assert gemm.variant_names()[:4] == ["blocked_mnk", "naive", "hoisted", "blocked_mn"]
    assert "fully_optimized" in gemm.variant_names()
    bm = next(p for p in gemm.params if p.name == "bm")
    assert (bm.min, bm.max, bm.default, bm.variants) == (1, 1024, "auto", ["blocked_mn", "blocked_mnk"])
    with pytest.raises(tessera.KernelError, match="unknown kernel 'gem'.*did you mean 'gemm'"):
        tessera.kernel("gem")


def test_a_kernel_runs_in_each_of_its_dtypes():
    mlp = tessera.kernel("mlp")
    assert mlp.dtypes == ["bf16", "fp32", "fp8_e4m3", "fp8_e5m2"] and mlp.dtype_variants == []
    assert tessera.kernel("gemm").dtype_variants == ["blocked_mnk", "naive"]

    shape = {"T": 64, "D": 32, "F": 64}

    def run():
        report = tessera.run_kernel(tessera.Device("tiny", fidelity="tlm"), "mlp", "silu", shape, dtype="fp8_e4m3")
        return report.ok, report.correct

    def args():
        return tessera.instantiate(tessera.Device("tiny", no_data=True), "mlp", shape=shape, dtype="fp32").args.dtype

    def refused():
        try:
            tessera.instantiate(tessera.Device("tiny", no_data=True), "gemm", "tiled", dtype="fp8_e4m3")
        except tessera.KernelError as e:
            return str(e)
        return "(no error)"

    assert tessera.isolated(run) == (True, True)
    assert tessera.isolated(args) == "fp32"
    assert tessera.isolated(refused).startswith("gemm tiled: --dtype fp8_e4m3: this variant reads bf16 inputs only")


def test_parameters_resolve_and_bad_ones_are_the_cpp_errors():
    p = tessera.resolve_params("neuroncore-v2", "gemm", shape={"M": 1024, "N": 1024, "K": 1024})
    assert p == {"bm": 2, "bn": 2, "bk": 8, "evacuate": "vector", "psum": "fp32"}
    assert tessera.resolve_params("neuroncore-v2", "gemm", params="bm=1")["bm"] == 1
    with pytest.raises(tessera.KernelError, match=r"^kernel 'gemm': parameter bm=0 is outside its legal range 1..1024$"):
        tessera.resolve_params("tiny", "gemm", params={"bm": 0})
    with pytest.raises(tessera.KernelError, match="variant 'naive' does not read parameter 'bk'"):
        tessera.resolve_params("tiny", "gemm", "naive", params={"bk": 2})


def test_fits_says_why_without_simulating():
    assert tessera.check_fits("small", "gemm") is None
    why = tessera.check_fits("small", "gemm", shape={"M": 2048, "N": 2048, "K": 2048}, params={"bm": 64, "bk": 64})
    assert "bytes of SBUF per partition" in why
    assert "PSUM accumulators" in tessera.check_fits("small", "gemm", params={"bm": 8})
    assert "needs 4112 bytes in one SBUF partition, which has 2048" in tessera.check_fits(
        "small", "softmax", overrides={"sbuf.partition_kib": 2})


class Scale(tessera.Kernel):
    """out = 3 x, fp32, rows on partitions."""
    name = "py_test_scale"
    description = "out = 3 x (a test kernel)"
    variants = [("scalar", "on the scalar engine"), ("vector", "on the vector engine")]
    shape = [("R", 64, "rows"), ("C", 96, "columns")]
    params = [Param.integer("F", 1, 4096, 32, "columns per tile"),
              Param.choice("wrong", ["no", "yes"], "no", "yes: the kernel computes 3 x + 1")]
    tolerance = 1e-6

    def setup(self):
        R, C = self.shape["R"], self.shape["C"]
        self.x = self.device.allocate("x", [R, C], fp32)
        self.out = self.device.allocate("out", [R, C], fp32)
        self.xv = self.rng.uniform(-1, 1, (R, C)).astype(np.float32)
        self.device.upload(self.x, self.xv)

    def build(self, kb):
        R, C, F = self.shape["R"], self.shape["C"], self.params["F"]
        P = kb.config.sbuf.partitions
        t = kb.sbuf("t", P, F, fp32)
        bias = 1.0 if self.params["wrong"] == "yes" else 0.0
        for r0 in range(0, R, P):
            for c0 in range(0, C, F):
                rows, cols = min(P, R - r0), min(F, C - c0)
                tile = t[:rows, :cols]
                kb.dma(tile, self.x[r0:r0 + rows, c0:c0 + cols])
                if self.variant == "scalar":
                    kb.activation(tile, tile, Act.identity, scale=3.0, bias=bias)
                else:
                    kb.tensor_scalar(tile, tile, tessera.Alu.multiply, 3.0, tessera.Alu.add, bias)
                kb.dma(self.out[r0:r0 + rows, c0:c0 + cols], tile)

    def reference(self):
        return [(self.out, 3 * self.xv.astype(np.float64))]


tessera.register_kernel(Scale)


def test_a_python_kernel_is_registered_beside_the_library():
    spec = tessera.kernel("py_test_scale")
    assert spec.variant_names() == ["scalar", "vector"]
    assert [(s.name, s.default) for s in spec.shape] == [("R", 64), ("C", 96)]
    assert tessera.resolve_params("tiny", "py_test_scale") == {"F": 32, "wrong": "no"}


@pytest.mark.parametrize("variant", ["scalar", "vector"])
def test_a_python_kernel_runs_and_checks_against_its_numpy_reference(variant):
    r = tessera.run("py_test_scale", config="small", variant=variant, shape={"R": 40, "C": 70}, params={"F": 16},
                    fidelity="tlm")
    assert r["ok"] and r["checked"] and r["correct"], r["error"]
    assert r["params"] == {"F": 16, "wrong": "no"}
    assert r["tolerance"] == 1e-6


def test_a_python_kernel_that_computes_wrong_fails_naming_the_element():
    r = tessera.run("py_test_scale", config="tiny", params={"wrong": "yes"}, fidelity="tlm")
    assert r["checked"] and not r["correct"]
    assert r["error"].startswith("numerics mismatch: out[") and r["error"].endswith("bound 1e-06")


def test_a_name_taken_twice_is_an_error():
    class Again(Scale):
        name = "gemm"

    with pytest.raises(tessera.KernelError, match="kernel 'gemm' is already registered by the kernel library"):
        tessera.register_kernel(Again)


def test_a_python_kernels_timing_ignores_data():
    a = tessera.run("py_test_scale", config="small", fidelity="tlm")
    b = tessera.run("py_test_scale", config="small", fidelity="tlm", no_data=True)
    assert a["time_ns"] == b["time_ns"] and not b["checked"]
