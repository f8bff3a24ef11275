"""Device memory and loaded kernels over a Driver (docs/gpu.md, docs/gpu-runtime.md).

- ``CachingAllocator``: fresh device buffers. A request is rounded up to its
  size class and served from that class's free list when a block is there,
  else from the driver; a dropped block goes back to its free list, not to the
  driver. ``empty_cache()`` gives the free blocks back; an allocation the
  driver refuses for lack of memory empties the cache and tries once more.
- ``DeviceArena``: the arena of one compiled function's memory plan, one
  allocation reused by every call.
- ``KernelCache``: loaded modules keyed by (the PTX text's SHA-256, the device's
  compute capability), so a kernel is JIT-compiled once per process.

Reusing a block without waiting for the kernels that used it is safe because
the drivers issue everything on one stream (docs/gpu-runtime.md): work queued
after the block's reuse runs after the work queued before.
"""
from __future__ import annotations

import hashlib
import threading

MIN_BLOCK = 512          # the smallest size class (and the size of a 0-byte request)
LARGE = 1 << 28          # from 256 MiB on, classes are multiples of LARGE_STEP
LARGE_STEP = 2 << 20


def size_class(nbytes: int) -> int:
    """The size a request of ``nbytes`` is served with: at least MIN_BLOCK; up to
    LARGE, four classes per power of two (at most 25% more than asked); from
    LARGE on, a multiple of 2 MiB."""
    if nbytes <= MIN_BLOCK:
        return MIN_BLOCK
    if nbytes >= LARGE:
        return -(-nbytes // LARGE_STEP) * LARGE_STEP
    step = (1 << (nbytes - 1).bit_length()) >> 3  # an eighth of the power of two above
    return -(-nbytes // step) * step


class Allocation:
    """A device block of a CachingAllocator: ``ptr`` (256-byte aligned),
    ``nbytes`` (asked for), ``size`` (its size class). It goes back to the
    allocator's free list on ``release()`` or when the last reference goes."""

    __slots__ = ("ptr", "nbytes", "size", "_allocator", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, size: int, allocator):
        self.ptr = ptr
        self.nbytes = nbytes
        self.size = size
        self._allocator = allocator

    def release(self) -> None:
        a, self._allocator = self._allocator, None
        if a is not None:
            a._release(self)

    def __del__(self):
        a = self._allocator
        if a is not None:
            self._allocator = None
            try:
                a._release(self)
            except Exception:  # noqa: BLE001 - at interpreter exit the allocator may be half gone
                pass

    def __int__(self):
        return self.ptr

    def __repr__(self):
        state = "live" if self._allocator is not None else "released"
        return f"<Allocation {self.ptr:#x} {self.nbytes}/{self.size} bytes {state}>"


class CachingAllocator:
    """Fresh device buffers for one driver (see the module docstring).
    ``stats()``: bytes in use (size classes of live blocks), bytes cached (free
    blocks), the peak of bytes in use, and counts of driver allocations and
    frees, cache hits and misses."""

    def __init__(self, driver):
        self.driver = driver
        self._free: dict = {}          # size class -> [address, ...]
        # reentrant: creating an object under the lock may run the garbage
        # collector, whose finalizers (Allocation.__del__) release blocks here
        self._lock = threading.RLock()
        self.bytes_in_use = 0
        self.bytes_cached = 0
        self.peak_bytes_in_use = 0
        self.driver_allocs = 0
        self.driver_frees = 0
        self.hits = 0
        self.misses = 0

    def alloc(self, nbytes: int) -> Allocation:
        # the fast path (a cached block: every eager op's result) takes the lock once
        if nbytes <= MIN_BLOCK:
            if nbytes < 0:
                raise ValueError(f"alloc of {nbytes} bytes")
            size = MIN_BLOCK
        else:
            size = size_class(nbytes)
        with self._lock:
            blocks = self._free.get(size)
            if blocks:
                ptr = blocks.pop()
                self.bytes_cached -= size
                self.hits += 1
                used = self.bytes_in_use = self.bytes_in_use + size
                if used > self.peak_bytes_in_use:
                    self.peak_bytes_in_use = used
            else:
                ptr = None
                self.misses += 1
        if ptr is not None:
            return Allocation(ptr, nbytes, size, self)
        ptr = self._driver_alloc(size)
        with self._lock:
            used = self.bytes_in_use = self.bytes_in_use + size
            if used > self.peak_bytes_in_use:
                self.peak_bytes_in_use = used
        return Allocation(ptr, nbytes, size, self)

    def _driver_alloc(self, size: int) -> int:
        try:
            ptr = self.driver.alloc(size)
        except MemoryError:
            if not self.bytes_cached:
                raise
            self.empty_cache()
            ptr = self.driver.alloc(size)
        self.driver_allocs += 1
        return ptr

    def _release(self, a: Allocation) -> None:
        size = a.size
        with self._lock:
            self.bytes_in_use -= size
            self.bytes_cached += size
            blocks = self._free.get(size)
            if blocks is None:
                self._free[size] = [a.ptr]
            else:
                blocks.append(a.ptr)

    def empty_cache(self) -> int:
        """Give every free block back to the driver; the bytes given back."""
        with self._lock:
            free, self._free = self._free, {}
            freed, self.bytes_cached = self.bytes_cached, 0
        for blocks in free.values():
            for ptr in blocks:
                self.driver.free(ptr)
                self.driver_frees += 1
        return freed

    def stats(self) -> dict:
        return {"bytes_in_use": self.bytes_in_use, "bytes_cached": self.bytes_cached,
                "peak_bytes_in_use": self.peak_bytes_in_use, "driver_allocs": self.driver_allocs,
                "driver_frees": self.driver_frees, "hits": self.hits, "misses": self.misses}

    def reset_peak(self) -> None:
        self.peak_bytes_in_use = self.bytes_in_use


class DeviceArena:
    """The arena of one compiled function: one allocation of the memory plan's
    arena size, made at the first call and reused by every later one.

    ``with arena.use(nbytes) as block:`` gives the block (an Allocation) for one
    call. ``nbytes`` (the plan's size, which may depend on run-time dimensions)
    grows the arena when larger than the block. A call made while another call
    holds the arena (re-entry, another thread) gets a block of its own, freed
    when it ends: two running calls never share their temporaries."""

    def __init__(self, allocator: CachingAllocator, nbytes: int = 0):
        self.allocator = allocator
        self.nbytes = int(nbytes)
        self.block: Allocation | None = None
        self._busy = False
        self._lock = threading.Lock()

    def use(self, nbytes: int | None = None):
        return _ArenaUse(self, self.nbytes if nbytes is None else int(nbytes))

    def _acquire(self, nbytes: int):
        with self._lock:
            if self._busy:
                return self.allocator.alloc(nbytes), False
            self._busy = True
        try:
            if self.block is None or self.block.nbytes < nbytes:
                if self.block is not None:
                    self.block.release()
                    self.block = None
                self.block = self.allocator.alloc(nbytes)
        except BaseException:
            self._busy = False
            raise
        return self.block, True

    def free(self) -> None:
        """Return the arena's block to the allocator (the next call allocates again)."""
        with self._lock:
            if self._busy:
                raise RuntimeError("the arena is in use by a running call")
            if self.block is not None:
                self.block.release()
                self.block = None


class _ArenaUse:
    __slots__ = ("arena", "nbytes", "block", "own")

    def __init__(self, arena, nbytes):
        self.arena = arena
        self.nbytes = nbytes

    def __enter__(self) -> Allocation:
        self.block, self.own = self.arena._acquire(self.nbytes)
        return self.block

    def __exit__(self, *exc):
        if self.own:
            self.arena._busy = False
        else:
            self.block.release()
        self.block = None
        return False


class KernelCache:
    """Loaded modules of one driver, keyed by (SHA-256 of the PTX text, the
    device's compute capability): the same PTX is JIT-loaded once per process.
    ``function(ptx, name)`` also caches the function handle, so its argument
    packing (built at its first launch) is built once. Lookups by a PTX string
    seen before skip the hash (the text's digest is remembered)."""

    def __init__(self, driver):
        self.driver = driver
        self._modules: dict = {}     # (digest, capability) -> module
        self._functions: dict = {}   # (digest, capability, name) -> function
        self._digests: dict = {}     # PTX text -> digest
        self._lock = threading.Lock()
        self.loads = 0
        self.hits = 0

    def key(self, ptx: str) -> tuple:
        d = self._digests.get(ptx)
        if d is None:
            d = self._digests[ptx] = hashlib.sha256(ptx.encode()).hexdigest()
        return d, tuple(self.driver.compute_capability)

    def module(self, ptx: str):
        k = self.key(ptx)
        with self._lock:
            m = self._modules.get(k)
            if m is not None:
                self.hits += 1
                return m
            m = self.driver.load_module(ptx)  # a CompileError leaves nothing cached
            self.loads += 1
            self._modules[k] = m
            return m

    def function(self, ptx: str, name: str):
        k = self.key(ptx) + (name,)
        f = self._functions.get(k)
        if f is None:
            f = self._functions[k] = self.driver.function(self.module(ptx), name)
        return f

    def __len__(self):
        return len(self._modules)


_per_driver: dict = {}   # id(driver) -> (driver, allocator, kernel cache)
_per_driver_lock = threading.Lock()


def _state(driver):
    with _per_driver_lock:
        s = _per_driver.get(id(driver))
        if s is None or s[0] is not driver:
            s = _per_driver[id(driver)] = (driver, CachingAllocator(driver), KernelCache(driver))
        return s


def allocator_for(driver) -> CachingAllocator:
    """The process's caching allocator of ``driver``."""
    return _state(driver)[1]


def kernel_cache_for(driver) -> KernelCache:
    """The process's kernel cache of ``driver``."""
    return _state(driver)[2]


__all__ = ["Allocation", "CachingAllocator", "DeviceArena", "KernelCache", "allocator_for",
           "kernel_cache_for", "size_class"]
