"""Shape manipulation: one declaration per op."""
from __future__ import annotations

import operator

import numpy as np

from tfc.core import dtypes
from tfc.core.errors import InvalidArgumentError
from tfc.core.registry import Spec, declare, note_user_line
from tfc.core.shape import as_axis, as_int, as_ints
from tfc.core.tensor import GpuTensor, Tensor, convert_to_tensor
from tfc.ops import _infer as inf
from tfc.ops import _scalar
from tfc.ops._grad import unbroadcast


def _ints(op_name, value, what="shape", minimum=None):
    return as_ints(op_name, value, what, minimum)


# -- lowerings to the loops dialect (OpDef.lower; see tfc/passes/lower_loops.py) ----------
# An op's results are written into planned buffers ``outs`` by copy kernels
# reading views of the inputs; an alias lowering (``lower.alias``) returns a
# view instead where the data stays contiguous.

def _alias(predicate):
    """Mark a lowering as an alias where ``predicate(in_specs, **attrs)``."""
    def mark(fn):
        fn.alias = predicate
        return fn
    return mark


def _always(in_specs, **attrs) -> bool:
    return True


@_alias(_always)
def _lower_same_elements(b, outs, x, *like, **attrs):
    """reshape, reshape_like, expand_dims, squeeze: the same elements in the
    same order; an alias (``loops.reshape``), or a copy where a 0-d value (a
    scalar in L3) is involved."""
    if outs is None:
        return b.reshape(x, b.result_shapes[0])
    (out,) = outs
    if not b.is_buffer(x):
        return b.copy(x, out)  # a scalar fills the one element
    return b.copy(x, b.reshape(out, b.shape(x)))


def _viewed(predicate):
    """Mark a lowering as giving a strided view (``outs`` None) where
    ``predicate(in_specs, **attrs)`` and every user of the result is a kernel
    that reads it as an input (tfc-bufferize decides): no copy."""
    def mark(fn):
        fn.view = predicate
        return fn
    return mark


@_viewed(_always)
def _lower_transpose(b, outs, x, perm):
    """A transposed view: read as it is by the kernels using it, or copied
    into ``outs``. A 0-d ``x`` (a scalar in L3; never a view) is written as
    it is."""
    if not b.is_buffer(x):
        return b.copy(x, outs[0])
    rank = len(b.shape(x))
    perm = tuple(reversed(range(rank))) if perm is None else tuple(p % rank for p in perm)
    view = b.transpose_view(x, perm)
    if outs is None:
        return view
    return b.copy(view, outs[0])


def _index_view(shape, index):
    """(offsets, sizes, strides, kept dims, new-axis positions in the result)
    of basic index ``index`` (``_index_attr``'s form) on ``shape``: the
    loops.subview it reads, less the unit dims of integer indices (dropped),
    plus the new axes."""
    n_axes = sum(1 for k in index if k is not None and k != "...")
    full = ("slice", None, None, None)
    if "..." in index:
        i = index.index("...")
        index = index[:i] + (full,) * (len(shape) - n_axes) + index[i + 1:]
    else:
        index = tuple(index) + (full,) * (len(shape) - n_axes)
    offsets, sizes, strides, kept, new = [], [], [], [], []
    axis = pos = 0
    for k in index:
        if k is None:
            new.append(pos)
            pos += 1
            continue
        d = shape[axis]
        if isinstance(k, tuple):
            start, stop, step = slice(*k[1:]).indices(d)
            n = len(range(start, stop, step))
            offsets.append(start if n else 0)
            sizes.append(n)
            strides.append(step)
            kept.append(axis)
            pos += 1
        else:
            offsets.append(k + d if k < 0 else k)
            sizes.append(1)
            strides.append(1)
        axis += 1
    return offsets, sizes, strides, kept, new


def _getitem_is_contiguous(in_specs, index) -> bool:
    """Does ``index`` select one contiguous range of a row-major buffer?"""
    from xdsl.dialects.builtin import MemRefType, f32

    from tfc.dialects import loops as L

    shape = in_specs[0].shape
    offsets, sizes, strides, kept, _ = _index_view(shape, index)
    _, st, off = L.subview_layout(MemRefType(f32, list(shape)), offsets, sizes, strides)
    return L.is_contiguous(L.strided_type(f32, [sizes[i] for i in kept], [st[i] for i in kept], off))


@_viewed(lambda in_specs, index: None not in index)  # (a strided view has no new axes)
@_alias(_getitem_is_contiguous)
def _lower_getitem(b, outs, x, index):
    """A subview of ``x`` (its integer indices dropped): an alias where that is
    one contiguous range (``x[2:5]`` of rows), the strided view itself where
    only kernels read it, else copied into ``outs``. A 0-d ``x`` (a scalar
    in L3; its index only new axes and ``...``) fills the one element."""
    if not b.is_buffer(x):
        return b.copy(x, outs[0])
    offsets, sizes, strides, kept, _ = _index_view(b.shape(x), index)
    view = b.subview(x, offsets, sizes, strides, keep=kept)
    if outs is None:
        return b.reshape(view, b.result_shapes[0]) if b.is_contiguous(view) else view
    (out,) = outs
    return b.copy(view, b.reshape(out, b.shape(view)))


def _lower_slice_grad(b, outs, g, shape, index):
    """Zeros, and ``g`` (less its new axes) copied into the window. Where the
    window is a box (unit steps), only the slabs around it are zeroed."""
    (out,) = outs
    offsets, sizes, strides, kept, new = _index_view(tuple(shape), index)
    if all(n <= 1 or abs(s) == 1 for n, s in zip(sizes, strides)) and all(sizes):
        _fill_around(b, out, tuple(shape), [o if s > 0 else o - n + 1 for o, n, s in zip(offsets, sizes, strides)],
                     sizes)
    else:
        b.fill(out, 0)
    window = b.subview(out, offsets, sizes, strides, keep=kept)
    gs = b.shape(g)
    if new and gs:
        rank = len(gs)
        g = b.subview(g, [0] * rank, gs, [1] * rank, keep=[i for i in range(rank) if i not in new])
    return b.copy(g, window)


def _fill_around(b, out, shape, lo, sizes):
    """Zeros in ``out`` outside the box at ``lo`` of ``sizes``: per dim d, the
    slabs before and after the box along d, within the box along dims < d."""
    rank = len(shape)
    for d in range(rank):
        head = [lo[e] for e in range(d)]
        span = [sizes[e] for e in range(d)]
        for start, n in ((0, lo[d]), (lo[d] + sizes[d], shape[d] - lo[d] - sizes[d])):
            if n > 0 and all(shape[e] for e in range(d + 1, rank)):
                off = head + [start] + [0] * (rank - d - 1)
                size = span + [n] + list(shape[d + 1:])
                b.fill(b.subview(out, off, size, [1] * rank), 0)


def _lower_concat(b, outs, *xs, axis):
    """Each piece copied into its window of the result, but those that their
    kernel wrote there already (``lower.windows``: tfc-bufferize gives such a
    kernel's result that window of the result's buffer)."""
    (out,) = outs
    shape = b.shape(out)
    for x, offsets in zip(xs, _concat_windows([b.shape(x) for x in xs], axis)):
        if b.is_buffer(x) and b.is_window(x, out, offsets):
            continue
        b.copy(x, b.subview(out, offsets, b.shape(x), [1] * len(shape)))


def _concat_windows(shapes, axis):
    """Per piece of ``shapes``: the offsets of its window of the result."""
    a = axis % len(shapes[0])
    out, at = [], 0
    for s in shapes:
        out.append([at if i == a else 0 for i in range(len(s))])
        at += s[a]
    return out


_lower_concat.windows = lambda specs, axis: _concat_windows([s.shape for s in specs], axis)


def _lower_stack(b, outs, *xs, axis):
    """Each piece copied into its unit-wide window along the new axis."""
    (out,) = outs
    shape = b.shape(out)
    a = axis % len(shape)
    for i, x in enumerate(xs):
        offsets = [i if d == a else 0 for d in range(len(shape))]
        sizes = [1 if d == a else n for d, n in enumerate(shape)]
        b.copy(x, b.subview(out, offsets, sizes, [1] * len(shape), keep=[d for d in range(len(shape)) if d != a]))


def _lower_unstack(b, outs, x, num, axis):
    shape = b.shape(x)
    a = axis % len(shape)
    for i, out in enumerate(outs):
        offsets = [i if d == a else 0 for d in range(len(shape))]
        sizes = [1 if d == a else n for d, n in enumerate(shape)]
        b.copy(b.subview(x, offsets, sizes, [1] * len(shape), keep=[d for d in range(len(shape)) if d != a]), out)


