"""``tfc.data.Dataset``: input pipelines as TensorFlow's ``tf.data`` builds them
(docs/data.md).

A dataset is a recipe: each ``iter(ds)`` starts a new pass over it (an epoch),
and every transformation returns a new dataset. Elements are tfc tensors in
tuples and dicts. Iterated in Python, pipelines run eagerly, on the host; a
``for`` over a dataset in a function being traced is a tensor loop whose
elements are traced ops (tfc/data/traced.py).
"""
from __future__ import annotations

import itertools
import queue
import threading
import time

import numpy as np

from tfc.core import dtypes
from tfc.core.context import STATE, TAPES
from tfc.core.shape import _fail
from tfc.core.tensor import Tensor, wrap
from tfc.data import _structure as st
from tfc.ops import random as random_ops
from tfc.ops.shapes import gather, stack

INFINITE_CARDINALITY = -1  # TensorFlow's tf.data.INFINITE_CARDINALITY
UNKNOWN_CARDINALITY = -2  # TensorFlow's tf.data.UNKNOWN_CARDINALITY
AUTOTUNE = -1  # prefetch(AUTOTUNE): a buffer of _AUTOTUNE_DEPTH elements

_AUTOTUNE_DEPTH = 2


def _int(what: str, n) -> int:
    """``n`` (a Python or numpy int, or an integer scalar tensor) as an int."""
    if isinstance(n, Tensor):
        n = n.numpy()
    if isinstance(n, np.ndarray) and n.ndim == 0:
        n = n[()]
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {type(n).__name__}")
    return int(n)


def _traced_int(what: str, t: Tensor) -> Tensor:
    """A symbolic integer scalar, checked as ``_int`` checks a value (a float or a
    vector would be truncated or misread when the function runs)."""
    if t.dtype not in dtypes.INTS or t.ndim != 0:
        raise _fail(TypeError, f"{what} must be an int, got a symbolic tensor {t.dtype.name}{list(t.shape)}")
    return t


def _flag(what: str, b) -> bool:
    """``b`` (a Python or numpy bool, or a bool scalar tensor) as a bool: a truthy
    string or number is a mistake, not True."""
    if isinstance(b, Tensor) and b.symbolic:
        raise _fail(TypeError, f"{what} must be True or False while the function is traced (it decides the "
                               f"pipeline), got a symbolic tensor {b.dtype.name}{list(b.shape)}")
    if isinstance(b, Tensor):
        b = b.numpy()
    if isinstance(b, np.ndarray) and b.ndim == 0:
        b = b[()]
    if not isinstance(b, (bool, np.bool_)):
        raise TypeError(f"{what} must be True or False, got {type(b).__name__} {b!r}")
    return bool(b)


def _count(what: str, n, minus_one_is_all: bool = False) -> int:
    """A count >= 0 (or -1 where it means all, or forever)."""
    n = _int(what, n)
    if n < 0 and not (minus_one_is_all and n == -1):
        raise ValueError(f"{what} must be >= 0{' (or -1: all)' if minus_one_is_all else ''}, got {n}")
    return n


