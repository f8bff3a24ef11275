"""``Cell``: a variable's storage while a compiled function runs."""
from __future__ import annotations


class Cell:
    """A variable's storage while a function runs (``!tfc.ref`` arguments):
    the executor reads and replaces ``value``; the caller copies it back."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value