def _lower_split(b, outs, x, *likes, axis, **attrs):
    """Each part's window of ``x`` copied out (split and split_like)."""
    shape = b.shape(x)
    a = axis % len(shape)
    at = 0
    for out in outs:
        os_ = b.shape(out)
        b.copy(b.subview(x, [at if d == a else 0 for d in range(len(shape))], os_, [1] * len(shape)), out)
        at += os_[a]


def _lower_tile(b, outs, x, multiples):
    """The result seen as (m0, d0, m1, d1, ...), each copy of ``x`` read there
    (a broadcast of ``x`` over the m axes)."""
    (out,) = outs
    shape = b.shape(x)
    if not shape:
        return b.copy(x, b.reshape(out, (1,)) if b.shape(out) else out)
    split = tuple(v for pair in zip(multiples, shape) for v in pair)
    return b.parallel([x], [b.reshape(out, split)], split, [tuple(range(1, 2 * len(shape), 2))],
                      lambda k, v: [v])


def _lower_broadcast(b, outs, x, *rest, **attrs):
    """broadcast_to / broadcast_like: ``x``'s dims aligned right, its unit dims
    that broadcast left out of its view (a rank-reducing subview)."""
    (out,) = outs
    target = b.shape(out)
    shape = b.shape(x)
    if not shape:
        return b.copy(x, out)
    lead = len(target) - len(shape)
    keep = [i for i, d in enumerate(shape) if not (d == 1 and target[lead + i] != 1)]
    if len(keep) != len(shape):
        x = b.subview(x, [0] * len(shape), shape, [1] * len(shape), keep=keep)
    return b.parallel([x], [out], target, [tuple(lead + i for i in keep)], lambda k, v: [v])


def _when(predicate):
    """Mark a lowering as applying only where ``predicate(in_specs, **attrs)``
    (elsewhere the op stays a library call)."""
    def mark(fn):
        fn.when = predicate
        return fn
    return mark


def _pad_value(dtype, constant_values):
    """The fill value of a CONSTANT pad of a ``dtype`` tensor, as eager's
    kernel converts it (np.pad: 70000.0 is inf in float16, -2.5 is -2 in
    int32), computed by that kernel; None where it raises (300 in int8, nan
    in int32: the op stays a library call, which raises eager's error)."""
    try:
        with np.errstate(all="ignore"):
            return _pad_kernel(np.zeros((0,), dtype.as_numpy_dtype), (1, 0), "CONSTANT", constant_values)[0]
    except (OverflowError, ValueError, TypeError):
        return None


@_when(lambda in_specs, paddings, mode, constant_values:
       mode != "CONSTANT" or _pad_value(in_specs[0].dtype, constant_values) is not None)
def _lower_pad(b, outs, x, paddings, mode, constant_values):
    """CONSTANT: the fill value (``_pad_value``), then ``x`` copied into its
    window. REFLECT / SYMMETRIC: each element read from ``x`` at its mirrored
    index (one reflection per side: inference bounds the paddings by the
    size)."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType

    (out,) = outs
    if not b.is_buffer(x):  # a 0-d x (a scalar in L3) has no paddings: itself
        return b.copy(x, out)
    shape = b.shape(x)
    pairs = _pad_pairs(paddings)
    if mode == "CONSTANT":
        from tfc.dialects.tensor import dtype_of

        b.fill(out, _pad_value(dtype_of(out.type.element_type), constant_values))
        return b.copy(x, b.subview(out, [lo for lo, _ in pairs], shape, [1] * len(shape)))
    edge = 0 if mode == "REFLECT" else 1  # SYMMETRIC repeats the edge element

    def body(k):
        ix = IndexType()
        idx = []
        for d, ((lo, hi), n) in enumerate(zip(pairs, shape)):
            j = k.index(d)
            if lo:
                j = k.op(arith.SubiOp(j, k.const(lo, ix)))
                # j < 0: -j (REFLECT) or -1 - j (SYMMETRIC)
                j = k.op(arith.SelectOp(k.op(arith.CmpiOp(j, k.const(0, ix), "slt")),
                                        k.op(arith.SubiOp(k.const(-edge, ix), j)), j))
            if hi:  # j >= n: 2(n - 1) - j (REFLECT) or 2n - 1 - j (SYMMETRIC)
                j = k.op(arith.SelectOp(k.op(arith.CmpiOp(j, k.const(n, ix), "sge")),
                                        k.op(arith.SubiOp(k.const(2 * n - 2 + edge, ix), j)), j))
            idx.append(j)
        return [k.load_at(x, idx)]

    return b.parallel([], [out], b.shape(out), [], body)


@_when(lambda in_specs, axis, dtype: not dtype.is_bool)
def _lower_range_along(b, outs, x, axis, dtype):
    """out[i] = i, converted as numpy's arange converts it."""
    (out,) = outs
    elt = out.type.element_type
    return b.parallel([], [out], b.shape(out), [], lambda k: [b.index_cast(k, k.index(0), elt)])


def _one_hot_values(on_value, off_value, dtype):
    """(on, off) as eager's kernel makes them: np.where's promotion of the
    two, then cast to ``dtype`` (300 is 44 in int8, 70000.0 inf in float16,
    2**53 + 1 with off 0.5 a float64 first); None where that raises (the op
    stays a library call, which raises eager's error)."""
    try:
        with np.errstate(all="ignore"):
            on, off = _one_hot_kernel(np.array([0]), 2, on_value, off_value, -1, dtype)[0]
    except (OverflowError, ValueError, TypeError):
        return None
    return on, off


@_when(lambda in_specs, depth, on_value, off_value, axis, dtype: _one_hot_values(on_value, off_value, dtype)
       is not None)
