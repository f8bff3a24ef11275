"""integer_pow (``x ** n`` for a Python int n): eager equals numpy products taken
in the documented order (binary exponentiation), and np.power for integers;
gradients against finite differences; compiled equals eager bit for bit."""
import numpy as np
import pytest

import tfc
from helpers import check_grad, check_second_grad

FLOATS = [np.float16, np.float32, np.float64]
INTS = [np.int8, np.int32, np.int64]
EXPONENTS = [0, 1, 2, 3, 4, 5, 7, 8, 13, -1, -2, -3]


def _reference(x, n):
    """x ** n by the documented algorithm, written independently: the bits of
    |n| from the lowest; the running product times x**(2**k) for each set bit."""
    if n == 0:
        return np.ones_like(x)
    m = -n if n < 0 else n
    powers = [x]  # x, x**2, x**4, ... each the square of the previous one
    while (1 << len(powers)) <= m:
        powers.append(np.multiply(powers[-1], powers[-1]))
    acc = None
    for k, p in enumerate(powers):
        if m >> k & 1:
            acc = p if acc is None else np.multiply(acc, p)
    return acc if n > 0 else np.true_divide(x.dtype.type(1), acc)


def _floats(dtype, size=2000, seed=0):
    x = np.random.default_rng(seed).normal(scale=2.0, size=size).astype(dtype)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0]
    return x


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", EXPONENTS)
def test_eager_floats_are_the_documented_products(dtype, n):
    x = _floats(dtype)
    with np.errstate(all="ignore"):
        want = _reference(x, n)
        got = tfc.constant(x) ** n
    assert got.dtype == tfc.as_dtype(dtype)
    np.testing.assert_array_equal(got.numpy(), want)
    # and close to np.power (a few ulp: products round once each)
    finite = np.isfinite(want) & (np.abs(want) < np.finfo(dtype).max / 4) & (np.abs(want) > np.finfo(dtype).tiny * 4)
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.float64), n)
    np.testing.assert_allclose(got.numpy()[finite], exact[finite], rtol=8 * np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("n", [e for e in EXPONENTS if e >= 0])
def test_eager_ints_equal_np_power(dtype, n):
    # integer products wrap: any order gives np.power's result
    x = np.random.default_rng(1).integers(-20, 20, size=500).astype(dtype)
    got = tfc.constant(x) ** n
    assert got.dtype == tfc.as_dtype(dtype)
    np.testing.assert_array_equal(got.numpy(), np.power(x, n))


def test_negative_power_of_an_integer_tensor_is_an_error():
    with pytest.raises(ValueError, match=r"integer_pow.*int32.*-2"):
        tfc.constant([1, 2]) ** -2
    with pytest.raises(TypeError, match="integer_pow"):
        tfc.integer_pow(tfc.constant([1.0]), 2.0)
    with pytest.raises(TypeError, match="integer_pow.*bool"):
        tfc.integer_pow(tfc.constant([True]), 2)


def test_operator_chooses_integer_pow_only_for_python_ints():
    x = tfc.constant([1.5, 2.0])

    def ops(fn):
        return str(tfc.function(fn).get_concrete_function(x).raw_module)

    cube = ops(lambda t: t ** 3)
    assert "tfc.integer_pow" in cube and "tfc.pow" not in cube
    assert "tfc.pow" in ops(lambda t: t ** 3.0)
    assert "tfc.pow" in ops(lambda t: tfc.pow(t, 3))
    assert "tfc.pow" in ops(lambda t: 2 ** t)
    # a bool tensor keeps numpy's promotion (True ** 2 is an int)
    b = tfc.constant([True, False]) ** 2
    np.testing.assert_array_equal(b.numpy(), np.power(np.array([True, False]), 2))
    assert b.dtype == tfc.int64


@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 3, 5])
def test_gradient(n):
    x = np.random.default_rng(2).uniform(0.5, 2.0, size=(3, 4))
    check_grad(lambda a: tfc.integer_pow(a, n), x)


def test_second_gradient():
    check_second_grad(lambda a: a ** 4, np.array([0.7, -1.3, 2.0]))


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_compiled_equals_eager(dtype, monkeypatch):
    from tfc.backends.numpy import runtime

    monkeypatch.setattr(runtime, "PARALLEL_MIN", 1 << 16)  # so these chunks run on the pool
    if np.issubdtype(dtype, np.floating):
        x = _floats(dtype, size=70000)  # above that threshold
        exps = EXPONENTS
    else:
        x = np.random.default_rng(3).integers(-30, 30, size=70000).astype(dtype)
        exps = [e for e in EXPONENTS if e >= 0]
    t = tfc.constant(x)
    for n in exps:
        def f(a):
            return (a ** n, a * 2 + a ** n)  # alone, and fused with other ops

        with np.errstate(all="ignore"):
            want = [w.numpy() for w in f(t)]
        got = [g.numpy() for g in tfc.function(f)(t)]
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w, err_msg=f"n={n}")


def test_compiled_gelu_equals_eager():
    def gelu(x):
        return 0.5 * x * (1 + tfc.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

    x = tfc.constant(_floats(np.float32, size=100000))
    f = tfc.function(gelu)
    np.testing.assert_array_equal(f(x).numpy(), gelu(x).numpy())
    assert "power" not in f.get_concrete_function(x).source  # multiplications, not np.power
