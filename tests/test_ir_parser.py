"""tfc's IR parser (tfc.dialects.tensor.IRParser): its fast path (an op made
from an earlier op whose line differs only in SSA names) and its caches give
exactly what xDSL's own parser gives, on big and random programs at every
level; and IR that uses a value where its definition does not dominate the use
is refused with the use's file:line:col and the value's name."""
import importlib.util
import io
import pathlib
import re
import sys

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError

import tfc
from tfc.compiler import compile, emit
from tfc.dialects import tensor as T

_PATH = pathlib.Path(__file__).resolve().parents[1] / "bench" / "parse_ir.py"
_spec = importlib.util.spec_from_file_location("bench_parse_ir", _PATH)
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_parse_ir"] = bench
_spec.loader.exec_module(bench)

LEVELS = ("tensor-raw", "tensor", "fused", "loops")
CTX = T.context()


def generic(module) -> str:
    """Every op, attribute, type and location, in the generic form."""
    buf = io.StringIO()
    Printer(stream=buf, print_generic_format=True, print_debuginfo=True).print_op(module)
    return buf.getvalue()


def same_as_xdsl(text: str) -> str:
    """IRParser's module, checked against xDSL's parser on the same text."""
    fast = T.IRParser(CTX, text).parse_module()
    slow = Parser(CTX, text).parse_module()
    assert generic(fast) == generic(slow)
    return T.print_ir(fast)


@pytest.mark.parametrize("level", LEVELS)
def test_big_file_round_trips(level):
    text = bench.ir_text(600, level)
    assert text.count("\n") > 400
    assert same_as_xdsl(text) == text
    with_locs = T.print_ir(T.IRParser(CTX, text).parse_module(), debuginfo=True)
    assert same_as_xdsl(with_locs) == text


# -- random programs ---------------------------------------------------------------

UNARY = [tfc.exp, tfc.tanh, tfc.abs, tfc.negative, tfc.square, tfc.sigmoid, tfc.nn.relu,
         lambda x: tfc.sqrt(tfc.abs(x)), lambda x: x * x]
BINARY = [tfc.add, tfc.subtract, tfc.multiply, tfc.maximum, tfc.minimum,
          lambda x, y: x / (tfc.abs(y) + 1.0), lambda x, y: tfc.where(x > y, x, y)]


