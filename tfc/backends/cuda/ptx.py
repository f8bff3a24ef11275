"""The PTX printer: an L4 module (docs/gpu.md, docs/ir-gpu-dialect.md) as one
PTX text.

``to_ptx(module)`` prints the ``gpu.module @kernels`` of a ``builtin.module``
(or a ``gpu.module`` itself) as ``.version 8.0 / .target sm_80 /
.address_size 64``, one ``.visible .entry`` per ``gpu.func ... kernel``
(``.reqntid`` from ``known_block_size``). A thin printer: one SSA value, one
typed virtual register (``.pred %p``, ``.u32 %r``, ``.u64 %rd``, ``.f32 %f``,
``.f64 %fd``, ``.b16 %h``), declared with its real type so ptxas type-checks
what is printed; ptxas allocates the real registers.

- Pointers: a global pointer parameter is converted once with
  ``cvta.to.global.u64``; an element address is ``base + index * size``
  (``mul.wide.s32`` for an i32 index, ``shl.b64`` for i64). A ``tgpu.shared``
  array is a ``.shared .align 16 .b8`` symbol, its address a 32-bit
  ``mov.u32 %r, sym``.
- Values in registers: i1 in ``.pred``, i8 sign-extended in ``.u32``, i32 in
  ``.u32``, i64 and index in ``.u64``, f16 in ``.b16``; i1 and i8 are one byte
  in memory.
- Control flow: ``scf.for`` / ``scf.if`` (with results) become labels and
  (predicated) branches; no op here creates a barrier (where barriers go is the
  lowering's job).
- Arithmetic is exact where PTX has the operation: ``.rn`` float arithmetic
  (ptxas never contracts ``mul.rn`` + ``add.rn`` into an FMA), ``maximumf`` /
  ``minimumf`` and ``fptosi`` as numpy computes them (NaN propagation, the
  signed zero of equal operands; x86's lowest integer for NaN and overflow),
  integer division and remainder as arith defines them. Float32
  transcendental functions are sequences of exact operations and
  ``ex2.approx`` (their errors: docs/ir-gpu-dialect.md). Never ``.ftz``.
  Anything else raises NotImplementedError naming the op.

Only the instructions of ``PTX_SUBSET`` are ever printed (an instruction
outside it is a printer bug and raises): the simulator
(tfc/backends/cuda/simulator.py) runs exactly that subset.

``python -m tfc.backends.cuda.ptx FILE.mlir`` prints the PTX of an L4 file
(the lit tests' ``%tfc-ptx``); ``--subset`` prints ``PTX_SUBSET``.
"""
from __future__ import annotations

import struct

# -- the subset -----------------------------------------------------------------------------
# Every instruction the printer may emit, with all its modifiers, as printed
# (operands aside). The simulator runs these and refuses anything else.

_FT = ("f32", "f64")
_IT = ("s32", "u32", "s64", "u64")
_MEM_T = ("f32", "f64", "u32", "u64", "s8", "u8", "b16")
_CMP_F = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


def _mem_ops():
    out = []
    for t in ("u32", "u64", "f32", "f64"):
        out.append(f"ld.param.{t}")
    for t in _MEM_T:
        for v in ("", ".v2", ".v4"):
            if v == ".v4" and t in ("f64", "u64"):
                continue  # 32 bytes: sm_100 only
            out += [f"ld.global{v}.{t}", f"ld.global.nc{v}.{t}", f"st.global{v}.{t}",
                    f"ld.shared{v}.{t}", f"st.shared{v}.{t}"]
    return out


PTX_SUBSET = frozenset([
    *_mem_ops(),
    "cvta.to.global.u64",
    # moves (registers, immediates, special registers, shared symbols, bit casts)
    "mov.u32", "mov.u64", "mov.f32", "mov.f64", "mov.b16", "mov.b32", "mov.b64",
    # integer arithmetic
    "add.s32", "add.s64", "add.u32", "add.u64", "sub.s32", "sub.s64",
    *(f"{op}.{t}" for op in ("div", "rem", "min", "max") for t in _IT),
    "mul.lo.s32", "mul.lo.s64", "mul.wide.s32", "mad.lo.s32",
    # bitwise, shifts
    *(f"{op}.{t}" for op in ("and", "or", "xor") for t in ("pred", "b32", "b64")), "not.pred",
    "shl.b32", "shl.b64", "shr.s32", "shr.u32", "shr.s64", "shr.u64",
    # float arithmetic (round to nearest even: exact, never contracted)
    *(f"{op}.rn.{t}" for op in ("add", "sub", "mul", "div", "fma") for t in _FT),
    *(f"{op}.{t}" for op in ("neg", "abs", "min", "max", "copysign") for t in _FT),
    "sqrt.rn.f32", "sqrt.rn.f64", "rcp.rn.f32", "rcp.rn.f64",
    "ex2.approx.f32",
    # comparisons, selection
    *(f"setp.{c}.{t}" for c in ("eq", "ne") for t in ("s32", "s64")), "setp.ne.u32", "setp.ne.u64",
    *(f"setp.{c}.{t}" for c in ("lt", "le", "gt", "ge") for t in _IT),
    *(f"setp.{c}.{t}" for c in _CMP_F for t in _FT),
    *(f"selp.{t}" for t in ("b16", "b32", "b64", "f32", "f64")),
    "testp.notanumber.f32", "testp.notanumber.f64",
    # conversions
    *(f"cvt.rn.{f}.{i}" for f in _FT for i in _IT),
    *(f"cvt.rzi.{i}.{f}" for f in _FT for i in _IT),
    *(f"cvt.{r}.{t}.{t}" for r in ("rni", "rmi", "rpi", "rzi") for t in _FT),
    "cvt.f64.f32", "cvt.rn.f32.f64", "cvt.f32.f16", "cvt.f64.f16", "cvt.rn.f16.f32", "cvt.rn.f16.f64",
    "cvt.u32.u64", "cvt.s64.s32", "cvt.u64.u32", "cvt.s32.s8", "cvt.u32.u8",
    # control flow, synchronization, warps, atomics
    "bra", "bra.uni", "ret", "bar.sync",
    "shfl.sync.down.b32", "shfl.sync.up.b32", "shfl.sync.bfly.b32", "shfl.sync.idx.b32",
    "red.global.add.f32", "red.global.add.u32", "red.global.add.u64", "red.global.add.f64",
    "atom.global.add.f32", "atom.global.add.u32", "atom.global.add.u64", "atom.global.add.f64",
    "abs.s32", "abs.s64",
    # tensor cores (tgpu.mma: float16 fragments packed in pairs by mov.b32 {lo, hi}; int8 codes
    # four to a .u32), tgpu.ldmatrix (its .b32 registers unpacked by mov.b32 {lo, hi}, %r)
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
    *(f"ldmatrix.sync.aligned.m8n8.x{n}{t}.shared.b16" for n in (1, 2, 4) for t in ("", ".trans")),
    # tgpu.cp_async (16 bytes global to shared, zero-filled past n) and tgpu.cp_async_wait
    "cp.async.cg.shared.global", "cp.async.wait_all",
    # int8 dot products (tgpu.dp4a: four signed bytes per .u32 operand)
    "dp4a.s32.s32",
])

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"

