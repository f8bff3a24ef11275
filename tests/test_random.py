"""tfc.random: seeding semantics, ranges and moments, errors."""
import numpy as np
import pytest

import tfc


@pytest.mark.parametrize("dtype", [tfc.float16, tfc.float32, tfc.float64])
def test_uniform_float(dtype):
    x = tfc.random.uniform([200, 50], minval=-2, maxval=3, dtype=dtype, seed=7)
    assert x.shape == (200, 50) and x.dtype == dtype
    v = x.numpy().astype(np.float64)
    assert v.min() >= -2 and v.max() < 3
    assert abs(v.mean() - 0.5) < 0.1 and abs(v.var() - 25 / 12) < 0.15


@pytest.mark.parametrize("dtype", [tfc.int8, tfc.int32, tfc.int64])
def test_uniform_int(dtype):
    x = tfc.random.uniform([5000], minval=-3, maxval=4, dtype=dtype, seed=1)
    assert x.dtype == dtype
    assert set(np.unique(x.numpy()).tolist()) == set(range(-3, 4))


@pytest.mark.parametrize("dtype", [tfc.float16, tfc.float32, tfc.float64])
def test_normal(dtype):
    x = tfc.random.normal([100, 100], mean=2.0, stddev=3.0, dtype=dtype, seed=3)
    assert x.dtype == dtype and x.shape == (100, 100)
    v = x.numpy().astype(np.float64)
    assert abs(v.mean() - 2.0) < 0.15 and abs(v.std() - 3.0) < 0.15


def test_shapes_empty_and_scalar():
    assert tfc.random.uniform([]).shape == ()
    assert tfc.random.normal((0, 3)).shape == (0, 3)
    assert tfc.random.uniform(tfc.constant([2, 3])).shape == (2, 3)


def test_same_seed_same_values():
    for fn in (tfc.random.uniform, tfc.random.normal):
        a, b = fn([4, 3], seed=42), fn([4, 3], seed=42)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert not np.array_equal(a.numpy(), fn([4, 3], seed=43).numpy())


def test_seeded_ops_ignore_global_stream():
    a = tfc.random.uniform([3], seed=5)
    tfc.random.set_seed(123)
    tfc.random.normal([10])
    np.testing.assert_array_equal(a.numpy(), tfc.random.uniform([3], seed=5).numpy())


def test_global_stream_follows_set_seed():
    tfc.random.set_seed(11)
    first = [tfc.random.uniform([3]).numpy(), tfc.random.normal([2]).numpy()]
    assert not np.array_equal(first[0], tfc.random.uniform([3]).numpy())  # the stream advances
    tfc.random.set_seed(11)
    again = [tfc.random.uniform([3]).numpy(), tfc.random.normal([2]).numpy()]
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)


def test_ops_are_stateful_declarations():
    from tfc.core.registry import get_op

    for name in ("uniform", "normal"):
        op = get_op(name)
        assert op.stateful and op.attrs["seed"] == "seed" and op.grad is None


def test_errors():
    with pytest.raises(ValueError, match="uniform"):
        tfc.random.uniform([2], dtype=tfc.int32)  # maxval required
    with pytest.raises(ValueError, match="uniform"):
        tfc.random.uniform([2], minval=3, maxval=1)
    with pytest.raises(TypeError, match="uniform"):
        tfc.random.uniform([2], dtype=tfc.bool)
    with pytest.raises(TypeError, match="normal"):
        tfc.random.normal([2], dtype=tfc.int32)
    with pytest.raises(ValueError, match="normal"):
        tfc.random.normal([2], stddev=-1.0)
    with pytest.raises(ValueError, match="uniform"):
        tfc.random.uniform([2, -1])
    with pytest.raises(TypeError, match="uniform"):
        tfc.random.uniform([2], seed=1.5)
    with pytest.raises(TypeError, match="normal"):
        tfc.random.normal([2], mean="a")


def test_random_in_gradient_rule():
    """reference-programs.md: a custom gradient may draw noise."""
    @tfc.custom_gradient
    def noisy(x):
        def grad(dy):
            return dy * (2 * x + tfc.random.normal(x.shape, seed=0) * 0.0)
        return x * x, grad

    x = tfc.constant([1.0, 2.0])
    with tfc.GradientTape() as t:
        t.watch(x)
        y = noisy(x)
    np.testing.assert_allclose(t.gradient(y, x).numpy(), [2.0, 4.0])
