"""The CUDA backend (target "cuda", docs/gpu.md): L3 lowered to the gpu dialect
(L4, ``tfc-lower-gpu``), printed as PTX (``ptx.py``), loaded and launched
through a Driver (``driver.py``: pycuda, cuda-bindings, or the PTX simulator in
tests). Compiling needs no GPU and no driver: ``.ptx`` and ``--emit gpu|ptx``
work anywhere; the driver is asked for at the first call, which raises
``tfc.errors.UnavailableError`` where there is none. Importing this package
imports no CUDA library."""
from __future__ import annotations

import functools
import threading

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType

from tfc.backends.cuda.host import Buf, HostProgram, copied, itemsize, kept_buffer, nbytes, np_dtype, param_scalar
from tfc.core.cell import Cell
from tfc.core.tensor import GpuTensor
from tfc.dialects.tensor import RefType, dtype_of


_UNSET = object()  # a lazily made attribute not made yet


class Device:
    """What the host program of one executable uses on one driver: the
    process's allocator and kernel cache for it, the executable's arena and
    its constants (uploaded at the first call)."""

    def __init__(self, driver, ptx: str, arena_size: int):
        from tfc.backends.cuda.memory import DeviceArena, allocator_for, kernel_cache_for

        self.driver = driver
        self.allocator = allocator_for(driver)
        self.kernels = kernel_cache_for(driver)
        self.arena = DeviceArena(self.allocator, arena_size)
        self.ptx = ptx
        self.constants: dict = {}
        self._functions: dict = {}

    def call(self):
        """The runtime of one call (``HostProgram.run``'s ``rt``)."""
        return _Call(self)


class _Call:
    """One call's view of the device: its allocations die with it (results are
    copied to the host first)."""

    __slots__ = ("dev", "driver")

    def __init__(self, dev: Device):
        self.dev = dev
        self.driver = dev.driver

    def alloc(self, n: int) -> Buf:
        a = self.dev.allocator.alloc(n)
        return Buf(a.ptr, a)

    def _uploaded(self, host: np.ndarray) -> Buf:
        """A fresh buffer holding the C-contiguous host array ``host``."""
        buf = self.alloc(host.nbytes)
        if host.nbytes:
            self.driver.copy_htod(buf.addr, host)
        return buf

    def constant(self, key, array) -> Buf:
        buf = self.dev.constants.get(key)
        if buf is None:
            buf = self.dev.constants[key] = self._uploaded(array)
        return buf

    def launch(self, symbol, grid, block, args, shared):
        fns = self.dev._functions
        fn = fns.get(symbol)
        if fn is None:
            fn = fns[symbol] = self.dev.kernels.function(self.dev.ptx, symbol)
        self.driver.launch(fn, grid, block, args, shared)

    def upload(self, array, t: MemRefType) -> Buf:
        host = np.ascontiguousarray(array, np_dtype(t.element_type))
        want = tuple(t.get_shape())
        # a dimension of run-time size (negative: a None signature's argument where the
        # program is not specialized to its shapes, e.g. one with state lists) takes any
        if len(host.shape) != len(want) or any(w >= 0 and w != h for w, h in zip(want, host.shape)):
            raise ValueError(f"argument of shape {list(host.shape)} for a {t}")
        buf = self._uploaded(host)
        if any(w < 0 for w in want):
            buf.shape = tuple(host.shape)  # its run-time shape, as lists.py's values carry it
        return buf

    def contiguous(self, buf: Buf, t: MemRefType):
        """(a Buf whose data is ``t``'s elements, contiguous from its address,
        their Spec): the buffer itself where its layout is the identity, else a
        copy through the host (a result that is a strided view: rare)."""
        from tfc.core.registry import Spec
        from tfc.dialects.loops import is_contiguous, layout_of

        spec = Spec(tuple(t.get_shape()), dtype_of(t.element_type))
        if is_contiguous(t):
            return Buf(buf.addr + layout_of(t)[1] * itemsize(t), buf.owner), spec
        return self._uploaded(self.to_host(buf, t)), spec

    def to_host(self, value, t):
        """A device value as a host array (a Buf of memref type ``t``: its
        elements, through its layout) or scalar."""
        if not isinstance(t, MemRefType):
            return value
        from tfc.dialects.loops import layout_of

        dt, shape = np_dtype(t.element_type), tuple(t.get_shape())
        if any(d < 0 for d in shape):  # run-time shape: the Buf carries it (an argument returned, a state list)
            from tfc.dialects.loops import is_contiguous

            if getattr(value, "shape", None) is None or not is_contiguous(t):
                raise NotImplementedError(f"target cuda: a result of type {t} whose run-time shape or layout "
                                          "the host does not know is not implemented")
            host = np.empty(value.shape, dt)
            if host.size:
                self.driver.copy_dtoh(host, value.addr)
            return host
        strides, off = layout_of(t)
        if 0 in shape:
            return np.empty(shape, dt)
        lo = off + sum(min(0, s * (d - 1)) for s, d in zip(strides, shape))
        hi = off + sum(max(0, s * (d - 1)) for s, d in zip(strides, shape)) + 1
        span = np.empty(hi - lo, dt)
        self.driver.copy_dtoh(span, value.addr + lo * dt.itemsize)
        view = np.lib.stride_tricks.as_strided(span[off - lo:], shape, [s * dt.itemsize for s in strides])
        return np.ascontiguousarray(view)


