"""KernelBuilder from Python: every engine instruction, tensor and tile
slicing, labels, errors, the report, the trace and waveform options."""
import json
import os

import numpy as np
import pytest

import tessera
from tessera import Act, Alu, Engine, bf16, fp32


def test_tensor_slices_are_the_views_region_makes():
    dev = tessera.Device("tiny")
    t = dev.allocate("t", [10, 20], fp32)
    v = t[2:5, 4:12]
    r = t.region(2, 4, 3, 8)
    assert (v.offset, v.sizes, v.strides) == (r.offset, r.sizes, r.strides) == (44, [3, 8], [20, 1])
    assert (t[3].sizes, t[3].offset) == ([1, 20], 60)
    assert t[:, ::2].strides == [20, 2] and t[:, ::2].sizes == [10, 10]
    assert t[-1, :].offset == 180
    with pytest.raises(IndexError, match="index 10 is outside 0..9"):
        t[10]
    with pytest.raises(IndexError, match="negative steps"):
        t[::-1]
    # A broadcast to every partition: partition stride 0.
    b = tessera.View(t, 0, [8, 20], [0, 1])
    assert b.strides == [0, 1] and b.tensor.name == "t"


def test_tile_slices_are_the_tiles_slice_makes():
    dev = tessera.Device("tiny")
    kb = tessera.KernelBuilder(dev, "k")
    a = kb.sbuf("a", 8, 64, bf16)
    s = a[2:6, 16:48]
    assert (s.partition, s.partitions, s.offset, s.free) == (2, 4, 32, 32)
    assert repr(a[:, :]) == repr(a.slice(0, 8, 0, 64))
    with pytest.raises(IndexError, match="unit steps"):
        a[::2]


def test_builder_errors_are_the_cpp_messages():
    dev = tessera.Device("tiny")
    kb = tessera.KernelBuilder(dev, "k")
    with pytest.raises(tessera.KernelError, match=r"sbuf\('x', 9, 16, bf16\): 9 partitions; SBUF has 8"):
        kb.sbuf("x", 9, 16, bf16)
    with pytest.raises(tessera.KernelError, match="overrun a PSUM bank"):
        kb.psum("acc", 8, 100000)
    a, b = kb.sbuf("a", 8, 8, bf16), kb.sbuf("b", 4, 8, bf16)
    acc = kb.psum("acc", 8, 8)
    with pytest.raises(tessera.KernelError, match="reads stationary tile 'a' before anything wrote it"):
        kb.matmul(acc, a, b)
    kb.memset(a, 1.0)
    kb.memset(b, 1.0)
    with pytest.raises(tessera.KernelError, match="contraction mismatch"):
        kb.matmul(acc, a, b)


def every_instruction(config):
    """One kernel calling every KernelBuilder instruction; returns its report and output."""
    dev = tessera.Device(config, fidelity="tlm", trace=True)
    P = 8
    x = dev.allocate("x", [P, 8], bf16)
    out = dev.allocate("out", [1, 8], fp32)
    dev.upload(x, np.arange(P * 8, dtype=np.float32).reshape(P, 8) / 64)
    kb = tessera.KernelBuilder(dev, "everything")
    kb.label("load")
    xs = kb.sbuf("xs", P, 8, bf16)
    kb.dma(xs, x[:, :])
    kb.label("tensor engine")
    acc = kb.psum("acc", 8, 8)
    kb.matmul(acc, xs, xs, accumulate=False)
    xt = kb.psum("xt", 8, P)
    kb.transpose(xt, xs)
    kb.label("vector engine")
    f = kb.sbuf("f", P, 8, fp32)
    g = kb.sbuf("g", P, 8, fp32)
    col = kb.sbuf("col", P, 1, fp32)
    kb.copy(f, acc)
    kb.copy(g, xt, Engine.scalar)
    kb.tensor_tensor(f, f, g, Alu.add)
    kb.tensor_scalar(f, f, Alu.multiply, 0.5)
    kb.reduce(col, f, Alu.max)
    kb.tensor_scalar(g, f, Alu.subtract, col)                      # per-partition scalar
    kb.tensor_scalar(g, g, Alu.add, col, Alu.multiply, None, 2.0)  # tile, then an immediate
    kb.tensor_scalar(g, g, Alu.multiply, 1.0, Alu.add, col)        # immediate, then a tile
    pred = kb.sbuf("pred", P, 8, fp32)
    kb.memset(pred, 1.0)
    kb.select(f, pred, f, g)
    kb.label("scalar engine")
    s = kb.sbuf("s", P, 1, fp32)
    kb.activation(f, f, Act.exp, scale=0.01, bias=0.0, bias_tile=col, accumulate=s)
    kb.label("gpsimd engine")
    ramp = kb.sbuf("ramp", P, 8, fp32)
    kb.iota(ramp, 0.0, 1.0, 0.0)
    kb.tensor_tensor(f, f, ramp, Alu.add)
    row = kb.sbuf("row", 1, 8, fp32)
    kb.partition_reduce(row, f, Alu.add)
    kb.dma(out[:, :], row)
    kb.release(ramp)
    program = kb.build()
    report = dev.run(program)
    return {
        "report": report.to_dict(),
        "summary": str(report),
        "disassembly": program.disassemble(),
        "labels": [sorted(set(x for x in engine if x)) for engine in program.labels],
        "trace": dev.trace(),
        "out": dev.download(out),
    }


