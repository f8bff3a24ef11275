"""Run-time support of the generated numpy modules: the arena pool, per-thread
chunk scratch, the thread pool that runs chunks, library-call conformance, and
errors raised in generated code reported as eager reports them (``located``)."""
from __future__ import annotations

import math
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from tfc.backends.numpy import blas
from tfc.core.registry import REGISTRY

# threads for chunked kernels (numpy ufuncs release the GIL); TFC_NUM_THREADS=1 disables
NUM_THREADS = int(os.environ.get("TFC_NUM_THREADS", "0")) or (os.cpu_count() or 1)
# Elements below which a kernel runs on the calling thread: handing a chunk to
# another thread costs tens of microseconds, more than a 1 MB kernel saves on
# a small machine (measured: the L-BFGS two-loop recursion ran 1.8x slower with
# 64K as the threshold on 2 cores).
PARALLEL_MIN = 1 << 20

_pool = None
_pool_lock = threading.Lock()


def pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                blas.shorten_spin_wait()  # OpenBLAS's idle threads must not hold the pool's cores
                _pool = ThreadPoolExecutor(max(1, NUM_THREADS - 1), thread_name_prefix="tfc-chunks")
    return _pool


def _refs(buffers: list, i: int) -> int:
    return sys.getrefcount(buffers[i])


# _refs of an array referenced by its list only (calibrated: it depends on the
# interpreter). Free-threaded builds defer reference counts: no reuse there.
_ONLY_LISTED = _refs([np.empty(0)], 0)
_REUSE = getattr(sys, "_is_gil_enabled", lambda: True)()
CACHED_PER_SHAPE = 2  # large results kept for reuse per (shape, dtype) of a function


class Runtime:
    """One per compiled function: its arena pool, its threads' scratch and a
    cache of its large result buffers."""

    def __init__(self, arena_size: int, scratch_bytes: int):
        self.arena_size = arena_size
        self.scratch_bytes = scratch_bytes
        self._arenas = []
        self._local = threading.local()
        self._results: dict = {}
        self._results_lock = threading.Lock()

    # -- large results: a caching allocator. A fresh np.empty of many MiB is
    # mapped anew and page-faulted in by the kernel writing it, every call (as
    # much time as a copy); a buffer of an earlier call that nothing references
    # any more (the caller dropped the result, and every view of it) is reused.
    def empty(self, shape, dtype):
        if not _REUSE:
            return np.empty(shape, dtype)
        with self._results_lock:  # two calls at once must not take the same buffer
            bufs = self._results.setdefault((shape, dtype), [])
            for i in range(len(bufs)):
                if _refs(bufs, i) == _ONLY_LISTED:
                    return bufs[i]
            a = np.empty(shape, dtype)
            if len(bufs) < CACHED_PER_SHAPE:
                bufs.append(a)
            return a

    # -- the arena: allocated once, reused by later calls (one per concurrent call)
    def acquire(self, make_views):
        try:
            return self._arenas.pop()
        except IndexError:
            return make_views(np.empty(self.arena_size, np.uint8))

    def release(self, views):
        self._arenas.append(views)

    # -- per-thread scratch for chunks: one byte buffer, typed views cached per kernel
    def scratch(self, key, spec):
        loc = self._local
        cache = getattr(loc, "views", None)
        if cache is None:
            cache = loc.views = {}
            loc.raw = np.empty(self.scratch_bytes, np.uint8)
        views = cache.get(key)
        if views is None:
            views = []
            for off, dtype, shape in spec:
                n = int(np.prod(shape)) * np.dtype(dtype).itemsize
                views.append(loc.raw[off:off + n].view(dtype).reshape(shape))
            cache[key] = views
        return views

    def run_chunks(self, kernel, args, n: int, rows: int, row_elems: int, key, spec):
        """kernel(*args, lo, hi, T) over rows [0, n) in chunks of ``rows``; on the
        pool from PARALLEL_MIN elements (``row_elems`` per row, weighted by the
        emitter for a kernel of many passes)."""
        self._each(kernel, args, [(lo, min(lo + rows, n)) for lo in range(0, n, rows)],
                   n * row_elems >= PARALLEL_MIN, key, spec)

    def tree_sum(self, kernel, args, n: int, leaf: int, key, spec) -> tuple:
        """The sums of the n elements of each sequence that kernel(*args, lo,
        hi, T) makes for [lo, hi) and sums (a tuple of np.add.reduce), each
        equal to np.add.reduce over all of its elements: numpy sums a
        contiguous array pairwise, splitting it in halves rounded down to a
        multiple of 8, so parts of at most ``leaf`` elements cut at those
        splits, summed alike and added in the tree's order, give the same
        bits, without the whole array ever existing."""
        parts = []

        def split(lo, hi):
            if hi - lo <= leaf:
                parts.append((lo, hi))
                return
            half = (hi - lo) // 2
            half -= half % 8
            split(lo, lo + half)
            split(lo + half, hi)

        split(0, n)
        sums = iter(self._each(kernel, args, parts, n >= PARALLEL_MIN, key, spec))

        def combine(lo, hi):
            if hi - lo <= leaf:
                return next(sums)
            half = (hi - lo) // 2
            half -= half % 8
            # numpy scalars: the dtype's addition
            return tuple(a + b for a, b in zip(combine(lo, lo + half), combine(lo + half, hi)))

        return combine(0, n)

    def _each(self, kernel, args, ranges, parallel: bool, key, spec) -> list:
        """kernel(*args, lo, hi, T) for every (lo, hi) of ``ranges``, on the thread
        pool when ``parallel``; their results in order."""
        results = [None] * len(ranges)
        if len(ranges) == 1 or NUM_THREADS == 1 or not parallel:
            T = self.scratch(key, spec)
            for i, (lo, hi) in enumerate(ranges):
                results[i] = kernel(*args, lo, hi, T)
            return results
        # ranges handed out one at a time (next() on a shared iterator is atomic
        # under the GIL): a worker slowed by another process takes fewer; the
        # calling thread works too instead of waiting
        todo = iter(enumerate(ranges))

        def task():
            T = self.scratch(key, spec)
            with np.errstate(all="ignore"):
                for i, (lo, hi) in todo:
                    results[i] = kernel(*args, lo, hi, T)

        futures = [pool().submit(task) for _ in range(min(NUM_THREADS, len(ranges)) - 1)]
        try:
            task()
        finally:
            wait(futures)  # no chunk may still be running when the call returns or raises
        for f in futures:
            f.result()
        return results


