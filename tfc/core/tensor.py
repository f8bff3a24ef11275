"""The eager Tensor: an immutable wrapper around a numpy array.

A Tensor created while tracing is a ``SymbolicTensor`` (tfc.frontend.tracing):
it holds an SSA value of the function being built instead of an array. Operators
(``+``, ``@``, indexing, ...) are attached by tfc.ops.operators, so every one of
them goes through the op registry.
"""
from __future__ import annotations

import numbers

import numpy as np

from tfc.core import dtypes


class Tensor:
    """An n-dimensional array of one dtype. Immutable; ops return new tensors."""

    __slots__ = ("_value", "__weakref__")
    symbolic = False  # True for the tensors of a function being traced (tfc.frontend.tracing)
    __array_priority__ = 1000  # ndarray (op) Tensor defers to Tensor's reflected operator

    def __init__(self, value):
        """Wraps an existing numpy array (or numpy scalar) without copying."""
        self._value = value

    # -- static facts ---------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self) -> dtypes.DType:
        return dtypes.from_numpy(self._value.dtype)

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def size(self) -> int:
        return self._value.size

    @property
    def spec(self):
        from tfc.core.registry import Spec

        return Spec(self.shape, self.dtype)

    # -- devices (tfc.core.device) -------------------------------------------------
    def cpu(self) -> "Tensor":
        """This tensor on the CPU: itself, where every tensor of this build lives."""
        return self

    def gpu(self, index: int = 0) -> "Tensor":
        raise NotImplementedError("Tensor.gpu(): the GPU backend is not implemented yet; tensors are on the CPU")

    # -- numpy interop ----------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The value as a read-only numpy array (no copy; copy it to mutate)."""
        v = self._value
        if not isinstance(v, np.ndarray):
            return v  # a 0-d result: numpy scalars are immutable already
        view = v.view()
        view.flags.writeable = False
        return view

    def __array__(self, dtype=None, copy=None):
        a = np.asarray(self._value)
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    # -- Python protocols ---------------------------------------------------------
    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(self.shape[0]):
            yield self[i]

    def _scalar(self, what: str):
        try:
            return self._value.item()  # any one-element array, or a numpy scalar
        except ValueError:
            raise ValueError(f"{what}() needs a tensor with one element, got shape {self.shape}") from None

    def __bool__(self) -> bool:
        return bool(self._scalar("bool"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __index__(self) -> int:
        if not self.dtype.is_integer:
            raise TypeError(f"only integer tensors can be used as an index, got {self.dtype.name}")
        return int(self._scalar("index"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    __hash__ = None  # == is elementwise, as in TensorFlow: use .ref() as a dict key

    def ref(self):
        """A hashable reference to this tensor (TensorFlow's ``Tensor.ref()``)."""
        return _Ref(self)

    def __repr__(self) -> str:
        return f"tfc.Tensor({_format_value(self._value)}, shape={self.shape}, dtype={self.dtype.name})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if spec and self.size == 1:
            return format(self._scalar("format"), spec)
        return str(self)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class _Ref:
    __slots__ = ("_t",)

    def __init__(self, t):
        self._t = t

    def deref(self):
        return self._t

    def __hash__(self):
        return id(self._t)

    def __eq__(self, other):
        return isinstance(other, _Ref) and other._t is self._t


def _format_value(v) -> str:
    if isinstance(v, np.ndarray) and v.ndim > 0:
        return np.array2string(v, separator=" ", threshold=1000)
    return str(np.asarray(v).reshape(())[()])


def wrap(array) -> Tensor:
    """A Tensor around a numpy array, without copying or checks (the hot path)."""
    t = Tensor.__new__(Tensor)
    t._value = array
    return t


def _to_numpy(value, dtype: dtypes.DType | None):
    if isinstance(value, str) or (
        isinstance(value, (list, tuple)) and _has_str(value)
    ):
        raise TypeError(f"cannot convert {value!r} to a tensor: not a number")
    try:
        arr = np.asarray(value)
    except ValueError as e:
        raise ValueError(f"cannot convert {value!r} to a tensor: {e}") from None
    if arr.dtype == object or arr.dtype.kind in "USVcmM":
        raise TypeError(
            f"cannot convert {type(value).__name__} of {arr.dtype} to a tensor: not numeric"
        )
    if dtype is None:
        if isinstance(value, np.ndarray | np.generic):
            dtype = dtypes.from_numpy(arr.dtype)
        elif arr.dtype.kind == "f":
            dtype = dtypes.float32
        elif arr.dtype.kind in "iu":
            dtype = dtypes.int32 if _fits_int32(arr) else dtypes.int64
        else:
            dtype = dtypes.from_numpy(arr.dtype)
    elif arr.dtype.kind == "f" and dtype.is_integer and isinstance(value, (float, list, tuple)):
        if not np.all(np.equal(np.mod(arr, 1), 0)):
            raise TypeError(f"cannot convert {value!r} to {dtype.name} without losing the fraction")
    if arr.dtype.kind in "iufO" and dtype.is_integer and isinstance(value, (int, float, list, tuple)) and arr.size:
        info = np.iinfo(dtype.as_numpy_dtype)  # Python numbers never wrap silently (TensorFlow refuses too)
        if arr.min() < info.min or arr.max() > info.max:
            raise ValueError(f"cannot convert {value!r} to {dtype.name}: out of its range")
    return arr.astype(dtype.as_numpy_dtype, copy=isinstance(value, np.ndarray))


def _has_str(seq) -> bool:
    return any(isinstance(x, str) or (isinstance(x, (list, tuple)) and _has_str(x)) for x in seq)


def _fits_int32(arr) -> bool:
    return arr.size == 0 or (arr.min() >= -(2**31) and arr.max() < 2**31)


def constant(value, dtype=None, shape=None) -> Tensor:
    """A tensor from a Python number, nested lists, a numpy array or a tensor.

    Python floats become float32 and ints int32 (TensorFlow's defaults); numpy
    arrays keep their dtype unless ``dtype`` is given. ``shape`` reshapes, or
    broadcasts a scalar.
    """
    dt = None if dtype is None else dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        from tfc.ops import math as _math

        if hasattr(value, "read_value"):  # a Variable: its value now, not the variable
            value = value.read_value()
        t = value if dt is None or value.dtype == dt else _math.cast(value, dt)
    else:
        t = wrap(_to_numpy(value, dt))
    if shape is not None:
        from tfc.core.shape import as_ints
        from tfc.ops import shapes as _shapes

        shape = as_ints("constant", shape)
        if t.size == 1 and t.shape != shape:
            t = _shapes.broadcast_to(_shapes.reshape(t, ()), shape)
        else:
            t = _shapes.reshape(t, shape)
    return t


def convert_to_tensor(value, dtype=None) -> Tensor:
    """``value`` as a Tensor; a tensor of another dtype than ``dtype`` is a TypeError."""
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtypes.as_dtype(dtype):
            raise TypeError(
                f"expected a {dtypes.as_dtype(dtype).name} tensor, got {value.dtype.name}"
            )
        return value
    return constant(value, dtype)


def is_python_scalar(x) -> bool:
    return isinstance(x, (bool, int, float)) or (
        isinstance(x, numbers.Number) and not isinstance(x, (np.generic, complex))
    )
