"""Eager ops on GPU tensors (docs/gpu-eager.md, issue 17 point 5).

An eager op whose inputs live on the GPU (tfc.core.tensor.GpuTensor), or that
runs inside ``with tfc.device("gpu:0")``, runs here as a single-op kernel
compiled through the same pipeline as ``tfc.function(..., target="cuda")``: a
one-op function of the op's input shapes and dtypes (its attributes constants
of the trace) is traced, compiled for cuda and cached by (op, input shapes and
dtypes, attributes); the cached executable runs on the device buffers
(``CudaExecutable.run_device``: buffers in, buffers out, no host copies).

Inputs of a single-op function:

- a GPU tensor with dimensions: its buffer;
- a 0-d GPU tensor: its buffer as a ``[1]`` argument, reshaped to ``()`` in
  the trace (a 0-d argument of a compiled function is a host scalar, which
  would cost a device-to-host read per op);
- a 0-d host tensor (a Python scalar converted by the op): a kernel argument
  of the launch (soft placement of scalars: no upload, one compiled kernel for
  every value).

The random ops with GPU kernels (uniform, normal, dropout_mask,
seeded_dropout_mask, truncated_normal; shuffle_indices and categorical:
tfc/passes/gpu_random.py) compile like any other op: their kernels draw the
numpy kernel's words (seeded, or the global stream's next blocks, reserved when
the op runs), so uniform, integer, dropout and shuffle draws have the CPU's
bits, normals and truncated normals are within docs/random.md's ulps and
categorical samples are the CPU's but where u * total falls within about an
ulp of a running sum (docs/gpu-eager.md); a stateful draw whose lowering raises
NotImplementedError runs numpy's kernel and uploads the result. The other
stateful ops and ops that take no tensor (creation ops) run their numpy kernel
on the host and upload the result: the same bits as on the CPU. A 0-d result
that the compiled program reads back to the host (its L3 form keeps 0-d values
as host scalars) is uploaded again.

Importing this module imports nothing of CUDA: tfc.backends.cuda and the driver
load at the first GPU tensor.
"""
from __future__ import annotations

import threading

import numpy as np

from tfc.core import device as _device
from tfc.core.device import CPU, GPU, DeviceMismatchError, PhysicalDevice
from tfc.core.registry import Spec, execute, run_host
from tfc.core.tensor import GpuTensor, Tensor
from tfc.core.variable import GpuVariable

# Compiled single-op functions kept per driver (each holds its PTX module and
# its arena); a program that cycles through more shapes recompiles the oldest.
CACHE_MAX = 2048

_new_gpu = GpuTensor.__new__
_new_tuple = tuple.__new__


class _Entry:
    """One compiled single-op function: its executable, how it runs (its
    straight-line launcher, else ``run_device``), the result specs, and what
    each result needs after the run."""

    __slots__ = ("ex", "run", "specs", "single", "fix")

    def __init__(self, ex, specs, single, fix):
        self.ex = ex
        self.run = ex.straight_line() or ex.run_device
        self.specs = specs
        self.single = single
        self.fix = fix  # None, or per result: whether it may need a copy (a strided view, the arena)


def _cuda():
    """The cuda backend (tfc.backends' interface): what GPU tensors use of it."""
    from tfc.backends import backend

    return backend("cuda")


