"""The L2 fused dialect: ``tfc.fused`` kernels with a scalar body (see
docs/ir-fused-dialect.md). Part of the ``tfc`` dialect namespace
(``tfc.dialects.tensor.dialect()`` includes these ops).

A ``tfc.fused`` op iterates over a static iteration ``shape``. Input ``i`` is
read at the iteration index through ``broadcast[i]``: one entry per input
dimension, the iteration dimension it follows, or -1 for a size-1 dimension
read at index 0. The body is one block of scalar ``arith``/``math`` ops whose
arguments are the input elements at that index; ``tfc.fused_yield`` gives one
value per result. ``reduce`` gives each result its kind: ``"none"`` (the
result has the iteration shape) or ``"sum"`` (prod, max, min, mean, any, all):
the yielded values reduced over ``reduce_axes`` with the registry's
``reduce_<kind>`` semantics, the result keeping them as size 1 when its rank is
the iteration rank. ``"argmax"``/``"argmin"`` (over exactly one axis) give
the index along that axis of the first largest/smallest yielded value, NaN
as numpy's: the first NaN wins (the registry's ``reduce_argmax`` /
``reduce_argmin``); such a result has an integer element type (i32 or i64),
the yielded values any numeric type. Without ``reduce`` every result is
elementwise. One kernel
may so make elementwise results and reductions of the same values (a
multi-output kernel: one pass over the data instead of several).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from xdsl.dialects.builtin import (
    AnyFloatConstr, ArrayAttr, DenseArrayBase, SignlessIntegerConstraint, StringAttr, TensorType, i64,
)
from xdsl.ir import Block
from xdsl.irdl import (
    IRDLOperation, ParsePropInAttrDict, VarConstraint, irdl_op_definition, lazy_traits_def, operand_def,
    opt_prop_def, prop_def, region_def, result_def, traits_def, var_operand_def, var_result_def,
)
from xdsl.traits import HasParent, IsTerminator, Pure, RecursiveMemoryEffect

from tfc.core import dtypes
from tfc.dialects.tensor import _fail, dtype_of, element_type, spec_of

REDUCE_KINDS = ("sum", "prod", "max", "min", "mean", "any", "all", "argmax", "argmin")
# arg-reductions: the index of the first extreme along their one reduced axis
ARG_KINDS = ("argmax", "argmin")


def ints_attr(values) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def flat_period(shape, bmap, size: int) -> int | None:
    """How a kernel over ``shape``, run as one flat loop (multi-output kernels
    with a full sum), reads an input of ``size`` elements broadcast by ``bmap``:
    0 at the flat index i (full size), 1 its one element, P at i % P (varying
    along trailing dims only, as a bias); None when it is read otherwise."""
    n = int(np.prod(shape, dtype=np.int64))
    if size == 1 or size == n:
        return 1 if size == 1 else 0
    rank = len(shape)
    dims = [d for d in bmap if d >= 0]
    if dims == list(range(rank - len(dims), rank)) and size == int(np.prod(shape[rank - len(dims):], dtype=np.int64)):
        return size
    return None


def reduced_shape(shape, axes, keepdims: bool) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


class KernelIndexing:
    """The accessors of an op over an index space (``tfc.fused`` and
    ``loops.parallel``: properties shape, broadcast, reduce, reduce_axes)."""

    @property
    def iteration_shape(self) -> tuple:
        return tuple(int(d) for d in self.shape.get_values())

    @property
    def broadcast_maps(self) -> list[tuple]:
        return [tuple(int(d) for d in m.get_values()) for m in self.broadcast.data]

    @property
    def reduce_kinds(self) -> tuple:
        """Per output: its reduction kind, or None for an elementwise output."""
        if self.reduce is None:
            return (None,) * len(self.outs)
        return tuple(None if k.data == "none" else k.data for k in self.reduce.data)

    @property
    def reduces(self) -> bool:
        return self.reduce is not None

    @property
    def axes(self) -> tuple:
        return () if self.reduce_axes is None else tuple(int(a) for a in self.reduce_axes.get_values())

    def keeps_dims(self, k: int) -> bool:
        """Does reduced output ``k`` keep the reduced axes (as size 1)?"""
        return len(self.outs[k].type.get_shape()) == len(self.iteration_shape)

    def verify_broadcast(self, in_shapes) -> None:
        """Each input (of shape ``in_shapes[i]``) has a map ``broadcast[i]`` that
        names, per dim, a distinct iteration dim of its size or -1 (size 1)."""
        shape = self.iteration_shape
        n = len(shape)
        maps = self.broadcast.data
        if len(maps) != len(in_shapes) or not all(isinstance(m, DenseArrayBase) for m in maps):
            _fail(self, f"broadcast needs one array<i64> per input ({len(in_shapes)}), got {len(maps)}")
        for i, (s, m) in enumerate(zip(in_shapes, self.broadcast_maps)):
            if len(m) != len(s):
                _fail(self, f"broadcast[{i}] has {len(m)} entries for an input of rank {len(s)}")
            used = [d for d in m if d >= 0]
            if len(set(used)) != len(used) or any(d < -1 or d >= n for d in m):
                _fail(self, f"broadcast[{i}] = {list(m)} must name distinct iteration dims in [0, {n}) or -1")
            for j, (d, size) in enumerate(zip(m, s)):
                want = 1 if d < 0 else shape[d]
                if size != want:
                    _fail(self, f"input {i} dim {j} has size {size}, expected {want} "
                          f"(iteration shape {list(shape)}, broadcast {list(m)})")

    def verify_indexing(self, out_shapes, yielded_types, out_types) -> None:
        """Checks shared by tfc.fused and loops.parallel: the reduction kinds and
        axes, and each output's element type and shape."""
        shape = self.iteration_shape
        n = len(shape)
        if (self.reduce is None) != (self.reduce_axes is None):
            _fail(self, "reduce and reduce_axes come together")
        if self.reduce is not None:
            kinds = self.reduce.data
            if len(kinds) != len(out_shapes) or not all(isinstance(k, StringAttr) for k in kinds):
                _fail(self, f"reduce needs one string per result ({len(out_shapes)}), got {len(kinds)}")
            for k in kinds:
                if k.data != "none" and k.data not in REDUCE_KINDS:
                    _fail(self, f"unknown reduction {k.data!r}; expected none or one of {', '.join(REDUCE_KINDS)}")
            if all(k.data == "none" for k in kinds):
                _fail(self, "reduce names no reduction (leave it out for an elementwise kernel)")
            axes = self.axes
            if not axes or list(axes) != sorted(set(axes)) or axes[0] < 0 or axes[-1] >= n:
                _fail(self, f"reduce_axes {list(axes)} must be sorted distinct dims of the iteration shape")
        for k, (kind, got, y, t) in enumerate(zip(self.reduce_kinds, out_shapes, yielded_types, out_types)):
            if kind in ARG_KINDS:
                if len(self.axes) != 1:
                    _fail(self, f"result {k}: {kind} reduces exactly one axis, not {list(self.axes)}")
                if self.iteration_shape[self.axes[0]] == 0:
                    _fail(self, f"result {k}: {kind} over an empty axis (no index to give)")
                if str(t) not in ("i32", "i64"):
                    _fail(self, f"result {k}: {kind} gives an index, of element type i32 or i64, not {t}")
            elif y != t:
                _fail(self, f"result {k} has element type {t}, the body yields {y}")
            if kind is None:
                ok = got == shape
            else:
                ok = got in (reduced_shape(shape, self.axes, True), reduced_shape(shape, self.axes, False))
            if not ok:
                _fail(self, f"result {k} has shape {list(got)}, which does not fit iteration shape "
                      f"{list(shape)}" + (f" reduced over {list(self.axes)}" if kind else ""))


