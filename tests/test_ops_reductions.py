"""Reductions against numpy: random shapes and axes (hypothesis), every
accepted dtype, keepdims, empty and 0-d tensors, and the result dtype."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tfc
from helpers import ALL_DTYPES, FLOAT_DTYPES, NUMERIC_DTYPES, assert_same, random_array


def _int_mean(a, axis, keepdims):
    s = np.sum(a, axis=axis, keepdims=keepdims, dtype=np.int64)
    n = a.size // max(1, s.size) if a.size else 1
    return np.trunc(s / max(n, 1)).astype(a.dtype)  # rounds toward zero, as TensorFlow


def _ref(name, a, axis, keepdims):
    dt = a.dtype
    if name == "reduce_sum":
        return np.sum(a, axis=axis, keepdims=keepdims, dtype=dt)
    if name == "reduce_prod":
        return np.prod(a, axis=axis, keepdims=keepdims, dtype=dt)
    if name == "reduce_mean":
        if dt.kind in "iu":
            return _int_mean(a, axis, keepdims)
        with np.errstate(all="ignore"):
            return np.mean(a.astype(np.float64), axis=axis, keepdims=keepdims).astype(dt)
    if name in ("reduce_max", "reduce_min"):
        low = name == "reduce_max"
        ident = (-np.inf if low else np.inf) if dt.kind == "f" else (np.iinfo(dt).min if low else np.iinfo(dt).max)
        fn = np.max if low else np.min
        return fn(a, axis=axis, keepdims=keepdims, initial=ident)
    if name == "reduce_any":
        return np.any(a, axis=axis, keepdims=keepdims)
    if name == "reduce_all":
        return np.all(a, axis=axis, keepdims=keepdims)
    raise AssertionError(name)


REDUCTIONS = {
    "reduce_sum": NUMERIC_DTYPES,
    "reduce_mean": NUMERIC_DTYPES,
    "reduce_prod": NUMERIC_DTYPES,
    "reduce_max": NUMERIC_DTYPES,
    "reduce_min": NUMERIC_DTYPES,
    "reduce_any": (tfc.bool,),
    "reduce_all": (tfc.bool,),
}


@st.composite
def shape_and_axis(draw, min_side=0):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=min_side, max_side=3))
    nd = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or nd == 0:
        return shape, None
    if kind == "int":
        return shape, draw(st.integers(-nd, nd - 1))
    axes = draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd))
    # mix positive and negative spellings of the same axes
    return shape, tuple(a - nd if draw(st.booleans()) else a for a in axes)


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@settings(max_examples=40, deadline=None)
@given(sa=shape_and_axis(), dtype=st.sampled_from(ALL_DTYPES), keepdims=st.booleans(),
       seed=st.integers(0, 2**16))
def test_reduction(name, sa, dtype, keepdims, seed):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    lo, hi = (0.5, 1.5) if name == "reduce_prod" else (-5, 5)
    a = random_array(rng, shape, dtype, lo, hi)
    op = getattr(tfc, name)
    if dtype not in REDUCTIONS[name]:
        with pytest.raises(TypeError, match=name):
            op(tfc.constant(a), axis=axis, keepdims=keepdims)
        return
    assert_same(op(tfc.constant(a), axis=axis, keepdims=keepdims), _ref(name, a, axis, keepdims), dtype)


def test_reduction_axis_forms():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = tfc.constant(a)
    assert_same(tfc.reduce_sum(t, axis=[0, 2]), a.sum(axis=(0, 2)))
    assert_same(tfc.reduce_sum(t, axis=tfc.constant([0, -1])), a.sum(axis=(0, 2)))
    assert_same(tfc.reduce_sum(t, axis=np.int64(1)), a.sum(axis=1))
    assert_same(tfc.reduce_sum(t, axis=()), a)
    assert_same(tfc.reduce_sum(t, keepdims=True), a.sum(keepdims=True))


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
def test_empty_reductions():
    z = tfc.zeros([2, 0])
    assert_same(tfc.reduce_sum(z, axis=1), np.zeros(2, np.float32))
    assert_same(tfc.reduce_prod(z, axis=1), np.ones(2, np.float32))
    assert_same(tfc.reduce_max(z, axis=1), np.full(2, -np.inf, np.float32))
    assert_same(tfc.reduce_min(z), np.float32(np.inf))
    assert_same(tfc.reduce_max(tfc.zeros([0], tfc.int8)), np.int8(-128))
    assert_same(tfc.reduce_any(tfc.zeros([0], tfc.bool)), np.bool_(False))
    assert_same(tfc.reduce_all(tfc.zeros([0], tfc.bool)), np.bool_(True))
    assert np.isnan(float(tfc.reduce_mean(tfc.zeros([0]))))


def test_integer_mean_rounds_toward_zero():
    assert_same(tfc.reduce_mean(tfc.constant([-3, 2])), np.int32(0))
    assert_same(tfc.reduce_mean(tfc.constant([[-7, 0], [7, 0]]), axis=1), np.array([-3, 3], np.int32))
    assert_same(tfc.reduce_mean(tfc.constant([100, 100], tfc.int8)), np.int8(100))  # no int8 overflow


def test_max_min_nan_propagates():
    t = tfc.constant([1.0, np.nan, 3.0])
    assert np.isnan(float(tfc.reduce_max(t)))
    assert np.isnan(float(tfc.reduce_min(t)))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@settings(max_examples=40, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4), dtype=st.sampled_from(ALL_DTYPES),
       data=st.data(), seed=st.integers(0, 2**16))
def test_argmax_argmin(name, shape, dtype, data, seed):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    out_type = data.draw(st.sampled_from([tfc.int32, tfc.int64]))
    rng = np.random.default_rng(seed)
    a = random_array(rng, shape, dtype, -3, 3)  # small range: ties are common, first one wins
    op = getattr(tfc, name)
    if dtype == tfc.bool:
        with pytest.raises(TypeError, match=name):
            op(tfc.constant(a), axis=axis)
        return
    expected = getattr(np, name)(a, axis=axis)
    assert_same(op(tfc.constant(a), axis=axis, output_type=out_type), expected, out_type)
    assert op(tfc.constant(a), axis=axis).dtype == tfc.int64  # the default, as TensorFlow


def test_argmax_default_axis_is_zero():
    a = np.array([[1, 9], [5, 2]], np.float32)
    assert_same(tfc.argmax(tfc.constant(a)), np.array([1, 0], np.int64))
    assert_same(tfc.argmin(tfc.constant(a)), np.array([0, 1], np.int64))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_sum_of_0d(dtype):
    t = tfc.constant(np.array(2.5, dtype.as_numpy_dtype))
    for name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"):
        assert_same(getattr(tfc, name)(t), np.array(2.5, dtype.as_numpy_dtype))


def test_float_sum_order_independent_of_layout_and_axis_spelling():
    """numpy sums in memory order and sums axis=None differently from an
    all-axes tuple; tfc spells every reduction one way so eager and compiled
    results are bit-identical (a strided or broadcast input must not matter)."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        a = np.exp(rng.standard_normal((3, 4)).astype(np.float32) * 3)
        contiguous = tfc.constant(np.ascontiguousarray(np.broadcast_to(a, (2, 3, 4))))
        strided = tfc.exp(tfc.log(tfc.transpose(tfc.constant(np.broadcast_to(a, (2, 3, 4)).T.copy()))))
        want = tfc.reduce_sum(contiguous).numpy()
        assert tfc.reduce_sum(contiguous, axis=(0, 1, 2)).numpy() == want
        assert tfc.reduce_sum(contiguous, axis=(-1, 0, 1)).numpy() == want
        s = strided.numpy()
        assert tfc.reduce_sum(tfc.constant(s)).numpy() == np.sum(np.ascontiguousarray(s), dtype=np.float32)


def test_compiled_sum_of_broadcast_chain_equals_eager():
    def f(x):
        y = tfc.sigmoid(tfc.broadcast_to(x, (2, 3, 4)))
        return tfc.reduce_sum(tfc.exp(y))

    compiled = tfc.function(f)
    rng = np.random.default_rng(0)
    for _ in range(100):
        x = tfc.constant(rng.standard_normal((3, 4)).astype(np.float32) * 3)
        assert compiled(x).numpy() == f(x).numpy()


def test_argmax_argmin_axis_none_index_the_flattened_input():
    x = np.array([[3.0, 9.0, 1.0], [9.5, -2.0, 4.0]], np.float32)
    for fn, ref in ((tfc.argmax, np.argmax), (tfc.argmin, np.argmin)):
        assert fn(tfc.constant(x), axis=None).numpy() == ref(x)
        assert tfc.function(lambda t: fn(t, axis=None))(tfc.constant(x)).numpy() == ref(x)
        with pytest.raises(TypeError, match="axis must be None or an int"):
            fn(tfc.constant(x), axis=(0, 1))