class DriverRuntime:
    """GPU tensors of one driver: uploads, downloads and the op cache."""

    def __init__(self, driver):
        cuda = _cuda()
        self.driver = driver
        self.allocator = cuda.allocator(driver)
        self._Buf = cuda.Buf  # alloc runs at every upload and op: no backend look-up there
        self.cache: dict = {}   # (op, input kinds, attrs) -> _Entry
        self.compiles = 0       # single-op functions compiled (the cache's misses)
        self.on_host: set = set()  # keys of stateful random ops whose lowering raised: numpy's kernel
        self._lock = threading.Lock()

    # -- host <-> device -----------------------------------------------------------
    def alloc(self, nbytes: int):
        a = self.allocator.alloc(nbytes)
        return self._Buf(a.ptr, a)

    def upload(self, array) -> GpuTensor:
        host = np.asarray(array)
        if not host.flags.c_contiguous:
            host = np.ascontiguousarray(host)  # (never 0-d here: ascontiguousarray makes those 1-d)
        buf = self.alloc(host.nbytes)
        if host.nbytes:
            self.driver.copy_htod(buf.addr, host)
        return self.tensor(buf, _new_tuple(Spec, (host.shape, _dtype_of(host.dtype))))

    def to_host(self, t: GpuTensor) -> np.ndarray:
        """A host copy of a GPU tensor's value (a fresh C-contiguous array)."""
        host = np.empty(t._spec.shape, t._spec.dtype.as_numpy_dtype)
        if host.nbytes:
            self.driver.copy_dtoh(host, t._buf.addr)
        return host

    def tensor(self, buf, spec) -> GpuTensor:
        t = _new_gpu(GpuTensor)
        t._buf = buf
        t._spec = spec
        t._rt = self
        return t

    # -- ops -------------------------------------------------------------------------
    def run(self, op, tensors, attrs, scope):
        """Run ``op`` on the GPU (see the module docstring for the inputs)."""
        try:  # the hot path: GPU tensors only, compiled before
            try:
                if op in _FLOAT_ATTR_OPS:  # floats key by their bits (-0.0 == 0.0, nan != nan)
                    raise TypeError
                entry = self.cache.get((op, *[t._spec for t in tensors], *attrs.items()))  # a host tensor has no _spec
            except TypeError:  # a list attribute (axes, a shape, a permutation), or a float
                entry = self.cache.get((op, *[t._spec for t in tensors], *attrs_key(attrs, op)))
        except AttributeError:
            entry = None
        if entry is not None:
            args = []
            for t in tensors:
                if t._rt is not self:
                    return self.run_slow(op, tensors, attrs, scope)  # says which input is elsewhere
                args.append(t._buf)
            outs = entry.run(args)
            if entry.fix is not None:
                outs = self.fixed(entry, outs)
            if entry.single:
                t = _new_gpu(GpuTensor)
                t._buf, t._spec, t._rt = outs[0], entry.specs[0], self
                return t
            return [self.tensor(o, s) for o, s in zip(outs, entry.specs)]
        return self.run_slow(op, tensors, attrs, scope)

    def run_slow(self, op, tensors, attrs, scope):
        """``run`` for the rest: host inputs, a first call, stateful ops."""
        key = [op]
        args = []
        for i, t in enumerate(tensors):
            if type(t) is GpuTensor:
                if t._rt is not self:
                    raise DeviceMismatchError(
                        f"{op.name}: input {i} is on the GPU of another CUDA driver "
                        f"({t._rt.driver.name}, not {self.driver.name}): copy it with .cpu() first")
                key.append(t._spec)
                args.append(t._buf)
                continue
            v = t._value
            if not isinstance(v, np.ndarray | np.generic):
                v = np.asarray(v)
            if v.ndim == 0:
                key.append(v.dtype)  # a host scalar: a kernel argument
                args.append(v)
            elif scope == GPU:
                g = self.upload(v)
                key.append(g._spec)
                args.append(g._buf)
            else:
                raise _mismatch(op, tensors, i)
        if (op.stateful or not tensors) and op.name not in _gpu_random_ops():
            return self.run_on_host(op, tensors, attrs)
        key = (*key, *attrs_key(attrs, op))
        entry = self.cache.get(key)
        if entry is None:
            if key in self.on_host:
                return self.run_on_host(op, tensors, attrs)
            try:
                entry = self.compile(op, key[1:len(tensors) + 1], attrs)
            except NotImplementedError:
                if op.name not in _gpu_random_ops():
                    raise
                self.on_host.add(key)  # the same bits from the numpy kernel, uploaded
                return self.run_on_host(op, tensors, attrs)
        outs = entry.run(args)
        if entry.fix is not None:
            outs = self.fixed(entry, outs)
        if entry.single:
            return self.tensor(outs[0], entry.specs[0])
        return [self.tensor(o, s) for o, s in zip(outs, entry.specs)]

    def run_on_host(self, op, tensors, attrs):
        """Run ``op``'s numpy kernel on host copies of its inputs; upload the results."""
        values = [self.to_host(t) if type(t) is GpuTensor else t._value for t in tensors]
        out = run_host(op, values, attrs)
        if isinstance(out, Tensor):
            return self.upload(out._value)
        return [self.upload(o._value) for o in out]

    def fixed(self, entry, outs):
        """Results as contiguous buffers of their own: a scalar the host program
        read back is uploaded, a strided view or a buffer in the arena copied."""
        cuda = _cuda()
        dev = entry.ex._device
        out = []
        for o, s, (_, t) in zip(outs, entry.specs, entry.fix):
            if not isinstance(o, cuda.Buf):  # a 0-d result the host program holds as a scalar
                o = self.upload(np.asarray(o, s.dtype.as_numpy_dtype))._buf
            else:  # a strided view or a buffer in the arena: a copy of its own (as a variable keeps)
                o, _ = cuda.kept_buffer(dev.call(), o, t, dev.arena.block)
            out.append(o)
        return out

    def compile(self, op, kinds, attrs) -> _Entry:
        """Trace, compile for cuda and cache the single-op function of ``op`` on
        inputs of these kinds (Specs of GPU tensors, numpy dtypes of host scalars)."""
        from tfc.frontend.function import Function, TensorSpec
        from tfc.ops.shapes import reshape
        from xdsl.dialects.builtin import MemRefType, NoneAttr

        specs, flat0, in_specs = [], [], []
        for k in kinds:
            if isinstance(k, Spec):
                in_specs.append(k)
                flat0.append(k.shape == ())
                specs.append(TensorSpec((1,) if k.shape == () else k.shape, k.dtype))
            else:
                dt = _dtype_of(k)
                in_specs.append(_new_tuple(Spec, ((), dt)))
                flat0.append(False)
                specs.append(TensorSpec((), dt))

        def one_op(*xs):
            return execute(op, [reshape(x, ()) if f else x for x, f in zip(xs, flat0)], attrs)

        one_op.__name__ = f"eager_{op.name}"
        out_specs = op.infer(op, *in_specs, **attrs)
        single = type(out_specs) is Spec
        out_specs = [out_specs] if single else list(out_specs)
        for s in out_specs:
            if any(d is None for d in s.shape):
                raise NotImplementedError(f"{op.name} on the GPU: a result shape that depends on the values "
                                          f"({s}) is not supported by eager GPU tensors")
        prev = _device.PLACEMENT.name, _device.PLACEMENT.gpu
        _device.PLACEMENT.name = _device.PLACEMENT.gpu = None  # the trace places nothing
        try:
            conc = Function(one_op, input_signature=specs, autograph=False, target="cuda").get_concrete_function()
            ex = conc.compiled
        except NotImplementedError as e:  # the cuda backend's: say which eager op needed it
            raise NotImplementedError(f"the eager op {op.name} on the GPU: {e}") from e
        finally:
            _device.PLACEMENT.name, _device.PLACEMENT.gpu = prev
        if len(ex.result_types) != len(out_specs) or conc.variables:
            raise NotImplementedError(f"{op.name} on the GPU: its single-op function has {len(ex.result_types)} "
                                      f"results for {len(out_specs)} outputs")
        ex.device(self.driver)  # this runtime's driver (before the entry)
        fix = [(isinstance(t, MemRefType) and not isinstance(t.layout, NoneAttr), t) for t in ex.result_types]
        needs = any(s or not isinstance(t, MemRefType) for s, t in fix) or ex.plan.arena_size > 0
        entry = _Entry(ex, out_specs, single, fix if needs else None)
        with self._lock:
            self.compiles += 1
            while len(self.cache) >= CACHE_MAX:  # the oldest first: its executable and arena go with it
                del self.cache[next(iter(self.cache))]
            self.cache[(op, *kinds, *attrs_key(attrs, op))] = entry
        return entry


