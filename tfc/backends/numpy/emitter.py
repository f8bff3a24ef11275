"""The numpy backend's code generator: one L3 (``loops``) function -> the source
of a readable Python module.

- ``loops.parallel`` (elementwise): a chunk function writing each body op with
  a numpy ufunc and ``out=`` into per-thread scratch (reused by liveness inside
  the body), the last op straight into the output's arena view; it runs over
  cache-sized chunks of the outermost dimension, on a thread pool for large
  kernels (ufuncs release the GIL);
- ``loops.parallel`` with a reduction: the body on whole arrays, then the
  registry's ``reduce_*`` kernel (eager's summation order), into the buffer;
- 0-d values are numpy scalars of their dtype (float32 rounds as float32,
  int32 wraps), with Python operators and statements for control flow;
- ``loops.subview`` / ``loops.transpose_view`` / ``loops.reshape``: basic
  slicing (``x[2:8:2, ::-1]``), ``.transpose(perm)`` and ``.reshape`` (always
  a view: a buffer the IR does not own, an argument or a library result, is
  made contiguous first with ``np.ascontiguousarray``, which copies only what
  a caller passed non-contiguous); a ``loops.parallel`` that only copies (its
  body yields an input or a constant) is one ``np.copyto``;
- a body with ``loops.index`` / ``loops.load_at``: open grids (``np.arange``
  along each dim, dim 0 over the chunk's rows) and fancy indexing of the
  captured buffers (kernel parameters after the outputs), then the scalar
  body as ufuncs;
- ``loops.library``: the registry kernel (``np.matmul(..., out=view)`` for matmul),
  after eager's shape inference on the run-time shapes where the operands have
  dims unknown when compiling (``rt.shape_check``).

The module defines ``build(K)`` (K: the constant arrays) returning
``(views, fn)``: ``views(arena)`` makes every arena view once per arena, and
``fn(*args, *refs, V)`` runs the function with those views. Errors are silenced
as in eager mode's quiet kernels (``np.errstate(all="ignore")`` around the call).

No text from the IR reaches the source but as a generated name (``v3_x``: the
ASCII letters, digits and ``_`` of a name hint after a fresh prefix; the
function's name checked by ``function_name``) or a ``repr`` literal: the IR may
come from a file (``tfc.load``). An exception raised in the generated code is
translated by ``rt.located`` through the module's ``_SITES`` (source line ->
the op it came from, its location and operands): eager's error for that op,
naming the user's line, at no cost until something raises.
"""
from __future__ import annotations

import builtins
import keyword
import re
import string

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, MemRefType
from xdsl.ir import BlockArgument, Operation

from tfc.backends.numpy.runtime import PARALLEL_MIN
from tfc.backends.vectorized import IMPLS, UFUNCS
from tfc.dialects import loops as L
from tfc.dialects.fused import ARG_KINDS, flat_period
from tfc.dialects.tensor import RefType, dtype_of, loc_str
from tfc.ops import _infer as inf

# working set of one chunk (inputs, outputs, scratch): about a core's L2 (1-2 MiB on
# current x86 servers). Kernels large enough for the thread pool take four times
# that: fewer ufunc calls (~1 us each) beat a working set that spills to L3 (2-core
# EPYC, 1 MiB L2, compiled twice and interleaved in one process: GELU over 2^24
# floats 13.5 ms at 4 MiB vs 14.9 at 2 MiB, the L-BFGS loss+gradient 100 vs 103 ms;
# 8 MiB no better); smaller ones keep the smaller scratch (it counts in the memory
# plan: the MLP step's plan is 58% of eager's peak with 1 MiB, 66% with 2 MiB).
CHUNK_BYTES = 1 << 20
BIG_ALLOC = 1 << 20  # results at least this large come from the runtime's buffer cache
LIBRARY_TEMPS = 3  # arrays of its result's size that a row-wise library kernel makes (see _library_rows)
HEAVY_PASSES = 4  # a chunked kernel of k times this many array ops counts k times its elements toward the pool
TREE_MIN = 1 << 14  # full float sums/means of at least this many elements run as chunk trees (tree_sum)

_UFUNC = {name: f.__name__ for name, f in UFUNCS.items()}  # op -> np.<name>
# (arith.bitcast: int8 <-> uint8, the same bits, which astype keeps; only the GPU
# passes make float bitcasts, and they never reach this backend)
_CASTS = {"arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.extsi",
          "arith.extui", "arith.trunci", "arith.bitcast"}
_FCMP = {"oeq": "==", "une": "!=", "olt": "<", "ole": "<=", "ogt": ">", "oge": ">="}
_ICMP = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
         # unsigned (ui8) values are uint8 arrays or non-negative Python ints
         "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
_CMP_UFUNC = {"==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater",
              ">=": "greater_equal"}
# scalar forms: Python operators on numpy scalars keep the dtype
_RING = ("arith.addi", "arith.subi", "arith.muli")
_SCALAR_OP = {"arith.addf": "+", "arith.addi": "+", "arith.subf": "-", "arith.subi": "-",
              "arith.mulf": "*", "arith.muli": "*", "arith.divf": "/", "arith.floordivsi": "//",
              "arith.andi": "&", "arith.ori": "|", "arith.xori": "^"}


# names the generated code looks up in build()'s scope, the module's and the
# builtins' (abs, float, ...), which the generated function must not shadow
_RESERVED = frozenset({"views", "rt", "np", "R", "K", "build", "_hook", "_SITES", "NEEDS_ERRSTATE",
                       "HAS_VIEWS", "PROFILE_SITES", "_clock"}) | frozenset(dir(builtins))
# the inference of elementwise ops whose shape rule is numpy's broadcasting
_BROADCASTING = frozenset(f.__code__ for f in (inf.unary(None), inf.binary(None), inf.binary_ufunc(None, None)))
_BUILD_NAME = re.compile(r"[A-Za-z_]+[0-9]+(_[0-9]+)?")  # c0, lib3, reduce2_0, ...


def function_name(name: str) -> str:
    """A Python identifier for the IR function ``name`` (any string): its ASCII
    letters, digits and ``_``, prefixed where it could be a keyword, a builtin
    or one of the module's own names."""
    s = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    if not s.isidentifier() or keyword.iskeyword(s) or s in _RESERVED or _BUILD_NAME.fullmatch(s):
        s = "fn_" + s
    return s


def check_format(op, text: str, n: int, what: str) -> None:
    """``text.format(*n values)`` as a print or assert formats: only what tracing
    writes (``_template`` in tfc.frontend.tracing): text with ``{{``/``}}``
    escaped and one plain ``{}`` per value. Anything else is refused with a
    ValueError naming the op's location (compiled IR may come from a file):
    str.format evaluates an index, a conversion or a format spec (attribute
    access in nested fields, a width that allocates gigabytes)."""
    try:
        fields = [(f, c, spec) for _, f, spec, c in string.Formatter().parse(text) if f is not None]
    except ValueError as e:
        raise ValueError(f"{loc_str(op)}: {op.name}: bad {what} {text!r}: {e}") from None
    for f, conv, spec in fields:
        if f or conv is not None or spec:
            field = f + ("" if conv is None else "!" + conv) + (":" + spec if spec else "")
            raise ValueError(f"{loc_str(op)}: {op.name}: {what} {text!r} has a field {{{field}}}, "
                             "not a plain {}")
    if len(fields) != n:
        raise ValueError(f"{loc_str(op)}: {op.name}: {what} {text!r} has {len(fields)} fields for its {n} values")


def _one_step(op) -> bool:
    """Written by one ufunc call, so its output may be one of its inputs."""
    return op.name in _UFUNC or op.name in _CASTS or op.name in ("arith.cmpf", "arith.cmpi")


def np_dtype(elt) -> str:
    return "np." + np.dtype(dtype_of(elt).as_numpy_dtype).name


def _cmp_symbol(op) -> str:
    from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS, CMPI_COMPARISON_OPERATIONS

    p = op.predicate.value.data
    if op.name == "arith.cmpf":
        pred = CMPF_COMPARISON_OPERATIONS[p]
        table = _FCMP
    else:
        pred = CMPI_COMPARISON_OPERATIONS[p]
        table = _ICMP
    if pred not in table:
        raise NotImplementedError(f"{op.name} predicate {pred} in the numpy backend")
    return table[pred]


# -- 0-d values outside kernels: Python numbers ---------------------------------------
# Function-level 0-d values are Python ints (integers, wrapped to their width
# only after ops that can overflow), Python bools (i1) and Python floats (f64:
# IEEE double, exact); float32/float16 stay numpy scalars so they round as eager.
# They become numpy values where they leave the scalar code (kernels, returns,
# variables, print, hooks).

def scalar_kind(t) -> str:
    """"int", "bool", "float" (Python values) or "np" (numpy scalar) for a 0-d type."""
    dt = dtype_of(t)
    if dt.is_bool:
        return "bool"
    if dt.is_integer:
        return "int"
    return "float" if dt.itemsize == 8 else "np"


def _int_range(t):
    info = np.iinfo(dtype_of(t).as_numpy_dtype)
    return int(info.min), int(info.max)


def py_literal(x) -> str | None:
    """Python source of a constant, or None where a name is needed (inf, nan)."""
    if isinstance(x, bool):
        return repr(x)
    if isinstance(x, int):
        return str(x) if x >= 0 else f"({x})"
    if x != x or x in (float("inf"), float("-inf")):
        return None
    return repr(x) if not str(x).startswith("-") else f"({x!r})"


def chunk_bytes(elements: int) -> int:
    return 4 * CHUNK_BYTES if elements >= PARALLEL_MIN else CHUNK_BYTES


def _itemsize(t) -> int:
    return np.dtype(dtype_of(L.element_of(t)).as_numpy_dtype).itemsize


