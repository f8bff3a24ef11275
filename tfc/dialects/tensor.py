"""The L1 tensor dialect ``tfc``: one IR op per registry op, generated from its
OpDef, plus constants, region control flow, variables, print and assert.

Types are builtin ``tensor<...>`` (``?`` for a dimension known at run time).

Registry ops are generated, never written by hand: ``op_class(name)`` builds (and
caches) an IRDL class ``tfc.<name>`` whose operands come from the positional
parameters of the op's ``infer`` (a ``*specs`` parameter makes them variadic),
with one result per output and one optional property per declared attribute,
converted by ``CODECS[kind]``. Its verifier runs ``infer`` on the operand types.
Generic custom syntax for all of them::

    %2 = tfc.add %0, %1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %3 = tfc.reduce_sum %2 {axis = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>

Variables. A function that uses a ``tfc.Variable`` gets one extra argument of
type ``!tfc.ref<tensor<...>>`` per variable (after the tensor arguments); the
caller passes the variable, and ``tfc.read_variable %ref`` /
``tfc.assign_variable %ref, %value`` read and replace its value in program
order. Reads have a read effect and assigns a write effect, so CSE never merges
a read across an assign and DCE never drops an assign.

Locations: every op carries ``loc("file.py":line:col)`` of the user's line that
created it (printed with ``print_debuginfo=True``; parsed back either way).
"""
from __future__ import annotations

import functools

