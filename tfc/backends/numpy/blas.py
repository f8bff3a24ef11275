"""OpenBLAS's idle threads and tfc's chunk threads share the cores.

After a multithreaded call, OpenBLAS's worker threads busy-wait for the next
job for 2^28 cycles (about 0.1 s) before they sleep. Generated code runs its
elementwise kernels on tfc's threads right after a matrix product, while a
worker still spins: a 2-core machine then runs those kernels on one core.
(Measured on the L-BFGS loss+gradient, 2-core EPYC, interleaved in one
process: 115 ms per call with the default wait, 105 ms with 2^20 cycles.)

When tfc first starts its thread pool, it shortens that wait to 2^20 cycles
(well under a millisecond: back-to-back products still find the workers awake)
by having OpenBLAS re-read its environment and restarting its threads, which
then start with the new wait. It does so only for OpenBLAS libraries loaded
in the process (numpy's own among them) on Linux, only where the user has not
set ``OPENBLAS_THREAD_TIMEOUT`` (the user's value stands), and only while no
other Python thread runs: a restart racing a BLAS call on another thread could
hang that call. The change is process-wide, as the variable's would be.
"""
from __future__ import annotations

import os
import threading

from tfc.core.blas_threads import openblas_libraries as loaded_openblas

SPIN_LOG2_CYCLES = 20
_ENV = ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")
_NEEDED = ("openblas_read_env", "openblas_thread_timeout", "blas_thread_shutdown_")


def openblas_libraries() -> list:
    """ctypes handles of the loaded OpenBLAS libraries that can be restarted
    (numpy's is ``libscipy_openblas64_-<hash>.so``); none off Linux."""
    return [lib for lib in loaded_openblas() if all(hasattr(lib, name) for name in _NEEDED)]


def _only_thread() -> bool:
    me = threading.current_thread()
    return all(t is me or t.name.startswith("tfc-chunks") for t in threading.enumerate())


def shorten_spin_wait() -> bool:
    """Shorten OpenBLAS's busy-wait (see the module's docstring); whether it did."""
    if any(name in os.environ for name in _ENV) or not _only_thread():
        return False
    libs = openblas_libraries()
    if not libs:
        return False
    os.environ[_ENV[0]] = str(SPIN_LOG2_CYCLES)
    try:
        for lib in libs:
            lib.openblas_read_env()  # the wait is read from the environment ...
            lib.blas_thread_shutdown_()  # ... when the threads start: the next call restarts them
    finally:
        del os.environ[_ENV[0]]  # child processes keep OpenBLAS's default
    return True


def spin_wait_log2(lib) -> int:
    """The wait OpenBLAS's threads start with, log2 cycles (0: its default)."""
    return lib.openblas_thread_timeout()
