"""Quantized ops: int8 quantize / dequantize, integer matmul and conv2d with
int32 accumulation and requantization, and the weight-only (int8 weights, float
compute) matmul and conv2d. The scheme is TFLite's and ONNX Runtime's:

- a real value r and its int8 code q are related by r = scale * (q - zero_point);
- weights are symmetric (zero point 0) in [-127, 127], per output channel or per
  tensor (a per-tensor scale, the same on every channel, is stored once: the
  ops take a multiplier or scale of shape [1] for all channels as well as [N]);
- activations are asymmetric per tensor, int8 in [-128, 127];
- the bias is int32 with scale s_in * s_w[n]; the input's zero point is folded
  into it (``x_q @ w_q - z_in * sum_k w_q[k, n]``), so the integer ops take the
  raw int8 codes and need no zero point of their input;
- requantization: ``q_out = clip(rint(float32(acc) * multiplier[n] + z_out), lo, 127)``
  in float32 (as ONNX's QLinearMatMul), with ``multiplier = s_in * s_w[n] / s_out`` and ``lo = z_out`` when a
  relu is fused (relu on the integer values: max(q, z_out) is relu of the real
  value), else -128. With ``out_dtype`` float32 the op instead gives the real
  result ``float32(acc) * multiplier[n]`` (``multiplier = s_in * s_w[n]``; relu: max(., 0)).

The integer product is exact: numpy's int8 matmul has no BLAS, so it runs in
float32 BLAS on the int8 codes, which is exact while every partial sum stays below
2**24: with |x|, |w| <= 128 that holds for K <= 1024 (``EXACT_K``); longer
reductions are cut into chunks of EXACT_K, each converted to int32 and summed in
int32 (``int8_matmul``). int32 holds any K <= 131072 (``MAX_K``); longer ones are
refused. None of these ops is differentiable (post-training quantization).

Codes held in float32 (attribute ``codes = f32``, set by ``tfc-quantize`` for the
numpy backend): quantize gives, and the integer ops take and give, the same int8
codes as float32 values (integers in [-128, 127]). float32 holds them exactly and
BLAS reads them as they are, so a chain of layers converts nothing between int8
and float32 and the bias is one added row (docs/quantization.md compares the two).
"""
from __future__ import annotations

import numpy as np

from tfc.core import dtypes
from tfc.core.registry import Spec, declare
from tfc.ops import _infer as inf
from tfc.ops import _scalar as S
from tfc.ops.conv import _CONV_ATTRS, _conv_attrs, _patches, conv_out_shape

INT8_MIN, INT8_MAX = -128, 127
# the quantization modes these ops serve: static (the integer ops) and weight-only (the
# weight_quantized_* ops); defined here, the lowest layer both tfc-quantize and
# tfc.quantization.Config read (tfc.quantization is imported by ``import tfc``, without xDSL)
MODES = ("static", "weights")
# every partial sum of a float32 dot product of int8 codes is an integer of
# magnitude <= K * 128 * 128, exact in float32 up to 2**24
EXACT_K = (1 << 24) // (128 * 128)
MAX_K = (1 << 31) // (128 * 128)  # int32 accumulation of K products of +-128 * +-128
_INT8 = frozenset({dtypes.int8})
_OUT_DTYPES = frozenset({dtypes.int8, dtypes.float32})
CODES = frozenset({dtypes.int8, dtypes.float32})  # what the int8 codes may be held in


def _codes_attr(codes):
    """A ``codes=`` argument as the ops' attribute (None: int8, the default)."""
    return None if codes is None else dtypes.as_dtype(codes)


def codes_dtype(op, codes):
    """The dtype the ops' int8 codes are held in: ``codes`` (absent: int8)."""
    if codes is None:
        return dtypes.int8
    if codes not in CODES:
        raise TypeError(f"{op.name}: codes must be int8 or float32 (int8 codes held in float32), got {codes.name}")
    return codes


