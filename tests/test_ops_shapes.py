"""concat, stack, unstack, split, tile, gather, pad, one_hot, unsorted_segment_sum,
array indexing and tensordot against numpy; gradients against finite differences."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tfc
from tfc.ops.shapes import unsorted_segment_sum
from helpers import check_grad, check_second_grad

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.float16, np.int8]


def rand(rng, shape, dtype=np.float64):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) > 0.5
    return rng.integers(-50, 50, shape).astype(dtype)


def same(t, expected):
    assert isinstance(t, tfc.Tensor)
    expected = np.asarray(expected)
    assert t.dtype == tfc.as_dtype(expected.dtype), (t.dtype, expected.dtype)
    assert t.shape == expected.shape
    np.testing.assert_array_equal(t.numpy(), expected)


def raises(exc, op_name, fn):
    with pytest.raises(exc) as info:
        fn()
    assert op_name in str(info.value), str(info.value)


# -- concat / stack / unstack / split --------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + [np.bool_])
def test_concat_dtypes(rng, dtype):
    xs = [rand(rng, (2, n, 3), dtype) for n in (1, 0, 4)]
    for axis in (1, -2):
        same(tfc.concat([tfc.constant(x) for x in xs], axis), np.concatenate(xs, axis))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_concat_stack_hypothesis(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4))
    n = data.draw(st.integers(1, 4))
    xs = [data.draw(hnp.arrays(np.float32, shape, elements=st.floats(-10, 10, width=32))) for _ in range(n)]
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    same(tfc.concat(xs, axis), np.concatenate(xs, axis))
    saxis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    same(tfc.stack(xs, saxis), np.stack(xs, saxis))
    parts = tfc.unstack(np.stack(xs, saxis), axis=saxis)
    assert len(parts) == n
    for p, x in zip(parts, xs):
        same(p, x)


def test_stack_scalars_and_python_values():
    same(tfc.stack([tfc.constant(1.0), tfc.constant(2.0)]), np.array([1, 2], np.float32))
    same(tfc.stack([[1, 2], [3, 4]], axis=1), np.array([[1, 3], [2, 4]], np.int32))


def test_unstack_num_and_empty(rng):
    x = rand(rng, (3, 0, 2))
    assert tfc.unstack(x, axis=1) == []
    parts = tfc.unstack(x, num=3)
    assert [p.shape for p in parts] == [(0, 2)] * 3
    one = tfc.unstack(np.array([5.0]))
    assert len(one) == 1 and one[0].shape == ()


@pytest.mark.parametrize("dtype", DTYPES)
def test_split(rng, dtype):
    x = rand(rng, (4, 6), dtype)
    for got, want in zip(tfc.split(x, 3, axis=1), np.split(x, 3, axis=1)):
        same(got, want)
    for got, want in zip(tfc.split(x, [1, -1, 0], axis=0), np.split(x, [1, 4], axis=0)):
        same(got, want)
    for got, want in zip(tfc.split(x, [2, 1, 3], axis=-1), np.split(x, [2, 3], axis=1)):
        same(got, want)


def test_concat_grad(rng):
    check_grad(lambda a, b: tfc.concat([a, b], 1) * tfc.concat([b, a], 1), rng.random((2, 3)), rng.random((2, 3)))
    check_grad(lambda a, b: tfc.concat([a, b, a], 0), rng.random((1, 3)), rng.random((2, 3)))


def test_stack_unstack_split_grad(rng):
    w = rng.random((2, 2, 4))
    check_grad(lambda a, b: tfc.stack([a, b], axis=1) * w, rng.random((2, 4)), rng.random((2, 4)))
    # only some outputs used: unused ones get zero gradient
    check_grad(lambda x: tfc.unstack(x, axis=1)[2] * 3.0, rng.random((2, 4)))
    check_grad(lambda x: tfc.unstack(x)[0] * tfc.unstack(x)[1], rng.random((2, 3)))
    check_grad(lambda x: tfc.split(x, [1, 3], axis=1)[1] ** 2, rng.random((2, 4)))
    check_grad(lambda x: (lambda p: p[0] * p[1])(tfc.split(x, 2, axis=0)), rng.random((4, 3)))
    check_grad(lambda x: tfc.split(x, 1)[0] * 2.0, rng.random((3,)))


def test_concat_stack_errors():
    a, b = tfc.zeros((2, 3)), tfc.zeros((2, 4))
    raises(ValueError, "concat", lambda: tfc.concat([a, b], 0))
    raises(ValueError, "concat", lambda: tfc.concat([a, b], 2))
    raises(ValueError, "concat", lambda: tfc.concat([], 0))
    raises(ValueError, "concat", lambda: tfc.concat([tfc.constant(1.0)], 0))
    raises(TypeError, "concat", lambda: tfc.concat([a, tfc.zeros((2, 3), tfc.int32)], 0))
    raises(TypeError, "concat", lambda: tfc.concat(a, 0))
    raises(ValueError, "stack", lambda: tfc.stack([a, b]))
    raises(ValueError, "stack", lambda: tfc.stack([a, a], axis=3))
    raises(TypeError, "stack", lambda: tfc.stack([a, tfc.zeros((2, 3), tfc.float64)]))


def test_unstack_split_errors():
    x = tfc.zeros((4, 6))
    raises(ValueError, "unstack", lambda: tfc.unstack(tfc.constant(1.0)))
    raises(ValueError, "unstack", lambda: tfc.unstack(x, num=3))
    raises(ValueError, "unstack", lambda: tfc.unstack(x, axis=2))
    raises(ValueError, "split", lambda: tfc.split(x, 4, axis=1))
    raises(ValueError, "split", lambda: tfc.split(x, [1, 2], axis=1))
    raises(ValueError, "split", lambda: tfc.split(x, [-1, -1], axis=1))
    raises(ValueError, "split", lambda: tfc.split(x, 0))
    raises(ValueError, "split", lambda: tfc.split(x, 2, axis=-3))
    raises(TypeError, "split", lambda: tfc.split(x, "two"))


# -- tile ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + [np.bool_])
def test_tile(rng, dtype):
    x = rand(rng, (2, 3), dtype)
    for m in ([1, 1], [2, 3], [0, 2], [3, 1]):
        same(tfc.tile(x, m), np.tile(x, m))
    same(tfc.tile(np.float32(2.0), []), np.float32(2.0))


def test_tile_grad(rng):
    w = rng.random((4, 9))
    check_grad(lambda x: tfc.tile(x, [2, 3]) * w, rng.random((2, 3)))
    check_grad(lambda x: tfc.tile(x, [3, 1, 2]), rng.random((1, 2, 2)))


def test_tile_errors():
    raises(ValueError, "tile", lambda: tfc.tile(tfc.zeros((2, 3)), [2]))
    raises(ValueError, "tile", lambda: tfc.tile(tfc.zeros((2, 3)), [2, -1]))
    raises(TypeError, "tile", lambda: tfc.tile(tfc.zeros((2, 3)), "ab"))


# -- pad ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_constant(rng, dtype):
    x = rand(rng, (2, 3), dtype)
    p = [[1, 2], [0, 3]]
    same(tfc.pad(x, p), np.pad(x, p))
    same(tfc.pad(x, p, constant_values=7), np.pad(x, p, constant_values=7))
    same(tfc.pad(np.zeros((0, 2), dtype), [[1, 1], [0, 0]]), np.zeros((2, 2), dtype))


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC", "reflect", "symmetric"])
def test_pad_mirror(rng, mode):
    x = rand(rng, (4, 5))
    p = [[3, 1], [2, 4 if mode.upper() == "REFLECT" else 5]]
    same(tfc.pad(x, p, mode), np.pad(x, p, mode=mode.lower()))


@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC"])
def test_pad_grad(rng, mode):
    w = rng.random((7, 9))
    check_grad(lambda x: tfc.pad(x, [[2, 1], [3, 2]], mode) * w, rng.random((4, 4)))
    check_grad(lambda x: tfc.pad(x, [[0, 0], [1, 3]], mode), rng.random((2, 5)))


def test_pad_errors():
    x = tfc.zeros((2, 3))
    raises(ValueError, "pad", lambda: tfc.pad(x, [[1, 1]]))
    raises(ValueError, "pad", lambda: tfc.pad(x, [[1, 1], [1]]))
    raises(ValueError, "pad", lambda: tfc.pad(x, [[1, 1], [-1, 0]]))
    raises(ValueError, "pad", lambda: tfc.pad(x, [[2, 0], [0, 0]], "REFLECT"))
    raises(ValueError, "pad", lambda: tfc.pad(x, [[3, 0], [0, 0]], "SYMMETRIC"))
    raises(ValueError, "pad", lambda: tfc.pad(x, [[1, 0], [0, 0]], "WRAP"))


# -- gather, unsorted_segment_sum, one_hot -----------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + [np.bool_])
@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
def test_gather(rng, dtype, idx_dtype):
    x = rand(rng, (3, 4, 5), dtype)
    for axis in (0, 1, 2, -1):
        n = x.shape[axis]
        for ishape in ((), (2,), (2, 3), (0,)):
            idx = rng.integers(0, n, ishape).astype(idx_dtype)
            same(tfc.gather(x, idx, axis=axis), np.take(x, idx, axis=axis))


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_gather_grad_hypothesis(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    axis = data.draw(st.integers(0, len(shape) - 1))
    ishape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    idx = data.draw(hnp.arrays(np.int32, ishape, elements=st.integers(0, shape[axis] - 1)))
    x = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-3, 3)))
    same(tfc.gather(x, idx, axis=axis), np.take(x, idx, axis=axis))
    w = np.arange(np.take(x, idx, axis=axis).size, dtype=np.float64).reshape(np.take(x, idx, axis=axis).shape)
    check_grad(lambda p: tfc.gather(p, idx, axis=axis) * w, x)


def test_gather_errors():
    x = tfc.zeros((3, 4))
    raises(tfc.errors.InvalidArgumentError, "gather", lambda: tfc.gather(x, [0, 3]))
    raises(ValueError, "gather", lambda: tfc.gather(x, [-1]))
    raises(TypeError, "gather", lambda: tfc.gather(x, [0.0, 1.0]))
    raises(ValueError, "gather", lambda: tfc.gather(x, [0], axis=2))
    raises(ValueError, "gather", lambda: tfc.gather(tfc.constant(1.0), [0]))


def test_unsorted_segment_sum(rng):
    data = rand(rng, (6, 3))
    ids = np.array([0, 2, 0, -1, 3, 2])
    want = np.zeros((5, 3))
    for i, k in enumerate(ids):
        if k >= 0:
            want[k] += data[i]
    np.testing.assert_allclose(unsorted_segment_sum(data, ids, 5).numpy(), want)
    w = rng.random((5, 3))
    check_grad(lambda d: unsorted_segment_sum(d, ids, 5) * w, data)
    raises(tfc.errors.InvalidArgumentError, "unsorted_segment_sum", lambda: unsorted_segment_sum(data, ids, 3))
    raises(ValueError, "unsorted_segment_sum", lambda: unsorted_segment_sum(data, ids[:4], 5))
    raises(TypeError, "unsorted_segment_sum", lambda: unsorted_segment_sum(data, ids * 1.0, 5))


def _np_one_hot(idx, depth, on, off, axis, dtype):
    out = np.where(idx[..., None] == np.arange(depth), on, off).astype(dtype)
    return out if axis == -1 else np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_one_hot(rng, axis):
    idx = rng.integers(-1, 6, (3, 4))  # -1 and 5 are out of range: all off
    same(tfc.one_hot(idx, 5, axis=axis), _np_one_hot(idx, 5, 1, 0, axis, np.float32))
    same(tfc.one_hot(idx, 5, on_value=3, off_value=-1, axis=axis), _np_one_hot(idx, 5, 3, -1, axis, np.int32))
    same(tfc.one_hot(idx, 5, dtype=tfc.float64, axis=axis), _np_one_hot(idx, 5, 1, 0, axis, np.float64))


def test_one_hot_scalar_and_empty():
    same(tfc.one_hot(2, 4), np.array([0, 0, 1, 0], np.float32))
    same(tfc.one_hot(np.zeros((0,), np.int32), 3), np.zeros((0, 3), np.float32))


def test_one_hot_errors():
    raises(TypeError, "one_hot", lambda: tfc.one_hot([0.5], 3))
    raises(ValueError, "one_hot", lambda: tfc.one_hot([0], 3, axis=2))
    raises(ValueError, "one_hot", lambda: tfc.one_hot([0], -1))


# -- indexing --------------------------------------------------------------------------------

def test_getitem_integer_arrays(rng):
    x = rand(rng, (4, 5, 6))
    t = tfc.constant(x)
    keys = [
        [1, 3], np.array([0, -1, 2]), tfc.constant([3, 0]), (slice(None), [4, 0]), (..., [1, 5, 5]),
        (1, [2, 3]), ([2, 3], 1), (1, 2, np.array([[0, 1], [5, 4]])), (slice(1, 3), None, [0, 2]),
        (None, [1]), (slice(None, None, -1), [0, 0]), np.array([], np.int64), [],
        (Ellipsis, np.array(2)), tfc.constant(np.array([[1], [2]], np.int64)),
    ]
    for key in keys:
        np_key = tuple(k.numpy() if isinstance(k, tfc.Tensor) else k for k in key) if isinstance(key, tuple) \
            else (key.numpy() if isinstance(key, tfc.Tensor) else key)
        same(t[key], x[np_key])


def test_getitem_bool_mask(rng):
    x = rand(rng, (3, 4))
    t = tfc.constant(x)
    same(t[t > 0], x[x > 0])
    same(t[x[:, 0] > 0], x[x[:, 0] > 0])
    same(t[:, [True, False, True, True]], x[:, [True, False, True, True]])
    with pytest.raises(IndexError, match="getitem"):
        t[np.array([True, False])]


def test_getitem_grad(rng):
    check_grad(lambda a: a[[0, 2, 2]] * 2.0, rng.random((3, 2)))
    check_grad(lambda a: a[:, np.array([1, -1])] ** 2, rng.random((2, 3)))
    check_grad(lambda a: a[a.numpy() > 0.5], rng.random((3, 3)))


def test_getitem_errors():
    t = tfc.zeros((3, 4))
    raises(IndexError, "getitem", lambda: t[[0, 3]])
    raises(IndexError, "getitem", lambda: t[:, [-5]])
    raises(TypeError, "getitem", lambda: t[np.array([0.5])])
    raises(NotImplementedError, "getitem", lambda: t[[0], [1]])
    raises(NotImplementedError, "getitem", lambda: tfc.zeros((2, 3, 4))[0, :, [1]])
    raises(TypeError, "getitem", lambda: t["a"])


# -- tensordot ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_tensordot(rng, dtype):
    a, b = rand(rng, (2, 3, 4), dtype), rand(rng, (4, 3, 5), dtype)
    for axes in (0, 1, [[1, 2], [1, 0]], [[2], [0]], ([-1], [0])):
        got = tfc.tensordot(a, b, axes)
        want = np.tensordot(a, b, axes)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)
        assert got.shape == want.shape and got.dtype == tfc.as_dtype(want.dtype)
    v = rand(rng, (3,), dtype)
    assert tfc.tensordot(v, v, 1).shape == ()


def test_tensordot_grad(rng):
    check_grad(lambda a, b: tfc.tensordot(a, b, [[0, 2], [2, 1]]), rng.random((2, 3, 4)), rng.random((3, 4, 2)))
    check_grad(lambda a, b: tfc.tensordot(a, b, 0), rng.random((2,)), rng.random((3,)))


def test_tensordot_errors():
    a, b = tfc.zeros((2, 3)), tfc.zeros((4, 2))
    raises(ValueError, "tensordot", lambda: tfc.tensordot(a, b, 1))
    raises(ValueError, "tensordot", lambda: tfc.tensordot(a, b, 3))
    raises(ValueError, "tensordot", lambda: tfc.tensordot(a, b, [[0, 1], [1]]))
    raises(ValueError, "tensordot", lambda: tfc.tensordot(a, b, [[2], [1]]))
    raises(TypeError, "tensordot", lambda: tfc.tensordot(a, b, "x"))


def test_second_order_gradients(rng):
    """Gradient rules are tfc ops, so they differentiate again."""
    x = rng.random((3, 4)) + 0.5
    check_second_grad(lambda t: tfc.gather(t, [0, 2, 2], axis=0) ** 3, x)
    check_second_grad(lambda t: tfc.pad(t, [[1, 2], [2, 1]], "REFLECT") ** 3, x)
    check_second_grad(lambda t: tfc.tile(t, [2, 1]) ** 3, x)
    check_second_grad(lambda t: tfc.concat(tfc.split(t, [1, 3], axis=1)[::-1], 1) ** 3, x)
    check_second_grad(lambda t: tfc.stack(tfc.unstack(t)[::-1]) ** 3, x)
    check_second_grad(lambda t: t[[1, 1, 0]] ** 3, x)


def test_variables_as_inputs():
    v = tfc.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tfc.GradientTape() as tape:
        y = tfc.reduce_sum(tfc.gather(v, [1, 1]) * tfc.concat([v, v], 0)[1:3] + v[[0]])
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [[5.0, 6.0], [7.0, 10.0]])
