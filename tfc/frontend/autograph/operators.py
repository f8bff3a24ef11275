"""The runtime that converted code calls (``ag__`` in generated source).

Each operator decides at run time: a Python value (or an eager tensor, whose
value is concrete) runs as ordinary Python, so converted code behaves exactly as
the original; a tensor while tracing (``STATE.builder`` is set) builds
tfc.cond / tfc.while_loop from the branch and loop-body functions.

Branch and body functions update the converted function's variables through
``nonlocal``, i.e. through closure cells. For tensor control flow the runtime
reads and writes those cells to pass the variables explicitly as branch
outputs and loop variables (the functional form the tracer needs).
"""
from __future__ import annotations

import builtins
import dis
import functools
import numbers
import operator
import os
import sys

from tfc.core import nest
from tfc.core.context import STATE
from tfc.core.tensor import Tensor
from tfc.frontend.autograph.transformer import ConversionError

# tfc.ops.control_flow, or a stand-in set by tests
CONTROL_FLOW = None


def _cf():
    if CONTROL_FLOW is not None:
        return CONTROL_FLOW
    from tfc.ops import control_flow

    return control_flow


def is_symbolic(x) -> bool:
    """A tensor whose value is not known now (we are tracing)."""
    return STATE.builder is not None and isinstance(x, Tensor)


def _any_symbolic(values) -> bool:
    return STATE.builder is not None and any(isinstance(v, Tensor) for v in nest.flatten(values))


class Undefined:
    """The value of a variable that tensor control flow left undefined: any use
    raises the ValueError that explains why."""

    __slots__ = ("_msg",)

    def __init__(self, msg):
        object.__setattr__(self, "_msg", msg)

    def _fail(self, *_, **__):
        raise _fails_the_trace(ValueError(object.__getattribute__(self, "_msg")))

    def __getattr__(self, name):
        self._fail()

    __bool__ = __call__ = __iter__ = __len__ = __getitem__ = __index__ = __float__ = __int__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __floordiv__ = __mod__ = __pow__ = __neg__ = __abs__ = __lt__ = __le__ = __gt__ = __ge__ = _fail
    __eq__ = __ne__ = __matmul__ = __rmatmul__ = _fail
    __hash__ = None

    def __repr__(self):
        return "<undefined>"


class _ReturnPlaceholder(Undefined):
    """The return value before a return ran, in a function whose every path
    returns: tensor control flow may stand zeros of the right type in for it."""

    __slots__ = ()


UNDEFINED_RETURN = _ReturnPlaceholder("the return value was used before a return statement ran")

_EMPTY = object()  # an empty closure cell


# -- errors of tensor control flow fail the trace -----------------------------------------

def _fails_the_trace(e):
    """``e``, an error of tfc's rules for tensor control flow, recorded so that the
    trace fails even where the user's code catches it: an ``except`` would otherwise
    run while tracing, for a program that Python, on the same values, might not fail."""
    builder = STATE.builder
    if builder is not None and getattr(builder, "conversion_error", False) is None:
        builder.conversion_error = e
    return e


