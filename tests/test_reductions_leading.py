"""Float sums over leading axes (a bias gradient: [64, 8, 8, 16] -> [16]) run
numpy's reduction on a [n / k, k * c] view, then add the k partial sums
(tfc/ops/reductions.py, _leading_sum): one order for eager, compiled library
calls, fused kernels and broadcast gradients, more accurate than numpy's row
by row order."""
import numpy as np
import pytest

import tfc
from tfc.ops.reductions import _sum_kernel


def _blocked(x, lead, k):
    """The documented order written out: numpy's sum over rows of [n / k, k * c], then over k."""
    c = int(np.prod(x.shape[lead:]))
    parts = np.add.reduce(x.reshape(-1, k * c), axis=0)
    return np.add.reduce(parts.reshape(k, c), axis=0).reshape(x.shape[lead:])


@pytest.mark.parametrize("shape, lead, k", [
    ((64, 8, 8, 16), 3, 64),   # the CNN's first bias gradient
    ((64, 4, 4, 32), 3, 32),   # the second
    ((2048, 64), 1, 16),       # a GPT bias gradient [batch * context, width]
    ((32, 64, 3), 2, 256),     # k capped by the rows' power of two
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_leading_sum_is_the_blocked_order(shape, lead, k, dtype):
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    got = _sum_kernel(x, tuple(range(lead)), False)
    assert got.dtype == dtype and got.shape == shape[lead:]
    np.testing.assert_array_equal(got, _blocked(x, lead, k))
    kept = _sum_kernel(x, tuple(range(lead)), True)
    assert kept.shape == (1,) * lead + shape[lead:]
    np.testing.assert_array_equal(kept.reshape(got.shape), got)
    if dtype is np.float64:
        return
    # no less accurate than numpy's own order (against float64 sums)
    exact = x.astype(np.float64).sum(axis=tuple(range(lead)))
    assert np.abs(got - exact).max() <= np.abs(np.sum(x, axis=tuple(range(lead))) - exact).max() * 1.01 + 1e-30


@pytest.mark.parametrize("shape, axis", [
    ((255, 16), (0,)),          # too few rows: numpy's order
    ((4095, 16), (0,)),         # odd rows: numpy's order
    ((64, 8, 8, 16), (1, 2)),   # not leading
    ((64, 8, 8, 16), None),     # every axis: numpy's pairwise sum of the flat array
    ((512, 2048), (0,)),        # rows already longer than a block
])
def test_other_sums_keep_numpys_order(shape, axis):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(_sum_kernel(x, axis, False), np.sum(x, axis=axis, dtype=np.float32))


def test_integer_sums_unchanged():
    x = np.random.default_rng(3).integers(-2**31, 2**31 - 1, (1024, 8), dtype=np.int32)
    np.testing.assert_array_equal(_sum_kernel(x, (0,), False), np.sum(x, axis=0, dtype=np.int32))


def test_special_values():
    x = np.full((1024, 4), -0.0, np.float32)
    x[5, 1], x[700, 2], x[9, 3], x[1000, 3] = np.nan, np.inf, np.inf, -np.inf
    got = _sum_kernel(x, (0,), False)
    # numpy's axis sums start from +0, so -0s sum to +0, as before the blocked order
    assert not np.signbit(got[0]) and got[0] == 0 and not np.signbit(np.sum(x[:, 0:1], axis=0)[0])
    assert np.isnan(got[1]) and got[2] == np.inf and np.isnan(got[3])


def test_eager_and_compiled_sums_agree_bit_for_bit():
    x = tfc.constant(np.random.default_rng(4).standard_normal((64, 8, 8, 16)).astype(np.float32))

    def f(x):
        return tfc.reduce_sum(x, axis=[0, 1, 2]), tfc.reduce_sum(x * 2.0, axis=(0, 1, 2), keepdims=True)

    eager = [t.numpy() for t in f(x)]
    compiled = [t.numpy() for t in tfc.function(f)(x)]
    for e, c in zip(eager, compiled):
        np.testing.assert_array_equal(e, c)
    np.testing.assert_array_equal(eager[0], _blocked(x.numpy(), 3, 64))


def test_bias_gradient_eager_and_compiled_agree_bit_for_bit():
    rng = np.random.default_rng(5)
    x = tfc.constant(rng.standard_normal((64, 8, 8, 16)).astype(np.float32))
    b = tfc.Variable(rng.standard_normal(16).astype(np.float32))

    def grad(x):
        with tfc.GradientTape() as tape:
            loss = tfc.reduce_sum(tfc.nn.relu(x + b) ** 2)
        return tape.gradient(loss, b)

    eager, compiled = grad(x).numpy(), tfc.function(grad)(x).numpy()
    np.testing.assert_array_equal(eager, compiled)
    xs = x.numpy()
    want = (2 * np.maximum(xs + b.numpy(), 0)).astype(np.float64).sum(axis=(0, 1, 2))
    np.testing.assert_allclose(eager, want, rtol=1e-5, atol=1e-3)
