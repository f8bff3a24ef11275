"""Neural-network ops: the softmax family and the cross-entropies. One
declaration per op; every kernel is numerically stable (no exp of a large
positive number), and every gradient rule is written with tfc ops.

softmax, log_softmax and the sparse cross-entropy are composites: each is
declared with ``expand=``, the op written with registry ops (reductions over
its axis and elementwise ops), which the compiler's ``tfc-expand`` pass puts in
its place so that the pieces fuse with their neighbours. Its eager kernel is
that expansion run on arrays (tfc/ops/_expand.py), so eager and compiled code
compute the same numpy operations in the same order. The one piece that is not
a reduction or elementwise, the logit at each label, is the small primitive
``pick_along_last``, which also checks the labels (lowered to L3 as a check and
indexed loads)."""
from __future__ import annotations

import numpy as np

from tfc.core.dtypes import FLOATS, INTS, NUMERIC
from tfc.core.errors import InvalidArgumentError
from tfc.core.registry import Spec, declare, every_row, rows_apart
from tfc.core.shape import as_axis
from tfc.ops import _infer as inf
from tfc.ops._expand import eager_kernel
from tfc.ops.math import (
    _erf_formula, body_formula, run_formula, _sigmoid_kernel, _sigmoid_scalar, _softplus_kernel, _softplus_scalar,
    cast, equal, erf, exp, maximum, rsqrt, sigmoid, sqrt, square, tanh, where,
)
from tfc.ops.reductions import reduce_mean, reduce_sum
from tfc.ops.shapes import check_flag_temps, expand_dims

# -- softmax and log_softmax ------------------------------------------------------


def _axis_infer(op, logits: Spec, axis) -> Spec:
    inf.check_dtype(op, logits, FLOATS, "logits")
    if logits.ndim == 0:
        raise ValueError(f"{op.name}: logits must have rank >= 1, got a scalar")
    inf.normalize_axis(op, axis, logits.ndim)
    return logits


def _softmax_expand(b, x, axis):
    # exp(x - max) / sum(exp(x - max)) along the axis: the largest exponent is 0.
    # Over a zero-size axis the max is -inf and every piece is empty (as TensorFlow).
    axes = (axis % len(b.shape(x)),)
    e = b.exp(b.subtract(x, b.reduce_max(x, axis=axes, keepdims=True)))
    return b.divide(e, b.reduce_sum(e, axis=axes, keepdims=True))


def _softmax_grad(e, g):
    # dx = y * (g - sum(g * y)) along the axis
    y = e.outputs[0]
    return [y * (g - reduce_sum(g * y, axis=e.attrs["axis"], keepdims=True))]


@declare(kernel=eager_kernel(_softmax_expand), infer=_axis_infer, grad=_softmax_grad, attrs={"axis": "int"},
         rows=rows_apart, expand=_softmax_expand)
def softmax(logits, axis=-1):
    """exp(logits) / sum(exp(logits)) along ``axis``, computed without overflow."""
    return (logits,), {"axis": as_axis("softmax", axis)}


def _log_softmax_expand(b, x, axis):
    # z - log(sum(exp(z))) with z = x - max along the axis
    axes = (axis % len(b.shape(x)),)
    z = b.subtract(x, b.reduce_max(x, axis=axes, keepdims=True))
    return b.subtract(z, b.log(b.reduce_sum(b.exp(z), axis=axes, keepdims=True)))


def _log_softmax_grad(e, g):
    # dx = g - softmax(x) * sum(g) along the axis; softmax = exp(output)
    return [g - exp(e.outputs[0]) * reduce_sum(g, axis=e.attrs["axis"], keepdims=True)]


@declare(kernel=eager_kernel(_log_softmax_expand), infer=_axis_infer, grad=_log_softmax_grad,
         attrs={"axis": "int"}, rows=rows_apart, expand=_log_softmax_expand)
