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


# -- the counter-based generator (Philox4x32-10) -------------------------------------------

from tfc.ops import random as R  # noqa: E402

# Random123's kat_vectors: counter (4 words), key (2 words) -> output (4 words).
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr,key,expected", KAT)
def test_philox_known_answers(ctr, key, expected):
    out = R.philox4x32(ctr, key)
    assert out.dtype == np.uint32 and tuple(int(v) for v in out) == expected


def test_philox_vectorized_matches_one_at_a_time():
    ctrs = np.array([c for c, _, _ in KAT] * 3, np.uint32)
    out = R.philox4x32(ctrs, KAT[2][1])
    for c, o in zip(ctrs, out):
        np.testing.assert_array_equal(R.philox4x32(c, KAT[2][1]), o)
    with pytest.raises(ValueError, match="philox4x32"):
        R.philox4x32([1, 2, 3], (0, 0))


def _blocks(key, bases, stream):
    return np.concatenate([R.philox4x32([b & 0xFFFFFFFF, b >> 32, 0, stream], key) for b in bases])


def test_word_layout_and_counter_wrap():
    """Word k of a draw is word k % 4 of block base + k // 4 (counter lo, hi, 0,
    stream), the block index modulo 2^64; chunks do not show."""
    key, base = (12345, 0xDEADBEEF), (1 << 64) - 3
    w = R.random_words(key, base, 30, R.GLOBAL)
    np.testing.assert_array_equal(w, _blocks(key, [(base + j) % (1 << 64) for j in range(8)], R.GLOBAL)[:30])
    n = 4 * R._CHUNK * 2 + 37  # three chunks, the last partial
    big = R.random_words(key, 5, n)
    for k in (0, 1, 7, 4 * R._CHUNK - 1, 4 * R._CHUNK + 3, n - 1):
        np.testing.assert_array_equal(big[:k], R.random_words(key, 5, k))
    j = R._CHUNK + 3  # starting later in the counter gives the same words
    np.testing.assert_array_equal(big[4 * j:], R.random_words(key, 5 + j, n - 4 * j))
    assert R.random_words(key, 0, 0).shape == (0,)


def test_seed_keys():
    assert R.seed_key(0) == (0, 0) and R.seed_key(7) == (7, 0)
    assert R.seed_key((5 << 32) | 9) == (9, 5) and R.seed_key(2**64 - 1) == (0xFFFFFFFF, 0xFFFFFFFF)
    assert R.seed_key(-1) == R.seed_key(2**64 - 1)  # an i64 attribute's view of the seed
    with pytest.raises(TypeError, match="below 2\\*\\*64"):
        tfc.random.uniform([2], seed=2**64)
    np.testing.assert_array_equal(tfc.random.uniform([3], seed=2**64 - 1).numpy(),
                                  tfc.random.uniform([3], seed=2**64 - 1).numpy())


def test_documented_element_layout():
    """The per-element formulas of the op docstrings, which a GPU kernel computes
    one element at a time."""
    seed, n = 99, 11
    w = R.random_words(R.seed_key(seed), 0, 4 * n)
    u32 = tfc.random.uniform([n], seed=seed).numpy()
    np.testing.assert_array_equal(u32, (w[:n] >> 8).astype(np.float32) * np.float32(2.0**-24))
    u64 = tfc.random.uniform([n], seed=seed, dtype=tfc.float64).numpy()
    r53 = (w[0:2 * n:2].astype(np.uint64) | (w[1:2 * n:2].astype(np.uint64) << np.uint64(32))) >> np.uint64(11)
    np.testing.assert_array_equal(u64, r53 * 2.0**-53)
    z = tfc.random.normal([n], seed=seed, dtype=tfc.float64).numpy()
    r53 = (w[0::2].astype(np.uint64) | (w[1::2].astype(np.uint64) << np.uint64(32))) >> np.uint64(11)
    for i in range(n):
        p = i // 2
        u1 = (float(r53[2 * p]) + 1) * 2.0**-53
        theta = 2 * np.pi * float(r53[2 * p + 1]) * 2.0**-53
        want = np.sqrt(-2 * np.log(u1)) * (np.cos(theta) if i % 2 == 0 else np.sin(theta))
        np.testing.assert_allclose(z[i], want, rtol=1e-14)
    z = tfc.random.normal([n], seed=seed).numpy()
    for i in range(n):
        p = i // 2
        u1, u2 = (float(w[2 * p]) + 1) * 2.0**-32, float(w[2 * p + 1] >> 8) * 2.0**-24
        want = np.sqrt(-2 * np.log(u1)) * (np.cos(2 * np.pi * u2) if i % 2 == 0 else np.sin(2 * np.pi * u2))
        # The angle is taken in float32: a few float32 ulps of 2 pi at most.
        np.testing.assert_allclose(z[i], want, rtol=1e-6, atol=4e-6)
    ints = tfc.random.uniform([n], minval=-5, maxval=1000, dtype=tfc.int32, seed=seed).numpy()
    r64 = [int(w[2 * i]) | (int(w[2 * i + 1]) << 32) for i in range(n)]
    assert ints.tolist() == [-5 + (r * 1005 >> 64) for r in r64]


