"""GPU library kernels of the quantized ops (tfc/ops/quant.py gives the
semantics), for the ``loops.library`` calls with a planned result that
tfc-lower-gpu launches: ``quantize``, ``quantized_matmul`` and
``weight_quantized_matmul``. Each is one thread per result element over a
grid-stride loop (gpu_nn_library's frame: block 256, static shapes), with
the quantized conv2d and weight-only conv2d as well.

- quantize: ``x / scale`` in x's float dtype, rounded half to even, plus the
  zero point, clipped to [-128, 127] (NaN-propagating, as numpy's clip) and
  converted to int8: the numpy kernel's operations one by one, bit-identical.
- quantized_matmul: two small kernels first pack x's rows and w's columns
  four int8 codes to a 32-bit word into fresh buffers ([M, ceil(K/4)] and
  [N, ceil(K/4)] i32; byte j of word i is k = 4i + j, the last word of a K
  not a multiple of 4 padded with zero bytes: O(M K + K N) work); then per
  result the int32 accumulator starts at ``bias[n]`` and takes one
  ``tgpu.dp4a`` (PTX ``dp4a.s32.s32``) per pair of words: two 32-bit loads
  per four products. int32 addition wraps, so the order does not matter: the
  accumulator is the exact ``x @ w + bias`` modulo 2**32, as numpy's int32
  arithmetic. The epilogue is
  numpy's ``requantize`` operation for operation (float32(acc) * multiplier,
  then relu as max(., 0) for a float32 result; else + zero point, round half
  to even, clip to [zero point if relu else -128, 127], int8): bit-identical.
- weight_quantized_matmul: each weight dequantized as numpy's kernel does
  (float(w) * scale[n], one rounding), then a ``math.fma`` sum over K: within
  the float matmul's error bound (another summation order than BLAS).
- quantized_conv2d: quantized_matmul over (tap, channel) per output element
  (NHWC, HWIO; strides, dilations, VALID/SAME): per tap the input channels in
  dp4a words, a padded tap reading ``pad_value`` (numpy pads the image with
  it), the same epilogue: bit-identical.
- weight_quantized_conv2d: as conv2d (gpu_nn_library.py) with each weight
  dequantized as numpy's kernel: the conv family's bound.
"""
from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType, MemRefType, i32, i64

from tfc.dialects import gpu as G
from tfc.dialects import loops as L
from tfc.ops.quant import INT8_MAX, INT8_MIN
from tfc.passes import gpu_builder as B
from tfc.passes.gpu_nn_library import (
    _attrs, _clamp, _conv_params, _finish, _Frame, _inside, _opaque, _tap_loop, _window_pos,
)

_I8 = IntegerType(8)


def _float_of(name, v):
    elt = v.type.element_type
    if not isinstance(elt, (Float32Type, Float64Type)):
        raise B.unsupported(f"{name} of {elt}")
    return elt


def _to_int8(kb, real):
    """An integer-valued float in [-128, 127] as int8 (through i32, as numpy's cast)."""
    return kb.emit(arith.TruncIOp(kb.emit(arith.FPToSIOp(real, i32)), _I8))


def _clip(kb, v, lo, hi):
    """numpy's clip: min(max(v, lo), hi), a NaN propagating."""
    t = v.type
    return kb.emit(arith.MinimumfOp(kb.emit(arith.MaximumfOp(v, kb.c(lo, t))), kb.c(hi, t)))


def quantize(namer, op):
    (x,) = op.ins
    (out,) = op.outs
    if out.type.element_type != _I8:
        raise B.unsupported(f"quantize to {out.type} (int8 codes held in float32 are the CPU's form)")
    elt = _float_of("quantize", x)
    a = _attrs(op)
    scale, zero_point = float(a["scale"]), int(a["zero_point"])
    fr = _Frame(namer, "quantize", [x], out, "elementwise", elt)

    def body(kb, dg):
        q = kb.emit(arith.DivfOp(fr.load(0, dg), kb.c(scale, elt)))
        q = kb.emit(xmath.RoundEvenOp(q))
        q = kb.emit(arith.AddfOp(q, kb.c(zero_point, elt)))
        return _to_int8(kb, _clip(kb, q, INT8_MIN, INT8_MAX))
    return _finish(fr, body)


def _check_int8(name, values):
    for v in values:
        if v.type.element_type != _I8:
            raise B.unsupported(f"{name} of {v.type}")


