"""GPU kernels of the random ops, written once as L4 (``gpu.func``): the
``loops.library`` calls ``uniform``, ``normal``, ``dropout_mask``,
``seeded_dropout_mask`` and ``truncated_normal`` (and ``shuffle_indices``'s
keys and ``categorical``'s samples), which tfc-lower-gpu launches.

Each follows docs/random.md's layout, so a kernel computes every element alone
from (key, counter base, element index): one thread per Philox4x32-10 block
(grid-stride), block ``j`` with the counter ``(lo32(B + j), hi32(B + j), 0,
c3)``, its four words converted to the ``4 / p`` elements ``j * 4 / p ..`` that
read them (``p`` words an element). The key and the base are kernel parameters
(``i64``, the key ``k0 | k1 << 32``): constants of the host for an op with a
seed (base 0, ``c3`` = 0), ``tgpu.philox_take`` for the global stream (``c3``
= 1), which reserves the draw's blocks when the host program runs, as the numpy
kernel does.

- uniform float16/float32/float64 and dropout masks use integer operations and
  correctly rounded conversions, products and sums only: the same bits as the
  numpy kernel.
- uniform integers (two words an element for a span up to 2^32, else four):
  the top words of the product ``r * s`` from 32-bit limbs, exactly: the same
  bits.
- normal float16/float32: Box-Muller with ``r`` in float32 (the GPU has no
  float64 logarithm): ``ln u1`` as ``log1p(-(2^32 - w - 1) 2^-32)`` where
  ``u1 >= 1/2`` (so ``u1`` near 1 keeps its digits) and ``log(u1)`` below,
  ``sqrt`` correctly rounded, cos/sin of the same float32 angle as numpy's.
  Within 8 float32 ulps of the numpy kernel's standard normal (measured: see
  tests/test_gpu_random.py); then ``z * stddev + mean`` in float64 and one
  rounding, as there.
- truncated_normal (two words an element, a float64 uniform): the numpy
  kernel's inverse transform in float64 (the op's ``erfinv_formula`` on
  ``_KernelMath``'s kernel ops): float32 and float16
  bit-identical in every draw measured, float64 within 8 ulps.
- seeded_dropout_mask: dropout_mask's kernel, its key the int64 seed operand
  (a host scalar when the call runs) at base 0: the same bits.
- shuffle_indices: the numpy kernel's 64-bit keys (``_draw_kernel``), sorted by
  tfc/passes/gpu_sort.py's merge sort: the same permutation.
- normal float64: the numpy kernel's formula in float64 throughout (``log``
  within 1 ulp, ``sqrt`` correctly rounded, ``cos``/``sin`` within 1 ulp of
  the same float64 angle: tfc/backends/cuda/ptx_math.py): within a few float64
  ulps of the numpy kernel's values (measured: tests/test_gpu_random.py).
"""
from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    FloatAttr, Float16Type, Float32Type, Float64Type, IntegerAttr, IntegerType, MemRefType, f32, f64, i32, i64,
)

from tfc.dialects import gpu as G
from tfc.dialects import loops as L
from tfc.passes.gpu_builder import BLOCK, I32_MAX, MAX_BLOCKS, KernelBuilder, prod, unsupported

RANDOM_OPS = ("uniform", "normal", "dropout_mask", "truncated_normal")
_REQUIRED = {"uniform": ("minval",), "normal": ("mean", "stddev"), "dropout_mask": ("rate",),
             "truncated_normal": ("mean", "stddev"), "seeded_dropout_mask": ("rate",)}


def _philox(kb, key, ctr, c3: int):
    """The four words (i32) of Philox4x32-10 of counter (lo32(ctr), hi32(ctr),
    0, c3) under ``key`` (i64, k0 low): docs/random.md's rounds."""
    from tfc.ops.random import PHILOX_M, PHILOX_W, ROUNDS

    def lo(v):
        return kb.emit(arith.TruncIOp(v, i32))

    def hi(v):
        return lo(kb.emit(arith.ShRUIOp(v, kb.c(32, i64))))

    def wide(v):
        return kb.emit(arith.ExtUIOp(v, i64))

    def xor(a, b):
        return kb.emit(arith.XOrIOp(a, b))

    k0, k1 = lo(key), hi(key)
    c0, c1, c2, c3 = lo(ctr), hi(ctr), kb.c(0, i32), kb.c(c3, i32)
    m0, m1 = kb.c(PHILOX_M[0], i64), kb.c(PHILOX_M[1], i64)
    for r in range(ROUNDS):
        if r:
            k0 = kb.emit(arith.AddiOp(k0, kb.c(PHILOX_W[0], i32)))
            k1 = kb.emit(arith.AddiOp(k1, kb.c(PHILOX_W[1], i32)))
        p0 = kb.emit(arith.MuliOp(wide(c0), m0))
        p1 = kb.emit(arith.MuliOp(wide(c2), m1))
        c0, c1, c2, c3 = xor(xor(hi(p1), c1), k0), lo(p1), xor(xor(hi(p0), c3), k1), lo(p0)
    return [c0, c1, c2, c3]


