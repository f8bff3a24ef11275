"""OpenBLAS on the calling thread only, and large products in blocks over tfc's threads.

A window kernel of a small CNN (conv2d and its gradients on [64, 8, 8, 16]: GEMMs
of about 2^22 multiply-adds) gains little from OpenBLAS's second thread even on an
idle machine, and where the cores are busy (other processes, tfc's chunk threads, a
worker still spinning after the last call) a worker that is not scheduled stalls
the call for a time slice. Measured on the compiled digits-CNN step, 2-core Xeon
under load ~8, each run in a process of its own, 300 steps: median 70 ms with
OpenBLAS's threads, 1.9 ms with one; minimum 1.65 against 1.57 ms. The GPT step
likewise: 590 ms with OpenBLAS's threads under load 6-12 against 113 with one.

So ``matmul`` never hands work to OpenBLAS's threads: products of up to
``ONE_THREAD_MACS`` run whole on the calling thread; larger ones are cut into blocks
(rows or columns of a 2-D product, entries of a batch) that tfc's own threads take one at a
time, each on one OpenBLAS thread, the calling thread among them.

Bits: OpenBLAS gives other bits on one thread than on two for some products, and a
block of rows on one thread other bits than the same rows of the whole product for
some shapes (its kernels are chosen by size; 30 of 600 splits of float32 and
float64 products of 64 to 2048 rows differed on this machine's Haswell kernels). So
the cut is a function of the shapes only (``blocks``), never of the threads that
run it, and a kernel that runs its products here must do so in eager and compiled
code alike (the op's ``kernel`` and ``kernel_into`` share them): the modes then
agree bit for bit; against plain ``np.matmul`` the products above 2^18 multiply-adds
(OpenBLAS's own one-thread limit) may differ in the last bits. A batched product's
matrices are each the same GEMM call whichever block holds them: its bits do not
depend on the cut. The count is set with ``openblas_set_num_threads_local``
(OpenBLAS 0.3.27 and later), which numpy's build applies to the whole process: it is
restored when no thread is inside such a product any more (other threads' calls made
meanwhile run on one thread too). Without that function (or off Linux) products run
as before: whole, on OpenBLAS's threads.
"""
from __future__ import annotations

import contextlib
import ctypes
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

_setters = None


def openblas_libraries() -> list:
    """ctypes handles of the loaded OpenBLAS libraries (numpy's is
    ``libscipy_openblas64_-<hash>.so``); none off Linux."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[-1].strip() for line in f if "openblas" in line.lower()}
    except OSError:
        return []
    libs = []
    for path in sorted(p for p in paths if p.startswith("/") and ".so" in os.path.basename(p)):
        try:
            libs.append(ctypes.CDLL(path))  # already loaded: the same handle
        except OSError:
            continue
    return libs


def _local_setters() -> list:
    global _setters
    if _setters is None:
        _setters = [lib.openblas_set_num_threads_local for lib in openblas_libraries()
                    if hasattr(lib, "openblas_set_num_threads_local")]
    return _setters


# Threads inside a one-thread section, and the counts to restore when the last leaves.
# numpy's OpenBLAS (a pthreads build) keeps ``openblas_set_num_threads_local``'s count
# for the whole process, not per thread (a thread started after a call sees its
# count): a thread restoring its count while another's block runs would hand that
# block to OpenBLAS's threads (a race in timing, other bits). So the first thread in
# sets one thread, the last out restores; every thread in sets it too (a build whose
# count is per thread needs that; there, a thread other than the first keeps one).
_sections_lock = threading.Lock()
_sections = 0
_saved_counts: list = []


def _enter():
    global _sections, _saved_counts
    with _sections_lock:
        counts = [set_local(1) for set_local in _local_setters()]
        if _sections == 0:
            _saved_counts = counts
        _sections += 1


def _leave():
    global _sections
    with _sections_lock:
        _sections -= 1
        if _sections == 0:
            for set_local, count in zip(_local_setters(), _saved_counts):
                set_local(count)


@contextlib.contextmanager
def one_thread():
    """Within the block, the loaded OpenBLAS libraries run this thread's calls on
    this thread only; once no thread is in such a block, each library's count from
    before the first (see ``_sections`` above)."""
    _enter()
    try:
        yield
    finally:
        _leave()


# Products of up to this many multiply-adds run whole on the calling thread (the digits
# CNN's largest: [1024, 144] @ [144, 32], 2^22.2); larger ones are split into blocks of
# about BLOCK_MACS that tfc's threads take in turn, each block on one OpenBLAS thread.
ONE_THREAD_MACS = 1 << 23
# Products this small run on one OpenBLAS thread whatever its count (gemm below 2^18
# multiply-adds, gemv below 2304 * 4 matrix entries, dot below 10000 elements): the same
# bits without the section's bookkeeping (an eager [2, 2] tfc.matmul: 6.2 us against 7.8).
# numpy's syrk (a @ a.T: one buffer, b's strides a's swapped) has no such limit: it still takes it.
TINY_MACS = 1 << 11
BLOCK_MACS = 1 << 23  # (each block packs one operand again: not smaller)
# a 2-D product's row (or column) blocks are multiples of this many (the last one
# excepted): narrower blocks pack the other operand again for too little work
# ([64, 2048] @ [2048, 256] in 4 blocks of 64 columns: 2.06 ms against 1.65 whole)
ROW_ALIGN = 128

# tfc's threads for the blocks (TFC_NUM_THREADS=1: the calling thread only)
NUM_THREADS = int(os.environ.get("TFC_NUM_THREADS", "0")) or (os.cpu_count() or 1)
_pool = None
_pool_lock = threading.Lock()
_THREAD_PREFIX = "tfc-chunks-blas"


def pool() -> ThreadPoolExecutor:
    """The block threads. Named like the numpy backend's chunk threads: idle between
    calls, they do not stop its restart of OpenBLAS's threads (backends/numpy/blas.py)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max(1, NUM_THREADS - 1), thread_name_prefix=_THREAD_PREFIX)
    return _pool