def bview(a, bmap, rank: int):
    """Input ``a`` as an array of ``rank`` dims broadcasting against the
    iteration shape (see tfc.backends.vectorized.input_view)."""
    from tfc.backends.vectorized import input_view

    return input_view(a, bmap, rank)


def load_rows(buf, index, grid):
    """``buf[(*index, grid)]``, ``grid`` the open grid along the last of the
    kernel's dims, which spans ``buf``'s last dim whole: where each of ``index``
    is constant along that dim (size 1 there: a gather's row ids), fancy
    indexing by ``index`` alone, numpy's fast path of whole rows (0.02 against
    0.28 ms for [32, 64] ids into a [54, 64] table); the same elements."""
    rows = []
    for i in index:
        if np.ndim(i) != np.ndim(grid) or np.shape(i)[-1] != 1:
            return buf[(*index, grid)]
        rows.append(i[..., 0])
    return buf[tuple(rows)]


def add_at(dest, index, value, mask, shape):
    """``loops.add_at`` over a kernel's iteration space ``shape``: ``dest[index]
    += value`` where ``mask`` (None: everywhere), the adds in the space's
    row-major order, as np.add.at applies them (each element of ``dest`` sums
    its contributions in that order: eager's scatter-adds' bits). ``index``
    holds one integer array (or scalar) per dim of ``dest``, broadcasting
    against ``shape``. Into a contiguous ``dest`` the indices become flat ones
    and the adds one 1-D np.add.at (numpy's fast path, which eager's
    tfc.ops.scatter.scatter_add_rows takes too: 0.5 ms where a 2-D np.add.at
    takes 1.7, [4096, 64] rows into 1000 segments)."""
    shape = tuple(shape)
    n = math.prod(shape)
    if mask is not None and (mask.all() if isinstance(mask, np.ndarray) else np.all(mask)):
        # (checked on the mask as made: a row's, before broadcasting)
        mask = None
    p, rows = len(shape), n
    if mask is not None:
        # the mask varies along the leading p dims only (unsorted_segment_sum's: per id):
        # whole rows of the trailing dims are kept or dropped, in order
        m = np.asarray(mask)
        m = m.reshape((1,) * (len(shape) - m.ndim) + m.shape)
        p = max((d + 1 for d in range(m.ndim) if m.shape[d] != 1), default=0)
        mask = np.broadcast_to(m.reshape(m.shape[:p]), shape[:p]).reshape(-1)
        rows = mask.size
    cols = n // rows if rows else 0

    def part(a):
        """``a`` as a (kept rows, cols) operand that broadcasts: selected along
        the rows before it is broadcast along the columns where it can be."""
        if mask is None:  # broadcast once, at the end
            return a
        a = np.asarray(a)
        a = a.reshape((1,) * (len(shape) - a.ndim) + a.shape)
        if all(d == 1 for d in a.shape[p:]):  # constant along the columns: rows first
            return np.broadcast_to(a.reshape(a.shape[:p]), shape[:p]).reshape(rows, 1)[mask]
        if all(d == 1 for d in a.shape[:p]):  # constant along the rows
            return np.broadcast_to(a.reshape(a.shape[p:]), shape[p:]).reshape(1, cols)
        return np.broadcast_to(a, shape).reshape(rows, cols)[mask]

    space = shape if mask is None else (int(np.count_nonzero(mask)), cols)
    if not (isinstance(value, np.ndarray) and value.dtype == dest.dtype):
        value = np.asarray(value, dest.dtype)
    value = np.broadcast_to(part(value), space).reshape(-1)
    if dest.flags.c_contiguous:
        lin, step = 0, 1
        for i, d in zip(reversed(index), reversed(dest.shape)):
            lin = lin + part(i if isinstance(i, np.ndarray) and i.dtype == np.intp else np.asarray(i, np.intp)) * step
            step *= d
        np.add.at(dest.reshape(-1), np.broadcast_to(lin, space).reshape(-1), value)
        return
    np.add.at(dest, tuple(np.broadcast_to(part(np.asarray(i, np.intp)), space).reshape(-1) for i in index), value)


