"""Fixes from the review of the GPU path (issue 17): eager GPU tensors indexed
with a list or a boolean mask, on the simulated driver against the CPU."""
import numpy as np
import pytest

import tfc
from tfc.core.tensor import GpuTensor


@pytest.fixture(autouse=True)
def simulator(monkeypatch):
    monkeypatch.setenv("TFC_CUDA_DRIVER", "simulator")


@pytest.mark.parametrize("key", [
    [1, 0], [-1, 0, 2], np.array([2, -3], np.int64), np.array([True, False, True]),
    (slice(None), [3, 0]), (1, np.array([False, True, True, False])), np.zeros((0,), np.int32),
    np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]]),
])
def test_array_and_mask_index_of_gpu_tensor(key):
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    want = tfc.constant(x)[key].numpy()
    got = tfc.constant(x).gpu()[key]
    assert type(got) is GpuTensor
    assert got.shape == want.shape and np.array_equal(got.numpy(), want)  # gather moves values: exact


def test_gpu_index_tensor_stays():
    g = tfc.constant([[1., 2.], [3., 4.]]).gpu()
    idx = tfc.constant([1, 1, 0]).gpu()
    assert np.array_equal(g[idx].numpy(), np.array([[3., 4.], [3., 4.], [1., 2.]], np.float32))


def test_numerics_reduced_length_scales_atol():
    from tfc.backends import Numerics, backend

    cuda = backend("cuda").numerics
    want = np.array([1e-7, 2.0], np.float32)
    got = np.array([6e-6, 2.0], np.float32)
    assert cuda.difference(want, got, "reduction") is not None  # beyond atol 1e-6
    assert cuda.difference(want, got, "reduction", reduced=100) is None  # 100 * eps(float32) = 1.2e-5
    assert cuda.difference(want, got, "reduction", reduced=10) is not None
    assert cuda.difference(want, np.array([6e-6, 2.001], np.float32), "reduction", reduced=100) is not None  # rtol kept
    exact = Numerics("exact")
    assert exact.difference(want, got, "reduction", reduced=10 ** 6) is not None  # bit-identical stays so
    assert cuda.difference(np.array([1, 2]), np.array([1, 3]), "reduction", reduced=10 ** 6) is not None  # integers exact


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_float_mod_and_floordiv_on_gpu(dtype):
    """g % 1.5 and g // 1.5 (and by a tensor) on the GPU: numpy's bits (they
    raised NotImplementedError for tfc.remf before)."""
    x = np.array([[1., 2.], [3., -4.5], [-0.0, np.inf], [np.nan, 1e30]], dtype)
    y = np.array([1.5, -0.0], dtype)
    for op in (lambda a, b: a % b, lambda a, b: a // b):
        for b_cpu, b_gpu in ((1.5, 1.5), (tfc.constant(y), tfc.constant(y).gpu())):
            want = op(tfc.constant(x), b_cpu).numpy()
            got = op(tfc.constant(x).gpu(), b_gpu).numpy()
            nan = np.isnan(want)
            assert np.array_equal(np.isnan(got), nan)
            assert np.array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))