def _lower_one_hot(b, outs, indices, depth, on_value, off_value, axis, dtype):
    """out = on where the index along the new axis equals the index read,
    else off (an index out of range matches nowhere, as eager's); on and off
    converted as eager's kernel converts them (``_one_hot_values``)."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import i64

    (out,) = outs
    shape = b.shape(out)
    a = len(shape) - 1 if axis == -1 else axis
    elt = out.type.element_type
    idx_t = getattr(indices.type, "element_type", indices.type)  # a memref's, or a scalar's own

    def body(k, x):
        pos = k.op(arith.IndexCastOp(k.index(a), i64))
        if idx_t != i64:
            x = k.op(arith.ExtSIOp(x, i64))  # compared as int64, as numpy compares with arange's
        hot = k.op(arith.CmpiOp(x, pos, "eq"))
        return [k.op(arith.SelectOp(hot, k.const(on, elt), k.const(off, elt)))]

    on, off = _one_hot_values(on_value, off_value, dtype)

    bmap = tuple(d for d in range(len(shape)) if d != a)
    return b.parallel([indices], [out], shape, [bmap if b.shape(indices) else ()], body)


def _reshape_infer(op, x: Spec, shape) -> Spec:
    if sum(1 for d in shape if d == -1) > 1:
        raise ValueError(f"reshape: at most one -1 in the new shape, got {shape}")
    if any(d < -1 for d in shape):
        raise ValueError(f"reshape: invalid dimension in {shape}")
    if any(d is None for d in x.shape):
        return Spec(tuple(None if d == -1 else d for d in shape), x.dtype)
    size = int(np.prod(x.shape, dtype=np.int64))
    known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
    if -1 in shape:
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape a tensor of shape {inf.fmt_shape(x.shape)} "
                             f"({size} elements) into {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    elif known != size:
        raise ValueError(f"reshape: cannot reshape a tensor of shape {inf.fmt_shape(x.shape)} "
                         f"({size} elements) into {inf.fmt_shape(shape)} ({known} elements)")
    return Spec(shape, x.dtype)


def _back_to_input_shape(e, g):
    """``g`` reshaped to the op's input shape (that of the input itself where a
    dimension is known only at run time)."""
    x = e.inputs[0]
    if None in tuple(x.shape):
        return reshape_like(g, x)
    return reshape(g, x.shape)


def _reshape_grad(e, g):
    return [_back_to_input_shape(e, g)]


@declare(kernel=lambda x, shape: np.reshape(x, shape), infer=_reshape_infer, grad=_reshape_grad,
         attrs={"shape": "ints"}, lower=_lower_same_elements)
def reshape(tensor, shape):
    """The same elements in a new shape; one dimension may be -1 (inferred)."""
    return (tensor,), {"shape": _ints("reshape", shape, minimum=-1)}


def _reshape_like_infer(op, x: Spec, like: Spec) -> Spec:
    if None not in x.shape + like.shape and np.prod(x.shape, dtype=np.int64) != np.prod(like.shape, dtype=np.int64):
        raise ValueError(f"reshape_like: cannot reshape a tensor of shape {inf.fmt_shape(x.shape)} into "
                         f"{inf.fmt_shape(like.shape)}")
    return Spec(tuple(like.shape), x.dtype)


@declare(kernel=lambda x, like: np.reshape(x, like.shape), infer=_reshape_like_infer, lower=_lower_same_elements,
         grad=lambda e, g: [reshape_like(g, e.inputs[0]), None])
def reshape_like(tensor, like):
    """``reshape(tensor, like.shape)`` where that shape is known only at run time
    (the gradient of reshape, squeeze and expand_dims there)."""
    return (tensor, like), {}


def _broadcasts_to(shape, target) -> bool:
    """Does ``shape`` broadcast to ``target``? A size known only at run time may
    (the kernel checks it then, as TensorFlow does)."""
    lead = len(target) - len(shape)
    return lead >= 0 and all(d in (1, None) or t is None or d == t for d, t in zip(shape, target[lead:]))


def _broadcast_to_infer(op, x: Spec, shape) -> Spec:
    if not _broadcasts_to(x.shape, shape):
        raise ValueError(f"broadcast_to: cannot broadcast shape {inf.fmt_shape(x.shape)} to {inf.fmt_shape(shape)}")
    return Spec(tuple(shape), x.dtype)


@declare(kernel=lambda x, shape: np.broadcast_to(x, shape), infer=_broadcast_to_infer, lower=_lower_broadcast,
         grad=lambda e, g: [unbroadcast(g, e.inputs[0], [e.attrs["shape"]])], attrs={"shape": "ints"},
         scalar=_scalar.identity)
def broadcast_to(input, shape):  # noqa: A002
    """``input`` broadcast (NumPy rules) to ``shape``."""
    return (input,), {"shape": _ints("broadcast_to", shape, minimum=0)}


def _broadcast_like_infer(op, x: Spec, like: Spec) -> Spec:
    if not _broadcasts_to(x.shape, like.shape):
        raise ValueError(f"broadcast_like: cannot broadcast shape {inf.fmt_shape(x.shape)} to "
                         f"{inf.fmt_shape(like.shape)}")
    return Spec(tuple(like.shape), x.dtype)


# -- static forms (tfc-specialize) ----------------------------------------------------
# An op that reads only the shape of an operand declares ``static_form(op)``:
# once tfc-specialize knows that shape, (the new ops, the values replacing the
# op's results) of the op written without it, as a static trace writes it;
# None where a shape it needs is still unknown.


def _static(v) -> tuple | None:
    """The static shape of IR value ``v``, or None."""
    from tfc.dialects.tensor import spec_of

    s = spec_of(v.type).shape
    return None if None in s else s


def _broadcast_like_static(op):
    from tfc.dialects.tensor import build_op

    shape = _static(op.operands[1])
    if shape is None:
        return None
    new = build_op("broadcast_to", [op.operands[0]], {"shape": shape}, result_types=[op.results[0].type])
    return [new], [new.results[0]]


@declare(kernel=lambda x, like: np.broadcast_to(x, like.shape), infer=_broadcast_like_infer, lower=_lower_broadcast,
         grad=lambda e, g: [unbroadcast(g, e.inputs[0], [e.inputs[1].shape]), None],
         static_form=_broadcast_like_static)
def broadcast_like(input, like):  # noqa: A002
    """``broadcast_to(input, like.shape)`` where that shape is known only at run time."""
    return (input, like), {}


def _unbroadcast_like_infer(op, g: Spec, like: Spec) -> Spec:
    if not _broadcasts_to(like.shape, g.shape):
        raise ValueError(f"unbroadcast_like: shape {inf.fmt_shape(like.shape)} does not broadcast to "
                         f"{inf.fmt_shape(g.shape)}")
    return Spec(tuple(like.shape), g.dtype)


def _unbroadcast_like_kernel(g, like):
    # the sums unbroadcast makes where the shapes are static, in the same order
    from tfc.ops.reductions import _sum_kernel

    lead = g.ndim - like.ndim
    if lead:
        g = _sum_kernel(g, tuple(range(lead)), False)
    ones = tuple(i for i, d in enumerate(like.shape) if d == 1 and g.shape[i] != 1)
    if ones:
        g = _sum_kernel(g, ones, True)
    return g


def _unbroadcast_like_static(op):
    """The reduce_sum ops of tfc.ops._grad.unbroadcast on static shapes (which
    unbroadcast_like's kernel makes in the same order: the same bits)."""
    from tfc.dialects.tensor import build_op, loc_str, spec_of

    g, like = op.operands
    gshape, shape = _static(g), _static(like)
    if gshape is None or shape is None:
        return None
    new_ops, v = [], g
    lead = len(gshape) - len(shape)
    if lead:
        new_ops.append(build_op("reduce_sum", [v], {"axis": tuple(range(lead)), "keepdims": False}))
        v = new_ops[-1].results[0]
    cur = spec_of(v.type).shape
    ones = tuple(i for i, d in enumerate(shape) if d == 1 and cur[i] != 1)
    if ones:
        new_ops.append(build_op("reduce_sum", [v], {"axis": ones, "keepdims": True}))
        v = new_ops[-1].results[0]
    if v.type != op.results[0].type:
        raise AssertionError(f"{loc_str(op)}: unbroadcast_like's static form gives {v.type}, "
                             f"not {op.results[0].type}")
    return new_ops, [v]


@declare(kernel=_unbroadcast_like_kernel, infer=_unbroadcast_like_infer,
         grad=lambda e, g: [broadcast_like(g, e.inputs[0]), None], static_form=_unbroadcast_like_static)
def unbroadcast_like(input, like):  # noqa: A002
    """``input`` summed down to the shape of ``like``, which broadcasts to it: over
    the leading axes and where ``like`` has size 1 (the gradient of a broadcast
    where the sizes are known only at run time: TensorFlow's BroadcastGradientArgs)."""
    return (input, like), {}


def _count_along_kernel(x, axes):
    return np.array(int(np.prod([x.shape[a] for a in axes], dtype=np.int64)), np.int64)


def _count_along_static(op):
    from tfc.dialects.tensor import ConstantOp, spec_of

    shape = spec_of(op.operands[0].type).shape
    dims = [shape[a] for a in op.attr_values["axes"]]
    if None in dims:
        return None
    # the kernel reads the shape only: a zero-strided array of it costs no memory
    c = ConstantOp.from_numpy(op.OPDEF.kernel(np.broadcast_to(np.int8(0), shape), **op.attr_values))
    return [c], [c.result]


@declare(kernel=_count_along_kernel, infer=lambda op, x, axes: Spec((), dtypes.int64),
         grad=lambda e, g: [None], attrs={"axes": "ints"}, static_form=_count_along_static)
def count_along(input, axes):  # noqa: A002
    """The number of elements along ``axes`` of ``input`` (a 0-d int64): a
    reduction's count where a reduced dimension is known only at run time."""
    return (input,), {"axes": tuple(int(a) for a in axes)}


def _range_along_static(op):
    from tfc.dialects.tensor import build_op, spec_of

    (n,) = spec_of(op.results[0].type).shape
    if n is None:
        return None
    # range's kernel is np.arange(0.0, n, 1.0, dtype): range_along's np.arange(n, dtype) element for element
    new = build_op("range", [], {"start": 0.0, "limit": float(n), "delta": 1.0, "dtype": op.attr_values["dtype"]},
                   result_types=[op.results[0].type])
    return [new], [new.results[0]]


@declare(kernel=lambda x, axis, dtype: np.arange(x.shape[axis], dtype=dtype.as_numpy_dtype),
         infer=lambda op, x, axis, dtype: Spec((x.shape[inf.normalize_axis(op, axis, x.ndim)],), dtype),
         grad=lambda e, g: [None], attrs={"axis": "int", "dtype": "dtype"}, lower=_lower_range_along,
         static_form=_range_along_static)
def range_along(input, axis, dtype=dtypes.int64):  # noqa: A002
    """0, 1, ..., n - 1 for the size n of ``input``'s ``axis``: ``tfc.range(n)``
    where n is known only at run time."""
    return (input,), {"axis": as_axis("range_along", axis),
                      "dtype": dtypes.as_dtype(dtype)}


def _transpose_infer(op, x: Spec, perm) -> Spec:
    if perm is None:
        return Spec(tuple(reversed(x.shape)), x.dtype)
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"transpose: perm {perm} is not a permutation of the {x.ndim} axes of shape "
                         f"{inf.fmt_shape(x.shape)}")
    return Spec(tuple(x.shape[p] for p in perm), x.dtype)


