"""Python operators on Tensor, each mapped to its registry op.

``+ - * /`` keep a fast path for the commonest eager case (two plain tensors
of one dtype, or a tensor and a Python number, with no tape active): it calls
the op's numpy kernel directly, which is exactly what the registry would run
after checks that cannot fail for such inputs. Anything else (symbolic tensors,
variables, mixed dtypes, broadcasting errors) takes the registry path.
"""
from __future__ import annotations

import numpy as np

from tfc.core import dtypes
from tfc.core.context import TAPES
from tfc.core.tensor import Tensor
from tfc.ops import math as m

from tfc.ops.linalg import matmul

_NUMERIC_NP = frozenset(d.as_numpy_dtype for d in dtypes.NUMERIC)
_FLOAT_NP = frozenset(d.as_numpy_dtype for d in dtypes.FLOATS)
_new = Tensor.__new__


def _fast(api, kernel, ok):
    """Operator method with the fast path described in the module docstring."""

    def method(self, other):
        if not TAPES and type(self) is Tensor:
            a = self._value
            if type(other) is Tensor:
                b = other._value
                if a.dtype is b.dtype and a.dtype in ok:
                    try:
                        v = kernel(a, b)
                    except ValueError:  # bad broadcast: the registry path explains it
                        return api(self, other)
                    t = _new(Tensor)
                    t._value = v
                    return t
            elif type(other) is float and a.dtype in _FLOAT_NP:
                t = _new(Tensor)
                t._value = kernel(a, other)
                return t
        return api(self, other)

    return method


def _reflected(api):
    def method(self, other):
        return api(other, self)

    return method


Tensor.__add__ = _fast(m.add, np.add, _NUMERIC_NP)
Tensor.__sub__ = _fast(m.subtract, np.subtract, _NUMERIC_NP)
Tensor.__mul__ = _fast(m.multiply, np.multiply, _NUMERIC_NP)
Tensor.__truediv__ = _fast(m.divide, np.true_divide, _FLOAT_NP)
Tensor.__radd__ = _reflected(m.add)
Tensor.__rsub__ = _reflected(m.subtract)
Tensor.__rmul__ = _reflected(m.multiply)
Tensor.__rtruediv__ = _reflected(m.divide)
Tensor.__floordiv__ = lambda self, other: m.floordiv(self, other)
Tensor.__rfloordiv__ = _reflected(m.floordiv)
Tensor.__mod__ = lambda self, other: m.mod(self, other)
Tensor.__rmod__ = _reflected(m.mod)
Tensor.__pow__ = lambda self, other: m.pow(self, other)
Tensor.__rpow__ = _reflected(m.pow)
Tensor.__matmul__ = lambda self, other: matmul(self, other)
Tensor.__rmatmul__ = _reflected(matmul)
Tensor.__neg__ = lambda self: m.negative(self)
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: m.abs(self)
Tensor.__invert__ = lambda self: m.logical_not(self)
Tensor.__and__ = lambda self, other: m.logical_and(self, other)
Tensor.__rand__ = _reflected(m.logical_and)
Tensor.__or__ = lambda self, other: m.logical_or(self, other)
Tensor.__ror__ = _reflected(m.logical_or)
Tensor.__eq__ = lambda self, other: m.equal(self, other)
Tensor.__ne__ = lambda self, other: m.not_equal(self, other)
Tensor.__lt__ = lambda self, other: m.less(self, other)
Tensor.__le__ = lambda self, other: m.less_equal(self, other)
Tensor.__gt__ = lambda self, other: m.greater(self, other)
Tensor.__ge__ = lambda self, other: m.greater_equal(self, other)
Tensor.__hash__ = None


def _getitem(self, key):
    from tfc.ops.shapes import getitem

    return getitem(self, key)


Tensor.__getitem__ = _getitem
