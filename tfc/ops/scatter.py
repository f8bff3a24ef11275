"""Scatter-adds: ``unsorted_segment_sum`` and ``gather_grad_like`` (gather's
gradient), their declarations and their lowering to L3.

A scatter-add is a sum (the reduction family, not data movement): several
positions of the input add into one element of the result. Eagerly each adds
with ``np.add.at`` into zeros (on flat positions: ``scatter_add_rows``), position
by position in row-major order. Their
lowering (``lower=``, tfc/passes/lower_loops.py) writes:

- the check of the indices, a reduction into a planned 0-d flag whose error
  path (``loops.raise``) runs the op's kernel, which raises eager's error;
- a fill of zeros of the result;
- a *scatter kernel*: a ``loops.parallel`` over the input's shape with no
  outputs, whose body adds each element into the result at its computed index
  (``loops.add_at``, masked where unsorted_segment_sum drops negative ids).

``loops.add_at`` applies the adds in the iteration space's row-major order on
a backend that keeps order (the numpy backend: one ``np.add.at``, each element
of the result summing its contributions in eager's order: the same bits), and
atomically on one that runs iterations concurrently (a GPU: float sums then
differ by rounding, the reduction family's tolerance)."""
from __future__ import annotations

import math

import numpy as np

from tfc.core import dtypes
from tfc.core.errors import InvalidArgumentError
from tfc.core.registry import Spec, declare
from tfc.core.shape import as_int
from tfc.ops import _infer as inf
from tfc.ops.shapes import (
    _bad_index_flag, _dims_agree, _gather_infer, _wrap_index_kernel, check_flag_temps, expand_dims, gather, reshape,
)


def scatter_add_rows(out, ids, rows):
    """``out[ids[i]] += rows[i]`` for each i in order (``out`` C-contiguous,
    ``ids`` 1-D and in range, ``rows[i]`` of ``out[0]``'s shape): np.add.at's
    bits (each element sums its contributions in the order of i), through
    numpy's fast 1-D path on flat positions: 0.25 ms where np.add.at on the
    rows takes 0.85 (2048 ids into 65 rows of 64), as the numpy backend's
    ``add_at`` adds (eager == compiled bit for bit). Sorting the ids for
    np.add.reduceat is no faster (0.26 ms; 0.88 vs 0.50 ms for 4096 ids into
    1000 rows) and sums pairwise, not in order."""
    width = math.prod(out.shape[1:])
    flat = ids.astype(np.intp, copy=False)[:, None] * width + np.arange(width, dtype=np.intp)
    np.add.at(out.reshape(-1), flat.reshape(-1), np.ascontiguousarray(rows, out.dtype).reshape(-1))


def _scatter(b, out, values, vmap, shape, index, mask=None):
    """The scatter kernel: over ``shape``, ``out[index(k, x)...] += x`` where
    ``mask(k, x)`` holds (``x``: the element of ``values``, read through
    ``vmap``, and the index input's element), after ``out`` is zeroed."""
    b.fill(out, 0)

    def body(k, *x):
        k.add_at(out, index(k, *x), x[0], None if mask is None else mask(k, *x))
        return []

    b.parallel(values, [], shape, vmap, body)


def _as_index(b, k, x):
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType

    return k.op(arith.IndexCastOp(x, IndexType()))


def _gather_grad_like_infer(op, g: Spec, indices: Spec, like: Spec, axis) -> Spec:
    want = _gather_infer(op, like, indices, axis).shape
    if g.ndim != len(want) or not all(_dims_agree(d, e) for d, e in zip(g.shape, want)):
        raise ValueError(f"gather_grad_like: g of shape {inf.fmt_shape(g.shape)} is not that of a gather from "
                         f"{inf.fmt_shape(like.shape)} at indices of shape {inf.fmt_shape(indices.shape)}")
    return Spec(tuple(like.shape), g.dtype)


