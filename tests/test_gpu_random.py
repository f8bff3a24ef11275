"""Random ops on the GPU (tfc/passes/gpu_random.py, docs/random.md): compiled
target="cuda" functions with uniform, integer, dropout and normal draws run the
Philox4x32-10 kernels (on the PTX simulator, and on a GPU where there is one:
the ``gpu`` variants) and give the numpy kernel's bits (normals: within the
documented ulps); seeded ops at counter 0, the global stream reserved on the
host so that eager and compiled draws interleave as on the CPU. Every kernel
assembles with ptxas for sm_80 and sm_90 within the elementwise budget."""
from __future__ import annotations

import numpy as np
import pytest

import tfc

pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator has not landed")
from test_lower_gpu import check_budgets, l3_of, lower  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _both(fn, *args):
    """(numpy backend results, cuda results) of ``fn``, as host arrays."""
    want = tfc.function(fn)(*args)
    got = tfc.function(fn, target="cuda")(*args)
    as_list = (lambda r: [np.asarray(v) for v in r]) if isinstance(want, (tuple, list)) else \
        (lambda r: [np.asarray(r)])
    return as_list(want), as_list(got)


def _exact(fn, *args):
    want, got = _both(fn, *args)
    for w, g in zip(want, got):
        assert w.dtype == g.dtype and w.shape == g.shape
        assert np.array_equal(w, g), (w, g)


# sizes: under one Philox block, a partial last block, several GPU blocks with a partial one
SIZES = [(1,), (7,), (3, 5), (1031,)]


@pytest.mark.parametrize("shape", SIZES)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_uniform_bit_exact(cuda_driver, shape, dtype):
    _exact(lambda: (tfc.random.uniform(shape, dtype=dtype, seed=11),
                    tfc.random.uniform(shape, minval=-3.5, maxval=2.25, dtype=dtype, seed=2**64 - 5)))


def test_uniform_wide_spans(cuda_driver):
    # a span past float64's range (lo*(1 - u) + hi*u) and rounding onto maxval in float16 (kept below it)
    _exact(lambda: (tfc.random.uniform([257], minval=-1.5e308, maxval=1.7e308, dtype="float64", seed=1),
                    tfc.random.uniform([515], minval=0.0, maxval=2048.0, dtype="float16", seed=3)))


@pytest.mark.parametrize("dtype,lo,hi", [("int32", -5, 9), ("int64", -2**40, -2**40 + 2**32), ("int64", 0, 2**32),
                                         ("int8", -128, 128), ("int32", -2**31, 2**31),
                                         ("int64", -2**40, 2**50 + 3), ("int64", -2**63, 2**63)])
def test_uniform_integers_bit_exact(cuda_driver, dtype, lo, hi):
    _exact(lambda: tfc.random.uniform([1027], minval=lo, maxval=hi, dtype=dtype, seed=5))


@pytest.mark.parametrize("rate", [0.0, 0.25, 0.5, 0.999])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_dropout_bit_exact(cuda_driver, rate, dtype):
    x = tfc.constant(np.random.default_rng(1).standard_normal((33, 9)).astype(dtype))
    _exact(lambda x: (tfc.nn.dropout(x, rate, seed=9), tfc.nn.dropout(x, rate, noise_shape=[33, 1], seed=4)), x)


def test_global_stream_interleaves(cuda_driver):
    """Unseeded draws: eager and compiled cuda draws after set_seed take the
    same slices of the global stream as the same sequence on the CPU."""
    def f():
        return tfc.random.uniform([9]), tfc.random.normal([6], mean=1.0, stddev=2.0), \
            tfc.random.uniform([5], minval=0, maxval=10, dtype="int32")

    def run(compiled):
        tfc.random.set_seed(123)
        out = [np.asarray(v) for v in compiled()]
        out.append(np.asarray(tfc.random.uniform([3])))  # eager, between the calls
        out += [np.asarray(v) for v in compiled()]
        return out

    want, got = run(tfc.function(f)), run(tfc.function(f, target="cuda"))
    for k, (w, g) in enumerate(zip(want, got)):
        if k % 4 == 1 or k == 5:  # normals (indices 1 and 5)
            np.testing.assert_allclose(g, w, rtol=0, atol=8 * 2.0 * np.spacing(np.float32(8)))
        else:
            assert np.array_equal(w, g), k
    assert not np.array_equal(got[0], got[4])  # the second call drew new values


def _ulps(a, b):
    """Distance in float32 ulps of the larger magnitude."""
    return np.abs(a.astype(np.float64) - b.astype(np.float64)) / np.spacing(
        np.maximum(np.abs(a), np.abs(b)).astype(np.float32)).astype(np.float64)


