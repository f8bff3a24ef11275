"""Lowering L3 -> L4 (``tfc-lower-gpu``): every ``loops.parallel``,
``loops.copy`` and GPU library call of an L3 module becomes a kernel of one
``gpu.module @kernels`` and a ``tgpu.launch`` in its place (docs/gpu.md,
docs/ir-gpu-dialect.md). Everything else stays L3 and runs on the host, a
``loops.library`` call on host scalars only (``reduce_min`` of a 0-d value)
included: the host runs its registry kernel on the numbers.

Kernels (``tgpu.kind``):

- ``elementwise`` / ``copy``: a grid-stride loop over the flat index of the
  iteration shape (block 256, at most ``MAX_BLOCKS`` blocks). A buffer that is
  contiguous and read at the identity map is indexed by the flat index itself
  (no division); any other (a strided view, a broadcast input, a strided
  output) by the multi-index's digits and its layout's strides. Where every
  buffer is flat, 16-byte aligned and the body reads no index, elements go in
  16-byte vectors (``width`` 4 for 32-bit elements, 2 for 64-bit) with a
  scalar tail. 0-d buffers and scalars are read once per thread;
- ``reduction``: work items ``(output element, chunk)``, one per block in
  turn; the threads of a block stride over the chunk's reduced elements,
  then a warp shuffle tree and a shared-memory step over the warps (32-bit
  accumulators; 64-bit ones reduce through a shared-memory tree of 128
  threads). Few outputs over many elements take two passes: partial results
  per chunk into a ``loops.alloc`` buffer, then a second kernel over them;
- ``copy`` of a transposed view: 32x32 tiles through shared memory, both
  sides coalesced;
- row kernels: consecutive kernels over the same rows (softmax's max, exp,
  sum, divide) in one launch, one block per row, a barrier between stages,
  where what one writes the next reads at its own row only;
- many outputs of few elements: one warp per output;
- ``matmul``: the library kernels of ``tfc/passes/gpu_library.py``.
- ``argsort`` (a merge sort in passes: ``tfc/passes/gpu_sort.py``),
  ``tensor_array_write`` (``tfc/passes/gpu_lists.py``), the random ops with
  ``shuffle_indices`` and ``categorical`` (``tfc/passes/gpu_random.py``): a
  library may give host ops with its launches (an index check, a count read
  back and a ``loops.raise``), and a call that allocates its result gets a
  fresh device buffer;
- ``quantize``, ``quantized_matmul`` and ``quantized_conv2d`` (int8 dp4a),
  ``weight_quantized_matmul`` and ``weight_quantized_conv2d``:
  ``tfc/passes/gpu_quant_library.py``.

Index arithmetic is ``i32`` where every buffer a kernel touches spans fewer
than 2^31 elements (``tgpu.index``), else ``i64``; index values of a body
(``loops.index``, ``loops.load_at`` indices) are ``i64``. Scalar bodies keep
their ``arith``/``math`` ops, except those whose numpy semantics PTX does not
have, which are expanded here: integer division and remainders by zero
(numpy gives 0), float remainders (``tfc.remf``, C fmod: an exact long
division of the significands), float to integer casts of NaN and out-of-range values
(numpy, on x86, gives the lowest integer), float16 arithmetic (numpy computes
in float32 and rounds each result to float16).
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func, gpu
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    Float16Type, Float32Type, Float64Type, IndexType, IntegerAttr, IntegerType, MemRefType,
    ModuleOp, StringAttr, i1, i8, i32, i64,
)
from xdsl.ir import Block, BlockArgument, Region
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from tfc.dialects import gpu as G
from tfc.dialects import loops as L
from tfc.passes.gpu_builder import BLOCK, I32_MAX, MAX_BLOCKS, WIDENED, KernelBuilder, prod, scalar_param_type, \
    unsupported, widened
from tfc.passes.gpu_nn_library import LIBRARY as NN_LIBRARY
from tfc.passes.gpu_quant_library import LIBRARY as QUANT_LIBRARY
from tfc.passes.gpu_sort import LIBRARY as SORT_LIBRARY
from tfc.passes.gpu_lists import HOST_LIST_OPS, LIBRARY as LIST_LIBRARY, run_time_shape_error
from tfc.passes.gpu_random import LIBRARY as RANDOM_LIBRARY
from tfc.passes.gpu_random import RANDOM_OPS, host_key_base, random_launch
from tfc.passes.pipeline import PassPreconditionError

TWO_PASS_MIN = 1 << 14
TILE_T = 32  # the tiled transpose: 32x32 tiles, blocks of 32 x 8 threads
PER_WARP_MAX = 128  # reduced elements per output up to which many outputs take a warp each  # reduced elements per output from which few outputs take two passes
# Whether memref arguments are 16-byte aligned: yes, the runtime copies an argument that
# is not (a GPU tensor that is a view at an odd offset, eager x[1:]: CudaExecutable.run_device
# and the eager straight-line path, tfc.backends.cuda.aligned), so kernels read them as vectors
ARGUMENTS_ALIGNED = True
f16, f32, f64 = Float16Type(), Float32Type(), Float64Type()


class LowerGpuPass(ModulePass):
    """``tfc-lower-gpu``: an L3 module (after tfc-lower-loops) -> L4."""

    name = "tfc-lower-gpu"

    def apply(self, ctx, op: ModuleOp) -> None:
        lower_module(op)


def lower_module(module: ModuleOp) -> ModuleOp:
    """Lower every L3 function of ``module`` in place; returns it."""
    low = _Lowering()
    funcs = [f for f in module.ops if isinstance(f, func.FuncOp)]
    if any(isinstance(op, gpu.ModuleOp) for op in module.ops):
        raise PassPreconditionError("tfc-lower-gpu: the module is already lowered to L4 (it has a gpu.module)")
    for f in funcs:
        if not f.body.blocks or not f.body.block.args or not isinstance(f.body.block.args[-1].type, MemRefType):
            raise PassPreconditionError(f"tfc-lower-gpu expects L3 (loops) functions; @{f.sym_name.data} is "
                                        "tensor IR: run tfc-lower-loops first (it takes no arena argument)")
        low.block(f.body.block)
    kernels = gpu.ModuleOp(StringAttr("kernels"), Region(Block(low.kernels)))
    first = module.body.block.first_op
    if first is None:
        module.body.block.add_op(kernels)
    else:
        module.body.block.insert_op_before(kernels, first)
    return module


# -- layouts ------------------------------------------------------------------------


def _elem_offset(v) -> int:
    """Element offset of view ``v``'s first element from the start of the
    buffer it belongs to (which the memory plan or an allocation aligns)."""
    owner = v.owner
    if isinstance(owner, (L.SubviewOp, L.TransposeViewOp)):
        return _origin(owner.source) + L.layout_of(v.type)[1]
    if isinstance(owner, L.ReshapeOp):
        return _elem_offset(owner.source)
    return 0


def _origin(v) -> int:
    """Element offset of the origin that ``v``'s layout offset counts from."""
    owner = v.owner
    if isinstance(owner, (L.SubviewOp, L.TransposeViewOp)):
        return _origin(owner.source)
    if isinstance(owner, L.ReshapeOp):
        return _elem_offset(owner.source)
    return 0


def _root_aligned(v, nbytes: int, seen=None) -> bool:
    """Is the buffer view ``v`` belongs to aligned to ``nbytes`` (<= 16)? Arena
    views at their planned offset; allocations, constants, variables and
    library results are device allocations (256-byte aligned); loop variables
    and branch results where every value they may hold is; function arguments
    only with ``ARGUMENTS_ALIGNED``."""
    seen = set() if seen is None else seen
    while isinstance(v.owner, (L.SubviewOp, L.TransposeViewOp, L.ReshapeOp)):
        v = v.owner.source
    if v in seen:
        return True
    seen.add(v)
    owner = v.owner
    if isinstance(owner, L.ViewOp):
        return owner.offset.value.data % nbytes == 0
    if isinstance(owner, (L.AllocOp, L.ConstantOp, L.ReadVariableOp, L.LibraryOp)):
        return True
    if isinstance(owner, L.IfOp):
        k = list(owner.results).index(v)
        return all(_root_aligned(r.block.last_op.operands[k], nbytes, seen)
                   for r in (owner.then_region, owner.else_region))
    if isinstance(owner, L.WhileOp):
        k = list(owner.results).index(v)
        return _root_aligned(owner.inits[k], nbytes, seen) and \
            _root_aligned(owner.cond_region.block.args[k], nbytes, seen)
    if isinstance(owner, Block):
        parent = owner.parent_op()
        if isinstance(parent, func.FuncOp):
            # a caller's buffer: a GPU tensor may be a view at any offset (eager x[1:]), so
            # the runtime copies an argument that is not aligned (tfc.backends.cuda.aligned)
            return ARGUMENTS_ALIGNED
        if isinstance(parent, L.WhileOp):  # a loop variable: its init, or what the body yields
            k = v.index
            vals = [parent.inits[k], parent.body_region.block.last_op.operands[k]]
            return all(_root_aligned(x, nbytes, seen) for x in vals)
    return False


def _aligned(v, nbytes: int) -> bool:
    t = v.type
    return _root_aligned(v, nbytes) and (_elem_offset(v) * G.element_bytes(t.element_type)) % nbytes == 0


# -- operand accesses -----------------------------------------------------------------


@dataclass(eq=False)
class _Access:
    """How a kernel reads or writes one operand: ``scalar`` (a parameter by
    value), ``zero`` (a 0-d buffer: element 0) or ``buffer`` (element
    sum(digit[bmap[j]] * strides[j]) of the pointer parameter; ``flat``: that
    is the flat index itself)."""

    param: int
    elt: object
    kind: str
    bmap: tuple = ()
    strides: tuple = ()
    flat: bool = False
    nc: bool = False

    def extent(self, shape) -> int:
        """The largest |element index| it reaches."""
        return sum((shape[d] - 1) * abs(s) for d, s in zip(self.bmap, self.strides) if d >= 0 and shape[d] > 0)


class _Params:
    """A kernel's parameters: one per distinct host value (pointer or scalar)."""

    def __init__(self):
        self.values: list = []

    def add(self, v) -> int:
        for k, w in enumerate(self.values):
            if w is v:
                return k
        self.values.append(v)
        return len(self.values) - 1

    def types(self):
        out = []
        for v in self.values:
            if isinstance(v.type, MemRefType):
                out.append(G.PtrType(v.type.element_type, "global"))
            else:
                out.append(scalar_param_type(v.type))
        return out


