"""GPU library kernels of the quantized ops (tfc/ops/quant.py gives the
semantics), for the ``loops.library`` calls with a planned result that
tfc-lower-gpu launches: ``quantize``, ``quantized_matmul`` and
``weight_quantized_matmul``. Each is one thread per result element over a
grid-stride loop (gpu_nn_library's frame: block 256, static shapes).

- quantize: ``x / scale`` in x's float dtype, rounded half to even, plus the
  zero point, clipped to [-128, 127] (NaN-propagating, as numpy's clip) and
  converted to int8: the numpy kernel's operations one by one, bit-identical.
- quantized_matmul: the int32 accumulator starts at ``bias[n]``; the int8
  codes of a row of x and a column of w are packed four to a 32-bit word
  (byte j of a word is k = 4i + j; the last word of an odd K padded with zero
  bytes) and accumulated by ``tgpu.dp4a`` (PTX ``dp4a.s32.s32``). int32
  addition wraps, so the order does not matter: the accumulator is the exact
  ``x @ w + bias`` modulo 2**32, as numpy's int32 arithmetic. The epilogue is
  numpy's ``requantize`` operation for operation (float32(acc) * multiplier,
  then relu as max(., 0) for a float32 result; else + zero point, round half
  to even, clip to [zero point if relu else -128, 127], int8): bit-identical.
- weight_quantized_matmul: each weight dequantized as numpy's kernel does
  (float(w) * scale[n], one rounding), then a ``math.fma`` sum over K: within
  the float matmul's error bound (another summation order than BLAS).

quantized_conv2d and weight_quantized_conv2d have no GPU kernel yet: they
raise NotImplementedError naming them.
"""
from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType, i32

from tfc.dialects import gpu as G
from tfc.passes import gpu_builder as B
from tfc.passes.gpu_nn_library import _attrs, _Frame, _opaque

INT8_MIN, INT8_MAX = -128, 127
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
    elt = _float_of("quantize", x)
    a = _attrs(op)
    scale, zero_point = float(a["scale"].value.data), int(a["zero_point"].value.data)
    fr = _Frame(namer, "quantize", [x], out, "elementwise", elt)

    def body(kb, dg):
        q = kb.emit(arith.DivfOp(fr.load(0, dg), kb.c(scale, elt)))
        q = kb.emit(xmath.RoundEvenOp(q))
        q = kb.emit(arith.AddfOp(q, kb.c(zero_point, elt)))
        return _to_int8(kb, _clip(kb, q, INT8_MIN, INT8_MAX))
    return _launches(fr, body)


def _launches(fr, body):
    if fr.n == 0:
        return []
    kernel = fr.build(body)
    return [(kernel, fr.grid, (B.BLOCK, 1, 1), fr.ins + [fr.out])]


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


def quantized_matmul(namer, op):
    x, w, bias, mult = op.ins
    (out,) = op.outs
    _check_int8("quantized_matmul", [x, w])
    a = _attrs(op)
    out_zero_point, relu = int(a["out_zero_point"].value.data), bool(a["relu"].value.data)
    fr = _Frame(namer, "quantized_matmul", [x, w, bias, mult], out, "matmul", Float32Type())
    (_, K), _, _, (n_mult,) = fr.shapes[:4]
    f32 = Float32Type()
    int8_out = out.type.element_type == _I8

    def body(kb, dg):
        m, n = dg

        def xk(k):
            return kb.load(fr.ptrs[0], fr.at(0, [m, k]), nc=True)[0]

        def wk(k):
            return kb.load(fr.ptrs[1], fr.at(1, [k, n]), nc=True)[0]

        def step(k0, acc, count=4):
            return kb.emit(G.Dp4aOp(_packed(kb, xk, k0, count), _packed(kb, wk, k0, count), acc))
        acc = fr.load(2, [n])
        full = K // 4 * 4
        if full:
            acc = kb.for_(kb.i(0), _opaque(kb, full), kb.i(4), lambda k0, acc: [step(k0, acc)], [acc])[0]
        if K % 4:
            acc = step(kb.i(full), acc, K % 4)
        real = kb.emit(arith.MulfOp(kb.emit(arith.SIToFPOp(acc, f32)), fr.load(3, [n if n_mult != 1 else None])))
        if not int8_out:
            return kb.emit(arith.MaximumfOp(real, kb.c(0.0, f32))) if relu else real
        real = kb.emit(xmath.RoundEvenOp(kb.emit(arith.AddfOp(real, kb.c(out_zero_point, f32)))))
        return _to_int8(kb, _clip(kb, real, out_zero_point if relu else INT8_MIN, INT8_MAX))
    return _launches(fr, body)


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
    return _launches(fr, body)


def _not_yet(name):
    def refuse(namer, op):
        raise B.unsupported(f"{name} (quantized conv2d on the GPU: a dp4a im2col kernel, not written yet)")
    return refuse


LIBRARY = {
    "quantize": quantize,
    "quantized_matmul": quantized_matmul,
    "weight_quantized_matmul": weight_quantized_matmul,
    "quantized_conv2d": _not_yet("quantized_conv2d"),
    "weight_quantized_conv2d": _not_yet("weight_quantized_conv2d"),
}

__all__ = ["LIBRARY"]
