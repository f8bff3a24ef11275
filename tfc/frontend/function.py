"""``tfc.function``: trace a Python function once per input signature into
tensor-dialect IR, optimize it, and run the compiled form on later calls.

A signature is the structure of the arguments, the shape and dtype of each
tensor, the identity of each variable and the value of every other argument.
Variables (passed or closed over) become ``!tfc.ref`` arguments: the compiled
function reads and assigns them, and the eager Variables hold the new values
after the call.
"""
from __future__ import annotations

import collections
import functools
import inspect
import os
import re
import threading
import time
import warnings
import weakref

import numpy as np

from tfc.core import dtypes, nest
from tfc.core.cell import Cell
from tfc.core.context import STATE, TAPES
from tfc.core.registry import Spec
from tfc.core.shape import as_ints
from tfc.core.tensor import GpuTensor, Tensor, convert_to_tensor, wrap
from tfc.core.variable import GpuVariable, Variable

RETRACE_WARNING = 5  # warn once a function has been retraced this many times
# Argument keys the fast path of a call remembers per function (a None-signature
# function called with ever new batch sizes adds one per size; the rest take the full path)
FAST_KEYS = 256


class TensorSpec:
    """The type of a tensor argument: ``shape`` (None for a dimension known only
    at run time, or None for any rank is not supported), ``dtype`` and a name."""

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        self.shape = as_ints("TensorSpec", shape, allow_none=True)
        self.dtype = dtypes.as_dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, t, name=None) -> "TensorSpec":
        return cls(t.shape, t.dtype, name)

    def is_compatible_with(self, t) -> bool:
        shape = tuple(t.shape)
        return t.dtype == self.dtype and len(shape) == len(self.shape) and all(
            a is None or a == b for a, b in zip(self.shape, shape))

    @property
    def spec(self) -> Spec:
        return Spec(self.shape, self.dtype)

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype, self.name) == (
            other.shape, other.dtype, other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype.name, self.name))

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype=tfc.{self.dtype.name}, name={self.name!r})"


# -- argument walking ---------------------------------------------------------------


def _paths(value, path, out):
    """(path, leaf) pairs in tfc.core.nest's flatten order."""
    if isinstance(value, dict):
        for k in sorted(value, key=repr):
            _paths(value[k], f"{path}[{k!r}]", out)
    elif isinstance(value, (list, tuple)):
        for i, x in enumerate(value):
            _paths(x, f"{path}[{i}]", out)
    elif getattr(value, "_tfc_dataset", False):
        # a tfc.data.Dataset: its pipeline (in the cache key), then its source tensors (traced inputs)
        arg = value._trace_argument()
        out.append((path, arg))
        out.extend((f"{path}.source[{i}]", t) for i, t in enumerate(arg.sources))
    else:
        out.append((path, value))


def _datasets_rebuilt(leaves) -> list:
    """Leaves with each dataset's pipeline and source leaves (see _paths) made
    one leaf again: the dataset over those (symbolic) sources."""
    out, it = [], iter(leaves)
    for x in it:
        if getattr(x, "_tfc_dataset_argument", False):
            x = x.rebuild([next(it) for _ in range(x.count)])
        out.append(x)
    return out


# arguments that are tensors of a signature (numeric numpy scalars too, as in TensorFlow)
_ARRAYS = (Tensor, np.ndarray, np.number, np.bool_)


def _describe_leaf(x):
    """(cache key part, readable description) of one argument leaf."""
    if isinstance(x, Variable):
        return ("var", x.ref()), f"variable {x.name} {Spec(x.shape, x.dtype)}"
    if isinstance(x, TensorSpec):
        return ("tensor", x.shape, x.dtype.name), str(x.spec)
    if isinstance(x, _ARRAYS):
        t = convert_to_tensor(x)
        return ("tensor", tuple(t.shape), t.dtype.name), str(Spec(tuple(t.shape), t.dtype))
    try:
        hash(x)
        return ("py", type(x), _value_key(x)), repr(x)
    except TypeError:
        return ("id", id(x)), f"{type(x).__name__} object at {id(x):#x}"


def _value_key(x):
    """A Python value as a trace's key holds it: floats by their bits, since
    0.0 == -0.0 (a trace made for one would compute with the other's sign;
    every NaN is one key), in tuples too."""
    if type(x) is float:
        return x.hex()
    if type(x) is tuple:
        return tuple(_value_key(v) for v in x)
    return x


def _is_tensor_leaf(x) -> bool:
    return isinstance(x, (*_ARRAYS, TensorSpec)) and not isinstance(x, Variable)


def _argument_leaves(args, kwargs) -> list:
    """(path, leaf) pairs of a ConcreteFunction's call, in its order (keywords by name)."""
    leaves = []
    for i, a in enumerate(args):
        _paths(a, f"arg{i}", leaves)
    for k in sorted(kwargs):
        _paths(kwargs[k], k, leaves)
    return leaves


def _tensor_leaves(args, kwargs) -> list:
    """The tensor arguments of a ConcreteFunction's call, in its order (keywords by name)."""
    return [x for _, x in _argument_leaves(args, kwargs) if _is_tensor_leaf(x)]


def _pipelines(leaves) -> tuple:
    """The pipelines (cache keys) of the dataset arguments among (path, leaf) pairs."""
    return tuple(x.key for _, x in leaves if getattr(x, "_tfc_dataset_argument", False))


_FAST_SCALARS = (int, float, bool, str, type(None))