def _own_error(e) -> bool:
    """Whether ``e`` was raised by this module or by tfc.cond / tfc.while_loop's
    checks while tracing (not by the user's code or an op)."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return False
    code = tb.tb_frame.f_code
    return code.co_filename == __file__ or (code.co_name in ("cond", "while_loop") and code.co_filename.endswith(
        "tracing.py"))


def _tensor_statement(fn):
    """A tensor ``if`` or loop: its errors (not the user's) fail the trace."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ValueError, TypeError, NotImplementedError) as e:
            if _own_error(e):
                _fails_the_trace(e)
            raise
    return run


# -- placeholders: values tensor control flow creates -----------------------------------

def _probe(run):
    """``run()`` traced in a throw-away region (None without a real tracer)."""
    probe = getattr(STATE.builder, "probe", None)
    return None if probe is None else (probe(run),)


def _spec_of(v):
    from tfc.core.tensor import constant

    if isinstance(v, Tensor):
        return tuple(v.shape), v.dtype
    if isinstance(v, (bool, int, float)):
        t = constant(v)
        return tuple(t.shape), t.dtype
    return None


def _zeros_unknown_as_0(shape, dtype):
    """Zeros of ``shape`` with its run-time (None) dimensions as 0."""
    from tfc.ops.creation import zeros

    return zeros(tuple(0 if d is None else d for d in shape), dtype)


def _placeholder(value, name, line, kind):
    """Zeros shaped like ``value`` (a tensor, a number or a structure of them) that a
    tensor loop carries for a variable its body creates, until the first iteration
    sets it (a run-time check says the loop ran). A dimension known only at run time
    starts as 0: the loop variable's is then unknown, as the body's."""
    def leaf(v):
        spec = _spec_of(v)
        if spec is None:
            raise ValueError(
                f"{_describe(name)} is first set inside the tensor `{kind}` loop at line {line} to "
                f"{type(v).__name__} {v!r}, which a tensor loop cannot carry; define it before the loop")
        return _zeros_unknown_as_0(*spec)

    return nest.map_structure(leaf, value)


def _zeros(spec, what, line):
    from tfc.ops.creation import zeros

    shape, dtype = spec
    if any(d is None for d in shape):
        raise NotImplementedError(f"{what} (line {line}) is first set inside tensor control flow with a shape "
                                  f"known only at run time {shape}; give it a value before")
    return zeros(shape, dtype)


# -- cells: the converted function's variables ------------------------------------

def _cells(fns, names, composites=()):
    out = {}
    for fn in fns:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            if name in names:
                out[name] = cell
    for spec in composites:
        out[spec[0]] = Composite(*spec)
    return out


class Composite:
    """A dict item or attribute (``d['a']``, ``o.v``, ``self.state['h']``, ``d[k]``) that
    tensor control flow carries as state: read, written and emptied (missing
    key or attribute) like a closure cell, so the runtime treats both alike.
    ``key``: the item's key or attribute's name, or for a variable key a function
    that reads it (it must name the same item throughout the statement)."""

    __slots__ = ("name", "_base", "_key", "_item", "_fixed")

    def __init__(self, name, base, key, item):
        self.name, self._base, self._key, self._item = name, base, key, item
        self._fixed = _EMPTY

    def _key_now(self):
        if not callable(self._key):
            return self._key
        key = self._key()
        if self._fixed is _EMPTY:
            self._fixed = key
        elif key is not self._fixed and not (type(key) is type(self._fixed) and isinstance(key, (str, int, tuple))
                                             and key == self._fixed):
            raise ValueError(f"the key of {self.name} changes inside tensor control flow ({self._fixed!r}, then "
                             f"{key!r}): it would name another item on each iteration; keep the items in a "
                             f"variable of the function, or loop over a tfc.range")
        return key

    @property
    def cell_contents(self):
        try:
            base = self._base()
            key = self._key_now()
            return base[key] if self._item else getattr(base, key)
        except (KeyError, IndexError, AttributeError, NameError):
            raise ValueError(f"{self.name} is not set") from None

    @cell_contents.setter
    def cell_contents(self, value):
        base = self._base()
        key = self._key_now()
        if self._item:
            base[key] = value
        else:
            setattr(base, key, value)

    @cell_contents.deleter
    def cell_contents(self):
        try:
            base = self._base()
            key = self._key_now()
            if self._item:
                del base[key]
            else:
                delattr(base, key)
        except (KeyError, IndexError, AttributeError, NameError):
            raise ValueError(f"{self.name} is not set") from None


def _get(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


def _set(cell, value):
    if value is _EMPTY:
        try:
            del cell.cell_contents
        except ValueError:
            pass
    else:
        cell.cell_contents = value


def _describe(name):
    if name == "retval_":
        return "the return value"
    if name.endswith("]"):
        return f"item '{name}'"
    if "." in name:
        return f"attribute '{name}'"
    return f"variable {name!r}"


# -- expressions --------------------------------------------------------------------

def and_(*thunks):
    """``a and b``: lazy like Python for Python values, logical_and for tensors
    (each operand evaluated once)."""
    value = thunks[0]()
    for k in range(1, len(thunks)):
        if is_symbolic(value):
            from tfc.ops.math import logical_and

            return logical_and(value, and_(*thunks[k:]))
        if not value:
            return value
        value = thunks[k]()
    return value


def or_(*thunks):
    """``a or b``: as ``and_``, with logical_or for tensors."""
    value = thunks[0]()
    for k in range(1, len(thunks)):
        if is_symbolic(value):
            from tfc.ops.math import logical_or

            return logical_or(value, or_(*thunks[k:]))
        if value:
            return value
        value = thunks[k]()
    return value


def not_(x):
    if is_symbolic(x):
        from tfc.ops import math

        return math.logical_not(x)
    return not x


_CMP = {"Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt, "GtE": operator.ge, "Eq": operator.eq,
        "NotEq": operator.ne, "Is": operator.is_, "IsNot": operator.is_not, "In": lambda a, b: a in b,
        "NotIn": lambda a, b: a not in b}


def compare_chain(left, ops, *thunks):
    """``a < b < c``: each operand evaluated once and only if needed."""
    thunks = list(thunks)

    def step(i, left):
        right = thunks[i]()
        result = _CMP[ops[i]](left, right)
        if i + 1 == len(ops):
            return result
        return and_(lambda: result, lambda: step(i + 1, right))

    return step(0, left)


def if_exp(cond, true_thunk, false_thunk):
    if is_symbolic(cond):
        where = "a conditional expression on a tensor"
        return _cf().cond(cond, lambda: _deeper(true_thunk, where), lambda: _deeper(false_thunk, where))
    return true_thunk() if cond else false_thunk()


# -- statements ----------------------------------------------------------------------

def assert_(cond, msg_thunk, line=None):
    if is_symbolic(cond):
        if any(d != 1 for d in cond.shape):
            # eagerly bool() fails on it: not tfc.Assert's "all true", which would hide the mistake
            from tfc.frontend.tracing import _where

            raise ValueError(
                f"{_where()}: `assert` needs a condition with one element, got a tensor of {cond.spec}: "
                f"the truth value of a tensor with more elements is ambiguous (bool() fails on it eagerly); "
                f"use tfc.reduce_all(...) or tfc.reduce_any(...)")
        msg = msg_thunk() if msg_thunk is not None else f"assertion failed at line {line}"
        return _cf().Assert(cond, [msg])
    if not cond:
        if msg_thunk is None:
            raise AssertionError
        raise AssertionError(msg_thunk())
    return None


def print_(*args, **kwargs):
    if _any_symbolic(args):
        # Python's print, at run time: to its file (stdout), tensors by value, all of them
        import sys

        return _cf().print(*args, output_stream=kwargs.get("file") or sys.stdout,
                           sep=" " if kwargs.get("sep") is None else kwargs["sep"],
                           end="\n" if kwargs.get("end") is None else kwargs["end"], summarize=-1)
    return builtins.print(*args, **kwargs)


def if_stmt(cond, body, orelse, names, live, line, composites=()):
    if not is_symbolic(cond):
        if cond:
            body()
        else:
            orelse()
        return
    _tensor_if(cond, body, orelse, names, live, line, composites)


@_tensor_statement
def _tensor_if(cond, body, orelse, names, live, line, composites=()):
    cells = _cells((body, orelse), names, composites)
    live = [n for n in live if n in cells]
    init = {n: _get(c) for n, c in cells.items()}
    init = {n: _as_tensor_list(v) if isinstance(v, list) else v for n, v in init.items()}
    where = f"the tensor `if` at line {line}"
    results = {}
    fill = {}  # the return value's type, where a branch leaves it to a later return
    if "retval_" in live and isinstance(init["retval_"], _ReturnPlaceholder):
        for fn in (body, orelse):
            def run(fn=fn):
                for n, c in cells.items():
                    _set(c, _fresh(init[n]))
                _deeper(fn, where)
                return _get(cells["retval_"])
            try:
                got = _probe(run)
            finally:
                for n, c in cells.items():
                    _set(c, init[n])
            if got is None:
                break  # no tracer to ask: both branches must return
            spec = _spec_of(got[0])
            if spec:
                fill["retval_"] = spec
                break
        else:  # neither branch returns: the placeholder passes through
            live = [n for n in live if n != "retval_"]

    def branch(fn, which):
        def run():
            for n, c in cells.items():
                _set(c, _fresh(init[n]))
            _deeper(fn, where)
            out = []
            for n in live:
                v = _get(cells[n])
                if n in fill and isinstance(v, _ReturnPlaceholder):
                    v = _zeros(fill[n], _describe(n), line)
                # TensorFlow's words: "main" (true) and "else" (false) branch
                this, other = ("main", "else") if which == "true" else ("else", "main")
                if v is _EMPTY or isinstance(v, Undefined):
                    raise ValueError(
                        f"{_describe(n)} must also be initialized in the {this} branch: it must be defined in "
                        f"both branches of the tensor `if` at line {line}, since it is used after the `if`"
                        if n != "retval_" else
                        f"the tensor `if` at line {line} returns in only some of its branches: the "
                        f"{this} branch must also have a return statement")
                if v is None:
                    raise ValueError(
                        f"{_describe(n)} is None in the {which} branch of the tensor `if` at line {line}; "
                        f"a tensor conditional needs a value in both branches"
                        if n != "retval_" else
                        f"the tensor `if` at line {line} returns in only some of its branches: the "
                        f"{this} branch must also have a return statement "
                        f"(it returns None, or the function ends after it, while the {other} branch returns "
                        f"a value)")
                out.append(v)
            if which == "false":  # the true branch was traced first: name the variable whose type differs
                _check_branches(live, results["true"], out, line)
            results[which] = out
            return tuple(out)
        return run

    outs = _cf().cond(cond, branch(body, "true"), branch(orelse, "false"))
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    for n, c in cells.items():
        if n in live:
            _set(c, outs[live.index(n)])
        else:
            _set(c, Undefined(f"{_describe(n)} was set inside the tensor `if` at line {line} "
                              f"and is not available after it"))


def _fresh(value):
    """A list or dict as a branch starts: a copy, so that what one branch does to it
    (``d[f(k)] = ...``) is not seen by the other (Python runs only one)."""
    return type(value)(value) if type(value) in (list, dict) else value


def _check_branches(names, true_out, false_out, line):
    from tfc.frontend.tracing import _where

    for n, a, b in zip(names, true_out, false_out):
        sa, sb = _spec_of(a), _spec_of(b)
        if sa is None or sb is None:
            continue
        if sa[1] != sb[1]:
            raise TypeError(f"{_where()}: {_describe(n)} is {sa[1].name} in the true branch and {sb[1].name} in "
                            f"the false branch of the tensor `if` at line {line}; both must give one dtype")
        if len(sa[0]) != len(sb[0]):
            raise ValueError(f"{_where()}: {_describe(n)} has shape {sa[0]} in the true branch and {sb[0]} in "
                             f"the false branch of the tensor `if` at line {line}; both must give one rank")


def while_stmt(test, body, names, loop_vars, line, orelse=False, composites=()):
    cond = test()
    if not is_symbolic(cond):
        while cond:
            body()
            cond = test()
            if is_symbolic(cond):
                break  # e.g. a break on a tensor condition: the rest of the loop is a tensor loop
        else:
            return
        if orelse:
            raise NotImplementedError(f"while/else whose condition becomes a tensor (line {line}) is not supported")
    if orelse:
        raise NotImplementedError(f"while/else under a tensor condition (line {line}) is not supported")
    _tensor_loop(test, lambda: body(), names, loop_vars, line, [body, test], "while", composites=composites)


def for_stmt(iterable, body, names, loop_vars, line, extra_test=None, orelse=False, composites=(), targets=()):
    """``targets``: the names the loop's target binds (``i`` in ``for i in ...``)."""
    if getattr(iterable, "_tfc_dataset", False) and STATE.builder is not None:  # a tfc.data.Dataset
        return iterable._traced_for(body, names, loop_vars, line, extra_test, orelse, composites, targets)
    if isinstance(iterable, TensorRange) or is_symbolic(iterable):
        if orelse:
            raise NotImplementedError(f"for/else over a tensor (line {line}) is not supported")
        return _tensor_for(iterable, body, names, loop_vars, line, extra_test, composites, targets)
    if isinstance(iterable, builtins.range) and extra_test is not None and STATE.builder is not None:
        for item in iterable:
            body(item)
            go = extra_test()
            if is_symbolic(go):
                # a break or return on a tensor condition: the rest of the range is a tensor loop
                rest = iterable[iterable.index(item) + 1:]
                if orelse:
                    raise NotImplementedError(f"for/else that breaks on a tensor condition (line {line}) "
                                              f"is not supported")
                return _tensor_for(TensorRange(rest.start, rest.stop, rest.step), body, names, loop_vars, line,
                                   extra_test, composites, targets)
            if not go:
                return
        return
    for item in iterable:
        body(item)
        if extra_test is not None:
            go = extra_test()
            if is_symbolic(go):
                raise NotImplementedError(
                    f"the loop over a Python iterable at line {line} breaks or returns on a tensor condition; "
                    f"loop over a tensor or a tfc range instead")
            if not go:
                break


def _in_range(i, limit, delta):
    """Whether counter ``i`` is before ``limit`` going by ``delta``."""
    if isinstance(delta, Tensor):  # the direction is known only at run time
        from tfc.ops import math

        return math.logical_or(math.logical_and(delta > 0, i < limit), math.logical_and(delta < 0, i > limit))
    return (i < limit) if delta > 0 else (i > limit)


def _run_time_length(x):
    """The length of tensor ``x``'s first dimension, known only at run time, as an
    int32 tensor: the sum of ones over a 1-D slice of it (its other dimensions known
    and not 0)."""
    from tfc.core import dtypes
    from tfc.ops.creation import ones_like
    from tfc.ops.reductions import reduce_sum

    rest = tuple(x.shape[1:])
    if any(d is None or d == 0 for d in rest):
        raise NotImplementedError(
            f"a for loop over a tensor of shape {tuple(x.shape)} (a run-time first dimension, and other "
            f"dimensions unknown or 0) is not implemented; loop over tfc.range(n) instead")
    column = x[(slice(None),) + (0,) * len(rest)] if rest else x
    return reduce_sum(ones_like(column, dtype=dtypes.int32))


@_tensor_statement
def _tensor_for(iterable, body, names, loop_vars, line, extra_test, composites=(), targets=()):
    from tfc.core.tensor import constant

    if isinstance(iterable, TensorRange):
        start, limit, delta = iterable.start, iterable.limit, iterable.delta
        counter = constant(start, iterable.dtype) if not isinstance(start, Tensor) else start
        index = None
    else:
        if not iterable.shape:
            raise ValueError(f"cannot loop over a 0-d tensor (line {line})")
        start, limit, delta = 0, iterable.shape[0], 1
        if limit is None:
            limit = _run_time_length(iterable)
        counter, index = constant(0), iterable
    # the trip count when known while tracing and the loop cannot stop early (a
    # break would leave a gradient's history buffer sized for every trip unused)
    bounds = (start, limit, delta)
    static = all(isinstance(b, int) and not isinstance(b, bool) for b in bounds) and delta != 0
    trips = len(builtins.range(*bounds)) if static and extra_test is None else None
    if index is not None and static and not builtins.range(*bounds):
        # a tensor of length 0: the body, which never runs, is traced on zeros (no element to index)
        empty = _zeros_unknown_as_0(iterable.shape[1:], iterable.dtype)
        index = None
        state_element = lambda i: empty  # noqa: E731
    else:
        state_element = None

    state = {"i": counter}

    def test():
        go = _in_range(state["i"], limit, delta)
        if extra_test is not None:
            go = and_(lambda: go, extra_test)
        return go

    def step():
        i = state["i"]
        body(state_element(i) if state_element else i if index is None else index[i])
        state["i"] = i + delta

    _tensor_loop(test, step, names, loop_vars, line, [body] + ([extra_test] if extra_test else []), "for",
                 counter=state, composites=composites, trips=trips, unchecked=targets)


def _is_subshape(shape, of):
    """``shape`` has the rank of ``of`` and its dimensions wherever ``of`` knows them."""
    return len(shape) == len(of) and all(d is None or d == x for d, x in zip(of, shape))


def _check_same(name, before, after, line, invariant=None):
    """``after`` (a loop variable after an iteration) has the structure, dtypes and
    shapes of ``before``; ``invariant``: the shape ``set_loop_options`` declared for it,
    within which its shape may change."""
    if nest.structure_signature(before) != nest.structure_signature(after):
        raise ValueError(f"{_describe(name)} does not have the same nested structure after one iteration of the "
                         f"tensor loop at line {line}: {before!r} before, {after!r} after it")
    for b, a in zip(nest.flatten(before), nest.flatten(after)):
        if isinstance(b, Tensor) and isinstance(a, Tensor):
            if b.dtype != a.dtype:
                raise TypeError(f"{_describe(name)} has dtype {b.dtype.name} before the loop, but dtype "
                                f"{a.dtype.name} after one iteration of the tensor loop at line {line}")
            if invariant is not None:
                # TensorFlow's rule: each shape is a subshape of the invariant (a known
                # dimension of the invariant is never unknown or another one)
                for shape, when in ((b.shape, "before the loop"), (a.shape, "after one iteration")):
                    if not _is_subshape(shape, invariant):
                        raise ValueError(f"{_describe(name)} has shape {tuple(shape)} {when}, which does not conform "
                                         f"to the shape invariant {tuple(invariant)} (the tensor loop at line {line})")
                continue
            # TensorFlow's rule: the shape after an iteration is a subshape of the one
            # before (an unknown dimension may become known; a known one may neither
            # become another nor unknown)
            if not _is_subshape(a.shape, b.shape):
                shape = tuple(None if x != y else x for x, y in zip(b.shape, a.shape)) \
                    if len(b.shape) == len(a.shape) else "(...)"
                raise ValueError(
                    f"{_describe(name)} has shape {tuple(b.shape)} before the loop, but shape {tuple(a.shape)} "
                    f"after one iteration: it changes shape in the tensor loop at line {line}; a loop variable keeps "
                    f"its shape unless it is declared varying: call "
                    f"tfc.autograph.set_loop_options(shape_invariants=[({name}, {shape})]) "
                    f"as the loop body's first statement")
        elif isinstance(b, Tensor) != isinstance(a, Tensor):
            raise TypeError(f"{_describe(name)} changes type in the tensor loop at line {line}: "
                            f"{type(b).__name__} before, {type(a).__name__} after an iteration")


_LOOP_OPTIONS: list = []  # per tensor loop body being traced: what its set_loop_options call gave


def set_loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None, shape_invariants=None):
    """TensorFlow's loop options, called in a loop body (as its first statement):
    ``shape_invariants=[(variable, shape), ...]`` declares that the shape of a loop
    variable may change from one iteration to the next within ``shape`` (a tuple of
    ints and None). In a Python loop, and for the hints parallel_iterations and
    swap_memory (which do not change results), it does nothing."""
    if maximum_iterations is not None:
        raise NotImplementedError("set_loop_options(maximum_iterations=...) is not implemented; stop the loop with "
                                  "its condition or a break")
    invariants = []
    for pair in shape_invariants or ():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"set_loop_options: shape_invariants holds (variable, shape) pairs, got {pair!r}")
        value, shape = pair
        shape = getattr(shape, "shape", shape)  # a TensorSpec
        if shape is not None and (not isinstance(shape, (tuple, list)) or not all(
                d is None or isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
            raise TypeError(f"set_loop_options: a shape invariant is a tuple of ints and None (or None: any "
                            f"shape), got {shape!r}")
        invariants.append((value, None if shape is None else tuple(shape)))
    if _LOOP_OPTIONS:
        _LOOP_OPTIONS[-1]["shape_invariants"] = invariants


def _shape_invariants(options, names, vals, line):
    """{loop variable: declared shape} from a body's set_loop_options."""
    out = {}
    for value, shape in options.get("shape_invariants", ()):
        k = next((k for k, v in enumerate(vals[:len(names)]) if v is value), None)
        if k is None:
            raise ValueError(f"set_loop_options in the tensor loop at line {line}: a shape invariant names a value "
                             f"that is no loop variable as the iteration starts (call it as the loop body's first "
                             f"statement, with the variable itself)")
        if shape is None:  # any shape; tfc's loop variables keep their rank
            shape = (None,) * len(getattr(value, "shape", ()))
        out[names[k]] = shape
    return out


_LOOP_DEPTH = [0]


def _deeper(fn, where):
    """Run ``fn`` one level deeper in tensor control flow (what _LOOP_DEPTH counts):
    a branch or loop body of ``where`` (the tensor `if` or loop, for errors)."""
    _LOOP_DEPTH[0] += 1
    _OUTER_LISTS.append(_lists_of_the_caller())
    try:
        return fn()
    except Exception as e:
        at = _raise_statement(e)
        if at is None:
            raise
        # Raised while tracing, it would fail (or, caught, change) the whole function
        # whatever the condition's value: never a silently different program.
        err = ConversionError(
            f"{at}: a `raise` statement ran under a tensor condition ({where}); tfc.function does not "
            f"support this: the exception would be raised while tracing, whatever the tensor's value "
            f"({type(e).__name__}: {e}). Check the value when the function runs with `assert cond, message` "
            f"or tfc.Assert(cond, [message]) instead")
        raise _fails_the_trace(err) from e  # the trace fails even if the user's code catches it
    finally:
        _LOOP_DEPTH[0] -= 1
        _OUTER_LISTS.pop()


# For each tensor `if` or loop being traced, the Python lists that existed when it
# began (id -> list, held so that no new list takes an id): a Python pop of one of
# them there runs once while tracing, whatever the trips or the branch taken.
_OUTER_LISTS: list = []
_TFC_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_SCAN_LEN = 10_000  # longer containers are not searched for lists inside them
_NO_LISTS_INSIDE = frozenset({int, float, bool, complex, str, bytes})


def _lists_of_the_caller() -> dict:
    """The lists the user's function that runs the tensor `if` or loop can reach:
    its variables (the loop's closure included), their items and attributes two
    levels down, and its module's lists."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_TFC_DIR):
        f = f.f_back
    found = {}
    if f is None:
        return found

    def add(v, depth):
        if isinstance(v, list):
            found[id(v)] = v
        if depth == 0 or callable(v) or isinstance(v, (Tensor, numbers.Number, str, bytes, type(os))):
            return
        if isinstance(v, (list, tuple)):
            items = v
        elif isinstance(v, dict):
            items = v.values()
        else:  # an object's attributes (read without running its __getattr__)
            try:
                items = object.__getattribute__(v, "__dict__").values()
            except Exception:
                return
        # (a row of numbers is skipped in one C-level pass: no list in it)
        if len(items) <= _SCAN_LEN and not set(map(type, items)) <= _NO_LISTS_INSIDE:
            for x in list(items):
                add(x, depth - 1)

    for v in f.f_locals.values():
        add(v, 2)
    for v in f.f_globals.values():
        if isinstance(v, list):
            found[id(v)] = v
    return found


_RAISE = dis.opmap["RAISE_VARARGS"]


def _raise_statement(e):
    """``file:line`` of the ``raise`` statement of converted (user) code that
    raised ``e``, or None where ``e`` came from anything else (an op, a Python error)."""
    from tfc.frontend.autograph.api import _CONVERTED_CODES

    tb = e.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    if code not in _CONVERTED_CODES or code.co_code[tb.tb_lasti] != _RAISE:
        return None
    return f"{code.co_filename}:{tb.tb_lineno}"


def _to_loop_var(v):
    from tfc.core.tensor import constant

    if isinstance(v, list):
        return _as_tensor_list(v)
    if isinstance(v, (bool, int, float)) and not isinstance(v, Tensor):
        return constant(v)
    return v


@_tensor_statement
def _tensor_loop(test, step, names, loop_vars, line, fns, kind, counter=None, composites=(), trips=None,
                 unchecked=()):
    """``trips``: the most iterations the loop can run, where known while
    tracing (a range of Python ints, a tensor of static length): the loop's
    ``maximum_iterations``, so its gradient stores each iteration's state in a
    fixed-size buffer (and can itself be differentiated). ``unchecked``: variables
    first set by the loop that keep their zeros when it does not run (a for loop's
    target, as in TensorFlow) instead of failing the run-time check."""
    cells = _cells(fns, names, composites)
    loop_vars = [n for n in loop_vars if n in cells]
    undefined = (f"is first set inside the tensor `{kind}` loop at line {line} and read before it is set: "
                 f"it must be defined before the loop")
    init, pending = [], []
    for n in loop_vars:
        v = _get(cells[n])
        if v is _EMPTY or isinstance(v, Undefined):
            pending.append(n)
            init.append(v)
        elif n == "retval_" and v is None:
            raise ValueError(f"the tensor `{kind}` loop at line {line} returns from the function, but the "
                             f"function does not return on every path; end it with a return statement")
        else:
            init.append(_to_loop_var(v))
    others = [n for n in cells if n not in loop_vars]
    others_init = {n: _get(cells[n]) for n in others}
    has_counter = counter is not None

    def load(vals):
        for n, v in zip(loop_vars, vals):
            _set(cells[n], v)
        if has_counter:
            counter["i"] = vals[-1]

    def run_body(vals):
        """One iteration of the loop body on the loop variables ``vals``; the
        options its ``set_loop_options`` call gave."""
        load(vals)
        for n in others:
            _set(cells[n], others_init[n])
        _LOOP_OPTIONS.append({})
        try:
            _deeper(step, f"the tensor `{kind}` loop at line {line}")
        finally:
            options = _LOOP_OPTIONS.pop()
        return options

    flags = []  # variables first set inside the loop: (name, "was it set" loop variable)
    created = {}
    if pending:
        # One throw-away iteration tells the types of the variables the body creates; they
        # start as zeros, and a flag says whether the loop set them (checked after it).
        start = counter["i"] if has_counter else None

        def run():
            run_body(tuple(init) + ((start,) if has_counter else ()))
            return [_get(cells[n]) for n in pending]

        try:
            got = _probe(run)
        except NameError:
            raise ValueError(f"{_describe(pending[0])} {undefined}") from None
        finally:
            load(tuple(init) + ((start,) if has_counter else ()))
        if got is None:
            raise ValueError(f"{_describe(pending[0])} {undefined}")
        for n, v in zip(pending, got[0]):
            if v is _EMPTY or isinstance(v, Undefined):  # the loop (as traced) never sets it
                k = loop_vars.index(n)
                del loop_vars[k], init[k]
                continue
            init[loop_vars.index(n)] = zeros = _placeholder(v, n, line, kind)
            # its shapes as the body gives them (a run-time dimension unknown, not the 0 it starts as)
            created[n] = nest.map_structure(lambda got, z: got if isinstance(got, Tensor) else z, v, zeros)
            if n != "retval_" and n not in unchecked:
                flags.append(n)
    flag_init = tuple(_false() for _ in flags)
    init_all = tuple(init) + flag_init + ((counter["i"],) if has_counter else ())

    def cond_fn(*vals):
        load(vals)
        return test()

    def body_fn(*vals):
        varying = _shape_invariants(run_body(vals), loop_vars, vals, line)
        out = []
        for n, before in zip(loop_vars, vals):
            after = _get(cells[n])
            if after is _EMPTY or isinstance(after, Undefined):
                raise ValueError(f"{_describe(n)} is undefined after an iteration of the tensor loop at line {line}")
            if isinstance(before, Tensor) and isinstance(after, (bool, int, float)):
                from tfc.core.tensor import constant

                after = constant(after, before.dtype)
            _check_same(n, created.get(n, before), after, line, varying.get(n))
            out.append(after)
        out += [_false(True) for _ in flags]
        if has_counter:
            out.append(counter["i"])
        return tuple(out)

    outs = _cf().while_loop(cond_fn, body_fn, init_all, maximum_iterations=trips)
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    load(outs)
    for k, n in enumerate(flags):
        _cf().Assert(outs[len(loop_vars) + k], [
            f"the tensor `{kind}` loop at line {line} must iterate at least once to initialize {_describe(n)}: "
            f"it is used after the loop, which did not run, and is set only inside it"])
    for n in others:
        _set(cells[n], Undefined(f"{_describe(n)} was set inside the tensor loop at line {line} "
                                 f"and is not available after it"))


# -- lists -------------------------------------------------------------------------

_ELEMENT_TYPES: dict = {}  # id(list) -> (list, dtype); the list is kept alive with its entry


def set_element_type(lst, dtype, shape=None):
    """Declares the dtype of the elements a list will hold, so a list appended to
    in a tensor loop can become a tensor list (TensorArray) and be stacked."""
    from tfc.core import dtypes

    if not isinstance(lst, list):
        raise TypeError(f"set_element_type expects a Python list, got {type(lst).__name__}")
    _ELEMENT_TYPES[id(lst)] = (lst, dtypes.as_dtype(dtype), None if shape is None else tuple(shape))


def _is_tensor_array(x) -> bool:
    return isinstance(x, _cf().TensorArray)


def _as_tensor_list(lst):
    """A list with a declared element type as a TensorArray (the form tensor
    control flow can carry); other lists as they are (appends are checked by
    list_append)."""
    _, dtype, shape = _ELEMENT_TYPES.get(id(lst), (None, None, None))
    if dtype is None:
        return lst
    if shape is None and lst:  # the elements' shape, so that a loop can read them at a tensor index
        from tfc.core.tensor import convert_to_tensor

        shape = tuple(convert_to_tensor(lst[0], dtype).shape)
    ta = _cf().TensorArray(dtype, size=0, dynamic_size=True, element_shape=shape)
    for i, x in enumerate(lst):
        ta = ta.write(i, x)
    return ta


def list_append(lst, x, name, line):
    if _is_tensor_array(lst):
        return lst.write(lst.size(), x)
    if isinstance(lst, list):
        if _LOOP_DEPTH[0] and STATE.builder is not None and id(lst) not in _ELEMENT_TYPES:
            raise ValueError(
                f"list {name!r} is appended to inside a tensor loop or `if` at line {line}: cannot stack a list "
                f"without knowing its element type; use set_element_type to annotate it: declare its element type "
                f"first with tfc.autograph.set_element_type({name}, dtype)")
        lst.append(x)
        return lst
    lst.append(x)  # any other object with an append method
    return lst


_POPPED: dict = {}  # id(list) -> (list, value): what list_pop took, until popped() reads it


def list_pop(lst, name, line):
    """``lst.pop()`` in converted code, first part: the list without its last
    element (a tensor list: a new one; a Python list: the same, popped). The
    element is ``popped(lst)``, which the statement reads next."""
    if _is_tensor_array(lst):
        lst, value = _tensor_list_pop(lst, name, line)
    else:
        if isinstance(lst, list) and _LOOP_DEPTH[0] and STATE.builder is not None:
            # traced once, it would pop once whatever the trips or the branch taken
            raise NotImplementedError(
                f"list {name!r} is popped inside a tensor loop or `if` at line {line}, but it is a Python list "
                f"there: declare its element type first with tfc.autograph.set_element_type({name}, dtype), "
                f"so that it is a tensor list")
        value = lst.pop()
    _POPPED[id(lst)] = (lst, value)
    return lst


_POP_FORMS = ("`lst.pop()` with no argument, once in a statement that uses the list nowhere else and not under "
              "a condition (`and`, `or`, `x if c else y`) or in a lambda or comprehension")


def list_pop_call(lst, name, line, *args, **kwargs):
    """``lst.pop(...)`` of a list the function appends to, in a form the conversion
    does not rewrite to ``list_pop``: Python's pop, where it is one."""
    if _is_tensor_array(lst) or (isinstance(lst, list) and id(lst) in _ELEMENT_TYPES and _LOOP_DEPTH[0]
                                 and STATE.builder is not None):
        # traced once, a Python pop would pop once whatever the loop's trips or the branch taken
        raise NotImplementedError(
            f"pop() of list {name!r} (a list with a declared element type) at line {line} inside a tensor loop "
            f"or `if` is supported only as {_POP_FORMS}")
    return lst.pop(*args, **kwargs)


def popped(lst):
    """The element that ``list_pop`` just took from ``lst``."""
    return _POPPED.pop(id(lst))[1]


def _tensor_list_pop(ta, name, line):
    """TensorFlow's pop_back of a tensor list: (the list of its first size - 1
    elements, its last element); popping an empty list fails when it runs."""
    from tfc.core import dtypes
    from tfc.ops import math, shapes
    from tfc.ops.creation import zeros

    buf = ta._as_buffer()
    if buf is None:  # no element and no element shape: it is empty
        raise IndexError(f"pop from empty list ({name!r}, line {line})")
    size = buf.size()
    _cf().Assert(math.greater(size, 0), [f"pop from empty list ({name!r}, line {line})"])
    last = size - 1
    value = buf.read(last)
    # rows 0 .. size - 2 (a growing array's buffer has size rows)
    rows = shapes.range_along(zeros([last], dtypes.int8), 0, dtypes.int32)
    return buf._with_buffer(shapes.gather(buf._buffer, rows, axis=0), last), value


def get_item(target, key):
    """``target[key]`` in converted code, for a list the function appends to: a
    tensor list's element, or Python's item."""
    if _is_tensor_array(target):
        return target.read(key)
    return target[key]


def set_item(target, key, value):
    """``target[key] = value`` in converted code, for a list the function appends to;
    the list (a tensor list is a value: a new one)."""
    if _is_tensor_array(target):
        return target.write(key, value)
    target[key] = value
    return target


def stack(lst, dtype=None, strict=True):
    """The elements of a list (or tensor list) stacked along a new first axis.
    ``strict=False``: anything else (a tensor) is returned as it is; with
    ``strict``, only a tensor is, and another object is a TypeError."""
    from tfc.core.tensor import constant

    if _is_tensor_array(lst):
        return lst.stack()
    if isinstance(lst, Tensor) or not strict and not isinstance(lst, (list, tuple)):
        return lst
    if not isinstance(lst, (list, tuple)):
        raise TypeError(f"stack expects a list, a tensor list or a tensor, got {type(lst).__name__}")
    _, declared, shape = _ELEMENT_TYPES.get(id(lst), (None, None, None))
    dtype = dtype or declared
    if not lst:
        if dtype is None:
            raise ValueError("stack of an empty list needs an element type (set_element_type)")
        import numpy as np

        # as the tensor list's stack: its declared element shape (a scalar's if none)
        return constant(np.zeros((0,) + (shape or ()), dtype.as_numpy_dtype))
    from tfc.ops.shapes import stack

    return stack([constant(x, dtype) if not isinstance(x, Tensor) else x for x in lst])


# -- ranges and builtins ---------------------------------------------------------------

class TensorRange:
    """``range(n)`` with a tensor bound while tracing: a loop over it is a tensor loop.
    ``dtype``: the loop variable's (None: that of ``start``)."""

    def __init__(self, *args, dtype=None):
        if len(args) == 1:
            self.start, self.limit, self.delta = 0, args[0], 1
        else:
            self.start, self.limit = args[0], args[1]
            self.delta = args[2] if len(args) > 2 else 1
        self.dtype = dtype


def _range(*args):
    if any(is_symbolic(a) for a in args):
        return TensorRange(*args)
    return builtins.range(*args)


def _tfc_range(start, limit=None, delta=1, dtype=None):
    """``tfc.range`` with a tensor bound, as a for loop's iterable: a tensor loop
    whose variable takes the values and dtype eager ``tfc.range`` gives (int32, or
    float32 where a bound is a float)."""
    from tfc.core import dtypes
    from tfc.frontend.tracing import _where
    from tfc.ops import math, shapes

    if limit is None:
        start, limit = 0, start
    bounds = (start, limit, delta)
    for b, what in zip(bounds, ("start", "limit", "delta")):
        if isinstance(b, Tensor) and (b.dtype == dtypes.bool_ or tuple(b.shape) not in ((), (1,))):
            raise TypeError(f"{_where()}: range: {what} must be a number (a scalar tensor), got {b.spec}")
    if not isinstance(delta, Tensor) and delta == 0:
        raise ValueError(f"{_where()}: range: delta must not be zero")
    if dtype is None:
        floating = any(isinstance(b, Tensor) and b.dtype.is_floating or not isinstance(b, Tensor) and isinstance(
            b, numbers.Real) and not isinstance(b, numbers.Integral) for b in bounds)
        dtype = dtypes.float32 if floating else dtypes.int32
    dtype = dtypes.as_dtype(dtype)
    if dtype.is_floating:
        # eager's np.arange counts the steps in float64 and makes each value from
        # the start; adding delta in float32 would give other values and trip counts
        raise NotImplementedError(
            f"{_where()}: a for loop over tfc.range with float values and a tensor bound is not supported "
            f"in tfc.function; loop over an integer range and compute the float value from it")
    bounds = [math.cast(shapes.reshape(b, ()), dtype) if isinstance(b, Tensor) else b for b in bounds]
    if isinstance(bounds[2], Tensor):  # eager raises for a zero step; so does the compiled loop, when it runs
        _cf().Assert(math.not_equal(bounds[2], 0), ["range: delta must not be zero"])
    return TensorRange(*bounds, dtype=dtype)


def _range_tensor(*args, **kwargs):
    """``tfc.range`` with a tensor bound while tracing, as a value: a 1-D tensor whose
    length is known only at run time (``None``), made by a tensor loop; the values
    and dtype of eager ``tfc.range``."""
    from tfc.core.tensor import constant

    r = _tfc_range(*args, **kwargs)
    cf = _cf()
    items = cf.TensorArray(r.dtype, size=0, dynamic_size=True, element_shape=())
    start = r.start if isinstance(r.start, Tensor) else constant(r.start, r.dtype)

    def body(i, k, items):
        return i + r.delta, k + 1, items.write(k, i)

    _, _, items = cf.while_loop(lambda i, k, items: _in_range(i, r.limit, r.delta), body,
                                (start, constant(0), items))
    return items.stack()


def iter_call(f, *args, **kwargs):
    """A call that makes a for loop's iterable (``for i in f(...)``): ``tfc.range``
    with a tensor bound while tracing loops as ``range`` does (its length is known
    only at run time); any other call is ``call``."""
    from tfc.ops.creation import range as tfc_range

    if f is tfc_range and _any_symbolic((args, kwargs)):
        return _tfc_range(*args, **kwargs)
    return call(f, *args, **kwargs)


def _int(x, *args):
    if is_symbolic(x) and not args:
        from tfc.ops import math

        return math.cast(x, "int32")
    return builtins.int(x, *args)


def _float(x=0.0):
    if is_symbolic(x):
        from tfc.ops import math

        return math.cast(x, "float32")
    return builtins.float(x)


def _enumerate(x, start=0):
    if is_symbolic(x):
        raise NotImplementedError("enumerate() over a symbolic tensor; loop over tfc.range(len) instead")
    if getattr(x, "_tfc_dataset", False) and STATE.builder is not None:
        return x.enumerate(start)  # as TensorFlow: the count is an int64 tensor of the dataset loop
    return builtins.enumerate(x, start)


def _zip(*iterables, **kwargs):
    if iterables and not kwargs and STATE.builder is not None and all(
            getattr(x, "_tfc_dataset", False) for x in iterables):
        return iterables[0].zip(*iterables)  # as TensorFlow: Dataset.zip, a dataset loop
    return builtins.zip(*iterables, **kwargs)


BUILTINS = {builtins.print: print_, builtins.range: _range, builtins.int: _int,
            builtins.float: _float, builtins.enumerate: _enumerate, builtins.zip: _zip}


def call(f, *args, **kwargs):
    """A call from converted code: builtins with tensor overloads, user
    functions converted (cached), everything else called as is."""
    owner = getattr(f, "__self__", None)
    if (isinstance(owner, list) and getattr(f, "__name__", None) == "pop" and _LOOP_DEPTH[0]
            and STATE.builder is not None):
        # a pop the conversion does not rewrite (list_pop), traced once, would pop once
        # whatever the loop's trips or the branch taken
        if id(owner) in _ELEMENT_TYPES:
            raise NotImplementedError(
                f"pop() of a list with a declared element type inside a tensor loop or `if` is supported only as "
                f"{_POP_FORMS}")
        if any(id(owner) in lists for lists in _OUTER_LISTS):
            at = sys._getframe(1)
            raise NotImplementedError(
                f"{at.f_code.co_filename}:{at.f_lineno}: pop() of a Python list made before the tensor loop or "
                f"`if` it is in: traced once, it would pop once whatever the loop's trips or the branch taken. "
                f"Pop it outside the loop or `if`, or make it a tensor (tfc.constant(lst)) and read it by index")
    try:
        override = BUILTINS.get(f)
    except TypeError:  # unhashable callable
        override = None
    if override is not None:
        return override(*args, **kwargs)
    from tfc.ops.creation import range as tfc_range

    if f is tfc_range and _any_symbolic((args, kwargs)):
        return _range_tensor(*args, **kwargs)
    from tfc.frontend.autograph.api import converted_or_none

    conv = converted_or_none(f)
    if conv is None:
        return f(*args, **kwargs)
    return conv(*args, **kwargs)


def _false(value=False):
    from tfc.core.tensor import constant

    return constant(value)
