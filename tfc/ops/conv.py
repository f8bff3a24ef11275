"""Convolution, pooling and dropout on NHWC images (TensorFlow's layouts).

Each backward pass is its own primitive op (conv2d_backprop_input, ...) with its
own gradient rule, so second derivatives are built from the same few kernels.
Conv kernels gather the windows (im2col: one copy from a strided view of all of
them) and do one GEMM; at stride 1 the input gradient is itself such a conv (of the
padded gradient with the flipped filters). Max pooling over windows that tile the
image (the CNN's 2x2, stride 2) reduces along each window row and then down the
rows with np.maximum, and its gradient routes g by the masks of those same passes;
other pooling does one elementwise update per window tap on a strided view. At
this size the step's cost is the number of numpy calls, so each path counts them.
"""
from __future__ import annotations

import numpy as np

from tfc.core.blas_threads import matmul as _gemm  # one OpenBLAS thread: see its docstring
from tfc.core.dtypes import FLOATS, int8
from tfc.core.registry import Spec, declare, every_row, user_errors
from tfc.core.shape import as_ints
from tfc.core.tensor import Tensor, convert_to_tensor
from tfc.ops import _infer as inf
from tfc.ops.random import _seed_value, draw, draw_into, dropout_spec

_PADDINGS = ("VALID", "SAME")

# -- attribute normalisation (in the public functions) ----------------------------------


def hw_pair(op_name, value, what):
    """An int, a pair, or TF's 4-element NHWC form (1, h, w, 1) → (h, w)."""
    if isinstance(value, Tensor):
        value = value.numpy().tolist()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value, value)
    try:
        vals = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise TypeError(f"{op_name}: {what} must be an int or a sequence of ints, got {value!r}") from None
    if len(vals) == 1:
        vals = vals * 2
    elif len(vals) == 4:
        if vals[0] != 1 or vals[3] != 1:
            raise ValueError(f"{op_name}: {what} {vals} must be 1 in the batch and channel positions (NHWC)")
        vals = vals[1:3]
    elif len(vals) != 2:
        raise ValueError(f"{op_name}: {what} must have 1, 2 or 4 elements, got {vals}")
    if any(v < 1 for v in vals):
        raise ValueError(f"{op_name}: {what} must be positive, got {vals}")
    return vals


def padding_mode(op_name, padding):
    if not isinstance(padding, str):
        raise NotImplementedError(
            f"{op_name}: padding {padding!r} is not supported; explicit padding lists are not "
            f"implemented, use 'SAME' or 'VALID'")
    p = padding.upper()
    if p not in _PADDINGS:
        raise ValueError(f"{op_name}: padding must be 'SAME' or 'VALID', got {padding!r}")
    return p


# -- geometry ---------------------------------------------------------------------------


