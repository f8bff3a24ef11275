"""The L3 loop dialect ``loops``: buffers at planned offsets, parallel loops with
scalar bodies, library calls and scf-style control flow (docs/ir-loops-dialect.md).

A function at this level (``func.func``) takes its tensor arguments as
``memref``s (0-d tensors as plain scalars: ``f32``, ``i32``, ``i1``), its
variables as ``!tfc.ref<...>``, and, last, the arena ``%arena : memref<Nxi8>``.
Every buffer is either a ``loops.view`` of the arena at the offset the memory
plan chose, a ``loops.alloc`` (a buffer that outlives the call: a result or a
variable's new value), a ``loops.constant`` (read-only), the result of a
``loops.library`` call (a registry kernel that allocates its own result), or an
explicit alias of one of these: ``loops.subview`` and ``loops.transpose_view``
(strided views, their layout in the memref type as MLIR's ``strided<...>``)
and ``loops.reshape`` (a contiguous buffer seen with another shape).

A backend maps each op to its target: the numpy backend emits one Python
function, a GPU backend would launch one kernel per ``loops.parallel`` with the
arena in device memory, and run control flow on 0-d scalars on the host.
``loops.raise`` is the error path of a lowering that checks its operands
(gather's indices). docs/ir-loops-dialect.md states the contract a backend
relies on (layouts, aliasing, bounds).
"""
from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr, DenseArrayBase, DenseIntOrFPElementsAttr, DictionaryAttr, IndexType, IntegerAttr, MemRefType,
    NoneAttr, StridedLayoutAttr, StringAttr, i64,
)
from xdsl.ir import Block, Dialect
from xdsl.irdl import (
    AttrSizedOperandSegments, IRDLOperation, ParsePropInAttrDict, irdl_op_definition,
    lazy_traits_def, operand_def, opt_operand_def, opt_prop_def, prop_def, region_def, result_def, traits_def,
    var_operand_def, var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, MemoryAllocEffect, MemoryReadEffect, MemoryWriteEffect, Pure

from tfc.dialects.fused import KernelIndexing, ints_attr, reduce_props
from tfc.dialects.tensor import CondShape, RefType, WhileShape, _fail


def shape_of(t) -> tuple:
    """Shape of a memref type, () for a scalar type."""
    return tuple(t.get_shape()) if isinstance(t, MemRefType) else ()


def element_of(t):
    return t.element_type if isinstance(t, MemRefType) else t


def row_major(shape) -> tuple:
    """Element strides of a contiguous (identity layout) buffer of ``shape``."""
    strides, n = [], 1
    for d in reversed(tuple(shape)):
        strides.append(n)
        n *= max(int(d), 1)
    return tuple(reversed(strides))


def layout_of(t) -> tuple[tuple, int]:
    """(element strides, element offset) of a memref type: row-major and 0 for
    the identity layout, else its ``strided<[...], offset: k>`` (static only)."""
    lay = t.layout
    if isinstance(lay, NoneAttr):
        return row_major(t.get_shape()), 0
    if not isinstance(lay, StridedLayoutAttr):
        raise NotImplementedError(f"memref layout {lay} in the loops dialect (only strided layouts)")
    strides = lay.get_strides()
    if any(x is None for x in strides) or isinstance(lay.offset, NoneAttr):
        raise NotImplementedError(f"memref layout {lay} with dynamic strides or offset")
    return tuple(int(x) for x in strides), int(lay.offset.data)


def is_contiguous(t) -> bool:
    """Row-major and dense (any offset): its elements in order are one range."""
    if isinstance(t.layout, NoneAttr):
        return True
    strides, _ = layout_of(t)
    want = row_major(t.get_shape())
    return all(d == 1 or a == b for d, a, b in zip(t.get_shape(), strides, want))


def strided_type(element_type, shape, strides, offset):
    """A memref type with a strided layout (identity where that is what it is)."""
    shape = [int(d) for d in shape]
    if offset == 0 and all(d == 1 or a == b for d, a, b in zip(shape, strides, row_major(shape))):
        return MemRefType(element_type, shape)
    return MemRefType(element_type, shape, StridedLayoutAttr([int(x) for x in strides], int(offset)))


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
    """``%s = loops.load %m : memref<f32> -> f32``: the value of a 0-d buffer, on
    the host. The one op where a value crosses from a buffer to the host (on a
    GPU a synchronization): tfc-lower-loops emits it only where the host needs
    the value (control flow, results, variables, print/assert, library calls);
    kernels read 0-d buffers as inputs."""

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


# -- aliases: views of a buffer (no data moves) ------------------------------------------


def _ints_of(attr) -> tuple:
    return tuple(int(x) for x in attr.get_values())


def subview_layout(source_type, offsets, sizes, strides):
    """(result shape before rank reduction, its element strides, its offset) of
    ``loops.subview`` on a buffer of ``source_type``."""
    base, off = layout_of(source_type)
    if any(n == 0 for n in sizes):  # an empty view reads nothing: its start may be anywhere
        offsets = [0] * len(offsets)
    return (tuple(sizes), tuple(b * s for b, s in zip(base, strides)),
            off + sum(b * o for b, o in zip(base, offsets)))


def kept_dims(sizes, result_shape):
    """The dims of ``sizes`` that a rank-reducing subview keeps, or None where
    ``result_shape`` is not ``sizes`` without some unit dims. (Which of several
    unit dims is dropped changes no element: each is matched in order.)"""
    kept, j = [], 0
    for i, n in enumerate(sizes):
        if j < len(result_shape) and result_shape[j] == n:
            kept.append(i)
            j += 1
        elif n != 1:
            return None
    return kept if j == len(result_shape) else None


@irdl_op_definition
class SubviewOp(IRDLOperation):
    """``%v = loops.subview %b [2, 0][3, 4][2, -1] : memref<8x4xf32> -> memref<3x4xf32, strided<[8, -1], offset: 19>>``

    MLIR's ``memref.subview`` with static offsets, sizes and strides (in
    elements, per dim of the source; a negative stride reads backwards):
    element ``[i, j]`` of the view is element ``[o0 + i*s0, o1 + j*s1]`` of the
    source. Every element it names is in bounds (checked by the verifier). The
    result may drop unit dims of ``sizes`` (a rank-reducing subview: an integer
    index). The result aliases the source; its type carries the strided layout.
    """

    name = "loops.subview"
    source = operand_def(MemRefType)
    static_offsets = prop_def(DenseArrayBase)
    static_sizes = prop_def(DenseArrayBase)
    static_strides = prop_def(DenseArrayBase)
    result = result_def(MemRefType)
    traits = traits_def(Pure())

    def __init__(self, source, offsets, sizes, strides, result_type=None):
        offsets, sizes, strides = ([int(x) for x in v] for v in (offsets, sizes, strides))
        if result_type is None:
            shape, st, off = subview_layout(source.type, offsets, sizes, strides)
            result_type = strided_type(source.type.element_type, shape, st, off)
        super().__init__(operands=[source], result_types=[result_type],
                         properties={"static_offsets": ints_attr(offsets), "static_sizes": ints_attr(sizes),
                                     "static_strides": ints_attr(strides)})

    @property
    def offsets(self) -> tuple:
        return _ints_of(self.static_offsets)

    @property
    def sizes(self) -> tuple:
        return _ints_of(self.static_sizes)

    @property
    def strides(self) -> tuple:
        return _ints_of(self.static_strides)

    def kept(self) -> list:
        """The dims of ``sizes`` the result keeps (see kept_dims)."""
        return kept_dims(self.sizes, tuple(self.result.type.get_shape()))

    def verify_(self):
        src = self.source.type
        shape = src.get_shape()
        offs, sizes, strides = self.offsets, self.sizes, self.strides
        if not len(offs) == len(sizes) == len(strides) == len(shape):
            _fail(self, f"needs one offset, size and stride per dim of {src}")
        if any(d < 0 for d in shape):
            _fail(self, "takes a buffer of static shape")
        for d, (o, n, s, dim) in enumerate(zip(offs, sizes, strides, shape)):
            if n < 0:
                _fail(self, f"size {n} of dim {d} is negative")
            if n and not (0 <= o < dim and 0 <= o + (n - 1) * s < dim):
                _fail(self, f"dim {d}: offset {o}, size {n}, stride {s} leave the {dim} elements of {src}")
        if self.result.type.element_type != src.element_type:
            _fail(self, "keeps the element type")
        kept = self.kept()
        if kept is None:
            _fail(self, f"result {self.result.type} is not the sizes {list(sizes)} (less unit dims)")
        _, st, off = subview_layout(src, offs, sizes, strides)
        got_st, got_off = layout_of(self.result.type)
        rshape = self.result.type.get_shape()
        n_elems = 1
        for n in sizes:
            n_elems *= n
        if (n_elems and got_off != off) or any(rshape[j] != 1 and got_st[j] != st[i] for j, i in enumerate(kept)):
            want = strided_type(src.element_type, [sizes[i] for i in kept], [st[i] for i in kept], off)
            _fail(self, f"result type {self.result.type} is not the view's layout, {want}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        for vals in (self.offsets, self.sizes, self.strides):
            printer.print_string(" [" + ", ".join(str(x) for x in vals) + "]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        lists = []
        for _ in range(3):
            lists.append(parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        st = parser.parse_type()
        parser.parse_punctuation("->")
        rt = parser.parse_type()
        op = cls(parser.resolve_operand(src, st), *lists, result_type=rt)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class TransposeViewOp(IRDLOperation):
    """``%t = loops.transpose_view %b {permutation = array<i64: 1, 0>} : memref<3x4xf32>
    -> memref<4x3xf32, strided<[1, 4]>>`` (MLIR's ``memref.transpose``): dim ``d``
    of the view is dim ``permutation[d]`` of the source; an alias."""

    name = "loops.transpose_view"
    source = operand_def(MemRefType)
    permutation = prop_def(DenseArrayBase)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source, permutation):
        perm = [int(p) for p in permutation]
        st, off = layout_of(source.type)
        shape = source.type.get_shape()
        rt = strided_type(source.type.element_type, [shape[p] for p in perm], [st[p] for p in perm], off)
        super().__init__(operands=[source], result_types=[rt], properties={"permutation": ints_attr(perm)})

    def verify_(self):
        perm = _ints_of(self.permutation)
        src = self.source.type
        if sorted(perm) != list(range(src.get_num_dims())):
            _fail(self, f"permutation {list(perm)} is not one of the {src.get_num_dims()} dims of {src}")
        st, off = layout_of(src)
        shape = src.get_shape()
        want = strided_type(src.element_type, [shape[p] for p in perm], [st[p] for p in perm], off)
        if self.result.type != want:
            _fail(self, f"result type {self.result.type} is not the transposed view, {want}")


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """``%r = loops.reshape %b : memref<3x4xf32> -> memref<12xf32>``: the elements
    of a contiguous buffer, in the same (row-major) order, seen with another
    shape (reshape, expand_dims, squeeze); an alias. The source must be dense and
    row-major (identity layout, or a strided one that is, at any offset), so
    the alias needs no copy on any backend. The result has the identity layout:
    its first element is the source's first (a subview's offset is folded into
    where the result starts)."""

    name = "loops.reshape"
    source = operand_def(MemRefType)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source, shape):
        super().__init__(operands=[source], result_types=[MemRefType(source.type.element_type, list(shape))])

    def verify_(self):
        src, res = self.source.type, self.result.type
        if src.element_type != res.element_type:
            _fail(self, "keeps the element type")
        if not is_contiguous(src):
            _fail(self, f"needs a contiguous source, not a {src} (copy it first)")
        if not isinstance(res.layout, NoneAttr):
            _fail(self, f"result {res} must have the identity layout")
        n = m = 1
        for d in src.get_shape():
            n *= d
        for d in res.get_shape():
            m *= d
        if n != m or min(list(src.get_shape()) + list(res.get_shape()) + [0]) < 0:
            _fail(self, f"{src} and {res} must have the same static number of elements")


# -- indexed reads inside loops.parallel ------------------------------------------------


@irdl_op_definition
class IndexOp(IRDLOperation):
    """``%i = loops.index 0 : index``: inside a ``loops.parallel`` body, the
    iteration index along dim ``dim`` of its ``shape``."""

    name = "loops.index"
    dim = prop_def(IntegerAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self, dim: int):
        super().__init__(properties={"dim": IntegerAttr(int(dim), i64)}, result_types=[IndexType()])

    def verify_(self):
        par = self.parent_op()
        if not isinstance(par, ParallelOp):
            _fail(self, "must be in the body of a loops.parallel")
        if not 0 <= self.dim.value.data < len(par.iteration_shape):
            _fail(self, f"dim {self.dim.value.data} is not one of the {len(par.iteration_shape)} loop dims")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.dim.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : index")

    @classmethod
    def parse(cls, parser: Parser):
        d = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parser.parse_type()
        op = cls(d)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class LoadAtOp(IRDLOperation):
    """``%v = loops.load_at %b[%i, %j] : memref<4x3xf32> -> f32``: inside a
    ``loops.parallel`` body, the element of ``%b`` (a buffer defined outside the
    loop: a captured buffer, see ``ParallelOp.captured``) at computed ``index``
    values. The indices must be in bounds: the lowering clamps or checks them
    before (reading out of bounds is undefined on every backend)."""

    name = "loops.load_at"
    source = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def()
    traits = traits_def(MemoryReadEffect())

    def __init__(self, source, indices):
        super().__init__(operands=[source, list(indices)], result_types=[source.type.element_type])

    def verify_(self):
        if len(self.indices) != self.source.type.get_num_dims():
            _fail(self, f"needs {self.source.type.get_num_dims()} indices for {self.source.type}")
        if self.result.type != self.source.type.element_type:
            _fail(self, "yields the buffer's element type")
        par = self.parent_op()
        if not isinstance(par, ParallelOp):
            _fail(self, "must be in the body of a loops.parallel")
        owner = self.source.owner
        where = owner.parent_op() if isinstance(owner, Block) else owner
        while where is not None:
            if where is par:
                _fail(self, "reads a buffer defined outside the loops.parallel")
            where = where.parent_op()

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        idx = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        st = parser.parse_type()
        parser.parse_punctuation("->")
        parser.parse_type()
        op = cls(parser.resolve_operand(src, st), [parser.resolve_operand(i, IndexType()) for i in idx])
        op.attributes.update(attrs)
        return op



@irdl_op_definition
class AddAtOp(IRDLOperation):
    """``loops.add_at %v, %b[%i, %j] : f32 -> memref<4x3xf32>`` (``... if %keep``
    with an ``i1`` mask): inside a ``loops.parallel`` body, a scatter-add:
    ``%b[%i, %j] += %v`` (where ``%keep`` holds) into a buffer defined
    outside the loop (captured, as ``loops.load_at``'s source). Several
    iterations may add into one element. Order: a backend that keeps it
    applies the adds in the row-major order of the iteration space, from the
    buffer's value before the kernel (the numpy backend: one ``np.add.at``,
    the order of eager's scatter-adds, so the same bits); a backend running
    iterations concurrently adds atomically in any order (floating-point sums
    then differ by rounding: the reduction family's tolerance; integers wrap
    and are exact either way). The indices must be in bounds (the lowering
    checks them before); the kernel's other reads never read the buffer."""

    name = "loops.add_at"
    value = operand_def()
    dest = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    mask = opt_operand_def()
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, value, dest, indices, mask=None):
        super().__init__(operands=[value, dest, list(indices), [] if mask is None else [mask]])

    def verify_(self):
        if len(self.indices) != self.dest.type.get_num_dims():
            _fail(self, f"needs {self.dest.type.get_num_dims()} indices for {self.dest.type}")
        if self.value.type != self.dest.type.element_type:
            _fail(self, f"adds a {self.value.type} into a {self.dest.type}")
        if self.mask is not None and str(self.mask.type) != "i1":
            _fail(self, f"its mask is an i1, not a {self.mask.type}")
        par = self.parent_op()
        if not isinstance(par, ParallelOp):
            _fail(self, "must be in the body of a loops.parallel")
        owner = self.dest.owner
        where = owner.parent_op() if isinstance(owner, Block) else owner
        while where is not None:
            if where is par:
                _fail(self, "adds into a buffer defined outside the loops.parallel")
            where = where.parent_op()
        if any(isinstance(o, LoadAtOp) and o.source is self.dest for o in par.body.walk()) or \
                self.dest in list(par.ins) + list(par.outs):
            _fail(self, "adds into a buffer that its kernel also reads or writes otherwise")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.value)
        printer.print_string(", ")
        printer.print_operand(self.dest)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string("]")
        if self.mask is not None:
            printer.print_string(" if ")
            printer.print_operand(self.mask)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.dest.type)

    @classmethod
    def parse(cls, parser: Parser):
        from xdsl.dialects.builtin import i1

        val = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        dest = parser.parse_unresolved_operand()
        idx = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        mask = parser.parse_unresolved_operand() if parser.parse_optional_keyword("if") else None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        vt = parser.parse_type()
        parser.parse_punctuation("->")
        dt = parser.parse_type()
        op = cls(parser.resolve_operand(val, vt), parser.resolve_operand(dest, dt),
                 [parser.resolve_operand(i, IndexType()) for i in idx],
                 None if mask is None else parser.resolve_operand(mask, i1))
        op.attributes.update(attrs)
        return op



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

    A loop nest over the static index space ``shape``. Input ``i`` (a buffer,
    possibly a strided view, or a scalar) is read at the index through
    ``broadcast[i]`` (as in ``tfc.fused``); the body gets the elements and
    yields one scalar per output (an output may be a strided view: concat
    writes each piece into a subview). The body may also read
    ``loops.index d`` (the index along dim d) and ``loops.load_at`` of
    buffers defined outside (``captured()``), with index arithmetic in
    ``arith`` on ``index``. ``reduce``
    gives each output its kind, as in ``tfc.fused``: an output of kind
    ``"none"`` (every output, without ``reduce``) has shape ``shape`` and is
    written at the index; an output of kind ``"sum"`` (prod, max, min, mean,
    any, all) holds the reduction of its yielded values over the
    ``reduce_axes`` dimensions, which are sequential for it (keeping them as
    size 1 when its rank is the rank of ``shape``), with the registry's
    ``reduce_*`` semantics; ``"argmax"``/``"argmin"`` give the index of the
    first extreme along their one reduced axis (tfc/dialects/fused.py). A
    body may scatter-add into captured buffers with ``loops.add_at`` (a
    scatter kernel: ``added_into()``; it may have no outputs at all).
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
    assembly_format = ("`ins` `(` ($ins^ `:` type($ins))? `)` `outs` `(` ($outs^ `:` type($outs))? `)` "
                       "attr-dict-with-keyword $body")

    def __init__(self, ins, outs, shape, broadcast, body, reduce=None, reduce_axes=None):
        props = {"shape": ints_attr(shape), "broadcast": ArrayAttr([ints_attr(m) for m in broadcast]),
                 **reduce_props(reduce, reduce_axes)}
        super().__init__(operands=[list(ins), list(outs)], properties=props, regions=[body])

    def captured(self) -> list:
        """Buffers defined outside this op that its body reads with
        ``loops.load_at`` or adds into with ``loops.add_at``, in order of
        first use: a backend passes them to the kernel as parameters after
        ``ins`` and ``outs``."""
        seen = {}
        for op in self.body.walk():
            if isinstance(op, LoadAtOp):
                seen.setdefault(op.source, None)
            elif isinstance(op, AddAtOp):
                seen.setdefault(op.dest, None)
        return list(seen)

    def added_into(self) -> list:
        """The buffers its body scatter-adds into (``loops.add_at``), in order
        of first use: a scatter kernel, whose iterations may meet at one element."""
        seen = {}
        for op in self.body.walk():
            if isinstance(op, AddAtOp):
                seen.setdefault(op.dest, None)
        return list(seen)

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