def int8_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of int8 arrays (a [..., M, K], b [K, N]) as int32, exactly:
    float32 BLAS on chunks of at most EXACT_K along K (see the module docstring)."""
    k = a.shape[-1]
    if k <= EXACT_K:
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.int32)
    out = np.zeros(a.shape[:-1] + (b.shape[-1],), np.int32)
    for s in range(0, k, EXACT_K):
        part = np.matmul(a[..., s:s + EXACT_K].astype(np.float32), b[s:s + EXACT_K].astype(np.float32))
        out += part.astype(np.int32)
    return out


_products: dict = {}  # (w, bias) by value -> (float32 [w; bias], its bias row), or None where not exact
# (id(w), id(bias)) -> (w, bias, _products' entry) for read-only constants: a compiled
# function passes the same arrays on every call, so no key is built from their bytes (the
# entry holds w and bias, so their ids are not reused while it lives)
_by_identity: dict = {}


def _float_weights(w: np.ndarray, bias: np.ndarray):
    """(float32 ``[w; bias]`` [K + 1, N], its last row: the bias as float32) where a
    float32 product with it is exact (every partial sum, the bias included, within
    2**24), else None. Cached by value, and by identity for read-only arrays."""
    frozen = not (w.flags.writeable or bias.flags.writeable)
    if frozen:
        hit = _by_identity.get((id(w), id(bias)))
        if hit is not None and hit[0] is w and hit[1] is bias:
            return hit[2]
    key = (w.shape, w.tobytes(), bias.tobytes())
    entry = _products.get(key, _products)  # (the dict itself: not cached; None is a cached "not exact")
    if entry is _products:
        k, n = w.shape
        entry = None
        if k <= EXACT_K and (not bias.size or int(np.abs(bias.astype(np.int64)).max()) + k * 128 * 128 <= 1 << 24):
            wf = np.empty((k + 1, n), np.float32)
            wf[:k] = w
            wf[k] = bias
            wf.flags.writeable = False
            entry = (wf, wf[k])
        if len(_products) >= 64:
            _products.clear()
        _products[key] = entry
    if frozen:
        if len(_by_identity) >= 64:
            _by_identity.clear()
        _by_identity[(id(w), id(bias))] = (w, bias, entry)
    return entry


def accumulate_codes(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``accumulate`` of int8 codes held in float32 ``x`` [M, K] (integers in
    [-128, 127]): one BLAS product with ``w`` as float32, then the bias added
    as a row (exact under the same bound, ``_float_weights``); else int32."""
    entry = _float_weights(w, bias)
    if entry is None:
        return accumulate(x.astype(np.int8), w, bias)
    wf, bias_row = entry
    acc = np.matmul(x, wf[:w.shape[0]])
    return _rows(acc, bias_row, np.add)