def reduce_props(kinds, reduce_axes) -> dict:
    """The ``reduce``/``reduce_axes`` properties for per-output ``kinds`` (None:
    elementwise); none at all when no output reduces."""
    if kinds is None or all(k is None for k in kinds):
        return {}
    return {"reduce": ArrayAttr([StringAttr(k or "none") for k in kinds]), "reduce_axes": ints_attr(reduce_axes)}


@irdl_op_definition
class FusedYieldOp(IRDLOperation):
    """``tfc.fused_yield %v... : types``: the scalar results of a tfc.fused body."""

    name = "tfc.fused_yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusedOp), Pure()))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, values=()):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class FusedOp(KernelIndexing, IRDLOperation):
    """``%r = tfc.fused(%a, ...) {shape = array<i64: ...>, broadcast = [array<i64: ...>, ...]}
    : (types) -> types { ^bb0(%x: f32, ...): ... tfc.fused_yield %v : f32 }``"""

    name = "tfc.fused"
    inputs = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    shape = prop_def(DenseArrayBase)
    broadcast = prop_def(ArrayAttr)
    reduce = opt_prop_def(ArrayAttr)
    reduce_axes = opt_prop_def(DenseArrayBase)
    body = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "`(` $inputs `)` attr-dict `:` functional-type($inputs, $outs) $body"

    def __init__(self, inputs, result_types, shape, broadcast, body, reduce=None, reduce_axes=None):
        """``reduce``: per result, its reduction kind or None (elementwise)."""
        props = {"shape": ints_attr(shape), "broadcast": ArrayAttr([ints_attr(m) for m in broadcast]),
                 **reduce_props(reduce, reduce_axes)}
        super().__init__(operands=[list(inputs)], result_types=[list(result_types)], properties=props,
                         regions=[body])

    def verify_(self) -> None:
        shape = self.iteration_shape
        if any(d < 0 for d in shape):
            _fail(self, f"the iteration shape must be static, got {list(shape)}")
        self.verify_broadcast([spec_of(v.type).shape for v in self.inputs])
        block = self.body.block
        if len(block.args) != len(self.inputs):
            _fail(self, f"the body takes {len(block.args)} arguments for {len(self.inputs)} inputs")
        for i, (a, v) in enumerate(zip(block.args, self.inputs)):
            if a.type != v.type.element_type:
                _fail(self, f"body argument {i} has type {a.type}, expected {v.type.element_type}")
        term = block.last_op
        if not isinstance(term, FusedYieldOp):
            _fail(self, "the body must end with tfc.fused_yield")
        if len(term.values) != len(self.outs):
            _fail(self, f"the body yields {len(term.values)} values for {len(self.outs)} results")
        self.verify_indexing([spec_of(r.type).shape for r in self.outs], [y.type for y in term.values],
                             [r.type.element_type for r in self.outs])