def _pair64(kb, w0, w1):
    """w0 | w1 << 32 (i64)."""
    lo = kb.emit(arith.ExtUIOp(w0, i64))
    hi = kb.emit(arith.ShLIOp(kb.emit(arith.ExtUIOp(w1, i64)), kb.c(32, i64)))
    return kb.emit(arith.OrIOp(lo, hi))


def _f64(kb, v):
    return v if v.type == f64 else kb.emit(arith.ExtFOp(v, f64))


def _round_to(kb, v, t):
    return v if v.type == t else kb.emit(arith.TruncFOp(v, t))


def _scaled_uniform(kb, u, t, np_dt, lo: float, hi: float):
    """minval + u * (maxval - minval) in float64 (or lo*(1 - u) + hi*u where
    the span overflows), rounded to ``t`` and kept below maxval."""
    u = _f64(kb, u)
    if math.isfinite(hi - lo):
        v = kb.emit(arith.AddfOp(kb.emit(arith.MulfOp(u, kb.c(hi - lo, f64))), kb.c(lo, f64)))
    else:
        one_minus = kb.emit(arith.SubfOp(kb.c(1.0, f64), u))
        v = kb.emit(arith.AddfOp(kb.emit(arith.MulfOp(kb.c(lo, f64), one_minus)),
                                 kb.emit(arith.MulfOp(kb.c(hi, f64), u))))
    v = _round_to(kb, v, t)
    cap = float(np.nextafter(np_dt.type(hi), np_dt.type(lo)))
    if isinstance(t, Float16Type):  # no f16 arithmetic in kernels: the minimum in float32 (exact)
        low = kb.emit(arith.MinimumfOp(kb.emit(arith.ExtFOp(v, f32)), kb.c(cap, f32)))
        return kb.emit(arith.TruncFOp(low, t))
    return kb.emit(arith.MinimumfOp(v, kb.c(cap, t)))


def _unit24(kb, w):
    """(w >> 8) * 2^-24 in float32 (exact)."""
    top = kb.emit(arith.ShRUIOp(w, kb.c(8, i32)))
    return kb.emit(arith.MulfOp(kb.emit(arith.UIToFPOp(top, f32)), kb.c(2.0 ** -24, f32)))


def _unit53(kb, w0, w1):
    """((w0 | w1 << 32) >> 11) * 2^-53 in float64 (exact)."""
    x = kb.emit(arith.ShRUIOp(_pair64(kb, w0, w1), kb.c(11, i64)))
    return kb.emit(arith.MulfOp(kb.emit(arith.UIToFPOp(x, f64)), kb.c(2.0 ** -53, f64)))


def _uniform_values(kb, words, t, dtype, attrs):
    lo = float(attrs["minval"])
    np_dt = np.dtype(dtype.as_numpy_dtype)
    if dtype.is_integer:
        return _integer_values(kb, words, t, int(attrs["minval"]), int(attrs["maxval"]))
    hi = 1.0 if attrs["maxval"] is None else float(attrs["maxval"])
    if isinstance(t, Float64Type):
        us = [_unit53(kb, words[0], words[1]), _unit53(kb, words[2], words[3])]
        return us if (lo, hi) == (0.0, 1.0) else [_scaled_uniform(kb, u, t, np_dt, lo, hi) for u in us]
    us = [_unit24(kb, w) for w in words]
    if (lo, hi) == (0.0, 1.0) and isinstance(t, Float32Type):
        return us
    return [_scaled_uniform(kb, u, t, np_dt, lo, hi) for u in us]


