"""GPU library kernels for CNNs, written once as L4 (``gpu.func``), for the
``loops.library`` calls with a planned result (``outs``) that tfc-lower-gpu
launches: conv2d and its two gradients, max/avg pooling and their gradients
(tfc/ops/conv.py gives the semantics: NHWC images, HWIO filters, TensorFlow's
VALID/SAME padding, strides, dilations).

``LIBRARY[name](namer, op)`` returns the launches of ``op``: a list of
``(kernel, grid, block, args)`` (``args`` L3 values, the kernel's parameters
in order; an empty list where the result has no elements), or raises
NotImplementedError naming what is missing.

Every kernel is one thread per result element over a grid-stride loop (block
256, grid at most ``MAX_BLOCKS``), each element gathered by loops over its
window: no atomics, so results are deterministic. Loops of a constant trip
count are bounded by ``n * gridDim.y`` (every grid is (g, 1, 1)): ptxas
unrolled constant ones whole and spilled (``_opaque``). Conv kernels are kind
matmul (128 registers), pooling kernels elementwise (64).

``python -m tfc.passes.gpu_nn_library FILE.mlir`` prints the kernels and
launches of an L3 module's CNN library calls (filecheck/lower_gpu/conv.mlir,
pool.mlir).

- conv2d: the sum over taps and input channels of x * w with ``math.fma``,
  padded taps reading 0 (as numpy's im2col: 0 * inf is NaN there too); the
  matmul family's tolerance covers the other summation order. A thread
  computes 4 consecutive output channels (``TCO``; fewer than 4: one), each x
  value loaded once for them.
- conv2d_backprop_input(_like): per input element, over the taps (i, j) whose
  window covers it (in tap order, as numpy's scatter-adds), the sum over the
  output channels of g * w (one GEMM element of numpy's), added to the result;
  4 consecutive input channels per thread, as conv2d's output channels.
- conv2d_backprop_filter(_like): per filter element, the sum over batch and
  output positions of x * g (padded taps 0, as numpy's im2col). float32 with
  at least 32 positions: one warp per filter element (lanes stride over the
  positions, five shuffles add the lanes' sums in a fixed order; kind
  reduction); else one thread per element.
- max_pool2d: the first maximum of the window in tap order (strict ``>``, as
  numpy's kernel: a NaN in the first tap stays, a later NaN never wins;
  padding is -inf and can win only as the first tap). int8 (the codes of a
  quantized model): the maximum of the window's elements in 32 bits
  (``maxsi``), padding -128, as numpy's.
- max_pool2d_grad: per input element, the sum in tap order of the gradients of
  the windows whose first maximum it is (bit-identical to numpy's: its
  additions of 0 never change a sum that starts at +0.0).
- max_pool2d_grad_grad: per output element, ``grad`` at the window's first
  maximum (0 where that is padding).
- avg_pool2d: the window's real elements summed in tap order, divided by their
  count; avg_pool2d_grad(_like): per input element the sum in tap order of
  each covering window's gradient divided by its count (both bit-identical),
  looping over the covering windows only (``_covering_loop``: about
  (k / s)^2 of them, not k^2 taps).

float32 and float64 (max_pool2d: int8 too); static shapes only.
"""
from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType, i32, i64

from tfc.dialects import loops as L
from tfc.dialects import gpu as G
from tfc.dialects.gpu import PtrType
from tfc.ops.conv import _geometry as _window_geometry
from tfc.passes import gpu_builder as B

BLOCK = 256
WARP = 32
TCO = 4  # output channels per thread of conv2d


# -- attributes and shapes -----------------------------------------------------------------


class _Attrs(dict):
    def __init__(self, name, items):
        super().__init__(items)
        self.name = name

    def __missing__(self, key):
        raise B.unsupported(f"{self.name} without its attribute {key!r}")


def _attrs(op) -> dict:
    """The library call's attributes as Python values, decoded as its op
    declares them (``decode_attrs``); a missing one raises NotImplementedError
    naming it."""
    from tfc.core.registry import REGISTRY
    from tfc.dialects.tensor import decode_attrs

    name = op.callee.data
    decoded = decode_attrs(REGISTRY[name], dict(op.kernel_attrs.data))
    return _Attrs(name, {k: v for k, v in decoded.items() if v is not None})


def _shape(v, what):
    sh = tuple(v.type.get_shape())
    if any(d < 0 for d in sh):
        raise B.unsupported(f"{what} of run-time shape")
    return sh


def _check_types(name, values):
    elt = values[-1].type.element_type
    if not isinstance(elt, (Float32Type, Float64Type)) or any(v.type.element_type != elt for v in values):
        raise B.unsupported(f"{name} of " + ", ".join(str(v.type.element_type) for v in values))
    if any(len(v.type.get_shape()) != 4 for v in values):  # NHWC images and HWIO filters only
        raise B.unsupported(f"{name} of " + ", ".join(str(v.type) for v in values))
    return elt


