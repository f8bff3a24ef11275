"""The summary op: one TensorBoard record (scalar, histogram, image or text)
written by the default summary writer when the op runs.

``write_summary`` is a stateful registry op whose kernel crosses to the host:
eagerly it writes at once; traced into a ``tfc.function`` it is an op of the
IR (``tfc.write_summary``) that stays a ``loops.library`` call at L3, so the
compiled code writes one record each time it runs, never while tracing. The
writer is looked up when the op runs: the one made default by
``writer.as_default()`` around the call (none: the op writes nothing and
returns False, as TensorFlow's summaries do).

The writer itself (TensorBoard's event files) is ``tfc.summary``'s
(tfc/summary.py); this layer only keeps the stack of default writers and
calls ``writer.write(kind, tag, step, value, **details)`` on the top one.
"""
from __future__ import annotations

import threading

import numpy as np

from tfc.core import dtypes
from tfc.core.registry import Spec, declare

KINDS = ("scalar", "histogram", "image", "text")

_DEFAULTS: list = []  # the default writers, innermost last (process-wide, as tfc's other state)
_LOCK = threading.Lock()


def default_writer():
    """The writer summaries go to now, or None."""
    return _DEFAULTS[-1] if _DEFAULTS else None


def push_default(writer) -> None:
    with _LOCK:
        _DEFAULTS.append(writer)


def pop_default(writer) -> None:
    with _LOCK:
        if not _DEFAULTS or _DEFAULTS[-1] is not writer:
            raise RuntimeError("tfc.summary: as_default() contexts must be left in the order they were entered")
        _DEFAULTS.pop()


def _infer(op, step: Spec, *values: Spec, kind, tag, text, buckets, max_outputs, description) -> Spec:
    if kind not in KINDS:
        raise ValueError(f"summary: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not tag:
        raise ValueError("summary: the name must not be empty")
    if step.ndim != 0 or not step.dtype.is_integer:
        raise TypeError(f"summary {tag!r}: step must be an integer scalar, got {step}")
    expected = 0 if kind == "text" else 1
    if len(values) != expected:
        raise ValueError(f"summary {tag!r}: a {kind} summary takes {expected} value(s), got {len(values)}")
    if kind == "text":
        return Spec((), dtypes.bool_)
    (v,) = values
    if kind == "scalar":
        if v.ndim != 0 or not v.dtype.is_numeric:
            raise ValueError(f"summary.scalar {tag!r}: data must be a numeric scalar, got {v}")
    elif kind == "histogram":
        if not v.dtype.is_numeric:
            raise TypeError(f"summary.histogram {tag!r}: data must be numeric, got {v}")
        if buckets < 1:
            raise ValueError(f"summary.histogram {tag!r}: buckets must be >= 1, got {buckets}")
    else:
        if v.ndim != 4 or v.shape[3] not in (1, 3, 4, None):
            raise ValueError(f"summary.image {tag!r}: data must have shape [k, height, width, channels] "
                             f"with 1, 3 or 4 channels, got {v}")
        if not v.dtype.is_numeric:
            raise TypeError(f"summary.image {tag!r}: data must be numeric (floats in [0, 1], or ints in "
                            f"[0, 255]), got {v}")
        if max_outputs < 1:
            raise ValueError(f"summary.image {tag!r}: max_outputs must be >= 1, got {max_outputs}")
    return Spec((), dtypes.bool_)


def _kernel(step, *values, kind, tag, text, buckets, max_outputs, description):
    writer = default_writer()
    if writer is None:
        return np.array(False)
    value = text if kind == "text" else np.asarray(values[0])
    writer.write(kind, tag, int(step), value, buckets=buckets, max_outputs=max_outputs, description=description)
    return np.array(True)


@declare(kernel=_kernel, infer=_infer, stateful=True,
         attrs={"kind": "str", "tag": "str", "text": "str", "buckets": "int", "max_outputs": "int",
                "description": "str"})
def write_summary(step, *values, kind, tag, text="", buckets=30, max_outputs=3, description=""):
    """Write one summary record with the default writer when the op runs;
    returns a bool scalar, whether a writer took it. (The public functions are
    tfc.summary's: ``scalar``, ``histogram``, ``image``, ``text``.)"""
    return (step, *values), {"kind": str(kind), "tag": str(tag), "text": str(text), "buckets": int(buckets),
                             "max_outputs": int(max_outputs), "description": str(description)}