class CudaExecutable:
    """A compiled function for target "cuda": its L4 module, its PTX, its
    memory plan and its host program. ``call`` asks for the driver (once per
    executable), uploads host arrays, runs, and copies the results back."""

    def __init__(self, l4, ptx: str, plan, name: str):
        (f,) = [op for op in l4.ops if isinstance(op, func.FuncOp)]
        self.l4 = l4
        self.ptx = ptx
        self.plan = plan
        self.name = name
        self.program = HostProgram(f)
        self.arg_types = list(f.function_type.inputs)[:-1]  # the arena comes last
        self.result_types = list(f.function_type.outputs)
        self._device = None
        self._straight = _UNSET
        self._lock = threading.Lock()

    def device(self, driver=None) -> Device:
        """The device state on ``driver`` (default: ``get_driver()``), made at
        the first call: an executable runs on one driver."""
        if self._device is None:
            from tfc.backends.cuda.driver import get_driver

            with self._lock:
                if self._device is None:
                    self._device = Device(driver or get_driver(), self.ptx, self.plan.arena_size)
        return self._device

    def __call__(self, args):
        return list(self.call(args))

    def direct(self):
        return None  # a call needs the device around it

    def call(self, args):
        """Run on host arrays, GPU tensors (``tfc.core.tensor.GpuTensor``: their
        buffers, no copy) and Cells (a GPU variable's holds a GpuTensor: the
        host program reads and replaces its buffer, host.py). Called with a GPU
        tensor or a GPU variable, the results stay on the device (GPU tensors
        of the same runtime; 0-d results are host scalars, as L3 keeps them);
        else they are copied back (host arrays)."""
        rt = self.device().call()
        gpu = None
        vals = []
        for a, t in zip(args, self.arg_types):
            if isinstance(t, MemRefType):
                if type(a) is GpuTensor:
                    gpu = a._rt
                    vals.append(a._buf)
                else:
                    vals.append(rt.upload(a, t))
            else:
                if gpu is None and type(a) is Cell and type(a.value) is GpuTensor:
                    gpu = a.value._rt
                vals.append(a)
        outs = self.run_device(vals, rt)
        if gpu is None:
            return tuple(rt.to_host(v, t) for v, t in zip(outs, self.result_types))
        return tuple(gpu.tensor(*rt.contiguous(v, t)) if isinstance(t, MemRefType) else v
                     for v, t in zip(outs, self.result_types))

    def straight_line(self):
        """The straight-line launcher of this executable (``_straight_line``),
        made once on its device, or None where the host program is needed."""
        if self._straight is _UNSET:
            self._straight = _straight_line(self)
        return self._straight

    def run_device(self, args, rt=None):
        """Run on device values: a ``Buf`` per memref argument (its data at
        ``addr``, contiguous), host scalars, Cells; returns the results as Bufs
        (each owning its allocation: it lives while referenced) and scalars."""
        dev = self.device()
        rt = rt or dev.call()
        vals = [aligned(rt, a, t) if isinstance(t, MemRefType) else a if isinstance(t, RefType)
                else np_dtype(t).type(a) for a, t in zip(args, self.arg_types)]
        with dev.arena.use(self.plan.arena_size) as block:
            return self.program.run(rt, vals + [Buf(block.ptr, block)])


