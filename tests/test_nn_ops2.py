"""The nn ops a TensorFlow user reaches for (gelu, silu, erf, moments,
layer_norm, embedding_lookup): values against numpy/math, gradients against
finite differences (float64), compiled (numpy backend) bit-identical to eager."""
import math

import numpy as np
import pytest

import tfc
from helpers import check_grad, check_second_grad
from tfc.ops.math import erf


def erf_ref(x):
    return np.vectorize(math.erf)(np.asarray(x, np.float64))


def same_compiled(f, *arrays):
    """f eagerly and under tfc.function (static and None signatures) give the same bits."""
    want = f(*[tfc.constant(a) for a in arrays])
    wants = want if isinstance(want, (list, tuple)) else [want]
    static = tfc.function(f)
    dynamic = tfc.function(f, input_signature=[tfc.TensorSpec([None] * a.ndim, tfc.as_dtype(a.dtype))
                                               for a in arrays])
    for fn in (static, dynamic):
        got = fn(*[tfc.constant(a) for a in arrays])
        gots = got if isinstance(got, (list, tuple)) else [got]
        for g, w in zip(gots, wants):
            assert g.dtype == w.dtype
            assert np.array_equal(g.numpy(), w.numpy(), equal_nan=True), fn
    return wants


@pytest.mark.parametrize("dtype, ulps", [(np.float64, 2.5), (np.float32, 1.5), (np.float16, 1.0)])
def test_erf_accuracy(dtype, ulps):
    x = np.concatenate([np.linspace(-7, 7, 20001), [0.0, -0.0, 1.0, -1.0, 4.0, 6.0]]).astype(dtype)
    got = erf(x).numpy()
    assert got.dtype == dtype
    ref = erf_ref(x)
    err = np.abs(got.astype(np.float64) - ref) / np.maximum(np.abs(ref), np.finfo(dtype).tiny)
    assert err.max() <= ulps * np.finfo(dtype).eps
    np.testing.assert_array_equal(erf(np.array([np.nan, np.inf, -np.inf, -0.0], dtype)).numpy(),
                                  np.array([np.nan, 1, -1, -0.0], dtype))
    assert np.signbit(erf(np.array([-0.0], dtype)).numpy()[0])


def test_erf_gradient_and_compiled(rng):
    check_grad(erf, rng.normal(size=(7,)) * 2)
    check_second_grad(erf, rng.normal(size=(5,)))
    for dtype in (np.float64, np.float32, np.float16):
        same_compiled(lambda t: erf(t * 3), np.linspace(-3, 3, 301).astype(dtype))


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu(rng, approximate):
    x = np.linspace(-8, 8, 1601)
    if approximate:
        want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    else:
        want = 0.5 * x * (1 + erf_ref(x / np.sqrt(2)))
    np.testing.assert_allclose(tfc.nn.gelu(x, approximate=approximate).numpy(), want, rtol=1e-14, atol=1e-15)
    # float32: 1 + tanh cancels for very negative x (an absolute error of x * eps, as TensorFlow)
    np.testing.assert_allclose(tfc.nn.gelu(x.astype(np.float32), approximate).numpy(), want, rtol=2e-6, atol=1e-6)
    check_grad(lambda t: tfc.nn.gelu(t, approximate=approximate), rng.normal(size=(9,)) * 3)
    check_second_grad(lambda t: tfc.nn.gelu(t, approximate=approximate), rng.normal(size=(5,)))
    for dtype in (np.float64, np.float32, np.float16):
        same_compiled(lambda t: tfc.nn.gelu(t * 2 + 1, approximate=approximate) * 3,
                      rng.normal(size=(4, 33)).astype(dtype))


def test_silu(rng):
    x = rng.normal(size=(5, 6)) * 4
    np.testing.assert_allclose(tfc.nn.silu(x).numpy(), x / (1 + np.exp(-x)), rtol=1e-14)
    check_grad(tfc.nn.silu, x)
    check_second_grad(tfc.nn.silu, rng.normal(size=(5,)))
    for dtype in (np.float64, np.float32, np.float16):
        same_compiled(lambda t: tfc.nn.silu(t) + 1, x.astype(dtype))


def test_activation_errors():
    with pytest.raises(TypeError, match="gelu.*int32"):
        tfc.nn.gelu(tfc.constant([1, 2]))
    with pytest.raises(TypeError, match="silu.*int32"):
        tfc.nn.silu(tfc.constant([1, 2]))