def raise_eager(name: str, args, attrs: dict, where: str):
    """loops.raise: op ``name``'s kernel on ``args`` raises eager's error for
    them; it is raised as it is, with ``where`` (the op's location) noted."""
    try:
        kernel(name)(*args, **attrs)
    except Exception as e:
        if not where.startswith("<"):
            e.add_note(f"  at {where}")
        e._tfc_noted = True  # rt.located keeps it
        raise
    raise AssertionError(f"internal error: the check before {name} failed, but its kernel accepts the operands")


def reshape(a, shape):
    """loops.reshape: a view of contiguous ``a`` with ``shape``; setting the
    shape of a view raises where it would need a copy (never a silent one)."""
    v = a.view()
    v.shape = shape
    return v


def conform(value, dtype, scalar: bool):
    """A library kernel's result in the IR's dtype; 0-d results as numpy scalars."""
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    if value.dtype != dtype:
        value = value.astype(dtype)
    return value[()] if scalar else value


def kernel(name: str):
    return REGISTRY[name].kernel


def kernel_into(name: str):
    """The declaration's kernel that writes its result into a given array."""
    return REGISTRY[name].kernel_into


def shape_check(name: str, attrs: dict, dtype_names):
    """``check(shapes)`` for a library call of op ``name`` whose operands have
    dims unknown when compiling: eager's shape inference on their run-time
    shapes (raising eager's error, which ``located`` notes at the user's line).
    The shapes it last accepted pass without inference: a loop or a repeated
    call pays a tuple comparison."""
    from tfc.core.registry import Spec

    opdef = REGISTRY[name]
    dts = [as_dtype(d) for d in dtype_names]
    last = None

    def check(shapes):
        nonlocal last
        if shapes != last:
            opdef.infer(opdef, *map(Spec, shapes, dts), **attrs)
            last = shapes  # (two threads at once at worst both infer)

    return check


def as_dtype(name: str):
    from tfc.core import dtypes

    return dtypes.as_dtype(name)


