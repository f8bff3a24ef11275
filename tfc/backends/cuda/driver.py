"""Drivers: what the CUDA backend asks of a GPU (docs/gpu.md, docs/gpu-runtime.md).

A ``Driver`` allocates device memory, copies, JIT-loads PTX modules and
launches kernels. Three implement it: ``PycudaDriver`` (pycuda),
``CudaBindingsDriver`` (NVIDIA's cuda-bindings, ``cuda.bindings.driver``) and
``SimulatedDriver`` (tfc/backends/cuda/sim_driver.py: the PTX simulator, for
machines without a GPU). ``get_driver()`` picks one.

Every failure to get a usable driver raises ``tfc.errors.UnavailableError``
naming each reason (no pycuda or cuda-bindings, no libcuda, no device, the
driver's initialization failed); a PTX module the driver's JIT refuses raises
``tfc.errors.CompileError`` with the JIT log; any other driver failure raises
``CudaError`` (a RuntimeError; out of memory is ``CudaOutOfMemoryError``, also a
MemoryError). No driver library's own exception class escapes: pycuda's
``LogicError`` is not even a RuntimeError, and cuda-bindings returns codes.

One device (device 0, its primary context) and one stream: the legacy default
stream, so kernels, copies and memsets run in the order they were issued, and
``copy_dtoh`` (synchronous) sees every earlier launch's writes. The context is
made current in the thread that created the driver; another thread runs its
CUDA work inside ``with driver.activate():``.

Launch cost matters (eager ``x + x`` on a tiny tensor is one launch): a
function's argument packing is built at its first launch from the argument
types (a ``struct.Struct`` in the kernel's parameter layout) and reused, so a
later launch is one ``pack`` and one driver call.

Nothing here is imported by ``import tfc``; pycuda and cuda-bindings are
imported when a driver is first asked for.
"""
from __future__ import annotations

import abc
import atexit
import ctypes
import os
import re
import struct
import threading

import numpy as np

from tfc.core.errors import CompileError, UnavailableError

DRIVERS = ("pycuda", "cuda-bindings", "simulator")

# kernel parameter types (docs/gpu.md: pointers travel as np.uint64; i1 as i32)
_PARAM_TYPES = (np.uint64, np.int64, np.int32, np.uint32, np.float32, np.float64)


class CudaError(RuntimeError):
    """A CUDA driver call failed (other than a JIT error: CompileError).
    ``call`` is the driver function, ``code`` the CUresult's name where known."""

    def __init__(self, message: str, call: str = "", code: str = ""):
        super().__init__(message)
        self.call = call
        self.code = code


class CudaOutOfMemoryError(CudaError, MemoryError):
    """The device has no memory left for an allocation."""


class Driver(abc.ABC):
    """The interface of docs/gpu.md. Addresses are Python ints; ``alloc``
    returns a 256-byte aligned address (0 bytes allowed: a valid address of a
    1-byte allocation); copies take C-contiguous numpy arrays; ``copy_dtoh`` is
    synchronous; ``launch`` takes 3-tuples and numpy scalars typed as the
    kernel's ``.param``s (np.uint64 pointers, np.int32, np.int64, np.float32,
    np.float64). A grid with a zero dimension launches nothing."""

    name: str = ""
    device_name: str = ""
    compute_capability: tuple = (0, 0)

    @abc.abstractmethod
    def alloc(self, nbytes: int) -> int: ...

    @abc.abstractmethod
    def free(self, ptr: int) -> None: ...

    @abc.abstractmethod
    def copy_htod(self, dst: int, src) -> None: ...

    @abc.abstractmethod
    def copy_dtoh(self, dst, src: int) -> None: ...

    @abc.abstractmethod
    def copy_dtod(self, dst: int, src: int, nbytes: int) -> None: ...

    @abc.abstractmethod
    def memset(self, dst: int, byte: int, nbytes: int) -> None: ...

    @abc.abstractmethod
    def load_module(self, ptx: str): ...

    @abc.abstractmethod
    def function(self, module, name: str): ...

    @abc.abstractmethod
    def launch(self, function, grid, block, args, shared_bytes: int = 0) -> None: ...

    @abc.abstractmethod
    def synchronize(self) -> None: ...

    def activate(self):
        """``with driver.activate():`` runs the block with this driver's context
        current in the calling thread (the thread that created the driver has it
        already; another thread needs it)."""
        return _Activation(None, None)

    def close(self) -> None:
        """Release the context (at exit); later frees are no-ops."""

    def __repr__(self):
        cc = ".".join(map(str, self.compute_capability))
        return f"<{type(self).__name__} {self.device_name!r} sm_{cc.replace('.', '')}>"