def _out_dim(op, n, k, s, d, padding, ctx):
    """TensorFlow's window arithmetic: (output size, pad before, pad after)."""
    if n is None or k is None:
        return None, 0, 0
    k_eff = (k - 1) * d + 1
    if padding == "VALID":
        if n < k_eff:
            raise ValueError(f"{op.name}: with VALID padding the window (size {k_eff}, dilation {d}) "
                             f"does not fit in the input: {ctx}")
        return (n - k_eff) // s + 1, 0, 0
    if padding != "SAME":
        raise ValueError(f"{op.name}: padding must be 'SAME' or 'VALID', got {padding!r}")
    out = -(-n // s)
    total = max((out - 1) * s + k_eff - n, 0)
    return out, total // 2, total - total // 2


def _geometry(op, hw, khw, strides, dilations, padding, ctx):
    """((Ho, Wo), ((top, bottom), (left, right))) for an input of spatial size ``hw``."""
    (ho, t, b), (wo, l, r) = (
        _out_dim(op, hw[i], khw[i], strides[i], dilations[i], padding, ctx) for i in range(2))
    return (ho, wo), ((t, b), (l, r))


def _pad(x, pads, value=0):
    """``x`` with ``pads`` rows and columns of ``value`` around it (np.pad's own
    bookkeeping costs more than the copy at a small CNN's sizes)."""
    (t, b), (l, r) = pads
    if not (t or b or l or r):
        return x
    n, h, w, c = x.shape
    xp = np.empty((n, h + t + b, w + l + r, c), dtype=x.dtype)
    xp[:, :t] = value
    xp[:, t + h:] = value
    xp[:, t:t + h, :l] = value
    xp[:, t:t + h, l + w:] = value
    xp[:, t:t + h, l:l + w] = x
    return xp


def _crop(xp, pads, hw):
    (t, _), (l, _) = pads
    return xp[:, t:t + hw[0], l:l + hw[1], :]


def _taps(khw, out_hw, strides, dilations):
    """For each filter tap (i, j): the strided slices of the padded input it reads."""
    (kh, kw), (ho, wo), (sh, sw), (dh, dw) = khw, out_hw, strides, dilations
    for i in range(kh):
        for j in range(kw):
            yield i, j, (slice(None), slice(i * dh, i * dh + (ho - 1) * sh + 1, sh),
                         slice(j * dw, j * dw + (wo - 1) * sw + 1, sw), slice(None))


def _im2col(xp, khw, out_hw, strides, dilations):
    """The windows of the padded input as (N, Ho, Wo, KH, KW, C): each conv kernel is
    then one GEMM (a single BLAS call is also steadier than one per tap); its
    reshape to (N*Ho*Wo, KH*KW*C) is a view. One copy from a strided view of every
    window; for a single channel, where that copy would move one element at a
    time, a copy per tap into a tap-major array (the GEMM reads it transposed)."""
    (kh, kw), (ho, wo) = khw, out_hw
    n, _, _, c = xp.shape
    if c == 1:
        by_tap = np.empty((kh, kw, n, ho, wo, 1), dtype=xp.dtype)
        for i, j, sl in _taps(khw, out_hw, strides, dilations):
            by_tap[i, j] = xp[sl]
        return by_tap.transpose(2, 3, 4, 0, 1, 5)
    cols = np.empty((n, ho, wo, kh, kw, c), dtype=xp.dtype)
    np.copyto(cols, _windows(xp, cols.shape, strides, dilations))
    return cols


def _windows(xp, shape, strides, dilations):
    """The read-only view (N, Ho, Wo, KH, KW, C) of every window of ``xp``: built
    directly on a C-contiguous ``xp`` (as_strided's own bookkeeping costs 20x more)."""
    (sh, sw), (dh, dw) = strides, dilations
    s0, s1, s2, s3 = xp.strides
    view_strides = (s0, s1 * sh, s2 * sw, s1 * dh, s2 * dw, s3)
    if not xp.flags.c_contiguous:
        return np.lib.stride_tricks.as_strided(xp, shape, view_strides, writeable=False)
    view = np.ndarray(shape, xp.dtype, xp, 0, view_strides)
    view.flags.writeable = False
    return view


def _patches(x, khw, strides, padding, dilations, pad_value=0):
    """The windows of ``x`` padded for ``padding`` with ``pad_value``, as (N, Ho, Wo,
    KH, KW, C): what the conv2d family (the quantized one too) runs its GEMM on."""
    out_hw, pads = _geometry(None, x.shape[1:3], khw, strides, dilations, padding, "")
    return _im2col(_pad(x, pads, pad_value), khw, out_hw, strides, dilations)


def _check_image(op, spec, what="input", allowed=FLOATS):
    inf.check_dtype(op, spec, allowed, what)
    if spec.ndim != 4:
        raise ValueError(f"{op.name}: {what} must have rank 4 (NHWC), got shape {inf.fmt_shape(spec.shape)}")


def _check_filters(op, spec):
    inf.check_dtype(op, spec, FLOATS, "filters")
    if spec.ndim != 4:
        raise ValueError(f"{op.name}: filters must have rank 4 (height, width, in_channels, "
                         f"out_channels), got shape {inf.fmt_shape(spec.shape)}")


def _match(op, a, b, what):
    if a is not None and b is not None and a != b:
        raise ValueError(f"{op.name}: {what}")


def _conv_attrs(op_name, strides, padding, dilations):
    return {"strides": hw_pair(op_name, strides, "strides"), "padding": padding_mode(op_name, padding),
            "dilations": hw_pair(op_name, dilations, "dilations")}


_CONV_ATTRS = {"strides": "ints", "padding": "str", "dilations": "ints"}

# -- conv2d -----------------------------------------------------------------------------


def _conv2d_kernel(x, w, strides, padding, dilations):
    cols = _patches(x, w.shape[:2], strides, padding, dilations)
    out = _gemm(cols.reshape(-1, w.shape[0] * w.shape[1] * w.shape[2]), w.reshape(-1, w.shape[3]))
    return out.reshape(cols.shape[:3] + (w.shape[3],))


def _rows_of(out, n):
    """``out`` (C-contiguous) seen as (-1, n): a view, never a copy (numpy raises)."""
    v = out.view()
    v.shape = (-1, n)
    return v


def _conv2d_into(x, w, out, strides, padding, dilations):
    """conv2d written into ``out``: the GEMM writes it (eager's bits)."""
    cols = _patches(x, w.shape[:2], strides, padding, dilations)
    _gemm(cols.reshape(-1, w.shape[0] * w.shape[1] * w.shape[2]), w.reshape(-1, w.shape[3]),
          out=_rows_of(out, w.shape[3]))


def copy_into(kernel):
    """A ``kernel_into`` that copies ``kernel``'s result into ``out``: the result
    is a planned buffer; a backend running the kernel on chunks of rows
    (``rows``) writes each chunk there straight."""
    def into(*arrays, **attrs):
        *arrays, out = arrays
        np.copyto(out, kernel(*arrays, **attrs), casting="no")
    return into


def _conv2d_infer(op, x: Spec, w: Spec, strides, padding, dilations) -> Spec:
    _check_image(op, x)
    _check_filters(op, w)
    inf.check_same_dtype(op, x, w)
    return Spec(conv_out_shape(op, x, w, strides, padding, dilations), x.dtype)


def conv_out_shape(op, x: Spec, w: Spec, strides, padding, dilations) -> tuple:
    """The NHWC result shape of a conv2d of rank-4 ``x`` and HWIO ``w`` (the channels
    checked to match), for conv2d and its quantized forms."""
    shapes = f"input {inf.fmt_shape(x.shape)}, filters {inf.fmt_shape(w.shape)}"
    _match(op, x.shape[3], w.shape[2], f"input has {x.shape[3]} channels but filters expect "
                                       f"{w.shape[2]} (in_channels, axis 2): {shapes}")
    (ho, wo), _ = _geometry(op, x.shape[1:3], w.shape[:2], strides, dilations, padding, shapes)
    return (x.shape[0], ho, wo, w.shape[3])


def _backprop_input(e, x, w, g):
    """conv2d_backprop_input to ``x``'s height and width (those of ``x`` itself
    when they are known only at run time)."""
    a = e.attrs
    if None in tuple(x.shape[1:3]):
        return conv2d_backprop_input_like(x, w, g, a["strides"], a["padding"], a["dilations"])
    return conv2d_backprop_input(tuple(x.shape[1:3]), w, g, a["strides"], a["padding"], a["dilations"])


def _backprop_filter(e, x, w, g):
    """conv2d_backprop_filter to ``w``'s height and width (those of ``w`` itself
    when they are known only at run time)."""
    a = e.attrs
    if None in tuple(w.shape[:2]):
        return conv2d_backprop_filter_like(x, g, w, a["strides"], a["padding"], a["dilations"])
    return conv2d_backprop_filter(x, tuple(w.shape[:2]), g, a["strides"], a["padding"], a["dilations"])


def _conv2d_grad(e, g):
    x, w = e.inputs
    a = e.attrs
    gx = gw = None
    if e.needs_grad(0):
        gx = _backprop_input(e, x, w, g)
    if e.needs_grad(1):
        gw = _backprop_filter(e, x, w, g)
    return [gx, gw]


@declare(kernel=_conv2d_kernel, infer=_conv2d_infer, grad=_conv2d_grad, attrs=_CONV_ATTRS, kernel_into=_conv2d_into)
def conv2d(input, filters, strides=1, padding="VALID", dilations=1):  # noqa: A002
    """2-D convolution (cross-correlation, as TensorFlow) of an NHWC ``input`` with
    HWIO ``filters``; ``padding`` is 'VALID' or 'SAME' (TensorFlow's arithmetic)."""
    return (input, filters), _conv_attrs("conv2d", strides, padding, dilations)


# -- conv2d_backprop_input: the transpose of conv2d in its input -----------------------------


def _transposed_gemm(w, g, input_hw, padding, dilations):
    """For stride 1, conv2d_backprop_input is itself a conv2d: of ``g`` padded by
    (window - 1 - pad) on each side, with ``w`` flipped in space and its channel
    axes swapped. (im2col columns [N*H*W, KH*KW*O], weights [KH*KW*O, C]): one
    GEMM and one copy, instead of a scatter-add per tap. Only for finite ``w``:
    the padding's zeros times an infinite tap would put NaN where no output is."""
    (kh, kw), (dh, dw) = w.shape[:2], dilations
    _, ((t, b), (l, r)) = _geometry(None, input_hw, (kh, kw), _ONES, dilations, padding, "")
    kh_eff, kw_eff = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    gp = _pad(g, ((kh_eff - 1 - t, kh_eff - 1 - b), (kw_eff - 1 - l, kw_eff - 1 - r)))
    cols = _im2col(gp, (kh, kw), tuple(input_hw), _ONES, dilations)
    flipped = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2))
    return cols.reshape(-1, kh * kw * g.shape[3]), flipped.reshape(-1, w.shape[2])


