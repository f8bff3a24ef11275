"""Library calls of small static operands run OpenBLAS on the calling thread only
(tfc.backends.numpy.blas.on_one_thread); their bits are eager's."""
import numpy as np
import pytest

import tfc
from tfc.backends.numpy import blas
from tfc.backends.numpy.emitter import SMALL_CALL_BYTES


def test_wrapper_sets_one_thread_during_the_call_and_restores():
    setters = blas._thread_local_setter()
    if not setters:
        pytest.skip("this OpenBLAS has no per-thread setting")
    s = setters[0]
    before = s(0)  # the effective count now (0: follow the library's own)
    seen = []

    def probe(a, b=1):
        seen.append(s(1))  # the count in effect during the call
        return a + b

    assert blas.on_one_thread(probe)(2, b=3) == 5
    assert seen == [1]
    assert s(0) == before


def test_mid_sized_static_products_are_wrapped_and_equal_eager():
    rng = np.random.default_rng(0)
    x = tfc.constant(rng.standard_normal((32, 64, 64)).astype(np.float32))
    w = tfc.constant(rng.standard_normal((64, 256)).astype(np.float32))
    tiny = tfc.constant(rng.standard_normal((4, 4)).astype(np.float32))

    @tfc.function
    def f(x, w, tiny):
        return tfc.matmul(x, w), tfc.matmul(tiny, tiny)

    big, small = f(x, w, tiny)
    src = f.get_concrete_function(x, w, tiny).source
    assert src.count("rt.on_one_thread(") == 1  # the [32, 64, 64] @ [64, 256] product only
    assert (32 * 64 * 64 + 64 * 256 + 32 * 64 * 256) * 4 >= SMALL_CALL_BYTES > 3 * 16 * 4
    np.testing.assert_array_equal(big.numpy(), tfc.matmul(x, w).numpy())
    np.testing.assert_array_equal(small.numpy(), tfc.matmul(tiny, tiny).numpy())
