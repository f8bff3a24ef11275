"""cumsum, sort, argsort, top_k: against numpy, gradients by finite
differences (float64), compiled bit-identical to eager."""
import numpy as np
import pytest

import tfc
from helpers import check_grad


def compiled_equal(f, *arrays, dynamic=True):
    want = f(*[tfc.constant(a) for a in arrays])
    wants = want if isinstance(want, (list, tuple)) else [want]
    fns = [tfc.function(f)]
    if dynamic:
        fns.append(tfc.function(f, input_signature=[tfc.TensorSpec([None] * a.ndim, tfc.as_dtype(a.dtype))
                                                    for a in arrays]))
    for fn in fns:
        got = fn(*arrays)
        gots = got if isinstance(got, (list, tuple)) else [got]
        for g, w in zip(gots, wants):
            assert g.dtype == w.dtype and np.array_equal(g.numpy(), w.numpy(), equal_nan=True)
    return wants


def np_cumsum(x, axis, exclusive, reverse):
    if reverse:
        x = np.flip(x, axis)
    y = np.cumsum(x, axis)
    if exclusive:
        y = y - x
    return np.flip(y, axis) if reverse else y


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum(rng, axis, exclusive, reverse):
    x = rng.normal(size=(4, 7, 5))
    got = tfc.cumsum(x, axis, exclusive=exclusive, reverse=reverse).numpy()
    np.testing.assert_allclose(got, np_cumsum(x, axis, exclusive, reverse), rtol=1e-12, atol=1e-12)
    ints = rng.integers(-50, 50, size=(4, 7, 5)).astype(np.int32)
    got = tfc.cumsum(ints, axis, exclusive=exclusive, reverse=reverse)
    assert got.dtype == tfc.int32
    np.testing.assert_array_equal(got.numpy(), np_cumsum(ints, axis, exclusive, reverse))
    w = rng.normal(size=x.shape)
    check_grad(lambda t: tfc.cumsum(t, axis, exclusive, reverse) * w, x)
    compiled_equal(lambda t: tfc.cumsum(t * 2, axis, exclusive, reverse) + 1, x.astype(np.float32))


def test_cumsum_edges():
    np.testing.assert_array_equal(tfc.cumsum(np.array([-0.0, -0.0])).numpy(), [-0.0, -0.0])
    assert np.signbit(tfc.cumsum(np.array([-0.0, -0.0])).numpy()).all()
    assert tfc.cumsum(np.zeros((0, 3)), 0, exclusive=True).shape == (0, 3)
    np.testing.assert_array_equal(tfc.cumsum(np.array([5.0]), exclusive=True).numpy(), [0.0])
    for n in (1, 2, 3, 16, 17, 100):  # power-of-two boundaries of the scan
        x = np.arange(1, n + 1)
        np.testing.assert_array_equal(tfc.cumsum(x).numpy(), np.cumsum(x))
    with pytest.raises(ValueError, match="cumsum.*scalar"):
        tfc.cumsum(tfc.constant(1.0))
    with pytest.raises(ValueError, match="cumsum: axis 2 is out of range"):
        tfc.cumsum(tfc.ones([2, 2]), 2)
    with pytest.raises(TypeError, match="cumsum.*bool"):
        tfc.cumsum(tfc.constant([True, False]))


def test_cumsum_lowers_to_kernels():
    f = tfc.function(lambda t: tfc.cumsum(t, 1))
    assert "loops.library" not in f.get_concrete_function(tfc.TensorSpec([3, 9])).ir("loops")


def ref_argsort(x, axis, descending):
    """Stable sort by Python's sorted (NaN above every number)."""
    x = np.moveaxis(x, axis, -1)
    out = np.empty(x.shape, np.int64)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        key = [(1 if np.isnan(v) else 0, 0 if np.isnan(v) else v) for v in row]
        order = sorted(range(len(row)), key=lambda i: key[i], reverse=descending)
        out[idx] = order
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
@pytest.mark.parametrize("axis", [0, -1])
def test_argsort_and_sort(rng, axis, direction):
    x = rng.integers(0, 4, size=(5, 6)).astype(np.float32)  # many ties
    x[1, 2] = np.nan
    want = ref_argsort(x, axis, direction == "DESCENDING")
    got = tfc.argsort(x, axis, direction)
    assert got.dtype == tfc.int32
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(tfc.sort(x, axis, direction).numpy(), np.take_along_axis(x, want, axis))
    ints = rng.integers(-9, 9, size=(4, 7)).astype(np.int32)
    np.testing.assert_array_equal(tfc.argsort(ints, axis, direction).numpy(),
                                  ref_argsort(ints, axis, direction == "DESCENDING"))
    compiled_equal(lambda t: tfc.sort(t * 2, axis, direction), x)
    compiled_equal(lambda t: tfc.argsort(t, axis, direction), x)


def test_sort_gradient(rng):
    x = rng.normal(size=(4, 5))
    w = rng.normal(size=(4, 5))
    check_grad(lambda t: tfc.sort(t) * w, x)
    check_grad(lambda t: tfc.sort(t, 0, "DESCENDING") * w, x)


def test_top_k(rng):
    x = rng.integers(0, 5, size=(3, 8)).astype(np.float64)
    values, indices = tfc.top_k(x, 3)
    want = ref_argsort(x, -1, True)[:, :3]
    np.testing.assert_array_equal(indices.numpy(), want)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(x, want, -1))
    assert indices.dtype == tfc.int32
    xs = rng.normal(size=(3, 8))
    w = rng.normal(size=(3, 3))
    check_grad(lambda t: tfc.top_k(t, 3)[0] * w, xs)
    compiled_equal(lambda t: tfc.top_k(t, 3), xs.astype(np.float32))
    assert tfc.top_k(xs, 0)[0].shape == (3, 0)


def test_top_k_errors():
    with pytest.raises(tfc.errors.InvalidArgumentError, match="at least k=4"):
        tfc.top_k(np.ones((2, 3)), 4)
    with pytest.raises(ValueError, match="k must be an int >= 0"):
        tfc.top_k(np.ones((2, 3)), -1)
    f = tfc.function(lambda t: tfc.top_k(t, 4), input_signature=[tfc.TensorSpec([None, None])])
    assert f(np.ones((2, 5), np.float32))[0].shape == (2, 4)
    with pytest.raises(AssertionError, match="at least k=4"):
        f(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="direction must be"):
        tfc.sort(np.ones(3), direction="UP")
    with pytest.raises(TypeError, match="argsort.*bool"):
        tfc.argsort(np.array([True]))


def test_permute_lowers_to_a_kernel():
    f = tfc.function(lambda t: tfc.sort(t))
    ir = f.get_concrete_function(tfc.TensorSpec([3, 9])).ir("loops")
    assert 'loops.library "argsort"' in ir and "loops.load_at" in ir
    assert ir.count("loops.library") == 1


def test_top_k_index_type(rng):
    x = rng.normal(size=(2, 5))
    _, i64 = tfc.top_k(x, 2, index_type=tfc.int64)
    _, i32 = tfc.top_k(x, 2)
    assert i64.dtype == tfc.int64 and np.array_equal(i64.numpy(), i32.numpy())
    with pytest.raises(TypeError, match="index_type must be int32 or int64"):
        tfc.top_k(x, 2, index_type=tfc.float32)
    assert tfc.sort(x, name="s").shape == (2, 5) and tfc.einsum("ij->j", x, name="e").shape == (5,)
