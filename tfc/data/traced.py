"""Datasets inside compiled functions (docs/data.md, "Datasets inside tfc.function").

Two parts, as TensorFlow's ``tf.function`` treats a ``tf.data.Dataset``:

- **As an argument**, a dataset is a nest of tensors: its source tensors (the
  arrays of ``from_tensor_slices``, the bounds of ``range``) are traced inputs,
  and its pipeline (stage kinds, map and filter functions by identity, batch
  sizes, counts, the element structure) is part of the trace's cache key
  (``DatasetArgument``). Another dataset of the same pipeline and source specs
  reuses the trace.
- **A ``for`` over a dataset** in converted code is a tensor loop. Each stage
  gives random access while tracing (``_Plan``): its ``length`` (a Python int,
  an int32 scalar tensor, or None for an endless dataset) and ``element(i)``
  (traced ops that compute element ``i``); stages that gather many rows at once
  (slices, range, take, skip, enumerate, zip, repeat) also give ``gather(idx)``,
  which ``batch`` uses. The loop's counter runs over ``[0, length)`` and the
  body gets ``element(counter)``: the same elements, in the same order, as
  eager iteration. A ``filter`` adds ``keep(i)``: the counter moves on to the
  next index kept (an inner while loop on the counter alone), so the body runs
  on the kept elements only. Stages that count elements (batch, take, skip,
  enumerate, zip) after a filter get random access from a loop before the
  dataset's that finds the indices kept (``_compacted``).

Stages whose order or elements depend on host state cannot be traced: a
``shuffle`` that draws a new order for each pass (numpy's generator and a
per-pass counter on the host; a seeded shuffle without reshuffling is a fixed
permutation, traced as a constant) and ``from_generator`` (Python code) raise a
clear error.
"""
from __future__ import annotations

import functools
import types
import weakref

import numpy as np

from tfc.core import dtypes
from tfc.core.tensor import Tensor, constant, convert_to_tensor
from tfc.data import _structure as st
from tfc.data import dataset as D
from tfc.ops import math, shapes

# The most elements a loop over an endless dataset (``repeat()``) runs: its
# int32 counter's range. Such a loop ends by ``break`` or ``return``.
ENDLESS_LIMIT = 2**31 - 1


def _iterate_outside(what: str) -> str:
    return (f"{what} cannot run inside a compiled function (tfc.function / tfc.compile): iterate over the "
            f"dataset outside and call the compiled step with each element (for x, y in ds: loss = train_step(x, y))")


# -- the dataset as an argument ------------------------------------------------------------------


class _Identity:
    """A map or filter function in a cache key. A Python function is keyed by
    what it computes with: its code, globals, and the objects its closure cells
    and defaults hold, each by identity (so ``map(lambda x: x * 2)`` built anew
    for each call reuses the trace); any other callable (a tfc.function, a
    partial, an object) by its own identity (it may be unhashable, or equal to
    another that computes something else)."""

    __slots__ = ("obj", "parts")

    def __init__(self, obj):
        self.obj = obj
        self.parts = _parts(obj)

    def __eq__(self, other):
        return isinstance(other, _Identity) and len(other.parts) == len(self.parts) and all(
            a is b for a, b in zip(self.parts, other.parts))

    def __hash__(self):
        return hash(tuple(id(p) for p in self.parts))

    def __repr__(self):
        code = getattr(self.obj, "__code__", None)
        where = f" at {code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}" if code is not None else ""
        return D._name(self.obj) + where


