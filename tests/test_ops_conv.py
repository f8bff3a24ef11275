"""conv2d, pooling and dropout against naive float64 loop references and finite differences."""

import numpy as np
import pytest

import tfc
from helpers import check_grad, check_second_grad
from tfc.ops.conv import (
    avg_pool2d, avg_pool2d_grad, conv2d, conv2d_backprop_filter, conv2d_backprop_input, dropout,
    max_pool2d, max_pool2d_grad, max_pool2d_grad_grad,
)

# -- independent references: direct loops, implicit zero padding -----------------------------


def ref_window(n, k, s, d, padding):
    """(output size, pad before) written out from TensorFlow's documentation."""
    span = (k - 1) * d + 1
    if padding == "VALID":
        return (n - span) // s + 1, 0
    out = (n + s - 1) // s
    return out, max((out - 1) * s + span - n, 0) // 2


def ref_conv2d(x, w, strides, padding, dilations):
    N, H, W, C = x.shape
    KH, KW, _, O = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    Ho, top = ref_window(H, KH, sh, dh, padding)
    Wo, left = ref_window(W, KW, sw, dw, padding)
    out = np.zeros((N, Ho, Wo, O))
    for n in range(N):
        for i in range(Ho):
            for j in range(Wo):
                for a in range(KH):
                    for b in range(KW):
                        r, c = i * sh + a * dh - top, j * sw + b * dw - left
                        if 0 <= r < H and 0 <= c < W:
                            out[n, i, j] += x[n, r, c] @ w[a, b]
    return out


def ref_pool(x, ksize, strides, padding, reduce):
    N, H, W, C = x.shape
    Ho, top = ref_window(H, ksize[0], strides[0], 1, padding)
    Wo, left = ref_window(W, ksize[1], strides[1], 1, padding)
    out = np.zeros((N, Ho, Wo, C))
    for n in range(N):
        for i in range(Ho):
            for j in range(Wo):
                vals = [x[n, r, c] for r in range(i * strides[0] - top, i * strides[0] - top + ksize[0])
                        for c in range(j * strides[1] - left, j * strides[1] - left + ksize[1])
                        if 0 <= r < H and 0 <= c < W]
                out[n, i, j] = reduce(np.array(vals), axis=0)
    return out


def rand(rng, *shape):
    return rng.standard_normal(shape)


# -- conv2d forward -------------------------------------------------------------------------

CONV_CASES = [
    # (H, W), (KH, KW), strides, dilations
    ((7, 7), (3, 3), (1, 1), (1, 1)),
    ((6, 8), (3, 3), (2, 2), (1, 1)),
    ((7, 6), (2, 3), (2, 1), (1, 1)),
    ((8, 7), (3, 2), (1, 1), (2, 2)),
    ((9, 8), (3, 3), (2, 2), (2, 1)),
    ((5, 5), (1, 1), (2, 2), (1, 1)),
    ((4, 6), (4, 4), (3, 2), (1, 1)),  # window as large as the input
]


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("hw,khw,strides,dilations", CONV_CASES)
def test_conv2d_matches_reference(rng, padding, hw, khw, strides, dilations):
    x = rand(rng, 2, *hw, 3)
    w = rand(rng, *khw, 3, 4)
    got = conv2d(x, w, strides, padding, dilations)
    want = ref_conv2d(x, w, strides, padding, dilations)
    assert got.dtype == tfc.float64
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_conv2d_tf_same_padding_is_asymmetric():
    # tf.nn.conv2d(arange(16) as 1x4x4x1, ones 3x3x1x1, strides 2, "SAME"): the single
    # padding row/column goes after (bottom/right), as in TensorFlow.
    x = np.arange(16.0).reshape(1, 4, 4, 1)
    w = np.ones((3, 3, 1, 1))
    got = conv2d(x, w, 2, "SAME").numpy()[0, :, :, 0]
    np.testing.assert_array_equal(got, [[45.0, 39.0], [66.0, 50.0]])


