"""Random tfc programs, written as Python source so that AutoGraph converts them.

A program is one function ``prog(x0, x1, ...)`` over float tensors of small random
shapes: straight-line code over a wide range of ops (elementwise with broadcasting,
reductions, matmul, shape ops, slicing, softmax, where; the model ops of
docs/ops.md, MODEL_OPS, on transposed, strided, odd-sized and zero-size operands),
tensor ``if``/``else``,
``while`` loops (some run zero times), ``for i in tfc.range(n)``, ``tfc.cond``,
``tfc.while_loop``, ``tfc.stop_gradient`` and ``@tfc.custom_gradient`` functions
inside and outside control flow. With gradients, the body runs under a
``GradientTape`` (persistent or not, sometimes nested for a second order) with
several sources, some unconnected, and the function returns the gradients beside
its outputs. The generator tracks every variable's shape so that the programs are
valid eagerly (a program that fails eagerly is still compared: compiled code must
fail too).

Everything is drawn from ``numpy.random.default_rng([seed, index])``: a program
is reproducible from its two numbers alone.
"""
from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

# Module-level helpers every program may call: custom gradients whose rule differs
# from the true derivative, so a compiled gradient that ignores them is visible.
HELPERS = '''\
@tfc.custom_gradient
def cg_scale(x):
    def grad(dy):
        return dy * 2.0
    return x * 3.0, grad


@tfc.custom_gradient
def cg_clip(x):
    def grad(dy):
        return tfc.clip_by_value(dy, -0.5, 0.5)
    return tfc.identity(x), grad


@tfc.custom_gradient
def cg_softplus(x):
    def grad(dy):
        return dy * tfc.sigmoid(x)
    return tfc.softplus(x), grad


@tfc.custom_gradient
def cg_mul(a, b):
    def grad(dy):
        return dy * b, dy * a
    return a * b, grad


def total(values):
    s = 0.0
    for v in values:
        if v is not None:
            s = s + tfc.reduce_sum(v)
    return s
'''

UNARY = ["abs", "cos", "exp", "expm1", "log", "log1p", "negative", "relu", "sigmoid", "sign",
         "sin", "softplus", "sqrt", "square", "tanh", "floor", "ceil", "round", "rsqrt",
         "identity"]
BINARY_OPS = ["+", "-", "*", "/"]
BINARY_FNS = ["tfc.maximum", "tfc.minimum", "tfc.add", "tfc.multiply", "tfc.subtract", "tfc.divide"]
REDUCTIONS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]
CUSTOM = ["cg_scale", "cg_clip", "cg_softplus"]
# the model ops (docs/ops.md), each drawn by its _Gen.m_<name>, with the least rank it takes
MODEL_OPS = {"gelu": 0, "silu": 0, "erf": 0, "layer_norm": 1, "moments": 1, "l2_normalize": 0,
             "softmax_cross_entropy_with_logits": 1, "embedding_lookup": 1, "einsum": 1, "cumsum": 1,
             "sort": 1, "argsort": 1, "top_k": 1, "truncated_normal": 0, "categorical": 1, "shuffle": 1,
             "quantize": 0, "collective": 0}
MAX_SIZE = 48


@dataclasses.dataclass
class Program:
    """One generated program: its inputs, body and what it returns."""

    seed: int
    index: int
    dtype: str
    shapes: list                   # the inputs' shapes
    values: list                   # the inputs (numpy arrays)
    blocks: list                   # statements of the body, each a list of source lines
    outputs: list                  # names returned as the forward results
    grad: dict | None = None       # {"sources", "persistent", "second_order", "unconnected"}
    none_dims: list | None = None  # per input, which dims are None in the None signature

    @property
    def name(self) -> str:
        return f"prog_{self.seed}_{self.index}"

    @property
    def n_inputs(self) -> int:
        return len(self.shapes)

    @property
    def n_forward(self) -> int:
        return len(self.outputs)

    def source(self) -> str:
        """The module's source: the helpers it calls, then ``prog``."""
        args = ", ".join(f"x{i}" for i in range(self.n_inputs))
        body = [line for b in self.blocks for line in b]
        outs = ", ".join(self.outputs)
        text = "\n".join(body)
        used = [h.strip("\n") for h in HELPERS.split("\n\n\n") if _helper_name(h) in ("total", *_CALLS.findall(text))]
        lines = ["import tfc", "", "", "\n\n\n".join(used), "", "", f"def prog({args}):"]
        g = self.grad
        if g is None:
            lines += ["    " + line for line in body]
            lines.append(f"    return ({outs},)")
            return "\n".join(lines) + "\n"
        srcs = ", ".join(f"x{i}" for i in g["sources"])
        watch = "; ".join(f"t.watch(x{i})" for i in g["sources"])
        extra = ', unconnected_gradients="zero"' if g["unconnected"] else ""
        ind = "    "
        if g["second_order"]:
            lines += ["    with tfc.GradientTape() as t2:",
                      "        " + "; ".join(f"t2.watch(x{i})" for i in g["sources"])]
            ind = "        "
        lines.append(f"{ind}with tfc.GradientTape(persistent={g['persistent']}) as t:")
        lines.append(f"{ind}    {watch}")
        lines += [f"{ind}    {line}" for line in body]
        lines.append(f"{ind}    loss = total([{outs}])")
        lines.append(f"{ind}g = t.gradient(loss, [{srcs}]{extra})")
        results = f"{outs}, *g"
        if g["persistent"]:
            lines.append(f"{ind}g1 = t.gradient(tfc.reduce_sum({self.outputs[0]}), [{srcs}]{extra})")
            results += ", *g1"
        if g["second_order"]:
            lines.append("        loss2 = total(g)")
            lines.append(f"    h = t2.gradient(loss2, [{srcs}]{extra})")
            results += ", *h"
        lines.append(f"    return ({results},)")
        return "\n".join(lines) + "\n"


_CALLS = re.compile(r"\b(cg_\w+)\(")


def _helper_name(h: str) -> str:
    return h.split("def ", 1)[1].split("(", 1)[0]


# -- shapes ----------------------------------------------------------------------------

