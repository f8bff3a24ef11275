"""TensorArrays in compiled loops on the GPU (tfc/passes/gpu_lists.py:
tensor_array_write, one thread per element, the index checked on the host):
eager-identical results on the PTX simulator (and a GPU where there is one),
rows of one element (a host scalar value), gradients through the stack, an
out-of-range index raising eager's error, ptxas budgets."""
from __future__ import annotations

import numpy as np
import pytest

import tfc

pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator has not landed")
from test_lower_gpu import check_budgets, kernels, l3_of, lower  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _stack(dtype, n=4):
    def f(a):
        ta = tfc.TensorArray(dtype, size=n)
        for i in tfc.range(n):
            ta = ta.write(i, a * tfc.cast(i + 1, dtype))
        return ta.stack()
    return f


def _same(fn, *args):
    want = tfc.function(fn)(*args)
    got = tfc.function(fn, target="cuda")(*args)
    want, got = (list(v) if isinstance(v, (list, tuple)) else [v] for v in (want, got))
    for w, g in zip(want, got):
        w, g = np.asarray(w), np.asarray(g)
        assert w.dtype == g.dtype and w.shape == g.shape and np.array_equal(w, g), (w, g)


@pytest.mark.parametrize("dtype,shape", [("float32", (3, 5)), ("float64", (2, 3)), ("int32", (7,)),
                                         ("float32", ()), ("int64", ()), ("float16", ()), ("int8", ())])
def test_tensor_array_stack(cuda_driver, dtype, shape):
    a = tfc.constant((np.arange(int(np.prod(shape))) - 2).reshape(shape).astype(dtype))
    _same(_stack(tfc.as_dtype(dtype)), a)


@pytest.mark.parametrize("shape", [(), (4,)])
def test_tensor_array_of_bools(cuda_driver, shape):
    def f(a):
        ta = tfc.TensorArray(tfc.bool, size=3)
        for i in tfc.range(3):
            ta = ta.write(i, a > tfc.cast(i, a.dtype))
        return ta.stack()
    _same(f, tfc.constant(np.linspace(-1, 3, int(np.prod(shape))).reshape(shape)))


def test_tensor_array_gradient(cuda_driver):
    x = tfc.constant(np.random.default_rng(1).standard_normal((2, 3)))

    def f(x):
        with tfc.GradientTape() as tape:
            tape.watch(x)
            y = tfc.reduce_sum(_stack(tfc.float64, 5)(x) ** 2)
        return y, tape.gradient(y, x)
    _same(f, x)


def test_out_of_range_index_raises(cuda_driver):
    def f(a, k):
        ta = tfc.TensorArray(tfc.float32, size=3)
        for i in tfc.range(3):
            ta = ta.write(i * k, a)
        return ta.stack()
    a = tfc.constant(np.ones(2, np.float32))
    assert np.asarray(tfc.function(f, target="cuda")(a, tfc.constant(1))).shape == (3, 2)
    with pytest.raises(tfc.errors.InvalidArgumentError, match="index 4 is out of range"):
        tfc.function(f, target="cuda")(a, tfc.constant(2))


def test_lowering_and_budgets():
    m = lower(l3_of(_stack(tfc.float32), tfc.constant(np.ones((3, 5), np.float32))))
    assert any(k.sym_name.data.endswith("tensor_array_write") for k in kernels(m))
    check_budgets(m)
