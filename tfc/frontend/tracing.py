"""Tracing: running a Python function on symbolic tensors builds tensor-dialect IR.

While a ``FunctionBuilder`` is installed in ``STATE.builder``, every registry op
call lands in ``FunctionBuilder.emit`` (see tfc.core.registry.execute), which
appends one IR op and returns ``SymbolicTensor``s. Tapes record symbolic ops as
they record eager ones, so gradient rules (written with tfc ops) emit their ops
into the same function.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import sys

import tfc as _tfc_pkg
from tfc.core import dtypes, nest
from tfc.core.context import STATE, TAPES
from tfc.core.registry import OpDef, Spec
from tfc.core.tape import tapes_suspended, watch_accessed
from tfc.core.tensor import Tensor, _format_value, convert_to_tensor
from tfc.core.variable import Variable

_GRAD_KEYS = itertools.count(1)  # custom gradient keys, unique in the process (replays add new ones)
_TFC_DIR = os.path.dirname(os.path.abspath(_tfc_pkg.__file__)) + os.sep


_NOT_USER = (_TFC_DIR, "<frozen ", os.path.join(os.path.dirname(os.__file__), "runpy.py"))
_CLI = (_TFC_DIR + "cli.py", _TFC_DIR + "compile_cli.py")


def user_frame():
    """The innermost frame outside the tfc package and Python's import and
    runpy machinery: the user's line. None when tfc's command line comes first
    (what called it, the launcher script, is not the user's code)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_NOT_USER):
        if f.f_code.co_filename in _CLI:
            return None
        f = f.f_back
    return f


def user_location() -> tuple[str, int]:
    f = user_frame()
    if f is None:
        return "<unknown>", 0
    return f.f_code.co_filename, f.f_lineno


def _where() -> str:
    file, line = user_location()
    return f"{file}:{line}"


@contextlib.contextmanager
def tracing_into(builder):
    """Ops run inside go into ``builder`` (STATE.builder); outer tapes do not see them."""
    with tapes_suspended():
        prev, STATE.builder = STATE.builder, builder
        try:
            yield
        finally:
            STATE.builder = prev


class SymbolicTensor(Tensor):
    """A tensor of a function being traced: an SSA value with a static shape
    (None for dimensions known only at run time) and a dtype. ``_block`` is the
    block (region) that defines it: it may be used only while that block is open."""

    __slots__ = ("_ssa", "_shape", "_dtype", "_builder", "_block")
    symbolic = True

    def __init__(self, ssa, shape, dtype, builder, block):
        self._ssa = ssa
        self._shape = tuple(shape)
        self._dtype = dtype
        self._builder = builder
        self._block = block

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self):
        if any(d is None for d in self._shape):
            return None
        n = 1
        for d in self._shape:
            n *= d
        return n

    @property
    def spec(self) -> Spec:
        return Spec(self._shape, self._dtype)

    def _no_value(self, what: str, hint: str):
        if STATE.builder is not self._builder:
            raise TypeError(f"{_where()}: {self._escaped(f'{what} needs the value of')}")
        raise TypeError(
            f"{_where()}: {what} of a symbolic tensor ({self._describe()}) is not available while "
            f"tracing a tfc.function: its value is known only when the function runs; {hint}"
        )

    def _escaped(self, use: str) -> str:
        """Why a tensor of a trace that is over (or of another one) cannot be used."""
        return (f"{use} a symbolic tensor ({self._describe()}) that was made while tracing the tfc.function "
                f"{self._builder.name!r} and escaped that trace (through a global, a nonlocal, a list or "
                f"another object that outlives it): it has no value outside the trace; return it from "
                f"the function instead")

    @property
    def _value(self):
        # an eager op's input (tfc.core.registry.run_eager): only a tensor that escaped its trace gets here
        raise TypeError(f"{_where()}: {self._escaped('an eager op used')}")

    def _describe(self) -> str:
        return str(self.spec)

    def constant_value(self):
        """The value of a tensor the trace holds as a constant (a literal or an
        eager tensor it captured), as a numpy array; None for any other."""
        from tfc.dialects.tensor import ConstantOp

        owner = getattr(self._ssa, "owner", None)
        return owner.numpy() if isinstance(owner, ConstantOp) else None

    def numpy(self):
        self._no_value(".numpy()", "return the tensor from the function instead")

    def __array__(self, dtype=None, copy=None):
        self._no_value("conversion to a numpy array", "use tfc ops inside the function")

    def __bool__(self):
        self._no_value("bool()", "use tfc.cond / tfc.while_loop, or enable autograph "
                       "(tfc.function(autograph=True)) to convert Python if/while")

    def __int__(self):
        self._no_value("int()", "use tfc.cast")

    def __float__(self):
        self._no_value("float()", "use tfc.cast")

    def __index__(self):
        self._no_value("use as a Python index", "use tfc ops to index")

    def __complex__(self):
        self._no_value("complex()", "use tfc ops")

    def __len__(self):
        if not self._shape or self._shape[0] is None:
            self._no_value("len()", "the first dimension is not known statically")
        return self._shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"<tfc.SymbolicTensor shape={self._shape} dtype={self._dtype.name}>"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)