def _fast_key(args):
    """(key, arrays) of a call with positional tensors and Python scalars only,
    else (None, None): the key is the exact type, shape and dtype of each tensor
    and the type and value of each scalar, so equal keys mean the same trace."""
    if len(args) == 1 and type(args[0]) is Tensor:  # the common case, without the loop
        v = args[0]._value
        return (v.shape, v.dtype), [v]
    parts, arrays = [], []
    for a in args:
        t = type(a)
        if t is Tensor:
            v = a._value
            parts.append((v.shape, v.dtype))
            arrays.append(v)
        elif t is np.ndarray:
            parts.append((a.shape, a.dtype, 0))
            arrays.append(a.copy())  # as convert_to_tensor: a later write to `a` cannot reach a result
        elif t in _FAST_SCALARS:
            parts.append((t, a.hex() if t is float else a))  # see _value_key
        else:
            return None, None
    return tuple(parts), arrays


class _Trace:
    __slots__ = ("desc", "reason", "key")

    def __init__(self, desc, reason, key=None):
        self.desc, self.reason, self.key = desc, reason, key


class Function:
    """A Python function compiled per input signature; see ``tfc.function``."""

    def __init__(self, python_function, input_signature=None, autograph=True, target="cpu", verify=False):
        from tfc.frontend.autograph.api import callable_name, check_not_generator

        check_not_generator(python_function)  # however wrapped (a partial, a method, ...)
        # a staticmethod or classmethod object: the function it holds, bound as the descriptor would
        self._binding = type(python_function) if isinstance(python_function, (staticmethod, classmethod)) else None
        if self._binding is not None:
            python_function = python_function.__func__
        self.python_function = python_function
        self.input_signature = None if input_signature is None else list(input_signature)
        if self.input_signature is not None:
            for s in nest.flatten(self.input_signature):
                if not isinstance(s, TensorSpec):
                    raise TypeError(f"input_signature must hold tfc.TensorSpec objects, got {s!r}")
        self.autograph = autograph  # convert Python control flow on tensors before tracing
        self._converted = None
        self.target = target
        self.verify = verify
        self._cache: dict = {}
        self._fast: dict = {}  # _fast_key -> ConcreteFunction, filled by full calls
        self._traces: list[_Trace] = []
        self._warned = False
        self._depth = 0  # calls of this function being traced now (> 1: it recursed)
        self._recursed_at = None  # where it first called itself while traced
        try:
            self._signature = inspect.signature(python_function)
        except (TypeError, ValueError):
            self._signature = None
        functools.update_wrapper(self, python_function)
        # a partial or callable object has no __name__: messages use a name made for it
        if not isinstance(getattr(self, "__name__", None), str):
            self.__name__ = callable_name(python_function)
        if not isinstance(getattr(self, "__qualname__", None), str):
            self.__qualname__ = self.__name__

    @property
    def trace_count(self) -> int:
        return len(self._traces)

    def explain(self) -> list[str]:
        """Why each trace happened, oldest first; after the reason of a trace with
        run-time dimensions, a line per shape specialization made of it (its
        shapes, when it was made, when it was evicted)."""
        out = []
        for t in self._traces:
            out.append(t.reason)
            conc = self._cache.get(t.key)
            if conc is not None:
                out += ["  " + form.describe() for form in conc.specializations]
        return out

    def __get__(self, obj, objtype=None):
        if self._binding is staticmethod:
            return self
        if self._binding is classmethod:
            return functools.partial(self.__call__, objtype if objtype is not None else type(obj))
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __repr__(self):
        return f"<tfc.function {self.__qualname__}>"

    # -- arguments ----------------------------------------------------------------
    def _bind(self, args, kwargs):
        if self._signature is None:
            names = {f"arg{i}": a for i, a in enumerate(args)}
            names.update(kwargs)
            return None, names
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}: {e}") from None
        bound.apply_defaults()
        return bound, dict(bound.arguments)

    def _leaves(self, args, kwargs):
        bound, named = self._bind(args, kwargs)
        if self.input_signature is not None:
            named = self._convert_to_signature(bound, named)
        leaves = []
        for name, value in named.items():
            _paths(value, name, leaves)
        return bound, named, leaves

    def _convert_to_signature(self, bound, named):
        """Python numbers and (nested) lists of them, passed where input_signature
        has a TensorSpec, as tensors of its dtype (as TensorFlow converts them).
        The signature's elements follow the arguments in order: one per element
        of ``*args``, none for a method's ``self``/``cls``."""
        params = self._signature.parameters if self._signature is not None else {}
        slots = []  # (parameter name, index into its *args tuple or None)
        for name, value in named.items():
            kind = params[name].kind if name in params else None
            if kind is inspect.Parameter.VAR_POSITIONAL:
                slots += [(name, i) for i in range(len(value))]
            elif kind is not inspect.Parameter.VAR_KEYWORD:
                slots.append((name, None))
        if slots and slots[0] in (("self", None), ("cls", None)):
            slots = slots[1:]
        out = dict(named)
        for (name, i), spec in zip(slots, self.input_signature):
            if i is None:
                out[name] = self._convert_like(out[name], spec, name)
            else:
                items = list(out[name])
                items[i] = self._convert_like(items[i], spec, f"{name}[{i}]")
                out[name] = tuple(items)
        if bound is not None:
            bound.arguments.update(out)
        return out

    def _convert_like(self, value, spec, path):
        if isinstance(spec, TensorSpec):
            if isinstance(value, bool) and spec.dtype != dtypes.bool_:
                raise TypeError(f"{self.__name__}: argument {path} is a bool, where input_signature has {spec}")
            if isinstance(value, (bool, int, float, list, tuple)) and not _is_tensor_leaf(value):
                try:
                    return convert_to_tensor(value, spec.dtype)
                except (TypeError, ValueError, OverflowError) as e:
                    raise TypeError(f"{self.__name__}: argument {path} ({value!r}) does not convert to "
                                    f"input_signature's {spec}: {e}") from None
            if not _is_tensor_leaf(value):
                raise TypeError(f"{self.__name__}: argument {path} is a {type(value).__name__}, where "
                                f"input_signature has {spec}: pass a tensor, an array or a number")
            return value
        if isinstance(spec, (list, tuple)) and isinstance(value, (list, tuple)) and len(spec) == len(value):
            return type(value)(self._convert_like(v, s, f"{path}[{i}]") for i, (v, s) in enumerate(zip(value, spec)))
        if isinstance(spec, dict) and isinstance(value, dict) and spec.keys() == value.keys():
            return {k: self._convert_like(value[k], spec[k], f"{path}[{k!r}]") for k in value}
        return value

    def _apply_signature(self, leaves):
        """Check tensor leaves against input_signature; their specs replace them."""
        specs = nest.flatten(self.input_signature)
        tensors = [(p, x) for p, x in leaves if _is_tensor_leaf(x)]
        if len(tensors) != len(specs):
            raise TypeError(f"{self.__name__}: input_signature has {len(specs)} tensors, but the call "
                            f"passes {len(tensors)} ({', '.join(p for p, _ in tensors) or 'none'})")
        it = iter(specs)
        out = []
        for p, x in leaves:
            if _is_tensor_leaf(x):
                spec = next(it)
                t = x if isinstance(x, TensorSpec) else convert_to_tensor(x)
                if t.dtype != spec.dtype:
                    raise TypeError(f"{self.__name__}: argument {p} has dtype {t.dtype.name}, "
                                    f"but input_signature says {spec}")
                if not spec.is_compatible_with(t):
                    raise ValueError(f"{self.__name__}: argument {p} has shape {tuple(t.shape)}, "
                                     f"incompatible with input_signature {spec}")
                out.append((p, spec))
            else:
                out.append((p, x))
        return out

    def _key(self, named, leaves):
        if self.input_signature is not None:
            leaves = self._apply_signature(leaves)
        struct = tuple((n, nest.structure_signature(v)) for n, v in named.items())
        parts, desc = [], []
        for p, x in leaves:
            k, d = _describe_leaf(x)
            parts.append(k)
            desc.append((p, d))
        return (struct, tuple(parts)), desc, leaves

    # -- calls --------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        key = None
        if not kwargs and STATE.builder is None and not TAPES:
            # the fast path: a signature seen before, no tape, no binding or checks
            try:
                key, arrays = _fast_key(args)
                run = self._fast.get(key)
            except TypeError:  # an unhashable value (e.g. a str subclass): the full path
                key = run = None
            if run is not None:
                return run(arrays)
        if STATE.builder is not None:  # called while tracing another function: inline it
            return self._call_traced(args, kwargs)
        conc, leaves = self._concrete(args, kwargs)
        out = conc._call_leaves([x for _, x in leaves if _is_tensor_leaf(x)])
        n = len(args)
        if key is not None and len(self._fast) < FAST_KEYS and all(x is a for (_, x), a in zip(leaves, args)) \
                and len(leaves) >= n and all(type(x) in _FAST_SCALARS for _, x in leaves[n:]):
            # the arguments are the first leaves (no nesting); the rest are immutable
            # defaults, the same at every call
            self._fast[key] = conc.runner()
        return out

    def get_concrete_function(self, *args, **kwargs) -> "ConcreteFunction":
        """The compiled form for these arguments (tensors or TensorSpecs)."""
        if not args and not kwargs and self.input_signature is not None:
            args = tuple(self.input_signature)
        return self._concrete(args, kwargs)[0]

    def profile(self, *args, n: int = 10, quiet: bool = False, **kwargs):
        """Profile ``n`` calls on these arguments: each kernel and library call
        of the compiled function with its time, share, elements, bytes and
        source line (``tfc.frontend.profile.Profile``; printed unless ``quiet``).
        Variables are left as they were."""
        return self.get_concrete_function(*args, **kwargs).profile(*args, n=n, quiet=quiet, **kwargs)

    def _concrete(self, args, kwargs):
        bound, named, leaves = self._leaves(args, kwargs)
        key, desc, sig_leaves = self._key(named, leaves)
        conc = self._cache.get(key)
        if conc is None:
            reason = self._reason(desc)
            conc = self._trace(bound, named, sig_leaves)
            self._cache[key] = conc
            self._traces.append(_Trace(desc, reason, key))
            if self.trace_count > RETRACE_WARNING:
                warnings.warn(
                    f"{self.__name__} has been traced {self.trace_count} times; tracing is slow. "
                    f"Latest reason: {reason}. Pass tensors (not Python values) for changing "
                    f"arguments, or an input_signature with None dimensions.", RuntimeWarning, stacklevel=3)
        return conc, leaves

    def _reason(self, desc) -> str:
        if not self._traces:
            args = ", ".join(f"{p}: {d}" for p, d in desc)
            return f"first call ({args})" if args else "first call"
        prev = self._traces[-1].desc
        before, after = dict(prev), dict(desc)
        changes = []
        for p, d in desc:
            if p not in before:
                changes.append(f"argument {p} is new ({d})")
            elif before[p] != d:
                changes.append(f"argument {p} changed from {before[p]} to {d}")
        for p, d in prev:
            if p not in after:
                changes.append(f"argument {p} ({d}) is gone")
        if not changes:
            changes.append("a new combination of argument values seen before")
        return "; ".join(changes)

    def _traced_function(self):
        """What tracing runs: ``f`` converted by AutoGraph (once), or ``f`` as is."""
        if not self.autograph:
            return self.python_function
        if self._converted is None:
            from tfc.frontend.autograph import to_graph
            from tfc.frontend.autograph.transformer import ConversionError

            try:
                self._converted = to_graph(self.python_function)
            except ConversionError as e:
                if "source is unavailable" not in str(e):
                    raise
                # Typed at a prompt or made by exec: trace it as written, and say
                # so; Python control flow on a tensor then fails with a clear error.
                warnings.warn(f"{e}; tracing it without AutoGraph (define it in a file to convert "
                              "Python control flow, or pass autograph=False to silence this)", stacklevel=4)
                self._converted = self.python_function
        return self._converted

    def _call_traced(self, args, kwargs):
        """The traced function called while tracing, counting such calls. A recursive
        call is inlined (unrolled) like any other; a recursion that never ends while
        tracing (it stops on a tensor condition) becomes a clear error at the outermost call."""
        from tfc.frontend.tracing import _where

        if self._depth and self._recursed_at is None:
            self._recursed_at = _where()
        self._depth += 1
        try:
            return self._traced_function()(*args, **kwargs)
        except RecursionError:
            if self._depth > 1 or self._recursed_at is None:
                raise
            raise RecursionError(
                f"{self._recursed_at}: {self.__name__} calls itself while it is traced, and the recursion "
                f"did not end (within Python's recursion limit): a recursive tfc.function is unrolled while "
                f"tracing, so it must stop on Python values; one that stops on a tensor condition is not "
                f"supported (use a loop)") from None
        finally:
            self._depth -= 1
            if not self._depth:
                self._recursed_at = None

    def _trace(self, bound, named, leaves, may_create_variables=None) -> "ConcreteFunction":
        from tfc.frontend.tracing import FunctionBuilder, tracing_into

        from tfc.backends import backend

        backend(self.target)  # an unknown or unimplemented target fails before tracing
        builder = FunctionBuilder(re.sub(r"\W", "", self.__name__.rsplit(".", 1)[-1]) or "main")
        # variables are made on the first trace only: the compiled code reuses them on
        # later calls, so one made on every call (as Python would) is an error (TensorFlow's rule)
        builder.may_create_variables = not self._traces if may_create_variables is None else may_create_variables
        new_leaves = []
        specs = []
        for path, x in leaves:
            if _is_tensor_leaf(x):
                spec = x.spec if isinstance(x, TensorSpec) else Spec(tuple(x.shape), convert_to_tensor(x).dtype)
                specs.append(spec)
                new_leaves.append(builder.add_input(spec.shape, spec.dtype, path))
            else:
                new_leaves.append(x)
        it = iter(_datasets_rebuilt(new_leaves))
        for name, value in named.items():
            n = len(nest.flatten(value))
            named[name] = nest.pack_sequence_as(value, [next(it) for _ in range(n)]) if nest.is_nested(value) \
                else next(it)
        if bound is not None:
            bound.arguments.update(named)
            call_args, call_kwargs = bound.args, bound.kwargs
        else:
            call_args, call_kwargs = tuple(named.values()), {}
        with tracing_into(builder):
            out = self._call_traced(call_args, call_kwargs)
        if builder.conversion_error is not None:  # raised in a tensor branch, then caught
            raise builder.conversion_error
        if builder.created_variables:  # trace again, as TensorFlow does: no variable may be made anew
            return self._trace(bound, named, leaves, may_create_variables=False)
        conc = ConcreteFunction.from_trace(builder, specs, out, self)
        conc.dataset_pipelines = _pipelines(leaves)
        return conc


