"""Sorting: ``argsort`` (the one sorting primitive), ``sort`` and ``top_k``
written with it and ``permute_along_axis``.

``argsort`` is stable in both directions (equal values keep their order, as
TensorFlow's ``stable=True``; descending is the ascending order reversed with
ties kept in order), NaN sorts above every number (last ascending, first
descending, as numpy). It stays a ``loops.library`` call in L3: a sort deserves
a hand-written kernel on each backend (numpy's stable sort here; a GPU would
use a radix or merge sort), as matmul does. Everything else is data movement:
``permute_along_axis`` lowers to a kernel of indexed loads (``loops.load_at``),
and its gradient is the inverse permutation, so ``sort`` and ``top_k`` values
have gradients while indices have none."""
from __future__ import annotations

import numpy as np

from tfc.core import dtypes
from tfc.core.dtypes import NUMERIC
from tfc.core.registry import Spec, declare, rows_apart, user_errors
from tfc.core.shape import as_axis
from tfc.core.tensor import convert_to_tensor
from tfc.ops import _infer as inf

_DIRECTIONS = ("ASCENDING", "DESCENDING")


def _argsort_infer(op, x: Spec, axis, direction) -> Spec:
    inf.check_dtype(op, x, NUMERIC, "values")
    if x.ndim == 0:
        raise ValueError(f"{op.name}: values must have rank >= 1, got a scalar")
    inf.normalize_axis(op, axis, x.ndim)
    return Spec(x.shape, dtypes.int32)


def _argsort_kernel(x, axis, direction):
    if direction == "ASCENDING":
        return np.argsort(x, axis=axis, kind="stable")
    # descending and stable: the ascending order of the reversed values, reversed
    n = x.shape[axis]
    return (n - 1) - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)


@declare(kernel=_argsort_kernel, infer=_argsort_infer, attrs={"axis": "int", "direction": "str"}, rows=rows_apart)
def argsort(values, axis=-1, direction="ASCENDING", stable=False):
    """The int32 indices that sort ``values`` along ``axis`` (TensorFlow's
    ``tf.argsort``). The order is always stable, so ``stable`` changes nothing."""
    return (values,), {"axis": as_axis("argsort", axis), "direction": _direction("argsort", direction)}


def _direction(name, direction):
    if direction not in _DIRECTIONS:
        raise ValueError(f"{name}: direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}")
    return direction


def _permute_infer(op, x: Spec, perm: Spec, axis) -> Spec:
    inf.check_dtype(op, perm, dtypes.INTS, "perm")
    if len(x.shape) != len(perm.shape) or any(
            a is not None and b is not None and a != b for a, b in zip(x.shape, perm.shape)):
        raise ValueError(f"{op.name}: perm must have the shape of x, got {inf.fmt_shape(perm.shape)} and "
                         f"{inf.fmt_shape(x.shape)}")
    inf.normalize_axis(op, axis, x.ndim)
    return x


def _permute_kernel(x, perm, axis):
    return np.take_along_axis(x, perm.astype(np.intp, copy=False), axis=axis)


def _permute_grad(e, g):
    # the inverse permutation takes each gradient back to where its value came from
    perm, axis = e.inputs[1], e.attrs["axis"]
    return [permute_along_axis(g, argsort(perm, axis), axis), None]


def _lower_permute(b, outs, x, perm, axis):
    """out[..., i, ...] = x[..., perm[..., i, ...], ...]: one kernel of indexed loads."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType

    (out,) = outs
    shape = b.shape(perm)
    rank, axis = len(shape), axis % len(shape)

    def body(k, p):
        idx = [k.index(d) for d in range(rank)]
        idx[axis] = k.op(arith.IndexCastOp(p, IndexType()))
        return [k.load_at(x, idx)]

    return b.parallel([perm], [out], shape, [tuple(range(rank))], body)


@declare(kernel=_permute_kernel, infer=_permute_infer, grad=_permute_grad, attrs={"axis": "int"},
         lower=_lower_permute)
def permute_along_axis(x, perm, axis):
    """``x`` reordered along ``axis`` by ``perm`` (of x's shape, each line
    along the axis a permutation of 0..n-1, as ``argsort`` gives; not checked:
    an internal op of sort and top_k)."""
    return (x, perm), {"axis": int(axis)}


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis`` (TensorFlow's ``tf.sort``); the
    gradient goes back to each value's place."""
    values = convert_to_tensor(values)
    return permute_along_axis(values, argsort(values, axis, direction), axis)


@user_errors
def top_k(input, k=1, sorted=True, index_type=dtypes.int32, name=None):  # noqa: A002 (TensorFlow's names)
    """The ``k`` largest entries of the last axis of ``input`` and their
    indices (``index_type``: int32 or int64), largest first, equal values in
    index order (TensorFlow's ``tf.math.top_k``; the result is sorted whatever
    ``sorted`` says, an order TensorFlow allows)."""
    index_type = dtypes.as_dtype(index_type)
    if index_type not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"top_k: index_type must be int32 or int64, got {index_type.name}")
    x = convert_to_tensor(input)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"top_k: k must be an int >= 0, got {k!r}")
    if x.ndim == 0:
        raise ValueError("top_k: input must have rank >= 1, got a scalar")
    n = x.shape[-1]
    if n is not None and k > n:
        from tfc.core.errors import InvalidArgumentError

        raise InvalidArgumentError(f"top_k: input must have at least k={k} entries in its last axis, "
                                   f"got shape {list(x.shape)}")
    if n is None:  # known at run time: checked then (AssertionError naming k)
        from tfc.ops.control_flow import Assert
        from tfc.ops.math import greater_equal
        from tfc.ops.shapes import count_along

        Assert(greater_equal(count_along(x, (x.ndim - 1,)), k),
               [f"top_k: input must have at least k={k} entries in its last axis"])
    order = argsort(x, -1, "DESCENDING")
    indices = order[..., :k]
    if index_type != dtypes.int32:
        from tfc.ops.math import cast

        indices = cast(indices, index_type)
    return permute_along_axis(x, order, -1)[..., :k], indices


__all__ = ["argsort", "permute_along_axis", "sort", "top_k"]