@irdl_op_definition
class RaiseOp(IRDLOperation):
    """``loops.raise "gather"(%p, %i : ...) {attrs = {axis = 0 : i64}}``: the error
    path of a lowering that checks its operands (in a ``loops.if`` on the
    check's result): raise the error eager raises for registry op ``callee`` on
    these operands (the numpy backend runs the op's kernel, which raises it; a
    backend without it raises an error naming the op). Never returns."""

    name = "loops.raise"
    callee = prop_def(StringAttr)
    kernel_attrs = prop_def(DictionaryAttr, prop_name="attrs")
    ins = var_operand_def()
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$callee `(` ($ins^ `:` type($ins))? `)` attr-dict"

    def __init__(self, callee: str, ins, attrs: dict):
        super().__init__(operands=[list(ins)],
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
class IfOp(CondShape, IRDLOperation):
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
class WhileOp(WhileShape, IRDLOperation):
    """``%r = loops.while %i : (i32) -> i32 cond {^bb0(%x: i32): loops.condition %p : i1}
    do {^bb0(%x: i32): loops.yield %n : i32}`` (scf.while); at most
    ``max_iterations`` iterations when given. Loop variables are values: a
    memref variable names a buffer, and a body that writes the next value into
    another buffer yields that one (tfc-lower-loops carries a tensor's state in
    two planned buffers, the second a loop variable of its own, and the yield
    swaps them: no allocation per iteration)."""

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

    CONDITION: ClassVar = ConditionOp

    def verify_(self):
        self.verify_loop(_all_compatible)


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


LOOPS_OPS = [ViewOp, AllocOp, ConstantOp, LoadOp, CopyOp, SubviewOp, TransposeViewOp, ReshapeOp, IndexOp,
             LoadAtOp, AddAtOp, YieldOp, ParallelOp, LibraryOp, RaiseOp, ConditionOp, IfOp, WhileOp, ReadVariableOp,
             AssignVariableOp, PrintOp, AssertOp]

LOOPS = Dialect("loops", LOOPS_OPS, [])
