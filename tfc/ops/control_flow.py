"""Control flow, printing and assertions.

Each function first checks ``STATE.builder``: while a function is being traced
the builder takes over (``builder.cond``, ``builder.while_loop``,
``builder.print_``, ``builder.assert_``) and decides how to handle concrete or
symbolic arguments. Otherwise they run eagerly as plain Python on concrete
values, so the ops inside the branches and the loop body are recorded by any
active tape like any other op.
"""
from __future__ import annotations

import sys

import numpy as np

from tfc.core import dtypes, nest
from tfc.core.context import STATE
from tfc.core.errors import InvalidArgumentError
from tfc.core.registry import Spec, declare
from tfc.core.shape import as_int
from tfc.core.tensor import Tensor, convert_to_tensor
from tfc.ops import _infer as inf
from tfc.ops import _scalar as S


def _predicate(op_name: str, pred, what: str = "pred") -> bool:
    """A Python bool from a Python bool or a scalar bool tensor."""
    if isinstance(pred, (bool, np.bool_)):
        return bool(pred)
    if isinstance(pred, np.ndarray):
        pred = convert_to_tensor(pred)
    if not isinstance(pred, Tensor):
        raise TypeError(f"{op_name}: {what} must be a bool or a scalar bool tensor, got {type(pred).__name__}")
    if pred.dtype != dtypes.bool_:
        raise TypeError(f"{op_name}: {what} must have dtype bool, got {pred.dtype.name}")
    if pred.ndim != 0:
        raise ValueError(f"{op_name}: {what} must be a scalar, got shape {tuple(pred.shape)}")
    return bool(pred)


def cond(pred, true_fn=None, false_fn=None):
    """``true_fn()`` if ``pred`` else ``false_fn()`` (``pred`` a scalar bool)."""
    for fn, what in ((true_fn, "true_fn"), (false_fn, "false_fn")):
        if not callable(fn):
            raise TypeError(f"cond: {what} must be callable, got {type(fn).__name__}")
    builder = STATE.builder
    if builder is not None:
        return builder.cond(pred, true_fn, false_fn)
    return true_fn() if _predicate("cond", pred) else false_fn()


def _as_loop_value(x):
    return x if isinstance(x, (Tensor, TensorArray)) else convert_to_tensor(x)


def _check_same(before, after) -> None:
    if nest.structure_signature(before) != nest.structure_signature(after):
        raise ValueError(
            f"while_loop: body must return the structure of loop_vars; loop_vars is "
            f"{_describe(before)}, body returned {_describe(after)}"
        )
    for i, (a, b) in enumerate(zip(nest.flatten(before), nest.flatten(after))):
        if isinstance(a, TensorArray) != isinstance(b, TensorArray):
            raise TypeError(f"while_loop: loop variable {i} changed from {type(a).__name__} to {type(b).__name__}")
        if a.dtype != b.dtype:
            raise TypeError(f"while_loop: loop variable {i} changed dtype from {a.dtype.name} to {b.dtype.name}")


def _describe(s) -> str:
    return nest.pack_sequence_as(s, ["*"] * len(nest.flatten(s))).__repr__().replace("'*'", "*")


