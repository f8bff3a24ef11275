"""The L4 GPU dialect ``tgpu``: what xDSL's ``gpu`` dialect lacks to write a
CUDA kernel that tfc's PTX printer turns into PTX (docs/ir-gpu-dialect.md,
docs/gpu.md).

An L4 module holds one ``gpu.module @kernels`` of ``gpu.func ... kernel``
(xDSL's, with ``known_block_size``) and the host function(s): L3 with each
kernel's work replaced by a ``tgpu.launch``. Kernel bodies use xDSL ``gpu``
ids and ``gpu.barrier``, ``scf`` control flow, ``arith``/``math`` scalar ops
and these ops:

- ``!tgpu.ptr<f32, global>`` / ``!tgpu.ptr<f32, shared>``: a typed pointer
  (a kernel parameter, or a ``tgpu.shared`` array). Element types: f64, f32,
  f16, i64, i32, i8 and i1 (stored as one byte, 0 or 1);
- ``%v = tgpu.load %p[%i] : !tgpu.ptr<f32, global>, i32`` (``{width = 4}``:
  4 results, elements i..i+3, 16-byte aligned; ``{nc}``: through the
  read-only cache, for buffers the kernel does not write);
- ``tgpu.store %a, %b, %p[%i] : !tgpu.ptr<f32, global>, i64`` (width = the
  number of values);
- ``%s = tgpu.shared {size = 32} : !tgpu.ptr<f32, shared>``: a static array
  of ``size`` elements in the block's shared memory (16-byte aligned);
- ``%r = tgpu.shuffle down %v, %off : f32`` (down, up, xor, idx; full warp,
  width 32: CUDA's ``__shfl_*_sync(0xffffffff, ...)``);
- ``tgpu.atomic add %p[%i], %v : !tgpu.ptr<f32, global>, i32`` (no result:
  PTX ``red``), ``%old = tgpu.atomic add ... -> f32`` (PTX ``atom``);
- ``%d0, %d1, %d2, %d3 = tgpu.mma m16n8k16 a(...) b(...) c(...) : f16 -> f32``
  (and ``m16n8k32 ... : i8 -> i32``, int8 codes packed four to an i32):
  a warp's tensor-core product (PTX ``mma.sync.aligned``);
- ``%v0, ..., %v7 = tgpu.ldmatrix x4 %s[%i] {trans} : !tgpu.ptr<f16, shared>, i32``:
  a warp's load of 8x8 float16 matrices from shared memory in mma's
  fragment layout (PTX ``ldmatrix``);
- ``tgpu.cp_async %s[%si], %g[%gi], %n : !tgpu.ptr<f16, shared>, !tgpu.ptr<f16, global>, i32``
  (16 bytes global to shared, asynchronously, the first ``n`` read and the rest
  zero: PTX ``cp.async.cg``) and ``tgpu.cp_async_wait`` (``cp.async.wait_all``);
- ``%r = tgpu.dp4a %a, %b, %c : i32``: the four products of the signed bytes
  of ``%a`` and ``%b`` plus ``%c``, int32 wrapping (PTX ``dp4a.s32.s32``);
- host side: ``%key, %base = tgpu.philox_take {blocks = 8}`` (reserves
  blocks of tfc.random's global stream when it runs: an unseeded random
  kernel's key and counter base), ``tgpu.launch @k grid(%gx, %gy, %gz) block(128, 1, 1) shared(0)
  args(%a, %n : memref<?xf32>, index)``.

Every op prints in a custom syntax that parses back (tests/test_gpu_dialect.py).
Importing this module also gives xDSL's ``gpu.module``, ``gpu.func``,
``gpu.thread_id/block_id/block_dim/grid_dim``, ``gpu.barrier`` and
``gpu.return`` MLIR's syntax (xDSL 0.74 has only the generic form); ``GPU``
is that dialect.
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase, Float16Type, Float32Type, Float64Type, IndexType, IntegerAttr, IntegerType, MemRefType,
    StringAttr, SymbolRefAttr, UnitAttr, i32, i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments, IRDLOperation, irdl_attr_definition, irdl_op_definition, operand_def, opt_prop_def, opt_result_def, prop_def,
    result_def, traits_def, var_operand_def, var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryAllocEffect, MemoryReadEffect, MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from tfc.dialects.tensor import _fail

SPACES = ("global", "shared")
SHUFFLE_MODES = ("down", "up", "xor", "idx")
ATOMIC_KINDS = ("add",)


def element_bytes(t) -> int:
    """Bytes one element of type ``t`` takes in memory (i1: one byte)."""
    if isinstance(t, IntegerType):
        w = t.width.data
        return 1 if w == 1 else w // 8
    if isinstance(t, (Float16Type, Float32Type, Float64Type)):
        return t.bitwidth // 8
    raise VerifyException(f"tgpu: no memory layout for element type {t}")


def _storable(t) -> bool:
    if isinstance(t, IntegerType):
        return t.width.data in (1, 8, 32, 64)
    return isinstance(t, (Float16Type, Float32Type, Float64Type))


@irdl_attr_definition
class PtrType(ParametrizedAttribute, TypeAttribute):
    """``!tgpu.ptr<f32, global>``: the address of elements of a type in global
    or shared memory (a 64-bit generic->global address, or a 32-bit
    shared-window address in PTX)."""

    name = "tgpu.ptr"
    element_type: Attribute
    space: StringAttr

    def __init__(self, element_type, space: str = "global"):
        super().__init__(element_type, StringAttr(space))

    @property
    def is_shared(self) -> bool:
        return self.space.data == "shared"

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            t = parser.parse_type()
            parser.parse_punctuation(",")
            space = parser.parse_identifier()
        return (t, StringAttr(space))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.element_type)
            printer.print_string(f", {self.space.data}")

    def verify(self) -> None:
        if not _storable(self.element_type):
            raise VerifyException(f"!tgpu.ptr: element type {self.element_type} is not f64, f32, f16, i64, i32, i8 "
                                  "or i1")
        if self.space.data not in SPACES:
            raise VerifyException(f"!tgpu.ptr: address space {self.space.data!r} is not global or shared")


def _check_index(op, index):
    if index.type not in (i32, i64):
        _fail(op, f"index is {index.type}, not i32 or i64")


def _check_width(op, ptr_type, width):
    if width not in (1, 2, 4):
        _fail(op, f"width {width} is not 1, 2 or 4")
    if width * element_bytes(ptr_type.element_type) > 16:
        _fail(op, f"width {width} of {ptr_type.element_type} is more than 16 bytes (PTX's widest vector access)")


def _print_access(printer: Printer, ptr, index):
    printer.print_string(" ")
    printer.print_operand(ptr)
    printer.print_string("[")
    printer.print_operand(index)
    printer.print_string("]")


def _print_access_types(printer: Printer, op):
    """`` {attributes} : ptr type, index type`` of an op that accesses ``op.ptr[op.index]``."""
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(op.ptr.type)
    printer.print_string(", ")
    printer.print_attribute(op.index.type)


def _parse_access(parser: Parser):
    ptr = parser.parse_unresolved_operand()
    parser.parse_punctuation("[")
    index = parser.parse_unresolved_operand()
    parser.parse_punctuation("]")
    return ptr, index


def _parse_types(parser: Parser):
    parser.parse_punctuation(":")
    pt = parser.parse_type()
    parser.parse_punctuation(",")
    it = parser.parse_type()
    return pt, it


@irdl_op_definition
class LoadOp(IRDLOperation):
    """``%a, %b = tgpu.load %p[%i] {width = 2, nc} : !tgpu.ptr<f32, global>, i32``:
    elements ``i .. i+width-1`` of ``%p`` (``width`` > 1: the element address
    is ``width * size``-byte aligned). ``nc``: through the non-coherent
    read-only cache (``ld.global.nc``), only for a buffer no thread of the
    kernel writes."""

    name = "tgpu.load"
    ptr = operand_def(PtrType)
    index = operand_def(IntegerType)
    width = prop_def(IntegerAttr)
    nc = opt_prop_def(UnitAttr)
    values = var_result_def()
    traits = traits_def(MemoryReadEffect())

    def __init__(self, ptr, index, width: int = 1, nc: bool = False):
        props = {"width": IntegerAttr(int(width), i64)}
        if nc:
            props["nc"] = UnitAttr()
        super().__init__(operands=[ptr, index], properties=props,
                         result_types=[[ptr.type.element_type] * int(width)])

    @property
    def n(self) -> int:
        return self.width.value.data

    def verify_(self):
        pt = self.ptr.type
        _check_index(self, self.index)
        _check_width(self, pt, self.n)
        if len(self.values) != self.n:
            _fail(self, f"has {len(self.values)} results for width {self.n}")
        if any(v.type != pt.element_type for v in self.values):
            _fail(self, f"results must be {pt.element_type}")
        if self.nc is not None and pt.is_shared:
            _fail(self, "nc (the read-only cache) is for global memory only")

    def print(self, printer: Printer) -> None:
        _print_access(printer, self.ptr, self.index)
        flags = [f"width = {self.n}"] if self.n != 1 else []
        if self.nc is not None:
            flags.append("nc")
        if flags:
            printer.print_string(" {" + ", ".join(flags) + "}")
        _print_access_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser):
        ptr, index = _parse_access(parser)
        attrs = dict(parser.parse_optional_attr_dict())
        width = attrs.pop("width", None)
        nc = attrs.pop("nc", None)
        pt, it = _parse_types(parser)
        op = cls(parser.resolve_operand(ptr, pt), parser.resolve_operand(index, it),
                 width.value.data if width is not None else 1, nc is not None)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class StoreOp(IRDLOperation):
    """``tgpu.store %a, %b, %p[%i] : !tgpu.ptr<f32, global>, i32``: elements
    ``i .. i+width-1`` of ``%p`` = the values (width = their number, 1, 2 or 4;
    width > 1 needs a ``width * size``-byte aligned address)."""

    name = "tgpu.store"
    values = var_operand_def()
    ptr = operand_def(PtrType)
    index = operand_def(IntegerType)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, values, ptr, index):
        super().__init__(operands=[list(values), ptr, index])

    @property
    def n(self) -> int:
        return len(self.values)

    def verify_(self):
        pt = self.ptr.type
        _check_index(self, self.index)
        _check_width(self, pt, self.n)
        if any(v.type != pt.element_type for v in self.values):
            _fail(self, f"stores {pt.element_type} values only")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.values, printer.print_operand)
        printer.print_string(",")
        _print_access(printer, self.ptr, self.index)
        _print_access_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser):
        # values, then the pointer: parse every operand name, the last one is followed by "["
        names = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(","):
            names.append(parser.parse_unresolved_operand())
        parser.parse_punctuation("[")
        index = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        pt, it = _parse_types(parser)
        if not isinstance(pt, PtrType):
            parser.raise_error(f"tgpu.store: {pt} is not a !tgpu.ptr")
        vals = [parser.resolve_operand(v, pt.element_type) for v in names[:-1]]
        op = cls(vals, parser.resolve_operand(names[-1], pt), parser.resolve_operand(index, it))
        op.attributes.update(attrs)
        return op


def _print_int_prop(printer: Printer, op, key: str) -> None:
    """`` {key = N}`` and the op's other attributes: the syntax of an op whose
    one integer property leads (tgpu.shared, tgpu.philox_take)."""
    printer.print_string(f" {{{key} = {getattr(op, key).value.data}}}")
    printer.print_op_attributes(op.attributes)


def _parse_int_prop(parser: Parser, name: str, key: str):
    """``_print_int_prop``'s syntax read back: (N, the other attributes, in
    the same dictionary or in a second one, as printed)."""
    attrs = dict(parser.parse_optional_attr_dict())
    value = attrs.pop(key, None)
    if not isinstance(value, IntegerAttr):
        parser.raise_error(f"{name} needs {{{key} = N}} (an integer)")
    attrs.update(parser.parse_optional_attr_dict())
    return value.value.data, attrs


@irdl_op_definition
class SharedOp(IRDLOperation):
    """``%s = tgpu.shared {size = 32} : !tgpu.ptr<f32, shared>``: a static
    array of ``size`` elements in the block's shared memory, 16-byte aligned,
    one per op (PTX ``.shared .align 16 .b8 name[bytes]``). Its contents are
    undefined until written."""

    name = "tgpu.shared"
    size = prop_def(IntegerAttr)
    result = result_def(PtrType)
    traits = traits_def(MemoryAllocEffect())

    def __init__(self, element_type, size: int):
        super().__init__(properties={"size": IntegerAttr(int(size), i64)},
                         result_types=[PtrType(element_type, "shared")])

    @property
    def nbytes(self) -> int:
        return self.size.value.data * element_bytes(self.result.type.element_type)

    def verify_(self):
        if not self.result.type.is_shared:
            _fail(self, "yields a shared pointer")
        if self.size.value.data <= 0:
            _fail(self, f"size {self.size.value.data} is not positive")

    def print(self, printer: Printer) -> None:
        _print_int_prop(printer, self, "size")
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        size, attrs = _parse_int_prop(parser, cls.name, "size")
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if not isinstance(t, PtrType):
            parser.raise_error(f"tgpu.shared: {t} is not a !tgpu.ptr")
        op = cls(t.element_type, size)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class ShuffleOp(IRDLOperation):
    """``%r = tgpu.shuffle down %v, %off : f32``: the value of ``%v`` in
    another lane of the warp (all 32 lanes take part; CUDA's
    ``__shfl_{down,up,xor,}_sync(0xffffffff, v, off)``): down: lane + off,
    up: lane - off, xor: lane ^ off, idx: lane off; a lane whose source is
    outside the warp gets its own value. ``%off`` is i32, of which only the
    low 5 bits count (PTX's rule: an offset of 35 shuffles by 3); values are
    32-bit (f32, i32)."""

    name = "tgpu.shuffle"
    mode = prop_def(StringAttr)
    value = operand_def()
    offset = operand_def(IntegerType)
    result = result_def()
    traits = traits_def(MemoryReadEffect())  # not Pure: a collective, CSE across a branch would be wrong

    def __init__(self, mode: str, value, offset):
        super().__init__(operands=[value, offset], properties={"mode": StringAttr(mode)},
                         result_types=[value.type])

    def verify_(self):
        if self.mode.data not in SHUFFLE_MODES:
            _fail(self, f"mode {self.mode.data!r} is not one of {', '.join(SHUFFLE_MODES)}")
        if self.value.type not in (Float32Type(), i32):
            _fail(self, f"shuffles 32-bit values (f32, i32), not {self.value.type}")
        if self.offset.type != i32:
            _fail(self, "offset/lane is i32")
        if self.result.type != self.value.type:
            _fail(self, "result type is the value's")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.mode.data} ")
        printer.print_operand(self.value)
        printer.print_string(", ")
        printer.print_operand(self.offset)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser):
        mode = parser.parse_identifier()
        v = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        off = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(mode, parser.resolve_operand(v, t), parser.resolve_operand(off, i32))
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class AtomicOp(IRDLOperation):
    """``tgpu.atomic add %p[%i], %v : !tgpu.ptr<f32, global>, i32``:
    ``p[i] += v`` atomically (PTX ``red.global.add``); with a result
    (``%old = ... -> f32``) it also yields the value before (``atom``).
    Global f32, i32 (and i64) elements."""

    name = "tgpu.atomic"
    kind = prop_def(StringAttr)
    ptr = operand_def(PtrType)
    index = operand_def(IntegerType)
    value = operand_def()
    old = opt_result_def()
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, kind: str, ptr, index, value, returns_old: bool = False):
        super().__init__(operands=[ptr, index, value], properties={"kind": StringAttr(kind)},
                         result_types=[[value.type] if returns_old else []])

    def verify_(self):
        pt = self.ptr.type
        if self.kind.data not in ATOMIC_KINDS:
            _fail(self, f"kind {self.kind.data!r} is not one of {', '.join(ATOMIC_KINDS)}")
        _check_index(self, self.index)
        if pt.is_shared:
            _fail(self, "atomics on shared memory are not supported (global only)")
        if self.value.type != pt.element_type:
            _fail(self, f"value {self.value.type} is not the pointer's {pt.element_type}")
        if pt.element_type not in (Float32Type(), Float64Type(), i32, i64):
            _fail(self, f"atomic {self.kind.data} on {pt.element_type} (f32, f64, i32, i64 only)")
        if self.old is not None and self.old.type != self.value.type:
            _fail(self, "the old value has the element type")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data}")
        _print_access(printer, self.ptr, self.index)
        printer.print_string(", ")
        printer.print_operand(self.value)
        _print_access_types(printer, self)
        if self.old is not None:
            printer.print_string(" -> ")
            printer.print_attribute(self.old.type)

    @classmethod
    def parse(cls, parser: Parser):
        kind = parser.parse_identifier()
        ptr, index = _parse_access(parser)
        parser.parse_punctuation(",")
        v = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        pt, it = _parse_types(parser)
        if not isinstance(pt, PtrType):
            parser.raise_error(f"tgpu.atomic: {pt} is not a !tgpu.ptr")
        returns = parser.parse_optional_punctuation("->") is not None
        if returns:
            parser.parse_type()
        op = cls(kind, parser.resolve_operand(ptr, pt), parser.resolve_operand(index, it),
                 parser.resolve_operand(v, pt.element_type), returns)
        op.attributes.update(attrs)
        return op


# tgpu.mma's shapes: per shape the multiplicand type, the accumulator type, the number of
# a, b and c values per thread, and PTX's instruction (a warp's D = A B + C)
MMA_SHAPES = {
    "m16n8k16": (Float16Type(), Float32Type(), (8, 4, 4), "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    "m16n8k32": (i32, i32, (4, 2, 4), "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"),
}


@irdl_op_definition
class MmaOp(IRDLOperation):
    """One warp's tensor-core product D = A B + C (PTX ``mma.sync.aligned``,
    row-major A, column-major B), each thread passing its fragment elements
    as PTX's "Matrix Fragments for mma" tables place them (g = lane / 4,
    t = lane % 4). Every thread of the warp must execute it (no divergence).

    - ``%d0, ..., %d3 = tgpu.mma m16n8k16 a(%a0, ..., %a7) b(%b0, ..., %b3)
      c(%c0, ..., %c3) : f16 -> f32``: 16x16 float16 A, 16x8 float16 B, 16x8
      float32 C: a_i at row g + 8 ((i / 2) % 2), column 2t + i % 2 + 8 (i / 4);
      b_i at row 2t + i % 2 + 8 (i / 2), column g; c_i and d_i at row
      g + 8 (i / 2), column 2t + i % 2.
    - ``%d0, ..., %d3 = tgpu.mma m16n8k32 a(%a0, ..., %a3) b(%b0, %b1)
      c(%c0, ..., %c3) : i8 -> i32``: 16x32 int8 A and 32x8 int8 B, four
      codes to an i32 (byte j = element 4i + j of the fragment, low byte
      first), 16x8 int32 C, the sum wrapping in int32 (no ``.satfinite``):
      a_j at row g + 8 (j % 2), columns 4t + 16 (j / 2) .. + 3; b_j at rows
      4t + 16 j .. + 3, column g; c and d as m16n8k16's."""

    name = "tgpu.mma"
    a = var_operand_def()
    b = var_operand_def()
    c = var_operand_def()
    d = var_result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, a, b, c):
        a, c = list(a), list(c)
        super().__init__(operands=[a, list(b), c], result_types=[[c[0].type if c else Float32Type()] * 4])

    @property
    def shape(self) -> str:
        """The PTX shape, from the multiplicand type (f16: m16n8k16, i32: m16n8k32)."""
        return "m16n8k32" if self.a and self.a[0].type == i32 else "m16n8k16"

    def verify_(self):
        mult, acc, counts, _ = MMA_SHAPES[self.shape]
        if (len(self.a), len(self.b), len(self.c), len(self.d)) != counts + (4,):
            _fail(self, f"{self.shape} takes {counts[0]} a, {counts[1]} b and {counts[2]} c values per thread "
                        "and gives 4")
        if any(v.type != mult for v in (*self.a, *self.b)) or any(v.type != acc for v in (*self.c, *self.d)):
            _fail(self, f"{self.shape}: a and b are {mult}, c and d {acc}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.shape}")
        for name, vals in (("a", self.a), ("b", self.b), ("c", self.c)):
            printer.print_string(f" {name}(")
            printer.print_list(vals, printer.print_operand)
            printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : i8 -> i32" if self.shape == "m16n8k32" else " : f16 -> f32")

    @classmethod
    def parse(cls, parser: Parser):
        shape = parser.parse_identifier()
        if shape not in MMA_SHAPES:
            parser.raise_error(f"tgpu.mma: the shape is one of {', '.join(MMA_SHAPES)}, not {shape}")
        mult, acc = MMA_SHAPES[shape][:2]
        groups = []
        for name, t in (("a", mult), ("b", mult), ("c", acc)):
            if parser.parse_identifier() != name:
                parser.raise_error(f"tgpu.mma: expected {name}(...)")
            vals = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
            groups.append([parser.resolve_operand(v, t) for v in vals])
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parser.parse_type()
        parser.parse_punctuation("->")
        parser.parse_type()
        op = cls(*groups)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class LdMatrixOp(IRDLOperation):
    """``%v0, ..., %v7 = tgpu.ldmatrix x4 %s[%i] {trans} : !tgpu.ptr<f16, shared>, i32``:
    a warp loads ``num`` (1, 2 or 4) 8x8 float16 matrices from shared memory
    (PTX ``ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16``). Lane
    8 j + r gives the element index of row r of matrix j (8 contiguous
    float16, 16-byte aligned; for x1 and x2 only lanes 0-7 and 0-15 are read);
    each lane gets two values per matrix j (results 2j, 2j + 1): row lane / 4,
    columns 2 (lane % 4) and + 1, or with ``trans`` rows 2 (lane % 4) and + 1
    of column lane / 4 (the fragment layout of mma's A and B). Every thread of
    the warp must execute it."""

    name = "tgpu.ldmatrix"
    ptr = operand_def(PtrType)
    index = operand_def(IntegerType)
    values = var_result_def(Float16Type)
    trans = opt_prop_def(UnitAttr)
    traits = traits_def(MemoryReadEffect())

    def __init__(self, ptr, index, num: int, trans: bool = False):
        super().__init__(operands=[ptr, index], result_types=[[Float16Type()] * (2 * num)],
                         properties={"trans": UnitAttr()} if trans else {})

    @property
    def num(self) -> int:
        return len(self.values) // 2

    def verify_(self):
        pt = self.ptr.type
        _check_index(self, self.index)
        if not pt.is_shared or pt.element_type != Float16Type():
            _fail(self, f"reads a !tgpu.ptr<f16, shared>, not {pt}")
        if len(self.values) not in (2, 4, 8):
            _fail(self, f"gives 2, 4 or 8 values (x1, x2, x4), not {len(self.values)}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" x{self.num}")
        _print_access(printer, self.ptr, self.index)
        if self.trans is not None:
            printer.print_string(" {trans}")
        _print_access_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser):
        num = parser.parse_identifier()
        if num not in ("x1", "x2", "x4"):
            parser.raise_error(f"tgpu.ldmatrix: x1, x2 or x4, not {num}")
        ptr, index = _parse_access(parser)
        attrs = dict(parser.parse_optional_attr_dict())
        trans = attrs.pop("trans", None) is not None
        pt, it = _parse_types(parser)
        op = cls(parser.resolve_operand(ptr, pt), parser.resolve_operand(index, it), int(num[1]), trans)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class CpAsyncOp(IRDLOperation):
    """``tgpu.cp_async %s[%si], %g[%gi], %n : !tgpu.ptr<f16, shared>, !tgpu.ptr<f16, global>, i32``:
    an asynchronous copy of 16 bytes into shared memory at element ``si`` from
    global memory at element ``gi`` (both 16-byte aligned): the first ``n``
    bytes (0 to 16) read, the rest zero (PTX ``cp.async.cg.shared.global [s],
    [g], 16, n``, sm_80). The bytes are in shared memory only after a
    ``tgpu.cp_async_wait`` of the same thread (and, for other threads, a
    barrier after it)."""

    name = "tgpu.cp_async"
    dst = operand_def(PtrType)
    dst_index = operand_def(IntegerType)
    src = operand_def(PtrType)
    src_index = operand_def(IntegerType)
    nbytes = operand_def(IntegerType)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, dst, dst_index, src, src_index, nbytes):
        super().__init__(operands=[dst, dst_index, src, src_index, nbytes])

    def verify_(self):
        if not self.dst.type.is_shared or self.src.type.is_shared:
            _fail(self, "copies from a global pointer to a shared one")
        if self.dst.type.element_type != self.src.type.element_type:
            _fail(self, "copies between pointers of one element type")
        _check_index(self, self.dst_index)
        if self.src_index.type != self.dst_index.type:
            _fail(self, "indexes both pointers with one integer type")
        if self.nbytes.type != i32:
            _fail(self, f"takes its byte count as i32, not {self.nbytes.type}")

    def print(self, printer: Printer) -> None:
        _print_access(printer, self.dst, self.dst_index)
        printer.print_string(",")
        _print_access(printer, self.src, self.src_index)
        printer.print_string(", ")
        printer.print_operand(self.nbytes)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list((self.dst.type, self.src.type, self.dst_index.type), printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
        dst, di = _parse_access(parser)
        parser.parse_punctuation(",")
        src, si = _parse_access(parser)
        parser.parse_punctuation(",")
        n = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        dt = parser.parse_type()
        parser.parse_punctuation(",")
        st = parser.parse_type()
        parser.parse_punctuation(",")
        it = parser.parse_type()
        op = cls(parser.resolve_operand(dst, dt), parser.resolve_operand(di, it), parser.resolve_operand(src, st),
                 parser.resolve_operand(si, it), parser.resolve_operand(n, i32))
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class CpAsyncWaitOp(IRDLOperation):
    """``tgpu.cp_async_wait``: the thread waits for all its ``tgpu.cp_async``
    copies (PTX ``cp.async.wait_all``); other threads see them after a barrier."""

    name = "tgpu.cp_async_wait"
    traits = traits_def(MemoryWriteEffect())

    def __init__(self):
        super().__init__()

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        attrs = parser.parse_optional_attr_dict()
        op = cls()
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class Dp4aOp(IRDLOperation):
    """``%r = tgpu.dp4a %a, %b, %c : i32``: the sum of the four products of the
    signed bytes of ``%a`` and ``%b`` (byte i with byte i), plus ``%c``, in
    int32 wrapping on overflow (PTX ``dp4a.s32.s32``, sm_61 and later): four
    int8 products accumulated in one instruction."""

    name = "tgpu.dp4a"
    a = operand_def(IntegerType)
    b = operand_def(IntegerType)
    c = operand_def(IntegerType)
    result = result_def(IntegerType)

    def __init__(self, a, b, c):
        super().__init__(operands=[a, b, c], result_types=[i32])

    def verify_(self):
        if any(v.type != i32 for v in (self.a, self.b, self.c, self.result)):
            _fail(self, "operands and result are i32 (four packed int8 bytes, and the int32 sum)")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list((self.a, self.b, self.c), printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : i32")

    @classmethod
    def parse(cls, parser: Parser):
        vals = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            vals.append(parser.parse_unresolved_operand())
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if t != i32:
            parser.raise_error(f"tgpu.dp4a: operands are i32, not {t}")
        op = cls(*(parser.resolve_operand(v, i32) for v in vals))
        op.attributes.update(attrs)
        return op


def param_type(host_type):
    """The kernel parameter type a launch argument of ``host_type`` becomes: a
    memref its element's global pointer (the data address, view offset
    included), ``index`` i64, ``i1`` i32, i32/i64/f32/f64 themselves."""
    if isinstance(host_type, MemRefType):
        return PtrType(host_type.element_type, "global")
    if isinstance(host_type, IndexType):
        return i64
    if host_type == IntegerType(1):
        return i32
    if host_type in (i32, i64, Float32Type(), Float64Type()):
        return host_type
    raise VerifyException(f"tgpu.launch: no kernel parameter type for a {host_type} argument")


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """``tgpu.launch @k grid(%gx, %gy, %gz) block(128, 1, 1) shared(0) args(%a, %n
    : memref<?xf32>, index)``: on the host, run kernel ``@k`` of the module's
    ``gpu.module @kernels`` on a grid of (gx, gy, gz) blocks (``index`` values)
    of the static block size (the kernel's ``known_block_size``), with
    ``shared`` bytes of dynamic shared memory. Each argument becomes the
    kernel's parameter of the same position (``param_type``)."""

    name = "tgpu.launch"
    kernel = prop_def(SymbolRefAttr)
    block = prop_def(DenseArrayBase)
    shared = prop_def(IntegerAttr)
    gx = operand_def(IndexType)
    gy = operand_def(IndexType)
    gz = operand_def(IndexType)
    args = var_operand_def()

    def __init__(self, kernel: str, grid, block, args, shared: int = 0):
        super().__init__(
            operands=[*grid, list(args)],
            properties={"kernel": SymbolRefAttr(kernel), "block": DenseArrayBase.from_list(i32, list(block)),
                        "shared": IntegerAttr(int(shared), i64)})

    @property
    def block_size(self) -> tuple[int, int, int]:
        return tuple(int(x) for x in self.block.get_values())

    @property
    def grid(self):
        return (self.gx, self.gy, self.gz)

    def kernel_op(self):
        """The ``gpu.func`` this launch runs, if the enclosing module has it."""
        from xdsl.dialects import gpu

        top = self
        while top.parent_op() is not None:
            top = top.parent_op()
        if not top.regions or not top.regions[0].blocks:
            return None
        name = self.kernel.root_reference.data
        for mod in top.regions[0].blocks.first.ops:  # gpu.module sits at the top level (not a walk per launch)
            if isinstance(mod, gpu.ModuleOp):
                for f in mod.body.block.ops:
                    if isinstance(f, gpu.FuncOp) and f.sym_name.data == name:
                        return f
        return None

    def verify_(self):
        bs = self.block_size
        if len(bs) != 3 or any(b <= 0 for b in bs):
            _fail(self, f"block {list(bs)} is not 3 positive sizes")
        if bs[0] * bs[1] * bs[2] > 1024:
            _fail(self, f"block {list(bs)} has more than 1024 threads")
        if self.shared.value.data < 0:
            _fail(self, "shared bytes are negative")
        for a in self.args:
            try:
                param_type(a.type)
            except VerifyException as e:
                _fail(self, str(e))
        f = self.kernel_op()
        if f is None:
            return  # the kernel module may be built after the host function (checked once it is)
        want = [param_type(a.type) for a in self.args]
        got = list(f.function_type.inputs.data)
        if want != got:
            _fail(self, f"arguments {[str(t) for t in want]} do not match @{f.sym_name.data}'s parameters "
                        f"{[str(t) for t in got]}")
        kb = f.known_block_size
        if kb is not None and tuple(int(x) for x in kb.get_values()) != bs:
            _fail(self, f"block {list(bs)} is not @{f.sym_name.data}'s known_block_size "
                        f"{list(kb.get_values())}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.kernel)
        printer.print_string(" grid(")
        printer.print_list(self.grid, printer.print_operand)
        printer.print_string(") block(" + ", ".join(str(b) for b in self.block_size) + ")")
        printer.print_string(f" shared({self.shared.value.data}) args(")
        if self.args:
            printer.print_list(self.args, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([a.type for a in self.args], printer.print_attribute)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        kernel = parser.parse_symbol_name().data
        parser.parse_keyword("grid")
        grid = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        if len(grid) != 3:
            parser.raise_error("tgpu.launch: grid has 3 sizes")
        parser.parse_keyword("block")
        block = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_integer)
        parser.parse_keyword("shared")
        parser.parse_punctuation("(")
        shared = parser.parse_integer()
        parser.parse_punctuation(")")
        parser.parse_keyword("args")
        parser.parse_punctuation("(")
        names, types = [], []
        if not parser.parse_optional_punctuation(")"):
            names = [parser.parse_unresolved_operand()]
            while parser.parse_optional_punctuation(","):
                names.append(parser.parse_unresolved_operand())
            parser.parse_punctuation(":")
            types = [parser.parse_type()]
            while parser.parse_optional_punctuation(","):
                types.append(parser.parse_type())
            parser.parse_punctuation(")")
        if len(names) != len(types):
            parser.raise_error(f"tgpu.launch: {len(names)} arguments and {len(types)} types")
        attrs = parser.parse_optional_attr_dict()
        idx = IndexType()
        op = cls(kernel, [parser.resolve_operand(g, idx) for g in grid], block,
                 [parser.resolve_operand(n, t) for n, t in zip(names, types)], shared)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class PhiloxTakeOp(IRDLOperation):
    """``%key, %base = tgpu.philox_take {blocks = 8}``: host side; reserves
    ``blocks`` Philox blocks of tfc.random's global stream when it runs
    (docs/random.md) and gives the stream's key (``k0 | k1 << 32``) and the
    draw's counter base, both ``i64``: what a random kernel of an unseeded op
    takes as parameters. A run-time read, because ``set_seed`` and earlier
    draws change them between calls."""

    name = "tgpu.philox_take"
    blocks = prop_def(IntegerAttr)
    key = result_def(i64)
    base = result_def(i64)
    traits = traits_def(MemoryWriteEffect())  # advances the global stream: never folded or removed

    def __init__(self, blocks: int):
        super().__init__(properties={"blocks": IntegerAttr(int(blocks), i64)}, result_types=[i64, i64])

    def verify_(self):
        if self.blocks.value.data < 0:
            _fail(self, f"blocks {self.blocks.value.data} is negative")

    def print(self, printer: Printer) -> None:
        _print_int_prop(printer, self, "blocks")

    @classmethod
    def parse(cls, parser: Parser):
        blocks, attrs = _parse_int_prop(parser, cls.name, "blocks")
        op = cls(blocks)
        op.attributes.update(attrs)
        return op


TGPU = Dialect("tgpu", [LoadOp, StoreOp, SharedOp, ShuffleOp, AtomicOp, MmaOp, LdMatrixOp, CpAsyncOp, CpAsyncWaitOp, Dp4aOp, LaunchOp, PhiloxTakeOp], [PtrType])


# -- a custom syntax for xDSL's gpu ops (MLIR's) ------------------------------------------------
# xDSL 0.74 prints gpu.module, gpu.func and the ids only in the generic form. Their classes get
# MLIR's syntax here (print and parse), so every L4 module prints it whoever built it (tfc-lower-gpu
# builds xDSL's classes); the generic form still parses.
#
#   gpu.module @kernels {
#     gpu.func @k(%x: !tgpu.ptr<f32, global>, %n: i32) kernel attributes {gpu.known_block_size = ...} {
#       %t = gpu.thread_id x
#       gpu.barrier
#       gpu.return
#     }
#   }


def _print_gpu_module(self, printer: Printer) -> None:
    printer.print_string(" ")
    printer.print_symbol_name(self.sym_name.data)
    printer.print_op_attributes(self.attributes, print_keyword=True)
    printer.print_string(" ")
    printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)


def _parse_gpu_module(cls, parser: Parser):
    from xdsl.ir import Block

    name = parser.parse_symbol_name()
    attrs = parser.parse_optional_attr_dict_with_keyword()
    region = parser.parse_region()
    if not region.blocks:
        region.add_block(Block())
    op = cls(name, region)
    if attrs is not None:
        op.attributes.update(attrs.data)
    return op


def _print_gpu_func(self, printer: Printer) -> None:
    printer.print_string(" ")
    printer.print_symbol_name(self.sym_name.data)
    printer.print_string("(")
    if self.body.blocks:
        printer.print_list(self.body.blocks.first.args, printer.print_block_argument)
    else:
        printer.print_list(self.function_type.inputs.data, printer.print_attribute)
    printer.print_string(")")
    outs = self.function_type.outputs.data
    if outs:
        printer.print_string(" -> ")
        if len(outs) == 1:
            printer.print_attribute(outs[0])
        else:
            printer.print_string("(")
            printer.print_list(outs, printer.print_attribute)
            printer.print_string(")")
    if self.kernel is not None:
        printer.print_string(" kernel")
    printer.print_op_attributes(self.attributes, reserved_attr_names=("sym_name",), print_keyword=True)
    if self.body.blocks:
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=True)


def _parse_gpu_func(cls, parser: Parser):
    name = parser.parse_symbol_name().data
    args, types = [], []
    parser.parse_punctuation("(")
    if not parser.parse_optional_punctuation(")"):
        while True:
            arg = parser.parse_optional_argument()
            if arg is None:
                types.append(parser.parse_type())
            else:
                args.append(arg)
                types.append(arg.type)
            if not parser.parse_optional_punctuation(","):
                break
        parser.parse_punctuation(")")
    if args and len(args) != len(types):
        parser.raise_error("gpu.func: name every argument or none")
    outs = []
    if parser.parse_optional_punctuation("->"):
        if parser.parse_optional_punctuation("("):
            if not parser.parse_optional_punctuation(")"):
                outs = [parser.parse_type()]
                while parser.parse_optional_punctuation(","):
                    outs.append(parser.parse_type())
                parser.parse_punctuation(")")
        else:
            outs = [parser.parse_type()]
    kernel = parser.parse_optional_keyword("kernel") is not None
    attrs = parser.parse_optional_attr_dict_with_keyword()
    if types and not args:  # xDSL's gpu.func verifier wants a body: no declarations
        parser.raise_error("gpu.func: a body needs named arguments")
    region = parser.parse_region(args)
    op = cls(name, (types, outs), region, kernel=kernel or None)
    if attrs is not None:
        op.attributes.update(attrs.data)
    return op


def _print_gpu_dim(self, printer: Printer) -> None:
    printer.print_string(f" {self.dimension.data.value}")
    printer.print_op_attributes(self.attributes)


def _parse_gpu_dim(cls, parser: Parser):
    from xdsl.dialects import gpu

    dim = parser.parse_identifier()
    if dim not in ("x", "y", "z"):
        parser.raise_error(f"{cls.name}: dimension {dim!r} is not x, y or z")
    op = cls(gpu.DimensionAttr(gpu.DimensionEnum(dim)))
    op.attributes.update(parser.parse_optional_attr_dict())
    return op


def _print_gpu_barrier(self, printer: Printer) -> None:
    printer.print_op_attributes(self.attributes)


def _parse_gpu_barrier(cls, parser: Parser):
    op = cls()
    op.attributes.update(parser.parse_optional_attr_dict())
    return op


def _print_gpu_return(self, printer: Printer) -> None:
    if self.args:
        printer.print_string(" ")
        printer.print_list(self.args, printer.print_operand)
        printer.print_string(" : ")
        printer.print_list([a.type for a in self.args], printer.print_attribute)
    printer.print_op_attributes(self.attributes)


def _parse_gpu_return(cls, parser: Parser):
    names = []
    first = parser.parse_optional_unresolved_operand()
    if first is not None:
        names = [first]
        while parser.parse_optional_punctuation(","):
            names.append(parser.parse_unresolved_operand())
        parser.parse_punctuation(":")
        types = [parser.parse_type()]
        while parser.parse_optional_punctuation(","):
            types.append(parser.parse_type())
        if len(types) != len(names):
            parser.raise_error(f"gpu.return: {len(names)} values and {len(types)} types")
        values = [parser.resolve_operand(n, t) for n, t in zip(names, types)]
    else:
        values = []
    op = cls(values)
    op.attributes.update(parser.parse_optional_attr_dict())
    return op


def _give_gpu_ops_a_syntax():
    from xdsl.dialects import gpu

    syntax = [(gpu.ModuleOp, _print_gpu_module, _parse_gpu_module),
              (gpu.FuncOp, _print_gpu_func, _parse_gpu_func),
              (gpu.BarrierOp, _print_gpu_barrier, _parse_gpu_barrier),
              (gpu.ReturnOp, _print_gpu_return, _parse_gpu_return)]
    syntax += [(c, _print_gpu_dim, _parse_gpu_dim)
               for c in (gpu.ThreadIdOp, gpu.BlockIdOp, gpu.BlockDimOp, gpu.GridDimOp)]
    for cls, print_, parse in syntax:
        own = [cls.__dict__.get(m) for m in ("print", "parse")]
        if any(f is not None and getattr(f, "__module__", getattr(getattr(f, "__func__", None), "__module__", None))
               != __name__ for f in own):
            raise RuntimeError(f"xDSL's {cls.name} has a custom syntax of its own now: drop tfc's "
                               "(tfc/dialects/gpu.py)")
        cls.print = print_
        cls.parse = classmethod(parse)


_give_gpu_ops_a_syntax()

# xDSL's gpu dialect with the syntax above: what a context registers as "gpu" (so that reading L4 text
# needs nothing else imported first)
from xdsl.dialects.gpu import GPU  # noqa: E402