import inspect
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX, ArrayAttr, BoolAttr, BytesAttr, DenseArrayBase, DenseIntOrFPElementsAttr,
    FileLineColLoc, Float16Type, Float32Type, Float64Type, FloatAttr, IntAttr, IntegerAttr,
    UNKNOWN_LOC, IntegerType, StringAttr, TensorType, f16, f32, f64, i1, i8, i32, i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (
    AnyAttr, IRDLOperation, ParamAttrConstraint, ParsePropInAttrDict, VarConstraint, base, irdl_attr_definition,
    irdl_op_definition, lazy_traits_def, operand_def, opt_prop_def, prop_def, region_def,
    result_def, traits_def, var_operand_def, var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    ConstantLike, HasParent, IsTerminator, MemoryReadEffect, MemoryWriteEffect, Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span

from tfc.core import dtypes
from tfc.core.registry import REGISTRY, Spec

# -- types -------------------------------------------------------------------------

_ELEMENT = {
    dtypes.float16: f16, dtypes.float32: f32, dtypes.float64: f64,
    dtypes.int8: i8, dtypes.int32: i32, dtypes.int64: i64, dtypes.bool_: i1,
}


def element_type(dt: dtypes.DType) -> Attribute:
    return _ELEMENT[dt]


_DTYPE_OF = {v: k for k, v in _ELEMENT.items()}


def dtype_of(elt: Attribute) -> dtypes.DType:
    """The tfc dtype of an IR element type (f32, i1, ...)."""
    try:
        return _DTYPE_OF[elt]
    except (KeyError, TypeError):
        pass
    if isinstance(elt, (Float16Type, Float32Type, Float64Type, IntegerType)):
        return dtypes.from_ir_name(str(elt))
    raise TypeError(f"no tfc dtype for IR element type {elt}")


def tensor_type(shape, dt: dtypes.DType) -> TensorType:
    """``tensor<...>`` of a shape (None for a dynamic dimension) and dtype
    (types are immutable, so they are built once per shape and dtype)."""
    return _tensor_type(tuple(shape), dt)


@functools.lru_cache(maxsize=4096)
def _tensor_type(shape: tuple, dt: dtypes.DType) -> TensorType:
    return TensorType(element_type(dt), [DYNAMIC_INDEX if d is None else int(d) for d in shape])


@functools.lru_cache(maxsize=4096)  # types are immutable; passes ask for the same ones many times
def spec_of(t: Attribute) -> Spec:
    """The registry Spec of a tensor type (dynamic dimensions as None)."""
    if isinstance(t, RefType):
        t = t.tensor
    if not isinstance(t, TensorType):
        raise TypeError(f"expected a tensor type, got {t}")
    shape = tuple(None if d == DYNAMIC_INDEX else d for d in t.get_shape())
    return Spec(shape, dtype_of(t.element_type))


@irdl_attr_definition
class RefType(ParametrizedAttribute, TypeAttribute):
    """``!tfc.ref<tensor<...>>``: a variable passed to a function."""

    name = "tfc.ref"
    tensor: TensorType


# -- attribute codecs: Python value <-> xDSL attribute, one per attr kind ---------------


def _enc_int(v):
    return IntegerAttr(int(v), i64)


def _dec_int(a):
    return int(a.value.data)


def _enc_float(v):
    return FloatAttr(float(v), f64)


def _dec_float(a):
    return float(a.value.data)


def _enc_bool(v):
    return BoolAttr.from_bool(bool(v))


def _dec_bool(a):
    return bool(a.value.data)


def _enc_ints(v):
    return DenseArrayBase.from_list(i64, [int(x) for x in v])


def _dec_ints(a):
    return tuple(int(x) for x in a.get_values())


def _enc_dtype(v):
    return element_type(dtypes.as_dtype(v))


def _enc_str(v):
    return StringAttr(str(v))


def _dec_str(a):
    return a.data


def _enc_index(index):
    """getitem's canonical index: ints stay ints; a slice is "start:stop:step",
    a new axis "newaxis", an ellipsis "..."."""
    out = []
    for k in index:
        if k is None:
            out.append(StringAttr("newaxis"))
        elif k == "...":
            out.append(StringAttr("..."))
        elif isinstance(k, tuple):
            out.append(StringAttr(":".join("" if v is None else str(v) for v in k[1:])))
        else:
            out.append(IntegerAttr(int(k), i64))
    return ArrayAttr(out)


def _dec_index(a):
    out = []
    for k in a.data:
        if isinstance(k, IntegerAttr):
            out.append(int(k.value.data))
        elif k.data == "newaxis":
            out.append(None)
        elif k.data == "...":
            out.append("...")
        else:
            out.append(("slice", *(None if p == "" else int(p) for p in k.data.split(":"))))
    return tuple(out)


class Codec:
    __slots__ = ("encode", "decode", "syntax")

    def __init__(self, encode, decode, syntax):
        self.encode = encode
        self.decode = decode
        self.syntax = syntax  # what the attribute looks like, for errors


_INT = Codec(_enc_int, _dec_int, "an integer (2 : i64)")
_FLOAT = Codec(_enc_float, _dec_float, "a float (0.5 : f64)")
_INTS = Codec(_enc_ints, _dec_ints, "array<i64: ...>")
CODECS = {
    "int": _INT, "int?": _INT, "seed": _INT,
    "float": _FLOAT, "float?": _FLOAT,
    "bool": Codec(_enc_bool, _dec_bool, "true or false"),
    "ints": _INTS, "ints?": _INTS,
    "dtype": Codec(_enc_dtype, dtype_of, "an element type (f32)"),
    "str": Codec(_enc_str, _dec_str, "a string"),
    "index": Codec(_enc_index, _dec_index, 'a list of indices and "start:stop:step" strings'),
}


def encode_attrs(opdef, values: dict) -> dict:
    """Registry attr values -> op properties; None means absent."""
    props = {}
    for name, kind in opdef.attrs.items():
        v = values.get(name)
        if v is not None:
            props[name] = CODECS[kind].encode(v)
    return props


def decode_attrs(opdef, props) -> dict:
    return {name: (None if (a := props.get(name)) is None else _decode(name, CODECS[kind], a))
            for name, kind in opdef.attrs.items()}


def _decode(name, codec, a):
    try:
        return codec.decode(a)
    except (AttributeError, TypeError, ValueError):  # hand-written IR: {shape = "hello"}
        raise ValueError(f"attribute {name!r} is {a}, expected {codec.syntax}") from None


# -- locations -------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def make_loc(filename: str, line: int, col: int = 0) -> FileLineColLoc:
    return FileLineColLoc(StringAttr(filename), IntAttr(line), IntAttr(col))


def loc_str(op) -> str:
    """``file.py:12`` of an op (``file.mlir:3:8`` where the column is known), or
    ``<unknown location>``."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        col = f":{loc.column.data}" if loc.column.data else ""
        return f"{loc.filename.data}:{loc.line.data}{col}"
    return "<unknown location>"


class OpVerifyError(VerifyException):
    """A tfc op that does not verify: ``location`` (None if unknown) and ``reason``
    apart, for tools that print ``file:line:col: error: reason``."""

    def __init__(self, op, msg: str):
        where = loc_str(op)
        self.location = None if where.startswith("<") else where
        self.reason = f"{op.name}: {msg}"
        super().__init__(f"{where}: {self.reason}")


def _fail(op, msg: str):
    raise OpVerifyError(op, msg)


def failing_op(module):
    """The first op (in text order) whose own checks fail: where an xDSL
    verifier error, which does not name its op, comes from."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception:
            return op
    return None


class SourceParser(Parser):
    """The parser of IR files (``tfc opt``): an op written without ``loc(...)``
    gets its position in the file, as in mlir-opt, so verifier errors name
    ``file.mlir:line:col``; a file that is not UTF-8 and a dense literal that
    disagrees with its type are parse errors at the right place."""

    def __init__(self, ctx, input, name: str = "<unknown>"):
        if isinstance(input, bytes):
            try:
                input = input.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ParseError(Span(e.start, e.end, Input(input, name)),
                                 f"not UTF-8 text (byte {input[e.start]:#04x})") from None
        super().__init__(ctx, input, name)
        self._line, self._line_pos = 1, 0  # lines counted up to _line_pos: ops come in text order

    def parse_operation(self):
        span = self._current_token.span
        text = span.input.content
        self._line += text.count("\n", self._line_pos, span.start)
        self._line_pos = span.start
        line, col = self._line, span.start - span.input.get_start_of_line(span.start) + 1
        op = super().parse_operation()
        if op.location is UNKNOWN_LOC:  # the default: no loc(...) written
            op.location = make_loc(span.input.name, line, col)
        return op

    def parse_dense_int_or_fp_elements_attr(self, type):
        start = self._current_token.span
        try:
            return super().parse_dense_int_or_fp_elements_attr(type)
        except ParseError as e:
            # xDSL checks the literal against the type at the token after the
            # type (often the next line): point at the literal instead
            if e.msg.startswith(("Shape mismatch in dense literal", "Expected at least one element")):
                raise ParseError(start, e.msg) from None
            raise


def types_compatible(a: Spec, b: Spec) -> bool:
    """Same dtype and rank; dims equal where both are static."""
    return a.dtype == b.dtype and len(a.shape) == len(b.shape) and all(
        x is None or y is None or x == y for x, y in zip(a.shape, b.shape))


def _all_compatible(xs, ys) -> bool:
    xs, ys = list(xs), list(ys)
    return len(xs) == len(ys) and all(types_compatible(spec_of(a), spec_of(b)) for a, b in zip(xs, ys))


# -- generated registry ops ---------------------------------------------------------------


def input_layout(opdef) -> tuple[list[str], str | None]:
    """(fixed input names, variadic input name or None), from ``infer``'s signature:
    every positional parameter after ``op`` that is not a declared attr is an input."""
    params = list(inspect.signature(opdef.infer).parameters.values())[1:]
    fixed, variadic = [], None
    for p in params:
        if p.name in opdef.attrs:
            continue
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            variadic = p.name
        elif p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            fixed.append(p.name)
    return fixed, variadic


def print_operands_attrs_type(op, printer: Printer) -> None:
    """The generic head of tfc ops' custom syntax: ``%a, %b {attrs} : (types) -> (types)``."""
    if op.operands:
        printer.print_string(" ")
        printer.print_list(op.operands, printer.print_operand)
    printer.print_op_attributes({**op.properties, **op.attributes})
    printer.print_string(" : ")
    printer.print_function_type(op.operand_types, op.result_types)


def parse_operands_attrs_type(parser: Parser):
    """What ``print_operands_attrs_type`` wrote: (resolved operands, the
    attribute dict, the function type)."""
    pos = parser.pos
    args = []
    first = parser.parse_optional_unresolved_operand()
    if first is not None:
        args.append(first)
        while parser.parse_optional_punctuation(",") is not None:
            args.append(parser.parse_unresolved_operand())
    entries = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    ftype = parser.parse_function_type()
    return parser.resolve_operands(args, ftype.inputs.data, pos), entries, ftype


class RegistryOp(IRDLOperation):
    """Base of the generated ops: generic syntax and infer-based verification."""

    OPDEF: ClassVar = None  # the registry OpDef, set on each generated class

    @property
    def attr_values(self) -> dict:
        """The registry attribute values (Python) of this op."""
        return decode_attrs(self.OPDEF, self.properties)

    def verify_(self) -> None:
        opdef = self.OPDEF
        try:
            specs = [spec_of(t) for t in self.operand_types]
            out = opdef.infer(opdef, *specs, **self.attr_values)
        except (ValueError, TypeError, IndexError) as e:
            # hand-written IR may lack an attribute that inference needs (some,
            # like ones_like's dtype, may be absent)
            missing = [n for n, kind in opdef.attrs.items() if not kind.endswith("?") and n not in self.properties]
            _fail(self, ", ".join(f"missing attribute {n!r} ({CODECS[opdef.attrs[n]].syntax})"
                                  for n in missing) if isinstance(e, TypeError) and missing else str(e))
        outs = [out] if isinstance(out, Spec) else list(out)
        if len(outs) != len(self.results):
            _fail(self, f"expected {len(outs)} results, got {len(self.results)}")
        for k, (want, r) in enumerate(zip(outs, self.results)):
            got = spec_of(r.type)
            if not types_compatible(want, got):
                _fail(self, f"result {k} has type {r.type}, but inference gives "
                      f"{tensor_type(want.shape, want.dtype)}")

    def print(self, printer: Printer) -> None:
        print_operands_attrs_type(self, printer)

    @classmethod
    def parse(cls, parser: Parser):
        operands, entries, ftype = parse_operands_attrs_type(parser)
        props = {k: v for k, v in entries.items() if k in cls.OPDEF.attrs}
        attrs = {k: v for k, v in entries.items() if k not in cls.OPDEF.attrs}
        return cls.create(operands=list(operands), result_types=list(ftype.outputs.data),
                          properties=props, attributes=attrs)


_CLASSES: dict[str, type] = {}


def op_class(name: str) -> type:
    """The IR op class of registry op ``name`` (generated on first use)."""
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = _generate(REGISTRY[name])
    return cls


def _generate(opdef) -> type:
    fixed, variadic = input_layout(opdef)
    ns = {
        "name": f"tfc.{opdef.name}",
        "OPDEF": opdef,
        "__annotations__": {"OPDEF": ClassVar},
        "outs": var_result_def(TensorType),
        "traits": traits_def() if opdef.stateful else traits_def(Pure()),
        "__doc__": f"``tfc.{opdef.name}``, generated from the registry op {opdef.name!r}.",
    }
    for p in fixed:
        ns[f"in_{p}"] = operand_def(TensorType)
    if variadic is not None:
        ns[f"in_{variadic}"] = var_operand_def(TensorType)
    for attr in opdef.attrs:
        ns[f"attr_{attr}"] = opt_prop_def(Attribute, prop_name=attr)
    cls_name = "".join(w.title() for w in opdef.name.split("_")) + "Op"
    return irdl_op_definition(type(cls_name, (RegistryOp,), ns))


def build_op(name: str, operands, attrs: dict | None = None, loc=None, result_types=None):
    """A registry op ``name`` on SSA ``operands``; result types from ``infer``
    unless given."""
    opdef = REGISTRY[name]
    attrs = attrs or {}
    if result_types is None:
        full = {a: attrs.get(a) for a in opdef.attrs}
        out = opdef.infer(opdef, *(spec_of(o.type) for o in operands), **full)
        outs = [out] if isinstance(out, Spec) else list(out)
        result_types = [tensor_type(s.shape, s.dtype) for s in outs]
    op = op_class(name).create(operands=list(operands), result_types=list(result_types),
                               properties=encode_attrs(opdef, attrs))
    if loc is not None:
        op.location = loc
    return op


# -- constants -------------------------------------------------------------------------


def dense_from_numpy(arr: np.ndarray, dt: dtypes.DType | None = None) -> DenseIntOrFPElementsAttr:
    dt = dt or dtypes.from_numpy(arr.dtype)
    arr = np.asarray(arr, dtype=dt.as_numpy_dtype)
    return DenseIntOrFPElementsAttr(tensor_type(arr.shape, dt), BytesAttr(arr.tobytes()))


def numpy_from_dense(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    spec = spec_of(attr.type)
    shape = spec.shape
    np_dt = spec.dtype.as_numpy_dtype
    raw = attr.data.data
    if spec.dtype == dtypes.bool_:
        flat = np.frombuffer(raw, np.uint8) != 0
    else:
        flat = np.frombuffer(raw, np_dt)
    size = int(np.prod(shape, dtype=np.int64))
    if flat.size == 1 and size != 1:  # splat
        return np.full(shape, flat[0], np_dt)
    return flat.reshape(shape).copy()


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """``%c = tfc.constant dense<...> : tensor<...>``: a captured eager tensor."""

    name = "tfc.constant"
    T: ClassVar = VarConstraint("T", base(TensorType))
    value = prop_def(ParamAttrConstraint(DenseIntOrFPElementsAttr, (T, AnyAttr())))
    result = result_def(T)
    traits = traits_def(Pure(), ConstantLike())
    assembly_format = "$value attr-dict"

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(properties={"value": value}, result_types=[value.type])

    @staticmethod
    def from_numpy(arr, dt=None) -> "ConstantOp":
        return ConstantOp(dense_from_numpy(np.asarray(arr), dt))

    def numpy(self) -> np.ndarray:
        return numpy_from_dense(self.value)


# -- region control flow ------------------------------------------------------------------


def _print_types(printer, types):
    printer.print_list(types, printer.print_attribute)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of tfc.cond branches and of the tfc.while body."""

    name = "tfc.yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), Pure()))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, values=()):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class ConditionOp(IRDLOperation):
    """Terminator of the tfc.while condition region: continue while true."""

    name = "tfc.condition"
    cond = operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(WhileOp), Pure()))
    assembly_format = "$cond attr-dict `:` type($cond)"

    def __init__(self, cond):
        super().__init__(operands=[cond])


def _check_bool_scalar(op, t):
    s = spec_of(t)
    if s.dtype != dtypes.bool_ or s.shape not in ((), (1,)):
        _fail(op, f"the predicate must be a scalar bool tensor, got {t}")


def _check_yield(op, region, types, what):
    term = region.block.last_op
    if not isinstance(term, YieldOp):
        _fail(op, f"{what} must end with tfc.yield")
    got = [spec_of(v.type) for v in term.values]
    want = [spec_of(t) for t in types]
    if len(got) != len(want) or not all(types_compatible(a, b) for a, b in zip(want, got)):
        _fail(op, f"{what} yields ({', '.join(str(v.type) for v in term.values)}), "
              f"expected ({', '.join(str(t) for t in types)})")


# Custom syntax of the region ops, shared by tfc.cond/tfc.while and the loop
# dialect's loops.if/loops.while (same shape at every level).

def print_cond(op, printer: Printer) -> None:
    printer.print_string(" ")
    printer.print_operand(op.operands[0])
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_function_type(op.operand_types, op.result_types)
    printer.print_string(" ")
    printer.print_region(op.then_region, print_entry_block_args=False)
    printer.print_string(" else ")
    printer.print_region(op.else_region, print_entry_block_args=False)

def parse_cond(cls, parser: Parser):
    pos = parser.pos
    pred = parser.parse_unresolved_operand()
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    ftype = parser.parse_function_type()
    (pred,) = parser.resolve_operands([pred], ftype.inputs.data, pos)
    then_r = parser.parse_region()
    parser.parse_keyword("else")
    else_r = parser.parse_region()
    return cls.create(operands=[pred], result_types=list(ftype.outputs.data),
                      regions=[then_r, else_r], attributes=attrs)


def print_while(op, printer: Printer) -> None:
    print_operands_attrs_type(op, printer)
    printer.print_string(" cond ")
    printer.print_region(op.cond_region)
    printer.print_string(" do ")
    printer.print_region(op.body_region)

def parse_while(cls, parser: Parser):
    inits, entries, ftype = parse_operands_attrs_type(parser)
    parser.parse_keyword("cond")
    cond_r = parser.parse_region()
    parser.parse_keyword("do")
    body_r = parser.parse_region()
    props = {k: v for k, v in entries.items() if k == "max_iterations"}
    attrs = {k: v for k, v in entries.items() if k != "max_iterations"}
    return cls.create(operands=list(inits), result_types=list(ftype.outputs.data),
                      regions=[cond_r, body_r], properties=props, attributes=attrs)


@irdl_op_definition
class CondOp(IRDLOperation):
    """``tfc.cond %pred : (tensor<i1>) -> (...) {then} else {else}``; both
    branches yield values of the result types. Branches may use values from above."""

    name = "tfc.cond"
    pred = operand_def(TensorType)
    outs = var_result_def(TensorType)
    then_region = region_def("single_block")
    else_region = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect())

    def verify_(self) -> None:
        _check_bool_scalar(self, self.pred.type)
        _check_yield(self, self.then_region, self.result_types, "the true branch")
        _check_yield(self, self.else_region, self.result_types, "the false branch")

    def print(self, printer: Printer) -> None:
        print_cond(self, printer)

    @classmethod
    def parse(cls, parser: Parser):
        return parse_cond(cls, parser)


@irdl_op_definition
class WhileOp(IRDLOperation):
    """``tfc.while %init... : (...) -> (...) cond {^bb0(...): tfc.condition %p} do
    {^bb0(...): tfc.yield ...}``: loop variables have the result types; the loop
    stops when the condition is false or after ``max_iterations`` iterations."""

    name = "tfc.while"
    inits = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    max_iterations = opt_prop_def(IntegerAttr)
    cond_region = region_def("single_block")
    body_region = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect())

    def verify_(self) -> None:
        types = list(self.result_types)
        if not _all_compatible(self.operand_types, types):
            _fail(self, "initial values and results must have the same types")
        for region, what in ((self.cond_region, "condition"), (self.body_region, "body")):
            if not _all_compatible([a.type for a in region.block.args], types):
                _fail(self, f"the {what} region must take one argument per loop variable")
        term = self.cond_region.block.last_op
        if not isinstance(term, ConditionOp):
            _fail(self, "the condition region must end with tfc.condition")
        _check_bool_scalar(self, term.cond.type)
        _check_yield(self, self.body_region, types, "the body")

    def print(self, printer: Printer) -> None:
        print_while(self, printer)

    @classmethod
    def parse(cls, parser: Parser):
        return parse_while(cls, parser)


# -- variables, print, assert -----------------------------------------------------------------


@irdl_op_definition
class ReadVariableOp(IRDLOperation):
    """``%v = tfc.read_variable %ref : !tfc.ref<T> -> T``: the variable's current value."""

    name = "tfc.read_variable"
    ref = operand_def(RefType)
    result = result_def(TensorType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$ref attr-dict `:` type($ref) `->` type($result)"

    def verify_(self) -> None:
        if self.ref.type.tensor != self.result.type:
            _fail(self, f"reads {self.result.type} from a {self.ref.type}")


@irdl_op_definition
class AssignVariableOp(IRDLOperation):
    """``tfc.assign_variable %ref, %value : !tfc.ref<T>, T``: replace the value."""

    name = "tfc.assign_variable"
    ref = operand_def(RefType)
    value = operand_def(TensorType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$ref `,` $value attr-dict `:` type($ref) `,` type($value)"

    def verify_(self) -> None:
        if self.ref.type.tensor != self.value.type:
            _fail(self, f"assigns a {self.value.type} to a {self.ref.type}")


@irdl_op_definition
class PrintOp(IRDLOperation):
    """``tfc.print %a, ... {format = "x = {}"}``: prints the format with each
    ``{}`` replaced by the next tensor's value. Optional ``stream`` ("stdout",
    the default, or "stderr") and ``summarize`` (entries shown per axis end, -1
    all; absent: numpy's default) make it print as eager ``tfc.print``."""

    name = "tfc.print"
    values = var_operand_def(TensorType)
    format = prop_def(StringAttr)
    stream = opt_prop_def(StringAttr)
    summarize = opt_prop_def(IntegerAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$values attr-dict (`:` type($values)^)?"


@irdl_op_definition
class AssertOp(IRDLOperation):
    """``tfc.assert %cond, %data... {message = "..."}``: fails (InvalidArgumentError
    at the op's location) when the condition is not all true."""

    name = "tfc.assert"
    cond = operand_def(TensorType)
    data = var_operand_def(TensorType)
    message = prop_def(StringAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$cond (`,` $data^)? attr-dict `:` type($cond) (`,` type($data)^)?"


FIXED_OPS = [ConstantOp, YieldOp, ConditionOp, CondOp, WhileOp, ReadVariableOp,
             AssignVariableOp, PrintOp, AssertOp]


def dialect() -> Dialect:
    """The ``tfc`` dialect with one op per op in the registry now, and the L2
    fused ops (tfc/dialects/fused.py)."""
    from tfc.dialects.fused import FUSED_OPS

    return Dialect("tfc", FIXED_OPS + FUSED_OPS + [op_class(n) for n in sorted(REGISTRY)], [RefType])


def _lex_utf8_strings() -> None:
    """xDSL lexes a string literal whose escapes make non-ASCII bytes as a bytes
    literal even when they are UTF-8 (its own printer writes "é" as
    "\\C3\\A9"): a location, print format or assert message with such a
    character did not parse back (an artifact saved from /home/josé failed to
    load). Such literals are strings, as in MLIR."""
    from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

    lex = MLIRLexer._lex_string_literal

    def lex_string_literal(self, start_pos):
        token = lex(self, start_pos)
        if token.kind is MLIRTokenKind.BYTES_LIT:
            try:
                token.span.bytes_contents.decode()
            except UnicodeDecodeError:
                return token
            return type(token)(MLIRTokenKind.STRING_LIT, token.span)
        return token

    MLIRLexer._lex_string_literal = lex_string_literal


_lex_utf8_strings()


def context():
    """An xDSL Context with builtin, func, arith, math (fused bodies) and tfc loaded."""
    from xdsl.context import Context
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.math import Math

    ctx = Context()
    for d in (Builtin, Func, Arith, Math):
        ctx.load_dialect(d)
    ctx.load_dialect(dialect())
    from tfc.dialects.loops import LOOPS

    ctx.load_dialect(LOOPS)
    return ctx


def parse_module(text: str, filename: str = "<string>"):
    """Parse (and verify) tfc IR text."""
    m = Parser(context(), text, filename).parse_module()
    m.verify()
    return m


def print_ir(op, debuginfo: bool = False) -> str:
    """IR text; with ``debuginfo`` every op shows its ``loc(...)``."""
    import io

    buf = io.StringIO()
    Printer(stream=buf, print_debuginfo=debuginfo).print_op(op)
    return buf.getvalue()
