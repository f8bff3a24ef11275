"""Tensor creation: one declaration per op."""
from __future__ import annotations

import functools
import inspect
from typing import NamedTuple

import numpy as np

from tfc.core import dtypes

from tfc.core.context import STATE
from tfc.core.registry import Spec, declare
from tfc.core.shape import _fail, as_int, as_ints
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


# -- shapes given by traced tensors ----------------------------------------------------
# While tracing, a shape may hold tensors whose values are known only when the
# function runs (tfc.zeros([1, n, 2]) with n a traced tensor): the result has
# the shape's static length as its rank and None where a dimension is unknown.
# A dimension known while tracing (a Python int, a constant of the trace) stays
# known; a shape known entirely is the static op's.


def _dynamic_fill_infer(op, dims: Spec, value: Spec, shape) -> Spec:
    if dims.ndim != 1 or not dims.dtype.is_integer:
        raise TypeError(f"dynamic_fill: dims must be a 1-d integer tensor, got {dims}")
    if dims.shape[0] != len(shape):
        raise ValueError(f"dynamic_fill: dims has {dims.shape[0]} elements but shape {tuple(shape)} has "
                         f"{len(shape)} (one per dimension, -1 where known only at run time)")
    if value.ndim != 0:
        raise ValueError(f"dynamic_fill: value must be a scalar, got shape {inf.fmt_shape(value.shape)}")
    if any(d < -1 for d in shape):
        raise ValueError(f"dynamic_fill: invalid dimension in {tuple(shape)}")
    return Spec(tuple(None if d == -1 else d for d in shape), value.dtype)


def _dynamic_fill_kernel(dims, value, shape):
    dims = tuple(int(d) for d in dims)
    if any(d < 0 for d in dims):
        raise ValueError(f"dynamic_fill: dimensions must be >= 0, got {dims}")
    if any(k != -1 and k != d for k, d in zip(shape, dims)):
        raise ValueError(f"dynamic_fill: dims {dims} differ from the shape known when tracing {tuple(shape)}")
    return np.full(dims, value)  # fill's kernel: the same bits


@declare(kernel=_dynamic_fill_kernel, infer=_dynamic_fill_infer, grad=lambda e, g: [None] + _fill_grad(e, g),
         attrs={"shape": "ints"})
def dynamic_fill(dims, value, shape):
    """``fill(dims, value)`` where ``dims`` (a 1-d integer tensor of static length)
    is known only at run time; ``shape`` holds the dimensions known while tracing
    (-1 elsewhere). The result is allocated by its kernel (a library call) at
    run time, as any tensor of a shape known only then."""
    return (dims, value), {"shape": tuple(int(d) for d in shape)}


def _traced_dim(op_name, d, i):
    """Dimension ``i`` of a shape given as a sequence while tracing: an int where
    known now, else the 0-d int64 tensor that gives it at run time."""
    from tfc.ops import math, shapes

    if not getattr(d, "symbolic", False):
        return as_int(op_name, d, f"shape[{i}]")
    if not d.dtype.is_integer or tuple(d.shape) not in ((), (1,)):
        raise _fail(TypeError, f"{op_name}: shape[{i}] must be an integer scalar, got {d.spec}")
    known = d.constant_value()
    if known is not None:
        return as_int(op_name, known.reshape(()).item(), f"shape[{i}]")
    return math.cast(shapes.reshape(d, ()), dtypes.int64)


class _RunTimeShape(NamedTuple):
    dims: Tensor  # 1-d int64, computed when the function runs
    static: tuple  # the dimensions known while tracing, -1 elsewhere


def _run_time_shape(op_name, shape):
    """``shape`` as static ints, or, where a traced tensor gives some of it,
    (the dims as a 1-d int64 tensor, the static shape with -1 where unknown)."""
    from tfc.core.tensor import constant
    from tfc.ops import math, shapes

    if getattr(shape, "symbolic", False):
        if not shape.dtype.is_integer or shape.ndim > 1:
            raise _fail(TypeError, f"{op_name}: shape must be a 1-d integer tensor, got {shape.spec}")
        if shape.ndim == 1 and shape.shape[0] is None:
            # tfc's ranks are static: each tensor's rank is known when tracing
            raise _fail(ValueError, f"{op_name}: the shape is a 1-d tensor of length known only at run time "
                                    f"({shape.spec}), so the result's rank would be known only then; tfc needs "
                                    f"every rank while tracing: give the shape as a tensor of static length "
                                    f"or a list")
        known = shape.constant_value()
        if known is not None:
            return as_shape(op_name, known)
        dims = math.cast(shapes.reshape(shape, (-1,)), dtypes.int64)
        return _RunTimeShape(dims, (-1,) * dims.shape[0])
    if not isinstance(shape, (list, tuple)) or not any(getattr(d, "symbolic", False) for d in shape):
        return as_shape(op_name, shape)
    dims = [_traced_dim(op_name, d, i) for i, d in enumerate(shape)]
    static = tuple(d if isinstance(d, int) else -1 for d in dims)
    if -1 not in static:
        return static
    return _RunTimeShape(shapes.stack([constant(d, dtypes.int64) if isinstance(d, int) else d for d in dims]),
                         static)


def _with_run_time_shape(api, value_of):
    """``api`` (zeros, ones, fill) that also takes, while tracing, a shape known
    only at run time: then ``dynamic_fill`` of ``value_of(the other arguments)``."""
    signature = inspect.signature(api)  # the declaration's: (shape, dtype=float32), (dims, value)

    @functools.wraps(api)
    def wrapper(*args, name=None, **kwargs):
        if STATE.builder is None:
            return api(*args, name=name, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        shape, *rest = bound.arguments.values()
        shape = _run_time_shape(api.__name__, shape)
        if isinstance(shape, _RunTimeShape):
            return dynamic_fill(shape.dims, value_of(*rest), shape.static)
        return api(shape, *rest, name=name)
    return wrapper


def _filled_value(fill_value):
    def value_of(dtype=dtypes.float32):
        return np.full((), fill_value, dtypes.as_dtype(dtype).as_numpy_dtype)
    return value_of


zeros = _with_run_time_shape(zeros, _filled_value(0))
ones = _with_run_time_shape(ones, _filled_value(1))
fill = _with_run_time_shape(fill, lambda value: value)


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


__all__ = ["zeros", "ones", "zeros_like", "ones_like", "fill", "dynamic_fill", "range", "linspace", "eye", "as_shape"]