def while_loop(cond, body, loop_vars, maximum_iterations=None):
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``; returns the
    final ``loop_vars``, in their structure. A single tensor (not a list or tuple)
    is passed and returned as is. Python numbers in ``loop_vars`` become tensors."""
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callable")
    if maximum_iterations is not None:
        maximum_iterations = int(maximum_iterations)
        if maximum_iterations < 0:
            raise ValueError(f"while_loop: maximum_iterations must be >= 0, got {maximum_iterations}")
    builder = STATE.builder
    if builder is not None:
        return builder.while_loop(cond, body, loop_vars, maximum_iterations)
    single = not isinstance(loop_vars, (list, tuple))
    state = [loop_vars] if single else loop_vars
    state = nest.map_structure(_as_loop_value, state)
    i = 0
    while maximum_iterations is None or i < maximum_iterations:
        if not _predicate("while_loop", cond(*state), "cond's result"):
            break
        new = body(*state)
        if len(state) == 1 and not isinstance(new, (list, tuple)):
            new = [new]  # a body of one variable may return it bare
        elif isinstance(new, (list, tuple)) and type(new) is not type(state) and not hasattr(state, "_fields"):
            new = type(state)(new)  # a tuple for a list is fine, as in TensorFlow
        new = nest.map_structure(_as_loop_value, new)
        _check_same(state, new)
        state = new
        i += 1
    return state[0] if single else state


# -- printing and assertions ------------------------------------------------------------------

def format_value(v, summarize: int = 3) -> str:
    """A value as ``tfc.print`` shows it: tensors by value (``[1 2 3]``, ``2.5``),
    with at most ``summarize`` leading and trailing entries per axis (-1: all)."""
    if isinstance(v, TensorArray):
        v = v.stack()
    if isinstance(v, (Tensor, np.ndarray, np.generic)):
        a = np.asarray(v)
        if a.ndim == 0:
            return _format_scalar(a[()])
        threshold = sys.maxsize if summarize is None or summarize < 0 else 2 * summarize
        return np.array2string(
            a, separator=" ", threshold=threshold, edgeitems=max(summarize or 0, 1),
            formatter={"float_kind": _format_scalar, "bool": lambda b: str(bool(b))},
            max_line_width=sys.maxsize,
        )
    if isinstance(v, (list, tuple)):
        inner = ", ".join(format_value(x, summarize) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{format_value(k, summarize)}: {format_value(x, summarize)}" for k, x in v.items()) + "}"
    return str(v)


def _format_scalar(x) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{float(x):g}"  # TensorFlow prints 2.0 as 2 and 1/3 as 0.333333
    return str(x)


def print(*values, output_stream=None, sep=" ", end="\n", summarize=3):  # noqa: A001 (TensorFlow's name)
    """Print ``values`` as TensorFlow's ``tf.print`` does: tensors by value, to
    ``output_stream`` (default ``sys.stderr``, as in TensorFlow)."""
    builder = STATE.builder
    if builder is not None:
        return builder.print_(values, sep=sep, end=end, stream=_stream_name(output_stream),
                              summarize=-1 if summarize is None else summarize)
    stream = sys.stderr if output_stream is None else output_stream
    stream.write(sep.join(format_value(v, summarize) for v in values) + end)
    return None


def _stream_name(stream) -> str:
    """Where compiled code prints: only the standard streams (looked up when it runs)."""
    if stream is None or stream is sys.stderr or stream == "stderr":
        return "stderr"
    if stream is sys.stdout or stream == "stdout":
        return "stdout"
    raise NotImplementedError(f"print: compiled code prints to sys.stdout or sys.stderr only, got {stream!r}")


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 (TensorFlow's name)
    """Raise AssertionError, with ``data`` formatted as its message, when ``condition``
    (a scalar bool, or a bool tensor that must be all true) is false."""
    builder = STATE.builder
    if builder is not None:
        return builder.assert_(condition, data)
    if isinstance(condition, Tensor):
        if condition.dtype != dtypes.bool_:
            raise TypeError(f"Assert: condition must have dtype bool, got {condition.dtype.name}")
        ok = bool(np.all(condition.numpy()))
    else:
        ok = _predicate("Assert", condition, "condition")
    if not ok:
        items = data if isinstance(data, (list, tuple)) else [data]
        s = -1 if summarize is None else summarize
        raise AssertionError(" ".join(format_value(d, s) for d in items))
    return None


# -- gradient markers -------------------------------------------------------------------------
#
# Compiled control flow is differentiated by replaying its IR under a tape
# (tfc/frontend/cfgrad.py), so what the tape does outside the IR must be in it.


@declare(kernel=np.copy, infer=inf.unary(dtypes.ANY), scalar=S.identity)
def stop_gradient(x):
    """``x``, cut from the tape: gradients do not flow through it (an identity
    that no tape records, eagerly or when compiled code is replayed)."""
    return (x,), {}


def _custom_gradient_infer(op, *values: Spec, key, n_inputs):
    if not 0 <= n_inputs < len(values):
        raise ValueError(f"custom_gradient: n_inputs must be in [0, {len(values)}) for {len(values)} operands, "
                         f"got {n_inputs}")
    outs = list(values[n_inputs:])
    return outs[0] if len(outs) == 1 else outs  # one output: a tensor, as the kernel's


def _custom_gradient_kernel(*values, key, n_inputs):
    outs = [np.copy(v) for v in values[n_inputs:]]
    return outs[0] if len(outs) == 1 else outs


@declare(kernel=_custom_gradient_kernel, infer=_custom_gradient_infer, attrs={"key": "int", "n_inputs": "int"},
         name="custom_gradient")
def custom_gradient_call(*values, key=0, n_inputs=0):
    """The outputs ``values[n_inputs:]`` of a ``tfc.custom_gradient`` function
    called on ``values[:n_inputs]`` (its inputs, then the variables it read),
    unchanged. Traced code emits it so that a replay of the IR can record the
    user's gradient function (``key`` names it in the trace's table) instead
    of differentiating the forward ops; the op itself has no gradient."""
    return values, {"key": int(key), "n_inputs": int(n_inputs)}


def _select_infer(op, pred: Spec, a: Spec, b: Spec) -> Spec:
    if pred.dtype != dtypes.bool_ or pred.shape not in ((), (1,)):
        raise TypeError(f"guarded_select: the predicate must be a scalar bool tensor, got {pred}")
    if a.dtype != b.dtype or len(a.shape) != len(b.shape) or \
            any(None not in (x, y) and x != y for x, y in zip(a.shape, b.shape)):
        raise TypeError(f"guarded_select: a and b must have one type, got {a} and {b}")
    return Spec(tuple(x if x is not None else y for x, y in zip(a.shape, b.shape)), a.dtype)


def _select_kernel(pred, a, b):
    return np.copy(a if pred.reshape(-1)[0] else b)


def _select_grad(e, g):
    from tfc.core.tape import Guarded
    from tfc.ops.math import logical_not

    pred = e.inputs[0]
    return [None, Guarded(g, pred) if e.needs_grad(1) else None,
            Guarded(g, logical_not(pred)) if e.needs_grad(2) else None]


def _lower_select(b, outs, pred, x, y):
    """A kernel writing ``x`` where ``pred`` holds, else ``y`` (an
    ``arith.select`` on the predicate, a scalar or a one-element buffer read
    at every index): the chosen operand's bits, as the kernel's copy."""
    from xdsl.dialects import arith

    (out,) = outs
    shape = b.result_shapes[0]
    maps = [(-1,) * len(b.shape(pred))] + [tuple(range(len(shape))) if b.is_buffer(v) else () for v in (x, y)]
    return b.parallel([pred, x, y], [out], shape, maps, lambda k, p, u, v: [k.op(arith.SelectOp(p, u, v))])


@declare(kernel=_select_kernel, infer=_select_infer, grad=_select_grad, lower=_lower_select)
def guarded_select(pred, a, b):
    """``a`` if the bool scalar ``pred`` holds, else ``b``: how a tape adds a
    gradient that exists only on some run-time paths. Its gradient reaches
    only the operand chosen, guarded the same way (no 0 * inf from the other)."""
    return (pred, a, b), {}


# -- state lists ------------------------------------------------------------------------------
#
# The gradient of a tfc.while_loop keeps the loop variables' state at the start
# of each iteration. A variable whose shape is known only at run time (and may
# change across iterations, as eagerly) is kept in a list: its elements' values
# one after the other in a flat buffer, and their shapes as the rows of an
# int64 table.


def _list_push_infer(op, flat: Spec, shapes: Spec, value: Spec) -> list:
    if flat.ndim != 1 or flat.dtype != value.dtype:
        raise TypeError(f"state_list_push: the buffer must be a 1-D {value.dtype.name} tensor, got {flat}")
    if shapes.dtype != dtypes.int64 or shapes.ndim != 2 or shapes.shape[1] not in (None, value.ndim):
        raise TypeError(f"state_list_push: the shape table must be int64[?, {value.ndim}], got {shapes}")
    return [Spec((None,), value.dtype), Spec((None, value.ndim), dtypes.int64)]


def _list_push_kernel(flat, shapes, value):
    row = np.array(value.shape, np.int64).reshape(1, value.ndim)
    return [np.concatenate([flat, value.reshape(-1)]), np.concatenate([shapes, row])]


def _no_grad(e, g):
    raise NotImplementedError(
        f"the gradient of {e.op.name} (a third-order gradient through a tfc.while_loop that keeps its states "
        f"in a list) is not implemented")


def _push_grad_infer(op, g: Spec, flat: Spec, value: Spec) -> list:
    return [flat, value]


def _push_grad_kernel(g, flat, value):
    return [g[:flat.size].copy(), g[flat.size:].reshape(value.shape).copy()]  # copies: no views of g


@declare(kernel=_push_grad_kernel, infer=_push_grad_infer, grad=_no_grad)
def state_list_push_grad(g, flat, value):
    """The gradient of state_list_push: ``g`` cut into (flat's part, value's part)."""
    return (g, flat, value), {}


def _list_push_grad(e, g):
    flat, _, value = e.inputs
    g_flat, g_value = state_list_push_grad(g[0], flat, value)
    return [g_flat if e.needs_grad(0) else None, None, g_value if e.needs_grad(2) else None]


@declare(kernel=_list_push_kernel, infer=_list_push_infer, grad=_list_push_grad)
def state_list_push(flat, shapes, value):
    """The list (``flat``: its elements' values one after the other, ``shapes``:
    their shapes, the rows of an int64 table) with ``value`` appended: a
    tfc.while_loop's gradient keeps there the states of a loop variable whose
    shape or trip count is known only at run time."""
    return (flat, shapes, value), {}


def _list_get_infer(op, flat: Spec, shapes: Spec, index: Spec, like: Spec) -> Spec:
    inf.check_dtype(op, index, dtypes.INTS, "index")
    if index.ndim != 0:
        raise ValueError(f"state_list_get: index must be a scalar, got shape {inf.fmt_shape(index.shape)}")
    if flat.ndim != 1 or flat.dtype != like.dtype or shapes.ndim != 2 or shapes.dtype != dtypes.int64:
        raise TypeError(f"state_list_get: expected a 1-D {like.dtype.name} buffer and an int64 shape table, "
                        f"got {flat} and {shapes}")
    return like


def _list_get_kernel(flat, shapes, index, like):
    i = int(index)
    start, stop = _segment(shapes, i)
    return flat[start:stop].reshape(tuple(shapes[i])).copy()  # not a view: compiled code may write into it


def _segment(shapes, i):
    if not 0 <= i < shapes.shape[0]:
        raise InvalidArgumentError(f"state_list_get: index {i} is out of range for a list of {shapes.shape[0]}")
    sizes = np.prod(shapes, axis=1, dtype=np.int64)
    start = int(sizes[:i].sum())
    return start, start + int(sizes[i])


def _get_grad_kernel(g, flat, shapes, index):
    start, stop = _segment(shapes, int(index))
    out = np.zeros_like(flat)
    out[start:stop] = g.reshape(-1)
    return out


@declare(kernel=_get_grad_kernel, infer=lambda op, g, flat, shapes, index: flat, grad=_no_grad)
def state_list_get_grad(g, flat, shapes, index):
    """The gradient of state_list_get: zeros, with ``g`` at element ``index``."""
    return (g, flat, shapes, index), {}


def _list_get_grad(e, g):
    flat, shapes, index, _ = e.inputs
    return [state_list_get_grad(g, flat, shapes, index) if e.needs_grad(0) else None, None, None, None]


@declare(kernel=_list_get_kernel, infer=_list_get_infer, grad=_list_get_grad)
def state_list_get(flat, shapes, index, like):
    """Element ``index`` of the list (``flat``, ``shapes``), typed as ``like``
    (whose static dimensions every element has)."""
    return (flat, shapes, index, like), {}


# -- TensorArray ----------------------------------------------------------------------------
#
# Two forms. Eagerly, and while tracing with Python-int indices, an array is a tuple
# of element tensors. As a loop variable or branch output of compiled control flow,
# or written at a symbolic index, it is a *buffer*: one tensor of shape
# (size, *element_shape) (size dynamic when the array grows) plus its size as an
# int32 scalar tensor; ``tensor_array_write`` replaces (or appends) one row.


def _shapes_agree(a: tuple, b: tuple) -> bool:
    """Same rank, and equal dims where both are known (None: known only at run time)."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _ta_write_infer(op, buffer: Spec, index: Spec, value: Spec, grow) -> Spec:
    inf.check_dtype(op, index, dtypes.INTS, "index")
    if index.ndim != 0:
        raise ValueError(f"tensor_array_write: index must be a scalar, got shape {inf.fmt_shape(index.shape)}")
    if buffer.ndim == 0:
        raise ValueError("tensor_array_write: buffer must have rank >= 1, got a 0-d tensor")
    if value.dtype != buffer.dtype:
        raise TypeError(f"tensor_array_write: value has dtype {value.dtype.name}; the array holds "
                        f"{buffer.dtype.name}")
    elem = buffer.shape[1:]
    if grow and buffer.shape[0] == 0:
        elem = (None,) * len(elem)  # no row yet: the first element gives the rows' shape
    if not _shapes_agree(value.shape, elem):
        raise ValueError(f"tensor_array_write: element shape {inf.fmt_shape(value.shape)} differs from the "
                         f"array's element shape {inf.fmt_shape(elem)}")
    elem = tuple(a if a is not None else b for a, b in zip(elem, value.shape))
    return Spec((None if grow else buffer.shape[0],) + elem, buffer.dtype)


