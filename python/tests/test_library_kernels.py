"""The Python GEMM and softmax (tessera.library) build the same programs as
the C++ ones, byte for byte: every engine's instruction stream, every DMA
ring's descriptors and every label, on several generations and shapes with
odd edges. They also take the same parameter defaults, and run correct."""
import re

import pytest

import tessera
import tessera.library.gemm  # noqa: F401  (registers py_gemm)
import tessera.library.softmax  # noqa: F401  (registers py_softmax)
from tessera import Engine


def program(config, kernel, variant, shape, params):
    dev = tessera.Device(config, no_data=True)
    return tessera.instantiate(dev, kernel, variant, shape, params).build()


def assert_identical(a, b):
    for e in Engine.__members__.values():
        assert a.encode(e) == b.encode(e), f"{e} stream differs"
    assert a.rings == b.rings
    assert a.labels == b.labels
    assert a.ring_labels == b.ring_labels
    assert (a.matmul_flops, a.model_flops) == (b.matmul_flops, b.model_flops)
    # The same listing, under each kernel's own program name (its first line),
    # each line naming its own kernel's source: C++ lines for one, the Python
    # module's for the other.
    cpp_lines, py_lines = (re.findall(r"; at (\S+):\d+", p.disassemble()) for p in (a, b))
    assert cpp_lines and len(cpp_lines) == len(py_lines)
    assert all(f.startswith("kernels/") and f.endswith(".cpp") for f in cpp_lines), set(cpp_lines)
    assert all(f.startswith("tessera/library/") and f.endswith(".py") for f in py_lines), set(py_lines)
    assert strip_sites(a.disassemble()) == strip_sites(b.disassemble())


def strip_sites(listing):
    """The listing without its program name (the first line) and call sites."""
    return re.sub(r"at \S+:\d+(, )?", "", listing.split("\n", 1)[1])


GEMM_CASES = [("tiny", {"M": 21, "N": 100, "K": 37}), ("small", {"M": 64, "N": 600, "K": 96}),
              ("neuroncore-v2", {"M": 256, "N": 640, "K": 384}), ("neuroncore-v2", {"M": 1000, "N": 1030, "K": 700})]


@pytest.mark.parametrize("variant", ["blocked_mnk", "naive", "hoisted", "blocked_mn"])
@pytest.mark.parametrize("config,shape", GEMM_CASES)
def test_python_gemm_builds_the_cpp_program(config, shape, variant):
    cpp = tessera.resolve_params(config, "gemm", variant, shape)
    assert tessera.resolve_params(config, "py_gemm", variant, shape) == cpp
    assert_identical(program(config, "gemm", variant, shape, None), program(config, "py_gemm", variant, shape, None))


@pytest.mark.parametrize("params", [{"bm": 1, "bn": 3, "bk": 2, "evacuate": "scalar"}, {"bm": 3, "bn": 1, "bk": 1}])
def test_python_gemm_builds_the_cpp_program_at_set_parameters(params):
    shape = {"M": 300, "N": 1100, "K": 500}
    assert_identical(program("neuroncore-v2", "gemm", "blocked_mnk", shape, params),
                     program("neuroncore-v2", "py_gemm", "blocked_mnk", shape, params))


# bf16 accumulators (tiny has tensor.psum_bf16): the same program as C++'s.
@pytest.mark.parametrize("variant", ["blocked_mnk", "naive"])
def test_python_gemm_with_bf16_psum_builds_the_cpp_program(variant):
    shape, params = {"M": 21, "N": 100, "K": 37}, {"psum": "bf16"}
    assert_identical(program("tiny", "gemm", variant, shape, params), program("tiny", "py_gemm", variant, shape, params))


SOFTMAX_CASES = [("tiny", {"R": 1, "C": 1}), ("tiny", {"R": 37, "C": 41}), ("small", {"R": 100, "C": 333}),
                 ("neuroncore-v2", {"R": 1000, "C": 1024})]


@pytest.mark.parametrize("variant", ["fused", "unfused"])
@pytest.mark.parametrize("config,shape", SOFTMAX_CASES)
def test_python_softmax_builds_the_cpp_program(config, shape, variant):
    assert_identical(program(config, "softmax", variant, shape, None),
                     program(config, "py_softmax", variant, shape, None))
    assert_identical(program(config, "softmax", variant, shape, {"bufs": 1}),
                     program(config, "py_softmax", variant, shape, {"bufs": 1}))


@pytest.mark.parametrize("kernel,shape", [("py_gemm", {"M": 70, "N": 130, "K": 90}), ("py_softmax", {"R": 50, "C": 77})])
def test_the_python_kernels_match_their_numpy_references(kernel, shape):
    for variant in tessera.kernel(kernel).variant_names():
        r = tessera.run(kernel, config="small", variant=variant, shape=shape, fidelity="tlm")
        assert r["ok"] and r["checked"] and r["correct"], (variant, r["error"])