def _gather_grad_like_kernel(g, indices, like, axis):
    a = axis % like.ndim  # (a negative axis counted from the end, as gather's)
    # Python-style indices, as x[i] takes them (wrap_index: its IndexError outside [-n, n)),
    # so that the static form (wrap_index, then unsorted_segment_sum) means the same
    indices = _wrap_index_kernel(indices, like, a)
    # rows added in the order of the indices, as unsorted_segment_sum adds them: along
    # axis 0 of like with ``axis`` moved to the front, then moved back
    q, rest = indices.ndim, like.shape[:a] + like.shape[a + 1:]
    out = np.zeros((like.shape[a],) + rest, g.dtype)
    rows = np.moveaxis(g, tuple(range(a, a + q)), tuple(range(q))).reshape((indices.size,) + rest)
    scatter_add_rows(out, indices.reshape(-1), rows)
    return out if a == 0 else np.ascontiguousarray(np.moveaxis(out, 0, a))


def _gather_grad_like_static(op):
    """gather's gradient as a static trace writes it: the index axes of g to the
    front, unsorted_segment_sum into the size of ``like``'s axis (rows added in
    the order of the indices, as gather_grad_like's kernel adds them), back;
    the indices made non-negative first (wrap_index, as the kernel)."""
    from tfc.dialects.tensor import ConstantOp, build_op, spec_of

    g, indices, like = op.operands
    lspec = spec_of(like.type)
    a = op.attr_values["axis"] % max(lspec.ndim, 1)
    n = lspec.shape[a]
    if n is None:
        return None
    q, rank = spec_of(indices.type).ndim, spec_of(g.type).ndim
    new_ops, v = [], g
    known = indices.owner.numpy() if isinstance(indices.owner, ConstantOp) else None
    if known is None or known.size and (known.min() < 0 or known.max() >= n):
        # negative indices count from the end, as in gather_grad_like's kernel (unsorted_segment_sum
        # drops them); constant indices in [0, n) (a gather's, always) need nothing
        new_ops.append(build_op("wrap_index", [indices, like], {"axis": a}))
        indices = new_ops[-1].results[0]
    perm = [*range(a, a + q), *range(a), *range(a + q, rank)]
    if perm != sorted(perm):
        new_ops.append(build_op("transpose", [v], {"perm": tuple(perm)}))
        v = new_ops[-1].results[0]
    new_ops.append(build_op("unsorted_segment_sum", [v, indices], {"num_segments": n}))
    v = new_ops[-1].results[0]
    back = [*range(1, a + 1), 0, *range(a + 1, spec_of(v.type).ndim)]
    if back != sorted(back):
        new_ops.append(build_op("transpose", [v], {"perm": tuple(back)}))
        v = new_ops[-1].results[0]
    if v.type != op.results[0].type:  # like's other dims still ?: the static form would say less
        return None
    return new_ops, [v]


