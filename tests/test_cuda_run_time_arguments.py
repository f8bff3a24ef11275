"""target="cuda" with an argument of run-time shape (a None signature) in a program
that is not specialized to its shapes (a differentiated tensor loop's state lists):
the argument uploads with its run-time shape (it was refused by the exact shape check:
"argument of shape [4] for a memref<?xf32>"). Found by the differential fuzz
(program 1007/91 with --grad --target cuda). On the PTX simulator."""
import numpy as np
import pytest

import tfc


@pytest.fixture(autouse=True)
def _simulator(monkeypatch):
    monkeypatch.setenv("TFC_CUDA_DRIVER", "simulator")


@tfc.custom_gradient
def _square(a):
    return a * a, lambda dy: dy * 2.0 * a


def _loop_grad(x, y):
    with tfc.GradientTape() as t:
        t.watch(y)
        v = tfc.reduce_max(y, axis=0)
        w = tfc.reduce_max(_square(v))
        _, z = tfc.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, tfc.minimum(a, w)), [tfc.constant(0), v])
        loss = tfc.reduce_sum(z)
    return z, t.gradient(loss, y)


def test_an_unused_argument_of_run_time_shape_uploads():
    x, y = tfc.constant(np.array([-0.23, 1.55, -0.07, -0.33], np.float32)), tfc.constant(np.array([0.5], np.float32))
    want = [r.numpy() for r in _loop_grad(x, y)]
    f = tfc.function(_loop_grad, input_signature=[tfc.TensorSpec((None,), tfc.float32),
                                                  tfc.TensorSpec((1,), tfc.float32)], target="cuda")
    for n in (4, 1, 0):  # one trace, any length
        got = [r.numpy() for r in f(tfc.constant(np.arange(n, dtype=np.float32)), y)]
        assert all(np.array_equal(a, b) for a, b in zip(got, want)), (n, got, want)


def test_a_used_argument_of_run_time_shape_is_still_refused_at_compile_time():
    def used(x, y):
        z, g = _loop_grad(x, y)
        return z + tfc.reduce_sum(x), g

    f = tfc.function(used, input_signature=[tfc.TensorSpec((None,), tfc.float32), tfc.TensorSpec((1,), tfc.float32)],
                     target="cuda")
    with pytest.raises(NotImplementedError, match="run-time"):
        f(tfc.constant([1.0, 2.0]), tfc.constant([0.5]))


def test_an_argument_of_run_time_shape_returned_comes_back_with_its_shape():
    """Fuzz program 1010/21: the result's memref<?x?xf32> is read back with the
    run-time shape its buffer carries (the type's shape gave numpy a dimension of -1)."""
    def prog(x, y, z):
        with tfc.GradientTape() as t:
            t.watch(y)
            _, v = tfc.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, tfc.divide(a, a)), [tfc.constant(0), y])
            loss = tfc.reduce_sum(v) + tfc.reduce_sum(z)
        return v, z, t.gradient(loss, y)

    f = tfc.function(prog, input_signature=[tfc.TensorSpec((), tfc.float32)] * 2
                     + [tfc.TensorSpec((None, None), tfc.float32)], target="cuda")
    for shape in [(1, 2), (3, 1), (0, 2)]:
        args = [tfc.constant(np.float32(1.19)), tfc.constant(np.float32(0.45)),
                tfc.constant(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))]
        want = [r.numpy() for r in prog(*args)]
        got = [r.numpy() for r in f(*args)]
        assert all(np.shape(a) == np.shape(b) and np.array_equal(a, b) for a, b in zip(got, want)), (shape, got)
