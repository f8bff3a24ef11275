"""The op registry: every primitive op is declared exactly once, here's how.

A declaration is a small Python function giving the op's public signature; it
returns ``(inputs, attrs)`` and ``declare`` turns it into the public API function.
The declaration also names

- ``kernel``: the eager numpy kernel, ``kernel(*arrays, **attrs)``; it doubles
  as the constant folder and as the reference executor's kernel;
- ``infer``: shape and dtype inference, ``infer(op, *specs, **attrs)`` returning
  a ``Spec`` (or a list of them), raising ValueError/TypeError with the message
  users see on bad input; it also verifies the op in the IR;
- ``grad``: the vector-Jacobian rule ``grad(entry, g)`` written with tfc ops (so it
  runs eagerly, traced, and under nested tapes); None marks an op as not
  differentiable;
- ``attrs``: attribute names and kinds, from which the IR op is generated;
- ``scalar``: the scalar body of elementwise ops, used by fusion and lowering;
- ``rows``: for ops that treat each index of their inputs' and result's first
  dimension alone (softmax along a later axis), ``rows(ranks, **attrs)`` says
  whether these attributes do, for inputs of these ranks: a backend may then
  run the kernel on chunks of rows (cache-sized, on several threads) and get
  the whole call's bits;
- ``expand``: for composite ops (softmax, the cross-entropies), the op written
  with other registry ops, ``expand(b, *operands, **attrs)`` where ``b.<op>(...)``
  emits registry op ``<op>`` into the IR and returns its value(s): the
  ``tfc-expand`` pass replaces the op by it before fusion, so its pieces fuse
  with their neighbours. The eager kernel computes the same bits;
- ``lower``: the op's backend-independent lowering to the loops dialect (L3),
  called by ``tfc-lower-loops`` to write its results into planned buffers
  (see ``tfc/passes/lower_loops.py``); an op with neither ``scalar`` nor
  ``lower`` stays a ``loops.library`` call of its kernel;
- ``kernel_into``: the numpy kernel that writes the op's one result into a
  given array, ``kernel_into(*arrays, out, **attrs)`` (``out`` C-contiguous,
  of the result's shape and dtype), computing eager's kernel's bits: a
  library op that has it writes into a buffer of the memory plan (matmul,
  conv2d and its gradients, the random generators). ``kernel_into.when(in_specs,
  out_spec, **attrs)``, where set, says where it applies (matmul: float
  operands of the result's dtype); elsewhere the kernel makes its result;
- ``static_form``: for ops that read only the shape of an operand (the
  ``*_like`` ops of gradients with run-time shapes), ``static_form(op)`` gives
  (new IR ops, the values replacing the op's results) once ``tfc-specialize``
  knows that shape: the op as a static trace writes it; None while unknown.
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Callable, NamedTuple

import numpy as np

from tfc.core import dtypes
from tfc.core.context import STATE, TAPES
from tfc.core import device as _device
from tfc.core.device import PLACEMENT
from tfc.core.tensor import OnDeviceError, Tensor, constant, is_python_scalar, wrap


class Spec(NamedTuple):
    """Static type of a tensor: its shape (ints, None where known only at run
    time) and its dtype."""

    shape: tuple
    dtype: dtypes.DType

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype.name}[{dims}]"


# Attribute kinds an op may declare; the IR generator maps each to an attribute.
ATTR_KINDS = frozenset(
    {"int", "int?", "float", "float?", "number", "bool", "ints", "ints?", "dtype", "str", "index", "seed"}
)


class OpDef:
    """One primitive op. See the module docstring for the fields."""

    __slots__ = (
        "name", "kernel", "infer", "grad", "attrs", "promote", "quiet",
        "stateful", "scalar", "rows", "expand", "lower", "static_form", "kernel_into", "api", "eager_kernel",
        "__weakref__",
    )

    def __init__(self, name, kernel, infer, grad, attrs, promote, quiet, stateful, scalar, rows=None,
                 expand=None, lower=None, kernel_into=None, static_form=None):
        self.name = name
        self.kernel = kernel
        self.infer = infer
        self.grad = grad
        self.attrs = dict(attrs)
        self.promote = tuple(promote)
        self.quiet = quiet
        self.stateful = stateful
        self.scalar = scalar
        self.rows = rows
        self.expand = expand
        self.lower = lower
        self.static_form = static_form
        self.kernel_into = kernel_into
        self.api = None
        # What run_eager calls: the kernel, with numpy's floating-point warnings
        # off for quiet ops (errstate's decorator form costs half its with-block).
        self.eager_kernel = np.errstate(all="ignore")(kernel) if quiet else kernel

    @property
    def differentiable(self) -> bool:
        return self.grad is not None

    def maps_rows(self, ranks, attrs) -> bool:
        """Does a call on inputs of these ranks treat each row (index of the
        first dimension) alone? (See ``rows`` in the module docstring.)"""
        return self.rows is not None and all(r >= 1 for r in ranks) and bool(self.rows(tuple(ranks), **attrs))

    def __repr__(self) -> str:
        return f"<op {self.name}>"


REGISTRY: dict[str, OpDef] = {}


def every_row(ranks, **attrs) -> bool:
    """``rows=every_row``: each row alone, whatever the attributes (pooling
    over a batch of images)."""
    return True


def rows_apart(ranks, axis, **attrs) -> bool:
    """``rows=rows_apart``: each row alone unless the op works along the rows
    (``axis`` 0): softmax along a later axis, argmax over columns."""
    return axis % ranks[0] != 0


def declare(
    *,
    kernel: Callable,
    infer: Callable,
    grad: Callable | None = None,
    attrs: dict | None = None,
    promote: tuple = (),
    quiet: bool = False,
    stateful: bool = False,
    scalar: Callable | None = None,
    rows: Callable | None = None,
    expand: Callable | None = None,
    lower: Callable | None = None,
    kernel_into: Callable | None = None,
    static_form: Callable | None = None,
    name: str | None = None,
):
    """Declare a primitive op; decorates the function that packs its arguments.

    ``promote`` lists the input positions that share one dtype (NumPy promotion,
    Python scalars weak). ``quiet`` silences numpy's floating-point warnings
    (1/0 is inf, as in TensorFlow). ``stateful`` ops are never folded or merged.
    """
    attrs = attrs or {}
    unknown = set(attrs.values()) - ATTR_KINDS
    if unknown:
        raise TypeError(f"unknown attribute kinds {unknown}")

    def decorate(pack):
        op_name = name or pack.__name__
        if op_name in REGISTRY:
            raise ValueError(f"op {op_name!r} is declared twice")
        op = OpDef(op_name, kernel, infer, grad, attrs, promote, quiet, stateful, scalar, rows, expand, lower,
                   kernel_into, static_form)
        REGISTRY[op_name] = op

        @functools.wraps(pack)
        def api(*args, name=None, **kwargs):
            try:
                inputs, attr_values = pack(*args, **kwargs)
            except (ValueError, TypeError) as e:  # bad arguments: say where in the user's code
                note_user_line(e)
                raise
            return execute(op, inputs, attr_values)

        api.op = op
        op.api = api
        return api

    return decorate


def execute(op: OpDef, inputs, attrs: dict):
    """Run ``op`` now (eager), or append it to the function being traced."""
    try:
        tensors = convert_inputs(op, inputs)
        builder = STATE.builder
        if builder is None and not TAPES:
            return run_eager(op, tensors, attrs)  # the common case: nothing to record
        tape = _tape()
        if builder is not None:
            outputs = builder.emit(op, tensors, attrs)
        else:
            tensors = tape.snapshot_variables(tensors)
            outputs = run_eager(op, tensors, attrs)
    except (ValueError, TypeError) as e:  # bad input: say where in the user's code
        note_user_line(e)
        raise
    if TAPES:
        tape.record(op, tensors, outputs, attrs)
    return outputs


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../tfc
_NOT_USER = (_PACKAGE + os.sep, "<frozen")


def _user_frame():
    """The innermost caller outside tfc and Python's import machinery, or None."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_NOT_USER):
        f = f.f_back
    return f


