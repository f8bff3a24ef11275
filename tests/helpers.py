"""Shared test helpers: finite-difference gradient checks in float64."""
from __future__ import annotations

import numpy as np

import tfc


def numeric_grad(f, arrays, eps=1e-6):
    """Central finite differences of sum(f(*arrays)) w.r.t. each float64 array."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        it = np.nditer(a, flags=["multi_index"])
        for _ in it:
            idx = it.multi_index
            orig = a[idx]
            a[idx] = orig + eps
            hi = float(np.sum(np.asarray(f(*[tfc.constant(x) for x in arrays]))))
            a[idx] = orig - eps
            lo = float(np.sum(np.asarray(f(*[tfc.constant(x) for x in arrays]))))
            a[idx] = orig
            g[idx] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def tape_grad(f, arrays):
    """Gradients of sum(f(*arrays)) from tfc's tape, as float64 numpy arrays."""
    xs = [tfc.constant(np.array(a, dtype=np.float64)) for a in arrays]
    with tfc.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = f(*xs)
    gs = tape.gradient(y, xs)
    return [None if g is None else np.asarray(g) for g in gs]


def check_grad(f, *arrays, rtol=1e-5, atol=1e-6):
    """Assert tape gradients equal central finite differences (float64)."""
    num = numeric_grad(f, arrays)
    ana = tape_grad(f, arrays)
    for i, (n, a) in enumerate(zip(num, ana)):
        assert a is not None, f"input {i}: tape gave no gradient"
        np.testing.assert_allclose(a, n, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")


def check_second_grad(f, x, rtol=1e-4, atol=1e-5):
    """Assert d2/dx2 of sum(f(x)) (elementwise f) from nested tapes matches
    finite differences of the tape's first derivative."""
    x = np.array(x, dtype=np.float64)

    def first(t):
        with tfc.GradientTape() as inner:
            inner.watch(t)
            y = f(t)
        return inner.gradient(y, t)

    num = numeric_grad(first, [x])[0]
    t = tfc.constant(x)
    with tfc.GradientTape() as outer:
        outer.watch(t)
        g = first(t)
    ana = np.asarray(outer.gradient(g, t))
    np.testing.assert_allclose(ana, num, rtol=rtol, atol=atol)
