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
