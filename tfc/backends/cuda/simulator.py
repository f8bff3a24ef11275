"""A PTX simulator: runs the PTX text tfc emits over a whole grid with numpy
(docs/gpu-simulator.md).

``parse(ptx)`` reads a module into a ``Program`` (its kernels by name, each
with typed parameters, registers, shared arrays and its instructions decoded
once into closures); ``run(program, kernel, grid, block, args, memory)`` runs
one launch. Every thread of a chunk of blocks is one lane of numpy arrays (a
register is an array over the lanes, typed as declared); the threads at the
lowest program counter run first, for as long as no other thread is at or
below their pc, so structured code reconverges. Global memory is a ``Memory``
(a heap of allocations); shared memory is per block.

It is a checker as much as a runner: an access outside every live
allocation or misaligned for its width, a barrier reached by part of a block,
two threads of a block touching the same shared bytes between two barriers
(one of them writing), a shuffle with lanes missing from its full mask, and
an instruction outside ``SUPPORTED`` each raise ``SimulationError`` naming
the kernel, the block and thread, and the PTX line.

Numerics: ``.rn`` add/sub/mul/div/sqrt/rcp and ``fma.rn`` are IEEE
round-to-nearest-even, bit-exact (fma is exact: docs/gpu-simulator.md says
how); ``.approx`` functions are computed in float64 and rounded once, where
the hardware is within a few ulp of that."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

__all__ = ["SimulationError", "PTXSyntaxError", "Memory", "Program", "Kernel", "Param",
           "parse", "run", "SUPPORTED"]


class SimulationError(RuntimeError):
    """A launch did something a GPU would fault on or leave undefined (an access
    outside every allocation, a divergent barrier, a shared-memory race...), or
    the PTX uses an instruction outside the simulator's subset."""


class PTXSyntaxError(SimulationError):
    """The PTX text is malformed (what a driver's JIT would reject)."""


# The instruction forms the simulator runs (opcode: the modifiers it takes).
# docs/gpu-simulator.md lists them with their semantics.
SUPPORTED = {
    "ld": ".param/.global[.nc]/.shared/generic [.v2|.v4] .u8-.u64 .s8-.s64 .b8-.b64 .f16 .f32 .f64",
    "st": ".global/.shared/generic [.v2|.v4] (types as ld)",
    "mov": "reg, immediate, special register (%tid %ntid %ctaid %nctaid .x/.y/.z, %laneid; not %warpid), "
           "shared symbol",
    "cvt": "int<->int, int->float .rn, float->int .rni/.rzi/.rmi/.rpi, float->float (.rn narrowing, "
           ".rni/.rzi/.rmi/.rpi same type)",
    "cvta": ".to.global.u64 / .global.u64 (identity)",
    "add": "int, .rn float", "sub": "int, .rn float",
    "mul": ".lo/.hi/.wide int, .rn float", "mad": ".lo/.hi/.wide int, .rn float (fma)",
    "fma": ".rn .f32/.f64", "div": "int, .rn float, .approx/.full .f32",
    "rem": "int", "neg": "int, float", "abs": "int, float",
    "min": "int, float [.NaN]", "max": "int, float [.NaN]",
    "and": ".pred .b16 .b32 .b64", "or": "as and", "xor": "as and", "not": "as and",
    "shl": ".b16 .b32 .b64", "shr": ".b/.u/.s 16-64",
    "dp4a": ".s32.s32 (four signed-byte products plus c, int32 wrapping)",
    "mma": ".sync.aligned .m16n8k16.row.col.f32.f16.f16.f32, .m16n8k32.row.col.s32.s8.s8.s32 (full warps)",
    "ldmatrix": ".sync.aligned.m8n8 .x1/.x2/.x4 [.trans] .shared.b16 (full warps)",
    "cp": ".async.cg.shared.global [s], [g], 16, n (0 <= n <= 16; written at the thread's wait), "
          ".async.wait_all",
    "popc": ".b32 .b64", "clz": ".b32 .b64", "brev": ".b32 .b64",
    "setp": "eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan [.and/.or/.xor], d[|q]",
    "selp": "all types", "testp": "finite infinite number notanumber normal subnormal",
    "copysign": ".f32 .f64",
    "sqrt": ".rn .f32/.f64, .approx .f32", "rcp": ".rn .f32/.f64, .approx .f32",
    "rsqrt": ".approx .f32/.f64", "ex2": ".approx .f32", "lg2": ".approx .f32",
    "sin": ".approx .f32", "cos": ".approx .f32", "tanh": ".approx .f32",
    "bra": "[.uni] label", "ret": "", "exit": "",
    "bar": ".sync 0 (also barrier.sync 0)",
    "shfl": ".sync .up/.down/.bfly/.idx .b32, membermask 0xffffffff",
    "atom": ".global/.shared .add .f32 .f64 .u32 .s32 .u64", "red": "as atom, no result",
}

_DTYPES = {
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "u8": np.uint8, "s8": np.int8, "b8": np.uint8,
    "u16": np.uint16, "s16": np.int16, "b16": np.uint16,
    "u32": np.uint32, "s32": np.int32, "b32": np.uint32,
    "u64": np.uint64, "s64": np.int64, "b64": np.uint64,
    "pred": np.bool_,
}
_SPECIAL = {"%tid", "%ntid", "%ctaid", "%nctaid"}
_SHARED_BASE = 0x400       # shared symbols start here: a zero address is never valid
_POISON = {1: 0xBD, 2: 0xBADB, 4: 0xBADBAD0B, 8: 0xBADBAD0BBADBAD0B}  # uninitialized registers
_CHUNK_THREADS = 1 << 17   # blocks run in chunks of at most this many threads
_SHARED_CHUNK_BYTES = 1 << 23
_MAX_STEPS = 20_000_000


# ----------------------------------------------------------------------------------------------
# Memory