# register classes: prefix and declared type
# "hh": two float16 values packed in a .b32 (mma operands: ptxas refuses .u32 registers there)
_CLASSES = {"p": "pred", "r": "u32", "rd": "u64", "f": "f32", "fd": "f64", "h": "b16", "hh": "b32"}


def f32_hex(x: float) -> str:
    """PTX's exact float32 literal (``0f3F800000``)."""
    return "0f%08X" % struct.unpack("<I", struct.pack("<f", x))[0]


def f64_hex(x: float) -> str:
    return "0d%016X" % struct.unpack("<Q", struct.pack("<d", x))[0]


class _Kernel:
    """The PTX of one ``gpu.func``: virtual registers, labels, instructions."""

    def __init__(self, func):
        self.func = func
        self.name = func.sym_name.data
        self.counts = {k: 0 for k in _CLASSES}
        self.lines: list[str] = []
        self.vals = {}       # SSAValue -> register
        self.u32_of = {}     # index SSAValue of a gpu id -> its 32-bit register
        self.pairs = {}      # (lo, hi) float16 SSAValues an ldmatrix unpacked -> their .b32 register
        self.shared: list[str] = []
        self.labels = 0

    # -- emission helpers -------------------------------------------------------------
    def reg(self, cls: str) -> str:
        self.counts[cls] += 1
        return f"%{cls}{self.counts[cls]}"

    def label(self) -> str:
        self.labels += 1
        return f"$L_{self.name}_{self.labels}"

    def i(self, opcode: str, *operands, pred: str | None = None):
        if opcode not in PTX_SUBSET:
            raise AssertionError(f"PTX printer bug: {opcode} is not in PTX_SUBSET")
        guard = f"@{pred} " if pred else ""
        self.lines.append(f"\t{guard}{opcode}" + (" " + ", ".join(operands) if operands else "") + ";")

    def put(self, label: str):
        self.lines.append(f"{label}:")

    def fail(self, op, what: str):
        raise NotImplementedError(f"PTX printer: {op.name} {what} (kernel @{self.name})")

    def refuse_unsigned(self, t) -> None:
        """uint8 (``ui8``) needs ``ld.u8`` (zero-extended registers) and the unsigned
        instruction forms throughout; until then it is refused, never run as int8."""
        from xdsl.dialects.builtin import IntegerType, Signedness
        if isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED:
            raise NotImplementedError(f"PTX printer: {t} (tfc.uint8) values in kernel @{self.name}: the GPU backend "
                                      "has no uint8 yet (it needs ld/st.u8 zero-extended into .u32 and the unsigned "
                                      "forms of compares, division, max/min, shifts and cvt); run uint8 on the CPU")

    # -- types --------------------------------------------------------------------------
    def cls_of(self, t) -> str:
        from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IndexType, IntegerType

        from tfc.dialects.gpu import PtrType
        if isinstance(t, PtrType):
            return "r" if t.is_shared else "rd"
        if isinstance(t, IndexType):
            return "rd"
        if isinstance(t, IntegerType):
            self.refuse_unsigned(t)
            w = t.width.data
            if w == 1:
                return "p"
            if w in (8, 32):
                return "r"
            if w == 64:
                return "rd"
        if isinstance(t, Float32Type):
            return "f"
        if isinstance(t, Float64Type):
            return "fd"
        if isinstance(t, Float16Type):
            return "h"
        raise NotImplementedError(f"PTX printer: no register class for {t} (kernel @{self.name})")

    def new(self, v) -> str:
        r = self.reg(self.cls_of(v.type))
        self.vals[v] = r
        return r

    def get(self, v) -> str:
        return self.vals[v]

    # -- the kernel ---------------------------------------------------------------------
    def emit(self) -> str:
        from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType

        from tfc.dialects.gpu import PtrType
        f = self.func
        if f.kernel is None:
            raise NotImplementedError(f"PTX printer: gpu.func @{self.name} is not a kernel (device functions are "
                                      "not supported)")
        if f.function_type.outputs.data:
            raise NotImplementedError(f"PTX printer: kernel @{self.name} returns values")
        params = []
        block = f.body.blocks.first
        for k, arg in enumerate(block.args):
            t = arg.type
            pname = f"{self.name}_param_{k}"
            if isinstance(t, PtrType):
                if t.is_shared:
                    raise NotImplementedError(f"PTX printer: kernel @{self.name} takes a shared pointer parameter")
                params.append(f".param .u64 {pname}")
                raw = self.reg("rd")
                self.i("ld.param.u64", raw, f"[{pname}]")
                g = self.reg("rd")
                self.i("cvta.to.global.u64", g, raw)
                self.vals[arg] = g
            elif t in (IntegerType(32), IntegerType(64), Float32Type(), Float64Type()):
                ptype = {32: "u32", 64: "u64"}.get(getattr(t, "width", None) and t.width.data, None) \
                    if isinstance(t, IntegerType) else ("f32" if t == Float32Type() else "f64")
                params.append(f".param .{ptype} {pname}")
                self.i(f"ld.param.{ptype}", self.new(arg), f"[{pname}]")
            else:
                raise NotImplementedError(f"PTX printer: kernel @{self.name} parameter {k} of type {t} (pointers, "
                                          "i32, i64, f32, f64 only)")
        if len(f.body.blocks) != 1:
            raise NotImplementedError(f"PTX printer: kernel @{self.name} has several blocks (use scf)")
        self.block(block)
        head = [f".visible .entry {self.name}(" + ", ".join(params) + ")"]
        kb = f.known_block_size
        if kb is not None:
            head.append(".reqntid " + ", ".join(str(int(x)) for x in kb.get_values()))
        decl = [f"\t.reg .{_CLASSES[c]} %{c}<{n + 1}>;" for c, n in self.counts.items() if n]
        return "\n".join(head + ["{"] + decl + self.shared + self.lines + ["}"]) + "\n"

    def block(self, block):
        for op in block.ops:
            self.op(op)

    def op(self, op):
        name = op.name
        h = _HANDLERS.get(name)
        if h is None:
            if name in _TRANSCENDENTAL:
                return self.transcendental(op)
            self.fail(op, "is not supported")
        h(self, op)

    # -- gpu ---------------------------------------------------------------------------
    def gpu_id(self, op, sreg):
        d = op.dimension.data.value
        r = self.reg("r")
        self.i("mov.u32", r, f"%{sreg}.{d}")
        rd = self.new(op.result)
        self.i("cvt.u64.u32", rd, r)
        self.u32_of[op.result] = r

    def barrier(self, op):
        self.i("bar.sync", "0")

    def ret(self, op):
        self.i("ret")

    # -- memory -----------------------------------------------------------------------
    def address(self, ptr, index) -> tuple[str, str]:
        """(state space, address register) of element ``index`` of ``ptr``."""
        from tfc.dialects.gpu import element_bytes
        pt = ptr.type
        size = element_bytes(pt.element_type)
        shift = size.bit_length() - 1
        base, idx = self.get(ptr), self.get(index)
        wide = index.type.width.data == 64
        if pt.is_shared:
            if wide:
                i32 = self.reg("r")
                self.i("cvt.u32.u64", i32, idx)
                idx = i32
            a = self.reg("r")
            self.i("mad.lo.s32", a, idx, str(size), base)
            return "shared", a
        off = self.reg("rd")
        if wide:
            self.i("shl.b64", off, idx, str(shift))
        else:
            self.i("mul.wide.s32", off, idx, str(size))
        a = self.reg("rd")
        self.i("add.s64", a, base, off)
        return "global", a

    def mem_type(self, t) -> str:
        from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IntegerType
        if isinstance(t, IntegerType):
            self.refuse_unsigned(t)
            return {1: "u8", 8: "s8", 32: "u32", 64: "u64"}[t.width.data]
        return {Float16Type(): "b16", Float32Type(): "f32", Float64Type(): "f64"}[t]

    def load(self, op):
        space, a = self.address(op.ptr, op.index)
        et = op.ptr.type.element_type
        mt = self.mem_type(et)
        is_i1 = mt == "u8"
        dsts = []
        for v in op.values:
            dsts.append(self.reg("r") if is_i1 else self.new(v))
        vec = "" if op.n == 1 else f".v{op.n}"
        nc = ".nc" if op.nc is not None else ""
        dst = dsts[0] if op.n == 1 else "{" + ", ".join(dsts) + "}"
        self.i(f"ld.{space}{nc}{vec}.{mt}", dst, f"[{a}]")
        if is_i1:
            for v, r in zip(op.values, dsts):
                self.i("setp.ne.u32", self.new(v), r, "0")

    def store(self, op):
        space, a = self.address(op.ptr, op.index)
        mt = self.mem_type(op.ptr.type.element_type)
        srcs = []
        for v in op.values:
            if mt == "u8" and self.cls_of(v.type) == "p":
                r = self.reg("r")
                self.i("selp.b32", r, "1", "0", self.get(v))
                srcs.append(r)
            else:
                srcs.append(self.get(v))
        vec = "" if op.n == 1 else f".v{op.n}"
        src = srcs[0] if op.n == 1 else "{" + ", ".join(srcs) + "}"
        self.i(f"st.{space}{vec}.{mt}", f"[{a}]", src)

    def shared_array(self, op):
        sym = f"{self.name}_smem_{len(self.shared)}"
        self.shared.append(f"\t.shared .align 16 .b8 {sym}[{op.nbytes}];")
        self.i("mov.u32", self.new(op.result), sym)

    def shuffle(self, op):
        mode = {"down": "down", "up": "up", "xor": "bfly", "idx": "idx"}[op.mode.data]
        clamp = "0" if mode == "up" else "31"
        self.i(f"shfl.sync.{mode}.b32", self.new(op.result), self.get(op.value), self.get(op.offset), clamp,
               "0xffffffff")

    def mma(self, op):
        """tgpu.mma: float16 fragments packed two to a .b32 register (the first
        element low; a pair an ldmatrix unpacked is its register again), int8
        fragments already packed four to an i32; then one mma.sync for the warp."""
        from tfc.dialects.gpu import MMA_SHAPES
        if op.shape != "m16n8k16":
            def packed(vals):
                return "{" + ", ".join(self.get(v) for v in vals) + "}"
        else:
            def packed(vals):
                regs = []
                for lo, hi in zip(vals[0::2], vals[1::2]):
                    r = self.pairs.get((lo, hi))
                    if r is None:
                        r = self.reg("hh")
                        self.i("mov.b32", r, "{%s, %s}" % (self.get(lo), self.get(hi)))
                    regs.append(r)
                return "{" + ", ".join(regs) + "}"

        a, b = packed(list(op.a)), packed(list(op.b))
        c = "{" + ", ".join(self.get(v) for v in op.c) + "}"
        d = "{" + ", ".join(self.new(v) for v in op.d) + "}"
        self.i(MMA_SHAPES[op.shape][3], d, a, b, c)

    def ldmatrix(self, op):
        """tgpu.ldmatrix: one .b32 register per matrix, unpacked into its two
        float16 values (mma packs the same pair back into that register)."""
        _, a = self.address(op.ptr, op.index)
        regs = [self.reg("hh") for _ in range(op.num)]
        trans = ".trans" if op.trans is not None else ""
        self.i(f"ldmatrix.sync.aligned.m8n8.x{op.num}{trans}.shared.b16", "{" + ", ".join(regs) + "}", f"[{a}]")
        vals = list(op.values)
        for r, lo, hi in zip(regs, vals[0::2], vals[1::2]):
            self.i("mov.b32", "{%s, %s}" % (self.new(lo), self.new(hi)), r)
            self.pairs[(lo, hi)] = r

    def cp_async(self, op):
        _, s = self.address(op.dst, op.dst_index)
        _, g = self.address(op.src, op.src_index)
        self.i("cp.async.cg.shared.global", f"[{s}]", f"[{g}]", "16", self.get(op.nbytes))

    def cp_async_wait(self, op):
        self.i("cp.async.wait_all")

    def dp4a(self, op):
        self.i("dp4a.s32.s32", self.new(op.result), self.get(op.a), self.get(op.b), self.get(op.c))

    def atomic(self, op):
        _, a = self.address(op.ptr, op.index)
        t = {"f": "f32", "fd": "f64", "r": "u32", "rd": "u64"}[self.cls_of(op.value.type)]
        if op.old is None:
            self.i(f"red.global.add.{t}", f"[{a}]", self.get(op.value))
        else:
            self.i(f"atom.global.add.{t}", self.new(op.old), f"[{a}]", self.get(op.value))

    # -- scf ----------------------------------------------------------------------------
    def copies(self, dsts, srcs):
        """dsts[k] = srcs[k], all at once (a yield's parallel copy)."""
        pairs = [(d, s) for d, s in zip(dsts, srcs) if d != s]
        if any(s in dsts for _, s in pairs):
            tmps = []
            for d, s in pairs:
                t = self.reg(d.lstrip("%").rstrip("0123456789"))
                self.mov(t, s)
                tmps.append((d, t))
            pairs = tmps
        for d, s in pairs:
            self.mov(d, s)

    def mov(self, d, s):
        cls = d.lstrip("%").rstrip("0123456789")
        self.i(f"mov.{_CLASSES[cls]}", d, s)

    def for_(self, op):
        body = op.body.block
        iv, *carried = body.args
        if iv.type != op.lb.type:
            self.fail(op, "induction variable type differs from its bounds")
        c = self.cls_of(iv.type)
        if c not in ("r", "rd"):
            self.fail(op, f"over {iv.type}")
        st = "s32" if c == "r" else "s64"
        ivr = self.new(iv)
        self.mov(ivr, self.get(op.lb))
        regs = [self.new(a) for a in carried]
        self.copies(regs, [self.get(v) for v in op.iter_args])
        for res, r in zip(op.res, regs):
            self.vals[res] = r
        head, end = self.label(), self.label()
        p = self.reg("p")
        self.put(head)
        self.i(f"setp.ge.{st}", p, ivr, self.get(op.ub))
        self.i("bra", end, pred=p)
        for inner in body.ops:
            if inner.name == "scf.yield":
                self.copies(regs, [self.get(v) for v in inner.operands])
            else:
                self.op(inner)
        self.i(f"add.{st}", ivr, ivr, self.get(op.step))
        self.i("bra.uni", head)
        self.put(end)

    def if_(self, op):
        regs = [self.new(r) for r in op.output]
        els, end = self.label(), self.label()
        has_else = op.false_region.blocks and any(True for _ in op.false_region.block.ops)
        self.i("bra", els if has_else else end, pred="!" + self.get(op.cond))
        self.branch(op.true_region, regs)
        if has_else:
            self.i("bra.uni", end)
            self.put(els)
            self.branch(op.false_region, regs)
        self.put(end)

    def branch(self, region, regs):
        for inner in region.block.ops:
            if inner.name == "scf.yield":
                self.copies(regs, [self.get(v) for v in inner.operands])
            else:
                self.op(inner)

    # -- arith --------------------------------------------------------------------------
    def ptype(self, t, signed=True) -> str:
        """The PTX type of an arithmetic op on values of type ``t``."""
        c = self.cls_of(t)
        return {"r": "s32" if signed else "u32", "rd": "s64" if signed else "u64", "f": "f32", "fd": "f64",
                "p": "pred", "h": "b16"}[c]

    def constant(self, op):
        from xdsl.dialects.builtin import FloatAttr, IntegerAttr
        v = op.value
        r = self.new(op.result)
        c = self.cls_of(op.result.type)
        if isinstance(v, FloatAttr):
            x = float(v.value.data)
            if c == "f":
                self.i("mov.f32", r, f32_hex(x))
            elif c == "fd":
                self.i("mov.f64", r, f64_hex(x))
            else:
                import numpy as np
                self.i("mov.b16", r, "0x%04X" % int(np.float16(x).view(np.uint16)))
        elif isinstance(v, IntegerAttr):
            n = int(v.value.data)
            if c == "p":
                self.i("setp.ne.u32", r, "1" if n else "0", "0")
            elif c == "r":
                self.i("mov.u32", r, str(n & 0xFFFFFFFF))
            else:
                self.i("mov.u64", r, str(n & 0xFFFFFFFFFFFFFFFF))
        else:
            self.fail(op, f"of {v}")

    def no_small(self, op, what="arithmetic"):
        from xdsl.dialects.builtin import Float16Type, IntegerType
        t = op.operands[0].type
        if t == IntegerType(8) or isinstance(t, Float16Type):
            self.fail(op, f"on {t} ({what} on i8/f16 values is not supported: extend to i32/f32 first)")

    def binary(self, op, opcode):
        self.no_small(op)
        t = self.ptype(op.result.type)
        self.i(opcode.format(t=t), self.new(op.result), self.get(op.lhs), self.get(op.rhs))

    def int_binary(self, op, opcode, signed=True):
        self.no_small(op)
        c = self.cls_of(op.result.type)
        if c == "p":
            self.fail(op, "on i1")
        t = self.ptype(op.result.type, signed)
        self.i(opcode.format(t=t), self.new(op.result), self.get(op.lhs), self.get(op.rhs))

    def bitwise(self, op, word):
        self.no_small(op)
        c = self.cls_of(op.result.type)
        t = {"p": "pred", "r": "b32", "rd": "b64"}[c]
        self.i(f"{word}.{t}", self.new(op.result), self.get(op.lhs), self.get(op.rhs))

    def shift(self, op, opcode):
        self.no_small(op)
        c = self.cls_of(op.result.type)
        if c == "p":
            self.fail(op, "on i1")
        amount = self.get(op.rhs)
        if c == "rd":  # PTX shifts take a 32-bit amount
            a32 = self.reg("r")
            self.i("cvt.u32.u64", a32, amount)
            amount = a32
        self.i(opcode.format(w=32 if c == "r" else 64), self.new(op.result), self.get(op.lhs), amount)

    def addi(self, op):
        if self.cls_of(op.result.type) == "p":  # i1: addition modulo 2
            return self.bitwise(op, "xor")
        self.int_binary(op, "add.{t}")

    def subi(self, op):
        if self.cls_of(op.result.type) == "p":
            return self.bitwise(op, "xor")
        self.int_binary(op, "sub.{t}")

    def muli(self, op):
        if self.cls_of(op.result.type) == "p":
            return self.bitwise(op, "and")
        self.int_binary(op, "mul.lo.{t}")

    def divrem_floor(self, op, ceil: bool):
        """floordivsi / ceildivsi: the truncated quotient, corrected by one where
        the remainder is nonzero and its sign is (floor: not) the divisor's."""
        self.no_small(op)
        c = self.cls_of(op.result.type)
        if c == "p":
            self.fail(op, "on i1")
        t, b = ("s32", "b32") if c == "r" else ("s64", "b64")
        a, d = self.get(op.lhs), self.get(op.rhs)
        q = self.new(op.result)
        r, x = self.reg(c), self.reg(c)
        p1, p2, p3 = self.reg("p"), self.reg("p"), self.reg("p")
        self.i(f"div.{t}", q, a, d)
        self.i(f"rem.{t}", r, a, d)
        self.i(f"setp.ne.{t}", p1, r, "0")
        self.i(f"xor.{b}", x, r, d)
        self.i(f"setp.{'ge' if ceil else 'lt'}.{t}", p2, x, "0")
        self.i("and.pred", p3, p1, p2)
        self.i(f"{'add' if ceil else 'sub'}.{t}", q, q, "1", pred=p3)

    def ceildivui(self, op):
        self.no_small(op)
        c = self.cls_of(op.result.type)
        if c == "p":
            self.fail(op, "on i1")
        t = "u32" if c == "r" else "u64"
        a, d = self.get(op.lhs), self.get(op.rhs)
        q = self.new(op.result)
        r, p = self.reg(c), self.reg("p")
        self.i(f"div.{t}", q, a, d)
        self.i(f"rem.{t}", r, a, d)
        self.i(f"setp.ne.{t}", p, r, "0")
        self.i(f"add.{t}", q, q, "1", pred=p)

    def cmpi(self, op):
        from xdsl.dialects.arith import CMPI_COMPARISON_OPERATIONS as NAMES
        pred = NAMES[op.predicate.value.data]
        c = self.cls_of(op.lhs.type)
        a, b = self.get(op.lhs), self.get(op.rhs)
        r = self.new(op.result)
        if c == "p":
            if pred not in ("eq", "ne"):
                self.fail(op, f"{pred} on i1")
            if pred == "ne":
                self.i("xor.pred", r, a, b)
            else:
                x = self.reg("p")
                self.i("xor.pred", x, a, b)
                self.i("not.pred", r, x)
            return
        w = 32 if c == "r" else 64
        if pred in ("eq", "ne"):
            self.i(f"setp.{pred}.s{w}", r, a, b)
            return
        signed = pred[0] == "s"
        if not signed and op.lhs.type.__class__.__name__ == "IntegerType" and op.lhs.type.width.data == 8:
            # i8 lives sign-extended: compare its low byte
            ua, ub = self.reg("r"), self.reg("r")
            self.i("cvt.u32.u8", ua, a)
            self.i("cvt.u32.u8", ub, b)
            a, b = ua, ub
        self.i(f"setp.{pred[1:]}.{'s' if signed else 'u'}{w}", r, a, b)

    _CMPF = {"oeq": "eq", "one": "ne", "olt": "lt", "ole": "le", "ogt": "gt", "oge": "ge",
             "ueq": "equ", "une": "neu", "ult": "ltu", "ule": "leu", "ugt": "gtu", "uge": "geu",
             "ord": "num", "uno": "nan"}

    def cmpf(self, op):
        from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS as NAMES
        self.no_small(op, "comparison")
        pred = NAMES[op.predicate.value.data]
        t = self.ptype(op.lhs.type)
        r = self.new(op.result)
        if pred in ("false", "true"):
            self.i("setp.ne.u32", r, "1" if pred == "true" else "0", "0")
            return
        self.i(f"setp.{self._CMPF[pred]}.{t}", r, self.get(op.lhs), self.get(op.rhs))

    def select(self, op):
        c = self.cls_of(op.result.type)
        cond, a, b = self.get(op.cond), self.get(op.lhs), self.get(op.rhs)
        r = self.new(op.result)
        if c == "p":  # r = cond ? a : b on predicates
            x, y, n = self.reg("p"), self.reg("p"), self.reg("p")
            self.i("and.pred", x, cond, a)
            self.i("not.pred", n, cond)
            self.i("and.pred", y, n, b)
            self.i("or.pred", r, x, y)
            return
        t = {"r": "b32", "rd": "b64", "f": "f32", "fd": "f64", "h": "b16"}[c]
        self.i(f"selp.{t}", r, a, b, cond)

    def negf(self, op):
        self.no_small(op)
        t = self.ptype(op.result.type)
        self.i(f"neg.{t}", self.new(op.result), self.get(op.operand))

    def minmaxf(self, op, word, nan: bool):
        self.no_small(op)
        t = self.ptype(op.result.type)
        a, b = self.get(op.lhs), self.get(op.rhs)
        r = self.new(op.result)
        if not nan:
            self.i(f"{word}.{t}", r, a, b)
            return
        # numpy's maximum/minimum, bit for bit: a where a > b (a < b) or a is NaN, else b. So a NaN
        # operand propagates with its payload and equal operands give b: maximum(-0.0, +0.0) is +0.0,
        # maximum(+0.0, -0.0) -0.0 (max.NaN orders -0.0 below +0.0, and its NaN is canonical)
        p, q = self.reg("p"), self.reg("p")
        self.i(f"setp.{'gt' if word == 'max' else 'lt'}.{t}", p, a, b)
        self.i(f"testp.notanumber.{t}", q, a)
        self.i("or.pred", p, p, q)
        self.i(f"selp.{t}", r, a, b, p)

    # -- casts -------------------------------------------------------------------------
    def int_width(self, t) -> int:
        from xdsl.dialects.builtin import IndexType
        return 64 if isinstance(t, IndexType) else t.width.data

    def ext_or_trunc(self, op, signed: bool):
        src, dst = op.input.type, op.result.type
        ws, wd = self.int_width(src), self.int_width(dst)
        a = self.get(op.input)
        r = self.new(op.result)
        if ws == 1:
            one = "-1" if signed else "1"
            self.i(f"selp.b{32 if wd <= 32 else 64}", r, one if wd > 8 or not signed else "-1", "0", a)
            return
        if wd == 1:  # trunci to i1: the low bit
            x = self.reg(self.cls_of(src))
            b = "b32" if ws <= 32 else "b64"
            self.i(f"and.{b}", x, a, "1")
            self.i(f"setp.ne.{'s32' if ws <= 32 else 's64'}", r, x, "0")
            return
        if ws == wd:
            self.mov(r, a)
        elif ws == 8 and wd == 32:
            self.i("mov.u32" if signed else "cvt.u32.u8", r, a)
        elif ws == 8 and wd == 64:
            if signed:
                self.i("cvt.s64.s32", r, a)
            else:
                x = self.reg("r")
                self.i("cvt.u32.u8", x, a)
                self.i("cvt.u64.u32", r, x)
        elif ws == 32 and wd == 64:
            self.i("cvt.s64.s32" if signed else "cvt.u64.u32", r, a)
        elif ws == 64 and wd == 32:
            self.i("cvt.u32.u64", r, a)
        elif ws == 64 and wd == 8:
            x = self.reg("r")
            self.i("cvt.u32.u64", x, a)
            self.i("cvt.s32.s8", r, x)
        elif ws == 32 and wd == 8:
            self.i("cvt.s32.s8", r, a)
        else:
            self.fail(op, f"from {src} to {dst}")

    def index_cast(self, op, signed=True):
        if op.input in self.u32_of and self.int_width(op.result.type) == 32:
            self.vals[op.result] = self.u32_of[op.input]  # a gpu id is a u32 already
            return
        self.ext_or_trunc(op, signed)

    def int_to_float(self, op, signed: bool):
        src, dst = op.input.type, op.result.type
        ft = self.ptype(dst)
        if ft not in ("f32", "f64"):
            self.fail(op, f"to {dst}")
        a = self.get(op.input)
        r = self.new(op.result)
        w = self.int_width(src)
        if w == 1:
            one = (-1.0 if signed else 1.0)
            lit = f32_hex(one) if ft == "f32" else f64_hex(one)
            zero = f32_hex(0.0) if ft == "f32" else f64_hex(0.0)
            self.i(f"selp.{ft}", r, lit, zero, a)
            return
        if w == 8:
            if not signed:
                x = self.reg("r")
                self.i("cvt.u32.u8", x, a)
                a = x
            w = 32
        self.i(f"cvt.rn.{ft}.{'s' if signed else 'u'}{w}", r, a)

    def float_to_int(self, op, signed: bool):
        src, dst = op.input.type, op.result.type
        ft = self.ptype(src)
        w = self.int_width(dst)
        if ft not in ("f32", "f64") or w not in (32, 64):
            self.fail(op, f"from {src} to {dst}")
        x = self.get(op.input)
        r = self.new(op.result)
        self.i(f"cvt.rzi.{'s' if signed else 'u'}{w}.{ft}", r, x)
        if signed:
            # numpy's result (x86's cvtt*2si): NaN and values from 2^(w-1) up give the lowest integer
            # ("integer indefinite"); cvt.rzi saturates them to the highest and gives 0 (f32 to s32 on an
            # H100) or the sign bit for NaN. Values below -2^(w-1) saturate to the lowest: numpy's too.
            p = self.reg("p")
            lim = f32_hex(2.0 ** (w - 1)) if ft == "f32" else f64_hex(2.0 ** (w - 1))
            self.i(f"setp.geu.{ft}", p, x, lim)
            self.i(f"mov.u{w}", r, "0x80000000" if w == 32 else "0x8000000000000000", pred=p)
        # fptoui: exact on [0, 2^w) (arith's domain; out of it the result is poison). tfc's L3 never
        # emits it (no unsigned dtypes), and numpy's own unsigned casts out of range depend on the
        # SIMD path taken, so there is no single answer to match.

    def extf(self, op):
        s, d = self.ptype(op.input.type), self.ptype(op.result.type)
        r = self.new(op.result)
        a = self.get(op.input)
        opcode = {("f32", "f64"): "cvt.f64.f32", ("b16", "f32"): "cvt.f32.f16", ("b16", "f64"): "cvt.f64.f16"}.get((s, d))
        if opcode is None:
            self.fail(op, f"from {op.input.type} to {op.result.type}")
        self.i(opcode, r, a)

    def truncf(self, op):
        s, d = self.ptype(op.input.type), self.ptype(op.result.type)
        opcode = {("f64", "f32"): "cvt.rn.f32.f64", ("f32", "b16"): "cvt.rn.f16.f32",
                  ("f64", "b16"): "cvt.rn.f16.f64"}.get((s, d))
        if opcode is None:
            self.fail(op, f"from {op.input.type} to {op.result.type}")
        self.i(opcode, self.new(op.result), self.get(op.input))

    def bitcast(self, op):
        cs, cd = self.cls_of(op.input.type), self.cls_of(op.result.type)
        bits = {"r": 32, "f": 32, "rd": 64, "fd": 64, "h": 16}
        if cs not in bits or cd not in bits or bits[cs] != bits[cd] or "i8" in (str(op.input.type), str(op.result.type)):
            self.fail(op, f"from {op.input.type} to {op.result.type}")
        self.i(f"mov.b{bits[cd]}", self.new(op.result), self.get(op.input))

    # -- math --------------------------------------------------------------------------
    def unary_f(self, op, opcode):
        self.no_small(op)
        t = self.ptype(op.result.type)
        self.i(opcode.format(t=t), self.new(op.result), self.get(op.operand))

    def round_half_away(self, op):
        """math.round: half away from zero (C round): trunc(x) + sign(x) where
        |x - trunc(x)| >= 0.5 (exact: x - trunc(x) is exact)."""
        self.no_small(op)
        t = self.ptype(op.result.type)
        x = self.get(op.operand)
        c = self.cls_of(op.result.type)
        tr, d, one = self.reg(c), self.reg(c), self.reg(c)
        p = self.reg("p")
        r = self.new(op.result)
        half = f32_hex(0.5) if t == "f32" else f64_hex(0.5)
        o = f32_hex(1.0) if t == "f32" else f64_hex(1.0)
        self.i(f"cvt.rzi.{t}.{t}", tr, x)
        self.i(f"sub.rn.{t}", d, x, tr)
        self.i(f"abs.{t}", d, d)
        self.i(f"setp.ge.{t}", p, d, half)
        self.i(f"mov.{t}", one, o)
        self.i(f"copysign.{t}", one, x, one)
        self.i(f"mov.{t}", r, tr)
        self.i(f"add.rn.{t}", r, tr, one, pred=p)

    def copysign(self, op):
        self.no_small(op)
        t = self.ptype(op.result.type)
        # PTX copysign d, a, b: b's magnitude with a's sign
        self.i(f"copysign.{t}", self.new(op.result), self.get(op.rhs), self.get(op.lhs))

    def fma(self, op):
        self.no_small(op)
        t = self.ptype(op.result.type)
        self.i(f"fma.rn.{t}", self.new(op.result), self.get(op.a), self.get(op.b), self.get(op.c))

    def rsqrt(self, op):
        self.no_small(op)
        t = self.ptype(op.result.type)
        s = self.reg(self.cls_of(op.result.type))
        self.i(f"sqrt.rn.{t}", s, self.get(op.operand))
        self.i(f"rcp.rn.{t}", self.new(op.result), s)

    def transcendental(self, op):
        from tfc.backends.cuda import ptx_math
        t = op.result.type
        if self.cls_of(t) == "fd" and op.name in ptx_math.EMITTERS_F64:
            ptx_math.EMITTERS_F64[op.name](self, self.new(op.result), *[self.get(v) for v in op.operands])
            return
        if self.cls_of(t) != "f":
            raise NotImplementedError(f"PTX printer: {op.name} on {t} (transcendental functions are float32 only, "
                                      f"but for {', '.join(sorted(ptx_math.EMITTERS_F64))} on float64; "
                                      f"kernel @{self.name})")
        args = [self.get(v) for v in op.operands]
        ptx_math.emit(self, op.name, self.new(op.result), *args)