# -- distributions -------------------------------------------------------------------------------


def test_uniform_float32_statistics():
    v = tfc.random.uniform([10**6], seed=2024).numpy().astype(np.float64)
    assert v.min() >= 0 and v.max() < 1
    assert abs(v.mean() - 0.5) < 0.002 and abs(v.var() - 1 / 12) < 0.001  # ~7 sigma
    counts = np.bincount((v * 100).astype(np.int64), minlength=100)
    expected = len(v) / 100
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert 60 < chi2 < 150, chi2  # 99 degrees of freedom: p < 1e-3 either side
    # Successive values are not correlated.
    assert abs(np.corrcoef(v[:-1], v[1:])[0, 1]) < 0.005


@pytest.mark.parametrize("dtype", [tfc.float32, tfc.float64])
def test_normal_moments(dtype):
    v = tfc.random.normal([10**6], seed=77, dtype=dtype).numpy().astype(np.float64)
    m, s = v.mean(), v.std()
    z = (v - m) / s
    assert abs(m) < 0.006 and abs(s - 1) < 0.005
    assert abs((z**3).mean()) < 0.015 and abs((z**4).mean() - 3) < 0.04
    assert abs(np.corrcoef(v[0::2], v[1::2])[0, 1]) < 0.006  # the cos and sin halves of a pair
    # Tail mass beyond 3 sigma: 0.0027.
    assert abs((np.abs(v) > 3).mean() - 0.0027) < 0.0003


def test_normal_is_finite_at_extreme_words():
    lo = np.zeros(8, np.uint32)
    hi = np.full(8, 0xFFFFFFFF, np.uint32)
    for dt in (tfc.float16, tfc.float32, tfc.float64):
        for w in (lo, hi):
            z = R.normal_from_words(w, dt, 0.0, 1.0)
            assert np.isfinite(z).all()
    # u1 = 2^-32 (word 0) is the largest radius: sqrt(64 ln 2).
    assert R.normal_from_words(lo, tfc.float32, 0.0, 1.0)[0] == np.float32(np.sqrt(64 * np.log(2)))


@pytest.mark.parametrize("dtype,lo,hi", [
    (tfc.float16, 0.0, 1.0), (tfc.float16, -3.0, 5.0), (tfc.float32, 1.0, 2.0), (tfc.float32, 0.0, 1.0),
    (tfc.float64, 1.0, 2.0), (tfc.float64, -1.0, 1.0)])
def test_uniform_half_open_at_the_bound(dtype, lo, hi):
    """The largest words map to the largest value below maxval; word 0 to minval."""
    np_dt = dtype.as_numpy_dtype
    top = R.uniform_from_words(np.full(8, 0xFFFFFFFF, np.uint32), dtype, lo, hi)
    assert top.dtype == np_dt and (top < np_dt.type(hi)).all()
    umax = 1 - (2.0**-53 if dtype == tfc.float64 else 2.0**-24)
    assert top[0] == min(np_dt.type(lo + umax * (hi - lo)), np.nextafter(np_dt.type(hi), np_dt.type(lo)))
    assert (R.uniform_from_words(np.zeros(8, np.uint32), dtype, lo, hi) == np_dt.type(lo)).all()
    v = tfc.random.uniform([20000], minval=lo, maxval=hi, dtype=dtype, seed=4).numpy()
    assert v.min() >= lo and v.max() < hi


def test_uniform_float16_rounding_lands_below_maxval():
    # 1 - 2^-24 rounds to 1.0 in float16; the clamp keeps it below.
    top = R.uniform_from_words(np.full(1, 0xFFFFFFFF, np.uint32), tfc.float16, 0.0, 1.0)
    assert top[0] == np.nextafter(np.float16(1), np.float16(0))


@pytest.mark.parametrize("lo,hi", [(-3, 4), (0, 1), (-128, 128), (0, 2**32), (-(2**31), 2**31 + 1),
                                   (-(2**63), 2**63), (2**62, 2**62 + 3)])