def _bshape(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _size(shape) -> int:
    return math.prod(shape)


class _Gen:
    def __init__(self, rng, dtype, grad, second_order=False, side=None):
        self.rng = rng
        # the constructs added after a campaign's programs were fixed draw from a stream
        # of their own, so that a (seed, index) keeps drawing the same program around them
        self.side = side if side is not None else np.random.default_rng(0)
        self.dtype = dtype
        self.grad = grad
        self.second_order = second_order
        self.env = {}      # name -> shape, the variables visible at this point
        self.count = 0
        self.loops = 0
        self.ints = None   # (name, length) of an int32 input vector, or None

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p) -> bool:
        return bool(self.rng.random() < p)

    def side_pick(self, seq):
        return seq[int(self.side.integers(len(seq)))]

    def side_chance(self, p) -> bool:
        return bool(self.side.random() < p)

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def const(self) -> str:
        if self.chance(0.03):  # constants the IR must print and parse exactly
            return self.pick(['float("inf")', 'float("-inf")', 'float("nan")', "-0.0", "1e-45", "3.4e38"])
        return self.pick(["0.5", "2.0", "-1.5", "3.0", "0.0", "1.0", "0.25"])

    # -- expressions: each returns (source, shape) ---------------------------------

    def var(self, pred=lambda s: True):
        names = [n for n, s in self.env.items() if pred(s)]
        if not names:
            return None
        n = self.pick(names)
        return n, self.env[n]

    def expr(self, depth=0):
        """Any expression over the visible variables."""
        n, s = self.var()
        kinds = ["unary", "binary", "binary", "reduce", "shape", "shape", "shape", "special", "extra", "extra",
                 "model", "model", "model"]
        if depth >= 2:
            return n, s
        k = self.pick(kinds)
        sub, s = self.expr(depth + 1) if self.chance(0.3) else (n, s)
        if k == "unary":
            return self.unary(sub), s
        if k == "binary":
            return self.binary(sub, s)
        if k == "reduce":
            return self.reduce(sub, s)
        if k == "shape":
            return self.shape_op(sub, s)
        if k == "extra":
            return self.extra(sub, s)
        if k == "model":
            return self.model_op(sub, s)
        return self.special(sub, s)

    def unary(self, x) -> str:
        return f"tfc.{self.pick(UNARY)}({x})"

    def binary(self, x, s, keep_shape=False):
        """``x`` combined with a constant or a variable it broadcasts with."""
        if self.chance(0.25):
            c = self.const()
            form = self.pick([f"({x} {self.pick(BINARY_OPS)} {c})", f"({c} {self.pick(BINARY_OPS)} {x})",
                              f"{self.pick(BINARY_FNS)}({x}, {c})"])
            return form, s
        ok = (lambda t: _bshape(s, t) == tuple(s)) if keep_shape else \
             (lambda t: _bshape(s, t) is not None and _size(_bshape(s, t)) <= MAX_SIZE)
        other = self.var(ok)
        if other is None:
            return f"({x} * {self.const()})", s
        y, t = other
        a, b = (x, y) if self.chance(0.7) else (y, x)
        if self.chance(0.6):
            form = f"({a} {self.pick(BINARY_OPS)} {b})"
        else:
            form = f"{self.pick(BINARY_FNS)}({a}, {b})"
        return form, _bshape(s, t)

    def reduce(self, x, s):
        op = self.pick(REDUCTIONS)
        if not s or self.chance(0.25):
            return f"tfc.{op}({x})", ()
        axis = int(self.rng.integers(-len(s), len(s)))
        keep = self.chance(0.4)
        a = axis % len(s)
        shape = s[:a] + ((1,) if keep else ()) + s[a + 1:]
        kd = ", keepdims=True" if keep else ""
        return f"tfc.{op}({x}, axis={axis}{kd})", tuple(shape)

    def shape_op(self, x, s):
        s = tuple(s)
        r = len(s)
        options = ["reshape", "expand_dims", "broadcast_to", "tile", "concat"]
        if r >= 1:
            options += ["transpose", "gather", "slice", "slice", "softmax", "concat"]
        if 1 in s:
            options += ["squeeze", "squeeze"]
        if r == 2:
            options += ["matmul", "matmul"]
        k = self.pick(options)
        if k == "reshape":
            if self.chance(0.5) or _size(s) == 1:
                return f"tfc.reshape({x}, [-1])", (_size(s),)
            n = _size(s)
            divs = [d for d in range(1, n + 1) if n % d == 0]
            d = self.pick(divs)
            shape = [d, n // d]
            if self.chance(0.5):
                shape[self.pick([0, 1])] = -1
            return f"tfc.reshape({x}, {shape})", (d, n // d)
        if k == "expand_dims" and r < 3:
            a = int(self.rng.integers(-(r + 1), r + 1))
            shape = list(s)
            shape.insert(a % (r + 1), 1)
            return f"tfc.expand_dims({x}, {a})", tuple(shape)
        if k == "broadcast_to":
            shape = tuple(self.pick([2, 3]) if d == 1 and self.chance(0.7) else d for d in s)
            if r < 3 and self.chance(0.5):
                shape = (self.pick([1, 2]),) + shape
            if _size(shape) > MAX_SIZE:
                return x, s
            return f"tfc.broadcast_to({x}, {list(shape)})", shape
        if k == "tile" and r >= 1:
            mult = [self.pick([1, 1, 2]) for _ in s]
            shape = tuple(d * m for d, m in zip(s, mult))
            if _size(shape) > MAX_SIZE:
                return x, s
            return f"tfc.tile({x}, {mult})", shape
        if k == "concat" and r >= 1:
            a = int(self.rng.integers(r))
            other = self.var(lambda t: len(t) == r and all(t[i] == s[i] for i in range(r) if i != a))
            y, t = other if other is not None and self.chance(0.6) else (self.unary(x), s)
            shape = tuple(d + t[a] if i == a else d for i, d in enumerate(s))
            if _size(shape) > MAX_SIZE:
                return x, s
            return f"tfc.concat([{x}, {y}], axis={a})", shape
        if k == "transpose":
            perm = [int(p) for p in self.rng.permutation(r)]
            return f"tfc.transpose({x}, {perm})", tuple(s[p] for p in perm)
        if k == "gather":
            a = int(self.rng.integers(r))
            idx = [int(i) for i in self.rng.integers(0, s[a], size=int(self.rng.integers(1, 4)))]
            shape = s[:a] + (len(idx),) + s[a + 1:]
            return f"tfc.gather({x}, {idx}, axis={a})", shape
        if k == "slice":
            a = int(self.rng.integers(r))
            if s[a] > 1 and self.chance(0.5):
                sl, n = "1:", s[a] - 1
            elif self.chance(0.5):
                sl, n = "::2", (s[a] + 1) // 2
            else:
                sl, n = "0", None
            key = ", ".join([":"] * a + [sl])
            shape = s[:a] + (() if n is None else (n,)) + s[a + 1:]
            return f"{x}[{key}]", shape
        if k == "softmax":
            return f"tfc.nn.softmax({x})", s
        if k == "squeeze":
            ones = [i for i, d in enumerate(s) if d == 1]
            if self.chance(0.3):
                return f"tfc.squeeze({x})", tuple(d for d in s if d != 1)
            a = self.pick(ones)
            return f"tfc.squeeze({x}, axis={a})", s[:a] + s[a + 1:]
        if k == "matmul":
            other = self.var(lambda t: len(t) == 2 and t[0] == s[1])
            if other is not None and self.chance(0.5):
                y, t = other
                return f"tfc.matmul({x}, {y})", (s[0], t[1])
            if self.chance(0.5):
                return f"tfc.matmul({x}, tfc.transpose({x}))", (s[0], s[0])
            return f"({x} @ tfc.transpose({x}))", (s[0], s[0])
        return x, s

    def _int(self, x, dt="int32") -> str:
        """``x`` as integers in [-16, 16] (NaN as 0: a NaN's cast is undefined)."""
        return f"tfc.cast(tfc.clip_by_value(tfc.where({x} == {x}, {x}, 0.0), -8.0, 8.0) * 2.0, tfc.{dt})"

    def extra(self, x, s):
        """The ops issue 16 compiles through kernels and loops: arg-reductions,
        scatter-adds (unsorted_segment_sum, gather's gradient), gathers with tensor,
        computed and nested indices, pad, one_hot, stack, split, integer arithmetic,
        and indexing with None, negative steps, tensor (0-d) indices; integer arithmetic
        in int8 and uint8 too (wrapping as numpy); ``x`` multiplied by a fill whose
        shape holds a traced count (dynamic_fill where the count is known only at run time)."""
        s = tuple(s)
        r = len(s)
        if r and 0 not in s and self.side_chance(0.1):
            x = self._run_time_fill(x, s)
        dt = self._fdt()
        options = ["int", "pad", "index"] + (["int_input"] * 8 if self.ints else [])
        if r >= 1:
            options += ["argmax", "segment", "gather_t", "one_hot", "split", "index", "index"]
        if r < 3:
            options += ["stack"]
        k = self.pick(options)
        if k == "int_input":  # an int32 input: indices, segment ids, one_hot, arithmetic
            kn, length = self.ints
            m = int(self.rng.integers(1, length + 1))
            if r and self.chance(0.4):
                a = int(self.rng.integers(r))
                shape = s[:a] + (m,) + s[a + 1:]
                if _size(shape) <= MAX_SIZE:
                    return f"tfc.gather({x}, {kn}[:{m}] % {s[a]}, axis={a})", shape
            if r and s[0] <= length and self.chance(0.5):
                n = int(self.rng.integers(1, 5))
                return f"tfc.ops.scatter.unsorted_segment_sum({x}, tfc.minimum({kn}[:{s[0]}], {n - 1}), {n})", (n,) + s[1:]
            if self.chance(0.5):
                depth = int(self.rng.integers(1, 5))
                if m * depth <= MAX_SIZE:
                    return f"tfc.one_hot({kn}[:{m}], {depth}, dtype={dt})", (m, depth)
            form = self.pick([f"({kn} * {kn} // 2)", f"tfc.maximum({kn}, 0)", f"({kn} % 3 - {kn})",
                              f"tfc.reduce_sum({kn})", f"{kn}[::-1]"])
            shape = () if "reduce_sum" in form else (length,)
            return f"tfc.cast({form}, {dt})", shape
        if k == "argmax":
            a = int(self.rng.integers(-r, r))
            op = self.pick(["argmax", "argmin"])
            ot = self.pick(["", ", output_type=tfc.int32"])
            shape = s[:a % r] + s[a % r + 1:]
            return f"tfc.cast(tfc.{op}({x}, axis={a}{ot}), {dt})", shape
        if k == "int":
            it = self.pick(["int32", "int64"])
            if self.side_chance(0.4):
                it = self.side_pick(["int8", "uint8"])
            i = self._int(x, it)
            neg2 = "2" if it == "uint8" else "-2"  # -2 does not fit in uint8 (eager's error)
            form = self.pick([f"({i} // 3)", f"({i} % 3)", f"({i} * {i} - {i})", f"tfc.maximum({i}, 1)",
                              f"tfc.floordiv({i}, {neg2})", f"tfc.mod({i}, 5)", f"tfc.abs({i})"])
            if self.chance(0.3) and r:
                a = int(self.rng.integers(r))
                red = self.pick(["reduce_sum", "reduce_max", "reduce_min"])
                return f"tfc.cast(tfc.{red}({form}, axis={a}), {dt})", s[:a] + s[a + 1:]
            return f"tfc.cast({form}, {dt})", s
        if k == "segment":
            n = int(self.rng.integers(1, 5))
            ids = [int(i) for i in self.rng.integers(-1, n, size=s[0])]
            idx = f"tfc.constant({ids})" if self.chance(0.5) else str(ids)
            if r >= 2 and self.chance(0.3):  # ids computed at run time, of shape s[:-1]
                return (f"tfc.ops.scatter.unsorted_segment_sum({x}, tfc.cast(tfc.argmax({x}, axis=-1), tfc.int32) % {n}, "
                        f"{n})", (n, s[-1]))
            return f"tfc.ops.scatter.unsorted_segment_sum({x}, {idx}, {n})", (n,) + s[1:]
        if k == "gather_t":
            a = int(self.rng.integers(r))
            other = self.var(lambda t: len(t) >= 1 and t[0] <= s[a] and len(t) <= 2)
            if other is not None and self.chance(0.5):  # indices computed: an argmax
                y, t = other
                idx, ishape = f"tfc.argmax({y}, axis=0)", t[1:]
            else:
                ishape = self.pick([(2,), (1,), (2, 2), ()])
                vals = self.rng.integers(0, s[a], size=ishape)
                idx, ishape = f"tfc.constant({vals.tolist()})", tuple(ishape)
            shape = s[:a] + ishape + s[a + 1:]
            if _size(shape) > MAX_SIZE or len(shape) > 3:
                return x, s
            return f"tfc.gather({x}, {idx}, axis={a})", shape
        if k == "one_hot":
            a = int(self.rng.integers(r))
            depth = int(self.rng.integers(1, 5))
            rest = s[:a] + s[a + 1:]
            if len(rest) >= 3 or _size(rest) * depth > MAX_SIZE:
                return x, s
            on = self.pick(["", f", on_value={self.const()}, off_value=-1.0"])
            return f"tfc.one_hot(tfc.argmin({x}, axis={a}), {depth}{on}, dtype={dt})", rest + (depth,)
        if k == "split":
            a = int(self.rng.integers(r))
            if s[a] % 2 == 0 and self.chance(0.5):
                j = self.pick([0, 1])
                return f"tfc.split({x}, 2, axis={a})[{j}]", s[:a] + (s[a] // 2,) + s[a + 1:]
            if s[a] < 2:
                return x, s
            c = int(self.rng.integers(1, s[a]))
            sizes = [c, self.pick([s[a] - c, -1])]
            j = self.pick([0, 1])
            n = c if j == 0 else s[a] - c
            return f"tfc.split({x}, {sizes}, axis={a})[{j}]", s[:a] + (n,) + s[a + 1:]
        if k == "stack":
            a = int(self.rng.integers(-(r + 1), r + 1))
            other = self.var(lambda t: tuple(t) == s)
            y = other[0] if other and self.chance(0.6) else self.unary(x)
            shape = list(s)
            shape.insert(a % (r + 1), 2)
            if _size(shape) > MAX_SIZE:
                return x, s
            return f"tfc.stack([{x}, {y}], axis={a})", tuple(shape)
        if k == "pad":
            pads = [[self.pick([0, 0, 1, 2]), self.pick([0, 1])] for _ in s]
            shape = tuple(d + lo + hi for d, (lo, hi) in zip(s, pads))
            if _size(shape) > MAX_SIZE:
                return x, s
            cv = self.pick(["", f", constant_values={self.const()}"])
            return f"tfc.pad({x}, {pads}{cv})", shape
        # indexing: None (a new axis), negative steps, negative and tensor (0-d) indices
        if r == 0:
            return self.pick([(f"{x}[None]", (1,)), (f"{x}[()]", ()), (f"{x}[...]", ())])
        a = int(self.rng.integers(r))
        d = s[a]
        opts = [("None", None), ("::-1", d), ("::-2", (d + 1) // 2), ("-1", "drop"),
                ("tfc.constant(0)", "drop"), (f"{d - 1}::-1", d), ("None, ::-1", d)]
        if d > 1:
            opts += [("-2:", 2), ("1::-1", 2), (f"tfc.constant({d - 1}) - 1", "drop")]
        sl, n = self.pick(opts)
        key = ", ".join([":"] * a + [sl])
        if n is None:
            shape = s[:a] + (1,) + s[a:]
        elif n == "drop":
            shape = s[:a] + s[a + 1:]
        elif sl.startswith("None"):
            shape = s[:a] + (1, n) + s[a + 1:]
        else:
            shape = s[:a] + (n,) + s[a + 1:]
        if len(shape) > 3:
            return x, s
        return f"{x}[{key}]", shape

    def _count(self, x, s, a) -> str:
        """A traced int32 0-d tensor equal to ``s[a]`` when the program runs."""
        return f"(tfc.reduce_sum(tfc.ones_like({x}, dtype=tfc.int32)) // {_size(s) // s[a]})"

    def _run_time_fill(self, x, s) -> str:
        """``x`` times ones (or plus a fill) whose shape holds a traced count."""
        a = int(self.side.integers(len(s)))
        dims = ", ".join(self._count(x, s, a) if i == a else str(d) for i, d in enumerate(s))
        if self.side_chance(0.5):
            return f"({x} * tfc.ones([{dims}], dtype={self._fdt()}))"
        return f"({x} + tfc.fill([{dims}], tfc.cast({self.side_pick(['0.0', '-0.0', '1.5'])}, {self._fdt()})))"

    def _seeded_dropout(self, x, s, y, shape) -> str:
        """``y`` (of ``shape``) times a seeded dropout mask, its int64 seed a constant
        or computed from ``x`` (of ``s``), known only at run time."""
        seed = int(self.side.integers(100))
        key = f"tfc.constant({seed}, tfc.int64)" if self.side_chance(0.5) or 0 in s else \
            f"(tfc.cast({self._count(x, s, 0) if s else 'tfc.constant(1)'}, tfc.int64) + {seed})"
        rate = self.side_pick(["0.25", "0.5", "0.9"])
        mask = f"tfc.ops.random.seeded_dropout_mask(tfc.zeros({list(shape)}, dtype={self._fdt()}), {key}, {rate})"
        return f"({y} * {mask})"

    # -- the model ops (docs/ops.md): one entry per op in MODEL_OPS ---------------------

    def operand(self, x, s):
        """``x`` as a model op's operand: mostly as is, else a non-contiguous view
        (transposed, reversed, strided), an odd size (tiled by 3) or a zero-size
        slice, so that kernels meet strides, odd lengths and empty dimensions."""
        s = tuple(s)
        r = len(s)
        if not r or self.chance(0.5):
            return x, s
        k = self.pick(["transpose", "reverse", "stride", "odd", "empty"])
        a = int(self.rng.integers(r))
        if k == "transpose" and r >= 2:
            return f"tfc.transpose({x})", s[::-1]
        if k == "reverse":
            return f"{x}[{', '.join([':'] * a + ['::-1'])}]", s
        if k == "stride" and s[a] > 1:
            return f"{x}[{', '.join([':'] * a + ['::2'])}]", s[:a] + ((s[a] + 1) // 2,) + s[a + 1:]
        if k == "odd" and _size(s) * 3 <= MAX_SIZE:
            mult = [3 if i == a else 1 for i in range(r)]
            return f"tfc.tile({x}, {mult})", s[:a] + (3 * s[a],) + s[a + 1:]
        if k == "empty":
            return f"{x}[{', '.join([':'] * a + [':0'])}]", s[:a] + (0,) + s[a + 1:]
        return x, s

    def model_op(self, x, s):
        """One of MODEL_OPS that applies to an operand of ``x``'s (see ``operand``)."""
        x, s = self.operand(x, s)
        fits = [name for name, rank in MODEL_OPS.items() if len(s) >= rank]
        y, shape = getattr(self, "m_" + self.pick(fits))(x, tuple(s))
        if self.side_chance(0.08):
            y = self._seeded_dropout(x, tuple(s), y, shape)
        empty = [a for a, d in enumerate(shape) if d == 0]
        if empty:  # summed over its empty axes: the other ops' draws assume sizes >= 1
            red = self.pick(["reduce_sum", "reduce_mean"])
            y, shape = f"tfc.{red}({y}, axis={empty})", tuple(d for d in shape if d != 0)
        return y, shape

    def _axis(self, s) -> int:
        return int(self.rng.integers(-len(s), len(s)))

    def _fdt(self) -> str:
        return f"tfc.{self.dtype}"

    def m_gelu(self, x, s):
        return f"tfc.nn.gelu({x}{self.pick(['', ', approximate=True', ', approximate=False'])})", s

    def m_silu(self, x, s):
        return f"tfc.nn.silu({x}{self.pick(['', '', ', beta=1.5'])})", s

    def m_erf(self, x, s):
        return f"tfc.erf({x})", s

    def m_layer_norm(self, x, s):
        a = self._axis(s)
        eps = self.pick(["", ", epsilon=1e-5", ", epsilon=0.5"])
        other = self.var(lambda t: _bshape(s, t) == s)  # gamma and beta broadcast against x
        gb = ""
        if other is not None and self.chance(0.5):
            gb = f", gamma={other[0]}" + (f", beta={self.const()}" if self.chance(0.5) else "")
        axes = a if self.chance(0.7) else sorted({a % len(s), int(self.rng.integers(len(s)))})
        return f"tfc.nn.layer_norm({x}{gb}, axis={axes}{eps})", s

    def m_moments(self, x, s):
        axes = sorted({int(a) for a in self.rng.integers(0, len(s), size=int(self.rng.integers(1, len(s) + 1)))})
        keep = self.chance(0.4)
        j = self.pick([0, 1])
        shape = tuple(1 if i in axes else d for i, d in enumerate(s)) if keep else \
            tuple(d for i, d in enumerate(s) if i not in axes)
        kd = ", keepdims=True" if keep else ""
        return f"tfc.nn.moments({x}, axes={axes}{kd})[{j}]", shape

    def m_l2_normalize(self, x, s):
        axis = self.pick(["", f", axis={self._axis(s)}"] if s else [""])
        return f"tfc.nn.l2_normalize({x}{axis})", s

    def m_softmax_cross_entropy_with_logits(self, x, s):
        other = self.var(lambda t: tuple(t) == s)
        labels = f"tfc.nn.softmax({other[0] if other and self.chance(0.6) else self.unary(x)})"
        if self.chance(0.5):
            return f"tfc.nn.softmax_cross_entropy_with_logits({labels}, {x})", s[:-1]
        # labels along another axis: the softmax's is the last, so transpose both
        perm = list(range(len(s)))[::-1]
        a = int(self.rng.integers(len(s)))
        axis_in_t = len(s) - 1 - a
        shape = tuple(d for i, d in enumerate(s[::-1]) if i != axis_in_t)
        return (f"tfc.nn.softmax_cross_entropy_with_logits(tfc.transpose({labels}, {perm}), "
                f"tfc.transpose({x}, {perm}), axis={axis_in_t})"), shape

    def m_embedding_lookup(self, x, s):
        n = s[0]
        ishape = self.pick([(2,), (1,), (3,), (2, 2), ()])
        # (ids out of range raise eagerly, and compiled code may drop an unused op: the
        # generator's failing statements, whose results are returned, test that)
        if n == 0:
            ids, ishape = "tfc.zeros([0], tfc.int32)", (0,)
        elif self.ints and self.chance(0.4):
            kn, length = self.ints
            ids, ishape = f"{kn} % {n}", (length,)
        else:
            ids = f"tfc.constant({self.rng.integers(0, n, size=ishape).tolist()})"
        mn = self.pick(["", "", ", max_norm=1.0"]) if len(s) >= 2 else ""
        shape = tuple(ishape) + s[1:]
        if _size(shape) > MAX_SIZE or len(shape) > 3:
            return x, s
        return f"tfc.nn.embedding_lookup({x}, {ids}{mn})", shape

    def m_einsum(self, x, s):
        letters = "abc"[:len(s)]
        dims = dict(zip(letters, s))
        k = self.pick(["unary", "pair", "pair", "matmul", "ellipsis"])  # (a diagonal raises NotImplementedError)
        if k == "matmul" and len(s) == 2:
            other = self.var(lambda t: len(t) == 2 and t[0] == s[1])
            if other is not None:
                y, t = other
                out = self.pick(["ik", "ki", "i", "k", ""])
                d = {"i": s[0], "k": t[1]}
                return f'tfc.einsum("ij,jk->{out}", {x}, {y})', tuple(d[c] for c in out)
        if k == "ellipsis":
            other = self.var(lambda t: tuple(t) == (s[-1],))
            if other is not None and self.chance(0.5):
                return f'tfc.einsum("...z,z->...", {x}, {other[0]})', s[:-1]
            return f'tfc.einsum("...z->z...", {x})', (s[-1],) + s[:-1]
        out = "".join(self.rng.permutation(list(letters))[:int(self.rng.integers(0, len(s) + 1))])
        if k == "pair":
            other = self.var(lambda t: tuple(t) == s)
            y = other[0] if other else x
            return f'tfc.einsum("{letters},{letters}->{out}", {x}, {y})', tuple(dims[c] for c in out)
        return f'tfc.einsum("{letters}->{out}", {x})', tuple(dims[c] for c in out)

    def m_cumsum(self, x, s):
        flags = "".join(f", {f}=True" for f in ("exclusive", "reverse") if self.chance(0.4))
        return f"tfc.cumsum({x}, axis={self._axis(s)}{flags})", s

    def m_sort(self, x, s):
        d = self.pick(["", ', direction="DESCENDING"', ', direction="ASCENDING"'])
        return f"tfc.sort({x}, axis={self._axis(s)}{d})", s

    def m_argsort(self, x, s):
        d = self.pick(["", ', direction="DESCENDING"'])
        return f"tfc.cast(tfc.argsort({x}, axis={self._axis(s)}{d}), {self._fdt()})", s

    def m_top_k(self, x, s):
        k = int(self.rng.integers(0, s[-1] + 1))
        shape = s[:-1] + (k,)
        if self.chance(0.5):
            return f"tfc.top_k({x}, k={k})[0]", shape
        return f"tfc.cast(tfc.top_k({x}, k={k})[1], {self._fdt()})", shape

    def m_truncated_normal(self, x, s):
        seed = int(self.rng.integers(100))
        sd = self.pick(["", ", stddev=0.5", ", mean=1.0, stddev=2.0"])
        return f"({x} + tfc.random.truncated_normal({list(s)}{sd}, dtype={self._fdt()}, seed={seed}))", s

    def m_categorical(self, x, s):
        if s[-1] == 0:  # no classes: raises eagerly, and an unused draw may be dropped compiled
            return x, s
        if len(s) != 2:
            x, s = f"tfc.reshape({x}, [-1, {s[-1]}])" if s[-1] else f"tfc.reshape({x}, [1, 0])", \
                (_size(s) // s[-1] if s[-1] else 1, s[-1])
        n = int(self.rng.integers(1, 4))
        seed = int(self.rng.integers(100))
        if _size((s[0], n)) > MAX_SIZE:
            return x, s
        return f"tfc.cast(tfc.random.categorical({x}, {n}, seed={seed}), {self._fdt()})", (s[0], n)

    def m_shuffle(self, x, s):
        return f"tfc.random.shuffle({x}, seed={int(self.rng.integers(100))})", s

    def m_quantize(self, x, s):
        # int8 codes and back (float32 only); NaN as 0: its cast to int8 is undefined
        scale, zp = self.pick(["0.1", "0.05", "1.0"]), self.pick([0, 0, 3, -128])
        f = f"tfc.cast(tfc.where({x} == {x}, {x}, 0.0), tfc.float32)"
        if self.grad:  # quantize has no gradient
            f = f"tfc.stop_gradient({f})"
        q = f"tfc.ops.quant.quantize({f}, {scale}, {zp})"
        if self.chance(0.3):
            return f"tfc.cast({q}, {self._fdt()})", s
        return f"tfc.cast(tfc.ops.quant.dequantize({q}, {scale}, {zp}), {self._fdt()})", s

    def m_collective(self, x, s):
        # a world of size 1 (no launcher): each is the identity, gradients too
        forms = [f"tfc.distribute.all_reduce({x}, op={self.pick(['sum', 'mean', 'max', 'min'])!r})",
                 f"tfc.distribute.broadcast({x}, root=0)"]
        if s:
            forms.append(f"tfc.distribute.all_gather({x})")
        return self.pick(forms), s

    def special(self, x, s):
        """Shape-preserving: stop_gradient, custom gradients, where, clip."""
        k = self.pick(["stop", "custom", "custom", "where", "clip", "cg_mul"])
        if k == "stop":
            return f"tfc.stop_gradient({x})", s
        if k == "custom":
            return f"{self.pick(CUSTOM)}({x})", s
        if k == "where":
            other = self.var(lambda t: tuple(t) == tuple(s))
            y = other[0] if other else self.const()
            return f"tfc.where({x} > {self.const()}, {x}, {y})", s
        if k == "cg_mul":
            other = self.var(lambda t: tuple(t) == tuple(s))
            if other:
                return f"cg_mul({x}, {other[0]})", s
        return f"tfc.clip_by_value({x}, -2.0, 2.0)", s

    def same_shape(self, target):
        """An expression whose shape is exactly ``target``'s, using ``target``."""
        s = self.env[target]
        k = self.pick(["unary", "binary", "binary", "special", "special", "softmax_or_reduce"])
        if k == "unary":
            return self.unary(target)
        if k == "binary":
            return self.binary(target, s, keep_shape=True)[0]
        if k == "special":
            return self.special(target, s)[0]
        if s:
            if self.chance(0.5):
                return f"tfc.nn.softmax({target})"
            return f"({target} - tfc.reduce_mean({target}, axis={len(s) - 1}, keepdims=True))"
        return f"({target} * tfc.reduce_sum({target}))"

    def pred(self) -> str:
        n, _ = self.var()
        red = self.pick(["reduce_sum", "reduce_mean", "reduce_max", "reduce_min"])
        return f"tfc.{red}({n}) {self.pick(['>', '<'])} {self.const()}"

    # -- statements: each returns a list of source lines -------------------------------

    def statement(self, depth=0):
        kinds = ["assign"] * 4
        if depth < 2:
            kinds += ["if", "if", "for", "cond", "while_loop"]
            # a second-order gradient through a loop of unknown trip count is a
            # documented limit (docs/user-guide.md): nested tapes get counted loops only
            if not self.second_order:
                kinds.append("while")
        k = self.pick(kinds)
        if k in ("if", "while", "for") and not self._rebindable():
            k = "assign"
        lines = getattr(self, "st_" + k)(depth)
        if depth == 0 and self.side_chance(0.04):
            lines += self.st_rows()
        if depth == 0 and self.side_chance(0.04):
            lines += self.st_image()
        return lines

    def st_image(self):
        """A variable of rank 2 or 3 as a one-image NHWC batch through conv2d (stride
        1 or 2, dilation 2, SAME or VALID, the filters a function of the input or not)
        or a max/avg pool (windows that tile the image among them) (side stream)."""
        names = [m for m, s in self.env.items() if len(s) in (2, 3) and 0 not in s]
        if not names:
            return []
        x = self.side_pick(names)
        s = self.env[x]
        h, w, c = s if len(s) == 3 else s + (1,)
        dt = self._fdt()
        op = self.side_pick(["conv2d", "conv2d", "max_pool2d", "avg_pool2d"])
        pad = self.side_pick(["SAME", "VALID"])
        kh, kw = int(self.side.integers(1, min(h, 3) + 1)), int(self.side.integers(1, min(w, 3) + 1))
        stride = self.side_pick([1, 2])
        dil = 2 if op == "conv2d" and stride == 1 and self.side_chance(0.3) else 1
        reach = ((kh - 1) * dil + 1, (kw - 1) * dil + 1)
        if pad == "VALID" and (reach[0] > h or reach[1] > w):
            dil, reach = 1, (kh, kw)
        co = int(self.side.integers(1, 3)) if op == "conv2d" else c
        oh, ow = ((-(-h // stride), -(-w // stride)) if pad == "SAME" else
                  ((h - reach[0]) // stride + 1, (w - reach[1]) // stride + 1))
        if oh * ow * co > MAX_SIZE:
            return []
        image = f"tfc.reshape({x}, [1, {h}, {w}, {c}])"
        if op == "conv2d":
            filt = f"(tfc.reshape(tfc.cast(tfc.range({kh * kw * c * co}), {dt}), [{kh}, {kw}, {c}, {co}]) * 0.25 - 1.0)"
            if self.side_chance(0.5):  # the filters' gradient too
                filt = f"({filt} * tfc.reduce_mean({x}))"
            dl = f", dilations={dil}" if dil > 1 else ""
            call = f"tfc.nn.conv2d({image}, {filt}, strides={stride}, padding={pad!r}{dl})"
        else:
            if self.side_chance(0.5) and h % kh == 0 and w % kw == 0:  # windows that tile the image
                stride, pad, oh, ow = [kh, kw], "VALID", h // kh, w // kw
            call = f"tfc.nn.{op}({image}, [{kh}, {kw}], {stride}, padding={pad!r})"
        name = self.fresh()
        self.env[name] = (oh, ow, co)
        return [f"{name} = tfc.reshape({call}, [{oh}, {ow}, {co}])"]

    def st_rows(self):
        """Rows written by a tensor loop (side stream): a TensorArray (fixed size with
        its element shape, or growing from empty) or a list of a declared element type
        appended to, then stacked. With gradients the array has a fixed size: the
        gradient of a growing one's contents is not implemented in compiled code."""
        n = int(self.side.integers(0, 4))
        names = [m for m, s in self.env.items() if len(s) <= 2 and _size(s) * max(n, 1) <= MAX_SIZE]
        if not names:
            return []
        y = self.side_pick(names)
        s = self.env[y]
        self.loops += 1
        j, a, dt = f"j{self.loops}", f"rows{self.loops}", self._fdt()
        row = self.side_pick([f"({y} * tfc.cast({j} + 1, {dt}))", f"tfc.sin({y} + tfc.cast({j}, {dt}))", y])
        name = self.fresh()
        kind = self.side_pick(["fixed", "fixed"] if self.grad else ["fixed", "growing", "list"])
        if kind == "list":
            lines = [f"{a} = []", f"tfc.autograph.set_element_type({a}, {dt}, shape={tuple(s)})",
                     f"for {j} in tfc.range({n}):", f"    {a}.append({row})"]
            stacked = f"tfc.autograph.stack({a})"
        else:
            make = f"size={n}, element_shape={tuple(s)}" if kind == "fixed" else "size=0, dynamic_size=True"
            lines = [f"{a} = tfc.TensorArray({dt}, {make})", f"for {j} in tfc.range({n}):",
                     f"    {a} = {a}.write({j}, {row})"]
            stacked = f"{a}.stack()"
        if n == 0:  # no rows: summed over them (the other draws assume sizes >= 1)
            self.env[name] = tuple(s)
            return lines + [f"{name} = tfc.reduce_sum({stacked}, axis=0)"]
        self.env[name] = (n,) + tuple(s)
        return lines + [f"{name} = {stacked}"]

    def st_assign(self, depth):
        src, s = self.expr()
        if _size(s) > MAX_SIZE or len(s) > 3:
            src, s = f"tfc.reduce_sum({src})", ()
        name = self.fresh()
        self.env[name] = tuple(s)
        return [f"{name} = {src}"]

    def _updates(self, depth, targets):
        """Lines reassigning each of ``targets`` with its own shape (maybe nested)."""
        lines = []
        for t in targets:
            if depth < 1 and self.chance(0.25):
                inner = self.statement(depth + 1)
                lines += inner
            lines.append(f"{t} = {self.same_shape(t)}")
        return lines

    def _rebindable(self):
        # with gradients the inputs keep their names: the tape's sources are the inputs
        # (a name rebound by a loop that runs zero times is one tensor eagerly and two
        # compiled, so a gradient with respect to it differs, in TensorFlow too)
        return [n for n in self.env if not (self.grad and n.startswith("x"))]

    def _targets(self):
        names = self._rebindable()
        k = min(len(names), self.pick([1, 1, 2]))
        return [names[i] for i in self.rng.choice(len(names), size=k, replace=False)]

    def _scoped(self, depth, targets):
        """Updates of ``targets`` in a nested scope: names made there stay there."""
        saved = dict(self.env)
        lines = self._updates(depth, targets)
        self.env = saved
        return lines

    def st_if(self, depth):
        targets = self._targets()
        pred = self.pred()
        then = self._scoped(depth, targets)
        lines = [f"if {pred}:"] + ["    " + line for line in then]
        if self.chance(0.75):
            other = self._scoped(depth, targets)
            lines += ["else:"] + ["    " + line for line in other]
        return lines

    def st_while(self, depth):
        targets = self._targets()
        self.loops += 1
        i = f"i{self.loops}"
        n = self.pick([0, 0, 1, 2, 3])
        body = self._scoped(depth, targets)
        lines = [f"{i} = tfc.constant(0)", f"while {i} < {n}:"]
        lines += ["    " + line for line in body] + [f"    {i} = {i} + 1"]
        return lines

    def st_for(self, depth):
        targets = self._targets()
        self.loops += 1
        j = f"j{self.loops}"
        n = self.pick([0, 1, 2, 3])
        body = self._scoped(depth, targets)
        t = targets[0]
        if self.chance(0.3):
            body.append(f"{t} = {t} + tfc.cast({j}, {t}.dtype) * 0.5")
        elif self.env[t] and self.chance(0.3):  # a 0-d tensor index: the loop's counter
            body.append(f"{t} = {t} + {t}[{j} % {self.env[t][0]}]")
        return [f"for {j} in tfc.range({n}):"] + ["    " + line for line in body]

    def st_cond(self, depth):
        t = self.pick(list(self.env))
        pred = self.pred()
        a, b = self.same_shape(t), self.same_shape(t)
        name = self.fresh()
        self.env[name] = self.env[t]
        return [f"{name} = tfc.cond({pred}, lambda: {a}, lambda: {b})"]

    def st_while_loop(self, depth):
        t = self.pick(list(self.env))
        n = self.pick([0, 1, 2, 3])
        saved = dict(self.env)
        self.env["a"] = self.env[t]
        body = self.same_shape("a")
        self.env = saved
        name = self.fresh()
        self.env[name] = self.env[t]
        most = f", maximum_iterations={n}" if self.second_order or self.chance(0.3) else ""
        return [f"_, {name} = tfc.while_loop(lambda i, a: i < {n}, lambda i, a: (i + 1, {body}), "
                f"[tfc.constant(0), {t}]{most})"]


def _shapes(rng, n):
    """``n`` input shapes, most of them broadcast-compatible with a common one."""
    rank = int(rng.integers(0, 4))
    base = tuple(int(d) for d in rng.choice([1, 2, 3, 4], size=rank))
    shapes = []
    for _ in range(n):
        if rng.random() < 0.2:
            r = int(rng.integers(0, 4))
            shapes.append(tuple(int(d) for d in rng.choice([1, 2, 3], size=r)))
            continue
        s = [1 if rng.random() < 0.3 else d for d in base]
        drop = int(rng.integers(0, len(s) + 1)) if rng.random() < 0.3 else 0
        shapes.append(tuple(s[drop:]))
    return shapes


def _values(rng, shape, dtype):
    v = rng.standard_normal(shape).round(2).astype(dtype)
    if v.size and rng.random() < 0.2:
        flat = v.reshape(-1)
        k = int(rng.integers(v.size))
        flat[k] = rng.choice([np.inf, -np.inf, np.nan, 0.0, 0.0])
    return np.asarray(v, dtype=dtype)


def generate(seed: int, index: int, grad: bool = False) -> Program:
    """Program ``index`` of the campaign ``seed`` (with gradients when ``grad``)."""
    rng = np.random.default_rng([seed, index, int(grad)])
    dtype = "float32" if rng.random() < 0.7 else "float64"
    n = int(rng.integers(1, 4))
    shapes = _shapes(rng, n)
    values = [_values(rng, s, dtype) for s in shapes]
    g = None
    if grad:
        sources = sorted({int(i) for i in rng.integers(0, n, size=int(rng.integers(1, n + 1)))})
        g = {"sources": sources, "persistent": bool(rng.random() < 0.3),
             "second_order": bool(rng.random() < 0.2), "unconnected": bool(rng.random() < 0.15)}
    gen = _Gen(rng, dtype, grad, second_order=bool(g and g["second_order"]),
               side=np.random.default_rng([seed, index, int(grad), 1]))
    for i, s in enumerate(shapes):
        gen.env[f"x{i}"] = s
    if not grad and rng.random() < 0.3:  # an int32 input (outside env: not a float variable)
        length = int(rng.integers(1, 6))
        gen.ints = (f"x{n}", length)
        shapes.append((length,))
        values.append(rng.integers(-2, 6, size=length).astype(np.int32))
    blocks = [gen.statement() for _ in range(int(rng.integers(2, 7)))]
    made = [n for n in gen.env if n.startswith("v")]
    outputs = made[-int(rng.integers(1, 3)):] if made else ["x0"]
    if rng.random() < 0.3:
        outputs = outputs + [f"x{int(rng.integers(n))}"]
    none_dims = [[bool(rng.random() < 0.8) for _ in s] for s in shapes]
    if rng.random() < 0.05:
        # a statement that fails eagerly (at run time, with None dimensions): every
        # variant must fail too; its result is returned, so no variant may drop it
        blocks.insert(int(rng.integers(len(blocks) + 1)), [_invalid(rng, shapes)])
        outputs = outputs + ["bad"]
    return Program(seed, index, dtype, shapes, values, blocks, outputs, g, none_dims)


def _invalid(rng, shapes) -> str:
    i = int(rng.integers(len(shapes)))
    s = shapes[i]
    kinds = ["reshape"] + (["gather"] if s else []) + (["broadcast"] if s and s[-1] > 1 else [])
    k = kinds[int(rng.integers(len(kinds)))]
    if k == "gather":
        a = int(rng.integers(len(s)))
        return f"bad = tfc.gather(x{i}, [{s[a] + int(rng.integers(0, 3))}], axis={a})"
    if k == "broadcast":
        return f"bad = x{i} + tfc.ones([{s[-1] + 1}])"
    return f"bad = tfc.reshape(x{i}, [{math.prod(s) + 1}])"
