"""Elementwise math ops against numpy: every accepted dtype, broadcasting
shapes (hypothesis), empty and 0-d tensors, and the result dtype."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tfc
from helpers import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, NUMERIC_DTYPES, assert_same, random_array

SHAPES = [(), (0,), (3,), (2, 3), (2, 0, 3), (1, 4, 2)]


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(x))


# name -> (numpy reference, dtypes accepted, (low, high) input range)
UNARY = {
    "negative": (np.negative, NUMERIC_DTYPES, (-5, 5)),
    "abs": (np.abs, NUMERIC_DTYPES, (-5, 5)),
    "sign": (np.sign, NUMERIC_DTYPES, (-5, 5)),
    "square": (np.square, NUMERIC_DTYPES, (-5, 5)),
    "relu": (lambda x: np.maximum(x, 0).astype(x.dtype), NUMERIC_DTYPES, (-5, 5)),
    "exp": (np.exp, FLOAT_DTYPES, (-5, 5)),
    "log": (np.log, FLOAT_DTYPES, (0.1, 5)),
    "log1p": (np.log1p, FLOAT_DTYPES, (-0.9, 5)),
    "expm1": (np.expm1, FLOAT_DTYPES, (-5, 5)),
    "sqrt": (np.sqrt, FLOAT_DTYPES, (0, 5)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), FLOAT_DTYPES, (0.1, 5)),
    "sin": (np.sin, FLOAT_DTYPES, (-5, 5)),
    "cos": (np.cos, FLOAT_DTYPES, (-5, 5)),
    "tanh": (np.tanh, FLOAT_DTYPES, (-5, 5)),
    "sigmoid": (_sigmoid, FLOAT_DTYPES, (-5, 5)),
    "softplus": (_softplus, FLOAT_DTYPES, (-5, 5)),
    "round": (np.round, FLOAT_DTYPES, (-5, 5)),
    "floor": (np.floor, FLOAT_DTYPES, (-5, 5)),
    "ceil": (np.ceil, FLOAT_DTYPES, (-5, 5)),
    "identity": (lambda x: x, ALL_DTYPES, (-5, 5)),
}


def _reference(fn, a):
    """numpy's result in the input's dtype; floats computed in float64 first."""
    if a.dtype.kind == "f":
        return fn(a.astype(np.float64)).astype(a.dtype)
    return fn(a)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype, shape, rng):
    fn, allowed, (lo, hi) = UNARY[name]
    op = getattr(tfc, name)
    a = random_array(rng, shape, dtype, lo, hi)
    if dtype not in allowed:
        with pytest.raises(TypeError, match=name):
            op(tfc.constant(a))
        return
    assert_same(op(tfc.constant(a)), _reference(fn, a), dtype)


def test_unary_special_values():
    x = tfc.constant([0.0, -1.0, np.inf, -np.inf, np.nan])
    with np.errstate(all="ignore"):
        expect = np.log(np.array([0.0, -1.0, np.inf, -np.inf, np.nan], np.float32))
    assert_same(tfc.log(x), expect)
    # the stable kernels do not overflow at the extremes
    big = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
    assert_same(tfc.sigmoid(tfc.constant(big)), _sigmoid(np.clip(big, -700, 700)))
    assert_same(tfc.softplus(tfc.constant(big)), np.maximum(big, 0) + np.log1p(np.exp(-np.abs(big))))
    assert np.all(np.isfinite(np.asarray(tfc.softplus(tfc.constant(big, tfc.float32)))))


# name -> (numpy reference, dtypes accepted, nonzero second operand)
BINARY = {
    "add": (np.add, NUMERIC_DTYPES, False),
    "subtract": (np.subtract, NUMERIC_DTYPES, False),
    "multiply": (np.multiply, NUMERIC_DTYPES, False),
    "divide": (np.true_divide, NUMERIC_DTYPES, True),
    "floordiv": (np.floor_divide, NUMERIC_DTYPES, True),
    "mod": (np.mod, NUMERIC_DTYPES, True),
    "pow": (np.power, NUMERIC_DTYPES, False),
    "maximum": (np.maximum, NUMERIC_DTYPES, False),
    "minimum": (np.minimum, NUMERIC_DTYPES, False),
    "equal": (np.equal, ALL_DTYPES, False),
    "not_equal": (np.not_equal, ALL_DTYPES, False),
    "less": (np.less, NUMERIC_DTYPES, False),
    "less_equal": (np.less_equal, NUMERIC_DTYPES, False),
    "greater": (np.greater, NUMERIC_DTYPES, False),
    "greater_equal": (np.greater_equal, NUMERIC_DTYPES, False),
    "logical_and": (np.logical_and, (tfc.bool,), False),
    "logical_or": (np.logical_or, (tfc.bool,), False),
}


def _binary_inputs(name, dtype, shapes, seed):
    rng = np.random.default_rng(seed)
    if name == "pow":  # positive bases; small exponents (non-negative for ints)
        a = random_array(rng, shapes[0], dtype, 0.5, 3)
        b = random_array(rng, shapes[1], dtype, 0, 3) if dtype in INT_DTYPES \
            else random_array(rng, shapes[1], dtype, -2, 2)
        return a, b
    a = random_array(rng, shapes[0], dtype)
    b = random_array(rng, shapes[1], dtype)
    if BINARY[name][2] and dtype in INT_DTYPES:
        b = np.where(b == 0, 1, b).astype(b.dtype)
    if BINARY[name][2] and dtype in FLOAT_DTYPES:
        b = np.where(np.abs(b) < 0.25, 1, b).astype(b.dtype)
    return a, b


def _expected_binary(name, a, b):
    fn = BINARY[name][0]
    out = fn(a, b)
    if a.dtype.kind == "f" and out.dtype.kind == "f" and name not in ("floordiv", "mod"):
        # float reference in float64, rounded once to the result dtype
        out = fn(a.astype(np.float64), b.astype(np.float64)).astype(out.dtype)
    return np.asarray(out)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=30, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=3),
       dtype=st.sampled_from(ALL_DTYPES), seed=st.integers(0, 2**16))
def test_binary_broadcast(name, shapes, dtype, seed):
    fn, allowed, _ = BINARY[name]
    op = getattr(tfc, name)
    a, b = _binary_inputs(name, dtype, shapes.input_shapes, seed)
    if dtype not in allowed:
        with pytest.raises(TypeError, match=name):
            op(tfc.constant(a), tfc.constant(b))
        return
    expected = _expected_binary(name, a, b)
    assert expected.shape == shapes.result_shape
    assert_same(op(tfc.constant(a), tfc.constant(b)), expected)


@pytest.mark.parametrize("name", ["floordiv", "mod"])
def test_floordiv_mod_signs(name):
    # floor semantics (Python's and TensorFlow's), not C truncation
    a = np.array([7, -7, 7, -7], np.int32)
    b = np.array([2, 2, -2, -2], np.int32)
    fn = BINARY[name][0]
    assert_same(getattr(tfc, name)(tfc.constant(a), tfc.constant(b)), fn(a, b))
    assert_same(getattr(tfc, name)(tfc.constant(a.astype(np.float32)), tfc.constant(b.astype(np.float32))),
                fn(a.astype(np.float32), b.astype(np.float32)))


def test_divide_ints_gives_float64_and_by_zero_is_inf():
    out = tfc.divide(tfc.constant([1, -1, 0]), tfc.constant([0, 0, 0]))
    with np.errstate(all="ignore"):
        assert_same(out, np.array([1, -1, 0]) / np.array([0, 0, 0]))


def test_maximum_minimum_nan():
    x = tfc.constant([np.nan, 1.0])
    y = tfc.constant([0.0, np.nan])
    assert np.isnan(np.asarray(tfc.maximum(x, y))).all()
    assert np.isnan(np.asarray(tfc.minimum(x, y))).all()


@pytest.mark.parametrize("shape", [(), (0,), (4,), (2, 3)])
def test_logical_not(shape, rng):
    a = random_array(rng, shape, tfc.bool)
    assert_same(tfc.logical_not(tfc.constant(a)), np.logical_not(a))


@settings(max_examples=25, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, min_side=0, max_side=3),
       dtype=st.sampled_from(ALL_DTYPES), seed=st.integers(0, 2**16))
def test_where(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    c = random_array(rng, shapes.input_shapes[0], tfc.bool)
    x = random_array(rng, shapes.input_shapes[1], dtype)
    y = random_array(rng, shapes.input_shapes[2], dtype)
    assert_same(tfc.where(tfc.constant(c), tfc.constant(x), tfc.constant(y)), np.where(c, x, y))


def test_where_promotes_branches():
    out = tfc.where(tfc.constant([True, False]), tfc.constant([1, 2], tfc.int8), tfc.constant([0.5, 1.5]))
    assert_same(out, np.array([1, 1.5], np.float32))


@pytest.mark.parametrize("src", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("dst", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (0,), (2, 3)])
def test_cast(src, dst, shape, rng):
    a = random_array(rng, shape, src, -100, 100)
    with np.errstate(all="ignore"):
        expected = a.astype(dst.as_numpy_dtype)
    assert_same(tfc.cast(tfc.constant(a), dst), expected, dst)
    assert_same(tfc.cast(tfc.constant(a), dst.name), expected, dst)


def test_cast_truncates_toward_zero():
    assert_same(tfc.cast(tfc.constant([1.7, -1.7, 2.5]), tfc.int32), np.array([1, -1, 2], np.int32))


@settings(max_examples=25, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, min_side=0, max_side=3),
       dtype=st.sampled_from(NUMERIC_DTYPES), seed=st.integers(0, 2**16))
def test_clip_by_value(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    t = random_array(rng, shapes.input_shapes[0], dtype)
    lo = random_array(rng, shapes.input_shapes[1], dtype, -5, 0)
    hi = random_array(rng, shapes.input_shapes[2], dtype, 0, 5)
    assert_same(tfc.clip_by_value(tfc.constant(t), tfc.constant(lo), tfc.constant(hi)),
                np.minimum(np.maximum(t, lo), hi))


def test_clip_by_value_python_bounds():
    t = tfc.constant([1, 5, 9], tfc.int8)
    assert_same(tfc.clip_by_value(t, 2, 7), np.array([2, 5, 7], np.int8))
    t = tfc.constant([-1.0, 0.5, 3.0])
    assert_same(tfc.clip_by_value(t, 0.0, 1.0), np.array([0.0, 0.5, 1.0], np.float32))


def test_int_overflow_wraps_like_numpy():
    a = np.array([100, -100, 127], np.int8)
    assert_same(tfc.add(tfc.constant(a), tfc.constant(a)), a + a)
    assert_same(tfc.multiply(tfc.constant(a), tfc.constant(a)), a * a)
    assert_same(tfc.abs(tfc.constant(np.array([-128], np.int8))), np.abs(np.array([-128], np.int8)))


def test_pow_negative_int_exponent_is_an_error():
    with pytest.raises(ValueError, match="pow"):
        tfc.pow(tfc.constant([2, 3]), tfc.constant([1, -1]))


def test_python_scalars_in_binary_ops():
    assert_same(tfc.add(2, 3), np.int32(5))
    assert_same(tfc.add(2, 3.5), np.float32(5.5))
    assert_same(tfc.multiply([1.0, 2.0], 3), np.array([3.0, 6.0], np.float32))
    assert_same(tfc.maximum(tfc.constant([1, 5], tfc.int64), 3), np.array([3, 5], np.int64))