def test_integers_from_extreme_words(lo, hi):
    k = R._int_words(hi - lo)
    assert k == (2 if hi - lo <= 2**32 else 4)
    dt = tfc.int64
    assert R.integers_from_words(np.zeros(2 * k, np.uint32), dt, lo, hi).tolist() == [lo, lo]
    assert R.integers_from_words(np.full(2 * k, 0xFFFFFFFF, np.uint32), dt, lo, hi).tolist() == [hi - 1] * 2
    # Random words: exact multiply-shift against Python integers.
    w = R.random_words((3, 4), 0, 40 * k)
    r = [sum(int(x) << (32 * j) for j, x in enumerate(w[i * k:(i + 1) * k])) for i in range(40)]  # first word lowest
    assert R.integers_from_words(w, dt, lo, hi).tolist() == [lo + (x * (hi - lo) >> (32 * k)) for x in r]


def test_integer_ranges_and_balance():
    v = tfc.random.uniform([10**5], minval=-128, maxval=128, dtype=tfc.int8, seed=5).numpy()
    assert v.dtype == np.int8 and v.min() == -128 and v.max() == 127
    counts = np.bincount(v.astype(np.int64) + 128, minlength=256)
    expected = len(v) / 256
    assert ((counts - expected) ** 2 / expected).sum() < 350  # 255 dof, p ~ 1e-4
    v = tfc.random.uniform([3 * 10**5], minval=0, maxval=3, dtype=tfc.int32, seed=6).numpy()
    assert abs(np.bincount(v) / len(v) - 1 / 3).max() < 0.004
    big = tfc.random.uniform([10**5], minval=-(2**63), maxval=2**63, dtype=tfc.int64, seed=8).numpy()
    assert big.dtype == np.int64 and abs((big < 0).mean() - 0.5) < 0.01
    assert abs((big.view(np.uint64) & np.uint64(1)).mean() - 0.5) < 0.01  # low bits vary too
    assert big.min() < -(2**62) and big.max() > 2**62
    wide = tfc.random.uniform([10**4], minval=0, maxval=2**40 + 1, dtype=tfc.int64, seed=8).numpy()
    assert wide.min() >= 0 and wide.max() <= 2**40 and wide.max() > 2**39


def test_integer_bound_errors():
    with pytest.raises(ValueError, match="outside int8's range"):
        tfc.random.uniform([2], minval=0, maxval=129, dtype=tfc.int8)
    with pytest.raises(ValueError, match="outside int64's range"):
        tfc.random.uniform([2], minval=-(2**63) - 2**11, maxval=0, dtype=tfc.int64)
    with pytest.raises(ValueError, match="float64 represents exactly"):
        tfc.random.uniform([2], minval=0, maxval=2**63 - 1, dtype=tfc.int64)
    with pytest.raises(ValueError, match="must be an integer"):
        tfc.random.uniform([2], minval=0.5, maxval=3, dtype=tfc.int32)


def test_chunk_independence_of_ops():
    """The first k elements of a draw of n are a draw of k from the same counter base."""
    n = 4 * R._CHUNK + 101
    for kw in ({}, {"dtype": tfc.float64}, {"dtype": tfc.float16, "minval": -1, "maxval": 2},
               {"dtype": tfc.int64, "minval": -(2**63), "maxval": 2**63},
               {"dtype": tfc.int8, "minval": -3, "maxval": 9}):
        full = tfc.random.uniform([n], seed=31, **kw).numpy()
        for k in (1, 2, 5, 4 * R._CHUNK + 1):
            np.testing.assert_array_equal(full[:k], tfc.random.uniform([k], seed=31, **kw).numpy())
    for dt in (tfc.float32, tfc.float64):
        full = tfc.random.normal([n], seed=31, dtype=dt).numpy()
        for k in (1, 2, 3, 4 * R._CHUNK + 1):
            np.testing.assert_array_equal(full[:k], tfc.random.normal([k], seed=31, dtype=dt).numpy())
    # The shape does not matter, only the row-major element index.
    np.testing.assert_array_equal(tfc.random.normal([6, 7], seed=2).numpy().ravel(),
                                  tfc.random.normal([42], seed=2).numpy())


# -- the global stream ------------------------------------------------------------------------


