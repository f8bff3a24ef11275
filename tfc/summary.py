"""``tfc.summary``: training curves, histograms, images and text for TensorBoard,
as TensorFlow 2's ``tf.summary`` (docs/summary.md).

``create_file_writer(logdir)`` makes a writer of TensorBoard event files (through
TensorBoard's own ``EventFileWriter`` and its plugins' summary metadata);
``with writer.as_default():`` makes it the writer that ``scalar``, ``histogram``,
``image`` and ``text`` write to. Each of these is the registry op
``write_summary`` (tfc/ops/summary.py): eagerly it writes at once; inside a
compiled function it is an op of the IR that writes each time the compiled code
runs. With no default writer a summary writes nothing and returns False.
"""
from __future__ import annotations

import atexit
import contextlib
import io
import os
import threading
import time

import numpy as np

from tfc.core.context import STATE
from tfc.core.tensor import Tensor, constant, convert_to_tensor
from tfc.ops.summary import default_writer, pop_default, push_default, write_summary

__all__ = ["SummaryWriter", "create_file_writer", "flush", "histogram", "image", "scalar", "text"]


def __dir__():
    return list(__all__)


_DEFAULT_BUCKETS = 30  # TensorBoard's (tensorboard.plugins.histogram.summary_v2)


class SummaryWriter:
    """Writes one TensorBoard event file in ``logdir``; made by ``create_file_writer``."""

    def __init__(self, logdir, max_queue: int = 10, flush_millis: int = 120_000, filename_suffix: str = ""):
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        try:
            logdir = os.fspath(logdir)
        except TypeError:
            raise TypeError(f"create_file_writer: logdir must be a str or an os.PathLike, got "
                            f"{type(logdir).__name__} {logdir!r}") from None
        if not isinstance(filename_suffix, str):
            raise TypeError(f"create_file_writer: filename_suffix must be a str, got {filename_suffix!r}")
        if not logdir:
            raise ValueError("create_file_writer: logdir must not be empty")
        if isinstance(max_queue, bool) or not isinstance(max_queue, (int, np.integer)) or max_queue < 1:
            raise ValueError(f"create_file_writer: max_queue must be an int >= 1, got {max_queue!r}")
        if isinstance(flush_millis, bool) or not isinstance(flush_millis, (int, float, np.number)) \
                or not flush_millis >= 0:
            raise ValueError(f"create_file_writer: flush_millis must be a number >= 0, got {flush_millis!r}")
        try:  # first, so that a path that cannot be a directory leaves no file behind
            os.makedirs(logdir, exist_ok=True)
        except OSError as e:
            raise type(e)(f"create_file_writer: cannot create the log directory {logdir!r}: "
                          f"{e.strerror or e}") from None
        if not os.access(logdir, os.W_OK | os.X_OK):
            raise PermissionError(f"create_file_writer: the log directory {logdir!r} is not writable")
        self.logdir = logdir
        self._events = EventFileWriter(logdir, max_queue_size=int(max_queue),
                                       flush_secs=max(int(flush_millis) / 1000.0, 0.001),
                                       filename_suffix=filename_suffix)
        self._lock = threading.Lock()
        self._closed = False
        _OPEN.add(self)

    @property
    def file_name(self) -> str:
        """The event file this writer writes."""
        return self._events._file_name

    @contextlib.contextmanager
    def as_default(self, step=None):
        """Within the block, summaries go to this writer (eager ones, and those of
        compiled functions called there). ``step``, when given, is the step of the
        summaries in the block that give none (an int, or a variable whose value
        when each summary runs is its step). The writer stays open afterwards."""
        if step is not None and not _is_step(step):
            raise TypeError(f"as_default: step must be an int, or an integer scalar tensor or variable, got {step!r}")
        push_default(self)
        if step is not None:
            _STEPS.append(step)
        try:
            yield self
        finally:
            if step is not None:
                _STEPS.pop()
            pop_default(self)

    def flush(self) -> None:
        """Write what is queued to the event file now."""
        if not self._closed:
            self._events.flush()

    def close(self) -> None:
        """Flush and close the event file; later summaries to it raise."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._events.close()
                _OPEN.discard(self)

    def write(self, kind: str, tag: str, step: int, value, *, buckets: int, max_outputs: int,
              description: str) -> None:
        """One record (called by the write_summary op's kernel when it runs)."""
        from tensorboard.compat.proto import event_pb2

        if self._closed:
            raise RuntimeError(f"tfc.summary: the writer of {self.logdir!r} is closed ({kind} {tag!r})")
        summary = _SUMMARIES[kind](tag, value, buckets=buckets, max_outputs=max_outputs,
                                   description=description or None)
        with self._lock:
            self._events.add_event(event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary))

    def __repr__(self) -> str:
        return f"<tfc.summary.SummaryWriter {self.logdir!r}{' closed' if self._closed else ''}>"


