"""Neural-network ops: the softmax family and the cross-entropies. One
declaration per op; every kernel is numerically stable (no exp of a large
positive number), and every gradient rule is written with tfc ops."""
from __future__ import annotations

import numpy as np

from tfc.core.dtypes import FLOATS, INTS
from tfc.core.errors import InvalidArgumentError
from tfc.core.registry import Spec, declare, every_row, rows_apart
from tfc.ops import _infer as inf
from tfc.ops.math import _softplus_kernel, _softplus_scalar, cast, equal, exp, sigmoid
from tfc.ops.reductions import reduce_sum
from tfc.ops.shapes import expand_dims

# -- softmax and log_softmax ------------------------------------------------------


def _axis_infer(op, logits: Spec, axis) -> Spec:
    inf.check_dtype(op, logits, FLOATS, "logits")
    if logits.ndim == 0:
        raise ValueError(f"{op.name}: logits must have rank >= 1, got a scalar")
    inf.normalize_axis(op, axis, logits.ndim)
    return logits


def _softmax_kernel(x, axis):
    # in C order: numpy's reduction order follows the memory layout, and each
    # row must be reduced alike in any view and in any chunk of rows (``rows``)
    x = np.ascontiguousarray(x)
    if x.size == 0:  # an empty axis has no max; nothing to compute (as in TensorFlow)
        return np.empty_like(x)
    z = x - np.max(x, axis=axis, keepdims=True)  # the largest exponent is 0
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def _softmax_grad(e, g):
    # dx = y * (g - sum(g * y)) along the axis
    y = e.outputs[0]
    return [y * (g - reduce_sum(g * y, axis=e.attrs["axis"], keepdims=True))]


@declare(kernel=_softmax_kernel, infer=_axis_infer, grad=_softmax_grad, attrs={"axis": "int"}, rows=rows_apart)
def softmax(logits, axis=-1):
    """exp(logits) / sum(exp(logits)) along ``axis``, computed without overflow."""
    return (logits,), {"axis": int(axis)}


def _log_softmax_kernel(x, axis):
    x = np.ascontiguousarray(x)  # see _softmax_kernel
    if x.size == 0:
        return np.empty_like(x)
    z = x - np.max(x, axis=axis, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


def _log_softmax_grad(e, g):
    # dx = g - softmax(x) * sum(g) along the axis; softmax = exp(output)
    return [g - exp(e.outputs[0]) * reduce_sum(g, axis=e.attrs["axis"], keepdims=True)]


@declare(kernel=_log_softmax_kernel, infer=_axis_infer, grad=_log_softmax_grad, attrs={"axis": "int"},
         rows=rows_apart)
def log_softmax(logits, axis=-1):
    """logits - log(sum(exp(logits))) along ``axis``, computed without overflow."""
    return (logits,), {"axis": int(axis)}


# -- cross-entropies ------------------------------------------------------------


def _sparse_xent_infer(op, labels: Spec, logits: Spec) -> Spec:
    inf.check_dtype(op, labels, INTS, "labels")
    inf.check_dtype(op, logits, FLOATS, "logits")
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


def _sparse_xent_kernel(labels, logits):
    n = logits.shape[-1]
    bad = (labels < 0) | (labels >= n)
    if np.any(bad):
        raise InvalidArgumentError(
            f"sparse_softmax_cross_entropy_with_logits: labels must be in [0, {n}) for logits with "
            f"{n} classes, got {labels[bad].ravel()[:5].tolist()}"
            + (" ..." if np.count_nonzero(bad) > 5 else "")
        )
    log_p = _log_softmax_kernel(logits, -1)
    return -np.take_along_axis(log_p, labels[..., None].astype(np.intp), axis=-1)[..., 0]


def _sparse_xent_grad(e, g):
    # d loss / d logits = softmax(logits) - onehot(labels); labels get no gradient.
    from tfc.ops.creation import range as range_

    labels, logits = e.inputs
    if not e.needs_grad(1):
        return [None, None]
    if logits.shape[-1] is None:  # the number of classes is known only at run time
        from tfc.ops.shapes import range_along

        classes = range_along(logits, -1, labels.dtype)
    else:
        classes = range_(logits.shape[-1], dtype=labels.dtype)
    onehot = cast(equal(expand_dims(labels, -1), classes), logits.dtype)
    return [None, expand_dims(g, -1) * (softmax(logits) - onehot)]


@declare(kernel=_sparse_xent_kernel, infer=_sparse_xent_infer, grad=_sparse_xent_grad,
         rows=every_row)  # one example per row (labels of rank >= 1)
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


__all__ = ["softmax", "log_softmax", "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits"]
