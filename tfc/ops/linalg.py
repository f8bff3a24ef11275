"""Linear algebra."""
from __future__ import annotations

import math

import numpy as np

from tfc.core import blas_threads
from tfc.core.dtypes import NUMERIC
from tfc.core.registry import Spec, declare, user_errors
from tfc.core.tensor import Tensor, convert_to_tensor
from tfc.ops import _infer as inf
from tfc.ops._grad import unbroadcast


def blas_ready(a):
    """``a`` laid out so that numpy's matmul hands its matrices to BLAS: the
    last two axes strided with one unit stride. numpy multiplies other layouts
    (a broadcast, a strided slice) with its own loop, which sums in another
    order; eager and compiled code lay the same value out differently, so
    without this copy a product's bits would depend on the layout."""
    if a.ndim < 2 or a.dtype.kind not in "fc":
        return a  # numpy's own loop for every layout
    (s1, s2), (d1, d2), item = a.strides[-2:], a.shape[-2:], a.itemsize
    if (s2 == item and s1 % item == 0 and s1 // item >= d2) or (s1 == item and s2 % item == 0 and s2 // item >= d1):
        return a
    return np.ascontiguousarray(a)


def _one_gemm(a, b, transpose_a):
    """Does ``a @ b`` run as one GEMM over ``a``'s rows? A [..., M, K] tensor
    (C-contiguous, not transposed) times a 2-D weight: its rows flattened are
    one [batch*M, K] matrix, and one large GEMM is about twice as fast as
    numpy's batched loop of small ones (the same bits: BLAS sums each row's
    dot products in the same order either way)."""
    return (a.ndim > 2 and b.ndim == 2 and not transpose_a and a.flags.c_contiguous
            and a.dtype.kind in "fc")


def _rows(a):
    """``a`` as one matrix of its rows (a view: ``a`` is C-contiguous)."""
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def _matmul_kernel(a, b, transpose_a, transpose_b):
    # blas_threads.matmul: OpenBLAS on one thread per block, the blocks a function of the
    # shapes (eager and compiled cut a product alike: the same bits; see its docstring)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    if _one_gemm(a, b, transpose_a):
        return blas_threads.matmul(_rows(a), blas_ready(b)).reshape(a.shape[:-1] + b.shape[-1:])
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    return blas_threads.matmul(blas_ready(a), blas_ready(b))


def _matmul_into(a, b, out, transpose_a, transpose_b):
    """The product written into ``out`` (BLAS writes it there: eager's bits)."""
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    if _one_gemm(a, b, transpose_a) and out.flags.c_contiguous:
        blas_threads.matmul(_rows(a), blas_ready(b), out=_rows(out))
        return
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    blas_threads.matmul(blas_ready(a), blas_ready(b), out=out)


# operands of the result's dtype: numpy's matmul would otherwise cast them (with out=, it
# runs the loop of out's dtype); integers run numpy's own loop either way (exact, wrapping)
_matmul_into.when = lambda ins, out, **attrs: all(s.dtype == out.dtype for s in ins)


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
        ga = unbroadcast(ga, a, [b.shape[:-2] + (1, 1)])  # the matrix axes never broadcast
    if e.needs_grad(1):
        k, n = (b.shape[-1], b.shape[-2]) if tb else b.shape[-2:]
        if b.ndim == 2 and a.ndim > 2 and not ta and k and n:  # (known and non-zero: reshape's -1)
            from tfc.ops.shapes import reshape

            # a 2-D weight: one GEMM over the flattened batch, not a batched product and a sum
            a2, g2 = reshape(a, (-1, k)), reshape(g, (-1, n))
            gb = matmul(a2, g2, transpose_a=True) if not tb else matmul(g2, a2, transpose_a=True)
        elif not tb:
            gb = matmul(a, g, transpose_a=not ta)
        else:
            gb = matmul(g, a, transpose_a=True, transpose_b=ta)
        gb = unbroadcast(gb, b, [a.shape[:-2] + (1, 1)])
    return [ga, gb]


@declare(kernel=_matmul_kernel, infer=_matmul_infer, grad=_matmul_grad, promote=(0, 1), kernel_into=_matmul_into,
         attrs={"transpose_a": "bool", "transpose_b": "bool"})
def matmul(a, b, transpose_a=False, transpose_b=False):
    """Matrix product of the last two axes, batched over the leading ones (broadcast)."""
    return (a, b), {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}


def _tensordot_axes(axes, ra: int, rb: int):
    """``axes`` as two equal-length lists of non-negative axes of a and b."""
    if isinstance(axes, Tensor):
        axes = axes.numpy().tolist()
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if not 0 <= n <= min(ra, rb):
            raise ValueError(f"tensordot: axes={n} must be in [0, {min(ra, rb)}] for ranks {ra} and {rb}")
        return list(range(ra - n, ra)), list(range(n))
    try:
        xa, xb = axes
        xa = [int(xa)] if isinstance(xa, (int, np.integer)) else [int(v) for v in xa]
        xb = [int(xb)] if isinstance(xb, (int, np.integer)) else [int(v) for v in xb]
    except (TypeError, ValueError):
        raise TypeError(f"tensordot: axes must be an int or a pair of axis lists, got {axes!r}") from None
    if len(xa) != len(xb):
        raise ValueError(f"tensordot: axes {xa} and {xb} must have the same length")
    out = []
    for lst, r, which in ((xa, ra, "a"), (xb, rb, "b")):
        for v in lst:
            if not -r <= v < r:
                raise ValueError(f"tensordot: axis {v} is out of range for {which} of rank {r}")
        norm = [v % r for v in lst]
        if len(set(norm)) != len(norm):
            raise ValueError(f"tensordot: repeated axis in {lst} for {which}")
        out.append(norm)
    return out[0], out[1]


@user_errors
def tensordot(a, b, axes):
    """Sum of products over ``axes`` (an int N: the last N axes of a with the first N
    of b; or two lists of axes). A composite of transpose, reshape and matmul, so
    its gradient comes from theirs."""
    from tfc.ops.shapes import reshape, transpose

    a, b = convert_to_tensor(a), convert_to_tensor(b)
    xa, xb = _tensordot_axes(axes, a.ndim, b.ndim)
    for i, j in zip(xa, xb):
        if a.shape[i] is not None and b.shape[j] is not None and a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: axis {i} of a {inf.fmt_shape(a.shape)} and axis {j} of b "
                             f"{inf.fmt_shape(b.shape)} differ in size: {a.shape[i]} != {b.shape[j]}")
    free_a = [i for i in range(a.ndim) if i not in xa]
    free_b = [j for j in range(b.ndim) if j not in xb]
    out_shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[j] for j in free_b)
    summed = [a.shape[i] if a.shape[i] is not None else b.shape[j] for i, j in zip(xa, xb)]
    if None in summed or out_shape.count(None) > 1:
        # one free size known only at run time is a -1 of the reshapes; more have no static spelling
        raise NotImplementedError(
            f"tensordot of shapes {inf.fmt_shape(a.shape)} and {inf.fmt_shape(b.shape)} over axes {xa}, {xb}: "
            "summed sizes, or more than one free size, known only at run time are not supported; "
            "give them in the input_signature")

    def size(dims):
        return -1 if None in dims else int(np.prod(dims, dtype=np.int64))

    k = size(summed)
    m = size([a.shape[i] for i in free_a])
    n = size([b.shape[j] for j in free_b])
    pa, pb = free_a + xa, xb + free_b
    a2 = reshape(a if pa == sorted(pa) else transpose(a, pa), (m, k))
    b2 = reshape(b if pb == sorted(pb) else transpose(b, pb), (k, n))
    return reshape(matmul(a2, b2), tuple(-1 if d is None else d for d in out_shape))
