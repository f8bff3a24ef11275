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
import gc
import inspect
import math
import re
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX, AnyFloat, ArrayAttr, BoolAttr, BytesAttr, DenseArrayBase, DenseIntOrFPElementsAttr,
    FileLineColLoc, Float16Type, Float32Type, Float64Type, FloatAttr, IntAttr, IntegerAttr,
    UNKNOWN_LOC, IntegerType, Signedness, StringAttr, TensorType, f16, f32, f64, i1, i8, i32, i64,
)
from xdsl.ir import Attribute, Dialect, OpResult, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (
    AnyAttr, IRDLOperation, ParamAttrConstraint, ParsePropInAttrDict, VarConstraint, base, irdl_attr_definition,
    irdl_op_definition, lazy_traits_def, operand_def, opt_prop_def, prop_def, region_def,
    result_def, traits_def, var_operand_def, var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.parser.core import ForwardDeclaredValue
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

# uint8 is ``ui8``: MLIR's builtin unsigned integer type keeps the signedness in the
# tensor types, where the ops' kernels and the backends read it (arith at the loops
# level takes signless integers only; see docs/dtypes.md, "uint8")
_ELEMENT = {
    dtypes.float16: f16, dtypes.float32: f32, dtypes.float64: f64,
    dtypes.int8: i8, dtypes.uint8: IntegerType(8, Signedness.UNSIGNED), dtypes.int32: i32, dtypes.int64: i64,
    dtypes.bool_: i1,
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


def _enc_number(v):
    """An int stays an exact integer (i64; i128 beyond), a float an f64, a
    bool an i1: a constant meant for a result of any dtype (one_hot's, pad's)."""
    if isinstance(v, (bool, np.bool_)):
        return IntegerAttr(int(v), i1)
    if isinstance(v, (int, np.integer)):
        v = int(v)
        if -2**63 <= v < 2**63:
            return IntegerAttr(v, i64)
        if -2**127 <= v < 2**127:
            return IntegerAttr(v, IntegerType(128))
        raise NotImplementedError(f"an integer attribute beyond 128 bits: {v}")
    return FloatAttr(float(v), f64)


def _dec_number(a):
    if isinstance(a, IntegerAttr):
        v = int(a.value.data)
        return bool(v) if a.type == i1 else v
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
    "number": Codec(_enc_number, _dec_number, "a number (2 : i64, 0.5 : f64, true)"),
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


def verify_dominance(root) -> None:
    """SSA dominance, which xDSL's verify does not check: every operand is
    defined before its use, in the use's block or in a block around it (a
    block that dominates it, in a region of several blocks); a module body is a
    graph region. OpVerifyError at the first op that breaks it."""
    if (bad := misused_value(root)) is not None:
        op, v = bad
        _fail(op, dominance_error(op, v))


def misused_value(root):
    """(op, value) of the first use of a value where its definition does not
    dominate it, or None. As in MLIR, uses in a block that no path from its
    region's entry reaches are not checked."""
    from xdsl.dialects.builtin import ModuleOp

    visible: set = set()

    def defs(block):
        return [*block.args, *(r for op in block.ops for r in op.results)]

    def walk_block(block, extra, reached=True):
        graph = not reached or isinstance(block.parent_op(), ModuleOp)
        added = [*extra, *block.args, *(defs(block) if graph else ())]
        visible.update(added)
        for op in block.ops:
            for v in op.operands:
                if v not in visible and reached:
                    return op, v
            for region in op.regions:
                if (bad := walk_region(region)) is not None:
                    return bad
            visible.update(op.results)
            added.extend(op.results)
        visible.difference_update(added)

    def walk_region(region):
        blocks = list(region.blocks)
        if len(blocks) == 1:
            return walk_block(blocks[0], ())
        dom = _dominators(blocks) if blocks else {}
        for b in blocks:
            if b in dom:
                extra = [v for a in dom[b] if a is not b for v in defs(a)]
            else:  # unreachable: any value of the region, in any order
                extra = [v for a in blocks if a is not b for v in defs(a)]
            if (bad := walk_block(b, extra, b in dom)) is not None:
                return bad

    for region in root.regions:
        if (bad := walk_region(region)) is not None:
            return bad
    return None


def _dominators(blocks) -> dict:
    """Per block that a path from the entry ``blocks[0]`` reaches, the blocks that
    dominate it. Unlike xDSL's DominanceInfo, unreachable predecessors do not
    count (a block after a return would cut its successor off from the entry)."""
    succ = {b: (b.last_op.successors if b.last_op is not None else ()) for b in blocks}
    entry = blocks[0]
    reached, todo = {entry}, [entry]
    while todo:
        for s in succ[todo.pop()]:
            if s not in reached:
                reached.add(s)
                todo.append(s)
    preds = {b: [] for b in reached}
    for b in reached:
        for s in succ[b]:
            preds[s].append(b)
    dom = {b: set(reached) for b in reached}
    dom[entry] = {entry}
    changed = True
    while changed:
        changed = False
        for b in blocks:
            if b in reached and b is not entry:
                new = {b}.union(set.intersection(*(dom[p] for p in preds[b])))
                if new != dom[b]:
                    dom[b], changed = new, True
    return dom


def dominance_error(op, v, name: str | None = None) -> str:
    """Why ``op`` may not use ``v`` (``name``: its name in the source text)."""
    name = name or (f"%{v.name_hint}" if v.name_hint else None)
    if isinstance(v, ForwardDeclaredValue):  # the parser's: defined in a region of the op that uses it
        return f"{name} is used outside the region that defines it"
    if not isinstance(v, OpResult):
        block = v.owner
        name = name or "a block argument"
    else:
        block = v.op.parent_block()
        name = name or f"result {v.index} of {v.op.name} ({loc_str(v.op)})"
        if v.op.is_ancestor(op):
            return f"{name} is used by the op that defines it"
    if block is not None and block.is_ancestor(op):
        where = f" at {loc_str(v.op)}" if isinstance(v, OpResult) else ""
        return f"{name} is used before its definition{where}"
    user = op.parent_block()
    while user is not None and block is not None and user.parent is not block.parent:
        user = user.parent_block()
    if user is not None:
        return f"{name} is used in a block that its definition does not dominate"
    return f"{name} is used outside the region that defines it"


# Where the text of a type, attribute dict or location that starts at an opening
# bracket ends: brackets balanced (in strings too), on one line, no comment
# (else not cached); the ">" of "->" and ">=" (affine_set) closes nothing.
_BRACKETS = re.compile(r'->|>=|//|"(?:[^"\\\n]|\\.)*"|[{}\[\]()<>"\n]')
_OPEN, _CLOSE = set("{[(<"), set("}])>")
_TYPE_START = re.compile(r"(?:tensor|memref|vector)<")
_DICT_START = re.compile(r"\{")
_ARRAY_START = re.compile(r"array<")
_LOC_START = re.compile(r"loc\(")
# An SSA name (as xDSL's lexer reads it after %), a string literal or a comment, in an op's text.
_NAME_OR_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|//|%(?:[0-9]+|[a-zA-Z$._-][a-zA-Z0-9$._-]*)')
_MAX_TEMPLATES = 100_000
# A longer line (many ops on one line: a one-line file, CR line ends) is parsed
# as xDSL does: its text, scanned for each op on it, made parsing quadratic.
_MAX_LINE = 4096


def _balanced_end(text: str, start: int) -> int | None:
    depth = 0
    for m in _BRACKETS.finditer(text, start):
        c = m.group()
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return m.end()
        elif c in ('"', "\n", "//"):  # a string that does not end on the line, the line's end, a comment
            return None
    return None  # "->", ">=" and strings are skipped


class _Scope(dict):
    """The parser's SSA names: xDSL copies them at every region (quadratic in
    IR with many regions); here a region's names are deleted when it ends."""

    def copy(self):
        return self


class _FloatBits(Parser._TensorLiteralElement):
    """A hexadecimal tensor literal element: the bits of a float, or an integer."""

    def to_type(self, parser, type):
        if not isinstance(type, AnyFloat):
            return super().to_type(parser, type)
        size = type.compile_time_size
        if self.is_negative or self.value >= 1 << 8 * size:
            parser.raise_error(f"hexadecimal float literal {self.span.text} is not the bits of a {type}",
                               at_position=self.span)
        return type.unpack(self.value.to_bytes(size, "little"), 1)[0]


# A dense literal bigger than this (in bytes once expanded) is refused before
# the parser expands it: `dense<1.0> : tensor<100000x100000xf32>` is one line.
MAX_DENSE_BYTES = 1 << 30


class IRParser(Parser):
    """xDSL's parser, faster on large IR, and strict about SSA dominance.

    Fast path: an op on one line, without regions, whose text differs from an
    op parsed before only in its SSA names (and its trailing ``loc(...)``) is
    made like that op (same class, result types, properties, attributes; the
    operands and results named on this line): parsing depends on the text and
    the dialect stack only, names aside. A line with a comment, or too long
    (many ops on it), never takes this path. So is an op whose first line ends with the ``{`` of its
    one region (``tfc.fused``, ``loops.parallel``), its region parsed. Other
    ops parse as in xDSL, with the text of each type, attribute dict and
    location (``tensor<...>``, ``{axis = array<i64: 0>}``, ``loc(...)``) parsed once.
    A parsed module is checked by ``misused_value``: xDSL resolves forward
    references and never checks that a definition comes before its uses."""

    def __init__(self, ctx, input, name: str = "<unknown>"):
        super().__init__(ctx, input, name)
        self.ssa_values = _Scope()
        self._defined: list[str] = []  # SSA names in definition order, for region scopes
        self._cache: dict[str, object] = {}
        self._forward_uses: dict = {}  # name -> span of its first use before its definition
        self._late: dict = {}  # value -> ("%name", span of that use)
        self._templates: dict = {}  # op text with names left out -> how to make the op
        self._resolved: list = []  # (position, tuple index, value, type) per operand of the op parsed now
        self._results: list = []  # the result list of each op being parsed
        self._regions: list = []  # [start, end] of each region of the ops being parsed
        self._loc_pos = -1  # where the last location was looked for
        self._line = (0, -1)  # [from, eol): text with no line end, found for the last op
        self._block = None  # the innermost block being parsed
        self._open: set = set()  # the blocks being parsed
        self._cross: dict = {}  # (value, block) -> span of its first use there, from a closed block

    def parse_dense_int_or_fp_elements_attr(self, type):
        self._dense_start = self._current_token.span
        return super().parse_dense_int_or_fp_elements_attr(type)

    def _parse_dense_literal_type(self):
        t = super()._parse_dense_literal_type()
        n = math.prod(t.get_shape())
        size = n * getattr(t.element_type, "compile_time_size", 8)
        if size > MAX_DENSE_BYTES:  # refused before xDSL expands a splat to every element
            raise ParseError(self._dense_start, f"dense literal of {n:,} elements ({size:,} B) is "
                             f"over the limit of {MAX_DENSE_BYTES:,} B")
        return t

    def _parse_tensor_literal_element(self):
        """A hexadecimal element of a tensor literal is read as MLIR reads it:
        for a float type, its bits (xDSL's printer writes inf, NaN and floats
        it cannot write exactly in decimal so, and its parser took the bits
        for the number: ``dense<0x7f800000>`` came back as 2139095040.0)."""
        el = super()._parse_tensor_literal_element()
        if el.span.text.lstrip("-").startswith(("0x", "0X")):
            return _FloatBits(el.is_negative, el.value, el.span)
        return el

    def _cached(self, start: re.Pattern, parse):
        """``parse()``, or the value it gave for the same text before (text that
        ``start`` matches, up to the bracket that closes it)."""
        span = self._current_token.span
        text = span.input.content
        m = start.match(text, span.start)
        end = m and _balanced_end(text, m.end() - 1)
        if end is None:
            return parse()
        key = text[span.start:end]
        hit = self._cache.get(key)
        if hit is not None:
            self._resume_from(end)
            return hit
        value = parse()
        after = self._current_token.span.start
        if after >= end and text[end:after].isspace() or after == end:  # parsed exactly that text
            self._cache[key] = value
        return value

    def _parse_optional_builtin_parametrized_type(self):
        return self._cached(_TYPE_START, super()._parse_optional_builtin_parametrized_type)

    def _parse_optional_builtin_parametrized_attr(self):
        return self._cached(_ARRAY_START, super()._parse_optional_builtin_parametrized_attr)

    def parse_optional_dictionary_attr_dict(self):
        return dict(self._cached(_DICT_START, super().parse_optional_dictionary_attr_dict))

    def parse_operation(self):
        span = self._current_token.span
        text, start = span.input.content, span.start
        if not self._line[0] <= start <= self._line[1]:
            eol = text.find("\n", start)
            self._line = (start, len(text) if eol < 0 else eol)
        eol = self._line[1]
        names, key, brace, at = [], None, 0, 0
        if eol - start <= _MAX_LINE:
            line = text[start:eol].rstrip()
            brace = start + len(line) - 1 if line.endswith("{") else 0  # where its one region starts
            at = 0 if brace else line.rfind(" loc(") + 1  # where a trailing location starts (0: none)
            comment = False

            def hole(m):
                nonlocal comment
                g = m.group()
                if g[0] == '"':
                    return g
                if g == "//":
                    comment = True
                    return g
                names.append(m)
                return "%"

            own = line[:brace - start] if brace else line[:at - 1] if at else line
            # the whole stack: xDSL resolves an op name without a dialect in each dialect on it
            key = (tuple(self._parser_state.dialect_stack), bool(brace), _NAME_OR_STRING.sub(hole, own))
            if comment:  # a "{" or "loc(" found on the line may be a comment's
                key = None
        saved, self._resolved = self._resolved, []
        self._results.append([])
        mark = len(self._regions)
        try:
            template = self._templates.get(key) if key is not None else None
            if template is not None and (op := self._replay(template, names, start, at, eol, brace, span.input)):
                return op
            op = super().parse_operation()
            if (key is not None and len(self._templates) < _MAX_TEMPLATES
                    and self._reusable(op, text, start, at, eol, brace, mark)):
                template = self._template(op, names, start)
                if template is not None:
                    self._templates[key] = template
            return op
        finally:
            self._resolved = saved
            self._results.pop()
            del self._regions[mark:]

    def _reusable(self, op, text, start, at, eol, brace, mark) -> bool:
        """Is ``op`` all of its line (or, with ``brace``, its line and then one
        region and perhaps a location)?"""
        if op.successors or not isinstance(op, IRDLOperation):
            return False
        if brace:
            return len(op.regions) == 1 and len(self._regions) > mark and self._regions[mark] == [brace, self._loc_pos]
        after = self._current_token.span.start
        return (not op.regions and after >= eol and start + len(text[start:after].rstrip()) <= eol
                and self._loc_pos == (start + at if at else after))

    def _template(self, op, names, start):
        """How to make ``op`` again from a line that differs only in its names:
        for each operand and result, which name on the line it is."""
        k_of = {start + m.start(): k for k, m in enumerate(names)}
        of_value = {}
        for pos, index, value, t in self._resolved:
            k = k_of.get(pos)
            if k is None or of_value.setdefault(value, (k, index, t)) != (k, index, t):
                return None  # one value named twice: which name is which operand is unknown
        if of_value.keys() != set(op.operands):
            return None
        results = [(k_of.get(span.start), size) for span, size in self._results[-1]]
        named = [k for k, _, _ in of_value.values()] + [k for k, _ in results]
        if sorted(named) != list(range(len(names))):  # another name on the line: func.func's arguments
            return None
        return (type(op), [of_value[v] for v in op.operands], results, [r.type for r in op.results],
                dict(op.properties), dict(op.attributes))

    def _replay(self, template, names, start, at, eol, brace, input):
        cls, operands, results, result_types, props, attrs = template
        span = functools.partial(Span, input=input)

        def resolve():
            return [self.resolve_operand(
                UnresolvedOperand(span(start + names[k].start(), start + names[k].end()), index), t)
                for k, index, t in operands]

        location, regions = None, ()
        if brace:
            self._resume_from(brace)
            regions = [self.parse_region()]
            values = resolve()  # after the region, as xDSL's declarative formats do
            location = self.parse_optional_location()
        else:
            if at:
                self._resume_from(start + at)
                location = self.parse_optional_location()
                if location is None or self._current_token.span.start < eol:  # more on the line
                    self._resume_from(start)
                    return None
            else:
                self._resume_from(eol)
                location = self.parse_optional_location()  # on a later line
            values = resolve()
        op = cls.create(operands=values, result_types=result_types, properties=dict(props),
                        attributes=dict(attrs), regions=regions)
        if location is not None:
            op.location = location
        i = 0
        for k, size in results:
            m = names[k]
            self._register_ssa_definition(m.group()[1:], op.results[i:i + size],
                                          span(start + m.start(), start + m.end()))
            i += size
        return op

    def _parse_op_result_list(self):
        self._results[-1] = results = super()._parse_op_result_list()
        return results

    def parse_optional_location(self):
        self._loc_pos = self._current_token.span.start
        return self._cached(_LOC_START, super().parse_optional_location)

    def resolve_operand(self, operand, type):
        self._resolved.append((operand.span.start, operand.index, None, type))

        if operand.operand_name not in self.ssa_values:  # a forward reference: where, for errors
            self._forward_uses.setdefault(operand.operand_name, operand.span)
        value = super().resolve_operand(operand, type)
        self._resolved[-1] = (operand.span.start, operand.index, value, type)
        if not isinstance(value, ForwardDeclaredValue):
            block = value.op.parent if isinstance(value, OpResult) else value.owner
            if block is not self._block and block not in self._open:
                # from another block of a region: where, should that block not dominate this one
                self._cross.setdefault((value, self._block), operand.span)
        return value

    def _register_ssa_definition(self, name, values, span):
        if name in self.forward_ssa_references:
            use = self._forward_uses.pop(name)
            for v in (*values, *self.forward_ssa_references[name].values()):
                # a forward value stays an operand of an op whose own region defines the name
                self._late[v] = (f"%{name}", use)
        super()._register_ssa_definition(name, values, span)
        if values and values[0].name_hint == "":
            # xDSL drops a "_<digits>" suffix: %_5 leaves "", which xDSL itself
            # refuses when it sets the hint again (passes' replace_all_uses_with)
            for v in values:
                v.name_hint = None
        self._defined.append(name)

    def _parse_block(self):
        # xDSL records no label for a block used before it: a second label was a KeyError
        tok = self._current_token
        name = tok.text[1:]
        if self.blocks.get(name, (None, 0))[1] is None and name not in self.forward_block_references:
            raise ParseError(tok.span, f"re-declaration of block '{name}'")
        return super()._parse_block()

    def _parse_block_body(self, block):
        outer, self._block = self._block, block
        self._open.add(block)
        try:
            super()._parse_block_body(block)
        finally:
            self._open.discard(block)
            self._block = outer

    def parse_optional_region(self, arguments=None):
        where = [self._current_token.span.start, None]
        self._regions.append(where)
        mark = len(self._defined)
        region = super().parse_optional_region(arguments)
        for name in self._defined[mark:]:
            del self.ssa_values[name]
        del self._defined[mark:]
        where[1] = self._current_token.span.start
        return region

    def parse_module(self, allow_implicit_module: bool = True):
        collecting = gc.isenabled()
        gc.disable()  # the IR made lives on: collections, which scan it again and again, took 20% of a parse
        try:
            module = super().parse_module(allow_implicit_module)
        except ParseError as e:
            if not e.msg.startswith("values used but not defined") or not self.forward_ssa_references:
                raise
            name = next(iter(self.forward_ssa_references))  # at its first use, not at the end of the file
            raise ParseError(self._forward_uses[name], f"%{name} is used but not defined in its scope") from None
        finally:
            if collecting:
                gc.enable()
        if (bad := misused_value(module)) is not None:
            op, v = bad
            name, use = self._late.get(v, (None, None))
            if use is None and (use := self._cross.get((v, op.parent_block()))) is not None:
                name = use.text
            if use is None:
                _fail(op, dominance_error(op, v))
            raise ParseError(use, dominance_error(op, v, name))
        return module


class SourceParser(IRParser):
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
        # lines counted up to _line_pos (ops come in text order), and where the last starts
        self._lines, self._line_pos, self._line_start = 1, 0, 0

    def parse_operation(self):
        span = self._current_token.span
        text = span.input.content
        if n := text.count("\n", self._line_pos, span.start):
            self._lines += n
            self._line_start = text.rfind("\n", self._line_pos, span.start) + 1
        self._line_pos = span.start
        line, col = self._lines, span.start - self._line_start + 1
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
        except NotImplementedError:  # xDSL cannot pack the elements (i72, i128, f80)
            literal = start.input.content[start.start:self._current_token.span.start].split(":")[-1]
            raise ParseError(start, f"dense literal of {literal.strip()}: tfc does not support its "
                             f"element type (supported: {', '.join(dtypes._BY_IR)})") from None


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


class CondShape:
    """What tfc.cond (L1) and loops.if (L3) share: a predicate, results and
    two single-block regions (their fields, whose types differ by level, are
    declared on each op), and the custom syntax."""

    def print(self, printer: Printer) -> None:
        print_cond(self, printer)

    @classmethod
    def parse(cls, parser: Parser):
        return parse_cond(cls, parser)


class WhileShape:
    """What tfc.while (L1) and loops.while (L3) share: loop variables of the
    result types carried through a condition region (ending in the level's
    ``CONDITION`` terminator) and a body; the structural checks, with the
    level's notion of compatible types (``compatible(xs, ys)``), and the
    custom syntax."""

    CONDITION: ClassVar = None

    def verify_loop(self, compatible) -> None:
        types = list(self.result_types)
        if not compatible(self.operand_types, types):
            _fail(self, "initial values and results must have the same types")
        for region, what in ((self.cond_region, "condition"), (self.body_region, "body")):
            if not compatible([a.type for a in region.block.args], types):
                _fail(self, f"the {what} region must take one argument per loop variable")
        if not isinstance(self.cond_region.block.last_op, self.CONDITION):
            _fail(self, f"the condition region must end with {self.CONDITION.name}")

    def print(self, printer: Printer) -> None:
        print_while(self, printer)

    @classmethod
    def parse(cls, parser: Parser):
        return parse_while(cls, parser)


@irdl_op_definition
class CondOp(CondShape, IRDLOperation):
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


@irdl_op_definition
class WhileOp(WhileShape, IRDLOperation):
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

    CONDITION: ClassVar = ConditionOp

    def verify_(self) -> None:
        self.verify_loop(_all_compatible)
        _check_bool_scalar(self, self.cond_region.block.last_op.cond.type)
        _check_yield(self, self.body_region, list(self.result_types), "the body")


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


def _math_dialect():
    from xdsl.dialects.math import Math

    return Math


def context():
    """An xDSL Context with builtin, func, arith, math (fused bodies) and tfc.
    tfc and math load when IR using them is parsed: passes need neither, and
    loading tfc generates every registry op's class (the first compile's cost)."""
    from xdsl.context import Context
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    ctx = Context()
    for d in (Builtin, Func, Arith):
        ctx.load_dialect(d)
    ctx.register_dialect("math", _math_dialect)
    ctx.register_dialect("tfc", dialect)
    from tfc.dialects.loops import LOOPS

    ctx.load_dialect(LOOPS)
    # L4 (docs/gpu.md): xDSL's gpu and scf, and tgpu, loaded when IR using them is parsed
    ctx.register_dialect("gpu", _gpu_dialect)
    ctx.register_dialect("scf", _scf_dialect)
    ctx.register_dialect("tgpu", _tgpu_dialect)
    return ctx


def _gpu_dialect():
    from tfc.dialects.gpu import GPU  # xDSL's gpu with MLIR's syntax

    return GPU


def _scf_dialect():
    from xdsl.dialects.scf import Scf

    return Scf


def _tgpu_dialect():
    from tfc.dialects.gpu import TGPU

    return TGPU


def parse_module(text: str, filename: str = "<string>"):
    """Parse (and verify) tfc IR text."""
    m = IRParser(context(), text, filename).parse_module()
    m.verify()
    return m


def print_ir(op, debuginfo: bool = False) -> str:
    """IR text; with ``debuginfo`` every op shows its ``loc(...)``."""
    import io

    buf = io.StringIO()
    Printer(stream=buf, print_debuginfo=debuginfo).print_op(op)
    return buf.getvalue()