_TRANSCENDENTAL = {"math.exp", "math.exp2", "math.log", "math.log2", "math.log10", "math.log1p", "math.expm1",
                   "math.tanh", "math.sin", "math.cos", "math.erf", "math.powf", "math.tan", "math.sinh",
                   "math.cosh", "math.atan", "math.atan2", "math.asin", "math.acos", "math.asinh", "math.acosh",
                   "math.atanh", "math.cbrt"}

_HANDLERS = {
    "gpu.thread_id": lambda k, op: k.gpu_id(op, "tid"),
    "gpu.block_id": lambda k, op: k.gpu_id(op, "ctaid"),
    "gpu.block_dim": lambda k, op: k.gpu_id(op, "ntid"),
    "gpu.grid_dim": lambda k, op: k.gpu_id(op, "nctaid"),
    "gpu.barrier": _Kernel.barrier,
    "gpu.return": _Kernel.ret,
    "tgpu.load": _Kernel.load,
    "tgpu.store": _Kernel.store,
    "tgpu.shared": _Kernel.shared_array,
    "tgpu.shuffle": _Kernel.shuffle,
    "tgpu.atomic": _Kernel.atomic,
    "tgpu.mma": _Kernel.mma,
    "tgpu.ldmatrix": _Kernel.ldmatrix,
    "tgpu.cp_async": _Kernel.cp_async,
    "tgpu.cp_async_wait": _Kernel.cp_async_wait,
    "tgpu.dp4a": _Kernel.dp4a,
    "scf.for": _Kernel.for_,
    "scf.if": _Kernel.if_,
    "arith.constant": _Kernel.constant,
    "arith.addf": lambda k, op: k.binary(op, "add.rn.{t}"),
    "arith.subf": lambda k, op: k.binary(op, "sub.rn.{t}"),
    "arith.mulf": lambda k, op: k.binary(op, "mul.rn.{t}"),
    "arith.divf": lambda k, op: k.binary(op, "div.rn.{t}"),
    "arith.negf": _Kernel.negf,
    "arith.maximumf": lambda k, op: k.minmaxf(op, "max", True),
    "arith.minimumf": lambda k, op: k.minmaxf(op, "min", True),
    "arith.maxnumf": lambda k, op: k.minmaxf(op, "max", False),
    "arith.minnumf": lambda k, op: k.minmaxf(op, "min", False),
    "arith.addi": _Kernel.addi,
    "arith.subi": _Kernel.subi,
    "arith.muli": _Kernel.muli,
    "arith.divsi": lambda k, op: k.int_binary(op, "div.{t}"),
    "arith.divui": lambda k, op: k.int_binary(op, "div.{t}", signed=False),
    "arith.remsi": lambda k, op: k.int_binary(op, "rem.{t}"),
    "arith.remui": lambda k, op: k.int_binary(op, "rem.{t}", signed=False),
    "arith.floordivsi": lambda k, op: k.divrem_floor(op, ceil=False),
    "arith.ceildivsi": lambda k, op: k.divrem_floor(op, ceil=True),
    "arith.ceildivui": _Kernel.ceildivui,
    "arith.maxsi": lambda k, op: k.int_binary(op, "max.{t}"),
    "arith.minsi": lambda k, op: k.int_binary(op, "min.{t}"),
    "arith.maxui": lambda k, op: k.int_binary(op, "max.{t}", signed=False),
    "arith.minui": lambda k, op: k.int_binary(op, "min.{t}", signed=False),
    "arith.andi": lambda k, op: k.bitwise(op, "and"),
    "arith.ori": lambda k, op: k.bitwise(op, "or"),
    "arith.xori": lambda k, op: k.bitwise(op, "xor"),
    "arith.shli": lambda k, op: k.shift(op, "shl.b{w}"),
    "arith.shrsi": lambda k, op: k.shift(op, "shr.s{w}"),
    "arith.shrui": lambda k, op: k.shift(op, "shr.u{w}"),
    "arith.cmpi": _Kernel.cmpi,
    "arith.cmpf": _Kernel.cmpf,
    "arith.select": _Kernel.select,
    "arith.index_cast": lambda k, op: k.index_cast(op, True),
    "arith.index_castui": lambda k, op: k.index_cast(op, False),
    "arith.extsi": lambda k, op: k.ext_or_trunc(op, True),
    "arith.extui": lambda k, op: k.ext_or_trunc(op, False),
    "arith.trunci": lambda k, op: k.ext_or_trunc(op, True),
    "arith.sitofp": lambda k, op: k.int_to_float(op, True),
    "arith.uitofp": lambda k, op: k.int_to_float(op, False),
    "arith.fptosi": lambda k, op: k.float_to_int(op, True),
    "arith.fptoui": lambda k, op: k.float_to_int(op, False),
    "arith.extf": _Kernel.extf,
    "arith.truncf": _Kernel.truncf,
    "arith.bitcast": _Kernel.bitcast,
    "math.sqrt": lambda k, op: k.unary_f(op, "sqrt.rn.{t}"),
    "math.absf": lambda k, op: k.unary_f(op, "abs.{t}"),
    "math.absi": lambda k, op: k.unary_f(op, "abs.{t}"),  # wraps at the minimum, as numpy
    "math.floor": lambda k, op: k.unary_f(op, "cvt.rmi.{t}.{t}"),
    "math.ceil": lambda k, op: k.unary_f(op, "cvt.rpi.{t}.{t}"),
    "math.trunc": lambda k, op: k.unary_f(op, "cvt.rzi.{t}.{t}"),
    "math.roundeven": lambda k, op: k.unary_f(op, "cvt.rni.{t}.{t}"),
    "math.round": _Kernel.round_half_away,
    "math.copysign": _Kernel.copysign,
    "math.fma": _Kernel.fma,
    "math.rsqrt": _Kernel.rsqrt,
}