def test_normal_within_ulps(cuda_driver):
    want, got = _both(lambda: tfc.random.normal([4099], seed=77))
    (w,), (g,) = want, got
    assert g.dtype == np.float32 and np.isfinite(g).all()
    # the documented bound: 8 ulps of z, or 2^-20 absolute near 0 (cos/sin's absolute error times r <= 6.7).
    # Draws with u1 near 1 (hundreds here) hold it only through the log1p form: float32(u1) there
    # would be off by up to 2^-25, tens of ulps of r.
    bad = (_ulps(w, g) > 8) & (np.abs(w - g) > 2.0 ** -20)
    assert not bad.any(), (w[bad], g[bad])


def test_normal_float16_and_affine(cuda_driver):
    want, got = _both(lambda: (tfc.random.normal([515], mean=3.0, stddev=0.5, seed=1),
                               tfc.random.normal([130], dtype="float16", seed=2)))
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=8 * 0.5 * np.spacing(np.float32(8)) + 2e-6)
    assert got[1].dtype == np.float16
    assert (np.abs(got[1].astype(np.float32) - want[1].astype(np.float32))
            <= np.spacing(np.abs(want[1])).astype(np.float32) * 1.01).all()


def test_zero_size(cuda_driver):
    _exact(lambda: (tfc.random.uniform([0, 3], seed=1), tfc.random.normal([0])))


def _ulps64(a, b):
    return np.abs(a - b) / np.spacing(np.maximum(np.abs(a), np.abs(b)))


def test_normal_float64_within_ulps(cuda_driver):
    """float64 normals: the numpy kernel's formula in float64 (log and cos/sin
    within 1 ulp each, sqrt exact): within 4 float64 ulps of its values
    (measured: 3 over 2^15 draws), the affine step bit for bit."""
    want, got = _both(lambda: (tfc.random.normal([4097], dtype="float64", seed=77),
                               tfc.random.normal([515], mean=3.0, stddev=0.5, dtype="float64", seed=2),
                               tfc.random.normal([0, 2], dtype="float64", seed=3)))
    for w, g in zip(want, got):
        assert g.dtype == np.float64 and g.shape == w.shape and np.isfinite(g).all()
        assert (_ulps64(w, g) <= 4).all(), (w, g)
    assert (want[0] == got[0]).mean() > 0.5  # most draws are bit-identical


def test_truncated_normal_within_ulps(cuda_driver):
    """truncated_normal: the numpy kernel's inverse transform in float64 (its erf
    formula, three Newton steps): float64 within 8 ulps (5 measured over 2^15
    draws: exp's last bit inside erf, amplified by Newton near |z| = 2), float32
    and float16 within one ulp (bit-identical in every draw measured)."""
    want, got = _both(lambda: (tfc.random.truncated_normal([4097], dtype="float64", seed=77),
                               tfc.random.truncated_normal([1031], mean=3.0, stddev=0.5, seed=2),
                               tfc.random.truncated_normal([33], dtype="float16", seed=5),
                               tfc.random.truncated_normal([0], seed=1)))
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
    assert (_ulps64(want[0], got[0]) <= 8).all() and (np.abs(got[0]) <= 2).all()
    assert (_ulps(want[1], got[1]) <= 1).all() and (np.abs(got[1] - 3.0) <= 1.0).all()
    assert (np.abs(got[2].astype(np.float32) - want[2]) <= np.spacing(np.abs(want[2]))).all()


def test_truncated_normal_global_stream(cuda_driver):
    def f():
        return tfc.random.truncated_normal([9]), tfc.random.uniform([5])

    tfc.random.set_seed(21)
    want = [np.asarray(v) for v in tfc.function(f)()]
    tfc.random.set_seed(21)
    got = [np.asarray(v) for v in tfc.function(f, target="cuda")()]
    assert (_ulps(want[0], got[0]) <= 1).all()
    assert np.array_equal(want[1], got[1])  # the uniform after it took the next blocks of the stream


def test_ptxas_budgets():
    x = np.ones((5, 7), np.float32)
    m = lower(l3_of(lambda x: (tfc.random.uniform([1031], seed=1), tfc.random.normal([1031]),
                               tfc.nn.dropout(x, 0.3),
                               tfc.random.uniform([1031], minval=-7, maxval=2**32 - 7, dtype="int64", seed=2),
                               tfc.random.uniform([1031], minval=-2**63, maxval=2**63, dtype="int64"),
                               tfc.random.uniform([17], minval=-1.0, maxval=3.0, dtype="float64"),
                               tfc.random.uniform([17], dtype="float16"),
                               tfc.random.normal([17], mean=1.0, dtype="float64"),
                               tfc.random.truncated_normal([17], stddev=2.0)), x))
    check_budgets(m)


