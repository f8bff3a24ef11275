"""Helpers for the scalar bodies of elementwise ops (the ``scalar=`` field of a
declaration): each emits xDSL ``arith``/``math`` ops on scalar SSA values,
choosing the float or integer form by dtype, so that the body computed element
by element gives what the eager numpy kernel gives (float32 stays float32,
integers wrap).

A body is ``scalar(b, *operands, **attrs)`` returning one SSA value. ``b`` is a
small builder (``tfc.dialects.fused.ScalarBuilder``): ``b.emit(op)`` appends an
op and returns its result, ``b.dtype(v)`` is the tfc dtype of a scalar value,
``b.out_dtype`` the dtype of the op's result. Operands already have the op's
promoted dtypes (the L1 op's operand types).

xdsl is imported inside the functions: ``import tfc`` must not import it.
"""
from __future__ import annotations

from tfc.core import dtypes


def _arith():
    from xdsl.dialects import arith

    return arith


def _math():
    from xdsl.dialects import math

    return math


def element_type(dt: dtypes.DType):
    from tfc.dialects.tensor import element_type as et

    return et(dt)


def _unsigned(dt: dtypes.DType) -> bool:
    return dt.as_numpy_dtype.kind == "u"


def constant_ops(value, t) -> list:
    """The ops of a scalar constant ``value`` of element type ``t``, the last one
    giving it (also the loops lowering's). arith.constant is signless: an unsigned
    (``ui8``) constant is the signless one of its bits (wrapped as numpy wraps: -1
    is 255 in uint8), bitcast to ``t`` (the type keeps the signedness, and the ops
    on it take their unsigned forms: cmpi ult, divui, maxui, extui, uitofp)."""
    from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, Signedness

    arith = _arith()
    if not isinstance(t, IntegerType):
        return [arith.ConstantOp(FloatAttr(float(value), t))]
    if t.signedness.data == Signedness.UNSIGNED:
        bits = t.width.data
        c = arith.ConstantOp(IntegerAttr((int(value) + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1),
                                         IntegerType(bits)))
        return [c, arith.BitcastOp(c.result, t)]
    return [arith.ConstantOp(IntegerAttr(int(value), t))]


def const(b, value, dt: dtypes.DType):
    """A scalar constant of dtype ``dt`` (``constant_ops``)."""
    for op in constant_ops(int(bool(value)) if dt.is_bool else value, element_type(dt)):
        result = b.emit(op)
    return result


def like(b, value, x):
    """A constant of ``x``'s dtype."""
    return const(b, value, b.dtype(x))


def _pick(b, x, float_op: str, int_op: str, what: str):
    dt = b.dtype(x)
    if dt.is_floating:
        return float_op
    if dt.is_integer:
        return int_op
    raise TypeError(f"scalar body {what}: no form for dtype {dt.name}")


def _bin(float_op: str, int_op: str, uint_op: str | None = None):
    def body(b, x, y):
        name = _pick(b, x, float_op, int_op, float_op)
        if uint_op is not None and _unsigned(b.dtype(x)):
            name = uint_op
        return b.emit(getattr(_arith(), name)(x, y))

    body.__name__ = float_op
    return body


add = _bin("AddfOp", "AddiOp")
sub = _bin("SubfOp", "SubiOp")
mul = _bin("MulfOp", "MuliOp")
maximum = _bin("MaximumfOp", "MaxSIOp", "MaxUIOp")  # maximumf propagates NaN, as np.maximum
minimum = _bin("MinimumfOp", "MinSIOp", "MinUIOp")


def divf(b, x, y):
    return b.emit(_arith().DivfOp(x, y))


def remf(b, x, y):
    """C fmod: MLIR's arith.remf, which xdsl 0.74 lacks, so ours is tfc.remf."""
    from tfc.dialects.fused import RemFOp

    return b.emit(RemFOp(x, y))


def logical_and(b, x, y):
    return b.emit(_arith().AndIOp(x, y))


def logical_or(b, x, y):
    return b.emit(_arith().OrIOp(x, y))


def logical_not(b, x):
    return b.emit(_arith().XOrIOp(x, const(b, True, dtypes.bool_)))


def select(b, c, x, y):
    return b.emit(_arith().SelectOp(c, x, y))


_FPRED = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_IPRED = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_UPRED = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def cmp(b, pred: str, x, y):
    """x PRED y as an i1; floats use ordered predicates except ``ne`` (NaN != NaN)."""
    if b.dtype(x).is_floating:
        return b.emit(_arith().CmpfOp(x, y, _FPRED[pred]))
    return b.emit(_arith().CmpiOp(x, y, (_UPRED if _unsigned(b.dtype(x)) else _IPRED)[pred]))


def comparison(pred: str):
    def body(b, x, y):
        return cmp(b, pred, x, y)

    body.__name__ = f"cmp_{pred}"
    return body


def neg(b, x):
    if b.dtype(x).is_floating:
        return b.emit(_arith().NegfOp(x))
    return sub(b, like(b, 0, x), x)