def accumulate(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """float32(x @ w + bias), the int32 accumulator of int8 ``x`` [M, K] and ``w``
    [K, N] plus int32 ``bias`` [N], as float32 (what requantization scales).
    Where every partial sum, the bias included, stays within 2**24, one float32
    BLAS product of ``[x, 1]`` and ``[w; bias]`` is that value exactly (the
    bias rides in the product: no pass of its own); otherwise int32 arithmetic."""
    entry = _float_weights(w, bias)
    if entry is None:
        return (int8_matmul(x, w) + bias).astype(np.float32)
    wf, k = entry[0], x.shape[-1]
    xf = np.empty(x.shape[:-1] + (k + 1,), np.float32)
    xf[..., :k] = x
    xf[..., k] = 1
    return np.matmul(xf, wf)


# np.clip's ufunc without np.clip's Python wrapper (a third of the pass's time on
# a [449, 64] result); the same NaN-propagating clip
try:
    from numpy._core.umath import clip as _clip
except ImportError:  # numpy 1
    _clip = np.clip
_ROW_TILE = 2048  # elements of the repeated vector for a long [M, N] (see _rows)
_FULL_TILE = 1 << 18  # elements of an [M, N] up to which the vector is repeated down all M rows
_tiles: dict = {}  # a per-channel vector's bytes -> the vector repeated down some rows
_tiles_by_identity: dict = {}  # id(read-only vector) -> (the vector, its tile): no bytes key per call


def _repeated(vec: np.ndarray, rows: int) -> np.ndarray:
    """``vec`` [N] repeated as a C-contiguous [rows, N], cached by value (an eager
    call's vectors are fresh arrays; a compiled function's are the same each call,
    also found by identity while read-only)."""
    frozen = not vec.flags.writeable
    if frozen:
        hit = _tiles_by_identity.get(id(vec))
        if hit is not None and hit[0] is vec and hit[1].shape[0] >= rows:
            return hit[1][:rows]
    key = (vec.dtype.str, vec.tobytes())
    tile = _tiles.get(key)
    if tile is None or tile.shape[0] < rows:
        if len(_tiles) >= 16:
            _tiles.clear()
        tile = _tiles[key] = np.tile(vec, (rows, 1))
        tile.flags.writeable = False
    if frozen:
        if len(_tiles_by_identity) >= 16:
            _tiles_by_identity.clear()
        _tiles_by_identity[id(vec)] = (vec, tile)
    return tile[:rows]


def _rows(a: np.ndarray, vec: np.ndarray, ufunc=np.multiply) -> np.ndarray:
    """``a = ufunc(a, vec)`` (``a *= vec``, ``a += vec``) for a C-contiguous [M, N]
    ``a`` and a per-channel ``vec`` [N], the same values as numpy's broadcast, faster:
    numpy broadcasts a row with one short inner loop per row (2.5x the time of a
    flat product on [449, 64], also on [28736, 16]), so ``a`` meets the vector
    repeated down its rows, or for a long ``a`` in blocks of r rows the vector
    repeated r times."""
    m, n = a.shape
    if vec.shape[0] == 1 or m == 1:  # one scale for all: a flat product already
        return ufunc(a, vec, out=a)
    if m * n <= _FULL_TILE:
        return ufunc(a, _repeated(vec, m), out=a)
    r = max(1, _ROW_TILE // n)
    main = m - m % r
    block = a[:main].reshape(-1, r * n)
    ufunc(block, _repeated(vec, r).reshape(-1), out=block)
    if main < m:
        ufunc(a[main:], vec, out=a[main:])
    return a


def requantize(acc: np.ndarray, multiplier: np.ndarray, out_zero_point: int, relu: bool, out_dtype,
               codes=dtypes.int8):
    """The float32 accumulator [M, N] (``accumulate``, overwritten) as the op's
    result (see the module docstring); float32 arithmetic, as ONNX's QLinearMatMul.
    int8 codes come out held in ``codes`` (float32: as they are, no cast)."""
    real = _rows(acc, multiplier)
    if out_dtype == dtypes.float32:
        return np.maximum(real, np.float32(0), out=real) if relu else real
    real += np.float32(out_zero_point)
    np.rint(real, out=real)
    _clip(real, np.float32(out_zero_point if relu else INT8_MIN), np.float32(INT8_MAX), out=real)
    return real if codes == dtypes.float32 else real.astype(np.int8)


# -- quantize / dequantize ---------------------------------------------------------------


def _check_qparams(op, scale, zero_point):
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"{op.name}: scale must be a positive finite number, got {scale!r}")
    if not INT8_MIN <= zero_point <= INT8_MAX:
        raise ValueError(f"{op.name}: zero_point must be in [{INT8_MIN}, {INT8_MAX}], got {zero_point}")


def _quantize_kernel(x, scale, zero_point, codes=None):
    # a library kernel, not a scalar body: fused, the clip became a maximum and a
    # minimum pass, each three times the cost of the clip ufunc's one pass
    q = np.asarray(np.divide(x, x.dtype.type(scale)))  # an array for a 0-d x too (rint's out=)
    np.rint(q, out=q)
    q += x.dtype.type(zero_point)
    _clip(q, x.dtype.type(INT8_MIN), x.dtype.type(INT8_MAX), out=q)
    if codes is None or codes == dtypes.int8:
        return q.astype(np.int8)  # (a NaN casts to code 0)
    # codes held in float32 give a NaN the int8 cast's code 0 too, else it would
    # reach the whole row of every product after it; the clip left no inf, so one
    # read-only sum tells whether any NaN is there
    if np.isnan(q.sum()):
        q[np.isnan(q)] = 0
    return q.astype(np.float32, copy=False)


def _quantize_infer(op, x: Spec, scale, zero_point, codes=None) -> Spec:
    inf.check_dtype(op, x, dtypes.FLOATS)
    _check_qparams(op, scale, zero_point)
    return Spec(x.shape, codes_dtype(op, codes))


def _dequantize_scalar(b, q, scale, zero_point):
    x = S.cast(b, q, dtypes.float32)
    return S.mul(b, S.sub(b, x, S.const(b, zero_point, dtypes.float32)), S.const(b, scale, dtypes.float32))


@declare(kernel=_quantize_kernel, infer=_quantize_infer, quiet=True,
         attrs={"scale": "float", "zero_point": "int", "codes": "dtype"})
def quantize(x, scale, zero_point=0, codes=None):
    """int8 codes of ``x``: clip(rint(x / scale) + zero_point, -128, 127), held
    in ``codes`` (int8, the default, or float32: the same integers)."""
    return (x,), {"scale": float(scale), "zero_point": int(zero_point),
                  "codes": _codes_attr(codes)}


def _dequantize_kernel(q, scale, zero_point):
    return ((q.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)).astype(np.float32)


def _dequantize_infer(op, q: Spec, scale, zero_point) -> Spec:
    inf.check_dtype(op, q, _INT8, "q")
    _check_qparams(op, scale, zero_point)
    return Spec(q.shape, dtypes.float32)


@declare(kernel=_dequantize_kernel, infer=_dequantize_infer, scalar=_dequantize_scalar,
         attrs={"scale": "float", "zero_point": "int"})
def dequantize(q, scale, zero_point=0):
    """float32 values of int8 codes: (q - zero_point) * scale."""
    return (q,), {"scale": float(scale), "zero_point": int(zero_point)}


# -- integer matmul and conv2d -------------------------------------------------------------


def _check_channel_vectors(op, n, bias: Spec, multiplier: Spec):
    inf.check_dtype(op, bias, frozenset({dtypes.int32}), "bias")
    inf.check_dtype(op, multiplier, frozenset({dtypes.float32}), "multiplier")
    _check_per_channel(op, bias, n, "bias")
    _check_per_channel(op, multiplier, n, "multiplier", one_for_all=True)


def _check_per_channel(op, spec: Spec, n, what, one_for_all=False):
    """``spec`` is a vector of one value per output channel, or (``one_for_all``:
    a per-tensor scale, stored once) a single value."""
    if spec.ndim == 1 and (n is None or spec.shape[0] in (None, n) or (one_for_all and spec.shape[0] == 1)):
        return
    raise ValueError(f"{op.name}: {what} must have shape ({n},) (one per output channel)"
                     + (" or (1,) (one for all)" if one_for_all else "") + f", got {inf.fmt_shape(spec.shape)}")


def _check_requant_attrs(op, out_zero_point, out_dtype):
    if out_dtype not in _OUT_DTYPES:
        raise TypeError(f"{op.name}: out_dtype must be int8 or float32, got {out_dtype.name}")
    if not INT8_MIN <= out_zero_point <= INT8_MAX:
        raise ValueError(f"{op.name}: out_zero_point must be in [{INT8_MIN}, {INT8_MAX}], got {out_zero_point}")


def _check_k(op, k):
    if k is not None and k > MAX_K:
        raise ValueError(f"{op.name}: reduction of length {k} may overflow the int32 accumulator "
                         f"(at most {MAX_K})")


_REQUANT_ATTRS = {"out_zero_point": "int", "relu": "bool", "out_dtype": "dtype", "codes": "dtype"}


def _accumulate_any(x, w, bias):
    return accumulate_codes(x, w, bias) if x.dtype == np.float32 else accumulate(x, w, bias)


def _qmatmul_kernel(x, w, bias, multiplier, out_zero_point, relu, out_dtype, codes=None):
    return requantize(_accumulate_any(x, w, bias), multiplier, out_zero_point, relu, out_dtype,
                      codes or dtypes.int8)


def _result_dtype(op, out_dtype, codes):
    """int8 codes held in ``codes``, or the real float32 values."""
    return codes_dtype(op, codes) if out_dtype == dtypes.int8 else out_dtype


def _qmatmul_infer(op, x: Spec, w: Spec, bias: Spec, multiplier: Spec, out_zero_point, relu, out_dtype,
                   codes=None) -> Spec:
    inf.check_dtype(op, x, frozenset({codes_dtype(op, codes)}), "x")
    inf.check_dtype(op, w, _INT8, "w")
    if x.ndim != 2 or w.ndim != 2:
        raise ValueError(f"{op.name}: x and w must be matrices, got shapes {inf.fmt_shape(x.shape)} "
                         f"and {inf.fmt_shape(w.shape)}")
    if x.shape[1] is not None and w.shape[0] is not None and x.shape[1] != w.shape[0]:
        raise ValueError(f"{op.name}: inner dimensions differ: {inf.fmt_shape(x.shape)} @ "
                         f"{inf.fmt_shape(w.shape)}")
    _check_k(op, w.shape[0])
    _check_channel_vectors(op, w.shape[1], bias, multiplier)
    _check_requant_attrs(op, out_zero_point, out_dtype)
    return Spec((x.shape[0], w.shape[1]), _result_dtype(op, out_dtype, codes))


@declare(kernel=_qmatmul_kernel, infer=_qmatmul_infer, attrs=_REQUANT_ATTRS)
def quantized_matmul(x, w, bias, multiplier, out_zero_point=0, relu=False, out_dtype=dtypes.int8, codes=None):
    """Integer matmul of int8 codes ``x`` [M, K] and ``w`` [K, N]: int32
    ``acc = x @ w + bias`` (exact), requantized per output channel (see the module docstring).
    ``codes=float32``: ``x`` and an int8 result are codes held in float32."""
    return (x, w, bias, multiplier), {"out_zero_point": int(out_zero_point), "relu": bool(relu),
                                      "out_dtype": dtypes.as_dtype(out_dtype),
                                      "codes": _codes_attr(codes)}


def _qconv2d_kernel(x, w, bias, multiplier, strides, padding, dilations, pad_value, out_zero_point, relu,
                    out_dtype, codes=None):
    cols = _patches(x, w.shape[:2], strides, padding, dilations, pad_value)
    acc = _accumulate_any(cols.reshape(-1, w.shape[0] * w.shape[1] * w.shape[2]), w.reshape(-1, w.shape[3]), bias)
    out = requantize(acc, multiplier, out_zero_point, relu, out_dtype, codes or dtypes.int8)
    return out.reshape(cols.shape[:3] + (w.shape[3],))


def _qconv2d_infer(op, x: Spec, w: Spec, bias: Spec, multiplier: Spec, strides, padding, dilations, pad_value,
                   out_zero_point, relu, out_dtype, codes=None) -> Spec:
    inf.check_dtype(op, x, frozenset({codes_dtype(op, codes)}), "x")
    inf.check_dtype(op, w, _INT8, "filters")
    out = _conv_shape(op, x, w, strides, padding, dilations)
    if w.ndim == 4 and None not in w.shape[:3]:
        _check_k(op, w.shape[0] * w.shape[1] * w.shape[2])
    if not INT8_MIN <= pad_value <= INT8_MAX:
        raise ValueError(f"{op.name}: pad_value must be in [{INT8_MIN}, {INT8_MAX}], got {pad_value}")
    _check_channel_vectors(op, w.shape[3], bias, multiplier)
    _check_requant_attrs(op, out_zero_point, out_dtype)
    return Spec(out, _result_dtype(op, out_dtype, codes))


def _conv_shape(op, x: Spec, w: Spec, strides, padding, dilations) -> tuple:
    if x.ndim != 4 or w.ndim != 4:
        raise ValueError(f"{op.name}: input (NHWC) and filters (HWIO) must have rank 4, got shapes "
                         f"{inf.fmt_shape(x.shape)} and {inf.fmt_shape(w.shape)}")
    return conv_out_shape(op, x, w, strides, padding, dilations)


@declare(kernel=_qconv2d_kernel, infer=_qconv2d_infer,
         attrs={**_CONV_ATTRS, "pad_value": "int", **_REQUANT_ATTRS})
def quantized_conv2d(input, filters, bias, multiplier, strides=1, padding="VALID", dilations=1,  # noqa: A002
                     pad_value=0, out_zero_point=0, relu=False, out_dtype=dtypes.int8, codes=None):
    """Integer conv2d (NHWC, HWIO) of int8 codes, padded with ``pad_value`` (the
    input's zero point: a real 0), int32 accumulation plus ``bias``, requantized.
    ``codes=float32``: the input and an int8 result are codes held in float32."""
    return (input, filters, bias, multiplier), {
        **_conv_attrs("quantized_conv2d", strides, padding, dilations), "pad_value": int(pad_value),
        "out_zero_point": int(out_zero_point), "relu": bool(relu), "out_dtype": dtypes.as_dtype(out_dtype),
        "codes": _codes_attr(codes)}


# -- weight-only: int8 weights, float compute -------------------------------------------------


def _check_scale(op, x: Spec, scale: Spec, n):
    if scale.dtype != x.dtype:
        raise TypeError(f"{op.name}: scale has dtype {scale.dtype.name}, x has {x.dtype.name}")
    _check_per_channel(op, scale, n, "scale", one_for_all=True)


def _wmatmul_kernel(x, w, scale):
    from tfc.ops.linalg import blas_ready

    # the weights dequantized (K * N products), then one float product: cheaper
    # than scaling the M * N result whenever a batch has more rows than w
    return np.matmul(blas_ready(x), _dequantized(w, scale, x.dtype))


def _dequantized(w, scale, dtype):
    """``w.astype(dtype) * scale`` in one pass (the cast inside the multiply: the same
    values, 1.6x faster on a [784, 1024] matrix, no int8-to-float temporary)."""
    return np.multiply(w, scale, dtype=dtype)


def _wmatmul_infer(op, x: Spec, w: Spec, scale: Spec) -> Spec:
    inf.check_dtype(op, x, dtypes.FLOATS, "x")
    inf.check_dtype(op, w, _INT8, "w")
    if x.ndim < 2 or w.ndim != 2:
        raise ValueError(f"{op.name}: x must have rank >= 2 and w be a matrix, got shapes "
                         f"{inf.fmt_shape(x.shape)} and {inf.fmt_shape(w.shape)}")
    if x.shape[-1] is not None and w.shape[0] is not None and x.shape[-1] != w.shape[0]:
        raise ValueError(f"{op.name}: inner dimensions differ: {inf.fmt_shape(x.shape)} @ {inf.fmt_shape(w.shape)}")
    _check_scale(op, x, scale, w.shape[1])
    return Spec(x.shape[:-1] + (w.shape[1],), x.dtype)


@declare(kernel=_wmatmul_kernel, infer=_wmatmul_infer)
def weight_quantized_matmul(x, w, scale):
    """Weight-only matmul: ``x @ (w * scale)`` with int8 ``w`` [K, N] and float
    ``scale`` [N] or [1] (the weights' per-channel or per-tensor scales): the weights dequantized in
    x's float dtype, then a float product."""
    return (x, w, scale), {}


def _wconv2d_kernel(x, w, scale, strides, padding, dilations):
    from tfc.ops.conv import _conv2d_kernel

    return _conv2d_kernel(x, _dequantized(w, scale, x.dtype), strides, padding, dilations)


def _wconv2d_infer(op, x: Spec, w: Spec, scale: Spec, strides, padding, dilations) -> Spec:
    inf.check_dtype(op, x, dtypes.FLOATS, "input")
    inf.check_dtype(op, w, _INT8, "filters")
    out = _conv_shape(op, x, w, strides, padding, dilations)
    _check_scale(op, x, scale, w.shape[3])
    return Spec(out, x.dtype)


@declare(kernel=_wconv2d_kernel, infer=_wconv2d_infer, attrs=_CONV_ATTRS)
def weight_quantized_conv2d(input, filters, scale, strides=1, padding="VALID", dilations=1):  # noqa: A002
    """Weight-only conv2d: conv2d(input, filters * scale) with int8 HWIO ``filters``
    and float per-output-channel (or one per-tensor) ``scale``."""
    return (input, filters, scale), _conv_attrs("weight_quantized_conv2d", strides, padding, dilations)
