"""Quantized functions on target='cuda' (issue #18 point 4, tfc/passes/gpu_quant_library.py):
``dp4a.s32.s32`` (dialect, printer, simulator) against the PTX ISA's semantics
with int32 wrap-around; quantize and the integer matmul (dp4a) bit-identical to
the numpy backend (odd M, N, K; K > 1024; relu, int8 and float32 results;
per-channel and per-tensor multipliers); weight-only matmul within the float
bound; the quantized and weight-only conv2d likewise; int8 max pooling
bit-identical; every kernel assembled by ptxas for sm_80 and sm_90 within budget; the
digits MLP and the example's CNN quantized end to end on the simulator."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tfc
from tfc.ops import quant as q
from tfc.quantization import Config

pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator has not landed")
from test_lower_gpu import check_budgets, l3_of, lower  # noqa: E402

RNG = np.random.default_rng(18)


def int8(shape, lo=-128, hi=127):
    return RNG.integers(lo, hi + 1, shape).astype(np.int8)


# -- dp4a -----------------------------------------------------------------------------------------


def dp4a_kernel_ptx():
    """out[t] = dp4a(a[t], b[t], c[t]) for the 64 threads of one block, built as L4 and printed."""
    from xdsl.dialects import gpu
    from xdsl.dialects.builtin import StringAttr, i32
    from xdsl.ir import Block, Region

    from tfc.backends.cuda.ptx import to_ptx
    from tfc.dialects import gpu as G
    from tfc.passes.gpu_builder import KernelBuilder

    kb = KernelBuilder("dp4a_test", [G.PtrType(i32, "global")] * 4, "elementwise", i32, (64, 1, 1))
    t = kb.tid()
    a, b, c = (kb.load(p, t)[0] for p in kb.args[:3])
    kb.store([kb.emit(G.Dp4aOp(a, b, c))], kb.args[3], t)
    return to_ptx(gpu.ModuleOp(StringAttr("kernels"), Region(Block([kb.finish()]))))


def dp4a_reference(a, b, c):
    """The PTX ISA's dp4a.s32.s32: d = c + sum of the products of the sign-extended bytes, in 32 bits."""
    ab = a.view(np.int8).reshape(-1, 4).astype(np.int64)
    bb = b.view(np.int8).reshape(-1, 4).astype(np.int64)
    return ((ab * bb).sum(1) + c.astype(np.int64)).astype(np.int32)


def test_dp4a_follows_the_ptx_isa_and_wraps_in_int32():
    from tfc.backends.cuda import ptxas
    from tfc.backends.cuda import simulator as S

    text = dp4a_kernel_ptx()
    assert "dp4a.s32.s32" in text
    a = RNG.integers(-2 ** 31, 2 ** 31, 64).astype(np.int32)
    b = RNG.integers(-2 ** 31, 2 ** 31, 64).astype(np.int32)
    c = RNG.integers(-2 ** 31, 2 ** 31, 64).astype(np.int32)
    minus128 = np.int32(np.uint32(0x80808080).view(np.int32))
    a[:4], b[:4] = minus128, minus128  # each product +16384: 65536 in all
    c[:4] = [2 ** 31 - 1, 2 ** 31 - 1 - 65536, -2 ** 31, 0]  # wraps past INT_MAX; stops exactly at it
    a[4], b[4], c[4] = np.int32(0x7F7F7F7F), minus128, -2 ** 31  # 4 * -16256 below INT_MIN: wraps up
    out = np.zeros(64, np.int32)
    S.run(S.parse(text), "dp4a_test", (1, 1, 1), (64, 1, 1), [a, b, c, out], S.Memory())
    want = dp4a_reference(a, b, c)
    assert np.array_equal(out, want)
    assert out[0] == -2 ** 31 + 65535 and out[1] == 2 ** 31 - 1 and out[4] == 2 ** 31 - 4 * 16256
    if ptxas.available():
        for arch in ("sm_80", "sm_90"):
            assert "dp4a_test" in ptxas.assemble(text, arch)


def test_dp4a_op_verifies_and_round_trips():
    from tfc.dialects.tensor import parse_module, print_ir

    text = """builtin.module {
  gpu.module @kernels {
    gpu.func @k(%a: i32, %b: i32) kernel {
      %r = tgpu.dp4a %a, %b, %a : i32
      gpu.return
    }
  }
}"""
    m = parse_module(text)
    m.verify()
    assert "tgpu.dp4a %a, %b, %a : i32" in print_ir(m)
    with pytest.raises(Exception, match="i32"):
        parse_module(text.replace("%b: i32", "%b: i64").replace("%a, %b, %a : i32", "%a, %b, %a : i64"))


# -- the library kernels against the numpy backend ----------------------------------------------


def same_on_gpu(fn, *args):
    """``fn`` compiled for cuda (the simulator or a GPU) equals the numpy backend bit for bit."""
    want = tfc.compile(tfc.function(fn), *args)(*args).numpy()
    got = tfc.compile(tfc.function(fn), *args, target="cuda")(*args).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    return got


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (5, 7, 3), (3, 12, 16), (4, 1029, 5), (2, 0, 3)])
@pytest.mark.parametrize("relu,out_dtype", [(False, tfc.int8), (True, tfc.int8), (False, tfc.float32),
                                            (True, tfc.float32)])