def absolute(b, x):
    if _unsigned(b.dtype(x)):
        return x
    m = _math()
    return b.emit(m.AbsFOp(x) if b.dtype(x).is_floating else m.AbsIOp(x))


def square(b, x):
    return mul(b, x, x)


def math1(name: str):
    """A float-only ``math`` op of one operand (``ExpOp``, ``TanhOp``, ...)."""

    def body(b, x):
        return b.emit(getattr(_math(), name)(x))

    body.__name__ = name
    return body


def cast(b, x, dtype: dtypes.DType):
    """x converted as numpy's ``astype``: floats to ints truncate, ints wrap,
    anything to bool is ``x != 0``."""
    a = _arith()
    src = b.dtype(x)
    if src == dtype:
        return x
    t = element_type(dtype)
    if dtype.is_bool:
        return cmp(b, "ne", x, like(b, 0, x))
    if src.is_bool:
        return b.emit(a.UIToFPOp(x, t) if dtype.is_floating else a.ExtUIOp(x, t))
    if src.is_floating and dtype.is_floating:
        return b.emit(a.ExtFOp(x, t) if dtype.itemsize > src.itemsize else a.TruncFOp(x, t))
    if src.is_floating:  # numpy's astype to an unsigned byte goes through int32 (x86: INT_MIN out of range)
        if _unsigned(dtype):
            return b.emit(a.TruncIOp(b.emit(a.FPToSIOp(x, element_type(dtypes.int32))), t))
        return b.emit(a.FPToSIOp(x, t))
    if dtype.is_floating:
        return b.emit((a.UIToFPOp if _unsigned(src) else a.SIToFPOp)(x, t))
    if dtype.itemsize == src.itemsize:  # int8 <-> uint8: the same bits
        return b.emit(a.BitcastOp(x, t))
    if dtype.itemsize > src.itemsize:
        return b.emit((a.ExtUIOp if _unsigned(src) else a.ExtSIOp)(x, t))
    return b.emit(a.TruncIOp(x, t))


def true_divide(b, x, y):
    """x / y in the result dtype (integers are converted first, as numpy does)."""
    out = b.out_dtype
    return divf(b, cast(b, x, out), cast(b, y, out))


def _float_mod(b, x, y):
    """numpy's npy_divmod for floats, the remainder part: (mod, fmod, adjust)."""
    zero = like(b, 0, x)
    fmod = remf(b, x, y)
    mod_nz = cmp(b, "ne", fmod, zero)
    flip = b.emit(_arith().XOrIOp(cmp(b, "lt", y, zero), cmp(b, "lt", fmod, zero)))
    adjust = logical_and(b, mod_nz, flip)
    signed_zero = b.emit(_math().CopySignOp(zero, y))
    mod = select(b, adjust, add(b, fmod, y), select(b, mod_nz, fmod, signed_zero))
    return mod, fmod, adjust


def _float_floordiv(b, x, y):
    """numpy's npy_floor_divide for floats, step by step (exact in the dtype)."""
    zero, one = like(b, 0, x), like(b, 1, x)
    _, fmod, adjust = _float_mod(b, x, y)
    quot = divf(b, x, y)
    div = divf(b, sub(b, x, fmod), y)
    div = select(b, adjust, sub(b, div, one), div)
    fl = b.emit(_math().FloorOp(div))
    fl = select(b, cmp(b, "gt", sub(b, div, fl), like(b, 0.5, x)), add(b, fl, one), fl)
    fl = select(b, cmp(b, "ne", div, zero), fl, b.emit(_math().CopySignOp(zero, quot)))
    return select(b, cmp(b, "eq", y, zero), quot, fl)


def _via_f32(b, fn, x, y):
    """numpy computes float16 divmod in float32 and rounds once; so do we."""
    if b.dtype(x) != dtypes.float16:
        return fn(b, x, y)
    r = fn(b, cast(b, x, dtypes.float32), cast(b, y, dtypes.float32))
    return cast(b, r, dtypes.float16)


def floordiv(b, x, y):
    if b.dtype(x).is_floating:
        return _via_f32(b, _float_floordiv, x, y)
    if _unsigned(b.dtype(x)):  # floor is truncation for unsigned values
        return b.emit(_arith().DivUIOp(x, y))  # numpy gives 0 for a zero divisor; backends must too
    return b.emit(_arith().FloorDivSIOp(x, y))  # numpy gives 0 for a zero divisor; backends must too


def mod(b, x, y):
    if b.dtype(x).is_floating:
        return _via_f32(b, lambda b, x, y: _float_mod(b, x, y)[0], x, y)
    if _unsigned(b.dtype(x)):  # no sign rule: the remainder; 0 for a zero divisor, as numpy
        return b.emit(_arith().RemUIOp(x, y))
    from tfc.dialects.fused import FloorModOp

    return b.emit(FloorModOp(x, y))  # one op: np.mod's sign rule, 0 for a zero divisor


def power(b, x, y):
    m = _math()
    return b.emit(m.PowFOp(x, y) if b.dtype(x).is_floating else m.IPowIOp(x, y))


def identity(b, x, **_attrs):
    return x
