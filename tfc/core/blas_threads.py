"""OpenBLAS on the calling thread only, for the small products of a kernel.

A window kernel of a small CNN (conv2d and its gradients on [64, 8, 8, 16]: GEMMs
of about 2^22 multiply-adds) gains little from OpenBLAS's second thread even on an
idle machine, and where the cores are busy (other processes, tfc's chunk threads, a
worker still spinning after the last call) a worker that is not scheduled stalls
the call for a time slice. Measured on the compiled digits-CNN step, 2-core Xeon
under load ~8, each run in a process of its own, 300 steps: median 70 ms with
OpenBLAS's threads, 1.9 ms with one; minimum 1.65 against 1.57 ms.

OpenBLAS may give other bits on one thread than on two for some small products,
so a kernel that runs its products here must do so in eager and compiled code
alike (the op's ``kernel`` and ``kernel_into`` share them): the modes then agree
bit for bit. The setting is per calling thread (``openblas_set_num_threads_local``,
OpenBLAS 0.3.27 and later) and restored after; other threads' calls keep every
thread. Without that function (or off Linux) products run as before.
"""
from __future__ import annotations

import contextlib
import ctypes
import os

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


@contextlib.contextmanager
def one_thread():
    """Within the block, the loaded OpenBLAS libraries run this thread's calls on
    this thread only; after it, each library's previous count for this thread (a
    thread starts with the process's count, and 0 would set that count again)."""
    setters = _local_setters()
    before = [set_local(1) for set_local in setters]
    try:
        yield
    finally:
        for set_local, n in zip(setters, before):
            set_local(n)


# Products of up to this many multiply-adds run on one thread (the digits CNN's
# largest: [1024, 144] @ [144, 32], 2^22.2); larger ones keep OpenBLAS's threads,
# where splitting pays for the hand-off. A function of the shapes only, so eager and
# compiled calls of the same product decide alike.
ONE_THREAD_MACS = 1 << 23


def matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)`` of 2-D ``a`` and ``b``, on the calling thread
    only when it has at most ``ONE_THREAD_MACS`` multiply-adds (see the module
    docstring)."""
    if a.shape[0] * a.shape[1] * b.shape[1] > ONE_THREAD_MACS:
        return np.matmul(a, b, out=out)
    setters = _local_setters()  # one_thread() written out: its generator costs more than the calls
    before = [set_local(1) for set_local in setters]
    try:
        return np.matmul(a, b, out=out)
    finally:
        for set_local, n in zip(setters, before):
            set_local(n)