def test_quantized_matmul_is_bit_identical_to_numpy(cuda_driver, m, k, n, relu, out_dtype):
    x, w = int8((m, k)), int8((k, n))
    bias = RNG.integers(-2 ** 12, 2 ** 12, n).astype(np.int32)
    acc = x.astype(np.int64) @ w.astype(np.int64) + bias
    # the largest |acc| maps to about 250: rounding, clipping and relu all exercised
    mult = RNG.uniform(0.7, 1.0, n).astype(np.float32) * np.float32(250 / max(np.abs(acc).max(initial=1), 1))
    got = same_on_gpu(lambda x: q.quantized_matmul(x, w, bias, mult, out_zero_point=-5, relu=relu,
                                                   out_dtype=out_dtype), x)
    if out_dtype == tfc.int8 and m * n >= 15:
        assert len(np.unique(got)) > 3 and got.max() == 127 and got.min() == (-5 if relu else -128)


def test_quantized_matmul_extremes_and_a_per_tensor_multiplier(cuda_driver):
    k = 1100  # every product +16384 and a bias near INT_MAX: the int32 sum wraps, as numpy's
    x, w = np.full((3, k), -128, np.int8), np.full((k, 2), -128, np.int8)
    x[1] = 127
    bias = np.array([2 ** 31 - 1 - k * 16384 + 5, -7], np.int32)
    mult = np.array([3e-9], np.float32)  # one for all channels
    for out_dtype in (tfc.int8, tfc.float32):
        same_on_gpu(lambda x: q.quantized_matmul(x, w, bias, mult, out_zero_point=3, out_dtype=out_dtype), x)


def test_quantize_is_bit_identical_to_numpy(cuda_driver):
    x = (RNG.standard_normal((7, 13)) * 3).astype(np.float32)
    x[0, :6] = [np.nan, np.inf, -np.inf, 0.5, -0.5, 2.5]  # ties round to even (with the zero point 3)
    x[1, :3] = [1e30, -1e30, -0.0]
    same_on_gpu(lambda x: q.quantize(x, 0.5, 3), x)
    same_on_gpu(lambda x: q.quantize(x, 0.031, -128), x.astype(np.float64))


def test_weight_quantized_matmul_within_the_float_bound(cuda_driver):
    from helpers import assert_meets_contract

    x = RNG.standard_normal((2, 3, 70)).astype(np.float32)
    w = int8((70, 9), -127, 127)
    for scale in (RNG.uniform(0.001, 0.01, 9).astype(np.float32), np.array([0.004], np.float32)):
        fn = (lambda s: lambda x: q.weight_quantized_matmul(x, w, s))(scale)
        want = tfc.compile(tfc.function(fn), x)(x)
        got = tfc.compile(tfc.function(fn), x, target="cuda")(x)
        assert_meets_contract(got.numpy(), want.numpy(), "matmul", target="cuda")


def test_kernels_assemble_within_budget():
    x, w = int8((5, 1030)), int8((1030, 9))
    bias, mult = RNG.integers(-99, 99, 9).astype(np.int32), np.full(9, 1e-3, np.float32)

    wc = int8((3, 3, 5, 9))

    def fn(xf):
        xq = q.quantize(xf, 0.05, 1)
        h = q.quantized_matmul(xq, w, bias, mult, out_zero_point=-2, relu=True)
        out = q.quantized_matmul(h, w[:9], bias, mult, out_dtype=tfc.float32)
        img = tfc.reshape(xf[:, :250], (5, 5, 10, 5))
        conv = q.quantized_conv2d(q.quantize(img, 0.05, 1), wc, bias, mult, padding="SAME", pad_value=1)
        return out, conv, q.weight_quantized_conv2d(img, wc, mult), q.weight_quantized_matmul(xf, w, mult)
    xf = RNG.standard_normal((5, 1030)).astype(np.float32)
    m = lower(l3_of(fn, xf))
    text = str(m)
    # one per matmul (on words packed beforehand: x and w, per matmul), and per conv the channel loop's
    # and the tail's (5 channels = 4 + 1)
    assert text.count("tgpu.dp4a") == 4 and len(re.findall(r"gpu\.func @k\d+_pack_int8", text)) == 4
    assert text.count("loops.alloc : memref<5x258xi32>") == 1 and text.count("loops.alloc : memref<9x258xi32>") == 1
    check_budgets(m)


@pytest.mark.parametrize("hwc,co,k,s,d,padding", [((5, 6, 5), 3, (3, 2), 1, 1, "SAME"), ((7, 7, 3), 4, (3, 3), 2, 1, "SAME"),
                                                   ((6, 5, 1), 2, (2, 3), 1, 2, "VALID"), ((4, 4, 8), 5, (3, 3), 1, 1, "SAME")])
