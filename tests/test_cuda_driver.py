"""CUDA drivers (tfc/backends/cuda/driver.py) and device memory (memory.py).

Without a GPU: driver selection and its error messages (each missing piece
simulated by replacing the import), both real drivers' code run over fake
pycuda / cuda-bindings modules backed by host memory (the kernel parameter
buffer is read back the way the driver API reads it), the caching allocator,
the arena and the kernel cache on a fake Driver. With a GPU (marker ``gpu``):
allocations, copies and a hand-written PTX kernel through each real driver.
"""
import ctypes
import enum
import os
import struct
import subprocess
import sys
import types

import numpy as np
import pytest

import tfc
from tfc.backends.cuda import driver as D
from tfc.backends.cuda import memory as M
from tfc.core.errors import CompileError, UnavailableError

# out[i] = a * x[i] + y[i] + float(b) for i < n (mul.rn / add.rn: numpy's float32 rounding)
AXPYB_PTX = r"""
.version 8.0
.target sm_80
.address_size 64

.visible .entry axpyb(.param .u64 p_x, .param .u64 p_y, .param .u64 p_out,
                      .param .f32 p_a, .param .s32 p_b, .param .u64 p_n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<12>;
    .reg .f32 %f<8>;
    ld.param.u64 %rd1, [p_x];
    ld.param.u64 %rd2, [p_y];
    ld.param.u64 %rd3, [p_out];
    ld.param.f32 %f1, [p_a];
    ld.param.s32 %r4, [p_b];
    ld.param.u64 %rd4, [p_n];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd5, %r1, %r2;
    cvt.u64.u32 %rd6, %r3;
    add.s64 %rd7, %rd5, %rd6;
    setp.ge.u64 %p1, %rd7, %rd4;
    @%p1 bra $L_done;
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    cvta.to.global.u64 %rd3, %rd3;
    shl.b64 %rd8, %rd7, 2;
    add.s64 %rd9, %rd1, %rd8;
    add.s64 %rd10, %rd2, %rd8;
    add.s64 %rd11, %rd3, %rd8;
    ld.global.f32 %f2, [%rd9];
    ld.global.f32 %f3, [%rd10];
    cvt.rn.f32.s32 %f4, %r4;
    mul.rn.f32 %f5, %f1, %f2;
    add.rn.f32 %f6, %f5, %f3;
    add.rn.f32 %f7, %f6, %f4;
    st.global.f32 [%rd11], %f7;
$L_done:
    ret;
}
"""

# the .param layout of axpyb as the PTX ABI lays it out: each parameter at a
# multiple of its size (written out, not computed like the driver computes it)
AXPYB_PARAMS = [(0, "Q"), (8, "Q"), (16, "Q"), (24, "f"), (28, "i"), (32, "Q")]


def axpyb_args(x, y, out, a, b, n):
    return [np.uint64(x), np.uint64(y), np.uint64(out), np.float32(a), np.int32(b), np.uint64(n)]


def axpyb_expected(x, y, a, b):
    return np.float32(a) * x + y + np.float32(b)


# -- a device made of host memory -------------------------------------------------------

class HostMemory:
    """Device allocations in host memory: 256-byte aligned addresses, copies by
    memmove, every access checked against the live allocations."""

    def __init__(self, capacity=1 << 30):
        self.blocks = {}       # address -> (ctypes buffer, nbytes)
        self.capacity = capacity
        self.used = 0

    def alloc(self, n):
        if self.used + n > self.capacity:
            return None
        raw = ctypes.create_string_buffer(n + 256)
        addr = (ctypes.addressof(raw) + 255) // 256 * 256
        self.blocks[addr] = (raw, n)
        self.used += n
        return addr

    def free(self, addr):
        raw, n = self.blocks.pop(addr)
        self.used -= n

    def check(self, addr, n):
        for a, (_, size) in self.blocks.items():
            if a <= addr and addr + n <= a + size:
                return
        raise AssertionError(f"device access {addr:#x}+{n} outside every allocation")

    def array(self, addr, n, dtype):
        dtype = np.dtype(dtype)
        self.check(addr, n * dtype.itemsize)
        return np.frombuffer((ctypes.c_char * (n * dtype.itemsize)).from_address(addr), dtype)


def run_axpyb(mem, params: bytes, grid, block):
    """axpyb on HostMemory, reading its arguments from a packed .param buffer."""
    x, y, out, a, b, n = (struct.unpack_from(f, params, off)[0] for off, f in AXPYB_PARAMS)
    count = min(n, grid[0] * block[0])
    xs, ys = mem.array(x, count, np.float32), mem.array(y, count, np.float32)
    mem.array(out, count, np.float32)[:] = axpyb_expected(xs, ys, a, b)


