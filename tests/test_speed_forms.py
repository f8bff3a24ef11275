"""The faster forms of issue 22: a [..., M, K] @ [K, N] product as one GEMM
(same bits as numpy's batched matmul), its weight gradient as one GEMM over the
flattened batch, eager == compiled bit for bit, gradients by finite differences."""
import numpy as np
import pytest

import tfc
from helpers import check_grad


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