def _span(values, shapes):
    """The largest element offset any buffer reaches (strides of its layout)."""
    best = 0
    for v, sh in zip(values, shapes):
        st, off = L.layout_of(v.type)
        if 0 in sh:
            continue
        best = max(best, abs(off) + sum((d - 1) * abs(s) for d, s in zip(sh, st)))
    return best


# -- the common frame: one thread per result element -----------------------------------------


class _Frame:
    """A kernel over the elements of the result (or of ``shape``, a coarser
    iteration shape): ``body(kb, digits)`` returns the value of the element at
    those (static-rank) digits, which the frame stores, or None (it stored)."""

    def __init__(self, namer, name, ins, out, kind, elt, shape=None):
        self.ins, self.out, self.elt = list(ins), out, elt
        self.shapes = [_shape(v, name) for v in self.ins + [out]]
        self.iter_shape = tuple(shape) if shape is not None else self.shapes[-1]
        self.n = B.prod(self.iter_shape)
        self.grid = (min(-(-self.n // BLOCK), B.MAX_BLOCKS), 1, 1)
        span = max(_span(self.ins + [out], self.shapes), self.n + self.grid[0] * BLOCK)
        it = i32 if span <= B.I32_MAX else i64
        tname = "f32" if isinstance(elt, Float32Type) else "f64"
        params = [PtrType(v.type.element_type, "global") for v in self.ins + [out]]
        self.kb = B.KernelBuilder(namer(f"{name}_{tname}"), params, kind, it, (BLOCK, 1, 1))
        self.ptrs = self.kb.args
        self.strides = [L.layout_of(v.type)[0] for v in self.ins + [out]]

    def build(self, body):
        kb = self.kb
        gid = kb.add(kb.mul(kb.bid(), kb.i(BLOCK)), kb.tid())
        step = kb.mul(kb.gdim(), kb.i(BLOCK))
        osh = self.iter_shape

        def element(q):
            digits = kb.digits(q, osh)
            v = body(kb, digits)
            if v is not None:
                kb.store([v], self.ptrs[-1], self.at(len(self.ins), digits))
            return []

        kb.for_(gid, kb.i(self.n), step, element)
        return kb.finish()

    def at(self, k, digits):
        """Element offset in buffer ``k`` of the element at ``digits`` (values;
        None: 0)."""
        return self.kb.dot([(d, s) for d, s in zip(digits, self.strides[k]) if d is not None])

    def load(self, k, digits):
        return self.kb.load(self.ptrs[k], self.at(k, digits), nc=True)[0]


def _inside(kb, v, size):
    """0 <= v < size (signed)."""
    return kb.emit(arith.AndIOp(kb.cmpi("sge", v, kb.i(0)), kb.cmpi("slt", v, kb.i(size))))


def _clamp(kb, ok, v):
    """``v`` where ``ok``, else 0: an index always inside the buffer."""
    return kb.select(ok, v, kb.i(0))


def _window_pos(kb, o, k, s, d, pad):
    """The input coordinate of tap ``k`` (a value) of the window at output ``o``."""
    return kb.sub(kb.add(kb.mul(o, kb.i(s)), kb.mul(k, kb.i(d))), kb.i(pad)) if pad else \
        kb.add(kb.mul(o, kb.i(s)), kb.mul(k, kb.i(d)))


def _covering(kb, p, k, s, d, pad, out_size):
    """The output coordinate whose window's tap ``k`` is input coordinate ``p``
    and whether there is one: (p + pad - k*d) / s when that is a non-negative
    multiple of s below ``out_size``."""
    q = kb.sub(kb.add(p, kb.i(pad)), kb.mul(k, kb.i(d)))
    nonneg = kb.cmpi("sge", q, kb.i(0))
    q = _clamp(kb, nonneg, q)
    o = kb.divu(q, kb.i(s)) if s != 1 else q
    ok = nonneg
    if s != 1:
        ok = kb.emit(arith.AndIOp(ok, kb.cmpi("eq", kb.remu(q, kb.i(s)), kb.i(0))))
    ok = kb.emit(arith.AndIOp(ok, kb.cmpi("slt", o, kb.i(out_size))))
    return o, ok


def _tap_loop(kb, kh, kw, body, inits):
    """One scf.for over a window's kh x kw taps in order, ``body(i, j, *carried)``
    (nested loops of constant bounds made ptxas spill once it unrolled them)."""
    def step(t, *carried):
        i = kb.divu(t, kb.i(kw)) if kw != 1 else t
        j = kb.remu(t, kb.i(kw)) if kw != 1 else kb.i(0)
        return body(i, j, *carried)
    return kb.for_(kb.i(0), _opaque(kb, kh * kw), kb.i(1), step, list(inits))


def _covering_loop(kb, pos, k, s, pads, out_hw, body, inits):
    """Loops over the taps (i, j) of the windows (oh, ow) that cover input
    position ``pos`` = (h, w), in tap order (i, then j, ascending), and only
    those: ``body(i, oh, j, ow, *carried)``. Along an axis, with a = h + pad,
    the taps are i = a - s * oh for a window oh in [0, out), i in [0, k): i from
    a - s * min(a // s, out - 1) to min(k, a + 1) by s (run-time bounds:
    ptxas keeps the loops)."""
    def axis(p, kk, ss, pad, out):
        a = kb.add(p, kb.i(pad)) if pad else p
        q = kb.divu(a, kb.i(ss)) if ss != 1 else a
        lo = kb.sub(a, kb.mul(kb.emit(arith.MinSIOp(q, kb.i(out - 1))), kb.i(ss)))
        hi = kb.emit(arith.MinSIOp(kb.add(a, kb.i(1)), kb.i(kk)))
        return a, lo, hi

    def window(a, i, ss):
        d = kb.sub(a, i)
        return kb.divu(d, kb.i(ss)) if ss != 1 else d

    (ah, lo_h, hi_h), (aw, lo_w, hi_w) = (axis(pos[q], k[q], s[q], pads[q], out_hw[q]) for q in range(2))

    def row(i, *carried):
        oh = window(ah, i, s[0])
        return kb.for_(lo_w, hi_w, kb.i(s[1]), lambda j, *c: body(i, oh, j, window(aw, j, s[1]), *c), list(carried))
    return kb.for_(lo_h, hi_h, kb.i(s[0]), row, list(inits))


def _opaque(kb, n):
    """``n`` as a value ptxas cannot fold: n * gridDim.y, and every grid here is
    (g, 1, 1). A loop of constant trip count is unrolled whole by ptxas, its loads
    hoisted, and ptxas then spills to stay at 64 registers (found with 3x3 and
    4x4 windows, float64, sm_80 and sm_90); with this bound it keeps the loop."""
    key = ("opaque", n)
    got = kb._consts.get(key)
    if got is None:  # made once, at the entry (after gridDim.y)
        got = kb._consts[key] = kb._hoist(arith.MuliOp(kb.i(n), kb.gdim("y")))
    return got


def _dot(kb, values, strides):
    """sum(value * stride) over one buffer's dims (a value None: 0)."""
    return kb.dot([(v, st) for v, st in zip(values, strides) if v is not None])


def _zero(kb, elt):
    return kb.c(0.0, elt)


# -- conv2d and its gradients --------------------------------------------------------------


def _conv_params(a, in_hw, k_hw):
    """(strides, dilations, output (H, W), pads before (top, left)): the op's own
    window arithmetic (tfc/ops/conv.py; the op's inference has checked it)."""
    strides, dil, padding = a["strides"], a["dilations"], a["padding"]
    out_hw, ((pt, _), (pl, _)) = _window_geometry(None, in_hw, k_hw, strides, dil, padding, "")
    return strides, dil, out_hw, (pt, pl)


def conv2d(namer, op):
    """Each thread computes TCO consecutive output channels of one output
    position (TCO = 4 where there are at least 4): every x value loaded once for
    them; each channel's sum in the same order as alone."""
    x, w = op.ins
    (out,) = op.outs
    elt = _check_types("conv2d", [x, w, out])
    (N, HO, WO, CO) = _shape(out, "conv2d")
    tco = TCO if CO >= TCO else 1
    groups = -(-CO // tco)
    fr = _Frame(namer, "conv2d", [x, w], out, "matmul", elt, shape=(N, HO, WO, groups))
    (_, H, W, C), (KH, KW, _, _) = fr.shapes[0], fr.shapes[1]
    (sh, sw), (dh, dw), _, (pt, pl) = _conv_params(_attrs(op), (H, W), (KH, KW))
    zero = _zero(fr.kb, elt)

    def body(kb, dg):
        n, oh, ow, grp = dg
        cos, valid = _channel_group(kb, grp, CO, tco)

        def tap(i, j, *acc):
            ih = _window_pos(kb, oh, i, sh, dh, pt)
            ok_h = _inside(kb, ih, H)
            iw = _window_pos(kb, ow, j, sw, dw, pl)
            ok = kb.emit(arith.AndIOp(ok_h, _inside(kb, iw, W)))
            xb = fr.at(0, [n, _clamp(kb, ok, ih), _clamp(kb, ok, iw), None])
            wbs = [fr.at(1, [i, j, None, co]) for co in cos]

            def chan(ci, *acc):
                xv = kb.load(fr.ptrs[0], kb.add(xb, kb.mul(ci, kb.i(fr.strides[0][3]))), nc=True)[0]
                xv = kb.select(ok, xv, zero)  # padding reads 0, as numpy's im2col
                wci = kb.mul(ci, kb.i(fr.strides[1][2]))
                return [kb.emit(xmath.FmaOp(xv, kb.load(fr.ptrs[1], kb.add(wb, wci), nc=True)[0], a))
                        for wb, a in zip(wbs, acc)]
            return kb.for_(kb.i(0), _opaque(kb, C), kb.i(1), chan, list(acc))
        acc = _tap_loop(kb, KH, KW, tap, [zero] * tco)
        _store_group(kb, fr, [n, oh, ow], cos, valid, acc)
        return None

    return _finish(fr, body)


def _finish(fr, body):
    if fr.n == 0:
        return []
    kernel = fr.build(body)
    return [(kernel, fr.grid, (BLOCK, 1, 1), fr.ins + [fr.out])]


def conv2d_backprop_input(namer, op, name="conv2d_backprop_input"):
    """Each thread computes TCO consecutive input channels of one input
    position (as conv2d's output channels): every g value loaded once for them."""
    w, g = op.ins[-2:]  # (the _like variant's first input only gives the output's shape)
    (out,) = op.outs
    elt = _check_types(name, [w, g, out])
    (N, H, W, CI) = _shape(out, name)
    tci = TCO if CI >= TCO else 1
    fr = _Frame(namer, name, [w, g], out, "matmul", elt, shape=(N, H, W, -(-CI // tci)))
    (KH, KW, _, CO), (_, HO, WO, _) = fr.shapes[0], fr.shapes[1]
    (sh, sw), (dh, dw), (ho, wo), (pt, pl) = _conv_params(_attrs(op), (H, W), (KH, KW))
    assert (ho, wo) == (HO, WO), (ho, wo, HO, WO)
    zero = _zero(fr.kb, elt)

    def body(kb, dg):
        n, h, wq, grp = dg
        cis, valid = _channel_group(kb, grp, CI, tci)

        def tap(i, j, *acc):
            oh, ok_h = _covering(kb, h, i, sh, dh, pt, HO)
            ow, ok_w = _covering(kb, wq, j, sw, dw, pl, WO)
            ok = kb.emit(arith.AndIOp(ok_h, ok_w))
            gb = fr.at(1, [n, _clamp(kb, ok, oh), _clamp(kb, ok, ow), None])
            wbs = [fr.at(0, [i, j, ci, None]) for ci in cis]

            def chan(co, *part):
                gv = kb.load(fr.ptrs[1], kb.add(gb, kb.mul(co, kb.i(fr.strides[1][3]))), nc=True)[0]
                wco = kb.mul(co, kb.i(fr.strides[0][3]))
                return [kb.emit(xmath.FmaOp(gv, kb.load(fr.ptrs[0], kb.add(wb, wco), nc=True)[0], p))
                        for wb, p in zip(wbs, part)]
            # one element of numpy's GEMM (g @ w^T) per channel, added in tap order; no window: nothing
            parts = kb.for_(kb.i(0), kb.select(ok, _opaque(kb, CO), kb.i(0)), kb.i(1), chan, [zero] * tci)
            return [kb.select(ok, kb.emit(arith.AddfOp(a, p)), a) for a, p in zip(acc, parts)]
        acc = _tap_loop(kb, KH, KW, tap, [zero] * tci)
        _store_group(kb, fr, [n, h, wq], cis, valid, acc)
        return None

    return _finish(fr, body)


def _channel_group(kb, grp, size, t_n):
    """The channels grp * t_n + t (t < t_n) of a thread, each clamped to the
    group's first where it is past ``size`` (then with its condition, else None)."""
    c0 = kb.mul(grp, kb.i(t_n))
    chans, valid = [], []
    for t in range(t_n):
        c = kb.add(c0, kb.i(t))
        ok = kb.cmpi("slt", c, kb.i(size)) if size % t_n and t else None  # the last group's tail
        chans.append(c if ok is None else kb.select(ok, c, c0))
        valid.append(ok)
    return chans, valid


def _store_group(kb, fr, lead, chans, valid, values):
    """Store a thread's channel values (the tail's under their conditions)."""
    for c, ok, v in zip(chans, valid, values):
        def store(c=c, v=v):
            kb.store([v], fr.ptrs[-1], fr.at(len(fr.ins), lead + [c]))
        if ok is None:
            store()
        else:
            kb.if_(ok, store)


def conv2d_backprop_input_like(namer, op):
    return conv2d_backprop_input(namer, op, "conv2d_backprop_input_like")


def conv2d_backprop_filter(namer, op, name="conv2d_backprop_filter"):
    x, g = op.ins[:2]  # (the _like variant's last input only gives the output's shape)
    (out,) = op.outs
    elt = _check_types(name, [x, g, out])
    (N, H, W, _), (_, HO, WO, _) = _shape(x, name), _shape(g, name)
    if isinstance(elt, Float32Type) and N * HO * WO >= WARP:
        return _backprop_filter_warps(namer, name, x, g, out, _attrs(op))
    fr = _Frame(namer, name, [x, g], out, "matmul", elt)
    (KH, KW, _, _) = fr.shapes[2]
    (sh, sw), (dh, dw), (ho, wo), (pt, pl) = _conv_params(_attrs(op), (H, W), (KH, KW))
    assert (ho, wo) == (HO, WO), (ho, wo, HO, WO)
    zero = _zero(fr.kb, elt)
    xs, gs = fr.strides[0], fr.strides[1]

    def body(kb, dg):
        i, j, ci, co = dg

        def row(r, acc):  # (batch, output row) as one loop: nested constant loops made ptxas spill
            n, oh = kb.divu(r, kb.i(HO)), kb.remu(r, kb.i(HO))
            ih = _window_pos(kb, oh, i, sh, dh, pt)
            ok_h = _inside(kb, ih, H)
            xr = fr.at(0, [n, _clamp(kb, ok_h, ih), None, ci])
            gr = fr.at(1, [n, oh, None, co])

            def col(ow, acc):
                iw = _window_pos(kb, ow, j, sw, dw, pl)
                ok = kb.emit(arith.AndIOp(ok_h, _inside(kb, iw, W)))
                xv = kb.load(fr.ptrs[0], kb.add(xr, kb.mul(_clamp(kb, ok, iw), kb.i(xs[2]))), nc=True)[0]
                xv = kb.select(ok, xv, zero)  # padding reads 0, as numpy's im2col
                gv = kb.load(fr.ptrs[1], kb.add(gr, kb.mul(ow, kb.i(gs[2]))), nc=True)[0]
                return [kb.emit(xmath.FmaOp(xv, gv, acc))]
            return kb.for_(kb.i(0), _opaque(kb, WO), kb.i(1), col, [acc])
        return kb.for_(kb.i(0), _opaque(kb, N * HO), kb.i(1), row, [zero])[0]

    return _finish(fr, body)


def _backprop_filter_warps(namer, name, x, g, out, attrs):
    """conv2d_backprop_filter (float32), one warp per filter element: the lanes
    stride over the (batch, row, column) positions, fma into their sums, which
    five shuffles add in a fixed order (deterministic); lane 0 stores. A
    thread per element would loop over every position alone (N * Ho * Wo of
    them, with few elements: KH * KW * Cin * Cout)."""
    (N, H, W, CI), (_, HO, WO, CO), (KH, KW, _, _) = shapes = [_shape(v, name) for v in (x, g, out)]
    (sh, sw), (dh, dw), _, (pt, pl) = _conv_params(attrs, (H, W), (KH, KW))
    n, npos = B.prod(shapes[2]), N * HO * WO
    warps = BLOCK // WARP
    grid = (min(-(-n // warps), B.MAX_BLOCKS), 1, 1)
    span = max(_span([x, g, out], shapes), n + grid[0] * warps, npos + WARP)
    it = i32 if span <= B.I32_MAX else i64
    elt = out.type.element_type
    kb = B.KernelBuilder(namer(f"{name}_warps_f32"), [PtrType(elt, "global")] * 3, "reduction", it, (BLOCK, 1, 1))
    px, pg, po = kb.args
    xs, gs, os_ = (L.layout_of(v.type)[0] for v in (x, g, out))
    zero = _zero(kb, elt)
    lane = kb.remu(kb.tid(), kb.i(WARP))
    first = kb.add(kb.mul(kb.bid(), kb.i(warps)), kb.divu(kb.tid(), kb.i(WARP)))
    step = kb.mul(kb.gdim(), kb.i(warps))

    def element(q):  # the same q in every lane of the warp: the shuffles see a converged warp
        i, j, ci, co = kb.digits(q, [KH, KW, CI, CO])

        def pos(p, acc):
            b, oh, ow = kb.digits(p, [N, HO, WO])
            ih = _window_pos(kb, oh, i, sh, dh, pt)
            iw = _window_pos(kb, ow, j, sw, dw, pl)
            ok = kb.emit(arith.AndIOp(_inside(kb, ih, H), _inside(kb, iw, W)))
            xv = kb.load(px, _dot(kb, [b, _clamp(kb, ok, ih), _clamp(kb, ok, iw), ci], xs), nc=True)[0]
            xv = kb.select(ok, xv, zero)  # padding reads 0, as numpy's im2col
            gv = kb.load(pg, _dot(kb, [b, oh, ow, co], gs), nc=True)[0]
            return [kb.emit(xmath.FmaOp(xv, gv, acc))]
        (acc,) = kb.for_(lane, kb.i(npos), kb.i(WARP), pos, [zero])
        for off in (16, 8, 4, 2, 1):
            acc = kb.emit(arith.AddfOp(acc, kb.emit(G.ShuffleOp("down", acc, kb.c(off, i32)))))
        kb.if_(kb.cmpi("eq", lane, kb.i(0)), lambda: kb.store([acc], po, _dot(kb, [i, j, ci, co], os_)))
        return []
    if n == 0:
        return []
    kb.for_(first, kb.i(n), step, element)
    return [(kb.finish(), grid, (BLOCK, 1, 1), [x, g, out])]


def conv2d_backprop_filter_like(namer, op):
    return conv2d_backprop_filter(namer, op, "conv2d_backprop_filter_like")


# -- pooling ----------------------------------------------------------------------------------


def _pool_params(a, in_hw):
    k, s, padding = a["ksize"], a["strides"], a["padding"]
    out_hw, ((pt, _), (pl, _)) = _window_geometry(None, in_hw, k, s, (1, 1), padding, "")
    return k, s, out_hw, (pt, pl)


def _first_max(fr, kb, xk, n, oh, ow, c, k, s, pads, hw):
    """(max, tap) of the window at (oh, ow): the first maximum in tap order
    (strict ``>``; the first tap taken whatever it is; padding -inf)."""
    (KH, KW), (sh, sw), (pt, pl), (H, W) = k, s, pads, hw
    elt = fr.elt
    ninf = kb.c(float("-inf"), elt)

    def tap(i, j, best, idx):
        ih = _window_pos(kb, oh, i, sh, 1, pt)
        ok_h = _inside(kb, ih, H)
        iw = _window_pos(kb, ow, j, sw, 1, pl)
        ok = kb.emit(arith.AndIOp(ok_h, _inside(kb, iw, W)))
        v = kb.load(fr.ptrs[xk], fr.at(xk, [n, _clamp(kb, ok, ih), _clamp(kb, ok, iw), c]), nc=True)[0]
        v = kb.select(ok, v, ninf)
        tap = kb.add(kb.mul(i, kb.i(KW)), j)
        first = kb.cmpi("eq", tap, kb.i(0))
        better = kb.emit(arith.OrIOp(first, kb.emit(arith.CmpfOp(v, best, "ogt"))))
        return [kb.select(better, v, best), kb.select(better, tap, idx)]
    return _tap_loop(kb, KH, KW, tap, [ninf, kb.i(0)])


def _int_max_pool2d(namer, op):
    """max_pool2d of int8 (the codes of a quantized model; the op takes no other
    integers): the maximum of the window's real elements (numpy pads with -128,
    which never exceeds them), in 32 bits (PTX has no 8-bit max)."""
    (x,) = op.ins
    (out,) = op.outs
    elt = out.type.element_type
    if x.type.element_type != elt or elt.width.data != 8 or len(x.type.get_shape()) != 4:
        raise B.unsupported(f"max_pool2d of {x.type}")
    fr = _Frame(namer, "max_pool2d_i8", [x], out, "elementwise", Float32Type())
    (_, H, W, _) = fr.shapes[0]
    (KH, KW), (sh, sw), _, (pt, pl) = _pool_params(_attrs(op), (H, W))

    def body(kb, dg):
        n, oh, ow, c = dg
        lowest = kb.c(-(1 << 31), i32)

        def tap(i, j, best):
            ih, iw = _window_pos(kb, oh, i, sh, 1, pt), _window_pos(kb, ow, j, sw, 1, pl)
            ok = kb.emit(arith.AndIOp(_inside(kb, ih, H), _inside(kb, iw, W)))
            v = kb.cast_int(kb.load(fr.ptrs[0], fr.at(0, [n, _clamp(kb, ok, ih), _clamp(kb, ok, iw), c]), nc=True)[0],
                            i32)
            return [kb.emit(arith.MaxSIOp(best, kb.select(ok, v, lowest)))]
        return kb.cast_int(_tap_loop(kb, KH, KW, tap, [lowest])[0], elt)

    return _finish(fr, body)


def max_pool2d(namer, op):
    (x,) = op.ins
    (out,) = op.outs
    if isinstance(out.type.element_type, IntegerType):
        return _int_max_pool2d(namer, op)
    elt = _check_types("max_pool2d", [x, out])
    fr = _Frame(namer, "max_pool2d", [x], out, "elementwise", elt)
    (_, H, W, _) = fr.shapes[0]
    k, s, _, pads = _pool_params(_attrs(op), (H, W))

    def body(kb, dg):
        n, oh, ow, c = dg
        return _first_max(fr, kb, 0, n, oh, ow, c, k, s, pads, (H, W))[0]

    return _finish(fr, body)


def max_pool2d_grad(namer, op):
    x, g = op.ins
    (out,) = op.outs
    elt = _check_types("max_pool2d_grad", [x, g, out])
    fr = _Frame(namer, "max_pool2d_grad", [x, g], out, "elementwise", elt)
    (_, H, W, _), (_, HO, WO, _) = fr.shapes[0], fr.shapes[1]
    k, s, _, pads = _pool_params(_attrs(op), (H, W))
    zero = _zero(fr.kb, elt)

    def body(kb, dg):
        n, h, w, c = dg

        def tap(i, j, acc):
            oh, ok_h = _covering(kb, h, i, s[0], 1, pads[0], HO)
            ow, ok_w = _covering(kb, w, j, s[1], 1, pads[1], WO)
            ok = kb.emit(arith.AndIOp(ok_h, ok_w))

            def routed():
                oh_, ow_ = _clamp(kb, ok, oh), _clamp(kb, ok, ow)
                _, idx = _first_max(fr, kb, 0, n, oh_, ow_, c, k, s, pads, (H, W))
                mine = kb.cmpi("eq", idx, kb.add(kb.mul(i, kb.i(k[1])), j))
                gv = kb.load(fr.ptrs[1], fr.at(1, [n, oh_, ow_, c]), nc=True)[0]
                return [kb.select(mine, kb.emit(arith.AddfOp(acc, gv)), acc)]
            return kb.if_(ok, routed, lambda: [acc], types=[elt])
        return _tap_loop(kb, k[0], k[1], tap, [zero])[0]

    return _finish(fr, body)


def max_pool2d_grad_grad(namer, op):
    x, gg = op.ins
    (out,) = op.outs
    elt = _check_types("max_pool2d_grad_grad", [x, gg, out])
    fr = _Frame(namer, "max_pool2d_grad_grad", [x, gg], out, "elementwise", elt)
    (_, H, W, _) = fr.shapes[0]
    k, s, _, pads = _pool_params(_attrs(op), (H, W))
    zero = _zero(fr.kb, elt)

    def body(kb, dg):
        n, oh, ow, c = dg
        _, idx = _first_max(fr, kb, 0, n, oh, ow, c, k, s, pads, (H, W))
        i, j = kb.divu(idx, kb.i(k[1])), kb.remu(idx, kb.i(k[1]))
        ih = _window_pos(kb, oh, i, s[0], 1, pads[0])
        iw = _window_pos(kb, ow, j, s[1], 1, pads[1])
        ok = kb.emit(arith.AndIOp(_inside(kb, ih, H), _inside(kb, iw, W)))
        v = kb.load(fr.ptrs[1], fr.at(1, [n, _clamp(kb, ok, ih), _clamp(kb, ok, iw), c]), nc=True)[0]
        return kb.select(ok, v, zero)  # a padding maximum: numpy's padded grad is 0 there

    return _finish(fr, body)


def _count(kb, elt, o, k, s, pad, size):
    """How many real input coordinates the window at output ``o`` covers along one axis."""
    lo = kb.sub(kb.mul(o, kb.i(s)), kb.i(pad)) if pad else kb.mul(o, kb.i(s))
    hi = kb.add(lo, kb.i(k))
    lo = kb.emit(arith.MaxSIOp(lo, kb.i(0)))
    hi = kb.emit(arith.MinSIOp(hi, kb.i(size)))
    return kb.sub(hi, lo)


def _divisor(kb, elt, oh, ow, k, s, pads, hw):
    cnt = kb.mul(_count(kb, elt, oh, k[0], s[0], pads[0], hw[0]), _count(kb, elt, ow, k[1], s[1], pads[1], hw[1]))
    return kb.emit(arith.SIToFPOp(cnt, elt))


def avg_pool2d(namer, op):
    (x,) = op.ins
    (out,) = op.outs
    elt = _check_types("avg_pool2d", [x, out])
    fr = _Frame(namer, "avg_pool2d", [x], out, "elementwise", elt)
    (_, H, W, _) = fr.shapes[0]
    k, s, _, pads = _pool_params(_attrs(op), (H, W))
    zero = _zero(fr.kb, elt)

    def body(kb, dg):
        n, oh, ow, c = dg

        def tap(i, j, acc):
            ih = _window_pos(kb, oh, i, s[0], 1, pads[0])
            ok_h = _inside(kb, ih, H)
            iw = _window_pos(kb, ow, j, s[1], 1, pads[1])
            ok = kb.emit(arith.AndIOp(ok_h, _inside(kb, iw, W)))
            v = kb.load(fr.ptrs[0], fr.at(0, [n, _clamp(kb, ok, ih), _clamp(kb, ok, iw), c]), nc=True)[0]
            # numpy adds padding's +0.0: a sum from +0.0 is never -0.0, so skipping it is exact
            return [kb.select(ok, kb.emit(arith.AddfOp(acc, v)), acc)]
        (acc,) = _tap_loop(kb, k[0], k[1], tap, [zero])
        return kb.emit(arith.DivfOp(acc, _divisor(kb, elt, oh, ow, k, s, pads, (H, W))))

    return _finish(fr, body)


def avg_pool2d_grad(namer, op, name="avg_pool2d_grad"):
    g = op.ins[-1]  # (the _like variant's first input only gives the output's shape)
    (out,) = op.outs
    elt = _check_types(name, [g, out])
    fr = _Frame(namer, name, [g], out, "elementwise", elt)
    (_, HO, WO, _), (_, H, W, _) = fr.shapes
    k, s, (ho, wo), pads = _pool_params(_attrs(op), (H, W))
    assert (ho, wo) == (HO, WO), (ho, wo, HO, WO)
    zero = _zero(fr.kb, elt)

    def body(kb, dg):
        n, h, w, c = dg

        def tap(i, oh, j, ow, acc):
            gv = kb.load(fr.ptrs[0], fr.at(0, [n, oh, ow, c]), nc=True)[0]
            gd = kb.emit(arith.DivfOp(gv, _divisor(kb, elt, oh, ow, k, s, pads, (H, W))))
            return [kb.emit(arith.AddfOp(acc, gd))]
        return _covering_loop(kb, (h, w), k, s, pads, (HO, WO), tap, [zero])[0]

    return _finish(fr, body)


def avg_pool2d_grad_like(namer, op):
    return avg_pool2d_grad(namer, op, "avg_pool2d_grad_like")


LIBRARY = {
    "conv2d": conv2d,
    "conv2d_backprop_input": conv2d_backprop_input,
    "conv2d_backprop_input_like": conv2d_backprop_input_like,
    "conv2d_backprop_filter": conv2d_backprop_filter,
    "conv2d_backprop_filter_like": conv2d_backprop_filter_like,
    "max_pool2d": max_pool2d,
    "max_pool2d_grad": max_pool2d_grad,
    "max_pool2d_grad_grad": max_pool2d_grad_grad,
    "avg_pool2d": avg_pool2d,
    "avg_pool2d_grad": avg_pool2d_grad,
    "avg_pool2d_grad_like": avg_pool2d_grad_like,
}

__all__ = ["LIBRARY", "BLOCK"]


def kernels_of(module):
    """(gpu.module @kernels holding the kernels of every library call of L3
    ``module`` that ``LIBRARY`` makes, [(kernel name, grid, block, args)])."""
    from xdsl.dialects import gpu
    from xdsl.dialects.builtin import StringAttr
    from xdsl.ir import Block, Region

    count = [0]

    def namer(stem):
        count[0] += 1
        return f"k{count[0] - 1}_{stem}"
    made, launches = [], []
    for op in module.walk():
        if isinstance(op, L.LibraryOp) and op.callee.data in LIBRARY and op.outs:
            for kernel, grid, block, args in LIBRARY[op.callee.data](namer, op):
                made.append(kernel)
                launches.append((kernel.sym_name.data, grid, block, args))
    return gpu.ModuleOp(StringAttr("kernels"), Region(Block(made))), launches


def main(argv=None) -> int:
    """``python -m tfc.passes.gpu_nn_library FILE.mlir``: the kernels (L4) and
    launches of FILE's CNN library calls (until tfc-lower-gpu dispatches to
    ``LIBRARY``, the way to read them and check them with FileCheck)."""
    import argparse
    import sys

    from xdsl.dialects.builtin import ModuleOp

    from tfc.dialects.tensor import parse_module, print_ir

    ap = argparse.ArgumentParser(prog="python -m tfc.passes.gpu_nn_library")
    ap.add_argument("file", help="an L3 module (.mlir; - for stdin)")
    ns = ap.parse_args(argv)
    text = sys.stdin.read() if ns.file == "-" else open(ns.file).read()
    try:
        kmod, launches = kernels_of(parse_module(text, ns.file))
    except NotImplementedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    out = ModuleOp([kmod])
    out.verify()
    print(print_ir(out))
    for name, grid, block, args in launches:
        names = ", ".join(a.name_hint or "?" for a in args)
        print(f"// launch @{name} grid{tuple(grid)} block{tuple(block)} args({names})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