@pytest.mark.parametrize("axes, keepdims", [([0], False), ([0, 2], True), (-1, False), ([1, 2], False)])
def test_moments(rng, axes, keepdims):
    x = rng.normal(size=(3, 4, 5)) * 2 + 1
    m, v = tfc.nn.moments(x, axes, keepdims=keepdims)
    ax = tuple(np.atleast_1d(axes))
    np.testing.assert_allclose(m.numpy(), x.mean(axis=ax, keepdims=keepdims), rtol=1e-13)
    np.testing.assert_allclose(v.numpy(), x.var(axis=ax, keepdims=keepdims), rtol=1e-12)
    w1, w2 = rng.normal(size=m.shape), rng.normal(size=m.shape)
    check_grad(lambda t: tfc.nn.moments(t, axes, keepdims=keepdims)[0] * w1
               + tfc.nn.moments(t, axes, keepdims=keepdims)[1] * w2, x)
    check_grad(lambda t: tfc.nn.moments(t, axes, keepdims=keepdims)[1], x)  # the mean unused: its gradient is zeros
    same_compiled(lambda t: tfc.nn.moments(t * 2, axes, keepdims=keepdims), x.astype(np.float32))


def test_moments_errors():
    with pytest.raises(ValueError, match="moments.*axis 3 is out of range"):
        tfc.nn.moments(tfc.ones([2, 3]), [3])
    with pytest.raises(TypeError, match="moments.*int32"):
        tfc.nn.moments(tfc.constant([1, 2]), [0])
    with pytest.raises(ValueError, match="moments: repeated axis"):
        tfc.nn.moments(tfc.ones([2, 3]), [1, -1])


def np_layer_norm(x, axes, eps):
    m = x.mean(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)


