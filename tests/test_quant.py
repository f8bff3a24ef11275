"""Post-training int8 quantization: the quantized ops against a plain numpy
reference of the same scheme (bit-exact), compiled against eager, the
tfc-quantize pass end to end on small models, calibration edge cases, export."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tfc
from tfc.ops import quant as q
from tfc.quantization import Config, weight_bytes

RNG = np.random.default_rng(0)


# -- a plain numpy reference of the scheme (written apart from tfc/ops/quant.py) ----------


def ref_quantize(x, scale, zp):
    return np.clip(np.rint(x / np.float32(scale)) + zp, -128, 127).astype(np.int8)


def ref_acc(x, w, bias):
    """The int32 accumulator with int64 arithmetic (no float anywhere)."""
    acc = x.astype(np.int64) @ w.astype(np.int64) + bias.astype(np.int64)
    assert np.abs(acc).max(initial=0) < 2 ** 31
    return acc


def ref_requant(acc, mult, zo, relu, out_float):
    real = acc.astype(np.float32) * mult.astype(np.float32)
    if out_float:
        return np.maximum(real, np.float32(0)) if relu else real
    return np.clip(np.rint(real + np.float32(zo)), zo if relu else -128, 127).astype(np.int8)


def ref_qparams(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi == lo:
        return 1.0, 0
    s = (hi - lo) / 255.0
    return s, int(np.clip(np.rint(-128 - lo / s), -128, 127))


def ref_weights(w, per_channel=True):
    amax = np.abs(w.astype(np.float64)).max(axis=0)
    if not per_channel:
        amax[:] = amax.max()
    s = np.where(amax > 0, amax / 127.0, 1.0)
    return np.clip(np.rint(w / s), -127, 127).astype(np.int8), s


def int8(shape, lo=-128, hi=127):
    return RNG.integers(lo, hi + 1, shape).astype(np.int8)


# -- the ops ---------------------------------------------------------------------------------


def held(codes_int8, codes):
    """int8 codes as the ops take them with ``codes=``: as they are, or as float32."""
    return codes_int8 if codes is None else codes_int8.astype(np.float32)


def same_codes(got, want, codes):
    """``got`` (an op's result with ``codes=``) holds exactly ``want``'s values."""
    if codes is not None and want.dtype == np.int8:
        want = want.astype(np.float32)
    return got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("codes", [None, tfc.float32])
@pytest.mark.parametrize("k", [1, 64, 1024, 1025, 3000])
@pytest.mark.parametrize("relu,out_float", [(False, False), (True, False), (False, True), (True, True)])
def test_quantized_matmul_matches_the_integer_reference(k, relu, out_float, codes):
    x, w = int8((5, k)), int8((k, 7))
    bias = RNG.integers(-2 ** 20, 2 ** 20, 7).astype(np.int32)
    mult = RNG.uniform(1e-6, 1e-3, 7).astype(np.float32)
    out_dtype = tfc.float32 if out_float else tfc.int8
    got = q.quantized_matmul(held(x, codes), w, bias, mult, out_zero_point=-3, relu=relu, out_dtype=out_dtype,
                             codes=codes).numpy()
    want = ref_requant(ref_acc(x, w, bias), mult, -3, relu, out_float)
    assert same_codes(got, want, codes)


def test_codes_held_in_float32_are_checked():
    x, w = int8((2, 3)), int8((3, 2))
    bias, mult = np.zeros(2, np.int32), np.ones(2, np.float32)
    with pytest.raises(TypeError, match="x has dtype int8; expected one of float32"):
        q.quantized_matmul(x, w, bias, mult, codes=tfc.float32)  # int8 x, float32 codes declared
    with pytest.raises(TypeError, match="codes must be int8 or float32"):
        q.quantize(np.ones(3, np.float32), 1.0, codes=tfc.int32)
    assert q.quantize(np.ones(3, np.float64), 0.5, 3, codes=tfc.float32).numpy().dtype == np.float32


def test_int8_matmul_is_exact_at_the_extremes():
    # every product +16384: float32 sums would round past 2**24 without the chunks
    for k in (1024, 1025, 4096, 5000):
        x, w = np.full((2, k), -128, np.int8), np.full((k, 3), -128, np.int8)
        assert np.array_equal(q.int8_matmul(x, w), ref_acc(x, w, np.zeros(3, np.int64)))
        big = np.full(3, 2 ** 30 - k * 16384, np.int32)  # the accumulate fast path must not apply
        assert np.array_equal(q.accumulate(x, w, big), ref_acc(x, w, big).astype(np.float32))


@pytest.mark.parametrize("codes", [None, tfc.float32])
@pytest.mark.parametrize("m,n", [(20001, 16), (4097, 10), (131, 32), (300, 64), (3, 2), (1, 5)])
@pytest.mark.parametrize("out_float", [False, True])
def test_requantization_of_many_rows_matches_the_reference(m, n, out_float, codes):
    # the per-channel product (and, codes in float32, the bias row) of _rows: the vector
    # repeated down every row, or for 20001 x 16 in blocks of 128 rows, a remainder row included
    x, w = int8((m, 9)), int8((9, n))
    bias = RNG.integers(-50000, 50000, n).astype(np.int32)
    mult = RNG.uniform(1e-5, 1e-2, n).astype(np.float32)
    got = q.quantized_matmul(held(x, codes), w, bias, mult, out_zero_point=11, relu=True,
                             out_dtype=tfc.float32 if out_float else tfc.int8, codes=codes).numpy()
    assert same_codes(got, ref_requant(ref_acc(x, w, bias), mult, 11, True, out_float), codes)


def test_the_product_weights_follow_the_values_not_the_arrays():
    # the float32 [w; bias] is cached: equal values share it, changed values (a
    # writable array changed in place, or a fresh one) must not reuse it
    x, w = int8((6, 5)), int8((5, 3))
    bias = np.array([1, -2, 3], np.int32)
    assert np.array_equal(q.accumulate(x, w, bias), ref_acc(x, w, bias).astype(np.float32))
    bias[1] = 40000
    w[0, 0] = -w[0, 0] if w[0, 0] != -128 else 127
    assert np.array_equal(q.accumulate(x, w, bias), ref_acc(x, w, bias).astype(np.float32))
    other = np.array([7, 7, 7], np.int32)
    assert np.array_equal(q.accumulate(x, w.copy(), other), ref_acc(x, w, other).astype(np.float32))


def test_read_only_constants_are_found_by_identity_and_still_by_value():
    # a compiled function's constants are read-only and the same arrays each call: the
    # caches find them by identity; two layers alternating, then other read-only values
    def frozen(a):
        a.flags.writeable = False
        return a

    x = int8((4, 6)).astype(np.float32)
    layers = [(frozen(int8((6, 3))), frozen(np.array([5, -7, 9], np.int32)),
               frozen(RNG.uniform(0.01, 0.1, 3).astype(np.float32))) for _ in range(3)]
    for _ in range(2):
        for w, bias, mult in layers:
            got = q.quantized_matmul(x, w, bias, mult, out_zero_point=2, relu=False, codes=tfc.float32).numpy()
            want = ref_requant(ref_acc(x.astype(np.int8), w, bias), mult, 2, False, False)
            assert same_codes(got, want, tfc.float32)


def test_quantize_and_dequantize():
    x = (RNG.standard_normal((4, 9)) * 3).astype(np.float32)
    x[0, :3] = [1e9, -1e9, 0.0]
    got = q.quantize(x, 0.05, -7).numpy()
    assert np.array_equal(got, ref_quantize(x, 0.05, -7)) and got[0, 0] == 127 and got[0, 1] == -128
    assert same_codes(q.quantize(x, 0.05, -7, codes=tfc.float32).numpy(), got, tfc.float32)
    x[1, :2] = np.nan  # code 0 (docs/quantization.md), held in either dtype
    with np.errstate(invalid="ignore"):
        got = q.quantize(x, 0.05, -7).numpy()
    assert got[1, 0] == got[1, 1] == 0
    for nan_codes in (q.quantize(x, 0.05, -7, codes=tfc.float32), q.quantize(np.float32(np.nan), 0.05, 3,
                                                                             codes=tfc.float32)):
        assert not np.isnan(nan_codes.numpy()).any()
    assert same_codes(q.quantize(x, 0.05, -7, codes=tfc.float32).numpy(), got, tfc.float32)
    back = q.dequantize(got, 0.05, -7).numpy()
    assert back.dtype == np.float32
    assert np.array_equal(back, (got.astype(np.float32) + 7) * np.float32(0.05))
    with pytest.raises(ValueError, match="scale must be a positive finite"):
        q.quantize(x, 0.0)
    with pytest.raises(ValueError, match="zero_point must be in"):
        q.quantize(x, 1.0, 200)
    with pytest.raises(TypeError, match="dtype int32"):
        q.dequantize(np.zeros(3, np.int32), 1.0)


@pytest.mark.parametrize("codes", [None, tfc.float32])
def test_quantized_conv2d_matches_im2col_reference(codes):
    x, w = int8((2, 7, 6, 3)), int8((3, 3, 3, 4), -127, 127)
    bias, mult = RNG.integers(-5000, 5000, 4).astype(np.int32), RNG.uniform(1e-4, 1e-2, 4).astype(np.float32)
    got = q.quantized_conv2d(held(x, codes), w, bias, mult, strides=2, padding="SAME", pad_value=-20,
                             out_zero_point=5, relu=True, codes=codes).numpy()
    # SAME, stride 2: 7x6 -> 4x3, pads (1, 1) rows and (0, 1) columns, filled with the zero point -20
    xp = np.pad(x, ((0, 0), (1, 1), (0, 1), (0, 0)), constant_values=-20)
    cols = np.stack([xp[:, i:i + 7:2, j:j + 5:2, :] for i in range(3) for j in range(3)], axis=3)
    want = ref_requant(ref_acc(cols.reshape(-1, 27), w.reshape(27, 4), bias), mult, 5, True, False)
    assert same_codes(got, want.reshape(2, 4, 3, 4), codes)


def test_weight_only_ops():
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    w, s = int8((8, 5), -127, 127), RNG.uniform(0.001, 0.1, 5).astype(np.float32)
    assert np.array_equal(q.weight_quantized_matmul(x, w, s).numpy(), x @ (w.astype(np.float32) * s))
    xi = RNG.standard_normal((1, 5, 5, 2)).astype(np.float32)
    wc = int8((2, 2, 2, 3), -127, 127)
    got = q.weight_quantized_conv2d(xi, wc, s[:3]).numpy()
    want = tfc.nn.conv2d(xi, wc.astype(np.float32) * s[:3], 1, "VALID").numpy()
    assert np.array_equal(got, want)
    with pytest.raises(ValueError, match=r"scale must have shape \(5,\)"):
        q.weight_quantized_matmul(x, w, s[:4])


def test_op_errors_name_the_problem():
    with pytest.raises(ValueError, match="inner dimensions differ"):
        q.quantized_matmul(int8((2, 3)), int8((4, 2)), np.zeros(2, np.int32), np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"bias must have shape \(2,\)"):
        q.quantized_matmul(int8((2, 3)), int8((3, 2)), np.zeros(3, np.int32), np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"multiplier must have shape \(2,\) \(one per output channel\) or \(1,\)"):
        q.quantized_matmul(int8((2, 3)), int8((3, 2)), np.zeros(2, np.int32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"bias must have shape \(2,\) \(one per output channel\), got \(1,\)"):
        q.quantized_matmul(int8((2, 3)), int8((3, 2)), np.zeros(1, np.int32), np.ones(1, np.float32))
    with pytest.raises(ValueError, match=r"scale must have shape \(2,\)"):
        q.weight_quantized_matmul(np.ones((2, 3), np.float32), int8((3, 2)), np.ones(3, np.float32))
    with pytest.raises(TypeError, match="x has dtype float32"):
        q.quantized_matmul(np.zeros((2, 3), np.float32), int8((3, 2)), np.zeros(2, np.int32), np.ones(2, np.float32))
    with pytest.raises(ValueError, match="overflow the int32 accumulator"):
        tfc.compile(tfc.function(lambda x, w: q.quantized_matmul(
            x, w, np.zeros(2, np.int32), np.ones(2, np.float32)), autograph=False),
            tfc.TensorSpec((1, q.MAX_K + 1), tfc.int8), tfc.TensorSpec((q.MAX_K + 1, 2), tfc.int8))


def test_compiled_ops_are_bit_identical_to_eager():
    x = RNG.standard_normal((6, 40)).astype(np.float32)
    w, wc = int8((40, 5), -127, 127), int8((3, 3, 4, 5), -127, 127)
    bias, mult = RNG.integers(-999, 999, 5).astype(np.int32), RNG.uniform(1e-4, 1e-2, 5).astype(np.float32)

    def f(x, img):
        xq = q.quantize(x, 0.03, 4)
        a = q.quantized_matmul(xq, w, bias, mult, out_zero_point=-9, relu=True)
        b = q.quantized_matmul(a, int8((5, 5), -127, 127) * 0 + w[:5], bias, mult, out_dtype=tfc.float32)
        c = q.weight_quantized_matmul(x, w, mult)
        iq = q.quantize(img, 0.02, 0)
        d = q.quantized_conv2d(iq, wc, bias, mult, padding="SAME", pad_value=0, out_dtype=tfc.float32)
        e = q.weight_quantized_conv2d(img, wc, mult, padding="SAME")
        return q.dequantize(a, 0.1, -9), b, c, d, e

    img = RNG.standard_normal((2, 6, 6, 4)).astype(np.float32)
    fn = tfc.function(f, autograph=False)
    eager = f(tfc.constant(x), tfc.constant(img))
    for sig in [(tfc.TensorSpec((6, 40)), tfc.TensorSpec((2, 6, 6, 4))),
                (tfc.TensorSpec((None, 40)), tfc.TensorSpec((None, 6, 6, 4)))]:
        compiled = tfc.compile(fn, *sig)(x, img)
        for a, b in zip(eager, compiled):
            assert np.array_equal(a.numpy(), b.numpy())


# -- the pass end to end ------------------------------------------------------------------------


class MLP(tfc.Module):
    def __init__(self, sizes=(12, 16, 5), seed=0):
        super().__init__()
        self.hidden = tfc.layers.Dense(sizes[1], activation="relu", kernel_initializer=tfc.layers.GlorotUniform(seed))
        self.out = tfc.layers.Dense(sizes[2], kernel_initializer=tfc.layers.GlorotUniform(seed + 1))
        self.hidden(tfc.zeros((1, sizes[0])))
        self.out(tfc.zeros((1, sizes[1])))
        self.hidden.bias.assign(RNG.uniform(-0.2, 0.2, sizes[1]).astype(np.float32))
        self.out.bias.assign(RNG.uniform(-0.2, 0.2, sizes[2]).astype(np.float32))

    def __call__(self, x):
        return self.out(self.hidden(x))


def make_mlp(sizes=(12, 16, 5)):
    model = MLP(sizes)
    fn = tfc.function(lambda x: model(x), input_signature=[tfc.TensorSpec((None, sizes[0]))], autograph=False)
    return model, fn


def reference_static_mlp(model, batches, x, per_channel=True):
    """The whole static scheme for Dense(relu) -> Dense in numpy; ranges from
    eager tfc (the calibration's kernels)."""
    w1, b1 = model.hidden.kernel.numpy(), model.hidden.bias.numpy()
    w2, b2 = model.out.kernel.numpy(), model.out.bias.numpy()
    xs = np.concatenate(batches)
    h = tfc.nn.relu(tfc.matmul(xs, w1) + b1).numpy()
    s1, z1 = ref_qparams(float(xs.min()), float(xs.max()))
    s2, z2 = ref_qparams(float(h.min()), float(h.max()))
    q1, sw1 = ref_weights(w1, per_channel)
    q2, sw2 = ref_weights(w2, per_channel)
    bias1 = np.rint(b1 / (s1 * sw1)) - z1 * q1.astype(np.int64).sum(0)
    bias2 = np.rint(b2 / (s2 * sw2)) - z2 * q2.astype(np.int64).sum(0)
    xq = ref_quantize(x, s1, z1)
    hq = ref_requant(ref_acc(xq, q1, bias1), (s1 * sw1 / s2).astype(np.float32), z2, True, False)
    return ref_requant(ref_acc(hq, q2, bias2), (s2 * sw2).astype(np.float32), 0, False, True)


def static_int8(fn, config, calibration, codes):
    """``fn`` quantized as tfc.compile does for the CPU (codes held in float32),
    or with int8 codes (the GPU's form), both run by the numpy backend."""
    if codes == "f32":
        return tfc.compile(fn, quantize=config, calibration=calibration)
    from tfc.quantization import quantize_concrete

    return quantize_concrete(tfc.compile(fn), config, calibration, target="cuda")


@pytest.mark.parametrize("codes", ["f32", "i8"])
@pytest.mark.parametrize("per_channel", [True, False])
def test_static_mlp_matches_the_numpy_reference_bit_for_bit(per_channel, codes):
    model, fn = make_mlp()
    batches = [RNG.standard_normal((8, 12)).astype(np.float32) for _ in range(3)]
    conc = static_int8(fn, Config(per_channel=per_channel, quiet=True), [(b,) for b in batches], codes)
    x = RNG.standard_normal((10, 12)).astype(np.float32) * 1.5  # beyond the calibrated range too
    got = conc(x).numpy()
    assert np.array_equal(got, reference_static_mlp(model, batches, x, per_channel))
    ir = conc.ir("tensor")
    assert ir.count("tfc.quantized_matmul") == 2 and ir.count("tfc.quantize ") == 1
    assert "tfc.read_variable" not in ir and conc.variables == []
    assert "out_dtype = i8" in ir and "out_dtype = f32" in ir and "relu = true" in ir
    assert ir.count("codes = f32") == (3 if codes == "f32" else 0)
    assert f"-> tensor<?x16x{codes}>" in ir  # the hidden layer's codes
    assert conc.quantization.rewritten == {"quantized_matmul": 2} and conc.quantization.batches == 3
    # per-tensor weights store one multiplier per layer, not one per channel
    assert ir.count("tensor<1xf32>) ->") == (0 if per_channel else 2)
    assert weight_bytes(conc) == 12 * 16 + 16 * 5 + 4 * (16 + 5) + 4 * ((16 + 5) if per_channel else 2)
    inside = batches[0]  # within the calibrated range: close to the float model
    float_out = model(tfc.constant(inside)).numpy()
    assert np.abs(conc(inside).numpy() - float_out).max() < 0.05 * np.abs(float_out).max()
    for stage in ("fused", "loops", "numpy"):
        assert "quantized_matmul" in conc.ir(stage)


def test_codes_held_in_float32_flow_from_a_dense_into_a_conv_with_the_same_bits():
    # dense (its quantize holds the codes in float32) -> reshape -> conv (takes them as
    # they are) -> max pool -> reshape -> dense: the same result as int8 codes throughout
    dense = tfc.layers.Dense(2 * 5 * 5, activation="relu", kernel_initializer=tfc.layers.GlorotUniform(seed=1))
    conv = tfc.layers.Conv2D(3, 3, padding="same", activation="relu",
                             kernel_initializer=tfc.layers.GlorotUniform(seed=2))
    head = tfc.layers.Dense(4, kernel_initializer=tfc.layers.GlorotUniform(seed=3))

    def net(x):
        h = conv(tfc.reshape(dense(x), (-1, 5, 5, 2)))
        return head(tfc.reshape(tfc.nn.max_pool2d(h, 2, 2, "SAME"), (-1, 3 * 3 * 3)))

    net(tfc.zeros((1, 6)))
    fn = tfc.function(net, input_signature=[tfc.TensorSpec((None, 6))], autograph=False)
    cal = [(RNG.standard_normal((8, 6)).astype(np.float32),) for _ in range(2)]
    on_cpu, as_int8 = (static_int8(fn, Config(quiet=True), cal, codes) for codes in ("f32", "i8"))
    ir = on_cpu.ir("tensor")
    assert ir.count("tfc.quantize ") == 1 and ir.count("codes = f32") == 4  # quantize, 3 integer ops
    assert "-> tensor<?x3x3x3xf32>" in ir and "codes = f32" not in as_int8.ir("tensor")
    x = (RNG.standard_normal((7, 6)) * 2).astype(np.float32)
    got = on_cpu(x).numpy()
    assert np.array_equal(got, as_int8(x).numpy()) and len(np.unique(got)) > 7  # (not all clipped)


def test_a_nan_input_gives_code_0_with_codes_held_in_either_dtype():
    # (float32 codes kept the NaN: a whole row of NaN on the CPU, numbers on the GPU)
    model, fn = make_mlp()
    cal = [(RNG.standard_normal((8, 12)).astype(np.float32),)]
    on_cpu, as_int8 = (static_int8(fn, Config(quiet=True), cal, codes) for codes in ("f32", "i8"))
    x = RNG.standard_normal((3, 12)).astype(np.float32)
    x[0, 2] = np.nan
    with np.errstate(invalid="ignore"):
        got, want = on_cpu(x).numpy(), as_int8(x).numpy()
    assert not np.isnan(got).any() and np.array_equal(got, want)


def test_weight_only_mlp_matches_the_numpy_reference():
    model, fn = make_mlp((64, 64, 10))
    conc = tfc.compile(fn, quantize="int8-weights")
    x = RNG.standard_normal((10, 64)).astype(np.float32)
    q1, s1 = ref_weights(model.hidden.kernel.numpy())
    q2, s2 = ref_weights(model.out.kernel.numpy())
    h = np.maximum(x @ (q1.astype(np.float32) * s1.astype(np.float32)) + model.hidden.bias.numpy(), 0)
    want = h @ (q2.astype(np.float32) * s2.astype(np.float32)) + model.out.bias.numpy()
    assert np.array_equal(conc(x).numpy(), want)
    assert conc.ir("tensor").count("tfc.weight_quantized_matmul") == 2
    assert weight_bytes(conc) <= 0.3 * weight_bytes(tfc.compile(fn))  # int8 weights, float biases and scales


def test_exclude_by_kind_and_weight_name():
    model, fn = make_mlp()
    cal = [(RNG.standard_normal((4, 12)).astype(np.float32),)]
    names = [a for a in tfc.compile(fn).ir("tensor").split("(", 1)[1].split(")")[0].split(", ") if "kernel" in a]
    first, last = (n.split(":")[0].lstrip("%") for n in (names[0], names[-1]))
    assert (first, last) == ("dense_kernel", "dense_kernel_1")
    one = tfc.compile(fn, quantize=Config(mode="weights", exclude=last))
    assert one.ir("tensor").count("weight_quantized_matmul") == 1
    static = tfc.compile(fn, quantize=Config(exclude=(first,), quiet=True), calibration=cal)
    ir = static.ir("tensor")
    assert ir.count("tfc.quantized_matmul") == 1 and ir.count("tfc.matmul") == 1 and "out_dtype = f32" in ir


def test_cnn_static_and_weight_only():
    # seeded weights: the error bound below is a property of these weights, not of any draw
    conv = tfc.layers.Conv2D(6, 3, padding="same", activation="relu",
                             kernel_initializer=tfc.layers.GlorotUniform(seed=3))
    dense = tfc.layers.Dense(4, kernel_initializer=tfc.layers.GlorotUniform(seed=4))

    def net(x):
        h = tfc.nn.max_pool2d(conv(x), 2, 2, "VALID")
        return dense(tfc.reshape(h, (-1, 4 * 4 * 6)))

    net(tfc.zeros((1, 8, 8, 2)))
    fn = tfc.function(net, input_signature=[tfc.TensorSpec((None, 8, 8, 2))], autograph=False)
    cal = [(RNG.uniform(0, 1, (4, 8, 8, 2)).astype(np.float32),) for _ in range(2)]
    x = RNG.uniform(0, 1, (5, 8, 8, 2)).astype(np.float32)
    want = fn(x).numpy()
    static = tfc.compile(fn, quantize=Config(quiet=True), calibration=cal)
    ir = static.ir("tensor")
    assert "tfc.quantized_conv2d" in ir and "tfc.quantized_matmul" in ir
    weights = tfc.compile(fn, quantize="int8-weights")
    assert "tfc.weight_quantized_conv2d" in weights.ir("tensor")
    for conc in (static, weights):
        got = conc(x).numpy()
        assert np.abs(got - want).max() < 0.05 * np.abs(want).max() + 1e-3


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_max_pool_of_int8_codes(padding):
    # exact on codes; SAME pads with -128, which never beats a code (ties give -128 anyway)
    x = int8((3, 5, 7, 4))
    want = tfc.nn.max_pool2d(x.astype(np.float32), 2, 2, padding).numpy().astype(np.int8)
    eager = tfc.nn.max_pool2d(x, 2, 2, padding).numpy()
    fn = tfc.function(lambda v: tfc.nn.max_pool2d(v, 2, 2, padding), autograph=False)
    compiled = tfc.compile(fn, tfc.TensorSpec((None, 5, 7, 4), tfc.int8))(x).numpy()
    assert eager.dtype == compiled.dtype == np.int8
    assert np.array_equal(eager, want) and np.array_equal(compiled, want)
    with pytest.raises(TypeError, match="dtype int8"):
        tfc.nn.avg_pool2d(x, 2, 2)  # averaging codes is not exact: still refused


def test_static_cnn_pools_the_int8_codes_and_matches_the_numpy_reference():
    conv = tfc.layers.Conv2D(6, 3, padding="same", activation="relu",
                             kernel_initializer=tfc.layers.GlorotUniform(seed=5))
    dense = tfc.layers.Dense(4, kernel_initializer=tfc.layers.GlorotUniform(seed=6))

    def net(x):  # 7x7 -> SAME max pool 2/2 -> 4x4: one padded row and column
        return dense(tfc.reshape(tfc.nn.max_pool2d(conv(x), 2, 2, "SAME"), (-1, 4 * 4 * 6)))

    net(tfc.zeros((1, 7, 7, 2)))
    fn = tfc.function(net, input_signature=[tfc.TensorSpec((None, 7, 7, 2))], autograph=False)
    cal = [(RNG.uniform(-1, 1, (4, 7, 7, 2)).astype(np.float32),) for _ in range(2)]
    static = tfc.compile(fn, quantize=Config(quiet=True), calibration=cal)
    ir = static.ir("tensor")
    assert ir.count("tfc.quantize ") == 1 and "tfc.max_pool2d" in ir and "-> tensor<?x4x4x6xi8>" in ir
    assert "-> tensor<?x96xi8>" in ir  # the reshape of the codes
    assert "codes = f32" not in ir  # a conv's codes stay int8 on the CPU too (fewer bytes to gather and pool)
    # the integer pipeline in numpy, with the constants and attributes the pass chose
    ops = list(static.module.walk())
    qz, qc, qm = (next(op for op in ops if op.name == f"tfc.{n}")
                  for n in ("quantize", "quantized_conv2d", "quantized_matmul"))
    w1, b1, m1 = (v.owner.numpy() for v in qc.operands[1:])
    w2, b2, m2 = (v.owner.numpy() for v in qm.operands[1:])
    x = RNG.uniform(-1.5, 1.5, (5, 7, 7, 2)).astype(np.float32)
    xq = ref_quantize(x, qz.attr_values["scale"], qz.attr_values["zero_point"])
    xp = np.pad(xq, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=qc.attr_values["pad_value"])
    cols = np.stack([xp[:, i:i + 7, j:j + 7, :] for i in range(3) for j in range(3)], axis=3)
    h = ref_requant(ref_acc(cols.reshape(-1, 18), w1.reshape(18, 6), b1), m1, qc.attr_values["out_zero_point"],
                    True, False).reshape(5, 7, 7, 6)
    pooled = np.pad(h, ((0, 0), (0, 1), (0, 1), (0, 0)), constant_values=-128).reshape(5, 4, 2, 4, 2, 6).max((2, 4))
    want = ref_requant(ref_acc(pooled.reshape(5, 96), w2, b2), m2, 0, False, True)
    assert np.array_equal(static(x).numpy(), want)  # beyond the calibrated range too: clipped codes
    inside = cal[0][0]
    float_out = fn(inside).numpy()
    assert np.abs(static(inside).numpy() - float_out).max() < 0.05 * np.abs(float_out).max()


# -- calibration edge cases ------------------------------------------------------------------------


def test_constant_activations_and_zero_weights():
    model, fn = make_mlp()
    model.hidden.kernel.assign(np.zeros((12, 16), np.float32))  # every channel all zero
    k = model.out.kernel.numpy()
    k[:, 2] = 0  # one zero channel
    model.out.kernel.assign(k)
    const = np.full((4, 12), 0.75, np.float32)
    conc = tfc.compile(fn, quantize=Config(quiet=True), calibration=[(const,)])
    got = conc(const).numpy()
    assert np.all(np.isfinite(got))
    assert np.array_equal(got, reference_static_mlp(model, [const], const))
    zeros = np.zeros((2, 12), np.float32)
    conc0 = tfc.compile(fn, quantize=Config(quiet=True), calibration=[(zeros,)])  # a range of only 0
    assert np.all(np.isfinite(conc0(zeros).numpy()))
    assert np.array_equal(conc0(zeros).numpy(), reference_static_mlp(model, [zeros], zeros))


def test_single_batch_and_percentile():
    model, fn = make_mlp()
    batch = RNG.standard_normal((64, 12)).astype(np.float32)
    batch[0, 0] = 50.0  # an outlier: percentile clips it, minmax keeps it
    mm = tfc.compile(fn, quantize=Config(quiet=True), calibration=[(batch,)])
    pc = tfc.compile(fn, quantize=Config(method="percentile", percentile=99.0, quiet=True), calibration=[(batch,)])
    scale = [float(s.split("scale = ")[1].split(" ")[0]) for s in (mm.ir("tensor"), pc.ir("tensor"))]
    assert scale[1] < scale[0] / 5
    assert conc_ok(mm, batch) and conc_ok(pc, batch)


def conc_ok(conc, x) -> bool:
    return bool(np.all(np.isfinite(conc(x).numpy())))


@pytest.mark.parametrize("bad,match", [
    (lambda b: b.__setitem__((1, 3), np.nan), r"calibration batch 1: argument 0 \(x\) contains NaN or Inf"),
    (lambda b: b.__setitem__((1, 0), np.inf), r"calibration batch 1: argument 0 \(x\) contains NaN or Inf"),
])
def test_nan_or_inf_in_calibration_data(bad, match):
    _, fn = make_mlp()
    batches = [RNG.standard_normal((4, 12)).astype(np.float32) for _ in range(2)]
    bad(batches[1])
    with pytest.raises(ValueError, match=match):
        tfc.compile(fn, quantize=Config(quiet=True), calibration=[(b,) for b in batches])


def test_calibration_data_not_matching_the_signature():
    _, fn = make_mlp()
    with pytest.raises(ValueError, match=r"calibration batch 0: argument 0 \(x\) has shape \(4, 11\), "
                                         r"the signature says float32\[\?, 12\]"):
        tfc.compile(fn, quantize="int8", calibration=[(np.zeros((4, 11), np.float32),)])
    with pytest.raises(ValueError, match="calibration batch 0: 2 arguments, the function takes 1"):
        tfc.compile(fn, quantize="int8", calibration=[(np.zeros((4, 12)), np.zeros(3))])
    with pytest.raises(ValueError, match="calibration data is empty"):
        tfc.compile(fn, quantize="int8", calibration=[])
    with pytest.raises(ValueError, match="needs calibration data"):
        tfc.compile(fn, quantize="int8")
    with pytest.raises(ValueError, match="takes no calibration data"):
        tfc.compile(fn, quantize="int8-weights", calibration=[(np.zeros((4, 12)),)])
    with pytest.raises(ValueError, match="unknown quantize mode 'int4'"):
        tfc.compile(fn, quantize="int4")
    with pytest.raises(ValueError, match="method must be one of"):
        Config(method="entropy")


def test_a_function_that_assigns_variables_is_refused():
    v = tfc.Variable(np.ones((3, 2), np.float32))

    def step(x):
        v.assign(v * 2)
        return tfc.matmul(x, v)

    fn = tfc.function(step, input_signature=[tfc.TensorSpec((1, 3))], autograph=False)
    with pytest.raises(NotImplementedError, match="assigns a variable"):
        tfc.compile(fn, quantize="int8-weights")


# -- export and the command line -------------------------------------------------------------------


def test_save_and_load_a_quantized_function(tmp_path):
    model, fn = make_mlp((64, 64, 10))
    cal = [(RNG.standard_normal((16, 64)).astype(np.float32),)]
    x = RNG.standard_normal((7, 64)).astype(np.float32)
    for mode, kw in (("int8", {"calibration": cal}), ("int8-weights", {})):
        conc = tfc.compile(fn, quantize=mode, **kw)
        path = str(tmp_path / mode)
        tfc.save(conc, path)
        loaded = tfc.load(path)
        assert np.array_equal(loaded(x).numpy(), conc(x).numpy())
        with np.load(os.path.join(path, "weights.npz")) as z:
            stored = {k: z[k] for k in z.files}
        assert sorted(a.dtype.name for a in stored.values() if a.size >= 256) == ["int8", "int8"]
    tfc.save(tfc.compile(fn), str(tmp_path / "float"), root=model)
    size = {m: os.path.getsize(tmp_path / m / "weights.npz") for m in ("float", "int8", "int8-weights")}
    assert size["int8"] < 0.4 * size["float"] and size["int8-weights"] < 0.4 * size["float"]


MODEL_FILE = """
import numpy as np
import tfc

dense = tfc.layers.Dense(3, activation="relu")
dense(tfc.zeros((1, 4)))

@tfc.function(input_signature=[tfc.TensorSpec((None, 4))])
def predict(x):
    return dense(x)

CALIBRATION = [(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4),)]
"""


def test_command_line(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(MODEL_FILE))
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(tfc.__file__)))}

    def run(*args):
        return subprocess.run([sys.executable, "-m", "tfc.cli", "compile", str(path), *args],
                              capture_output=True, text=True, env=env)

    r = run("--quantize", "int8", "--emit", "tensor")
    assert r.returncode == 0, r.stderr
    assert "tfc.quantized_matmul" in r.stdout and "relu = true" in r.stdout
    r = run("--quantize", "int8-weights", "--emit", "tensor")
    assert r.returncode == 0 and "tfc.weight_quantized_matmul" in r.stdout
    r = run("--quantize", "int4")
    assert r.returncode == 2 and "unknown quantize mode 'int4'" in r.stderr


