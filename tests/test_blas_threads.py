"""tfc.core.blas_threads: small products on the calling thread, the count restored."""

import numpy as np
import pytest

from tfc.core import blas_threads


def test_matmul_is_numpys_product(rng=np.random.default_rng(0)):
    for shape in ((3, 5, 4), (1024, 144, 32), (300, 200, 150)):  # one thread, and above the limit
        m, k, n = shape
        a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        np.testing.assert_allclose(blas_threads.matmul(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
        out = np.empty((m, n), np.float32)
        assert blas_threads.matmul(a, b, out=out) is out
        np.testing.assert_array_equal(out, blas_threads.matmul(a, b))


def test_thread_count_restored_after_a_product_and_an_error():
    setters = blas_threads._local_setters()
    if not setters:
        pytest.skip("no OpenBLAS with openblas_set_num_threads_local in this process")
    set_local = setters[0]
    before = set_local(3)  # this thread's count: 3 while we look
    try:
        blas_threads.matmul(np.ones((4, 4)), np.ones((4, 4)))
        assert set_local(3) == 3
        with pytest.raises(ValueError):
            blas_threads.matmul(np.ones((4, 4)), np.ones((5, 4)))  # numpy's shape error
        assert set_local(3) == 3
        with blas_threads.one_thread():
            assert set_local(1) == 1
        assert set_local(3) == 3
    finally:
        set_local(before)
