"""GPU library kernels for CNNs (tfc/passes/gpu_nn_library.py, issue #17 point 2):
conv2d, its input and filter gradients, max/avg pooling and their gradients,
each a tfc function through the real pipeline to L3, lowered to L4 (with the
library dispatching to ``LIBRARY``), printed as PTX and run on the simulator
against the numpy backend (conv: the matmul family's tolerance; pooling:
bit-identical), every kernel assembled by ptxas for sm_80 and sm_90 within
budget. Strides 1/2, VALID/SAME, dilations 1/2, odd sizes, batch 0/1/3,
channels 1/5, float32 and float64, ties and NaN in max pooling."""
from __future__ import annotations

import numpy as np
import pytest

import tfc
from tfc.passes import lower_gpu

pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator has not landed")
from test_lower_gpu import Host, check, check_budgets, kernels, l3_of, lower  # noqa: E402

from tfc.ops import conv as C  # noqa: E402
from tfc.passes.gpu_nn_library import LIBRARY  # noqa: E402


def _library(self, op):
    """LowerGpu.library dispatching to gpu_nn_library.LIBRARY (the change the
    lead wires into tfc/passes/lower_gpu.py)."""
    name = op.callee.data
    if name in LIBRARY and op.outs:
        ops = []
        for kernel, grid, block, args in LIBRARY[name](self.name, op):
            self.kernels.append(kernel)
            ops += self.launch(kernel, grid, args, block)
        return ops
    return _ORIGINAL(self, op)


_ORIGINAL = lower_gpu._Lowering.library


@pytest.fixture(autouse=True)
def dispatch(monkeypatch):
    if _ORIGINAL.__code__.co_names.count("gpu_nn_library"):
        return  # already wired in
    monkeypatch.setattr(lower_gpu._Lowering, "library", _library)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def bitwise(fn, *args):
    """``fn`` on the simulator equals the numpy backend bit for bit (NaN
    matches NaN, signed zeros count); returns the L4 module."""
    want = np.asarray(tfc.function(fn)(*args))
    m = lower(l3_of(fn, *args))
    (got,) = Host(m).run(list(args))
    got = np.asarray(got).reshape(want.shape)
    assert np.array_equal(got, want, equal_nan=True), np.abs(got - want).max()
    assert np.array_equal(np.signbit(got), np.signbit(want))
    check_budgets(m)
    return m


def _names(m):
    return [k.sym_name.data for k in kernels(m)]


CONV = [  # (x shape, filter shape, strides, padding, dilations)
    ((1, 7, 6, 1), (3, 2, 1, 5), 1, "VALID", 1),
    ((3, 7, 6, 5), (3, 3, 5, 1), 2, "SAME", 1),
    ((3, 9, 8, 5), (3, 2, 5, 5), 1, "SAME", 2),
    ((1, 9, 11, 5), (2, 3, 5, 5), 2, "VALID", 2),
    ((3, 5, 5, 1), (1, 1, 1, 5), (2, 1), "SAME", 1),
]


@pytest.mark.parametrize("xs,ws,s,p,d", CONV)
def test_conv2d(rng, xs, ws, s, p, d):
    x = rng.normal(size=xs).astype(np.float32)
    w = rng.normal(size=ws).astype(np.float32)
    m = check(lambda x, w: tfc.nn.conv2d(x, w, s, p, d), x, w, family="matmul", launches=1)
    assert "conv2d" in _names(m)[0]


@pytest.mark.parametrize("xs,ws,s,p,d", CONV)
def test_conv2d_gradients(rng, xs, ws, s, p, d):
    x = rng.normal(size=xs).astype(np.float32)
    w = rng.normal(size=ws).astype(np.float32)

    def f(x, w):
        with tfc.GradientTape() as t:
            t.watch(x)
            t.watch(w)
            y = tfc.reduce_sum(tfc.nn.conv2d(x, w, s, p, d) * tfc.nn.conv2d(x, w, s, p, d))
        return t.gradient(y, [x, w])
    m = check(f, x, w, family="matmul")
    names = _names(m)
    assert any("conv2d_backprop_input" in n for n in names) and any("conv2d_backprop_filter" in n for n in names)