def test_global_stream_counter_advances_by_blocks():
    tfc.random.set_seed(2**40 + 17)
    key = R.seed_key(2**40 + 17)
    a = tfc.random.uniform([5]).numpy()  # 5 words: blocks 0, 1
    b = tfc.random.uniform([3], dtype=tfc.float64).numpy()  # 6 words: blocks 2, 3
    c = tfc.random.normal([3]).numpy()  # 2 pairs, 4 words: block 4
    w = R.random_words(key, 0, 20, R.GLOBAL)
    np.testing.assert_array_equal(a, R.uniform_from_words(w[:5], tfc.float32, 0, 1))
    np.testing.assert_array_equal(b, R.uniform_from_words(w[8:14], tfc.float64, 0, 1))
    np.testing.assert_array_equal(c, R.normal_from_words(w[16:20], tfc.float32, 0.0, 1.0)[:3])
    assert R._GLOBAL[0].counter == 5


def test_global_stream_and_seeded_ops_use_different_counters():
    tfc.random.set_seed(3)
    assert not np.array_equal(tfc.random.uniform([8]).numpy(), tfc.random.uniform([8], seed=3).numpy())


def _mixed_draws():
    from tfc.ops.conv import dropout

    init = tfc.layers.GlorotUniform()
    return [tfc.random.uniform([7, 3]).numpy(), tfc.random.normal([5], dtype=tfc.float64).numpy(),
            tfc.random.uniform([9], minval=-(2**63), maxval=2**63, dtype=tfc.int64).numpy(),
            dropout(tfc.ones([4, 6]), 0.5).numpy(), init((3, 2)), tfc.random.uniform([0, 3]).numpy(),
            tfc.random.normal([3], seed=1).numpy(), tfc.random.normal([1], dtype=tfc.float16).numpy()]


def test_set_seed_reproduces_a_sequence_of_mixed_draws():
    tfc.random.set_seed(2**64 - 1)
    first = _mixed_draws()
    tfc.random.set_seed(2**64 - 1)
    again = _mixed_draws()
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)
    tfc.random.set_seed(0)
    assert not np.array_equal(_mixed_draws()[0], first[0])


def test_unseeded_runs_differ():
    tfc.random.set_seed(None)
    a = tfc.random.uniform([4]).numpy()
    tfc.random.set_seed(None)
    assert not np.array_equal(a, tfc.random.uniform([4]).numpy())


def test_seeded_generator_for_initializers():
    g1, g2 = R.generator(5), R.generator(5)
    a = [g1.uniform(-1, 1, (3, 4)), g1.normal(0.0, 2.0, (5,)), g1.random(2), g1.integers(0, 10, (6,))]
    b = [g2.uniform(-1, 1, (3, 4)), g2.normal(0.0, 2.0, (5,)), g2.random(2), g2.integers(0, 10, (6,))]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert a[0].shape == (3, 4) and a[0].dtype == np.float64 and (np.abs(a[0]) < 1).all()
    assert a[3].dtype == np.int64 and a[3].min() >= 0 and a[3].max() < 10
    assert not np.array_equal(a[2], g1.random(2))  # a private stream advances


# -- compiled code draws the same values --------------------------------------------------------


def test_seeded_draws_same_eager_and_compiled():
    from tfc.ops.conv import dropout_mask

    def draws(x):
        return (tfc.random.uniform([5, 3], seed=2**63 + 5) + x,
                tfc.random.normal([7], seed=2**64 - 1, dtype=tfc.float64),
                tfc.random.uniform([6], minval=-(2**63), maxval=2**63, dtype=tfc.int64, seed=9),
                tfc.random.uniform([4], minval=-2, maxval=3, dtype=tfc.float16, seed=1),
                dropout_mask(tfc.ones([3, 5]), 0.25, seed=4))

    x = tfc.constant(0.0)
    f = tfc.function(draws)
    for _ in range(2):  # the same values on every call
        for a, b in zip(f(x), draws(x)):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_global_stream_same_eager_and_compiled():
    """One sequence of draws: eager or compiled, the global stream gives the same values."""
    def draws(x):
        return (tfc.random.uniform([5]) + x, tfc.random.normal([3, 3]),
                tfc.random.uniform([4], minval=0, maxval=7, dtype=tfc.int32), tfc.nn.dropout(tfc.ones([9]) * x, 0.5))

    x = tfc.constant(1.0)
    f = tfc.function(draws)
    f(x)  # trace outside the recorded sequence
    tfc.random.set_seed(42)
    eager = [draws(x), draws(x)]
    tfc.random.set_seed(42)
    mixed = [f(x), draws(x)]
    for e, m in zip(eager, mixed):
        for a, b in zip(e, m):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


# -- dropout --------------------------------------------------------------------------------------


