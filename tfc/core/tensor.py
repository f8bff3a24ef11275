"""The eager Tensor: an immutable wrapper around a numpy array.

A Tensor created while tracing is a ``SymbolicTensor`` (tfc.frontend.tracing):
it holds an SSA value of the function being built instead of an array. Operators
(``+``, ``@``, indexing, ...) are attached by tfc.ops.operators, so every one of
them goes through the op registry.
"""
from __future__ import annotations

import numbers

import numpy as np

from tfc.core import allocator, dtypes
from tfc.core.context import STATE
from tfc.core.device import PLACEMENT

allocator.tune_malloc()  # eager temporaries reuse freed heap blocks instead of faulting in new pages


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
    device = "/device:CPU:0"  # where the value lives (GpuTensor: "/device:GPU:0")

    def cpu(self) -> "Tensor":
        """This tensor on the CPU: itself (a GpuTensor copies to the host)."""
        return self

    def gpu(self, index: int = 0) -> "Tensor":
        """A copy of this tensor on the GPU (a GpuTensor: its value in device
        memory). No usable CUDA driver raises tfc.errors.UnavailableError."""
        from tfc.core import device as _device

        _device.canonical(f"gpu:{index}")
        return _device.gpu_runtime().to_gpu(self)

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


class OnDeviceError(NotImplementedError):
    """The host value of a GPU tensor was needed where tfc does not copy it
    implicitly (a tfc.Variable's initial value, a tfc.function argument, ...).
    Raised on every eager op on a GPU tensor (tfc.core.registry.run_eager
    catches it), so it is made cheaply: its one argument is the tensor, the
    message is written when shown."""

    def __str__(self) -> str:
        t = self.args[0]
        return (f"the value of a GPU tensor ({t._spec}, on {t.device}) is needed on the host here, and tfc "
                f"does not copy it implicitly: copy it with .cpu() first (the arguments of a tfc.function compiled for the CPU "
                f"and host tfc.Variables take host values)")


class GpuTensor(Tensor):
    """A tensor whose value lives in GPU memory (tfc.core.device): ``_buf`` is
    the device buffer (its data contiguous from ``_buf.addr``; ``_buf.owner``
    keeps the allocation alive), ``_spec`` its shape and dtype, ``_rt`` the
    runtime of the driver that holds it (tfc.frontend.eager_gpu). Ops on it run
    on the GPU; ``numpy()``, ``np.asarray``, printing and ``float()`` copy the
    value to the host."""

    __slots__ = ("_buf", "_spec", "_rt")
    device = "/device:GPU:0"

    @property
    def _value(self):
        # an eager op's input: tfc.core.registry.run_eager catches this and runs the op on the GPU
        raise OnDeviceError(self)

    @property
    def shape(self) -> tuple:
        return self._spec.shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._spec.dtype

    @property
    def ndim(self) -> int:
        return len(self._spec.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self._spec.shape:
            n *= d
        return n

    @property
    def spec(self):
        return self._spec

    def cpu(self) -> Tensor:
        """A copy of this tensor on the host."""
        return wrap(self._rt.to_host(self))

    def gpu(self, index: int = 0) -> "GpuTensor":
        from tfc.core import device as _device

        _device.canonical(f"gpu:{index}")
        return self

    def numpy(self) -> np.ndarray:
        """The value copied to the host, as a read-only numpy array (0-d: a numpy scalar)."""
        a = self._rt.to_host(self)
        if a.ndim == 0:
            return a[()]
        a.flags.writeable = False
        return a

    def __array__(self, dtype=None, copy=None):
        if copy is False:  # numpy 2's protocol: a copy it cannot avoid is a ValueError
            raise ValueError("a GPU tensor's value reaches the host only as a copy (np.asarray(t, copy=False))")
        a = self._rt.to_host(self)
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)

    def _scalar(self, what: str):
        if self.size != 1:
            raise ValueError(f"{what}() needs a tensor with one element, got shape {self.shape}")
        return self._rt.to_host(self).item()

    def __repr__(self) -> str:
        return (f"tfc.Tensor({_format_value(self._rt.to_host(self))}, shape={self.shape}, "
                f"dtype={self.dtype.name}, device={self.device})")

    __str__ = __repr__


def wrap(array) -> Tensor:
    """A Tensor around a numpy array, without copying or checks (the hot path)."""
    t = Tensor.__new__(Tensor)
    t._value = array
    return t


def _to_numpy(value, dtype: dtypes.DType | None):
    tensor_dtypes = _scan_list(value) if isinstance(value, (list, tuple)) else None
    if isinstance(value, str) or tensor_dtypes is _HAS_STR:
        raise TypeError(f"cannot convert {value!r} to a tensor: not a number")
    try:
        arr = np.asarray(value)
    except ValueError as e:
        raise ValueError(f"cannot convert {value!r} to a tensor: {e}") from None
    if arr.dtype == object or arr.dtype.kind in "USVcmM":
        raise TypeError(
            f"cannot convert {type(value).__name__} of {arr.dtype} to a tensor: not numeric"
        )
    if dtype is None and tensor_dtypes:  # a list of tensors keeps their dtype, as TensorFlow packs it
        if len(tensor_dtypes) > 1:  # TensorFlow refuses to pack them too
            names = " and ".join(sorted(d.name for d in tensor_dtypes))
            raise TypeError(f"cannot convert a list of tensors of {names} to one tensor: cast them to one dtype first")
        (dtype,) = tensor_dtypes
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


_HAS_STR = object()
_PLAIN_NUMBERS = frozenset({int, float, bool, complex})


def _scan_list(seq):
    """One walk over a nested list: _HAS_STR if it holds a str, else the set of
    the dtypes of the tensors in it. A row of plain Python numbers is skipped
    in one C-level pass (the common case: a constant written as nested lists)."""
    found = set()
    stack = [seq]
    while stack:
        items = stack.pop()
        if set(map(type, items)) <= _PLAIN_NUMBERS:
            continue
        for x in items:
            if isinstance(x, Tensor):
                found.add(x.dtype)
            elif isinstance(x, (list, tuple)):
                stack.append(x)
            elif isinstance(x, str):
                return _HAS_STR
    return found


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
    if PLACEMENT.gpu is not None and not t.symbolic and type(t) is Tensor and STATE.builder is None:
        t = t.gpu()  # made inside ``with tfc.device("gpu:0")``: lives there
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
