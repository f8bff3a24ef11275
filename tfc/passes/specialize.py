"""Shape specialization of L1 IR: a function traced with ``None`` dimensions
(``tensor<?x64xf32>`` arguments) rewritten for one set of concrete argument
shapes, so that folding, fusion and the memory plan see static shapes.

``specialize(module, shapes)`` gives the argument types the concrete shapes and
re-infers every result type from its operands' new types, through the op
declarations (each registry op's ``infer``, as eager runs it); region ops
(``tfc.cond``, ``tfc.while``) join what their regions yield. A type only gets
more static: a dimension that was static stays as it was, and a ``?`` becomes
static where inference (with these shapes) knows it, or stays ``?`` where it
depends on the data (a growing TensorArray, a state list). An inference error
is the error eager raises on those shapes, noted with the op's line (as a trace
with static shapes, or the compiled code at run time, reports it).

Then ops whose operand is there only for its run-time shape (the ``*_like`` ops
that gradients emit where shapes are unknown when tracing) become their static
forms once that shape is known, each computing its kernel's bits:

- ``X_like(..., like)`` -> ``X(..., shape=like.shape)`` where registry op ``X``
  is declared as ``X_like`` with a ``shape`` attribute in place of ``like``
  (reshape, slice_grad), or ``input_hw`` / ``filter_hw`` (conv2d_backprop_input,
  conv2d_backprop_filter, avg_pool2d_grad): the declarations pair them;
- every other op that reads only a shape declares its static form
  (``static_form=`` in tfc/ops/shapes.py): ``broadcast_like`` -> ``broadcast_to``, ``split_like`` -> ``split``,
  ``count_along`` -> a constant, ``range_along`` -> ``range``;
- ``unbroadcast_like``, ``tile_grad_like``, ``gather_grad_like`` and
  ``pad_grad_like`` -> the ops that a static trace of the gradient emits
  (reduce_sum; reshape and reduce_sum; transpose and unsorted_segment_sum;
  getitem, pad and add), the same sums in the same order as their kernels.

``wrap_index`` (a run-time check of tensor indices) keeps its ``like``
operand. The default L1 pipeline then folds and cleans up (tfc-fold, tfc-dce):
fusion and memory planning see static IR, for gradients the IR that a trace
with static shapes gives.

``SpecializePass`` (``tfc-specialize{shapes="4x64,2"}``) does it in place for
``tfc opt`` and lit tests.
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from tfc.core.registry import REGISTRY, Spec
from tfc.dialects.tensor import (
    AssertOp, AssignVariableOp, ConditionOp, CondOp, ConstantOp, OpVerifyError, PrintOp, ReadVariableOp,
    RefType, RegistryOp, WhileOp, YieldOp, build_op, loc_str, spec_of, tensor_type,
)
from tfc.passes.pipeline import require_tensor_ir


def specialize(module: ModuleOp, shapes) -> ModuleOp:
    """A new module: ``module``'s one function specialized to ``shapes``, one
    entry per function argument: a tuple of ints (None for a dimension left
    dynamic) for a tensor argument, None for a ``!tfc.ref`` variable argument
    (variables keep their types); or one entry per tensor argument only.
    ``module`` itself is not changed.

    ValueError if a shape does not fit its argument's type (rank, static
    dimensions); an op that refuses its operands' new shapes raises eager's
    error (ValueError or TypeError with eager's message), with a note naming
    the op's location (``  at file.py:12``)."""
    new = module.clone()
    specialize_in_place(new, shapes)
    return new


def specialize_in_place(module: ModuleOp, shapes, verify_errors: bool = False) -> None:
    """``specialize`` on ``module`` itself. With ``verify_errors``, an inference
    error is an OpVerifyError at the op (how ``tfc opt`` reports errors)."""
    require_tensor_ir("tfc-specialize", module)
    f = _the_function(module)
    block = f.body.block
    shapes = list(shapes)
    tensors = [not isinstance(a.type, RefType) for a in block.args]
    if len(shapes) == sum(tensors) != len(block.args):  # one shape per tensor argument: refs keep theirs
        given = iter(shapes)
        shapes = [next(given) if t else None for t in tensors]
    if len(shapes) != len(block.args):
        raise ValueError(f"specialize: @{f.sym_name.data} takes {len(block.args)} arguments "
                         f"({sum(tensors)} tensors), got {len(shapes)} shapes")
    for i, (arg, shape) in enumerate(zip(list(block.args), shapes)):
        if isinstance(arg.type, RefType):
            if shape is not None and tuple(shape) != spec_of(arg.type).shape:
                raise ValueError(f"specialize: argument {i} of @{f.sym_name.data} is a variable "
                                 f"({arg.type}); its shape is not specialized (give None)")
            continue
        if shape is None:
            raise ValueError(f"specialize: argument {i} of @{f.sym_name.data} is a tensor ({arg.type}); "
                             f"give its shape")
        old = spec_of(arg.type)
        want = _as_shape(shape)
        if len(want) != len(old.shape) or any(d is not None and w is not None and d != w
                                              for d, w in zip(old.shape, want)):
            raise ValueError(f"specialize: argument {i} of @{f.sym_name.data} has type {arg.type}; "
                             f"shape {_fmt(want)} is not compatible with it")
        want = tuple(d if w is None else w for d, w in zip(old.shape, want))
        if want != old.shape:
            Rewriter.replace_value_with_new_type(arg, tensor_type(want, old.dtype))
    _Refiner(verify_errors).block(block)
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise ValueError(f"specialize: @{f.sym_name.data} does not end with func.return")
    f.function_type = FunctionType.from_lists([a.type for a in block.args], [v.type for v in ret.operands])
    for op in list(module.walk()):
        if op.parent is not None:  # not erased by an earlier rewrite
            static_form(op)


def _the_function(module):
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(funcs) != 1:
        raise NotImplementedError(f"specialize: a module of {len(funcs)} functions (it specializes a "
                                  f"module of one func.func, as a trace makes)")
    calls = [op for op in module.walk() if isinstance(op, func.CallOp)]
    if calls:
        raise NotImplementedError("specialize: func.call is not specialized (a trace inlines its calls)")
    return funcs[0]


def _as_shape(shape) -> tuple:
    out = []
    for d in shape:
        if d is None:
            out.append(None)
            continue
        if isinstance(d, bool) or int(d) != d or d < 0:
            raise ValueError(f"specialize: bad dimension {d!r} in shape {tuple(shape)!r}")
        out.append(int(d))
    return tuple(out)


def _fmt(shape) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _join(a: Spec, b: Spec) -> Spec:
    """The type of a value that is ``a`` or ``b``: a dimension where they differ is ``?``."""
    return Spec(tuple(x if x == y else None for x, y in zip(a.shape, b.shape)), a.dtype)


class _Refiner:
    """Re-infers result types, op by op in program order; ``orig`` keeps each
    value's type as it was before (the bound no refinement may cross), by
    (owner, index): refining replaces the SSA values themselves."""

    def __init__(self, verify_errors: bool):
        self.verify_errors = verify_errors
        self.orig: dict = {}

    def block(self, block) -> None:
        for op in list(block.ops):
            self.op(op)

    def op(self, op) -> None:
        if isinstance(op, RegistryOp):
            self.set_results(op, self.infer(op))
        elif isinstance(op, CondOp):
            self.cond(op)
        elif isinstance(op, WhileOp):
            self.while_(op)
        elif isinstance(op, AssignVariableOp):
            if op.value.type != op.ref.type.tensor:
                # a variable whose type has ``?`` dims: its ref keeps that type, and no op here says
                # that a static value is assigned to it
                raise NotImplementedError(
                    f"{loc_str(op)}: specialize: assigning a {op.value.type} to a variable of type "
                    f"{op.ref.type.tensor} (a variable with dimensions known only at run time)")
        elif isinstance(op, (ConstantOp, ReadVariableOp, PrintOp, AssertOp, YieldOp, ConditionOp, func.ReturnOp)):
            pass  # types fixed by their attributes or refs, or no results
        else:
            raise NotImplementedError(f"{loc_str(op)}: specialize: {op.name} is not specialized "
                                      f"(it specializes L1 tensor IR)")

    def infer(self, op) -> list:
        opdef = op.OPDEF
        specs = [spec_of(t) for t in op.operand_types]
        try:
            out = opdef.infer(opdef, *specs, **op.attr_values)
        except (ValueError, TypeError, IndexError) as e:
            if self.verify_errors:
                raise OpVerifyError(op, str(e)) from None
            where = loc_str(op)
            if not where.startswith("<"):  # as eager's note_user_line and compiled code write it
                e.add_note(f"  at {where}")
            e._tfc_noted = True
            raise e from None
        return [out] if isinstance(out, Spec) else list(out)

    def original(self, key, t) -> Spec:
        return self.orig.setdefault(key, spec_of(t))

    def set_results(self, op, specs) -> None:
        if len(specs) != len(op.results):
            raise AssertionError(f"{loc_str(op)}: {op.name}: inference gives {len(specs)} results, "
                                 f"the op has {len(op.results)}")
        for i, s in enumerate(specs):
            r = op.results[i]
            new = self.bound(op, self.original((op, i), r.type), s)
            if spec_of(r.type) != new:
                Rewriter.replace_value_with_new_type(r, tensor_type(new.shape, new.dtype))

    @staticmethod
    def bound(op, orig: Spec, new: Spec) -> Spec:
        """``new`` within the value's type before specialization: a static
        dimension there stays (inference may know less, never otherwise)."""
        if new.dtype != orig.dtype or len(new.shape) != len(orig.shape) or any(
                o is not None and n is not None and o != n for o, n in zip(orig.shape, new.shape)):
            raise AssertionError(f"{loc_str(op)}: {op.name}: specialized type {new} contradicts its type "
                                 f"{orig} before specialization")
        return Spec(tuple(o if o is not None else n for o, n in zip(orig.shape, new.shape)), orig.dtype)

    def set_args(self, block, specs) -> None:
        for i, s in enumerate(specs):
            a = block.args[i]
            new = self.bound(block.parent_op(), self.original((block, i), a.type), s)
            if spec_of(a.type) != new:
                Rewriter.replace_value_with_new_type(a, tensor_type(new.shape, new.dtype))

    def yields(self, region) -> list:
        self.block(region.block)
        term = region.block.last_op
        return [spec_of(v.type) for v in term.operands]

    def cond(self, op) -> None:
        then, other = self.yields(op.then_region), self.yields(op.else_region)
        self.set_results(op, [_join(a, b) for a, b in zip(then, other)])

    def while_(self, op) -> None:
        """Loop variables start with the inits' types; where the body yields
        another shape, that dimension becomes ``?`` and the regions are refined
        again, until the types hold (each round makes a dimension dynamic)."""
        carried = [self.bound(op, self.original((op, i), r.type), spec_of(v.type))
                   for i, (r, v) in enumerate(zip(op.results, op.inits))]
        while True:
            self.set_args(op.cond_region.block, carried)
            self.set_args(op.body_region.block, carried)
            self.block(op.cond_region.block)
            out = self.yields(op.body_region)
            joined = [self.bound(op, self.orig[(op, i)], _join(c, y)) for i, (c, y) in enumerate(zip(carried, out))]
            if joined == carried:
                break
            carried = joined
        self.set_results(op, carried)


# -- static forms of the ops that take a shape at run time -----------------------------------


def _static(v) -> tuple | None:
    s = spec_of(v.type).shape
    return None if None in s else s


def _replace(op, new_ops, values) -> None:
    for n in new_ops:
        n.location = op.location
    Rewriter.replace_op(op, new_ops, values)


# The attribute of a static op that the shape of the ``like`` operand of its
# ``_like`` twin stands for: the whole shape, or an image's (NHWC) or filters'
# (HWIO) height and width, as the declarations' kernels read ``like.shape``.
_SHAPE_ATTRS = {"shape": lambda s: s, "input_hw": lambda s: s[1:3], "filter_hw": lambda s: s[:2]}


def _like_to_shape_attr(op) -> bool:
    """``X_like(..., like, ...)`` -> ``X(..., <attr>=<like's shape>)`` where registry
    op ``X`` takes the same inputs less ``like`` and the same attributes plus one
    of ``_SHAPE_ATTRS`` (reshape_like, slice_grad_like, conv2d_backprop_input_like,
    conv2d_backprop_filter_like, avg_pool2d_grad_like): the declarations say so."""
    from tfc.dialects.tensor import input_layout

    opdef = op.OPDEF
    base = REGISTRY.get(opdef.name[:-len("_like")]) if opdef.name.endswith("_like") else None
    if base is None:
        return False
    extra = set(base.attrs) - set(opdef.attrs)
    if len(extra) != 1 or (attr := extra.pop()) not in _SHAPE_ATTRS or base.attrs[attr] != "ints" \
            or base.attrs != {**opdef.attrs, attr: "ints"}:
        return False
    fixed, variadic = input_layout(opdef)
    bfixed, bvariadic = input_layout(base)
    if variadic or bvariadic or "like" not in fixed or len(fixed) != len(bfixed) + 1:
        return False
    like = op.operands[fixed.index("like")]
    dims = _SHAPE_ATTRS[attr](spec_of(like.type).shape)
    if None in dims:
        return False
    operands = [v for n, v in zip(fixed, op.operands) if n != "like"]
    new = build_op(base.name, operands, {**op.attr_values, attr: tuple(dims)}, result_types=[op.results[0].type])
    _replace(op, [new], [new.results[0]])
    return True


def static_form(op) -> bool:
    """Rewrite an op that reads only the shape of an operand (known now) to
    its static form; True if it did. The form is the op's declaration's
    (``static_form``), else the ``X_like`` -> ``X`` pairing above."""
    if not isinstance(op, RegistryOp):
        return False
    rule = op.OPDEF.static_form
    if rule is None:
        return _like_to_shape_attr(op)
    form = rule(op)
    if form is None:
        return False
    _replace(op, *form)
    return True


# -- the pass ---------------------------------------------------------------------------------


def parse_shapes(text: str) -> list:
    """``"4x64,2,(),?x3"`` -> ``[(4, 64), (2,), (), (None, 3)]``: one shape per
    tensor argument, dimensions joined by ``x`` (``?``: left dynamic; ``()``,
    or nothing between commas: a 0-d tensor); an empty text: no arguments."""
    if not text.strip():
        return []
    out = []
    for part in text.split(","):
        part = part.strip()
        if part in ("", "()"):
            out.append(())
            continue
        dims = []
        for d in part.split("x"):
            d = d.strip()
            if d == "?":
                dims.append(None)
            elif d.isdigit():
                dims.append(int(d))
            else:
                raise ValueError(f"tfc-specialize: bad shape {part!r} in shapes={text!r} "
                                 f"(expected dimensions joined by x, as 4x64; ? for a dynamic one)")
        out.append(tuple(dims))
    return out


@dataclass(frozen=True)
class SpecializePass(ModulePass):
    """``tfc-specialize{shapes="4x64,2"}``: the module's function specialized in
    place to these shapes of its tensor arguments (variables keep their types)."""

    name = "tfc-specialize"

    shapes: str = ""

    def __post_init__(self):
        parse_shapes(self.shapes)  # bad text is an error of the pass options (tfc opt says so before parsing IR)

    def apply(self, ctx, op) -> None:
        f = _the_function(op)
        tensors = [a for a in f.body.block.args if not isinstance(a.type, RefType)]
        got = parse_shapes(self.shapes)
        try:
            if len(got) != len(tensors):
                raise ValueError(f"tfc-specialize: @{f.sym_name.data} takes {len(tensors)} tensor arguments, "
                                 f"shapes={self.shapes!r} gives {len(got)}")
            specialize_in_place(op, got, verify_errors=True)
        except ValueError as e:  # arguments that do not fit: an error at the function, as tfc opt reports them
            raise OpVerifyError(f, str(e)) from None
