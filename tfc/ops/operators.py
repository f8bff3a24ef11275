"""Python operators on Tensor, each mapped to its registry op.

``+ - * /`` keep a fast path for the commonest eager case (two plain tensors
of one dtype, or a float tensor and a Python float or int on either side, with
no tape active): it calls the op's numpy kernel directly, which is exactly what
the registry would run after checks that cannot fail for such inputs (a Python
number is weak, so NumPy 2 keeps the tensor's dtype, as the registry does).
Division is a quiet op, so its fast path silences floating-point warnings as
the registry does. Anything else (symbolic tensors, variables, mixed dtypes,
broadcasting errors, huge ints) takes the registry path.
"""
from __future__ import annotations

import numpy as np

from tfc.core import dtypes
from tfc.core.context import TAPES
from tfc.core.device import PLACEMENT
from tfc.core.tensor import Tensor
from tfc.ops import math as m

from tfc.ops.linalg import matmul

_NUMERIC_NP = frozenset(d.as_numpy_dtype for d in dtypes.NUMERIC)
_FLOAT_NP = frozenset(d.as_numpy_dtype for d in dtypes.FLOATS)
_SCALARS = (float, int)  # exact types: bool (an int subclass) takes the registry path
_F32 = np.dtype(np.float32)
_new = Tensor.__new__


def _kernel(op):
    """The kernel the registry runs eagerly (quiet ops silence numpy's warnings)."""
    if not op.quiet:
        return op.kernel
    kernel = op.eager_kernel

    def quiet(x, y):
        # A Python number is cast first, outside errstate, as the registry casts
        # weak constants (so an overflowing cast still warns).
        if type(x) in _SCALARS:
            x = np.array(x, dtype=y.dtype)
        elif type(y) in _SCALARS:
            y = np.array(y, dtype=x.dtype)
        return kernel(x, y)

    return quiet


def _fast(api, ok):
    """Operator method with the fast path described in the module docstring."""
    kernel = _kernel(api.op)
    assert _F32 in ok  # the method tests float32 before the set

    def method(self, other):
        if not TAPES and type(self) is Tensor and PLACEMENT.gpu is None:
            a = self._value
            dt = a.dtype
            if type(other) is Tensor:
                b = other._value
                if dt is b.dtype and (dt is _F32 or dt in ok):  # float32 first: the common case
                    try:
                        v = kernel(a, b)
                    except ValueError:  # bad broadcast: the registry path explains it
                        return api(self, other)
                    t = _new(Tensor)
                    t._value = v
                    return t
            elif type(other) in _SCALARS and dt in _FLOAT_NP:
                try:
                    v = kernel(a, other)
                except OverflowError:  # an int too large for the dtype: the registry says so
                    return api(self, other)
                t = _new(Tensor)
                t._value = v
                return t
        return api(self, other)

    return method


def _fast_reflected(api):
    """``number (op) tensor``: the scalar fast path of ``_fast``, operands swapped."""
    kernel = _kernel(api.op)

    def method(self, other):
        if not TAPES and type(self) is Tensor and PLACEMENT.gpu is None and type(other) in _SCALARS:
            a = self._value
            if a.dtype in _FLOAT_NP:
                try:
                    v = kernel(other, a)
                except OverflowError:
                    return api(other, self)
                t = _new(Tensor)
                t._value = v
                return t
        return api(other, self)

    return method


def _reflected(api):
    def method(self, other):
        return api(other, self)

    return method


Tensor.__add__ = _fast(m.add, _NUMERIC_NP)
Tensor.__sub__ = _fast(m.subtract, _NUMERIC_NP)
Tensor.__mul__ = _fast(m.multiply, _NUMERIC_NP)
Tensor.__truediv__ = _fast(m.divide, _FLOAT_NP)
Tensor.__radd__ = _fast_reflected(m.add)
Tensor.__rsub__ = _fast_reflected(m.subtract)
Tensor.__rmul__ = _fast_reflected(m.multiply)
Tensor.__rtruediv__ = _fast_reflected(m.divide)
Tensor.__floordiv__ = lambda self, other: m.floordiv(self, other)
Tensor.__rfloordiv__ = _reflected(m.floordiv)
Tensor.__mod__ = lambda self, other: m.mod(self, other)
Tensor.__rmod__ = _reflected(m.mod)


def _pow(self, other):
    # a Python int exponent multiplies (integer_pow, as JAX); bool tensors keep
    # numpy's promotion (True ** 2 is an int)
    if type(other) is int and not self.dtype.is_bool:
        return m.integer_pow(self, other)
    return m.pow(self, other)


Tensor.__pow__ = _pow
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
