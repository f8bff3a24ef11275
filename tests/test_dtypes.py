"""Dtype promotion: tensor/tensor pairs follow numpy.promote_types, ops
promote accordingly, Python scalars are weak; docs/dtypes.md shows the current
promotion table (regenerate it with ``python tests/test_dtypes.py``)."""
import itertools
import pathlib
import re

import numpy as np
import pytest

import tfc
from tfc.core import dtypes
from helpers import ALL_DTYPES, assert_same

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "dtypes.md"
_BLOCK = re.compile(r"(<!-- promotion-table:[^\n]*-->\n)(.*?)(\n<!-- end promotion-table -->)", re.S)

DTYPES = dtypes.ALL  # ALL_DTYPES and uint8
assert set(ALL_DTYPES) < set(DTYPES)
PAIRS = list(itertools.product(DTYPES, DTYPES))


def _ids(pair):
    return f"{pair[0].name}-{pair[1].name}"


def test_dtype_objects():
    for d in DTYPES:
        assert tfc.as_dtype(d.name) is d
        assert tfc.as_dtype(d.as_numpy_dtype) is d
        assert tfc.as_dtype(d.as_numpy_dtype.type) is d
        assert repr(d) == f"tfc.{d.name}"
    assert tfc.as_dtype(float) is tfc.float32 and tfc.as_dtype(int) is tfc.int32 and tfc.as_dtype(bool) is tfc.bool
    assert tfc.float16.is_floating and tfc.int8.is_integer and tfc.bool.is_bool and not tfc.bool.is_numeric
    assert tfc.uint8.is_integer and tfc.uint8.ir_name == "ui8" and tfc.uint8.itemsize == 1
    with pytest.raises(TypeError, match="unsupported dtype.*uint8"):  # names the supported ones
        tfc.as_dtype(np.uint16)


def _numpy_promote(a, b):
    """numpy's promotion, but uint8 with int8 (int16 in numpy, no tfc dtype) is int32."""
    want = np.promote_types(a.as_numpy_dtype, b.as_numpy_dtype)
    return np.dtype(np.int32) if want == np.int16 else want


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_promote_matches_numpy(pair):
    a, b = pair
    assert dtypes.promote(a, b).as_numpy_dtype == _numpy_promote(a, b)
    assert dtypes.promote(a, b) == dtypes.promote(b, a)


def _vals(dtype):
    return np.array([[1, 0, 2]], dtype.as_numpy_dtype), np.array([[2], [1]], dtype.as_numpy_dtype)


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_binary_ops_promote(pair):
    a, b = pair
    x, y = _vals(a)[0], _vals(b)[1]
    tx, ty = tfc.constant(x), tfc.constant(y)
    common = dtypes.promote(a, b)
    for name, fn in [("add", np.add), ("multiply", np.multiply), ("maximum", np.maximum),
                     ("subtract", np.subtract)]:
        if common == tfc.bool:  # arithmetic on bools is refused, whatever numpy does
            with pytest.raises(TypeError, match=name):
                getattr(tfc, name)(tx, ty)
            continue
        assert_same(getattr(tfc, name)(tx, ty), fn(x, y), common)
    assert_same(tfc.equal(tx, ty), np.equal(x, y), tfc.bool)
    if common != tfc.bool:
        assert_same(tfc.less(tx, ty), np.less(x, y), tfc.bool)
        assert_same(tfc.divide(tx, ty), np.true_divide(x, y))
        assert_same(tx * ty, x * y, common)  # operators promote the same way
        assert_same(tfc.matmul(tfc.constant(x.T), tfc.constant(y.T)), np.matmul(x.T, y.T), common)
    assert_same(tfc.where(tfc.constant([True, False, True]), tx, ty), np.where([True, False, True], x, y), common)


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_clip_promotes(pair):
    a, b = pair
    common = dtypes.promote(a, b)
    t = tfc.constant(np.array([0, 1, 2], a.as_numpy_dtype))
    lo = tfc.constant(np.array(1, b.as_numpy_dtype))
    if common == tfc.bool:
        with pytest.raises(TypeError, match="clip_by_value"):
            tfc.clip_by_value(t, lo, lo)
        return
    assert_same(tfc.clip_by_value(t, lo, lo), np.ones(3, common.as_numpy_dtype), common)


# -- Python scalars are weak ------------------------------------------------------------


@pytest.mark.parametrize("dtype", [tfc.float16, tfc.float32, tfc.float64], ids=lambda d: d.name)
def test_python_float_keeps_float_dtype(dtype):
    t = tfc.constant([1.0, 2.0], dtype)
    for r in (t * 2.0, 2.0 * t, t + 1, t - 0.5, t / 3.0, t ** 2.0, tfc.maximum(t, 1.5), tfc.multiply(2, t)):
        assert r.dtype == dtype


