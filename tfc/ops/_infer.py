"""Shape and dtype inference shared by op families. Every check raises a
ValueError (shapes, ranks, axes) or TypeError (dtypes) that names the op, the
offending shapes or dtypes, and what was expected."""
from __future__ import annotations

import numpy as np

from tfc.core import dtypes
from tfc.core.registry import Spec


def dtype_names(allowed) -> str:
    return ", ".join(d.name for d in dtypes.ALL if d in allowed)


def check_dtype(op, spec: Spec, allowed, what: str = "x") -> None:
    if spec.dtype not in allowed:
        raise TypeError(
            f"{op.name}: {what} has dtype {spec.dtype.name}; expected one of {dtype_names(allowed)}"
        )


def check_same_dtype(op, *specs: Spec) -> dtypes.DType:
    first = specs[0].dtype
    for s in specs[1:]:
        if s.dtype != first:
            raise TypeError(
                f"{op.name}: inputs have different dtypes "
                + ", ".join(sp.dtype.name for sp in specs)
            )
    return first


def _fmt(shape) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


fmt_shape = _fmt


def broadcast_shapes(op, *shapes) -> tuple:
    """NumPy broadcasting; a None (dynamic) dimension broadcasts with 1 and matches anything."""
    first = shapes[0]
    if all(s == first for s in shapes[1:]):  # the common case, cheaply
        return tuple(first)
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dim = 1
        for s in shapes:
            j = i - (ndim - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif d is None:
                continue
            elif dim is None:
                dim = d
            elif d != dim:
                raise ValueError(
                    f"{op.name}: shapes "
                    + " and ".join(_fmt(s) for s in shapes)
                    + " cannot be broadcast together"
                )
        out.append(dim)
    return tuple(out)


def normalize_axis(op, axis: int, ndim: int, what: str = "axis") -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{op.name}: {what} must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op.name}: {what} {axis} is out of range for a tensor of rank {ndim}")
    return int(axis) % ndim


def normalize_axes(op, axis, ndim: int) -> tuple:
    """None → all axes; an int or a sequence → sorted, non-negative, unique."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        axis = (axis,)
    axes = tuple(normalize_axis(op, a, ndim) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op.name}: repeated axis in {tuple(axis)}")
    return tuple(sorted(axes))


def ufunc_dtype(op, ufunc, *specs: Spec) -> dtypes.DType:
    """The dtype numpy's ufunc gives for these input dtypes (one source of truth
    for kernels and inference)."""
    try:
        out = ufunc.resolve_dtypes(tuple(s.dtype.as_numpy_dtype for s in specs) + (None,) * ufunc.nout)
    except (TypeError, np.exceptions.DTypePromotionError):
        raise TypeError(
            f"{op.name}: not defined for dtype " + ", ".join(s.dtype.name for s in specs)
        ) from None
    return dtypes.from_numpy(out[-1])


# -- inference functions of whole families ------------------------------------------

def unary(allowed):
    """Elementwise op with one input; the result keeps the input's dtype."""

    def infer(op, x: Spec) -> Spec:
        check_dtype(op, x, allowed)
        return x

    return infer


def binary(allowed, result=None):
    """Elementwise op with two inputs of one (promoted) dtype, broadcast;
    ``result`` fixes the output dtype (bool for comparisons)."""

    def infer(op, x: Spec, y: Spec) -> Spec:
        dt = check_same_dtype(op, x, y)
        check_dtype(op, x, allowed)
        return Spec(broadcast_shapes(op, x.shape, y.shape), result or dt)

    return infer


def binary_ufunc(allowed, ufunc):
    """Like ``binary``, with the result dtype numpy's ufunc gives (x/y of ints is float)."""

    def infer(op, x: Spec, y: Spec) -> Spec:
        check_same_dtype(op, x, y)
        check_dtype(op, x, allowed)
        return Spec(broadcast_shapes(op, x.shape, y.shape), ufunc_dtype(op, ufunc, x, y))

    return infer


def reduced_shape(shape, axes, keepdims: bool) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduction(allowed, result=None):
    """Reduction over ``axis`` (None, int or tuple) with ``keepdims``."""

    def infer(op, x: Spec, axis=None, keepdims=False) -> Spec:
        check_dtype(op, x, allowed)
        axes = normalize_axes(op, axis, x.ndim)
        return Spec(reduced_shape(x.shape, axes, keepdims), result or x.dtype)

    return infer