def _ta_write_kernel(buffer, index, value, grow):
    i, n = int(index), buffer.shape[0]
    if i < 0 or (i >= n and not grow):
        raise InvalidArgumentError(f"TensorArray.write: index {i} is out of range for an array of size {n}"
                                   + ("" if grow else " (dynamic_size=False)"))
    rows = buffer.shape[1:] if n else value.shape  # an empty buffer's rows: the first element's shape
    if value.shape != rows:  # (numpy would broadcast it silently)
        raise InvalidArgumentError(f"TensorArray.write: element shape {value.shape} differs from the array's "
                                   f"element shape {rows}")
    if i >= n:
        out = np.zeros((i + 1,) + rows, buffer.dtype)
        if n:  # (numpy does not broadcast an empty (0, 0) buffer into (0, k))
            out[:n] = buffer
    else:
        out = buffer.copy()
    out[i] = value
    return out


def _ta_write_grad(e, g):
    from tfc.ops.creation import zeros_like
    from tfc.ops.shapes import gather

    buffer, index, value = e.inputs
    gb = None
    if e.needs_grad(0):
        if e.attrs["grow"]:
            raise NotImplementedError("the gradient of a growing TensorArray's initial contents is not "
                                      "implemented; give the array a fixed size")
        gb = tensor_array_write(g, index, zeros_like(value), grow=False)
    return [gb, None, gather(g, index, axis=0) if e.needs_grad(2) else None]