@pytest.mark.parametrize("axis", [-1, (1, 2)])
def test_layer_norm(rng, axis):
    x = rng.normal(size=(3, 4, 6)) * 3 + 2
    gamma, beta = rng.normal(size=(6,)), rng.normal(size=(6,))
    ax = tuple(np.atleast_1d(axis))
    np.testing.assert_allclose(tfc.nn.layer_norm(x, axis=axis, epsilon=1e-5).numpy(),
                               np_layer_norm(x, ax, 1e-5), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(tfc.nn.layer_norm(x, gamma, beta, axis=axis).numpy(),
                               np_layer_norm(x, ax, 1e-3) * gamma + beta, rtol=1e-12, atol=1e-13)
    w = rng.normal(size=x.shape)
    check_grad(lambda t, gm, bt: tfc.nn.layer_norm(t, gm, bt, axis=axis) * w, x, gamma, beta)
    check_second_grad(lambda t: tfc.nn.layer_norm(t, epsilon=0.1) * w[0], rng.normal(size=(4, 6)))
    for dtype in (np.float64, np.float32):
        same_compiled(lambda t, gm, bt: tfc.nn.layer_norm(t, gm, bt, axis=axis), x.astype(dtype),
                      gamma.astype(dtype), beta.astype(dtype))


def test_layer_norm_errors():
    with pytest.raises(ValueError, match="normalize.*epsilon must be > 0"):
        tfc.nn.layer_norm(tfc.ones([2, 3]), epsilon=0.0)
    with pytest.raises(TypeError, match="normalize.*int32"):
        tfc.nn.layer_norm(tfc.constant([[1, 2]]))


def test_layer_norm_training_step_compiled(rng):
    """A compiled gradient through layer_norm and gelu equals the eager one bit for bit."""
    x = rng.normal(size=(8, 16)).astype(np.float32)
    w = tfc.Variable(rng.normal(size=(16, 16)).astype(np.float32))

    def step(t):
        with tfc.GradientTape() as tape:
            loss = tfc.reduce_sum(tfc.square(tfc.nn.gelu(tfc.nn.layer_norm(tfc.matmul(t, w)))))
        return loss, tape.gradient(loss, w)

    want = step(tfc.constant(x))
    got = tfc.function(step)(tfc.constant(x))
    for g, e in zip(got, want):
        assert np.array_equal(g.numpy(), e.numpy())


def test_embedding_lookup(rng):
    params = rng.normal(size=(7, 3))
    ids = np.array([[0, 6, 2], [2, 2, 5]])
    np.testing.assert_array_equal(tfc.nn.embedding_lookup(params, ids).numpy(), params[ids])
    np.testing.assert_array_equal(tfc.nn.embedding_lookup([params], ids).numpy(), params[ids])
    w = rng.normal(size=(2, 3, 3))
    check_grad(lambda p: tfc.nn.embedding_lookup(p, ids) * w, params)
    # the gradient is a scatter-add: repeated ids add up
    p = tfc.constant(params)
    with tfc.GradientTape() as tape:
        tape.watch(p)
        y = tfc.reduce_sum(tfc.nn.embedding_lookup(p, ids))
    np.testing.assert_array_equal(tape.gradient(y, p).numpy()[:, 0], [1, 0, 3, 0, 0, 1, 1])
    same_compiled(lambda q, i: tfc.nn.embedding_lookup(q, i) * 2, params.astype(np.float32), ids)
    # max_norm: rows longer than it are scaled down to it, shorter ones kept
    got = tfc.nn.embedding_lookup(params, ids, max_norm=1.0).numpy()
    norms = np.linalg.norm(params[ids], axis=-1, keepdims=True)
    np.testing.assert_allclose(got, params[ids] * np.minimum(1, 1 / norms), rtol=1e-14)
    check_grad(lambda p: tfc.nn.embedding_lookup(p, ids, max_norm=1.0) * w, params)


def test_embedding_lookup_errors():
    with pytest.raises(tfc.errors.InvalidArgumentError):
        tfc.nn.embedding_lookup(np.ones((3, 2)), np.array([3]))
    with pytest.raises(NotImplementedError, match="partitioned into 2"):
        tfc.nn.embedding_lookup([np.ones((3, 2)), np.ones((3, 2))], np.array([0]))
    with pytest.raises(ValueError, match="max_norm needs params of rank >= 2"):
        tfc.nn.embedding_lookup(np.ones(3), np.array([0]), max_norm=1.0)


@pytest.mark.parametrize("axis", [None, -1, (0, 2)])
def test_l2_normalize(rng, axis):
    x = rng.normal(size=(3, 4, 5))
    ax = None if axis is None else tuple(np.atleast_1d(axis))
    want = x / np.sqrt(np.maximum(np.sum(x * x, axis=ax, keepdims=True), 1e-12))
    np.testing.assert_allclose(tfc.nn.l2_normalize(x, axis).numpy(), want, rtol=1e-14)
    w = rng.normal(size=x.shape)
    check_grad(lambda t: tfc.nn.l2_normalize(t, axis) * w, x)
    same_compiled(lambda t: tfc.nn.l2_normalize(t, axis) + 1, x.astype(np.float32))


def test_l2_normalize_below_epsilon(rng):
    # a row whose squared norm is under epsilon is divided by sqrt(epsilon): its gradient is 1/sqrt(epsilon)
    x = np.array([[1e-4, -2e-4], [3.0, 4.0]])
    np.testing.assert_allclose(tfc.nn.l2_normalize(x, -1, epsilon=1e-6).numpy(), [[0.1, -0.2], [0.6, 0.8]])
    check_grad(lambda t: tfc.nn.l2_normalize(t, -1, epsilon=1e-6) * np.array([1.0, 2.0]), x)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_cross_entropy_with_logits(rng, axis):
    logits = rng.normal(size=(4, 5)) * 3
    labels = rng.random(size=(4, 5))
    labels /= labels.sum(axis=axis, keepdims=True)
    logp = logits - logits.max(axis=axis, keepdims=True)
    logp -= np.log(np.exp(logp).sum(axis=axis, keepdims=True))
    np.testing.assert_allclose(tfc.nn.softmax_cross_entropy_with_logits(labels, logits, axis).numpy(),
                               -(labels * logp).sum(axis=axis), rtol=1e-13)
    w = rng.normal(size=(5 if axis == 0 else 4,))
    check_grad(lambda lb, lg: tfc.nn.softmax_cross_entropy_with_logits(lb, lg, axis) * w, labels, logits)
    same_compiled(lambda lb, lg: tfc.nn.softmax_cross_entropy_with_logits(lb, lg, axis),
                  labels.astype(np.float32), logits.astype(np.float32))
    # one-hot labels give the sparse cross-entropy
    ids = rng.integers(0, 5, size=4)
    np.testing.assert_allclose(
        tfc.nn.softmax_cross_entropy_with_logits(np.eye(5)[ids], logits).numpy(),
        tfc.nn.sparse_softmax_cross_entropy_with_logits(ids, logits).numpy(), rtol=1e-14)
    big = np.array([[1000.0, 0.0, -1000.0]])
    assert np.isfinite(tfc.nn.softmax_cross_entropy_with_logits(np.array([[0.0, 0.5, 0.5]]), big).numpy()).all()


def test_dense_xent_errors():
    with pytest.raises(ValueError, match="softmax_cross_entropy_with_logits.*same shape"):
        tfc.nn.softmax_cross_entropy_with_logits(tfc.ones([2, 3]), tfc.ones([2, 4]))
    with pytest.raises(TypeError, match="softmax_cross_entropy_with_logits.*int"):
        tfc.nn.softmax_cross_entropy_with_logits(tfc.constant([[1, 0]]), tfc.constant([[1, 0]]))


# -- target="cuda" (the PTX simulator in CI; marked gpu, a real GPU where there is one) -----------

CUDA_CASES = {
    "gelu": lambda t, i: tfc.nn.gelu(t),
    "gelu_tanh": lambda t, i: tfc.nn.gelu(t, approximate=True),
    "silu": lambda t, i: tfc.nn.silu(t),
    "layer_norm": lambda t, i: tfc.nn.layer_norm(t, t[0], t[1]),
    "moments": lambda t, i: tfc.nn.moments(t, [1]),
    "l2_normalize": lambda t, i: tfc.nn.l2_normalize(t, -1),
    "dense_xent": lambda t, i: tfc.nn.softmax_cross_entropy_with_logits(tfc.nn.softmax(t * 0.5), t),
    "embedding_lookup": lambda t, i: tfc.nn.embedding_lookup(t, i),
    "einsum": lambda t, i: tfc.einsum("ij,kj->ik", t, t),
    "cumsum": lambda t, i: tfc.cumsum(t, 1, exclusive=True),
    # kernels of this session (tfc/passes/gpu_sort.py, gpu_random.py): the CPU's order and draws
    "sort": lambda t, i: tfc.sort(t),
    "top_k": lambda t, i: tfc.top_k(t, 2),
    "categorical": lambda t, i: tfc.random.categorical(t, 3, seed=1),
    "truncated_normal": lambda t, i: t + tfc.random.truncated_normal([4, 8], seed=1),
    "shuffle": lambda t, i: tfc.random.shuffle(t, seed=1),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(CUDA_CASES))
def test_cuda_matches_eager(cuda_driver, name):
    from tfc.backends import backend
    from tfc.core import nest

    rng = np.random.default_rng(1)
    x, ids = rng.normal(size=(4, 8)).astype(np.float32), np.array([[0, 3], [2, 1]])
    fn = CUDA_CASES[name]
    want = nest.flatten(fn(tfc.constant(x), tfc.constant(ids)))
    got = nest.flatten(tfc.function(fn, target="cuda")(x, ids))
    for w, g in zip(want, got):
        assert backend("cuda").numerics.difference(w.numpy(), g.numpy(), None) is None


def test_formula_chunks_give_whole_array_bits(rng):
    # eager gelu/erf run their formula on flat chunks of a contiguous input: same bits as
    # one whole-array pass, and as a strided view (run whole) of the same values
    from tfc.ops.math import _FORMULA_CHUNK

    x = (rng.normal(size=(3, _FORMULA_CHUNK + 7)) * 3).astype(np.float32)
    for f in (erf, tfc.nn.gelu, lambda t: tfc.nn.gelu(t, approximate=True)):
        whole = f(x).numpy()
        strided = f(np.asfortranarray(x)).numpy()
        rows = np.stack([f(r).numpy() for r in x])
        assert np.array_equal(whole, rows) and np.array_equal(whole, strided)


def test_new_ops_export_and_load(tmp_path, rng):
    def f(x, ids):
        h = tfc.nn.gelu(tfc.nn.layer_norm(x))
        values, indices = tfc.top_k(tfc.einsum("bi,bj->ij", h, h), 2)
        return (tfc.cumsum(values, 1, exclusive=True), indices, tfc.nn.embedding_lookup(x, ids), erf(x),
                tfc.nn.moments(x, [0])[1])

    x, ids = rng.normal(size=(4, 6)).astype(np.float32), np.array([1, 3])
    c = tfc.function(f).get_concrete_function(tfc.TensorSpec([4, 6]), tfc.TensorSpec([2], tfc.int64))
    loaded = tfc.load(tfc.save(c, str(tmp_path / "m")))
    for got, want in zip(loaded(x, ids), f(tfc.constant(x), tfc.constant(ids))):
        assert np.array_equal(got.numpy(), want.numpy())


def test_tensorflow_arguments(rng):
    x = rng.normal(size=(3, 4))
    np.testing.assert_allclose(tfc.nn.silu(x, beta=2.0).numpy(), x / (1 + np.exp(-2 * x)), rtol=1e-14)
    check_grad(lambda t: tfc.nn.silu(t, beta=0.5), x)
    m, v = tfc.nn.moments(x, [1], None, True)  # shift (unused, as TensorFlow's), then keepdims
    assert m.shape == (3, 1) and v.shape == (3, 1)
    assert tfc.nn.layer_norm(x, name="ln").shape == (3, 4)
    assert tfc.nn.embedding_lookup(x, [0], name="e").shape == (1, 4)


def test_training_step_of_the_new_ops_compiled_bitwise(rng):
    """A gradient through embedding_lookup, layer_norm, gelu, silu, einsum, the dense
    cross-entropy, l2_normalize and cumsum: compiled (static and None batch) equals eager."""
    x = rng.normal(size=(8, 16)).astype(np.float32)
    w = tfc.Variable(rng.normal(size=(16, 16)).astype(np.float32))
    emb = tfc.Variable(rng.normal(size=(10, 16)).astype(np.float32))
    ids = np.array([1, 2, 2, 9, 0, 3, 3, 3])

    def step(t, i):
        with tfc.GradientTape() as tape:
            h = tfc.nn.layer_norm(tfc.matmul(t + tfc.nn.embedding_lookup(emb, i), w))
            h = tfc.nn.gelu(h) + tfc.nn.silu(h)
            s = tfc.einsum("bi,ci->bc", h, h)
            loss = tfc.reduce_mean(tfc.nn.softmax_cross_entropy_with_logits(tfc.nn.softmax(s * 0.1), s))
            loss += tfc.reduce_sum(tfc.cumsum(tfc.nn.l2_normalize(h, -1), 1)) * 1e-3
        return [loss] + tape.gradient(loss, [w, emb])

    want = step(tfc.constant(x), tfc.constant(ids))
    for sig in (None, [tfc.TensorSpec([None, 16]), tfc.TensorSpec([None], tfc.int64)]):
        for g, e in zip(tfc.function(step, input_signature=sig)(x, ids), want):
            assert np.array_equal(g.numpy(), e.numpy())


def test_gelu_kernels_of_many_passes_run_on_the_pool_below_its_element_threshold(rng, monkeypatch):
    """GELU and its gradient (one fused kernel here; the GPT's are 9 and 16 passes
    over 2^19 elements, half of PARALLEL_MIN) are worth a thread: the emitter
    weights their elements by their passes; a kernel of few passes on as many
    elements stays on the calling thread. Same bits as eager."""
    from tfc.backends.numpy import runtime

    decisions = []
    each = runtime.Runtime._each

    def spy(self, kernel, args, ranges, parallel, key, spec):
        decisions.append(parallel)
        return each(self, kernel, args, ranges, parallel, key, spec)

    monkeypatch.setattr(runtime.Runtime, "_each", spy)
    x = rng.normal(size=(32, 64, 256)).astype(np.float32)
    assert x.size * 2 == runtime.PARALLEL_MIN

    def gelu_and_grad(t):
        with tfc.GradientTape() as tape:
            tape.watch(t)
            y = tfc.nn.gelu(t, approximate=True)
        return y, tape.gradient(y, t)

    y, dy = tfc.function(gelu_and_grad)(tfc.constant(x))
    assert decisions == [True]
    want_y, want_dy = gelu_and_grad(tfc.constant(x))
    assert np.array_equal(y.numpy(), want_y.numpy()) and np.array_equal(dy.numpy(), want_dy.numpy())
    decisions.clear()
    tfc.function(lambda t: t * 2 + 1)(tfc.constant(x))
    assert decisions == [False]