class Dataset:
    """A sequence of elements; see the module docstring. Subclasses give
    ``_elements()`` (a fresh iterator over one pass) and ``cardinality()``."""

    # -- sources ----------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors) -> "Dataset":
        """One element per index of the first dimension of ``tensors`` (a tensor,
        array or list, or tuples and dicts of them, all of one first dimension)."""
        return _TensorSlices(tensors)

    @staticmethod
    def from_generator(generator, output_signature=None) -> "Dataset":
        """The elements that ``generator()`` yields (called anew for each pass).
        ``output_signature``: the structure of ``tfc.TensorSpec``s each element must
        match (shape and dtype; ``None`` dimensions free), checked on every element;
        without it the elements are converted as they come."""
        return _FromGenerator(generator, output_signature)

    @staticmethod
    def range(*args) -> "Dataset":
        """``range(stop)``, ``range(start, stop[, step])`` as int64 scalars (made as
        they are iterated)."""
        if not 1 <= len(args) <= 3:
            raise TypeError(f"Dataset.range takes 1 to 3 arguments, got {len(args)}")
        if any(isinstance(a, Tensor) and a.symbolic for a in args):  # inside a function being traced
            bounds = [_traced_int("Dataset.range", a) if isinstance(a, Tensor) and a.symbolic
                      else _int("Dataset.range", a) for a in args]
        else:
            bounds = [_int("Dataset.range", a) for a in args]
        start, stop, step = ([0] if len(bounds) == 1 else []) + bounds + ([1] if len(bounds) < 3 else [])
        if isinstance(step, int) and step == 0:
            raise ValueError("Dataset.range: step must not be 0")
        return _Range((start, stop, step))

    @staticmethod
    def zip(*datasets) -> "Dataset":
        """Elements of several datasets side by side: ``zip(a, b)`` or
        ``zip((a, b))`` yields ``(x, y)``, ``zip({"x": a, "y": b})`` a dict
        (``zip(a)``: a's elements, as TensorFlow's); ends with the shortest."""
        structure = datasets[0] if len(datasets) == 1 else tuple(datasets)
        parts = st.flatten(structure)
        if not parts:
            raise ValueError("Dataset.zip: needs at least one dataset")
        for p, d in zip(st.paths(structure), parts):
            if not isinstance(d, Dataset):
                raise TypeError(f"Dataset.zip: {p} is a {type(d).__name__}, not a Dataset")
        return _Zip(structure, parts)

    # -- transformations ----------------------------------------------------------------------
    def map(self, map_func, num_parallel_calls=None, deterministic=None) -> "Dataset":
        """``map_func`` applied to each element (a plain tuple is passed as
        positional arguments, anything else, a namedtuple too, as one): an eager
        function or a ``tfc.function`` (compiled once per element signature). ``num_parallel_calls`` is accepted
        for TensorFlow's code and ignored: elements are mapped in order, one at a
        time (``prefetch`` overlaps the pipeline with the training step)."""
        if not callable(map_func):
            raise TypeError(f"Dataset.map: map_func must be callable, got {type(map_func).__name__}")
        return _Map(self, map_func)

    def filter(self, predicate) -> "Dataset":
        """The elements for which ``predicate`` (called as ``map``'s function)
        returns True: a Python bool or a scalar bool tensor."""
        if not callable(predicate):
            raise TypeError(f"Dataset.filter: predicate must be callable, got {type(predicate).__name__}")
        return _Filter(self, predicate)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True) -> "Dataset":
        """TensorFlow's shuffle: a buffer of ``buffer_size`` elements, each output a
        uniformly chosen buffer entry replaced by the next input. A ``seed`` makes
        the order reproducible; each pass (epoch) shuffles anew unless
        ``reshuffle_each_iteration=False``."""
        n = _count("Dataset.shuffle: buffer_size", buffer_size)
        if n == 0:
            raise ValueError("Dataset.shuffle: buffer_size must be >= 1, got 0")
        if seed is not None:
            seed = _count("Dataset.shuffle: seed", seed)
        return _Shuffle(self, n, seed, _flag("Dataset.shuffle: reshuffle_each_iteration", reshuffle_each_iteration))

    def batch(self, batch_size, drop_remainder=False) -> "Dataset":
        """Consecutive elements stacked along a new first dimension; the last
        batch is smaller unless ``drop_remainder``."""
        n = _count("Dataset.batch: batch_size", batch_size)
        if n == 0:
            raise ValueError("Dataset.batch: batch_size must be >= 1, got 0")
        return _Batch(self, n, _flag("Dataset.batch: drop_remainder", drop_remainder))

    def repeat(self, count=None) -> "Dataset":
        """The dataset ``count`` times over (``None`` or -1: forever)."""
        return _Repeat(self, -1 if count is None else _count("Dataset.repeat: count", count, True))

    def take(self, count) -> "Dataset":
        """The first ``count`` elements (-1: all)."""
        return _Take(self, _count("Dataset.take: count", count, True))

    def skip(self, count) -> "Dataset":
        """All but the first ``count`` elements (-1: none)."""
        return _Skip(self, _count("Dataset.skip: count", count, True))

    def enumerate(self, start=0) -> "Dataset":
        """``(i, element)`` pairs, ``i`` an int64 scalar counting from ``start``."""
        return _Enumerate(self, _int("Dataset.enumerate: start", start))

    def prefetch(self, buffer_size) -> "Dataset":
        """Elements computed ahead, up to ``buffer_size`` of them, by a background
        thread while the consumer works (``AUTOTUNE``: 2). An error in the
        pipeline is raised in the consumer, with its original traceback; a
        consumer that stops early stops the thread."""
        n = _count("Dataset.prefetch: buffer_size", buffer_size, True)
        return _Prefetch(self, _AUTOTUNE_DEPTH if n == AUTOTUNE else n)

    # -- iteration ----------------------------------------------------------------------------
    def __iter__(self):
        if STATE.builder is not None:
            # a `for` statement in converted code does not come here (tfc/data/traced.py)
            raise _fail(
                NotImplementedError,
                "iterating a tfc.data.Dataset with Python's iter() inside a compiled function (tfc.function / "
                "tfc.compile) is not supported (list(ds), next(iter(ds)), or a `for` in code that AutoGraph does "
                "not convert): loop over it with a `for` statement in converted code, or iterate over the dataset "
                "outside and call the compiled step with each element (for x, y in ds: loss = train_step(x, y))")
        return self._elements()

    # (a compiled function's argument: its source tensors are traced inputs, its pipeline the cache key)
    _tfc_dataset = True

    def _trace_argument(self):
        from tfc.data.traced import DatasetArgument

        return DatasetArgument(self)

    def _traced_for(self, *loop):
        """A ``for`` over this dataset in converted code being traced: a tensor
        loop (autograph's for_stmt calls it, so the frontend imports no tfc.data)."""
        from tfc.data.traced import for_stmt

        return for_stmt(self, *loop)

    def _elements(self):
        raise NotImplementedError(f"{type(self).__name__} does not define _elements")

    def _index_plan(self):
        """For datasets whose elements are rows of arrays (slices, shuffled or
        not): (structure, arrays, an iterator of row indices for one pass), which
        ``batch`` gathers a whole batch at a time from; None for others."""
        return None

    def as_numpy_iterator(self):
        """The elements with numpy arrays for tensors."""
        for e in self:
            yield st.pack(e, [c.numpy() for c in st.flatten(e)])

    def cardinality(self) -> int:
        """The number of elements: an int, ``INFINITE_CARDINALITY`` (-1) or
        ``UNKNOWN_CARDINALITY`` (-2)."""
        raise NotImplementedError(f"{type(self).__name__} does not define cardinality")

    def __len__(self) -> int:
        n = self.cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self) -> bool:
        return True  # (not len(): an infinite dataset is still a dataset)

    def __repr__(self) -> str:
        n = self.cardinality()
        size = {INFINITE_CARDINALITY: "infinite", UNKNOWN_CARDINALITY: "unknown"}.get(n, str(n))
        return f"<tfc.data.{type(self).__name__.lstrip('_')}Dataset cardinality={size}>"