# ops seen with a float attribute: their cache keys hold the floats' bits
_FLOAT_ATTR_OPS: set = set()


def _gpu_random_ops():
    """The stateful ops with GPU kernels (tfc/passes/gpu_random.py)."""
    from tfc.passes.gpu_random import STATEFUL_OPS

    return STATEFUL_OPS


def _bits(v):
    """A float as its exact bits (so -0.0 and 0.0 are two keys, and a NaN one),
    recursively in lists and tuples; other values as they are."""
    if isinstance(v, float):
        return ("float", v.hex())
    if isinstance(v, (list, tuple)):
        return tuple(_bits(x) for x in v)
    return v


def _has_float(v) -> bool:
    return isinstance(v, float) or (isinstance(v, (list, tuple)) and any(_has_float(x) for x in v))


def attrs_key(attrs, op=None) -> tuple:
    """The attributes as a hashable part of a cache key: their items, lists as
    tuples, floats by their bits (two attributes that compare equal but are not
    the same value, -0.0 and 0.0, must not share a compiled kernel: pad's
    constant); else (an index with slices, unhashable in Python 3.11) their text."""
    if any(isinstance(v, (float, list, tuple)) for v in attrs.values()):
        if op is not None and any(_has_float(v) for v in attrs.values()):
            _FLOAT_ATTR_OPS.add(op)
        attrs = {k: _bits(v) for k, v in attrs.items()}
    items = tuple(attrs.items())
    try:
        hash(items)
        return items
    except TypeError:
        pass
    items = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in items)
    try:
        hash(items)
        return items
    except TypeError:
        return (repr(attrs),)


