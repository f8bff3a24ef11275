"""tfc.Variable: a mutable tensor. Reads under a tape are snapshots, so a later
``assign`` never changes a recorded value."""
from __future__ import annotations

import itertools
import sys

import numpy as np

from tfc.core import dtypes
from tfc.core.context import STATE, TAPES
from tfc.core.registry import note_user_line
from tfc.core.tensor import Tensor, constant, wrap

_uid = itertools.count()


class Variable(Tensor):
    """A tensor whose value can be replaced with ``assign``; usable wherever a
    Tensor is. Trainable variables are watched automatically by tapes."""

    __slots__ = ("trainable", "name", "_uid")

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
        if not isinstance(value._value, np.ndarray) or value._value.base is not None or not value._value.flags.writeable:
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

    def assign(self, value) -> "Variable":
        t = self._convert(value, "assign")
        if tuple(t.shape) != tuple(self.shape):
            e = ValueError(f"{self.name}.assign: cannot assign a value of shape {tuple(t.shape)} to a variable of "
                           f"shape {tuple(self.shape)}")
            note_user_line(e)
            raise e
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
        from tfc.core.tensor import _format_value

        return (
            f"<tfc.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
            f"numpy={_format_value(self._value)}>"
        )

    __str__ = __repr__