def test_a_fresh_process_loads_and_runs_a_saved_quantized_function(tmp_path):
    model, fn = make_mlp((64, 64, 10))
    conc = tfc.compile(fn, quantize="int8", calibration=[(RNG.standard_normal((16, 64)).astype(np.float32),)])
    x = RNG.standard_normal((5, 64)).astype(np.float32)
    tfc.save(conc, str(tmp_path / "q"))
    np.save(tmp_path / "x.npy", x)
    code = ("import sys, numpy as np, tfc; f = tfc.load(sys.argv[1]); "
            "np.save(sys.argv[2], f(np.load(sys.argv[3])).numpy())")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "q"), str(tmp_path / "y.npy"),
                        str(tmp_path / "x.npy")], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(tfc.__file__)))})
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.load(tmp_path / "y.npy"), conc(x).numpy())


def test_the_example_quantizes_both_models():
    pytest.importorskip("sklearn")
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "quantize_digits.py")
    spec = importlib.util.spec_from_file_location("example_quantize_digits", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for kind in ("mlp", "cnn"):
        rows = module.compare(kind, epochs=1, verbose=False)
        (_, acc, nbytes, _), *quantized = rows
        assert [r[0] for r in quantized] == ["int8 static", "int8 weight-only"]
        for _, q_acc, q_bytes, _ in quantized:
            assert abs(q_acc - acc) <= 0.03 and q_bytes < 0.3 * nbytes


def test_nothing_to_quantize_is_an_error():
    model, fn = make_mlp()
    cal = [(RNG.standard_normal((4, 12)).astype(np.float32),)]
    with pytest.raises(ValueError, match=r"no matmul or conv2d with constant weights to quantize \(exclude="):
        tfc.compile(fn, quantize=Config(exclude=("matmul",), quiet=True), calibration=cal)
    with pytest.raises(ValueError, match="no matmul or conv2d"):
        tfc.compile(tfc.function(lambda x: x * 2.0, input_signature=[tfc.TensorSpec((3,))], autograph=False),
                    quantize="int8-weights")
    w = tfc.Variable(RNG.standard_normal((12, 4)))  # float64
    fn64 = tfc.function(lambda x: tfc.matmul(x, w), input_signature=[tfc.TensorSpec((None, 12), tfc.float64)],
                        autograph=False)
    with pytest.raises(NotImplementedError, match="its input is float64"):
        tfc.compile(fn64, quantize=Config(quiet=True), calibration=[(RNG.standard_normal((2, 12)),)])
    weights = tfc.compile(fn64, quantize="int8-weights")  # weight-only takes float64
    x = RNG.standard_normal((3, 12))
    assert "weight_quantized_matmul" in weights.ir("tensor")
    assert np.abs(weights(x).numpy() - fn64(x).numpy()).max() < 0.05