@pytest.mark.parametrize("dtype", [tfc.int8, tfc.uint8, tfc.int32, tfc.int64], ids=lambda d: d.name)
def test_python_int_keeps_int_dtype(dtype):
    t = tfc.constant([1, 2], dtype)
    for r in (t * 2, 2 + t, t - 1, t // 2, t % 2, t ** 2, tfc.maximum(t, 1), tfc.where([True, False], t, 0)):
        assert r.dtype == dtype
    assert (t == 1).dtype == tfc.bool


@pytest.mark.parametrize("dtype", [tfc.int8, tfc.uint8, tfc.int32, tfc.int64, tfc.bool], ids=lambda d: d.name)
def test_python_float_with_int_tensor_follows_numpy(dtype):
    a = np.array([1, 0], dtype.as_numpy_dtype)
    want = a * 2.5  # numpy 2: float64
    assert_same(tfc.constant(a) * 2.5, want, tfc.float64)
    assert_same(tfc.multiply(2.5, tfc.constant(a)), want, tfc.float64)
    assert_same(tfc.add(tfc.constant(a), 0.5), a + 0.5, tfc.float64)


def test_python_int_with_bool_tensor():
    assert_same(tfc.add(tfc.constant([True, False]), 2), np.array([True, False]) + 2, tfc.int64)


@pytest.mark.parametrize("dtype,value", [(tfc.int8, 1000), (tfc.int8, -129), (tfc.uint8, 256), (tfc.uint8, -1),
                                         (tfc.int32, 2**31),
                                         (tfc.int64, 2**63)])
def test_python_int_out_of_range_raises(dtype, value):
    t = tfc.constant([1], dtype)
    with pytest.raises(ValueError, match=rf"add: Python value {value} does not fit in {dtype.name}"):
        t + value
    with pytest.raises(ValueError, match="multiply"):
        tfc.multiply(value, t)


def test_int8_boundaries_fit():
    t = tfc.constant([0], tfc.int8)
    assert_same(t + 127, np.array([127], np.int8))
    assert_same(t + (-128), np.array([-128], np.int8))
    assert_same(t - 127, np.array([-127], np.int8))


def test_uint8_boundaries_fit_and_wrap():
    t = tfc.constant([0, 200], tfc.uint8)
    assert_same(t + 255, np.array([255, 199], np.uint8))  # wraps like numpy
    assert_same(t - 1, np.array([255, 199], np.uint8))
    assert_same(-t, np.array([0, 56], np.uint8))


def test_only_python_numbers_use_defaults():
    assert tfc.add(2, 3).dtype == tfc.int32
    assert tfc.add(2, 3.5).dtype == tfc.float32
    assert tfc.add(2.0, 3.0).dtype == tfc.float32
    assert tfc.add(2**40, 1).dtype == tfc.int64
    assert tfc.equal(True, False).dtype == tfc.bool


def test_numpy_scalars_are_strong():
    t = tfc.constant([1.0], tfc.float32)
    with pytest.warns(tfc.errors.PrecisionWarning):  # float32 widened by a numpy float64 scalar
        assert (t * np.float64(2)).dtype == tfc.float64
    assert (tfc.constant([1], tfc.int8) + np.int32(1)).dtype == tfc.int32


# -- docs/dtypes.md ---------------------------------------------------------------------


def render_doc(text: str) -> str:
    """``text`` with its promotion-table block replaced by the current table."""
    if not _BLOCK.search(text):
        raise ValueError("docs/dtypes.md has no promotion-table block")
    return _BLOCK.sub(lambda m: m.group(1) + dtypes.promotion_table() + m.group(3), text, count=1)


def test_doc_has_current_promotion_table():
    text = DOC.read_text()
    m = _BLOCK.search(text)
    assert m, "docs/dtypes.md lost its promotion-table markers"
    assert m.group(2) == dtypes.promotion_table(), \
        "docs/dtypes.md is stale: run `PYTHONPATH=. python tests/test_dtypes.py` to regenerate it"


def test_promotion_table_cells_match_numpy():
    rows = dtypes.promotion_table().splitlines()[2:]
    for a, row in zip(DTYPES, rows, strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0] == f"**{a.name}**"
        assert cells[1:] == [_numpy_promote(a, b).name for b in DTYPES]


def test_uint8_with_int8_is_int32():
    u = tfc.constant(np.array([255, 0], np.uint8))
    i = tfc.constant(np.array([-128, 127], np.int8))
    assert_same(u + i, np.array([127, 127], np.int32), tfc.int32)  # not wrapped: int32 holds both ranges
    assert_same(tfc.maximum(u, i), np.array([255, 127], np.int32), tfc.int32)
    assert_same(u + i + 1, np.array([128, 128], np.int32), tfc.int32)  # a weak scalar with the pair


if __name__ == "__main__":
    DOC.write_text(render_doc(DOC.read_text()))
    print(f"wrote {DOC}")