def _integer_values(kb, words, t, lo: int, hi: int):
    """lo + floor(r * s / 2^(32k)) for s = hi - lo <= 2^64 and r the element's k
    words (k = 2 if s <= 2^32, else 4; first word lowest): a schoolbook product
    of 32-bit limbs with 64-bit column sums, as the numpy kernel computes it."""
    if not isinstance(t, IntegerType) or t.width.data not in (8, 32, 64):
        raise unsupported(f"uniform of {t}")
    from tfc.ops.random import _int_words

    span = hi - lo
    k = _int_words(span)
    s_limbs = [(span >> (32 * j)) & 0xFFFFFFFF for j in range((span.bit_length() + 31) // 32)]
    m32, sh = kb.c(0xFFFFFFFF, i64), kb.c(32, i64)
    out = []
    for e in range(0, 4, k):
        r = [kb.emit(arith.ExtUIOp(w, i64)) for w in words[e:e + k]]
        acc = [None] * (k + len(s_limbs) + 1)

        def add(c, v):
            acc[c] = v if acc[c] is None else kb.emit(arith.AddiOp(acc[c], v))

        for i, ri in enumerate(r):
            for j, sj in enumerate(s_limbs):
                if sj:
                    p = kb.emit(arith.MuliOp(ri, kb.c(sj, i64)))  # below 2^64: no wrap
                    add(i + j, kb.emit(arith.AndIOp(p, m32)))
                    add(i + j + 1, kb.emit(arith.ShRUIOp(p, sh)))
        for c in range(k + 1):  # carries up to the two words of the result
            if acc[c] is None:
                continue
            if c + 1 < len(acc):
                add(c + 1, kb.emit(arith.ShRUIOp(acc[c], sh)))
            acc[c] = kb.emit(arith.AndIOp(acc[c], m32))
        top_lo = acc[k] if acc[k] is not None else kb.c(0, i64)
        top = top_lo if acc[k + 1] is None else kb.emit(
            arith.OrIOp(top_lo, kb.emit(arith.ShLIOp(acc[k + 1], sh))))
        v = kb.emit(arith.AddiOp(top, kb.c(lo, i64)))  # modulo 2^64: the int64 value's bits
        out.append(v if t == i64 else kb.emit(arith.TruncIOp(v, t)))
    return out


def _dropout_values(kb, words, t, np_dt, rate: float):
    """scale where word >= ceil(rate * 2^32), else 0 * scale (numpy's bool * scale)."""
    scale = np.asarray(1.0 / (1.0 - rate), dtype=np_dt)
    zero = kb.c(float(np_dt.type(0) * scale), t)
    thr = math.ceil(rate * 2.0 ** 32)
    if thr > 0xFFFFFFFF:
        return [zero] * 4
    sc, th = kb.c(float(scale), t), kb.c(thr, i32)
    return [kb.select(kb.cmpi("uge", w, th), sc, zero) for w in words]


def _affine(kb, z, mean: float, std: float):
    """z * stddev + mean in float64 (a product and a sum, each rounded, as numpy's)."""
    if std != 1 or mean != 0:
        z = kb.emit(arith.AddfOp(kb.emit(arith.MulfOp(_f64(kb, z), kb.c(std, f64))), kb.c(mean, f64)))
    return z


def _normal64_values(kb, words, mean: float, std: float):
    """One Box-Muller pair from the block's two 53-bit integers x0, x1 (as
    ``_unit53``): u1 = (x0 + 1) 2^-53, theta = x1 (2^-53 2 pi), all float64."""
    def int53(w0, w1):
        return kb.emit(arith.UIToFPOp(kb.emit(arith.ShRUIOp(_pair64(kb, w0, w1), kb.c(11, i64))), f64))
    x0, x1 = int53(words[0], words[1]), int53(words[2], words[3])
    u1 = kb.emit(arith.MulfOp(kb.emit(arith.AddfOp(x0, kb.c(1.0, f64))), kb.c(2.0 ** -53, f64)))  # exact
    r = kb.emit(xmath.SqrtOp(kb.emit(arith.MulfOp(kb.c(-2.0, f64), kb.emit(xmath.LogOp(u1))))))
    theta = kb.emit(arith.MulfOp(x1, kb.c(2.0 ** -53 * 2 * np.pi, f64)))
    return [_affine(kb, kb.emit(arith.MulfOp(r, kb.emit(trig(theta)))), mean, std)
            for trig in (xmath.CosOp, xmath.SinOp)]


def _normal_values(kb, words, t, dtype, attrs):
    mean, std = float(attrs["mean"]), float(attrs["stddev"])
    if isinstance(t, Float64Type):
        return _normal64_values(kb, words, mean, std)
    out = []
    angle = float(np.float32(2.0 ** -24 * 2 * np.pi))
    for w0, w1 in ((words[0], words[1]), (words[2], words[3])):
        m = kb.emit(arith.AddiOp(kb.emit(arith.ExtUIOp(w0, i64)), kb.c(1, i64)))  # u1 = m 2^-32 in (0, 1]
        near_one = kb.cmpi("uge", m, kb.c(1 << 31, i64))
        d = kb.emit(arith.SubiOp(kb.c(1 << 32, i64), m))
        x = kb.emit(arith.MulfOp(kb.emit(arith.UIToFPOp(d, f32)), kb.c(2.0 ** -32, f32)))
        ln_hi = kb.emit(xmath.Log1pOp(kb.emit(arith.NegfOp(x))))
        u1 = kb.emit(arith.MulfOp(kb.emit(arith.UIToFPOp(m, f32)), kb.c(2.0 ** -32, f32)))
        ln_lo = kb.emit(xmath.LogOp(u1))
        ln = kb.select(near_one, ln_hi, ln_lo)
        r = kb.emit(xmath.SqrtOp(kb.emit(arith.MulfOp(ln, kb.c(-2.0, f32)))))
        theta = kb.emit(arith.MulfOp(_unit24_raw(kb, w1), kb.c(angle, f32)))
        for z in (kb.emit(arith.MulfOp(r, kb.emit(xmath.CosOp(theta)))),
                  kb.emit(arith.MulfOp(r, kb.emit(xmath.SinOp(theta))))):
            out.append(_round_to(kb, _affine(kb, z, mean, std), t))
    return out


class _KernelMath:
    """The arithmetic of tfc.ops' formulas (``_erf_formula``, ``erfinv_formula``)
    as float64 kernel ops (the numpy kernel's operations in its order; exp and
    log1p within 1 ulp)."""

    def __init__(self, kb):
        self.kb = kb

    def c(self, v):
        return self.kb.c(float(v), f64)

    def _e(self, op):
        return self.kb.emit(op)

    def add(self, x, y):
        return self._e(arith.AddfOp(x, y))

    def sub(self, x, y):
        return self._e(arith.SubfOp(x, y))

    def mul(self, x, y):
        return self._e(arith.MulfOp(x, y))

    def div(self, x, y):
        return self._e(arith.DivfOp(x, y))

    def abs(self, x):
        return self._e(xmath.AbsFOp(x))

    def neg(self, x):
        return self._e(arith.NegfOp(x))

    def exp(self, x):
        return self._e(xmath.ExpOp(x))

    def lt(self, x, y):
        return self._e(arith.CmpfOp(x, y, "olt"))

    def ge(self, x, y):
        return self._e(arith.CmpfOp(x, y, "oge"))

    def select(self, c, x, y):
        return self.kb.select(c, x, y)

    def copysign(self, x, y):
        return self._e(xmath.CopySignOp(x, y))

    def sqrt(self, x):
        return self._e(xmath.SqrtOp(x))

    def log1p(self, x):
        return self._e(xmath.Log1pOp(x))


def _truncated_values(kb, words, t, attrs):
    """tfc.ops.random's ``truncated_from_words`` in float64: y = e + u (-2e)
    (u as float64 ``uniform``'s, e = erf(-sqrt 2)), the op's own
    ``erfinv_formula`` on kernel ops, z = clip(sqrt(2) w, -2, 2), then the
    affine step and one rounding."""
    from tfc.ops.math import _erf_kernel
    from tfc.ops.random import _SQRT2, erfinv_formula

    m = _KernelMath(kb)
    e = float(_erf_kernel(np.array(-_SQRT2)))
    out = []
    for w0, w1 in ((words[0], words[1]), (words[2], words[3])):
        u = _unit53(kb, w0, w1)
        y = m.add(m.c(e), m.mul(u, m.c(-2.0 * e)))
        z = m.mul(m.c(_SQRT2), erfinv_formula(m, y))
        z = kb.emit(arith.MinimumfOp(kb.emit(arith.MaximumfOp(z, m.c(-2.0))), m.c(2.0)))
        out.append(_round_to(kb, _affine(kb, z, float(attrs["mean"]), float(attrs["stddev"])), t))
    return out


def _unit24_raw(kb, w):
    """float32(w >> 8) (exact)."""
    return kb.emit(arith.UIToFPOp(kb.emit(arith.ShRUIOp(w, kb.c(8, i32))), f32))


def random_launch(namer, op):
    """(kernel, grid, Philox blocks, key, out) of a random library call ``op``
    (key: ``None`` for the global stream or a seed operand, else the seeded key
    as a pair of ints), or None where the result has no elements."""
    from tfc.core.registry import REGISTRY
    from tfc.dialects.tensor import decode_attrs, dtype_of
    from tfc.ops.random import _int_words, _unit_words

    name = op.callee.data
    attrs = decode_attrs(REGISTRY[name], dict(op.kernel_attrs.data))
    if any(attrs.get(a) is None for a in _REQUIRED[name]) or len(op.outs) != 1:
        raise unsupported(f"{name} without its attributes {', '.join(_REQUIRED[name])} and one result")
    (out,) = op.outs
    t, shape = _dense_out(name, out)
    n = prod(shape)
    dtype = dtype_of(t)
    np_dt = np.dtype(dtype.as_numpy_dtype)
    # the numpy kernel's words per element (tfc/ops/random.py's specs): the same words are drawn
    if name == "uniform" and dtype.is_integer:
        per = _int_words(int(attrs["maxval"]) - int(attrs["minval"]))
    elif name in ("uniform", "normal"):
        per = _unit_words(dtype)
    elif name == "truncated_normal":  # two words an element (a float64 uniform), whatever the dtype
        per = 2
    else:  # dropout_mask, seeded_dropout_mask: one word an element (dropout_spec)
        per = 1
    if n == 0:
        return None
    seed_operand = name == "seeded_dropout_mask"  # seeded (c3 = 0), its key an operand of the launch
    seed = None if seed_operand else attrs["seed"]
    tname = {"f16": "f16", "f32": "f32", "f64": "f64"}.get(str(t), str(t))

    def values(kb, words, _first):
        if name == "uniform":
            return _uniform_values(kb, words, t, dtype, attrs)
        if name == "normal":
            return _normal_values(kb, words, t, dtype, attrs)
        if name == "truncated_normal":
            return _truncated_values(kb, words, t, attrs)
        return _dropout_values(kb, words, t, np_dt, float(attrs["rate"]))
    kernel, grid, nblocks = _draw_kernel(namer(f"{name}_{tname}"), t, n, per, seed is None and not seed_operand,
                                         values)
    return kernel, grid, nblocks, _seed_key(seed), out


def _dense_out(name, out):
    """(element type, shape) of a draw's result buffer: static, row-major."""
    t = out.type.element_type
    shape = tuple(out.type.get_shape())
    if any(d < 0 for d in shape):
        raise unsupported(f"{name} of run-time shape")
    if not L.is_contiguous(out.type):
        raise unsupported(f"{name} into the strided buffer {out.type}")
    return t, shape


def _next_down(kb, h):
    """The float just below ``h`` (f32 or f64, finite): numpy's nextafter(h,
    lo) for lo < h, through the bits (``h`` > 0: bits - 1; < 0: bits + 1; a
    zero: minus the smallest subnormal)."""
    it = i64 if isinstance(h.type, Float64Type) else i32
    bits = kb.emit(arith.BitcastOp(h, it))
    zero = kb.c(0.0, h.type)
    below = kb.emit(arith.SubiOp(bits, kb.c(1, it)))
    above = kb.emit(arith.AddiOp(bits, kb.c(1, it)))
    tiny = kb.c(-(1 << (it.width.data - 1)) + 1, it)  # sign bit | 1
    r = kb.select(kb.emit(arith.CmpfOp(h, zero, "ogt")), below,
                  kb.select(kb.emit(arith.CmpfOp(h, zero, "olt")), above, tiny))
    return kb.emit(arith.BitcastOp(r, h.type))


def uniform_bounds(namer, op):
    """The check and launch of ``uniform_bounds`` (tfc.random.uniform with
    tensor bounds) of float32/float64: the host checks the bounds (finite,
    minval < maxval: else ``loops.raise`` of the op, eager's error, before any
    draw is reserved); the kernel is uniform's with the bounds as float64
    parameters: u * (hi - lo) + lo (lo * (1 - u) + hi * u where the span
    overflows), rounded, kept below maxval: the numpy kernel's bits."""
    from tfc.core.registry import REGISTRY
    from tfc.dialects.tensor import decode_attrs, dtype_of
    from tfc.ops.random import _unit_words
    from tfc.passes.gpu_lists import fail_if

    if len(op.ins) != 2 or len(op.outs) != 1:
        raise unsupported(f"uniform_bounds of {len(op.ins)} operands and {len(op.outs)} results")
    attrs = decode_attrs(REGISTRY["uniform_bounds"], dict(op.kernel_attrs.data))
    (out,) = op.outs
    t, shape = _dense_out("uniform_bounds", out)
    dtype = dtype_of(t)
    if not isinstance(t, (Float32Type, Float64Type)):
        raise unsupported(f"uniform_bounds of {dtype.name} (tfc.random.uniform with tensor bounds: an integer "
                          f"draw's words an element depend on the run-time span; float16's cap below maxval "
                          f"needs 16-bit integer kernels)")
    lo, hi = op.ins
    if lo.type != t or hi.type != t:
        raise unsupported(f"uniform_bounds with bounds of {lo.type} and {hi.type} (host scalars of {t} expected)")
    # bad = not (lo < hi and lo - lo == 0 and hi - hi == 0): x - x is NaN for an infinite or NaN x
    zero = arith.ConstantOp(FloatAttr(0.0, t))
    ok = arith.CmpfOp(lo, hi, "olt")
    host = [zero, ok]
    for b in (lo, hi):
        diff = arith.SubfOp(b, b)
        same = arith.CmpfOp(diff.result, zero.result, "oeq")
        ok = arith.AndIOp(ok.result, same.result)
        host += [diff, same, ok]
    yes = arith.ConstantOp(IntegerAttr(1, IntegerType(1)))
    bad = arith.XOrIOp(ok.result, yes.result)
    host += [yes, bad, fail_if(op, bad.result)]
    bounds = []  # the kernel's float64 parameters
    for b in (lo, hi):
        if t == f64:
            bounds.append(b)
        else:
            wide = arith.ExtFOp(b, f64)
            host.append(wide)
            bounds.append(wide.result)
    n = prod(shape)
    if n == 0:
        return host
    seed = attrs["seed"]

    def values(kb, words, _first):
        lo64, hi64 = kb.args[3], kb.args[4]
        if isinstance(t, Float64Type):
            us = [_unit53(kb, words[0], words[1]), _unit53(kb, words[2], words[3])]
        else:
            us = [_f64(kb, _unit24(kb, w)) for w in words]
        span = kb.emit(arith.SubfOp(hi64, lo64))
        finite = kb.emit(arith.CmpfOp(kb.emit(arith.SubfOp(span, span)), kb.c(0.0, f64), "oeq"))
        cap = _next_down(kb, _round_to(kb, hi64, t))
        out = []
        for u in us:
            near = kb.emit(arith.AddfOp(kb.emit(arith.MulfOp(u, span)), lo64))
            one_minus = kb.emit(arith.SubfOp(kb.c(1.0, f64), u))
            far = kb.emit(arith.AddfOp(kb.emit(arith.MulfOp(lo64, one_minus)), kb.emit(arith.MulfOp(hi64, u))))
            v = _round_to(kb, kb.select(finite, near, far), t)
            out.append(kb.emit(arith.MinimumfOp(v, cap)))
        return out
    tname = "f64" if isinstance(t, Float64Type) else "f32"
    kernel, grid, nblocks = _draw_kernel(namer(f"uniform_bounds_{tname}"), t, n, _unit_words(dtype), seed is None,
                                         values, extra=(f64, f64))
    keys, key, base = host_key_base(nblocks, _seed_key(seed))
    return host + keys + [(kernel, grid, (BLOCK, 1, 1), [key, base, out, *bounds])]


def seeded_dropout_mask(namer, op):
    """The launch of ``seeded_dropout_mask``: dropout_mask's kernel, its key
    the int64 seed operand (a host scalar when the call runs; key = seed's
    bits, k0 low: docs/random.md) at counter base 0: the numpy kernel's bits."""
    if len(op.ins) != 2 or op.ins[1].type != i64:
        raise unsupported("seeded_dropout_mask with a seed that is not an int64 host scalar "
                          f"({', '.join(str(v.type) for v in op.ins)})")
    made = random_launch(namer, op)
    if made is None:
        return []
    kernel, grid, _, _, out = made
    base = arith.ConstantOp(IntegerAttr(0, i64))
    return [base, (kernel, grid, (BLOCK, 1, 1), [op.ins[1], base.result, out])]


def _seed_key(seed):
    from tfc.ops.random import seed_key

    return None if seed is None else seed_key(seed)


def _draw_kernel(name, t, n: int, per: int, global_stream: bool, values, extra=()):
    """(kernel, grid, Philox blocks) of a draw of ``n`` elements of ``t``, ``per``
    words an element: parameters (key, base, out); ``values(kb, words)`` gives
    the ``4 / per`` elements of a block's four words (``first``: the first's
    index)."""
    epb = 4 // per  # elements per Philox block
    nblocks = -(-n * per // 4)
    grid = min(-(-nblocks // BLOCK), MAX_BLOCKS)
    it = i32 if n + grid * BLOCK * epb <= I32_MAX else i64
    kb = KernelBuilder(name, [i64, i64, G.PtrType(t, "global"), *extra], "elementwise", it)
    key, base, ptr = kb.args[:3]

    def block(j):
        ctr = kb.emit(arith.AddiOp(base, kb.cast_int(j, i64, signed=False)))
        first = kb.mul(j, kb.i(epb))
        vals = values(kb, _philox(kb, key, ctr, 1 if global_stream else 0), first)
        for e, v in enumerate(vals):
            idx = kb.add(first, kb.i(e))
            if n % epb == 0:
                kb.store([v], ptr, idx)
            else:
                kb.if_(kb.cmpi("ult", idx, kb.i(n)), lambda v=v, idx=idx: kb.store([v], ptr, idx))
        return []

    gid = kb.add(kb.mul(kb.bid(), kb.i(BLOCK)), kb.tid())
    kb.for_(gid, kb.i(nblocks), kb.mul(kb.gdim(), kb.i(BLOCK)), block)
    return kb.finish(), (grid, 1, 1), nblocks


def shuffle_indices(namer, op):
    """The launches of ``shuffle_indices`` into its result (int64 [n]): the
    numpy kernel's 64-bit key per row (words 2i, 2i+1 of the draw, first word
    low) into a scratch buffer, then the stable merge sort of the keys
    (unsigned): the same permutation, bit for bit."""
    from tfc.passes.gpu_nn_library import _attrs
    from tfc.passes.gpu_sort import merge_sort, one_in_one_out

    attrs = _attrs(op)
    value, out = one_in_one_out(op)
    n = value.type.get_shape()[0]
    if n < 0:
        raise unsupported("shuffle_indices of run-time shape")
    if out.type != MemRefType(i64, [n]):
        raise unsupported(f"shuffle_indices into the buffer {out.type}")
    if n == 0:
        return []
    seed = attrs.get("seed")
    kernel, grid, nblocks = _draw_kernel(namer("shuffle_keys"), i64, n, 2, seed is None,
                                         lambda kb, w, _: [_pair64(kb, w[0], w[1]), _pair64(kb, w[2], w[3])])
    keys = L.AllocOp(MemRefType(i64, [n])).result
    _, key, base = host_key_base(nblocks, _seed_key(seed))
    return [(kernel, grid, (BLOCK, 1, 1), [key, base, keys])] + merge_sort(namer, keys, out, 0, False, unsigned=True)


def _row_stats(kb, xp, row, C: int, rs: int, cs: int):
    """(max, sum of exp(x - max)) of logits row ``row`` in float64, each a
    sequential loop over the classes as numpy's max and cumsum."""
    def load(c):
        v = kb.load(xp, kb.add(kb.mul(row, kb.i(rs)), kb.mul(c, kb.i(cs))), nc=True)[0]
        return _f64(kb, v)
    (m,) = kb.for_(kb.i(1), kb.i(C), kb.i(1), lambda c, acc: [kb.emit(arith.MaximumfOp(acc, load(c)))],
                   [load(kb.i(0))])
    (total,) = kb.for_(kb.i(0), kb.i(C), kb.i(1), lambda c, acc: [kb.emit(arith.AddfOp(
        acc, kb.emit(xmath.ExpOp(kb.emit(arith.SubfOp(load(c), m))))))], [kb.c(0.0, f64)])
    return m, total, load


def _bad_row(kb, total):
    """i1: no distribution (the total is not finite and positive)."""
    ok = kb.emit(arith.AndIOp(kb.emit(arith.CmpfOp(total, kb.c(0.0, f64), "ogt")),
                              kb.emit(arith.CmpfOp(total, kb.c(float("inf"), f64), "olt"))))
    return kb.emit(arith.XOrIOp(ok, kb.c(1, IntegerType(1))))


def categorical(namer, op):
    """The launches of ``categorical`` into its result [batch, samples]: a
    check kernel (one block; the threads stride over the rows, counting those
    without a distribution into a 0-d buffer, which the host reads and, where
    non-zero, raises eager's error with a ``loops.raise`` of the op), then one
    thread per Philox block (two samples, two words each: a float64 uniform u,
    as the numpy kernel's draw), each sample by inverse transform over its
    row: max, the sum of p = exp(x - max) and the running sum's first value
    above v = min(u * total, the float64 below total), all float64 and in the
    numpy kernel's order (exp within 1 ulp of numpy's: a sample differs only
    where v falls within an ulp or so of a running sum)."""
    from tfc.passes.gpu_lists import fail_if
    from tfc.passes.gpu_nn_library import _attrs
    from tfc.passes.gpu_sort import one_in_one_out

    attrs = _attrs(op)
    logits, out = one_in_one_out(op)
    shape = tuple(out.type.get_shape())
    lshape = tuple(logits.type.get_shape())
    if any(d < 0 for d in shape + lshape):
        raise unsupported("categorical of run-time shape")
    if out.type.element_type not in (i32, i64) or out.type != MemRefType(out.type.element_type, shape):
        raise unsupported(f"categorical into the buffer {out.type}")
    B, C = lshape
    S = shape[1]
    n = B * S
    if n == 0:
        return []
    rs, cs = L.layout_of(logits.type)[0]
    elt, ot = logits.type.element_type, out.type.element_type
    if abs(rs) * B + abs(cs) * C > I32_MAX:
        raise unsupported("categorical of logits spanning 2^31 elements or more")
    it = i32 if n + MAX_BLOCKS * BLOCK * 2 <= I32_MAX else i64
    # the check: a count of rows without a distribution
    count = L.AllocOp(MemRefType(i32, []))
    kb = KernelBuilder(namer("categorical_check"), [G.PtrType(elt, "global"), G.PtrType(i32, "global")],
                       "elementwise", it)
    xp, cp = kb.args
    kb.if_(kb.cmpi("eq", kb.tid(), kb.i(0)), lambda: kb.store([kb.c(0, i32)], cp, kb.i(0)))
    from xdsl.dialects import gpu as xgpu

    kb.emit(xgpu.BarrierOp())

    def check(r):
        _, total, _ = _row_stats(kb, xp, r, C, rs, cs)
        def count_it():
            kb.emit(G.AtomicOp("add", cp, kb.i(0), kb.c(1, i32)))
        kb.if_(_bad_row(kb, total), count_it)
        return []
    kb.for_(kb.tid(), kb.i(B), kb.i(BLOCK), check)
    check_kernel = kb.finish()
    seen = L.LoadOp(count.result)
    zero = arith.ConstantOp(IntegerAttr(0, i32))
    bad = arith.CmpiOp(seen.result, zero.result, "ne")
    host = [(check_kernel, (1, 1, 1), (BLOCK, 1, 1), [logits, count.result]), seen, zero, bad,
            fail_if(op, bad.result)]

    def samples(kb, words, first):
        xp = kb.args[3]
        vals = []
        for e, (w0, w1) in enumerate(((words[0], words[1]), (words[2], words[3]))):
            idx = kb.add(first, kb.i(e))
            row = kb.emit(arith.MinUIOp(kb.divu(idx, kb.i(S)), kb.i(B - 1)))  # (a last odd sample: any row)
            m, total, load = _row_stats(kb, xp, row, C, rs, cs)
            below = kb.emit(arith.BitcastOp(kb.emit(arith.SubiOp(kb.emit(arith.BitcastOp(total, i64)),
                                                                  kb.c(1, i64))), f64))
            v = kb.emit(arith.MinimumfOp(kb.emit(arith.MulfOp(_unit53(kb, w0, w1), total)), below))

            def step(c, acc, found, cls):  # found: 0 or 1 (an i32: predicates are not loop-carried)
                acc = kb.emit(arith.AddfOp(acc, kb.emit(xmath.ExpOp(kb.emit(arith.SubfOp(load(c), m))))))
                hit = kb.emit(arith.AndIOp(kb.emit(arith.CmpfOp(acc, v, "ogt")), kb.cmpi("eq", found, kb.c(0, i32))))
                return [acc, kb.select(hit, kb.c(1, i32), found), kb.select(hit, c, cls)]
            _, _, cls = kb.for_(kb.i(0), kb.i(C), kb.i(1), step, [kb.c(0.0, f64), kb.c(0, i32), kb.i(0)])
            vals.append(kb.cast_int(cls, ot))
        return vals

    seed = attrs.get("seed")
    kernel, grid, nblocks = _draw_kernel(namer("categorical"), ot, n, 2, seed is None, samples,
                                         extra=[G.PtrType(elt, "global")])
    # the draw's blocks are reserved after the check (the library loop puts the take before the
    # launch): where it fails, loops.raise runs the numpy kernel, which draws them before it raises
    _, key, base = host_key_base(nblocks, _seed_key(seed))
    return host + [(kernel, grid, (BLOCK, 1, 1), [key, base, out, logits])]


def host_key_base(nblocks: int, skey):
    """Host ops giving a random kernel's key and base (i64 values): constants
    for a seeded op, ``tgpu.philox_take`` for the global stream."""
    if skey is None:
        take = G.PhiloxTakeOp(nblocks)
        return [take], take.key, take.base
    k = skey[0] | skey[1] << 32
    k = k - (1 << 64) if k >= 1 << 63 else k
    key = arith.ConstantOp(IntegerAttr(k, i64))
    base = arith.ConstantOp(IntegerAttr(0, i64))
    return [key, base], key.result, base.result


# library calls with their own launches (tfc-lower-gpu's library tables)
LIBRARY = {"shuffle_indices": shuffle_indices, "categorical": categorical, "seeded_dropout_mask": seeded_dropout_mask,
           "uniform_bounds": uniform_bounds}

# the stateful ops with GPU kernels: eager GPU tensors compile them as any other op
# (seeded_dropout_mask is not stateful: it is a function of its operands)
STATEFUL_OPS = (*RANDOM_OPS, "shuffle_indices", "categorical")

__all__ = ["RANDOM_OPS", "STATEFUL_OPS", "LIBRARY", "random_launch", "host_key_base", "shuffle_indices",
           "categorical", "seeded_dropout_mask"]