class _Written:
    """What a kernel writes, as byte regions (``_region``): a buffer read
    through the read-only cache (``nc``) must overlap none of them. Regions,
    not values: the memory plan may give two values of one kernel (or of one
    row group) the same arena bytes."""

    def __init__(self, outs):
        self.regions = [_region(o) for o in outs]

    def __or__(self, more):
        w = _Written([])
        w.regions = self.regions + [_region(o) for o in more]
        return w

    def overlaps(self, v) -> bool:
        root, lo, hi = _region(v)
        if self.regions and not _own_bytes(root):
            return True  # a branch's result or a loop variable: it may be any buffer written here
        return any((r is root and lo < h and l_ < hi) or not _own_bytes(r) for r, l_, h in self.regions)


def _own_bytes(root) -> bool:
    """Whether a root buffer's bytes are known to be its own: the arena, a
    function argument, an allocation, a constant, a variable's value, a
    library result. A loops.if result or a loops.while variable names, at run
    time, one of several buffers (a kernel of the branch or the body may have
    written it): read-only loads of it could see stale bytes (fuzz, session 8)."""
    owner = root.owner
    if isinstance(owner, Block):
        return isinstance(owner.parent_op(), func.FuncOp)
    return isinstance(owner, (L.AllocOp, L.ConstantOp, L.ReadVariableOp, L.LibraryOp))


def _roots_written(outs) -> _Written:
    return _Written(list(outs))


def _root(v):
    while isinstance(v.owner, (L.SubviewOp, L.TransposeViewOp, L.ReshapeOp)):
        v = v.owner.source
    return v


def _access(params, v, bmap, shape, written) -> _Access:
    """The access of host value ``v`` read (or written) at ``bmap`` over ``shape``."""
    k = params.add(v)
    t = v.type
    if not isinstance(t, MemRefType):
        return _Access(k, t, "scalar")
    if any(d < 0 for d in t.get_shape()):
        raise unsupported(f"a buffer of run-time shape {t}")
    if not t.get_shape():
        return _Access(k, t.element_type, "zero", nc=not written.overlaps(v))
    strides, _ = L.layout_of(t)
    flat = tuple(bmap) == tuple(range(len(shape))) and L.is_contiguous(t)
    return _Access(k, t.element_type, "buffer", tuple(bmap), tuple(strides), flat, not written.overlaps(v))


def _index_type(accesses, shape, n_items: int):
    """i32 where every access and the grid-stride loop stay below 2^31."""
    span = n_items + MAX_BLOCKS * BLOCK * 4
    for a in accesses:
        if a.kind == "buffer":
            span = max(span, a.extent(shape) + 1)
    return i32 if span <= I32_MAX else i64


# -- the kernel builder -------------------------------------------------------------------


# -- scalar bodies ------------------------------------------------------------------


_FLOAT = (Float16Type, Float32Type, Float64Type)


def _is_float(t) -> bool:
    return isinstance(t, _FLOAT)


def _kernel_type(t):
    return i64 if isinstance(t, IndexType) else t


def _int_min(t) -> int:
    return -(1 << (t.width.data - 1))


def _fptosi(kb, x, t):
    """numpy's float -> int cast as x86 does it: NaN and out-of-range values give
    the lowest integer (cvttss2si's "integer indefinite"); 8-bit targets go
    through int32 and keep the low byte (C's cast)."""
    if x.type == f16:
        x = kb.emit(arith.ExtFOp(x, f32))
    wide = t if t.width.data >= 32 else i32
    w = wide.width.data
    r = kb.emit(arith.FPToSIOp(x, wide))
    bad = kb.emit(arith.CmpfOp(x, x, "uno"))
    big = kb.emit(arith.CmpfOp(x, kb.c(float(1 << (w - 1)), x.type), "uge"))
    small = kb.emit(arith.CmpfOp(x, kb.c(-float(1 << (w - 1)), x.type), "olt"))
    off = kb.emit(arith.OrIOp(kb.emit(arith.OrIOp(bad, big)), small))
    r = kb.select(off, kb.c(_int_min(wide), wide), r)
    return kb.cast_int(r, t)


def _safe_divisor(kb, b):
    """(b with 0 and -1 replaced by 1, b == 0, b == -1)."""
    t = b.type
    zero = kb.cmpi("eq", b, kb.c(0, t))
    minus = kb.cmpi("eq", b, kb.c(-1, t))
    return kb.select(kb.emit(arith.OrIOp(zero, minus)), kb.c(1, t), b), zero, minus


def _remsi(kb, a, b):
    """np.fmod on integers: truncated remainder, 0 for a zero divisor (and for
    -1: MIN % -1 would trap)."""
    sb, _, _ = _safe_divisor(kb, b)
    return kb.emit(arith.RemSIOp(a, sb))


def _floordivsi(kb, a, b):
    """np.floor_divide on integers: floor of a / b; 0 for a zero divisor; MIN // -1 wraps to MIN."""
    t = a.type
    sb, zero, minus = _safe_divisor(kb, b)
    q = kb.emit(arith.DivSIOp(a, sb))
    r = kb.emit(arith.RemSIOp(a, sb))
    z = kb.c(0, t)
    adjust = kb.emit(arith.AndIOp(kb.cmpi("ne", r, z),
                                  kb.cmpi("ne", kb.cmpi("slt", r, z), kb.cmpi("slt", sb, z))))
    q = kb.select(adjust, kb.sub(q, kb.c(1, t)), q)
    q = kb.select(minus, kb.sub(z, a), q)
    return kb.select(zero, z, q)


def _floormod(kb, a, b):
    """np.mod on integers: the remainder with the divisor's sign; 0 for a zero divisor."""
    t = a.type
    sb, _, _ = _safe_divisor(kb, b)
    r = kb.emit(arith.RemSIOp(a, sb))
    z = kb.c(0, t)
    adjust = kb.emit(arith.AndIOp(kb.cmpi("ne", r, z), kb.cmpi("ne", kb.cmpi("slt", r, z), kb.cmpi("slt", b, z))))
    return kb.select(adjust, kb.add(r, b), r)


def _pow2_f64(kb, k):
    """2.0 ** k as float64 for an i32 ``k`` in [-1022, 1023] (its bits)."""
    e = kb.emit(arith.ExtSIOp(kb.emit(arith.AddiOp(k, kb.c(1023, i32))), i64))
    return kb.emit(arith.BitcastOp(kb.emit(arith.ShLIOp(e, kb.c(52, i64))), f64))


def _remf(kb, x, y):
    """np.fmod on floats (C fmod; numpy's ``%`` and ``//`` build on it), exactly:
    the remainder of |x| by |y| as the long division of their 53-bit
    significands (musl's fmod: one bit per step, ``exponent(x) - exponent(y)``
    steps per lane), the sign of x. Special values as C: NaN for a NaN
    operand, an infinite x or a zero y; x itself where |x| < |y| (y infinite,
    x zero). float32 and float16 go through float64 (exactly: each is a
    normal float64, the remainder one of theirs); float64 subnormals are scaled by 2^54
    first. Cost: one loop step per bit of the quotient (up to 277 for float32,
    2098 for float64)."""
    if x.type in (f16, f32):
        r = _remf(kb, kb.emit(arith.ExtFOp(x, f64)), kb.emit(arith.ExtFOp(y, f64)))
        return kb.emit(arith.TruncFOp(r, x.type))
    if x.type != f64:
        raise unsupported(f"tfc.remf on {x.type}")
    ax, ay = kb.emit(xmath.AbsFOp(x)), kb.emit(xmath.AbsFOp(y))
    either_nan = kb.emit(arith.CmpfOp(x, y, "uno"))
    nan_out = kb.emit(arith.OrIOp(either_nan, kb.emit(arith.OrIOp(
        kb.emit(arith.CmpfOp(ax, kb.c(float("inf"), f64), "oeq")),
        kb.emit(arith.CmpfOp(y, kb.c(0.0, f64), "oeq"))))))
    keep_x = kb.emit(arith.CmpfOp(ax, ay, "olt"))
    run = kb.emit(arith.XOrIOp(kb.emit(arith.OrIOp(nan_out, keep_x)), kb.c(1, i1)))

    def parts(v):
        """(biased exponent as i32, significand with its leading bit as i64) of v > 0."""
        sub = kb.emit(arith.CmpfOp(v, kb.c(2.0 ** -1022, f64), "olt"))
        v = kb.select(sub, kb.emit(arith.MulfOp(v, kb.c(2.0 ** 54, f64))), v)
        bits = kb.emit(arith.BitcastOp(v, i64))
        e = kb.emit(arith.TruncIOp(kb.emit(arith.ShRUIOp(bits, kb.c(52, i64))), i32))
        e = kb.emit(arith.SubiOp(e, kb.select(sub, kb.c(54, i32), kb.c(0, i32))))
        m = kb.emit(arith.OrIOp(kb.emit(arith.AndIOp(bits, kb.c((1 << 52) - 1, i64))), kb.c(1 << 52, i64)))
        return e, m

    ex, mx = parts(ax)
    ey, my = parts(ay)
    steps = kb.select(run, kb.emit(arith.SubiOp(ex, ey)), kb.c(0, i32))

    def subtract(m):
        d = kb.emit(arith.SubiOp(m, my))
        return kb.select(kb.emit(arith.CmpiOp(d, kb.c(0, i64), "sge")), d, m)

    def step(_, m):
        return [kb.emit(arith.ShLIOp(subtract(m), kb.c(1, i64)))]
    (mx,) = kb.for_(kb.c(0, i32), steps, kb.c(1, i32), step, [mx])
    mx = subtract(mx)  # the remainder's significand: the value is mx * 2^(ey - 1075), exact
    e = kb.emit(arith.SubiOp(ey, kb.c(1075, i32)))
    low = kb.emit(arith.CmpiOp(e, kb.c(-1022, i32), "slt"))  # then in two exact steps (the result may be subnormal)
    e1 = kb.select(low, kb.emit(arith.AddiOp(e, kb.c(128, i32))), e)
    r = kb.emit(arith.MulfOp(kb.emit(arith.SIToFPOp(mx, f64)), _pow2_f64(kb, e1)))
    r = kb.emit(arith.MulfOp(r, kb.select(low, kb.c(2.0 ** -128, f64), kb.c(1.0, f64))))
    r = kb.emit(xmath.CopySignOp(r, x))
    nan = kb.select(either_nan, kb.emit(arith.AddfOp(x, y)), kb.c(float("nan"), f64))
    return kb.select(nan_out, nan, kb.select(keep_x, x, r))


_NARROW_OK = ("arith.extsi", "arith.extui", "arith.trunci", "arith.sitofp", "arith.select", "arith.index_cast",
              "arith.index_castui", "arith.constant")
_REBUILD_BINARY = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.AndIOp, arith.OrIOp, arith.XOrIOp,
                   arith.MaxSIOp, arith.MinSIOp, arith.DivSIOp, arith.DivUIOp, arith.RemUIOp)