def random_program(rng):
    """A function of x (3, 4) and w (4, 4) that draws ops of many kinds."""
    steps = [(int(rng.integers(9)), int(rng.integers(100)), float(rng.normal())) for _ in range(rng.integers(5, 25))]

    def f(x, w):
        pool = [x]
        for kind, k, c in steps:
            a, b = pool[k % len(pool)], pool[(k // 7) % len(pool)]
            if kind == 0:
                y = UNARY[k % len(UNARY)](a)
            elif kind == 1:
                y = BINARY[k % len(BINARY)](a, b)
            elif kind == 2:
                y = a * c + b
            elif kind == 3:
                y = tfc.matmul(a, w)
            elif kind == 4:
                y = a - tfc.reduce_sum(b, axis=k % 2, keepdims=True)
            elif kind == 5:
                y = tfc.reshape(tfc.transpose(a), (3, 4)) + tfc.reduce_max(b, axis=0)
            elif kind == 6:
                y = tfc.concat([a[:1], b[1:] * c], axis=0)
            elif kind == 7:
                if tfc.reduce_sum(a) > c:
                    y = a + b
                else:
                    y = a * 2.0
            else:
                i = tfc.constant(0)
                y = a
                while i < 2:
                    y = y + tfc.cast(i, tfc.float32)
                    i += 1
            pool.append(y)
        return pool[-1] + pool[len(pool) // 2]

    return f


_NAME = re.compile(r'"(?:[^"\\\n]|\\.)*"|%(?:[0-9]+|[a-zA-Z$._-][a-zA-Z0-9$._-]*)')


def renamed(text: str, rng) -> str:
    """The same IR with every SSA name replaced, one to one, by a random valid
    name (numbers, letters, $ . _ -): strings are left alone."""
    fresh = iter(rng.permutation([f"%{p}{i}" for i in range(4000) for p in ("", "v", "x.", "_", "$a", "-")]))
    table = {}

    def sub(m):
        g = m.group()
        if g[0] == '"':
            return g
        if g not in table:
            table[g] = next(fresh)
        return table[g]

    return _NAME.sub(sub, text)


@pytest.mark.parametrize("seed", range(6))
def test_random_programs_parse_as_xdsl_does(seed):
    rng = np.random.default_rng(seed)
    spec_x, spec_w = tfc.TensorSpec((3, 4), tfc.float32), tfc.TensorSpec((4, 4), tfc.float32)
    conc = compile(random_program(rng), spec_x, spec_w)
    for level in LEVELS:
        text = emit(conc, level)
        assert same_as_xdsl(text) == text
        with_locs = T.print_ir(T.IRParser(CTX, text).parse_module(), debuginfo=True)
        same_as_xdsl(with_locs)
        same_as_xdsl(renamed(text, rng))
        same_as_xdsl(renamed(with_locs, rng))
        assert source_locations(text) == op_starts(text)


def source_locations(text):
    """file:line:col of every op, as SourceParser (tfc opt) locates them."""
    return [T.loc_str(op) for op in T.SourceParser(CTX, text, "r.mlir").parse_module().walk()]


def op_starts(text):
    """Where each op starts: each line that starts with a result or an op name."""
    return [f"r.mlir:{i}:{len(line) - len(line.lstrip()) + 1}" for i, line in enumerate(text.splitlines(), 1)
            if re.match(r"\s*[%a-z]", line)]


def test_lines_that_differ_only_in_names_or_location():
    """The cases of the fast path: a name used twice (not a template), a
    forward reference, a location, a comment, an op over two lines, several
    results, and a type mismatch found on a replayed line."""
    text = """func.func @f(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = tfc.add %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = tfc.add %0, %0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = tfc.add %1, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("m.py":3:1)
  %3 = tfc.add %2, %1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> // %9 a comment
  %4 = tfc.add %3, %b
       : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %5 = tfc.add %4, %3
       : (tensor<3xf32>, tensor<3xf32>) -> tensor<4xf32>
  %6:2 = tfc.split %a {sizes = array<i64: 2, 1>, axis = 0 : i64} : (tensor<3xf32>) -> (tensor<2xf32>, tensor<1xf32>)
  %7:2 = tfc.split %b {sizes = array<i64: 2, 1>, axis = 0 : i64} : (tensor<3xf32>) -> (tensor<2xf32>, tensor<1xf32>)
  %8 = tfc.add %6#1, %7#0 : (tensor<1xf32>, tensor<2xf32>) -> tensor<2xf32>
  %9, %10 = tfc.split %b {sizes = array<i64: 2, 1>, axis = 0 : i64} : (tensor<3xf32>) -> (tensor<2xf32>, tensor<1xf32>)
  %11 = tfc.add %10, %9 : (tensor<1xf32>, tensor<2xf32>) -> tensor<2xf32>
  %12 = tfc.add %10, %9 : (tensor<1xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %3 : tensor<3xf32>
}
"""
    with pytest.raises(T.OpVerifyError, match="result 0 has type tensor<4xf32>"):
        T.parse_module(text)  # the second op over two lines is not the first one's template
    mod = text.replace("tensor<4xf32>", "tensor<3xf32>")
    same_as_xdsl(mod)
    bad = mod.replace("%12 = tfc.add %10, %9", "%12 = tfc.add %9, %10")  # made from %11's line
    with pytest.raises(ParseError, match="operand is used with type tensor<1xf32>, but has been previously "
                       "used or defined with type tensor<2xf32>") as e:
        T.parse_module(bad)
    assert str(e.value.span.get_location()) == "<string>:15:17"


def test_a_line_that_declares_names_is_not_a_template():
    """Two functions whose first lines differ only in their arguments' names."""
    fn = "  func.func @f(%{0}: tensor<3xf32>) -> tensor<3xf32> {{\n    func.return %{0} : tensor<3xf32>\n  }}\n"
    text = "".join(f"builtin.module {{\n{fn.format(name)}}}\n" for name in ("a", "b", "0"))
    same_as_xdsl(text)


# -- SSA dominance -----------------------------------------------------------------

HEAD = "func.func @f(%a: tensor<3xf32>, %p: tensor<i1>) -> tensor<3xf32> {\n"
NEG = "tfc.negative {} : (tensor<3xf32>) -> tensor<3xf32>"
ADD = "tfc.add {}, {} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>"

BAD = {
    "later in the block": (f"  %1 = {ADD.format('%0', '%a')}\n  %0 = {NEG.format('%a')}\n"
                           "  func.return %1 : tensor<3xf32>\n", (2, 16), "%0 is used before its definition"),
    "its own result": (f"  %0 = {ADD.format('%0', '%a')}\n  func.return %0 : tensor<3xf32>\n",
                       (2, 16), "%0 is used by the op that defines it"),
    "later, from a region": (
        "  %1 = tfc.cond %p : (tensor<i1>) -> tensor<3xf32> {\n    tfc.yield %2 : tensor<3xf32>\n"
        f"  }} else {{\n    tfc.yield %a : tensor<3xf32>\n  }}\n  %2 = {NEG.format('%a')}\n"
        "  func.return %1 : tensor<3xf32>\n", (3, 15), "%2 is used before its definition"),
    "its own result, from its region": (
        "  %1 = tfc.cond %p : (tensor<i1>) -> tensor<3xf32> {\n    tfc.yield %1 : tensor<3xf32>\n"
        "  } else {\n    tfc.yield %a : tensor<3xf32>\n  }\n  func.return %1 : tensor<3xf32>\n",
        (3, 15), "%1 is used by the op that defines it"),
    "later in a nested block": (
        "  %1 = tfc.cond %p : (tensor<i1>) -> tensor<3xf32> {\n"
        f"    %2 = {ADD.format('%3', '%a')}\n    %3 = {NEG.format('%a')}\n    tfc.yield %2 : tensor<3xf32>\n"
        "  } else {\n    tfc.yield %a : tensor<3xf32>\n  }\n  func.return %1 : tensor<3xf32>\n",
        (3, 18), "%3 is used before its definition"),
    "outside its region": (
        "  %1 = tfc.cond %p : (tensor<i1>) -> tensor<3xf32> {\n"
        f"    %2 = {NEG.format('%a')}\n    tfc.yield %2 : tensor<3xf32>\n"
        "  } else {\n    tfc.yield %a : tensor<3xf32>\n  }\n  func.return %2 : tensor<3xf32>\n",
        (8, 15), "%2 is used but not defined in its scope"),
    "a named value, later": (f"  %y = {ADD.format('%x', '%a')}\n  %x = {NEG.format('%a')}\n"
                             "  func.return %y : tensor<3xf32>\n", (2, 16), "%x is used before its definition"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("parser", [T.IRParser, T.SourceParser])
def test_use_before_definition_is_a_parse_error(case, parser):
    body, (line, col), msg = BAD[case]
    with pytest.raises(ParseError) as e:
        parser(CTX, HEAD + body + "}\n", "u.mlir").parse_module()
    assert e.value.msg.startswith(msg)
    assert str(e.value.span.get_location()) == f"u.mlir:{line}:{col}"


def test_valid_uses_parse():
    """Values from the blocks around a region, in either branch, and block
    arguments: no false alarm (xDSL's parser takes them too)."""
    body = (f"  %0 = {NEG.format('%a')}\n  %1 = tfc.cond %p : (tensor<i1>) -> tensor<3xf32> {{\n"
            f"    %2 = {ADD.format('%0', '%a')}\n    %3 = tfc.cond %p : (tensor<i1>) -> tensor<3xf32> {{\n"
            f"      tfc.yield %2 : tensor<3xf32>\n    }} else {{\n      tfc.yield %0 : tensor<3xf32>\n    }}\n"
            "    tfc.yield %3 : tensor<3xf32>\n  } else {\n    tfc.yield %0 : tensor<3xf32>\n  }\n"
            "  func.return %1 : tensor<3xf32>\n}\n")
    assert same_as_xdsl(HEAD + body)


def _built(swap: bool, self_use: bool = False):
    """A module built in Python: %n = negative(%a); %s = add(%n, %a); maybe out of order."""
    from xdsl.dialects import func

    t = T.tensor_type((3,), tfc.float32)
    block = Block(arg_types=[t])
    neg = T.build_op("negative", [block.args[0]])
    add = T.build_op("add", [neg.results[0], block.args[0]])
    block.add_ops([add, neg] if swap else [neg, add])
    if self_use:
        neg.operands = [neg.results[0]]
    block.add_op(func.ReturnOp(add.results[0]))
    return ModuleOp([func.FuncOp("f", ([t], [t]), Region(block))])


def test_verify_dominance_of_built_ir():
    T.verify_dominance(_built(False))
    _built(True).verify()  # xDSL's verifier: no complaint
    with pytest.raises(T.OpVerifyError, match="result 0 of tfc.negative .* is used before its definition"):
        T.verify_dominance(_built(True))
    with pytest.raises(T.OpVerifyError, match="used by the op that defines it"):
        T.verify_dominance(_built(False, self_use=True))


def test_pipeline_verification_checks_dominance():
    from tfc.passes.pipeline import run_pipeline

    run_pipeline(_built(False), ("tfc-cse",), verify=True)
    with pytest.raises(T.OpVerifyError, match="is used before its definition"):
        run_pipeline(_built(True), ("tfc-cse",), verify=True)


# -- review findings: each parses as xDSL's parser does -----------------------------

STACK = """func.func @o1(%p: tensor<i1>, %a: tensor<f32>) -> tensor<f32> {
  %0 = tfc.cond %p : (tensor<i1>) -> tensor<f32> {
    func.func @i1(%v: f32) {
      yield %v : f32
    }
    tfc.yield %a : tensor<f32>
  } else {
    tfc.yield %a : tensor<f32>
  }
  func.return %0 : tensor<f32>
}
func.func @o2(%c: i1, %a: f32) -> f32 {
  %0 = loops.if %c : (i1) -> f32 {
    func.func @i2(%w: f32) {
      yield %w : f32
    }
    loops.yield %a : f32
  } else {
    loops.yield %a : f32
  }
  func.return %0 : f32
}
"""

TWO_ADDS = """func.func @f(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {{
  %0 = "tfc.add"(%a, %b) {first} : (tensor<f32>, tensor<f32>) -> tensor<f32>{end0}
  %1 = "tfc.add"(%0, %b) {second} : (tensor<f32>, tensor<f32>) -> tensor<f32>{end1}
  func.return %1 : tensor<f32>
}}
"""


def test_a_bare_op_name_is_resolved_through_the_whole_dialect_stack():
    """`yield` in a func in tfc.cond is tfc.yield; in a func in loops.if, loops.yield."""
    assert "loops.yield %w" in same_as_xdsl(STACK)


@pytest.mark.parametrize("end0, end1", [
    (" //", ' // loc("c.py":4:2)'),  # a location in a comment
    (" //", " // loc(TODO)"),
    ("", '\n      loc("x":1:1)'),  # a location on the next line
])
def test_a_location_is_not_read_from_a_comment_and_may_follow_on_the_next_line(end0, end1):
    custom = re.sub(r'"tfc.add"\((%.), (%.)\) \{\w+\}', r"tfc.add \1, \2", TWO_ADDS)
    assert same_as_xdsl(custom.format(end0=end0, end1=end1)).count("tfc.add") == 2


@pytest.mark.parametrize("first, second", [
    ("{s = affine_set<(d0) : (d0 >= 0)>, k = 1}", "{s = affine_set<(d0) : (d0 >= 0)>, k = 2}"),
    ("{x = 1, // }\n      y = 2}", "{x = 1, // }\n      y = 3}"),
])
def test_a_dict_with_greater_equal_or_a_comment_is_cached_whole(first, second):
    same_as_xdsl(TWO_ADDS.format(first=first, second=second, end0="", end1=""))


def test_a_dict_cut_short_by_a_comment_is_not_taken_from_another_op():
    text = TWO_ADDS.format(first="{x = 1, // }\n      y = 2}", second="{x = 1, // }\n ", end0="", end1="")
    with pytest.raises(ParseError):
        Parser(CTX, text).parse_module()
    with pytest.raises(ParseError):
        T.IRParser(CTX, text).parse_module()


def test_a_name_whose_hint_xdsl_would_empty_is_no_hint():
    """xDSL keeps `%_5` as the hint "", which it refuses when a pass sets it again."""
    text = ("func.func @f(%_1: tensor<f32>) -> tensor<f32> {\n"
            "  %_5 = tfc.add %_1, %_1 : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
            "  func.return %_1 : tensor<f32>\n}\n")
    add = next(op for op in T.IRParser(CTX, text).parse_module().walk() if op.name == "tfc.add")
    assert add.results[0].name_hint is None and add.operands[0].name_hint is None
    add.parent_block().erase_op(add, safe_erase=False)  # sets the hint on its uses: no error


def test_an_op_using_a_value_its_own_region_defines_is_a_parse_error():
    text = (HEAD + "  %0 = tfc.cond %1 : (tensor<i1>) -> tensor<3xf32> {\n"
            "    %1 = tfc.constant dense<true> : tensor<i1>\n    tfc.yield %a : tensor<3xf32>\n"
            "  } else {\n    tfc.yield %a : tensor<3xf32>\n  }\n  func.return %0 : tensor<3xf32>\n}\n")
    with pytest.raises(ParseError, match="%1 is used outside the region that defines it") as e:
        T.IRParser(CTX, text, "u.mlir").parse_module()
    assert str(e.value.span.get_location()) == "u.mlir:2:17"


CFG = """func.func @f(%c: i1, %a: f32) -> f32 {{
  %0 = arith.addf %a, %a : f32
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %1 = arith.addf %0, %a : f32
  cf.br ^bb3(%1 : f32)
^bb2:
  cf.br ^bb3(%0 : f32)
^bb4:
  %4 = arith.addf %5, %1 : f32
  %5 = arith.addf %4, %4 : f32
  cf.br ^bb3(%5 : f32)
^bb3(%r: f32):
  %3 = arith.addf %r, {use} : f32
  func.return %3 : f32
}}
"""


def test_dominance_in_blocks():
    """As in MLIR: a block no path from the entry reaches (^bb4) is not checked,
    and is no predecessor that cuts ^bb3 off from the blocks dominating it; a
    use in a block its definition does not dominate is an error at the use."""
    from xdsl.dialects.cf import Cf

    ctx = T.context()
    ctx.load_dialect(Cf)
    text = CFG.format(use="%0")
    assert generic(T.IRParser(ctx, text).parse_module()) == generic(Parser(ctx, text).parse_module())
    with pytest.raises(ParseError, match="%1 is used in a block that its definition does not dominate") as e:
        T.IRParser(ctx, CFG.format(use="%1"), "u.mlir").parse_module()
    assert str(e.value.span.get_location()) == "u.mlir:14:23"


def test_a_block_labelled_twice_after_a_use_is_a_parse_error():
    from xdsl.dialects.cf import Cf

    ctx = T.context()
    ctx.load_dialect(Cf)
    text = "func.func @f() {\n  cf.br ^bb2\n^bb2:\n  func.return\n^bb2:\n  func.return\n}\n"
    with pytest.raises(ParseError, match="re-declaration of block 'bb2'") as e:
        T.IRParser(ctx, text, "u.mlir").parse_module()
    assert str(e.value.span.get_location()) == "u.mlir:5:1"


class _Scanned:
    """_NAME_OR_STRING, counting the characters the parser scans with it."""

    def __init__(self, pattern):
        self.pattern, self.chars = pattern, 0

    def sub(self, repl, text):
        self.chars += len(text)
        return self.pattern.sub(repl, text)


@pytest.mark.parametrize("line_end", ["\r", " "])
def test_many_ops_on_one_line_are_scanned_once(monkeypatch, line_end):
    """A one-line file (or one with CR line ends: one line for xDSL) is not
    scanned from each op to the line's end (quadratic), and parses as xDSL does;
    tfc opt's locations count columns on that line."""
    scanned, pattern = [], T._NAME_OR_STRING
    for n in (300, 1200):
        text = bench.ir_text(n, "tensor")
        one = line_end.join(text.splitlines()) + "\n"
        scanned.append(_Scanned(pattern))
        monkeypatch.setattr(T, "_NAME_OR_STRING", scanned[-1])
        same_as_xdsl(one)
    assert scanned[1].chars < 2 * scanned[0].chars  # 16 times as many before
    starts, pos = [], 0
    for line in text.splitlines():
        if re.match(r"\s*[%a-z]", line):
            starts.append(f"r.mlir:1:{pos + len(line) - len(line.lstrip()) + 1}")
        pos += len(line) + 1
    assert source_locations(one) == starts
