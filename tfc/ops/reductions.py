"""Reductions over ``axis`` (None for all, an int, or a tuple) with ``keepdims``."""
from __future__ import annotations

import math

import numpy as np

from tfc.core import dtypes
from tfc.core.dtypes import NUMERIC
from tfc.core.registry import Spec, declare, rows_apart
from tfc.core.shape import as_axis
from tfc.ops import _infer as inf
from tfc.ops._expand import eager_kernel


def _axis_attr(axis, op_name="reduction"):
    """The attribute form of ``axis``: None or a tuple of ints."""
    if axis is None:
        return None
    if hasattr(axis, "numpy"):
        axis = axis.numpy().tolist()
    elif isinstance(axis, np.ndarray):
        axis = axis.tolist()
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return (int(axis),)
    if not isinstance(axis, (list, tuple)) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axis):
        raise TypeError(f"{op_name}: axis must be None, an int or a sequence of ints, got {axis!r}")
    return tuple(int(a) for a in axis)


def _keep_shape(e):
    """Shape of the reduced output with the reduced axes kept as size 1."""
    x = e.inputs[0]
    axes = inf.normalize_axes(e.op, e.attrs["axis"], x.ndim)
    return axes, inf.reduced_shape(x.shape, axes, True)


def _kept(e, t):
    """``t`` (a result of reduction ``e``, or its gradient) with the reduced
    axes back, of size 1."""
    from tfc.ops.shapes import expand_dims, reshape

    if e.attrs["keepdims"]:
        return t
    axes, keep = _keep_shape(e)
    if None in keep:  # dimensions known only at run time: no static shape to reshape to
        for a in axes:
            t = expand_dims(t, a)
        return t
    return reshape(t, keep)


def _like_input(e, t):
    """``t`` broadcast to the shape of reduction ``e``'s input."""
    from tfc.ops.shapes import broadcast_like, broadcast_to

    x = e.inputs[0]
    return broadcast_like(t, x) if None in tuple(x.shape) else broadcast_to(t, x.shape)


def _expand_grad(e, g):
    """g broadcast back to the input's shape."""
    return _like_input(e, _kept(e, g))


def _count(e):
    """The number of elements reduced into each result: an int, or a 0-d
    tensor of the gradient's dtype where a reduced dimension is dynamic
    (the same value eager's int becomes when it divides)."""
    x = e.inputs[0]
    axes = inf.normalize_axes(e.op, e.attrs["axis"], x.ndim)
    if any(x.shape[a] is None for a in axes):
        from tfc.ops.math import cast
        from tfc.ops.shapes import count_along

        return cast(count_along(x, axes), e.outputs[0].dtype)
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


def _reduction(name, kernel, grad, allowed=NUMERIC, result=None, doc=""):
    def pack(input_tensor, axis=None, keepdims=False):
        return (input_tensor,), {"axis": _axis_attr(axis, name), "keepdims": bool(keepdims)}

    pack.__name__ = pack.__qualname__ = name
    pack.__doc__ = doc
    return declare(kernel=kernel, infer=inf.reduction(allowed, result), grad=grad,
                   attrs={"axis": "ints?", "keepdims": "bool"}, name=name)(pack)


def _np_axis(x, axis):
    """The axis argument numpy gets: None when every axis is reduced. numpy's
    float summation order depends on how the axes are spelled (None sums the
    flat array pairwise, a tuple does not) and on the memory layout (see
    ``_summed``), so each reduction is spelled one way whatever the caller
    wrote: eager and compiled code then sum in one order."""
    if axis is None:
        return None
    axes = {a % x.ndim for a in axis} if x.ndim else set()
    return None if len(axes) == x.ndim else tuple(sorted(axes))


def _summed(x):
    """x in C order: ufunc results follow their inputs' layout (a transposed or
    broadcast input gives a strided result), and numpy sums in memory order.
    (Not np.ascontiguousarray itself: it turns 0-d arrays into 1-d ones.)"""
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


# Rows summed per block by _leading_sum: the block's row is about this many elements.
_BLOCK_ELEMS = 1024


