"""Tessera from Python: the C++ driver API (Device, KernelBuilder, Program,
RunReport) and the kernel registry, bound with pybind11 (docs/python.md).

Everything that simulates, builds or checks is the C++ implementation; this
file adds numpy-style slicing of tensors and tiles, the Kernel base class for
kernels written in Python, and `isolated`/`run` to start each simulation in
a process of its own (SystemC runs one simulation per process).
"""

import os as _os

# SystemC prints a banner when it starts unless told not to.
_os.environ.setdefault("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1")

import numpy as _np

from . import _tessera
from ._tessera import (  # noqa: F401  (the public API)
    Act,
    Alu,
    ConfigError,
    Device,
    DType,
    Engine,
    Instance,
    KernelArgs,
    KernelBuilder,
    KernelError,
    KernelSpec,
    Memory,
    NumericsCheck,
    Param,
    Program,
    RunReport,
    Tensor,
    Tile,
    View,
    check_fits,
    check_within,
    from_bf16,
    gamma,
    instantiate,
    kernel,
    kernels,
    load_plugin,
    resolve_params,
    run_kernel,
    to_bf16,
)

bf16 = DType.bf16
fp32 = DType.fp32


class Config(dict):
    """A resolved config by its schema's paths, as attributes or keys:
    cfg.sbuf.partitions == cfg["sbuf"]["partitions"] (docs/configs.md lists
    every key); cfg.derived holds the derived figures."""

    def __getattr__(self, key):
        try:
            value = self[key]
        except KeyError:
            raise AttributeError(f"config has no key '{key}' (it has {', '.join(sorted(self))})") from None
        return Config(value) if isinstance(value, dict) else value


def _config_property(obj):
    return Config(obj._config)


Device.config = property(_config_property, doc="The resolved config (tessera.Config)")
KernelBuilder.config = property(_config_property, doc="The config the kernel is built for (tessera.Config)")
_tessera.ParamContext.config = property(_config_property, doc="The config (tessera.Config)")

__all__ = [
    "Act", "Alu", "Config", "ConfigError", "Device", "DType", "Engine", "Instance", "Kernel", "KernelArgs", "KernelBuilder",
    "KernelError", "KernelSpec", "Memory", "NumericsCheck", "Param", "Program", "RunReport", "Tensor", "Tile", "View",
    "bf16", "check_fits", "check_within", "fp32", "from_bf16", "gamma", "instantiate", "isolated", "kernel", "kernels",
    "load_plugin", "register_kernel", "resolve_params", "run", "run_kernel", "to_bf16",
]


# --- Slicing ---------------------------------------------------------------------