def note_user_line(e: BaseException) -> None:
    """Add to ``e`` a note naming the innermost caller outside tfc (the user's
    file:line, shown under the message in the traceback), once."""
    if getattr(e, "_tfc_noted", False):
        return
    f = _user_frame()
    if f is not None:
        e.add_note(f"  at {f.f_code.co_filename}:{f.f_lineno} in {f.f_code.co_name}")
        e._tfc_noted = True


def user_errors(f):
    """For a public function written in Python over registry ops (einsum, top_k,
    ...): a ValueError or TypeError it raises on bad arguments names the user's
    line, as a registry op's does."""

    @functools.wraps(f)
    def checked(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except (ValueError, TypeError) as e:
            note_user_line(e)
            raise

    return checked


_tape_module = None


def _tape():
    """tfc.core.tape, imported on first use (it imports this module): an import
    statement in ``execute`` would cost more than the rest of the tape check."""
    global _tape_module
    if _tape_module is None:
        from tfc.core import tape

        _tape_module = tape
    return _tape_module


# Spec(...) runs NamedTuple's Python-level __new__; the eager hot path builds
# its specs with tuple.__new__ directly (same object, a third of the time).
_new_tuple = tuple.__new__


# (op, the inputs' shapes and numpy dtypes, attrs) -> inferred output specs:
# inference depends on nothing else, so an eager op repeated on same-shaped
# inputs (a training loop) skips it; errors are raised, never stored
_INFERRED: dict = {}
_INFERRED_MAX = 4096


def run_eager(op: OpDef, tensors, attrs):
    try:
        values = [t._value for t in tensors]
    except OnDeviceError:  # a GPU tensor among the inputs (raised by its _value): run it there
        values = None  # (dispatched outside the handler: its errors chain to no OnDeviceError)
    if values is None or PLACEMENT.gpu is not None:  # or inside ``with tfc.device("gpu:0")``
        return _device.run_placed(op, tensors, attrs)
    return run_host(op, values, attrs)


def run_host(op: OpDef, values, attrs):
    """Run ``op``'s numpy kernel on host arrays; the result as Tensor(s)."""
    try:
        key = (op, *[(v.shape, v.dtype) for v in values], *attrs.items())
        out_specs = _INFERRED.get(key)
    except TypeError:  # an unhashable attribute value
        key = out_specs = None
    if out_specs is None:
        specs = [_new_tuple(Spec, (v.shape, dtypes.from_numpy(v.dtype))) for v in values]
        out_specs = op.infer(op, *specs, **attrs)
        if key is not None:
            if len(_INFERRED) >= _INFERRED_MAX:
                _INFERRED.clear()
            _INFERRED[key] = out_specs
    result = op.eager_kernel(*values, **attrs)
    if type(out_specs) is Spec:
        return wrap(_conform(op, result, out_specs))
    return [wrap(_conform(op, r, s)) for r, s in zip(result, out_specs)]


def _conform(op, value, spec: Spec):
    """Cast a kernel result to the inferred dtype; check the inferred shape."""
    if not isinstance(value, (np.ndarray, np.generic)):
        value = np.asarray(value)
    want = spec.dtype.as_numpy_dtype
    if value.dtype != want:
        value = value.astype(want)
    if value.shape != spec.shape and (len(value.shape) != len(spec.shape) or any(
            d is not None and d != v for d, v in zip(spec.shape, value.shape))):
        # (None: a dimension that depends on the values, as tensor_array_write's growth)
        raise AssertionError(
            f"internal error in op {op.name}: kernel gave shape {value.shape}, "
            f"inference said {spec.shape}"
        )
    return value


def convert_inputs(op: OpDef, inputs) -> list:
    """Inputs as Tensors; Python scalars in a promotion group are weak, and the
    group is cast to its common dtype (recorded, so gradients flow through)."""
    out = list(inputs)
    weak = []
    promote = op.promote
    for i, x in enumerate(out):
        if isinstance(x, Tensor):
            continue
        if i in promote and is_python_scalar(x):
            weak.append(i)
        else:
            try:
                out[i] = constant(x)
            except (TypeError, ValueError) as e:  # say which op got the bad value
                raise type(e)(f"{op.name}: input {i}: {e}") from None
    if not promote:
        return out
    strong = [out[i].dtype for i in promote if i not in weak]
    if not weak and len(set(strong)) == 1:
        return out  # the common case: tensors of one dtype (DTypes are singletons)
    common = dtypes.promote(*strong) if len(set(strong)) > 1 else None
    if weak:
        values = [out[i] for i in weak]
        if strong:
            dt = dtypes.from_numpy(dtypes.result_numpy_dtype(*(d.as_numpy_dtype for d in strong), *values))
            # (dt is strong[0], the common case: nothing was widened, no check)
            if dt is not strong[0] and any(isinstance(v, np.generic) for v in values):
                _warn_if_numpy_scalar_widens(op, strong, values, dt)
        else:  # only Python scalars: the default float if any is a float
            kinds = {dtypes.default_dtype_of(v) for v in values}
            dt = next(d for d in (dtypes.float32, dtypes.int64, dtypes.int32, dtypes.bool_) if d in kinds)
        for i in weak:
            out[i] = _weak_constant(op, out[i], dt)
        if strong and dt != strong[0]:  # a weak float meeting an int tensor makes it float
            common = dt
    if common is not None:
        from tfc.ops.math import cast

        for i in promote:
            if out[i].dtype != common:
                out[i] = cast(out[i], common)
    return out


def _warn_if_numpy_scalar_widens(op: OpDef, strong, values, dt: dtypes.DType) -> None:
    """A numpy float64 scalar (a subclass of float, so it arrives here as a
    weak number) is strong under NumPy 2 and widens a float32 tensor to float64:
    the result keeps NumPy's dtype, but a PrecisionWarning at the user's line
    says so, since one such scalar quietly turns a whole model into float64."""
    as_python = [v.item() if isinstance(v, np.generic) else v for v in values]
    weak_dt = dtypes.from_numpy(dtypes.result_numpy_dtype(*(d.as_numpy_dtype for d in strong), *as_python))
    if dt == weak_dt:
        return
    import warnings

    scalar = next(v for v in values if isinstance(v, np.generic))
    f = _user_frame()
    message = (f"{op.name}: the numpy {scalar.dtype} scalar {scalar!r} widens a {weak_dt.name} tensor to {dt.name} "
               f"(NumPy 2 promotion); write float(...) to keep {weak_dt.name}, or make it a tensor of the dtype "
               "you want")
    if f is None:
        warnings.warn(message, dtypes.PrecisionWarning, stacklevel=2)
    else:
        warnings.warn_explicit(message, dtypes.PrecisionWarning, f.f_code.co_filename, f.f_lineno,
                               module=f.f_globals.get("__name__"),
                               registry=f.f_globals.setdefault("__warningregistry__", {}))


def _weak_constant(op: OpDef, value, dt: dtypes.DType) -> Tensor:
    try:
        return wrap(np.array(value, dtype=dt.as_numpy_dtype))
    except OverflowError:
        raise ValueError(f"{op.name}: Python value {value!r} does not fit in {dt.name}") from None


def get_op(name: str) -> OpDef:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"no op named {name!r}") from None