def test_every_instruction_builds_runs_and_is_traced():
    r = tessera.isolated(every_instruction, "tiny")
    report = r["report"]
    assert report["ok"], report["error"]
    assert report["kernel"] == "everything"
    assert "everything  on tiny (tlm)" in r["summary"]
    for op in ("MultiplyMoving", "TensorTensor", "TensorScalar", "Activation", "Iota", "Select"):
        assert op.lower() in r["disassembly"].lower(), op
    assert "gpsimd engine" in r["labels"][int(Engine.gpsimd)]
    assert {"tensor engine"} <= set(r["labels"][int(Engine.tensor)])
    assert any(e.get("ph") == "X" for e in r["trace"]["traceEvents"])
    assert np.isfinite(r["out"]).all()


def scalar_engine_tensor_scalar(config):
    """The same tensor_scalar on the vector and the scalar engine; returns both results and the disassembly."""
    dev = tessera.Device(config, fidelity="tlm")
    P = 8
    x = dev.allocate("x", [P, 16], fp32)
    out = dev.allocate("out", [2 * P, 16], fp32)
    dev.upload(x, np.linspace(-3, 3, P * 16, dtype=np.float32).reshape(P, 16))
    kb = tessera.KernelBuilder(dev, "two_engines")
    xs, col = kb.sbuf("xs", P, 16, fp32), kb.sbuf("col", P, 1, fp32)
    on_vector, on_scalar = kb.sbuf("v", P, 16, fp32), kb.sbuf("s", P, 16, fp32)
    kb.dma(xs, x[:, :])
    kb.reduce(col, xs, Alu.max)
    kb.tensor_scalar(on_vector, xs, Alu.subtract, col, Alu.multiply, None, 0.3)
    kb.tensor_scalar(on_scalar, xs, Alu.subtract, col, Alu.multiply, None, 0.3, engine=Engine.scalar)
    kb.dma(out[0:P, :], on_vector)
    kb.dma(out[P:2 * P, :], on_scalar)
    program = kb.build()
    report = dev.run(program)
    assert report.ok, report.error
    return {"out": dev.download(out), "disassembly": program.disassemble()}


def test_tensor_scalar_runs_on_the_scalar_engine_with_the_same_bits():
    r = tessera.isolated(scalar_engine_tensor_scalar, "tiny")
    assert "scalar TensorScalar" in r["disassembly"] and "vector TensorScalar" in r["disassembly"]
    out = np.asarray(r["out"], dtype=np.float32)
    assert np.array_equal(out[:8].view(np.uint32), out[8:].view(np.uint32))


def test_the_report_is_an_object_and_a_dict():
    def run():
        dev = tessera.Device("small", fidelity="tlm")
        report = tessera.run_kernel(dev, "gemm", shape={"M": 64, "N": 128, "K": 64})
        d = report.to_dict()
        return {"dict": d, "defaults": tessera.resolve_params("small", "gemm", shape={"M": 64, "N": 128, "K": 64}), "attrs": (report.time_ns, report.hfu_percent, report.bound_by(), report.correct),
                "item": report["engines"]["tensor"]["instructions"], "json": json.dumps(d)}

    r = tessera.isolated(run)
    d = r["dict"]
    assert r["attrs"] == (d["time_ns"], d["hfu_percent"], d["bound_by"], d["correct"])
    assert d["params"] == r["defaults"] and set(d["params"]) == {"bk", "bm", "bn", "evacuate", "psum"}
    assert d["shape"] == {"K": 64, "M": 64, "N": 128}
    assert r["item"] > 0
    assert d["checked"] and d["correct"]


def test_a_waveform_is_written_on_request(tmp_path):
    waves = str(tmp_path / "run.fst")

    def run():
        dev = tessera.Device("tiny", fidelity="rtl", waves=waves, waves_scope="tensor:1")
        report = tessera.run_kernel(dev, "gemm", "naive", {"M": 8, "N": 8, "K": 8})
        return report.ok, dev.waves_save_file

    ok, save = tessera.isolated(run)
    assert ok
    assert os.path.getsize(waves) > 0
    assert save.endswith(".gtkw") and os.path.exists(save)