class FakeDriver(D.Driver):
    """A Driver over HostMemory; launches run Python kernels registered by name."""

    name = "fake"
    device_name = "fake device"

    def __init__(self, capacity=1 << 30, cc=(9, 0)):
        self.mem = HostMemory(capacity)
        self.compute_capability = cc
        self.loads = []
        self.frees = []

    def alloc(self, nbytes):
        addr = self.mem.alloc(max(nbytes, 1))
        if addr is None:
            raise D.CudaOutOfMemoryError(f"cuMemAlloc({nbytes}): out of memory", "cuMemAlloc")
        return addr

    def free(self, ptr):
        self.frees.append(ptr)
        self.mem.free(ptr)

    def copy_htod(self, dst, src):
        self.mem.check(dst, src.nbytes)
        ctypes.memmove(dst, src.ctypes.data, src.nbytes)

    def copy_dtoh(self, dst, src):
        self.mem.check(src, dst.nbytes)
        ctypes.memmove(dst.ctypes.data, src, dst.nbytes)

    def copy_dtod(self, dst, src, nbytes):
        self.mem.check(dst, nbytes), self.mem.check(src, nbytes)
        ctypes.memmove(dst, src, nbytes)

    def memset(self, dst, byte, nbytes):
        self.mem.check(dst, nbytes)
        ctypes.memset(dst, byte, nbytes)

    def load_module(self, ptx):
        if "bad" in ptx:
            raise CompileError("ptxas fatal: bad")
        self.loads.append(ptx)
        return {"ptx": ptx}

    def function(self, module, name):
        return D.Kernel(name, name, module)

    def launch(self, function, grid, block, args, shared_bytes=0):
        packing = D.ArgPacking(function.name, args)
        run_axpyb(self.mem, packing.struct.pack(*args), grid, block)

    def synchronize(self):
        pass


# -- fake driver libraries ---------------------------------------------------------------

class _Blocker:
    """A meta path finder raising ImportError(message) for the named modules."""

    def __init__(self, names, message, name_attr=None):
        self.names, self.message, self.name_attr = set(names), message, name_attr

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.names:
            raise ImportError(self.message, name=self.name_attr or fullname)
        return None


def block_import(monkeypatch, names, message, name_attr=None):
    for n in list(sys.modules):
        if n in names or any(n.startswith(x + ".") for x in names):
            monkeypatch.delitem(sys.modules, n)
    monkeypatch.setattr(sys, "meta_path", [_Blocker(names, message, name_attr)] + sys.meta_path)


@pytest.fixture
def fresh(monkeypatch):
    """No driver cached, TFC_CUDA_DRIVER unset."""
    monkeypatch.setattr(D, "_drivers", {})
    monkeypatch.delenv("TFC_CUDA_DRIVER", raising=False)


def no_pycuda(monkeypatch):
    block_import(monkeypatch, {"pycuda"}, "No module named 'pycuda'")


def no_bindings(monkeypatch):
    block_import(monkeypatch, {"cuda"}, "No module named 'cuda'")


def fake_pycuda(monkeypatch, mem=None, init_error=None, count=1, launches=None):
    drv = types.ModuleType("pycuda.driver")

    class Error(Exception):
        pass

    class LogicError(Error):
        pass

    class PyMemoryError(Error):
        pass

    drv.Error, drv.LogicError, drv.MemoryError = Error, LogicError, PyMemoryError

    def init():
        if init_error:
            raise LogicError(init_error)
    drv.init = init

    class Context:
        current = None

        def push(self):
            Context.current = self

        @staticmethod
        def pop():  # pycuda's pops the current context
            Context.current = None

        def synchronize(self):
            pass

        @staticmethod
        def get_current():
            return Context.current
    drv.Context = Context

    class Device:
        def __init__(self, i):
            pass

        @staticmethod
        def count():
            return count

        def name(self):
            return "Fake H100"

        def compute_capability(self):
            return (9, 0)

        def retain_primary_context(self):
            return Context()
    drv.Device = Device

    class Allocation:
        def __init__(self, n):
            self.addr = mem.alloc(n)
            if self.addr is None:
                raise PyMemoryError("cuMemAlloc failed: out of memory")

        def __int__(self):
            return self.addr

        def free(self):
            if self.addr is not None:
                mem.free(self.addr)
                self.addr = None
    drv.mem_alloc = Allocation
    drv.memcpy_htod = lambda dst, src: (mem.check(dst, src.nbytes),
                                        ctypes.memmove(dst, src.ctypes.data, src.nbytes))
    drv.memcpy_dtoh = lambda dst, src: (mem.check(src, dst.nbytes),
                                        ctypes.memmove(dst.ctypes.data, src, dst.nbytes))
    drv.memcpy_dtod = lambda dst, src, n: ctypes.memmove(dst, src, n)
    drv.memset_d8 = lambda dst, b, n: ctypes.memset(dst, b, n)

    class Function:
        def __init__(self, name):
            self.name = name

        def _launch_kernel(self, grid, block, buf, shared, stream):
            launches.append((self.name, grid, block, bytes(buf), shared, stream))
            run_axpyb(mem, bytes(buf), grid, block)

    class Module:
        def get_function(self, name):
            if name != "axpyb":
                raise LogicError(f"cuModuleGetFunction failed: named symbol not found ({name})")
            return Function(name)

    def module_from_buffer(buf, message_handler=None):
        if b"bad" in buf:
            if message_handler:
                message_handler(False, "", "ptxas application ptx input, line 1; error   : bad")
            raise LogicError("cuModuleLoadDataEx failed: a PTX JIT compilation failed")
        return Module()
    drv.module_from_buffer = module_from_buffer

    pkg = types.ModuleType("pycuda")
    pkg.__path__ = []
    pkg.driver = drv
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    return drv


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_NO_DEVICE = 100
    CUDA_ERROR_INVALID_PTX = 218