def kernels_of(module):
    """The ``gpu.func`` kernels of an L4 module (or of a ``gpu.module``)."""
    from xdsl.dialects import gpu
    mods = [module] if isinstance(module, gpu.ModuleOp) else [op for op in module.walk()
                                                                if isinstance(op, gpu.ModuleOp)]
    if len(mods) != 1:
        raise ValueError(f"an L4 module holds one gpu.module, this one {len(mods)}")
    return [op for op in mods[0].body.block.ops if isinstance(op, gpu.FuncOp)]


def to_ptx(module) -> str:
    """The PTX text of an L4 module's kernels."""
    return HEADER + "".join("\n" + _Kernel(f).emit() for f in kernels_of(module))


def main(argv=None) -> int:
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m tfc.backends.cuda.ptx", description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", help="L4 IR text (.mlir); - for stdin")
    ap.add_argument("--subset", action="store_true", help="print PTX_SUBSET, one instruction a line")
    args = ap.parse_args(argv)
    if args.subset:
        print("\n".join(sorted(PTX_SUBSET)))
        return 0
    if args.file is None:
        ap.error("an L4 file is needed")
    import tfc.dialects.gpu  # noqa: F401  (the gpu ops' custom syntax, before the parser meets gpu.module)
    from tfc.dialects.tensor import parse_module
    text = sys.stdin.read() if args.file == "-" else open(args.file).read()
    sys.stdout.write(to_ptx(parse_module(text, args.file)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
