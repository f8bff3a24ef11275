"""Library kernels write into planned buffers (issue #16, point 1): ops whose
declaration gives ``kernel_into`` (matmul, conv2d and its gradients, pooling and
its gradients, the random generators) are ``loops.library`` calls with
``outs(...)``: their results are buffers of the memory plan (arena, or fresh
where they escape), with eager's bits; nothing is keyed by op name."""
import numpy as np
import pytest

import tfc
from helpers import assert_bit_identical
from tfc.core.registry import REGISTRY
from tfc.dialects import loops as L


def arr(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


same = assert_bit_identical  # eager against compiled, bit for bit


def into_calls(cf):
    """callee -> number of loops.library calls writing a planned buffer."""
    out = {}
    for op in cf.loops_module.walk():
        if isinstance(op, L.LibraryOp) and op.outs:
            out[op.callee.data] = out.get(op.callee.data, 0) + 1
    return out


def test_declarations_have_kernel_into():
    for name in ("matmul", "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter",
                 "conv2d_backprop_input_like", "conv2d_backprop_filter_like", "max_pool2d", "max_pool2d_grad",
                 "max_pool2d_grad_grad", "avg_pool2d", "avg_pool2d_grad", "uniform", "normal"):
        assert REGISTRY[name].kernel_into is not None, name


@pytest.mark.parametrize("padding,strides,dilations", [("VALID", 1, 1), ("SAME", 2, 1), ("SAME", 1, 2),
                                                      ("VALID", (2, 1), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_and_gradients(padding, strides, dilations, dtype):
    def fn(x, w):
        with tfc.GradientTape() as t:
            t.watch([x, w])
            y = tfc.nn.conv2d(x, w, strides=strides, padding=padding, dilations=dilations)
            s = tfc.reduce_sum(y * y)
        gx, gw = t.gradient(s, [x, w])
        return y * 0.5, gx, gw

    x, w = tfc.constant(arr(3, 9, 7, 2, seed=1, dtype=dtype)), tfc.constant(arr(3, 2, 2, 5, seed=2, dtype=dtype))
    f = tfc.function(fn)
    same(f(x, w), fn(x, w))
    calls = into_calls(f.get_concrete_function(x, w))
    assert calls.get("conv2d") == 1 and calls.get("conv2d_backprop_input") == 1 \
        and calls.get("conv2d_backprop_filter") == 1, calls
    plan = f.get_concrete_function(x, w).memory_plan
    for name in ("tfc.conv2d ", "tfc.conv2d_backprop_input ", "tfc.conv2d_backprop_filter "):
        assert any(b.op.startswith(name) for b in plan.buffers), str(plan)


def test_conv2d_intermediate_in_the_arena():
    def fn(x, w):
        return tfc.reduce_sum(tfc.nn.conv2d(x, w), axis=3)

    x, w = arr(2, 6, 6, 3, seed=8), arr(2, 2, 3, 4, seed=9)
    f = tfc.function(fn)
    same(f(x, w), fn(x, w))
    plan = f.get_concrete_function(x, w).memory_plan
    assert [b.kind for b in plan.buffers if b.op.startswith("tfc.conv2d ")] == ["arena"], str(plan)


def test_conv2d_empty_batch_and_non_contiguous():
    f = tfc.function(lambda x, w: tfc.nn.conv2d(x, w, padding="SAME"))
    w = arr(3, 3, 4, 2, seed=3)
    for x in (arr(0, 5, 5, 4), arr(2, 10, 6, 4, seed=4)[:, ::2], arr(2, 5, 5, 8, seed=5)[..., ::2]):
        same(f(x, w), tfc.nn.conv2d(x, w, padding="SAME"))


@pytest.mark.parametrize("n", [2, 64])  # 64 images: the kernel runs on chunks of rows into the buffer
@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_pooling_and_gradients(n, padding):
    def fn(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            a = tfc.nn.max_pool2d(x, 3, 2, padding)
            b = tfc.nn.avg_pool2d(x, 2, 2, padding)
            s = tfc.reduce_sum(a * a) + tfc.reduce_sum(b * 3.0)
        return a + 1.0, b - 1.0, t.gradient(s, x)

    x = tfc.constant(arr(n, 33, 31, 8, seed=6))
    f = tfc.function(fn)
    same(f(x), fn(x))
    calls = into_calls(f.get_concrete_function(x))
    for name in ("max_pool2d", "avg_pool2d", "max_pool2d_grad", "avg_pool2d_grad"):
        assert calls.get(name) == 1, calls


@pytest.mark.parametrize("shape", [(7,), (3, 5), (0, 4), (1001,)])
@pytest.mark.parametrize("dtype", [tfc.float32, tfc.float64, tfc.float16])
def test_random_into_planned_buffers(shape, dtype):
    def fn():
        a = tfc.random.uniform(shape, dtype=dtype, seed=7)
        b = tfc.random.normal(shape, dtype=dtype)        # the global stream
        c = tfc.random.uniform(shape, -3, 9, dtype=tfc.int32)
        return a * 2.0, b, c + 1

    f = tfc.function(fn)
    tfc.random.set_seed(5)
    want = fn()
    tfc.random.set_seed(5)
    got = f()
    same(got, want)
    assert into_calls(f.get_concrete_function()).get("uniform") == 2


def test_random_results_escape_in_fresh_buffers():
    f = tfc.function(lambda: tfc.random.normal((4, 3), seed=1))
    a, b = f().numpy(), f().numpy()
    same(a, b)
    same(a, tfc.random.normal((4, 3), seed=1))
    plan = f.get_concrete_function().memory_plan
    assert [b.kind for b in plan.buffers] == ["fresh"]