@declare(kernel=_ta_write_kernel, infer=_ta_write_infer, grad=_ta_write_grad, attrs={"grow": "bool"})
def tensor_array_write(buffer, index, value, grow=False):
    """``buffer`` with row ``index`` replaced by ``value``; with ``grow``, an index
    past the end first appends zero rows (the buffer form of TensorArray.write)."""
    return (buffer, index, value), {"grow": bool(grow)}


def _int32(i):
    from tfc.ops.math import cast

    if isinstance(i, Tensor):
        return i if i.dtype == dtypes.int32 else cast(i, dtypes.int32)
    return convert_to_tensor(np.int32(int(i)))


def _symbolic(x) -> bool:
    return STATE.builder is not None and isinstance(x, Tensor)


class TensorArray:
    """A list of tensors of one dtype and element shape. ``write`` returns a new
    array (this one is unchanged), so it is a value that loops can carry, eager
    or compiled (see the note above on its two forms)."""

    __slots__ = ("dtype", "_elements", "dynamic_size", "element_shape", "_buffer", "_size")

    def __init__(self, dtype, size=0, dynamic_size=False, element_shape=None, _elements=None,
                 _buffer=None, _size=None):
        self.dtype = dtypes.as_dtype(dtype)
        self.dynamic_size = bool(dynamic_size)
        self.element_shape = None if element_shape is None else tuple(
            None if d is None else int(d) for d in element_shape)  # None: a size known only at run time
        self._buffer, self._size = _buffer, _size
        if _buffer is not None:
            _elements = ()
        elif _elements is None:
            if _symbolic(size):
                raise NotImplementedError("TensorArray: a size known only at run time needs element_shape "
                                          "and dynamic_size=True in compiled code; start with size=0")
            size = as_int("TensorArray", size, "size")
            _elements = (None,) * size
        self._elements = tuple(_elements)

    def _replace(self, elements, element_shape):
        return TensorArray(self.dtype, dynamic_size=self.dynamic_size, element_shape=element_shape,
                           _elements=elements)

    def _with_buffer(self, buffer, size) -> "TensorArray":
        return TensorArray(self.dtype, dynamic_size=self.dynamic_size, element_shape=self.element_shape,
                           _buffer=buffer, _size=size)

    def _known_element_shape(self):
        if self.element_shape is not None:
            return self.element_shape
        for t in self._elements:
            if t is not None:
                return tuple(t.shape)
        return None

    def _as_buffer(self, element_shape=None) -> "TensorArray":
        """This array in buffer form (element shape from the array, its elements or
        ``element_shape``); None when the element shape is unknown."""
        if self._buffer is not None:
            return self
        from tfc.ops.creation import zeros
        from tfc.ops.shapes import stack

        shape = self._known_element_shape()
        if shape is None and element_shape is not None:  # () is a known shape
            shape = tuple(element_shape)
        if shape is None:
            return None
        if self._elements:
            written = next((t for t in self._elements if t is not None), None)
            if None in shape and written is None:  # unwritten rows of a size known only at run time
                raise NotImplementedError(
                    f"a TensorArray of size {len(self._elements)} that no element was written to before compiled "
                    f"control flow carries it, with element shape {inf.fmt_shape(shape)} known only at run time, "
                    "is not implemented: pass an element_shape known while tracing, or start it empty "
                    "(size=0, dynamic_size=True)")
            if None in shape:  # unwritten rows: zeros of the written one's run-time shape
                from tfc.ops.creation import zeros_like

                buf = stack([zeros_like(written) if t is None else t for t in self._elements], axis=0)
            else:
                buf = stack([zeros(shape, self.dtype) if t is None else t for t in self._elements], axis=0)
        elif None in shape:  # no row yet, of a size known only at run time: the first write gives it
            from tfc.ops.creation import dynamic_fill

            buf = dynamic_fill(convert_to_tensor(np.array([0] + [d or 0 for d in shape], np.int64)),
                               np.zeros((), self.dtype.as_numpy_dtype), (0,) + tuple(-1 if d is None else d for d in shape))
        else:
            buf = zeros((0,) + shape, self.dtype)
        return TensorArray(self.dtype, dynamic_size=self.dynamic_size, element_shape=shape, _buffer=buf,
                           _size=convert_to_tensor(np.int32(len(self._elements))))

    def size(self) -> Tensor:
        """The number of elements, as an int32 scalar tensor."""
        if self._buffer is not None:
            return self._size
        return convert_to_tensor(np.int32(len(self._elements)))

    def _index(self, what, i) -> int:
        i = int(i)
        n = len(self._elements)
        if i < 0 or (i >= n and not (what == "write" and self.dynamic_size)):
            raise InvalidArgumentError(f"TensorArray.{what}: index {i} is out of range for an array of size {n}"
                                       + ("" if self.dynamic_size or what != "write" else " (dynamic_size=False)"))
        return i

    def _check(self, what, dtype, shape) -> tuple:
        if dtype != self.dtype:
            raise TypeError(f"TensorArray.{what}: value has dtype {dtype.name}; the array holds {self.dtype.name}")
        shape = tuple(shape)
        if self.element_shape is not None and not _shapes_agree(shape, self.element_shape):
            raise ValueError(f"TensorArray.{what}: element shape {shape} differs from the array's "
                             f"element shape {self.element_shape}")
        return shape

    def write(self, index, value) -> "TensorArray":
        """A new array with ``value`` at ``index`` (growing it if ``dynamic_size``)."""
        t = value if isinstance(value, Tensor) else convert_to_tensor(value, self.dtype)
        if self._buffer is not None or _symbolic(index):
            shape = self._check("write", t.dtype, t.shape)
            ta = self._as_buffer(shape)
            from tfc.ops.math import maximum

            i = _int32(index)
            buf = tensor_array_write(ta._buffer, i, t, grow=self.dynamic_size)
            size = maximum(ta._size, i + 1) if self.dynamic_size else ta._size
            return ta._with_buffer(buf, size)
        i = self._index("write", index)
        shape = self._check("write", t.dtype, t.shape)
        elements = list(self._elements)
        if i >= len(elements):
            elements.extend([None] * (i + 1 - len(elements)))
        elements[i] = t
        return self._replace(elements, shape)

    def _zeros(self, what, i):
        if self.element_shape is None:
            raise ValueError(f"TensorArray.{what}: element {i} was never written and the element shape is unknown")
        from tfc.ops.creation import zeros

        return zeros(self.element_shape, self.dtype)

    def read(self, index) -> Tensor:
        """The element at ``index`` (zeros if never written and the shape is known)."""
        if self._buffer is not None or _symbolic(index):
            ta = self._as_buffer()
            if ta is None:
                raise ValueError("TensorArray.read: at an index known only at run time, the element shape must "
                                 "be known (pass element_shape or write first)")
            from tfc.ops.shapes import gather

            return gather(ta._buffer, _int32(index), axis=0)
        i = self._index("read", index)
        t = self._elements[i]
        return self._zeros("read", i) if t is None else t

    def stack(self) -> Tensor:
        """All elements stacked along a new first axis."""
        from tfc.ops.creation import zeros
        from tfc.ops.shapes import stack

        if self._buffer is not None:
            return self._buffer
        if not self._elements:
            return zeros((0,) + (self.element_shape or ()), self.dtype)
        return stack([self.read(i) for i in range(len(self._elements))], axis=0)

    def unstack(self, value) -> "TensorArray":
        """A new array whose elements are the slices of ``value`` along its first axis."""
        from tfc.ops.shapes import unstack

        t = value if isinstance(value, Tensor) else convert_to_tensor(value, self.dtype)
        if t.ndim == 0:
            raise ValueError("TensorArray.unstack: value must have rank >= 1, got a 0-d tensor")
        self._check("unstack", t.dtype, t.shape[1:])
        if self._buffer is not None:
            raise NotImplementedError("TensorArray.unstack into an array carried by compiled control flow; "
                                      "unstack before the loop")
        n = len(self._elements)
        if not self.dynamic_size and n and t.shape[0] > n:
            raise InvalidArgumentError(f"TensorArray.unstack: {t.shape[0]} elements do not fit in an array of size {n}")
        return self._replace(unstack(t, axis=0), tuple(t.shape[1:]))

    def __repr__(self) -> str:
        if self._buffer is not None:
            return f"<tfc.TensorArray size={self._size} dtype={self.dtype.name}>"
        return f"<tfc.TensorArray size={len(self._elements)} dtype={self.dtype.name}>"
