"""tfc.random.uniform with tensor bounds (``uniform_bounds``) on cuda
(tfc/passes/gpu_random.py): float32/float64 give the numpy kernel's bits on the
PTX simulator (and a GPU where there is one), seeded and from the global
stream; bad bounds raise eager's error before any draw; integer and float16
draws raise NotImplementedError naming them; the kernels assemble within the
elementwise budget."""
from __future__ import annotations

import numpy as np
import pytest

import tfc

pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator has not landed")
from test_lower_gpu import check_budgets, l3_of, lower  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _draw(shape, dtype, seed=7):
    return lambda a, b: tfc.random.uniform(shape, a, b, dtype=dtype, seed=seed)


def _exact(fn, *args):
    want = np.asarray(tfc.function(fn)(*args))
    got = np.asarray(tfc.function(fn, target="cuda")(*args))
    assert want.dtype == got.dtype and want.shape == got.shape and np.array_equal(want, got), (want, got)
    return got


def _bounds(dtype, lo, hi):
    return tfc.constant(np.array(lo, dtype)), tfc.constant(np.array(hi, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5), (1031,), (0, 3)])
@pytest.mark.parametrize("lo,hi", [(1.0, 4.0), (-3.5, 0.0), (0.0, 1.0), (-2.0, -1e-30)])
def test_bit_exact(cuda_driver, dtype, shape, lo, hi):
    _exact(_draw(shape, dtype), *_bounds(dtype, lo, hi))


@pytest.mark.parametrize("dtype,lo,hi", [("float64", -1e308, 1e308), ("float32", -3e38, 3e38)])
def test_wide_spans(cuda_driver, dtype, lo, hi):
    """float64's span overflows: lo * (1 - u) + hi * u, as the numpy kernel."""
    _exact(_draw((97,), dtype), *_bounds(dtype, lo, hi))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("lo", [1.0, -1.0, -1e-45])
def test_kept_below_maxval(cuda_driver, dtype, lo):
    """maxval one ulp above minval: rounding lands on maxval for many draws,
    which the kernel caps to the float below it (numpy's nextafter, a zero maxval
    included)."""
    np_dt = np.dtype(dtype)
    lo = np_dt.type(lo)
    hi = np.nextafter(lo, np_dt.type(np.inf))
    got = _exact(_draw((301,), dtype), *_bounds(dtype, lo, hi))
    assert (got == lo).all()


def test_global_stream(cuda_driver):
    """Unseeded: the same blocks of the global stream after set_seed, and the
    draw after it takes the next ones."""
    def f(a, b):
        return tfc.random.uniform([33], a, b), tfc.random.uniform([5])

    args = _bounds("float32", -2.0, 5.0)
    tfc.random.set_seed(31)
    want = [np.asarray(v) for v in tfc.function(f)(*args)]
    tfc.random.set_seed(31)
    got = [np.asarray(v) for v in tfc.function(f, target="cuda")(*args)]
    for w, g in zip(want, got):
        assert np.array_equal(w, g)


@pytest.mark.parametrize("lo,hi,match", [(2.0, 2.0, "must be less than maxval"), (3.0, 1.0, "must be less than"),
                                         (-np.inf, 1.0, "must be finite"), (0.0, np.nan, "must be")])
def test_bad_bounds_raise_eagers_error(cuda_driver, lo, hi, match):
    f = tfc.function(_draw((4,), "float32"), target="cuda")
    with pytest.raises(tfc.errors.InvalidArgumentError, match=match):
        f(*_bounds("float32", lo, hi))


@pytest.mark.parametrize("dtype,what", [("int32", "int32"), ("int64", "int64"), ("float16", "float16")])
def test_unsupported_dtypes_name_themselves(cuda_driver, dtype, what):
    f = tfc.function(_draw((4,), dtype), target="cuda")
    with pytest.raises(NotImplementedError, match=f"uniform_bounds of {what}"):
        f(*_bounds(dtype, 1, 9))


def test_lowering_and_budgets():
    m = lower(l3_of(lambda a, b, c, d: (tfc.random.uniform([1031], a, b, seed=1), tfc.random.uniform([17], c, d, dtype="float64")),
                    *_bounds("float32", 0.0, 2.0), *_bounds("float64", -1.0, 1.0)))
    assert "uniform_bounds_f32" in str(m) and "uniform_bounds_f64" in str(m)
    check_budgets(m)
