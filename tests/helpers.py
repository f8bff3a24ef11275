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


def check_second_grad(f, x, rtol=1e-4, atol=1e-5, unconnected_gradients="none"):
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
    ana = np.asarray(outer.gradient(g, t, unconnected_gradients=unconnected_gradients))
    np.testing.assert_allclose(ana, num, rtol=rtol, atol=atol)


# -- shared data for the op tests -------------------------------------------------

FLOAT_DTYPES = (tfc.float16, tfc.float32, tfc.float64)
INT_DTYPES = (tfc.int8, tfc.int32, tfc.int64)
NUMERIC_DTYPES = FLOAT_DTYPES + INT_DTYPES
ALL_DTYPES = NUMERIC_DTYPES + (tfc.bool,)

_TOL = {"float16": (5e-3, 5e-3), "float32": (2e-5, 1e-6), "float64": (1e-12, 1e-12)}


def random_array(rng, shape, dtype, low=-5.0, high=5.0):
    """Random values of a tfc dtype: uniform floats in [low, high), ints in the
    same range (int8 kept small so arithmetic rarely wraps), or random bools."""
    dt = tfc.as_dtype(dtype)
    if dt.is_bool:
        return rng.random(shape) < 0.5
    if dt.is_integer:
        lo, hi = (int(np.floor(low)), int(np.ceil(high)))
        return rng.integers(lo, max(hi, lo + 1), size=shape).astype(dt.as_numpy_dtype)
    return rng.uniform(low, high, size=shape).astype(dt.as_numpy_dtype)


def assert_bit_identical(got, want):
    """``got`` equals ``want`` bit for bit (NaN where NaN): each a value or a list of
    them, same shapes and dtypes (eager against compiled, for instance)."""
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.dtype, w.dtype, g.shape, w.shape)
        assert np.array_equal(g, w, equal_nan=True), (g, w)


def assert_same(result, expected, dtype=None):
    """``result`` (a Tensor) equals ``expected`` (numpy): same shape and dtype,
    exact for ints and bools, within the dtype's tolerance for floats."""
    assert isinstance(result, tfc.Tensor), type(result)
    expected = np.asarray(expected)
    dt = tfc.as_dtype(dtype) if dtype is not None else tfc.as_dtype(expected.dtype)
    assert result.dtype == dt, f"dtype {result.dtype} != {dt}"
    got = np.asarray(result)
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    if dt.is_floating:
        rtol, atol = _TOL[dt.name]
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected.astype(dt.as_numpy_dtype))


# -- the numerics contract of a backend -----------------------------------------------


def numerics(target="cpu"):
    """The numerics contract of ``target``'s backend (``tfc.backends``): the one
    place that says how far its compiled results may be from eager's."""
    from tfc.backends import backend

    return backend(target).numerics


def assert_meets_contract(got, want, family=None, target="cpu"):
    """``got`` (a compiled result) is eager's ``want`` within ``target``'s
    numerics contract for op ``family`` (None: any family, the loosest); for
    the numpy backend, bit-identical (NaN matches NaN, signed zeros count)."""
    diff = numerics(target).difference(np.asarray(want), np.asarray(got), family)
    assert diff is None, diff