def _dtype_of(np_dtype):
    from tfc.core import dtypes

    return dtypes.from_numpy(np_dtype)


def _mismatch(op, tensors, host_index) -> DeviceMismatchError:
    gpu_index = next(i for i, t in enumerate(tensors) if type(t) is GpuTensor)
    h, g = tensors[host_index], tensors[gpu_index]
    return DeviceMismatchError(
        f"{op.name}: input {gpu_index} ({g.spec}) is on {GPU} and input {host_index} ({h.spec}) on {CPU}: "
        f"an op's tensors must be on one device. Copy one of them: .gpu() puts a tensor on the GPU, .cpu() "
        f"on the host (or run the op inside `with tfc.device(...)`, which copies its inputs to that device)")


class Runtime:
    """The GPU runtime tfc.core.device calls (registered below): one
    DriverRuntime per driver (the one TFC_CUDA_DRIVER or the default order picks)."""

    def __init__(self):
        self._per_driver: dict = {}
        self._lock = threading.Lock()

    def current(self) -> DriverRuntime:
        """The runtime of the driver in use; UnavailableError where there is none."""
        get_driver = _cuda().driver

        d = get_driver()
        r = self._per_driver.get(d.name)
        if r is None or r.driver is not d:
            with self._lock:
                r = self._per_driver.get(d.name)
                if r is None or r.driver is not d:
                    r = self._per_driver[d.name] = DriverRuntime(d)
        return r

    def check(self) -> None:
        self.current()

    def devices(self) -> list:
        from tfc.core.errors import UnavailableError

        try:
            self.current()
        except UnavailableError:
            return []
        return [PhysicalDevice("/physical_device:GPU:0", "GPU")]

    def to_gpu(self, t) -> GpuTensor:
        if type(t) is GpuTensor:
            return t
        return self.current().upload(np.asarray(t._value))

    def run(self, op, tensors, attrs, scope):
        for t in tensors:
            if type(t) is GpuVariable:  # a variable on the GPU: its value now (an immutable GPU tensor)
                tensors = [x._t if type(x) is GpuVariable else x for x in tensors]
                break
        if scope == CPU:  # ``with tfc.device("cpu:0")``: GPU inputs come to the host
            return run_host(op, [t._rt.to_host(t) if type(t) is GpuTensor else t._value for t in tensors], attrs)
        for t in tensors:
            if type(t) is GpuTensor:
                return t._rt.run(op, tensors, attrs, scope)
        return self.current().run(op, tensors, attrs, scope)  # a GPU scope, host inputs only


RUNTIME = Runtime()
_device.set_gpu_runtime(RUNTIME)


def compiles() -> int:
    """Single-op functions compiled so far (all drivers): the op cache's misses."""
    return sum(r.compiles for r in RUNTIME._per_driver.values())


__all__ = ["DriverRuntime", "RUNTIME", "Runtime", "compiles"]
