"""Tensor creation: one declaration per op."""
from __future__ import annotations

import numpy as np

from tfc.core import dtypes

from tfc.core.registry import Spec, declare
from tfc.core.shape import as_int, as_ints
from tfc.core.tensor import Tensor
from tfc.ops import _infer as inf
from tfc.ops import _scalar as S


def as_shape(op_name: str, shape) -> tuple:
    """A static shape from a list/tuple of ints, an int, or an eager integer tensor."""
    return as_ints(op_name, shape)


def _lower_filled(value):
    """zeros / ones: a kernel with a constant body (see tfc/passes/lower_loops.py)."""
    def lower(b, outs, shape, dtype):
        return b.fill(outs[0], value)
    return lower


def _lower_fill(b, outs, value, dims):
    return b.copy(value, outs[0])  # the 0-d value, a scalar in L3, read at every index


def _lower_eye(b, outs, num_rows, num_columns, dtype):
    """Zeros, then ones on the diagonal: a strided view of the flat buffer."""
    (out,) = outs
    b.fill(out, 0)
    k = min(num_rows, num_columns)
    if k:
        flat = b.reshape(out, (num_rows * num_columns,))
        b.fill(b.subview(flat, [0], [k], [num_columns + 1]), 1)


def _filled_infer(op, shape, dtype) -> Spec:
    return Spec(shape, dtype)


@declare(kernel=lambda shape, dtype: np.zeros(shape, dtype.as_numpy_dtype), infer=_filled_infer,
         attrs={"shape": "ints", "dtype": "dtype"}, lower=_lower_filled(0))
def zeros(shape, dtype=dtypes.float32):
    """A tensor of ``shape`` filled with zeros."""
    return (), {"shape": as_shape("zeros", shape), "dtype": dtypes.as_dtype(dtype)}


@declare(kernel=lambda shape, dtype: np.ones(shape, dtype.as_numpy_dtype), infer=_filled_infer,
         attrs={"shape": "ints", "dtype": "dtype"}, lower=_lower_filled(1))
def ones(shape, dtype=dtypes.float32):
    """A tensor of ``shape`` filled with ones."""
    return (), {"shape": as_shape("ones", shape), "dtype": dtypes.as_dtype(dtype)}


def _like_infer(op, x: Spec, dtype=None) -> Spec:
    return Spec(x.shape, dtype or x.dtype)


def _zeros_like_kernel(x, dtype=None):
    return np.zeros(x.shape, x.dtype if dtype is None else dtype.as_numpy_dtype)


def _ones_like_kernel(x, dtype=None):
    return np.ones(x.shape, x.dtype if dtype is None else dtype.as_numpy_dtype)


def _filled_scalar(value):
    """The scalar body of a ``*_like`` op: a constant, whatever the input (so
    the fold pass makes a constant of it from the input's shape alone)."""
    return lambda b, x, dtype=None: S.const(b, value, b.out_dtype)


@declare(kernel=_zeros_like_kernel, infer=_like_infer, attrs={"dtype": "dtype"}, scalar=_filled_scalar(0))
def zeros_like(input, dtype=None):  # noqa: A002 (TensorFlow's name)
    """Zeros with the shape (and, unless given, the dtype) of ``input``."""
    return (input,), {"dtype": None if dtype is None else dtypes.as_dtype(dtype)}


@declare(kernel=_ones_like_kernel, infer=_like_infer, attrs={"dtype": "dtype"}, scalar=_filled_scalar(1))
def ones_like(input, dtype=None):  # noqa: A002
    """Ones with the shape (and, unless given, the dtype) of ``input``."""
    return (input,), {"dtype": None if dtype is None else dtypes.as_dtype(dtype)}


def _fill_infer(op, value: Spec, dims) -> Spec:
    if value.ndim != 0:
        raise ValueError(f"fill: value must be a scalar, got shape {inf.fmt_shape(value.shape)}")
    return Spec(dims, value.dtype)


def _fill_grad(e, g):
    from tfc.ops.reductions import reduce_sum

    return [reduce_sum(g)]


@declare(kernel=lambda value, dims: np.full(dims, value), infer=_fill_infer, grad=_fill_grad,
         attrs={"dims": "ints"}, lower=_lower_fill)
def fill(dims, value):
    """A tensor of shape ``dims`` filled with the scalar ``value``."""
    return (value,), {"dims": as_shape("fill", dims)}


def _number(op_name, v, what):
    if isinstance(v, Tensor):
        v = v.numpy().item()
    if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
        raise TypeError(f"{op_name}: {what} must be a number, got {v!r}")
    return v


def _range_kernel(start, limit, delta, dtype):
    return np.arange(start, limit, delta, dtype=dtype.as_numpy_dtype)


def _range_infer(op, start, limit, delta, dtype) -> Spec:
    if delta == 0:
        raise ValueError("range: delta must not be zero")
    n = max(0, int(np.ceil((limit - start) / delta)))
    return Spec((n,), dtype)


@declare(kernel=_range_kernel, infer=_range_infer,
         attrs={"start": "float", "limit": "float", "delta": "float", "dtype": "dtype"})
def range(start, limit=None, delta=1, dtype=None):  # noqa: A001
    """[start, start + delta, ...) up to ``limit`` (exclusive); ``range(n)`` is 0..n-1."""
    if limit is None:
        start, limit = 0, start
    start, limit, delta = (_number("range", v, w) for v, w in ((start, "start"), (limit, "limit"), (delta, "delta")))
    if dtype is None:
        dtype = dtypes.float32 if any(isinstance(v, (float, np.floating)) for v in (start, limit, delta)) else dtypes.int32
    return (), {"start": start, "limit": limit, "delta": delta, "dtype": dtypes.as_dtype(dtype)}


def _linspace_infer(op, start, stop, num, dtype) -> Spec:
    if num < 0:
        raise ValueError(f"linspace: num must be >= 0, got {num}")
    return Spec((num,), dtype)


@declare(kernel=lambda start, stop, num, dtype: np.linspace(start, stop, num, dtype=dtype.as_numpy_dtype),
         infer=_linspace_infer, attrs={"start": "float", "stop": "float", "num": "int", "dtype": "dtype"})
def linspace(start, stop, num, dtype=dtypes.float32):
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive."""
    return (), {"start": float(_number("linspace", start, "start")), "stop": float(_number("linspace", stop, "stop")),
                "num": as_int("linspace", num, "num"), "dtype": dtypes.as_dtype(dtype)}


def _eye_infer(op, num_rows, num_columns, dtype) -> Spec:
    if num_rows < 0 or num_columns < 0:
        raise ValueError(f"eye: sizes must be >= 0, got {num_rows} x {num_columns}")
    return Spec((num_rows, num_columns), dtype)


@declare(kernel=lambda num_rows, num_columns, dtype: np.eye(num_rows, num_columns, dtype=dtype.as_numpy_dtype),
         infer=_eye_infer, attrs={"num_rows": "int", "num_columns": "int", "dtype": "dtype"}, lower=_lower_eye)
def eye(num_rows, num_columns=None, dtype=dtypes.float32):
    """The identity matrix (ones on the diagonal)."""
    return (), {"num_rows": as_int("eye", num_rows, "num_rows"),
                "num_columns": as_int("eye", num_rows if num_columns is None else num_columns, "num_columns"),
                "dtype": dtypes.as_dtype(dtype)}


__all__ = ["zeros", "ones", "zeros_like", "ones_like", "fill", "range", "linspace", "eye", "as_shape"]

