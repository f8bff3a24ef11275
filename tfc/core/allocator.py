"""Large temporaries without page faults: glibc malloc's thresholds.

numpy allocates every array with ``malloc``. glibc serves a request above its
mmap threshold (128 KiB, rising with the largest freed mapping up to 32 MiB)
with a fresh ``mmap`` and gives it back with ``munmap`` when freed, and it
trims freed memory at the top of the heap beyond its trim threshold. An eager
op on a few MiB therefore maps new pages, page-faults each of them in (the
kernel zeroes every 4 KiB page) and unmaps them again: on the GPT training step
of examples/transformer_lm.py, about 32,000 page faults per step eagerly and
none compiled (the compiled step's buffers live in its arena). Measured on a
2-core Xeon: 32,049 minor faults per eager step before, 49 after.

PyTorch solves this with a caching allocator of its own; numpy's allocator is
replaceable only from C (``PyDataMem_SetHandler``), so tfc instead raises both
glibc thresholds when it is imported (``mallopt``): freed blocks up to
``THRESHOLD`` stay in the process's heap and are reused by the next op, as a
caching allocator would reuse them. The cost: up to ``THRESHOLD`` bytes of
freed memory per malloc arena stay with the process instead of going back to
the system. It is skipped where the user has set glibc's own variables
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``:
their values stand), with ``TFC_MALLOC_TUNING=0``, and off glibc.
"""
from __future__ import annotations

import ctypes
import os
import sys

THRESHOLD = 256 << 20
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h>
_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")

tuned = False  # whether tune_malloc changed the thresholds in this process


def _glibc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only (musl has mallopt but ignores these)
        return libc
    except (OSError, AttributeError):
        return None


def tune_malloc() -> bool:
    """Raise glibc's mmap and trim thresholds to ``THRESHOLD`` (see the
    module's docstring) unless the user chose otherwise; whether it did."""
    global tuned
    if tuned:
        return True
    if os.environ.get("TFC_MALLOC_TUNING", "1") == "0" or any(v in os.environ for v in _USER_SETTINGS):
        return False
    libc = _glibc()
    if libc is None:
        return False
    # (mallopt returns 1 on success)
    tuned = bool(libc.mallopt(M_TRIM_THRESHOLD, THRESHOLD)) and bool(libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD))
    return tuned
