"""Execution state, kept in module globals that are mutated in
place so the eager hot path reads them with one lookup.

``TAPES``: the active gradient tapes, innermost last (see tfc.core.tape).
``STATE.builder``: the function being traced by this thread, or None when running
eagerly.
"""
from __future__ import annotations

import threading

TAPES: list = []


class _State(threading.local):
    """Per thread: a trace in one thread never takes in another thread's ops (a
    tfc.data prefetch thread runs eager ops while the main thread traces)."""

    def __init__(self):
        self.builder = None


STATE = _State()