def log_softmax(logits, axis=-1):
    """logits - log(sum(exp(logits))) along ``axis``, computed without overflow."""
    return (logits,), {"axis": as_axis("log_softmax", axis)}


# -- cross-entropies ------------------------------------------------------------


def _labels_infer(op, labels: Spec, logits: Spec, logits_dtypes=FLOATS) -> Spec:
    inf.check_dtype(op, labels, INTS, "labels")
    inf.check_dtype(op, logits, logits_dtypes, "logits")
    if logits.ndim != labels.ndim + 1 or logits.ndim < 1:
        raise ValueError(
            f"{op.name}: logits must have rank one more than labels (logits [..., num_classes], "
            f"labels [...]), got labels {inf.fmt_shape(labels.shape)} and logits {inf.fmt_shape(logits.shape)}"
        )
    for a, b in zip(labels.shape, logits.shape[:-1]):
        if a is not None and b is not None and a != b:
            raise ValueError(
                f"{op.name}: labels shape {inf.fmt_shape(labels.shape)} must equal the leading dimensions "
                f"of logits shape {inf.fmt_shape(logits.shape)}"
            )
    return Spec(tuple(b if a is None else a for a, b in zip(labels.shape, logits.shape[:-1])), logits.dtype)


def _sparse_xent_infer(op, labels: Spec, logits: Spec) -> Spec:
    return _labels_infer(op, labels, logits)


def _check_labels(labels, n: int) -> None:
    """The sparse cross-entropy's check: InvalidArgumentError naming the first
    labels outside [0, n)."""
    bad = (labels < 0) | (labels >= n)
    if np.any(bad):
        raise InvalidArgumentError(
            f"sparse_softmax_cross_entropy_with_logits: labels must be in [0, {n}) for logits with "
            f"{n} classes, got {labels[bad].ravel()[:5].tolist()}"
            + (" ..." if np.count_nonzero(bad) > 5 else "")
        )


def _pick_kernel(x, labels):
    _check_labels(labels, x.shape[-1])
    return np.take_along_axis(x, labels[..., None].astype(np.intp), axis=-1)[..., 0]


def _one_hot_labels(labels, x):
    """Where each label's class is, [..., num_classes] bool, for ``x`` [...,
    num_classes] (from the run-time size where it is not static). The classes
    are counted in int64, whatever the labels' dtype: an int8 range of more
    than 128 classes would wrap, and label 10 would also match class 266."""
    from tfc.core.dtypes import int64
    from tfc.ops.creation import range as range_

    if x.shape[-1] is None:
        from tfc.ops.shapes import range_along

        classes = range_along(x, -1, int64)
    else:
        classes = range_(x.shape[-1], dtype=int64)
    return equal(expand_dims(cast(labels, int64), -1), classes)


def _pick_grad(e, g):
    # g goes to the picked element of each row, 0 elsewhere; labels get no gradient
    labels, x = e.inputs[1], e.inputs[0]
    if not e.needs_grad(0):
        return [None, None]
    onehot = _one_hot_labels(labels, x)
    return [where(onehot, expand_dims(g, -1), cast(0, x.dtype)), None]


