"""The L3 loop dialect ``loops``: buffers at planned offsets, parallel loops with
scalar bodies, library calls and scf-style control flow (docs/ir-loops-dialect.md).

A function at this level (``func.func``) takes its tensor arguments as
``memref``s (0-d tensors as plain scalars: ``f32``, ``i32``, ``i1``), its
variables as ``!tfc.ref<...>``, and, last, the arena ``%arena : memref<Nxi8>``.
Every buffer is either a ``loops.view`` of the arena at the offset the memory
plan chose, a ``loops.alloc`` (a buffer that outlives the call: a result or a
variable's new value), a ``loops.constant`` (read-only) or the result of a
``loops.library`` call (a registry kernel that allocates its own result).

A backend maps each op to its target: the numpy backend emits one Python
function, a GPU backend would launch one kernel per ``loops.parallel`` with the
arena in device memory, and run control flow on 0-d scalars on the host.
"""
from __future__ import annotations

from xdsl.dialects.builtin import (
    ArrayAttr, DenseArrayBase, DenseIntOrFPElementsAttr, DictionaryAttr, IntegerAttr, MemRefType,
    StringAttr, i64,
)
from xdsl.ir import Dialect
from xdsl.irdl import (
    AttrSizedOperandSegments, IRDLOperation, ParsePropInAttrDict, irdl_op_definition,
    lazy_traits_def, operand_def, opt_prop_def, prop_def, region_def, result_def, traits_def,
    var_operand_def, var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, MemoryAllocEffect, MemoryReadEffect, MemoryWriteEffect, Pure

from tfc.dialects.fused import KernelIndexing, ints_attr, reduce_props
from tfc.dialects.tensor import RefType, _fail, parse_cond, parse_while, print_cond, print_while


def shape_of(t) -> tuple:
    """Shape of a memref type, () for a scalar type."""
    return tuple(t.get_shape()) if isinstance(t, MemRefType) else ()


def element_of(t):
    return t.element_type if isinstance(t, MemRefType) else t


# -- buffers ------------------------------------------------------------------------


@irdl_op_definition
class ViewOp(IRDLOperation):
    """``%b = loops.view %arena {offset = 64} : memref<256xi8> -> memref<4x3xf32>``:
    the buffer at byte ``offset`` of the arena (the memory plan's offset)."""

    name = "loops.view"
    arena = operand_def(MemRefType)
    offset = prop_def(IntegerAttr)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$arena attr-dict `:` type($arena) `->` type($result)"

    def __init__(self, arena, offset: int, result_type):
        super().__init__(operands=[arena], properties={"offset": IntegerAttr(int(offset), i64)},
                         result_types=[result_type])

    def verify_(self):
        (size,) = self.arena.type.get_shape()
        t = self.result.type
        from tfc.dialects.tensor import dtype_of

        nbytes = dtype_of(t.element_type).itemsize
        for d in t.get_shape():
            nbytes *= d
        if self.offset.value.data < 0 or self.offset.value.data + nbytes > size:
            _fail(self, f"a {t} at offset {self.offset.value.data} does not fit in an arena of {size} bytes")


@irdl_op_definition
class AllocOp(IRDLOperation):
    """``%b = loops.alloc : memref<4xf32>``: a fresh buffer that outlives the call
    (a function result or a variable's new value)."""

    name = "loops.alloc"
    result = result_def(MemRefType)
    traits = traits_def(MemoryAllocEffect())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type):
        super().__init__(result_types=[result_type])


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """``%c = loops.constant dense<...> : tensor<3xf32> -> memref<3xf32>``: read-only data."""

    name = "loops.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$value attr-dict `->` type($result)"

    def __init__(self, value, result_type):
        super().__init__(properties={"value": value}, result_types=[result_type])


@irdl_op_definition
class LoadOp(IRDLOperation):
    """``%s = loops.load %m : memref<f32> -> f32``: the value of a 0-d buffer."""

    name = "loops.load"
    source = operand_def(MemRefType)
    result = result_def()
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source):
        super().__init__(operands=[source], result_types=[source.type.element_type])