def test_conv2d_stride_forms_and_float32(rng):
    x = rand(rng, 1, 6, 6, 2).astype(np.float32)
    w = rand(rng, 3, 3, 2, 2).astype(np.float32)
    a = conv2d(x, w, strides=2, padding="SAME", dilations=1)
    b = conv2d(x, w, strides=(2, 2), padding="same", dilations=[1, 1])
    c = conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME", dilations=[1, 1, 1, 1])
    assert a.dtype == tfc.float32
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    want = ref_conv2d(x.astype(np.float64), w.astype(np.float64), (2, 2), "SAME", (1, 1))
    np.testing.assert_allclose(a.numpy(), want, rtol=1e-5, atol=1e-5)


# -- conv2d gradients -------------------------------------------------------------------------

GRAD_CASES = [
    ((5, 4), (3, 2), (1, 1), (1, 1), "VALID"),
    ((5, 4), (3, 2), (1, 1), (1, 1), "SAME"),
    ((6, 5), (3, 3), (2, 2), (1, 1), "SAME"),
    ((5, 6), (2, 2), (2, 1), (1, 1), "VALID"),
    ((6, 6), (2, 2), (1, 2), (2, 2), "SAME"),
    ((7, 5), (2, 2), (2, 1), (2, 1), "VALID"),
]


@pytest.mark.parametrize("hw,khw,strides,dilations,padding", GRAD_CASES)
def test_conv2d_grad(rng, hw, khw, strides, dilations, padding):
    x, w = rand(rng, 2, *hw, 2), rand(rng, *khw, 2, 3)
    check_grad(lambda x, w: conv2d(x, w, strides, padding, dilations), x, w)


@pytest.mark.parametrize("hw,khw,strides,dilations,padding", GRAD_CASES)
def test_conv2d_backprop_ops_grad(rng, hw, khw, strides, dilations, padding):
    # The backward ops are primitives with their own rules: check those too.
    x, w = rand(rng, 2, *hw, 2), rand(rng, *khw, 2, 3)
    g = rand(rng, *conv2d(x, w, strides, padding, dilations).shape)
    check_grad(lambda w, g: conv2d_backprop_input(hw, w, g, strides, padding, dilations), w, g)
    check_grad(lambda x, g: conv2d_backprop_filter(x, khw, g, strides, padding, dilations), x, g)


@pytest.mark.parametrize("args", [
    ((2, 1), "SAME", (1, 2)),
    ((1, 1), "SAME", (1, 1)),  # stride 1: the input gradient is a conv2d of g (one GEMM)
    ((1, 1), "VALID", (1, 1)),
    ((1, 1), "SAME", (2, 1)),
    ((1, 1), "VALID", (1, 2)),
])
def test_conv2d_backprop_values_match_reference_gradient(rng, args):
    # d sum(conv2d(x, w) * g) / dx and / dw, from the loop reference by linearity.
    x, w = rand(rng, 2, 6, 5, 2), rand(rng, 3, 2, 2, 3)
    g = rand(rng, *conv2d(x, w, *args).shape)
    gx = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = 1
        gx[idx] = np.sum(ref_conv2d(e, w, *args) * g)
    gw = np.zeros_like(w)
    for idx in np.ndindex(*w.shape):
        e = np.zeros_like(w)
        e[idx] = 1
        gw[idx] = np.sum(ref_conv2d(x, e, *args) * g)
    np.testing.assert_allclose(conv2d_backprop_input((6, 5), w, g, *args).numpy(), gx, atol=1e-12)
    np.testing.assert_allclose(conv2d_backprop_input([2, 6, 5, 2], w, g, *args).numpy(), gx, atol=1e-12)
    np.testing.assert_allclose(conv2d_backprop_filter(x, (3, 2), g, *args).numpy(), gw, atol=1e-12)