_INT_EXPANSIONS = {"arith.remsi": _remsi, "arith.floordivsi": _floordivsi, "tfc.floormod": _floormod}


def scalar_op(kb, op, args):
    """The kernel value of L3 body op ``op`` on kernel values ``args`` (index
    values are i64)."""
    name = op.name
    rtypes = [r.type for r in op.results]
    if name == "arith.constant":
        t = rtypes[0]
        v = op.value.value.data
        if t == i1:
            v = 1 if v else 0
        return kb.c(v, _kernel_type(t))
    if name in ("arith.index_cast", "arith.index_castui"):
        return kb.cast_int(args[0], _kernel_type(rtypes[0]), signed=name == "arith.index_cast")
    if name not in _NARROW_OK and any(a.type == i8 for a in args):
        # PTX has no 8-bit arithmetic: in int32, the result wrapped back (numpy's int8 wraps)
        wide = [kb.cast_int(a, i32) if a.type == i8 else a for a in args]
        if name == "arith.cmpi":
            return kb.emit(arith.CmpiOp(wide[0], wide[1], op.predicate.value.data))
        if name in _INT_EXPANSIONS:
            r = _INT_EXPANSIONS[name](kb, *wide)
        elif isinstance(op, _REBUILD_BINARY) or name == "math.absi":
            r = kb.emit(type(op)(*wide))
        else:
            raise unsupported(f"{name} on int8 values in a kernel body")
        return kb.emit(arith.TruncIOp(r, i8)) if rtypes[0] == i8 else r
    if name == "arith.remsi":
        return _remsi(kb, *args)
    if name == "arith.floordivsi":
        return _floordivsi(kb, *args)
    if name == "tfc.floormod":
        return _floormod(kb, *args)
    if name == "arith.fptosi":
        return _fptosi(kb, args[0], rtypes[0])
    if name == "tfc.remf":
        return _remf(kb, *args)
    if name in ("math.ipowi", "math.fpowi"):
        raise unsupported(f"{name} in a kernel body")
    if name in ("arith.sitofp", "arith.uitofp") and rtypes[0] == f16:
        wide = kb.emit(type(op)(args[0], f32))
        return kb.emit(arith.TruncFOp(wide, f16))
    if name != "arith.select" and name not in ("arith.extf", "arith.truncf") and \
            (any(a.type == f16 for a in args) or f16 in rtypes):
        wide = [kb.emit(arith.ExtFOp(a, f32)) if a.type == f16 else a for a in args]
        if name == "arith.cmpf":
            return kb.emit(arith.CmpfOp(wide[0], wide[1], op.predicate.value.data))
        r = kb.emit(type(op)(*wide))
        return kb.emit(arith.TruncFOp(r, f16)) if rtypes[0] == f16 else r
    if any(isinstance(t, IndexType) for t in rtypes):
        if name == "arith.select":
            return kb.select(*args)
        if isinstance(op, _REBUILD_BINARY):
            return kb.emit(type(op)(*args))
        raise unsupported(f"{name} on index values in a kernel body")
    new = op.clone(value_mapper=dict(zip(op.operands, args)))
    return kb.emit(new)


def run_body(kb, block, vals, index_of, indexed):
    """The values a parallel body yields, its ops written into the kernel:
    ``vals`` for its arguments, ``index_of(d)`` (i64) for ``loops.index d``;
    ``indexed`` (``_Lowering._indexed``) writes ``loops.load_at`` and
    ``loops.add_at``."""
    env = dict(zip(block.args, vals))
    for op in block.ops:
        if isinstance(op, L.YieldOp):
            return [env[v] for v in op.values]
        if isinstance(op, L.IndexOp):
            env[op.result] = index_of(op.dim.value.data)
        elif isinstance(op, L.LoadAtOp):
            env[op.result] = indexed.load_at(op, [env[v] for v in op.indices])
        elif isinstance(op, L.AddAtOp):
            indexed.add_at(op, [env[v] for v in op.indices], env[op.value],
                           None if op.mask is None else env[op.mask])
        else:
            if len(op.results) != 1:
                raise unsupported(f"{op.name} in a kernel body")
            env[op.results[0]] = scalar_op(kb, op, [env[v] for v in op.operands])
    raise ValueError("a loops.parallel body without loops.yield")


def _body_index_dims(block) -> set:
    return {op.dim.value.data for op in block.walk() if isinstance(op, L.IndexOp)}


def _has_load_at(block) -> bool:
    """Does the body read or write at computed indices (loops.load_at / add_at)?"""
    return any(isinstance(op, (L.LoadAtOp, L.AddAtOp)) for op in block.walk())


# -- digits of a flat index ---------------------------------------------------------


def digits(kb, q, sizes, dims, needed):
    """{dim: digit} of flat index ``q`` over ``sizes`` (row-major; ``dims``
    names each size's iteration dim), for the dims in ``needed`` (size-1 dims
    are 0)."""
    out = {}
    want = [k for k, d in enumerate(dims) if d in needed and sizes[k] > 1]
    if not want:
        return {d: None for d in needed}
    lowest = min(want)
    for k in range(len(sizes) - 1, lowest - 1, -1):
        if sizes[k] == 1:
            continue
        if k == lowest and all(sizes[j] == 1 for j in range(k)):
            out[dims[k]] = q  # the leading digit: q < sizes[k]
            break
        if k == lowest:
            out[dims[k]] = kb.remu(q, kb.i(sizes[k]))
            break
        out[dims[k]] = kb.remu(q, kb.i(sizes[k]))
        q = kb.divu(q, kb.i(sizes[k]))
    return out


def _access_index(kb, a: _Access, dig, skip=()):
    """sum(digit * stride) of a buffer access over the digits ``dig`` (None or
    missing: 0), leaving out iteration dims in ``skip``."""
    terms = []
    for d, s in zip(a.bmap, a.strides):
        if d < 0 or d in skip:
            continue
        v = dig.get(d)
        if v is not None:
            terms.append((v, s))
    return kb.dot(terms)


def _transposing(src: _Access, dst: _Access, shape) -> bool:
    """A copy that reads its source along the destination's second-to-last
    dim (stride 1 there, not along the last) into a destination contiguous
    along its last dim, both rows and columns at least a tile's half: the
    tiled transpose pays."""
    if src.kind != "buffer" or dst.kind != "buffer" or len(shape) < 2:
        return False
    if shape[-2] < TILE_T // 2 or shape[-1] < TILE_T // 2:
        return False
    s = dict(zip(src.bmap, src.strides))
    d = dict(zip(dst.bmap, dst.strides))
    rank = len(shape)
    return abs(s.get(rank - 2, 0)) == 1 and abs(s.get(rank - 1, 0)) != 1 and abs(d.get(rank - 1, 0)) == 1


def _kind_name(block, fallback: str) -> str:
    names = []
    for op in block.ops:
        if isinstance(op, (L.YieldOp, L.IndexOp)) or op.name == "arith.constant":
            continue
        if isinstance(op, L.LoadAtOp):
            stem = "gather"
        else:
            stem = op.name.split(".", 1)[1]
            for suffix in ("f", "i", "si", "ui"):
                if stem.endswith(suffix) and stem[:-len(suffix)] in (
                        "add", "sub", "mul", "div", "neg", "abs", "max", "min", "rem", "floordiv", "cmp",
                        "maximum", "minimum", "ext", "trunc"):
                    stem = stem[:-len(suffix)]
                    break
        if any(isinstance(r.type, IndexType) for r in op.results):
            continue
        if stem not in names:
            names.append(stem)
    names = [n.replace("_", "") for n in names[:3]]
    return "_".join([fallback] + names) if names else fallback


# -- the lowering ----------------------------------------------------------------------


class _Indexed:
    """loops.load_at / loops.add_at of a kernel's captured buffers: the element
    index sum(index * stride) in i64; add_at an atomic add (the adds of one
    element then happen in any order: float sums within the reduction
    family's tolerance, integers exact), under its mask."""

    def __init__(self, kb, caps):
        self.kb, self.caps = kb, caps

    def _index(self, a, idx):
        kb = self.kb
        acc = None
        for v, s in zip(idx, a.strides):
            if s == 0:
                continue
            t = v if s == 1 else kb.emit(arith.MuliOp(v, kb.c(s, i64)))
            acc = t if acc is None else kb.emit(arith.AddiOp(acc, t))
        return kb.c(0, i64) if acc is None else acc

    def load_at(self, op, idx):
        a = self.caps[op.source]
        return self.kb.load(self.kb.args[a.param], self._index(a, idx), nc=a.nc)[0]

    def add_at(self, op, idx, value, mask):
        a = self.caps[op.dest]
        kb = self.kb
        if not atomic_add_supported(a.elt, kb.args[a.param], value):
            raise unsupported(f"loops.add_at into {a.elt} (tgpu.atomic add: f32, i32, i64)")

        def add():
            kb.emit(G.AtomicOp("add", kb.args[a.param], self._index(a, idx), value))
        if mask is None:
            add()
        else:
            kb.if_(mask, add)



def atomic_add_supported(elt, ptr=None, value=None) -> bool:
    """Does the tgpu dialect take an atomic add of ``elt`` (f32, i32, i64; f64
    once the printer has red.global.add.f64)? Asks its verifier, so the
    lowering follows the dialect."""
    from xdsl.dialects.builtin import UnrealizedConversionCastOp

    probes = []
    if ptr is None or value is None:
        probes = [UnrealizedConversionCastOp.get([], [G.PtrType(elt, "global")]),
                  UnrealizedConversionCastOp.get([], [elt])]
        ptr, value = probes[0].results[0], probes[1].results[0]
    index = UnrealizedConversionCastOp.get([], [i32])
    probe = G.AtomicOp("add", ptr, index.results[0], value)
    try:
        probe.verify_()
        return True
    except VerifyException:
        return False
    finally:
        probe.drop_all_references()


@dataclass(eq=False)
class _Red:
    """A reduced output of a reduction kernel."""

    kind: str          # sum prod max min mean any all
    val_t: object      # the yielded element type
    acc_t: object      # the accumulator type
    out_t: object      # the stored element type
    access: _Access    # where the result goes
    kept_strides: tuple  # per kept iteration dim (in order), the stride of the destination
    count: int         # reduced elements per output (mean's divisor)
    finalize: bool     # divide a mean, cast to out_t (False: a partial of pass 1)
    identity_plus: bool = False  # a float sum over nothing: +0.0, numpy's empty sum
    idx_t: object = None         # argmax/argmin: the type of the index part (the kernel's index type)


ARG_KINDS = ("argmax", "argmin")