# -- sources ------------------------------------------------------------------------------------


class _TensorSlices(Dataset):
    def __init__(self, tensors):
        if isinstance(tensors, Dataset):
            raise TypeError("Dataset.from_tensor_slices: got a Dataset; it is already one")
        structure = st.to_tensors(tensors, "Dataset.from_tensor_slices", symbolic=STATE.builder is not None)
        names = st.paths(structure)
        self._tensors = st.flatten(structure)  # the traced inputs of a compiled function it is passed to
        for p, t in zip(names, self._tensors):
            if t.ndim == 0:
                raise ValueError(f"Dataset.from_tensor_slices: component {p} is a scalar; slicing needs at "
                                 f"least one dimension")
        sizes = {t.shape[0] for t in self._tensors}
        if len(sizes) > 1 and None not in sizes:
            listed = ", ".join(f"{p}: {t.shape[0]}" for p, t in zip(names, self._tensors))
            raise ValueError(f"Dataset.from_tensor_slices: the components must have the same first "
                             f"dimension, got {listed}")
        self._structure = structure
        self._n = self._tensors[0].shape[0]
        # made from symbolic tensors (inside a function being traced), it has no arrays
        self._arrays = None if any(t.symbolic for t in self._tensors) else \
            [np.asarray(t.numpy()) for t in self._tensors]

    def _elements(self):
        return _rows(*self._index_plan())

    def _index_plan(self):
        if self._arrays is None:
            raise RuntimeError("this tfc.data.Dataset was made from symbolic tensors of a traced function: it can "
                               "be iterated only inside that function")
        # under a tape that tracks a source tensor, elements are cut from it by recorded ops (same
        # values): a gradient reaches the source, as through a compiled loop over the dataset
        arrays = self._tensors if _taped(self._tensors) else self._arrays
        return self._structure, arrays, iter(range(self._n))

    def cardinality(self) -> int:
        return UNKNOWN_CARDINALITY if self._n is None else self._n


