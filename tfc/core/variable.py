"""tfc.Variable: a mutable tensor. Reads under a tape are snapshots, so a later
``assign`` never changes a recorded value."""
from __future__ import annotations

import itertools
import sys

import numpy as np

from tfc.core import dtypes
from tfc.core.context import STATE, TAPES
from tfc.core.tensor import Tensor, constant, wrap

_uid = itertools.count()


class Variable(Tensor):
    """A tensor whose value can be replaced with ``assign``; usable wherever a
    Tensor is. Trainable variables are watched automatically by tapes."""

    __slots__ = ("trainable", "name", "_uid")

    def __init__(self, initial_value, trainable: bool = True, name: str | None = None, dtype=None):
        if callable(initial_value):
            initial_value = initial_value()
        value = constant(initial_value, dtype)
        if STATE.builder is not None:
            from tfc.frontend.tracing import SymbolicTensor

            if isinstance(value, SymbolicTensor):
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

    def _coerce(self, value) -> Tensor:
        t = value if isinstance(value, Tensor) else constant(value, self.dtype)
        if t.dtype != self.dtype:
            raise TypeError(f"cannot assign a {t.dtype.name} value to {self.name} of dtype {self.dtype.name}")
        if tuple(t.shape) != tuple(self.shape):
            raise ValueError(f"cannot assign a value of shape {tuple(t.shape)} to {self.name} of shape {tuple(self.shape)}")
        return t

    def assign(self, value) -> "Variable":
        t = self._coerce(value)
        builder = STATE.builder
        if builder is not None:
            builder.assign_variable(self, t)
        else:
            self._value = t._value if not isinstance(t, Variable) else np.array(t._value)
        return self

    def assign_add(self, delta) -> "Variable":
        if not self._update_in_place(np.add, delta):
            self.assign(self.read_value() + delta)
        return self

    def assign_sub(self, delta) -> "Variable":
        if not self._update_in_place(np.subtract, delta):
            self.assign(self.read_value() - delta)
        return self

    def _update_in_place(self, ufunc, delta) -> bool:
        """Update in place when nothing else can see the array (eager, no tape,
        no tensor sharing it: CPython's reference count proves it); a fresh
        array per step costs page faults on large variables."""
        from tfc.core.context import TAPES

        v = self._value
        if (STATE.builder is not None or TAPES or not isinstance(v, np.ndarray)
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
