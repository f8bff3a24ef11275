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
from tfc.passes import gpu_builder, lower_gpu

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
    if any("gpu_nn_library" in n for n in _ORIGINAL.__code__.co_names):
        return  # already wired in
    monkeypatch.setattr(lower_gpu._Lowering, "library", _library)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def bitwise(fn, *args):
    """``fn`` on the simulator equals the numpy backend bit for bit (NaN
    matches NaN whatever its sign and payload, signed zeros count); returns the
    L4 module."""
    want = np.asarray(tfc.function(fn)(*args))
    m = lower(l3_of(fn, *args))
    (got,) = Host(m).run(list(args))
    got = np.asarray(got).reshape(want.shape)
    assert np.array_equal(got, want, equal_nan=True), np.abs(got - want).max()
    real = ~np.isnan(want)  # NaN payloads aside: x86's inf - inf is -nan, PTX's +nan
    assert np.array_equal(np.signbit(got)[real], np.signbit(want)[real])
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


def test_strided_views(rng):
    # views of the arguments (rows skipped, a transposed image) read through their strides
    x = rng.normal(size=(3, 13, 7, 5)).astype(np.float32)
    w = rng.normal(size=(3, 2, 5, 4)).astype(np.float32)
    check(lambda x, w: tfc.nn.conv2d(x[:, ::2, 1:], w, 1, "SAME"), x, w, family="matmul")
    check(lambda x, w: tfc.nn.conv2d(tfc.transpose(x, [0, 2, 1, 3]), w, 2, "VALID", 1), x, w, family="matmul")
    bitwise(lambda x: tfc.nn.max_pool2d(x[:, ::2, 1:], 3, 2, "SAME"), x)
    bitwise(lambda x: tfc.nn.avg_pool2d(tfc.transpose(x, [0, 2, 1, 3]), 2, 1, "SAME"), x)


def test_max_pool_special_values():
    # NaN in a window's first tap stays; a later NaN never wins; -inf everywhere:
    # the padding (first tap of a SAME window) is the maximum and takes the gradient
    x = np.full((1, 4, 5, 1), -np.inf, np.float32)
    x[0, 0, 0, 0] = np.nan
    x[0, 2, 3, 0] = np.nan
    x[0, 3, 4, 0] = 1.0
    g = np.arange(1, 21, dtype=np.float32).reshape(1, 4, 5, 1)
    for p in ("SAME", "VALID"):
        pooled = tfc.nn.max_pool2d(x, 3, 2, p).numpy()
        gp = np.arange(1, pooled.size + 1, dtype=np.float32).reshape(pooled.shape)
        bitwise(lambda x: tfc.nn.max_pool2d(x, 3, 2, p), x)
        bitwise(lambda x, gp: C.max_pool2d_grad(x, gp, 3, 2, p), x, gp)
        bitwise(lambda x, g: C.max_pool2d_grad_grad(x, g, 3, 2, p), x, g)
    # signed zeros: a sum from +0.0 and the ties' first tap
    z = np.array([0.0, -0.0, -0.0, 0.0] * 5, np.float32).reshape(1, 4, 5, 1)
    bitwise(lambda x: tfc.nn.max_pool2d(x, 2, 1, "SAME"), z)
    bitwise(lambda x: tfc.nn.avg_pool2d(x, 2, 1, "SAME"), z)


def test_like_variants(rng):
    like = rng.normal(size=(3, 7, 6, 5)).astype(np.float32)
    w = rng.normal(size=(3, 2, 5, 4)).astype(np.float32)
    g = rng.normal(size=(3, 4, 3, 4)).astype(np.float32)
    m = check(lambda l, w, g: C.conv2d_backprop_input_like(l, w, g, 2, "SAME"), like, w, g, family="matmul")
    assert "conv2d_backprop_input_like" in _names(m)[0]
    m = check(lambda x, g, l: C.conv2d_backprop_filter_like(x, g, l, 2, "SAME"), like, g, w, family="matmul")
    assert "conv2d_backprop_filter_like" in _names(m)[0]
    gp = rng.normal(size=(3, 4, 3, 5)).astype(np.float32)
    m = bitwise(lambda l, gp: C.avg_pool2d_grad_like(l, gp, 3, 2, "SAME"), like, gp)
    assert "avg_pool2d_grad_like" in _names(m)[0]


def test_pooling_float64_and_empty(rng):
    x = rng.normal(size=(3, 7, 5, 1))
    bitwise(lambda x: tfc.nn.max_pool2d(x, 3, 2, "SAME"), x)
    bitwise(lambda x: tfc.nn.avg_pool2d(x, 3, 2, "SAME"), x)
    gp = rng.normal(size=(3, 4, 3, 1))
    bitwise(lambda x, gp: C.max_pool2d_grad(x, gp, 3, 2, "SAME"), x, gp)
    bitwise(lambda gp: C.avg_pool2d_grad((7, 5), gp, 3, 2, "SAME"), gp)
    x0 = np.zeros((0, 7, 5, 2), np.float32)
    m = bitwise(lambda x: tfc.nn.max_pool2d(x, 3, 2, "SAME"), x0)
    assert not kernels(m)