def _lower_pick(b, outs, x, labels):
    """The label check (any label outside [0, n)? a reduction whose error path,
    loops.raise, is eager's InvalidArgumentError naming the bad labels), then
    out[i...] = x[i..., labels[i...]] with loops.load_at (in bounds: checked
    before)."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType, i64

    (out,) = outs
    n, lshape = b.shape(x)[-1], b.shape(labels)
    rank = len(lshape)

    def bad(op, v):  # op: a body's k.op, or b.scalar at function level
        v = op(arith.ExtSIOp(v, i64)) if v.type != i64 else v
        lo = op(arith.CmpiOp(v, op(arith.ConstantOp.from_int_and_width(0, 64)), "slt"))
        return op(arith.OrIOp(lo, op(arith.CmpiOp(v, op(arith.ConstantOp.from_int_and_width(n, 64)), "sge"))))

    if rank:
        (flag,) = b.temps  # planned (check_flag_temps)
        b.parallel([labels], [flag], lshape, [tuple(range(rank))], lambda k, v: [bad(k.op, v)], ["any"],
                   list(range(rank)))
        b.fail_if(b.load(flag), [x, labels])
    else:  # one label: the check is scalar code
        b.fail_if(bad(b.scalar, labels), [x, labels])

    def body(k, v):
        return [k.load_at(x, [k.index(d) for d in range(rank)] + [k.op(arith.IndexCastOp(v, IndexType()))])]

    return b.parallel([labels], [out], lshape, [tuple(range(rank))], body)


_lower_pick.temps = check_flag_temps(1)


@declare(kernel=_pick_kernel, infer=lambda op, x, labels: _labels_infer(op, labels, x, NUMERIC),
         grad=_pick_grad, lower=_lower_pick)
def pick_along_last(x, labels):
    """``x[..., labels[...]]``: the element of each row of ``x`` [..., n] at its
    label (``labels`` [...], ints in [0, n)); the sparse cross-entropy's
    indexing piece, whose label check it makes (its InvalidArgumentError)."""
    return (x, labels), {}


def _sparse_xent_expand(b, labels, logits):
    # log(sum(exp(z))) - z[label] with z = logits - max (TensorFlow's form); the
    # max and the sum keep their axis so that they are the softmax's (the
    # gradient's), which CSE can then share
    shape = b.shape(labels)
    axes = (len(b.shape(logits)) - 1,)
    picked = b.pick_along_last(logits, labels)  # first: eager checks the labels before the work
    m = b.reduce_max(logits, axis=axes, keepdims=True)
    s = b.reduce_sum(b.exp(b.subtract(logits, m)), axis=axes, keepdims=True)
    return b.subtract(b.log(b.reshape(s, shape=shape)), b.subtract(picked, b.reshape(m, shape=shape)))


def _sparse_xent_grad(e, g):
    # d loss / d logits = softmax(logits) - onehot(labels); labels get no gradient.
    labels, logits = e.inputs
    if not e.needs_grad(1):
        return [None, None]
    onehot = cast(_one_hot_labels(labels, logits), logits.dtype)
    return [None, expand_dims(g, -1) * (softmax(logits) - onehot)]


@declare(kernel=eager_kernel(_sparse_xent_expand), infer=_sparse_xent_infer, grad=_sparse_xent_grad,
         rows=every_row, expand=_sparse_xent_expand)  # one example per row (labels of rank >= 1)
def sparse_softmax_cross_entropy_with_logits(labels, logits):
    """Per-example cross-entropy of integer ``labels`` [...] against the
    unnormalised ``logits`` [..., num_classes]; labels outside [0, num_classes)
    raise InvalidArgumentError (a ValueError)."""
    return (labels, logits), {}


def _sigmoid_xent_infer(op, labels: Spec, logits: Spec) -> Spec:
    inf.check_same_dtype(op, labels, logits)
    inf.check_dtype(op, logits, FLOATS, "logits")
    if len(labels.shape) != len(logits.shape) or any(
        a is not None and b is not None and a != b for a, b in zip(labels.shape, logits.shape)
    ):
        raise ValueError(
            f"{op.name}: labels and logits must have the same shape, got labels "
            f"{inf.fmt_shape(labels.shape)} and logits {inf.fmt_shape(logits.shape)}"
        )
    return logits


def _sigmoid_xent_kernel(z, x):
    # -z*log(sigmoid(x)) - (1-z)*log(1-sigmoid(x)) = softplus(x) - x*z (TensorFlow's stable form)
    return _softplus_kernel(x) - x * z


def _sigmoid_xent_grad(e, g):
    z, x = e.inputs
    return [
        g * -x if e.needs_grad(0) else None,
        g * (sigmoid(x) - z) if e.needs_grad(1) else None,
    ]


def _sigmoid_xent_scalar(b, z, x):
    from tfc.ops import _scalar as S

    return S.sub(b, _softplus_scalar(b, x), S.mul(b, x, z))


@declare(kernel=_sigmoid_xent_kernel, infer=_sigmoid_xent_infer, grad=_sigmoid_xent_grad, promote=(0, 1),
         scalar=_sigmoid_xent_scalar)
def sigmoid_cross_entropy_with_logits(labels, logits):
    """Elementwise logistic loss of probabilities ``labels`` against ``logits``
    (same shape), stable for logits of any size."""
    return (labels, logits), {}




# -- activations: gelu, silu ------------------------------------------------------------
# Elementwise ops with scalar bodies (they fuse, whatever the shapes). Each is one
# formula written over an arithmetic (numpy arrays eagerly, IR scalars in a fused
# body: tfc/ops/math.py's _ArrayMath and _BodyMath), so compiled code computes
# eager's operations in eager's order.

_SQRT_HALF = 0.7071067811865476        # 1 / sqrt(2)
_SQRT_2_OVER_PI = 0.7978845608028654   # sqrt(2 / pi)
_INV_SQRT_2PI = 0.3989422804014327     # 1 / sqrt(2 pi)
_GELU_CUBIC_TANH = _SQRT_2_OVER_PI * 0.044715  # the cubic's coefficient inside the tanh


def _gelu_formula(m, x, approximate: bool, double: bool):
    # exact: x/2 (1 + erf(x / sqrt 2)); tanh form: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
    # written x (0.5 tanh(x (c + c' x^2)) + 0.5): two passes over the elements fewer
    if approximate:
        t = m.tanh(m.mul(x, m.add(m.mul(m.mul(x, x), m.c(_GELU_CUBIC_TANH)), m.c(_SQRT_2_OVER_PI))))
        return m.mul(x, m.add(m.mul(t, m.c(0.5)), m.c(0.5)))
    t = _erf_formula(m, m.mul(x, m.c(_SQRT_HALF)), double)
    return m.mul(m.mul(x, m.c(0.5)), m.add(t, m.c(1.0)))


def _gelu_kernel(x, approximate=False):
    return run_formula(lambda m, v, double: _gelu_formula(m, v, approximate, double), x)


def _gelu_scalar(b, x, approximate=False):
    return body_formula(lambda m, v, double: _gelu_formula(m, v, approximate, double), b, x)


def _gelu_grad(e, g):
    x = e.inputs[0]
    if e.attrs["approximate"]:
        # with h = (1 + t)/2 the forward's factor (1 - t^2 = 4 h (1 - h)), d/dx
        # h + x/2 (1 - t^2) dz/dx is h (1 + x (1 - h) 2 dz/dx): fewer passes than as written
        x2 = square(x)
        h = tanh(x * (x2 * _GELU_CUBIC_TANH + _SQRT_2_OVER_PI)) * 0.5 + 0.5
        return [g * (h * (x * (1 - h) * (x2 * (6 * _GELU_CUBIC_TANH) + 2 * _SQRT_2_OVER_PI) + 1))]
    # d/dx: Phi(x) + x phi(x), the normal's distribution and density
    cdf = (erf(x * _SQRT_HALF) + 1) * 0.5
    return [g * (cdf + x * (exp(square(x) * -0.5) * _INV_SQRT_2PI))]


def _gelu_infer(op, x: Spec, approximate=False) -> Spec:
    return inf.unary(FLOATS)(op, x)


@declare(kernel=_gelu_kernel, infer=_gelu_infer, grad=_gelu_grad, attrs={"approximate": "bool"}, quiet=True,
         scalar=_gelu_scalar)
def gelu(features, approximate=False):
    """The Gaussian error linear unit, ``x * Phi(x)``: exact (erf) by default,
    the tanh approximation with ``approximate=True`` (TensorFlow's arguments)."""
    return (features,), {"approximate": bool(approximate)}


def _silu_kernel(x):
    return np.multiply(x, _sigmoid_kernel(x))


def _silu_scalar(b, x):
    from tfc.ops import _scalar as S

    return S.mul(b, x, _sigmoid_scalar(b, x))


def _silu_grad(e, g):
    # d/dx x s(x) = s (1 + x (1 - s))
    x = e.inputs[0]
    s = sigmoid(x)
    return [g * (s * (x * (1 - s) + 1))]


@declare(kernel=_silu_kernel, infer=inf.unary(FLOATS), grad=_silu_grad, quiet=True, scalar=_silu_scalar,
         name="silu")
def silu_op(features):
    """``x * sigmoid(x)``: the op of ``silu`` with beta 1."""
    return (features,), {}


def silu(features, beta=1.0, name=None):
    """``x * sigmoid(beta * x)`` (swish), as TensorFlow's ``tf.nn.silu``; beta 1
    is one elementwise op, another beta its two ops."""
    if beta == 1:
        return silu_op(features)
    return features * sigmoid(features * beta)


# -- moments, normalization ----------------------------------------------------------------
# Composites (expand=): reductions over the axes and elementwise pieces, which fuse.


def _axes_infer(op, x: Spec, axes):
    inf.check_dtype(op, x, FLOATS)
    if not axes:
        raise ValueError(f"{op.name}: axes must name at least one axis")
    return inf.normalize_axes(op, axes, x.ndim)


def _centered(b, x, axes):
    """(mean, x - mean, mean of the squared difference), axes kept."""
    m = b.reduce_mean(x, axis=axes, keepdims=True)
    d = b.subtract(x, m)
    return m, d, b.reduce_mean(b.square(d), axis=axes, keepdims=True)


def _moments_infer(op, x: Spec, axes, keepdims):
    norm = _axes_infer(op, x, axes)
    s = Spec(inf.reduced_shape(x.shape, norm, keepdims), x.dtype)
    return [s, s]


def _moments_expand(b, x, axes, keepdims):
    m, _, v = _centered(b, x, axes)
    if not keepdims:
        shape = b.shape(x)
        shape = inf.reduced_shape(shape, {a % len(shape) for a in axes}, keepdims=False)
        m, v = b.reshape(m, shape=shape), b.reshape(v, shape=shape)
    return [m, v]


def _kept_axes(t, axes, keepdims):
    """``t``, a result over reduced ``axes``, with them back as size 1."""
    if not keepdims:
        for a in sorted(axes):
            t = expand_dims(t, a)
    return t


def _count(x, axes):
    """Elements per reduced result: an int, or a 0-d tensor of x's dtype where
    a reduced dimension is known only at run time."""
    if any(x.shape[a] is None for a in axes):
        from tfc.ops.shapes import count_along

        return cast(count_along(x, axes), x.dtype)
    return int(np.prod([x.shape[a] for a in axes]))


def _moments_grad(e, g):
    # d mean / dx = 1/n; d var / dx = 2 (x - mean) / n
    x = e.inputs[0]
    axes = inf.normalize_axes(e.op, e.attrs["axes"], x.ndim)
    keep = e.attrs["keepdims"]
    gm, gv = (_kept_axes(t, axes, keep) for t in g)
    n = _count(x, axes)
    mean = _kept_axes(e.outputs[0], axes, keep)
    return [((x - mean) * (gv * 2) + gm) / n]


@declare(kernel=eager_kernel(_moments_expand), infer=_moments_infer, grad=_moments_grad,
         attrs={"axes": "ints", "keepdims": "bool"}, expand=_moments_expand)
def moments(x, axes, shift=None, keepdims=False):
    """``(mean, variance)`` of ``x`` over ``axes`` (the variance of the
    population: the mean squared difference from the mean), as TensorFlow's
    ``tf.nn.moments`` (whose ``shift`` is unused there too)."""
    return (x,), {"axes": _axes_list("moments", axes), "keepdims": bool(keepdims)}


def _axes_list(name, axes):
    from tfc.ops.reductions import _axis_attr

    if axes is None:
        raise TypeError(f"{name}: axes must be an int or a sequence of ints, got None")
    return _axis_attr(axes, name)


def _normalize_infer(op, x: Spec, axes, epsilon):
    _axes_infer(op, x, axes)
    if not epsilon > 0:
        raise ValueError(f"{op.name}: epsilon must be > 0, got {epsilon}")
    return x


def _normalize_expand(b, x, axes, epsilon):
    # (x - mean) / sqrt(var + epsilon)
    _, d, v = _centered(b, x, axes)
    return b.multiply(d, b.rsqrt(b.add(v, b.constant(epsilon, b.dtype(x)))))


def _normalize_grad(e, g):
    # dx = r (g - mean(g) - y mean(g y)), r = 1 / sqrt(var + epsilon), y the result
    x, y = e.inputs[0], e.outputs[0]
    axes = e.attrs["axes"]
    _, var = moments(x, axes, keepdims=True)
    r = rsqrt(var + e.attrs["epsilon"])
    return [r * (g - reduce_mean(g, axis=axes, keepdims=True) - y * reduce_mean(g * y, axis=axes, keepdims=True))]


def _rows_outside(ranks, axes, **attrs) -> bool:
    return all(a % ranks[0] != 0 for a in axes)


@declare(kernel=eager_kernel(_normalize_expand), infer=_normalize_infer, grad=_normalize_grad,
         attrs={"axes": "ints", "epsilon": "float"}, rows=_rows_outside, expand=_normalize_expand)
def normalize(x, axes, epsilon):
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axes``: layer_norm's
    normalization, without its scale and offset."""
    return (x,), {"axes": _axes_list("normalize", axes), "epsilon": float(epsilon)}


def layer_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-3, name=None):
    """Layer normalization: ``x`` normalized over ``axis`` (an int or a
    sequence: the mean and variance of each example's features), then
    ``* gamma + beta`` where given (broadcast against the result, as Keras'
    ``LayerNormalization`` scale and center). ``epsilon`` is Keras' default."""
    y = normalize(x, axis, epsilon)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


def _l2_normalize_infer(op, x: Spec, axes, epsilon):
    if axes is not None:
        _axes_infer(op, x, axes)
    else:
        inf.check_dtype(op, x, FLOATS)
    return x


def _l2_normalize_expand(b, x, axes, epsilon):
    # x / sqrt(max(sum(x^2), epsilon)), as TensorFlow
    axes = tuple(range(len(b.shape(x)))) if axes is None else axes
    ss = b.reduce_sum(b.square(x), axis=axes, keepdims=True)
    return b.multiply(x, b.rsqrt(b.maximum(ss, b.constant(epsilon, b.dtype(x)))))


def _l2_normalize_grad(e, g):
    # dx = r g - x r^3 sum(g x) where sum(x^2) > epsilon (else the norm is the constant epsilon)
    x = e.inputs[0]
    axes, eps = e.attrs["axes"], e.attrs["epsilon"]
    ss = reduce_sum(square(x), axis=axes, keepdims=True)
    r = rsqrt(maximum(ss, eps))
    through = where(ss > eps, r * r * r * reduce_sum(g * x, axis=axes, keepdims=True), cast(0, x.dtype))
    return [g * r - x * through]


@declare(kernel=eager_kernel(_l2_normalize_expand), infer=_l2_normalize_infer, grad=_l2_normalize_grad,
         attrs={"axes": "ints?", "epsilon": "float"}, expand=_l2_normalize_expand)
def l2_normalize(x, axis=None, epsilon=1e-12):
    """``x / sqrt(max(sum(x**2, axis), epsilon))``: ``x`` scaled to unit L2
    norm over ``axis`` (None: all axes), as TensorFlow's ``tf.nn.l2_normalize``."""
    from tfc.ops.reductions import _axis_attr

    return (x,), {"axes": _axis_attr(axis, "l2_normalize"), "epsilon": float(epsilon)}


# -- the dense-label cross-entropy ----------------------------------------------------------


def _dense_xent_infer(op, labels: Spec, logits: Spec, axis) -> Spec:
    _sigmoid_xent_infer(op, labels, logits)  # same shapes and dtype, floats
    if logits.ndim == 0:
        raise ValueError(f"{op.name}: logits must have rank >= 1, got a scalar")
    a = inf.normalize_axis(op, axis, logits.ndim)
    shape = tuple(b if d is None else d for d, b in zip(labels.shape, logits.shape))
    return Spec(shape[:a] + shape[a + 1:], logits.dtype)


def _dense_xent_expand(b, labels, logits, axis):
    # sum(labels * (log(sum(exp(z))) - z)) with z = logits - max along the axis (TensorFlow's form)
    shape = b.shape(logits)
    axes = (axis % len(shape),)
    z = b.subtract(logits, b.reduce_max(logits, axis=axes, keepdims=True))
    lse = b.log(b.reduce_sum(b.exp(z), axis=axes, keepdims=True))
    return b.reduce_sum(b.multiply(labels, b.subtract(lse, z)), axis=axes, keepdims=False)


def _dense_xent_grad(e, g):
    # d/dlogits = softmax * sum(labels) - labels; d/dlabels = -log_softmax (TensorFlow 2 gives both)
    labels, logits = e.inputs
    axis = e.attrs["axis"]
    gk = expand_dims(g, axis)
    return [
        gk * -log_softmax(logits, axis=axis) if e.needs_grad(0) else None,
        gk * (softmax(logits, axis=axis) * reduce_sum(labels, axis=axis, keepdims=True) - labels)
        if e.needs_grad(1) else None,
    ]


@declare(kernel=eager_kernel(_dense_xent_expand), infer=_dense_xent_infer, grad=_dense_xent_grad,
         attrs={"axis": "int"}, promote=(0, 1), rows=rows_apart, expand=_dense_xent_expand)
def softmax_cross_entropy_with_logits(labels, logits, axis=-1):
    """Per-example cross-entropy of the probability distributions ``labels``
    against the unnormalised ``logits`` (same shape), along ``axis`` (the
    classes): ``-sum(labels * log_softmax(logits))``, computed without overflow."""
    return (labels, logits), {"axis": as_axis("softmax_cross_entropy_with_logits", axis)}


# -- embedding lookup -------------------------------------------------------------------


def embedding_lookup(params, ids, max_norm=None, name=None):
    """The rows of ``params`` [vocab, ...] at ``ids`` (ints in [0, vocab)): a
    gather along axis 0, whose gradient is a scatter-add into ``params``' shape.
    ``params`` may be a tensor or a list of one (TensorFlow's partitioned lists
    of several raise NotImplementedError). With ``max_norm``, rows whose L2 norm
    is larger are scaled down to it (TensorFlow's clipping of the looked-up rows)."""
    from tfc.ops.shapes import gather

    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError(
                f"embedding_lookup: params partitioned into {len(params)} tensors (only one tensor is supported)")
        params = params[0]
    from tfc.core.tensor import convert_to_tensor

    params = convert_to_tensor(params)
    rows = gather(params, ids, axis=0)
    if max_norm is None:
        return rows
    if params.ndim < 2:
        raise ValueError(f"embedding_lookup: max_norm needs params of rank >= 2 (rows to measure), got rank "
                         f"{params.ndim}")
    feature_axes = tuple(range(rows.ndim - params.ndim + 1, rows.ndim))
    norm = sqrt(reduce_sum(square(rows), axis=feature_axes, keepdims=True))
    return rows * (max_norm / maximum(norm, max_norm))


__all__ = ["softmax", "log_softmax", "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
           "pick_along_last", "gelu", "silu", "silu_op", "moments", "normalize", "layer_norm", "embedding_lookup",
           "l2_normalize", "softmax_cross_entropy_with_logits"]