def _straight_line(ex):
    """``run(bufs) -> result Bufs`` doing what ``ex.run_device`` does, for a
    host function that only allocates its results and launches kernels on
    constant grids (most single-op functions: one allocation, one launch):
    the launches' kernels and parameter packing are resolved once, so a call
    is the allocations and the driver's launches. None for anything else (an
    arena, host control flow, scalars it computes, views), which runs through
    the host program."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType, NoneAttr

    from tfc.dialects import loops as L
    from tfc.dialects.gpu import LaunchOp

    if ex.plan.arena_size:
        return None
    (f,) = [op for op in ex.l4.ops if isinstance(op, func.FuncOp)]
    block = f.body.block
    where = {a: ("arg", i) for i, a in enumerate(block.args[:-1])}  # the arena (last) is unused
    consts, sizes, launches, results = {}, [], [], None
    for op in block.ops:
        if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType):
            consts[op.result] = int(op.value.value.data)
        elif isinstance(op, L.AllocOp):
            where[op.result] = ("alloc", len(sizes))
            sizes.append(nbytes(op.result.type))
        elif isinstance(op, LaunchOp):
            grid = [consts.get(v) for v in (op.gx, op.gy, op.gz)]
            if None in grid:
                return None
            params = []
            for v in op.args:
                t = v.type
                if v not in where:
                    return None  # a value the host computes: the host program packs it
                if isinstance(t, MemRefType):
                    if not isinstance(t.layout, NoneAttr):
                        return None  # a view
                    params.append((*where[v], None))
                elif where[v][0] == "arg":  # a host scalar argument, as the launch's typed parameter
                    params.append((*where[v], functools.partial(param_scalar, t=t)))
                else:
                    return None
            if 0 not in grid:  # an empty grid launches nothing (CUDA refuses it)
                launches.append((op.kernel.root_reference.data, tuple(grid), op.block_size,
                                 op.shared.value.data, params))
        elif isinstance(op, func.ReturnOp):
            if any(v not in where for v in op.operands):
                return None
            results = [where[v] for v in op.operands]
        else:
            return None
    dev = ex.device()
    rt = dev.call()
    alloc, launch = dev.allocator.alloc, dev.driver.launch
    # each parameter and result: (True, argument index) or (False, allocation index)
    kernels = [(dev.kernels.function(dev.ptx, sym), grid, blk, shared, [(k == "arg", i, p) for k, i, p in params])
               for sym, grid, blk, shared, params in launches]
    results = [(k == "arg", i) for k, i in results]
    u64 = np.uint64

    def run(args):
        if any(b.addr % 16 for b in args if type(b) is Buf):  # kernels read arguments as 16-byte vectors
            args = [aligned(rt, b, t) if type(b) is Buf else b for b, t in zip(args, ex.arg_types)]
        new = []
        for n in sizes:
            a = alloc(n)
            new.append(Buf(a.ptr, a))
        for fn, grid, blk, shared, params in kernels:
            launch(fn, grid, blk, [u64((args if a else new)[i].addr) if p is None else p(args[i])
                                   for a, i, p in params], shared)
        return [(args if a else new)[i] for a, i in results]

    return run


def aligned(rt, buf: Buf, t: MemRefType) -> Buf:
    """A memref argument whose data start 16-byte aligned: the buffer itself,
    or a copy where it does not (a GPU tensor that is a view at an odd offset,
    eager ``x[1:]``): kernels read arguments with 16-byte vector loads
    (tfc-lower-gpu's ARGUMENTS_ALIGNED)."""
    return copied(rt, buf, t) if buf.addr % 16 else buf


def lower_to_gpu(loops):
    """The L4 module of an L3 module (a copy: ``loops`` is left as it is)."""
    from tfc.passes.pipeline import run_pipeline

    return run_pipeline(loops.clone(), ("tfc-lower-gpu",))


def compile_module(loops, plan, name: str) -> CudaExecutable:
    from tfc.backends.cuda.ptx import to_ptx

    l4 = lower_to_gpu(loops)
    return CudaExecutable(l4, to_ptx(l4), plan, name)


class CudaBackend:
    """Target "cuda": the ``tfc.backends`` interface of the CUDA backend."""

    target = "cuda"
    stages = ("gpu", "ptx")  # --emit gpu: the L4 module; --emit ptx: its PTX

    def __init__(self):
        from tfc.backends import Numerics

        # bit-exact .rn arithmetic where PTX has it (add, sub, mul, div, sqrt:
        # docs/ir-gpu-dialect.md); the rest within these (rtol, atol)
        self.numerics = Numerics(
            "float32 elementwise from PTX's approximate ex2/lg2/sin/cos sequences (a few ulp); reductions "
            "and matmul sum in another order than numpy's (tree, tiles)",
            {"elementwise": (2e-6, 1e-6), "reduction": (1e-5, 1e-6), "matmul": (1e-5, 1e-5),
             "data-movement": (0.0, 0.0)})

    # what eager GPU tensors (tfc.frontend.eager_gpu) use of the backend
    Buf = Buf

    @staticmethod
    def driver():
        """The process's driver (TFC_CUDA_DRIVER, else pycuda, then cuda-bindings)."""
        from tfc.backends.cuda.driver import get_driver

        return get_driver()

    @staticmethod
    def allocator(driver):
        """The caching allocator of ``driver``."""
        from tfc.backends.cuda.memory import allocator_for

        return allocator_for(driver)

    nbytes = staticmethod(nbytes)
    param_scalar = staticmethod(param_scalar)
    aligned = staticmethod(aligned)
    kept_buffer = staticmethod(kept_buffer)

    def prepare(self) -> None:
        import tfc.backends.cuda.ptx  # noqa: F401
        import tfc.passes.lower_gpu  # noqa: F401

    def caching(self) -> bool:
        return False  # the PTX is made per process; loaded modules are cached by kernel_cache_for

    def load(self, source_key: str, name: str):
        return None

    def compile(self, loops, plan, name: str, source_key: str | None = None):
        return compile_module(loops, plan, name)

    def compile_hooked(self, loops, plan, name: str, hooks: dict, hook):
        raise NotImplementedError("verify=True with target='cuda': comparing every L3 value with the reference "
                                  "executor is not implemented for the CUDA backend yet")

    def run_loops(self, module, args, name: str | None = None):
        """Run an L3 module's function (``name``, or the only one) on the device
        (the executor of the loops level for differential tests)."""
        from tfc.passes.plan_memory import MemoryPlan

        funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
        f3 = funcs[name] if name is not None else next(iter(funcs.values()))
        (arena,) = f3.body.block.args[-1].type.get_shape()
        from xdsl.dialects.builtin import ModuleOp

        one = ModuleOp([f3.clone()])
        return list(compile_module(one, MemoryPlan(arena_size=arena), f3.sym_name.data).call(list(args)))

    def text(self, executable, stage: str) -> str:
        if stage == "gpu":
            from tfc.dialects.tensor import print_ir

            return print_ir(executable.l4)
        if stage == "ptx":
            return executable.ptx
        raise ValueError(f"the cuda backend emits {', '.join(self.stages)}, not {stage!r}")


__all__ = ["CudaBackend", "CudaExecutable", "Device", "compile_module", "lower_to_gpu", "nbytes"]