def fake_bindings(monkeypatch, mem=None, init=None, count=1, launches=None):
    cu = types.ModuleType("cuda.bindings.driver")
    cu.CUresult = CUresult
    cu.CUdevice_attribute = enum.IntEnum("CUdevice_attribute", [
        ("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR", 75),
        ("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR", 76)])
    cu.CUjit_option = enum.IntEnum("CUjit_option", [
        ("CU_JIT_ERROR_LOG_BUFFER", 5), ("CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES", 6)])
    ok = (CUresult.CUDA_SUCCESS,)

    def cuInit(flags):
        if isinstance(init, Exception):
            raise init
        return (init or CUresult.CUDA_SUCCESS,)
    cu.cuInit = cuInit
    cu.cuGetErrorName = lambda e: (CUresult.CUDA_SUCCESS, CUresult(e).name.encode())
    cu.cuGetErrorString = lambda e: (CUresult.CUDA_SUCCESS, b"fake error text")
    cu.cuDeviceGetCount = lambda: (CUresult.CUDA_SUCCESS, count)
    cu.cuDeviceGet = lambda i: (CUresult.CUDA_SUCCESS, "dev0")
    cu.cuDeviceGetName = lambda n, d: (CUresult.CUDA_SUCCESS, b"Fake H200\0\0\0")
    cu.cuDeviceGetAttribute = lambda a, d: (CUresult.CUDA_SUCCESS, 9 if a == 75 else 0)
    cu.cuDevicePrimaryCtxRetain = lambda d: (CUresult.CUDA_SUCCESS, "ctx")
    cu.cuCtxSetCurrent = lambda c: ok
    cu.cuCtxSynchronize = lambda: ok

    def cuMemAlloc(n):
        addr = mem.alloc(n)
        return (CUresult.CUDA_ERROR_OUT_OF_MEMORY, None) if addr is None else (CUresult.CUDA_SUCCESS, addr)
    cu.cuMemAlloc = cuMemAlloc
    cu.cuMemFree = lambda p: (mem.free(p), ok)[1]
    cu.cuMemcpyHtoD = lambda d, s, n: (mem.check(d, n), ctypes.memmove(d, s, n), ok)[2]
    cu.cuMemcpyDtoH = lambda d, s, n: (mem.check(s, n), ctypes.memmove(d, s, n), ok)[2]
    cu.cuMemcpyDtoD = lambda d, s, n: (ctypes.memmove(d, s, n), ok)[1]
    cu.cuMemsetD8 = lambda d, b, n: (ctypes.memset(d, b, n), ok)[1]

    def cuModuleLoadDataEx(image, n, opts, vals):
        assert image.endswith(b"\0") and n == len(opts) == len(vals) == 2
        if b"bad" in image:
            log = b"ptxas application ptx input, line 1; error   : bad\0"
            vals[0][:len(log)] = log
            return (CUresult.CUDA_ERROR_INVALID_PTX, None)
        return (CUresult.CUDA_SUCCESS, "module")
    cu.cuModuleLoadDataEx = cuModuleLoadDataEx
    cu.cuModuleGetFunction = lambda m, name: ((CUresult.CUDA_SUCCESS, name.decode()) if name == b"axpyb"
                                              else (CUresult.CUDA_ERROR_NOT_FOUND, None))

    def cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        # what the driver does: read each parameter through the void*[] array
        ptrs = (ctypes.c_void_p * len(AXPYB_PARAMS)).from_address(params)
        buf = bytearray(40)
        for p, (off, fmt) in zip(ptrs, AXPYB_PARAMS):
            size = struct.calcsize(fmt)
            buf[off:off + size] = ctypes.string_at(p, size)
        launches.append((f, (gx, gy, gz), (bx, by, bz), bytes(buf), shared, stream))
        run_axpyb(mem, bytes(buf), (gx, gy, gz), (bx, by, bz))
        return ok
    cu.cuLaunchKernel = cuLaunchKernel

    cuda = types.ModuleType("cuda")
    cuda.__path__ = []
    bindings = types.ModuleType("cuda.bindings")
    bindings.__path__ = []
    bindings.driver = cu
    cuda.bindings = bindings
    for name, m in (("cuda", cuda), ("cuda.bindings", bindings), ("cuda.bindings.driver", cu)):
        monkeypatch.setitem(sys.modules, name, m)
    return cu


# -- selection and its errors -------------------------------------------------------------

def test_errors_are_exported():
    assert issubclass(UnavailableError, RuntimeError) and issubclass(CompileError, RuntimeError)
    assert tfc.errors.UnavailableError is UnavailableError
    assert issubclass(D.CudaOutOfMemoryError, MemoryError) and issubclass(D.CudaError, RuntimeError)


def test_import_tfc_imports_no_cuda_library():
    code = ("import sys, tfc, tfc.backends.cuda.driver, tfc.backends.cuda.memory;"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('pycuda', 'cuda', 'cupy', 'torch')];"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_nothing_installed(fresh, monkeypatch):
    no_pycuda(monkeypatch)
    no_bindings(monkeypatch)
    with pytest.raises(UnavailableError) as e:
        D.get_driver()
    msg = str(e.value)
    assert "tried pycuda, then cuda-bindings" in msg
    assert "pycuda: not installed (No module named 'pycuda')" in msg
    assert "cuda-bindings: not installed (No module named 'cuda')" in msg


def test_no_libcuda(fresh, monkeypatch):
    # pycuda installed, its extension cannot load libcuda; cuda-bindings cannot dlopen it
    block_import(monkeypatch, {"pycuda.driver", "pycuda"},
                 "libcuda.so.1: cannot open shared object file: No such file or directory", "_driver")
    fake_bindings(monkeypatch, init=RuntimeError("Failed to dlopen libcuda.so.1"))
    with pytest.raises(UnavailableError) as e:
        D.get_driver()
    msg = str(e.value)
    assert "pycuda: no libcuda (libcuda.so.1: cannot open shared object file" in msg
    assert "cuda-bindings: no libcuda (Failed to dlopen libcuda.so.1)" in msg
    assert msg.count("no NVIDIA driver on this machine") == 2