def _relax(a: Spec, b: Spec, what: str) -> Spec:
    """The most specific spec both fit (differing dims become dynamic)."""
    if a.dtype != b.dtype:
        raise TypeError(f"{what}: dtypes differ, {a.dtype.name} and {b.dtype.name}")
    if len(a.shape) != len(b.shape):
        raise ValueError(f"{what}: ranks differ, shapes {a.shape} and {b.shape}")
    return Spec(tuple(x if x == y else None for x, y in zip(a.shape, b.shape)), a.dtype)


class FunctionBuilder:
    """Builds one ``func.func`` while a Python function is traced."""

    def __init__(self, name: str = "main"):
        from xdsl.dialects import func
        from xdsl.ir import Block, Region

        self.name = name
        self.entry = Block()
        self._stack = [self.entry]
        self._open = {id(self.entry): 0}  # id(open block) -> its index in _stack
        self._kinds: dict[int, tuple] = {}  # id(region block) -> (block, what it is), for errors
        self._captures: list[list | None] = [None]  # per open region: outer values it used
        self._block_caps: dict[int, list] = {}  # id(region block) -> its captures, to re-enter it
        self._consts: dict[tuple, tuple] = {}  # key (see lift) -> (tensor, ssa)
        self.conversion_error = None  # a ConversionError raised in a tensor branch: fails the trace even if caught
        self._last_const = None
        self._vars: dict[int, tuple] = {}  # id(variable) -> (variable, block arg)
        self.variables: list[Variable] = []
        self.may_create_variables = True  # tfc.Variable(...) allowed while tracing (see Function._trace)
        self.created_variables: list[Variable] = []  # those made while tracing
        self.n_inputs = 0
        self.func = func.FuncOp(name, ((), ()), Region(self.entry))
        self.grad_fns: dict[int, object] = {}  # tfc.custom_gradient key -> its tape op (see custom_gradient)
        self.subst = None  # while a replayed custom gradient runs: maps the tensors it closed over (cfgrad)

    # -- helpers ------------------------------------------------------------
    def _loc(self):
        from tfc.dialects.tensor import make_loc

        file, line = user_location()
        return make_loc(file, line)

    def _insert(self, op):
        op.location = self._loc()
        self._stack[-1].add_op(op)
        return op

    def _wrap(self, ssa) -> SymbolicTensor:
        from xdsl.ir import BlockArgument

        from tfc.dialects.tensor import spec_of

        s = spec_of(ssa.type)
        block = ssa.block if isinstance(ssa, BlockArgument) else ssa.owner.parent_block()
        return SymbolicTensor(ssa, s.shape, s.dtype, self, block)

    def add_input(self, shape, dtype, name: str | None = None) -> SymbolicTensor:
        """A new tensor argument (before any variable argument)."""
        from tfc.dialects.tensor import tensor_type

        arg = self.entry.insert_arg(tensor_type(shape, dtype), self.n_inputs)
        hint = "".join(c if c.isalnum() else "_" for c in (name or "")).strip("_")
        if hint and not hint[0].isdigit():
            arg.name_hint = hint
        self.n_inputs += 1
        return self._wrap(arg)

    def lift(self, t):
        """The SSA value of a tensor: symbolic ones as they are, variables read,
        eager tensors captured as ``tfc.constant``s at the top of the function."""
        if isinstance(t, SymbolicTensor):
            if self.subst is not None:
                t = self.subst(t)
            if t._builder is not self:
                raise ValueError(f"{_where()}: {t._escaped(f'tracing {self.name!r} used')} "
                                 f"(or pass it in as an argument)")
            # Every open region the value comes from outside of captures it (a
            # nested region's captures are its parent's too). Open blocks form
            # the chain _stack, so the value is visible iff its block is open.
            block = t._block
            if block is self.entry:
                j = 0
            else:
                j = self._open.get(id(block))
                if j is None:
                    self._leaked(block)
            for k in range(len(self._stack) - 1, j, -1):
                if self._captures[k] is not None:
                    self._captures[k].append(t)
            return t._ssa
        if isinstance(t, Variable):
            return self.read_variable(t)._ssa
        if not isinstance(t, Tensor):
            t = convert_to_tensor(t)
        # Small constants (the Python scalars of `x * 2.0`) are shared by value,
        # larger ones by identity: one tfc.constant each, not one per use.
        value = t._value
        key = (id(t),) if value.size > 64 else (value.dtype.str, value.shape, value.tobytes())
        hit = self._consts.get(key)
        if hit is not None:
            return hit[1]
        from xdsl.rewriter import InsertPoint, Rewriter

        from tfc.dialects.tensor import ConstantOp

        op = ConstantOp.from_numpy(t._value, t.dtype)
        op.location = self._loc()
        if self._last_const is None:
            if self.entry.first_op is None:
                self.entry.add_op(op)
            else:
                Rewriter.insert_op(op, InsertPoint.before(self.entry.first_op))
        else:
            Rewriter.insert_op(op, InsertPoint.after(self._last_const))
        self._last_const = op
        self._consts[key] = (t, op.result)
        return op.result

    def _leaked(self, block):
        """A tensor of a region that is closed (or of a sibling region) was used."""
        what = self._kinds.get(id(block), (None, None))[1] or "a region of control flow"
        if what == "a tfc.cond branch":
            hint = ("return it from the branch and use the cond's result (with AutoGraph: assign it "
                    "in every branch of the `if`)")
        elif what.startswith("a tfc.while_loop"):
            hint = "make it a loop variable and use the loop's result"
        else:
            hint = "return it from the region and use the op's result"
        raise ValueError(f"{_where()}: a tensor computed inside {what} was used outside it; {hint}")

    def _push(self, block, captures):
        self._open[id(block)] = len(self._stack)
        self._stack.append(block)
        self._captures.append(captures)

    def _pop(self):
        del self._open[id(self._stack.pop())]
        self._captures.pop()

    def _enter(self, block):
        """Re-open a traced region's block (to add its terminator): values used
        there are captured by it as by its trace."""
        self._push(block, self._block_caps.get(id(block)))

    def _leave(self):
        self._pop()

    # -- the registry hook ----------------------------------------------------
    def emit(self, op: OpDef, tensors, attrs: dict):
        from tfc.dialects.tensor import encode_attrs, op_class, tensor_type

        # Variables are read first, and replaced *in the caller's list*: the
        # registry passes this same list to the tape, which must see the reads
        # (and the replayed tensors that stand for those a custom gradient closed over).
        for i, t in enumerate(tensors):
            if isinstance(t, Variable):
                tensors[i] = self.read_variable(t)
            elif self.subst is not None and isinstance(t, SymbolicTensor):
                tensors[i] = self.subst(t)
        operands = [self.lift(t) for t in tensors]
        specs = [Spec(t.shape, t.dtype) for t in tensors]
        out = op.infer(op, *specs, **attrs)
        single = isinstance(out, Spec)
        outs = [out] if single else list(out)
        ir_op = op_class(op.name).create(
            operands=operands, result_types=[tensor_type(s.shape, s.dtype) for s in outs],
            properties=encode_attrs(op, attrs))
        self._insert(ir_op)
        block = self._stack[-1]
        results = [SymbolicTensor(r, s.shape, s.dtype, self, block) for r, s in zip(ir_op.results, outs)]
        return results[0] if single else results

    # -- variables ------------------------------------------------------------
    def _var_ref(self, var: Variable):
        hit = self._vars.get(id(var))
        if hit is not None:
            return hit[1]
        from tfc.dialects.tensor import RefType, tensor_type

        arg = self.entry.insert_arg(RefType(tensor_type(var.shape, var.dtype)), len(self.entry.args))
        hint = "".join(c if c.isalnum() else "_" for c in var.name).strip("_")
        if hint and not hint[0].isdigit():
            arg.name_hint = hint
        self._vars[id(var)] = (var, arg)
        self.variables.append(var)
        return arg

    def read_variable(self, var: Variable) -> SymbolicTensor:
        from tfc.dialects.tensor import ReadVariableOp

        ref = self._var_ref(var)
        op = self._insert(ReadVariableOp.create(operands=[ref], result_types=[ref.type.tensor]))
        for caps in self._captures:
            if caps is not None:
                caps.append(var)
        t = self._wrap(op.result)
        if TAPES:
            from tfc.core.tape import READ_VARIABLE, record

            watch_accessed(var)
            record(READ_VARIABLE, [var], t, {})
        return t

    def assign_variable(self, var: Variable, value) -> None:
        from tfc.dialects.tensor import AssignVariableOp

        ref = self._var_ref(var)
        v = self.lift(value)
        if v.type != ref.type.tensor:
            raise ValueError(f"{_where()}: cannot assign a {v.type} to {var.name} ({ref.type.tensor})")
        self._insert(AssignVariableOp.create(operands=[ref, v]))

    def custom_gradient(self, op, inputs, outputs, reads=None):
        """The ``outputs`` of a ``tfc.custom_gradient`` function (tape op ``op``)
        called on ``inputs``, through a tfc.custom_gradient op whose key finds
        ``op`` in ``grad_fns`` (``reads``: its variables' values, read here if
        not given). A replay of the IR records ``op`` there (tfc.frontend.cfgrad)."""
        from tfc.ops.control_flow import custom_gradient_call

        with tapes_suspended():
            if reads is None:
                reads = [self.read_variable(v) for v in op.variables]
            key = next(_GRAD_KEYS)
            self.grad_fns[key] = op
            outs = custom_gradient_call(*inputs, *reads, *outputs, key=key, n_inputs=len(inputs) + len(reads))
        return outs if isinstance(outs, list) else [outs]

    # -- regions ----------------------------------------------------------------
    def _trace_region(self, fn, arg_types=(), what="a throw-away trace"):
        """Run ``fn(*block_args)`` into a new block; returns (block, result, captured).
        ``what`` names the region in errors."""
        from xdsl.ir import Block

        block = Block(arg_types=list(arg_types))
        self._kinds[id(block)] = (block, what)
        self._push(block, [])
        self._block_caps[id(block)] = self._captures[-1]
        try:
            with tapes_suspended():  # ops inside a region are not differentiated one by one
                result = fn(*[self._wrap(a) for a in block.args])
            return block, result, self._captures[-1]
        finally:
            self._pop()

    def probe(self, fn):
        """``fn()`` run in a throw-away region: what it would produce (its ops are
        discarded). AutoGraph uses it to learn the type of a value that a branch or
        loop body creates before building the real op."""
        _, res, _ = self._trace_region(fn)
        return res

    def _yield(self, block, tensors, terminator=None):
        from tfc.dialects.tensor import YieldOp

        self._enter(block)
        try:
            values = [self.lift(t) for t in tensors]
            op = terminator(values) if terminator else YieldOp(values)
            self._insert(op)
        finally:
            self._leave()
        return values

    def _record_region(self, grad_op, captured, outputs, attrs, prefix=()):
        """One tape entry for a whole region op (see tfc.frontend.cfgrad): its
        inputs are ``prefix`` (the loop's initial values) then the captured values."""
        if not TAPES or not outputs:
            return
        from tfc.core.tape import record

        seen, inputs = set(), list(prefix)
        for t in captured:
            if id(t) not in seen:
                seen.add(id(t))
                inputs.append(t)
                if isinstance(t, Variable):  # read inside, where tapes were off
                    watch_accessed(t)
                    if not any(id(t) in tape._tracked for tape in TAPES):
                        inputs.pop()  # unwatched: no gradient, as eagerly
        record(grad_op, inputs, outputs if len(outputs) > 1 else outputs[0], attrs)
        grad_op.track(inputs, outputs, attrs)

    @staticmethod
    def _expand(leaves, what, partner=None):
        """Leaves with each TensorArray replaced by its buffer and size tensors;
        returns (items, templates). ``partner`` (the other branch's leaves, or a
        probe's) gives the element shape of an array never written here."""
        from tfc.ops.control_flow import TensorArray

        items, templates = [], []
        for k, x in enumerate(leaves):
            if isinstance(x, TensorArray):
                other = partner[k] if partner is not None and k < len(partner) else None
                shape = other._known_element_shape() if isinstance(other, TensorArray) else None
                ta = x._as_buffer(shape)
                if ta is None:
                    raise ValueError(f"{_where()}: {what}: a TensorArray whose element shape is unknown "
                                     "(never written) cannot be carried by compiled control flow; "
                                     "pass element_shape")
                items += [ta._buffer, ta._size]
                templates.append(ta)
            else:
                items.append(x)
                templates.append(None)
        return items, templates

    @staticmethod
    def _collapse(templates, tensors):
        """The inverse of ``_expand``: leaves from flat tensors."""
        it = iter(tensors)
        return [next(it) if t is None else t._with_buffer(next(it), next(it)) for t in templates]

    @staticmethod
    def _check_templates(a, b, what):
        for k, (x, y) in enumerate(zip(a, b)):
            if (x is None) != (y is None):
                raise TypeError(f"{_where()}: {what}: output {k} is a TensorArray in one place and not in the other")
            if x is not None and x.dtype != y.dtype:
                raise TypeError(f"{_where()}: {what}: TensorArray {k} holds {x.dtype.name} and {y.dtype.name}")

    def _as_tensors(self, structure, what):
        flat = nest.flatten(structure)
        out = []
        for x in flat:
            if x is None:
                raise TypeError(f"{_where()}: {what} returned None; every output must be a tensor")
            out.append(x if isinstance(x, Tensor) else convert_to_tensor(x))
        return out

    def cond(self, pred, true_fn, false_fn):
        """``true_fn()`` if ``pred`` else ``false_fn()``, as one tfc.cond op."""
        from xdsl.ir import Region

        from tfc.dialects.tensor import CondOp, tensor_type

        if not isinstance(pred, Tensor):
            pred = convert_to_tensor(pred)
        p = self.lift(pred)
        ps = Spec(tuple(pred.shape), pred.dtype)
        if ps.dtype != dtypes.bool_ or ps.shape not in ((), (1,)):
            raise TypeError(f"{_where()}: tfc.cond: the predicate must be a scalar bool tensor, got {ps}")
        branches = []
        for fn, what in ((true_fn, "true_fn"), (false_fn, "false_fn")):
            block, res, caps = self._trace_region(fn, what="a tfc.cond branch")
            branches.append((block, res, caps))
        (tb, tres, tcaps), (fb, fres, fcaps) = branches
        if nest.structure_signature(tres) != nest.structure_signature(fres):
            raise ValueError(f"{_where()}: tfc.cond: true_fn and false_fn must return the same nested structure, "
                             f"got {nest.structure_signature(tres)} and {nest.structure_signature(fres)}")
        tleaves, fleaves = nest.flatten(tres), nest.flatten(fres)
        flats = []
        for block, leaves, other, what in ((tb, tleaves, fleaves, "true_fn"), (fb, fleaves, tleaves, "false_fn")):
            self._enter(block)
            try:
                items, templates = self._expand(leaves, "tfc.cond", other)
                flats.append((self._as_tensors(items, f"tfc.cond's {what}"), templates))
            finally:
                self._leave()
        (tflat, ttemps), (fflat, ftemps) = flats
        self._check_templates(ttemps, ftemps, "tfc.cond")
        specs = [_relax(Spec(tuple(a.shape), a.dtype), Spec(tuple(b.shape), b.dtype),
                        f"{_where()}: tfc.cond: output {i} of true_fn and false_fn")
                 for i, (a, b) in enumerate(zip(tflat, fflat))]
        self._yield(tb, tflat)
        self._yield(fb, fflat)
        op = self._insert(CondOp.create(
            operands=[p], result_types=[tensor_type(s.shape, s.dtype) for s in specs],
            regions=[Region(tb), Region(fb)]))
        outs = [self._wrap(r) for r in op.results]
        from tfc.frontend.cfgrad import CondGrad

        self._record_region(CondGrad(), tcaps + fcaps, outs, {"op": op, "pred": pred})
        return nest.pack_sequence_as(tres, self._collapse(ttemps, outs))

    def while_loop(self, cond, body, loop_vars, maximum_iterations=None):
        """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``, as
        one tfc.while op. Shapes that change across iterations become dynamic."""
        from xdsl.dialects.builtin import IntegerAttr, i64
        from xdsl.ir import Region

        from tfc.dialects.tensor import ConditionOp, WhileOp, tensor_type
        from tfc.ops.control_flow import TensorArray

        single = not isinstance(loop_vars, (list, tuple, dict))
        structure = [loop_vars] if single else loop_vars
        leaves = nest.flatten(structure)

        def call(fn, templates, args):
            packed = nest.pack_sequence_as(structure, self._collapse(templates, args))
            return fn(packed[0]) if single else fn(*packed)

        if any(isinstance(x, TensorArray) and x._as_buffer() is None for x in leaves):
            # An array not written yet: a throw-away trace of the body tells its element shape.
            _, probe, _ = self._trace_region(lambda: call(body, [None] * len(leaves), leaves))
            probe = nest.flatten([probe] if single else probe)
        else:
            probe = None
        items, templates = self._expand(leaves, "tfc.while_loop", probe)
        init = self._as_tensors(items, "tfc.while_loop's loop_vars")
        inits = [self.lift(t) for t in init]
        specs = [Spec(tuple(t.shape), t.dtype) for t in init]

        for _ in range(3):  # at most: trace, relax shapes, confirm
            types = [tensor_type(s.shape, s.dtype) for s in specs]
            cblock, cres, ccaps = self._trace_region(lambda *a: call(cond, templates, list(a)), types,
                                                     what="a tfc.while_loop condition")
            self._enter(cblock)
            try:
                (c,) = self._as_tensors([cres], "tfc.while_loop's cond")
            finally:
                self._leave()
            if c.dtype != dtypes.bool_ or tuple(c.shape) not in ((), (1,)):
                raise TypeError(f"{_where()}: tfc.while_loop: cond must return a scalar bool tensor, "
                                f"got {c.dtype.name} {tuple(c.shape)}")
            bblock, bres, bcaps = self._trace_region(lambda *a: call(body, templates, list(a)), types,
                                                     what="a tfc.while_loop body")
            bres = [bres] if single else bres
            if nest.structure_signature(bres) != nest.structure_signature(list(structure)) and \
                    nest.structure_signature(tuple(bres)) != nest.structure_signature(tuple(structure)):
                raise ValueError(f"{_where()}: tfc.while_loop: body must return the structure of loop_vars")
            self._enter(bblock)
            try:
                bitems, btemps = self._expand(nest.flatten(bres), "tfc.while_loop", leaves)
                self._check_templates(templates, btemps, "tfc.while_loop's loop variables")
                bflat = self._as_tensors(bitems, "tfc.while_loop's body")
            finally:
                self._leave()
            new = [_relax(s, Spec(tuple(b.shape), b.dtype), f"{_where()}: tfc.while_loop: loop variable {i}")
                   for i, (s, b) in enumerate(zip(specs, bflat))]
            if new == specs:
                break
            specs = new
        else:
            raise AssertionError("tfc.while_loop: loop variable shapes did not settle")
        self._yield(cblock, [c], lambda vals: ConditionOp(vals[0]))
        self._yield(bblock, bflat)
        props = {}
        if maximum_iterations is not None:
            props["max_iterations"] = IntegerAttr(int(maximum_iterations), i64)
        op = self._insert(WhileOp.create(operands=inits, result_types=types,
                                         regions=[Region(cblock), Region(bblock)], properties=props))
        outs = [self._wrap(r) for r in op.results]
        from tfc.frontend.cfgrad import WhileGrad

        self._record_region(WhileGrad(), ccaps + bcaps, outs, {"op": op, "n_init": len(init)}, init)
        packed = nest.pack_sequence_as(structure, self._collapse(templates, outs))
        return packed[0] if single else packed

    # -- print / assert --------------------------------------------------------
    def _template(self, items, sep=" "):
        from tfc.ops.control_flow import TensorArray

        parts, values = [], []
        for x in items:
            if isinstance(x, TensorArray):
                x = x.stack()
            if isinstance(x, Tensor):
                parts.append("{}")
                values.append(self.lift(x))
            else:
                parts.append(_literal_text(str(x)))
        return _literal_text(sep).join(parts), values

    def print_(self, values, sep=" ", end="\n", stream=None, summarize=None):
        """A tfc.print op: prints the items (tensors at run time) when the function
        runs, to ``stream`` ("stdout" or "stderr"; None: stdout)."""
        from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64

        from tfc.dialects.tensor import PrintOp

        if isinstance(values, (Tensor, str)) or not isinstance(values, (list, tuple)):
            values = [values]
        fmt, vals = self._template(values, sep)
        props = {"format": StringAttr(fmt + _literal_text(end))}
        if stream is not None:
            if stream not in ("stdout", "stderr"):
                raise ValueError(f"{_where()}: tfc.print: stream must be 'stdout' or 'stderr', got {stream!r}")
            props["stream"] = StringAttr(stream)
        if summarize is not None:
            props["summarize"] = IntegerAttr(int(summarize), i64)
        self._insert(PrintOp.create(operands=vals, properties=props))

    def assert_(self, condition, data=(), summarize=None):
        """A tfc.assert op: fails at run time unless ``condition`` is all true."""
        from xdsl.dialects.builtin import StringAttr

        from tfc.dialects.tensor import AssertOp

        c = self.lift(condition)
        if not isinstance(data, (list, tuple)):
            data = [data]
        fmt, vals = self._template(data)
        self._insert(AssertOp.create(operands=[c, *vals], properties={"message": StringAttr(fmt)}))

    # -- finishing ----------------------------------------------------------------
    def finish(self, outputs):
        """Append func.return of ``outputs`` (tensors) and fix the function type."""
        from xdsl.dialects import func
        from xdsl.dialects.builtin import FunctionType

        last = self.entry.last_op
        values = [self.lift(t) for t in outputs]
        ret = func.ReturnOp(*values)
        self._insert(ret)
        if last is not None:  # the trace has ended: the user's line is that of the last op it made
            ret.location = last.location
        self.func.function_type = FunctionType.from_lists(
            [a.type for a in self.entry.args], [v.type for v in values])
        return self.func


def _literal_text(s: str) -> str:
    """``s`` as literal text of a str.format template (print and assert formats)."""
    return s.replace("{", "{{").replace("}", "}}")


def format_value(arr) -> str:
    """How tfc.print shows a tensor's value."""
    return _format_value(arr)