_STEPS: list = []  # the default steps of as_default(step=...) blocks, innermost last
_OPEN: set = set()  # open writers, kept until closed: what they queued reaches the file at exit


@atexit.register
def _close_all() -> None:  # what is queued reaches the file, as TensorFlow's writers flush at exit
    for w in list(_OPEN):
        w.close()


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None, name=None) -> SummaryWriter:
    """A writer of a new TensorBoard event file in ``logdir`` (created if needed).
    Events are queued (``max_queue``, default 10) and written at least every
    ``flush_millis`` (default 120000), on ``flush()``, ``close()`` and at exit.
    ``name`` is accepted for TensorFlow's code and unused."""
    return SummaryWriter(logdir, 10 if max_queue is None else max_queue,
                         120_000 if flush_millis is None else flush_millis, filename_suffix or "")


def flush(writer=None) -> None:
    """Flush ``writer`` (default: the default writer, if any)."""
    w = writer if writer is not None else default_writer()
    if w is not None:
        w.flush()


# -- the public summaries ---------------------------------------------------------------------


def _is_step(step) -> bool:
    """An int (not a bool), or an integer scalar tensor or variable."""
    if isinstance(step, Tensor):
        return step.dtype.is_integer and step.ndim == 0
    return isinstance(step, (int, np.integer)) and not isinstance(step, (bool, np.bool_))


def _summary(kind: str, name, step, values, **details):
    if not isinstance(name, str):
        raise TypeError(f"summary.{kind}: name must be a str, got {type(name).__name__}")
    if not isinstance(details["description"], str):
        raise TypeError(f"summary.{kind} {name!r}: description must be a str, got {details['description']!r}")
    try:
        values = tuple(convert_to_tensor(v) for v in values)
    except TypeError as e:  # (it would name write_summary's operand)
        raise TypeError(f"summary.{kind} {name!r}: data must be numbers: {e}") from None
    if step is None and _STEPS:
        step = _STEPS[-1]
    if step is None:
        if STATE.builder is None and default_writer() is None:
            return constant(False)  # nothing to write to: TensorFlow returns False without a step too
        raise ValueError(f"summary.{kind} {name!r}: step is required (an int, or an integer scalar tensor or "
                         f"variable), here or in writer.as_default(step=...)")
    return write_summary(step, *values, kind=kind, tag=name, **details)


def scalar(name, data, step=None, description=None):
    """Record the scalar ``data`` (stored as float32) at ``step``; returns a bool
    tensor, whether a default writer took it."""
    return _summary("scalar", name, step, (data,), description=description or "")


def histogram(name, data, step=None, buckets=None, description=None):
    """Record a histogram of ``data``'s values (``buckets`` equal-width buckets
    between its min and max, default 30) at ``step``."""
    return _summary("histogram", name, step, (data,), buckets=_DEFAULT_BUCKETS if buckets is None else buckets,
                    description=description or "")


def image(name, data, step=None, max_outputs=3, description=None):
    """Record up to ``max_outputs`` images of ``data``, shape ``[k, height, width,
    channels]`` (1, 3 or 4 channels): floats in [0, 1] (saturated, as
    TensorFlow converts them) or integers in [0, 255]."""
    return _summary("image", name, step, (data,), max_outputs=max_outputs, description=description or "")


