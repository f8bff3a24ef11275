"""matmul (batched, broadcast, transposed) and the shape ops (reshape,
broadcast_to, transpose, expand_dims, squeeze, getitem) against numpy."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tfc
from helpers import ALL_DTYPES, NUMERIC_DTYPES, assert_same, random_array


def _np_matmul(a, b, ta, tb):
    if ta:
        a = np.swapaxes(a, -1, -2)
    if tb:
        b = np.swapaxes(b, -1, -2)
    if a.dtype.kind == "f":  # reference in float64, rounded once
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    return np.matmul(a, b)


@st.composite
def matmul_case(draw):
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, min_side=0, max_side=3))
    m, k, n = (draw(st.integers(0, 4)) for _ in range(3))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    sa = batch.input_shapes[0] + ((k, m) if ta else (m, k))
    sb = batch.input_shapes[1] + ((n, k) if tb else (k, n))
    return sa, sb, ta, tb


@settings(max_examples=60, deadline=None)
@given(case=matmul_case(), dtype=st.sampled_from(ALL_DTYPES), seed=st.integers(0, 2**16))
def test_matmul(case, dtype, seed):
    sa, sb, ta, tb = case
    rng = np.random.default_rng(seed)
    a = random_array(rng, sa, dtype, -3, 3)
    b = random_array(rng, sb, dtype, -3, 3)
    if dtype == tfc.bool:
        with pytest.raises(TypeError, match="matmul"):
            tfc.matmul(tfc.constant(a), tfc.constant(b), transpose_a=ta, transpose_b=tb)
        return
    got = tfc.matmul(tfc.constant(a), tfc.constant(b), transpose_a=ta, transpose_b=tb)
    want = _np_matmul(a, b, ta, tb)
    if dtype == tfc.float16:  # k-term sums rounded in float16
        np.testing.assert_allclose(np.asarray(got, np.float64), want.astype(np.float64), rtol=1e-2, atol=5e-2)
        assert got.dtype == dtype and got.shape == want.shape
    else:
        assert_same(got, want, dtype)


def test_matmul_promotes_and_accepts_lists():
    assert_same(tfc.matmul([[2.0]], [[2.0]]), np.array([[4.0]], np.float32))
    a = tfc.constant([[1, 2]], tfc.int8)
    b = tfc.constant([[1.0], [0.5]], tfc.float64)
    assert_same(tfc.matmul(a, b), np.array([[2.0]], np.float64))
    assert_same(a @ tfc.constant([[3], [4]], tfc.int8), np.array([[11]], np.int8))


# -- shape ops ---------------------------------------------------------------------


@st.composite
def array_and_dtype(draw, min_dims=0, max_dims=4, min_side=0):
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=3))
    dtype = draw(st.sampled_from(ALL_DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    return random_array(rng, shape, dtype), dtype


@settings(max_examples=50, deadline=None)
@given(ad=array_and_dtype(), data=st.data())
def test_reshape(ad, data):
    a, dtype = ad
    # a random factorisation of the size, with some 1s (and a 0 when empty)
    dims, rest = [], a.size
    for _ in range(data.draw(st.integers(0, 3))):
        divs = [d for d in range(1, rest + 1) if rest % d == 0] or [0, 1, 2]
        d = data.draw(st.sampled_from(divs))
        dims.append(d)
        rest = rest // d if d else 0
    if a.size:
        dims.append(rest)
    elif 0 not in dims:
        dims.append(0)
    shape = tuple(data.draw(st.permutations(dims)))
    assert int(np.prod(shape)) == a.size
    assert_same(tfc.reshape(tfc.constant(a), shape), a.reshape(shape), dtype)
    if a.size:
        i = data.draw(st.integers(0, len(shape) - 1))
        with_minus = shape[:i] + (-1,) + shape[i + 1:]
        assert_same(tfc.reshape(tfc.constant(a), with_minus), a.reshape(with_minus), dtype)


def test_reshape_forms():
    a = np.arange(6, dtype=np.float32)
    assert_same(tfc.reshape(a, [2, 3]), a.reshape(2, 3))
    assert_same(tfc.reshape(a, tfc.constant([3, -1])), a.reshape(3, -1))
    assert_same(tfc.reshape(tfc.constant(5.0), []), np.float32(5.0))
    assert_same(tfc.reshape(tfc.constant([5.0]), ()), np.float32(5.0))
    assert_same(tfc.reshape(tfc.zeros([0, 3]), [-1, 3]), np.zeros((0, 3), np.float32))


@settings(max_examples=50, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=1, min_dims=0, max_dims=4, min_side=0, max_side=3),
       dtype=st.sampled_from(ALL_DTYPES), seed=st.integers(0, 2**16))
def test_broadcast_to(shapes, dtype, seed):
    a = random_array(np.random.default_rng(seed), shapes.input_shapes[0], dtype)
    target = shapes.result_shape
    assert_same(tfc.broadcast_to(tfc.constant(a), target), np.broadcast_to(a, target), dtype)


@settings(max_examples=50, deadline=None)
@given(ad=array_and_dtype(), data=st.data())
def test_transpose(ad, data):
    a, dtype = ad
    perm = tuple(data.draw(st.permutations(range(a.ndim))))
    assert_same(tfc.transpose(tfc.constant(a), perm), np.transpose(a, perm), dtype)
    assert_same(tfc.transpose(tfc.constant(a)), np.transpose(a), dtype)


@settings(max_examples=50, deadline=None)
@given(ad=array_and_dtype(), data=st.data())
def test_expand_dims(ad, data):
    a, dtype = ad
    axis = data.draw(st.integers(-a.ndim - 1, a.ndim))
    assert_same(tfc.expand_dims(tfc.constant(a), axis), np.expand_dims(a, axis), dtype)


@settings(max_examples=50, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=2), dtype=st.sampled_from(ALL_DTYPES),
       data=st.data(), seed=st.integers(0, 2**16))
def test_squeeze(shape, dtype, data, seed):
    a = random_array(np.random.default_rng(seed), shape, dtype)
    assert_same(tfc.squeeze(tfc.constant(a)), np.squeeze(a), dtype)
    ones = [i for i, d in enumerate(shape) if d == 1]
    axes = data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    axes = tuple(ax - len(shape) if data.draw(st.booleans()) else ax for ax in axes)
    assert_same(tfc.squeeze(tfc.constant(a), axes), np.squeeze(a, axes), dtype)
    if len(axes) == 1:
        assert_same(tfc.squeeze(tfc.constant(a), axes[0]), np.squeeze(a, axes[0]), dtype)


@st.composite
def basic_index(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    idx = draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    return shape, idx


@settings(max_examples=100, deadline=None)
@given(case=basic_index(), dtype=st.sampled_from(ALL_DTYPES), seed=st.integers(0, 2**16))
def test_getitem(case, dtype, seed):
    shape, idx = case
    a = random_array(np.random.default_rng(seed), shape, dtype)
    t = tfc.constant(a)
    assert_same(t[idx], a[idx], dtype)
    from tfc.ops.shapes import getitem

    assert_same(getitem(t, idx), a[idx], dtype)


def test_getitem_scalar_tensor_index():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    t = tfc.constant(a)
    assert_same(t[tfc.constant(1), tfc.constant(-1, tfc.int64)], a[1, -1])
    assert_same(t[tfc.constant(0):tfc.constant(2)], a[0:2])


def test_matmul_bits_do_not_depend_on_operand_layout():
    """numpy multiplies some broadcast or strided operands with its own loop
    (another summation order than BLAS): eager (views) and compiled
    (contiguous buffers) must still agree to the bit."""
    rng = np.random.default_rng(0)
    w = tfc.constant(rng.normal(size=(1000, 64)).astype(np.float32))
    wt = tfc.constant(rng.normal(size=(64, 1000)).astype(np.float32))
    v = rng.normal(size=(1000,)).astype(np.float32)
    s = np.float32(3.7)

    def f(v, s):  # the layouts numpy does not hand to BLAS (measured: these differ without the copy)
        return (tfc.matmul(tfc.broadcast_to(s, [1, 1000]), w),
                tfc.matmul(tfc.broadcast_to(v, [4, 1000]), wt, transpose_b=True))

    for got, want in zip(tfc.function(f)(v, s), f(tfc.constant(v), tfc.constant(s))):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    ones = tfc.broadcast_to(tfc.constant(s), [1, 1000])
    np.testing.assert_array_equal(tfc.matmul(ones, w).numpy(),
                                  tfc.matmul(tfc.constant(np.full((1, 1000), s)), w).numpy())