def test_eager_gpu_random_runs_the_kernel(cuda_driver):
    """Eager random ops on the GPU compile their kernel once (then hit the op
    cache) and draw the CPU's values from the same slices of the global stream;
    float64 normals run their kernel too (within 4 ulps of the CPU's)."""
    from tfc.core.tensor import GpuTensor
    from tfc.frontend import eager_gpu

    def draws():
        x = tfc.ones([4, 9])
        return [tfc.random.uniform([7]), tfc.random.uniform([7], minval=-2, maxval=2**40, dtype="int64"),
                tfc.nn.dropout(x, 0.5), tfc.random.uniform([7], seed=3), tfc.random.uniform([7]),
                tfc.random.normal([5], dtype="float64")]

    tfc.random.set_seed(5)
    want = [np.asarray(v) for v in draws()]
    tfc.random.set_seed(5)
    with tfc.device("gpu:0"):
        before = eager_gpu.compiles()
        got = draws()
        compiled = eager_gpu.compiles() - before
        again = draws()
    assert all(type(g) is GpuTensor for g in got)
    # uniform f32 (once: the second unseeded draw hits the cache), int64, the seeded one, dropout's
    # mask and its product (ones: a single-op fill at most)
    assert compiled >= 4
    runtimes = list(eager_gpu.RUNTIME._per_driver.values())
    assert {"uniform", "dropout_mask", "normal"} <= {k[0].name for r in runtimes for k in r.cache}
    for w, g in zip(want[:-1], got[:-1]):
        assert np.array_equal(w, np.asarray(g))
    assert (_ulps64(want[-1], np.asarray(got[-1])) <= 4).all()  # the float64 normal
    assert not np.array_equal(np.asarray(got[0]), np.asarray(again[0]))
    assert np.array_equal(np.asarray(got[3]), np.asarray(again[3]))  # seeded: the same values


@pytest.mark.parametrize("rows", [1, 2, 5, 300])
def test_shuffle_bit_exact(cuda_driver, rows):
    """shuffle_indices: the numpy kernel's 64-bit keys (a draw kernel) sorted
    unsigned by the GPU merge sort: the same permutation; shuffle gathers with it."""
    x = tfc.constant(np.arange(rows * 3, dtype=np.float32).reshape(rows, 3))
    _exact(lambda x: (tfc.random.shuffle(x, seed=7), tfc.random.shuffle(x[:, 0], seed=2**64 - 1)), x)


def test_shuffle_global_stream_and_empty(cuda_driver):
    x = tfc.constant(np.arange(40.0).reshape(20, 2))

    def f(x):
        return tfc.random.shuffle(x), tfc.random.uniform([3]), tfc.random.shuffle(x[:0])

    tfc.random.set_seed(9)
    want = [np.asarray(v) for v in tfc.function(f)(x)]
    tfc.random.set_seed(9)
    got = [np.asarray(v) for v in tfc.function(f, target="cuda")(x)]
    for w, g in zip(want, got):
        assert np.array_equal(w, g)


def test_shuffle_lowering_and_budgets():
    x = np.zeros((37, 2), np.float32)
    m = lower(l3_of(lambda x: tfc.random.shuffle(x), x))
    from test_lower_gpu import kernels

    names = [k.sym_name.data.split("_", 1)[1] for k in kernels(m)]
    # the keys, ceil(log2 37) merge passes, then gather's bounds check and the gather itself
    assert names[:7] == ["shuffle_keys"] + [f"argsort_w{1 << k}" for k in range(6)], names
    check_budgets(m)


def test_categorical_same_samples(cuda_driver):
    """categorical: the numpy kernel's words and its float64 inverse transform
    (exp within 1 ulp: a sample could differ only where u * total falls within
    an ulp of a running sum; none does here); strided logits, float32 logits
    with zero probabilities, int32 results, no samples."""
    rng = np.random.default_rng(8)
    lg = tfc.constant(rng.standard_normal((6, 11)) * 3)
    lg32 = tfc.constant(np.log(np.array([[0.2, 0.3, 0.5], [1, 0, 0], [0.5, 0.5, 0]], np.float32)))
    _exact(lambda a, b: (tfc.random.categorical(a, 37, seed=3), tfc.random.categorical(tfc.transpose(a), 4, seed=5),
                         tfc.random.categorical(b, 9, dtype="int32", seed=4), tfc.random.categorical(a, 0, seed=1)),
           lg, lg32)