def test_quantized_conv2d_is_bit_identical_and_weight_only_within_bound(cuda_driver, hwc, co, k, s, d, padding):
    from helpers import assert_meets_contract

    x, w = int8((2,) + hwc), int8(k + (hwc[2], co), -127, 127)
    bias = RNG.integers(-999, 999, co).astype(np.int32)
    mult = RNG.uniform(0.7, 1.0, co).astype(np.float32) * np.float32(1000 / (128 * 127 * k[0] * k[1] * hwc[2]))
    for relu, out_dtype in ((False, tfc.int8), (True, tfc.int8), (True, tfc.float32)):
        got = same_on_gpu(lambda x: q.quantized_conv2d(x, w, bias, mult, strides=s, padding=padding, dilations=d,
                                                       pad_value=-7, out_zero_point=2, relu=relu,
                                                       out_dtype=out_dtype), x)
        assert len(np.unique(got)) > 4
    xf = RNG.standard_normal((2,) + hwc).astype(np.float32)
    for scale in (RNG.uniform(0.001, 0.01, co).astype(np.float32), np.array([0.003], np.float32)):
        fn = (lambda sc: lambda x: q.weight_quantized_conv2d(x, w, sc, strides=s, padding=padding, dilations=d))(scale)
        want = tfc.compile(tfc.function(fn), xf)(xf)
        assert_meets_contract(tfc.compile(tfc.function(fn), xf, target="cuda")(xf).numpy(), want.numpy(),
                              "matmul", target="cuda")


@pytest.mark.parametrize("k,s,padding", [(2, 2, "VALID"), (3, 2, "SAME"), (3, 1, "SAME")])
def test_int8_max_pool_is_bit_identical(cuda_driver, k, s, padding):
    x = int8((2, 5, 7, 3))
    x[0, :2, :2] = -128  # a window of the minimum only (the padding's value)
    same_on_gpu(lambda x: tfc.nn.max_pool2d(x, k, s, padding), x)


def test_int8_max_pool_assembles_within_budget():
    x = int8((2, 5, 7, 3))
    m = lower(l3_of(lambda x: tfc.nn.max_pool2d(x, 3, 2, "SAME"), x))
    assert "arith.maxsi" in str(m)
    check_budgets(m)


# -- end to end -----------------------------------------------------------------------------------


def test_the_digits_mlp_quantized_on_cuda_equals_the_numpy_backend(cuda_driver):
    """The digits MLP (64-64-10, examples/mlp_digits.py) quantized static int8 and
    weight-only: compiled for cuda, run on the simulator (or a GPU), equal to the
    numpy backend's quantized function (static: bit for bit)."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
    from mlp_digits import MLP

    model = MLP(seed=0)
    model(tfc.zeros((1, 64)))
    fn = tfc.function(lambda x: model(x), input_signature=[tfc.TensorSpec((None, 64))])
    rng = np.random.default_rng(0)
    calibration = [(rng.uniform(0, 16, (32, 64)).astype(np.float32),) for _ in range(2)]
    x = rng.uniform(0, 16, (9, 64)).astype(np.float32)
    static = Config(quiet=True)
    cpu = tfc.compile(fn, quantize=static, calibration=calibration)
    gpu = tfc.compile(fn, target="cuda", quantize=static, calibration=calibration)
    assert "quantized_matmul" in gpu.ir("loops")
    assert np.array_equal(gpu(x).numpy(), cpu(x).numpy())
    from helpers import assert_meets_contract

    cpu_w = tfc.compile(fn, quantize="int8-weights")
    gpu_w = tfc.compile(fn, target="cuda", quantize="int8-weights")
    assert_meets_contract(gpu_w(x).numpy(), cpu_w(x).numpy(), "matmul", target="cuda")


def test_the_digits_cnn_quantized_on_cuda_equals_the_numpy_backend(cuda_driver):
    """The example's CNN (conv 3x3 relu, max pool, conv, max pool, dense) quantized
    static int8 (max pools on the int8 codes) and weight-only, on cuda."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
    from quantize_digits import CNN

    model = CNN(seed=0)
    model(tfc.zeros((1, 8, 8, 1)))
    fn = tfc.function(lambda x: model(x), input_signature=[tfc.TensorSpec((None, 8, 8, 1))])
    rng = np.random.default_rng(1)
    calibration = [(rng.uniform(0, 1, (16, 8, 8, 1)).astype(np.float32),) for _ in range(2)]
    x = rng.uniform(0, 1, (3, 8, 8, 1)).astype(np.float32)
    static = Config(quiet=True)
    cpu = tfc.compile(fn, quantize=static, calibration=calibration)
    gpu = tfc.compile(fn, target="cuda", quantize=static, calibration=calibration)
    assert "quantized_conv2d" in gpu.ir("loops") and "max_pool2d" in gpu.ir("loops")
    assert np.array_equal(gpu(x).numpy(), cpu(x).numpy())
    assert np.array_equal(tfc.compile(fn, target="cuda", quantize="int8-weights")(x).numpy(),
                          tfc.compile(fn, quantize="int8-weights")(x).numpy())