def _packed(kb, load, k0, count):
    """The int8 codes at k0 .. k0 + count - 1 (count <= 4; ``load(k)``) packed
    into an i32, byte j holding k0 + j; missing bytes 0."""
    word = None
    for j in range(count):
        b = kb.emit(arith.ExtUIOp(load(kb.add(k0, kb.i(j)) if j else k0), i32))
        if j:
            b = kb.emit(arith.ShLIOp(b, kb.c(8 * j, i32)))
        word = b if word is None else kb.emit(arith.OrIOp(word, b))
    return word


def _pack_rows(namer, src, rows_first: bool):
    """A fresh i32 buffer [R, ceil(K / 4)] (``loops.alloc``: tfc-lower-gpu puts it
    in the host function) and the launch that fills it with the int8 codes of
    ``src`` packed four to a word along K: src [R, K] (``rows_first``) or
    [K, R] (a matmul's w, read down its columns); the last word zero-padded."""
    shape = tuple(src.type.get_shape())
    r_dim, k_dim = (0, 1) if rows_first else (1, 0)
    R, K = shape[r_dim], shape[k_dim]
    packed = L.AllocOp(MemRefType(i32, [R, -(-K // 4)]))
    fr = _Frame(namer, "pack_int8", [src], packed.result, "elementwise", Float32Type())

    def body(kb, dg):
        r, k4 = dg
        k0 = kb.mul(k4, kb.i(4))

        def code(k):
            ok = kb.cmpi("slt", k, kb.i(K))
            digits = [None, None]
            digits[r_dim], digits[k_dim] = r, _clamp(kb, ok, k)
            return kb.select(ok, kb.load(fr.ptrs[0], fr.at(0, digits), nc=True)[0], kb.c(0, _I8))
        return _packed(kb, code, k0, 4)
    return packed.result, _finish(fr, body)


def quantized_matmul(namer, op):
    """x's rows and w's columns packed into words first (two small kernels,
    O(M K + K N)), then one thread per result: a dp4a per pair of words."""
    x, w, bias, mult = op.ins
    (out,) = op.outs
    _check_int8("quantized_matmul", [x, w])
    M, K = (int(d) for d in x.type.get_shape())
    if M * int(out.type.get_shape()[1]) == 0:
        return []
    if K == 0:  # nothing to pack: the bias alone, requantized
        fr = _Frame(namer, "quantized_matmul", [x, w, bias, mult], out, "matmul", Float32Type())
        return _finish(fr, lambda kb, dg: _requantize(kb, fr.load(2, [dg[1]]), _multiplier(kb, fr, dg[1]),
                                                      out.type.element_type, op))
    xp, x_launches = _pack_rows(namer, x, True)
    wp, w_launches = _pack_rows(namer, w, False)
    if M >= MMA_MIN_ROWS:
        return x_launches + w_launches + [_mma_matmul(namer, op, xp, wp)]
    fr = _Frame(namer, "quantized_matmul", [xp, wp, bias, mult], out, "matmul", Float32Type())
    words = fr.shapes[0][1]

    def body(kb, dg):
        m, n = dg

        def step(k4, acc):
            xw = kb.load(fr.ptrs[0], fr.at(0, [m, k4]), nc=True)[0]
            ww = kb.load(fr.ptrs[1], fr.at(1, [n, k4]), nc=True)[0]
            return [kb.emit(G.Dp4aOp(xw, ww, acc))]
        acc = kb.for_(kb.i(0), _opaque(kb, words), kb.i(1), step, [fr.load(2, [n])])[0]
        return _requantize(kb, acc, _multiplier(kb, fr, n), out.type.element_type, op)
    return x_launches + w_launches + _finish(fr, body)


def _multiplier(kb, fr, n):
    """A loader of the float32 multiplier of output channel ``n`` (input 3 of ``fr``: one per channel
    or one for all)."""
    return lambda: fr.load(3, [None if fr.shapes[3][0] == 1 else n])


# quantized_matmul on tensor cores (mma.sync m16n8k32 .s8): from MMA_MIN_ROWS rows of x (below, a
# 16-row tile would be mostly padding, and dp4a's thread per result reads each w word once per
# row anyway); a warp computes a 16 x (8 MMA_NTILES) block of results, its A fragment (four words
# of x) loaded once per 32 codes of K for the MMA_NTILES products; MMA_WARPS warps per block
MMA_MIN_ROWS, MMA_NTILES, MMA_WARPS = 16, 4, 4


def _mma_matmul(namer, op, xp, wp):
    """The launch of the integer matmul on tensor cores over x's rows and w's
    columns packed four codes to a word (``_pack_rows``: xp [M, W], wp [N, W],
    the last word zero-padded): per k step of 32 codes, a lane's A register j
    is word t + 4 (j >> 1) of row g + 8 (j & 1) of the step, its B register j
    word t + 4 j of column g (tgpu.mma m16n8k32's layout: ``G.MmaOp``); words
    past W and rows or columns past M or N read as 0. The accumulators start
    at ``bias`` (int32 wrapping: any order is numpy's sum), then numpy's
    requantize per result: bit-identical."""
    x, w, bias, mult = op.ins
    (out,) = op.outs
    (M, W), (N, _) = (tuple(int(d) for d in v.type.get_shape()) for v in (xp, wp))
    ntiles = min(MMA_NTILES, -(-N // 8))
    tn = -(-N // (8 * ntiles))
    tiles = -(-M // 16) * tn
    grid = (-(-tiles // MMA_WARPS), 1, 1)
    block = (32 * MMA_WARPS, 1, 1)
    bufs = [xp, wp, bias, mult, out]
    (xs, ws, bs, ms, os_) = (L.layout_of(v.type)[0] for v in bufs)
    span = (M + 16) * abs(xs[0]) + (N + 32) * abs(ws[0]) + W + 8 + (M + 16) * abs(os_[0]) + (N + 32) * (
        abs(os_[1]) + abs(bs[0]) + abs(ms[0]))
    it = i32 if span <= B.I32_MAX else i64
    kb = B.KernelBuilder(namer("quantized_matmul_s8_mma"), [G.PtrType(v.type.element_type, "global") for v in bufs], "matmul", it, block)
    px, pw, pb, pm, po = kb.args
    tid = kb.tid()
    lane, tile = kb.remu(tid, kb.i(32)), kb.add(kb.mul(kb.bid(), kb.i(MMA_WARPS)), kb.divu(tid, kb.i(32)))

    def warp_tile():  # every lane of a warp takes this branch or none: mma's whole warp
        g, t = kb.divu(lane, kb.i(4)), kb.remu(lane, kb.i(4))
        row0 = kb.mul(kb.divu(tile, kb.i(tn)), kb.i(16))
        col0 = kb.mul(kb.remu(tile, kb.i(tn)), kb.i(8 * ntiles))
        rows = [kb.add(row0, g), kb.add(row0, kb.add(g, kb.i(8)))]
        rows_ok = [kb.cmpi("slt", r, kb.i(M)) for r in rows]
        bcols = [kb.add(col0, kb.add(g, kb.i(8 * j))) for j in range(ntiles)]  # B's column g per tile
        bcols_ok = [kb.cmpi("slt", c, kb.i(N)) for c in bcols]
        ccols = [kb.add(col0, kb.add(kb.mul(t, kb.i(2)), kb.i(8 * j + i))) for j in range(ntiles) for i in (0, 1)]
        ccols_ok = [kb.cmpi("slt", c, kb.i(N)) for c in ccols]
        zero = kb.c(0, i32)

        x_rows = [kb.mul(r, kb.i(xs[0])) for r in rows]  # each row's (column's) first word, made once
        w_cols = [kb.mul(c, kb.i(ws[0])) for c in bcols]

        def word(ptr, strides, base, ok, wd):
            ok = kb.emit(arith.AndIOp(ok, kb.cmpi("slt", wd, kb.i(W))))
            idx = kb.select(ok, kb.add(base, kb.mul(wd, kb.i(strides[1]))), kb.i(0))
            return kb.select(ok, kb.load(ptr, idx, nc=True)[0], zero)

        biases = [kb.select(ok, kb.load(pb, kb.select(ok, kb.mul(c, kb.i(bs[0])), kb.i(0)), nc=True)[0], zero)
                  for c, ok in zip(ccols, ccols_ok)]
        # c_i: row g + 8 (i >> 1), column 2t + (i & 1): the bias of its column
        inits = [biases[2 * j + (i & 1)] for j in range(ntiles) for i in range(4)]

        def step(w0, *acc):
            wt = kb.add(w0, t)
            wds = [wt, kb.add(wt, kb.i(4))]
            a = [word(px, xs, x_rows[j & 1], rows_ok[j & 1], wds[j >> 1]) for j in range(4)]
            out = []
            for j in range(ntiles):
                b = [word(pw, ws, w_cols[j], bcols_ok[j], wds[h]) for h in (0, 1)]
                out += list(kb.emit(G.MmaOp(a, b, list(acc[4 * j:4 * j + 4]))).results)
            return out
        acc = kb.for_(kb.i(0), _opaque(kb, W), kb.i(8), step, inits)
        one_for_all = tuple(mult.type.get_shape())[0] == 1
        for j in range(ntiles):
            for i in range(4):
                r, ok_r = rows[i >> 1], rows_ok[i >> 1]
                c, ok_c = ccols[2 * j + (i & 1)], ccols_ok[2 * j + (i & 1)]

                def store(v=acc[4 * j + i], r=r, c=c):
                    def m(c=c):
                        return kb.load(pm, kb.i(0) if one_for_all else kb.mul(c, kb.i(ms[0])), nc=True)[0]
                    y = _requantize(kb, v, m, out.type.element_type, op)
                    kb.store([y], po, kb.add(kb.mul(r, kb.i(os_[0])), kb.mul(c, kb.i(os_[1]))))
                kb.if_(kb.emit(arith.AndIOp(ok_r, ok_c)), store)
    kb.if_(kb.cmpi("slt", tile, kb.i(tiles)), warp_tile)
    return kb.finish(), grid, block, bufs


def _requantize(kb, acc, mult, out_elt, op):
    """numpy's ``requantize`` of the int32 ``acc`` into ``out_elt`` (int8 or
    float32), operation for operation; ``mult()`` loads its channel's float32
    multiplier (after the conversion of ``acc``: the kernels' op order as before)."""
    a = _attrs(op)
    out_zero_point, relu = int(a["out_zero_point"]), bool(a["relu"])
    f32 = Float32Type()
    real = kb.emit(arith.SIToFPOp(acc, f32))
    real = kb.emit(arith.MulfOp(real, mult()))
    if out_elt != _I8:
        return kb.emit(arith.MaximumfOp(real, kb.c(0.0, f32))) if relu else real
    real = kb.emit(xmath.RoundEvenOp(kb.emit(arith.AddfOp(real, kb.c(out_zero_point, f32)))))
    return _to_int8(kb, _clip(kb, real, out_zero_point if relu else INT8_MIN, INT8_MAX))


def _dp4a_sum(kb, xk, wk, count, acc):
    """``acc`` + the sum over k < ``count`` (static) of xk(k) * wk(k) (int8 loads,
    i8 values): a loop of dp4a over words of four, then the zero-padded tail."""
    def step(k0, acc, n=4):
        return kb.emit(G.Dp4aOp(_packed(kb, xk, k0, n), _packed(kb, wk, k0, n), acc))
    full = count // 4 * 4
    if full:
        acc = kb.for_(kb.i(0), _opaque(kb, full), kb.i(4), lambda k0, acc: [step(k0, acc)], [acc])[0]
    if count % 4:
        acc = step(kb.i(full), acc, count % 4)
    return acc


def weight_quantized_matmul(namer, op):
    x, w, scale = op.ins
    (out,) = op.outs
    elt = _float_of("weight_quantized_matmul", x)
    _check_int8("weight_quantized_matmul", [w])
    fr = _Frame(namer, "weight_quantized_matmul", [x, w, scale], out, "matmul", elt)
    K = fr.shapes[1][0]
    n_scale = fr.shapes[2][0]

    def body(kb, dg):
        lead, n = dg[:-1], dg[-1]
        s = fr.load(2, [n if n_scale != 1 else None])

        def term(k, acc):
            wq = kb.emit(arith.SIToFPOp(kb.load(fr.ptrs[1], fr.at(1, [k, n]), nc=True)[0], elt))
            xv = kb.load(fr.ptrs[0], fr.at(0, list(lead) + [k]), nc=True)[0]
            return [kb.emit(xmath.FmaOp(xv, kb.emit(arith.MulfOp(wq, s)), acc))]
        return kb.for_(kb.i(0), _opaque(kb, K), kb.i(1), term, [kb.c(0.0, elt)])[0]
    return _finish(fr, body)


def _conv_frame(namer, name, op, elt):
    """The frame of a conv over every output element (n, oh, ow, co) and its
    geometry: (frame, (H, W, C), (KH, KW), strides, dilations, pads)."""
    x, w = op.ins[:2]
    (out,) = op.outs
    if any(len(v.type.get_shape()) != 4 for v in (x, w, out)):  # NHWC images and HWIO filters only
        raise B.unsupported(f"{name} of " + ", ".join(str(v.type) for v in (x, w, out)))
    fr = _Frame(namer, name, list(op.ins), out, "matmul", elt)
    (_, H, W, C), (KH, KW, _, _) = fr.shapes[0], fr.shapes[1]
    strides, dil, _, pads = _conv_params(_attrs(op), (H, W), (KH, KW))
    return fr, (H, W, C), (KH, KW), strides, dil, pads


def _taps(kb, fr, geometry, n, oh, ow, body, inits):
    """Over the window's taps in order: ``body(ok, x_base, i, j, *carried)``
    with ``ok`` whether the tap is inside the image and ``x_base`` the offset of
    its channel 0 (clamped inside where it is not)."""
    (H, W, _), (KH, KW), (sh, sw), (dh, dw), (pt, pl) = geometry

    def tap(i, j, *carried):
        ih = _window_pos(kb, oh, i, sh, dh, pt)
        iw = _window_pos(kb, ow, j, sw, dw, pl)
        ok = kb.emit(arith.AndIOp(_inside(kb, ih, H), _inside(kb, iw, W)))
        xb = fr.at(0, [n, _clamp(kb, ok, ih), _clamp(kb, ok, iw), None])
        return body(ok, xb, i, j, *carried)
    return _tap_loop(kb, KH, KW, tap, inits)


def quantized_conv2d(namer, op):
    """The integer conv as quantized_matmul over (tap, channel): per tap, the
    channels in dp4a words; a padded tap reads ``pad_value`` (numpy pads with it)."""
    x, w = op.ins[:2]
    _check_int8("quantized_conv2d", [x, w])
    fr, *geometry = _conv_frame(namer, "quantized_conv2d", op, Float32Type())
    C = geometry[0][2]
    pad_value = int(_attrs(op)["pad_value"])

    def body(kb, dg):
        n, oh, ow, co = dg
        pad = kb.c(pad_value, _I8)

        def tap(ok, xb, i, j, acc):
            wb = fr.at(1, [i, j, None, co])

            def xc(c):
                v = kb.load(fr.ptrs[0], kb.add(xb, kb.mul(c, kb.i(fr.strides[0][3]))), nc=True)[0]
                return kb.select(ok, v, pad)

            def wc(c):
                return kb.load(fr.ptrs[1], kb.add(wb, kb.mul(c, kb.i(fr.strides[1][2]))), nc=True)[0]
            return [_dp4a_sum(kb, xc, wc, C, acc)]
        acc = _taps(kb, fr, geometry, n, oh, ow, tap, [fr.load(2, [co])])[0]
        return _requantize(kb, acc, _multiplier(kb, fr, co), fr.out.type.element_type, op)
    return _finish(fr, body)


def weight_quantized_conv2d(namer, op):
    """conv2d with each weight dequantized as numpy's kernel (float(w) * scale[co]):
    a math.fma sum over taps and channels, padded taps 0 (the conv family's bound)."""
    x, w, scale = op.ins
    elt = _float_of("weight_quantized_conv2d", x)
    _check_int8("weight_quantized_conv2d", [w])
    fr, *geometry = _conv_frame(namer, "weight_quantized_conv2d", op, elt)
    C = geometry[0][2]
    one_for_all = fr.shapes[2][0] == 1
    zero = fr.kb.c(0.0, elt)

    def body(kb, dg):
        n, oh, ow, co = dg
        s = fr.load(2, [None if one_for_all else co])

        def tap(ok, xb, i, j, acc):
            wb = fr.at(1, [i, j, None, co])

            def chan(c, acc):
                xv = kb.load(fr.ptrs[0], kb.add(xb, kb.mul(c, kb.i(fr.strides[0][3]))), nc=True)[0]
                xv = kb.select(ok, xv, zero)
                wq = kb.load(fr.ptrs[1], kb.add(wb, kb.mul(c, kb.i(fr.strides[1][2]))), nc=True)[0]
                wv = kb.emit(arith.MulfOp(kb.emit(arith.SIToFPOp(wq, elt)), s))
                return [kb.emit(xmath.FmaOp(xv, wv, acc))]
            return kb.for_(kb.i(0), _opaque(kb, C), kb.i(1), chan, [acc])
        return _taps(kb, fr, geometry, n, oh, ow, tap, [zero])[0]
    return _finish(fr, body)


LIBRARY = {
    "quantize": quantize,
    "quantized_matmul": quantized_matmul,
    "weight_quantized_matmul": weight_quantized_matmul,
    "quantized_conv2d": quantized_conv2d,
    "weight_quantized_conv2d": weight_quantized_conv2d,
}

__all__ = ["LIBRARY"]