def test_categorical_global_stream_and_bad_rows(cuda_driver):
    lg = tfc.constant(np.random.default_rng(9).standard_normal((3, 4)))

    def f(a):
        return tfc.random.categorical(a, 5), tfc.random.uniform([3])

    tfc.random.set_seed(4)
    want = [np.asarray(v) for v in tfc.function(f)(lg)]
    tfc.random.set_seed(4)
    got = [np.asarray(v) for v in tfc.function(f, target="cuda")(lg)]
    for w, g in zip(want, got):
        assert np.array_equal(w, g)
    g = tfc.function(lambda a: tfc.random.categorical(a, 3, seed=1), target="cuda")
    for bad in (-np.inf, np.nan, np.inf):
        with pytest.raises(tfc.errors.InvalidArgumentError, match="row 1 of logits has no finite maximum") as e:
            g(tfc.constant(np.array([[0.0, 1.0], [bad, -np.inf]])))
        assert any("test_gpu_random.py:" in n for n in e.value.__notes__)  # the user's line, as on the CPU


def test_categorical_budgets():
    m = lower(l3_of(lambda a: tfc.random.categorical(a, 7), np.ones((5, 9))))
    check_budgets(m)


def test_eager_gpu_truncated_normal(cuda_driver):
    """Eager truncated normals on the GPU run their kernel (a GpuTensor) on the
    global stream's blocks, as the CPU's draw (within its ulps)."""
    from tfc.core.tensor import GpuTensor

    tfc.random.set_seed(3)
    want = [np.asarray(tfc.random.truncated_normal([9], dtype="float64")),
            np.asarray(tfc.random.truncated_normal([5], seed=2))]
    tfc.random.set_seed(3)
    with tfc.device("gpu:0"):
        got = [tfc.random.truncated_normal([9], dtype="float64"), tfc.random.truncated_normal([5], seed=2)]
    assert all(type(g) is GpuTensor for g in got)
    assert (_ulps64(want[0], np.asarray(got[0])) <= 8).all()
    assert (_ulps(want[1], np.asarray(got[1])) <= 1).all()


def test_seeded_dropout_mask_compiled(cuda_driver):
    """seeded_dropout_mask on cuda: dropout_mask's kernel keyed by the seed
    operand when the call runs (any int64: negative ones as their two's
    complement), the CPU kernel's bits; noise_shape, float16/float64, an empty mask."""
    from tfc.ops.random import seeded_dropout_mask

    x = tfc.constant(np.random.default_rng(2).standard_normal((33, 9)).astype(np.float32))
    f = tfc.function(lambda x, s: (seeded_dropout_mask(x, s, 0.3), seeded_dropout_mask(x, s + 1, 0.5, noise_shape=[33, 1]),
                                   seeded_dropout_mask(tfc.cast(x, "float16"), s, 0.25),
                                   seeded_dropout_mask(tfc.cast(x, "float64"), s, 0.75),
                                   seeded_dropout_mask(x[:0], s, 0.5)), autograph=False)
    g = tfc.function(f.python_function, autograph=False, target="cuda")
    for seed in (0, 7, -1, -2**63):
        s = tfc.constant(np.int64(seed))
        for w, c in zip(f(x, s), g(x, s)):
            w, c = np.asarray(w), np.asarray(c)
            assert w.dtype == c.dtype and w.shape == c.shape and np.array_equal(w, c), seed
    # seed -1 is dropout_mask's seed 2^64 - 1
    assert np.array_equal(np.asarray(g(x, tfc.constant(np.int64(-1)))[0]),
                          np.asarray(tfc.ops.conv.dropout_mask(x, 0.3, seed=2**64 - 1)))


def test_seeded_dropout_mask_eager_gpu(cuda_driver):
    """Eagerly on the fake device, with the seed a host scalar or a GPU tensor:
    one compiled kernel for every seed, the CPU's mask."""
    from tfc.core.tensor import GpuTensor
    from tfc.frontend import eager_gpu
    from tfc.ops.random import seeded_dropout_mask

    x = np.random.default_rng(3).standard_normal((7, 5)).astype(np.float32)
    want = [np.asarray(seeded_dropout_mask(tfc.constant(x), tfc.constant(np.int64(s)), 0.4)) for s in (3, -5, 3)]
    xg = tfc.constant(x).gpu()
    got = [seeded_dropout_mask(xg, tfc.constant(np.int64(3)), 0.4)]
    before = eager_gpu.compiles()
    got.append(seeded_dropout_mask(xg, tfc.constant(np.int64(-5)), 0.4))  # another seed: the same kernel
    assert eager_gpu.compiles() == before
    got.append(seeded_dropout_mask(xg, tfc.constant(np.int64(3)).gpu(), 0.4))  # a 0-d GPU seed
    assert all(type(g) is GpuTensor for g in got)
    for w, g in zip(want, got):
        assert np.array_equal(w, np.asarray(g))