def _acc_type(kind, t):
    if kind not in ("sum", "prod", "max", "min", "mean", "any", "all") + ARG_KINDS:
        raise unsupported(f"reduce kind {kind!r}")
    if kind in ARG_KINDS and t == i1:
        return i32
    if kind in ("any", "all"):
        if t != i1:
            raise unsupported(f"reduce_{kind} of {t}")
        return i32
    if t == i1:
        raise unsupported(f"reduce_{kind} of booleans")
    if kind == "mean" and isinstance(t, IntegerType):
        return i64
    if kind == "prod" and t in (f16, f32):
        # float32 products near 1 round with a bias that grows with the count (40,000
        # values in [0.999, 1.001]: 3.5e-5 from the exact product, numpy 2e-6); float64
        # accumulators are exact enough, and a product is never bandwidth-critical
        return f64
    if t == f16:
        return f32
    if isinstance(t, IntegerType) and t.width.data < 32:
        return i32
    return t


def _identity(kb, red: _Red):
    t, kind = red.acc_t, red.kind
    if kind in ("sum", "mean"):
        return kb.c(0.0 if red.identity_plus else -0.0, t) if _is_float(t) else kb.c(0, t)
    if kind == "prod":
        return kb.c(1, t)
    if kind == "any":
        return kb.c(0, t)
    if kind == "all":
        return kb.c(1, t)
    if _is_float(t):
        return kb.c(float("-inf") if kind == "max" else float("inf"), t)
    vt = red.val_t  # the value type's range (an int8 max starts at -128)
    w = vt.width.data
    return kb.c(-(1 << (w - 1)) if kind == "max" else (1 << (w - 1)) - 1, t)


def _combine(kb, kind, a, b):
    fl = _is_float(a.type)
    cls = {"sum": (arith.AddfOp, arith.AddiOp), "mean": (arith.AddfOp, arith.AddiOp),
           "prod": (arith.MulfOp, arith.MuliOp), "max": (arith.MaximumfOp, arith.MaxSIOp),
           "min": (arith.MinimumfOp, arith.MinSIOp), "any": (None, arith.OrIOp),
           "all": (None, arith.AndIOp)}[kind][0 if fl else 1]
    return kb.emit(cls(a, b))


def _parts(red: _Red) -> list:
    """The accumulator's parts: the value, and for argmax/argmin its index."""
    return [red.acc_t, red.idx_t] if red.kind in ARG_KINDS else [red.acc_t]


def _identity_parts(kb, red: _Red) -> list:
    if red.kind not in ARG_KINDS:
        return [_identity(kb, red)]
    t = red.acc_t
    if _is_float(t):
        v = kb.c(float("-inf") if red.kind == "argmax" else float("inf"), t)
    else:
        w = red.val_t.width.data if red.val_t != i1 else 2
        v = kb.c(-(1 << (w - 1)) if red.kind == "argmax" else (1 << (w - 1)) - 1, t)
        if red.val_t == i1:
            v = kb.c(-1 if red.kind == "argmax" else 2, t)
    return [v, kb.c(I32_MAX, red.idx_t)]


def _combine_parts(kb, red: _Red, a: list, b: list) -> list:
    """``a`` combined with ``b``; for argmax/argmin (value, index) pairs: the
    better value, the first NaN (numpy's), the smaller index among equals."""
    if red.kind not in ARG_KINDS:
        return [_combine(kb, red.kind, a[0], b[0])]
    (x, i), (y, j) = a, b
    if _is_float(x.type):
        better = kb.emit(arith.CmpfOp(y, x, "ogt" if red.kind == "argmax" else "olt"))
        ynan = kb.emit(arith.CmpfOp(y, y, "uno"))
        xnan = kb.emit(arith.CmpfOp(x, x, "uno"))
        xnum = kb.emit(arith.CmpfOp(x, x, "ord"))
        better = kb.emit(arith.OrIOp(better, kb.emit(arith.AndIOp(ynan, xnum))))
        same = kb.emit(arith.OrIOp(kb.emit(arith.CmpfOp(y, x, "oeq")), kb.emit(arith.AndIOp(ynan, xnan))))
    else:
        better = kb.cmpi("sgt" if red.kind == "argmax" else "slt", y, x)
        same = kb.cmpi("eq", y, x)
    take = kb.emit(arith.OrIOp(better, kb.emit(arith.AndIOp(same, kb.cmpi("slt", j, i)))))
    return [kb.select(take, y, x), kb.select(take, j, i)]


def _to_acc(kb, v, red: _Red):
    t = red.acc_t
    if v.type == t:
        return v
    if _is_float(t):
        return kb.emit(arith.ExtFOp(v, t))
    return kb.cast_int(v, t, signed=v.type != i1)


def _finalize(kb, parts, red: _Red):
    if red.kind in ARG_KINDS:
        return kb.cast_int(parts[1], red.out_t)
    acc = parts[0]
    if not red.finalize:
        return acc
    if red.kind == "mean":
        if _is_float(acc.type):
            acc = kb.emit(arith.DivfOp(acc, kb.c(float(red.count), acc.type)))
        else:  # integer mean: the int64 sum over the count, rounded toward zero (tfc's reduce_mean)
            acc = kb.emit(arith.DivSIOp(acc, kb.c(max(1, red.count), acc.type)))
    t = red.out_t
    if acc.type == t:
        return acc
    if _is_float(t):
        return kb.emit(arith.TruncFOp(acc, t))
    return kb.emit(arith.TruncIOp(acc, t))


def _row_stage(op, shape=None) -> bool:
    """Can ``op`` be a stage of a row kernel (of iteration shape ``shape``)?
    Elementwise, or reducing the last axis only with 32-bit accumulators; no
    computed index (loops.index / load_at / add_at); rank >= 2."""
    if not isinstance(op, L.ParallelOp):
        return False
    sh = op.iteration_shape
    if len(sh) < 2 or (shape is not None and sh != shape) or prod(sh) == 0:
        return False
    body = op.body.block
    if _body_index_dims(body) or _has_load_at(body):
        return False
    if any(isinstance(v.type, MemRefType) and any(d < 0 for d in v.type.get_shape()) for v in op.operands):
        return False
    if op.reduces:
        if op.axes != (len(sh) - 1,):
            return False
        for k, y in zip(op.reduce_kinds, body.last_op.values):
            if k is None:
                continue
            if k in ARG_KINDS:
                return False
            try:
                if G.element_bytes(_acc_type(k, y.type)) != 4:
                    return False
            except NotImplementedError:
                return False
    return True


def _region(v):
    """(root buffer, first byte, end byte) that view ``v`` may touch; for an
    arena view the root is the arena and the bytes its planned range."""
    t = v.type
    size = G.element_bytes(t.element_type)
    strides, _ = L.layout_of(t)
    start = _elem_offset(v)
    lo = start + sum((n - 1) * s for n, s in zip(t.get_shape(), strides) if s < 0 and n > 0)
    hi = start + sum((n - 1) * s for n, s in zip(t.get_shape(), strides) if s > 0 and n > 0) + 1
    root = _root(v)
    base = 0
    if isinstance(root.owner, L.ViewOp):
        base = root.owner.offset.value.data
        root = root.owner.arena
    return root, base + lo * size, base + hi * size


def _row_group(first) -> list:
    """The consecutive row stages from ``first`` (loops.alloc / loops.view may
    sit between them: they move before) that one kernel may run row by row:
    what a stage writes, later stages read at its own row only (elementwise
    outputs at the identity map, a reduced row value at its row), and no two
    buffers of the group overlap unless they are the same buffer."""
    if not _row_stage(first):
        return [first]
    shape = first.iteration_shape
    rank = len(shape)
    group = [first]
    op = first.next_op
    while op is not None:
        if isinstance(op, (L.AllocOp, L.ViewOp)):
            op = op.next_op
            continue
        if not _row_stage(op, shape):
            break
        group.append(op)
        op = op.next_op
    while len(group) > 1 and not _row_legal(group, shape, rank):
        group.pop()
    return group


def _row_legal(group, shape, rank) -> bool:
    """Every read of a buffer that the group writes (or that overlaps one) is
    at the reader's own row, and buffers that overlap a written one are that
    very buffer (the memory plan may give two values one place: the block of
    a row reads and writes it in stage order)."""
    lead = tuple(range(rank - 1))
    regions = {}
    for st in group:
        for v in list(st.ins) + list(st.outs):
            if isinstance(v.type, MemRefType):
                regions[v] = _region(v)
    outs = [o for st in group for o in st.outs]

    def overlap(x, y):
        rx, ry = regions[x], regions[y]
        return rx[0] is ry[0] and rx[1] < ry[2] and ry[1] < rx[2]

    def same(x, y):
        return x.type == y.type and regions[x] == regions[y] and _elem_offset(x) == _elem_offset(y)

    for o in outs:
        for v in regions:
            if v is not o and overlap(o, v) and not same(o, v):
                return False
    for st in group:
        for v, m in zip(st.ins, st.broadcast_maps):
            if not isinstance(v.type, MemRefType) or not any(overlap(v, o) for o in outs):
                continue
            vs = tuple(v.type.get_shape())
            if vs == tuple(shape):
                want = tuple(range(rank))
            elif vs == tuple(shape[:-1]) + (1,):
                want = lead + (-1,)
            elif vs == tuple(shape[:-1]):
                want = lead
            else:
                return False
            size = lambda d: 1 if d < 0 else shape[d]  # noqa: E731  (a -1 and a size-1 dim read alike)
            if len(m) != len(want) or any(x != y and not size(x) == size(y) == 1 for x, y in zip(m, want)):
                return False
    return True