def _rows(structure, arrays, indices):
    """The elements at ``indices`` of sliced ``arrays`` (numpy arrays, or tensors
    a tape tracks)."""
    for i in indices:
        yield st.pack(structure, [a[i] if isinstance(a, Tensor) else wrap(np.array(a[i])) for a in arrays])


def _taped(tensors) -> bool:
    """Whether a recording tape tracks one of ``tensors`` (an iterable, read once:
    a generator is not exhausted by the first tape)."""
    if not TAPES:
        return False
    return any(id(t) in tape._tracked for t in tensors for tape in TAPES)


class _Range(Dataset):
    def __init__(self, bounds):
        self._bounds = bounds  # (start, stop, step): ints, or int64 tensors of a traced function

    def _range(self) -> range:
        if any(isinstance(b, Tensor) for b in self._bounds):
            raise RuntimeError("this tfc.data.Dataset.range has bounds of a traced function: it can be iterated "
                               "only inside that function")
        return range(*self._bounds)

    def _elements(self):
        for i in self._range():
            yield wrap(np.array(i, np.int64))

    def cardinality(self) -> int:
        if any(isinstance(b, Tensor) for b in self._bounds):
            return UNKNOWN_CARDINALITY
        return len(self._range())


class _FromGenerator(Dataset):
    def __init__(self, generator, output_signature):
        if not callable(generator):
            raise TypeError(f"Dataset.from_generator: generator must be a callable that returns an iterator, "
                            f"got {type(generator).__name__}")
        if output_signature is not None:
            from tfc.frontend.function import TensorSpec

            for p, s in zip(st.paths(output_signature), st.flatten(output_signature)):
                if not isinstance(s, TensorSpec):
                    raise TypeError(f"Dataset.from_generator: output_signature{'' if p == 'the element' else p} "
                                    f"must be a tfc.TensorSpec, got {type(s).__name__}")
        self._generator = generator
        self._signature = output_signature

    def _elements(self):
        it = iter(self._generator())
        for i, raw in enumerate(it):
            what = f"Dataset.from_generator: element {i}"
            if self._signature is None:
                yield st.to_tensors(raw, what)
            else:
                yield self._conform(raw, what)

    def _conform(self, raw, what):
        from tfc.core.tensor import constant

        sig = self._signature
        if isinstance(raw, list) and st.is_structure(sig):
            raw = tuple(raw)  # a generator may yield lists for tuples
        out = []
        for p, c, spec in zip(st.paths(sig), st.flatten_as(sig, raw, what), st.flatten(sig)):
            try:
                t = c if isinstance(c, Tensor) else constant(c, spec.dtype)
            except (TypeError, ValueError) as e:
                raise type(e)(f"{what}, component {p}: {e}") from None
            if not spec.is_compatible_with(t):
                raise TypeError(f"{what}, component {p}: got {t.dtype.name}{list(t.shape)}, output_signature "
                                f"says {spec.dtype.name}{list(spec.shape)}")
            out.append(t)
        return st.pack(sig, out)

    def cardinality(self) -> int:
        return UNKNOWN_CARDINALITY