class _Activation:
    __slots__ = ("enter", "exit")

    def __init__(self, enter, exit):
        self.enter, self.exit = enter, exit

    def __enter__(self):
        if self.enter is not None:
            self.enter()
        return self

    def __exit__(self, *exc):
        if self.exit is not None:
            self.exit()
        return False


# -- argument packing -------------------------------------------------------------------

class ArgPacking:
    """A kernel's parameter buffer layout, built from the numpy scalar types of
    its first launch: ``struct`` packs in native alignment, which is the layout
    of a kernel's ``.param`` space (each parameter at a multiple of its size).
    ``declared``: the kernel's ``.param`` types as its PTX declares them
    (``["u64", "f32", ...]``), when known: the first launch's arguments must
    match them in number, kind (integer or float) and size."""

    __slots__ = ("types", "struct", "offsets", "size")

    def __init__(self, name: str, args, declared=None):
        types = tuple(map(type, args))
        for i, t in enumerate(types):
            if t not in _PARAM_TYPES:
                raise TypeError(f"kernel {name}: argument {i} is {t.__name__}; a kernel takes numpy "
                                f"scalars of {', '.join(p.__name__ for p in _PARAM_TYPES)}")
        if declared is not None:
            _check_declared(name, types, declared)
        self.types = types
        self.struct = struct.Struct("@" + "".join(np.dtype(t).char for t in types))
        offsets, off = [], 0
        for t in types:
            size = np.dtype(t).itemsize
            off = -(-off // size) * size
            offsets.append(off)
            off += size
        self.offsets = offsets
        self.size = self.struct.size
        assert off == self.size, (off, self.size)

    def check(self, name: str, args) -> None:
        """The same argument types as the first launch (a host program passes
        each parameter the same way every time)."""
        if tuple(map(type, args)) != self.types:
            types = tuple(map(type, args))
            raise TypeError(f"kernel {name} was launched with arguments ({_names(self.types)}), "
                            f"now with ({_names(types)})")


def _names(types) -> str:
    return ", ".join(t.__name__ for t in types)


def _check_declared(name: str, types, declared) -> None:
    if len(types) != len(declared):
        raise TypeError(f"kernel {name} takes {len(declared)} parameters (.param "
                        f"{', '.join('.' + d for d in declared)}), launched with {len(types)}")
    for i, (t, d) in enumerate(zip(types, declared)):
        dt = np.dtype(t)
        is_float = d[0] == "f"
        if int(d[1:]) != 8 * dt.itemsize or is_float != (dt.kind == "f"):
            raise TypeError(f"kernel {name}: argument {i} is {t.__name__}, its parameter is .param .{d}")


_ENTRY_PARAM = re.compile(r"\.param\s+\.([a-z]+\d+)\b")


def entry_params(ptx: str, name: str):
    """The ``.param`` types of the ``.entry name`` of ``ptx`` (``["u64", "f32",
    ...]``), or None where the declaration is not one this reads (struct or
    array parameters)."""
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\(([^)]*)\)", ptx)
    if m is None:
        return None
    decl = m.group(1)
    found = _ENTRY_PARAM.findall(decl)
    if len(found) != decl.count(".param") or "[" in decl:
        return None
    return found


class Module:
    """A loaded PTX module of a real driver: the native handle and its text (the
    kernels' parameter declarations are read from it)."""

    __slots__ = ("handle", "ptx")

    def __init__(self, handle, ptx: str):
        self.handle = handle
        self.ptx = ptx