def test_kernel_shape():
    # one launch of 256-thread blocks over the result, i32 indices, conv kernels
    # under the matmul budget and pooling under the elementwise one
    x = np.zeros((3, 7, 6, 5), np.float32)
    w = np.zeros((3, 2, 5, 4), np.float32)
    m = lower(l3_of(lambda x, w: tfc.nn.max_pool2d(tfc.nn.conv2d(x, w, 1, "SAME"), 2, 2), x, w))
    ks = kernels(m)
    assert [k.attributes["tgpu.kind"].data for k in ks] == ["matmul", "elementwise"]
    assert all(k.attributes["tgpu.index"].data == "i32" for k in ks)


def test_int64_indices(rng, monkeypatch):
    # buffers of 2^31 elements or more index in i64: the same kernels with a
    # lowered threshold, on the simulator
    monkeypatch.setattr(gpu_builder, "I32_MAX", 100)
    x = rng.normal(size=(3, 7, 6, 5)).astype(np.float32)
    w = rng.normal(size=(3, 2, 5, 4)).astype(np.float32)
    m = check(lambda x, w: tfc.nn.conv2d(x, w, 2, "SAME", 1), x, w, family="matmul")
    assert kernels(m)[0].attributes["tgpu.index"].data == "i64"
    g = rng.normal(size=(3, 4, 3, 5)).astype(np.float32)
    m = bitwise(lambda x, g: C.max_pool2d_grad(x, g, 3, 2, "SAME"), x, g)
    assert kernels(m)[0].attributes["tgpu.index"].data == "i64"


@pytest.mark.parametrize("dtype,n,warps", [(np.float32, 4, True), (np.float32, 1, False), (np.float64, 4, False)])
def test_filter_gradient_paths(rng, dtype, n, warps):
    # float32 with at least 32 positions: a warp per filter element (shuffles in a
    # fixed order); else a thread per element
    x = rng.normal(size=(n, 9, 4, 5)).astype(dtype)
    g = rng.normal(size=(n, 3, 2, 4) if n == 1 else (n, 5, 2, 4)).astype(dtype)
    s = (4, 2) if n == 1 else (2, 2)
    m = check(lambda x, g: C.conv2d_backprop_filter(x, (3, 2), g, s, "SAME"), x, g, family="matmul")
    (k,) = kernels(m)
    assert ("_warps_" in k.sym_name.data) == warps
    assert k.attributes["tgpu.kind"].data == ("reduction" if warps else "matmul")


def test_zero_rows(rng):
    # no rows: no launch (zero channels fail in the numpy backend itself: its
    # im2col and GEMMs reshape(-1, 0))
    x0 = rng.normal(size=(2, 0, 4, 3)).astype(np.float32)
    m = bitwise(lambda x: tfc.nn.max_pool2d(x, 2, 2, "SAME"), x0)
    assert not kernels(m)
    m = bitwise(lambda x: tfc.nn.avg_pool2d(x, 2, 2, "SAME"), x0)
    assert not kernels(m)


def test_run_time_shape_raises():
    from tfc.dialects.tensor import parse_module
    from tfc.passes.gpu_nn_library import kernels_of

    text = """func.func @f(%x: memref<?x6x6x3xf32>, %o: memref<?x3x3x3xf32>, %arena: memref<0xi8>) {
  loops.library "max_pool2d"(%x : memref<?x6x6x3xf32>) outs(%o : memref<?x3x3x3xf32>) {attrs = {ksize = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = "SAME"}} -> ()
  func.return
}"""
    with pytest.raises(NotImplementedError, match="target cuda: no GPU kernel for max_pool2d of run-time shape yet"):
        kernels_of(parse_module(text))


def test_grid_stride(rng):
    # more results than MAX_BLOCKS * 256 threads: each thread takes a second one
    from tfc.passes.gpu_builder import MAX_BLOCKS

    x = rng.normal(size=(4, 64, 64, 20)).astype(np.float32)
    assert x.size > MAX_BLOCKS * 256
    m = bitwise(lambda x: tfc.nn.avg_pool2d(x, 2, 1, "SAME"), x)
    assert len(kernels(m)) == 1


