"""Argument checks shared by the layers, optimizers and schedules: each names
the class and the argument in its error, and accepts numpy numbers as numbers."""
from __future__ import annotations

import numbers

import numpy as np


def is_number(x) -> bool:
    """A real Python or numpy number (not a bool)."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def is_int(x) -> bool:
    """A Python or numpy integer (not a bool)."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _int_at_least(kind: str, value, what: str, low: int, described: str) -> int:
    if not is_int(value) or value < low:
        raise ValueError(f"{kind}: {what} must be {described}, got {value!r}")
    return int(value)


def positive_int(kind: str, value, what: str) -> int:
    return _int_at_least(kind, value, what, 1, "a positive int")


def non_negative_int(kind: str, value, what: str) -> int:
    return _int_at_least(kind, value, what, 0, "an int >= 0")


def positive_number(kind: str, value, what: str):
    if not is_number(value) or not value > 0:
        raise ValueError(f"{kind}: {what} must be a number > 0, got {value!r}")
    return value


def fraction(kind: str, what: str, value, top_included: bool) -> float:
    """``value`` checked to lie in [0, 1] (or [0, 1) without ``top_included``)."""
    if not is_number(value) or not (0 <= value <= 1 if top_included else 0 <= value < 1):
        raise ValueError(f"{kind}: {what} must be in [0, 1{']' if top_included else ')'} (a number), got {value!r}")
    return float(value)


def flag(kind: str, what: str, value) -> bool:
    """``value``, a Python or numpy bool, as a bool: a truthy string ("False") or
    number is a mistake, not True."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{kind}: {what} must be True or False, got {value!r}")
    return bool(value)
