"""tfc.Variable: a mutable tensor. Reads under a tape are snapshots, so a later
``assign`` never changes a recorded value.

A variable lives where it is made (TensorFlow's placement at creation): on the
host (its value a numpy array, ``_value``), or on the GPU when made inside
``with tfc.device("gpu:0")`` or from a GPU tensor (a ``GpuVariable``: its value
an immutable GpuTensor, ``_t``; docs/gpu-eager.md)."""
from __future__ import annotations

import itertools
import operator
import sys

import numpy as np

from tfc.core import dtypes
from tfc.core.context import STATE, TAPES
from tfc.core.device import CPU, GPU, PLACEMENT, placed
from tfc.core.registry import note_user_line
from tfc.core.tensor import GpuTensor, Tensor, _format_value, constant, wrap

_uid = itertools.count()


class Variable(Tensor):
    """A tensor whose value can be replaced with ``assign``; usable wherever a
    Tensor is. Trainable variables are watched automatically by tapes."""

    __slots__ = ("trainable", "name", "_uid", "_t")

    def __init__(self, initial_value, trainable: bool = True, name: str | None = None, dtype=None):
        if callable(initial_value):
            initial_value = initial_value()
        builder = STATE.builder
        if builder is not None:
            if not builder.may_create_variables:
                e = ValueError(
                    f"tfc.function only supports singleton tfc.Variables created on the first call: {builder.name} "
                    "makes a tfc.Variable on a later trace (tracing again, as TensorFlow does, to check that the "
                    "first call's variables are made once; or tracing for new shapes or dtypes). Its compiled code "
                    "would not make it anew on each call as Python does. Make sure the tfc.Variable is only "
                    "created once (if self.v is None: self.v = tfc.Variable(...)) or created outside the "
                    "function (e.g. in a tfc.Module's __init__)")
                note_user_line(e)
                raise e
            builder.created_variables.append(self)
        value = constant(initial_value, dtype)
        if value.symbolic:
            raise ValueError(
                f"tfc.Variable: the initial value is a tensor of the function being traced ({value.spec}); a "
                "tfc.function cannot make variables from its own tensors. Create the variable outside the "
                "function (e.g. in a tfc.Module's __init__) and assign to it inside.")
        self._t = None
        if type(value) is GpuTensor and PLACEMENT.name == CPU:
            value = value.cpu()  # made inside ``with tfc.device("cpu:0")``: lives on the host
        if type(value) is GpuTensor or isinstance(value, GpuVariable):
            self.__class__ = GpuVariable  # (the same slots: only its methods differ)
            self._t = GpuVariable._own(value._t if isinstance(value, GpuVariable) else value)
        else:
            if not isinstance(value._value, np.ndarray) or value._value.base is not None or \
                    not value._value.flags.writeable:
                value = wrap(np.array(value._value))
            self._value = value._value
        self.trainable = bool(trainable)
        self._uid = next(_uid)
        self.name = name or f"Variable_{self._uid}"

    def read_value(self) -> Tensor:
        """The current value as an (immutable) Tensor."""
        builder = STATE.builder
        if builder is not None:
            return builder.read_variable(self)
        if TAPES:  # a recorded read: gradients flow to the variable (as in TensorFlow)
            from tfc.core.tape import snapshot_variables

            return snapshot_variables([self])[0]
        return wrap(self._value)

    def value(self) -> Tensor:
        return self.read_value()

    def numpy(self):
        if STATE.builder is not None:
            raise TypeError(f"{self.name}.numpy() is not available while tracing: the value is known only when the function runs")
        return np.array(self._value)

    def _convert(self, value, method: str) -> Tensor:
        """``value`` as a tensor of this variable's dtype: a tensor must have
        the dtype (as in TensorFlow); a numpy value converts when its dtype does
        implicitly (ints to floats, float64 to float32), never from a float to
        an int nor between bools and numbers (TensorFlow force-casts numpy
        arrays, truncating 1.5 to 1: a wrong value without an error); Python
        numbers convert unless they would lose a fraction."""
        if isinstance(value, Tensor):
            src = value.dtype
        elif isinstance(value, (np.ndarray, np.generic)):
            src = dtypes.from_numpy(value.dtype)
            if dtypes.converts_implicitly(src, self.dtype):
                src = self.dtype
        else:
            src = self.dtype  # Python numbers and lists: constant() refuses lossy values
        try:
            if src != self.dtype:
                raise TypeError(f"{self.name}.{method}: cannot assign a value of dtype {src.name} to a variable of dtype "
                                f"{self.dtype.name}; cast it first (tfc.cast(value, tfc.{self.dtype.name}))")
            return value if isinstance(value, Tensor) else constant(value, self.dtype)
        except (TypeError, ValueError) as e:
            note_user_line(e)
            raise

    def _assignable(self, value) -> Tensor:
        """``value`` as a tensor ``assign`` takes: its shape is the variable's."""
        t = self._convert(value, "assign")
        self._check_shape(t.shape, "assign")
        return t

    def _check_shape(self, shape, method: str) -> None:
        if tuple(shape) != tuple(self.shape):
            e = ValueError(f"{self.name}.{method}: cannot assign a value of shape {tuple(shape)} to a variable of "
                           f"shape {tuple(self.shape)}")
            note_user_line(e)
            raise e

    def assign(self, value) -> "Variable":
        t = self._assignable(value)
        builder = STATE.builder
        if builder is not None:
            builder.assign_variable(self, t)
        else:
            self._value = t._value if not isinstance(t, Variable) else np.array(t._value)
        return self

    def assign_add(self, delta) -> "Variable":
        delta = self._convert(delta, "assign_add")
        if not self._update_in_place(np.add, delta):
            self.assign(self.read_value() + delta)
        return self

    def assign_sub(self, delta) -> "Variable":
        delta = self._convert(delta, "assign_sub")
        if not self._update_in_place(np.subtract, delta):
            self.assign(self.read_value() - delta)
        return self

    def _update_in_place(self, ufunc, delta) -> bool:
        """Update in place when nothing else can see the array (eager, no tape,
        no tensor sharing it: CPython's reference count proves it, and it is no
        view of another array, e.g. a slice some tensor holds); a fresh array
        per step costs page faults on large variables."""
        from tfc.core.context import TAPES

        v = self._value
        if (STATE.builder is not None or TAPES or not isinstance(v, np.ndarray) or v.base is not None
                or sys.getrefcount(v) > 3 or not isinstance(delta, Tensor)
                or delta.dtype != self.dtype or tuple(delta.shape) != v.shape):
            return False
        ufunc(v, delta._value, out=v)
        return True

    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self) -> dtypes.DType:
        return dtypes.from_numpy(self._value.dtype)

    def __repr__(self) -> str:
        return (
            f"<tfc.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
            f"numpy={_format_value(self._value)}>"
        )

    __str__ = __repr__

    def _snapshot(self) -> Tensor:
        """The current value as a tensor nothing will change (what a tape records)."""
        return wrap(self._value)