def test_malformed_calls_raise():
    # another rank, a missing attribute: NotImplementedError naming it (the lowering's
    # error), never a crash or a wrong kernel
    from tfc.dialects.tensor import parse_module
    from tfc.passes.gpu_nn_library import kernels_of

    rank2 = """func.func @f(%a: memref<3x4xf32>, %b: memref<4x5xf32>, %o: memref<3x5xf32>, %arena: memref<0xi8>) {
  loops.library "conv2d"(%a, %b : memref<3x4xf32>, memref<4x5xf32>) outs(%o : memref<3x5xf32>) {attrs = {}} -> ()
  func.return
}"""
    with pytest.raises(NotImplementedError, match="no GPU kernel for conv2d of memref<3x4xf32>"):
        kernels_of(parse_module(rank2))
    no_strides = """func.func @f(%x: memref<1x6x6x3xf32>, %o: memref<1x3x3x3xf32>, %arena: memref<0xi8>) {
  loops.library "max_pool2d"(%x : memref<1x6x6x3xf32>) outs(%o : memref<1x3x3x3xf32>) {attrs = {ksize = array<i64: 2, 2>, padding = "SAME"}} -> ()
  func.return
}"""
    with pytest.raises(NotImplementedError, match="max_pool2d without its attribute 'strides'"):
        kernels_of(parse_module(no_strides))


@pytest.mark.parametrize("seed", range(6))
def test_pooling_special_values_random(seed):
    # NaN, infinities and signed zeros everywhere, windows with padding before
    # and after, every pooling kernel bit for bit
    rng = np.random.default_rng(seed)
    H, W = int(rng.integers(1, 8)), int(rng.integers(1, 8))
    vals = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0, 1.0, 1.0, 2.0], np.float32)
    x = rng.choice(vals, size=(2, H, W, 2))
    k = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
    s = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    p = "SAME" if (k[0] > H or k[1] > W or seed % 2) else "VALID"
    gp = rng.choice(vals, size=tfc.nn.max_pool2d(x, k, s, p).shape)
    bitwise(lambda x: tfc.nn.max_pool2d(x, k, s, p), x)
    bitwise(lambda x: tfc.nn.avg_pool2d(x, k, s, p), x)
    bitwise(lambda x, gp: C.max_pool2d_grad(x, gp, k, s, p), x, gp)
    bitwise(lambda x, g: C.max_pool2d_grad_grad(x, g, k, s, p), x, rng.choice(vals, size=x.shape))
    bitwise(lambda gp: C.avg_pool2d_grad((H, W), gp, k, s, p), gp)


def test_conv_infinities(rng):
    # an infinite filter tap or gradient: numpy's im2col multiplies padding's 0 by
    # it (NaN there), the kernels read padding as 0 too: the same NaN and inf places
    x = rng.normal(size=(2, 5, 6, 3)).astype(np.float32)
    w = rng.normal(size=(3, 3, 3, 5)).astype(np.float32)
    w[0, 0, 1, 2] = np.inf
    g = rng.normal(size=(2, 5, 6, 5)).astype(np.float32)
    g[1, 0, 0, 3] = np.inf
    assert np.isnan(tfc.nn.conv2d(x, w, 1, "SAME").numpy()).any()
    check(lambda x, w: tfc.nn.conv2d(x, w, 1, "SAME"), x, w, family="matmul")
    check(lambda w, g: C.conv2d_backprop_input((5, 6), w, g, 1, "SAME"), w, g, family="matmul")
    check(lambda x, g: C.conv2d_backprop_filter(x, (3, 3), g, 1, "SAME"), x, g, family="matmul")


@pytest.mark.parametrize("seed", range(4))
def test_random_configurations(seed):
    # random sizes, windows, strides, dilations, paddings and dtypes: every kernel
    rng = np.random.default_rng(100 + seed)
    dt = (np.float32, np.float64)[seed % 2]
    n, H, W = int(rng.integers(0, 4)), int(rng.integers(1, 10)), int(rng.integers(1, 10))
    ci, co = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    s = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    d = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    p = "SAME" if seed < 2 or (kh - 1) * d[0] + 1 > H or (kw - 1) * d[1] + 1 > W else "VALID"
    x = rng.normal(size=(n, H, W, ci)).astype(dt)
    w = rng.normal(size=(kh, kw, ci, co)).astype(dt)
    g = rng.normal(size=tfc.nn.conv2d(x, w, s, p, d).shape).astype(dt)
    check(lambda x, w: tfc.nn.conv2d(x, w, s, p, d), x, w, family="matmul")
    check(lambda w, g: C.conv2d_backprop_input((H, W), w, g, s, p, d), w, g, family="matmul")
    check(lambda x, g: C.conv2d_backprop_filter(x, (kh, kw), g, s, p, d), x, g, family="matmul")
    pp = "SAME" if kh > H or kw > W else p
    gp = rng.normal(size=tfc.nn.max_pool2d(x, (kh, kw), s, pp).shape).astype(dt)
    bitwise(lambda x: tfc.nn.max_pool2d(x, (kh, kw), s, pp), x)
    bitwise(lambda x, gp: C.max_pool2d_grad(x, gp, (kh, kw), s, pp), x, gp)
    bitwise(lambda x, g2: C.max_pool2d_grad_grad(x, g2, (kh, kw), s, pp), x, np.round(x * 3))
    bitwise(lambda x: tfc.nn.avg_pool2d(x, (kh, kw), s, pp), x)
    bitwise(lambda gp: C.avg_pool2d_grad((H, W), gp, (kh, kw), s, pp), gp)
