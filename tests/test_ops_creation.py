"""Creation ops against numpy: shapes (including empty and 0-d), every
dtype, default dtypes, and shape arguments given as lists, ints or tensors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tfc
from helpers import ALL_DTYPES, assert_same, random_array

SHAPES = [(), (0,), (3,), (2, 0), (2, 3, 1)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_zeros_ones(shape, dtype):
    assert_same(tfc.zeros(shape, dtype), np.zeros(shape, dtype.as_numpy_dtype), dtype)
    assert_same(tfc.ones(shape, dtype), np.ones(shape, dtype.as_numpy_dtype), dtype)


def test_zeros_ones_defaults_and_shape_forms():
    assert_same(tfc.zeros([2, 3]), np.zeros((2, 3), np.float32))
    assert_same(tfc.ones(4), np.ones(4, np.float32))
    assert_same(tfc.zeros(tfc.constant([2, 1])), np.zeros((2, 1), np.float32))
    assert_same(tfc.ones((np.int64(2),), "int8"), np.ones(2, np.int8))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_zeros_like_ones_like(shape, dtype, rng):
    a = random_array(rng, shape, dtype)
    t = tfc.constant(a)
    assert_same(tfc.zeros_like(t), np.zeros_like(a), dtype)
    assert_same(tfc.ones_like(t), np.ones_like(a), dtype)
    for other in ALL_DTYPES:
        assert_same(tfc.zeros_like(t, dtype=other), np.zeros(shape, other.as_numpy_dtype), other)
        assert_same(tfc.ones_like(t, other), np.ones(shape, other.as_numpy_dtype), other)


def test_like_ops_accept_python_values():
    assert_same(tfc.zeros_like([[1.0, 2.0]]), np.zeros((1, 2), np.float32))
    assert_same(tfc.ones_like(3), np.int32(1))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_fill(shape, dtype, rng):
    v = random_array(rng, (), dtype)
    assert_same(tfc.fill(shape, tfc.constant(v)), np.full(shape, v), dtype)


def test_fill_python_values():
    assert_same(tfc.fill([2, 2], 7), np.full((2, 2), 7, np.int32))
    assert_same(tfc.fill([3], 0.5), np.full(3, 0.5, np.float32))
    assert_same(tfc.fill([2], True), np.full(2, True))


@settings(max_examples=60, deadline=None)
@given(start=st.integers(-20, 20), limit=st.integers(-20, 20),
       delta=st.integers(-5, 5).filter(lambda d: d != 0))
def test_range_ints(start, limit, delta):
    assert_same(tfc.range(start, limit, delta), np.arange(start, limit, delta, dtype=np.int32))


@settings(max_examples=60, deadline=None)
@given(start=st.floats(-10, 10), limit=st.floats(-10, 10),
       delta=st.sampled_from([-1.5, -0.25, 0.1, 0.3, 1.0, 2.5]),
       dtype=st.sampled_from([None, tfc.float32, tfc.float64]))
def test_range_floats(start, limit, delta, dtype):
    want = np.arange(start, limit, delta, dtype=np.float32 if dtype is None else dtype.as_numpy_dtype)
    assert_same(tfc.range(start, limit, delta, dtype=dtype), want)


def test_range_forms():
    assert_same(tfc.range(5), np.arange(5, dtype=np.int32))
    assert_same(tfc.range(0), np.arange(0, dtype=np.int32))
    assert_same(tfc.range(3, dtype=tfc.int64), np.arange(3, dtype=np.int64))
    assert_same(tfc.range(1, 2, 0.25), np.arange(1, 2, 0.25, dtype=np.float32))
    assert_same(tfc.range(5, 0, -2), np.array([5, 3, 1], np.int32))
    assert_same(tfc.range(tfc.constant(4)), np.arange(4, dtype=np.int32))


@settings(max_examples=40, deadline=None)
@given(start=st.floats(-10, 10), stop=st.floats(-10, 10), num=st.integers(0, 12),
       dtype=st.sampled_from([tfc.float16, tfc.float32, tfc.float64]))
def test_linspace(start, stop, num, dtype):
    want = np.linspace(start, stop, num).astype(dtype.as_numpy_dtype)
    got = tfc.linspace(start, stop, num, dtype=dtype)
    assert_same(got, want, dtype)
    if num >= 2:  # both ends exactly
        assert np.asarray(got)[0] == dtype.as_numpy_dtype.type(start)
        assert np.asarray(got)[-1] == dtype.as_numpy_dtype.type(stop)


@pytest.mark.parametrize("rows,cols", [(0, 0), (1, None), (3, None), (2, 4), (4, 2), (3, 0)])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_eye(rows, cols, dtype):
    assert_same(tfc.eye(rows, cols, dtype=dtype), np.eye(rows, cols, dtype=dtype.as_numpy_dtype), dtype)


def test_eye_default_dtype():
    assert_same(tfc.eye(2), np.eye(2, dtype=np.float32))


@settings(max_examples=30, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), dtype=st.sampled_from(ALL_DTYPES))
def test_creation_shapes_random(shape, dtype):
    assert tfc.zeros(shape, dtype).shape == shape
    assert tfc.fill(shape, tfc.ones([], dtype)).shape == shape
    assert tfc.ones_like(tfc.zeros(shape, dtype)).dtype == dtype
