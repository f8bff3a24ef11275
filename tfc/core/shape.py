"""Shapes and sizes the user passes (``tfc.zeros((2, 3))``, ``TensorSpec((None, 4))``,
``reshape(x, (-1, 2))``): one strict conversion for all of them. ``int(2.7)``
would silently truncate, so only ints and numpy integers are dimensions."""
from __future__ import annotations

import operator

import numpy as np

from tfc.core.registry import note_user_line
from tfc.core.tensor import Tensor


def _fail(cls, message):
    e = cls(message)
    note_user_line(e)  # raised while packing an op's arguments: name the user's line here
    return e


def as_int(op_name: str, value, what: str, minimum: int | None = 0, allow_none: bool = False):
    """``value`` as a Python int (None passes where ``allow_none``): a bool or a
    float is a TypeError, an int below ``minimum`` a ValueError."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)):
        raise _fail(TypeError, f"{op_name}: {what} must be an int, got the bool {value!r}")
    try:
        v = operator.index(value)  # ints and numpy integers; never floats
    except TypeError:
        raise _fail(TypeError, f"{op_name}: {what} must be an int, got {type(value).__name__} {value!r}") from None
    if minimum is not None and v < minimum:
        raise _fail(ValueError, f"{op_name}: {what} must be >= {minimum}, got {v}")
    return v


def as_axis(op_name: str, axis) -> int:
    """An ``axis`` argument as a Python int, negative ones included (``as_int``'s checks)."""
    return as_int(op_name, axis, "axis", minimum=None)


def as_ints(op_name: str, value, what: str = "shape", minimum: int | None = 0, allow_none: bool = False) -> tuple:
    """A tuple of ints from a sequence, a single int, or an eager integer tensor
    of rank <= 1 (``tf.zeros(tf.shape(x))``)."""
    if type(value) is tuple and all(type(d) is int and (minimum is None or d >= minimum) for d in value):
        return value  # the common case, on every eager call that takes a shape: nothing to convert
    if isinstance(value, Tensor):
        if not value.dtype.is_integer or value.ndim > 1:
            raise _fail(TypeError, f"{op_name}: {what} must be a 1-d integer tensor, got "
                                   f"{value.dtype.name} {value.shape}")
        value = value.numpy().tolist()
    elif isinstance(value, np.ndarray) and value.ndim <= 1:
        value = value.tolist()  # elements checked below: a float array is refused
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (list, tuple)):
        raise _fail(TypeError, f"{op_name}: {what} must be a sequence of ints, got {type(value).__name__} {value!r}")
    dims = []
    for i, d in enumerate(value):
        try:
            dims.append(as_int(op_name, d, f"{what}[{i}]", minimum, allow_none))
        except (TypeError, ValueError) as e:
            raise _fail(type(e), f"{e.args[0]} (in {what} {tuple(value)!r})") from None
    return tuple(dims)