def _transpose_grad(e, g):
    perm = e.attrs["perm"]
    if perm is None:
        return [transpose(g)]
    return [transpose(g, tuple(int(i) for i in np.argsort(perm)))]


@declare(kernel=lambda x, perm: np.transpose(x, perm), infer=_transpose_infer, grad=_transpose_grad,
         attrs={"perm": "ints?"}, lower=_lower_transpose)
def transpose(a, perm=None):
    """Axes permuted by ``perm`` (reversed when None)."""
    return (a,), {"perm": None if perm is None else _ints("transpose", perm, "perm")}


def _expand_dims_infer(op, x: Spec, axis) -> Spec:
    a = inf.normalize_axis(op, axis, x.ndim + 1)
    return Spec(x.shape[:a] + (1,) + x.shape[a:], x.dtype)


@declare(kernel=lambda x, axis: np.expand_dims(x, axis), infer=_expand_dims_infer,
         grad=lambda e, g: [_back_to_input_shape(e, g)], attrs={"axis": "int"}, lower=_lower_same_elements)
def expand_dims(input, axis):  # noqa: A002
    """A new axis of size 1 inserted at ``axis``."""
    return (input,), {"axis": as_axis("expand_dims", axis)}


def _squeeze_rank_unknown(shape):
    """Why squeeze(axis=None) cannot be traced on ``shape``, or None."""
    unknown = [i for i, d in enumerate(shape) if d is None]
    if unknown:
        return (f"squeeze: axis=None on shape {inf.fmt_shape(shape)}: whether axes {unknown} are removed depends "
                "on sizes known only at run time, so the result's rank does (TensorFlow's unknown rank; tfc's "
                "ranks are static); pass axis")
    return None


def _squeeze_infer(op, x: Spec, axis) -> Spec:
    if axis is None:
        why = _squeeze_rank_unknown(x.shape)
        if why:
            raise ValueError(why)
        return Spec(tuple(d for d in x.shape if d != 1), x.dtype)
    axes = inf.normalize_axes(op, axis, x.ndim)
    for a in axes:
        if x.shape[a] not in (1, None):  # None: checked when the code runs (the error is this one), as in TF
            raise ValueError(f"squeeze: axis {a} of shape {inf.fmt_shape(x.shape)} has size {x.shape[a]}, not 1")
    return Spec(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)


@declare(kernel=lambda x, axis: np.squeeze(x, axis), infer=_squeeze_infer,
         grad=lambda e, g: [_back_to_input_shape(e, g)], attrs={"axis": "ints?"}, lower=_lower_same_elements)
def squeeze(input, axis=None):  # noqa: A002
    """Axes of size 1 removed (all of them, or those in ``axis``)."""
    why = axis is None and isinstance(input, Tensor) and _squeeze_rank_unknown(tuple(input.shape))
    if why:  # not the user's mistake (TensorFlow traces it): a limit of tfc
        e = NotImplementedError(why)
        note_user_line(e)
        raise e
    return (input,), {"axis": None if axis is None else _ints("squeeze", axis, "axis")}





# -- basic indexing: ints, slices, None (new axis) and Ellipsis ---------------------------

def _index_attr(key) -> tuple:
    """A canonical, hashable index: ints, ("slice", start, stop, step), None, "..."."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if k is None or k is Ellipsis:
            out.append(None if k is None else "...")
        elif isinstance(k, slice):
            parts = []
            for v in (k.start, k.stop, k.step):
                if isinstance(v, Tensor):
                    v = int(v)
                if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool)):
                    raise TypeError(f"getitem: slice bounds must be ints, got {v!r}")
                parts.append(None if v is None else int(v))
            if parts[2] == 0:
                raise ValueError("getitem: slice step must not be zero")
            out.append(("slice", *parts))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            out.append(int(k))
        elif isinstance(k, Tensor) and k.ndim == 0 and k.dtype.is_integer and not _is_symbolic(k):
            out.append(int(k))
        else:
            raise TypeError(
                f"getitem: unsupported index {k!r}; expected ints, slices, None, ..., "
                "or one integer array/list/tensor"
            )
    if sum(1 for k in out if k == "...") > 1:
        raise IndexError("getitem: an index can only have a single ellipsis")
    return tuple(out)


def _is_symbolic(t) -> bool:
    return getattr(t, "symbolic", False)


def _numpy_index(index) -> tuple:
    return tuple(
        slice(*k[1:]) if isinstance(k, tuple) else (Ellipsis if k == "..." else k) for k in index
    )


def _getitem_infer(op, x: Spec, index) -> Spec:
    n_axes = sum(1 for k in index if k is not None and k != "...")
    if n_axes > x.ndim:
        raise IndexError(f"getitem: too many indices ({n_axes}) for a tensor of shape {inf.fmt_shape(x.shape)}")
    if "..." in index:
        i = index.index("...")
        index = index[:i] + (("slice", None, None, None),) * (x.ndim - n_axes) + index[i + 1:]
    else:
        index = index + (("slice", None, None, None),) * (x.ndim - n_axes)
    shape, axis = [], 0
    for k in index:
        if k is None:
            shape.append(1)
            continue
        d = x.shape[axis]
        if isinstance(k, tuple):
            shape.append(None if d is None else len(range(*slice(*k[1:]).indices(d))))
        elif d is not None and not -d <= k < d:
            raise IndexError(f"getitem: index {k} is out of bounds for axis {axis} with size {d}")
        axis += 1
    return Spec(tuple(shape), x.dtype)


def _getitem_grad(e, g):
    x = e.inputs[0]
    if None in tuple(x.shape):  # traced with a size known only at run time: x gives the shape
        return [slice_grad_like(g, x, e.attrs["index"])]
    return [slice_grad(g, x.shape, e.attrs["index"])]


@declare(kernel=lambda x, index: x[_numpy_index(index)], infer=_getitem_infer, grad=_getitem_grad,
         attrs={"index": "index"}, name="getitem", lower=_lower_getitem)
def basic_getitem(tensor, key):
    """``tensor[key]`` for ints, slices, None (new axis) and ``...`` (the op
    ``getitem``; ``getitem`` below adds integer-array indexing on top)."""
    return (tensor,), {"index": _index_attr(key)}


def _slice_grad_kernel(g, shape, index):
    out = np.zeros(shape, g.dtype)
    out[_numpy_index(index)] = g
    return out


def _slice_grad_infer(op, g: Spec, shape, index) -> Spec:
    return Spec(tuple(shape), g.dtype)


@declare(kernel=_slice_grad_kernel, infer=_slice_grad_infer, lower=_lower_slice_grad,
         grad=lambda e, g: [basic_getitem(g, _numpy_index(e.attrs["index"]))],
         attrs={"shape": "ints", "index": "index"})
def slice_grad(g, shape, index):
    """Zeros of ``shape`` with ``g`` written at ``index`` (the gradient of getitem)."""
    return (g,), {"shape": tuple(shape), "index": tuple(index)}


def _slice_grad_like_kernel(g, like, index):
    return _slice_grad_kernel(g, like.shape, index)


@declare(kernel=_slice_grad_like_kernel, infer=lambda op, g, like, index: Spec(tuple(like.shape), g.dtype),
         grad=lambda e, g: [basic_getitem(g, _numpy_index(e.attrs["index"])), None],
         attrs={"index": "index"})
def slice_grad_like(g, like, index):
    """``slice_grad`` with the shape of ``like`` (known only at run time)."""
    return (g, like), {"index": tuple(index)}


# -- joining and splitting ------------------------------------------------------------------

def _seq(op_name, values):
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{op_name}: values must be a list or tuple of tensors, got {type(values).__name__}")
    return tuple(_packed(v) for v in values)


def _tensor_leaf(v):
    """The first tensor in a nest of lists and tuples, or None."""
    if isinstance(v, Tensor):
        return v
    if isinstance(v, (list, tuple)):
        for x in v:
            t = _tensor_leaf(x)
            if t is not None:
                return t
    return None


def _packed(v):
    """A list holding tensors (``[i]`` in ``concat((v, [i]), 0)``, ``i`` traced: no
    array can hold it) as one tensor, stacked as TensorFlow packs such a list; its
    numbers take the first tensor's dtype, as there."""
    leaf = _tensor_leaf(v) if isinstance(v, (list, tuple)) else None
    if leaf is None:
        return v

    def pack(x):
        if isinstance(x, (list, tuple)):
            return stack([pack(e) for e in x])
        return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype=leaf.dtype)

    return pack(v)


def _dims_agree(a, b) -> bool:
    return a is None or b is None or a == b