class Emitter:
    def __init__(self, f3, hooks: dict | None = None, profile: bool = False):
        self.f = f3
        self.hooks = hooks or {}   # L3 value -> index: call _hook(index, value) after it is made
        # profile: each kernel, library call and copy timed, _hook(site, start[, arrays]) after it
        self.profile = profile
        self.profile_sites: list = []  # (label, location, elements, bytes); None: counted at run time
        self.names: dict = {}
        self.n = 0
        self.build_lines: list[str] = []   # inside build(K): constants, kernels
        self.consts: list[np.ndarray] = []
        self.scalar_consts: dict = {}
        self.kernels = 0
        self.scratch_bytes = 0
        self.views: list[str] = []
        self.known: dict = {}          # 0-d value -> its numpy value, known at emit time
        self.uses_numpy = False        # numpy calls that may warn: run under np.errstate
        self.unwrapped: set = set()    # inlined integer sums/products not yet wrapped to their width
        self.lazy: set = set()         # counters wrapped once after their loop (see _counters)
        self.donors: dict = {}  # loops.alloc that may take over a variable's array -> its local
        self.site_operands: list = []  # the op being emitted: its operands (values or names) ...
        self.site_attrs = None         # ... and the source of its registry attributes (see _site)
        self._captured: dict = {}      # the kernel being emitted: captured buffer -> its name there
        self._rows_chunked = False     # ... runs over chunks of rows lo:hi (loops.index 0 is that range)

    # -- names ------------------------------------------------------------------------
    def name(self, v) -> str:
        s = self.names.get(v)
        if s is None:
            hint = "".join(c for c in (v.name_hint or "") if c.isascii() and (c.isalnum() or c == "_"))
            s = self.names[v] = f"v{self.n}" + (f"_{hint}" if hint and not hint[0].isdigit() else "")
            self.n += 1
        return s

    def dtype_const(self, elt) -> str:
        """A build-time np.dtype object (np.array(x, dtype) is fastest given one)."""
        key = ("dtype", np_dtype(elt))
        name = self.scalar_consts.get(key)
        if name is None:
            name = self.scalar_consts[key] = f"d{len(self.scalar_consts)}"
            self.build_lines.append(f"{name} = np.dtype({key[1]})")
        return name

    def const_scalar(self, attr, elt) -> str:
        dt = np_dtype(elt)
        if isinstance(attr, FloatAttr):
            val = float(attr.value.data)
            lit = f"float.fromhex({val.hex()!r})" if val == val and abs(val) != float("inf") else f"float({str(val)!r})"
        else:
            val = int(attr.value.data)
            if dt == "np.bool":
                return "np.True_" if val else "np.False_"
            if str(elt) == "i1":
                return "np.True_" if val else "np.False_"
            lit = str(val)
        key = (dt, lit)
        name = self.scalar_consts.get(key)
        if name is None:
            name = self.scalar_consts[key] = f"c{len(self.scalar_consts)}"
            self.build_lines.append(f"{name} = {dt}({lit})")
        return name

    # -- scalar ops (function level, and scalar values in bodies) ----------------------
    def scalar_expr(self, op, args) -> str:
        n = op.name
        if n == "arith.constant":
            return self.const_scalar(op.value, op.result.type)
        if n in _SCALAR_OP:
            return f"{args[0]} {_SCALAR_OP[n]} {args[1]}"
        if n in ("arith.cmpf", "arith.cmpi"):
            return f"{args[0]} {_cmp_symbol(op)} {args[1]}"
        if n == "arith.select":
            return f"{args[1]} if {args[0]} else {args[2]}"
        if n == "arith.negf":
            return f"-{args[0]}"
        if n in ("math.absf", "math.absi"):
            return f"abs({args[0]})"
        if n in _CASTS:
            return f"{args[0]}.astype({np_dtype(op.results[0].type)})"
        if n == "math.ipowi":
            return f"rt.ipow({args[0]}, {args[1]})[()]"
        if n in _UFUNC:
            return f"np.{_UFUNC[n]}({', '.join(args)})"
        raise NotImplementedError(f"the numpy backend cannot emit {n}")


    # -- scalar code: 0-d values outside kernels (see scalar_kind) ----------------------
    def is_py(self, v) -> bool:
        return not isinstance(v.type, (MemRefType, RefType)) and scalar_kind(v.type) != "np"

    def np_const(self, x) -> str:
        """A build-time numpy scalar constant equal to ``x`` (float32/float16 values)."""
        dt = "np." + np.dtype(type(x)).name
        val = float(x)
        lit = f"float.fromhex({val.hex()!r})" if val == val and abs(val) != float("inf") else f"float({str(val)!r})"
        key = (dt, lit)
        name = self.scalar_consts.get(key)
        if name is None:
            name = self.scalar_consts[key] = f"c{len(self.scalar_consts)}"
            self.build_lines.append(f"{name} = {dt}({lit})")
        return name

    def const_value(self, v, x):
        """``v`` is the emit-time constant ``x`` (a numpy scalar of its type)."""
        self.known[v] = x
        if scalar_kind(v.type) == "np":
            self.names[v] = self.np_const(x)
            return
        py = x.item()
        lit = py_literal(py)
        if lit is None:  # inf, nan: a build-time constant
            key = ("py", str(py))
            lit = self.scalar_consts.get(key)
            if lit is None:
                lit = self.scalar_consts[key] = f"c{len(self.scalar_consts)}"
                self.build_lines.append(f"{lit} = float({str(py)!r})")
        self.names[v] = lit

    def _fold(self, op):
        """The value of an op on constants, computed as the vectorized interpreter
        (eager semantics) does; None where that raises (left to run time)."""
        impl = IMPLS.get(op.name)
        if impl is None:
            return None
        want = dtype_of(op.results[0].type).as_numpy_dtype
        try:
            with np.errstate(all="ignore"):
                out = np.asarray(impl(op, [np.asarray(self.known[v]) for v in op.operands]))
        except Exception:
            return None
        return out.astype(want)[()]

    def to_numpy(self, v) -> str:
        """Source of ``v`` as a numpy scalar of its type (where it leaves scalar code)."""
        if not self.is_py(v):
            return self.name(v)
        if v in self.known:
            return self.const_scalar_np(self.known[v])
        return f"{np_dtype(v.type)}({self.name(v)})"

    def const_scalar_np(self, x) -> str:
        if x.dtype == np.bool_:
            return "np.True_" if x else "np.False_"
        if x.dtype.kind == "f":
            return self.np_const(x)
        key = ("np." + x.dtype.name, str(int(x)))
        name = self.scalar_consts.get(key)
        if name is None:
            name = self.scalar_consts[key] = f"c{len(self.scalar_consts)}"
            self.build_lines.append(f"{name} = {key[0]}({key[1]})")
        return name

    def scalar_op(self, op, out, pad):
        """One arith/math op on 0-d values outside kernels: constants fold, Python
        numbers use Python operators (integers wrapped where they can overflow),
        anything else runs on numpy scalars."""
        r = op.results[0]
        if op.name == "arith.constant":
            self.const_value(r, np.array(op.value.value.data, dtype_of(r.type).as_numpy_dtype)[()])
            return
        if op.operands and all(v in self.known for v in op.operands):
            x = self._fold(op)
            if x is not None:
                self.const_value(r, x)
                return
        args = [self.name(v) for v in op.operands]
        res = self.py_expr(op, args)
        fallback = res is None
        if fallback:
            self.uses_numpy = True
            nargs = [a if (i == 0 and op.name == "arith.select") else self.to_numpy(v)
                     for i, (v, a) in enumerate(zip(op.operands, args))]
            expr = self.scalar_expr(op, nargs)
            if self.is_py(r):
                expr = f"({expr}).item()"
            res = expr, None
        expr, wrap = res
        if wrap == "alias":
            self.names[r] = expr
            return
        user = self._inline_user(op) if not fallback else None  # numpy may raise: keep its place
        if user is not None and (wrap is None or (user.name in _RING and user.results[0].type == r.type)):
            # written into its only user's expression; a sum or product feeding
            # another one wraps once, at the end (wrapping commutes with them)
            self.names[r] = f"({expr})"
            if wrap is not None:
                self.unwrapped.add(r)
            return
        if r not in self.names and isinstance(user, L.YieldOp) and isinstance(user.parent_op(), L.IfOp):
            # the only use is a branch's yield: compute straight into the if's result
            self.names[r] = self.name(user.parent_op().results[list(user.operands).index(r)])
        name = self.name(r)
        out.append(pad + f"{name} = {expr}")
        if wrap is not None and r not in self.lazy:
            side, lo, hi = wrap
            test = {"both": f"not {lo} <= {name} <= {hi}", "hi": f"{name} > {hi}", "lo": f"{name} < {lo}"}[side]
            out.append(pad + f"if {test}: {name} = (({name} - ({lo})) & {hi - lo}) + ({lo})")

    def _inline_user(self, op):
        """The only user of a Python-number result when it is in the same block
        (evaluated there, later, once: the operands' names do not change in
        between, as carried variables are assigned only by the block's yield)."""
        if op.results[0] in self.hooks or len(op.results) != 1:
            return None
        r = op.results[0]
        user = r.get_user_of_unique_use()
        if user is None or user.parent_block() is not op.parent_block():
            return None
        return user

    def py_expr(self, op, a):
        """(Python expression, wrap) for an op on Python numbers, or None. wrap:
        None, "alias" (the value is ``a[0]``), or (side, lo, hi): the result's
        range, checked on the side(s) where it can leave it."""
        n = op.name
        vs = op.operands
        r = op.results[0]
        if not vs:
            return None
        kin, kr = scalar_kind(vs[0].type), scalar_kind(r.type)

        def c(i):
            x = self.known.get(vs[i])
            return None if x is None else x.item()

        if n == "arith.select":
            return f"{a[1]} if {a[0]} else {a[2]}", None
        if n in ("arith.cmpi", "arith.cmpf") and kin != "np":
            return f"{a[0]} {_cmp_symbol(op)} {a[1]}", None
        if kin in ("int", "bool") and n in ("arith.andi", "arith.ori", "arith.xori"):
            if n == "arith.xori" and kin == "bool" and c(1) is True:
                return f"not {a[0]}", None
            return f"{a[0]} {_SCALAR_OP[n]} {a[1]}", None
        if kin == "int" and kr == "int":
            lo, hi = _int_range(r.type)
            if n in ("arith.addi", "arith.subi", "arith.muli"):
                x, y = c(0), c(1)
                side = "both"
                if n == "arith.addi" and (x, y) != (None, None):
                    side = "hi" if (y if y is not None else x) >= 0 else "lo"
                elif n == "arith.subi" and y is not None:
                    side = "lo" if y >= 0 else "hi"
                elif n == "arith.subi" and x is not None:
                    side = "hi" if x >= 0 else "lo"
                elif n == "arith.muli" and (x in (0, 1) or y in (0, 1)):
                    side = None
                if any(v in self.unwrapped for v in vs):
                    side = "both"
                return f"{a[0]} {_SCALAR_OP[n]} {a[1]}", None if side is None else (side, lo, hi)
            if n in ("arith.divui", "arith.remui"):  # non-negative: no wrap, 0 for a zero divisor
                return f"{a[0]} {'//' if n == 'arith.divui' else '%'} {a[1]} if {a[1]} else 0", None
            if n in ("arith.floordivsi", "tfc.floormod"):
                sym = "//" if n == "arith.floordivsi" else "%"
                y = c(1)
                if y is None:  # numpy: a zero divisor gives 0; MIN // -1 wraps
                    return f"{a[0]} {sym} {a[1]} if {a[1]} else 0", ("hi", lo, hi) if sym == "//" else None
                if y == 0:
                    return "0", None
                if y == -1 and sym == "//":
                    return f"-{a[0]}", ("hi", lo, hi)
                return f"{a[0]} {sym} {a[1]}", None
            if n == "arith.remsi":
                return f"rt.remsi({a[0]}, {a[1]})", None
            if n in ("arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui"):
                ge = n in ("arith.maxsi", "arith.maxui")
                return f"{a[0]} if {a[0]} {'>=' if ge else '<='} {a[1]} else {a[1]}", None
            if n == "math.absi":
                return f"abs({a[0]})", ("hi", lo, hi)
            if n in ("arith.extsi", "arith.extui"):  # extui: from an unsigned value, non-negative
                return a[0], "alias"
            if n in ("arith.trunci", "arith.bitcast"):
                return a[0], ("both", lo, hi)
        if kin == "int" and kr == "float" and n in ("arith.sitofp", "arith.uitofp"):
            return f"float({a[0]})", None  # correctly rounded, as numpy's cast
        if kin == "bool" and n == "arith.extui" and kr == "int":
            return a[0], "alias"  # a Python bool is the int 0 or 1
        if kin == "bool" and n in ("arith.uitofp", "arith.sitofp") and kr == "float":
            return f"float({a[0]})", None
        if kin == "float":
            if n in ("arith.addf", "arith.subf", "arith.mulf"):
                return f"{a[0]} {_SCALAR_OP[n]} {a[1]}", None
            if n == "arith.divf":
                if c(1):
                    return f"{a[0]} / {a[1]}", None
                return f"{a[0]} / {a[1]} if {a[1]} else rt.fdiv({a[0]}, {a[1]})", None
            if n == "arith.negf":
                return f"-{a[0]}", None
            if n == "math.absf":
                return f"abs({a[0]})", None
            if n == "arith.fptosi" and kr == "int":
                lo, hi = _int_range(r.type)
                return f"rt.f2i({a[0]}, {lo}, {hi}, {np_dtype(r.type)})", None
            if n == "arith.truncf" and kr == "np":
                return f"{np_dtype(r.type)}({a[0]})", None  # one rounding of the double, as astype
        if kin == "np" and n == "arith.extf" and kr == "float":
            return f"float({a[0]})", None  # exact
        return None

    # -- the function ------------------------------------------------------------------
    def emit(self) -> str:
        f = self.f
        args = list(f.body.block.args)
        params = [self.name(a) for a in args[:-1]]
        body: list[str] = []
        views = []
        for op in f.body.block.ops:
            if isinstance(op, L.ViewOp):
                views.append(op)
        self.names[args[-1]] = "arena"
        for a in args[:-1]:
            if not isinstance(a.type, (MemRefType, RefType)):
                get = ".item()" if self.is_py(a) else "[()]"
                body.append(f"{self.name(a)} = {self.name(a)}{get}")
        if views:
            body.append(f"{', '.join(self.name(v.result) for v in views)}, = V")
        for op in f.body.block.ops:  # before any read of the variable makes a local reference
            if isinstance(op, L.AllocOp) and "tfc.donor" in op.attributes:
                t = op.result.type
                self.donors[op] = d = f"donor{len(self.donors)}"
                body.append(f"{d} = rt.donatable({self.name(args[op.attributes['tfc.donor'].value.data])}, "
                            f"{tuple(t.get_shape())}, {np_dtype(t.element_type)})")
        self.block(f.body.block, body, 1)
        lines = [
            repr(f"Generated by tfc (numpy backend) from the L3 function @{f.sym_name.data}."),
            "import numpy as np",
            "",
            "from tfc.backends.numpy import runtime as rt",
            "",
            "# numpy calls that may warn (run under np.errstate); an arena to make views of",
            f"NEEDS_ERRSTATE = {self.uses_numpy or bool(views)!r}",
            f"HAS_VIEWS = {bool(views)!r}",
        ]
        if self.profile:
            lines += ["", "from time import perf_counter as _clock", "",
                      "# the profiled sites: (label, location, elements, bytes; None: counted at run time)",
                      "PROFILE_SITES = ["]
            lines += [f"    {site!r}," for site in self.profile_sites]
            lines.append("]")
        lines += ["", "", "def build(K, R, _hook=None):"]
        lines += [_indent("    ", s) for s in self.build_lines]
        lines.append("")
        lines.append("    def views(arena):")
        if views:
            vs = []
            for v in views:
                t = v.result.type
                shape = tuple(t.get_shape())
                nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype_of(t.element_type).as_numpy_dtype).itemsize
                off = v.offset.value.data
                vs.append(f"arena[{off}:{off + nbytes}].view({np_dtype(t.element_type)}).reshape({shape})")
            lines.append("        return (" + ", ".join(vs) + ",)")
        else:
            lines.append("        return ()")
        lines.append("")
        fname = function_name(f.sym_name.data)
        lines.append(f"    def {fname}({', '.join(params + ['V'])}):")
        lines.append("        try:")  # free until something raises
        lines += [_indent("            ", s) for s in body]
        lines.append("        except Exception as _err:")
        lines.append("            raise rt.located(_err, _SITES)")
        lines.append("")
        sites: dict = {}  # site -> the numbers of its lines
        n = 1
        for s in lines:
            if isinstance(s, _Line):
                sites.setdefault(s.site, []).append(n)
            n += s.count("\n") + 1
        lines.append("    # the op each line comes from: errors are reported as its errors (rt.located)")
        lines.append("    _SITES = rt.sites([")
        for (label, where, names, attrs), at in sites.items():
            lines.append(f"        (({label!r}, {where!r}, {names!r}, {attrs or 'None'}), {tuple(at)!r}),")
        lines.append("    ])")
        lines.append(f"    return views, {fname}")
        return "\n".join(lines) + "\n"

    def hook(self, v, out, ind):
        if v in self.hooks:
            val = self.name(v) if not self.is_py(v) else f"np.asarray({self.name(v)}, {np_dtype(v.type)})"
            out.append("    " * (ind - 1) + f"_hook({self.hooks[v]}, {val})")

    def block(self, block, out, ind, yield_to=None):
        """Emit ``block``'s ops at indentation ``ind`` (in units of 4 spaces,
        relative to the function body); a loops.yield assigns ``yield_to``."""
        pad = "    " * (ind - 1)
        for op in block.ops:
            nm = self.name
            if isinstance(op, L.ViewOp):
                continue
            n_out, n_build = len(out), len(self.build_lines)
            self.site_operands = [v for v in op.operands if not isinstance(v.type, RefType)]
            self.site_attrs = None
            if isinstance(op, func.ReturnOp):
                vals = [nm(v) if isinstance(v.type, MemRefType) else
                        f"np.array({nm(v)}, {self.dtype_const(v.type)})" if self.is_py(v) else f"np.asarray({nm(v)})"
                        for v in op.operands]
                out.append(pad + f"return ({', '.join(vals)}{',' if len(vals) == 1 else ''})")
            elif isinstance(op, L.YieldOp):
                pairs = [(t, nm(v)) for t, v in zip(yield_to, op.values) if t != nm(v)]
                if pairs:
                    out.append(pad + f"{', '.join(t for t, _ in pairs)} = {', '.join(s for _, s in pairs)}")
            elif isinstance(op, L.ConditionOp):
                c = nm(op.cond)
                c = c if not isinstance(op.cond.type, MemRefType) else f"rt.truth({c})"
                out.append(pad + f"if not {c}:")
                out.append(pad + "    break")
            elif op.name.startswith(("arith.", "math.")) or op.name in ("tfc.remf", "tfc.floormod"):
                self.scalar_op(op, out, pad)
            elif isinstance(op, L.AllocOp):
                alloc = _allocation(op.result.type)
                if op in self.donors:  # the variable's own array when nothing else holds it
                    alloc = f"{self.donors[op]} if {self.donors[op]} is not None else {alloc}"
                out.append(pad + f"{nm(op.result)} = {alloc}")
            elif isinstance(op, L.ConstantOp):
                from tfc.dialects.tensor import numpy_from_dense

                arr = numpy_from_dense(op.value)
                self.build_lines.append(f"k{len(self.consts)} = K[{len(self.consts)}]  # {arr.dtype}{list(arr.shape)}")
                self.names[op.result] = f"k{len(self.consts)}"
                self.consts.append(arr)
            elif isinstance(op, L.LoadOp):
                out.append(pad + f"{nm(op.result)} = {nm(op.source)}{'.item()' if self.is_py(op.result) else '[()]'}")
            elif isinstance(op, L.CopyOp):
                out.append(pad + f"np.copyto({nm(op.dest)}, {nm(op.source)})")
                if self.profile:
                    self.profiled(op, out, pad, n_out)
            elif isinstance(op, L.SubviewOp):
                out.append(pad + f"{nm(op.result)} = {nm(op.source)}[{_subview_index(op)}]")
            elif isinstance(op, L.TransposeViewOp):
                out.append(pad + f"{nm(op.result)} = {nm(op.source)}.transpose({tuple(op.permutation.get_values())})")
            elif isinstance(op, L.ReshapeOp):
                src = nm(op.source) if _contiguous(op.source) else f"np.ascontiguousarray({nm(op.source)})"
                out.append(pad + f"{nm(op.result)} = rt.reshape({src}, {tuple(op.result.type.get_shape())})")
            elif isinstance(op, (L.ParallelOp, L.LibraryOp)):
                self.uses_numpy = True
                saved = self.numpy_operands(op, out, pad)
                self.site_operands = [self.name(v) for v in op.ins]
                start = len(out)
                if isinstance(op, L.LibraryOp):
                    self.library(op, out, pad)
                    for r in op.res:
                        if self.is_py(r):
                            out.append(pad + f"{nm(r)} = {nm(r)}.item()")
                elif op.added_into():
                    self.scatter(op, out, pad)
                elif op.iteration_shape == ():
                    self.scalar_kernel(op, out, pad)
                elif not op.reduces and self.copy_kernel(op, out, pad):
                    pass
                elif not op.reduces:
                    self.parallel(op, out, pad)
                else:
                    self.reduction(op, out, pad)
                if self.profile:
                    self.profiled(op, out, pad, start)
                self.names.update(saved)
            elif isinstance(op, L.RaiseOp):
                self.raise_(op, out, pad)
            elif isinstance(op, L.IfOp):
                c = nm(op.cond)
                c = c if not isinstance(op.cond.type, MemRefType) else f"rt.truth({c})"
                res = [nm(r) for r in op.results]
                out.append(pad + f"if {c}:")
                n0 = len(out)
                self.block(op.then_region.block, out, ind + 1, res)
                if len(out) == n0:
                    out.append(pad + "    pass")
                out.append(pad + "else:")
                n0 = len(out)
                self.block(op.else_region.block, out, ind + 1, res)
                if len(out) == n0:
                    out.append(pad + "    pass")
            elif isinstance(op, L.WhileOp):
                self.while_(op, out, ind)
            elif isinstance(op, L.ReadVariableOp):
                s = "" if isinstance(op.result.type, MemRefType) else ".item()" if self.is_py(op.result) else "[()]"
                out.append(pad + f"{nm(op.result)} = {nm(op.ref)}.value{s}")
            elif isinstance(op, L.AssignVariableOp):
                v = nm(op.value)
                if not isinstance(op.value.type, MemRefType):
                    v = f"np.asarray({v}, {np_dtype(op.value.type)})" if self.is_py(op.value) else f"np.asarray({v})"
                out.append(pad + f"{nm(op.ref)}.value = {v}")
            elif isinstance(op, L.PrintOp):
                check_format(op, op.format.data, len(op.values), "format")
                stream = None if op.stream is None else op.stream.data
                summarize = None if op.summarize is None else op.summarize.value.data
                out.append(pad + f"rt.print_({op.format.data!r}, {stream!r}, {summarize!r}"
                           f"{''.join(', ' + self.to_numpy(v) for v in op.values)})")
            elif isinstance(op, L.AssertOp):
                check_format(op, op.message.data, len(op.data), "message")
                out.append(pad + f"if not np.all({nm(op.cond)}):")
                out.append(pad + f"    raise rt.assert_failed({loc_str(op)!r}, {op.message.data!r}"
                           f"{''.join(', ' + self.to_numpy(v) for v in op.data)})")
            else:
                raise NotImplementedError(f"the numpy backend cannot emit {op.name}")
            if not isinstance(op, (L.IfOp, L.WhileOp, L.AssertOp, L.PrintOp)):  # (these raise tfc's own errors)
                self._site(op, out, n_out)
                self._site(op, self.build_lines, n_build)
            if not isinstance(op, L.AllocOp):  # (an alloc's contents come from the kernels that write it)
                for r in op.results:
                    self.hook(r, out, ind)
            if isinstance(op, (L.ParallelOp, L.LibraryOp)):
                added = op.added_into() if isinstance(op, L.ParallelOp) else []
                for o in list(op.outs) + added:  # the buffer a view written here belongs to: seen after each write
                    if _root(o) is not o:
                        self.hook(o, out, ind)  # (a window that holds an L2 value: seen once written)
                    self.hook(_root(o), out, ind)

    def profiled(self, op, out, pad, start):
        """Time ``out[start:]`` (one kernel, library call or copy): the clock read
        before, ``_hook(site, start time)`` after; a site whose shapes are known
        only at run time passes its arrays, counted then."""
        arrays = [v for v in list(op.operands) + list(op.results) if isinstance(v.type, MemRefType)]
        shapes = [tuple(v.type.get_shape()) for v in arrays]
        i = len(self.profile_sites)
        if any(d < 0 for sh in shapes for d in sh):
            size = None
            extra = f", ({''.join(self.name(v) + ', ' for v in arrays)})"
        else:
            counts = [int(np.prod(sh, dtype=np.int64)) for sh in shapes]
            size = (max(counts, default=0), sum(c * _itemsize(v.type) for c, v in zip(counts, arrays)))
            extra = ""
        self.profile_sites.append((_profile_label(op), loc_str(op)) + (size or (None, None)))
        out.insert(start, pad + "_t0 = _clock()")
        out.append(pad + f"_hook({i}, _t0{extra})")

    def _site(self, op, lines, start):
        """Mark ``lines[start:]`` (not marked by an op nested in ``op``) as coming
        from ``op``: a failure there is reported as ``op``'s (see rt.located)."""
        site = None
        for i in range(start, len(lines)):
            if not isinstance(lines[i], _Line):
                if site is None:
                    label = op.callee.data if isinstance(op, (L.LibraryOp, L.RaiseOp)) else \
                        "fused kernel" if isinstance(op, L.ParallelOp) else op.name
                    names = [x if isinstance(x, str) else self.name(x) for x in self.site_operands]
                    site = (label, loc_str(op), tuple(names), self.site_attrs)
                lines[i] = _Line(lines[i], site)

    def numpy_operands(self, op, out, pad) -> dict:
        """Kernel operands that are Python numbers, as numpy scalars of their type
        (kernels see what they saw before scalar code used Python numbers); returns
        the names to restore."""
        saved = {}
        for v in op.operands:
            if self.is_py(v) and v not in saved:
                saved[v] = self.name(v)
                conv = self.to_numpy(v)
                if v not in self.known:
                    tmp = f"n{self.n}"
                    self.n += 1
                    out.append(pad + f"{tmp} = {conv}")
                    conv = tmp
                self.names[v] = conv
        return saved

    def while_(self, op, out, ind):
        pad = "    " * (ind - 1)
        carried = [f"w{self.n}_{i}" for i in range(len(op.inits))]
        self.n += 1
        for region in (op.cond_region, op.body_region):
            for a, c in zip(region.block.args, carried):
                self.names[a] = c
        for r, c in zip(op.results, carried):
            self.names[r] = c
        if carried:
            out.append(pad + f"{', '.join(carried)} = {', '.join(self.name(v) for v in op.inits)}")
        counters = self._counters(op)
        self._coalesce(op, carried)
        limit = None if op.max_iterations is None else op.max_iterations.value.data
        it = f"it{self.n}"
        self.n += 1
        cond: list[str] = []
        self.block(op.cond_region.block, cond, ind + 1)
        inner = pad + "    "
        if limit is not None:
            out.append(pad + f"{it} = 0")
            out.append(pad + f"while {it} < {limit}:")
            out.append(pad + f"    {it} += 1")
        elif len(cond) == 2 and cond[0].startswith(inner + "if not ") and cond[1] == inner + "    break":
            out.append(pad + f"while {cond[0][len(inner) + 7:-1]}:")  # the condition is one expression
            cond = []
        else:
            out.append(pad + "while True:")
        out += cond
        self.block(op.body_region.block, out, ind + 1, carried)
        for i in counters:
            lo, hi = _int_range(op.results[i].type)
            c = carried[i]
            out.append(pad + f"if not {lo} <= {c} <= {hi}: {c} = (({c} - ({lo})) & {hi - lo}) + ({lo})")

    def _coalesce(self, op, carried):
        """Name yielded values after the variable they are carried in, so the body
        computes ``a = a // 2`` instead of ``v3 = a // 2`` and ``a = v3`` at its
        end: only where nothing reads the old value after the new one is made."""
        body = op.body_region.block
        term = body.last_op
        order = {o: k for k, o in enumerate(body.ops)}
        yielded = list(term.operands)
        for i, (old, v) in enumerate(zip(body.args, yielded)):
            p = v.owner
            if not isinstance(p, Operation) or p.parent_block() is not body or yielded.count(v) != 1 \
                    or not self.is_py(v) or v in self.names or v in self.hooks:
                continue
            if isinstance(p, L.IfOp):
                branches = (p.then_region.block, p.else_region.block)
                if not all(_reads_before_write(b, old) for b in branches):
                    continue
            elif not (p.name.startswith(("arith.", "math.")) and len(p.results) == 1):
                continue
            if all(_read_at(u.operation, body, order, {p}) <= order[p] for u in old.uses):
                self.names[v] = carried[i]

    def _counters(self, op) -> list[int]:
        """Carried integers that the loop only steps by a constant (``i = i + 1``,
        read by nothing else): kept unwrapped inside the loop (they grow by a
        constant per iteration, so stay small) and wrapped once after it, which
        gives the same value as wrapping at every step."""
        body = op.body_region.block
        term = body.last_op
        found = []
        for i, (ca, ba) in enumerate(zip(op.cond_region.block.args, body.args)):
            if not self.is_py(ba) or scalar_kind(ba.type) != "int" or ca.uses or op.results[i] in self.hooks:
                continue
            step = ba.get_user_of_unique_use()
            if step is None or step.name not in ("arith.addi", "arith.subi") or step.parent_block() is not body \
                    or step.operands[0] is not ba or step.results[0] in self.hooks:
                continue
            k = step.operands[1].owner
            if not (isinstance(k, arith.ConstantOp) and k.parent_block() is body) \
                    or step.results[0].get_user_of_unique_use() is not term or term.operands[i] is not step.results[0]:
                continue
            self.lazy.add(step.results[0])
            found.append(i)
        return found

    # -- kernels -----------------------------------------------------------------------
    def _inputs(self, op, out, pad):
        """Per input: the expression of its broadcast view (made once per call)."""
        rank = len(op.iteration_shape)
        exprs = []
        for v, m in zip(op.ins, op.broadcast_maps):
            if not _array(v):
                exprs.append((self._scalar_arg(v), False))
            elif _numpy_aligned(m, rank):  # numpy's own broadcasting reads it so: no view to make
                exprs.append((self.name(v), len(m) == rank and m[0] == 0 and op.iteration_shape[0] != 1))
            else:
                nm = f"b{self.n}"
                self.n += 1
                out.append(pad + f"{nm} = rt.bview({self.name(v)}, {m}, {rank})")
                exprs.append((nm, 0 in m and op.iteration_shape[0] != 1))
        return exprs

    def _body(self, op, names, out, pad, slot_of=None, dest=None, scalars=False):
        """Body ops; with ``slot_of`` (value -> scratch name) ufuncs write there
        (the yielded value's op into ``dest``), else they allocate; with
        ``scalars`` every input is a numpy scalar (a 0-d kernel)."""
        block = op.body.block
        term = block.last_op
        is_array = {a: not scalars and _array(v) for a, v in zip(block.args, op.ins)}
        env = dict(zip(block.args, names))
        ops = [o for o in block.ops if o is not term]
        for i, o in enumerate(ops):
            args = [env[v] if v in env else self.name(v) for v in o.operands]
            if isinstance(o, L.AddAtOp):  # a scatter kernel's adds (see scatter)
                idx = args[2:2 + len(o.indices)]
                mask = args[-1] if o.mask is not None else "None"
                out.append(pad + f"rt.add_at({self._captured[o.dest]}, ({''.join(x + ', ' for x in idx)}), "
                           f"{args[0]}, {mask}, {op.iteration_shape!r})")
                continue
            r = o.results[0]
            if _indexed(o):  # index arithmetic and computed loads: small fresh arrays
                env[r] = f"t{self.n}"
                self.n += 1
                out.append(pad + f"{env[r]} = {self._index_expr(op, o, args)}")
                is_array[r] = True
                continue
            arr = any(is_array.get(v, False) for v in o.operands)
            is_array[r] = arr
            if not arr:
                if o.name == "arith.constant":
                    env[r] = self.const_scalar(o.value, r.type)
                else:
                    env[r] = f"s{self.n}"
                    self.n += 1
                    out.append(pad + f"{env[r]} = {self.scalar_expr(o, args)}")
                continue
            target = None if slot_of is None else slot_of.get(r)
            if dest is not None and r in dest and i == len(ops) - 1 and len(dest) == 1 and _one_step(o):
                target = dest[r]
            env[r] = target if target is not None else f"t{self.n}"
            if target is None:
                self.n += 1
            out.append(pad + self._array_stmt(o, args, target, env[r]))
        return [env.get(v, self.name(v)) for v in term.values], env, is_array

    def _index_expr(self, par, o, args) -> str:
        """An op of the index world of a parallel body as a numpy expression:
        ``loops.index`` as an open grid (``np.arange`` shaped to broadcast
        along its dim; dim 0 over the chunk's rows ``lo:hi`` where the kernel
        is chunked), ``loops.load_at`` as fancy indexing of the captured
        buffer, arith on ``index`` values as ufuncs (intp)."""
        n = o.name
        rank = len(par.iteration_shape)
        if isinstance(o, L.IndexOp):
            d = o.dim.value.data
            shape = tuple(-1 if k == d else 1 for k in range(rank))
            if d == 0 and self._rows_chunked:
                return f"np.arange(lo, hi).reshape({shape})"
            key = ("index", par.iteration_shape[d], shape)
            name = self.scalar_consts.get(key)
            if name is None:  # a build-time constant
                name = self.scalar_consts[key] = f"ix{len(self.scalar_consts)}"
                self.build_lines.append(f"{name} = np.arange({par.iteration_shape[d]}).reshape({shape})")
            return name
        if isinstance(o, L.LoadAtOp):
            buf, idx = self._captured[o.source], args[1:]  # (args[0] names the buffer outside the kernel)
            last, n = o.indices[-1].owner, o.source.type.get_shape()[-1]
            if len(idx) > 1 and isinstance(last, L.IndexOp) and last.dim.value.data == rank - 1 \
                    and n == par.iteration_shape[-1]:
                # whole rows of the buffer (a gather's): see rt.load_rows
                return f"rt.load_rows({buf}, ({', '.join(idx[:-1])},), {idx[-1]})"
            return f"{buf}[{', '.join(idx)}{',' if len(idx) == 1 else ''}]"
        rt_ = o.results[0].type
        dt = "np.intp" if isinstance(rt_, IndexType) else np_dtype(rt_)
        if n in ("arith.index_cast", "arith.index_castui") or n in _CASTS:
            return f"np.asarray({args[0]}).astype({dt})"
        if n == "arith.select":
            return f"np.where({args[0]}, {args[1]}, {args[2]})"
        if n == "arith.cmpi":
            return f"np.{_CMP_UFUNC[_cmp_symbol(o)]}({args[0]}, {args[1]})"
        if n == "arith.constant":
            return f"np.intp({o.value.value.data})" if isinstance(rt_, IndexType) else \
                self.const_scalar(o.value, rt_)
        if n in _UFUNC:
            return f"np.{_UFUNC[n]}({', '.join(args)})"
        raise NotImplementedError(f"the numpy backend cannot emit {n} on index values")

    def _array_stmt(self, o, args, target, name) -> str:
        """The statement computing array op ``o``: into ``target`` (a scratch or
        output view), or, with no target, into a new array ``name`` (reductions)."""
        n = o.name
        dt = np_dtype(o.results[0].type)
        if n in _CASTS:
            return f"np.copyto({target}, {args[0]}, casting='unsafe')" if target else \
                f"{name} = np.asarray({args[0]}).astype({dt})"
        if n == "arith.select":
            return f"np.copyto({target}, {args[2]}); np.copyto({target}, {args[1]}, where={args[0]})" if target \
                else f"{name} = np.where({args[0]}, {args[1]}, {args[2]}).astype({dt}, copy=False)"
        if n == "math.ipowi":
            call = f"rt.ipow({args[0]}, {args[1]})"
            return f"np.copyto({target}, {call})" if target else f"{name} = {call}"
        if n in ("arith.cmpf", "arith.cmpi"):
            fn = _CMP_UFUNC[_cmp_symbol(o)]
        elif n in ("arith.mulf", "arith.muli") and o.operands[0] is o.operands[1]:
            fn, args = "square", args[:1]  # the same product, a quarter faster
        elif n in _UFUNC:
            fn = _UFUNC[n]
        else:
            raise NotImplementedError(f"the numpy backend cannot emit {n}")
        return f"np.{fn}({', '.join(args)}, out={target})" if target else f"{name} = np.{fn}({', '.join(args)})"

    def _slots(self, op, dests):
        """Scratch slots for the array values of the body, reused once dead; a
        ufunc may write over a dying operand, a two-step op (select) may not."""
        block = op.body.block
        term = block.last_op
        is_array = {a: _array(v) for a, v in zip(block.args, op.ins)}
        ops = [o for o in block.ops if o is not term]
        last = {}
        for i, o in enumerate(ops):
            for v in o.operands:
                last[v] = i
        for v in term.values:
            last[v] = len(ops)
        free, slot_of, nslots = [], {}, 0
        for i, o in enumerate(ops):
            r = o.results[0]
            if _indexed(o):  # not in scratch (see _body)
                is_array[r] = True
                continue
            arr = any(is_array.get(v, False) for v in o.operands)
            is_array[r] = arr
            if not arr:
                continue
            dying = [slot_of[v] for v in dict.fromkeys(o.operands) if v in slot_of and last.get(v) == i]
            single = o.name in _UFUNC or o.name in ("arith.cmpf", "arith.cmpi")
            if single:
                free.extend(dying)
            if dests is not None and r in dests and i == len(ops) - 1 and len(dests) == 1 and _one_step(o):
                slot_of[r] = None  # written straight into the output (which may be an input: in place)
            else:
                if free:
                    s = free.pop()
                else:
                    s = nslots
                    nslots += 1
                slot_of[r] = s
            if not single:
                free.extend(dying)
        return slot_of, nslots

    def parallel(self, op, out, pad):
        """Chunks of rows (the outermost dimension) on the pool: the body into
        per-thread scratch, the elementwise outputs' rows written; a reduction
        over trailing axes only reduces each chunk's rows by the registry's
        ``reduce_*`` kernel (numpy reduces each row alone: eager's bits)."""
        shape = op.iteration_shape
        ins = self._inputs(op, out, pad)
        outs = [self.name(o) for o in op.outs]
        term = op.body.block.last_op
        kinds = op.reduce_kinds
        dest = {term.values[0]: "d0"} if len(term.values) == 1 and kinds[0] is None else {}
        slot_of, nslots = self._slots(op, dest or None)
        row_elems = int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1
        per_elem = sum(_itemsize(v.type) for v in list(op.ins) + list(op.outs) if _array(v))
        per_elem += _slot_item(slot_of) * nslots
        rows = max(1, min(shape[0], chunk_bytes(shape[0] * row_elems) // max(1, per_elem * row_elems)))
        k = self.kernels
        self.kernels += 1
        spec, names, body = self._scratch(slot_of, nslots, (rows,) + tuple(shape[1:]))
        n_in = []
        for j, (e, sliced) in enumerate(ins):
            if e is not None and sliced:
                body.append(f"a{j} = i{j}[lo:hi]")
                n_in.append(f"a{j}")
            else:
                n_in.append(f"i{j}")
        for j in range(len(outs)):
            body.append(f"d{j} = o{j}[lo:hi]")
        caps = op.captured()
        self._captured = {c: f"c{j}" for j, c in enumerate(caps)}
        self._rows_chunked = True
        vals, _, _ = self._body(op, n_in, body, "", slot_of=names, dest=dest)
        self._rows_chunked = False
        chunk = f"(hi - lo,) + {tuple(shape[1:])!r}"
        full = set(names.values())  # scratch views: the whole chunk, contiguous
        for j, (s, kind) in enumerate(zip(vals, kinds)):  # reductions first: an output may be an input's buffer
            if kind in ARG_KINDS:  # numpy's argmax itself (exact: any layout gives its index), no copy
                src = s if s in full else f"np.broadcast_to({s}, {chunk})"
                fn = f"np.{kind}({src}, axis={op.axes[0]}"
                if op.keeps_dims(j) or str(op.outs[j].type.element_type) != "i64":
                    body.append(f"np.copyto(d{j}, {fn}, keepdims={op.keeps_dims(j)}), casting='unsafe')")
                else:
                    body.append(f"{fn}, out=d{j})")
            elif kind is not None:
                self.build_lines.append(f"reduce{k}_{j} = rt.kernel({'reduce_' + kind!r})")  # looked up once, not per chunk
                body.append(f"np.copyto(d{j}, reduce{k}_{j}(np.ascontiguousarray(np.broadcast_to("
                            f"{s}, {chunk})), axis={op.axes}, keepdims={op.keeps_dims(j)}), casting='unsafe')")
        for j, (s, kind) in enumerate(zip(vals, kinds)):
            if kind is None and s != f"d{j}":
                body.append(f"np.copyto(d{j}, {s}, casting='unsafe')")
        pnames = [f"i{j}" for j in range(len(ins))] + [f"o{j}" for j in range(len(outs))] + \
            [f"c{j}" for j in range(len(caps))]
        self._kernel_def(k, pnames, body, spec)
        args = [e for e, _ in ins] + outs + [self.name(c) for c in caps]
        if 0 < shape[0] <= rows:  # one chunk: called straight, without the chunk loop (a small kernel)
            out.append(pad + f"kernel{k}({''.join(a + ', ' for a in args)}0, {shape[0]}, R.scratch({k}, spec{k}))")
            return
        # the pool's threshold counts elements; a kernel of many passes (GELU and its
        # gradient: 9 and 16) does that much more work per element, worth a thread sooner
        work = row_elems * max(1, len(slot_of) // HEAVY_PASSES)
        out.append(pad + f"R.run_chunks(kernel{k}, ({', '.join(args)}{',' if len(args) == 1 else ''}), "
                   f"{shape[0]}, {rows}, {work}, {k}, spec{k})")

    def scatter(self, op, out, pad):
        """A scatter kernel (its body adds into buffers with ``loops.add_at``):
        the body on whole arrays, each add one ``rt.add_at``, np.add.at over the
        iteration space in row-major order (the order of eager's np.add.at,
        so the same bits); not chunked: chunks on the pool could add into one
        element at once. Its elementwise outputs, if any, copied after."""
        if op.reduces:
            raise NotImplementedError("the numpy backend: a loops.parallel that both reduces and adds into "
                                      "buffers (loops.add_at); no lowering makes one")
        ins = self._inputs(op, out, pad)
        self._captured = {c: self.name(c) for c in op.captured()}
        vals, env, is_array = self._body(op, [e for e, _ in ins], out, pad)
        for o, v in zip(op.outs, vals):
            out.append(pad + f"np.copyto({self.name(o)}, {v}, casting='unsafe')")
        temps = sorted({env[v] for v in env if is_array.get(v) and env[v].startswith("t")
                        and v not in op.body.block.args})
        if temps:
            out.append(pad + f"del {', '.join(temps)}")

    def _scalar_arg(self, v) -> str:
        """A kernel's 0-d input as the numpy scalar the kernel reads: a 0-d
        buffer's value (read when the kernel is called), or a scalar's name
        (numpy_operands made Python numbers numpy scalars)."""
        return f"{self.name(v)}[()]" if isinstance(v.type, MemRefType) else self.name(v)

    def scalar_kernel(self, op, out, pad):
        """A parallel over shape () (a 0-d kernel reading 0-d buffers): scalar
        code on numpy scalars, ``buf[()]``, as kernels compute it, each result
        stored into its 0-d buffer (numpy is the host: no kernel to launch)."""
        names = []
        for v in op.ins:
            if isinstance(v.type, MemRefType):
                t = f"s{self.n}"
                self.n += 1
                out.append(pad + f"{t} = {self.name(v)}[()]")
                names.append(t)
            else:
                names.append(self.name(v))
        vals, _, _ = self._body(op, names, out, pad, scalars=True)
        for o, v in zip(op.outs, vals):
            out.append(pad + f"{self.name(o)}[()] = {v}")

    def copy_kernel(self, op, out, pad) -> bool:
        """A kernel that only moves data (one output; its body yields an input,
        read at the identity index, or a constant): one ``np.copyto`` (a view
        read or written is basic slicing of its buffer); False for others."""
        term = op.body.block.last_op
        if len(op.outs) != 1 or len(list(op.body.block.ops)) > 2:
            return False
        (y,) = term.values
        rank = len(op.iteration_shape)
        o = self.name(op.outs[0])
        if isinstance(y, BlockArgument) and y.block is op.body.block:
            v, m = op.ins[y.index], op.broadcast_maps[y.index]
            if _array(v):
                if L.shape_of(v.type) != L.shape_of(op.outs[0].type) or m != tuple(range(rank)):
                    src = f"rt.bview({self.name(v)}, {m}, {rank})"
                else:
                    src = self.name(v)
            else:
                src = f"{self.name(v)}[()]" if isinstance(v.type, MemRefType) else self.to_numpy(v)
        elif isinstance(y.owner, arith.ConstantOp) and y.owner.parent_block() is op.body.block:
            src = self.const_scalar(y.owner.value, y.type)
        else:
            return False
        out.append(pad + f"np.copyto({o}, {src}, casting='unsafe')")
        return True

    def _scratch(self, slot_of, nslots, chunk_shape):
        """A chunk kernel's per-thread scratch: (spec, value -> view name, the
        lines binding the views): one view per (slot, dtype) used, of
        ``chunk_shape``, cut to the chunk's rows ``hi - lo``."""
        typed = {}
        for v, s in slot_of.items():
            if s is not None:
                typed.setdefault((s, np.dtype(dtype_of(v.type).as_numpy_dtype).name), len(typed))
        slot_bytes = _slot_item(slot_of) * int(np.prod(chunk_shape, dtype=np.int64))
        spec = [(s * slot_bytes, dt, chunk_shape) for (s, dt), _ in sorted(typed.items(), key=lambda kv: kv[1])]
        self.scratch_bytes = max(self.scratch_bytes, nslots * slot_bytes)
        names = {v: f"T{s}_{np.dtype(dtype_of(v.type).as_numpy_dtype).name}" for v, s in slot_of.items()
                 if s is not None}
        bind = [f"T{s}_{dt} = T[{idx}][:hi - lo]" for (s, dt), idx in typed.items()]
        return spec, names, bind

    def _kernel_def(self, k, params, body, spec):
        self.build_lines.append(f"def kernel{k}({', '.join(params)}, lo, hi, T):")
        self.build_lines += ["    " + b for b in body]
        self.build_lines.append(f"spec{k} = {spec!r}")

    def reduction(self, op, out, pad):
        """A kernel with reduced outputs (and perhaps elementwise ones): over flat
        chunks when ``_flat_chunks`` allows, over chunks of rows when the
        outermost dimension is not reduced, else the body on whole arrays, each
        reduced output by the registry's ``reduce_*`` kernel (eager's order)."""
        shape = op.iteration_shape
        periods = self._flat_chunks(op)
        if periods is not None:
            return self.tree_sum(op, periods, out, pad)
        if 0 not in op.axes:
            return self.parallel(op, out, pad)  # rows reduced within their chunk
        ins = self._inputs(op, out, pad)
        self._captured = {c: self.name(c) for c in op.captured()}
        vals, env, is_array = self._body(op, [e for e, _ in ins], out, pad)
        for k, (o, v, kind) in enumerate(zip(op.outs, vals, op.reduce_kinds)):
            if kind is None:
                out.append(pad + f"np.copyto({self.name(o)}, {v}, casting='unsafe')")
                continue
            src = f"np.ascontiguousarray(np.broadcast_to({v}, {shape}))"
            out.append(pad + f"np.copyto({self.name(o)}, rt.kernel({'reduce_' + kind!r})({src}, axis={op.axes}, "
                       f"keepdims={op.keeps_dims(k)}), casting='unsafe')")
        # the body's whole-array temporaries die here, not when the function returns
        # (a loop of reductions would otherwise hold one per iteration)
        temps = sorted({env[v] for v in env if is_array.get(v) and env[v].startswith("t")
                        and v not in op.body.block.args})
        if temps:
            out.append(pad + f"del {', '.join(temps)}")

    def _flat_chunks(self, op):
        """Per input, how a flat chunk reads it (``flat_period``: 0 a slice, 1
        one element or a scalar, P > 1 the slice [lo % P, ...) of its tiling);
        None unless every reduction is a float sum or mean over every axis of
        at least TREE_MIN elements, which such chunks compute to eager's bit."""
        shape = op.iteration_shape
        rank = len(shape)
        n = int(np.prod(shape, dtype=np.int64))
        if n < TREE_MIN or list(op.axes) != list(range(rank)) or any(_indexed(o) for o in op.body.block.ops):
            return None
        if any(isinstance(v.type, MemRefType) and not L.is_contiguous(v.type) for v in op.ins):
            return None  # flat ranges of a strided view are no slices
        term = op.body.block.last_op
        for o, kind, val in zip(op.outs, op.reduce_kinds, term.values):
            if kind is None:
                continue
            if kind not in ("sum", "mean") or str(val.type) not in ("f32", "f64") \
                    or val.type != o.type.element_type or any(d != 1 for d in L.shape_of(o.type)):
                return None
            if isinstance(val, BlockArgument) and op.broadcast_maps[val.index] != tuple(range(rank)):
                return None  # summing an input itself: only a full-size one is read in flat chunks
        periods = []
        for v, m in zip(op.ins, op.broadcast_maps):
            size = int(np.prod(L.shape_of(v.type), dtype=np.int64)) if isinstance(v.type, MemRefType) else 1
            periods.append(flat_period(shape, m, size))
            if periods[-1] is None:
                return None
        # each sum must be of values that vary over the chunk: np.add.reduce of a
        # scalar is the scalar, not the chunk's sum (a body ignoring its input: ones_like)
        chunked = {a for a, p in zip(op.body.block.args, periods) if p != 1}
        for o in op.body.block.ops:
            if any(v in chunked for v in o.operands):
                chunked.update(o.results)
        if not all(v in chunked for v, kind in zip(term.values, op.reduce_kinds) if kind is not None):
            return None
        return periods

    def tree_sum(self, op, periods, out, pad):
        """Sums/means over all elements, and the elementwise outputs beside
        them, without whole temporaries: a chunk kernel computes the body over
        a flat range into scratch, writes the elementwise outputs' range and
        returns the range's sums (np.add.reduce); the runtime adds the chunks in
        numpy's pairwise order (rt.Runtime.tree_sum), so each sum is eager's to
        the bit. An input varying along trailing dims only is tiled once per
        call, so that any flat range of it is a slice."""
        n = int(np.prod(op.iteration_shape, dtype=np.int64))
        args, names = [], []
        for j, (v, p) in enumerate(zip(op.ins, periods)):
            if not _array(v):
                args.append(self._scalar_arg(v))
                names.append(f"i{j}")
            elif p == 1:
                args.append(f"{self.name(v)}.reshape(())")
                names.append(f"i{j}")
            else:
                args.append(f"{self.name(v)}.reshape(-1)")  # a view of a contiguous buffer
                names.append(f"i{j}[lo:hi]" if p == 0 else f"i{j}[lo % {p}:lo % {p} + hi - lo]")
        maps = [k for k, kind in enumerate(op.reduce_kinds) if kind is None]
        reduced = [k for k, kind in enumerate(op.reduce_kinds) if kind is not None]
        term = op.body.block.last_op
        # one elementwise output: the body's last op may write straight into it
        dest = {term.values[maps[0]]: f"d{maps[0]}"} if len(maps) == 1 else {}
        slot_of, nslots = self._slots(op, dest or None)
        per_elem = sum(_itemsize(v.type) for v, p in zip(op.ins, periods) if _array(v) and p != 1)
        per_elem += sum(_itemsize(op.outs[k].type) for k in maps)
        leaf = max(1024, chunk_bytes(n) // (per_elem + _slot_item(slot_of) * max(1, nslots)))
        for j, p in enumerate(periods):
            if p > 1:  # leaf + p elements hold every range of at most leaf elements
                args[j] = f"np.tile({args[j]}, {-(-(leaf + p) // p)})"
        k = self.kernels
        self.kernels += 1
        spec, slots, body = self._scratch(slot_of, nslots, (leaf,))
        body += [f"d{m} = o{m}[lo:hi]" for m in maps]
        vals, _, _ = self._body(op, names, body, "", slot_of=slots, dest=dest)
        for m in maps:
            if vals[m] != f"d{m}":
                body.append(f"np.copyto(d{m}, {vals[m]}, casting='unsafe')")
        body.append(f"return ({', '.join(f'np.add.reduce({vals[r]})' for r in reduced)},)")
        args += [f"{self.name(op.outs[m])}.reshape(-1)" for m in maps]
        self._kernel_def(k, [f"i{j}" for j in range(len(op.ins))] + [f"o{m}" for m in maps], body, spec)
        total = f"t{self.n}"
        self.n += 1
        out.append(pad + f"{total} = R.tree_sum(kernel{k}, ({', '.join(args)}{',' if len(args) == 1 else ''}), "
                   f"{n}, {leaf}, {k}, spec{k})")
        for i, r in enumerate(reduced):
            value = f"{total}[{i}]"
            if op.reduce_kinds[r] == "mean":
                value = f"{value} / {n}"  # as np.mean: the sum over the count, in the sum's dtype
            out.append(pad + f"np.copyto({self.name(op.outs[r])}, {value}, casting='unsafe')")

    def library(self, op, out, pad):
        name = op.callee.data
        props = dict(op.kernel_attrs.data)
        k = len(self.build_lines)
        from tfc.core.registry import REGISTRY
        from tfc.dialects.tensor import decode_attrs

        values = decode_attrs(REGISTRY[name], props)
        ins = [self.name(v) for v in op.ins]
        if name == "reshape" and not op.outs:  # the registry kernel is np.reshape: a view, no call through it
            self.site_attrs = "{" + ", ".join(f"{a!r}: {_literal(v)}" for a, v in values.items()) + "}"
            self._shape_check(op, k, self.site_attrs, out, pad)
            r = op.res[0]
            scalar = "" if isinstance(r.type, MemRefType) else "[()]"
            out.append(pad + f"{self.name(r)} = np.reshape({ins[0]}, {tuple(int(d) for d in values['shape'])!r}){scalar}")
            return
        self.build_lines.append(f"attrs{k} = {{{', '.join(f'{a!r}: {_literal(v)}' for a, v in values.items())}}}")
        self.site_attrs = f"attrs{k}"
        self._shape_check(op, k, self.site_attrs, out, pad)
        if op.outs and (REGISTRY[name].kernel_into is None or len(op.outs) != 1):
            raise NotImplementedError(f"loops.library {name} with outs: its declaration has no kernel_into")
        chunks = self._library_rows(op, REGISTRY[name], values)
        if op.outs and chunks is None:  # the declaration's kernel_into writes the planned buffer
            self.build_lines.append(f"into{k} = rt.kernel_into({name!r})")
            out.append(pad + f"into{k}({''.join(i + ', ' for i in ins)}{self.name(op.outs[0])}, **attrs{k})")
            return
        self.build_lines.append(f"lib{k} = rt.kernel({name!r})")
        res = [self.name(r) for r in (op.outs or op.res)]
        if chunks is not None:  # the kernel on chunks of rows, each written into the result
            rows, widest = chunks
            params = [f"i{j}" for j in range(len(ins))]
            sliced = ''.join(p + '[lo:hi], ' for p in params)
            self.build_lines.append(f"def rows{k}({', '.join(params)}, o0, lo, hi, T):")
            if op.outs:  # the planned buffer's rows (C-contiguous) written by kernel_into: no copy
                self.build_lines.insert(-1, f"into{k} = rt.kernel_into({name!r})")
                self.build_lines.append(f"    into{k}({sliced}o0[lo:hi], **attrs{k})")
            else:
                self.build_lines.append(f"    np.copyto(o0[lo:hi], lib{k}({sliced}**attrs{k}), casting='unsafe')")
            t = (op.outs or op.res)[0].type
            if not op.outs:  # (else the planned buffer)
                out.append(pad + f"{res[0]} = {_allocation(t)}")
            out.append(pad + f"R.run_chunks(rows{k}, ({''.join(i + ', ' for i in ins)}{res[0]}), "
                       f"{t.get_shape()[0]}, {rows}, {widest}, 'lib{k}', [])")
            return
        call = f"lib{k}({''.join(i + ', ' for i in ins)}**attrs{k})"
        if len(res) == 1:
            out.append(pad + f"{res[0]} = {call}")
        else:
            out.append(pad + f"{', '.join(res)}, = {call}")
        for r in op.res:
            scalar = not isinstance(r.type, MemRefType)
            elt = r.type if scalar else r.type.element_type
            out.append(pad + f"{self.name(r)} = rt.conform({self.name(r)}, {np_dtype(elt)}, {scalar})")

    def raise_(self, op, out, pad):
        """loops.raise: the op's registry kernel on the operands, which raises
        eager's error, as it is, noted with the op's location (rt.raise_eager)."""
        from tfc.core.registry import REGISTRY
        from tfc.dialects.tensor import decode_attrs

        name = op.callee.data
        values = decode_attrs(REGISTRY[name], dict(op.kernel_attrs.data))
        k = len(self.build_lines)
        self.build_lines.append(f"attrs{k} = {{{', '.join(f'{a!r}: {_literal(v)}' for a, v in values.items())}}}")
        self.site_attrs = f"attrs{k}"
        self.site_operands = [self.name(v) for v in op.ins]
        self.uses_numpy = True
        saved = self.numpy_operands(op, out, pad)
        ins = ", ".join(self.name(v) for v in op.ins)
        out.append(pad + f"rt.raise_eager({name!r}, ({ins}{',' if len(op.ins) == 1 else ''}), attrs{k}, "
                   f"{loc_str(op)!r})")
        self.names.update(saved)

    def _shape_check(self, op, k, attrs, out, pad):
        """Eager's shape inference on the run-time shapes before a library call
        whose operands have dims unknown when compiling: it ran on ``?`` only,
        and numpy may accept what eager refuses (pad REFLECT repeats itself,
        broadcasting labels against logits). Not for ops whose rule is numpy's
        broadcasting (their kernel raises where eager does), nor on static
        shapes (inference checked them when tracing)."""
        from tfc.core.registry import REGISTRY

        name = op.callee.data
        if REGISTRY[name].infer.__code__ in _BROADCASTING or not any(
                isinstance(v.type, MemRefType) and any(d < 0 for d in v.type.get_shape()) for v in op.ins):
            return
        dts = tuple(dtype_of(L.element_of(v.type)).name for v in op.ins)
        self.build_lines.append(f"check{k} = rt.shape_check({name!r}, {attrs}, {dts!r})")
        shapes = [f"{self.name(v)}.shape, " if isinstance(v.type, MemRefType) else "(), " for v in op.ins]
        out.append(pad + f"check{k}(({''.join(shapes)}))")

    @staticmethod
    def _library_rows(op, opdef, attrs):
        """(rows per chunk, elements in the widest row) for a library call that
        its op declares may run on chunks of rows (``OpDef.maps_rows``: every
        row alone, so the chunks give the whole call's bits), when it has
        static shapes and is larger than one chunk; else None (one call)."""
        results = list(op.outs or op.res)  # a planned buffer, or the call's result
        values = list(op.ins) + results
        if len(results) != 1 or not all(isinstance(v.type, MemRefType) for v in values):
            return None
        shapes = [tuple(v.type.get_shape()) for v in values]
        if any(d < 0 for sh in shapes for d in sh) or not opdef.maps_rows([len(sh) for sh in shapes[:-1]], attrs):
            return None
        n = shapes[-1][0] if shapes[-1] else 0
        if any(sh[0] != n for sh in shapes):
            return None
        row_elems = [int(np.prod(sh[1:], dtype=np.int64)) for sh in shapes]
        row_bytes = [e * _itemsize(v.type) for e, v in zip(row_elems, values)]
        # a row's working set: its inputs and result, and the kernel's temporaries
        work = sum(row_bytes) + LIBRARY_TEMPS * row_bytes[-1]
        rows = chunk_bytes(n * max(row_elems)) // max(1, work)
        return (max(1, rows), max(row_elems)) if rows < n else None


def _profile_label(op) -> str:
    """What a profiled site runs: a library call's kernel, a copy, or a fused
    kernel's ops (the first few, without the loops dialect's plumbing)."""
    if isinstance(op, L.LibraryOp):
        return op.callee.data
    if isinstance(op, L.CopyOp):
        return "copy"
    names = []
    for o in op.body.block.walk():
        short = o.name.split(".", 1)[-1]
        if o is not op and o.name.startswith(("arith.", "math.", "tfc.")) and short not in names \
                and short not in ("constant", "index_cast"):
            names.append(short)
    reduces = sorted({k for k in op.reduce_kinds if k is not None}) if op.reduces else []
    kind = "scatter-add" if op.added_into() else f"reduce {'/'.join(reduces)}" if reduces else "kernel"
    shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
    if not names:  # a body that only moves elements (a transpose, a split piece, a broadcast)
        return "kernel (copy)" if kind == "kernel" else kind
    return f"{kind} ({shown})"


class _Line(str):
    """A line of generated source and the site it comes from: (op label, its
    location, names of its operands, the source of its registry attributes or
    None)."""

    def __new__(cls, text, site):
        s = super().__new__(cls, text)
        s.site = site
        return s


def _indent(pad: str, s: str) -> str:
    return _Line(pad + s, s.site) if isinstance(s, _Line) else pad + s


def _array(v) -> bool:
    """Does a kernel read ``v`` as an array? A 0-d buffer is read as a scalar
    (the kernel computes on it once, not broadcast over every element)."""
    return isinstance(v.type, MemRefType) and bool(v.type.get_shape())


def _numpy_aligned(bmap, rank: int) -> bool:
    """Does numpy's broadcasting read an input with this broadcast map as the
    kernel does (its dims right-aligned with the iteration space; -1 only for
    its size-1 dims)? Then the input is used as it is, with no view made."""
    off = rank - len(bmap)
    return all(d == -1 or d == off + j for j, d in enumerate(bmap))


def _subview_index(op) -> str:
    """The basic index ``x[...]`` of a loops.subview: a slice per kept dim
    (``start:stop:step``, stop None where a negative step runs past 0), the
    offset for a dropped unit dim."""
    kept = set(op.kept())
    parts = []
    for d, (o, n, st) in enumerate(zip(op.offsets, op.sizes, op.strides)):
        if d not in kept:
            parts.append(str(o))
        elif n == 0:
            parts.append("0:0")
        else:
            stop = o + n * st
            parts.append(f"{o}:{'' if stop < 0 else stop}{'' if st == 1 else f':{st}'}")
    if not kept:  # every dim an integer: ``...`` keeps a 0-d view (not a copied scalar)
        parts.append("...")
    return ", ".join(parts) + ("," if len(parts) == 1 else "") if parts else "..."


def _indexed(o) -> bool:
    """An op of a body's index world: loops.index, loops.load_at, or one on
    ``index`` values (see Emitter._index_expr)."""
    return isinstance(o, (L.IndexOp, L.LoadAtOp)) or any(isinstance(v.type, IndexType) for v in o.operands) \
        or any(isinstance(r.type, IndexType) for r in o.results)


def _root(v):
    """The buffer that view ``v`` (a subview, transpose_view or reshape, or a
    chain of them) belongs to; ``v`` itself for a buffer."""
    while isinstance(v.owner, (L.SubviewOp, L.TransposeViewOp, L.ReshapeOp)):
        v = v.owner.source
    return v


def _contiguous(v) -> bool:
    """Is the array of memref ``v`` contiguous at run time, as its type says?
    Buffers of the function's own (arena views, allocs, constants) and
    ``rt.reshape`` results are, and a contiguous-typed subview of such;
    arguments, variable values, library and loop results come from outside
    (a caller may pass a non-contiguous array)."""
    while True:
        owner = v.owner
        if isinstance(owner, L.SubviewOp) and L.is_contiguous(v.type):
            v = owner.source
            continue
        return isinstance(owner, (L.ViewOp, L.AllocOp, L.ConstantOp, L.ReshapeOp))


def _allocation(t) -> str:
    """The expression making a fresh array of memref type ``t``: large ones from
    the runtime's cache (R.empty reuses dead result buffers)."""
    shape = tuple(t.get_shape())
    big = int(np.prod(shape, dtype=np.int64)) * _itemsize(t) >= BIG_ALLOC
    return f"{'R.empty' if big else 'np.empty'}({shape}, {np_dtype(t.element_type)})"


def _slot_item(slot_of) -> int:
    """Bytes per element of a scratch slot: a slot holds values of several dtypes
    in turn, so as wide as the widest."""
    return max((np.dtype(dtype_of(v.type).as_numpy_dtype).itemsize for v, s in slot_of.items()
                if s is not None), default=8)


def _read_at(user, block, order, stops) -> int:
    """Where in ``block`` the emitted code reads a value that ``user`` uses: the
    position of the block's op holding ``user``, or later where that op's result
    is written into its only user's expression (see Emitter._inline_user), up to
    an op of ``stops`` (written as a statement)."""
    while user.parent_block() is not block:
        user = user.parent_op()
    while user not in stops and len(user.results) == 1 and not isinstance(user, (L.IfOp, L.WhileOp)):
        nxt = user.results[0].get_user_of_unique_use()
        if nxt is None or nxt.parent_block() is not block:
            break
        user = nxt
    return order[user]


def _reads_before_write(branch, old) -> bool:
    """In an if branch whose results are carried variables: no read of ``old``
    (the carried value) after the first op whose result goes straight to the
    yield (computed into the if's result, i.e. into the carried variable)."""
    term = branch.last_op
    order = {o: k for k, o in enumerate(branch.ops)}
    writers = {o for o in branch.ops if o is not term and any(r.get_user_of_unique_use() is term for r in o.results)}
    first = min((order[o] for o in writers), default=len(order))
    return all(_read_at(u.operation, branch, order, writers) <= first for u in old.uses
               if _inside(u.operation, branch))


def _inside(op, block) -> bool:
    while op is not None:
        if op.parent_block() is block:
            return True
        op = op.parent_op()
    return False


def _literal(v) -> str:
    """Python source for a decoded registry attribute value."""
    from tfc.core.dtypes import DType

    if isinstance(v, DType):
        return f"rt.as_dtype({v.name!r})"
    if isinstance(v, float):
        return f"float({str(v)!r})" if v != v or v in (float("inf"), float("-inf")) else repr(v)
    if isinstance(v, tuple):
        return "(" + "".join(_literal(x) + ", " for x in v) + ")"
    if isinstance(v, list):
        return "[" + ", ".join(_literal(x) for x in v) + "]"
    if v is None or isinstance(v, (bool, int, str)):
        return repr(v)
    raise NotImplementedError(f"attribute value {v!r} in the numpy backend")


def emit_function(f3, hooks=None, profile=False):
    """(source, constants, scratch bytes) of an L3 function; ``profile``: the
    variant that times each kernel and library call (PROFILE_SITES, _hook)."""
    e = Emitter(f3, hooks, profile)
    src = e.emit()
    return src, e.consts, e.scratch_bytes


__all__ = ["emit_function", "Emitter", "IntegerAttr", "arith"]