@irdl_op_definition
class CopyOp(IRDLOperation):
    """``loops.copy %src, %dst : memref<..>, memref<..>``: dst[...] = src."""

    name = "loops.copy"
    source = operand_def(MemRefType)
    dest = operand_def(MemRefType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$source `,` $dest attr-dict `:` type($source) `,` type($dest)"

    def __init__(self, source, dest):
        super().__init__(operands=[source, dest])

    def verify_(self):
        if self.source.type != self.dest.type:
            _fail(self, f"copies a {self.source.type} into a {self.dest.type}")


# -- computation ---------------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of parallel bodies (one scalar per output), of loops.if
    branches and of the loops.while body."""

    name = "loops.yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), Pure()))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, values=()):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class ParallelOp(KernelIndexing, IRDLOperation):
    """``loops.parallel ins(%a, %s : memref<4x3xf32>, f32) outs(%o : memref<4x3xf32>)
    {shape = array<i64: 4, 3>, broadcast = [array<i64: 0, 1>, array<i64>]} { ^bb0(...): ... }``

    A loop nest over the static index space ``shape``. Input ``i`` (a buffer or a
    scalar) is read at the index through ``broadcast[i]`` (as in ``tfc.fused``);
    the body gets the elements and yields one scalar per output. ``reduce``
    gives each output its kind, as in ``tfc.fused``: an output of kind
    ``"none"`` (every output, without ``reduce``) has shape ``shape`` and is
    written at the index; an output of kind ``"sum"`` (prod, max, min, mean,
    any, all) holds the reduction of its yielded values over the
    ``reduce_axes`` dimensions, which are sequential for it (keeping them as
    size 1 when its rank is the rank of ``shape``), with the registry's
    ``reduce_*`` semantics.
    """

    name = "loops.parallel"
    ins = var_operand_def()
    outs = var_operand_def(MemRefType)
    shape = prop_def(DenseArrayBase)
    broadcast = prop_def(ArrayAttr)
    reduce = opt_prop_def(ArrayAttr)
    reduce_axes = opt_prop_def(DenseArrayBase)
    body = region_def("single_block")
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = ("`ins` `(` ($ins^ `:` type($ins))? `)` `outs` `(` $outs `:` type($outs) `)` "
                       "attr-dict-with-keyword $body")

    def __init__(self, ins, outs, shape, broadcast, body, reduce=None, reduce_axes=None):
        props = {"shape": ints_attr(shape), "broadcast": ArrayAttr([ints_attr(m) for m in broadcast]),
                 **reduce_props(reduce, reduce_axes)}
        super().__init__(operands=[list(ins), list(outs)], properties=props, regions=[body])

    def verify_(self):
        self.verify_broadcast([shape_of(v.type) for v in self.ins])
        block = self.body.block
        if [a.type for a in block.args] != [element_of(v.type) for v in self.ins]:
            _fail(self, "the body takes one argument per input, of its element type")
        term = block.last_op
        if not isinstance(term, YieldOp) or len(term.values) != len(self.outs):
            _fail(self, f"the body must yield {len(self.outs)} values")
        self.verify_indexing([shape_of(o.type) for o in self.outs], [y.type for y in term.values],
                             [o.type.element_type for o in self.outs])


@irdl_op_definition
class LibraryOp(IRDLOperation):
    """``%r = loops.library "matmul"(%a, %b : ...) {attrs = {...}} -> memref<..>``: a
    call of a registry op's kernel (matmul, conv2d, reshape, ...), which makes its
    results; with ``outs(...)`` it writes them into those buffers instead (BLAS
    writes into the arena)."""

    name = "loops.library"
    callee = prop_def(StringAttr)
    kernel_attrs = prop_def(DictionaryAttr, prop_name="attrs")
    ins = var_operand_def()
    outs = var_operand_def(MemRefType)
    res = var_result_def()
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = ("$callee `(` ($ins^ `:` type($ins))? `)` (`outs` `(` $outs^ `:` type($outs) `)`)? "
                       "attr-dict `->` `(` type($res) `)`")

    def __init__(self, callee: str, ins, attrs: dict, result_types=(), outs=()):
        super().__init__(operands=[list(ins), list(outs)], result_types=[list(result_types)],
                         properties={"callee": StringAttr(callee), "attrs": DictionaryAttr(attrs)})


# -- control flow on scalars ---------------------------------------------------------


@irdl_op_definition
class ConditionOp(IRDLOperation):
    """Terminator of the loops.while condition region."""

    name = "loops.condition"
    cond = operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), Pure()))
    assembly_format = "$cond attr-dict `:` type($cond)"

    def __init__(self, cond):
        super().__init__(operands=[cond])


@irdl_op_definition
class IfOp(IRDLOperation):
    """``%r = loops.if %c : (i1) -> (f32) {...loops.yield} else {...}`` (scf.if)."""

    name = "loops.if"
    cond = operand_def()
    outs = var_result_def()
    then_region = region_def("single_block")
    else_region = region_def("single_block")
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, cond, result_types, then_region, else_region):
        super().__init__(operands=[cond], result_types=[list(result_types)],
                         regions=[then_region, else_region])

    def print(self, printer: Printer) -> None:
        print_cond(self, printer)

    @classmethod
    def parse(cls, parser: Parser):
        return parse_cond(cls, parser)


def _compatible(a, b) -> bool:
    """Equal, or memrefs of one element type and rank whose static dims agree."""
    if a == b:
        return True
    if not (isinstance(a, MemRefType) and isinstance(b, MemRefType)) or a.element_type != b.element_type:
        return False
    sa, sb = a.get_shape(), b.get_shape()
    return len(sa) == len(sb) and all(x == y or x < 0 or y < 0 for x, y in zip(sa, sb))


def _all_compatible(xs, ys) -> bool:
    xs, ys = list(xs), list(ys)
    return len(xs) == len(ys) and all(_compatible(x, y) for x, y in zip(xs, ys))


@irdl_op_definition
class WhileOp(IRDLOperation):
    """``%r = loops.while %i : (i32) -> i32 cond {^bb0(%x: i32): loops.condition %p : i1}
    do {^bb0(%x: i32): loops.yield %n : i32}`` (scf.while); at most
    ``max_iterations`` iterations when given. A buffer carried by the loop is
    the same buffer in every iteration: the body copies new contents into it."""

    name = "loops.while"
    inits = var_operand_def()
    outs = var_result_def()
    max_iterations = opt_prop_def(IntegerAttr)
    cond_region = region_def("single_block")
    body_region = region_def("single_block")
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, inits, result_types, cond_region, body_region, max_iterations=None):
        props = {} if max_iterations is None else {"max_iterations": IntegerAttr(int(max_iterations), i64)}
        super().__init__(operands=[list(inits)], result_types=[list(result_types)],
                         regions=[cond_region, body_region], properties=props)

    def verify_(self):
        types = list(self.result_types)
        if not _all_compatible(self.operand_types, types):
            _fail(self, "initial values and results must have the same types")
        for r, what in ((self.cond_region, "condition"), (self.body_region, "body")):
            if not _all_compatible([a.type for a in r.block.args], types):
                _fail(self, f"the {what} region must take one argument per loop variable")
        if not isinstance(self.cond_region.block.last_op, ConditionOp):
            _fail(self, "the condition region must end with loops.condition")

    def print(self, printer: Printer) -> None:
        print_while(self, printer)

    @classmethod
    def parse(cls, parser: Parser):
        return parse_while(cls, parser)


# -- variables, print, assert ----------------------------------------------------------


@irdl_op_definition
class ReadVariableOp(IRDLOperation):
    """``%v = loops.read_variable %ref : !tfc.ref<T> -> memref<..>`` (a scalar for 0-d)."""

    name = "loops.read_variable"
    ref = operand_def(RefType)
    result = result_def()
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$ref attr-dict `:` type($ref) `->` type($result)"


@irdl_op_definition
class AssignVariableOp(IRDLOperation):
    """``loops.assign_variable %ref, %v : !tfc.ref<T>, memref<..>``: the variable now
    holds this buffer (a loops.alloc, or a copy when the value is not owned)."""

    name = "loops.assign_variable"
    ref = operand_def(RefType)
    value = operand_def()
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$ref `,` $value attr-dict `:` type($ref) `,` type($value)"


@irdl_op_definition
class PrintOp(IRDLOperation):
    """``loops.print %a, ... {format = "x = {}"}``; ``stream`` and ``summarize``
    as on ``tfc.print``."""

    name = "loops.print"
    values = var_operand_def()
    format = prop_def(StringAttr)
    stream = opt_prop_def(StringAttr)
    summarize = opt_prop_def(IntegerAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$values attr-dict (`:` type($values)^)?"


@irdl_op_definition
class AssertOp(IRDLOperation):
    """``loops.assert %cond, %data... {message = "..."}``."""

    name = "loops.assert"
    cond = operand_def()
    data = var_operand_def()
    message = prop_def(StringAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$cond (`,` $data^)? attr-dict `:` type($cond) (`,` type($data)^)?"


LOOPS_OPS = [ViewOp, AllocOp, ConstantOp, LoadOp, CopyOp, YieldOp, ParallelOp, LibraryOp, ConditionOp,
             IfOp, WhileOp, ReadVariableOp, AssignVariableOp, PrintOp, AssertOp]

LOOPS = Dialect("loops", LOOPS_OPS, [])