def _concat_infer(op, *xs: Spec, axis) -> Spec:
    if not xs:
        raise ValueError("concat: needs at least one tensor")
    dt = inf.check_same_dtype(op, *xs)
    first = xs[0]
    if first.ndim == 0:
        raise ValueError("concat: cannot concatenate 0-d tensors (use stack)")
    a = inf.normalize_axis(op, axis, first.ndim)
    for x in xs[1:]:
        if x.ndim != first.ndim or not all(
            _dims_agree(d, e) for i, (d, e) in enumerate(zip(x.shape, first.shape)) if i != a
        ):
            raise ValueError(
                "concat: shapes " + ", ".join(inf.fmt_shape(s.shape) for s in xs)
                + f" must agree on every axis but {a}"
            )
    sizes = [x.shape[a] for x in xs]
    total = None if None in sizes else sum(sizes)
    return Spec(first.shape[:a] + (total,) + first.shape[a + 1:], dt)


def _concat_grad(e, g):
    if len(e.inputs) == 1:
        return [g]
    axis = e.attrs["axis"]
    sizes = [x.shape[axis] for x in e.inputs]
    parts = split_like(g, e.inputs, axis) if None in sizes else split(g, sizes, axis=axis)
    return [p if e.needs_grad(i) else None for i, p in enumerate(parts)]


@declare(kernel=lambda *xs, axis: np.concatenate(xs, axis), infer=_concat_infer, grad=_concat_grad,
         attrs={"axis": "int"}, lower=_lower_concat)
def concat(values, axis):
    """The tensors in ``values`` joined along the existing ``axis``."""
    return _seq("concat", values), {"axis": as_axis("concat", axis)}


def _stack_infer(op, *xs: Spec, axis) -> Spec:
    if not xs:
        raise ValueError("stack: needs at least one tensor")
    dt = inf.check_same_dtype(op, *xs)
    first = xs[0]
    for x in xs[1:]:
        if x.ndim != first.ndim or not all(_dims_agree(d, e) for d, e in zip(x.shape, first.shape)):
            raise ValueError("stack: all shapes must be equal, got " + ", ".join(inf.fmt_shape(s.shape) for s in xs))
    a = inf.normalize_axis(op, axis, first.ndim + 1)
    return Spec(first.shape[:a] + (len(xs),) + first.shape[a:], dt)


def _stack_grad(e, g):
    parts = unstack(g, num=len(e.inputs), axis=e.attrs["axis"])
    return [p if e.needs_grad(i) else None for i, p in enumerate(parts)]


@declare(kernel=lambda *xs, axis: np.stack(xs, axis), infer=_stack_infer, grad=_stack_grad,
         attrs={"axis": "int"}, lower=_lower_stack)
def stack(values, axis=0):
    """The tensors in ``values`` (all of one shape) joined along a new ``axis``."""
    return _seq("stack", values), {"axis": as_axis("stack", axis)}


def _unstack_infer(op, x: Spec, num, axis) -> list:
    if x.ndim == 0:
        raise ValueError("unstack: cannot unstack a 0-d tensor")
    a = inf.normalize_axis(op, axis, x.ndim)
    n = x.shape[a]
    if num is None:
        if n is None:
            raise ValueError(f"unstack: cannot infer num from shape {inf.fmt_shape(x.shape)}; pass num")
        num = n
    elif n is not None and num != n:
        raise ValueError(f"unstack: num={num} but axis {a} of shape {inf.fmt_shape(x.shape)} has size {n}")
    part = Spec(x.shape[:a] + x.shape[a + 1:], x.dtype)
    return [part] * num


def _unstack_kernel(x, num, axis):
    return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


def _unstack_grad(e, g):
    gs = g if isinstance(g, list) else [g]
    return [stack(gs, axis=e.attrs["axis"])]


@declare(kernel=_unstack_kernel, infer=_unstack_infer, grad=_unstack_grad, lower=_lower_unstack,
         attrs={"num": "int?", "axis": "int"})
def unstack(value, num=None, axis=0):
    """The slices of ``value`` along ``axis``, as a list of tensors."""
    return (value,), {"num": None if num is None else as_int("unstack", num, "num"),
                      "axis": as_axis("unstack", axis)}