@irdl_op_definition
class RemFOp(IRDLOperation):
    """``tfc.remf %a, %b : f32``: C fmod (MLIR's arith.remf, missing from xdsl 0.74)."""

    name = "tfc.remf"
    T: ClassVar = VarConstraint("T", AnyFloatConstr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(self, lhs, rhs):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])


@irdl_op_definition
class FloorModOp(IRDLOperation):
    """``tfc.floormod %a, %b : i32``: signed integer remainder with the sign of
    the divisor (numpy's np.mod, Python's %); a zero divisor gives 0, as numpy.
    One op, so that a backend with a native form uses it (the numpy backend:
    Python ``%`` on scalars, np.mod on arrays); a backend without one (a future
    PTX backend) lowers it to ``r = arith.remsi a, b`` then
    ``r != 0 && (r < 0) != (b < 0) ? r + b : r``, and 0 where b == 0."""

    name = "tfc.floormod"
    T: ClassVar = VarConstraint("T", SignlessIntegerConstraint)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(self, lhs, rhs):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])


FUSED_OPS = [FusedOp, FusedYieldOp, RemFOp, FloorModOp]


# -- building scalar bodies from the registry's scalar= functions -----------------


class ScalarBuilder:
    """What a scalar body gets as ``b`` (see tfc/ops/_scalar.py)."""

    __slots__ = ("block", "out_dtype")

    def __init__(self, block: Block, out_dtype: dtypes.DType | None = None):
        self.block = block
        self.out_dtype = out_dtype

    def emit(self, op):
        self.block.add_op(op)
        return op.results[0]

    @staticmethod
    def dtype(value) -> dtypes.DType:
        return dtype_of(value.type)


def emit_scalar(opdef, block: Block, operands, attrs: dict, out_dtype: dtypes.DType):
    """Append ``opdef``'s scalar body on ``operands`` to ``block``; its result value."""
    if opdef.scalar is None:
        raise NotImplementedError(f"op {opdef.name} has no scalar body")
    return opdef.scalar(ScalarBuilder(block, out_dtype), *operands, **attrs)


def scalar_block(opdef, in_dtypes, attrs: dict, out_dtype: dtypes.DType) -> Block:
    """A block computing one element of ``opdef``: one argument per input
    dtype, the op's scalar body, ``tfc.fused_yield`` of its value."""
    block = Block(arg_types=[element_type(d) for d in in_dtypes])
    value = emit_scalar(opdef, block, list(block.args), attrs, out_dtype)
    block.add_op(FusedYieldOp([value]))
    return block


_BODIES: dict = {}


def body_of(op) -> Block:
    """The scalar body block of registry op ``op`` (``scalar_block``), made once
    per op, operand element types and properties: to read, not to change."""
    key = (op.OPDEF.name, tuple(str(v.type.element_type) for v in op.operands), str(op.properties))
    block = _BODIES.get(key)
    if block is None:
        block = _BODIES[key] = scalar_block(op.OPDEF, [spec_of(v.type).dtype for v in op.operands],
                                            op.attr_values, spec_of(op.results[0].type).dtype)
    return block


def count_ops(module) -> int:
    """Tensor-level ops of a module: not the module and function wrappers, nor
    the scalar ops inside a tfc.fused kernel (the kernel counts as one)."""
    from xdsl.dialects import builtin, func

    def count(op):
        n = 0 if isinstance(op, (builtin.ModuleOp, func.FuncOp)) else 1
        if not isinstance(op, FusedOp):
            n += sum(count(o) for r in op.regions for b in r.blocks for o in b.ops)
        return n

    return count(module)