class _Zip(Dataset):
    def __init__(self, structure, parts):
        self._structure = structure
        self._parts = parts

    def _elements(self):
        its = [iter(d) for d in self._parts]
        while True:
            items = []
            for it in its:
                x = next(it, _DONE)
                if x is _DONE:
                    return
                items.append(x)
            yield st.pack(self._structure, items)

    def cardinality(self) -> int:
        ns = [d.cardinality() for d in self._parts]
        finite = [n for n in ns if n >= 0]
        if finite:
            return min(finite) if UNKNOWN_CARDINALITY not in ns else (
                0 if min(finite) == 0 else UNKNOWN_CARDINALITY)
        return UNKNOWN_CARDINALITY if UNKNOWN_CARDINALITY in ns else INFINITE_CARDINALITY


_DONE = object()


# -- transformations -----------------------------------------------------------------------------


def _call_on_element(fn, element):
    """``fn`` called as tf.data calls a map or filter function: a plain tuple's
    components as positional arguments; anything else (a namedtuple, a dict, a
    tensor) as one argument."""
    return fn(*element) if type(element) is tuple else fn(element)


def _name(fn) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


class _Transformation(Dataset):
    """A dataset made from one ``source`` dataset; as many elements as it unless
    the subclass says otherwise."""

    def __init__(self, source):
        self._source = source

    def cardinality(self) -> int:
        return self._source.cardinality()


class _Map(_Transformation):
    def __init__(self, source, fn):
        super().__init__(source)
        self._fn = fn

    def _elements(self):
        what = f"Dataset.map: the result of {_name(self._fn)}"
        for e in self._source:
            out = _call_on_element(self._fn, e)
            if isinstance(out, list):
                out = tuple(out)  # a list result is a tuple, as in tf.data
            yield st.to_tensors(out, what)


class _Filter(_Transformation):
    def __init__(self, source, predicate):
        super().__init__(source)
        self._predicate = predicate

    def _elements(self):
        name = _name(self._predicate)
        for e in self._source:
            keep = _call_on_element(self._predicate, e)
            if isinstance(keep, Tensor) and not keep.symbolic and keep.dtype == dtypes.bool_ and keep.ndim == 0:
                keep = bool(keep.numpy())
            elif not isinstance(keep, (bool, np.bool_)):
                got = f"{keep.dtype.name}{list(keep.shape)}" if isinstance(keep, Tensor) and not keep.symbolic \
                    else type(keep).__name__
                raise TypeError(f"Dataset.filter: {name} must return a bool or a scalar bool tensor, got {got}")
            if keep:
                yield e

    def cardinality(self) -> int:
        n = self._source.cardinality()
        return 0 if n == 0 else UNKNOWN_CARDINALITY