def blocks(size: int, macs: int, align: int) -> list:
    """[lo, hi) blocks of ``size`` rows (or batch entries) for a product of ``macs``
    multiply-adds: one block up to ONE_THREAD_MACS, else about BLOCK_MACS each and at
    least ``align`` rows. A function of the shapes only: OpenBLAS may give a row block
    other bits than the same rows of a larger product (its kernels are chosen by size),
    so eager and compiled calls of one product must cut it alike, whatever the threads."""
    if macs <= ONE_THREAD_MACS or not _local_setters():
        return [(0, size)]
    count = max(1, min(-(-macs // BLOCK_MACS), size // align))
    step = -(-size // count)
    step = -(-step // align) * align
    return [(lo, min(lo + step, size)) for lo in range(0, size, step)]


def _run(parts, product):
    """``product(lo, hi)`` for each block, each on one OpenBLAS thread. The blocks are
    handed out one at a time from a shared iterator (atomic under the GIL): a pool
    thread that another process keeps off its core takes none, and the calling thread
    never waits on one that has not started (OpenBLAS's own threads would)."""
    todo = iter(parts)

    def task():
        with one_thread():
            for lo, hi in todo:
                product(lo, hi)

    # a block thread's own product runs its blocks itself: waiting on the pool from
    # inside it could wait for itself
    threads = 1 if threading.current_thread().name.startswith(_THREAD_PREFIX) else min(NUM_THREADS, len(parts))
    futures = [pool().submit(task) for _ in range(threads - 1)]
    try:
        task()
    finally:
        wait(futures)  # no block may still be running when the call returns or raises
    for f in futures:
        f.result()


def _batch_axis(shape_a, shape_b, batch):
    """The result's first batch axis of more than one entry, and the matching axis of
    each operand (None where the operand broadcasts along it)."""
    for axis, size in enumerate(batch):
        if size > 1:
            picks = []
            for shape in (shape_a, shape_b):
                own = axis - (len(batch) - (len(shape) - 2))
                picks.append(own if own >= 0 and shape[own] == size else None)
            return axis, picks
    return None, (None, None)


def matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)`` for operands of rank 2 or more. Products of up to
    ``ONE_THREAD_MACS`` multiply-adds run on the calling thread only (see the module
    docstring); larger ones in blocks over tfc's threads (``blocks``), each block on
    one OpenBLAS thread: a 2-D product by rows of ``a`` (by columns of ``b`` where it
    has more), a batched one by its first
    batch axis of more than one entry (each matrix's GEMM is then the same call,
    whichever block holds it)."""
    if a.ndim < 2 or b.ndim < 2 or a.dtype != b.dtype or a.shape[-1] != b.shape[-2] \
            or a.dtype.kind not in "fc":
        # numpy's own loop (integers: exact), or numpy's errors and casts as they are
        return np.matmul(a, b, out=out)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = () if a.ndim == b.ndim == 2 else np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    macs = math.prod(batch) * m * k * n
    if macs <= ONE_THREAD_MACS or not _local_setters():
        if macs <= TINY_MACS and not (a.strides[-2:] == b.strides[:-3:-1] and np.may_share_memory(a, b)):
            return np.matmul(a, b, out=out)
        _enter()  # one_thread() written out: its generator costs more than the calls
        try:
            return np.matmul(a, b, out=out)
        finally:
            _leave()
    if out is not None and (out.shape != batch + (m, n) or out.dtype != a.dtype):
        return np.matmul(a, b, out=out)  # numpy's error or cast
    if out is not None and (np.may_share_memory(out, a) or np.may_share_memory(out, b)):
        np.copyto(out, matmul(a, b))  # blocks written in place would overwrite operands still to be read
        return out
    if out is None:
        out = np.empty(batch + (m, n), a.dtype)
    if not batch and n > m:
        # blocks of columns: each block packs its panel of b and all of a, the smaller
        # operand again for every block (rows would pack all of b each time)
        parts = blocks(n, macs, ROW_ALIGN)

        def product(lo, hi):
            np.matmul(a, b[:, lo:hi], out=out[:, lo:hi])
    elif not batch:
        parts = blocks(m, macs, ROW_ALIGN)

        def product(lo, hi):
            np.matmul(a[lo:hi], b, out=out[lo:hi])
    else:
        axis, (pa, pb) = _batch_axis(a.shape, b.shape, batch)
        if axis is None:  # a batch of one: its rows
            a2, out2 = a.reshape(a.shape[-2:]), out.reshape(out.shape[-2:])
            matmul(a2, b.reshape(b.shape[-2:]), out=out2)
            return out
        parts = blocks(batch[axis], macs, 1)

        def take(x, own, lo, hi):
            return x if own is None else x[(slice(None),) * own + (slice(lo, hi),)]

        def product(lo, hi):
            np.matmul(take(a, pa, lo, hi), take(b, pb, lo, hi), out=take(out, axis, lo, hi))
    _run(parts, product)
    return out