def _as_conv(w, strides):
    """Whether conv2d_backprop_input runs as ``_transposed_gemm``."""
    return tuple(strides) == _ONES and bool(np.isfinite(w).all())


def _bp_input_kernel(w, g, input_hw, strides, padding, dilations):
    if _as_conv(w, strides):
        cols, flipped = _transposed_gemm(w, g, input_hw, padding, dilations)
        return _gemm(cols, flipped).reshape((g.shape[0],) + tuple(input_hw) + (w.shape[2],))
    out_hw, pads = _geometry(None, input_hw, w.shape[:2], strides, dilations, padding, "")
    (t, b), (l, r) = pads
    n = g.shape[0]
    dxp = np.zeros((n, input_hw[0] + t + b, input_hw[1] + l + r, w.shape[2]), dtype=np.result_type(w, g))
    # One GEMM for every tap's contribution, then one scatter-add per tap.
    dcols = _gemm(g.reshape(-1, g.shape[3]), w.reshape(-1, w.shape[3]).T).reshape(g.shape[:3] + w.shape[:3])
    for i, j, sl in _taps(w.shape[:2], out_hw, strides, dilations):
        dxp[sl] += dcols[:, :, :, i, j]
    return _crop(dxp, pads, input_hw)


def _bp_input_into(w, g, out, input_hw, strides, padding, dilations):
    """conv2d_backprop_input written into ``out``: for stride 1 by its GEMM; else
    without padding the taps are added into it in eager's order (from zeros);
    with padding, cropped into it."""
    if out.dtype == np.result_type(w, g) and _as_conv(w, strides):
        cols, flipped = _transposed_gemm(w, g, input_hw, padding, dilations)
        _gemm(cols, flipped, out=_rows_of(out, w.shape[2]))
        return
    out_hw, pads = _geometry(None, input_hw, w.shape[:2], strides, dilations, padding, "")
    if any(any(p) for p in pads) or out.dtype != np.result_type(w, g):
        np.copyto(out, _bp_input_kernel(w, g, input_hw, strides, padding, dilations), casting="no")
        return
    out.fill(0)
    dcols = _gemm(g.reshape(-1, g.shape[3]), w.reshape(-1, w.shape[3]).T).reshape(g.shape[:3] + w.shape[:3])
    for i, j, sl in _taps(w.shape[:2], out_hw, strides, dilations):
        out[sl] += dcols[:, :, :, i, j]