class GpuVariable(Variable):
    """A tfc.Variable whose value lives on the GPU (made inside
    ``with tfc.device("gpu:0")`` or from a GPU tensor). ``_t`` is its value:
    an immutable GpuTensor, replaced (never written) by every assignment, so a
    snapshot (a read, a tape's record) keeps the value it saw; the buffer
    returns to the caching allocator when nothing holds it. Eager ops on it run
    on the GPU (its ``_value`` raises OnDeviceError as a GpuTensor's does, and
    tfc.frontend.eager_gpu reads ``_t``); compiled cuda functions read and
    replace ``_t`` through their Cells (tfc/backends/cuda/host.py)."""

    __slots__ = ()
    device = GPU

    @property
    def _value(self):
        from tfc.core.tensor import OnDeviceError

        raise OnDeviceError(self._t)

    @staticmethod
    def _own(t: GpuTensor) -> GpuTensor:
        """``t`` as a value the variable may hold: compiled kernels read a
        variable's buffer with 16-byte vector loads, so a tensor whose data
        does not start on 16 bytes (a view at an offset) is copied first."""
        if t._buf.addr % 16 == 0:
            return t
        rt = t._rt
        buf = rt.alloc(t.size * t.dtype.as_numpy_dtype().itemsize)
        if t.size:
            rt.driver.copy_dtod(buf.addr, t._buf.addr, t.size * t.dtype.as_numpy_dtype().itemsize)
        return rt.tensor(buf, t._spec)

    # -- static facts ------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._t._spec.shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._t._spec.dtype

    @property
    def ndim(self) -> int:
        return len(self._t._spec.shape)

    @property
    def size(self) -> int:
        return self._t.size

    @property
    def spec(self):
        return self._t._spec

    # -- reads ---------------------------------------------------------------------------
    def _snapshot(self) -> GpuTensor:
        # a tensor object of its own per read (a tape keys values by identity), sharing the buffer
        t = self._t
        return t._rt.tensor(t._buf, t._spec)

    def read_value(self) -> Tensor:
        """The current value as an (immutable) GPU tensor: a later assign leaves it as it is."""
        builder = STATE.builder
        if builder is not None:
            return builder.read_variable(self)
        if TAPES:  # a recorded read (tfc.core.tape.snapshot_variables does this for host variables)
            from tfc.core.tape import READ_VARIABLE, record, watch_accessed

            snap = self._snapshot()
            watch_accessed(self)
            record(READ_VARIABLE, [self], snap, {})
            return snap
        return self._t

    def numpy(self):
        """The value copied to the host (a fresh array, as a host variable's ``numpy()``)."""
        if STATE.builder is not None:
            raise TypeError(f"{self.name}.numpy() is not available while tracing: the value is known only when the function runs")
        return self._t._rt.to_host(self._t)

    def __array__(self, dtype=None, copy=None):
        return self._t.__array__(dtype, copy)

    def _scalar(self, what: str):
        return self._t._scalar(what)

    def cpu(self) -> Tensor:
        """The current value copied to the host (a tensor; the variable stays on the GPU)."""
        return self._t.cpu()

    def gpu(self, index: int = 0) -> GpuTensor:
        """The current value (a GPU tensor)."""
        return self._t.gpu(index)

    # -- assignments ---------------------------------------------------------------------
    def assign(self, value) -> "GpuVariable":
        """The variable holds ``value`` from now on: a GPU tensor's buffer as it
        is (GPU tensors are immutable: sharing it is safe), a host value copied
        to the GPU (the variable's device, as TensorFlow's assign runs there)."""
        t = self._assignable(value)
        builder = STATE.builder
        if builder is not None:
            builder.assign_variable(self, t)
            return self
        self._t = self._device_value(t, "assign")
        return self

    def _device_value(self, t: Tensor, method: str) -> GpuTensor:
        """Tensor ``t`` (of this variable's dtype) as a GPU tensor of this variable's driver."""
        rt = self._t._rt
        if isinstance(t, GpuVariable):
            t = t._t
        if type(t) is GpuTensor:
            if t._rt is not rt:
                from tfc.core.device import DeviceMismatchError

                raise DeviceMismatchError(f"{self.name}.{method}: the value is on the GPU of another CUDA driver "
                                          f"({t._rt.driver.name}, not {rt.driver.name})")
            return self._own(t)
        return rt.upload(np.asarray(t._value if not isinstance(t, Variable) else t.numpy(),
                                    self.dtype.as_numpy_dtype))

    def assign_add(self, delta) -> "GpuVariable":
        return self._update(delta, "assign_add", operator.add)

    def assign_sub(self, delta) -> "GpuVariable":
        return self._update(delta, "assign_sub", operator.sub)

    def _update(self, delta, method, combine):
        """``assign(value ± delta)`` run on the GPU: a kernel writes a new buffer
        (never the current one, which snapshots may hold)."""
        delta = self._convert(delta, method)
        if STATE.builder is not None:
            return self.assign(combine(self.read_value(), delta))
        if isinstance(delta, Variable):
            delta = delta._t if isinstance(delta, GpuVariable) else wrap(np.array(delta._value))
        from tfc.core.tape import tapes_suspended

        with tapes_suspended(), placed(GPU):  # a host delta with dimensions is copied to the GPU
            value = combine(self._t, delta)
        self._check_shape(value.shape, method)
        self._t = self._own(value)
        return self

    def __repr__(self) -> str:
        return (f"<tfc.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, device={self.device}, "
                f"numpy={_format_value(self._t._rt.to_host(self._t))}>")

    __str__ = __repr__
