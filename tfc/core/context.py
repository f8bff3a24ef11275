"""Process-wide execution state, kept in module globals that are mutated in
place so the eager hot path reads them with one lookup.

``TAPES``: the active gradient tapes, innermost last (see tfc.core.tape).
``STATE.builder``: the function being traced, or None when running eagerly.
"""
from __future__ import annotations

TAPES: list = []


class _State:
    __slots__ = ("builder",)

    def __init__(self):
        self.builder = None


STATE = _State()
