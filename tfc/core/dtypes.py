"""tfc dtypes: a thin, hashable wrapper over the numpy dtypes tfc supports.

Promotion follows NumPy 2 (NEP 50), so eager kernels need no casts:
tensor/tensor pairs use ``numpy.promote_types`` (the one pair whose numpy result
is not a tfc dtype, uint8 with int8 -> int16, is rounded up to int32, the
narrowest tfc dtype that holds both ranges); Python scalars are *weak* and
take the kind of the tensor they meet. A Python value converted on its own
becomes float32 (floats) or int32 (ints), as in TensorFlow.
"""
from __future__ import annotations

import numpy as np


class DType:
    """A tensor element type. Compare with ``==``; ``.as_numpy_dtype`` gives numpy's."""

    __slots__ = ("name", "as_numpy_dtype", "ir_name")

    def __init__(self, name: str, np_dtype, ir_name: str):
        self.name = name
        self.as_numpy_dtype = np.dtype(np_dtype)
        self.ir_name = ir_name  # element type spelling in the IR (f32, i32, i1, ...)

    @property
    def is_floating(self) -> bool:
        return self.as_numpy_dtype.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.as_numpy_dtype.kind in "iu"

    @property
    def is_bool(self) -> bool:
        return self.as_numpy_dtype.kind == "b"

    @property
    def is_numeric(self) -> bool:
        return not self.is_bool

    @property
    def itemsize(self) -> int:
        return self.as_numpy_dtype.itemsize

    def __repr__(self) -> str:
        return f"tfc.{self.name}"

    def __reduce__(self):
        return (as_dtype, (self.name,))


float16 = DType("float16", np.float16, "f16")
float32 = DType("float32", np.float32, "f32")
float64 = DType("float64", np.float64, "f64")
int8 = DType("int8", np.int8, "i8")
uint8 = DType("uint8", np.uint8, "ui8")
int32 = DType("int32", np.int32, "i32")
int64 = DType("int64", np.int64, "i64")
bool_ = DType("bool", np.bool_, "i1")

ALL = (float16, float32, float64, int8, uint8, int32, int64, bool_)
FLOATS = frozenset(d for d in ALL if d.is_floating)
INTS = frozenset(d for d in ALL if d.is_integer)
NUMERIC = FLOATS | INTS
ANY = frozenset(ALL)

_BY_NUMPY = {d.as_numpy_dtype: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"bool_": bool_, "half": float16, "float": float32, "double": float64})
_BY_IR = {d.ir_name: d for d in ALL}


class PrecisionWarning(UserWarning):
    """An op's result is wider than its tensors because of a numpy scalar
    (``float32 tensor * np.sqrt(2.0)`` is float64 under NumPy 2's promotion):
    issued once per user line, naming the op and the line."""


def from_numpy(np_dtype) -> DType:
    """The tfc dtype of a numpy dtype; TypeError naming the supported ones otherwise."""
    try:
        return _BY_NUMPY[np_dtype]
    except (KeyError, TypeError):
        pass
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"unsupported dtype {np_dtype!r}; tfc supports "
            + ", ".join(d.name for d in ALL)
        ) from None


def from_ir_name(name: str) -> DType:
    try:
        return _BY_IR[name]
    except KeyError:
        raise TypeError(f"no tfc dtype for IR element type {name!r}") from None


# what bfloat16 needs before it can be a dtype (docs/dtypes.md, "bfloat16")
BFLOAT16_MISSING = ("bfloat16 is not a tfc dtype yet: it needs a DType stored as uint16 bits (numpy has "
                    "no bfloat16) with round-to-nearest-even conversions from float32, eager kernels that "
                    "compute in float32 and round each result, the IR element type bf16 through every stage, "
                    "and the GPU's .bf16 mma; see docs/dtypes.md")


def as_dtype(value) -> DType:
    """Accepts a DType, its name, a numpy dtype or a numpy scalar type."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in ("bfloat16", "bf16"):
        raise NotImplementedError(BFLOAT16_MISSING)
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is bool:
        return bool_
    if value is float:
        return float32
    if value is int:
        return int32
    return from_numpy(value)


# numpy results that are not tfc dtypes, rounded up to the narrowest tfc dtype
# holding the same values: uint8 with int8 is int16 in numpy (TensorFlow refuses
# the pair); tfc has no int16, and int32 holds [-128, 255] as int16 does
_ROUNDED_UP = {np.dtype(np.int16): np.dtype(np.int32)}


def result_numpy_dtype(*args) -> np.dtype:
    """``numpy.result_type`` of numpy dtypes and (weak) Python scalars, with a
    result tfc has no dtype for rounded up as ``promote`` does."""
    rt = np.result_type(*args)
    return _ROUNDED_UP.get(rt, rt)


def promote(*dtypes: DType) -> DType:
    """NumPy's promotion of strong (tensor) dtypes (uint8 with int8: int32)."""
    return from_numpy(result_numpy_dtype(*(d.as_numpy_dtype for d in dtypes)))


def converts_implicitly(src: DType, dst: DType) -> bool:
    """Whether an array of dtype ``src`` converts to ``dst`` without an explicit
    cast: TensorFlow's rule for Python values (``IsCompatible`` in
    pywrap_tensor.cc): ints to any int, ints and floats to any float; never a
    float to an int, nor a bool to or from a number."""
    return src == dst or (dst.is_integer and src.is_integer) or (dst.is_floating and src.is_numeric)


def default_dtype_of(value) -> DType:
    """dtype of a Python value converted on its own (TensorFlow defaults)."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (np.generic, np.ndarray)):
        return from_numpy(value.dtype)
    if isinstance(value, int):
        return int32 if -(2**31) <= value < 2**31 else int64
    if isinstance(value, float):
        return float32
    raise TypeError(f"cannot convert {type(value).__name__} to a tensor dtype")


def promotion_table() -> str:
    """The promotion table as markdown (docs/dtypes.md is generated from this)."""
    head = "| | " + " | ".join(d.name for d in ALL) + " |"
    rule = "|---" * (len(ALL) + 1) + "|"
    rows = [
        f"| **{a.name}** | " + " | ".join(promote(a, b).name for b in ALL) + " |"
        for a in ALL
    ]
    return "\n".join([head, rule, *rows])