def text(name, data, step=None, description=None):
    """Record the string ``data`` (Markdown in TensorBoard) at ``step``."""
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    if not isinstance(data, str):
        raise TypeError(f"summary.text {name!r}: data must be a str, got {type(data).__name__}")
    return _summary("text", name, step, (), text=data, description=description or "")


# -- the records, with TensorBoard's plugins' metadata ------------------------------------------


def _scalar_pb(tag, value, *, description, **_):
    from tensorboard.plugins.scalar.summary_v2 import scalar_pb

    return scalar_pb(tag, value, description=description)


def _text_pb(tag, value, *, description, **_):
    from tensorboard.plugins.text.summary_v2 import text_pb

    return text_pb(tag, value, description=description)


def _histogram_buckets(data, bucket_count: int) -> np.ndarray:
    """``[bucket_count, 3]`` rows of (left edge, right edge, count), as TensorBoard's
    ``histogram_pb`` computes them (its one-hot matrix replaced by a bincount)."""
    data = np.asarray(data).ravel().astype(float)
    if data.size == 0:
        return np.zeros((bucket_count, 3))
    if not np.all(np.isfinite(data)):
        raise ValueError("summary.histogram: data contains NaN or infinity")
    lo, hi = np.min(data), np.max(data)
    if hi == lo:
        counts = np.zeros(bucket_count)
        counts[-1] = data.size
        return np.stack([np.full(bucket_count, lo), np.full(bucket_count, lo), counts], axis=1)
    width = (hi - lo) / bucket_count
    index = np.minimum(np.floor((data - lo) / width).astype(int), bucket_count - 1)
    counts = np.bincount(index, minlength=bucket_count)
    edges = np.linspace(lo, hi, bucket_count + 1)
    return np.stack([edges[:-1], edges[1:], counts], axis=1).astype(float)


def _histogram_pb(tag, value, *, buckets, description, **_):
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.histogram import metadata
    from tensorboard.util import tensor_util

    tensor = tensor_util.make_tensor_proto(_histogram_buckets(value, buckets), dtype=np.float64)
    summary = summary_pb2.Summary()
    summary.value.add(tag=tag, tensor=tensor,
                      metadata=metadata.create_summary_metadata(display_name=None, description=description))
    return summary


def _image_bytes(images) -> np.ndarray:
    """``[k, h, w, c]`` values as uint8 pixels: floats saturated to [0, 1] and
    scaled as TensorFlow's ``convert_image_dtype`` (``x * 255.5``, truncated);
    integers must lie in [0, 255]."""
    a = np.asarray(images)
    if a.dtype.kind == "f":
        return (np.clip(np.nan_to_num(a.astype(np.float64), nan=0.0), 0.0, 1.0) * 255.5).astype(np.uint8)
    if a.dtype.kind == "b":
        return a.astype(np.uint8) * 255
    if a.size and (a.min() < 0 or a.max() > 255):
        raise ValueError(f"summary.image: integer pixels must lie in [0, 255], got values in "
                         f"[{a.min()}, {a.max()}]")
    return a.astype(np.uint8)


def _image_pb(tag, value, *, max_outputs, description, **_):
    from PIL import Image
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.image import metadata
    from tensorboard.util import tensor_util

    pixels = _image_bytes(value[:max_outputs])
    _, h, w, c = value.shape
    pngs = []
    for img in pixels:
        buf = io.BytesIO()
        Image.fromarray(img[..., 0] if c == 1 else img).save(buf, format="PNG")
        pngs.append(buf.getvalue())
    # TensorBoard's image tensor: width, height, then one PNG per image (as tf.summary.image writes)
    tensor = tensor_util.make_tensor_proto(np.array([str(w).encode(), str(h).encode(), *pngs], dtype=object))
    summary = summary_pb2.Summary()
    summary.value.add(tag=tag, tensor=tensor,
                      metadata=metadata.create_summary_metadata(display_name=None, description=description))
    return summary


_SUMMARIES = {"scalar": _scalar_pb, "text": _text_pb, "histogram": _histogram_pb, "image": _image_pb}