def donatable(cell, shape, dtype):
    """The variable's array when the call may overwrite it in place (as eager's
    ``assign_sub`` does): only the Variable, this cell and this frame hold it
    (CPython's reference count proves it), it owns its memory and matches."""
    v = cell.value
    if (type(v) is np.ndarray and sys.getrefcount(v) <= _DONOR_REFS and v.base is None
            and v.flags.writeable and v.flags.c_contiguous and v.flags.aligned
            and v.shape == shape and v.dtype == dtype):
        return v
    return None


_DONOR_REFS = 4  # the Variable's _value, the Cell, the local ``v`` and getrefcount's argument


def ipow(a, b):
    return REGISTRY["pow"].kernel(a, b)


def truth(c) -> bool:
    return bool(np.asarray(c).reshape(()))


def print_(fmt: str, stream, summarize, *values):
    from tfc.backends.reference import write_print

    write_print(fmt, values, stream, summarize)


def assert_failed(where: str, message: str, *data):
    from tfc.backends.reference import assertion_failed

    return assertion_failed(where, message, *data)


# -- errors: an exception raised in generated code, reported as eager reports it -----


def sites(table) -> dict:
    """line number -> site, from [(site, line numbers), ...] (see the emitter)."""
    return {n: site for site, lines in table for n in lines}


def located(e: Exception, table: dict) -> Exception:
    """The error to raise for ``e``, raised in a generated function (whose frame
    is the first of its traceback): at the line of its innermost frame in the
    generated module, the op that line comes from (a site: label, location,
    operand names, registry attributes) is re-checked as eager checks it, on
    its operands' run-time shapes, giving eager's error (a ValueError naming the
    op and shapes); else ``e``'s message with the op and its operands' shapes
    prepended (a tfc error, already naming what failed, is kept). The op's
    location (the user's line) is noted under the message."""
    from tfc.core.errors import InvalidArgumentError

    tb = e.__traceback__
    fn_frame, filename, line = tb.tb_frame, tb.tb_frame.f_code.co_filename, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    site = table.get(line)
    if site is None or getattr(e, "_tfc_noted", False):
        return e
    label, where, names, attrs = site
    scope = fn_frame.f_locals  # the generated function's names (its operands)
    values = [scope.get(n) for n in names]
    err = _eager_error(label, values, attrs) if attrs is not None else None
    if err is None and isinstance(e, InvalidArgumentError):
        err = e  # a run-time check of tfc's kernels: its message says what failed
    if err is None:
        shapes = ", ".join("?" if v is None else f"{np.asarray(v).dtype}{list(np.shape(v))}" for v in values)
        try:
            err = type(e)(f"{label}: {e} (operands: {shapes})")
        except Exception:  # an exception class that takes other arguments
            err = e
    if err is not e:  # this message says everything: neither numpy's error nor inference's frames under it
        err.__cause__, err.__suppress_context__, err.__traceback__ = None, True, None
    if not where.startswith("<"):
        err.add_note(f"  at {where}")
    err._tfc_noted = True
    return err


def _eager_error(name: str, values, attrs):
    """The error eager's shape inference raises for op ``name`` on ``values``
    (None when it accepts them)."""
    from tfc.core import dtypes
    from tfc.core.registry import Spec

    opdef = REGISTRY.get(name)
    if opdef is None or any(v is None for v in values):
        return None
    try:
        specs = [Spec(tuple(np.shape(v)), dtypes.from_numpy(np.asarray(v).dtype)) for v in values]
        opdef.infer(opdef, *specs, **attrs)
    except (ValueError, TypeError) as x:
        return x
    return None


# -- helpers of scalar code on Python numbers (the rare cases of each op) -------------


def remsi(a: int, b: int) -> int:
    """C's truncated remainder (np.fmod on integers); a zero divisor gives 0."""
    if not b:
        return 0
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def fdiv(a: float, b: float) -> float:
    """a / b for a zero b, as numpy divides doubles (inf or nan, signed)."""
    with np.errstate(all="ignore"):
        return float(np.true_divide(a, b))


def f2i(x: float, lo: int, hi: int, dtype) -> int:
    """A double converted to an integer dtype as numpy's astype: truncation, and
    numpy's own result outside the range (nan, inf, overflow)."""
    if lo - 1 < x < hi + 1:
        return int(x)
    with np.errstate(all="ignore"):
        return np.array(x).astype(dtype).item()