def _bp_input_infer(op, w: Spec, g: Spec, input_hw, strides, padding, dilations) -> Spec:
    _check_filters(op, w)
    _check_image(op, g, "out_backprop")
    inf.check_same_dtype(op, w, g)
    shapes = (f"input height/width {tuple(input_hw)}, filters {inf.fmt_shape(w.shape)}, "
              f"out_backprop {inf.fmt_shape(g.shape)}")
    if len(input_hw) != 2:
        raise ValueError(f"{op.name}: input_hw must have 2 elements, got {tuple(input_hw)}")
    out_hw, _ = _geometry(op, input_hw, w.shape[:2], strides, dilations, padding, shapes)
    _match(op, g.shape[3], w.shape[3], f"out_backprop has {g.shape[3]} channels but filters have "
                                       f"{w.shape[3]} out_channels: {shapes}")
    for k in range(2):
        _match(op, g.shape[1 + k], out_hw[k], f"out_backprop spatial size {tuple(g.shape[1:3])} is not "
                                              f"the conv2d output size {out_hw}: {shapes}")
    return Spec((g.shape[0],) + tuple(input_hw) + (w.shape[2],), w.dtype)


def _bp_input_grad(e, gg):
    # dx = A_w^T g is linear in w and in g: d/dg = A_w gg, d/dw = filter grad of (gg, g).
    k = len(e.inputs) - 2  # conv2d_backprop_input_like's first input only gives a shape
    w, g = e.inputs[k:]
    a = e.attrs
    gw = gg_ = None
    if e.needs_grad(k):
        gw = _backprop_filter(e, gg, w, g)
    if e.needs_grad(k + 1):
        gg_ = conv2d(gg, w, a["strides"], a["padding"], a["dilations"])
    return [None] * k + [gw, gg_]


@declare(kernel=_bp_input_kernel, infer=_bp_input_infer, grad=_bp_input_grad, kernel_into=_bp_input_into,
         attrs={"input_hw": "ints", **_CONV_ATTRS})
def conv2d_backprop_input(input_hw, filters, out_backprop, strides=1, padding="VALID", dilations=1):
    """Gradient of conv2d w.r.t. its input, for an input of spatial size ``input_hw``
    (height, width; TF's 4-element input_sizes is accepted too)."""
    hw = tuple(int(v) for v in (input_hw.numpy().tolist() if isinstance(input_hw, Tensor) else input_hw))
    if len(hw) == 4:
        hw = hw[1:3]
    return (filters, out_backprop), {"input_hw": hw, **_conv_attrs("conv2d_backprop_input", strides, padding,
                                                                     dilations)}


@declare(kernel=lambda like, w, g, **a: _bp_input_kernel(w, g, like.shape[1:3], **a),
         kernel_into=lambda like, w, g, out, **a: _bp_input_into(w, g, out, like.shape[1:3], **a),
         infer=lambda op, like, w, g, **a: _bp_input_infer(op, w, g, tuple(like.shape[1:3]), **a),
         grad=_bp_input_grad, attrs=_CONV_ATTRS)
def conv2d_backprop_input_like(like, filters, out_backprop, strides=1, padding="VALID", dilations=1):
    """conv2d_backprop_input for an input of ``like``'s height and width (known
    only at run time)."""
    return (like, filters, out_backprop), _conv_attrs("conv2d_backprop_input_like", strides, padding, dilations)


# -- conv2d_backprop_filter ----------------------------------------------------------------


def _bp_filter_kernel(x, g, filter_hw, strides, padding, dilations):
    cols = _patches(x, filter_hw, strides, padding, dilations)
    dw = _gemm(cols.reshape(-1, filter_hw[0] * filter_hw[1] * x.shape[3]).T, g.reshape(-1, g.shape[3]))
    return dw.reshape(tuple(filter_hw) + (x.shape[3], g.shape[3]))


def _bp_filter_into(x, g, out, filter_hw, strides, padding, dilations):
    """conv2d_backprop_filter written into ``out`` by its GEMM (eager's bits)."""
    cols = _patches(x, filter_hw, strides, padding, dilations)
    _gemm(cols.reshape(-1, filter_hw[0] * filter_hw[1] * x.shape[3]).T, g.reshape(-1, g.shape[3]),
          out=_rows_of(out, g.shape[3]))


def _bp_filter_infer(op, x: Spec, g: Spec, filter_hw, strides, padding, dilations) -> Spec:
    _check_image(op, x)
    _check_image(op, g, "out_backprop")
    inf.check_same_dtype(op, x, g)
    shapes = (f"input {inf.fmt_shape(x.shape)}, filter height/width {tuple(filter_hw)}, "
              f"out_backprop {inf.fmt_shape(g.shape)}")
    if len(filter_hw) != 2:
        raise ValueError(f"{op.name}: filter_hw must have 2 elements, got {tuple(filter_hw)}")
    out_hw, _ = _geometry(op, x.shape[1:3], filter_hw, strides, dilations, padding, shapes)
    _match(op, x.shape[0], g.shape[0], f"batch sizes differ: {shapes}")
    for k in range(2):
        _match(op, g.shape[1 + k], out_hw[k], f"out_backprop spatial size {tuple(g.shape[1:3])} is not "
                                              f"the conv2d output size {out_hw}: {shapes}")
    return Spec(tuple(filter_hw) + (x.shape[3], g.shape[3]), x.dtype)


def _bp_filter_grad(e, gw):
    # dw = B(x, g) is bilinear, <gw, B(x, g)> = <conv2d(x, gw), g>.
    x, g = e.inputs[:2]  # (conv2d_backprop_filter_like's last input only gives a shape)
    a = e.attrs
    gx = gg = None
    if e.needs_grad(0):
        gx = _backprop_input(e, x, gw, g)
    if e.needs_grad(1):
        gg = conv2d(x, gw, a["strides"], a["padding"], a["dilations"])
    return [gx, gg] + [None] * (len(e.inputs) - 2)