def test_seeded_dropout_layer_compiled_on_cuda(cuda_driver):
    """A seeded Dropout in a compiled training step on cuda: call k draws the
    mask of seed + k (read from the layer's count when the call runs), as the
    numpy backend's step, call after call, gradient included."""
    def run(target):
        dense = tfc.layers.Dense(4, kernel_initializer=tfc.layers.GlorotUniform(seed=1))
        drop = tfc.layers.Dropout(0.5, seed=2**64 - 2)  # call 1 wraps to seed 0

        def step(x):
            with tfc.GradientTape() as t:
                y = drop(dense(x), training=True)
                loss = tfc.reduce_sum(y ** 2)
            return y, t.gradient(loss, dense.kernel)

        f = tfc.function(step, target=target)
        x = tfc.constant(np.linspace(-1, 1, 40, dtype=np.float32).reshape(10, 4))
        out = [[np.asarray(v) for v in f(x)] for _ in range(3)]
        return out, int(np.asarray(drop.seed_calls.numpy()))

    want, n_cpu = run("cpu")
    got, n_gpu = run("cuda")
    assert n_cpu == n_gpu == 3
    assert not np.array_equal(want[0][0] == 0, want[1][0] == 0)  # a new mask each call
    for k, (w, g) in enumerate(zip(want, got)):
        for a, b in zip(w, g):
            assert np.array_equal(a, b), k


def test_seeded_dropout_mask_lowering_and_budgets():
    from tfc.ops.random import seeded_dropout_mask

    m = lower(l3_of(lambda x, s: seeded_dropout_mask(x, s, 0.5), np.ones((5, 7), np.float32), np.int64(3)))
    from test_lower_gpu import kernels

    assert [k.sym_name.data.split("_", 1)[1] for k in kernels(m)] == ["seeded_dropout_mask_f32"]
    check_budgets(m)


def test_eager_gpu_shuffle_and_categorical_run_their_kernels(cuda_driver):
    """Eager shuffle and categorical on GPU tensors compile their kernels (the
    draw and merge sort; the check and inverse transform) and take the same
    slices of the global stream as the CPU's, with the CPU's results; a row
    with no distribution raises the CPU's error after reserving the draw, as
    the CPU's kernel draws before it raises."""
    from tfc.core.tensor import GpuTensor
    from tfc.frontend import eager_gpu

    rng = np.random.default_rng(4)
    x = rng.standard_normal((37, 3)).astype(np.float32)
    lg = rng.standard_normal((5, 8)) * 2
    bad = np.array([[0.0, 1.0], [np.nan, 0.0]])

    def draws(x, lg, bad):
        out = [tfc.random.shuffle(x), tfc.random.categorical(lg, 6), tfc.random.shuffle(x[:, 0], seed=2**64 - 3),
               tfc.random.categorical(lg, 4, dtype="int32", seed=5)]
        with pytest.raises(tfc.errors.InvalidArgumentError, match="row 1 of logits has no finite maximum"):
            tfc.random.categorical(bad, 3)
        return out + [tfc.random.uniform([3])]

    tfc.random.set_seed(6)
    want = [np.asarray(v) for v in draws(tfc.constant(x), tfc.constant(lg), tfc.constant(bad))]
    tfc.random.set_seed(6)
    with tfc.device("gpu:0"):  # (the last uniform takes no tensor)
        got = draws(tfc.constant(x).gpu(), tfc.constant(lg).gpu(), tfc.constant(bad).gpu())
    assert all(type(g) is GpuTensor for g in got)
    for w, g in zip(want, got):
        assert w.dtype == np.asarray(g).dtype and np.array_equal(w, np.asarray(g))
    names = {k[0].name for r in eager_gpu.RUNTIME._per_driver.values() for k in r.cache}
    assert {"shuffle_indices", "categorical"} <= names
    assert not any(k[0].name in ("shuffle_indices", "categorical")
                   for r in eager_gpu.RUNTIME._per_driver.values() for k in r.on_host)