class Kernel:
    """A function of a loaded module as the drivers hand it out: the native
    handle, its name, its declared ``.param`` types where known, and its
    argument packing (set at the first launch)."""

    __slots__ = ("handle", "name", "packing", "buffer", "params", "params_addr", "module", "declared")

    def __init__(self, handle, name: str, module=None, declared=None):
        self.handle = handle
        self.name = name
        self.module = module  # the module must outlive its functions
        self.declared = declared
        self.packing = None
        self.buffer = self.params = None
        self.params_addr = None

    def __repr__(self):
        return f"<Kernel {self.name}>"


def _dims(grid, block):
    if len(grid) != 3 or len(block) != 3:
        raise ValueError(f"grid and block must be 3-tuples, got {grid!r} and {block!r}")


# -- pycuda -------------------------------------------------------------------------------

class PycudaDriver(Driver):
    """pycuda: device 0's primary context, pushed on this thread's context
    stack (popped at exit: pycuda aborts the process if a context is still on
    the stack at its module cleanup). Launches call the function's
    ``_launch_kernel`` with a buffer packed by the function's ArgPacking (what
    ``prepared_call`` does, without its per-call Python work)."""

    name = "pycuda"

    def __init__(self):
        try:
            import pycuda.driver as drv
        except ImportError as e:
            raise UnavailableError(_import_reason("pycuda", e)) from None
        self.drv = drv
        try:
            drv.init()
            if drv.Device.count() == 0:
                raise UnavailableError("pycuda: no device (the driver sees no CUDA device)")
            dev = drv.Device(0)
            self.context = dev.retain_primary_context()
            self.context.push()
        except drv.Error as e:
            raise UnavailableError(_init_reason("pycuda", str(e))) from None
        self.device = dev
        self.device_name = dev.name()
        self.compute_capability = tuple(dev.compute_capability())
        self._allocs: dict = {}  # address -> DeviceAllocation (keeps it alive)
        self._closed = False
        self._lock = threading.Lock()
        atexit.register(self.close)

    def _error(self, call: str, e) -> CudaError:
        cls = CudaOutOfMemoryError if isinstance(e, self.drv.MemoryError) else CudaError
        return cls(f"{call}: {e}", call)

    def activate(self):
        # pushed on this thread's context stack for the block only: a thread that
        # ends with a context pushed makes pycuda abort the process at exit
        if self.drv.Context.get_current() == self.context:
            return _Activation(None, None)
        return _Activation(self.context.push, self.drv.Context.pop)

    def close(self):
        if self._closed:
            return
        self._closed = True
        # each step on its own: after a kernel fault every call fails, and the
        # context must still be popped (pycuda aborts the process otherwise)
        steps = [self.context.synchronize] + [a.free for a in self._allocs.values()] + [self.context.pop]
        self._allocs.clear()
        for step in steps:
            try:
                step()
            except self.drv.Error:
                pass

    def alloc(self, nbytes: int) -> int:
        try:
            a = self.drv.mem_alloc(max(int(nbytes), 1))
        except self.drv.Error as e:
            raise self._error(f"cuMemAlloc({nbytes})", e) from None
        ptr = int(a)
        self._allocs[ptr] = a
        return ptr

    def free(self, ptr: int) -> None:
        if self._closed:
            return
        a = self._allocs.pop(ptr, None)
        if a is None:
            raise ValueError(f"free of {ptr:#x}: not an allocation of this driver")
        try:
            a.free()
        except self.drv.Error as e:
            raise self._error("cuMemFree", e) from None

    def copy_htod(self, dst: int, src) -> None:
        src = _contiguous(src, "copy_htod source")
        if src.nbytes:
            try:
                self.drv.memcpy_htod(dst, src)
            except self.drv.Error as e:
                raise self._error("cuMemcpyHtoD", e) from None

    def copy_dtoh(self, dst, src: int) -> None:
        dst = _contiguous(dst, "copy_dtoh destination", writable=True)
        if dst.nbytes:
            try:
                self.drv.memcpy_dtoh(dst, src)
            except self.drv.Error as e:
                raise self._error("cuMemcpyDtoH", e) from None

    def copy_dtod(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            try:
                self.drv.memcpy_dtod(dst, src, nbytes)
            except self.drv.Error as e:
                raise self._error("cuMemcpyDtoD", e) from None

    def memset(self, dst: int, byte: int, nbytes: int) -> None:
        if nbytes:
            try:
                self.drv.memset_d8(dst, byte, nbytes)
            except self.drv.Error as e:
                raise self._error("cuMemsetD8", e) from None

    def load_module(self, ptx: str):
        log = []

        def handler(ok, info, error):
            log.append(error)

        try:
            return Module(self.drv.module_from_buffer(ptx.encode(), message_handler=handler), ptx)
        except self.drv.Error as e:
            text = (log[0] if log and log[0] else str(e)).strip()
            raise CompileError(f"the CUDA driver's JIT refused the PTX module ({self.device_name}, "
                               f"sm_{''.join(map(str, self.compute_capability))}):\n{text}") from None

    def function(self, module, name: str):
        try:
            return Kernel(module.handle.get_function(name), name, module, entry_params(module.ptx, name))
        except self.drv.Error as e:
            raise self._error(f"cuModuleGetFunction({name!r})", e) from None

    def launch(self, function, grid, block, args, shared_bytes: int = 0) -> None:
        p = function.packing
        if p is None:
            _dims(grid, block)
            p = function.packing = ArgPacking(function.name, args, function.declared)
        else:
            p.check(function.name, args)
        if not (grid[0] and grid[1] and grid[2]):
            return
        buf = p.struct.pack(*args)
        try:
            try:
                function.handle._launch_kernel(grid, block, buf, shared_bytes, None)
            except TypeError:  # boost.python converts no numpy integer: the dimensions as ints
                function.handle._launch_kernel(tuple(map(int, grid)), tuple(map(int, block)), buf,
                                               int(shared_bytes), None)
        except self.drv.Error as e:
            raise self._error(f"cuLaunchKernel({function.name})", e) from None

    def synchronize(self) -> None:
        try:
            self.context.synchronize()
        except self.drv.Error as e:
            raise self._error("cuCtxSynchronize", e) from None


# -- cuda-bindings --------------------------------------------------------------------------

def _import_cuda_bindings():
    try:
        from cuda.bindings import driver as cu
    except ImportError as e:
        try:
            from cuda import cuda as cu  # cuda-python before the cuda.bindings split
        except ImportError:
            raise e from None  # the reason is the current package's
    return cu


class CudaBindingsDriver(Driver):
    """NVIDIA's cuda-bindings (``cuda.bindings.driver``, the driver API one
    call per function, each returning ``(CUresult, *values)``). Launches pass
    ``kernelParams``: an array of pointers into one parameter buffer per
    function, both built at the first launch and repacked in place by each
    launch (the driver reads them during cuLaunchKernel only)."""

    name = "cuda-bindings"

    def __init__(self):
        try:
            cu = _import_cuda_bindings()
        except ImportError as e:
            raise UnavailableError(_import_reason("cuda-bindings", e)) from None
        self.cu = cu
        self._ok = cu.CUresult.CUDA_SUCCESS
        try:
            err, = cu.cuInit(0)
        except RuntimeError as e:  # "Failed to dlopen libcuda.so.1", or a symbol missing in it
            raise UnavailableError(_init_reason("cuda-bindings", str(e))) from None
        if err != self._ok:
            raise UnavailableError(_init_reason("cuda-bindings", f"cuInit: {self._describe(err)}"))
        try:
            count = self._check(cu.cuDeviceGetCount(), "cuDeviceGetCount")
            if count == 0:
                raise UnavailableError("cuda-bindings: no device (the driver sees no CUDA device)")
            self.device = self._check(cu.cuDeviceGet(0), "cuDeviceGet")
            name = self._check(cu.cuDeviceGetName(256, self.device), "cuDeviceGetName")
            self.device_name = bytes(name).split(b"\0", 1)[0].decode()
            attr = cu.CUdevice_attribute
            self.compute_capability = (
                self._check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                                    self.device), "cuDeviceGetAttribute"),
                self._check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                                    self.device), "cuDeviceGetAttribute"))
            self.context = self._check(cu.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
            self._check(cu.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        except CudaError as e:
            raise UnavailableError(_init_reason("cuda-bindings", str(e))) from None
        self._stream = 0  # the legacy default stream
        self._lock = threading.Lock()  # a function's parameter buffer is shared by its launches
        self._closed = False
        self._live: set = set()

    def _describe(self, err) -> str:
        try:
            _, name = self.cu.cuGetErrorName(err)
            _, text = self.cu.cuGetErrorString(err)
            return f"{name.decode()} ({text.decode()})"
        except Exception:  # noqa: BLE001 - a description must not fail
            return repr(err)

    def _check(self, ret, call: str):
        err, *values = ret
        if err != self._ok:
            desc = self._describe(err)
            cls = (CudaOutOfMemoryError if err == self.cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY
                   else CudaError)
            if err == self.cu.CUresult.CUDA_ERROR_NO_DEVICE:
                raise UnavailableError(f"cuda-bindings: no device ({call}: {desc})")
            raise cls(f"{call}: {desc}", call, desc.split(" ", 1)[0])
        return values[0] if len(values) == 1 else tuple(values)

    def activate(self):
        return _Activation(lambda: self._check(self.cu.cuCtxSetCurrent(self.context), "cuCtxSetCurrent"), None)

    def close(self):
        self._closed = True

    def alloc(self, nbytes: int) -> int:
        ptr = int(self._check(self.cu.cuMemAlloc(max(int(nbytes), 1)), f"cuMemAlloc({nbytes})"))
        self._live.add(ptr)
        return ptr

    def free(self, ptr: int) -> None:
        if self._closed:
            return
        if ptr not in self._live:
            raise ValueError(f"free of {ptr:#x}: not an allocation of this driver")
        self._live.discard(ptr)
        self._check(self.cu.cuMemFree(ptr), "cuMemFree")

    def copy_htod(self, dst: int, src) -> None:
        src = _contiguous(src, "copy_htod source")
        if src.nbytes:
            self._check(self.cu.cuMemcpyHtoD(dst, src.ctypes.data, src.nbytes), "cuMemcpyHtoD")

    def copy_dtoh(self, dst, src: int) -> None:
        dst = _contiguous(dst, "copy_dtoh destination", writable=True)
        if dst.nbytes:
            self._check(self.cu.cuMemcpyDtoH(dst.ctypes.data, src, dst.nbytes), "cuMemcpyDtoH")

    def copy_dtod(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            self._check(self.cu.cuMemcpyDtoD(dst, src, nbytes), "cuMemcpyDtoD")

    def memset(self, dst: int, byte: int, nbytes: int) -> None:
        if nbytes:
            self._check(self.cu.cuMemsetD8(dst, byte, nbytes), "cuMemsetD8")

    def load_module(self, ptx: str):
        cu = self.cu
        size = 1 << 16
        log = bytearray(size)  # the bindings pass a bytearray as the char* the JIT writes into
        opts = [cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER, cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
        image = ptx.encode() + b"\0"
        err, module = cu.cuModuleLoadDataEx(image, len(opts), opts, [log, size])
        if err != self._ok:
            text = bytes(log).split(b"\0", 1)[0].decode(errors="replace").strip()
            raise CompileError(f"the CUDA driver's JIT refused the PTX module ({self.device_name}, "
                               f"sm_{''.join(map(str, self.compute_capability))}): "
                               f"{self._describe(err)}\n{text}")
        return Module(module, ptx)

    def function(self, module, name: str):
        handle = self._check(self.cu.cuModuleGetFunction(module.handle, name.encode()),
                             f"cuModuleGetFunction({name!r})")
        return Kernel(handle, name, module, entry_params(module.ptx, name))

    def _prepare(self, function, args):
        p = function.packing = ArgPacking(function.name, args, function.declared)
        function.buffer = ctypes.create_string_buffer(max(p.size, 1))
        base = ctypes.addressof(function.buffer)
        function.params = (ctypes.c_void_p * max(len(args), 1))(*[base + o for o in p.offsets])
        function.params_addr = ctypes.addressof(function.params) if args else None
        return p

    def launch(self, function, grid, block, args, shared_bytes: int = 0) -> None:
        p = function.packing
        if p is None:
            _dims(grid, block)
            p = self._prepare(function, args)
        else:
            p.check(function.name, args)
        if not (grid[0] and grid[1] and grid[2]):
            return
        with self._lock:
            p.struct.pack_into(function.buffer, 0, *args)
            err, = self.cu.cuLaunchKernel(function.handle, grid[0], grid[1], grid[2],
                                          block[0], block[1], block[2], shared_bytes,
                                          self._stream, function.params_addr, 0)
        if err != self._ok:
            self._check((err,), f"cuLaunchKernel({function.name})")

    def synchronize(self) -> None:
        self._check(self.cu.cuCtxSynchronize(), "cuCtxSynchronize")


# -- selection ------------------------------------------------------------------------------

def _contiguous(a, what: str, writable: bool = False) -> np.ndarray:
    if not isinstance(a, np.ndarray) or not a.flags.c_contiguous:
        raise TypeError(f"{what} must be a C-contiguous numpy array")
    if writable and not a.flags.writeable:
        raise TypeError(f"{what} must be writable")
    return a


def _import_reason(lib: str, e: ImportError) -> str:
    text = str(e)
    if "libcuda" in text:
        return f"{lib}: no libcuda ({text}): no NVIDIA driver on this machine"
    if e.name in ("pycuda", "cuda", "cuda.bindings") or "No module named" in text:
        return f"{lib}: not installed ({text})"
    return f"{lib}: import failed ({text})"


def _init_reason(lib: str, text: str) -> str:
    low = text.lower()
    if "libcuda" in low and ("dlopen" in low or "cannot open" in low):
        return f"{lib}: no libcuda ({text}): no NVIDIA driver on this machine"
    if "no cuda-capable device" in low or "no_device" in low or "no device" in low:
        return f"{lib}: no device ({text})"
    return f"{lib}: initialization failed ({text})"


_FACTORIES = {"pycuda": lambda: PycudaDriver(), "cuda-bindings": lambda: CudaBindingsDriver()}
_drivers: dict = {}
_select_lock = threading.Lock()


def _simulator():
    from tfc.backends.cuda.sim_driver import SimulatedDriver
    return SimulatedDriver()


def get_driver(name: str | None = None) -> Driver:
    """The driver to run CUDA code on: ``name``, else $TFC_CUDA_DRIVER
    (``pycuda``, ``cuda-bindings`` or ``simulator``), else pycuda, then
    cuda-bindings. One instance per driver name per process. Nothing usable
    raises UnavailableError naming the reason of each driver tried."""
    choice = name or os.environ.get("TFC_CUDA_DRIVER") or None
    if choice is not None and choice not in DRIVERS:
        raise UnavailableError(f"TFC_CUDA_DRIVER={choice!r} is none of {', '.join(DRIVERS)}")
    order = (choice,) if choice else ("pycuda", "cuda-bindings")
    with _select_lock:
        reasons = []
        for n in order:
            d = _drivers.get(n)
            if d is not None:
                return d
            try:
                d = _simulator() if n == "simulator" else _FACTORIES[n]()
            except UnavailableError as e:
                reasons.append(str(e))
                continue
            except ImportError as e:  # the simulator's module (its own dependencies)
                reasons.append(f"{n}: {e}")
                continue
            _drivers[n] = d
            return d
    how = ("tried pycuda, then cuda-bindings" if not choice
           else f"asked for {choice}" if name else f"TFC_CUDA_DRIVER={choice}")
    raise UnavailableError(f"no usable CUDA driver ({how}): " + "; ".join(reasons))


def available(name: str | None = None) -> tuple:
    """(driver, None) or (None, the UnavailableError's text): for skips."""
    try:
        return get_driver(name), None
    except UnavailableError as e:
        return None, str(e)


__all__ = ["ArgPacking", "CudaBindingsDriver", "CudaError", "CudaOutOfMemoryError", "DRIVERS", "Driver",
           "Kernel", "Module", "PycudaDriver", "available", "entry_params", "get_driver"]
