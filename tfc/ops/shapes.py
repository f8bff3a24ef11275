"""Shape manipulation: one declaration per op."""
from __future__ import annotations

import numpy as np

from tfc.core.registry import Spec, declare
from tfc.core.tensor import Tensor
from tfc.ops import _infer as inf
from tfc.ops._grad import unbroadcast


def _ints(op_name, value, what="shape"):
    if isinstance(value, Tensor):
        value = value.numpy().tolist()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    try:
        return tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise TypeError(f"{op_name}: {what} must be a sequence of ints, got {value!r}") from None


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


def _reshape_grad(e, g):
    return [reshape(g, e.inputs[0].shape)]


@declare(kernel=lambda x, shape: np.reshape(x, shape), infer=_reshape_infer, grad=_reshape_grad,
         attrs={"shape": "ints"})
def reshape(tensor, shape):
    """The same elements in a new shape; one dimension may be -1 (inferred)."""
    return (tensor,), {"shape": _ints("reshape", shape)}


def _broadcast_to_infer(op, x: Spec, shape) -> Spec:
    out = inf.broadcast_shapes(op, x.shape, shape)
    if out != tuple(shape) or x.ndim > len(shape):
        raise ValueError(f"broadcast_to: cannot broadcast shape {inf.fmt_shape(x.shape)} to {inf.fmt_shape(shape)}")
    return Spec(tuple(shape), x.dtype)


@declare(kernel=lambda x, shape: np.broadcast_to(x, shape), infer=_broadcast_to_infer,
         grad=lambda e, g: [unbroadcast(g, e.inputs[0].shape)], attrs={"shape": "ints"})
def broadcast_to(input, shape):  # noqa: A002
    """``input`` broadcast (NumPy rules) to ``shape``."""
    return (input,), {"shape": _ints("broadcast_to", shape)}


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
         attrs={"perm": "ints?"})
def transpose(a, perm=None):
    """Axes permuted by ``perm`` (reversed when None)."""
    return (a,), {"perm": None if perm is None else _ints("transpose", perm, "perm")}


def _expand_dims_infer(op, x: Spec, axis) -> Spec:
    a = inf.normalize_axis(op, axis, x.ndim + 1)
    return Spec(x.shape[:a] + (1,) + x.shape[a:], x.dtype)


@declare(kernel=lambda x, axis: np.expand_dims(x, axis), infer=_expand_dims_infer,
         grad=lambda e, g: [reshape(g, e.inputs[0].shape)], attrs={"axis": "int"})
def expand_dims(input, axis):  # noqa: A002
    """A new axis of size 1 inserted at ``axis``."""
    return (input,), {"axis": int(axis)}


def _squeeze_infer(op, x: Spec, axis) -> Spec:
    if axis is None:
        return Spec(tuple(d for d in x.shape if d != 1), x.dtype)
    axes = inf.normalize_axes(op, axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} of shape {inf.fmt_shape(x.shape)} has size {x.shape[a]}, not 1")
    return Spec(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)


@declare(kernel=lambda x, axis: np.squeeze(x, axis), infer=_squeeze_infer,
         grad=lambda e, g: [reshape(g, e.inputs[0].shape)], attrs={"axis": "ints?"})
def squeeze(input, axis=None):  # noqa: A002
    """Axes of size 1 removed (all of them, or those in ``axis``)."""
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
                f"getitem: unsupported index {k!r}; use ints, slices, None, ... "
                "(integer tensors index through tfc.gather)"
            )
    if sum(1 for k in out if k == "...") > 1:
        raise IndexError("getitem: an index can only have a single ellipsis")
    return tuple(out)


def _is_symbolic(t) -> bool:
    return type(t) is not Tensor and not hasattr(t, "assign")


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
    return [slice_grad(g, e.inputs[0].shape, e.attrs["index"])]


@declare(kernel=lambda x, index: x[_numpy_index(index)], infer=_getitem_infer, grad=_getitem_grad,
         attrs={"index": "index"})
def getitem(tensor, key):
    """``tensor[key]`` for ints, slices, None (new axis) and ``...``."""
    return (tensor,), {"index": _index_attr(key)}


def _slice_grad_kernel(g, shape, index):
    out = np.zeros(shape, g.dtype)
    out[_numpy_index(index)] = g
    return out


def _slice_grad_infer(op, g: Spec, shape, index) -> Spec:
    return Spec(tuple(shape), g.dtype)


@declare(kernel=_slice_grad_kernel, infer=_slice_grad_infer,
         grad=lambda e, g: [getitem(g, _numpy_index(e.attrs["index"]))],
         attrs={"shape": "ints", "index": "index"})
def slice_grad(g, shape, index):
    """Zeros of ``shape`` with ``g`` written at ``index`` (the gradient of getitem)."""
    return (g,), {"shape": tuple(shape), "index": tuple(index)}