class Memory:
    """Global memory: a heap of allocations at 256-byte aligned addresses from
    ``BASE`` up, never reused, so that an access through a freed pointer is
    caught (each allocation also has a 256-byte unmapped gap after it)."""
    BASE = 0x7F00_0000_0000

    def __init__(self):
        self._bases: list[int] = []
        self._sizes: list[int] = []
        self._bufs: list[np.ndarray | None] = []
        self._next = self.BASE
        self._arrays = None

    def alloc(self, nbytes: int) -> int:
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"alloc: negative size {nbytes}")
        addr = self._next
        self._next += (max(nbytes, 1) + 255) // 256 * 256 + 256
        self._bases.append(addr)
        self._sizes.append(nbytes)
        self._bufs.append(np.full((nbytes + 15) // 16 * 16, 0xFF, np.uint8))
        self._arrays = None
        return addr

    def free(self, addr: int) -> None:
        i = self._find(int(addr))
        if i is None or self._bases[i] != int(addr):
            raise SimulationError(f"free of {int(addr):#x}: not the address of an allocation")
        if self._bufs[i] is None:
            raise SimulationError(f"free of {int(addr):#x}: freed twice")
        self._bufs[i] = None
        self._arrays = None

    def _find(self, addr: int):
        import bisect
        i = bisect.bisect_right(self._bases, addr) - 1
        return i if i >= 0 else None

    def _span(self, addr: int, nbytes: int, what: str) -> tuple[np.ndarray, int]:
        """The buffer and offset of ``nbytes`` at ``addr``, all in one live allocation."""
        addr, nbytes = int(addr), int(nbytes)
        i = self._find(addr)
        if i is not None and self._bufs[i] is None and addr < self._bases[i] + max(self._sizes[i], 1):
            raise SimulationError(f"{what} of {nbytes} bytes at {addr:#x}: the allocation was freed")
        if i is None or self._bufs[i] is None or addr + nbytes > self._bases[i] + self._sizes[i]:
            raise SimulationError(f"{what} of {nbytes} bytes at {addr:#x}: outside every allocation")
        return self._bufs[i], addr - self._bases[i]

    def write(self, addr: int, data) -> None:
        """Copy the bytes of a C-contiguous array (or bytes) to ``addr``."""
        b = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) \
            else _bytes_of(data)
        if b.size == 0:
            return
        buf, off = self._span(addr, b.size, "copy to device")
        buf[off:off + b.size] = b

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        """A copy of ``nbytes`` bytes at ``addr`` (uint8)."""
        if int(nbytes) == 0:
            return np.zeros(0, np.uint8)
        buf, off = self._span(addr, nbytes, "copy from device")
        return buf[off:off + int(nbytes)].copy()

    def read_into(self, dst: np.ndarray, addr: int) -> None:
        b = _bytes_of(dst, writable=True)
        if b.size:
            b[...] = self.read(addr, b.size)

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        if int(nbytes) == 0:
            return
        data = self.read(src, nbytes)
        self.write(dst, data)

    def fill(self, dst: int, byte: int, nbytes: int) -> None:
        if int(nbytes) == 0:
            return
        buf, off = self._span(dst, nbytes, "memset")
        buf[off:off + int(nbytes)] = int(byte) & 0xFF

    def to_device(self, array) -> int:
        """Allocate and fill with a copy of ``array``; returns the address."""
        a = np.ascontiguousarray(array)
        addr = self.alloc(a.nbytes)
        self.write(addr, a)
        return addr

    def to_numpy(self, addr: int, dtype, shape) -> np.ndarray:
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        return self.read(addr, n * dtype.itemsize).view(dtype).reshape(shape)

    @property
    def live_bytes(self) -> int:
        return sum(s for s, b in zip(self._sizes, self._bufs) if b is not None)

    def _tables(self):
        if self._arrays is None:
            self._arrays = (np.array(self._bases, np.uint64), np.array(self._sizes, np.uint64),
                            np.array([b is not None for b in self._bufs], bool))
        return self._arrays

    def _locate(self, addrs: np.ndarray, nbytes: int):
        """Allocation index of each address, and a mask of the valid accesses."""
        bases, sizes, live = self._tables()
        if len(bases) == 0:
            return np.zeros(len(addrs), np.int64), np.zeros(len(addrs), bool)
        idx = np.searchsorted(bases, addrs, side="right").astype(np.int64) - 1
        safe = np.maximum(idx, 0)
        off = addrs - bases[safe]
        ok = (idx >= 0) & live[safe] & (off + np.uint64(nbytes) <= sizes[safe]) & (off <= sizes[safe])
        return safe, ok

    def _explain(self, addr: int, nbytes: int) -> str:
        i = self._find(addr)
        if i is not None and self._bufs[i] is None and addr < self._bases[i] + max(self._sizes[i], 1):
            return f"in an allocation freed before (at {self._bases[i]:#x}, {self._sizes[i]} bytes)"
        if i is not None:
            return (f"outside every allocation (nearest below: {self._bases[i]:#x}, "
                    f"{self._sizes[i]} bytes, {addr - self._bases[i] - self._sizes[i] + nbytes} "
                    f"bytes past its end)")
        return "outside every allocation"


def _bits_of(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def _bytes_of(a, writable=False) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
    if not a.flags.c_contiguous:
        raise ValueError("host array must be C-contiguous")
    if writable and not a.flags.writeable:
        raise ValueError("host array must be writable")
    return a.reshape(-1).view(np.uint8)


# ----------------------------------------------------------------------------------------------
# Program structure


@dataclass
class Param:
    name: str
    type: str           # "u64", "f32", ...

    @property
    def dtype(self):
        return np.dtype(_DTYPES[self.type])


@dataclass
class _Shared:
    name: str
    offset: int         # from _SHARED_BASE
    size: int
    extern: bool = False


@dataclass
class Kernel:
    name: str
    params: list[Param]
    reqntid: tuple | None = None
    maxntid: tuple | None = None
    shared: dict = field(default_factory=dict)     # name -> _Shared
    static_shared: int = 0
    reg_dtypes: list = field(default_factory=list)
    reg_names: list = field(default_factory=list)
    code: list = field(default_factory=list)
    specials: set = field(default_factory=set)
    min_shared_access: int = 16     # the narrowest shared ld/st: the race check's granularity
    min_global_access: int = 16     # the narrowest global ld/st/atomic: the .nc check's granularity
    has_nc: bool = False            # any ld.global.nc
    has_global_write: bool = False  # any st.global / atom / red


@dataclass
class Program:
    kernels: dict
    version: str = ""
    target: str = ""

    def __getitem__(self, name):
        return self.kernels[name]


_OP, _BRA, _EXIT, _BAR = 0, 1, 2, 3


class _Ins:
    __slots__ = ("kind", "fn", "target", "guard", "neg", "line", "text", "label", "uni")

    def __init__(self, kind, fn, line, text, guard=None, neg=False, label=None):
        self.kind, self.fn, self.line, self.text = kind, fn, line, text
        self.guard, self.neg, self.label, self.target = guard, neg, label, None
        self.uni = False


# ----------------------------------------------------------------------------------------------
# Parsing


def _strip_comments(text: str) -> str:
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, text, flags=re.S)


_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(", re.S)


_LABEL = re.compile(r"([A-Za-z_$][\w$]*)\s*:(?!:)")


def parse(ptx: str) -> Program:
    """Parse a PTX module into a Program; instructions are decoded here, so an
    instruction outside the subset raises SimulationError now. A Program is
    never changed by a run: the last 64 texts parsed are kept."""
    prog = _PARSED.get(ptx)
    if prog is None:
        prog = _parse(ptx)
        if len(_PARSED) >= 64:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[ptx] = prog
    return prog


_PARSED: dict = {}


def _parse(ptx: str) -> Program:
    text = _strip_comments(ptx)
    m = re.search(r"\.version\s+([\d.]+)", text)
    version = m.group(1) if m else ""
    m = re.search(r"\.target\s+([\w,\s]+?)\s*(?:\n|\.)", text)
    target = m.group(1).strip() if m else ""
    if re.search(r"(^|\s)\.func\s", text):
        raise SimulationError("unsupported: .func (device functions) in the PTX module")
    kernels = {}
    pos = 0
    module_shared = []
    newlines = [i for i, c in enumerate(text) if c == "\n"]
    while True:
        m = _ENTRY.search(text, pos)
        head = text[pos:m.start() if m else len(text)]
        for d in re.finditer(r"(?:\.extern\s+)?\.(shared|global|const|local)\b[^;{}]*;", head):
            stmt = d.group(0)
            if d.group(1) != "shared":
                raise SimulationError(f"unsupported module-scope .{d.group(1)} variable, line "
                                      f"{text.count(chr(10), 0, pos + d.start()) + 1}: {stmt.strip()}")
            module_shared.append((stmt[:-1], text.count("\n", 0, pos + d.start()) + 1))
        if not m:
            break
        name = m.group(1)
        close = text.index(")", m.end())
        params = _parse_params(text[m.end():close], name)
        brace = text.index("{", close)
        directives = text[close + 1:brace]
        end = _matching_brace(text, brace)
        k = Kernel(name, params)
        for dm in re.finditer(r"\.(reqntid|maxntid)\s+([\d\s,]+)", directives):
            dims = tuple(int(x) for x in dm.group(2).replace(",", " ").split())
            dims = dims + (1,) * (3 - len(dims))
            setattr(k, dm.group(1), dims)
        if name in kernels:
            raise PTXSyntaxError(f"duplicate definition of kernel {name}")
        _parse_body(k, text, brace + 1, end, module_shared, newlines)
        kernels[name] = k
        pos = end + 1
    if not kernels:
        raise PTXSyntaxError("no .entry in the PTX module")
    return Program(kernels, version, target)


def _matching_brace(text, i):
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j
    raise PTXSyntaxError("unbalanced braces in the PTX module")


def _parse_params(s: str, kname: str) -> list[Param]:
    params = []
    for p in [x.strip() for x in s.split(",") if x.strip()]:
        words = p.split()
        if words[0] != ".param":
            raise PTXSyntaxError(f"kernel {kname}: bad parameter {p!r}")
        types = [w[1:] for w in words[1:-1] if w[1:] in _DTYPES]
        pname = words[-1]
        if len(types) != 1 or "[" in pname or types[0] == "pred":
            raise SimulationError(f"kernel {kname}: unsupported parameter {p!r} (scalars only)")
        params.append(Param(pname, types[0]))
    return params


def _parse_body(k: Kernel, text: str, start: int, end: int, module_shared, newlines):
    import bisect
    stmts = []       # (line, label or None, text)
    i = start
    labels = {}
    while i < end:
        c = text[i]
        if c.isspace() or c in "{}":
            i += 1
            continue
        lm = _LABEL.match(text, i)
        line = bisect.bisect_left(newlines, i) + 1
        if lm:
            if lm.group(1) in labels:
                raise PTXSyntaxError(f"kernel {k.name}: duplicate label {lm.group(1)}, line {line}")
            labels[lm.group(1)] = None
            stmts.append((line, lm.group(1), None))
            i = lm.end()
            continue
        j = text.find(";", i)
        if j < 0 or j > end:
            raise PTXSyntaxError(f"kernel {k.name}: missing ';' after line {line}: "
                                 f"{text[i:end].strip()[:60]!r}")
        stmts.append((line, None, " ".join(text[i:j].split())))
        i = j + 1
    regs: dict[str, int] = {}
    shared_decls = list(module_shared)
    for line, label, s in stmts:
        if s is None:
            continue
        if s.startswith(".reg"):
            _declare_regs(k, regs, s, line)
        elif s.startswith(".shared"):
            shared_decls.append((s, line))
        elif s.startswith(".extern"):
            raise PTXSyntaxError(f"kernel {k.name}: .extern inside a function, line {line} (ptxas: a "
                                 "parsing error; declare it at module scope)")
        elif s.startswith(".local") or s.startswith(".const") or s.startswith(".global"):
            raise SimulationError(f"kernel {k.name}: unsupported declaration, line {line}: {s}")
        elif s.startswith(".pragma"):
            pass
    _layout_shared(k, shared_decls)
    dec = _Decoder(k, regs)
    code = []
    for line, label, s in stmts:
        if label is not None:
            labels[label] = len(code)
            continue
        if s.startswith("."):
            continue
        code.append(dec.decode(s, line))
    code.append(_Ins(_EXIT, None, text.count("\n", 0, end) + 1, "} (end of kernel)"))
    for ins in code:
        if ins.kind == _BRA:
            if ins.label not in labels:
                raise PTXSyntaxError(f"kernel {k.name}: unknown label {ins.label}, line {ins.line}")
            ins.target = labels[ins.label]
    k.code = code
    k.reg_names = dec.names
    k.reg_dtypes = dec.dtypes


def _declare_regs(k, regs, s, line):
    m = re.match(r"\.reg\s+\.(\w+)\s+(.*)$", s)
    if not m or m.group(1) not in _DTYPES:
        raise SimulationError(f"kernel {k.name}: unsupported register declaration, line {line}: {s}")
    dt = _DTYPES[m.group(1)]
    k.reg_decl = getattr(k, "reg_decl", None) or {}
    for name in [x.strip() for x in m.group(2).split(",")]:
        rm = re.fullmatch(r"(%[A-Za-z_$][\w$]*)<(\d+)>", name)
        names = [f"{rm.group(1)}{j}" for j in range(int(rm.group(2)))] if rm else [name]
        for n in names:
            if not re.fullmatch(r"%[A-Za-z_$][\w$]*", n):
                raise PTXSyntaxError(f"kernel {k.name}: bad register name {n!r}, line {line}")
            if n in regs:
                raise PTXSyntaxError(f"kernel {k.name}: register {n} declared twice, line {line}")
            regs[n] = (len(regs), dt)
            k.reg_decl[n] = m.group(1)


def _layout_shared(k, decls):
    off = 0
    extern = None
    for s, line in decls:
        m = re.fullmatch(r"(\.extern\s+)?\.shared\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+"
                         r"([A-Za-z_$][\w$]*)\s*(?:\[\s*(\d*)\s*\])?", s)
        if not m or m.group(3) not in _DTYPES or m.group(3) == "pred":
            raise SimulationError(f"kernel {k.name}: unsupported shared declaration, line {line}: {s}")
        isz = np.dtype(_DTYPES[m.group(3)]).itemsize
        align = int(m.group(2) or isz)
        if m.group(1):
            extern = (m.group(4), align)
            continue
        count = int(m.group(5)) if m.group(5) else 1
        off = (off + align - 1) // align * align
        k.shared[m.group(4)] = _Shared(m.group(4), off, count * isz)
        off += count * isz
    k.static_shared = off
    if extern:
        name, align = extern
        off = (off + max(align, 16) - 1) // max(align, 16) * max(align, 16)
        k.shared[name] = _Shared(name, off, 0, extern=True)


# ----------------------------------------------------------------------------------------------
# Decoding: each instruction becomes a closure fn(ctx, sel), sel None (every lane) or an index
# array of the lanes that run it.


def _split_operands(s: str) -> list[str]:
    if "{" not in s and "[" not in s:
        return [x.strip() for x in s.split(",")]
    out, depth, cur = [], 0, []
    for c in s:
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


_INT_RE = re.compile(r"-?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9]\d*)U?")


def _parse_int(tok):
    t = tok.rstrip("U")
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if t[:2] in ("0x", "0X"):
        v = int(t, 16)
    elif t[:2] in ("0b", "0B"):
        v = int(t[2:], 2)
    elif len(t) > 1 and t[0] == "0":
        v = int(t, 8)
    else:
        v = int(t)
    return -v if neg else v


def _imm(tok, dt):
    dt = np.dtype(dt)
    if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", tok):
        if dt.itemsize != 4:
            raise PTXSyntaxError(f"0f literal {tok} for a {dt} operand")
        return np.array(int(tok[2:], 16), np.uint32).view(dt)[()]
    if re.fullmatch(r"0[dD][0-9a-fA-F]{16}", tok):
        if dt.itemsize != 8:
            raise PTXSyntaxError(f"0d literal {tok} for a {dt} operand")
        return np.array(int(tok[2:], 16), np.uint64).view(dt)[()]
    if _INT_RE.fullmatch(tok):
        v = _parse_int(tok)
        if dt.kind == "f":
            raise PTXSyntaxError(f"integer literal {tok} for a float operand (write 0f/0d hex)")
        if dt.kind == "b":
            return np.bool_(v != 0)
        bits = dt.itemsize * 8
        return np.array(v % (1 << bits), np.dtype(f"u{dt.itemsize}")).view(dt)[()]
    if re.fullmatch(r"-?\d+\.\d*([eE][-+]?\d+)?|-?\d+[eE][-+]?\d+", tok) and dt.kind == "f":
        return dt.type(float(tok))
    return None


def _float_kind(t):
    return t[0] == "f"


class _Decoder:
    def __init__(self, k: Kernel, regs):
        self.k = k
        self._strict = self._canon = self._widen = False
        self.regs = regs
        self.names = [None] * len(regs)
        self.dtypes = [None] * len(regs)
        for n, (slot, dt) in regs.items():
            self.names[slot] = n
            self.dtypes[slot] = np.dtype(dt)

    # operands ----------------------------------------------------------------------------

    def reg(self, tok, t=None):
        if tok not in self.regs:
            raise PTXSyntaxError(f"unknown register {tok}")
        slot, dt = self.regs[tok]
        if t is not None and self._strict and t[0] in "usf":
            # ptxas type-checks typed registers: a float operand of a .u/.s/.f instruction type in a
            # .u/.s register or the reverse (.b types and vector ld/st are lax)
            decl = self.k.reg_decl[tok]
            if decl[0] in "usf" and (decl[0] == "f") != (t[0] == "f"):
                raise PTXSyntaxError(f"a .{t} operand in register {tok} declared .{decl} "
                                     "(ptxas: Arguments mismatch)")
        return slot, np.dtype(dt)

    def src(self, tok, t):
        """fetch(ctx, sel) for operand ``tok`` read as PTX type ``t``."""
        want = np.dtype(_DTYPES[t])
        neg = False
        if tok.startswith("!") and t == "pred":
            neg, tok = True, tok[1:]
        if tok.startswith("%"):
            base = tok.split(".")[0]
            if tok == "%warpid":
                raise SimulationError("%warpid is the warp's physical slot on the SM (volatile; an H100 gives "
                                      "other values than the warp index in the block): compute the warp "
                                      "index from %tid (linear id / 32)")
            if base in _SPECIAL or tok == "%laneid":
                if tok != "%laneid" and not re.fullmatch(r"%\w+\.[xyz]", tok):
                    raise PTXSyntaxError(f"bad special register {tok}")
                self.k.specials.add(tok)
                if want.itemsize < 4 or want.kind == "f":
                    raise SimulationError(f"special register {tok} read as .{t}")

                def fetch_special(ctx, sel, tok=tok, want=want):
                    v = ctx.special[tok]
                    v = v if sel is None else v[sel]
                    return v if v.dtype == want else v.astype(want)
                return fetch_special
            slot, rd = self.reg(tok, t)
            if rd == want and rd.kind == "b":
                def fetch_pred(ctx, sel):
                    ctx.check_pred(slot, sel)
                    v = ctx.regs[slot] if sel is None else ctx.regs[slot][sel]
                    return ~v if neg else v
                return fetch_pred
            if rd == want:
                if neg:
                    return lambda ctx, sel: ~(ctx.regs[slot] if sel is None else ctx.regs[slot][sel])
                return lambda ctx, sel: ctx.regs[slot] if sel is None else ctx.regs[slot][sel]
            if rd.kind == "b" or want.kind == "b":
                raise PTXSyntaxError(f"predicate register {tok} used as .{t} (or the reverse)")
            if rd.itemsize == want.itemsize:
                return lambda ctx, sel: (ctx.regs[slot] if sel is None else ctx.regs[slot][sel]).view(want)
            if rd.itemsize > want.itemsize and rd.kind in "iu" and want.kind in "iu" and self._widen:
                # cvt from a sub-word type held in a wider register: its low bits
                return lambda ctx, sel: (ctx.regs[slot] if sel is None else ctx.regs[slot][sel]).astype(want)
            raise PTXSyntaxError(f"register {tok} (.{_tname(rd)}) read as .{t} (ptxas: Arguments mismatch)")
        if tok in self.k.shared:
            sh = self.k.shared[tok]
            if want.kind not in "iu" or want.itemsize < 4:
                raise SimulationError(f"shared symbol {tok} read as .{t}")
            v = want.type(_SHARED_BASE + sh.offset)
            return lambda ctx, sel: v
        v = _imm(tok, want)
        if v is None:
            raise PTXSyntaxError(f"bad operand {tok!r} for .{t}")
        return lambda ctx, sel: v

    def dst(self, tok, t):
        """store(ctx, sel, value) writing a value of PTX type ``t`` to register ``tok``."""
        have = np.dtype(_DTYPES[t])
        slot, rd = self.reg(tok, t)
        if getattr(self, "_canon", False) and t in ("f32", "f16"):
            store = self._dst(slot, rd, have, tok, t)
            canon = _CANON_NAN[t]

            def store_canonical(ctx, sel, v):
                v = np.asarray(v, have)
                nan = np.isnan(v)
                if nan.any():
                    v = np.where(nan, canon, v)
                store(ctx, sel, v)
            return store_canonical
        return self._dst(slot, rd, have, tok, t)

    def _dst(self, slot, rd, have, tok, t):
        if rd == have:
            conv = None
        elif (rd.kind == "b") != (have.kind == "b"):
            raise PTXSyntaxError(f"predicate register {tok} written as .{t} (or the reverse)")
        elif rd.itemsize == have.itemsize:
            def conv(v):
                return np.asarray(v, have).view(rd)
        elif rd.itemsize > have.itemsize and rd.kind in "iu" and have.kind in "iu" and self._widen:
            # a sub-word load into a wider register: zero- or sign-extended as its type says
            def conv(v):
                return np.asarray(v, have).astype(rd)
        else:
            raise PTXSyntaxError(f"register {tok} (.{_tname(rd)}) written as .{t} (ptxas: Arguments mismatch)")

        def store(ctx, sel, v):
            if conv is not None:
                v = conv(v)
            r = ctx.regs[slot]
            if sel is None:
                r[...] = v
            else:
                r[sel] = v
        if rd.kind == "b":
            def store_pred(ctx, sel, v):
                store(ctx, sel, v)
                d = ctx.pdef[slot]
                if sel is None:
                    d[...] = True
                else:
                    d[sel] = True
            return store_pred
        return store

    def addr(self, tok, space):
        """(fetch of the base address as uint64, constant offset, symbol or None)."""
        m = re.fullmatch(r"\[\s*([^\]+]+?)\s*(?:\+\s*(-?\w+)\s*)?\]", tok)
        if not m:
            raise PTXSyntaxError(f"bad address operand {tok!r}")
        base, off = m.group(1), m.group(2)
        off = _parse_int(off) if off else 0
        if base.startswith("%"):
            slot, rd = self.reg(base)
            if rd.kind not in "iu" or rd.itemsize not in (4, 8):
                raise SimulationError(f"address register {base} is .{_tname(rd)}")
            if space == "global" and rd.itemsize != 8:
                raise SimulationError(f"global address in 32-bit register {base}")

            def fetch(ctx, sel):
                v = ctx.regs[slot] if sel is None else ctx.regs[slot][sel]
                return v.astype(np.uint64) if v.dtype != np.uint64 else v
            return fetch, off, None
        if space == "shared" and base in self.k.shared:
            v = np.uint64(_SHARED_BASE + self.k.shared[base].offset)
            return (lambda ctx, sel: v), off, base
        if space == "param":
            return None, off, base
        v = _imm(base, np.uint64)
        if v is None:
            raise PTXSyntaxError(f"bad address operand {tok!r}")
        return (lambda ctx, sel: v), off, None

    # instructions ------------------------------------------------------------------------

    def decode(self, s, line):
        guard, neg = None, False
        m = re.match(r"@(!?)(%\w+)\s+", s)
        if m:
            neg = m.group(1) == "!"
            slot, dt = self.reg(m.group(2))
            if dt.kind != "b":
                raise SimulationError(f"kernel {self.k.name}: guard {m.group(2)} is not a .pred, line {line}")
            guard = slot
            s2 = s[m.end():]
        else:
            s2 = s
        parts = s2.split(None, 1)
        opcode = parts[0]
        ops = _split_operands(parts[1]) if len(parts) > 1 else []
        name, *mods = opcode.split(".")
        try:
            ins = self._decode(name, mods, ops, opcode)
        except SimulationError as e:
            if f"line {line}" in str(e):
                raise
            raise type(e)(f"kernel {self.k.name}, line {line}: {s}: {e}") from None
        except (ValueError, IndexError) as e:
            raise PTXSyntaxError(f"kernel {self.k.name}, line {line}: {s}: {e}") from None
        kind, fn, label = ins
        if kind == _OP and guard is not None:
            fn = _guarded(fn, guard, neg)
        ins = _Ins(kind, fn, line, s, guard if kind != _OP else None, neg, label)
        ins.uni = kind == _BRA and "uni" in mods
        return ins

    def _unsupported(self, opcode, why=""):
        raise SimulationError(f"unsupported instruction {opcode}" + (f" ({why})" if why else ""))

    def _decode(self, name, mods, ops, opcode):
        fn = getattr(self, "_i_" + name, None)
        if fn is None:
            self._unsupported(opcode)
        for bad in ("ftz", "sat", "cc", "relu", "volatile", "relaxed", "acquire", "release"):
            if bad in mods:
                self._unsupported(opcode, f".{bad} is outside the subset")
        # float32 arithmetic gives the canonical NaN on a GPU (checked on an H100)
        self._canon = name in _CANON_NAN_OPS
        self._strict = True
        self._widen = False
        return fn(mods, ops, opcode)

    def _nops(self, ops, n, opcode):
        if len(ops) != n:
            raise PTXSyntaxError(f"{opcode} takes {n} operands, got {len(ops)}")

    def _type(self, mods, opcode, allowed=None):
        ts = [m for m in mods if m in _DTYPES]
        if not ts:
            raise PTXSyntaxError(f"{opcode}: no type")
        t = ts[-1]
        if allowed is not None and t not in allowed:
            self._unsupported(opcode, f".{t}")
        return t

    # control ---------------------------------------------------------------------------------

    def _i_bra(self, mods, ops, opcode):
        if set(mods) - {"uni"} or len(ops) != 1:
            self._unsupported(opcode)
        return _BRA, None, ops[0]

    def _i_ret(self, mods, ops, opcode):
        if mods or ops:
            self._unsupported(opcode)
        return _EXIT, None, None

    _i_exit = _i_ret

    def _i_bar(self, mods, ops, opcode):
        if [m for m in mods if m != "aligned"] != ["sync"] or ops != ["0"]:
            self._unsupported(opcode, "only bar.sync 0")
        return _BAR, None, None

    _i_barrier = _i_bar

    # data movement ---------------------------------------------------------------------------

    def _i_mov(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        self._nops(ops, 2, opcode)
        if ops[1].startswith("{") and t == "b32" and not ops[0].startswith("{"):
            return self._pack16(ops, opcode)
        if ops[0].startswith("{") and t == "b32" and not ops[1].startswith("{"):
            return self._unpack16(ops, opcode)
        if ops[1].startswith("{") or ops[0].startswith("{"):
            self._unsupported(opcode, "vector pack/unpack (only mov.b32 of two .b16)")
        src, dst = self.src(ops[1], t), self.dst(ops[0], t)
        return _OP, lambda ctx, sel: dst(ctx, sel, src(ctx, sel)), None

    def _pack16(self, ops, opcode):
        """``mov.b32 %r, {%h0, %h1}``: the first element in the low half."""
        lo, hi = (self.src(x, "b16") for x in _vector_regs(ops[1], 2))
        dst = self.dst(ops[0], "b32")

        def pack(ctx, sel):
            a = np.asarray(lo(ctx, sel)).astype(np.uint32)
            b = np.asarray(hi(ctx, sel)).astype(np.uint32)
            dst(ctx, sel, a | (b << np.uint32(16)))
        return _OP, pack, None

    def _unpack16(self, ops, opcode):
        """``mov.b32 {%h0, %h1}, %r``: the low half to the first register."""
        lo, hi = (self.dst(x, "b16") for x in _vector_regs(ops[0], 2))
        src = self.src(ops[1], "b32")

        def unpack(ctx, sel):
            v = np.asarray(src(ctx, sel)).astype(np.uint32)
            lo(ctx, sel, (v & np.uint32(0xFFFF)).astype(np.uint16))
            hi(ctx, sel, (v >> np.uint32(16)).astype(np.uint16))
        return _OP, unpack, None

    def _i_ldmatrix(self, mods, ops, opcode):
        """ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16: per warp,
        lane 8 j + r gives the address of row r of matrix j (16 bytes, 16-byte
        aligned; x1/x2 read lanes 0-7/0-15 only); lane l receives in register
        j the two elements of matrix j at row l >> 2, columns 2 (l & 3) and + 1,
        or with .trans at rows 2 (l & 3) and + 1 of column l >> 2 (the first
        in the low half): PTX's "Warp-level matrix load instruction: ldmatrix".
        The rows are read as 16-byte shared loads of their address lanes (the
        bounds, alignment and race checks of ld.shared.v4)."""
        forms = {f"sync.aligned.m8n8.x{n}{t}.shared.b16": (n, bool(t)) for n in (1, 2, 4) for t in ("", ".trans")}
        form = forms.get(".".join(mods))
        if form is None:
            self._unsupported(opcode, "only ldmatrix.sync.aligned.m8n8.x1/.x2/.x4[.trans].shared.b16")
        num, trans = form
        self._nops(ops, 2, opcode)
        self._strict = False  # fragment registers are .b32 (ptxas: any 32-bit register)
        regs = [x.strip() for x in ops[0][1:-1].split(",")] if ops[0].startswith("{") else [ops[0]]
        if len(regs) != num:
            raise PTXSyntaxError(f"{opcode} needs {num} destination registers, got {ops[0]}")
        dsts = [self.dst(x, "b32") for x in regs]
        fetch, off, _ = self.addr(ops[1], "shared")
        self.k.min_shared_access = min(self.k.min_shared_access, 4)

        def ldmatrix(ctx, sel):
            pos = ctx.check_full_warps(sel, "ldmatrix (a warp-wide instruction)")
            lane = ctx.special_all("%laneid")
            lane = (lane if sel is None else lane[sel]).astype(np.int64)
            a = fetch(ctx, sel)
            if off:
                a = a + np.uint64(off & 0xFFFFFFFFFFFFFFFF)
            a = np.broadcast_to(_lanes(a, ctx, sel), lane.shape)
            w = pos // 32
            nw = int(w.max()) + 1 if len(w) else 0
            readers = np.flatnonzero(lane < 8 * num)     # the address lanes
            rsel = readers if sel is None else sel[readers]
            rows = ctx.shared_access(np.ascontiguousarray(a[readers]), rsel, np.dtype(np.uint16), 8, 16, None)
            M = np.zeros((nw, num, 8, 8), np.uint16)     # per warp, matrix, row, column
            M[w[readers], lane[readers] >> 3, lane[readers] & 7] = rows
            g, t = lane >> 2, lane & 3
            for j, st in enumerate(dsts):
                if trans:
                    lo, hi = M[w, j, 2 * t, g], M[w, j, 2 * t + 1, g]
                else:
                    lo, hi = M[w, j, g, 2 * t], M[w, j, g, 2 * t + 1]
                st(ctx, sel, lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16)))
        return _OP, ldmatrix, None

    def _i_cp(self, mods, ops, opcode):
        """cp.async.cg.shared.global [s], [g], 16, n: the first n bytes (0 to 16)
        of g read now (bounds as ld.global's; both addresses 16-byte aligned),
        the 16 bytes (the rest zero) written to s only when the thread executes
        cp.async.wait_all (then as a shared store of that thread: bounds and the
        race check), so a read before the wait sees the old bytes, as a GPU may."""
        if mods == ["async", "wait_all"]:
            self._nops(ops, 0, opcode)

            def wait(ctx, sel):
                keep = []
                for lanes, dst, data in ctx.cp_async:
                    mine = np.isin(lanes, np.arange(ctx.n) if sel is None else sel)
                    if mine.any():
                        ctx.shared_access(dst[mine], lanes[mine], np.dtype(np.uint32), 4, 16, data[mine])
                    if not mine.all():
                        keep.append((lanes[~mine], dst[~mine], data[~mine]))
                ctx.cp_async = keep
            return _OP, wait, None
        if mods != ["async", "cg", "shared", "global"]:
            self._unsupported(opcode, "only cp.async.cg.shared.global [s], [g], 16, n and cp.async.wait_all")
        self._nops(ops, 4, opcode)
        if ops[2] != "16":
            self._unsupported(opcode, "a copy size other than 16")
        dfetch, doff, _ = self.addr(ops[0], "shared")
        gfetch, goff, _ = self.addr(ops[1], "global")
        count = self.src(ops[3], "u32")
        self.k.min_shared_access = min(self.k.min_shared_access, 4)
        self.k.min_global_access = min(self.k.min_global_access, 1)

        def cp(ctx, sel):
            lanes = np.arange(ctx.n) if sel is None else np.asarray(sel)
            d = _lanes(dfetch(ctx, sel), ctx, sel) + np.uint64(doff & 0xFFFFFFFFFFFFFFFF)
            g = _lanes(gfetch(ctx, sel), ctx, sel) + np.uint64(goff & 0xFFFFFFFFFFFFFFFF)
            n = np.broadcast_to(np.asarray(count(ctx, sel)).astype(np.int64), lanes.shape)
            bad = (n > 16) | (g % np.uint64(16) != 0) | (d % np.uint64(16) != 0)
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                ctx.fail(lanes[j], f"cp.async of {int(n[j])} bytes from {int(g[j]):#x} to {int(d[j]):#x} "
                                   "(the count is 0 to 16, both addresses 16-byte aligned)")
            data = np.zeros((len(lanes), 16), np.uint8)
            full = n == 16
            if full.any():
                data[full] = ctx.global_load(g[full], lanes[full], np.dtype(np.uint8), 16, 16)
            for b in range(15):  # a partial copy reads only its n bytes (the rest may lie past the buffer)
                part = (n > b) & ~full
                if part.any():
                    data[part, b] = ctx.global_load(g[part] + np.uint64(b), lanes[part], np.dtype(np.uint8), 1, 1)
            ctx.cp_async.append((lanes, d, data.view(np.uint32)))
        return _OP, cp, None

    def _i_mma_s8(self, ops, opcode):
        """mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32: per warp, D = A B + C
        in int32 with wraparound (no .satfinite), with PTX's "Matrix Fragments
        for mma.m16n8k32" (g = laneid >> 2, t = laneid % 4; register j of A
        holds bytes k = 4t + 16 (j >> 1) + 0..3 of row g + 8 (j & 1), low byte
        first; register j of B bytes k = 4t + 16 j + 0..3 of column g; c_i, d_i
        at row g + 8 (i >> 1), column 2t + (i & 1)). Computed exactly in int64
        (|sum| <= 32 * 2^14 + 2^31), then wrapped to int32."""
        self._nops(ops, 4, opcode)
        self._strict = False
        d = [self.dst(x, "s32") for x in _vector_regs(ops[0], 4)]
        a = [self.src(x, "b32") for x in _vector_regs(ops[1], 4)]
        b = [self.src(x, "b32") for x in _vector_regs(ops[2], 2)]
        c = [self.src(x, "s32") for x in _vector_regs(ops[3], 4)]

        def codes(r, ctx, sel, shape):
            v = np.broadcast_to(np.asarray(r(ctx, sel), np.uint32), shape)
            return [((v >> np.uint32(8 * i)) & np.uint32(0xFF)).astype(np.uint8).view(np.int8).astype(np.int64)
                    for i in range(4)]

        def mma(ctx, sel):
            shape, w, nw, g, t = _mma_lanes(ctx, sel)
            A, B, C = (np.zeros((nw, 16, 32), np.int64), np.zeros((nw, 32, 8), np.int64),
                       np.zeros((nw, 16, 8), np.int64))
            for j, r in enumerate(a):
                for i, v in enumerate(codes(r, ctx, sel, shape)):
                    A[w, g + 8 * (j & 1), 4 * t + 16 * (j >> 1) + i] = v
            for j, r in enumerate(b):
                for i, v in enumerate(codes(r, ctx, sel, shape)):
                    B[w, 4 * t + 16 * j + i, g] = v
            for i, r in enumerate(c):
                C[w, g + 8 * (i >> 1), 2 * t + (i & 1)] = np.broadcast_to(np.asarray(r(ctx, sel), np.int32), shape)
            D = (np.matmul(A, B) + C).astype(np.int32)  # int64 -> int32 keeps the low 32 bits: the wrap
            for i, st in enumerate(d):
                st(ctx, sel, D[w, g + 8 * (i >> 1), 2 * t + (i & 1)])
        return _OP, mma, None

    def _i_mma(self, mods, ops, opcode):
        """mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32: per warp, D = A B + C
        with the fragment layouts of PTX's "Matrix Fragments for mma.m16n8k16
        with floating point type" (g = laneid >> 2, t = laneid % 4; a_i at row
        g + 8 ((i >> 1) & 1), column 2t + (i & 1) + 8 (i >> 2); b_i at row
        2t + (i & 1) + 8 (i >> 1), column g; c_i, d_i at row g + 8 (i >> 1),
        column 2t + (i & 1); element 2j low and 2j + 1 high in register j).
        The products of float16 values are exact in float64 and the sum of
        16 of them and c nearly so: each d is that sum rounded once to float32.
        A tensor core accumulates with its own (unspecified) roundings, within
        the float32 accumulation bound of the same sum."""
        if ".".join(mods) == "sync.aligned.m16n8k32.row.col.s32.s8.s8.s32":
            return self._i_mma_s8(ops, opcode)
        if ".".join(mods) != "sync.aligned.m16n8k16.row.col.f32.f16.f16.f32":
            self._unsupported(opcode, "only mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 and "
                                      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32")
        self._nops(ops, 4, opcode)
        self._strict = False  # fragment registers are .b32 (ptxas: any 32-bit register)
        d = [self.dst(x, "f32") for x in _vector_regs(ops[0], 4)]
        a = [self.src(x, "b32") for x in _vector_regs(ops[1], 4)]
        b = [self.src(x, "b32") for x in _vector_regs(ops[2], 2)]
        c = [self.src(x, "f32") for x in _vector_regs(ops[3], 4)]

        def halves(regs, ctx, sel, shape):
            out = []
            for r in regs:
                v = np.broadcast_to(np.asarray(r(ctx, sel), np.uint32), shape)
                for h in (v & np.uint32(0xFFFF), v >> np.uint32(16)):
                    out.append(h.astype(np.uint16).view(np.float16).astype(np.float64))
            return out

        def mma(ctx, sel):
            shape, w, nw, g, t = _mma_lanes(ctx, sel)
            A, B, C = np.zeros((nw, 16, 16)), np.zeros((nw, 16, 8)), np.zeros((nw, 16, 8))
            for i, v in enumerate(halves(a, ctx, sel, shape)):
                A[w, g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)] = v
            for i, v in enumerate(halves(b, ctx, sel, shape)):
                B[w, 2 * t + (i & 1) + 8 * (i >> 1), g] = v
            for i, r in enumerate(c):
                C[w, g + 8 * (i >> 1), 2 * t + (i & 1)] = np.broadcast_to(np.asarray(r(ctx, sel), np.float32), shape)
            with np.errstate(all="ignore"):
                D = (np.matmul(A, B) + C).astype(np.float32)
            for i, st in enumerate(d):
                st(ctx, sel, D[w, g + 8 * (i >> 1), 2 * t + (i & 1)])
        return _OP, mma, None

    def _i_cvta(self, mods, ops, opcode):
        if mods not in (["to", "global", "u64"], ["global", "u64"]):
            self._unsupported(opcode, "only cvta(.to).global.u64")
        self._nops(ops, 2, opcode)
        src, dst = self.src(ops[1], "u64"), self.dst(ops[0], "u64")
        return _OP, lambda ctx, sel: dst(ctx, sel, src(ctx, sel)), None

    def _vec(self, mods):
        for m in mods:
            if m in ("v2", "v4"):
                return int(m[1])
            if m == "v8":
                self._unsupported("v8", "256-bit accesses need sm_100")
        return 1

    def _i_ld(self, mods, ops, opcode):
        self._vec(mods)
        space = "generic"
        for sp in ("param", "global", "shared"):
            if sp in mods:
                space = sp
        extra = set(mods) - {"param", "global", "shared", "nc", "v2", "v4"} - set(_DTYPES)
        if extra or ("nc" in mods and space != "global"):
            self._unsupported(opcode, " ".join("." + m for m in sorted(extra)) or ".nc outside .global")
        t = self._type(mods, opcode)
        if t == "pred":
            self._unsupported(opcode)
        vec = self._vec(mods)
        self._strict = vec == 1     # ptxas lets a vector access use registers of any type of the size
        self._widen = True
        self._nops(ops, 2, opcode)
        dsts = _vector_regs(ops[0], vec)
        dt = np.dtype(_DTYPES[t])
        rt = t
        if t[1:] in ("8", "16"):
            # sub-word loads into wider registers are zero/sign extended (PTX rule)
            rd = self.reg(dsts[0])[1]
            if rd.itemsize > dt.itemsize:
                rt = ("s" if t[0] == "s" else "u") + str(rd.itemsize * 8)
        stores = [self.dst(d, rt) for d in dsts]
        fetch, off, sym = self.addr(ops[1], space)
        line_text = opcode
        if space == "param":
            p = next((p for p in self.k.params if p.name == sym), None)
            if p is None:
                raise PTXSyntaxError(f"unknown parameter {sym}")
            if off < 0 or off + vec * dt.itemsize > p.dtype.itemsize:
                raise SimulationError(f"{opcode}: reads past parameter {sym}")

            def ld_param(ctx, sel):
                vals = np.frombuffer(ctx.params[sym], dt, count=vec, offset=off)
                for j, st in enumerate(stores):
                    st(ctx, sel, vals[j].astype(_DTYPES[rt]) if rt != t else vals[j])
            return _OP, ld_param, None
        nbytes = vec * dt.itemsize
        shared = space == "shared"
        if shared:
            self.k.min_shared_access = min(self.k.min_shared_access, dt.itemsize)
        else:
            self.k.min_global_access = min(self.k.min_global_access, dt.itemsize)
        nc = "nc" in mods
        self.k.has_nc |= nc

        def ld(ctx, sel):
            a = fetch(ctx, sel)
            if off:
                a = a + np.uint64(off & 0xFFFFFFFFFFFFFFFF)
            a = _lanes(a, ctx, sel)
            vals = (ctx.shared_access(a, sel, dt, vec, nbytes, None) if shared
                    else ctx.global_load(a, sel, dt, vec, nbytes, nc))
            for j, st in enumerate(stores):
                v = vals[:, j] if vec > 1 else vals
                st(ctx, sel, v if rt == t else v.astype(_DTYPES[rt]))
        ld.__name__ = line_text
        return _OP, ld, None

    def _i_st(self, mods, ops, opcode):
        self._vec(mods)
        space = "generic"
        for sp in ("global", "shared"):
            if sp in mods:
                space = sp
        extra = set(mods) - {"global", "shared", "v2", "v4"} - set(_DTYPES)
        if extra:
            self._unsupported(opcode, " ".join("." + m for m in sorted(extra)))
        t = self._type(mods, opcode)
        vec = self._vec(mods)
        self._strict = vec == 1
        self._nops(ops, 2, opcode)
        srcs = [self._src_st(s, t) for s in _vector_regs(ops[1], vec)]
        fetch, off, _ = self.addr(ops[0], space)
        dt = np.dtype(_DTYPES[t])
        nbytes = vec * dt.itemsize
        shared = space == "shared"
        if shared:
            self.k.min_shared_access = min(self.k.min_shared_access, dt.itemsize)
        else:
            self.k.min_global_access = min(self.k.min_global_access, dt.itemsize)
            self.k.has_global_write = True

        def st(ctx, sel):
            a = fetch(ctx, sel)
            if off:
                a = a + np.uint64(off & 0xFFFFFFFFFFFFFFFF)
            a = _lanes(a, ctx, sel)
            n = len(a)
            vals = np.empty((n, vec), dt)
            for j, s in enumerate(srcs):
                vals[:, j] = s(ctx, sel)
            if shared:
                ctx.shared_access(a, sel, dt, vec, nbytes, vals)
            else:
                ctx.global_store(a, sel, dt, vec, nbytes, vals)
        return _OP, st, None

    def _src_st(self, tok, t):
        dt = np.dtype(_DTYPES[t])
        if tok.startswith("%") and dt.itemsize < 4:
            slot, rd = self.reg(tok)
            if rd.itemsize > dt.itemsize and rd.kind in "iu":
                return lambda ctx, sel: (ctx.regs[slot] if sel is None else ctx.regs[slot][sel]).astype(dt)
        return self.src(tok, t)

    # arithmetic ------------------------------------------------------------------------------

    def _binary(self, ops, t, opcode, f, dt_out=None, t_b=None):
        self._nops(ops, 3, opcode)
        a, b = self.src(ops[1], t), self.src(ops[2], t_b or t)
        d = self.dst(ops[0], dt_out or t)
        return _OP, lambda ctx, sel: d(ctx, sel, f(a(ctx, sel), b(ctx, sel))), None

    def _unary(self, ops, t, opcode, f, t_out=None):
        self._nops(ops, 2, opcode)
        a, d = self.src(ops[1], t), self.dst(ops[0], t_out or t)
        return _OP, lambda ctx, sel: d(ctx, sel, f(a(ctx, sel))), None

    def _float_rn(self, mods, t, opcode):
        rnd = [m for m in mods if m in ("rn", "rz", "rm", "rp")]
        if rnd != ["rn"]:
            self._unsupported(opcode, "float arithmetic must be .rn (ptxas contracts unrounded "
                                      "mul/add to fma)" if not rnd else f".{rnd[0]}")

    def _i_add(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        if _float_kind(t):
            self._float_rn(mods, t, opcode)
            return self._binary(ops, t, opcode, np.add)
        return self._binary(ops, t, opcode, np.add)

    def _i_sub(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        if _float_kind(t):
            self._float_rn(mods, t, opcode)
        return self._binary(ops, t, opcode, np.subtract)

    def _i_mul(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        if _float_kind(t):
            self._float_rn(mods, t, opcode)
            return self._binary(ops, t, opcode, np.multiply)
        mode = [m for m in mods if m in ("lo", "hi", "wide")]
        if len(mode) != 1:
            raise PTXSyntaxError(f"{opcode}: integer mul needs .lo, .hi or .wide")
        if mode[0] == "lo":
            return self._binary(ops, t, opcode, np.multiply)
        if mode[0] == "hi":
            return self._binary(ops, t, opcode, _mulhi)
        wt = _wide(t, opcode)
        wd = np.dtype(_DTYPES[wt])
        return self._binary(ops, t, opcode,
                            lambda x, y: np.asarray(x).astype(wd) * np.asarray(y).astype(wd), dt_out=wt)

    def _i_mad(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        if _float_kind(t):
            self._float_rn(mods, t, opcode)
            return self._i_fma(mods, ops, opcode)
        mode = [m for m in mods if m in ("lo", "hi", "wide")]
        if len(mode) != 1:
            raise PTXSyntaxError(f"{opcode}: integer mad needs .lo, .hi or .wide")
        self._nops(ops, 4, opcode)
        ct = _wide(t, opcode) if mode[0] == "wide" else t
        a, b, c = self.src(ops[1], t), self.src(ops[2], t), self.src(ops[3], ct)
        d = self.dst(ops[0], ct)
        wd = np.dtype(_DTYPES[ct])
        if mode[0] == "lo":
            def f(x, y, z):
                return np.add(np.multiply(x, y), z)
        elif mode[0] == "hi":
            def f(x, y, z):
                return np.add(_mulhi(x, y), z)
        else:
            def f(x, y, z):
                return np.add(np.multiply(np.asarray(x).astype(wd), np.asarray(y).astype(wd)), z)
        return _OP, lambda ctx, sel: d(ctx, sel, f(a(ctx, sel), b(ctx, sel), c(ctx, sel))), None

    def _i_fma(self, mods, ops, opcode):
        t = self._type(mods, opcode, ("f32", "f64"))
        self._float_rn(mods, t, opcode)
        self._nops(ops, 4, opcode)
        a, b, c = self.src(ops[1], t), self.src(ops[2], t), self.src(ops[3], t)
        d = self.dst(ops[0], t)
        f = _fma32 if t == "f32" else _fma64
        return _OP, lambda ctx, sel: d(ctx, sel, f(a(ctx, sel), b(ctx, sel), c(ctx, sel))), None

    def _i_div(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        if _float_kind(t):
            if "approx" in mods or "full" in mods:
                if t != "f32":
                    self._unsupported(opcode)
                return self._binary(ops, t, opcode, lambda x, y: _approx(np.divide, x, y))
            self._float_rn(mods, t, opcode)
            return self._binary(ops, t, opcode, np.divide)
        return self._binary(ops, t, opcode, _idiv)

    def _i_rem(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        if _float_kind(t):
            self._unsupported(opcode)
        return self._binary(ops, t, opcode, _irem)

    def _i_neg(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        if t[0] == "u" or t[0] == "b":
            self._unsupported(opcode)
        if t == "f64":   # an H100 leaves a NaN as it is (f32: the canonical NaN)
            return self._unary(ops, t, opcode, lambda x: np.where(np.isnan(x), x, np.negative(x)))
        return self._unary(ops, t, opcode, np.negative)

    def _i_abs(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        if t[0] == "u" or t[0] == "b":
            self._unsupported(opcode)
        return self._unary(ops, t, opcode, np.abs)

    def _minmax(self, mods, ops, opcode, is_min):
        t = self._type(mods, opcode)
        if t[0] == "b":
            self._unsupported(opcode)
        if not _float_kind(t):
            return self._binary(ops, t, opcode, np.minimum if is_min else np.maximum)
        nan = "NaN" in mods
        return self._binary(ops, t, opcode, lambda x, y: _fminmax(x, y, is_min, nan))

    def _i_min(self, mods, ops, opcode):
        return self._minmax(mods, ops, opcode, True)

    def _i_max(self, mods, ops, opcode):
        return self._minmax(mods, ops, opcode, False)

    def _bitwise(self, mods, ops, opcode, f):
        t = self._type(mods, opcode, ("pred", "b16", "b32", "b64"))
        return self._binary(ops, t, opcode, f)

    def _i_and(self, mods, ops, opcode):
        return self._bitwise(mods, ops, opcode, np.bitwise_and)

    def _i_or(self, mods, ops, opcode):
        return self._bitwise(mods, ops, opcode, np.bitwise_or)

    def _i_xor(self, mods, ops, opcode):
        return self._bitwise(mods, ops, opcode, np.bitwise_xor)

    def _i_not(self, mods, ops, opcode):
        t = self._type(mods, opcode, ("pred", "b16", "b32", "b64"))
        return self._unary(ops, t, opcode, np.invert)

    def _i_shl(self, mods, ops, opcode):
        t = self._type(mods, opcode, ("b16", "b32", "b64"))
        bits = np.dtype(_DTYPES[t]).itemsize * 8
        dt = _DTYPES[t]

        def f(x, s):
            s = np.asarray(s, np.uint32)
            big = s >= bits
            r = np.left_shift(x, np.minimum(s, bits - 1).astype(dt))
            return np.where(big, dt(0), r) if np.any(big) else r
        return self._binary(ops, t, opcode, f, t_b="u32")

    def _i_shr(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        if t == "pred" or _float_kind(t):
            self._unsupported(opcode)
        bits = np.dtype(_DTYPES[t]).itemsize * 8
        dt = _DTYPES[t]
        signed = t[0] == "s"

        def f(x, s):
            s = np.minimum(np.asarray(s, np.uint32), bits)
            if signed:   # arithmetic shift; past the width it fills with the sign
                return np.right_shift(x, np.minimum(s, bits - 1).astype(dt))
            r = np.right_shift(x, np.minimum(s, bits - 1).astype(dt))
            return np.where(s >= bits, dt(0), r)
        return self._binary(ops, t, opcode, f, t_b="u32")

    def _i_dp4a(self, mods, ops, opcode):
        """dp4a.s32.s32 d, a, b, c: d = c + the four products of a's and b's
        bytes, each sign-extended (the PTX ISA's semantics), wrapping in int32."""
        if list(mods) != ["s32", "s32"]:
            self._unsupported(opcode, "only dp4a.s32.s32")
        self._nops(ops, 4, opcode)
        a, b, c = self.src(ops[1], "s32"), self.src(ops[2], "s32"), self.src(ops[3], "s32")
        d = self.dst(ops[0], "s32")

        def signed_byte(v, i):
            b = (np.asarray(v).astype(np.int64) >> (8 * i)) & 0xFF
            return b - ((b & 0x80) << 1)  # sign-extended

        def f(x, y, z):
            total = np.asarray(z).astype(np.int64)
            for i in range(4):  # |sum| < 2^17 + 2^31: exact in int64
                total = total + signed_byte(x, i) * signed_byte(y, i)
            return total.astype(np.int32)  # int64 -> int32 keeps the low 32 bits: PTX's wrap-around
        return _OP, lambda ctx, sel: d(ctx, sel, f(a(ctx, sel), b(ctx, sel), c(ctx, sel))), None

    def _i_popc(self, mods, ops, opcode):
        t = self._type(mods, opcode, ("b32", "b64"))
        return self._unary(ops, t, opcode, _popc, t_out="u32")

    def _i_clz(self, mods, ops, opcode):
        t = self._type(mods, opcode, ("b32", "b64"))
        bits = 32 if t == "b32" else 64
        return self._unary(ops, t, opcode, lambda x: _clz(x, bits), t_out="u32")

    def _i_brev(self, mods, ops, opcode):
        t = self._type(mods, opcode, ("b32", "b64"))
        bits = 32 if t == "b32" else 64
        return self._unary(ops, t, opcode, lambda x: _brev(x, bits))

    def _i_copysign(self, mods, ops, opcode):
        t = self._type(mods, opcode, ("f32", "f64"))
        # copysign d, a, b: b's magnitude with a's sign (PTX operand order)
        return self._binary(ops, t, opcode, lambda a, b: np.copysign(b, a))

    def _i_testp(self, mods, ops, opcode):
        t = self._type(mods, opcode, ("f32", "f64"))
        op = [m for m in mods if m != t]
        fs = {"finite": np.isfinite, "infinite": np.isinf, "number": lambda x: ~np.isnan(x),
              "notanumber": np.isnan,
              "normal": lambda x: np.isfinite(x) & ((np.abs(x) >= np.finfo(x.dtype).tiny) | (x == 0)),
              "subnormal": lambda x: (np.abs(x) < np.finfo(x.dtype).tiny) & (x != 0)}
        if len(op) != 1 or op[0] not in fs:
            self._unsupported(opcode)
        f = fs[op[0]]
        return self._unary(ops, t, opcode, lambda x: f(np.asarray(x)), t_out="pred")

    def _i_sqrt(self, mods, ops, opcode):
        t = self._type(mods, opcode, ("f32", "f64"))
        if "approx" in mods and t == "f32":
            return self._unary(ops, t, opcode, lambda x: _approx(np.sqrt, x))
        self._float_rn(mods, t, opcode)
        return self._unary(ops, t, opcode, np.sqrt)

    def _i_rcp(self, mods, ops, opcode):
        t = self._type(mods, opcode, ("f32", "f64"))
        if "approx" in mods and t == "f32":
            return self._unary(ops, t, opcode, lambda x: _approx(lambda v: 1.0 / v, x))
        self._float_rn(mods, t, opcode)
        one = _DTYPES[t](1)
        return self._unary(ops, t, opcode, lambda x: np.divide(one, x))

    def _approx_fn(self, mods, ops, opcode, f, types=("f32",)):
        t = self._type(mods, opcode, types)
        if "approx" not in mods:
            raise PTXSyntaxError(f"{opcode}: .approx required")
        return self._unary(ops, t, opcode, lambda x: _approx(f, x))

    def _i_rsqrt(self, mods, ops, opcode):
        return self._approx_fn(mods, ops, opcode, lambda v: 1.0 / np.sqrt(v), ("f32", "f64"))

    def _i_ex2(self, mods, ops, opcode):
        return self._approx_fn(mods, ops, opcode, np.exp2)

    def _i_lg2(self, mods, ops, opcode):
        return self._approx_fn(mods, ops, opcode, np.log2)

    def _i_sin(self, mods, ops, opcode):
        # an H100 flushes a subnormal argument to zero (sin(1e-40) is 0)
        return self._approx_fn(mods, ops, opcode,
                               lambda v: np.sin(np.where(np.abs(v) < 2.0 ** -126, v * 0.0, v)))

    def _i_cos(self, mods, ops, opcode):
        return self._approx_fn(mods, ops, opcode, np.cos)

    def _i_tanh(self, mods, ops, opcode):
        return self._approx_fn(mods, ops, opcode, np.tanh)

    def _i_selp(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        self._nops(ops, 4, opcode)
        a, b, c = self.src(ops[1], t), self.src(ops[2], t), self.src(ops[3], "pred")
        d = self.dst(ops[0], t)
        return _OP, lambda ctx, sel: d(ctx, sel, np.where(c(ctx, sel), a(ctx, sel), b(ctx, sel))), None

    def _i_setp(self, mods, ops, opcode):
        t = self._type(mods, opcode)
        cmps = [m for m in mods if m in _CMP]
        bools = [m for m in mods if m in ("and", "or", "xor")]
        if len(cmps) != 1 or len(bools) > 1 or set(mods) - set(cmps) - set(bools) - {t}:
            self._unsupported(opcode)
        cmp = _CMP[cmps[0]]
        if cmps[0] in ("lo", "ls", "hi", "hs") and t[0] not in "ub":
            raise PTXSyntaxError(f"{opcode}: unsigned comparison on .{t}")
        isf = _float_kind(t)
        if cmps[0] in ("equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan") and not isf:
            raise PTXSyntaxError(f"{opcode}: float comparison on .{t}")
        dests = ops[0].split("|")
        self._nops(ops, 4 if bools else 3, opcode)
        a, b = self.src(ops[1], t), self.src(ops[2], t)
        c = self.src(ops[3], "pred") if bools else None
        bf = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[bools[0]] if bools else None
        ds = [self.dst(x.strip(), "pred") for x in dests]
        if len(ds) > 2:
            raise PTXSyntaxError(f"{opcode}: too many destinations")

        def setp(ctx, sel):
            r = cmp(np.asarray(a(ctx, sel)), np.asarray(b(ctx, sel)), isf)
            if bf is not None:
                cv = c(ctx, sel)
                p = bf(r, cv)
                q = bf(~r, cv)
            else:
                p, q = r, None
            ds[0](ctx, sel, p)
            if len(ds) == 2:
                ds[1](ctx, sel, ~r if q is None else q)
        return _OP, setp, None

    def _i_cvt(self, mods, ops, opcode):
        rnd = [m for m in mods if m in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")]
        types = [m for m in mods if m in _DTYPES]
        if len(types) != 2 or len(rnd) > 1 or set(mods) - set(rnd) - set(types):
            self._unsupported(opcode)
        dt_, st_ = types
        if "pred" in types:
            self._unsupported(opcode)
        self._canon = (dt_, st_) in (("f32", "f32"), ("f32", "f16"), ("f16", "f32"))
        self._widen = True
        self._nops(ops, 2, opcode)
        a, d = self.src(ops[1], st_), self.dst(ops[0], dt_)
        ddt, sdt = np.dtype(_DTYPES[dt_]), np.dtype(_DTYPES[st_])
        r = rnd[0] if rnd else None
        fd, fs = ddt.kind == "f", sdt.kind == "f"
        if not fd and not fs:
            if r:
                self._unsupported(opcode)

            def f(x):
                return np.asarray(x).astype(ddt)
        elif fd and not fs:
            if r != "rn":
                self._unsupported(opcode, "int to float needs .rn" if r is None else f".{r}")

            def f(x):
                return np.asarray(x).astype(ddt)
        elif not fd and fs:
            if r not in ("rni", "rzi", "rmi", "rpi"):
                self._unsupported(opcode, "float to int needs .rni/.rzi/.rmi/.rpi")
            rf = _ROUND_INT[r]
            # NaN: 0 from f32 to a 32-bit integer, else the sign bit alone (an H100's F2I)
            nan_bits = 0 if (st_ == "f32" and ddt.itemsize == 4) else 1 << (8 * ddt.itemsize - 1)

            def f(x):
                return _float_to_int(rf(np.asarray(x, np.float64)), ddt, nan_bits)
        else:
            if ddt == sdt:
                if r not in ("rni", "rzi", "rmi", "rpi"):
                    self._unsupported(opcode)
                rf = _ROUND_INT[r]

                def f(x):
                    return rf(np.asarray(x))
            elif ddt.itemsize > sdt.itemsize:
                if r not in (None,):
                    self._unsupported(opcode, "widening float conversion takes no rounding")

                def f(x):
                    return np.asarray(x).astype(ddt)
            else:
                if r != "rn":
                    self._unsupported(opcode, "narrowing float conversion needs .rn")

                def f(x):
                    return np.asarray(x).astype(ddt)
        return _OP, lambda ctx, sel: d(ctx, sel, f(a(ctx, sel))), None

    # warps, atomics --------------------------------------------------------------------------

    def _i_shfl(self, mods, ops, opcode):
        modes = [m for m in mods if m in ("up", "down", "bfly", "idx")]
        if "sync" not in mods or len(modes) != 1 or set(mods) - {"sync", "b32"} - set(modes) \
                or "b32" not in mods:
            self._unsupported(opcode, "only shfl.sync.{up,down,bfly,idx}.b32")
        self._nops(ops, 5, opcode)
        mask = _imm(ops[4], np.uint32)
        if mask is None or int(mask) != 0xFFFFFFFF:
            self._unsupported(opcode, "membermask must be the literal 0xffffffff")
        dests = [x.strip() for x in ops[0].split("|")]
        d = self.dst(dests[0], "b32")
        dp = self.dst(dests[1], "pred") if len(dests) > 1 else None
        a, b, c = self.src(ops[1], "b32"), self.src(ops[2], "b32"), self.src(ops[3], "b32")
        mode = modes[0]

        def shfl(ctx, sel):
            pos = ctx.check_full_warps(sel)
            lane = ctx.special_all("%laneid")
            lane = lane if sel is None else lane[sel]
            bv = np.asarray(b(ctx, sel), np.uint32) & np.uint32(31)
            cv = np.asarray(c(ctx, sel), np.uint32)
            seg = (cv >> np.uint32(8)) & np.uint32(31)
            clamp = cv & np.uint32(31)
            lane = lane.astype(np.int64)
            seg = seg.astype(np.int64)
            maxl = (lane & seg) | (clamp.astype(np.int64) & ~seg)
            minl = lane & seg
            bv = bv.astype(np.int64)
            if mode == "up":
                j = lane - bv
                ok = j >= maxl
            elif mode == "down":
                j = lane + bv
                ok = j <= maxl
            elif mode == "bfly":
                j = lane ^ bv
                ok = j <= maxl
            else:
                j = minl | (bv & ~seg)
                ok = j <= maxl
            j = np.where(ok, j, lane)
            av = a(ctx, sel)
            av = np.broadcast_to(av, lane.shape)
            # lanes of one warp are consecutive in the full-warp selection
            src_pos = pos - lane + j
            d(ctx, sel, av[src_pos])
            if dp is not None:
                dp(ctx, sel, ok)
        return _OP, shfl, None

    def _atomic(self, mods, ops, opcode, result):
        space = "global" if "global" in mods else "shared" if "shared" in mods else None
        op = [m for m in mods if m not in ("global", "shared") and m not in _DTYPES]
        t = self._type(mods, opcode, ("f32", "f64", "u32", "s32", "u64"))
        if space is None or op != ["add"]:
            self._unsupported(opcode, "only .global/.shared .add")
        self._nops(ops, 3 if result else 2, opcode)
        fetch, off, _ = self.addr(ops[1] if result else ops[0], space)
        v = self.src(ops[2] if result else ops[1], t)
        d = self.dst(ops[0], t) if result else None
        dt = np.dtype(_DTYPES[t])
        if space == "global":
            self.k.min_global_access = min(self.k.min_global_access, dt.itemsize)
            self.k.has_global_write = True

        def atom(ctx, sel):
            a = fetch(ctx, sel)
            if off:
                a = a + np.uint64(off & 0xFFFFFFFFFFFFFFFF)
            a = _lanes(a, ctx, sel)
            vals = np.broadcast_to(np.asarray(v(ctx, sel), dt), a.shape)
            old = ctx.atomic_add(a, sel, dt, vals, space == "shared", result)
            if d is not None:
                d(ctx, sel, old)
        return _OP, atom, None

    def _i_atom(self, mods, ops, opcode):
        return self._atomic(mods, ops, opcode, True)

    def _i_red(self, mods, ops, opcode):
        return self._atomic(mods, ops, opcode, False)


def _tname(dt):
    dt = np.dtype(dt)
    for k, v in _DTYPES.items():
        if np.dtype(v) == dt and k[0] != "b" or (dt.kind == "b" and k == "pred"):
            return k
    return str(dt)


def _mma_lanes(ctx, sel):
    """Of the selected lanes of an mma.sync (whole warps only): their shape, each one's warp,
    the number of warps, and PTX's fragment coordinates g = laneid >> 2, t = laneid % 4."""
    pos = ctx.check_full_warps(sel, "mma.sync (a warp-wide instruction)")
    lane = ctx.special_all("%laneid")
    lane = (lane if sel is None else lane[sel]).astype(np.int64)
    w = pos // 32
    nw = int(w.max()) + 1 if len(w) else 0
    return lane.shape, w, nw, lane >> 2, lane & 3


def _vector_regs(tok, vec):
    if vec == 1:
        if tok.startswith("{"):
            raise PTXSyntaxError(f"vector operand {tok} for a scalar access")
        return [tok]
    if not (tok.startswith("{") and tok.endswith("}")):
        raise PTXSyntaxError(f"v{vec} access needs a braced operand list, got {tok}")
    regs = [x.strip() for x in tok[1:-1].split(",")]
    if len(regs) != vec:
        raise PTXSyntaxError(f"v{vec} access with {len(regs)} registers")
    return regs


def _lanes(a, ctx, sel):
    a = np.asarray(a, np.uint64)
    if a.ndim == 0:
        a = np.full(ctx.n if sel is None else len(sel), a, np.uint64)
    return a


def _guarded(fn, slot, neg):
    def guarded(ctx, sel):
        ctx.check_pred(slot, sel)
        p = ctx.regs[slot]
        m = p if sel is None else p[sel]
        if neg:
            m = ~m
        if sel is None:
            if m.all():
                return fn(ctx, None)
            s2 = np.flatnonzero(m)
        else:
            s2 = sel[m]
        if len(s2):
            fn(ctx, s2)
    return guarded


# numerics ----------------------------------------------------------------------------------------


def _approx(f, *xs):
    dt = np.result_type(*[np.asarray(x).dtype for x in xs])
    return f(*[np.asarray(x, np.float64) for x in xs]).astype(dt)


def _two_sum(a, b):
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _round_to_odd(s, e):
    """s + e (s = fl(s + e) exact pair) rounded to odd: s if exact or s's last bit odd."""
    bits = s.view(np.uint64)
    adjust = (e != 0) & ((bits & np.uint64(1)) == 0) & np.isfinite(s)
    if not np.any(adjust):
        return s
    toward = np.where(e > 0, np.inf, -np.inf)
    return np.where(adjust, np.nextafter(s, toward), s)


def _fma32(a, b, c):
    """fma.rn.f32: a*b is exact in float64 (48 bits), the sum is taken exactly
    as a two-term pair and rounded to odd in float64, whose rounding to float32
    is then the correctly rounded a*b+c (53 >= 24 + 2 bits)."""
    with np.errstate(all="ignore"):
        p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
        c = np.asarray(c, np.float64)
        s, e = _two_sum(p, c)
        e = np.where(np.isfinite(s), e, 0.0)
        return _round_to_odd(np.asarray(s, np.float64), e).astype(np.float32)


_SPLIT = 134217729.0   # 2^27 + 1 (Veltkamp)


def _two_prod(a, b):
    p = a * b
    ca = _SPLIT * a
    ah = ca - (ca - a)
    al = a - ah
    cb = _SPLIT * b
    bh = cb - (cb - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _fma64(a, b, c):
    """fma.rn.f64: the exact product as a pair (Dekker), the three-term sum
    correctly rounded by Boldo and Melquiond's round-to-odd algorithm. Lanes
    where the splitting could overflow or underflow (huge or tiny operands) are
    computed exactly with fractions."""
    with np.errstate(all="ignore"):
        a = np.asarray(a, np.float64)
        b = np.asarray(b, np.float64)
        c = np.asarray(c, np.float64)
        ph, pl = _two_prod(a, b)
        uh, ul = _two_sum(c, pl)
        th, tl = _two_sum(ph, uh)
        vs, ve = _two_sum(tl, ul)
        v = _round_to_odd(vs, ve)
        r = th + v
        # an exact zero takes its sign from the plain sum (+0 unless both terms are -0)
        r = np.where(r == 0, a * b + c, r)
        aa, ab, ac = np.abs(a), np.abs(b), np.abs(c)
        risky = ~(np.isfinite(a) & np.isfinite(b) & np.isfinite(c)) | \
            (aa > 2.0 ** 500) | (ab > 2.0 ** 500) | (ac > 2.0 ** 1000) | \
            ((aa * ab < 2.0 ** -900) & (aa != 0) & (ab != 0)) | ((ac < 2.0 ** -900) & (ac != 0))
        if np.any(risky):
            r = np.array(r, copy=True) if r.ndim else np.array([r])
            ab_, bb_, cb_ = (np.broadcast_to(x, r.shape) for x in (a, b, c))
            for i in np.flatnonzero(np.broadcast_to(risky, r.shape)):
                r[i] = _fma_exact(float(ab_[i]), float(bb_[i]), float(cb_[i]))
            if np.ndim(a) == 0 and np.ndim(b) == 0 and np.ndim(c) == 0:
                r = r[0]
        return r


def _fma_exact(a, b, c):
    import math
    from fractions import Fraction
    if math.isfinite(a) and math.isfinite(b) and math.isinf(c):
        return c   # the exact product is finite: no overflow inside an fma
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        # sign of an exact zero: -0 only when both terms are -0 (round to nearest)
        p = a * b
        return p + c
    try:
        return float(exact)   # Fraction -> float is correctly rounded
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def _mulhi(x, y):
    x, y = np.asarray(x), np.asarray(y)
    dt = np.result_type(x, y)
    if dt.itemsize <= 4:
        wd = np.int64 if dt.kind == "i" else np.uint64
        return ((x.astype(wd) * y.astype(wd)) >> (dt.itemsize * 8)).astype(dt)
    xu, yu = x.astype(np.uint64), y.astype(np.uint64)
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    xl, xh, yl, yh = xu & m32, xu >> s32, yu & m32, yu >> s32
    p0, p1, p2, p3 = xl * yl, xl * yh, xh * yl, xh * yh
    mid = (p0 >> s32) + (p1 & m32) + (p2 & m32)
    hi = p3 + (p1 >> s32) + (p2 >> s32) + (mid >> s32)
    if dt.kind == "i":   # signed high product from the unsigned one
        hi = hi - np.where(x < 0, yu, np.uint64(0)) - np.where(y < 0, xu, np.uint64(0))
    return hi.astype(dt)


def _wide(t, opcode):
    if t[0] not in "us" or t[1:] not in ("16", "32"):
        raise PTXSyntaxError(f"{opcode}: .wide needs a 16- or 32-bit integer type")
    return t[0] + str(int(t[1:]) * 2)


# Division by zero: what the GPU gives (checked on an H100, docs/gpu-simulator.md).
def _idiv(x, y):
    x, y = np.asarray(x), np.asarray(y)
    dt = np.result_type(x, y)
    x, y = x.astype(dt), y.astype(dt)
    zero = y == 0
    ys = np.where(zero, dt.type(1), y)
    if dt.kind == "u":
        q = x // ys
        return np.where(zero, dt.type(-1 % (1 << (8 * dt.itemsize))), q)
    # truncating division (floor division corrected); INT_MIN / -1 wraps to INT_MIN
    with np.errstate(all="ignore"):
        m1 = ys == -1
        ys2 = np.where(m1, dt.type(1), ys)
        q = x // ys2
        r = x - q * ys2
        q = q + ((r != 0) & ((x < 0) != (ys2 < 0))).astype(dt)
        q = np.where(m1, -x, q)
    return np.where(zero, dt.type(-1), q)


def _irem(x, y):
    x, y = np.asarray(x), np.asarray(y)
    dt = np.result_type(x, y)
    x, y = x.astype(dt), y.astype(dt)
    zero = y == 0
    with np.errstate(all="ignore"):
        q = _idiv(x, np.where(zero, dt.type(1), y))
        r = x - q * np.where(zero, dt.type(1), y)
    return np.where(zero, dt.type(-1) if dt.kind == "i" else dt.type(np.iinfo(dt).max), r)


def _fminmax(x, y, is_min, nan):
    x, y = np.asarray(x), np.asarray(y)
    if nan:
        r = np.minimum(x, y) if is_min else np.maximum(x, y)
    else:
        r = np.fmin(x, y) if is_min else np.fmax(x, y)
    # -0.0 is below +0.0
    both0 = (x == 0) & (y == 0)
    if np.any(both0):
        sx, sy = np.signbit(x), np.signbit(y)
        neg = (sx | sy) if is_min else (sx & sy)
        z = np.where(neg, -r.dtype.type(0), r.dtype.type(0))
        r = np.where(both0, z, r)
    # a NaN result is the canonical NaN
    if np.any(np.isnan(r)):
        r = np.where(np.isnan(r), r.dtype.type(np.nan), r)
    return r


def _popc(x):
    x = np.asarray(x)
    bits = np.unpackbits(x.reshape(-1, 1).view(np.uint8), axis=1)
    return bits.sum(axis=1).astype(np.uint32).reshape(x.shape)


def _clz(x, bits):
    x = np.asarray(x).astype(np.uint64)

    def bit_length32(v):   # exact: float64 holds every 32-bit value
        v = v.astype(np.float64)
        return np.where(v > 0, np.floor(np.log2(np.maximum(v, 1))) + 1, 0).astype(np.int64)
    lo = bit_length32(x & np.uint64(0xFFFFFFFF))
    if bits == 32:
        return (32 - lo).astype(np.uint32)
    hi = bit_length32(x >> np.uint64(32))
    return np.where(hi > 0, 32 - hi, 64 - lo).astype(np.uint32)


def _brev(x, bits):
    x = np.asarray(x)
    b = np.unpackbits(x.reshape(-1, 1).view(np.uint8), axis=1, bitorder="little")
    return np.packbits(b[:, ::-1], axis=1, bitorder="little").view(x.dtype).reshape(x.shape)


def _cmp_f(op, unordered):
    def f(a, b, isf):
        r = op(a, b)
        if isf:
            n = np.isnan(a) | np.isnan(b)
            r = (r | n) if unordered else (r & ~n)
        return r
    return f


_CMP = {
    "eq": _cmp_f(np.equal, False), "ne": _cmp_f(np.not_equal, False),
    "lt": _cmp_f(np.less, False), "le": _cmp_f(np.less_equal, False),
    "gt": _cmp_f(np.greater, False), "ge": _cmp_f(np.greater_equal, False),
    "lo": _cmp_f(np.less, False), "ls": _cmp_f(np.less_equal, False),
    "hi": _cmp_f(np.greater, False), "hs": _cmp_f(np.greater_equal, False),
    "equ": _cmp_f(np.equal, True), "neu": _cmp_f(np.not_equal, True),
    "ltu": _cmp_f(np.less, True), "leu": _cmp_f(np.less_equal, True),
    "gtu": _cmp_f(np.greater, True), "geu": _cmp_f(np.greater_equal, True),
    "num": lambda a, b, isf: ~(np.isnan(a) | np.isnan(b)),
    "nan": lambda a, b, isf: np.isnan(a) | np.isnan(b),
}

_CANON_NAN_OPS = {"add", "sub", "mul", "mad", "fma", "div", "min", "max", "neg", "abs", "sqrt", "rcp",
                  "rsqrt", "ex2", "lg2", "sin", "cos", "tanh"}
_CANON_NAN = {"f32": np.array(0x7FFFFFFF, np.uint32).view(np.float32)[()],
              "f16": np.array(0x7FFF, np.uint16).view(np.float16)[()]}

_ROUND_INT = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def _float_to_int(r, dt, nan_bits=0):
    """Rounded float64 values to an integer type: saturating; NaN gives
    ``nan_bits`` (the PTX ISA says 0; an H100 gives 0 only from f32 to a 32-bit
    integer, the sign bit alone otherwise)."""
    info = np.iinfo(dt)
    lo, hi = float(info.min), float(info.max) + 1.0   # powers of two: exact
    nan = np.isnan(r)
    over, under = r >= hi, r < lo
    safe = np.where(nan | over | under, 0.0, r)
    out = safe.astype(dt)
    out = np.where(over, dt.type(info.max), out)
    out = np.where(under, dt.type(info.min), out)
    if nan_bits:
        out = np.where(nan, np.array(nan_bits, f"u{dt.itemsize}").view(dt)[()], out)
    return out.astype(dt)


# ----------------------------------------------------------------------------------------------
# Running


class _Ctx:
    """The state of one chunk of blocks."""

    def __init__(self, k, memory, grid, block, block0, nblocks, params, shared_bytes, nc_state=None,
                 race_state=None):
        self.k = k
        self.nc_state = nc_state
        self.grace = race_state
        self.memory = memory
        self.grid, self.block = grid, block
        self.nt = block[0] * block[1] * block[2]
        self.block0 = block0
        self.nblocks = nblocks
        self.n = n = self.nt * nblocks
        self.params = params
        self.regs = []
        # which lanes wrote each predicate (a predicate cannot be poisoned: reads are checked)
        self.pdef = {i: np.zeros(n, bool) for i, dt in enumerate(k.reg_dtypes) if dt.kind == "b"}
        for dt in k.reg_dtypes:
            if dt.kind == "b":
                self.regs.append(np.zeros(n, bool))
            else:
                self.regs.append(np.full(n, _POISON[dt.itemsize], np.dtype(f"u{dt.itemsize}")).view(dt))
        self._special = {}
        self.special = _SpecialView(self)
        self.cp_async = []  # (lanes, shared addresses, 16 bytes each) of copies issued, not yet waited for
        self.shared_size = k.static_shared
        for s in k.shared.values():
            if s.extern and shared_bytes:
                self.shared_size = s.offset + shared_bytes
        if self.shared_size:
            self.sstride = (self.shared_size + 15) // 16 * 16
            self.shared = np.full(nblocks * self.sstride, 0xFF, np.uint8)   # uninitialized: NaN, -1
            # the race check tracks 4-byte words when every shared access is 4 bytes or wider
            self.gran = 4 if k.min_shared_access >= 4 else 1
            self.writer = np.full(nblocks * self.sstride // self.gran, -1, np.int32)
            self.reader = np.full(nblocks * self.sstride // self.gran, -1, np.int32)
            self.pending_reads = []     # reads not yet in ``reader`` (merged when a write comes)
            self.written = False        # any shared write since the last barrier of every block
        self.ins = None

    # identification -----------------------------------------------------------------------

    def special_all(self, name):
        v = self._special.get(name)
        if v is None:
            n, nt = self.n, self.nt
            bx, by, bz = self.block
            gx, gy, gz = self.grid
            i = np.arange(n, dtype=np.int64)
            lt = i % nt
            lb = i // nt + self.block0
            comp = name.split(".")[-1]
            c = "xyz".index(comp) if comp in ("x", "y", "z") else None
            if name.startswith("%tid"):
                v = (lt % bx, (lt // bx) % by, lt // (bx * by))[c]
            elif name.startswith("%ntid"):
                v = np.full(n, self.block[c])
            elif name.startswith("%ctaid"):
                v = (lb % gx, (lb // gx) % gy, lb // (gx * gy))[c]
            elif name.startswith("%nctaid"):
                v = np.full(n, self.grid[c])
            elif name == "%laneid":
                v = lt % 32
            elif name == "%warpid":
                v = lt // 32
            else:
                raise SimulationError(f"unknown special register {name}")
            v = v.astype(np.uint32)
            self._special[name] = v
        return v

    def where(self, lane: int, gid: bool = False) -> str:
        """Block and thread of a lane of this chunk (or, ``gid``, of a thread of the grid)."""
        lt = lane % self.nt
        lb = lane // self.nt + (0 if gid else self.block0)
        bx, by, _ = self.block
        gx, gy, _ = self.grid
        return (f"block ({lb % gx}, {(lb // gx) % gy}, {lb // (gx * gy)}) "
                f"thread ({lt % bx}, {(lt // bx) % by}, {lt // (bx * by)})")

    def check_pred(self, slot, sel):
        d = self.pdef[slot]
        ok = d if sel is None else d[sel]
        if not ok.all():
            j = int(np.flatnonzero(~ok)[0])
            self.fail(j if sel is None else sel[j], f"predicate {self.k.reg_names[slot]} read before this "
                                                    "thread wrote it (its value is undefined on a GPU)")

    def fail(self, lane, msg):
        ins = self.ins
        raise SimulationError(f"kernel {self.k.name}: {self.where(int(lane))}: {msg}; PTX line "
                              f"{ins.line}: {ins.text}")

    # global memory --------------------------------------------------------------------------

    def _global_check(self, a, sel, nbytes, what):
        mem = self.memory
        bad_align = (a % np.uint64(nbytes)) != 0 if nbytes > 1 else None
        idx, ok = mem._locate(a, nbytes)
        if bad_align is not None and np.any(bad_align):
            j = int(np.flatnonzero(bad_align)[0])
            self.fail(j if sel is None else sel[j],
                      f"misaligned {nbytes}-byte {what} at address {int(a[j]):#x}")
        if not ok.all():
            j = int(np.flatnonzero(~ok)[0])
            self.fail(j if sel is None else sel[j],
                      f"{nbytes}-byte {what} at address {int(a[j]):#x}: "
                      f"{mem._explain(int(a[j]), nbytes)}")
        return idx

    def _nc_track(self, gi, m, e, isz, nbytes, sel, write):
        """The .nc check: bytes read through the non-coherent cache and bytes
        written in the same launch must not meet (ld.global.nc is only for data
        read-only for the whole kernel: a GPU may return stale values)."""
        state = self.nc_state
        g = min(4, self.k.min_global_access)
        size = (self.memory._sizes[gi] + g - 1) // g
        first = e * isz // g
        units = nbytes // g
        pos = (first[:, None] + np.arange(units)).ravel() if units > 1 else first
        mine = state["w" if write else "nc"].setdefault(gi, np.zeros(size, bool))
        other = state["nc" if write else "w"].get(gi)
        if other is not None:
            hit = other[pos]
            if hit.any():
                j = int(np.flatnonzero(hit)[0]) // units
                lanes = np.arange(self.n) if sel is None else sel
                lane = (lanes if m is None else lanes[m])[j]
                addr = self.memory._bases[gi] + int(first[j]) * g
                what = ("writes bytes this launch read through ld.global.nc" if write
                        else "reads through ld.global.nc bytes this launch writes")
                self.fail(lane, f"{what} (at {addr:#x}; the non-coherent cache may return stale data: "
                                "use ld.global for a buffer the kernel writes)")
        mine[pos] = True

    def _global_race(self, gi, m, e, isz, nbytes, sel, buf, v):
        """Racecheck of global writes within a launch: two threads writing
        different values to the same bytes in one instruction, or threads of
        two blocks doing so at any time (no grid synchronization in the
        subset: their order is undefined on a GPU). Writes of one block in
        different barrier intervals are ordered, and reads are not checked
        (a read whose value goes unused is harmless)."""
        st = self.grace
        g = min(4, self.k.min_global_access)
        units = nbytes // g
        first = e * isz // g
        pos = (first[:, None] + np.arange(units)).ravel() if units > 1 else first
        lanes = np.arange(self.n) if sel is None else sel
        if m is not None:
            lanes = lanes[m]
        tid = lanes.astype(np.int64) + self.block0 * self.nt
        t = np.repeat(tid, units) if units > 1 else tid
        base = self.memory._bases[gi]

        def fail(j, kind, other):
            self.fail(int(lanes[j // units]), f"global-memory race: write of {base + int(pos[j]) * g:#x} "
                                              f"(allocation {base:#x}) {kind} {self.where(int(other), gid=True)} "
                                              "in the same launch, with another value")
        if len(e) > 1:
            order = np.argsort(e, kind="stable")
            es = e[order]
            dup = np.flatnonzero(es[1:] == es[:-1])
            if len(dup):
                a_, b_ = v[order[dup]], v[order[dup + 1]]
                diff = np.flatnonzero((_bits_of(a_) != _bits_of(b_)).any(axis=1))
                if len(diff):
                    fail(int(order[dup[diff[0]] + 1]) * units, "in the same instruction as",
                         int(tid[order[dup[diff[0]]]]))
        W = st.get(gi)
        if W is None:
            W = st[gi] = np.full((self.memory._sizes[gi] + g - 1) // g, -1, np.int64)
        w = W[pos]
        nt = self.nt
        bad = (w != -1) & (w // nt != t // nt)
        if bad.any():
            rows = np.unique(np.flatnonzero(bad) // units)
            cur = buf[e[rows, None] + np.arange(v.shape[1])]
            same = (_bits_of(cur) == _bits_of(v[rows])).all(axis=1)
            if not same.all():
                j = int(np.flatnonzero(np.isin(np.flatnonzero(bad) // units, rows[~same]))[0])
                j = int(np.flatnonzero(bad)[j])
                fail(j, "by", int(w[j]))
        W[pos] = t

    def global_load(self, a, sel, dt, vec, nbytes, nc=False):
        idx = self._global_check(a, sel, nbytes, "read")
        mem = self.memory
        bases = mem._tables()[0]
        out = np.empty((len(a), vec), dt) if vec > 1 else np.empty(len(a), dt)
        if len(a) == 0:
            return out
        groups = [None] if idx.min() == idx.max() else np.unique(idx)
        for g in groups:
            gi = int(idx[0]) if g is None else int(g)
            m = None if g is None else idx == g
            buf = mem._bufs[gi].view(dt)
            e = ((a if m is None else a[m]) - bases[gi]) // np.uint64(dt.itemsize)
            e = e.astype(np.int64)
            if nc and self.nc_state is not None:
                self._nc_track(gi, m, e, dt.itemsize, nbytes, sel, False)
            v = buf[e[:, None] + np.arange(vec)] if vec > 1 else buf[e]
            if m is None:
                out[...] = v
            else:
                out[m] = v
        return out

    def global_store(self, a, sel, dt, vec, nbytes, vals):
        idx = self._global_check(a, sel, nbytes, "write")
        mem = self.memory
        bases = mem._tables()[0]
        if len(a) == 0:
            return
        groups = [None] if idx.min() == idx.max() else np.unique(idx)
        for g in groups:
            gi = int(idx[0]) if g is None else int(g)
            m = None if g is None else idx == g
            buf = mem._bufs[gi].view(dt)
            e = ((a if m is None else a[m]) - bases[gi]) // np.uint64(dt.itemsize)
            e = e.astype(np.int64)
            if self.nc_state is not None:
                self._nc_track(gi, m, e, dt.itemsize, nbytes, sel, True)
            v = vals if m is None else vals[m]
            if self.grace is not None:
                self._global_race(gi, m, e, dt.itemsize, nbytes, sel, buf, v.reshape(len(e), vec))
            if vec > 1:
                buf[e[:, None] + np.arange(vec)] = v
            else:
                buf[e] = v[:, 0] if v.ndim == 2 else v

    # shared memory ----------------------------------------------------------------------------

    def _lanes_of(self, sel, n):
        return np.arange(n) if sel is None else sel

    def _shared_pos(self, a, sel, nbytes, what):
        if not self.shared_size:
            self.fail(0 if sel is None else sel[0], f"shared {what} but the kernel has no shared memory")
        lanes = self._lanes_of(sel, len(a))
        off = a.astype(np.int64) - _SHARED_BASE
        bad = (off < 0) | (off + nbytes > self.shared_size)
        if np.any(bad):
            j = int(np.flatnonzero(bad)[0])
            self.fail(lanes[j], f"{nbytes}-byte shared {what} at {int(a[j]):#x}: outside the block's "
                                f"{self.shared_size} bytes of shared memory "
                                f"[{_SHARED_BASE:#x}, {_SHARED_BASE + self.shared_size:#x})")
        mis = off % nbytes != 0
        if np.any(mis):
            j = int(np.flatnonzero(mis)[0])
            self.fail(lanes[j], f"misaligned {nbytes}-byte shared {what} at {int(a[j]):#x}")
        return lanes, (lanes // self.nt) * self.sstride + off

    def shared_access(self, a, sel, dt, vec, nbytes, vals):
        write = vals is not None
        lanes, pos = self._shared_pos(a, sel, nbytes, "write" if write else "read")
        self._race(lanes, pos, nbytes, write)
        buf = self.shared.view(dt)
        e = pos // dt.itemsize
        if write:
            if vec > 1:
                buf[e[:, None] + np.arange(vec)] = vals
            else:
                buf[e] = vals[:, 0]
            return None
        return buf[e[:, None] + np.arange(vec)] if vec > 1 else buf[e]

    def _race(self, lanes, pos, nbytes, write):
        """Racecheck: per byte (per 4-byte word where no shared access is
        narrower), the thread that wrote it since the last barrier and the one
        that read it (-2: several); reads are checked against the writers at
        once and merged into the readers only when a write comes (most
        intervals only read)."""
        g = self.gran
        units = nbytes // g
        if units > 1:
            p = (pos[:, None] // g + np.arange(units)).ravel()
            t = np.repeat(lanes, units).astype(np.int32)
        else:
            p, t = pos // g, lanes.astype(np.int32)
        W = self.writer
        if not write:
            if self.written:
                w = W[p]
                bad = (w != -1) & (w != t)
                if np.any(bad):
                    j = int(np.flatnonzero(bad)[0])
                    self._race_fail(t[j], p[j], "read", "written", int(w[j]))
            self.pending_reads.append((p, t))
            return
        self._merge_reads()
        R = self.reader
        w = W[p]
        r = R[p]
        bad = ((w != -1) & (w != t)) | ((r != -1) & (r != t))
        if np.any(bad):
            j = int(np.flatnonzero(bad)[0])
            if w[j] not in (-1, t[j]):
                self._race_fail(t[j], p[j], "write", "written", int(w[j]))
            self._race_fail(t[j], p[j], "write", "read", int(r[j]))
        W[p] = t
        self.written = True
        after = W[p]
        clash = after != t
        if np.any(clash):
            j = int(np.flatnonzero(clash)[0])
            self._race_fail(t[j], p[j], "write", "written in the same instruction", int(after[j]))

    def _merge_reads(self):
        R = self.reader
        for p, t in self.pending_reads:
            r = R[p]
            new = np.where((r == -1) | (r == t), t, -2).astype(np.int32)
            R[p] = new
            after = R[p]
            R[p[after != new]] = -2   # two threads read it in this instruction
        self.pending_reads = []

    def _race_fail(self, lane, unit, kind, prev, other):
        addr = int(unit) * self.gran % self.sstride + _SHARED_BASE
        oth = self.where(other) if other >= 0 else "several threads"
        self.fail(lane, f"shared-memory race: {kind} of {'byte' if self.gran == 1 else '4-byte word'} "
                        f"{addr:#x} {prev} by {oth} since the last barrier")

    def barrier_reset(self, sel):
        if not self.shared_size:
            return
        if sel is None:
            self.writer.fill(-1)
            self.reader.fill(-1)
            self.pending_reads = []
            self.written = False
            return
        self._merge_reads()
        blocks = np.unique(sel // self.nt)
        W = self.writer.reshape(self.nblocks, -1)
        R = self.reader.reshape(self.nblocks, -1)
        W[blocks] = -1
        R[blocks] = -1
        if len(blocks) == self.nblocks:
            self.written = False

    # warps, atomics ----------------------------------------------------------------------------

    def check_full_warps(self, sel, what="shfl.sync with membermask 0xffffffff"):
        """The lanes of the selection, checking every warp is complete (``what``
        names the warp-wide instruction in the error)."""
        nt = self.nt
        if sel is None:
            if nt % 32:
                self.fail(nt - 1, f"{what} in a block of {nt} threads "
                                  "(not a multiple of 32: the last warp is partial)")
            return np.arange(self.n)
        warp = (sel // nt) * ((nt + 31) // 32) + (sel % nt) // 32
        counts = np.bincount(warp)
        used = counts > 0
        if np.any(used & (counts != 32)):
            w = int(np.flatnonzero(used & (counts != 32))[0])
            j = int(sel[np.flatnonzero(warp == w)[0]])
            self.fail(j, f"{what} but only {counts[w]} of the warp's lanes "
                         "are executing it (divergent warp or partial warp)")
        return np.arange(len(sel))

    def atomic_add(self, a, sel, dt, vals, shared, result):
        n = len(a)
        nbytes = dt.itemsize
        if shared:
            lanes, pos = self._shared_pos(a, sel, nbytes, "atomic")
            buf = self.shared.view(dt)
            e = pos // nbytes
            bufs = [(buf, e, None)]
        else:
            idx = self._global_check(a, sel, nbytes, "atomic")
            bases = self.memory._tables()[0]
            bufs = []
            for g in np.unique(idx):
                m = idx == g
                e = ((a[m] - bases[g]) // np.uint64(nbytes)).astype(np.int64)
                if self.nc_state is not None:
                    self._nc_track(int(g), m, e, nbytes, nbytes, sel, True)
                bufs.append((self.memory._bufs[int(g)].view(dt), e, m))
        old = np.empty(n, dt) if result else None
        for buf, e, m in bufs:
            v = vals if m is None else vals[m]
            # applied in thread order (a GPU's order differs; float sums may differ in the last bits)
            if result:
                o = np.empty(len(e), dt)
                order = np.argsort(e, kind="stable")
                es, vs = e[order], v[order]
                starts = np.flatnonzero(np.r_[True, es[1:] != es[:-1]])
                ends = np.r_[starts[1:], len(es)]
                for s0, s1 in zip(starts, ends):
                    seq = np.cumsum(np.r_[buf[es[s0]], vs[s0:s1]].astype(dt), dtype=dt)
                    o[order[s0:s1]] = seq[:-1]
                    buf[es[s0]] = seq[-1]
                if m is None:
                    old[...] = o
                else:
                    old[m] = o
            else:
                np.add.at(buf, e, v)
        return old


class _SpecialView:
    def __init__(self, ctx):
        self.ctx = ctx

    def __getitem__(self, name):
        return self.ctx.special_all(name)


def _check_launch(k, grid, block, shared_bytes):
    grid = tuple(int(x) for x in grid)
    block = tuple(int(x) for x in block)
    if len(grid) != 3 or len(block) != 3:
        raise SimulationError(f"launch of {k.name}: grid and block must be 3-tuples")
    if min(block) < 1 or min(grid) < 0:
        raise SimulationError(f"launch of {k.name}: block {block} or grid {grid} has a dimension below 1")
    if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        raise SimulationError(f"launch of {k.name}: grid {grid} beyond (2^31-1, 65535, 65535)")
    nt = block[0] * block[1] * block[2]
    if nt > 1024 or block[0] > 1024 or block[1] > 1024 or block[2] > 64:
        raise SimulationError(f"launch of {k.name}: block {block} beyond 1024 threads / (1024, 1024, 64)")
    if k.reqntid is not None and block != k.reqntid:
        raise SimulationError(f"launch of {k.name}: block {block} but the kernel requires .reqntid {k.reqntid}")
    if k.maxntid is not None and nt > k.maxntid[0] * k.maxntid[1] * k.maxntid[2]:
        raise SimulationError(f"launch of {k.name}: block {block} beyond .maxntid {k.maxntid}")
    has_extern = any(s.extern for s in k.shared.values())
    if shared_bytes and not has_extern:
        raise SimulationError(f"launch of {k.name}: {shared_bytes} bytes of dynamic shared memory "
                              "but the kernel declares no .extern .shared array")
    if k.static_shared + shared_bytes > 48 * 1024:
        raise SimulationError(f"launch of {k.name}: {k.static_shared + shared_bytes} bytes of shared "
                              "memory (more than 48 KiB needs an opt-in)")
    return grid, block


def _pack_args(k, args):
    if len(args) != len(k.params):
        raise SimulationError(f"launch of {k.name}: {len(args)} arguments for {len(k.params)} "
                              f"parameters ({', '.join(p.type + ' ' + p.name for p in k.params)})")
    out = {}
    for p, a in zip(k.params, args):
        if not isinstance(a, np.generic):
            raise SimulationError(f"launch of {k.name}: argument for .param .{p.type} {p.name} is "
                                  f"{type(a).__name__}, not a numpy scalar")
        want = p.dtype
        ok = a.dtype.itemsize == want.itemsize and (
            (a.dtype.kind == "f") == (want.kind == "f") and a.dtype.kind in "iuf")
        if not ok:
            raise SimulationError(f"launch of {k.name}: argument for .param .{p.type} {p.name} is "
                                  f"{a.dtype}, not {want}")
        out[p.name] = np.asarray(a).tobytes()
    return out


def run(program: Program, kernel: str, grid, block, args, memory: Memory, shared_bytes: int = 0,
        max_steps: int = _MAX_STEPS) -> None:
    """Run one launch of ``kernel`` to completion. ``args``: numpy scalars typed
    as the kernel's parameters (pointers np.uint64 addresses in ``memory``), or
    C-contiguous numpy arrays for pointer parameters: each is copied into a
    fresh allocation, and copied back (the kernel's writes land in the array)
    and freed after the launch."""
    if kernel not in program.kernels:
        raise SimulationError(f"no kernel {kernel!r} in the module (has {', '.join(program.kernels)})")
    k = program.kernels[kernel]
    grid, block = _check_launch(k, grid, block, int(shared_bytes))
    if min(grid) == 0:   # an empty grid launches nothing (docs/gpu.md's Driver.launch)
        _pack_args(k, [np.uint64(0) if isinstance(a, np.ndarray) else a for a in args])
        return
    staged = []
    args = list(args)
    try:
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                if i >= len(k.params) or k.params[i].type not in ("u64", "s64", "b64"):
                    raise SimulationError(f"launch of {k.name}: array argument {i} for a non-pointer "
                                          "parameter")
                if not a.flags.c_contiguous:
                    raise SimulationError(f"launch of {k.name}: array argument {i} is not C-contiguous")
                addr = memory.to_device(a)
                staged.append((a, addr))
                args[i] = np.uint64(addr)
        params = _pack_args(k, args)
        _run(k, grid, block, params, memory, int(shared_bytes), max_steps)
        for a, addr in staged:
            if a.flags.writeable:
                memory.read_into(a, addr)
    finally:
        for a, addr in staged:
            memory.free(addr)


def _run(k, grid, block, params, memory, shared_bytes, max_steps):
    nt = block[0] * block[1] * block[2]
    total = grid[0] * grid[1] * grid[2]
    per = max(1, _CHUNK_THREADS // nt)
    smem = k.static_shared + shared_bytes
    if smem:
        per = max(1, min(per, _SHARED_CHUNK_BYTES // smem))
    steps = [0]
    nc_state = {"nc": {}, "w": {}} if k.has_nc and k.has_global_write else None
    race_state = {} if k.has_global_write else None
    with np.errstate(all="ignore"):
        for b0 in range(0, total, per):
            nb = min(per, total - b0)
            ctx = _Ctx(k, memory, grid, block, b0, nb, params, shared_bytes, nc_state, race_state)
            _run_chunk(k, ctx, steps, max_steps)


def _run_chunk(k, ctx, steps, max_steps):
    code = k.code
    n = ctx.n
    nt = ctx.nt
    BIG = len(code) + 1
    pcs = np.zeros(n, np.int64)
    while True:
        pcmin = int(pcs.min())
        if pcmin >= BIG:
            return
        mask = pcs == pcmin
        if mask.all():
            sel = None
            rest = BIG
        else:
            sel = np.flatnonzero(mask)
            rest = int(pcs[~mask].min())
        pc = pcmin
        done = False
        while pc < rest:
            steps[0] += 1
            if steps[0] > max_steps:
                ctx.ins = code[pc]
                raise SimulationError(f"kernel {k.name}: more than {max_steps} steps (an endless loop?); "
                                      f"at PTX line {code[pc].line}: {code[pc].text}")
            ins = code[pc]
            kind = ins.kind
            ctx.ins = ins
            if kind == _OP:
                ins.fn(ctx, sel)
                pc += 1
                continue
            if ins.guard is not None:
                ctx.check_pred(ins.guard, sel)
                g = ctx.regs[ins.guard]
                take = g if sel is None else g[sel]
                if ins.neg:
                    take = ~take
                ntake = int(np.count_nonzero(take))
                total = n if sel is None else len(sel)
            else:
                take, ntake, total = None, -1, -1
            if kind == _BRA:
                if take is None or ntake == total:
                    pc = ins.target
                elif ntake == 0:
                    pc += 1
                else:
                    lanes = np.arange(n) if sel is None else sel
                    if ins.uni:
                        _check_uniform(ctx, lanes, take)
                    pcs[lanes] = np.where(take, ins.target, pc + 1)
                    done = True
                    break
            elif kind == _EXIT:
                if take is None or ntake == total:
                    if sel is None:
                        pcs[:] = BIG
                    else:
                        pcs[sel] = BIG
                    done = True
                    break
                if ntake:
                    lanes = np.arange(n) if sel is None else sel
                    pcs[lanes[take]] = BIG
                    sel = lanes[~take]
                pc += 1
            else:   # barrier: every thread of each block that reaches it
                at = sel
                if take is not None and ntake != total:
                    at = (np.arange(n) if sel is None else sel)[take]
                if at is not None:
                    _barrier_check(ctx, at, nt)
                ctx.barrier_reset(at)
                pc += 1
        if not done:
            if sel is None:
                pcs[:] = pc
            else:
                pcs[sel] = pc


def _check_uniform(ctx, lanes, take):
    """bra.uni promises that the guard is the same for every active thread of a warp."""
    nt = ctx.nt
    warp = (lanes // nt) * ((nt + 31) // 32) + (lanes % nt) // 32
    taken = np.bincount(warp, weights=take, minlength=warp.max() + 1)
    active = np.bincount(warp, minlength=warp.max() + 1)
    mixed = (taken > 0) & (taken < active)
    if np.any(mixed):
        w = int(np.flatnonzero(mixed)[0])
        ctx.fail(int(lanes[np.flatnonzero(warp == w)[0]]),
                 f"bra.uni whose guard differs between the active threads of a warp ({int(taken[w])} of "
                 f"{int(active[w])} take it): .uni promises a non-divergent branch")


def _barrier_check(ctx, sel, nt):
    if not len(sel):
        return
    counts = np.bincount(sel // nt, minlength=ctx.nblocks)
    bad = (counts > 0) & (counts != nt)
    if np.any(bad):
        b = int(np.flatnonzero(bad)[0])
        arrived = int(counts[b])
        ctx.fail(int(sel[np.flatnonzero(sel // nt == b)[0]]),
                 f"bar.sync 0 reached by {arrived} of the block's {nt} threads (the others exited or "
                 "are elsewhere: a barrier under divergent control flow)")
