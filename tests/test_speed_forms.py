"""The faster forms of issue 22: a [..., M, K] @ [K, N] product as one GEMM
(same bits as numpy's batched matmul), its weight gradient as one GEMM over the
flattened batch, the scatter-adds through numpy's flat np.add.at (np.add.at's
bits); eager == compiled bit for bit, gradients by finite differences."""
import numpy as np
import pytest

import tfc
from helpers import check_grad
from tfc.ops.scatter import unsorted_segment_sum


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_one_gemm_same_bits_as_batched(dtype, tb):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 9, 16)).astype(dtype)
    b = rng.standard_normal((24, 16) if tb else (16, 24)).astype(dtype)
    want = np.matmul(a, np.ascontiguousarray(b.T) if tb else b)
    got = tfc.matmul(tfc.constant(a), tfc.constant(b), transpose_b=tb).numpy()
    assert np.array_equal(got, want)
    compiled = tfc.function(lambda x, w: tfc.matmul(x, w, transpose_b=tb))(tfc.constant(a), tfc.constant(b)).numpy()
    assert np.array_equal(compiled, want)


@pytest.mark.parametrize("tb", [False, True])
def test_weight_gradient_one_gemm(tb):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4) if tb else (4, 5))
    check_grad(lambda x, w: tfc.matmul(x, w, transpose_b=tb) ** 2, a, b)


@pytest.mark.parametrize("tb", [False, True])
def test_weight_gradient_eager_equals_compiled(tb):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8, 16, 32)).astype(np.float32)
    b = rng.standard_normal((24, 32) if tb else (32, 24)).astype(np.float32)

    def step(x, w):
        with tfc.GradientTape() as tape:
            tape.watch([x, w])
            y = tfc.reduce_sum(tfc.matmul(x, w, transpose_b=tb) ** 2)
        return tape.gradient(y, [x, w])

    eager = [g.numpy() for g in step(tfc.constant(a), tfc.constant(b))]
    compiled = [g.numpy() for g in tfc.function(step)(tfc.constant(a), tfc.constant(b))]
    for e, c in zip(eager, compiled):
        assert np.array_equal(e, c)
    # the flattened weight gradient is the batched one up to rounding
    g = 2 * np.matmul(a.astype(np.float64), (b.T if tb else b).astype(np.float64))
    gw = np.einsum("bmk,bmn->kn", a.astype(np.float64), g)
    np.testing.assert_allclose(eager[1], gw.T if tb else gw, rtol=2e-5, atol=1e-3)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_gradient_is_np_add_at_eager_and_compiled(axis):
    """Gather's gradient adds rows through numpy's flat np.add.at path: the
    bits of np.add.at on the rows (each element summed in index order), eager
    and compiled alike."""
    rng = np.random.default_rng(3)
    table = rng.standard_normal((7, 5, 6)).astype(np.float32)
    ids = rng.integers(0, table.shape[axis], (40, 3)).astype(np.int32)
    g = (rng.standard_normal(np.take(table, ids, axis=axis).shape) * 10.0 ** rng.integers(-3, 4, 1)).astype(np.float32)
    want = np.zeros_like(table)
    a = axis % table.ndim
    np.add.at(want, (slice(None),) * a + (ids,), g)

    def grad(t, i, upstream):
        with tfc.GradientTape() as tape:
            tape.watch(t)
            y = tfc.reduce_sum(tfc.gather(t, i, axis=axis) * upstream)
        return tape.gradient(y, t)

    args = tfc.constant(table), tfc.constant(ids), tfc.constant(g)
    assert np.array_equal(grad(*args).numpy(), want)
    assert np.array_equal(tfc.function(grad)(*args).numpy(), want)


def test_segment_sum_is_np_add_at():
    rng = np.random.default_rng(4)
    data = rng.standard_normal((30, 4, 3)).astype(np.float32) * 1e3
    ids = rng.integers(-1, 5, 30).astype(np.int64)
    want = np.zeros((5, 4, 3), np.float32)
    np.add.at(want, ids[ids >= 0], data[ids >= 0])
    f = lambda d, i: unsorted_segment_sum(d, i, 5)  # noqa: E731
    assert np.array_equal(f(tfc.constant(data), tfc.constant(ids)).numpy(), want)
    assert np.array_equal(tfc.function(f)(tfc.constant(data), tfc.constant(ids)).numpy(), want)
