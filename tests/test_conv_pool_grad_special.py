"""max_pool2d_grad over tiling windows (the CNN's 2x2, stride 2) routes each
gradient to its window's first maximum and puts +0 everywhere else, whatever
the gradient holds: infinities, NaN and -0 included (TensorFlow's values; a
float product by the masks would spread NaN to the other taps)."""
import numpy as np
import pytest

import tfc
from tfc.ops.conv import _max_pool_grad_into, _max_pool_grad_kernel, max_pool2d_grad


def _reference(x, g, k):
    """The written-out rule: 0 + g at each window's first strict maximum, +0 elsewhere."""
    dx = np.zeros(x.shape, x.dtype)
    n, h, w, c = x.shape
    for b in range(n):
        for i in range(h // k):
            for j in range(w // k):
                for ch in range(c):
                    win = x[b, i * k:(i + 1) * k, j * k:(j + 1) * k, ch].reshape(-1)
                    t = 0
                    for q in range(1, win.size):
                        if win[q] > win[t]:
                            t = q
                    dx[b, i * k + t // k, j * k + t % k, ch] = 0 + g[b, i, j, ch]
    return dx


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_gradients_reach_only_the_maximum(dtype):
    rng = np.random.default_rng(0)
    x = np.maximum(rng.standard_normal((3, 4, 6, 5)), 0).astype(dtype)  # ReLU'd: ties at 0
    g = rng.standard_normal((3, 2, 3, 5)).astype(dtype)
    g.flat[::7], g.flat[3::11], g.flat[5::13], g.flat[1::17] = np.inf, -np.inf, np.nan, -0.0
    want = _reference(x, g, 2)
    got = _max_pool_grad_kernel(x, g, (2, 2), (2, 2), "VALID")
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    np.testing.assert_array_equal(got.view(bits), want.view(bits))  # NaN payloads and zero signs too
    out = np.full(x.shape, 7, dtype)
    _max_pool_grad_into(x, g, out, (2, 2), (2, 2), "VALID")
    np.testing.assert_array_equal(out.view(bits), want.view(bits))


def test_eager_and_compiled_agree_with_special_gradients():
    rng = np.random.default_rng(1)
    x = tfc.constant(np.maximum(rng.standard_normal((8, 8, 8, 4)), 0).astype(np.float32))
    g = rng.standard_normal((8, 4, 4, 4)).astype(np.float32)
    g.flat[::9], g.flat[4::10] = np.inf, np.nan
    g = tfc.constant(g)

    def f(x, g):
        return max_pool2d_grad(x, g, 2, 2)

    eager = f(x, g).numpy()
    compiled = tfc.function(f)(x, g).numpy()
    np.testing.assert_array_equal(eager.view(np.uint32), compiled.view(np.uint32))
    np.testing.assert_array_equal(eager.view(np.uint32), _reference(x.numpy(), g.numpy(), 2).view(np.uint32))
