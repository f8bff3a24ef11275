"""Linear algebra."""
from __future__ import annotations

import numpy as np

from tfc.core.dtypes import NUMERIC
from tfc.core.registry import Spec, declare
from tfc.ops import _infer as inf
from tfc.ops._grad import unbroadcast


def _matmul_kernel(a, b, transpose_a, transpose_b):
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


def _matmul_infer(op, a: Spec, b: Spec, transpose_a, transpose_b) -> Spec:
    inf.check_same_dtype(op, a, b)
    inf.check_dtype(op, a, NUMERIC)
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"matmul: inputs must have rank >= 2, got shapes {inf.fmt_shape(a.shape)} "
                         f"and {inf.fmt_shape(b.shape)}")
    m, k = (a.shape[-1], a.shape[-2]) if transpose_a else a.shape[-2:]
    k2, n = (b.shape[-1], b.shape[-2]) if transpose_b else b.shape[-2:]
    if k is not None and k2 is not None and k != k2:
        raise ValueError(f"matmul: inner dimensions differ: {inf.fmt_shape(a.shape)}"
                         f"{' (transposed)' if transpose_a else ''} @ {inf.fmt_shape(b.shape)}"
                         f"{' (transposed)' if transpose_b else ''}: {k} != {k2}")
    try:
        batch = inf.broadcast_shapes(op, a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: batch dimensions of {inf.fmt_shape(a.shape)} and {inf.fmt_shape(b.shape)} "
                         "cannot be broadcast together") from None
    return Spec(batch + (m, n), a.dtype)


def _matmul_grad(e, g):
    a, b = e.inputs
    ta, tb = e.attrs["transpose_a"], e.attrs["transpose_b"]
    ga = gb = None
    if e.needs_grad(0):
        if not ta:
            ga = matmul(g, b, transpose_b=not tb)
        else:
            ga = matmul(b, g, transpose_a=tb, transpose_b=True)
        ga = unbroadcast(ga, a.shape)
    if e.needs_grad(1):
        if not tb:
            gb = matmul(a, g, transpose_a=not ta)
        else:
            gb = matmul(g, a, transpose_a=True, transpose_b=ta)
        gb = unbroadcast(gb, b.shape)
    return [ga, gb]


@declare(kernel=_matmul_kernel, infer=_matmul_infer, grad=_matmul_grad, promote=(0, 1),
         attrs={"transpose_a": "bool", "transpose_b": "bool"})
def matmul(a, b, transpose_a=False, transpose_b=False):
    """Matrix product of the last two axes, batched over the leading ones (broadcast)."""
    return (a, b), {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}