def test_no_device(fresh, monkeypatch):
    fake_pycuda(monkeypatch, init_error="cuInit failed: no CUDA-capable device is detected")
    fake_bindings(monkeypatch, init=CUresult.CUDA_ERROR_NO_DEVICE)
    with pytest.raises(UnavailableError) as e:
        D.get_driver()
    msg = str(e.value)
    assert "pycuda: no device (cuInit failed: no CUDA-capable device is detected)" in msg
    assert "cuda-bindings: no device (cuInit: CUDA_ERROR_NO_DEVICE (fake error text))" in msg


def test_zero_devices(fresh, monkeypatch):
    fake_pycuda(monkeypatch, count=0)
    fake_bindings(monkeypatch, count=0)
    msg = str(pytest.raises(UnavailableError, D.get_driver).value)
    assert "pycuda: no device" in msg and "cuda-bindings: no device" in msg


def test_init_failed_is_not_a_driver_error_class(fresh, monkeypatch):
    # pycuda's LogicError is no RuntimeError: it must not escape
    drv = fake_pycuda(monkeypatch, init_error="cuInit failed: CUDA driver stub library")
    assert not issubclass(drv.LogicError, RuntimeError)
    fake_bindings(monkeypatch, init=RuntimeError('Function "cuInit" not found'))
    msg = str(pytest.raises(UnavailableError, D.get_driver).value)
    assert "pycuda: initialization failed (cuInit failed: CUDA driver stub library)" in msg
    assert "cuda-bindings: initialization failed (Function \"cuInit\" not found)" in msg


def test_env_selects_one_driver(fresh, monkeypatch):
    no_pycuda(monkeypatch)
    fake_bindings(monkeypatch, mem=HostMemory())
    monkeypatch.setenv("TFC_CUDA_DRIVER", "pycuda")
    msg = str(pytest.raises(UnavailableError, D.get_driver).value)
    assert msg.startswith("no usable CUDA driver (TFC_CUDA_DRIVER=pycuda): pycuda: not installed")
    assert "cuda-bindings" not in msg
    monkeypatch.setenv("TFC_CUDA_DRIVER", "cuda-bindings")
    d = D.get_driver()
    assert isinstance(d, D.CudaBindingsDriver) and D.get_driver() is d  # one per process
    monkeypatch.setenv("TFC_CUDA_DRIVER", "opencl")
    msg = str(pytest.raises(UnavailableError, D.get_driver).value)
    assert "TFC_CUDA_DRIVER='opencl' is none of pycuda, cuda-bindings, simulator" in msg


def test_fallback_to_cuda_bindings(fresh, monkeypatch):
    no_pycuda(monkeypatch)
    fake_bindings(monkeypatch, mem=HostMemory())
    d = D.get_driver()
    assert d.name == "cuda-bindings" and d.device_name == "Fake H200" and d.compute_capability == (9, 0)
    assert D.available() == (d, None)


def test_pycuda_first(fresh, monkeypatch):
    fake_pycuda(monkeypatch, mem=HostMemory())
    fake_bindings(monkeypatch, mem=HostMemory())
    d = D.get_driver()
    assert d.name == "pycuda" and d.device_name == "Fake H100" and d.compute_capability == (9, 0)
    d.close()


def test_simulator_missing_is_unavailable(fresh, monkeypatch):
    monkeypatch.setitem(sys.modules, "tfc.backends.cuda.sim_driver", None)
    monkeypatch.setenv("TFC_CUDA_DRIVER", "simulator")
    msg = str(pytest.raises(UnavailableError, D.get_driver).value)
    assert "(TFC_CUDA_DRIVER=simulator): simulator:" in msg


def test_simulator_selected(fresh, monkeypatch):
    sim = pytest.importorskip("tfc.backends.cuda.sim_driver")
    monkeypatch.setenv("TFC_CUDA_DRIVER", "simulator")
    d = D.get_driver()
    assert isinstance(d, sim.SimulatedDriver) and d.name == "simulator"


# -- the real drivers' code over fake libraries ------------------------------------------

def make(kind, monkeypatch, mem, launches):
    if kind == "pycuda":
        fake_pycuda(monkeypatch, mem=mem, launches=launches)
        return D.PycudaDriver()
    fake_bindings(monkeypatch, mem=mem, launches=launches)
    return D.CudaBindingsDriver()