# How many shape specializations a compiled function with run-time dimensions
# keeps (least recently used first out); TFC_SPECIALIZATIONS overrides it.
# 0: no specialization, the generic form runs every shape.
SPECIALIZATIONS = max(0, int(os.environ.get("TFC_SPECIALIZATIONS", "") or 8))
SPECIALIZATION_LOG = 100  # explain() lists this many of the latest specializations per compiled function


def _shape_text(shapes) -> str:
    return ", ".join("[" + ", ".join(str(d) for d in s) + "]" for s in shapes)


def _gpu_variable_error(conc):
    from tfc.core.device import DeviceMismatchError

    names = ", ".join(v.name for v in conc.variables if type(v) is GpuVariable)
    return DeviceMismatchError(
        f"{conc.name}: compiled for target={conc.target!r}, it reads variables that live on the GPU ({names}); "
        f"tfc does not copy them implicitly: compile the function with target='cuda', or make the variables "
        f"on the host (outside `with tfc.device('gpu:0')`)")


class _Form:
    """One compiled form of a ConcreteFunction: an optimized L1 module, the
    stages the driver lowers it to and the backend's executable, all made on
    first use. The generic form compiles the module as traced (its shapes may
    hold run-time dimensions); a specialization compiles it for the concrete
    ``shapes`` of the tensor arguments."""

    def __init__(self, conc, module, shapes=None, note=None):
        self.conc = conc
        self.module = module
        self.shapes = shapes          # None: the generic form
        self.note = note              # why a shape key runs the generic form
        self.made_at = time.time()
        self.evicted_at = None
        self.specialize_s = None      # seconds tfc-specialize and the L1 passes took
        self._lowered = None
        self._compiled = None
        self._runner = None
        self._verifier = None

    @property
    def lowered(self):
        """L2, L3, the plan and the L2 -> L3 value map (tfc.passes.driver)."""
        if self._lowered is None:
            from tfc.passes.driver import lower

            self._lowered = lower(self.module)
        return self._lowered

    @property
    def compiled(self):
        """The backend's executable (from its cache when there: nothing lowered)."""
        if self._compiled is None:
            be = self.conc.backend
            key = None
            if be.caching():
                from tfc.passes.driver import source_key

                key = source_key(self.module)
                self._compiled = be.load(key, self.conc.name)
            if self._compiled is None:
                low = self.lowered
                self._compiled = be.compile(low.loops, low.plan, self.conc.name, key)
        return self._compiled

    def runner(self):
        """``run(arrays)`` on checked input arrays: the generated function itself,
        its result wrapped, where a call needs nothing around it (no variables,
        no verify, one tensor out, no arena); else the general call."""
        if self._runner is None:
            conc = self.conc
            # checked once, here: the variables and their kind are fixed at the trace
            if conc.target != "cuda" and any(type(v) is GpuVariable for v in conc.variables):
                raise _gpu_variable_error(conc)
            fn = None
            if not (conc.variables or conc.verify or conc._out_mask != [True]
                    or nest.is_nested(conc._out_structure)):
                fn = self.compiled.direct()
            if fn is None:
                self._runner = self.call
            else:
                def run(arrays):
                    return wrap(fn(*arrays, ())[0])
                self._runner = run
        return self._runner

    def call(self, arrays):
        """Run on checked input arrays; the results as the traced function's output."""
        conc = self.conc
        # a GPU variable's Cell holds its GpuTensor: a cuda function reads and
        # replaces its buffer (no copies); other targets cannot run on it
        cells = [Cell(v._t if type(v) is GpuVariable else v._value) for v in conc.variables]
        if conc.verify:
            results = self.run_verified(arrays, cells)
        else:
            results = self.compiled.call(arrays + cells)
        for v, c in zip(conc.variables, cells):
            if type(v) is GpuVariable:
                v._t = c.value
            elif c.value is not v._value:
                v._value = c.value
        it = iter(results)
        flat = [_wrap_result(next(it)) if m else s for m, s in zip(conc._out_mask, conc._out_static)]
        return nest.pack_sequence_as(conc._out_structure, flat) if nest.is_nested(conc._out_structure) \
            else flat[0]

    def verifier(self):
        """(hooked executable, {hook index: value it saw}, [L2 value by hook index],
        reference executor of L2), made on first use."""
        if self._verifier is None:
            from tfc.backends import reference_executor

            low = self.lowered
            # A buffer reused in place holds several L2 values in turn, and its hook
            # would see only the last: only buffers holding one value are compared
            # (the values written in place are checked through what they feed).
            holders = {}
            for v2, v3 in low.value_map.items():
                holders.setdefault(v3, []).append(v2)
            hooks, order = {}, []
            for v3, v2s in holders.items():
                if len(v2s) == 1:
                    hooks[v3] = len(order)
                    order.append(v2s[0])
            got = {}
            exe = self.conc.backend.compile_hooked(low.loops, low.plan, self.conc.name, hooks,
                                                   lambda i, v: got.__setitem__(i, np.array(v)))
            self._verifier = [exe, got, order, reference_executor(low.fused)]
        return self._verifier

    def run_verified(self, arrays, cells):
        """``verify=True``: the reference executor runs the L2 module beside the
        compiled code; the first value that differs raises, naming its op and line."""
        from tfc.dialects.tensor import loc_str

        conc = self.conc
        exe, got, order, ex = self.verifier()
        got.clear()
        ref_cells = [Cell(c.value) for c in cells]
        env_log = {}
        orig = ex.run_op

        def run_op(op, env):  # keep every value the reference computes
            orig(op, env)
            for r in op.results:
                env_log[r] = env[r]

        ex.run_op = run_op
        try:
            ref = ex.call(conc.name, list(arrays) + ref_cells)
        finally:
            ex.run_op = orig
        results = exe.call(arrays + cells)
        rtol, atol = conc.verify_tolerance
        for i, v2 in enumerate(order):
            if i not in got or v2 not in env_log:
                continue
            want, have = np.asarray(env_log[v2]), got[i]
            if not _close(want, have, rtol, atol):
                op = v2.owner
                what = op.name
                if what == "tfc.fused":
                    what += " (" + ", ".join(sorted({o.name for o in op.body.block.ops} - {"tfc.fused_yield"})) + ")"
                raise AssertionError(
                    f"{conc.name}: compiled code diverges from the reference at {what} ({loc_str(op)}): "
                    f"max abs difference {_maxdiff(want, have)}\nreference: {want!r}\ncompiled: {have!r}")
        for a, b in zip(ref, results):
            if not _close(np.asarray(a), np.asarray(b), rtol, atol):
                raise AssertionError(f"{conc.name}: compiled result differs from the reference: {a!r} vs {b!r}")
        return results

    def evict(self) -> None:
        """Out of the cache: its modules and executable are freed (a call running
        it now keeps what it holds); explain() still lists it."""
        self.evicted_at = time.time()
        self.module = self._lowered = self._compiled = self._runner = self._verifier = None

    def describe(self) -> str:
        """One line for Function.explain()."""
        when = time.strftime("%H:%M:%S", time.localtime(self.made_at))
        line = f"specialization for shapes {_shape_text(self.shapes)}: "
        line += f"runs the generic form ({self.note})" if self.note else f"made at {when}"
        if self.evicted_at is not None:
            line += f"; evicted at {time.strftime('%H:%M:%S', time.localtime(self.evicted_at))}"
        return line