class _Shuffle(_Transformation):
    def __init__(self, source, buffer_size, seed, reshuffle):
        super().__init__(source)
        self._size = buffer_size
        self._seed = seed
        self._reshuffle = reshuffle
        self._epoch = 0
        self._unseeded = None  # without a seed: this pass's seed (every pass's, without reshuffling)
        self._lock = threading.Lock()

    def _generator(self) -> np.random.Generator:
        """This pass's generator: from the seed and the pass number, or without a
        seed from tfc's global random stream (``tfc.random.set_seed`` makes it
        reproducible, as TensorFlow's global seed does)."""
        with self._lock:
            epoch = self._epoch
            self._epoch += 1
            if self._seed is None and (self._reshuffle or self._unseeded is None):
                self._unseeded = int(random_ops.generator().integers(0, 2**63))
        if self._seed is None:
            return np.random.default_rng(self._unseeded)
        return np.random.default_rng([self._seed, epoch if self._reshuffle else 0])

    def _elements(self):
        plan = self._index_plan()
        if plan is not None:
            yield from _rows(*plan)
        else:
            yield from self._shuffled(self._source)

    def _index_plan(self):
        plan = self._source._index_plan()
        return None if plan is None else (plan[0], plan[1], self._shuffled(plan[2]))

    def _shuffled(self, items):
        """``items`` in TensorFlow's buffered random order (one pass)."""
        rng = self._generator()
        it = iter(items)
        buf = list(itertools.islice(it, self._size))
        picks = iter(())
        for x in it:  # the buffer is full: each output is a random entry, refilled from the input
            i = next(picks, None)
            if i is None:  # (drawn in blocks: one numpy call per _DRAWS outputs)
                picks = iter(rng.integers(len(buf), size=_DRAWS).tolist())
                i = next(picks)
            yield buf[i]
            buf[i] = x
        if buf:  # the input is exhausted: drain the buffer at random
            for i in rng.integers(0, np.arange(len(buf), 0, -1)).tolist():
                buf[i], buf[-1] = buf[-1], buf[i]
                yield buf.pop()


_DRAWS = 1024


class _Batch(_Transformation):
    def __init__(self, source, size, drop_remainder):
        super().__init__(source)
        self._size = size
        self._drop = drop_remainder

    def _elements(self):
        plan = self._source._index_plan()
        if plan is not None:  # rows of arrays: one gather per component and batch
            structure, arrays, indices = plan
            while True:
                idx = np.fromiter(itertools.islice(indices, self._size), np.intp)
                if len(idx) == 0 or len(idx) < self._size and self._drop:
                    return
                yield st.pack(structure, [gather(a, idx) if isinstance(a, Tensor) else wrap(a[idx]) for a in arrays])
        batch = []
        for e in self._source:
            batch.append(e)
            if len(batch) == self._size:
                yield self._stack(batch)
                batch = []
        if batch and not self._drop:
            yield self._stack(batch)

    @staticmethod
    def _stack(batch):
        first = batch[0]
        if _taped(c for e in batch for c in st.flatten(e)):  # recorded, for the gradient (as _rows)
            return _Batch._stack_recorded(batch)
        rows = [[c.numpy() for c in st.flatten_as(first, e, "Dataset.batch: elements of one batch differ")]
                for e in batch]
        out = []
        for j, p in enumerate(st.paths(first)):
            parts = [row[j] for row in rows]
            for a in parts[1:]:
                if a.shape != parts[0].shape or a.dtype != parts[0].dtype:
                    raise ValueError(f"Dataset.batch: cannot batch component {p} of elements of different "
                                     f"shapes or dtypes: {parts[0].dtype}{list(parts[0].shape)} and "
                                     f"{a.dtype}{list(a.shape)}")
            out.append(wrap(np.stack(parts)))
        return st.pack(first, out)

    @staticmethod
    def _stack_recorded(batch):
        first = batch[0]
        flat = [st.flatten_as(first, e, "Dataset.batch: elements of one batch differ") for e in batch]
        out = []
        for j, p in enumerate(st.paths(first)):
            try:
                out.append(stack([row[j] for row in flat]))
            except ValueError as e:
                raise ValueError(f"Dataset.batch: cannot batch component {p}: {e}") from None
        return st.pack(first, out)

    def cardinality(self) -> int:
        n = self._source.cardinality()
        if n < 0:
            return n
        return n // self._size if self._drop else -(-n // self._size)