def test_conv2d_float64_and_empty_batch(rng):
    x = rng.normal(size=(2, 6, 5, 3))
    w = rng.normal(size=(3, 3, 3, 4))
    check(lambda x, w: tfc.nn.conv2d(x, w, 2, "SAME"), x, w, family="matmul")
    x0 = np.zeros((0, 6, 5, 3), np.float32)
    m = check(lambda x, w: tfc.nn.conv2d(x, w, 1, "SAME"), x0, w.astype(np.float32), family="matmul", launches=0)
    assert not kernels(m)


def test_conv2d_backprop_direct(rng):
    w = rng.normal(size=(3, 2, 5, 4)).astype(np.float32)
    g = rng.normal(size=(3, 4, 3, 4)).astype(np.float32)
    x = rng.normal(size=(3, 7, 6, 5)).astype(np.float32)
    check(lambda w, g: C.conv2d_backprop_input((7, 6), w, g, 2, "SAME"), w, g, family="matmul")
    check(lambda x, g: C.conv2d_backprop_filter(x, (3, 2), g, 2, "SAME"), x, g, family="matmul")
    # an empty batch: the filter gradient is all zeros
    check(lambda x, g: C.conv2d_backprop_filter(x, (3, 2), g, 2, "SAME"), x[:0], g[:0], family="matmul")


POOL = [  # (x shape, ksize, strides, padding)
    ((1, 7, 6, 1), 2, 2, "VALID"),
    ((3, 7, 6, 5), 3, 2, "SAME"),
    ((3, 5, 9, 5), (2, 3), 1, "SAME"),
    ((1, 8, 8, 5), 3, (1, 2), "VALID"),
]


@pytest.mark.parametrize("xs,k,s,p", POOL)
def test_pooling_bitwise(rng, xs, k, s, p):
    x = rng.normal(size=xs).astype(np.float32)
    x[..., 0] = np.round(x[..., 0])  # ties: the first maximum wins
    if x.size > 20:
        x.flat[3] = np.nan
        x.flat[17] = -np.inf
    bitwise(lambda x: tfc.nn.max_pool2d(x, k, s, p), x)
    bitwise(lambda x: tfc.nn.avg_pool2d(x, k, s, p), x)


@pytest.mark.parametrize("xs,k,s,p", POOL)
def test_pooling_gradients(rng, xs, k, s, p):
    x = np.round(rng.normal(size=xs) * 2).astype(np.float32)  # many ties
    g = rng.normal(size=xs).astype(np.float32)

    def f(x, g):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = tfc.reduce_sum(tfc.nn.max_pool2d(x, k, s, p) * tfc.nn.avg_pool2d(x, k, s, p))
        return t.gradient(y, x)
    check(f, x, g, family="reduction")
    pooled = tfc.nn.max_pool2d(x, k, s, p).numpy()
    gp = rng.normal(size=pooled.shape).astype(np.float32)
    m = bitwise(lambda x, gp: C.max_pool2d_grad(x, gp, k, s, p), x, gp)
    assert "max_pool2d_grad" in _names(m)[0]
    bitwise(lambda x, g: C.max_pool2d_grad_grad(x, g, k, s, p), x, g)
    bitwise(lambda gp: C.avg_pool2d_grad(xs[1:3], gp, k, s, p), gp)


def test_unsupported_dtype(rng):
    x = rng.normal(size=(1, 4, 4, 2)).astype(np.float16)
    with pytest.raises(NotImplementedError, match="max_pool2d of f16"):
        lower(l3_of(lambda x: tfc.nn.max_pool2d(x, 2, 2), x))