class ConcreteFunction:
    """One trace of a tfc.function: its IR at each stage, callable.

    A trace whose tensor arguments have dimensions known only at run time
    (None in the signature) is compiled per concrete shape on first use: the
    optimized L1 module is specialized to the call's shapes (tfc-specialize,
    then the default L1 pipeline again), fused, lowered and compiled; the last
    ``SPECIALIZATIONS`` of them are kept, least recently used out first. A
    function whose shapes depend on values (not only on its input shapes), and
    shapes the specialization refuses, run the generic compiled form."""

    def __init__(self, name, module, raw_module, input_specs, variables, out_structure, out_tensor_mask,
                 out_static):
        self.name = name
        self._module = module  # None: the default L1 pipeline runs on first use (see module)
        self.raw_module = raw_module
        self.input_specs = input_specs
        self.variables = variables
        self._out_structure = out_structure
        self._out_mask = out_tensor_mask
        self._out_static = out_static
        self.target = "cpu"
        self.verify = False
        self.verify_tolerance = (1e-5, 1e-6)  # rtol, atol for floats; integers exactly
        self.grad_fns = {}  # its custom gradients, by key (set from the trace; a loaded function has none)
        self.traced_by = None  # weakref to the tfc.function it is a trace of (from_trace)
        self.dynamic = any(d is None for s in input_specs for d in s.shape)
        self._reset_forms()

    def _reset_forms(self):
        self._generic = None   # _Form of self.module, made on first use
        self._runner = None    # runner() once made
        self._by_shapes = collections.OrderedDict()  # shapes -> _Form, least recently used first
        self.specializations = []  # every _Form made for a shape key, oldest first (explain())
        self._generic_only = False  # the specialized module still had run-time shapes
        # one thread at a time makes and evicts specializations (a form another
        # thread evicted before compiling it would have no module left)
        self._forms_lock = threading.RLock()

    @classmethod
    def from_trace(cls, builder, specs, out, function=None):
        from xdsl.dialects.builtin import ModuleOp

        from tfc.passes.pipeline import VERIFY_EACH_PASS

        flat = nest.flatten(out)
        mask = [isinstance(x, Tensor) for x in flat]
        static = [None if m else x for m, x in zip(mask, flat)]
        tensors = [x for x in flat if isinstance(x, Tensor)]
        fop = builder.finish(tensors)
        raw = ModuleOp([fop])
        if VERIFY_EACH_PASS:
            raw.verify()
        conc = cls(builder.name, None, raw, specs, list(builder.variables), out, mask, static)
        conc.grad_fns = builder.grad_fns
        conc.verify = bool(getattr(function, "verify", False))
        conc.target = getattr(function, "target", "cpu")
        # the tfc.function it is a trace of: its retrace history (explain()) goes in the report
        conc.traced_by = None if function is None else weakref.ref(function)
        return conc

    @property
    def backend(self):
        """The backend of this function's target (tfc.backends)."""
        from tfc.backends import backend

        return backend(self.target)

    @property
    def module(self):
        """The L1 module after its passes: the default pipeline, run on first use
        (tfc.compile's with_passes runs its own instead, on the traced module)."""
        if self._module is None:
            from tfc.passes.pipeline import run_pipeline

            self._module = run_pipeline(self.raw_module.clone())
        return self._module

    @property
    def structured_input_signature(self):
        return [TensorSpec(s.shape, s.dtype) for s in self.input_specs]

    def with_passes(self, passes, timings=None, **options) -> "ConcreteFunction":
        """A copy whose L1 module is the traced module after ``passes`` (pass
        names; tfc.compile's ``passes=``); ``timings`` and ``options`` go to
        run_pipeline. Every stage derived from the L1 module is rebuilt on first use."""
        import copy

        from tfc.passes.pipeline import run_pipeline

        new = copy.copy(self)
        new._module = run_pipeline(self.raw_module.clone(), tuple(passes), timings=timings, **options)
        new._reset_forms()
        return new

    # -- compiled forms -------------------------------------------------------------
    @property
    def generic(self) -> _Form:
        """The form compiled from the L1 module as traced (run-time dimensions kept)."""
        if self._generic is None:
            self._generic = _Form(self, self.module)
        return self._generic

    def default_shapes(self) -> tuple:
        """The shapes a stage of a function with run-time dimensions is shown
        for when no call chose them: the last call's, else each None dimension 1."""
        if self._by_shapes:
            return next(reversed(self._by_shapes))
        return tuple(tuple(1 if d is None else d for d in s.shape) for s in self.input_specs)

    def _runner_for(self, shapes):
        """The runner of ``_form_for(shapes)``, compiled under the forms' lock:
        a form is published compiled, and eviction cannot come in between."""
        with self._forms_lock:
            return self._form_for(shapes).runner()

    def _form_for(self, shapes) -> _Form:
        """The form that runs tensor arguments of ``shapes`` (a tuple of shape
        tuples), made and cached on first use (least recently used evicted)."""
        with self._forms_lock:
            return self._form_for_locked(shapes)

    def _form_for_locked(self, shapes) -> _Form:
        form = self._by_shapes.get(shapes)
        if form is not None:
            self._by_shapes.move_to_end(shapes)
            return form
        if not self._specializes():
            return self.generic
        for s, spec in zip(shapes, self.input_specs):
            if len(s) != len(spec.shape) or any(d is not None and d != n for d, n in zip(spec.shape, s)):
                raise ValueError(f"{self.name}: shapes {_shape_text(shapes)} do not fit the signature "
                                 f"({', '.join(str(s) for s in self.input_specs)})")
        form = self._specialize(shapes)
        self._by_shapes[shapes] = form
        self.specializations.append(form)
        while len(self._by_shapes) > SPECIALIZATIONS:
            _, old = self._by_shapes.popitem(last=False)
            old.evict()
        if len(self.specializations) > SPECIALIZATION_LOG:
            del self.specializations[:-SPECIALIZATION_LOG]
        return form

    def _specialize(self, shapes) -> _Form:
        generic = self.generic
        if self._generic_only:
            form = _Form(self, generic.module, shapes, "its shapes depend on values, not only on the inputs'")
            form._runner = generic.runner()
            return form
        from tfc.passes.driver import run_time_dims, specialize

        start = time.perf_counter()
        try:
            passes = getattr(self, "passes", None)  # tfc.compile's L1 pass list, where it chose one
            module = specialize(self.module, shapes) if passes is None else specialize(self.module, shapes, passes)
        except (ValueError, TypeError, NotImplementedError) as e:
            # The generic form runs these shapes: it raises eager's error where eager
            # raises it (an op the specialization refuses may be in a branch not taken).
            form = _Form(self, generic.module, shapes, f"{type(e).__name__}: {str(e).splitlines()[0]}")
            form._runner = generic.runner()
            return form
        if run_time_dims(module):
            self._generic_only = True
            form = _Form(self, generic.module, shapes, "its shapes depend on values, not only on the inputs'")
            form._runner = generic.runner()
            return form
        form = _Form(self, module, shapes)
        form.specialize_s = time.perf_counter() - start
        return form

    def specialization(self, shapes=None) -> _Form:
        """The form that runs ``shapes`` (default ``default_shapes()``); the
        generic form of a function without run-time dimensions."""
        if not self._specializes():
            return self.generic
        shapes = self.default_shapes() if shapes is None else tuple(tuple(int(d) for d in s) for s in shapes)
        return self._form_for(shapes)

    def _specializes(self) -> bool:
        """Whether calls compile per shape: run-time dimensions, and SPECIALIZATIONS > 0."""
        return self.dynamic and SPECIALIZATIONS > 0

    def _shown(self, shapes=None) -> _Form:
        return self.specialization(shapes) if self._specializes() else self.generic

    @property
    def stages(self):
        """L2, L3, the memory plan and the L2 -> L3 value map (``driver.Lowered``)
        of the generic form, or of ``default_shapes()``'s specialization."""
        form = self._shown()
        return (self.generic if form.note else form).lowered

    @property
    def stage_times(self) -> list:
        """(step, seconds) of the stages after "tensor" that ``stages`` shows:
        the specialization (where there are run-time dimensions), the fused and
        the loops stage (lowering them first if needed)."""
        form = self._shown()
        low = (self.generic if form.note else form).lowered
        times = [] if form.specialize_s is None else [("specialize (L1)", form.specialize_s)]
        return times + list(low.timings)

    @property
    def fused_module(self):
        """The L2 stage: the optimized L1 module after the fusion pipeline (made on first use)."""
        return self.stages.fused

    @property
    def loops_module(self):
        """The L3 stage (loops dialect): buffers at planned offsets."""
        return self.stages.loops

    @property
    def compiled(self):
        """The backend's executable of the generic form (from the disk cache when there)."""
        return self.generic.compiled

    @property
    def source(self) -> str:
        """The generated module that runs this function (its specialization to
        ``default_shapes()`` where it has run-time dimensions)."""
        form = self._shown()
        return (self.generic if form.note else form).compiled.source

    @property
    def memory_plan(self):
        """Each buffer with its offset and size, the arena size and the peak (of
        the specialization to ``default_shapes()`` where there are run-time dimensions)."""
        form = self._shown()
        return (self.generic if form.note else form).compiled.plan

    @property
    def memory_plans(self) -> dict:
        """Shapes -> memory plan of each specialization kept now (compiled ones)."""
        return {s: f.compiled.plan for s, f in self._by_shapes.items() if not f.note}

    def ir(self, stage: str = "tensor", debuginfo: bool = False, shapes=None) -> str:
        """Text of a stage: "tensor" (L1, optimized), "tensor-raw" (as traced),
        "fused" (L2), "loops" (L3), or one of the backend's (``backend.stages``,
        e.g. "numpy"). For a function with run-time dimensions the fused, loops
        and backend stages are those of a specialization (``shapes``, default
        ``default_shapes()``), named in a first comment line."""
        from tfc.dialects.tensor import print_ir
        from tfc.passes.pipeline import STOPS

        if stage == "tensor":
            return print_ir(self.module, debuginfo)
        if stage == "tensor-raw":
            return print_ir(self.raw_module, debuginfo)
        be = self.backend
        if stage not in STOPS and stage not in be.stages:
            if stage in ("gpu", "ptx"):
                raise ValueError(f"IR stage {stage!r} is the cuda backend's: compile {self.name} with "
                                 f"target='cuda' (this one is compiled for target={self.target!r})")
            raise ValueError(f"unknown IR stage {stage!r} (available: tensor-raw, {', '.join(STOPS)}, "
                             f"{', '.join(be.stages)})")
        form = self._shown(shapes)
        if form.note:  # these shapes run the generic form
            form = self.generic
        if stage in be.stages:
            text = be.text(form.compiled, stage)
            comment = "#"
        else:
            text = print_ir(form.lowered.fused if stage == "fused" else form.lowered.loops, debuginfo)
            comment = "//"
        if not self.dynamic:
            return text
        if form.shapes is None:
            why = self._shown(shapes).note if self._specializes() else "TFC_SPECIALIZATIONS=0"
            head = f"{comment} the generic form, for every shape ({why})\n"
        else:
            head = f"{comment} specialized for shapes {_shape_text(form.shapes)} (signature " \
                   f"{', '.join(str(s) for s in self.input_specs)})\n"
        return head + text

    def report(self, path) -> str:
        """Write the compile report, one self-contained HTML page (tfc/frontend/report,
        docs/report.md), to ``path``; returns the path."""
        from tfc.frontend.report import write_report

        return write_report(self, path)

    def _repr_html_(self) -> str:
        """The compile report, shown inline by Jupyter (in a frame of its own)."""
        from tfc.frontend.report import notebook_html

        return notebook_html(self)

    @property
    def ptx(self) -> str:
        """The PTX of a function compiled for target="cuda" (of ``default_shapes()``'s
        specialization where there are run-time dimensions)."""
        if self.target != "cuda":
            raise ValueError(f"{self.name} is compiled for target={self.target!r}; .ptx is the PTX of "
                             "target='cuda'")
        return self.ir("ptx")

    # -- calls ----------------------------------------------------------------------
    # the pipelines of the dataset arguments it was traced for: the compiled code
    # runs only those (tfc/data/traced.py)
    dataset_pipelines = ()

    def __call__(self, *args, **kwargs):
        leaves = _argument_leaves(args, kwargs)
        if _pipelines(leaves) != self.dataset_pipelines:
            raise TypeError(f"{self.name}: a dataset argument's pipeline (its stages, functions, batch sizes or "
                            f"element structure) differs from the one this concrete function was traced for; "
                            f"call the tfc.function instead, which traces each pipeline")
        return self._call_leaves([x for _, x in leaves if _is_tensor_leaf(x)])

    def profile(self, *args, n: int = 10, quiet: bool = False, **kwargs):
        """Profile ``n`` calls on these arguments (see Function.profile): the
        form that runs their shapes, its profiling variant."""
        from tfc.frontend.profile import profile_form

        arrays = self._arrays(_tensor_leaves(args, kwargs))
        form = self._form_for(tuple(a.shape for a in arrays)) if self._specializes() else self.generic
        result = profile_form(self.generic if form.note else form, arrays, n)
        if not quiet:
            print(result.table())
        return result

    def _arrays(self, tensors) -> list:
        """The checked input arrays of a call's tensor arguments."""
        if len(tensors) != len(self.input_specs):
            raise TypeError(f"{self.name}: expected {len(self.input_specs)} tensor arguments, got {len(tensors)}")
        arrays = []
        for i, (x, spec) in enumerate(zip(tensors, self.input_specs)):
            t = convert_to_tensor(x)
            if t.dtype != spec.dtype or not TensorSpec(spec.shape, spec.dtype).is_compatible_with(t):
                raise ValueError(f"{self.name}: tensor argument {i} is {Spec(tuple(t.shape), t.dtype)}, "
                                 f"the function was compiled for {spec}")
            # a GPU tensor goes to a cuda function as it is (its buffer, no copy)
            arrays.append(t if type(t) is GpuTensor and self.target == "cuda" else t._value)
        return arrays

    def _call_leaves(self, tensors):
        arrays = self._arrays(tensors)
        if TAPES and self._watched(tensors):
            return self._call_recorded(tensors)
        return self.runner()(arrays)

    def runner(self):
        """``run(arrays)``: the call on checked input arrays (also Function's fast
        path); with run-time dimensions, one dict lookup by the arrays' shapes
        finds the specialization."""
        if self._runner is None:
            if not self._specializes():
                self._runner = self.generic.runner()
            else:
                by_shapes, runner_for = self._by_shapes, self._runner_for
                move = by_shapes.move_to_end

                def run(arrays):
                    shapes = tuple([a.shape for a in arrays])
                    form = by_shapes.get(shapes)
                    # read once: another thread evicting the form clears it
                    runner = None if form is None else form._runner
                    if runner is None:
                        runner = runner_for(shapes)
                    else:
                        try:
                            move(shapes)
                        except KeyError:  # evicted by another thread meanwhile: it still runs
                            pass
                    return runner(arrays)
                self._runner = run
        return self._runner

    def _watched(self, tensors) -> bool:
        from tfc.frontend.cfgrad import watched

        return watched(self, tensors)

    def _call_recorded(self, tensors):
        """The call as one tape entry; its gradient runs a compiled backward function."""
        from tfc.frontend.cfgrad import call_recorded

        return call_recorded(self, tensors)


def _wrap_result(value) -> Tensor:
    """A result as a Tensor: a host array wrapped, a GPU tensor (a cuda
    function called with GPU tensors) as it is."""
    return value if type(value) is GpuTensor else wrap(value)


def _close(a, b, rtol, atol) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(a, b))


def _maxdiff(a, b):
    try:
        return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    except (ValueError, TypeError):
        return "n/a"


def function(f=None, input_signature=None, autograph=True, target="cpu", verify=False):
    """Compile ``f`` (see the module docstring); usable as ``@function`` or
    ``@function(input_signature=[...])``."""
    def decorate(fn):
        return Function(fn, input_signature=input_signature, autograph=autograph, target=target,
                        verify=verify)

    return decorate if f is None else decorate(f)