class _Repeat(_Transformation):
    def __init__(self, source, count):
        super().__init__(source)
        self._count = count

    def _elements(self):
        i = 0
        while self._count < 0 or i < self._count:
            empty = True
            for e in self._source:
                empty = False
                yield e
            if empty:
                return  # repeating nothing forever is nothing (TensorFlow ends too)
            i += 1

    def cardinality(self) -> int:
        n = self._source.cardinality()
        if self._count == 0 or n == 0:
            return 0
        if n == INFINITE_CARDINALITY or self._count < 0:
            return n if n == UNKNOWN_CARDINALITY else INFINITE_CARDINALITY
        return n if n == UNKNOWN_CARDINALITY else n * self._count


class _Take(_Transformation):
    def __init__(self, source, count):
        super().__init__(source)
        self._count = count

    def _elements(self):
        # (stops after the last one taken: the source is not asked for one more)
        yield from self._source if self._count < 0 else itertools.islice(self._source, self._count)

    def cardinality(self) -> int:
        n = self._source.cardinality()
        if self._count < 0:
            return n
        if n == UNKNOWN_CARDINALITY:
            return 0 if self._count == 0 else UNKNOWN_CARDINALITY
        return self._count if n == INFINITE_CARDINALITY else min(n, self._count)


class _Skip(_Transformation):
    def __init__(self, source, count):
        super().__init__(source)
        self._count = count

    def _elements(self):
        if self._count >= 0:
            yield from itertools.islice(self._source, self._count, None)

    def cardinality(self) -> int:
        n = self._source.cardinality()
        if self._count < 0:
            return 0 if n != INFINITE_CARDINALITY else INFINITE_CARDINALITY
        return n if n < 0 else max(n - self._count, 0)


class _Enumerate(_Transformation):
    def __init__(self, source, start):
        super().__init__(source)
        self._start = start

    def _elements(self):
        for i, e in enumerate(self._source, self._start):
            yield wrap(np.array(i, np.int64)), e


class _Prefetch(_Transformation):
    def __init__(self, source, depth):
        super().__init__(source)
        self._depth = depth

    def _elements(self):
        if self._depth == 0:
            yield from self._source
            return
        it = _PrefetchIterator(self._source, self._depth)
        try:
            while True:
                x = it.next()
                if x is _DONE:
                    return
                yield x
        finally:
            it.close()  # the consumer stopped (end, break, error, garbage): stop the thread


class _PrefetchIterator:
    """The producer thread and its bounded queue. Items are ("item", element),
    ("error", exception) or ("end", None)."""

    _POLL = 0.05  # seconds between checks of the stop flag while the queue is full

    def __init__(self, source, depth):
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, args=(source,), name="tfc.data prefetch",
                                        daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=self._POLL)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self, source):
        it = None
        try:
            it = iter(source)
            while not self._stop.is_set():
                _wait_while_tracing(self._stop)
                x = next(it, _DONE)
                if x is _DONE:
                    self._put(("end", None))
                    return
                if not self._put(("item", x)):
                    return
        except BaseException as e:  # noqa: BLE001 (re-raised in the consumer, traceback and all)
            self._put(("error", e))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()  # the pipeline's own generators end now (an inner prefetch stops its thread)

    def next(self):
        while True:
            try:
                kind, value = self._queue.get(timeout=self._POLL)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    raise RuntimeError("tfc.data prefetch: the producer thread ended without a result")
        if kind == "item":
            return value
        if kind == "end":
            return _DONE
        raise value  # the producer's exception: its traceback shows where in the pipeline it happened

    def close(self):
        self._stop.set()
        self._thread.join()


def _wait_while_tracing(stop: threading.Event) -> None:
    """The producer's ops must not land in a function the consumer is tracing:
    tfc's tracing state is process-wide, so the producer waits while a trace is
    under way (a trace entered during a step is caught by _structure.to_tensors,
    which refuses symbolic components)."""
    while STATE.builder is not None and not stop.is_set():
        time.sleep(0.001)