def _lower_gather_grad_like(b, outs, g, indices, like, axis):
    """Zeros of ``like``'s shape, then out[p..., wrap(i), r...] += g[p..., j...,
    r...] with i = indices[j...] (negative: from the end, as the kernel wraps
    it); an index outside [-n, n) is eager's IndexError (its kernel raises it
    through ``loops.raise``)."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import i64

    (out,) = outs
    oshape, ishape, gshape = b.shape(out), b.shape(indices), b.shape(g)
    a = axis % len(oshape)
    n, q = oshape[a], len(ishape)
    b.fail_if(_bad_index_flag(b, indices, -n, n), [g, indices, like])

    def index(k, x, i):
        i = k.op(arith.ExtSIOp(i, i64)) if i.type != i64 else i
        wrapped = k.op(arith.SelectOp(k.op(arith.CmpiOp(i, k.const(0, i64), "slt")),
                                      k.op(arith.AddiOp(i, k.const(n, i64))), i))
        return [k.index(d) for d in range(a)] + [_as_index(b, k, wrapped)] + \
            [k.index(a + q + d) for d in range(len(oshape) - a - 1)]

    _scatter(b, out, [g, indices], [tuple(range(len(gshape))), tuple(range(a, a + q))], gshape, index)


_lower_gather_grad_like.temps = check_flag_temps(1)


@declare(kernel=_gather_grad_like_kernel, infer=_gather_grad_like_infer,
         grad=lambda e, g: [gather(g, e.inputs[1], axis=e.attrs["axis"]), None, None], attrs={"axis": "int"},
         static_form=_gather_grad_like_static, lower=_lower_gather_grad_like)
def gather_grad_like(g, indices, like, axis):
    """Zeros of ``like``'s shape, with the slices of ``g`` added at ``indices``
    along ``axis`` (the gradient of gather where that axis's size is known only
    at run time)."""
    return (g, indices, like), {"axis": int(axis)}


def _segment_sum_infer(op, data: Spec, ids: Spec, num_segments) -> Spec:
    inf.check_dtype(op, data, dtypes.NUMERIC, "data")
    inf.check_dtype(op, ids, dtypes.INTS, "segment_ids")
    if ids.ndim > data.ndim or not all(_dims_agree(d, e) for d, e in zip(ids.shape, data.shape)):
        raise ValueError(f"unsorted_segment_sum: segment_ids shape {inf.fmt_shape(ids.shape)} must be a "
                         f"prefix of data shape {inf.fmt_shape(data.shape)}")
    if num_segments < 0:
        raise ValueError(f"unsorted_segment_sum: num_segments must be >= 0, got {num_segments}")
    return Spec((num_segments,) + data.shape[ids.ndim:], data.dtype)


def _segment_sum_kernel(data, ids, num_segments):
    out = np.zeros((num_segments,) + data.shape[ids.ndim:], data.dtype)
    if ids.size and ids.max() >= num_segments:
        raise InvalidArgumentError(f"unsorted_segment_sum: segment id {ids.max()} is out of range [0, {num_segments})")
    keep = ids >= 0  # negative ids are dropped, as in TensorFlow
    scatter_add_rows(out, ids[keep], data[keep])
    return out


def _segment_sum_grad(e, g):
    from tfc.ops.creation import zeros_like
    from tfc.ops.math import greater_equal, maximum, where

    data, ids = e.inputs
    rows = gather(g, maximum(ids, 0), axis=0)
    keep = greater_equal(ids, 0)
    if None in tuple(ids.shape):  # no static shape to reshape to: one new axis at a time
        for _ in range(data.ndim - ids.ndim):
            keep = expand_dims(keep, -1)
    else:
        keep = reshape(keep, ids.shape + (1,) * (data.ndim - ids.ndim))
    return [where(keep, rows, zeros_like(rows)), None]


def _lower_segment_sum(b, outs, data, ids, num_segments):
    """Zeros, then out[ids[i...], r...] += data[i..., r...] where ids[i...] >= 0
    (negative ids are dropped); an id >= num_segments is eager's
    InvalidArgumentError (its kernel raises it, naming the largest id,
    through ``loops.raise``)."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import i64

    (out,) = outs
    dshape, q = b.shape(data), len(b.shape(ids))
    b.fail_if(_bad_index_flag(b, ids, None, num_segments), [data, ids])

    def index(k, x, i):
        return [_as_index(b, k, i)] + [k.index(d) for d in range(q, len(dshape))]

    def keep(k, x, i):
        i = k.op(arith.ExtSIOp(i, i64)) if i.type != i64 else i
        return k.op(arith.CmpiOp(i, k.const(0, i64), "sge"))

    _scatter(b, out, [data, ids], [tuple(range(len(dshape))), tuple(range(q))], dshape, index, keep)


_lower_segment_sum.temps = check_flag_temps(1)


@declare(kernel=_segment_sum_kernel, infer=_segment_sum_infer, grad=_segment_sum_grad,
         attrs={"num_segments": "int"}, lower=_lower_segment_sum)
def unsorted_segment_sum(data, segment_ids, num_segments):
    """out[k] = sum of data[i...] over the positions where segment_ids[i...] == k
    (a scatter-add; the gradient of gather). Negative ids are dropped."""
    return (data, segment_ids), {"num_segments": as_int("unsorted_segment_sum", num_segments, "num_segments")}
