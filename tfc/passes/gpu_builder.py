"""The kernel builder shared by tfc-lower-gpu (tfc/passes/lower_gpu.py) and
the GPU library kernels (tfc/passes/gpu_library.py, gpu_nn_library.py): a
``gpu.func`` built op by op with constants and thread/block ids made once at
its entry, integer helpers on the kernel's index type, tgpu loads, stores and
shared arrays, ``scf.for`` / ``scf.if`` from Python callbacks; and the
lowering's common limits and error."""
from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, gpu, scf
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, FloatAttr, IntegerAttr, IntegerType, StringAttr, i1
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from tfc.dialects import gpu as G

BLOCK = 256            # threads per block of elementwise and reduction kernels
MAX_BLOCKS = 132 * 8   # grid cap (132 SMs x 8 resident blocks); larger work is grid-strided
I32_MAX = (1 << 31) - 1


def unsupported(what: str) -> NotImplementedError:
    """The error of everything tfc-lower-gpu has no kernel for (a NotImplementedError naming it)."""
    return NotImplementedError(f"target cuda: no GPU kernel for {what} yet")


# scalar kernel arguments PTX has no parameter type for: widened on the host (exactly),
# narrowed back in the kernel (KernelBuilder.param)
WIDENED = {Float16Type(): Float32Type(), IntegerType(8): IntegerType(32)}


def scalar_param_type(t):
    """The kernel parameter type of a scalar launch argument of type ``t``: ``WIDENED``, then
    ``tgpu.launch``'s rule (i1 travels as i32)."""
    try:
        return G.param_type(WIDENED.get(t, t))
    except VerifyException:
        raise unsupported(f"a {t} scalar kernel argument (parameters: i1, i32, i64, f32, f64)") from None


def widened(a):
    """The host op that widens scalar ``a`` of a ``WIDENED`` type to its parameter type
    (exactly: ``KernelBuilder.param`` narrows it back)."""
    wide = WIDENED[a.type]
    return arith.ExtFOp(a, wide) if isinstance(wide, Float32Type) else arith.ExtSIOp(a, wide)


def prod(xs) -> int:
    """The product of static sizes (1 for none), in Python ints."""
    return int(np.prod([int(x) for x in xs], dtype=np.int64)) if len(xs) else 1