class _Lowering:
    def __init__(self):
        self.kernels: list = []
        self.count = 0

    def name(self, stem: str) -> str:
        n = f"k{self.count}_{stem}"
        self.count += 1
        return n

    # -- host blocks --
    def block(self, block):
        fused = set()
        for op in list(block.ops):
            if op in fused:
                continue
            if isinstance(op, L.ParallelOp):
                group = _row_group(op)
                if len(group) > 1:
                    fused.update(group)
                    self.rows(group)
                    continue
                self.replace(op, self.parallel(op))
            elif isinstance(op, L.CopyOp):
                self.replace(op, self.copy(op))
            elif isinstance(op, L.LibraryOp):
                if not any(isinstance(v.type, MemRefType) for v in list(op.operands) + list(op.results)):
                    continue  # on host scalars only (a reduction of a 0-d value): the host runs its kernel
                if op.callee.data in HOST_LIST_OPS and not op.outs:
                    continue  # a loop gradient's state lists: the host copies them (tfc/backends/cuda/lists.py)
                self.replace(op, self.library(op))
            else:
                for region in op.regions:
                    for b in region.blocks:
                        self.block(b)

    @staticmethod
    def replace(op, new_ops):
        block = op.parent_block()
        if new_ops:
            block.insert_ops_before(new_ops, op)
        if any(r.uses for r in op.results):
            raise unsupported(f"{op.name} with results (a library call that allocates its result)")
        op.detach()
        op.erase()

    def launch(self, kernel, grid, args, block=(BLOCK, 1, 1)):
        """Host ops: the grid sizes (index constants) and the tgpu.launch."""
        consts = [arith.ConstantOp(IntegerAttr(int(g), IndexType())) for g in grid]
        widen, passed = [], []
        for a in args:  # float16 / int8 scalars travel as float32 / int32 (WIDENED)
            if not isinstance(a.type, MemRefType) and a.type in WIDENED:
                widen.append(widened(a))
                a = widen[-1].result
            passed.append(a)
        return widen + consts + [G.LaunchOp(kernel.sym_name.data, [c.result for c in consts], block, passed)]

    # -- loops.parallel --
    def parallel(self, op):
        shape = op.iteration_shape
        if any(d < 0 for d in shape):
            raise unsupported("a loops.parallel of run-time shape")
        if op.reduces:
            return self.reduction(op)
        if prod(shape) == 0:
            return []
        body = op.body.block
        term = body.last_op
        copy_like = len(op.outs) == 1 and len(list(body.ops)) <= 2 and (
            (isinstance(term.values[0], BlockArgument) and term.values[0].block is body)
            or isinstance(term.values[0].owner, arith.ConstantOp))
        if copy_like:
            stem = "copy" if isinstance(term.values[0], BlockArgument) else "fill"
            kind = "copy"
        else:
            stem = "scatter_add" if any(isinstance(o, L.AddAtOp) for o in body.walk()) else _kind_name(body, "fused")
            kind = "elementwise"
        params = _Params()
        written = _roots_written(list(op.outs) + list(op.added_into()))
        ident = tuple(range(len(shape)))
        ins = [_access(params, v, m, shape, written) for v, m in zip(op.ins, op.broadcast_maps)]
        outs = [_access(params, v, ident, shape, written) for v in op.outs]
        caps = {c: _access(params, c, tuple(range(len(c.type.get_shape()))), tuple(c.type.get_shape()), written)
                for c in op.captured()}
        for a in outs:
            a.nc = False
        if stem == "copy" and len(ins) == 1 and _transposing(ins[0], outs[0], shape):
            return self.transpose(shape, params, ins[0], outs[0])
        kernel = self.elementwise(self.name(stem), kind, shape, params, ins, outs,
                                  lambda kb, vals, index_of: run_body(kb, body, vals, index_of,
                                                                      _Indexed(kb, caps)),
                                  _body_index_dims(body), vector_ok=not _has_load_at(body),
                                  values=list(op.ins) + list(op.outs), extra=list(caps.values()),
                                  extra_shapes=[tuple(c.type.get_shape()) for c in caps])
        return self.launch(kernel, self._grid, params.values)

    def copy(self, op):
        src, dst = op.source, op.dest
        shape = tuple(dst.type.get_shape())
        if any(d < 0 for d in shape):
            raise unsupported("a loops.copy of run-time shape")
        if prod(shape) == 0:
            return []
        params = _Params()
        written = _roots_written([dst])
        ident = tuple(range(len(shape)))
        ins = [_access(params, src, ident, shape, written)]
        outs = [_access(params, dst, ident, shape, written)]
        outs[0].nc = False
        if _transposing(ins[0], outs[0], shape):
            return self.transpose(shape, params, ins[0], outs[0])
        kernel = self.elementwise(self.name("copy"), "copy", shape, params, ins, outs,
                                  lambda kb, vals, index_of: vals, set(), vector_ok=True, values=[src, dst])
        return self.launch(kernel, self._grid, params.values)

    def transpose(self, shape, params, src: _Access, dst: _Access):
        """A copy whose source runs along the destination's second-to-last dim
        (a transposed view): 32x32 tiles through shared memory (rows padded to
        33: no bank conflicts), read along the source's unit stride and written
        along the destination's, so both sides coalesce. Block (32, 8); tiles
        (batch, tile row, tile column) grid-strided, one per block in turn; the
        bounds checks inside the branches, the barriers outside."""
        rank = len(shape)
        rows, cols = shape[-2], shape[-1]
        batch = shape[:-2]
        tr, tc = -(-rows // TILE_T), -(-cols // TILE_T)
        ntiles = prod(batch) * tr * tc
        it = _index_type([src, dst], shape, prod(shape) + ntiles * TILE_T * TILE_T)
        kb = KernelBuilder(self.name("transpose"), params.types(), "copy", it, (TILE_T, TILE_T // 4, 1))
        tx, ty = kb.tid(), kb.special(gpu.ThreadIdOp, "y")
        tile = kb.shared(src.elt, TILE_T * (TILE_T + 1))
        dims = tuple(range(rank - 2))

        def one(t):
            c_t = kb.remu(t, kb.i(tc))
            rest = kb.divu(t, kb.i(tc))
            r_t = kb.remu(rest, kb.i(tr))
            b = kb.divu(rest, kb.i(tr))
            bdig = digits(kb, b, batch, dims, set(dims)) if batch else {}
            r0, c0 = kb.mul(r_t, kb.i(TILE_T)), kb.mul(c_t, kb.i(TILE_T))
            # read: consecutive threads along the source's unit stride (rows), into the tile;
            # then write: consecutive threads along the destination's rows, out of it
            for reading in (True, False):
                for j in range(4):
                    yy = kb.add(ty, kb.i(8 * j)) if j else ty
                    r, c = (kb.add(r0, tx), kb.add(c0, yy)) if reading else (kb.add(r0, yy), kb.add(c0, tx))
                    ok = kb.emit(arith.AndIOp(kb.cmpi("slt", r, kb.i(rows)), kb.cmpi("slt", c, kb.i(cols))))

                    def move(r=r, c=c, yy=yy, reading=reading):
                        dig = dict(bdig)
                        dig[rank - 2], dig[rank - 1] = r, c
                        if reading:
                            v = kb.load(kb.args[src.param], _access_index(kb, src, dig), nc=src.nc)[0]
                            kb.store([v], tile, kb.add(kb.mul(yy, kb.i(TILE_T + 1)), tx))
                        else:
                            v = kb.load(tile, kb.add(kb.mul(tx, kb.i(TILE_T + 1)), yy))[0]
                            kb.store([v], kb.args[dst.param], _access_index(kb, dst, dig))
                    kb.if_(ok, move)
                kb.emit(gpu.BarrierOp())

        kb.for_(kb.bid(), kb.i(ntiles), kb.gdim(), one)
        kernel = kb.finish()
        self.kernels.append(kernel)
        return self.launch(kernel, (max(1, min(ntiles, MAX_BLOCKS)), 1, 1), params.values, (TILE_T, TILE_T // 4, 1))

    def elementwise(self, name, kind, shape, params, ins, outs, body, index_dims, vector_ok, values,
                    extra=(), extra_shapes=()):
        """A grid-stride kernel over the flat index of ``shape``; ``body(kb,
        vals, index_of)`` gives the output values from the input values.
        Sets ``self._grid``."""
        n = prod(shape)
        rank = len(shape)
        buffers = [a for a in ins + outs if a.kind == "buffer"]
        it = _index_type(buffers, shape, n)
        for a, sh in zip(extra, extra_shapes):
            if a.kind == "buffer" and a.extent(sh) + 1 > I32_MAX:
                it = i64
        width = 1
        if vector_ok and buffers and all(a.flat for a in buffers) and not index_dims:
            size = max(G.element_bytes(a.elt) for a in buffers)
            w = 16 // size if size in (4, 8) else 4 if size <= 4 else 1
            mem = [v for v, a in zip(values, ins + outs) if a.kind == "buffer"]
            if n >= w and all(_aligned(v, w * G.element_bytes(v.type.element_type)) for v in mem):
                width = w
        kb = KernelBuilder(name, params.types(), kind, it)
        hoisted = {}
        for a in ins:
            if a.kind == "scalar":
                hoisted[id(a)] = kb.param(a)
            elif a.kind == "zero":
                hoisted[id(a)] = kb.load(kb.args[a.param], kb.i(0), nc=a.nc)[0]
        gid = kb.add(kb.mul(kb.bid(), kb.i(BLOCK)), kb.tid())
        stride = kb.mul(kb.gdim(), kb.i(BLOCK))
        needed = set(index_dims)
        for a in buffers:
            if not a.flat:
                needed.update(d for d in a.bmap if d >= 0)

        def element(i):
            dig = digits(kb, i, shape, tuple(range(rank)), needed) if needed else {}
            vals = []
            for a in ins:
                if a.kind == "buffer":
                    idx = i if a.flat else _access_index(kb, a, dig)
                    vals.append(kb.load(kb.args[a.param], idx, nc=a.nc)[0])
                else:
                    vals.append(hoisted[id(a)])

            def index_of(d):
                v = dig.get(d)
                return kb.c(0, i64) if v is None else kb.cast_int(v, i64)
            res = body(kb, vals, index_of)
            for a, v in zip(outs, res):
                kb.store([v], kb.args[a.param], i if a.flat else _access_index(kb, a, dig))

        if width > 1:
            nq = n // width

            def quad(q):
                i = kb.mul(q, kb.i(width))
                lanes = []
                for a in ins:
                    if a.kind == "buffer":
                        lanes.append(kb.load(kb.args[a.param], i, nc=a.nc, width=width))
                    else:
                        lanes.append([hoisted[id(a)]] * width)
                res = [body(kb, [lane[j] for lane in lanes], None) for j in range(width)]
                for k, a in enumerate(outs):
                    kb.store([res[j][k] for j in range(width)], kb.args[a.param], i)
            kb.for_(gid, kb.i(nq), stride, lambda q: quad(q))
            if n % width:
                kb.for_(kb.add(gid, kb.i(nq * width)), kb.i(n), stride, lambda i: element(i))
            blocks = -(-nq // BLOCK)
        else:
            kb.for_(gid, kb.i(n), stride, lambda i: element(i))
            blocks = -(-n // BLOCK)
        self._grid = (max(1, min(blocks, MAX_BLOCKS)), 1, 1)
        kernel = kb.finish()
        kernel.attributes["tgpu.width"] = IntegerAttr(width, i64)
        self.kernels.append(kernel)
        return kernel

    # -- reductions --
    def reduction(self, op):
        shape = op.iteration_shape
        axes = op.axes
        kept = tuple(d for d in range(len(shape)) if d not in axes)
        m = prod([shape[d] for d in kept])
        r = prod([shape[d] for d in axes])
        if m == 0:
            return []
        body = op.body.block
        term = body.last_op
        params = _Params()
        written = _roots_written(list(op.outs) + list(op.added_into()))
        ident = tuple(range(len(shape)))
        ins = [_access(params, v, mp, shape, written) for v, mp in zip(op.ins, op.broadcast_maps)]
        caps = {c: _access(params, c, tuple(range(len(c.type.get_shape()))), tuple(c.type.get_shape()), written)
                for c in op.captured()}
        kinds = op.reduce_kinds
        p_chunks = 1
        bsize = _block_for([(k, _acc_type(k, y.type)) for k, y in zip(kinds, term.values) if k])
        width = self._reduce_width(op, ins, shape, axes, m, r)
        chunk = None
        if m < MAX_BLOCKS // 2 and r >= TWO_PASS_MIN and not any(k in ARG_KINDS for k in kinds):
            p_chunks = max(1, min(MAX_BLOCKS // m, -(-r // (bsize * 8))))
            if p_chunks > 1:
                chunk = -(-r // p_chunks)
                chunk = -(-chunk // width) * width  # every chunk starts on a vector
                p_chunks = -(-r // chunk)
            if p_chunks <= 1:
                p_chunks, chunk = 1, None
        host = []
        ew, reds, partials = [], [], []
        for k, (o, kind, y) in enumerate(zip(op.outs, kinds, term.values)):
            if kind is None:
                a = _access(params, o, ident, shape, written)
                a.nc = False
                ew.append((k, a))
                continue
            acc_t = _acc_type(kind, y.type)
            out_t = o.type.element_type
            if p_chunks > 1:
                tmp = L.AllocOp(MemRefType(acc_t, [m, p_chunks]))
                host.append(tmp)
                partials.append((k, tmp.result, o, kind, acc_t, out_t))
                a = _access(params, tmp.result, (0, 1), (m, p_chunks), written | [tmp.result])
                a.nc = False
                reds.append((k, _Red(kind, y.type, acc_t, acc_t, a, (), r, False)))
            else:
                a, ks = self._red_out(params, o, shape, kept, written)
                reds.append((k, _Red(kind, y.type, acc_t, out_t, a, ks, r, True, identity_plus=r == 0)))
        # many outputs of few elements each: one warp per output (no shared memory, no barrier)
        per_warp = p_chunks == 1 and r <= PER_WARP_MAX and m >= MAX_BLOCKS and \
            all(G.element_bytes(t) == 4 for _, rd in reds for t in _parts(rd) if t is not None)
        stem = "_".join(dict.fromkeys(k for k in kinds if k)) + "_" + _axes_name(shape, axes) + \
            ("_warps" if per_warp else "")
        kernel = self.reduce_kernel(
            self.name(stem), shape, axes, params, ins, ew, reds,
            lambda kb, vals, index_of: run_body(kb, body, vals, index_of, _Indexed(kb, caps)),
            _body_index_dims(body), p_chunks, bsize, extra=list(caps.values()),
            extra_shapes=[tuple(c.type.get_shape()) for c in caps], width=width, chunk=chunk, per_warp=per_warp)
        host += self.launch(kernel, self._grid, params.values, (bsize, 1, 1))
        if p_chunks > 1:  # the second pass: each output over its chunks' partial results
            kshape = tuple(shape[d] for d in kept)
            shape2 = kshape + (p_chunks,)
            params2 = _Params()
            written2 = _roots_written([o for _, _, o, _, _, _ in partials])
            ins2, reds2 = [], []
            for k, tmp, o, kind, acc_t, out_t in partials:
                # the partial buffer [m, p]: read at row o, element ri (reduce_kernel's partial_input)
                ins2.append(_Access(params2.add(tmp), acc_t, "buffer", nc=True))
                dest, ks = self._red_out(params2, o, shape, kept, written2)
                reds2.append((len(reds2), _Red(kind, acc_t, acc_t, out_t, dest, ks, r, True)))
            b2 = _block_for([(rd.kind, rd.acc_t) for _, rd in reds2])
            kernel2 = self.reduce_kernel(self.name(stem + "_final"), shape2, (len(kshape),), params2, ins2, [],
                                         reds2, lambda kb, vals, index_of: vals, set(), 1, b2, partial_input=True)
            host += self.launch(kernel2, self._grid, params2.values, (b2, 1, 1))
        return host

    @staticmethod
    def _reduce_width(op, ins, shape, axes, m, r) -> int:
        """Vector width of a reduction's loads: every buffer read contiguously
        along the reduced elements (stride 1), each row's start a multiple of
        the width, 16-byte aligned, no elementwise output and no index read;
        else 1."""
        body = op.body.block
        if any(k is None for k in op.reduce_kinds) or _body_index_dims(body) or _has_load_at(body):
            return 1
        bufs = [(v, a) for v, a in zip(op.ins, ins) if a.kind == "buffer"]
        if not bufs or any(_row_major_step(a, shape, axes) != 1 for _, a in bufs):
            return 1
        size = max(G.element_bytes(a.elt) for _, a in bufs)
        w = 2 if size == 8 else 4
        if r < w:
            return 1
        for v, a in bufs:
            kept_strides = [s for d, s in zip(a.bmap, a.strides) if d >= 0 and d not in axes and shape[d] > 1]
            if any(s % w for s in kept_strides) or not _aligned(v, w * G.element_bytes(a.elt)):
                return 1
        return w

    @staticmethod
    def _red_out(params, o, shape, kept, written):
        """The destination of a reduced output and its stride per kept dim."""
        a = _access(params, o, tuple(range(len(o.type.get_shape()))), tuple(o.type.get_shape()), written)
        a.nc = False
        if a.kind != "buffer":
            return a, ()
        if len(o.type.get_shape()) == len(shape):  # keepdims: the kept dims keep their place
            ks = tuple(a.strides[d] for d in kept)
        else:
            ks = tuple(a.strides)
        return a, ks

    def reduce_kernel(self, name, shape, axes, params, ins, ew, reds, body, index_dims, p_chunks, bsize,
                      extra=(), extra_shapes=(), partial_input=False, width=1, chunk=None, per_warp=False):
        """Work items (kept flat index o, chunk p), one per block in turn; the
        block's threads stride over the chunk's reduced elements; each reduced
        output's accumulators meet in a block reduction, which thread 0 finishes
        and stores. Sets ``self._grid``."""
        kept = tuple(d for d in range(len(shape)) if d not in axes)
        ksizes = [shape[d] for d in kept]
        rsizes = [shape[d] for d in axes]
        m, r = prod(ksizes), prod(rsizes)
        if chunk is None:
            chunk = -(-r // p_chunks) if p_chunks > 1 else r
        work = m * p_chunks
        it = _index_type([a for a in ins if a.kind == "buffer" and not partial_input] + [a for _, a in ew],
                         shape, m * r)
        for rd_k, rd in reds:
            span = sum((n - 1) * abs(s) for n, s in zip(ksizes, rd.kept_strides)) + m * p_chunks
            if span > I32_MAX:
                it = i64
        if partial_input and m * p_chunks + MAX_BLOCKS * BLOCK > I32_MAX:
            it = i64
        for a, sh in zip(extra, extra_shapes):
            if a.kind == "buffer" and a.extent(sh) + 1 > I32_MAX:
                it = i64
        kb = KernelBuilder(name, params.types(), "reduction", it, (bsize, 1, 1))
        hoisted = {}
        for a in ins:
            if a.kind == "scalar":
                hoisted[id(a)] = kb.param(a)
            elif a.kind == "zero":
                hoisted[id(a)] = kb.load(kb.args[a.param], kb.i(0), nc=a.nc)[0]
        tid = kb.tid()
        nwarps = bsize // 32
        needed_r = set(index_dims) & set(axes)
        needed_k = set(index_dims) & set(kept)
        fast_r = {}
        for a in ins + [x for _, x in ew]:
            if a.kind != "buffer":
                continue
            if partial_input:
                continue
            c = _row_major_step(a, shape, axes)
            fast_r[id(a)] = c
            if c is None:
                needed_r.update(d for d in a.bmap if d in axes)
            needed_k.update(d for d in a.bmap if d in kept)
        for _, a in ew:
            needed_k.update(kept)
            break
        for _, rd in reds:
            if rd.kind in ARG_KINDS:
                rd.idx_t = it
        small = [(k, rd) for k, rd in reds if all(G.element_bytes(t) == 4 for t in _parts(rd))]
        big = [(k, rd) for k, rd in reds if (k, rd) not in small]
        per_warp = per_warp and not big  # (an i64 argmax index: the block scheme)
        sh_small = {} if per_warp else {id(rd): [kb.shared(t, nwarps) for t in _parts(rd)] for _, rd in small}
        sh_big = {}
        for _, rd in big:  # one array per part and type, reused by each output in turn
            for j, t in enumerate(_parts(rd)):
                if (j, str(t)) not in sh_big:
                    sh_big[(j, str(t))] = kb.shared(t, bsize)
        lane = kb.emit(arith.AndIOp(tid, kb.i(31)))
        warp = kb.emit(arith.ShRUIOp(tid, kb.i(5)))
        me, team = (lane, 32) if per_warp else (tid, bsize)  # who strides over an item's elements

        def r_offset(a, ri, rdig):
            c = fast_r[id(a)]
            if c is None:
                return _access_index(kb, a, rdig, skip=kept)
            return kb.i(0) if c == 0 else ri if c == 1 else kb.mul(ri, kb.i(c))

        def shuffled(rd, parts):
            for off in (16, 8, 4, 2, 1):
                other = [kb.emit(G.ShuffleOp("down", v, kb.c(off, i32))) for v in parts]
                parts = _combine_parts(kb, rd, parts, other)
            return parts

        def item(w):
            if p_chunks > 1:
                o = kb.divu(w, kb.i(p_chunks))
                p = kb.remu(w, kb.i(p_chunks))
            else:
                o, p = w, None
            kdig = digits(kb, o, ksizes, kept, set(kept)) if kept else {}
            if partial_input:
                base = {id(a): kb.mul(o, kb.i(r)) for a in ins if a.kind == "buffer"}
            else:
                base = {id(a): _access_index(kb, a, kdig, skip=axes) for a in ins + [x for _, x in ew]
                        if a.kind == "buffer"}
            layout = [len(_parts(rd)) for _, rd in reds]
            inits = [v for _, rd in reds for v in _identity_parts(kb, rd)]
            lo = me if p is None else kb.add(kb.mul(p, kb.i(chunk)), me)
            if p is None:
                hi = kb.i(r)
            else:
                end = kb.mul(kb.add(p, kb.i(1)), kb.i(chunk))
                hi = kb.select(kb.cmpi("slt", end, kb.i(r)), end, kb.i(r))

            def split(flat):
                out, k = [], 0
                for n in layout:
                    out.append(list(flat[k:k + n]))
                    k += n
                return out

            def step(ri, *flat):
                rdig = {} if partial_input else (digits(kb, ri, rsizes, axes, needed_r) if needed_r else {})
                dig = dict(kdig)
                dig.update({d: v for d, v in rdig.items() if v is not None})
                vals = []
                for a in ins:
                    if a.kind != "buffer":
                        vals.append(hoisted[id(a)])
                        continue
                    off = ri if partial_input else r_offset(a, ri, rdig)
                    vals.append(kb.load(kb.args[a.param], kb.add(base[id(a)], off), nc=a.nc)[0])

                def index_of(d):
                    v = dig.get(d)
                    return kb.c(0, i64) if v is None else kb.cast_int(v, i64)
                res = body(kb, vals, index_of)
                for k, a in ew:
                    kb.store([res[k]], kb.args[a.param], kb.add(base[id(a)], r_offset(a, ri, rdig)))
                nxt = []
                for (k, rd), acc in zip(reds, split(flat)):
                    new = [_to_acc(kb, res[k], rd)] + ([ri] if rd.kind in ARG_KINDS else [])
                    nxt += _combine_parts(kb, rd, acc, new)
                return nxt

            if width == 1:
                flat = kb.for_(lo, hi, kb.i(team), step, inits)
            else:
                # 16-byte vectors over the chunk (its start and every row a multiple of width),
                # then the scalar tail of the last chunk
                def vstep(q, *flat):
                    ri0 = kb.mul(q, kb.i(width))
                    lanes = []
                    for a in ins:
                        if a.kind != "buffer":
                            lanes.append([hoisted[id(a)]] * width)
                        else:
                            lanes.append(kb.load(kb.args[a.param], kb.add(base[id(a)], ri0), nc=a.nc, width=width))
                    flat = list(flat)
                    for j in range(width):
                        res = body(kb, [lane[j] for lane in lanes], None)
                        nxt = []
                        for (k, rd), acc in zip(reds, split(flat)):
                            idx = [kb.add(ri0, kb.i(j))] if rd.kind in ARG_KINDS else []
                            nxt += _combine_parts(kb, rd, acc, [_to_acc(kb, res[k], rd)] + idx)
                        flat = nxt
                    return flat
                rq = r // width
                if p is None:
                    lo_q, hi_q = me, kb.i(rq)
                else:
                    lo_q = kb.add(kb.mul(p, kb.i(chunk // width)), me)
                    end_q = kb.mul(kb.add(p, kb.i(1)), kb.i(chunk // width))
                    hi_q = kb.select(kb.cmpi("slt", end_q, kb.i(rq)), end_q, kb.i(rq))
                flat = kb.for_(lo_q, hi_q, kb.i(team), vstep, inits)
                if r % width:
                    flat = kb.for_(kb.add(kb.i(rq * width), me), hi, kb.i(team), step, flat)
            if not reds:
                return
            accs = {id(rd): parts for (_, rd), parts in zip(reds, split(flat))}

            def dest_index(rd):
                if not rd.finalize:
                    return w  # the partial buffer [m, p]: flat o * p + chunk
                return kb.dot([(kdig.get(d), s) for d, s in zip(kept, rd.kept_strides) if kdig.get(d) is not None])

            if per_warp:  # one warp per output: its lanes' values meet in the shuffles, lane 0 stores
                finals = [(rd, shuffled(rd, accs[id(rd)])) for _, rd in reds]

                def store_lane0():
                    for rd, parts in finals:
                        kb.store([_finalize(kb, parts, rd)], kb.args[rd.access.param], dest_index(rd))
                kb.if_(kb.cmpi("eq", lane, kb.i(0)), store_lane0)
                return
            # 32-bit accumulators: shuffles in each warp, then warp 0 over the warps' results
            for _, rd in small:
                accs[id(rd)] = shuffled(rd, accs[id(rd)])
            if small:
                def lane0():
                    for _, rd in small:
                        for v, sh in zip(accs[id(rd)], sh_small[id(rd)]):
                            kb.store([v], sh, warp)
                kb.if_(kb.cmpi("eq", lane, kb.i(0)), lane0)
                kb.emit(gpu.BarrierOp())

                def warp0():
                    inside = kb.cmpi("ult", lane, kb.i(nwarps))
                    at = kb.select(inside, lane, kb.i(0))
                    finals = []
                    for _, rd in small:
                        parts = [kb.select(inside, kb.load(sh, at)[0], ident)
                                 for sh, ident in zip(sh_small[id(rd)], _identity_parts(kb, rd))]
                        finals.append((rd, shuffled(rd, parts)))

                    def store0():
                        for rd, parts in finals:
                            kb.store([_finalize(kb, parts, rd)], kb.args[rd.access.param], dest_index(rd))
                    kb.if_(kb.cmpi("eq", lane, kb.i(0)), store0)
                kb.if_(kb.cmpi("eq", warp, kb.i(0)), warp0)
                kb.emit(gpu.BarrierOp())
            # 64-bit accumulators: a shared-memory tree over the block's threads
            for _, rd in big:
                shs = [sh_big[(j, str(t))] for j, t in enumerate(_parts(rd))]
                for v, sh in zip(accs[id(rd)], shs):
                    kb.store([v], sh, tid)
                kb.emit(gpu.BarrierOp())
                s = bsize // 2
                while s >= 1:
                    def fold(s=s, shs=shs, rd=rd):
                        mine = [kb.load(sh, tid)[0] for sh in shs]
                        other = [kb.load(sh, kb.add(tid, kb.i(s)))[0] for sh in shs]
                        for v, sh in zip(_combine_parts(kb, rd, mine, other), shs):
                            kb.store([v], sh, tid)
                    kb.if_(kb.cmpi("ult", tid, kb.i(s)), fold)
                    kb.emit(gpu.BarrierOp())
                    s //= 2

                def store_big(shs=shs, rd=rd):
                    parts = [kb.load(sh, kb.i(0))[0] for sh in shs]
                    kb.store([_finalize(kb, parts, rd)], kb.args[rd.access.param], dest_index(rd))
                kb.if_(kb.cmpi("eq", tid, kb.i(0)), store_big)
                kb.emit(gpu.BarrierOp())

        if per_warp:
            start = kb.add(kb.mul(kb.bid(), kb.i(nwarps)), warp)
            kb.for_(start, kb.i(work), kb.mul(kb.gdim(), kb.i(nwarps)), lambda w: item(w))
            self._grid = (max(1, min(-(-work // nwarps), MAX_BLOCKS)), 1, 1)
        else:
            kb.for_(kb.bid(), kb.i(work), kb.gdim(), lambda w: item(w))
            self._grid = (max(1, min(work, MAX_BLOCKS)), 1, 1)
        kernel = kb.finish()
        self.kernels.append(kernel)
        return kernel

    # -- row kernels: consecutive stages over the same rows in one launch --
    def rows(self, group):
        """One kernel for a row group (``_row_group``): each block takes rows
        in turn; per row, each stage in order over the row's columns (threads
        stride over them), a reduction's value reduced in the block and stored
        by thread 0, a barrier between stages (what a stage wrote, the next
        reads after it). Softmax's max, exp, sum and divide: one launch."""
        shape = group[0].iteration_shape
        rank = len(shape)
        lead = tuple(range(rank - 1))
        nrows, ncols = prod(shape[:-1]), shape[-1]
        first = group[0]
        for op in list(group):  # allocations and views between the stages go before the kernel
            nxt = op.next_op
            while nxt is not None and nxt not in group and isinstance(nxt, (L.AllocOp, L.ViewOp)):
                after = nxt.next_op
                nxt.detach()
                first.parent_block().insert_op_before(nxt, first)
                nxt = after
        params = _Params()
        written = _roots_written([o for st in group for o in st.outs])
        stages = []
        for st in group:
            ins = [_access(params, v, m, shape, written) for v, m in zip(st.ins, st.broadcast_maps)]
            outs = []
            for o, kind, y in zip(st.outs, st.reduce_kinds, st.body.block.last_op.values):
                if kind is None:
                    a = _access(params, o, tuple(range(rank)), shape, written)
                    a.nc = False
                    outs.append((None, a))
                else:
                    a, ks = self._red_out(params, o, shape, lead, written)
                    acc_t = _acc_type(kind, y.type)
                    outs.append((_Red(kind, y.type, acc_t, o.type.element_type, a, ks, ncols, True), a))
            stages.append((st, ins, outs))
        accesses = [a for _, ins, outs in stages for a in ins + [x for _, x in outs] if a.kind == "buffer"]
        width = self._row_width(group, stages, shape)
        it = _index_type(accesses, shape, prod(shape))
        names = "_".join(dict.fromkeys(k or "map" for st in group for k in st.reduce_kinds))
        kb = KernelBuilder(self.name(f"rows_{names}"), params.types(), "reduction", it, (BLOCK, 1, 1))
        tid = kb.tid()
        nwarps = BLOCK // 32
        lane = kb.emit(arith.AndIOp(tid, kb.i(31)))
        warp = kb.emit(arith.ShRUIOp(tid, kb.i(5)))
        shared = {}
        for st, ins, outs in stages:
            for rd, _ in outs:
                if rd is not None and str(rd.acc_t) not in shared:
                    shared[str(rd.acc_t)] = kb.shared(rd.acc_t, nwarps)

        def row(w):
            kdig = digits(kb, w, shape[:-1], lead, set(lead))
            for n_st, (st, ins, outs) in enumerate(stages):
                if n_st:
                    kb.emit(gpu.BarrierOp())
                body = st.body.block
                hoisted = {}
                for a in ins:
                    if a.kind == "scalar":
                        hoisted[id(a)] = kb.param(a)
                    elif a.kind == "zero":
                        hoisted[id(a)] = kb.load(kb.args[a.param], kb.i(0), nc=a.nc)[0]
                bufs = [a for a in ins if a.kind == "buffer"] + [a for rd, a in outs if rd is None]
                base = {id(a): _access_index(kb, a, kdig, skip=(rank - 1,)) for a in bufs}
                col_stride = {id(a): dict(zip(a.bmap, a.strides)).get(rank - 1, 0) for a in bufs}
                reds = [(k, rd) for k, (rd, _) in enumerate(outs) if rd is not None]

                def col(c, *accs, ins=ins, outs=outs, body=body, hoisted=hoisted, base=base,
                        col_stride=col_stride, reds=reds):
                    def at(a):
                        s = col_stride[id(a)]
                        return kb.add(base[id(a)], kb.i(0) if s == 0 else c if s == 1 else kb.mul(c, kb.i(s)))
                    vals = [kb.load(kb.args[a.param], at(a), nc=a.nc)[0] if a.kind == "buffer" else hoisted[id(a)]
                            for a in ins]
                    res = run_body(kb, body, vals, None, None)
                    for k, (rd, a) in enumerate(outs):
                        if rd is None:
                            kb.store([res[k]], kb.args[a.param], at(a))
                    return [_combine(kb, rd.kind, acc, _to_acc(kb, res[k], rd)) for (k, rd), acc in zip(reds, accs)]

                def quad(q, *accs, ins=ins, outs=outs, body=body, hoisted=hoisted, base=base,
                         col_stride=col_stride, reds=reds):
                    c0 = kb.mul(q, kb.i(width))
                    lanes = []
                    for a in ins:
                        if a.kind != "buffer":
                            lanes.append([hoisted[id(a)]] * width)
                        elif col_stride[id(a)] == 0:  # the row's one value
                            lanes.append(kb.load(kb.args[a.param], base[id(a)], nc=a.nc) * width)
                        else:
                            lanes.append(kb.load(kb.args[a.param], kb.add(base[id(a)], c0), nc=a.nc, width=width))
                    results = [run_body(kb, body, [lane[j] for lane in lanes], None, None) for j in range(width)]
                    for k, (rd, a) in enumerate(outs):
                        if rd is None:
                            kb.store([res[k] for res in results], kb.args[a.param], kb.add(base[id(a)], c0))
                    accs = list(accs)
                    for res in results:
                        accs = [_combine(kb, rd.kind, acc, _to_acc(kb, res[k], rd)) for (k, rd), acc in zip(reds, accs)]
                    return accs

                inits = [_identity(kb, rd) for _, rd in reds]
                if width > 1:
                    accs = kb.for_(tid, kb.i(ncols // width), kb.i(BLOCK), quad, inits)
                else:
                    accs = kb.for_(tid, kb.i(ncols), kb.i(BLOCK), col, inits)
                if not reds:
                    continue

                def shuffled(rd, v):
                    for off in (16, 8, 4, 2, 1):
                        v = _combine(kb, rd.kind, v, kb.emit(G.ShuffleOp("down", v, kb.c(off, i32))))
                    return v
                accs = [shuffled(rd, v) for (_, rd), v in zip(reds, accs)]
                for (_, rd), v in zip(reds, accs):  # one shared array per type: the outputs in turn
                    sh = shared[str(rd.acc_t)]
                    kb.if_(kb.cmpi("eq", lane, kb.i(0)), lambda v=v, sh=sh: kb.store([v], sh, warp))
                    kb.emit(gpu.BarrierOp())

                    def warp0(rd=rd, sh=sh):
                        inside = kb.cmpi("ult", lane, kb.i(nwarps))
                        x = kb.select(inside, kb.load(sh, kb.select(inside, lane, kb.i(0)))[0], _identity(kb, rd))
                        x = shuffled(rd, x)
                        dest = kb.dot([(kdig.get(d), s) for d, s in zip(lead, rd.kept_strides)
                                       if kdig.get(d) is not None])
                        kb.if_(kb.cmpi("eq", lane, kb.i(0)),
                               lambda: kb.store([_finalize(kb, [x], rd)], kb.args[rd.access.param], dest))
                    kb.if_(kb.cmpi("eq", warp, kb.i(0)), warp0)
                    kb.emit(gpu.BarrierOp())
            kb.emit(gpu.BarrierOp())  # the row's last reads before the next row's first writes

        kb.for_(kb.bid(), kb.i(nrows), kb.gdim(), row)
        kernel = kb.finish()
        self.kernels.append(kernel)
        host = self.launch(kernel, (max(1, min(nrows, MAX_BLOCKS)), 1, 1), params.values)
        self.replace(first, host)
        for st in group[1:]:
            st.detach()
            st.erase()

    @staticmethod
    def _row_width(group, stages, shape) -> int:
        """Vector width of a row kernel's column loops: every buffer read or
        written along the columns contiguously (stride 1) from an aligned
        start at each row (or read once per row: stride 0), the row length a
        multiple of the width; else 1."""
        rank = len(shape)
        values = {}
        for st, (_, ins, outs) in zip(group, stages):
            for v, a in zip(st.ins, ins):
                values[id(a)] = v
            for o, (_, a) in zip(st.outs, outs):
                values[id(a)] = o
        bufs = [(values[id(a)], a) for _, ins, outs in stages for a in ins + [x for rd, x in outs if rd is None]
                if a.kind == "buffer"]
        if not bufs:
            return 1
        w = 2 if max(G.element_bytes(a.elt) for _, a in bufs) == 8 else 4
        if shape[-1] % w:
            return 1
        for v, a in bufs:
            by_dim = dict(zip(a.bmap, a.strides))
            c = by_dim.get(rank - 1, 0)
            if c == 0:
                continue
            lead = [by_dim[d] for d in range(rank - 1) if d in by_dim and shape[d] > 1]
            if c != 1 or any(x % w for x in lead) or not _aligned(v, w * G.element_bytes(a.elt)):
                return 1
        return w

    # -- library calls --
    def library(self, op):
        name = op.callee.data
        fresh = (QUANT_LIBRARY, SORT_LIBRARY, LIST_LIBRARY, RANDOM_LIBRARY, RANDOM_OPS)
        if any(name in t for t in fresh) and op.results and not op.outs:
            return self.into_fresh(op)
        table = next((t for t in (NN_LIBRARY, QUANT_LIBRARY, SORT_LIBRARY, LIST_LIBRARY, RANDOM_LIBRARY)
                      if name in t), {})
        if name in table and op.outs:  # conv2d, pooling and their gradients; the quantized ops
            ops = []
            for item in table[name](self.name, op):
                if not isinstance(item, tuple):  # a host op (gpu_lists' index check)
                    ops.append(item)
                    continue
                kernel, grid, block, args = item
                # a library's host ops (scratch buffers: the quantized matmul's packed words; a draw's
                # key and counter base) go on the host first
                for a in args:
                    if not isinstance(a, BlockArgument) and a.owner.parent is None and a.owner not in ops:
                        ops.append(a.owner)
                self.kernels.append(kernel)
                ops += self.launch(kernel, grid, args, block)
            return ops
        if name in RANDOM_OPS and op.outs:
            return self.random(op)
        if name == "custom_gradient" and not op.outs:
            return self.custom_gradient(op)
        if name == "matmul" and op.outs:
            from tfc.passes.gpu_library import matmul_kernel

            attrs = {k: v for k, v in op.kernel_attrs.data.items()}
            ta = bool(attrs["transpose_a"].value.data) if "transpose_a" in attrs else False
            tb = bool(attrs["transpose_b"].value.data) if "transpose_b" in attrs else False
            a, b = op.ins
            (c,) = op.outs
            made = matmul_kernel(self.name, a, b, c, ta, tb)
            if made is None:
                return []
            kernel, grid, block = made
            self.kernels.append(kernel)
            return self.launch(kernel, grid, [a, b, c], block)
        if name == "matmul":  # no planned buffer: kernel_into's condition (float operands of its dtype) fails
            raise unsupported("matmul of " + ", ".join(str(v.type) for v in op.ins) + " (integer or mixed dtypes)")
        raise run_time_shape_error(op) or unsupported(name)


    def into_fresh(self, op):
        """A library call that allocates its results (the quantized ops declare
        no ``kernel_into``, so bufferization plans no buffer for them): a fresh
        device buffer (``loops.alloc``) per result, the kernels launched into it."""
        allocs = [L.AllocOp(r.type) for r in op.results]
        into = L.LibraryOp(op.callee.data, list(op.ins), dict(op.kernel_attrs.data),
                           outs=[a.result for a in allocs])
        into.location = getattr(op, "location", None)  # a check's loops.raise names the user's line
        try:
            ops = self.library(into)
        finally:
            into.erase()
        for r, a in zip(op.results, allocs):
            r.replace_all_uses_with(a.result)
        return [a for a in allocs if a not in ops] + ops  # (library puts the allocs its launches use first)

    def random(self, op):
        """A random op's kernel (tfc/passes/gpu_random.py) and its key and
        counter base: host constants for a seeded op, else reserved from the
        global stream when the launch runs."""
        made = random_launch(self.name, op)
        if made is None:
            return []
        kernel, grid, nblocks, skey, out = made
        self.kernels.append(kernel)
        host, key, base = host_key_base(nblocks, skey)
        return host + self.launch(kernel, grid, [key, base, out])

    def custom_gradient(self, op):
        """tfc.custom_gradient's marker: its results are fresh copies of its
        operands after the first ``n_inputs`` (the registry kernel's np.copy):
        a device buffer each (``loops.alloc``) and a copy kernel into it."""
        from types import SimpleNamespace

        n_in = op.kernel_attrs.data["n_inputs"].value.data
        host = []
        for src, r in zip(list(op.ins)[n_in:], op.res):
            if not isinstance(r.type, MemRefType) or not isinstance(src.type, MemRefType):
                raise unsupported("custom_gradient of host scalars and buffers together")
            shape = tuple(r.type.get_shape())
            if r.type != MemRefType(r.type.element_type, shape) or shape != tuple(src.type.get_shape()):
                raise unsupported(f"custom_gradient into {r.type}")
            buf = L.AllocOp(r.type)
            host.append(buf)
            host += self.copy(SimpleNamespace(source=src, dest=buf.result))
            r.replace_all_uses_with(buf.result)
        return host


def _block_for(kinds_types) -> int:
    """Threads per block of a reduction: BLOCK, or fewer where 64-bit
    accumulators reduce through shared memory (one array of a thread's part
    per part and type), so that those arrays take at most 1 KiB."""
    keys = {}
    for kind, t in kinds_types:
        parts = [t, i32] if kind in ARG_KINDS else [t]
        if all(G.element_bytes(x) == 4 for x in parts):
            continue
        for j, x in enumerate(parts):
            keys[(j, str(x))] = G.element_bytes(x)
    per_thread = sum(keys.values())
    b = BLOCK
    while per_thread and b * per_thread > 1024:
        b //= 2
    return b


def _row_major_step(a: _Access, shape, axes):
    """The stride c with which access ``a`` reads the reduced elements in
    row-major order over ``axes`` (element offset r * c for the flat reduced
    index r), or None where it does not (a broadcast axis, strides out of
    order)."""
    want = None
    c = None
    by_dim = {d: s for d, s in zip(a.bmap, a.strides) if d >= 0}
    for d in reversed(axes):
        if shape[d] == 1:
            continue
        if d not in by_dim:
            return None
        s = by_dim[d]
        if want is None:
            c = s
            want = s * shape[d]
        elif s != want:
            return None
        else:
            want = s * shape[d]
    return 0 if c is None else c


def _axes_name(shape, axes) -> str:
    if len(axes) == len(shape):
        return "all"
    if list(axes) == list(range(len(shape) - len(axes), len(shape))):
        return "rows"
    if list(axes) == list(range(len(axes))):
        return "cols"
    return "axes" + "_".join(str(a) for a in axes)


__all__ = ["LowerGpuPass", "lower_module", "BLOCK", "MAX_BLOCKS", "TWO_PASS_MIN", "ARGUMENTS_ALIGNED"]