@declare(kernel=_bp_filter_kernel, infer=_bp_filter_infer, grad=_bp_filter_grad, kernel_into=_bp_filter_into,
         attrs={"filter_hw": "ints", **_CONV_ATTRS})
def conv2d_backprop_filter(input, filter_hw, out_backprop, strides=1, padding="VALID", dilations=1):  # noqa: A002
    """Gradient of conv2d w.r.t. its filters, of spatial size ``filter_hw`` (height,
    width; TF's 4-element filter_sizes is accepted too)."""
    hw = tuple(int(v) for v in (filter_hw.numpy().tolist() if isinstance(filter_hw, Tensor) else filter_hw))
    if len(hw) == 4:
        hw = hw[:2]
    return (input, out_backprop), {"filter_hw": hw, **_conv_attrs("conv2d_backprop_filter", strides, padding,
                                                                   dilations)}


@declare(kernel=lambda x, g, like, **a: _bp_filter_kernel(x, g, like.shape[:2], **a),
         kernel_into=lambda x, g, like, out, **a: _bp_filter_into(x, g, out, like.shape[:2], **a),
         infer=lambda op, x, g, like, **a: _bp_filter_infer(op, x, g, tuple(like.shape[:2]), **a),
         grad=_bp_filter_grad, attrs=_CONV_ATTRS)
def conv2d_backprop_filter_like(input, out_backprop, like, strides=1, padding="VALID", dilations=1):  # noqa: A002
    """conv2d_backprop_filter for filters of ``like``'s height and width (known
    only at run time)."""
    return (input, out_backprop, like), _conv_attrs("conv2d_backprop_filter_like", strides, padding, dilations)


# -- pooling ----------------------------------------------------------------------------

_POOL_ATTRS = {"ksize": "ints", "strides": "ints", "padding": "str"}
_ONES = (1, 1)


def _pool_attrs(op_name, ksize, strides, padding):
    return {"ksize": hw_pair(op_name, ksize, "ksize"), "strides": hw_pair(op_name, strides, "strides"),
            "padding": padding_mode(op_name, padding)}


def _pool_shape(op, x: Spec, ksize, strides, padding) -> tuple:
    ctx = f"input {inf.fmt_shape(x.shape)}, ksize {tuple(ksize)}, strides {tuple(strides)}"
    (ho, wo), _ = _geometry(op, x.shape[1:3], ksize, strides, _ONES, padding, ctx)
    return (x.shape[0], ho, wo, x.shape[3])


def _pool_infer(op, x: Spec, ksize, strides, padding) -> Spec:
    _check_image(op, x)
    return Spec(_pool_shape(op, x, ksize, strides, padding), x.dtype)


# int8 codes too: quantization is monotone, so the max of the codes is the code of
# the max, exactly (quantized models pool their int8 activations)
_MAX_POOL_DTYPES = FLOATS | {int8}


def _max_pool_infer(op, x: Spec, ksize, strides, padding) -> Spec:
    _check_image(op, x, allowed=_MAX_POOL_DTYPES)
    return Spec(_pool_shape(op, x, ksize, strides, padding), x.dtype)


def _argmax_taps(x, ksize, strides, padding):
    """Per output element: the max over its window and the index (i * KW + j) of
    the first tap attaining it (TF's tie rule); padding never wins. The exact
    rule every path keeps: the first tap, replaced only by a strictly greater
    later one (a NaN in the first tap stays, a later NaN never wins)."""
    out_hw, pads = _geometry(None, x.shape[1:3], ksize, strides, _ONES, padding, "")
    xp = _pad(x, pads, -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min)
    best = idx = None
    for i, j, sl in _taps(ksize, out_hw, strides, _ONES):
        v = xp[sl]
        if best is None:
            best, idx = v.copy(), np.zeros(v.shape, np.intp)
        else:
            better = v > best  # strict: an equal later tap does not take over
            np.copyto(best, v, where=better)
            np.copyto(idx, i * ksize[1] + j, where=better)
    return best, idx, out_hw, pads