def test_conv2d_second_derivatives(rng):
    x, w = rand(rng, 1, 5, 5, 2), rand(rng, 3, 3, 2, 2)
    tw, tx = tfc.constant(w), tfc.constant(x)
    check_second_grad(lambda x: tfc.tanh(conv2d(x, tw, 2, "SAME")), x)
    check_second_grad(lambda w: tfc.tanh(conv2d(tx, w, 1, "VALID", 2)), w)


def test_conv2d_mixed_second_derivative(rng):
    # d/dw of sum(d/dx sum(conv2d(x, w)^2)) against finite differences in w.
    x, w = rand(rng, 1, 4, 4, 1), rand(rng, 2, 2, 1, 2)

    def dx_sum(w_arr):
        tx, tw = tfc.constant(x), tfc.constant(w_arr)
        with tfc.GradientTape() as t:
            t.watch(tx)
            y = tfc.square(conv2d(tx, tw, 1, "SAME"))
        return np.sum(t.gradient(y, tx).numpy())

    tx, tw = tfc.constant(x), tfc.constant(w)
    with tfc.GradientTape() as outer:
        outer.watch(tw)
        with tfc.GradientTape() as inner:
            inner.watch(tx)
            y = tfc.square(conv2d(tx, tw, 1, "SAME"))
        gx = inner.gradient(y, tx)
    got = outer.gradient(gx, tw).numpy()
    eps, want = 1e-6, np.zeros_like(w)
    for idx in np.ndindex(*w.shape):
        hi, lo = w.copy(), w.copy()
        hi[idx] += eps
        lo[idx] -= eps
        want[idx] = (dx_sum(hi) - dx_sum(lo)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- pooling ------------------------------------------------------------------------------------

POOL_CASES = [
    ((6, 6), (2, 2), (2, 2)),
    ((7, 5), (3, 3), (2, 2)),
    ((5, 8), (3, 2), (1, 2)),
    ((7, 7), (2, 3), (3, 1)),
    ((4, 4), (5, 5), (1, 1)),  # SAME only: window larger than the input
]


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("hw,ksize,strides", POOL_CASES)
def test_pools_match_reference(rng, padding, hw, ksize, strides):
    if padding == "VALID" and ksize[0] > hw[0]:
        pytest.skip("window does not fit")
    x = rand(rng, 2, *hw, 3)
    np.testing.assert_allclose(max_pool2d(x, ksize, strides, padding).numpy(),
                               ref_pool(x, ksize, strides, padding, np.max), rtol=1e-12)
    np.testing.assert_allclose(avg_pool2d(x, ksize, strides, padding).numpy(),
                               ref_pool(x, ksize, strides, padding, np.mean), rtol=1e-12, atol=1e-14)


def test_pool_same_padding_never_counted():
    x = -np.ones((1, 3, 3, 1))  # all negative: zero padding must not win a max
    np.testing.assert_array_equal(max_pool2d(x, 2, 2, "SAME").numpy(), -np.ones((1, 2, 2, 1)))
    np.testing.assert_array_equal(avg_pool2d(x, 2, 2, "SAME").numpy(), -np.ones((1, 2, 2, 1)))


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("hw,ksize,strides", POOL_CASES[:4])
def test_pool_grads(rng, padding, hw, ksize, strides):
    x = rand(rng, 2, *hw, 2)
    check_grad(lambda x: max_pool2d(x, ksize, strides, padding), x)
    check_grad(lambda x: avg_pool2d(x, ksize, strides, padding), x)
    g = rand(rng, *max_pool2d(x, ksize, strides, padding).shape)
    tx = tfc.constant(x)
    check_grad(lambda g: max_pool2d_grad(tx, g, ksize, strides, padding), g)
    check_grad(lambda gg: max_pool2d_grad_grad(tx, gg, ksize, strides, padding), rand(rng, *x.shape))
    check_grad(lambda g: avg_pool2d_grad(hw, g, ksize, strides, padding), g)


def test_pool_second_derivatives(rng):
    x = rand(rng, 1, 5, 5, 2)
    check_second_grad(lambda x: tfc.square(max_pool2d(x, 3, 2, "SAME")), x)
    check_second_grad(lambda x: tfc.square(avg_pool2d(x, 2, 1, "VALID")), x)


def test_max_pool_grad_ties_go_to_first_maximum():
    x = np.zeros((1, 4, 4, 1))
    x[0, 2:, 2:, 0] = 5.0  # a whole window tied
    x[0, 0, 1, 0] = x[0, 1, 0, 0] = 3.0  # two maxima in the first window
    tx = tfc.constant(x)
    with tfc.GradientTape() as tape:
        tape.watch(tx)
        y = max_pool2d(tx, 2, 2, "VALID")
    g = tape.gradient(y, tx).numpy()[0, :, :, 0]
    want = np.zeros((4, 4))
    want[0, 1] = want[0, 2] = want[2, 0] = want[2, 2] = 1.0  # row-major first in each window
    np.testing.assert_array_equal(g, want)


def test_max_pool_overlapping_windows_accumulate():
    x = np.array([1.0, 9.0, 2.0, 3.0, 0.0]).reshape(1, 1, 5, 1)
    tx = tfc.constant(x)
    with tfc.GradientTape() as tape:
        tape.watch(tx)
        y = max_pool2d(tx, (1, 3), 1, "VALID")
    np.testing.assert_array_equal(tape.gradient(y, tx).numpy().ravel(), [0, 2, 0, 1, 0])


def ref_first_max_pool(x, g, ksize):
    """Tiling windows (stride = window): the pool and its gradient by the strict
    rule written out: the first tap, replaced only by a strictly greater later
    one (so a NaN in the first tap stays and a later NaN never wins); each
    window's g to that tap, added to +0."""
    N, H, W, C = x.shape
    kh, kw = ksize
    out, dx = np.zeros((N, H // kh, W // kw, C), x.dtype), np.zeros_like(x)
    for n, i, j, c in np.ndindex(*out.shape):
        taps = [(i * kh + a, j * kw + b) for a in range(kh) for b in range(kw)]
        win = taps[0]
        for t in taps[1:]:
            if x[n, t[0], t[1], c] > x[n, win[0], win[1], c]:
                win = t
        out[n, i, j, c] = x[n, win[0], win[1], c]
        dx[n, win[0], win[1], c] += g[n, i, j, c]
    return out, dx


@pytest.mark.parametrize("data", ["normal", "relu", "rounded", "nan", "signed_zeros"])
@pytest.mark.parametrize("ksize", [(2, 2), (1, 3), (3, 2)])
def test_max_pool_tiling_windows_bit_for_bit(rng, data, ksize):
    # Tiling windows take a faster path (np.maximum along rows then down; ties,
    # NaN and signed zeros settled as the strict rule): its bits are the rule's.
    x = rng.standard_normal((2, 2 * ksize[0], 3 * ksize[1], 3)).astype(np.float32)
    if data == "relu":
        x = np.maximum(x, 0)
    elif data == "rounded":
        x = np.round(x)
    elif data == "nan":
        x[rng.random(x.shape) < 0.2] = np.nan
    elif data == "signed_zeros":
        x = np.where(rng.random(x.shape) < 0.5, np.float32(-0.0), np.float32(0.0))
    g = rng.standard_normal((2, 2, 3, 3)).astype(np.float32)
    g[0, 0] = -0.0
    want, want_dx = ref_first_max_pool(x, g, ksize)
    for padding in ("VALID", "SAME"):
        got = max_pool2d(x, ksize, ksize, padding).numpy()
        got_dx = max_pool2d_grad(x, g, ksize, ksize, padding).numpy()
        assert got.tobytes() == want.tobytes()
        assert got_dx.tobytes() == want_dx.tobytes()
        fn = tfc.function(lambda x, g: (max_pool2d(x, ksize, ksize, padding),
                                        max_pool2d_grad(x, g, ksize, ksize, padding)))
        c_out, c_dx = fn(tfc.constant(x), tfc.constant(g))
        assert c_out.numpy().tobytes() == want.tobytes()
        assert c_dx.numpy().tobytes() == want_dx.tobytes()


# -- dropout ------------------------------------------------------------------------------------


def test_dropout_scales_kept_and_is_seeded(rng):
    x = rng.uniform(1, 2, size=(200, 50)).astype(np.float32)
    y = dropout(x, 0.3, seed=7).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], x[kept] / np.float32(0.7), rtol=1e-6)
    assert abs(kept.mean() - 0.7) < 0.02
    assert y.dtype == np.float32
    np.testing.assert_array_equal(dropout(x, 0.3, seed=7).numpy(), y)  # same seed, same mask
    assert not np.array_equal(dropout(x, 0.3, seed=8).numpy(), y)


def test_dropout_unseeded_draws_differ():
    x = np.ones((100, 100))
    assert not np.array_equal(dropout(x, 0.5).numpy(), dropout(x, 0.5).numpy())


def test_dropout_rate_zero_returns_x():
    x = tfc.constant([[1.0, 2.0]])
    assert dropout(x, 0.0) is x
    assert dropout(x, 0) is x


@pytest.mark.parametrize("rate", [1.0, -0.1, 1.5])
def test_dropout_bad_rate(rate):
    with pytest.raises(ValueError, match=r"dropout: rate must be in \[0, 1\)"):
        dropout(np.ones(3), rate)


def test_dropout_noise_shape_shares_draws():
    x = np.ones((4, 30, 3))
    y = dropout(x, 0.5, noise_shape=(4, 1, 3), seed=1).numpy()
    assert (y == y[:, :1, :]).all()
    y2 = dropout(x, 0.5, noise_shape=[None, 1, 3], seed=1).numpy()
    np.testing.assert_array_equal(y, y2)
    with pytest.raises(ValueError, match="noise_shape"):
        dropout(x, 0.5, noise_shape=(4, 2, 3))
    with pytest.raises(ValueError, match="noise_shape"):
        dropout(x, 0.5, noise_shape=(4, 3))


def test_dropout_gradient_is_the_mask():
    x = tfc.constant(np.linspace(1, 2, 60).reshape(6, 10))
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = dropout(x, 0.25, seed=3)
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(g, (y.numpy() != 0) / 0.75)


def test_dropout_int_dtype():
    with pytest.raises(TypeError, match="dropout: x has dtype int32"):
        dropout(tfc.constant([1, 2]), 0.5)


# -- errors -------------------------------------------------------------------------------------


def test_conv2d_errors():
    x, w = np.ones((1, 5, 5, 3)), np.ones((3, 3, 3, 4))
    with pytest.raises(ValueError, match=r"conv2d: input must have rank 4 \(NHWC\), got shape \(5, 5, 3\)"):
        conv2d(np.ones((5, 5, 3)), w)
    with pytest.raises(ValueError, match=r"conv2d: filters must have rank 4.*\(3, 3, 3\)"):
        conv2d(x, np.ones((3, 3, 3)))
    with pytest.raises(ValueError, match=r"conv2d: input has 3 channels but filters expect 2.*"
                                         r"input \(1, 5, 5, 3\), filters \(3, 3, 2, 4\)"):
        conv2d(x, np.ones((3, 3, 2, 4)))
    with pytest.raises(ValueError, match="conv2d: padding must be 'SAME' or 'VALID', got 'FULL'"):
        conv2d(x, w, padding="FULL")
    with pytest.raises(NotImplementedError, match="conv2d: .*explicit padding"):
        conv2d(x, w, padding=[[0, 0], [1, 1], [1, 1], [0, 0]])
    with pytest.raises(TypeError, match="conv2d: input has dtype int64; expected one of float16"):
        conv2d(np.ones((1, 5, 5, 3), dtype=np.int64), w)
    with pytest.raises(TypeError, match="conv2d: inputs have different dtypes float32, float64"):
        conv2d(x.astype(np.float32), w)
    with pytest.raises(ValueError, match=r"conv2d: with VALID padding the window .*input \(1, 5, 5, 3\)"):
        conv2d(x, np.ones((3, 3, 3, 4)), dilations=3)
    with pytest.raises(ValueError, match="conv2d: strides must be positive"):
        conv2d(x, w, strides=0)
    with pytest.raises(ValueError, match="conv2d: strides must have 1, 2 or 4 elements"):
        conv2d(x, w, strides=(1, 1, 1))
    with pytest.raises(ValueError, match="conv2d: dilations .* batch and channel"):
        conv2d(x, w, dilations=(2, 1, 1, 1))


def test_backprop_and_pool_errors():
    w = np.ones((3, 3, 3, 4))
    with pytest.raises(ValueError, match=r"conv2d_backprop_input: out_backprop spatial size \(4, 4\) "
                                         r"is not the conv2d output size \(3, 3\)"):
        conv2d_backprop_input((5, 5), w, np.ones((1, 4, 4, 4)))
    with pytest.raises(ValueError, match="conv2d_backprop_filter: batch sizes differ"):
        conv2d_backprop_filter(np.ones((2, 5, 5, 3)), (3, 3), np.ones((1, 3, 3, 4)))
    with pytest.raises(ValueError, match=r"max_pool2d: input must have rank 4 \(NHWC\), got shape \(4, 4\)"):
        max_pool2d(np.ones((4, 4)), 2, 2)
    with pytest.raises(TypeError, match="avg_pool2d: input has dtype int32"):
        avg_pool2d(tfc.constant(np.ones((1, 4, 4, 1), dtype=np.int32)), 2, 2)
    with pytest.raises(ValueError, match="max_pool2d: padding must be"):
        max_pool2d(np.ones((1, 4, 4, 1)), 2, 2, "valid ")
    with pytest.raises(ValueError, match="max_pool2d_grad: grad has shape"):
        max_pool2d_grad(np.ones((1, 4, 4, 1)), np.ones((1, 3, 3, 1)), 2, 2)


def test_registered_with_attrs():
    from tfc.core.registry import ATTR_KINDS, get_op

    for name in ["conv2d", "conv2d_backprop_input", "conv2d_backprop_filter", "max_pool2d",
                 "max_pool2d_grad", "max_pool2d_grad_grad", "avg_pool2d", "avg_pool2d_grad"]:
        op = get_op(name)
        assert op.differentiable and set(op.attrs.values()) <= ATTR_KINDS
    assert get_op("dropout_mask").stateful and not get_op("dropout_mask").differentiable


def test_conv2d_big_enough_to_need_blas():
    # Shape from the brief: runs through one GEMM (no timing assertion, just a result check).
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 28, 28, 32), dtype=np.float32)
    w = rng.standard_normal((3, 3, 32, 64), dtype=np.float32)
    y = conv2d(x, w, 1, "SAME").numpy()
    n, i, j = 5, 0, 13
    patch = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))[n, i:i + 3, j:j + 3, :].astype(np.float64)
    want = np.tensordot(patch, w.astype(np.float64), axes=3)
    np.testing.assert_allclose(y[n, i, j], want, rtol=1e-4, atol=1e-3)




def test_empty_batch(rng):
    x, w = np.zeros((0, 5, 5, 2)), rand(rng, 3, 3, 2, 4)
    assert conv2d(x, w, 1, "SAME").shape == (0, 5, 5, 4)
    dw = conv2d_backprop_filter(x, (3, 3), np.zeros((0, 3, 3, 4)))
    np.testing.assert_array_equal(dw.numpy(), np.zeros((3, 3, 2, 4)))
    assert max_pool2d(x, 2, 2).shape == (0, 2, 2, 2)


@pytest.mark.parametrize("seed", [True, -1, 1.5])
def test_dropout_seed_checked_by_the_op_too(seed):
    from tfc.ops.conv import dropout_mask

    for fn, name in ((dropout, "dropout"), (dropout_mask, "dropout_mask")):
        with pytest.raises(TypeError, match=f"{name}: seed must be a non-negative int"):
            fn(tfc.ones([3]), 0.5, seed=seed)