def _span(index, size, what):
    """(start, count, step) of one index or slice along a dimension of `size`."""
    if isinstance(index, slice):
        start, stop, step = index.indices(size)
        if step < 1:
            raise IndexError(f"{what}: negative steps are not supported")
        return start, max(0, (stop - start + step - 1) // step), step
    i = int(index)
    if i < 0:
        i += size
    if not 0 <= i < size:
        raise IndexError(f"{what}: index {index} is outside 0..{size - 1}")
    return i, 1, 1


def _tensor_getitem(self, index):
    """t[r0:r1, c0:c1] (steps allowed): a View; an integer keeps its dimension (size 1)."""
    if not isinstance(index, tuple):
        index = (index,)
    if len(index) > len(self.shape):
        raise IndexError(f"tensor '{self.name}' has {len(self.shape)} dimensions, indexed with {len(index)}")
    index = index + (slice(None),) * (len(self.shape) - len(index))
    strides = self.strides()
    offset, sizes, steps = 0, [], []
    for d, (i, n) in enumerate(zip(index, self.shape)):
        start, count, step = _span(i, n, f"tensor '{self.name}' dimension {d}")
        offset += start * strides[d]
        sizes.append(count)
        steps.append(step * strides[d])
    return View(self, offset, sizes, steps)


def _tile_getitem(self, index):
    """tile[p0:p1, f0:f1]: a sub-tile (unit steps)."""
    if not isinstance(index, tuple):
        index = (index,)
    index = index + (slice(None),) * (2 - len(index))
    p, np_, pstep = _span(index[0], self.partitions, f"tile '{self.name}' partitions")
    f, nf, fstep = _span(index[1], self.free, f"tile '{self.name}' free axis")
    if pstep != 1 or fstep != 1:
        raise IndexError(f"tile '{self.name}': a tile slice takes unit steps")
    return self.slice(p, np_, f, nf)


Tensor.__getitem__ = _tensor_getitem
Tile.__getitem__ = _tile_getitem


# --- Kernels written in Python ---------------------------------------------------------


class Kernel:
    """A kernel written in Python, registered with `register_kernel`.

    Class attributes declare it as the registry sees it:
      name, description
      variants: [(name, description), ...] (the first is the default)
      shape:    {name: default} or [(name, default, description[, minimum]), ...]
      params:   [tessera.Param.integer(...), tessera.Param.choice(...), ...]
      tolerance: an absolute bound, or a method tolerance(self, expected) giving
                 one bound per element (numpy arrays)

    An instance is made for one run: `self.device`, `self.variant`,
    `self.shape`, `self.params` (every tunable the variant reads, resolved)
    and `self.rng` (numpy, seeded) are set; then
      setup(self):        allocate tensors, upload inputs
      build(self, kb):    the kernel, one KernelBuilder call per instruction
      reference(self):    [(tensor, expected numpy array), ...]
    """

    name = None
    description = ""
    variants = [("default", "the one variant")]
    shape = {}
    params = []
    tolerance = 0.0
    model_flops = 0.0  # the kernel's nominal FLOPs, for MFU (0: the matmul FLOPs)

    def __init__(self, device, args):
        self.device = device
        self.args = args
        self.variant = args.variant
        self.shape = dict(args.shape)
        self.params = dict(args.params)
        self.rng = _np.random.default_rng(args.seed)

    def setup(self):
        pass

    def build(self, kb):
        raise NotImplementedError(f"kernel {self.name}: build(kb) is not written")

    def reference(self):
        return []

    def bound(self, expected):
        t = type(self).tolerance
        if callable(t):
            return _np.asarray(t(self, expected), dtype=_np.float64)
        return _np.full(expected.shape, float(t), dtype=_np.float64)

    # Called by the registry (C++) for `tessera run`, regress and sweep.
    def _program(self):
        kb = KernelBuilder(self.device, self.name)
        self.build(kb)
        program = kb.build()
        if self.model_flops:
            program.model_flops = float(self.model_flops)
        return program

    def _check(self):
        """Every output against its reference; the first mismatch, else the closest call."""
        worst, worst_ratio = None, -1.0
        for tensor, expected in self.reference():
            expected = _np.asarray(expected, dtype=_np.float64)
            got = self.device.download(tensor)
            if got.shape != expected.shape:
                c = NumericsCheck()
                c.detail = f"{tensor.name}: a reference of shape {expected.shape} for a tensor of {got.shape}"
                return c
            shape = got.shape

            def where(i, tensor=tensor, shape=shape):
                return f"{tensor.name}[{', '.join(str(int(x)) for x in _np.unravel_index(i, shape))}]"

            c = check_within(got.ravel(), expected.ravel(), self.bound(expected).ravel(), where)
            if not c.correct:
                return c
            ratio = c.max_abs_error / c.tolerance if c.tolerance > 0 else 0.0
            if ratio > worst_ratio:
                worst, worst_ratio = c, ratio
        if worst is None:
            worst = NumericsCheck()
            worst.correct = True
        return worst


def _shape_entries(shape):
    if isinstance(shape, dict):
        return [(k, int(v), k, 1) for k, v in shape.items()]
    out = []
    for entry in shape:
        name, default, description = entry[0], int(entry[1]), entry[2] if len(entry) > 2 else entry[0]
        out.append((name, default, description, int(entry[3]) if len(entry) > 3 else 1))
    return out


def register_kernel(cls):
    """Registers a tessera.Kernel subclass (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Kernel)):
        raise TypeError("register_kernel takes a subclass of tessera.Kernel")
    if not cls.name:
        raise KernelError(f"{cls.__name__}: a kernel needs a name")
    variants = [(v, "") if isinstance(v, str) else (v[0], v[1]) for v in cls.variants]

    def factory(device, args):
        k = cls(device, args)
        k.setup()
        return k

    _tessera._register_python_kernel(cls.name, cls.description, variants, _shape_entries(cls.shape),
                                     list(cls.params), factory)
    return cls


# --- One simulation per process ------------------------------------------------------------


def isolated(function, *args, **kwargs):
    """Calls function(*args, **kwargs) in a forked child process and returns its
    result (which must pickle); an exception in the child is raised here.
    SystemC runs one simulation per process: this is how a notebook runs many."""
    import pickle
    import traceback

    read_fd, write_fd = _os.pipe()
    pid = _os.fork()
    if pid == 0:  # the child
        _os.close(read_fd)
        try:
            try:
                payload = pickle.dumps((True, function(*args, **kwargs)))
            except BaseException as e:  # noqa: BLE001  (sent to the parent)
                try:
                    payload = pickle.dumps((False, e))
                except Exception:  # noqa: BLE001
                    payload = pickle.dumps((False, RuntimeError(traceback.format_exc())))
            with _os.fdopen(write_fd, "wb") as w:
                w.write(payload)
        finally:
            _os._exit(0)
    _os.close(write_fd)
    with _os.fdopen(read_fd, "rb") as r:
        data = r.read()
    _, status = _os.waitpid(pid, 0)
    if not data:
        raise RuntimeError(f"the child process died (wait status {status}) before returning")
    ok, value = pickle.loads(data)
    if not ok:
        raise value
    return value


def _run_in_child(kernel, config, variant, shape, params, seed, device_options):
    dev = Device(config, **device_options)
    return run_kernel(dev, kernel, variant or "", shape or {}, params, seed).to_dict()


def run(kernel, config="tiny", variant="", shape=None, params=None, seed=1, **device_options):
    """Runs a registered kernel as `tessera run` does, in a child process, and
    returns its report as a dict (report.json's fields). device_options are
    Device's: overrides, fidelity, no_data, trace, waves, ..."""
    return isolated(_run_in_child, kernel, config, variant, shape, params, seed, device_options)