def _tiles(x, ksize, strides, padding):
    """``x`` as (N, Ho, KH, Wo, KW, C) where its windows tile it exactly (stride =
    window, dividing the height and width: no padding, nothing left over); None
    otherwise."""
    (n, h, w, c), (kh, kw) = x.shape, ksize
    if tuple(strides) != (kh, kw) or h % kh or w % kw:
        return None
    return x.reshape(n, h // kh, kh, w // kw, kw, c)


def _first_max_along(a, masks, out=None):
    """Max over axis 1 of (M, K, L) ``a`` by the strict rule (a later element wins
    only if greater): np.maximum(later, best) keeps ``best`` on ties, signed
    zeros included. With ``masks``, also, per k, where element k is that max
    (bool (M, L)); None for the masks otherwise. The max is written into ``out``
    when given."""
    best = a[:, 0].copy() if out is None else out
    if out is not None:
        np.copyto(best, a[:, 0])
    idx = None
    for k in range(1, a.shape[1]):
        v = a[:, k]
        if masks:
            later = np.greater(v, best)
            if idx is None:
                idx = later.view(np.uint8)  # 0 or 1 so far
            else:
                np.copyto(idx, k, where=later)
        np.maximum(v, best, out=best)
    if not masks:
        return best, None
    if a.shape[1] == 1:
        return best, [np.ones(best.shape, bool)]
    if a.shape[1] == 2:
        return best, [~idx.view(bool), idx.view(bool)]
    return best, [idx == k for k in range(a.shape[1])]


def _tiled_max(t6, masks=False, out=None):
    """The max over each window of the tiles ``t6`` (N, Ho, Wo, C) by the strict
    first-tap rule of ``_argmax_taps``, along each window row then down the rows
    (so ties go to the row-major first); with ``masks``, also where each window's
    max is: (per row i, bool (N*Ho, Wo*C)), (per column j, bool (N*Ho*KH, Wo*C)).
    None where a NaN made np.maximum differ from the rule. ``out``: a
    C-contiguous (N, Ho, Wo, C) buffer to write the max into."""
    n, ho, kh, wo, kw, c = t6.shape
    best, col_masks = _first_max_along(t6.reshape(n * ho * kh * wo, kw, c), masks)
    rows_out = None if out is None else _rows_of(out, wo * c)
    out, row_masks = _first_max_along(best.reshape(n * ho, kh, wo * c), masks, rows_out)
    if out.dtype.kind == "f" and np.isnan(out).any():
        return None  # np.maximum propagated a NaN: the exact rule decides
    out = out.reshape(n, ho, wo, c)
    return (out, row_masks, col_masks) if masks else out


def _max_pool_kernel(x, ksize, strides, padding):
    t6 = _tiles(x, ksize, strides, padding)
    out = None if t6 is None else _tiled_max(t6)
    return _argmax_taps(x, ksize, strides, padding)[0] if out is None else out


def _max_pool_into(x, out, ksize, strides, padding):
    """max_pool2d written into ``out``: tiling windows by the last np.maximum (eager's
    bits); others (and a NaN) copied from the exact rule's result."""
    t6 = _tiles(x, ksize, strides, padding)
    if t6 is None or out.dtype != x.dtype or _tiled_max(t6, out=out) is None:
        np.copyto(out, _argmax_taps(x, ksize, strides, padding)[0], casting="no")


def _max_pool_grad(e, g):
    return [max_pool2d_grad(e.inputs[0], g, **e.attrs)]


@declare(kernel=_max_pool_kernel, infer=_max_pool_infer, grad=_max_pool_grad, attrs=_POOL_ATTRS,
         kernel_into=_max_pool_into,
         rows=every_row)
def max_pool2d(input, ksize, strides, padding="VALID"):  # noqa: A002
    """Maximum over ksize windows of an NHWC ``input``; SAME padding never wins."""
    return (input,), _pool_attrs("max_pool2d", ksize, strides, padding)


def _pool_grad_infer(op, x: Spec, g: Spec, ksize, strides, padding) -> Spec:
    _check_image(op, x)
    _check_image(op, g, "grad")
    inf.check_same_dtype(op, x, g)
    want = _pool_shape(op, x, ksize, strides, padding)
    for a, b in zip(g.shape, want):
        _match(op, a, b, f"grad has shape {inf.fmt_shape(g.shape)}, expected the pooled shape "
                         f"{inf.fmt_shape(want)} of input {inf.fmt_shape(x.shape)}")
    return x


def _tiled_max_grad(x, g, ksize, strides, padding, out=None):
    """max_pool2d_grad for tiling windows without NaN (None otherwise), into ``out``
    (C-contiguous, x's shape) when given. Each element is in one window: g routed
    down to the window's max row, then along it to the max column. The exact
    path's tap sums give 0 + g at the max and +0 elsewhere: so g + 0 (a -0 turns
    +0), and the routing multiplies its bits as unsigned integers by the masks,
    which gives those bits or +0 (a float product would give -0 for a negative g
    and NaN for an infinite or NaN one away from the max)."""
    t6 = _tiles(x, ksize, strides, padding)
    found = None if t6 is None else _tiled_max(t6, masks=True)
    if found is None:
        return None
    _, row_masks, col_masks = found
    n, ho, kh, wo, kw, c = t6.shape
    dx = np.empty(x.shape, dtype=g.dtype) if out is None else out
    bits = np.dtype(f"u{g.dtype.itemsize}")
    tiles = dx.view(bits)
    tiles.shape = (n * ho, kh, wo, kw, c)  # a view, never a copy (numpy raises)
    rows = np.add(g, 0, dtype=g.dtype).view(bits).reshape(n * ho, wo * c)
    for i, at_row in enumerate(row_masks):
        g_row = np.multiply(rows, at_row).reshape(n * ho, wo, c)
        for j, at_col in enumerate(col_masks):
            np.multiply(g_row, at_col.reshape(n * ho, kh, wo, c)[:, i], out=tiles[:, i, :, j, :])
    return dx


def _max_pool_grad_into(x, g, out, ksize, strides, padding):
    if out.dtype != g.dtype or _tiled_max_grad(x, g, ksize, strides, padding, out) is None:
        np.copyto(out, _max_pool_grad_kernel(x, g, ksize, strides, padding), casting="no")


def _max_pool_grad_kernel(x, g, ksize, strides, padding):
    dx = _tiled_max_grad(x, g, ksize, strides, padding)
    if dx is not None:
        return dx
    _, idx, out_hw, pads = _argmax_taps(x, ksize, strides, padding)
    (t, b), (l, r) = pads
    dxp = np.zeros((x.shape[0], x.shape[1] + t + b, x.shape[2] + l + r, x.shape[3]), dtype=g.dtype)
    for i, j, sl in _taps(ksize, out_hw, strides, _ONES):
        dxp[sl] += np.where(idx == i * ksize[1] + j, g, 0)
    return _crop(dxp, pads, x.shape[1:3])


def _max_pool_grad_grad(e, gg):
    # Linear in g (routing fixed by x); piecewise constant in x.
    x, g = e.inputs
    return [zeros_like_(x) if e.needs_grad(0) else None,
            max_pool2d_grad_grad(x, gg, **e.attrs) if e.needs_grad(1) else None]


@declare(kernel=_max_pool_grad_kernel, infer=_pool_grad_infer, grad=_max_pool_grad_grad, attrs=_POOL_ATTRS,
         kernel_into=_max_pool_grad_into,
         rows=every_row)
def max_pool2d_grad(input, grad, ksize, strides, padding="VALID"):  # noqa: A002
    """Gradient of max_pool2d: each window's ``grad`` goes to the first maximum of
    ``input`` in that window."""
    return (input, grad), _pool_attrs("max_pool2d_grad", ksize, strides, padding)


def _max_pool_gg_infer(op, x: Spec, gg: Spec, ksize, strides, padding) -> Spec:
    _check_image(op, x)
    _check_image(op, gg, "grad")
    inf.check_same_dtype(op, x, gg)
    _match(op, tuple(x.shape), tuple(gg.shape), f"grad has shape {inf.fmt_shape(gg.shape)}, expected the "
                                                f"input's shape {inf.fmt_shape(x.shape)}")
    return Spec(_pool_shape(op, x, ksize, strides, padding), x.dtype)


def _max_pool_gg_kernel(x, gg, ksize, strides, padding):
    _, idx, out_hw, pads = _argmax_taps(x, ksize, strides, padding)
    ggp = _pad(gg, pads)
    out = np.zeros(idx.shape, dtype=gg.dtype)
    for i, j, sl in _taps(ksize, out_hw, strides, _ONES):
        np.copyto(out, ggp[sl], where=idx == i * ksize[1] + j)
    return out


def _max_pool_gg_grad(e, g):
    x, _ = e.inputs
    return [zeros_like_(x) if e.needs_grad(0) else None,
            max_pool2d_grad(x, g, **e.attrs) if e.needs_grad(1) else None]


@declare(kernel=_max_pool_gg_kernel, infer=_max_pool_gg_infer, grad=_max_pool_gg_grad, attrs=_POOL_ATTRS,
         kernel_into=copy_into(_max_pool_gg_kernel),
         rows=every_row)
def max_pool2d_grad_grad(input, grad, ksize, strides, padding="VALID"):  # noqa: A002
    """The transpose of max_pool2d_grad in its ``grad``: picks, per window, ``grad``
    at the window's first maximum of ``input`` (for second derivatives)."""
    return (input, grad), _pool_attrs("max_pool2d_grad_grad", ksize, strides, padding)


def _avg_counts(in_hw, ksize, strides, padding):
    """How many real (non-padding) elements each window covers, shape (1, Ho, Wo, 1)."""
    out_hw, pads = _geometry(None, in_hw, ksize, strides, _ONES, padding, "")
    onesp = _pad(np.ones((1,) + tuple(in_hw) + (1,)), pads)
    counts = np.zeros((1,) + out_hw + (1,))
    for _, _, sl in _taps(ksize, out_hw, strides, _ONES):
        counts += onesp[sl]
    return counts, out_hw, pads


def _avg_pool_kernel(x, ksize, strides, padding):
    counts, out_hw, pads = _avg_counts(x.shape[1:3], ksize, strides, padding)
    xp = _pad(x, pads)
    out = np.zeros((x.shape[0],) + out_hw + (x.shape[3],), dtype=x.dtype)
    for _, _, sl in _taps(ksize, out_hw, strides, _ONES):
        out += xp[sl]
    return out / counts.astype(x.dtype)


def _avg_pool_grad(e, g):
    x = e.inputs[0]
    if None in tuple(x.shape[1:3]):
        return [avg_pool2d_grad_like(x, g, **e.attrs)]
    return [avg_pool2d_grad(tuple(x.shape[1:3]), g, **e.attrs)]


@declare(kernel=_avg_pool_kernel, infer=_pool_infer, grad=_avg_pool_grad, attrs=_POOL_ATTRS,
         kernel_into=copy_into(_avg_pool_kernel),
         rows=every_row)
def avg_pool2d(input, ksize, strides, padding="VALID"):  # noqa: A002
    """Mean over ksize windows of an NHWC ``input``; SAME padding is not counted."""
    return (input,), _pool_attrs("avg_pool2d", ksize, strides, padding)


def _avg_grad_kernel(g, input_hw, ksize, strides, padding):
    counts, out_hw, pads = _avg_counts(input_hw, ksize, strides, padding)
    (t, b), (l, r) = pads
    gd = g / counts.astype(g.dtype)
    dxp = np.zeros((g.shape[0], input_hw[0] + t + b, input_hw[1] + l + r, g.shape[3]), dtype=g.dtype)
    for _, _, sl in _taps(ksize, out_hw, strides, _ONES):
        dxp[sl] += gd
    return _crop(dxp, pads, input_hw)


def _avg_grad_infer(op, g: Spec, input_hw, ksize, strides, padding) -> Spec:
    _check_image(op, g, "grad")
    if len(input_hw) != 2:
        raise ValueError(f"{op.name}: input_hw must have 2 elements, got {tuple(input_hw)}")
    x = Spec((g.shape[0],) + tuple(input_hw) + (g.shape[3],), g.dtype)
    want = _pool_shape(op, x, ksize, strides, padding)
    for a, b in zip(g.shape, want):
        _match(op, a, b, f"grad has shape {inf.fmt_shape(g.shape)}, expected the pooled shape "
                         f"{inf.fmt_shape(want)} of an input of height/width {tuple(input_hw)}")
    return x


def _avg_grad_grad(e, gg):
    a = e.attrs  # (avg_pool2d_grad_like's first input only gives a shape)
    return [None] * (len(e.inputs) - 1) + [avg_pool2d(gg, a["ksize"], a["strides"], a["padding"])]


@declare(kernel=_avg_grad_kernel, infer=_avg_grad_infer, grad=_avg_grad_grad, kernel_into=copy_into(_avg_grad_kernel),
         attrs={"input_hw": "ints", **_POOL_ATTRS}, rows=every_row)
def avg_pool2d_grad(input_hw, grad, ksize, strides, padding="VALID"):
    """Gradient of avg_pool2d for an input of spatial size ``input_hw``: each window's
    ``grad`` spread evenly over its real elements."""
    hw = tuple(int(v) for v in input_hw)
    if len(hw) == 4:
        hw = hw[1:3]
    return (grad,), {"input_hw": hw, **_pool_attrs("avg_pool2d_grad", ksize, strides, padding)}


def _avg_grad_like_kernel(like, g, **a):
    return _avg_grad_kernel(g, like.shape[1:3], **a)


@declare(kernel=_avg_grad_like_kernel, kernel_into=copy_into(_avg_grad_like_kernel),
         infer=lambda op, like, g, **a: _avg_grad_infer(op, g, tuple(like.shape[1:3]), **a),
         grad=_avg_grad_grad, attrs=_POOL_ATTRS, rows=every_row)
def avg_pool2d_grad_like(like, grad, ksize, strides, padding="VALID"):
    """avg_pool2d_grad for an input of ``like``'s height and width (known only at
    run time)."""
    return (like, grad), _pool_attrs("avg_pool2d_grad_like", ksize, strides, padding)


# -- dropout ------------------------------------------------------------------------------

# An explicit seed gives the same mask on every call, eager or compiled, because
# the mask comes from this op's kernel alone; without one, tfc.random's global stream.
def _mask_kernel(x, rate, noise_shape, seed):
    shape = tuple(x.shape if noise_shape is None else noise_shape)
    return draw(seed, shape, dropout_spec(rate, x.dtype))


def _mask_into(x, out, rate, noise_shape, seed):
    """The mask written into a planned buffer of its shape (``noise_shape``, or
    x's): the words of the same draw as ``_mask_kernel``'s, chunk by chunk."""
    draw_into(out, seed, dropout_spec(rate, np.dtype(x.dtype)))


def _mask_infer(op, x: Spec, rate, noise_shape, seed) -> Spec:
    inf.check_dtype(op, x, FLOATS)
    if not 0 <= rate < 1:
        raise ValueError(f"{op.name}: rate must be in [0, 1), got {rate}")
    if noise_shape is None:
        return x
    bad = len(noise_shape) != x.ndim or any(
        n != 1 and d is not None and n != d for n, d in zip(noise_shape, x.shape))
    if bad:
        raise ValueError(f"{op.name}: noise_shape {tuple(noise_shape)} does not broadcast to the shape "
                         f"{inf.fmt_shape(x.shape)} of x (same rank; each dimension 1 or equal)")
    return Spec(tuple(noise_shape), x.dtype)


@declare(kernel=_mask_kernel, infer=_mask_infer, stateful=True, kernel_into=_mask_into,
         attrs={"rate": "float", "noise_shape": "ints?", "seed": "seed"})
def dropout_mask(x, rate, noise_shape=None, seed=None):
    """A random mask for dropout of ``x``: 0 with probability ``rate``, else
    1/(1 - rate); shaped ``noise_shape`` (broadcastable to x) or like x. Only x's
    shape and dtype are read. Not differentiable (a sample).

    Element i (row-major) of the mask reads word i of the draw (Philox4x32-10
    blocks as in ``tfc.random.uniform``: seeded, key = seed and counter base 0;
    else the global stream) and is kept iff word >= ceil(rate * 2^32)."""
    return (x,), {"rate": float(rate), "noise_shape": None if noise_shape is None else tuple(noise_shape),
                  "seed": _seed_value("dropout_mask", seed)}


@user_errors
def dropout(x, rate, noise_shape=None, seed=None):
    """Zeroes elements of ``x`` with probability ``rate`` and scales the rest by
    1/(1 - rate) (TensorFlow's semantics); ``noise_shape`` shares one draw along
    its size-1 dimensions. The gradient is the same mask times the incoming one."""
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(f"dropout: x has dtype {x.dtype.name}; expected one of {inf.dtype_names(FLOATS)}")
    if isinstance(rate, Tensor):
        rate = float(rate)
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.number)):
        raise TypeError(f"dropout: rate must be a number, got {rate!r}")
    if not 0 <= rate < 1:
        raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
    seed = _seed_value("dropout", seed)
    if rate == 0:
        return x
    if noise_shape is not None:
        if isinstance(noise_shape, Tensor):
            noise_shape = noise_shape.numpy().tolist()
        noise_shape = tuple(noise_shape)
        if len(noise_shape) != x.ndim:
            raise ValueError(f"dropout: noise_shape {noise_shape} must have the rank of x, shape "
                             f"{inf.fmt_shape(x.shape)}")
        # TF: a None entry takes x's dimension.
        noise_shape = tuple(d if n is None else n for n, d in zip(as_ints("dropout", noise_shape, "noise_shape",
                                                                           allow_none=True), x.shape))
    from tfc.ops.math import multiply

    return multiply(x, dropout_mask(x, rate, noise_shape, seed))


def zeros_like_(x):
    from tfc.ops.creation import zeros_like

    return zeros_like(x)