def roundtrip_and_kernel(d, n=1000, launches=None):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    px, py, po = d.alloc(x.nbytes), d.alloc(y.nbytes), d.alloc(x.nbytes)
    assert px % 256 == py % 256 == po % 256 == 0
    d.copy_htod(px, x)
    d.copy_htod(py, y)
    f = d.function(d.load_module(AXPYB_PTX), "axpyb")
    for a, b, grid in ((1.5, 3, ((n + 127) // 128, 1, 1)), (-0.25, -7, (np.int64((n + 127) // 128), 1, 1))):
        d.memset(po, 0xFF, x.nbytes)  # numpy integers as dimensions too (computed on the host)
        d.launch(f, grid, (128, 1, 1), axpyb_args(px, py, po, a, b, n))
        d.synchronize()
        out = np.empty_like(x)
        d.copy_dtoh(out, po)
        assert np.array_equal(out, axpyb_expected(x, y, a, b))
    back = np.empty_like(x)
    d.copy_dtod(po, px, x.nbytes)
    d.copy_dtoh(back, po)
    assert np.array_equal(back, x)
    for p in (px, py, po):
        d.free(p)
    return f


@pytest.mark.parametrize("kind", ["pycuda", "cuda-bindings"])
def test_driver_code_over_fake_library(kind, monkeypatch):
    mem, launches = HostMemory(), []
    d = make(kind, monkeypatch, mem, launches)
    f = roundtrip_and_kernel(d, launches=launches)
    assert not mem.blocks
    assert len(launches) == 2
    name, grid, block, params, shared, stream = launches[0]
    assert grid == (8, 1, 1) and block == (128, 1, 1) and shared == 0
    assert struct.unpack_from("f", params, 24)[0] == 1.5 and struct.unpack_from("i", params, 28)[0] == 3
    # a launch with other argument types than the first one is refused
    with pytest.raises(TypeError, match="axpyb was launched with arguments"):
        d.launch(f, (1, 1, 1), (1, 1, 1), [np.uint64(0)] * 3 + [np.float64(1), np.int32(0), np.uint64(0)])
    with pytest.raises(TypeError, match="argument 3 is float"):
        d.launch(d.function(d.load_module(AXPYB_PTX), "axpyb"), (1, 1, 1), (1, 1, 1),
                 [np.uint64(0)] * 3 + [1.0, np.int32(0), np.uint64(0)])
    # an empty grid launches nothing
    d.launch(f, (0, 1, 1), (128, 1, 1), axpyb_args(0, 0, 0, 1, 1, 0))
    assert len(launches) == 2
    d.close()


def test_entry_params():
    assert D.entry_params(AXPYB_PTX, "axpyb") == ["u64", "u64", "u64", "f32", "s32", "u64"]
    assert D.entry_params(AXPYB_PTX, "other") is None
    ptx = ".visible .entry k(.param .align 8 .b8 s[16], .param .u32 n)\n{\n ret;\n}"
    assert D.entry_params(ptx, "k") is None  # a struct parameter: not read
    assert D.entry_params(".entry k()\n{\n ret;\n}", "k") == []
    assert D.entry_params(".entry k(.param .u64 .ptr .global .align 16 p, .param .f64 x)", "k") == ["u64", "f64"]


@pytest.mark.parametrize("kind", ["pycuda", "cuda-bindings"])
def test_first_launch_checked_against_the_declaration(kind, monkeypatch):
    mem, launches = HostMemory(), []
    d = make(kind, monkeypatch, mem, launches)
    f = d.function(d.load_module(AXPYB_PTX), "axpyb")
    assert f.declared == ["u64", "u64", "u64", "f32", "s32", "u64"]
    bad = axpyb_args(0, 0, 0, 1.0, 1, 0)
    bad[4] = np.int64(1)  # an index where the kernel takes an s32
    with pytest.raises(TypeError, match=r"axpyb: argument 4 is int64, its parameter is \.param \.s32"):
        d.launch(f, (1, 1, 1), (1, 1, 1), bad)
    bad = axpyb_args(0, 0, 0, 1.0, 1, 0)
    bad[3] = np.float64(1)
    with pytest.raises(TypeError, match=r"argument 3 is float64, its parameter is \.param \.f32"):
        d.launch(f, (1, 1, 1), (1, 1, 1), bad)
    with pytest.raises(TypeError, match="axpyb takes 6 parameters"):
        d.launch(f, (1, 1, 1), (1, 1, 1), axpyb_args(0, 0, 0, 1.0, 1, 0)[:5])
    assert f.packing is None and not launches  # nothing launched, nothing fixed
    d.close()


@pytest.mark.parametrize("kind", ["pycuda", "cuda-bindings"])
def test_driver_errors_over_fake_library(kind, monkeypatch):
    mem = HostMemory(capacity=4096)
    d = make(kind, monkeypatch, mem, [])
    with pytest.raises(CompileError, match=r"JIT refused the PTX module \(Fake H[12]00, sm_90\)"
                                           r"[\s\S]*line 1; error   : bad"):
        d.load_module(AXPYB_PTX.replace("ret;", "bad;"))
    with pytest.raises(D.CudaOutOfMemoryError, match="cuMemAlloc"):
        d.alloc(1 << 20)
    with pytest.raises(D.CudaError, match="cuModuleGetFunction"):
        d.function(d.load_module(AXPYB_PTX), "nope")
    with pytest.raises(TypeError, match="C-contiguous"):
        d.copy_htod(d.alloc(64), np.zeros((4, 4), np.float32)[:, ::2])
    with pytest.raises(ValueError, match="not an allocation"):
        d.free(12345)
    d.alloc(0)  # 0 bytes: a valid address
    d.close()


# -- the caching allocator ------------------------------------------------------------------

def test_size_classes():
    assert M.size_class(0) == M.size_class(1) == M.size_class(512) == 512
    prev = 0
    for n in list(range(0, 5000)) + [10 ** k + j for k in range(4, 11) for j in (-1, 0, 1)]:
        c = M.size_class(n)
        assert c >= n and c >= prev and c % 128 == 0
        assert n <= 512 or c <= n * 1.25 + (M.LARGE_STEP if n >= M.LARGE else 0)
        prev = c
    assert M.size_class(513) == 640 and M.size_class(1025) == 1280 and M.size_class(3 << 20) == 3 << 20
    assert M.size_class(M.LARGE + 1) == M.LARGE + M.LARGE_STEP


def test_allocator_reuses_blocks():
    d = FakeDriver()
    a = M.CachingAllocator(d)
    b1 = a.alloc(1000)
    p1 = b1.ptr
    assert b1.size == 1024 and a.stats()["bytes_in_use"] == 1024 and a.stats()["driver_allocs"] == 1
    del b1  # the last reference: back to the free list
    assert a.stats()["bytes_in_use"] == 0 and a.stats()["bytes_cached"] == 1024
    b2 = a.alloc(900)  # the same size class
    assert b2.ptr == p1 and a.hits == 1 and a.stats()["driver_allocs"] == 1
    b3 = a.alloc(2000)
    assert b3.ptr != p1 and a.stats()["driver_allocs"] == 2
    assert a.stats()["peak_bytes_in_use"] == 1024 + 2048
    b2.release()
    b2.release()  # idempotent
    b3.release()
    assert a.stats()["bytes_cached"] == 3072 and not d.frees
    assert a.empty_cache() == 3072
    assert sorted(d.frees) == sorted([p1, b3.ptr]) and not d.mem.blocks
    assert a.stats()["bytes_cached"] == 0 and a.stats()["driver_frees"] == 2


def test_allocator_blocks_are_usable_memory():
    d = FakeDriver()
    a = M.CachingAllocator(d)
    blocks = [a.alloc(n) for n in (0, 1, 255, 4097, 100_000)]
    for i, b in enumerate(blocks):
        data = np.full(max(b.nbytes, 1), i, np.uint8)
        d.copy_htod(b.ptr, data[:b.nbytes])
    for i, b in enumerate(blocks):
        out = np.empty(b.nbytes, np.uint8)
        d.copy_dtoh(out, b.ptr)
        assert (out == i).all()
    assert len({b.ptr for b in blocks}) == 5


def test_allocator_empties_cache_on_out_of_memory():
    d = FakeDriver(capacity=4096)
    a = M.CachingAllocator(d)
    small = [a.alloc(1024) for _ in range(3)]  # 3 KiB of 4
    for b in small:
        b.release()
    big = a.alloc(2048)  # does not fit beside the cached blocks: they are given back first
    assert a.stats()["bytes_cached"] == 0 and a.stats()["bytes_in_use"] == 2048 and len(d.frees) == 3
    with pytest.raises(D.CudaOutOfMemoryError):
        a.alloc(4096)  # nothing cached to give back
    big.release()


# -- the arena ----------------------------------------------------------------------------------

def test_arena_is_one_allocation_reused():
    d = FakeDriver()
    a = M.CachingAllocator(d)
    arena = M.DeviceArena(a, 10_000)
    assert a.stats()["driver_allocs"] == 0  # nothing until the first call
    with arena.use() as b1:
        p = b1.ptr
    for _ in range(3):
        with arena.use() as b:
            assert b.ptr == p
    assert a.stats()["driver_allocs"] == 1 and a.stats()["bytes_in_use"] == M.size_class(10_000)
    with arena.use(50_000) as b:  # a bigger plan (run-time dimensions): grows
        assert b.nbytes == 50_000
        grown = b.ptr
    with arena.use(100) as b:  # a smaller one keeps the bigger block
        assert b.ptr == grown
    arena.free()
    assert a.stats()["bytes_in_use"] == 0


def test_arena_reentry_gets_its_own_block():
    d = FakeDriver()
    a = M.CachingAllocator(d)
    arena = M.DeviceArena(a, 4096)
    with arena.use() as outer:
        with arena.use() as inner:
            assert inner.ptr != outer.ptr
        assert inner._allocator is None  # released at the inner call's end
        with pytest.raises(RuntimeError, match="in use"):
            arena.free()
    with arena.use() as again:
        assert again.ptr == outer.ptr


def test_arena_failure_leaves_it_free():
    d = FakeDriver(capacity=1024)
    arena = M.DeviceArena(M.CachingAllocator(d), 1 << 20)
    with pytest.raises(D.CudaOutOfMemoryError):
        with arena.use():
            pass
    with arena.use(100) as b:  # not left marked busy
        assert b.ptr


# -- the kernel cache -------------------------------------------------------------------------

def test_kernel_cache_loads_once_per_text_and_capability():
    d = FakeDriver(cc=(8, 0))
    kc = M.KernelCache(d)
    m1 = kc.module(AXPYB_PTX)
    assert kc.module(AXPYB_PTX) is m1 and kc.module("".join(AXPYB_PTX)) is m1
    assert d.loads == [AXPYB_PTX] and kc.loads == 1 and kc.hits == 2
    f = kc.function(AXPYB_PTX, "axpyb")
    assert kc.function(AXPYB_PTX, "axpyb") is f and kc.loads == 1
    other = AXPYB_PTX.replace("axpyb", "axpyc")
    assert kc.module(other) is not m1 and kc.loads == 2 and len(kc) == 2
    assert kc.key(AXPYB_PTX)[1] == (8, 0)
    d9 = FakeDriver(cc=(9, 0))
    assert M.KernelCache(d9).key(AXPYB_PTX) != kc.key(AXPYB_PTX)


def test_kernel_cache_keeps_no_failed_load():
    d = FakeDriver()
    kc = M.KernelCache(d)
    for _ in range(2):
        with pytest.raises(CompileError):
            kc.module("bad ptx")
    assert len(kc) == 0


def test_per_driver_state():
    d1, d2 = FakeDriver(), FakeDriver()
    assert M.allocator_for(d1) is M.allocator_for(d1) is not M.allocator_for(d2)
    assert M.kernel_cache_for(d1) is M.kernel_cache_for(d1) is not M.kernel_cache_for(d2)


def test_kernel_through_cache_allocator_and_arena():
    d = FakeDriver()
    a, kc = M.CachingAllocator(d), M.KernelCache(d)
    n = 777
    x = np.arange(n, dtype=np.float32)
    arena = M.DeviceArena(a, 3 * x.nbytes)
    for a_ in (2.0, 3.0):
        with arena.use() as blk:
            px, py, po = blk.ptr, blk.ptr + 3200, blk.ptr + 6400  # 64-byte aligned offsets
            d.copy_htod(px, x)
            d.copy_htod(py, x)
            d.launch(kc.function(AXPYB_PTX, "axpyb"), (7, 1, 1), (128, 1, 1), axpyb_args(px, py, po, a_, 1, n))
            out = np.empty_like(x)
            d.copy_dtoh(out, po)
            assert np.array_equal(out, axpyb_expected(x, x, a_, 1))
    assert kc.loads == 1 and a.stats()["driver_allocs"] == 1


# -- on a GPU -----------------------------------------------------------------------------------

REAL = ["pycuda", "cuda-bindings"]


def real_driver(kind):
    d, reason = D.available(kind)
    if d is None:
        pytest.skip(reason)
    return d


@pytest.mark.gpu
@pytest.mark.parametrize("kind", REAL)
def test_gpu_roundtrip_and_kernel(kind):
    d = real_driver(kind)
    assert d.compute_capability >= (8, 0)
    roundtrip_and_kernel(d, n=1_000_003)
    for n in (0, 1, 257):  # odd and empty sizes
        x = np.arange(n, dtype=np.float32)
        p = d.alloc(x.nbytes)
        assert p % 256 == 0
        d.copy_htod(p, x)
        out = np.full_like(x, -1)
        d.copy_dtoh(out, p)
        assert np.array_equal(out, x)
        d.memset(p, 0, x.nbytes)
        d.copy_dtoh(out, p)
        assert not out.any()
        d.free(p)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", REAL)
def test_gpu_compile_error_has_the_jit_log(kind):
    d = real_driver(kind)
    with pytest.raises(CompileError, match=r"ptxas application ptx input, line \d+; error   : "
                                           r"Unknown symbol '%r7'") as e:
        d.load_module(AXPYB_PTX.replace("add.rn.f32 %f7", "add.rn.f32 %r7"))
    assert d.device_name in str(e.value)  # (the JIT log, as seen on an H100)


def allocator_cache_and_arena(d, n):
    a, kc = M.CachingAllocator(d), M.KernelCache(d)
    x = np.linspace(-3, 3, n, dtype=np.float32)
    step = (x.nbytes + 63) // 64 * 64  # 64-byte aligned arena offsets
    arena = M.DeviceArena(a, 3 * step)
    for b in (1, 2, 3):
        with arena.use() as blk:
            px, py, po = blk.ptr, blk.ptr + step, blk.ptr + 2 * step
            d.copy_htod(px, x)
            d.copy_htod(py, x[::-1].copy())
            d.launch(kc.function(AXPYB_PTX, "axpyb"), ((n + 255) // 256, 1, 1), (256, 1, 1),
                     axpyb_args(px, py, po, 0.5, b, n))
            out = np.empty_like(x)
            d.copy_dtoh(out, po)
            assert np.array_equal(out, axpyb_expected(x, x[::-1], 0.5, b))
    assert kc.loads == 1 and a.stats()["driver_allocs"] == 1
    blocks = [a.alloc(1 << 16) for _ in range(4)]
    del blocks
    assert a.stats()["bytes_cached"] >= 4 << 16
    arena.free()
    assert a.stats()["bytes_in_use"] == 0 and a.empty_cache() > 0 and a.stats()["bytes_cached"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("kind", REAL)
def test_gpu_allocator_cache_and_arena(kind):
    allocator_cache_and_arena(real_driver(kind), 100_001)


# -- on the PTX simulator (tfc/backends/cuda/sim_driver.py) -----------------------------------

def sim_driver():
    return pytest.importorskip("tfc.backends.cuda.sim_driver").SimulatedDriver()


def test_simulator_roundtrip_and_kernel():
    roundtrip_and_kernel(sim_driver(), n=1000)


def test_simulator_allocator_cache_and_arena():
    allocator_cache_and_arena(sim_driver(), 1001)


@pytest.mark.gpu
def test_gpu_default_driver():
    d = real_driver(None) if os.environ.get("TFC_CUDA_DRIVER") != "simulator" else pytest.skip("simulator")
    assert d.name in REAL


def test_bench_gpu_rows_on_the_simulator(monkeypatch):
    """bench/gpu.py's tfc rows at tiny sizes on the simulator: each row is a
    checked figure or an error's text, never a wrong result."""
    pytest.importorskip("tfc.backends.cuda.sim_driver")
    import importlib.util
    import pathlib

    monkeypatch.setenv("TFC_CUDA_DRIVER", "simulator")
    path = pathlib.Path(__file__).parent.parent / "bench" / "gpu.py"
    spec = importlib.util.spec_from_file_location("bench_gpu", path)
    B = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(B)
    tg = B.TfcGPU()
    assert tg.driver is not None and tg.driver.name == "simulator"
    timer, rows = B.Timer(1, tg.sync), []
    B.bandwidth_rows(None, tg, timer, 1000, rows)
    B.elementwise_rows(None, tg, timer, 1001, rows)
    B.softmax_rows(None, tg, timer, (5, 33), rows)
    B.eager_rows(None, tg, timer, rows)
    text = B.table(rows, rows[0].rate)
    assert "WRONG" not in text
    checked = [r for r in rows if r.name.startswith(("tfc cuda", "tfc eager"))]
    assert len(checked) == 7
    for r in checked:
        assert r.error or (r.seconds is not None and "checked" in r.note), (r.name, r.note)
    assert rows[0].rate > 0  # the driver's copy_dtod


def test_pycuda_close_after_a_fault(monkeypatch):
    """At exit the context is popped and the allocations freed even when every
    call fails (a faulted kernel): pycuda aborts the process otherwise."""
    mem = HostMemory()
    drv = fake_pycuda(monkeypatch, mem=mem, launches=[])
    d = D.PycudaDriver()
    d.alloc(100), d.alloc(1000)
    assert drv.Context.current is d.context and len(mem.blocks) == 2
    with d.activate():  # current already: nothing pushed, nothing popped
        assert drv.Context.current is d.context
    assert drv.Context.current is d.context

    def fault():
        raise drv.LogicError("cuCtxSynchronize failed: an illegal memory access was encountered")
    monkeypatch.setattr(drv.Context, "synchronize", staticmethod(fault))
    with pytest.raises(D.CudaError, match="illegal memory access"):
        d.synchronize()
    d.close()
    assert drv.Context.current is None and not mem.blocks
    d.free(12345)  # after close: nothing to do


def test_cuda_namespace_without_bindings(fresh, monkeypatch):
    """Another package of the cuda namespace (cuda-pathfinder, cuda-core) without
    cuda-bindings: the reason is the missing cuda.bindings."""
    no_pycuda(monkeypatch)
    cuda = types.ModuleType("cuda")
    cuda.__path__ = []
    monkeypatch.setitem(sys.modules, "cuda", cuda)
    block_import(monkeypatch, {"cuda.bindings"}, "No module named 'cuda.bindings'")
    block_import(monkeypatch, {"cuda.cuda"}, "No module named 'cuda.cuda'")
    msg = str(pytest.raises(UnavailableError, D.get_driver).value)
    assert "cuda-bindings: not installed (No module named 'cuda.bindings')" in msg


THREAD_SCRIPT = r"""
import sys, threading
import numpy as np
sys.path.insert(0, "tests")
from test_cuda_driver import AXPYB_PTX, axpyb_args, axpyb_expected
from tfc.backends.cuda import driver as D
d = D.get_driver(sys.argv[1])
f = d.function(d.load_module(AXPYB_PTX), "axpyb")
x = np.arange(1000, dtype=np.float32)
p = d.alloc(x.nbytes)
d.copy_htod(p, x)
out = {}

def work():
    with d.activate():  # the context current in this thread too
        q = d.alloc(x.nbytes)
        d.launch(f, (4, 1, 1), (256, 1, 1), axpyb_args(p, p, q, 2.0, 1, x.size))
        r = np.empty_like(x)
        d.copy_dtoh(r, q)
        d.free(q)
        out["r"] = r
    with d.activate():  # again: nothing left pushed
        pass

t = threading.Thread(target=work)
t.start()
t.join()
assert np.array_equal(out["r"], axpyb_expected(x, x, 2.0, 1)), out
print("thread ok")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("kind", REAL)
def test_gpu_other_thread(kind):
    """A thread that activates the driver runs on its context, and the process
    exits cleanly (pycuda aborts at exit if a context stack is left unclean)."""
    real_driver(kind)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", THREAD_SCRIPT, kind], cwd=root, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "thread ok" in r.stdout, r.stdout + r.stderr
    assert "PyCUDA ERROR" not in r.stderr and "WARNING" not in r.stderr, r.stderr


def test_allocator_release_inside_its_own_lock():
    """A block released while the allocator holds its lock in the same thread:
    what the garbage collector does when it frees a block in a reference cycle
    while the allocator creates an object under its lock."""
    import threading

    d = FakeDriver()
    a = M.CachingAllocator(d)
    b = a.alloc(100)
    done = threading.Event()

    def collector():
        with a._lock:
            b.release()
        done.set()
    t = threading.Thread(target=collector, daemon=True)
    t.start()
    t.join(5)
    assert done.is_set(), "a release inside the allocator's lock deadlocked"
    assert a.stats()["bytes_cached"] == 512 and a.stats()["bytes_in_use"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("kind", REAL)
def test_gpu_out_of_memory(kind):
    """The device's refusal is CudaOutOfMemoryError (a MemoryError), for the
    driver and through the allocator (which empties its cache and tries again)."""
    d = real_driver(kind)
    with pytest.raises(D.CudaOutOfMemoryError, match="cuMemAlloc"):
        d.alloc(1 << 44)  # 16 TiB
    a = M.CachingAllocator(d)
    a.alloc(1 << 20).release()
    assert a.stats()["bytes_cached"] == 1 << 20
    with pytest.raises(MemoryError):
        a.alloc(1 << 44)
    assert a.stats()["bytes_cached"] == 0 and a.stats()["driver_frees"] == 1
    p = d.alloc(1 << 20)  # the driver still works
    d.free(p)