class KernelBuilder:
    """Builds one ``gpu.func`` kernel: ops go into the innermost open block;
    constants and thread/block ids are made once, at the entry."""

    def __init__(self, name: str, param_types, kind: str, index_type, block=(BLOCK, 1, 1)):
        self.func = gpu.FuncOp(name, (list(param_types), []), kernel=True, known_block_size=list(block))
        self.func.attributes["tgpu.kind"] = StringAttr(kind)
        self.func.attributes["tgpu.index"] = StringAttr(str(index_type))
        self.entry = self.func.body.block
        self.args = list(self.entry.args)
        self.blocks = [self.entry]
        self.it = index_type
        self.block_size = block
        self._consts: dict = {}
        self._known: dict = {}
        self._head: list = []  # entry ops made once (constants, ids), kept first

    # -- emission --
    def emit(self, op):
        self.blocks[-1].add_op(op)
        return op.results[0] if len(op.results) == 1 else op

    def _hoist(self, op):
        """Put ``op`` (no operands from the body) at the start of the entry block."""
        if self._head:
            self.entry.insert_op_after(op, self._head[-1])
        elif self.entry.first_op is not None:
            self.entry.insert_op_before(op, self.entry.first_op)
        else:
            self.entry.add_op(op)
        self._head.append(op)
        return op.results[0]

    def c(self, value, t):
        """A constant of type ``t`` (made once)."""
        if isinstance(t, (Float16Type, Float32Type, Float64Type)):
            value = float(value)
            key = (str(t), "nan" if value != value else value.hex() if abs(value) != float("inf") else str(value))
            attr = FloatAttr(value, t)
        else:
            value = int(value)
            if isinstance(t, IntegerType):
                w = t.width.data
                value = ((value + (1 << (w - 1))) % (1 << w)) - (1 << (w - 1)) if w > 1 else value & 1
            key = (str(t), value)
            attr = IntegerAttr(value, t)
        got = self._consts.get(key)
        if got is None:
            got = self._consts[key] = self._hoist(arith.ConstantOp(attr))
            self._known[got] = value
        return got

    def known(self, v):
        """The value of a constant made by ``c``, else None."""
        return self._known.get(v)

    def i(self, value):
        return self.c(value, self.it)

    def special(self, cls, dim="x"):
        key = (cls.__name__, dim)
        got = self._consts.get(key)
        if got is None:
            d = gpu.DimensionAttr(getattr(gpu.DimensionEnum, dim.upper()))
            raw = self._hoist(cls(d))
            got = self._consts[key] = self._hoist(arith.IndexCastOp(raw, self.it))
        return got

    def tid(self):
        return self.special(gpu.ThreadIdOp)

    def bid(self, dim="x"):
        return self.special(gpu.BlockIdOp, dim)

    def gdim(self, dim="x"):
        return self.special(gpu.GridDimOp, dim)

    # -- integer helpers (on the kernel's index type unless given values of another) --
    def add(self, a, b):
        if self.known(b) == 0:
            return a
        if self.known(a) == 0:
            return b
        return self.emit(arith.AddiOp(a, b))

    def sub(self, a, b):
        return self.emit(arith.SubiOp(a, b))

    def mul(self, a, b):
        if self.known(b) == 1:
            return a
        if self.known(a) == 1:
            return b
        return self.emit(arith.MuliOp(a, b))

    def divu(self, a, b):
        return self.emit(arith.DivUIOp(a, b))

    def remu(self, a, b):
        return self.emit(arith.RemUIOp(a, b))

    def digits(self, q, shape):
        """Row-major digits of flat index ``q`` over ``shape`` (the first unreduced; none for rank 0)."""
        out = []
        for d in range(len(shape) - 1, 0, -1):
            out.append(self.remu(q, self.i(shape[d])))
            q = self.divu(q, self.i(shape[d]))
        return [q] + out[::-1] if shape else []

    def cmpi(self, pred: str, a, b):
        return self.emit(arith.CmpiOp(a, b, pred))

    def select(self, c, a, b):
        return self.emit(arith.SelectOp(c, a, b))

    def cast_int(self, v, t, signed=True):
        """``v`` as integer type ``t`` (sign- or zero-extended, or truncated)."""
        if v.type == t:
            return v
        wv, wt = v.type.width.data, t.width.data
        if wt < wv:
            return self.emit(arith.TruncIOp(v, t))
        return self.emit(arith.ExtSIOp(v, t) if signed else arith.ExtUIOp(v, t))

    def dot(self, terms):
        """sum(a * s) over (value, static int) pairs, in the kernel's index type."""
        acc = None
        for v, s in terms:
            if s == 0:
                continue
            term = v if s == 1 else self.mul(v, self.i(s))
            acc = term if acc is None else self.add(acc, term)
        return self.i(0) if acc is None else acc

    # -- memory --
    def load(self, ptr, index, nc=False, width=1):
        op = self.emit(G.LoadOp(ptr, index, width, nc))
        return [op] if width == 1 else list(op.results)

    def store(self, values, ptr, index):
        self.emit(G.StoreOp(list(values), ptr, index))

    def shared(self, t, size):
        return self._hoist(G.SharedOp(t, size))

    # -- structured control flow --
    def for_(self, lb, ub, step, fn, inits=()):
        """scf.for lb..ub step: ``fn(iv, *carried)`` builds the body and returns
        the carried values' next values; returns the loop's results."""
        block = Block(arg_types=[lb.type] + [v.type for v in inits])
        self.blocks.append(block)
        nxt = fn(block.args[0], *block.args[1:]) or []
        self.emit(scf.YieldOp(*nxt))
        self.blocks.pop()
        op = scf.ForOp(lb, ub, step, list(inits), Region(block))
        self.blocks[-1].add_op(op)
        return list(op.results)

    def if_(self, cond, then_fn, else_fn=None, types=()):
        """scf.if: each branch builder returns the values it yields (``types``)."""
        def region(fn):
            block = Block()
            self.blocks.append(block)
            vals = fn() or []
            self.emit(scf.YieldOp(*vals))
            self.blocks.pop()
            return Region(block)

        if types and else_fn is None:
            raise ValueError("an scf.if with results needs both branches")
        op = scf.IfOp(cond, list(types), region(then_fn), region(else_fn) if else_fn is not None else Region())
        self.blocks[-1].add_op(op)
        return list(op.results)

    def finish(self):
        self.emit(gpu.ReturnOp([]))
        return self.func

    def param(self, a):
        """The kernel value of a scalar parameter (i1 and i8 travel as i32,
        f16 as f32: narrowed back here, exactly)."""
        v = self.args[a.param]
        if a.elt in (i1, IntegerType(8)) and v.type != a.elt:
            return self.emit(arith.TruncIOp(v, a.elt))
        if a.elt == Float16Type() and v.type != a.elt:
            return self.emit(arith.TruncFOp(v, a.elt))
        return v


__all__ = ["BLOCK", "I32_MAX", "MAX_BLOCKS", "WIDENED", "KernelBuilder", "prod", "scalar_param_type", "unsupported",
           "widened"]