def _parts(fn) -> tuple:
    """What ``fn`` computes with (see _Identity), compared by identity."""
    if isinstance(fn, types.FunctionType):
        cells = tuple(c.cell_contents if _filled(c) else _EMPTY_CELL for c in fn.__closure__ or ())
        return (fn.__code__, fn.__globals__, *cells, *(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values())
    if isinstance(fn, types.MethodType):  # (a new bound method at each attribute access)
        return (types.MethodType, *_parts(fn.__func__), fn.__self__)
    if isinstance(fn, functools.partial):
        return (functools.partial, *_parts(fn.func), len(fn.args), *fn.args, *fn.keywords, *fn.keywords.values())
    return (fn,)


_EMPTY_CELL = object()


def _filled(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _skeleton(s):
    """The nesting of structure ``s`` without its components (hashable)."""
    if isinstance(s, dict):
        return ("dict", type(s), tuple((k, _skeleton(v)) for k, v in s.items()))
    if isinstance(s, tuple):
        return (type(s), tuple(_skeleton(v) for v in s))
    return None


def signature(ds) -> tuple:
    """The pipeline of ``ds`` as a hashable key: what a trace over it depends on
    besides its source tensors' shapes and dtypes."""
    t = type(ds)
    if t is D._TensorSlices:
        return ("from_tensor_slices", _skeleton(ds._structure))
    if t is D._Range:
        return ("range",)
    if t is D._FromGenerator:
        return ("from_generator", _Identity(ds._generator))
    if t is D._Zip:
        return ("zip", _skeleton(ds._structure), tuple(signature(p) for p in ds._parts))
    if t is D._Prefetch:
        return signature(ds._source)  # no effect on the elements
    params = {D._Map: lambda: (_Identity(ds._fn),), D._Filter: lambda: (_Identity(ds._predicate),),
              D._Shuffle: lambda: (ds._size, ds._seed, ds._reshuffle), D._Batch: lambda: (ds._size, ds._drop),
              D._Repeat: lambda: (ds._count,), D._Take: lambda: (ds._count,), D._Skip: lambda: (ds._count,),
              D._Enumerate: lambda: (ds._start,)}
    if t not in params:
        raise NotImplementedError(f"a {t.__name__} dataset as an argument of a compiled function is not supported")
    return (t.__name__.lstrip("_").lower(), *params[t](), signature(ds._source))


def sources(ds) -> list:
    """The tensors ``ds`` is made from, in a fixed order (the traced inputs)."""
    if isinstance(ds, D._TensorSlices):
        return list(ds._tensors)
    if isinstance(ds, D._Range):
        return [convert_to_tensor(b, dtypes.int64) if not isinstance(b, Tensor) else b for b in ds._bounds]
    if isinstance(ds, D._Zip):
        return [t for p in ds._parts for t in sources(p)]
    if isinstance(ds, D._Transformation):
        return sources(ds._source)
    return []  # from_generator: nothing to trace (iterating it in the function fails clearly)


def rebuild(ds, tensors):
    """``ds`` with its source tensors replaced, in ``sources`` order, by
    ``tensors`` (an iterator): the same pipeline over the traced inputs."""
    if isinstance(ds, D._TensorSlices):
        new = object.__new__(D._TensorSlices)  # (not through __init__: its inputs are symbolic, outside the trace)
        new._tensors = [next(tensors) for _ in ds._tensors]
        new._structure = st.pack(ds._structure, new._tensors)
        new._n = new._tensors[0].shape[0]
        new._arrays = None
        return new
    if isinstance(ds, D._Range):
        return D._Range(tuple(next(tensors) for _ in range(3)))
    if isinstance(ds, D._Zip):
        parts = [rebuild(p, tensors) for p in ds._parts]
        return D._Zip(st.pack(ds._structure, parts), parts)
    if isinstance(ds, D._Transformation):
        new = object.__new__(type(ds))
        new.__dict__.update(ds.__dict__)
        new._source = rebuild(ds._source, tensors)
        return new
    return ds


class DatasetArgument:
    """What ``tfc.function`` keeps of a dataset argument in a trace's cache key
    (equal pipelines are equal keys); ``rebuild`` makes the dataset the trace
    sees from the symbolic inputs that replace its ``count`` source tensors."""

    _tfc_dataset_argument = True

    def __init__(self, ds):
        # (weakly: the trace cache keeps this key, which must not keep a dataset's arrays alive;
        # the dataset lives while its call traces)
        self._dataset = weakref.ref(ds)
        self.key = signature(ds)
        self.count = len(sources(ds))

    @property
    def sources(self) -> list:
        return sources(self._dataset())

    def rebuild(self, tensors):
        return rebuild(self._dataset(), iter(tensors))

    def __eq__(self, other):
        return isinstance(other, DatasetArgument) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return f"tfc.data.Dataset {_describe(self.key)}"


def _describe(key) -> str:
    """A pipeline key as text: ``from_tensor_slices -> map(f) -> batch(32, False)``."""
    kind, *rest = key
    if kind == "zip":
        return f"zip({', '.join(_describe(k) for k in rest[1])})"
    if kind in ("from_tensor_slices", "range", "from_generator"):
        return kind
    *params, source = rest
    return f"{_describe(source)} -> {kind}({', '.join(map(repr, params))})"


# -- random access while tracing -------------------------------------------------------------------


class _Plan:
    def __init__(self, length, element, gather=None, keep=None, rows=None, endless=False):
        self.length = length      # int, int32 scalar tensor, or None: endless
        self.element = element    # i (int32 scalar tensor) -> the element's structure of tensors
        self.gather = gather      # idx (int32 1-D tensor) -> the elements stacked, or None
        # after a filter: i -> whether index i is an element (a bool scalar tensor); the
        # loop then visits the indices it keeps, and length counts all of them
        self.keep = keep
        # elements that are the rows of tensors of static length: (structure, tensors), which
        # batch reshapes into whole batches once, before the loop
        self.rows = rows
        # endless, or endless unless its input is empty at run time (repeat() of a run-time length)
        self.endless = endless or length is None


def _unfiltered(p, stage):
    """``p`` with random access to its elements, for ``stage``, which counts them:
    after a filter, the indices it keeps are found first (``_compacted``)."""
    if p.keep is None:
        return p
    if p.endless:
        raise NotImplementedError(
            f"Dataset.{stage} after a filter of an endless dataset inside a compiled function is not implemented "
            f"(the elements kept are found before the loop); take a finite part before the filter, or "
            + _iterate_outside("the pipeline").split(": ", 1)[1])
    return _compacted(p)


def _compacted(p):
    """The elements that a filter keeps, with random access: a loop before the
    dataset's own asks the predicate about every element of its input (eagerly
    and in a loop with no count after the filter, only as far as the loop goes)
    and keeps the indices it accepts, in order."""
    from tfc.ops import control_flow as cf
    from tfc.ops.reductions import reduce_sum
    from tfc.ops.sorting import argsort

    n = p.length
    static = isinstance(n, int)
    flags = cf.TensorArray(dtypes.bool_, size=n if static else 0, dynamic_size=not static, element_shape=())
    _, flags = cf.while_loop(lambda i, flags: i < n, lambda i, flags: (i + 1, flags.write(i, p.keep(i))),
                             (constant(0), flags), maximum_iterations=n if static else None)
    kept = flags.stack()
    count = reduce_sum(math.cast(kept, dtypes.int32))
    # a stable sort puts the indices kept first, in their order
    order = shapes.gather(argsort(math.cast(math.logical_not(kept), dtypes.int32)), _counting(count))
    gather = None if p.gather is None else (lambda idx: p.gather(shapes.gather(order, idx)))
    return _Plan(count, lambda j: p.element(order[j]), gather)


def _int32(x):
    if isinstance(x, Tensor) and x.dtype != dtypes.int32:
        return math.cast(x, dtypes.int32)
    return x


def _min(a, b):
    """The smaller length (None: endless)."""
    if a is None or b is None:
        return b if a is None else a
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return math.minimum(_tensor(a), _tensor(b))


def _clamp0(a):
    if isinstance(a, int):
        return max(a, 0)
    return math.maximum(a, _tensor(0))


def _tensor(x):
    return x if isinstance(x, Tensor) else constant(x, dtypes.int32)


def _within_counter(n):
    """A length (an int, or an int64 tensor) cut to the int32 loop counter's range:
    elements past it cannot be reached, and a cast to int32 would wrap."""
    if isinstance(n, int):
        return min(n, ENDLESS_LIMIT)
    return _int32(math.minimum(n, constant(ENDLESS_LIMIT, dtypes.int64)))


def _int64(i):
    return math.cast(i, dtypes.int64)


def plan(ds) -> _Plan:
    """Random access to the elements of ``ds`` while tracing."""
    build = _PLANS.get(type(ds))
    if build is None:
        raise NotImplementedError(f"a {type(ds).__name__} dataset inside a compiled function is not supported")
    return build(ds)


def _slices(ds):
    from tfc.frontend.autograph.operators import _run_time_length

    tensors = ds._tensors
    n = tensors[0].shape[0]
    if n is None:
        n = _run_time_length(tensors[0])
    _assert_same_length(tensors, n)
    if isinstance(n, int) and n == 0:
        # no element to index: the body, which never runs, is traced on zeros (as a for over an empty tensor)
        from tfc.frontend.autograph.operators import _zeros_unknown_as_0

        def zeros(rows):
            return st.pack(ds._structure, [_zeros_unknown_as_0(rows + tuple(t.shape[1:]), t.dtype) for t in tensors])

        return _Plan(0, lambda i: zeros(()), lambda idx: zeros(tuple(idx.shape[:1])))
    return _Plan(n, lambda i: st.pack(ds._structure, [t[i] for t in tensors]),
                 lambda idx: st.pack(ds._structure, [shapes.gather(t, idx) for t in tensors]),
                 rows=(ds._structure, tensors) if isinstance(n, int) else None)


def _assert_same_length(tensors, n):
    """Sources whose first dimensions are known only at run time must have ``n``
    rows, checked when the function runs (eager checks them when the dataset is
    made; row i of a longer source would be read silently, of a shorter one out
    of bounds)."""
    from tfc.frontend.autograph.operators import _run_time_length
    from tfc.ops.control_flow import Assert

    for t in tensors[1:]:
        if t.shape[0] is not None and isinstance(n, int):
            continue  # (equal: checked when the dataset was made)
        if t.shape[0] is None and any(d is None or d == 0 for d in t.shape[1:]):
            continue  # (its length cannot be computed: see _run_time_length)
        m = t.shape[0] if t.shape[0] is not None else _run_time_length(t)
        Assert(math.equal(_tensor(m), _tensor(n)),
               ["Dataset.from_tensor_slices: the components must have the same first dimension"])


def _range(ds):
    start, stop, step = ds._bounds
    if not any(isinstance(b, Tensor) for b in ds._bounds):
        n = _within_counter(len(range(start, stop, step)))
    else:  # len(range(start, stop, step)), at run time
        start, stop, step = (convert_to_tensor(b, dtypes.int64) if not isinstance(b, Tensor) else
                             math.cast(b, dtypes.int64) for b in (start, stop, step))
        from tfc.ops.control_flow import Assert

        # eager raises for a zero step; so does the compiled loop, when it runs
        Assert(math.not_equal(step, constant(0, dtypes.int64)), ["Dataset.range: step must not be 0"])
        toward = math.where(step > 0, constant(1, dtypes.int64), constant(-1, dtypes.int64))
        n = _within_counter(_clamp0((stop - start + step - toward) // step))
    return _Plan(n, lambda i: start + _int64(i) * step, lambda idx: start + _int64(idx) * step)


def _generator(ds):
    raise NotImplementedError(_iterate_outside("Dataset.from_generator (Python code that runs on the host)"))


def _zip(ds):
    plans = [_unfiltered(plan(p), "zip") for p in ds._parts]
    n = None
    for p in plans:
        n = _min(n, p.length)
    gather = None
    if all(p.gather is not None for p in plans):
        gather = lambda idx: st.pack(ds._structure, [p.gather(idx) for p in plans])  # noqa: E731
    return _Plan(n, lambda i: st.pack(ds._structure, [p.element(i) for p in plans]), gather,
                 endless=all(p.endless for p in plans))


def _as_element(out, what):
    """A map function's result as an element: tensors in tuples and dicts (a
    list is a tuple, a list inside it one stacked tensor, Python numbers become
    tensors), as eager ``map`` makes it."""
    if isinstance(out, list):
        out = tuple(out)
    flat = []
    for p, c in zip(st.paths(out), st.flatten(out)):
        if c is None:
            raise TypeError(f"{what}: component {p} is None; an element holds tensors only")
        try:
            flat.append(st.component(c))
        except (TypeError, ValueError) as e:
            raise type(e)(f"{what}: component {p}: {e}") from None
    return st.pack(out, flat)


def _map(ds):
    from tfc.frontend.autograph.operators import call

    src = plan(ds._source)
    fn = ds._fn
    what = f"Dataset.map: the result of {D._name(fn)}"

    def element(i):
        e = src.element(i)
        # converted as the function's own calls are (tf.data converts map functions too)
        return _as_element(call(fn, *e) if type(e) is tuple else call(fn, e), what)

    return _Plan(src.length, element, keep=src.keep, endless=src.endless)


def _filter(ds):
    from tfc.frontend.autograph.operators import call
    from tfc.ops.control_flow import cond

    src = plan(ds._source)
    predicate = ds._predicate
    name = D._name(predicate)

    def test(i):
        e = src.element(i)
        keep = call(predicate, *e) if type(e) is tuple else call(predicate, e)
        if isinstance(keep, (bool, np.bool_)):
            return constant(bool(keep))
        if not (isinstance(keep, Tensor) and keep.dtype == dtypes.bool_ and keep.ndim == 0):
            got = f"{keep.dtype.name}{list(keep.shape)}" if isinstance(keep, Tensor) else type(keep).__name__
            raise TypeError(f"Dataset.filter: {name} must return a bool or a scalar bool tensor, got {got}")
        return keep

    if src.keep is None:
        keep = test
    else:  # the predicate sees only the elements the filters before it keep (as eagerly)
        keep = lambda i: cond(src.keep(i), lambda: test(i), lambda: constant(False))  # noqa: E731
    return _Plan(src.length, src.element, keep=keep, endless=src.endless)


def _shuffle(ds):
    """A fixed order (a seed, ``reshuffle_each_iteration=False``) over a source of
    known length: eager's permutation, drawn while tracing, as a constant. Any
    other shuffle draws a new order on the host for each pass, which compiled
    code cannot reproduce exactly: a clear error."""
    src = _unfiltered(plan(ds._source), "shuffle")
    if ds._seed is None or ds._reshuffle or not isinstance(src.length, int):
        why = ("it has no seed" if ds._seed is None else "each pass draws a new order" if ds._reshuffle
               else "its input's length is known only at run time")
        raise NotImplementedError(
            f"Dataset.shuffle inside a compiled function is supported only with a seed, "
            f"reshuffle_each_iteration=False and an input of known length (a fixed order): {why}, and its orders "
            f"come from numpy's generator on the host, which compiled code cannot reproduce exactly; "
            + _iterate_outside("a shuffled dataset").split(": ", 1)[1])
    order = constant(np.fromiter(ds._shuffled(range(src.length)), np.int32, src.length))
    gather = None if src.gather is None else (lambda idx: src.gather(shapes.gather(order, idx)))
    return _Plan(src.length, lambda i: src.element(order[i]), gather)


def _batch(ds):
    src = _unfiltered(plan(ds._source), "batch")
    n, drop = ds._size, ds._drop
    total = src.length
    if total is None:
        length = None
    elif isinstance(total, int):
        length = total // n if drop else -(-total // n)
    else:
        length = total // n if drop else (total + (n - 1)) // n
    # every batch is full where the drop or the length says so: its first dimension is n
    full = drop or total is None or (isinstance(total, int) and total % n == 0)
    if full and src.rows is not None:
        # rows of tensors: reshaped once into [batches, n, ...], and batch j is one index (no gather)
        structure, tensors = src.rows
        batches = [shapes.reshape(t[:length * n], (length, n) + tuple(t.shape[1:])) for t in tensors]
        return _Plan(length, lambda j: st.pack(structure, [b[j] for b in batches]),
                     lambda idx: st.pack(structure, [shapes.gather(b, idx) for b in batches]), endless=src.endless)

    def rows(j):
        """Element indices of batch ``j`` (int32 1-D)."""
        first = j * n
        if full:
            return first + constant(np.arange(n, dtype=np.int32))
        return first + _counting(math.minimum(_tensor(n), _tensor(total) - first))

    if src.gather is not None:
        element = lambda j: src.gather(rows(j))  # noqa: E731
    else:
        def element(j):
            # the source has no vectorized form (a map): its n elements, traced one by one
            # (the last index repeated past the end), then the batch cut to its length
            last = _tensor(total) - 1 if total is not None else None
            items = [src.element(j * n + k if last is None else math.minimum(j * n + k, last)) for k in range(n)]
            first = items[0]
            flat = [st.flatten_as(first, e, "Dataset.batch: elements of one batch differ") for e in items]
            stacked = [shapes.stack([row[c] for row in flat]) for c in range(len(flat[0]))]
            if not full:
                keep = _counting(math.minimum(_tensor(n), _tensor(total) - j * n))
                stacked = [shapes.gather(s, keep) for s in stacked]
            return st.pack(first, stacked)

    return _Plan(length, element, endless=src.endless)


def _counting(count):
    """``[0, 1, ..., count - 1]`` (int32) for a count known at run time: one
    vectorized op (an exclusive cumulative sum of ones), not a loop."""
    from tfc.ops.creation import ones
    from tfc.ops.reductions import cumsum

    return cumsum(ones([count], dtypes.int32), exclusive=True)


def _repeat(ds):
    src = plan(ds._source)
    count, total = ds._count, src.length
    if count == 0 or (isinstance(total, int) and total == 0):
        return _Plan(0, src.element, src.gather, src.keep)
    if total is None or count == 1:
        return src
    if count < 0:
        # endless, unless the source is empty (TensorFlow's rule, and eager's)
        length = None if isinstance(total, int) else _endless_unless_empty(total)
    else:
        length = _within_counter(total * count if isinstance(total, int) else _int64(total) * count)
    element = lambda i: src.element(i % total)  # noqa: E731
    gather = None if src.gather is None else (lambda idx: src.gather(idx % total))
    keep = None if src.keep is None else (lambda i: src.keep(i % total))
    return _Plan(length, element, gather, keep, endless=count < 0 or src.endless)


def _endless_unless_empty(total):
    return math.where(total > 0, _tensor(ENDLESS_LIMIT), _tensor(0))


def _take(ds):
    src = _unfiltered(plan(ds._source), "take")
    if ds._count < 0:
        return src
    # (a count past the counter's range takes all that can be reached: an int32 length)
    return _Plan(_min(src.length, min(ds._count, ENDLESS_LIMIT)), src.element, src.gather)


def _skip(ds):
    src = _unfiltered(plan(ds._source), "skip")
    k = ds._count
    if k < 0:
        return _Plan(0, src.element, src.gather)  # all skipped (eagerly an endless input gives nothing too)
    if k == 0:
        return src
    if k >= ENDLESS_LIMIT:  # past every length the int32 counter has
        if src.endless:
            raise NotImplementedError(f"Dataset.skip({k}) of an endless dataset inside a compiled function: "
                                      f"its elements past 2**31 - 1 cannot be indexed by the loop's int32 counter")
        return _Plan(0, src.element, src.gather)
    length = None if src.length is None else _clamp0(src.length - k)
    if isinstance(length, int) and length == 0:
        return _Plan(0, src.element, src.gather)  # (the body never runs: element k may not exist)
    gather = None if src.gather is None else (lambda idx: src.gather(idx + k))
    return _Plan(length, lambda i: src.element(i + k), gather, endless=src.endless)


def _enumerate(ds):
    src = _unfiltered(plan(ds._source), "enumerate")
    start = ds._start

    def count(i):
        return _int64(i) + constant(start, dtypes.int64)

    gather = None if src.gather is None else (lambda idx: (count(idx), src.gather(idx)))
    return _Plan(src.length, lambda i: (count(i), src.element(i)), gather, endless=src.endless)


_PLANS = {D._TensorSlices: _slices, D._Range: _range, D._FromGenerator: _generator, D._Zip: _zip,
          D._Map: _map, D._Filter: _filter, D._Shuffle: _shuffle, D._Batch: _batch, D._Repeat: _repeat,
          D._Take: _take, D._Skip: _skip, D._Enumerate: _enumerate, D._Prefetch: lambda ds: plan(ds._source)}


# -- the loop ----------------------------------------------------------------------------------------


def for_stmt(ds, body, names, loop_vars, line, extra_test=None, orelse=False, composites=(), targets=()):
    """``for x in ds:`` in converted code while tracing: a tensor loop whose
    counter ``i`` runs over the dataset's length and whose body gets element ``i``
    (break, continue, return and loop state as in any tensor loop)."""
    if orelse:
        raise NotImplementedError(f"for/else over a tfc.data.Dataset (line {line}) is not supported")
    p = plan(ds)
    return _loop(p, body, names, loop_vars, line, extra_test, composites, targets)


def _make_loop():
    from tfc.frontend.autograph import operators as ag

    @ag._tensor_statement
    def loop(p, body, names, loop_vars, line, extra_test, composites, targets):
        limit = ENDLESS_LIMIT if p.length is None else p.length
        # the trip count where known while tracing and the loop cannot stop early (see _tensor_for)
        trips = limit if isinstance(limit, int) and p.length is not None and extra_test is None else None
        if p.keep is None:
            advance = lambda i: i  # noqa: E731
        else:  # a filter: the counter goes to the next index kept
            advance, trips = _advance(p.keep, limit), None
        state = {"i": advance(constant(0))}

        def test():
            go = state["i"] < limit
            if extra_test is not None:
                go = ag.and_(lambda: go, extra_test)
            return go

        def step():
            i = state["i"]
            body(p.element(i))
            state["i"] = advance(i + 1)

        ag._tensor_loop(test, step, names, loop_vars, line, [body] + ([extra_test] if extra_test else []), "for",
                        counter=state, composites=composites, trips=trips, unchecked=targets)

    return loop


def _advance(keep, limit):
    """j -> the first index from j on that ``keep`` keeps, or ``limit``."""
    from tfc.ops.control_flow import cond, while_loop


    def skipping(j):  # (keep is asked only below the limit: index j exists)
        return cond(j < limit, lambda: math.logical_not(keep(j)), lambda: constant(False))

    return lambda j: while_loop(skipping, lambda j: j + 1, j)


_LOOP = []


def _loop(*args):
    if not _LOOP:
        _LOOP.append(_make_loop())  # (operators is imported on first use: it sits above tfc.data)
    return _LOOP[0](*args)