def test_dropout_mask_rate_and_scaling():
    from tfc.ops.conv import dropout_mask

    for dt, rate in ((tfc.float32, 0.3), (tfc.float64, 0.9), (tfc.float16, 0.5)):
        m = dropout_mask(tfc.zeros([1000, 1000], dt), rate, seed=12).numpy()
        assert m.dtype == dt.as_numpy_dtype
        scale = np.asarray(1 / (1 - rate), dt.as_numpy_dtype)
        assert set(np.unique(m).tolist()) == {0.0, float(scale)}
        assert abs((m != 0).mean() - (1 - rate)) < 0.002
    w = R.random_words(R.seed_key(12), 0, 10)
    np.testing.assert_array_equal(dropout_mask(tfc.zeros([10]), 0.3, seed=12).numpy() != 0,
                                  w >= np.ceil(0.3 * 2**32))


def test_dropout_keep_threshold_is_exact():
    t = int(np.ceil(0.25 * 2**32))
    w = np.array([0, t - 1, t, t + 1, 0xFFFFFFFF], np.uint32)
    assert R.keep_from_words(w, 0.25).tolist() == [False, False, True, True, True]
    assert R.keep_from_words(w, 0.0).all()
    assert not R.keep_from_words(w, 1 - 2.0**-40).any()  # ceil(rate * 2^32) = 2^32: nothing kept
    assert R.keep_from_words(w, 1 - 2.0**-31).tolist() == [False] * 4 + [True]  # only the top word
    assert not R.keep_from_words(np.array([0xFFFFFFFF], np.uint32), 1 - 2.0**-53).any()


def test_dropout_mask_noise_shape_numbers_the_mask_elements():
    from tfc.ops.conv import dropout_mask

    m = dropout_mask(tfc.zeros([4, 5, 3]), 0.5, noise_shape=(4, 1, 3), seed=8).numpy()
    np.testing.assert_array_equal(m.ravel(), dropout_mask(tfc.zeros([12]), 0.5, seed=8).numpy())


def test_global_stream_draws_are_atomic_across_threads():
    """Each draw takes its blocks at once: threads drawing together get disjoint,
    whole slices of the stream (which slice depends on the order they arrive)."""
    import threading

    tfc.random.set_seed(5)
    results, n = [], 4 * R._CHUNK + 8  # more than one chunk each
    lock = threading.Lock()

    def work():
        v = tfc.random.uniform([n]).numpy()
        with lock:
            results.append(v)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    whole = R.uniform_from_words(R.random_words(R.seed_key(5), 0, 6 * n, R.GLOBAL), tfc.float32, 0, 1)
    slots = sorted(next(j for j in range(6) if np.array_equal(v, whole[j * n:(j + 1) * n])) for v in results)
    assert slots == list(range(6))


def test_tracing_draws_nothing_and_loops_draw_in_order():
    """Tracing a function consumes no random numbers, and a compiled loop draws
    per iteration in the order eager mode does."""
    def draws(x):
        return tfc.random.uniform([5]) + x, tfc.random.normal([3, 3], dtype=tfc.float64)

    def loop(x):
        s = tfc.zeros([3]) + x
        for _ in tfc.range(4):
            s = s + tfc.random.uniform([3])
        return s

    def as_list(v):
        return list(v) if isinstance(v, tuple) else [v]

    x = tfc.constant(1.0)
    for fn in (draws, loop):
        tfc.random.set_seed(17)
        eager = as_list(fn(x))
        tfc.random.set_seed(17)
        compiled = as_list(tfc.function(fn)(x))  # traced here, after set_seed
        assert len(eager) == len(compiled)
        for a, b in zip(eager, compiled):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_bounds_must_be_finite_and_huge_spans_stay_finite():
    for kw in ({"minval": -np.inf, "maxval": 0.0}, {"maxval": np.inf}, {"minval": np.nan}):
        with pytest.raises(ValueError, match="uniform: minval and maxval must be finite"):
            tfc.random.uniform([2], **kw)
    for kw in ({"mean": np.inf}, {"stddev": np.nan}):
        with pytest.raises(ValueError, match="normal: mean and stddev must be finite"):
            tfc.random.normal([2], **kw)
    v = tfc.random.uniform([10**4], minval=-1.5e308, maxval=1.7e308, dtype=tfc.float64, seed=1).numpy()
    assert np.isfinite(v).all() and v.min() < -1e308 and v.max() > 1e308 and (v < 1.7e308).all()
    assert abs((v / 1e308).mean() - 0.1) < 0.05
    w = np.array([0, 0, 0xFFFFFFFF, 0xFFFFFFFF], np.uint32)
    ends = R.uniform_from_words(w, tfc.float64, -1.5e308, 1.7e308)
    assert ends[0] == -1.5e308 and ends[1] < 1.7e308
