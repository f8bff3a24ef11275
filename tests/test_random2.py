"""tfc.random.truncated_normal, categorical and shuffle: distributions,
seeds, the global stream, eager equal to compiled, errors."""
import math

import numpy as np
import pytest

import tfc
from tfc.ops.random import _erfinv


def test_erfinv_inverts_erf():
    y = np.linspace(-0.96, 0.96, 2001)
    w = _erfinv(y)
    np.testing.assert_allclose([math.erf(v) for v in w], y, rtol=0, atol=4e-16)


@pytest.mark.parametrize("dtype", [tfc.float16, tfc.float32, tfc.float64])
def test_truncated_normal(dtype):
    x = tfc.random.truncated_normal([100000], mean=1.0, stddev=2.0, dtype=dtype, seed=7).numpy()
    assert x.dtype == dtype.as_numpy_dtype
    assert x.min() >= -3.0 and x.max() <= 5.0 and x.min() < -2.99 and x.max() > 4.99
    # N(0, 1) cut at +-2: mean 0, variance 1 - 4 phi(2) / (Phi(2) - Phi(-2))
    phi2 = math.exp(-2) / math.sqrt(2 * math.pi)
    std = 2.0 * math.sqrt(1 - 4 * phi2 / math.erf(math.sqrt(2)))
    assert abs(x.astype(np.float64).mean() - 1.0) < 0.02 and abs(x.astype(np.float64).std() - std) < 0.02
    # the share in each band matches the truncated density (within 4 sigma)
    counts = np.histogram((x.astype(np.float64) - 1) / 2, bins=[-2, -1, 0, 1, 2])[0] / x.size
    cdf = [0.5 * (1 + math.erf(v / math.sqrt(2))) for v in (-2, -1, 0, 1, 2)]
    want = np.diff(cdf) / (cdf[-1] - cdf[0])
    assert np.all(np.abs(counts - want) < 4 * np.sqrt(want / x.size))
    np.testing.assert_array_equal(x, tfc.random.truncated_normal([100000], 1.0, 2.0, dtype, seed=7).numpy())


def test_categorical_frequencies_and_seeds():
    probs = np.array([[0.1, 0.2, 0.0, 0.7], [0.25, 0.25, 0.25, 0.25]])
    with np.errstate(divide="ignore"):
        logits = np.log(probs).astype(np.float32) + 3.0  # unnormalised
    s = tfc.random.categorical(logits, 40000, seed=5)
    assert s.dtype == tfc.int64 and s.shape == (2, 40000)
    for row, p in zip(s.numpy(), probs):
        freq = np.bincount(row, minlength=4) / row.size
        assert freq[p == 0].sum() == 0
        assert np.all(np.abs(freq - p) < 4 * np.sqrt(p * (1 - p) / row.size) + 1e-12)
    np.testing.assert_array_equal(s.numpy(), tfc.random.categorical(logits, 40000, seed=5).numpy())
    assert tfc.random.categorical(logits, 3, dtype=tfc.int32).dtype == tfc.int32
    big = np.array([[1000.0, -np.inf, 999.0]])
    assert set(tfc.random.categorical(big, 50, seed=1).numpy().ravel()) <= {0, 2}


def test_categorical_errors():
    with pytest.raises(ValueError, match="categorical: logits must be \\[batch_size, num_classes\\]"):
        tfc.random.categorical(np.zeros(3), 2)
    with pytest.raises(tfc.errors.InvalidArgumentError, match="row 1 of logits has no finite maximum"):
        tfc.random.categorical(np.array([[0.0, 1.0], [-np.inf, -np.inf]]), 2)
    with pytest.raises(TypeError, match="categorical: dtype must be int32 or int64"):
        tfc.random.categorical(np.zeros((1, 3)), 2, dtype=tfc.float32)
    with pytest.raises(TypeError, match="categorical: num_samples must be an int"):
        tfc.random.categorical(np.zeros((1, 3)), 2.5)


def test_shuffle():
    x = np.arange(20 * 3).reshape(20, 3)
    y = tfc.random.shuffle(x, seed=11).numpy()
    assert sorted(map(tuple, y)) == sorted(map(tuple, x)) and not np.array_equal(x, y)
    np.testing.assert_array_equal(y, tfc.random.shuffle(x, seed=11).numpy())
    # every order is about equally likely: each position's first element over many draws
    firsts = np.array([tfc.random.shuffle(np.arange(4)).numpy()[0] for _ in range(2000)])
    assert np.all(np.abs(np.bincount(firsts, minlength=4) / 2000 - 0.25) < 0.05)
    # gradient: each row's gradient goes back to its row
    v = tfc.constant(np.arange(6.0).reshape(3, 2))
    w = tfc.constant(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    with tfc.GradientTape() as tape:
        tape.watch(v)
        out = tfc.random.shuffle(v, seed=3)
        loss = tfc.reduce_sum(out * w)
    perm = tfc.random.shuffle(np.arange(3), seed=3).numpy()
    g = np.empty((3, 2))
    g[perm] = w.numpy()
    np.testing.assert_array_equal(tape.gradient(loss, v).numpy(), g)
    with pytest.raises(ValueError, match="shuffle_indices: value must have rank >= 1"):
        tfc.random.shuffle(tfc.constant(1.0))


def test_global_stream_and_compiled_equal_eager():
    logits = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)

    def draws(lg):
        return (tfc.random.categorical(lg, 4), tfc.random.truncated_normal([3, 2]),
                tfc.random.shuffle(lg))

    tfc.random.set_seed(42)
    eager = [t.numpy() for t in draws(tfc.constant(logits))]
    f = tfc.function(draws)
    for sig in (None, [tfc.TensorSpec([None, 5])]):
        tfc.random.set_seed(42)
        fn = f if sig is None else tfc.function(draws, input_signature=sig)
        for got, want in zip(fn(logits), eager):
            np.testing.assert_array_equal(got.numpy(), want)
    tfc.random.set_seed(43)
    assert not np.array_equal(draws(tfc.constant(logits))[0].numpy(), eager[0]) or \
        not np.array_equal(draws(tfc.constant(logits))[1].numpy(), eager[1])