def _leading_sum(x, lead):
    """The sum over the first ``lead`` axes of a C-ordered float array, or None
    where numpy's own order is as fast. numpy sums rows [n, c] over n one row
    at a time, a call of its inner loop per row of c elements: 150 us for a
    conv's bias gradient [64, 8, 8, 16] -> [16]. Read as [n / k, k * c]
    (k a power of two dividing n, k * c about _BLOCK_ELEMS), numpy's inner loop
    runs k * c long; the k partial sums of each column are then added (7 us).
    Every sum over leading axes goes through here (the eager kernel, the
    compiled library call, the fused kernels' reductions and the broadcast
    gradients of tfc/ops/shapes.py), so the modes keep one order: rows
    sequentially within each of k strided groups, then the k groups."""
    if x.dtype not in (np.float32, np.float64):
        return None
    n, c = math.prod(x.shape[:lead]), math.prod(x.shape[lead:])
    if c == 0 or n < 256:
        return None
    k = min(n & -n, 1 << max(0, (_BLOCK_ELEMS // c).bit_length() - 1))
    if k < 2:
        return None
    parts = np.add.reduce(x.reshape(n // k, k * c), axis=0)
    return np.add.reduce(parts.reshape(k, c), axis=0).reshape(x.shape[lead:])


def _sum_kernel(x, axis, keepdims):
    x = _summed(x)
    axis = _np_axis(x, axis)
    if axis is not None and axis == tuple(range(len(axis))):
        s = _leading_sum(x, len(axis))
        if s is not None:
            return s.reshape((1,) * len(axis) + s.shape) if keepdims else s
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


def _mean_kernel(x, axis, keepdims):
    x = _summed(x)
    axis = _np_axis(x, axis)
    if x.dtype.kind in "iu":  # integer mean stays integer, rounding toward zero (TensorFlow)
        s = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64)
        n = max(1, x.size // max(1, s.size))  # elements per result
        return (np.sign(s) * (np.abs(s) // n)).astype(x.dtype)
    if x.size == 0:  # NaN, as numpy's mean, without its "Mean of empty slice" warning (TensorFlow's is quiet)
        return np.full(np.sum(x, axis=axis, keepdims=keepdims).shape, np.nan, x.dtype)
    return np.mean(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


def _prod_kernel(x, axis, keepdims):
    x = _summed(x)
    return np.prod(x, axis=_np_axis(x, axis), keepdims=keepdims, dtype=x.dtype)


def _extreme_grad(e, g):
    """Gradient of max/min: split evenly between the elements that attain it."""
    from tfc.ops.math import cast, equal

    x = e.inputs[0]
    axes, _ = _keep_shape(e)
    out, g = _kept(e, e.outputs[0]), _kept(e, g)
    mask = cast(equal(x, _like_input(e, out)), x.dtype)
    ties = reduce_sum(mask, axis=axes, keepdims=True)
    return [_like_input(e, g / ties) * mask]


def _prod_grad(e, g):
    # d prod / dx_i is the product of the others: prod / x_i where x_i is not
    # zero (0 there if another element is); at the one zero of a product, the
    # product of the rest; 0 where two or more are zero (TensorFlow's values).
    # Its own derivative is exact except where two or more are zero (0 there,
    # where TensorFlow's exclusive cumulative products give the rest's product).
    from tfc.ops.math import cast, not_equal, where

    x = e.inputs[0]
    axis = e.attrs["axis"]
    nonzero = not_equal(x, 0)
    safe = where(nonzero, x, 1)
    out, g = _kept(e, e.outputs[0]), _kept(e, g)
    zeros = reduce_sum(cast(~nonzero, dtypes.int32), axis=axis, keepdims=True)
    rest = g * reduce_prod(safe, axis=axis, keepdims=True)  # the product without the zeros
    at_zero = where(zeros == 1, rest, 0)
    return [where(nonzero, _like_input(e, g * out) / safe, _like_input(e, at_zero))]


reduce_sum = _reduction("reduce_sum", _sum_kernel, lambda e, g: [_expand_grad(e, g)], doc="Sum over axes.")
reduce_mean = _reduction("reduce_mean", _mean_kernel, lambda e, g: [_expand_grad(e, g) / _count(e)],
                         doc="Mean over axes (integer tensors give the integer mean, rounded toward zero; "
                             "NaN over no elements).")
def _bound(dtype, low: bool):
    """The identity of max (low) / min over an empty axis: -inf/inf, or the int range's end (TensorFlow)."""
    if dtype.kind == "f":
        return -np.inf if low else np.inf
    info = np.iinfo(dtype)
    return info.min if low else info.max


reduce_max = _reduction("reduce_max", lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims,
                                                                       initial=_bound(x.dtype, True)),
                        _extreme_grad, doc="Maximum over axes (-inf, or the lowest int, over an empty axis).")
reduce_min = _reduction("reduce_min", lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims,
                                                                       initial=_bound(x.dtype, False)),
                        _extreme_grad, doc="Minimum over axes (inf, or the highest int, over an empty axis).")
reduce_prod = _reduction("reduce_prod", _prod_kernel, _prod_grad, doc="Product over axes.")
_BOOL = frozenset({dtypes.bool_})
reduce_any = _reduction("reduce_any", lambda x, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims), None,
                        _BOOL, doc="Logical or over axes.")
reduce_all = _reduction("reduce_all", lambda x, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims), None,
                        _BOOL, doc="Logical and over axes.")


def _arg_infer(op, x: Spec, axis, output_type) -> Spec:
    inf.check_dtype(op, x, NUMERIC)
    if x.ndim == 0:
        raise ValueError(f"{op.name}: input must have rank >= 1, got a scalar")
    a = inf.normalize_axis(op, axis, x.ndim)
    if x.shape[a] == 0:
        raise ValueError(f"{op.name}: axis {axis} of shape {inf.fmt_shape(x.shape)} is empty")
    if output_type not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{op.name}: output_type must be int32 or int64, got {output_type.name}")
    return Spec(tuple(d for i, d in enumerate(x.shape) if i != a), output_type)


@declare(kernel=lambda x, axis, output_type: np.argmax(x, axis=axis), infer=_arg_infer,
         attrs={"axis": "int", "output_type": "dtype"}, rows=rows_apart)
def argmax(input, axis=0, output_type=dtypes.int64):  # noqa: A002
    """Index of the largest value along ``axis`` (the first one on ties);
    ``axis=None``: the index into the flattened input, as numpy's."""
    return _arg_args(input, axis, output_type)


@declare(kernel=lambda x, axis, output_type: np.argmin(x, axis=axis), infer=_arg_infer,
         attrs={"axis": "int", "output_type": "dtype"}, rows=rows_apart)
def argmin(input, axis=0, output_type=dtypes.int64):  # noqa: A002
    """Index of the smallest value along ``axis`` (the first one on ties);
    ``axis=None``: the index into the flattened input, as numpy's."""
    return _arg_args(input, axis, output_type)


def _arg_reduce_infer(op, x: Spec, axis, keepdims) -> Spec:
    inf.check_dtype(op, x, NUMERIC)
    axes = inf.normalize_axes(op, axis, x.ndim)
    if len(axes) != 1:
        raise ValueError(f"{op.name}: reduces exactly one axis, got {axis}")
    if x.shape[axes[0]] == 0:
        raise ValueError(f"{op.name}: axis {axes[0]} of shape {inf.fmt_shape(x.shape)} is empty")
    return Spec(inf.reduced_shape(x.shape, axes, keepdims), dtypes.int64)


def _arg_reduce(name, fn, doc):
    def kernel(x, axis, keepdims):
        (a,) = (a % x.ndim for a in axis)
        return fn(x, axis=a, keepdims=keepdims)

    def pack(input_tensor, axis=-1, keepdims=False):
        return (input_tensor,), {"axis": _axis_attr(axis, name), "keepdims": bool(keepdims)}

    pack.__name__ = pack.__qualname__ = name
    pack.__doc__ = doc
    return declare(kernel=kernel, infer=_arg_reduce_infer, attrs={"axis": "ints?", "keepdims": "bool"},
                   name=name)(pack)


# The kernels of the "argmax" / "argmin" reduce kinds of tfc.fused and
# loops.parallel (what tfc-fuse makes of argmax/argmin): the reduction form
# (``axis`` a one-element tuple, ``keepdims``) that every reduce kind has, so
# that each backend and the reference executor find a kind's kernel as
# ``reduce_<kind>``. Eager code calls argmax/argmin.
reduce_argmax = _arg_reduce("reduce_argmax", np.argmax,
                            "int64 index of the first largest value along the one axis of ``axis`` (NaN: the "
                            "first NaN, as numpy's); argmax's kernel in the reduction form of fused kernels.")
reduce_argmin = _arg_reduce("reduce_argmin", np.argmin,
                            "int64 index of the first smallest value along the one axis of ``axis`` (NaN: the "
                            "first NaN, as numpy's); argmin's kernel in the reduction form of fused kernels.")


def _arg_args(x, axis, output_type):
    if axis is None:
        from tfc.ops.shapes import reshape

        x, axis = reshape(x, (-1,)), 0
    elif not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"axis must be None or an int, got {axis!r}")
    return (x,), {"axis": int(axis), "output_type": dtypes.as_dtype(output_type)}


# -- cumsum ---------------------------------------------------------------------------------
# A composite (expand=): Hillis and Steele's scan, log2(n) steps of y + (y shifted by
# 2^k along the axis), each a slice, a pad and an add, ops that lower to kernels and
# fuse. Eager runs the same steps on arrays (bit-identical to compiled code); the sums
# are grouped as a tree rather than numpy's left-to-right cumsum (the same rounding
# class as any float sum, and more accurate). Floats shift in -0.0, which added to
# any value leaves it (a column of -0.0 sums to -0.0, as numpy).


def _shifted(b, y, axis, k, reverse, fill):
    """``y`` moved ``k`` places along ``axis`` (toward the end, or the start
    when ``reverse``), ``fill`` shifted in."""
    shape = b.shape(y)
    n, rank = shape[axis], len(shape)
    whole = ("slice", None, None, None)
    keep = ("slice", k, None, None) if reverse else ("slice", 0, n - k, None)
    part = b.getitem(y, index=(whole,) * axis + (keep,) + (whole,) * (rank - axis - 1))
    pads = [0] * (2 * rank)
    pads[2 * axis + (1 if reverse else 0)] = k
    return b.pad(part, paddings=tuple(pads), mode="CONSTANT", constant_values=fill)


def _cumsum_expand(b, x, axis, exclusive, reverse):
    shape = b.shape(x)
    axis %= len(shape)
    n = shape[axis]
    floating = b.dtype(x).is_floating
    if exclusive and n:
        x = _shifted(b, x, axis, 1, reverse, 0.0 if floating else 0)
    k = 1
    while k < n:
        x = b.add(x, _shifted(b, x, axis, k, reverse, -0.0 if floating else 0))
        k *= 2
    return x if k > 1 or exclusive else b.identity(x)  # a new value, never the operand itself


def _cumsum_infer(op, x: Spec, axis, exclusive, reverse) -> Spec:
    inf.check_dtype(op, x, NUMERIC)
    if x.ndim == 0:
        raise ValueError(f"{op.name}: x must have rank >= 1, got a scalar")
    inf.normalize_axis(op, axis, x.ndim)
    return x


def _cumsum_grad(e, g):
    # each x[j] reaches the results at and after j (before, reversed): the scan back
    a = e.attrs
    return [cumsum(g, a["axis"], exclusive=a["exclusive"], reverse=not a["reverse"])]


def _cumsum_rows(ranks, axis, **attrs) -> bool:
    return axis % ranks[0] != 0


@declare(kernel=eager_kernel(_cumsum_expand), infer=_cumsum_infer, grad=_cumsum_grad, rows=_cumsum_rows,
         attrs={"axis": "int", "exclusive": "bool", "reverse": "bool"}, expand=_cumsum_expand)
def cumsum(x, axis=0, exclusive=False, reverse=False):
    """Running sums of ``x`` along ``axis``, as TensorFlow's ``tf.cumsum``:
    ``exclusive`` leaves each element out of its own sum (the first is 0),
    ``reverse`` sums from the end."""
    return (x,), {"axis": as_axis("cumsum", axis), "exclusive": bool(exclusive), "reverse": bool(reverse)}