def _split_sizes(op, dim, num, sizes):
    """The part sizes along the split axis (one -1 in ``sizes`` takes the rest);
    shared by inference and the kernel."""
    if sizes is None:
        if num <= 0:
            raise ValueError(f"split: number of splits must be >= 1, got {num}")
        if dim is None:
            return [None] * num
        if dim % num:
            raise ValueError(f"split: axis of size {dim} cannot be split into {num} equal parts")
        return [dim // num] * num
    if sum(1 for s in sizes if s == -1) > 1 or any(s < -1 for s in sizes):
        raise ValueError(f"split: size_splits {list(sizes)} may hold non-negative sizes and at most one -1")
    if dim is None:
        return [None if s == -1 else s for s in sizes]
    known = sum(s for s in sizes if s != -1)
    if -1 in sizes:
        if known > dim:
            raise ValueError(f"split: size_splits {list(sizes)} exceed the axis size {dim}")
        return [dim - known if s == -1 else s for s in sizes]
    if known != dim:
        raise ValueError(f"split: size_splits {list(sizes)} sum to {known}, but the axis has size {dim}")
    return list(sizes)


def _split_infer(op, x: Spec, num, sizes, axis) -> list:
    if x.ndim == 0:
        raise ValueError("split: cannot split a 0-d tensor")
    a = inf.normalize_axis(op, axis, x.ndim)
    parts = _split_sizes(op, x.shape[a], num, sizes)
    return [Spec(x.shape[:a] + (p,) + x.shape[a + 1:], x.dtype) for p in parts]


def _split_kernel(x, num, sizes, axis):
    parts = _split_sizes(None, x.shape[axis], num, sizes)
    return np.split(x, np.cumsum(parts)[:-1], axis=axis)


def _split_grad(e, g):
    gs = g if isinstance(g, list) else [g]
    return [concat(gs, axis=e.attrs["axis"])]


@declare(kernel=_split_kernel, infer=_split_infer, grad=_split_grad, lower=_lower_split,
         attrs={"num": "int?", "sizes": "ints?", "axis": "int"})
def split(value, num_or_size_splits, axis=0):
    """``value`` cut along ``axis`` into that many equal parts, or parts of the
    given sizes (one of which may be -1: the rest)."""
    axis = as_axis("split", axis)
    if isinstance(num_or_size_splits, (int, np.integer)) and not isinstance(num_or_size_splits, bool):
        return (value,), {"num": int(num_or_size_splits), "sizes": None, "axis": axis}
    if isinstance(num_or_size_splits, Tensor) and num_or_size_splits.ndim == 0:
        return (value,), {"num": int(num_or_size_splits), "sizes": None, "axis": axis}
    sizes = _ints("split", num_or_size_splits, "num_or_size_splits")
    return (value,), {"num": None, "sizes": sizes, "axis": axis}


def _split_like_infer(op, x: Spec, *likes: Spec, axis) -> list:
    a = inf.normalize_axis(op, axis, x.ndim)
    sizes = [like.shape[a] if like.ndim == x.ndim else -1 for like in likes]
    if -1 in sizes or (None not in sizes + [x.shape[a]] and sum(sizes) != x.shape[a]):
        raise ValueError(f"split_like: the sizes along axis {a} of shapes "
                         + ", ".join(inf.fmt_shape(like.shape) for like in likes)
                         + f" do not add up to that of {inf.fmt_shape(x.shape)}")
    return [Spec(x.shape[:a] + (d,) + x.shape[a + 1:], x.dtype) for d in sizes]


def _split_like_kernel(x, *likes, axis):
    return np.split(x, np.cumsum([like.shape[axis] for like in likes])[:-1], axis=axis)


def _split_like_static(op):
    from tfc.dialects.tensor import build_op, spec_of

    x, *likes = op.operands
    spec = spec_of(x.type)
    axis = op.attr_values["axis"] % max(spec.ndim, 1)
    sizes = [spec_of(v.type).shape[axis] for v in likes]
    if None in sizes:
        return None
    new = build_op("split", [x], {"num": None, "sizes": tuple(sizes), "axis": op.attr_values["axis"]},
                   result_types=[r.type for r in op.results])
    return [new], list(new.results)


@declare(kernel=_split_like_kernel, infer=_split_like_infer, lower=_lower_split,
         grad=lambda e, g: _split_grad(e, g) + [None] * (len(e.inputs) - 1), attrs={"axis": "int"},
         static_form=_split_like_static)
def split_like(value, likes, axis):
    """``value`` cut along ``axis`` into parts as long as each of ``likes`` there
    (the gradient of concat where those sizes are known only at run time)."""
    return (value, *_seq("split_like", likes)), {"axis": int(axis)}


# -- tiling, padding ---------------------------------------------------------------------------

def _tile_infer(op, x: Spec, multiples) -> Spec:
    if len(multiples) != x.ndim:
        raise ValueError(f"tile: multiples {list(multiples)} must have one entry per axis of shape "
                         f"{inf.fmt_shape(x.shape)}")
    if any(m < 0 for m in multiples):
        raise ValueError(f"tile: multiples {list(multiples)} must be >= 0")
    return Spec(tuple(None if d is None else d * m for d, m in zip(x.shape, multiples)), x.dtype)


def _tile_grad(e, g):
    from tfc.ops.reductions import reduce_sum

    x = e.inputs[0]
    m = e.attrs["multiples"]
    if x.ndim == 0:
        return [g]
    if None in tuple(x.shape):
        return [tile_grad_like(g, x, m)]
    # g viewed as (m0, d0, m1, d1, ...): summing over the m axes folds the copies back.
    split_shape = tuple(v for pair in zip(m, x.shape) for v in pair)
    return [reduce_sum(reshape(g, split_shape), axis=tuple(range(0, 2 * x.ndim, 2)))]


@declare(kernel=lambda x, multiples: np.tile(x, multiples), infer=_tile_infer, grad=_tile_grad,
         attrs={"multiples": "ints"}, lower=_lower_tile)
def tile(input, multiples):  # noqa: A002
    """``input`` repeated ``multiples[i]`` times along each axis i."""
    return (input,), {"multiples": _ints("tile", multiples, "multiples", minimum=0)}


def _tile_grad_like_kernel(g, like, multiples):
    from tfc.ops.reductions import _sum_kernel

    split_shape = tuple(v for pair in zip(multiples, like.shape) for v in pair)
    return _sum_kernel(np.reshape(g, split_shape), tuple(range(0, 2 * like.ndim, 2)), False)


def _tile_grad_like_static(op):
    """tile's gradient as a static trace writes it (and tile_grad_like's kernel
    computes it): g viewed as (m0, d0, m1, d1, ...), summed over the m axes."""
    from tfc.dialects.tensor import build_op

    g, like = op.operands
    shape = _static(like)
    if shape is None:
        return None
    if not shape:  # a 0-d tensor tiles to itself
        return [], [g]
    m = op.attr_values["multiples"]
    split_shape = tuple(v for pair in zip(m, shape) for v in pair)
    r = build_op("reshape", [g], {"shape": split_shape})
    s = build_op("reduce_sum", [r.results[0]], {"axis": tuple(range(0, 2 * len(shape), 2)), "keepdims": False},
                 result_types=[op.results[0].type])
    return [r, s], [s.results[0]]


@declare(kernel=_tile_grad_like_kernel, infer=lambda op, g, like, multiples: Spec(tuple(like.shape), g.dtype),
         grad=lambda e, g: [tile(g, e.attrs["multiples"]), None], attrs={"multiples": "ints"},
         static_form=_tile_grad_like_static)
def tile_grad_like(g, like, multiples):
    """``g`` (of ``tile(like, multiples)``'s shape) with the copies of ``like``
    summed back (the gradient of tile where shapes are known only at run time)."""
    return (g, like), {"multiples": tuple(int(m) for m in multiples)}


def _python_number(v):
    """A Python number for a tensor or numpy scalar (the value an attribute
    keeps): eager's kernel sees what the compiled code's attribute gives."""
    if isinstance(v, Tensor):
        v = v.numpy()
    return v.item() if isinstance(v, (np.ndarray, np.generic)) and v.ndim == 0 else v


_PAD_MODES = {"CONSTANT": "constant", "REFLECT": "reflect", "SYMMETRIC": "symmetric"}


def _pad_pairs(paddings):
    return [(paddings[2 * i], paddings[2 * i + 1]) for i in range(len(paddings) // 2)]


def _pad_kernel(x, paddings, mode, constant_values):
    pairs = _pad_pairs(paddings)
    if not pairs:  # a 0-d tensor, as TensorFlow's pad returns it (np.pad refuses [])
        return x.copy()
    if mode == "CONSTANT":
        return np.pad(x, pairs, mode="constant", constant_values=constant_values)
    return np.pad(x, pairs, mode=_PAD_MODES[mode])


def _pad_infer(op, x: Spec, paddings, mode, constant_values) -> Spec:
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of CONSTANT, REFLECT, SYMMETRIC, got {mode!r}")
    if len(paddings) != 2 * x.ndim:
        raise ValueError(f"pad: paddings must have shape ({x.ndim}, 2) for a tensor of shape "
                         f"{inf.fmt_shape(x.shape)}, got {len(paddings) // 2} pairs")
    pairs = _pad_pairs(paddings)
    if any(p < 0 for p in paddings):
        raise ValueError(f"pad: paddings {pairs} must be >= 0")
    if mode != "CONSTANT":
        extra = 1 if mode == "REFLECT" else 0  # REFLECT excludes the edge, so needs one more element
        for i, ((lo, hi), d) in enumerate(zip(pairs, x.shape)):
            if d is not None and (lo > d - extra or hi > d - extra):
                raise ValueError(f"pad: {mode} paddings {(lo, hi)} on axis {i} must be at most "
                                 f"{d - extra} for shape {inf.fmt_shape(x.shape)}")
    shape = tuple(None if d is None else d + lo + hi for d, (lo, hi) in zip(x.shape, pairs))
    return Spec(shape, x.dtype)


def _take_axis(g, axis, start, stop, step=None):
    key = (slice(None),) * axis + (slice(start, stop, step),)
    return basic_getitem(g, key)


def _unpad(g, shape, pairs, mode, take, pad_zeros):
    """The gradient of pad: the center of ``g``, onto which the REFLECT or
    SYMMETRIC borders fold back. One rule for tensors (tfc ops) and for the
    arrays of pad_grad_like's kernel (numpy), so the two agree to the bit."""
    for axis, ((lo, hi), d) in enumerate(zip(pairs, shape)):
        if lo == 0 and hi == 0:
            continue
        center = take(g, axis, lo, lo + d)
        if mode != "CONSTANT":
            # The padded borders mirror x: fold their gradients back, reversed, onto the
            # elements they copied (REFLECT skips the edge element, SYMMETRIC repeats it).
            skip = 1 if mode == "REFLECT" else 0
            zero = [(0, 0)] * len(shape)
            if lo:
                p = list(zero)
                p[axis] = (skip, d - lo - skip)
                center = center + pad_zeros(take(take(g, axis, None, lo), axis, None, None, -1), p)
            if hi:
                p = list(zero)
                p[axis] = (d - hi - skip, skip)
                center = center + pad_zeros(take(take(g, axis, lo + d, None), axis, None, None, -1), p)
        g = center
    return g


def _pad_grad(e, g):
    x = e.inputs[0]
    mode = e.attrs["mode"]
    pairs = _pad_pairs(e.attrs["paddings"])
    if any(d is None and (lo or hi) for (lo, hi), d in zip(pairs, x.shape)):
        if mode == "CONSTANT":  # the center: from lo to hi before the end
            key = tuple(slice(lo, -hi if hi else None) for lo, hi in pairs)
            return [basic_getitem(g, key)]
        return [pad_grad_like(g, x, e.attrs["paddings"], mode)]  # the folds need the sizes
    return [_unpad(g, x.shape, pairs, mode, _take_axis, pad)]


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """``tensor`` padded by ``paddings[i] = (before, after)`` on each axis i, with
    ``constant_values`` (CONSTANT) or a mirror of the edge (REFLECT, SYMMETRIC).
    A 0-d tensor (paddings ``[]``) is returned as it is, as in TensorFlow.
    ``constant_values`` may be a traced scalar tensor (its value known only when the
    function runs): the border is then selected from it."""
    if isinstance(constant_values, Tensor) and constant_values.symbolic:
        from tfc.ops.creation import ones_like
        from tfc.ops.math import cast, where

        if not (isinstance(mode, str) and mode.upper() == "CONSTANT"):
            return _pad_op(tensor, paddings, mode, 0, name=name)  # the mirror modes ignore it

        if constant_values.shape != ():
            raise ValueError(f"pad: constant_values must be a scalar, got a tensor of shape {constant_values.shape}")
        x = convert_to_tensor(tensor)
        inside = cast(_pad_op(ones_like(x), paddings, mode, 0), dtypes.bool_)
        return where(inside, _pad_op(x, paddings, mode, 0, name=name), cast(constant_values, x.dtype))
    return _pad_op(tensor, paddings, mode, constant_values, name=name)


@declare(kernel=_pad_kernel, infer=_pad_infer, grad=_pad_grad, lower=_lower_pad, name="pad",
         attrs={"paddings": "ints", "mode": "str", "constant_values": "number"})
def _pad_op(tensor, paddings, mode="CONSTANT", constant_values=0):
    """``tensor`` padded by ``paddings[i] = (before, after)`` on each axis i, with
    ``constant_values`` (CONSTANT) or a mirror of the edge (REFLECT, SYMMETRIC).
    A 0-d tensor (paddings ``[]``) is returned as it is, as in TensorFlow.

    The op itself: ``constant_values`` a Python number (its attribute); ``pad``
    takes a traced tensor too."""
    if isinstance(paddings, Tensor):
        paddings = paddings.numpy().tolist()
    try:
        flat = tuple(operator.index(v) for pair in paddings for v in pair)  # ints, never "1" or 1.5
        if any(len(pair) != 2 for pair in paddings):
            raise TypeError
    except TypeError:
        raise ValueError(f"pad: paddings must be a list of (before, after) pairs, got {paddings!r}") from None
    constant_values = _python_number(constant_values)
    if not isinstance(mode, str):
        raise TypeError(f"pad: mode must be a string, got {mode!r}")
    return (tensor,), {"paddings": flat, "mode": mode.upper(), "constant_values": constant_values}


def _np_take_axis(a, axis, start, stop, step=None):
    return a[(slice(None),) * axis + (slice(start, stop, step),)]


class _Emitted:
    """An SSA value that the rule of a gradient computes on (``+`` emits ``add``),
    for the declarations' rules written once for tensors and for arrays."""

    __slots__ = ("value", "ops")

    def __init__(self, value, ops):
        self.value, self.ops = value, ops

    def emit(self, name, operands, attrs) -> "_Emitted":
        from tfc.dialects.tensor import build_op

        op = build_op(name, [v.value for v in operands], attrs)
        self.ops.append(op)
        return _Emitted(op.results[0], self.ops)

    def __add__(self, other):
        return self.emit("add", [self, other], {})


def _pad_grad_like_static(op):
    """pad's gradient as a static trace writes it: ``_unpad`` (the rule that
    pad's gradient and pad_grad_like's kernel share, so the same bits) on
    getitem, pad and add."""
    g, like = op.operands
    shape = _static(like)
    if shape is None:
        return None
    attrs = op.attr_values
    ops: list = []

    def take(v, axis, start, stop, step=None):
        key = (slice(None),) * axis + (slice(start, stop, step),)
        return v.emit("getitem", [v], {"index": _index_attr(key)})

    def pad_zeros(v, pairs):
        flat = tuple(int(x) for pair in pairs for x in pair)
        return v.emit("pad", [v], {"paddings": flat, "mode": "CONSTANT", "constant_values": 0})

    out = _unpad(_Emitted(g, ops), shape, _pad_pairs(attrs["paddings"]), attrs["mode"], take, pad_zeros)
    if out.value.type != op.results[0].type:
        return None
    return ops, [out.value]


@declare(kernel=lambda g, like, paddings, mode: _unpad(g, like.shape, _pad_pairs(paddings), mode, _np_take_axis,
                                                       lambda a, p: np.pad(a, p, mode="constant")),
         infer=lambda op, g, like, paddings, mode: Spec(tuple(like.shape), g.dtype),
         grad=lambda e, g: [pad(g, _pad_pairs(e.attrs["paddings"]), e.attrs["mode"]), None],
         attrs={"paddings": "ints", "mode": "str"}, static_form=_pad_grad_like_static)
def pad_grad_like(g, like, paddings, mode):
    """The gradient of pad (``mode`` REFLECT or SYMMETRIC: borders folded back)
    for an input of ``like``'s shape, known only at run time."""
    return (g, like), {"paddings": tuple(int(p) for p in paddings), "mode": mode}


# -- gather and its gradient -------------------------------------------------------------------

def _gather_infer(op, params: Spec, indices: Spec, axis) -> Spec:
    inf.check_dtype(op, indices, dtypes.INTS, "indices")
    if params.ndim == 0:
        raise ValueError("gather: params must have rank >= 1, got a 0-d tensor")
    a = inf.normalize_axis(op, axis, params.ndim)
    return Spec(params.shape[:a] + indices.shape + params.shape[a + 1:], params.dtype)


def _check_indices(op_name, indices, n, what):
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        bad = indices[(indices < 0) | (indices >= n)].flat[0]
        raise InvalidArgumentError(f"{op_name}: {what} {bad} is out of range [0, {n})")


def _gather_kernel(params, indices, axis):
    _check_indices("gather", indices, params.shape[axis], "index")
    return np.take(params, indices, axis=axis)


def _gather_grad(e, g):
    from tfc.ops.scatter import gather_grad_like, unsorted_segment_sum

    params, indices = e.inputs
    a = e.attrs["axis"] % params.ndim
    q = indices.ndim
    if params.shape[a] is None:  # the number of rows to sum into is known only at run time
        return [gather_grad_like(g, indices, params, a), None]
    # Move the index axes of g to the front, sum rows into params' axis a, move it back.
    perm = [*range(a, a + q), *range(a), *range(a + q, g.ndim)]
    if perm != sorted(perm):
        g = transpose(g, perm)
    s = unsorted_segment_sum(g, indices, params.shape[a])
    back = [*range(1, a + 1), 0, *range(a + 1, s.ndim)]
    if back != sorted(back):
        s = transpose(s, back)
    return [s, None]


def check_flag_temps(operand: int):
    """``lower.temps`` of a lowering that checks its indices (operand
    ``operand``) with ``_bad_index_flag``: the check's 0-d bool flag, where
    the indices are not a scalar (a scalar's check is scalar code)."""
    def temps(specs, **attrs):
        return [Spec((), dtypes.bool_)] if specs[operand].shape else []
    return temps


def _lower_gather(b, outs, params, indices, axis):
    """A check of the indices (a reduction: any outside [0, n)? whose error
    path, loops.raise, is eager's InvalidArgumentError naming the first bad
    index), then out[p..., i..., r...] = params[p..., indices[i...], r...]
    with loops.load_at (in bounds: checked before)."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType

    (out,) = outs
    pshape, ishape = b.shape(params), b.shape(indices)
    a = axis % len(pshape)
    n, q = pshape[a], len(ishape)

    b.fail_if(_bad_index_flag(b, indices, 0, n), [params, indices])

    oshape = b.shape(out)

    def body(k, *x):
        idx = [k.index(d) for d in range(a)] + [k.op(arith.IndexCastOp(x[0], IndexType()))]
        idx += [k.index(a + q + d) for d in range(len(pshape) - a - 1)]
        return [k.load_at(params, idx)]

    bmap = tuple(range(a, a + q))
    return b.parallel([indices], [out], oshape, [bmap], body)


_lower_gather.temps = check_flag_temps(1)


@declare(kernel=_gather_kernel, infer=_gather_infer, grad=_gather_grad, attrs={"axis": "int"}, lower=_lower_gather)
def gather(params, indices, axis=0):
    """Slices of ``params`` along ``axis`` at ``indices`` (ints in [0, size));
    the result has the index shape in place of that axis."""
    return (params, indices), {"axis": as_axis("gather", axis)}


# -- one_hot ------------------------------------------------------------------------------

def _one_hot_infer(op, indices: Spec, depth, on_value, off_value, axis, dtype) -> Spec:
    inf.check_dtype(op, indices, dtypes.INTS, "indices")
    if depth < 0:
        raise ValueError(f"one_hot: depth must be >= 0, got {depth}")
    if not -1 <= axis <= indices.ndim:
        raise ValueError(f"one_hot: axis {axis} is out of range [-1, {indices.ndim}] for indices of shape "
                         f"{inf.fmt_shape(indices.shape)}")
    a = indices.ndim if axis == -1 else axis
    return Spec(indices.shape[:a] + (depth,) + indices.shape[a:], dtype)


def _one_hot_kernel(indices, depth, on_value, off_value, axis, dtype):
    hot = indices[..., None] == np.arange(depth)  # out-of-range indices give all off_value
    out = np.where(hot, on_value, off_value).astype(dtype.as_numpy_dtype)
    return out if axis == -1 else np.moveaxis(out, -1, axis)


@declare(kernel=_one_hot_kernel, infer=_one_hot_infer, lower=_lower_one_hot,
         attrs={"depth": "int", "on_value": "number", "off_value": "number", "axis": "int", "dtype": "dtype"})
def one_hot(indices, depth, on_value=None, off_value=None, axis=-1, dtype=None):
    """``on_value`` where the new axis equals the index, ``off_value`` elsewhere.
    The dtype defaults to that of ``on_value``/``off_value``, else float32."""
    if dtype is None:
        given = on_value if on_value is not None else off_value
        dtype = dtypes.float32 if given is None else dtypes.default_dtype_of(
            given.numpy() if isinstance(given, Tensor) else given)
    dtype = dtypes.as_dtype(dtype)
    on, off = (d if v is None else _python_number(v) for v, d in ((on_value, 1), (off_value, 0)))
    return (indices,), {"depth": as_int("one_hot", depth, "depth"), "on_value": on, "off_value": off,
                        "axis": as_axis("one_hot", axis), "dtype": dtype}


# -- tensor[key] with integer arrays and boolean masks -------------------------------------------

def _is_int_index(k) -> bool:
    if isinstance(k, Tensor):
        return k.ndim == 0 and k.dtype.is_integer and not _is_symbolic(k)
    return isinstance(k, (int, np.integer)) and not isinstance(k, bool)


def _is_array_index(k) -> bool:
    if isinstance(k, Tensor):
        return not _is_int_index(k)
    if isinstance(k, np.ndarray):
        return k.ndim > 0 or k.dtype == np.bool_
    return isinstance(k, list)


def _as_index_tensor(k) -> Tensor:
    if isinstance(k, Tensor):
        return k
    a = np.asarray(k)
    if a.size == 0 and a.dtype.kind == "f":  # [] indexes nothing, as in NumPy
        a = a.astype(np.int32)
    return convert_to_tensor(a if isinstance(k, np.ndarray) or a.size == 0 else k)


def _wrap_index_kernel(idx, like, axis):
    n = like.shape[axis]
    bad = idx[(idx < -n) | (idx >= n)]
    if bad.size:
        raise IndexError(f"getitem: index {bad.flat[0]} is out of bounds for axis {axis} with size {n}")
    # in int64, as numpy indexes: idx + n overflows a narrower dtype (int8 -128 on 200 elements)
    wide = idx.astype(np.int64)
    return np.where(wide < 0, wide + n, wide)


def _wrap_index_infer(op, idx: Spec, like: Spec, axis) -> Spec:
    if not idx.dtype.is_integer:
        raise TypeError(f"wrap_index: indices must be integers, got {idx.dtype.name}")
    inf.normalize_axis(op, axis, like.ndim)
    return Spec(idx.shape, dtypes.int64)


def _bad_index_flag(b, idx, lo, hi):
    """A 0-d i1: is any element of ``idx`` (a buffer or a scalar) outside [lo, hi)
    (``lo`` None: at or above ``hi``)?"""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import i64

    def bad(k, x, const):
        x = k.op(arith.ExtSIOp(x, i64)) if x.type != i64 else x
        below = None if lo is None else k.op(arith.CmpiOp(x, const(lo), "slt"))
        above = k.op(arith.CmpiOp(x, const(hi), "sge"))
        return above if below is None else k.op(arith.OrIOp(below, above))

    shape = b.shape(idx)
    if not shape:  # scalar code
        return bad(b, idx, lambda v: b.scalar(arith.ConstantOp.from_int_and_width(v, 64)))
    (flag,) = b.temps  # planned (check_flag_temps)
    b.parallel([idx], [flag], shape, [tuple(range(len(shape)))], lambda k, x: [bad(k, x, lambda v: k.const(v, i64))],
               ["any"], list(range(len(shape))))
    return b.load(flag)


def _lower_wrap_index(b, outs, idx, like, axis):
    """A check (any index outside [-n, n): getitem's IndexError through
    loops.raise), then idx + n where negative, in int64 (the result's
    dtype)."""
    from xdsl.dialects import arith

    (out,) = outs
    n = b.shape(like)[axis]
    b.fail_if(_bad_index_flag(b, idx, -n, n), [idx, like])
    elt = out.type.element_type

    def body(k, x):
        if x.type != elt:
            x = k.op(arith.ExtSIOp(x, elt))
        zero = k.const(0, elt)
        return [k.op(arith.SelectOp(k.op(arith.CmpiOp(x, zero, "slt")), k.op(arith.AddiOp(x, k.const(n, elt))), x))]

    shape = b.shape(idx)
    return b.parallel([idx], [out], shape, [tuple(range(len(shape)))], body)


_lower_wrap_index.temps = check_flag_temps(0)


@declare(kernel=_wrap_index_kernel, infer=_wrap_index_infer, grad=lambda e, g: [None, None],
         attrs={"axis": "int"}, lower=_lower_wrap_index)
def wrap_index(indices, like, axis):
    """Python-style indices into ``like``'s ``axis`` made non-negative (gather
    takes [0, n)), as int64 whatever their dtype (idx + n may not fit it); an
    index outside [-n, n) is getitem's IndexError, naming it, also where n or
    the indices are known only when the code runs."""
    return (indices, like), {"axis": int(axis)}


def _wrap_negative(idx: Tensor, y, axis) -> Tensor:
    if _is_symbolic(idx) or y.shape[axis] is None:  # checked and wrapped when the code runs
        return wrap_index(idx, y, axis)
    v = idx.numpy()
    if not v.size or v.min() >= 0 and v.max() < y.shape[axis]:
        return idx
    return convert_to_tensor(_wrap_index_kernel(v, y, axis))  # raises getitem's IndexError if out of range


def getitem(tensor, key):
    """``tensor[key]``: ints, slices, None and ``...`` (the ``getitem`` op), plus one
    integer array, list or tensor (through ``gather``) or an eager boolean mask.
    The array's axes go where NumPy puts them; the one NumPy case that moves them
    to the front (array and ints separated by a slice) raises NotImplementedError."""
    key = key if isinstance(key, tuple) else (key,)
    key = tuple(int(k) if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu" else k for k in key)
    adv = [i for i, k in enumerate(key) if _is_array_index(k)]
    if not adv:
        return basic_getitem(tensor, key)
    if len(adv) > 1:
        raise NotImplementedError("getitem: only one integer-array or boolean-mask index per subscript is supported")
    p = adv[0]
    idx = _as_index_tensor(key[p])
    if not (idx.dtype.is_integer or idx.dtype.is_bool):
        raise TypeError(f"getitem: array indices must be integers or booleans, got {idx.dtype.name}")
    positions = sorted([i for i, k in enumerate(key) if _is_int_index(k)] + [p])
    if positions != list(range(positions[0], positions[-1] + 1)):
        raise NotImplementedError(
            "getitem: an array index separated from integer indices by a slice, None or ... "
            "(NumPy moves its axes to the front); index in two steps instead")
    x = convert_to_tensor(tensor)
    k = idx.ndim if idx.dtype.is_bool else 1  # axes of x the index consumes
    rest = key[:p] + (slice(None),) * k + key[p + 1:]
    consumed = sum(1 for v in rest if v is not None and v is not Ellipsis)
    trivial = all(v is Ellipsis or (isinstance(v, slice) and v == slice(None)) for v in rest)
    y = x if trivial else basic_getitem(x, rest)
    axis = 0  # the axis of y the array index applies to
    for v in key[:p]:
        if v is Ellipsis:
            axis += x.ndim - consumed
        elif v is None or isinstance(v, slice):
            axis += 1
    if idx.dtype.is_bool:
        if _is_symbolic(idx):
            raise NotImplementedError("getitem: a boolean mask must be concrete (eager): the result shape depends on its values")
        m = idx.numpy()
        if tuple(y.shape[axis:axis + k]) != m.shape:
            raise IndexError(f"getitem: boolean mask of shape {inf.fmt_shape(m.shape)} does not match the "
                             f"indexed axes {inf.fmt_shape(y.shape[axis:axis + k])} of shape {inf.fmt_shape(x.shape)}")
        flat = int(np.prod(m.shape, dtype=np.int64))
        y = reshape(y, y.shape[:axis] + (flat,) + y.shape[axis + k:])
        idx = convert_to_tensor(np.flatnonzero(m).astype(np.int64))
    else:
        if axis >= y.ndim:
            raise IndexError(f"getitem: too many indices for a tensor of shape {inf.fmt_shape(x.shape)}")
        idx = _wrap_negative(idx, y, axis)
    if isinstance(y, GpuTensor) and not isinstance(idx, GpuTensor):
        idx = idx.gpu()  # the index is built on the host; gather takes both on one device
    return gather(y, idx, axis=axis)


# the scatter-adds live in tfc/ops/scatter.py (a sum, not data movement); their
# names stay importable from here
from tfc.ops.scatter import gather_grad_like, unsorted_segment_sum  # noqa: E402,F401
