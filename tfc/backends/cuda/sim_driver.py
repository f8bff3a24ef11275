"""``SimulatedDriver``: the Driver of docs/gpu.md over the PTX simulator
(tfc/backends/cuda/simulator.py), so that the host program, the arena, the
allocator and the kernel cache run end to end without a GPU
(``TFC_CUDA_DRIVER=simulator``).

Device memory is a ``simulator.Memory``: allocations never reuse an address,
so a copy or a kernel access through a freed pointer raises SimulationError
(use after free), as does an access outside every allocation. ``load_module``
parses the PTX as a JIT would load it (a malformed module, or a ``.version``
or ``.target`` the CUDA 13.0 driver's JIT refuses, raises CompileError; an
instruction outside the simulator's subset raises SimulationError);
``launch`` runs the whole grid before it returns (the one stream is
synchronous).

``stats`` counts what the driver was asked to do (allocations, frees, copies
and their bytes, memsets, modules, launches, synchronizations) and
``launches`` lists each launch as (kernel name, grid, block) in order: the
tests of the kernel cache and of launch order read them.
"""
from __future__ import annotations

import re

import numpy as np

from tfc.backends.cuda import simulator
from tfc.backends.cuda.driver import ArgPacking, CudaError, Driver, Kernel
from tfc.core.errors import CompileError

_MAX_VERSION = (9, 0)     # the CUDA 13.0 driver's JIT (ptx-notes.md section 1)
_MAX_TARGET = 90


class _Module:
    __slots__ = ("program", "ptx")

    def __init__(self, program, ptx):
        self.program = program
        self.ptx = ptx


class SimulatedDriver(Driver):
    name = "simulator"
    device_name = "tfc PTX simulator"
    compute_capability = (9, 0)

    def __init__(self, memory: simulator.Memory | None = None, check_ptxas: bool = False):
        """``check_ptxas``: also assemble each module with ptxas for sm_90
        (tfc/backends/cuda/ptxas.py) at load, as the real JIT would check it."""
        self.memory = memory if memory is not None else simulator.Memory()
        self.check_ptxas = check_ptxas
        self.stats = {"allocs": 0, "frees": 0, "bytes_allocated": 0, "htod": 0, "htod_bytes": 0,
                      "dtoh": 0, "dtoh_bytes": 0, "dtod": 0, "dtod_bytes": 0, "memsets": 0,
                      "modules": 0, "functions": 0, "launches": 0, "empty_launches": 0,
                      "synchronizes": 0}
        self.launches: list[tuple[str, tuple, tuple]] = []

    # memory ----------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> int:
        nbytes = int(nbytes)
        if nbytes < 0:
            raise CudaError(f"alloc of {nbytes} bytes", "cuMemAlloc", "CUDA_ERROR_INVALID_VALUE")
        ptr = self.memory.alloc(nbytes)
        self.stats["allocs"] += 1
        self.stats["bytes_allocated"] += nbytes
        return ptr

    def free(self, ptr: int) -> None:
        self.memory.free(int(ptr))
        self.stats["frees"] += 1

    def copy_htod(self, dst: int, src) -> None:
        src = _host_array(src, "copy_htod source")
        self.memory.write(int(dst), src)
        self.stats["htod"] += 1
        self.stats["htod_bytes"] += src.nbytes

    def copy_dtoh(self, dst, src: int) -> None:
        dst = _host_array(dst, "copy_dtoh destination", writable=True)
        self.memory.read_into(dst, int(src))
        self.stats["dtoh"] += 1
        self.stats["dtoh_bytes"] += dst.nbytes

    def copy_dtod(self, dst: int, src: int, nbytes: int) -> None:
        self.memory.copy(int(dst), int(src), int(nbytes))
        self.stats["dtod"] += 1
        self.stats["dtod_bytes"] += int(nbytes)

    def memset(self, dst: int, byte: int, nbytes: int) -> None:
        self.memory.fill(int(dst), int(byte), int(nbytes))
        self.stats["memsets"] += 1

    # modules and launches ----------------------------------------------------------------

    def load_module(self, ptx: str):
        _check_header(ptx)
        try:
            program = simulator.parse(ptx)
        except simulator.PTXSyntaxError as e:
            raise CompileError(f"the CUDA driver's JIT refused the PTX module ({self.device_name}, "
                               f"sm_90):\n{e}") from None
        if self.check_ptxas:
            from tfc.backends.cuda import ptxas
            try:
                ptxas.assemble(ptx, "sm_90")
            except Exception as e:   # ptxas's own error class: the JIT's refusal
                raise CompileError(f"the CUDA driver's JIT refused the PTX module ({self.device_name}, "
                                   f"sm_90):\n{e}") from None
        self.stats["modules"] += 1
        return _Module(program, ptx)

    def function(self, module, name: str):
        if not isinstance(module, _Module):
            raise TypeError(f"function: {module!r} is not a module of this driver")
        if name not in module.program.kernels:
            raise CudaError(f"cuModuleGetFunction({name!r}): no such kernel in the module (has "
                            f"{', '.join(module.program.kernels)})", "cuModuleGetFunction",
                            "CUDA_ERROR_NOT_FOUND")
        self.stats["functions"] += 1
        return Kernel(module.program.kernels[name], name, module)

    def launch(self, function, grid, block, args, shared_bytes: int = 0) -> None:
        if len(grid) != 3 or len(block) != 3:
            raise ValueError(f"grid and block must be 3-tuples, got {grid!r} and {block!r}")
        # the real drivers' argument checks: numpy scalars of the launch types, the same each time
        p = function.packing
        if p is None:
            function.packing = ArgPacking(function.name, args)
        else:
            p.check(function.name, args)
        grid = tuple(int(g) for g in grid)
        block = tuple(int(b) for b in block)
        if not (grid[0] and grid[1] and grid[2]):
            self.stats["empty_launches"] += 1
            return
        simulator.run(function.module.program, function.name, grid, block, list(args), self.memory,
                      int(shared_bytes))
        self.stats["launches"] += 1
        self.launches.append((function.name, grid, block))

    def synchronize(self) -> None:
        self.stats["synchronizes"] += 1


def _host_array(a, what, writable=False):
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{what} must be a numpy array, got {type(a).__name__}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{what} must be C-contiguous")
    if writable and not a.flags.writeable:
        raise ValueError(f"{what} must be writable")
    return a


def _check_header(ptx: str):
    text = re.sub(r"//[^\n]*", "", ptx)
    m = re.search(r"\.version\s+(\d+)\.(\d+)", text)
    if not m:
        raise CompileError("the CUDA driver's JIT refused the PTX module: no .version directive")
    if (int(m.group(1)), int(m.group(2))) > _MAX_VERSION:
        raise CompileError(f"the CUDA driver's JIT refused the PTX module: Unsupported .version "
                           f"{m.group(1)}.{m.group(2)}; current version is '9.0'")
    m = re.search(r"\.target\s+sm_(\d+)([a-z]?)", text)
    if not m:
        raise CompileError("the CUDA driver's JIT refused the PTX module: no .target sm_XX directive")
    if int(m.group(1)) > _MAX_TARGET or m.group(2) and int(m.group(1)) != _MAX_TARGET:
        raise CompileError(f"the CUDA driver's JIT refused the PTX module: .target sm_{m.group(1)}"
                           f"{m.group(2)} is not supported by the device (sm_90)")


__all__ = ["SimulatedDriver"]
