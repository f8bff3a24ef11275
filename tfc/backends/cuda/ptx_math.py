"""Float32 transcendental functions as PTX sequences for the PTX printer
(tfc/backends/cuda/ptx.py): exact ``.rn`` arithmetic around one
``ex2.approx.f32`` on a reduced argument (exp family) or none at all (log
family: fdlibm's ``logf`` reduction and polynomial). Errors against numpy's
float64 results, measured over wide input ranges: docs/ir-gpu-dialect.md.

Each ``emit_*`` takes the printer's kernel state ``k`` (``k.reg``, ``k.i``),
the destination register and the argument registers. ``model_*`` in
tests/test_ptx.py re-implements the same sequences in numpy.

float64 (``EMITTERS_F64``): exp, log, expm1, tanh, sin/cos (a Cody-Waite or
Payne-Hanek reduction to a double-double, FreeBSD's kernels: within 1 ulp of
the correctly rounded result for every argument) and pow (ln|x| and y ln|x|
in double-double, then exp: within 1 ulp of numpy's), log1p (log of 1 + x with
the rounding error's first-order correction); docs/gpu.md.

Not implemented (NotImplementedError naming the op): the hyperbolic functions other than tanh, the inverse trigonometric
functions, cbrt; the other float64 functions (log2, log10, exp2, erf, tan, ...).
"""
from __future__ import annotations

import math

import numpy as np

from tfc.backends.cuda.ptx import f32_hex

# fdlibm e_logf.c
LG1, LG2, LG3, LG4 = (np.float32(x) for x in (0.66666662693, 0.40000972152, 0.28498786688, 0.24279078841))
LN2_HI = np.uint32(0x3F317180).view(np.float32)
LN2_LO = np.uint32(0x3717F7D1).view(np.float32)
L2E = np.float32(1.4426950408889634)                      # log2(e), rounded
L2E_LO = np.float32(1.4426950408889634 - float(L2E))      # what rounding dropped
INV_LN2 = np.float32(1.4426950408889634)
INV_LN10 = np.float32(0.4342944819032518)
LOG10_2_HI = np.uint32(np.float32(0.30102999566398120).view(np.uint32) & 0xFFFFF000).view(np.float32)
LOG10_2_LO = np.float32(0.30102999566398120 - float(LOG10_2_HI))


def h(x) -> str:
    return f32_hex(float(x))


class _F:
    """Float32 instructions with fresh registers."""

    def __init__(self, k):
        self.k = k

    def r(self, cls="f"):
        return self.k.reg(cls)

    def op(self, opcode, *args, cls="f", dst=None, pred=None):
        d = dst or self.r(cls)
        self.k.i(opcode, d, *args, pred=pred)
        return d

    def add(self, a, b):
        return self.op("add.rn.f32", a, b)

    def sub(self, a, b):
        return self.op("sub.rn.f32", a, b)

    def mul(self, a, b):
        return self.op("mul.rn.f32", a, b)

    def div(self, a, b):
        return self.op("div.rn.f32", a, b)

    def fma(self, a, b, c):
        return self.op("fma.rn.f32", a, b, c)

    def setp(self, cmp, a, b):
        return self.op(f"setp.{cmp}.f32", a, b, cls="p")

    def sel(self, dst, value, p):
        """dst = value where p (predicated move)."""
        self.k.i("mov.f32", dst, value, pred=p)


def _scale(F, p, n):
    """p * 2^n for a float32 integer n (NaN: 0, clamped to [-254, 254]) in two
    exact power-of-two factors, so a subnormal result rounds once."""
    k = F.k
    ni = F.op("cvt.rzi.s32.f32", n, cls="r")
    k.i("max.s32", ni, ni, "-254")
    k.i("min.s32", ni, ni, "254")
    n1 = F.op("shr.s32", ni, "1", cls="r")
    n2 = F.op("sub.s32", ni, n1, cls="r")
    out = p
    for part in (n1, n2):
        b = F.op("add.s32", part, "127", cls="r")
        k.i("shl.b32", b, b, "23")
        s = F.op("mov.b32", b)
        out = F.mul(out, s)
    return out


def emit_exp2(k, dst, x):
    F = _F(k)
    n = F.op("cvt.rni.f32.f32", x)
    f = F.sub(x, n)                                       # exact, |f| <= 0.5
    p = F.op("ex2.approx.f32", f)
    r = _scale(F, p, n)
    k.i("mov.f32", dst, r)
    F.sel(dst, h(np.inf), F.setp("gt", x, h(128.0)))
    F.sel(dst, h(0.0), F.setp("lt", x, h(-255.0)))


def emit_exp(k, dst, x):
    """2^(x log2 e) with x log2 e carried as t + e (t rounded, e its error
    from an fma, plus x times log2 e's own rounding error)."""
    F = _F(k)
    t = F.mul(x, h(L2E))
    nt = F.op("neg.f32", t)
    e = F.fma(x, h(L2E), nt)
    e = F.fma(x, h(L2E_LO), e)
    n = F.op("cvt.rni.f32.f32", t)
    f = F.sub(t, n)
    f = F.add(f, e)
    p = F.op("ex2.approx.f32", f)
    r = _scale(F, p, n)
    k.i("mov.f32", dst, r)
    F.sel(dst, h(np.inf), F.setp("gt", x, h(89.0)))
    F.sel(dst, h(0.0), F.setp("lt", x, h(-105.0)))


def _log_core(F, x):
    """fdlibm's logf: x = 2^k m, m in [sqrt(2)/2, sqrt(2)), f = m - 1;
    returns (k as float32, f, hfsq = f*f/2, s*(hfsq+R)) so that
    log(m) = f - (hfsq - s*(hfsq+R))."""
    k = F.k
    tiny = F.setp("lt", x, h(np.float32(2.0 ** -126)))
    xs = F.op("mov.f32", x)
    k.i("mul.rn.f32", xs, x, h(np.float32(2.0 ** 25)), pred=tiny)  # subnormals: scale to normal
    k0 = F.op("selp.b32", "-25", "0", tiny, cls="r")
    bits = F.op("mov.b32", xs, cls="r")
    ix = F.op("and.b32", bits, "8388607", cls="r")                    # 0x7fffff
    i = F.op("add.s32", ix, "4913952", cls="r")                        # 0x4afb20
    k.i("and.b32", i, i, "8388608")                                    # 0x800000
    mb = F.op("xor.b32", i, "1065353216", cls="r")                     # 0x3f800000
    k.i("or.b32", mb, mb, ix)
    m = F.op("mov.b32", mb)
    ki = F.op("shr.u32", bits, "23", cls="r")
    k.i("sub.s32", ki, ki, "127")
    i23 = F.op("shr.u32", i, "23", cls="r")
    k.i("add.s32", ki, ki, i23)
    k.i("add.s32", ki, ki, k0)
    dk = F.op("cvt.rn.f32.s32", ki)
    f = F.sub(m, h(1.0))
    s = F.div(f, F.add(f, h(2.0)))
    z = F.mul(s, s)
    w = F.mul(z, z)
    t1 = F.mul(w, F.add(F.mul(w, h(LG4)), h(LG2)))
    t2 = F.mul(z, F.add(F.mul(w, h(LG3)), h(LG1)))
    R = F.add(t2, t1)
    hfsq = F.mul(F.mul(f, f), h(0.5))
    sR = F.mul(s, F.add(hfsq, R))
    return dk, f, hfsq, sR


def _log_specials(F, dst, x, at_inf=np.inf):
    F.sel(dst, h(np.nan), F.setp("lt", x, h(0.0)))
    F.sel(dst, h(-np.inf), F.setp("eq", x, h(0.0)))
    F.sel(dst, h(at_inf), F.setp("eq", x, h(np.inf)))
    F.sel(dst, x, F.setp("nan", x, x))


def emit_log(k, dst, x):
    F = _F(k)
    dk, f, hfsq, sR = _log_core(F, x)
    # dk*ln2_hi - ((hfsq - (s*(hfsq+R) + dk*ln2_lo)) - f)
    u = F.sub(F.sub(hfsq, F.add(sR, F.mul(dk, h(LN2_LO)))), f)
    k.i("sub.rn.f32", dst, F.mul(dk, h(LN2_HI)), u)
    _log_specials(F, dst, x)


def _logm(F, f, hfsq, sR):
    return F.sub(f, F.sub(hfsq, sR))


def emit_log2(k, dst, x):
    F = _F(k)
    dk, f, hfsq, sR = _log_core(F, x)
    k.i("fma.rn.f32", dst, _logm(F, f, hfsq, sR), h(INV_LN2), dk)
    _log_specials(F, dst, x)


def emit_log10(k, dst, x):
    F = _F(k)
    dk, f, hfsq, sR = _log_core(F, x)
    lo = F.fma(_logm(F, f, hfsq, sR), h(INV_LN10), F.mul(dk, h(LOG10_2_LO)))
    k.i("fma.rn.f32", dst, dk, h(LOG10_2_HI), lo)
    _log_specials(F, dst, x)


def emit_log1p(k, dst, x):
    """Goldberg: u = 1 + x; x where u == 1, else log(u) * x / (u - 1)."""
    F = _F(k)
    u = F.add(x, h(1.0))
    lu = F.r()
    emit_log(k, lu, u)
    q = F.div(lu, F.sub(u, h(1.0)))
    k.i("mul.rn.f32", dst, q, x)
    F.sel(dst, x, F.setp("eq", u, h(1.0)))
    F.sel(dst, h(np.inf), F.setp("eq", x, h(np.inf)))


def emit_expm1(k, dst, x):
    """Kahan: u = exp(x); x where u == 1, -1 where u - 1 == -1, else
    (u - 1) * (x / log(u)) (the rounding errors of u cancel)."""
    F = _F(k)
    u = F.r()
    emit_exp(k, u, x)
    d = F.sub(u, h(1.0))
    lu = F.r()
    emit_log(k, lu, u)
    k.i("mul.rn.f32", dst, d, F.div(x, lu))  # x / log(u) ~ 1 first: (u - 1) * x overflows near x = 88
    F.sel(dst, x, F.setp("eq", u, h(1.0)))
    F.sel(dst, h(-1.0), F.setp("eq", d, h(-1.0)))
    F.sel(dst, h(np.inf), F.setp("eq", u, h(np.inf)))


TANH_P = tuple(np.float32(c) for c in (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
                                        -3.33332819422e-1))


def emit_tanh(k, dst, x):
    """tanh |x| = e / (e + 2), e = expm1(2|x|), for |x| >= 0.625; below,
    cephes' tanhf polynomial |x| + |x| z P(z), z = x^2; 1 beyond 9 (tanh 9
    rounds to 1 in float32); x's sign."""
    F = _F(k)
    a = F.op("abs.f32", x)
    e = F.r()
    emit_expm1(k, e, F.add(a, a))
    t = F.div(e, F.add(e, h(2.0)))
    z = F.mul(a, a)
    q = F.op("mov.f32", h(TANH_P[0]))
    for c in TANH_P[1:]:
        q = F.fma(q, z, h(c))
    small = F.fma(F.mul(q, z), a, a)
    F.sel(t, small, F.setp("lt", a, h(0.625)))
    F.sel(t, h(1.0), F.setp("gt", a, h(9.0)))
    k.i("copysign.f32", dst, x, t)


# erf: fdlibm's s_erff.c (Sun Microsystems, 1993) coefficients: rational approximations on
# [0, 0.84375), [0.84375, 1.25), and of erfc on [1.25, 1/0.35), [1/0.35, 6)
_E = {k: tuple(np.float32(c) for c in v) for k, v in dict(
    pp=(1.2837916613e-01, -3.2504209876e-01, -2.8481749818e-02, -5.7702702470e-03, -2.3763017452e-05),
    qq=(1.0, 3.9791721106e-01, 6.5022252500e-02, 5.0813062117e-03, 1.3249473704e-04, -3.9602282413e-06),
    pa=(-2.3621185683e-03, 4.1485610604e-01, -3.7220788002e-01, 3.1834661961e-01, -1.1089469492e-01,
        3.5478305072e-02, -2.1663755178e-03),
    qa=(1.0, 1.0642088205e-01, 5.4039794207e-01, 7.1828655899e-02, 1.2617121637e-01, 1.3637083583e-02,
        1.1984500103e-02),
    ra=(-9.8649440333e-03, -6.9385856390e-01, -1.0558626175e+01, -6.2375331879e+01, -1.6239666748e+02,
        -1.8460508728e+02, -8.1287437439e+01, -9.8143291473e+00),
    sa=(1.0, 1.9651271820e+01, 1.3765776062e+02, 4.3456588745e+02, 6.4538726807e+02, 4.2900814819e+02,
        1.0863500214e+02, 6.5702495575e+00, -6.0424413532e-02),
    rb=(-9.8649431020e-03, -7.9928326607e-01, -1.7757955551e+01, -1.6063638306e+02, -6.3756646729e+02,
        -1.0250950928e+03, -4.8351919556e+02),
    sb=(1.0, 3.0338060379e+01, 3.2579251099e+02, 1.5367296143e+03, 3.1998581543e+03, 2.5530502930e+03,
        4.7452853394e+02, -2.2440952301e+01),
).items()}
_E["erx"] = np.float32(8.4506291151e-01)
_E["efx8"] = np.float32(1.0270333290e+00)
ERF_ERFC_SPLIT = np.uint32(0x4036DB6D).view(np.float32)   # about 1/0.35


def _horner(F, s, coeffs):
    """c0 + s*(c1 + s*(c2 + ...)) with separate roundings (as C evaluates it)."""
    acc = F.op("mov.f32", h(coeffs[-1]))
    for c in reversed(coeffs[:-1]):
        acc = F.add(F.mul(s, acc), h(c))
    return acc


def emit_erf(k, dst, x):
    """fdlibm's erff, every range computed and the right one selected (no
    branches): |x| < 2^-28: x + x·(efx8 - 1) as 0.125·(8x + efx8·x);
    < 0.84375: x + x·P(x²)/Q(x²); < 1.25: erx + P(s)/Q(s), s = |x| - 1;
    < 6: 1 - exp(-z² - 0.5625)·exp((z - |x|)(z + |x|) + R/S)/|x| (z: |x|
    with its low 13 bits cleared, R/S rational in 1/x²); else 1; x's sign."""
    F = _F(k)
    E = _E
    a = F.op("abs.f32", x)
    # [0, 0.84375)
    z = F.mul(x, x)
    y = F.div(_horner(F, z, E["pp"]), _horner(F, z, E["qq"]))
    small = F.add(x, F.mul(x, y))
    tiny = F.mul(F.add(F.mul(x, h(8.0)), F.mul(x, h(E["efx8"]))), h(0.125))
    # [0.84375, 1.25)
    s1 = F.sub(a, h(1.0))
    pq = F.div(_horner(F, s1, E["pa"]), _horner(F, s1, E["qa"]))
    mid = F.sub(h(1.0), F.sub(F.sub(h(1.0), h(E["erx"])), pq))
    # [1.25, 6)
    s = F.div(h(1.0), F.mul(a, a))
    near = F.setp("lt", a, h(ERF_ERFC_SPLIT))
    R = _horner(F, s, E["rb"])
    S = _horner(F, s, E["sb"])
    F.sel(R, _horner(F, s, E["ra"]), near)
    F.sel(S, _horner(F, s, E["sa"]), near)
    zb = F.op("mov.b32", a, cls="r")
    k.i("and.b32", zb, zb, "-8192")                       # 0xffffe000
    zz = F.op("mov.b32", zb)
    e1, e2 = F.r(), F.r()
    emit_exp(k, e1, F.sub(F.mul(F.op("neg.f32", zz), zz), h(0.5625)))
    emit_exp(k, e2, F.add(F.mul(F.sub(zz, a), F.add(zz, a)), F.div(R, S)))
    tail = F.sub(h(1.0), F.div(F.mul(e1, e2), a))
    # select by range (every comparison is false for NaN: handled last)
    r = F.op("mov.f32", h(1.0))
    F.sel(r, tail, F.setp("lt", a, h(6.0)))
    F.sel(r, mid, F.setp("lt", a, h(1.25)))
    k.i("copysign.f32", r, x, r)
    F.sel(r, small, F.setp("lt", a, h(0.84375)))
    F.sel(r, tiny, F.setp("lt", a, h(np.float32(2.0 ** -28))))
    F.sel(r, x, F.setp("nan", x, x))
    k.i("mov.f32", dst, r)


# sin, cos: x (2/pi) mod 4 from the bits of 2/pi, in float64, for every float32 x (Payne-Hanek without a
# table lookup: ten 24-bit chunks of 2/pi, each product with x's 24-bit significand exact in float64)


def _pi_fixed(bits: int) -> int:
    """floor(pi 2^bits) within one unit (Machin's formula in fixed point, 64 guard bits)."""
    one = 1 << (bits + 64)

    def atan_inv(k):  # atan(1/k) * 2^(bits + 64)
        total, term, i, sign = 0, one // k, 1, 1
        while term:
            total += sign * term // i
            term //= k * k
            i += 2
            sign = -sign
        return total

    return (16 * atan_inv(5) - 4 * atan_inv(239)) >> 64


def _two_over_pi_chunks(n=10):
    """The first 24n bits of 2/pi after the binary point, as n 24-bit integers."""
    bits = 24 * n + 64
    one = 1 << bits
    frac = (2 * one * one // _pi_fixed(bits)) % one   # 2/pi's fraction (2/pi < 1) in `bits` bits
    top = frac >> 64                                  # 24n bits
    return tuple((top >> (24 * (n - 1 - k))) & 0xFFFFFF for k in range(n))


TWO_OVER_PI_CHUNKS = _two_over_pi_chunks()
PIO2_HI = float(np.pi / 2)
PIO2_LO = 6.123233995736766e-17                    # pi/2 - PIO2_HI
SIN_P = (-0.16666666666629074, 0.008333333324699141, -0.00019841263470001672, 2.755527705840904e-06,
         -2.4755508189313798e-08)                  # sin y = y + y z P(z), z = y^2, |y| <= pi/4: 7e-15 relative
COS_P = (-0.49999999999468697, 0.041666666547839445, -0.0013888880293271328, 2.479887443483326e-05,
         -2.716810099441091e-07)                   # cos y = 1 + z P(z): 1e-13 relative


def d(x) -> str:
    from tfc.backends.cuda.ptx import f64_hex
    return f64_hex(float(x))


def _reduce_pio2(F, a):
    """|x| = a (float32) as (q, y): a = q pi/2 + y (q mod 4, |y| <= pi/4 in
    float64 with ~2^-53 relative error; exact integer work, a double-double
    sum)."""
    k = F.k
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    bits = F.op("mov.b32", a, cls="r")
    ex = F.op("shr.u32", bits, "23", cls="r")
    man = F.op("and.b32", bits, "8388607", cls="r")
    sub = F.op("setp.eq.s32", ex, "0", cls="p")
    m = F.op("or.b32", man, "8388608", cls="r")
    k.i("mov.u32", m, man, pred=sub)
    e = F.op("sub.s32", ex, "150", cls="r")
    k.i("mov.u32", e, "-149", pred=sub)
    mf = D("cvt.rn.f64.u32", m)
    e64 = F.op("cvt.s64.s32", e, cls="rd")
    isum = D("mov.f64", d(0.0))
    hi = D("mov.f64", d(0.0))
    lo = D("mov.f64", d(0.0))
    for j, c in enumerate(TWO_OVER_PI_CHUNKS):
        sb = F.op("add.s64", e64, str(1023 - 24 * (j + 1)), cls="rd")
        k.i("shl.b64", sb, sb, "52")
        scale = D("mov.b64", sb)
        t = D("mul.rn.f64", D("mul.rn.f64", mf, d(c)), scale)        # exact: 48 bits, a power of two
        q4 = D("cvt.rmi.f64.f64", D("mul.rn.f64", t, d(0.25)))
        r = D("fma.rn.f64", q4, d(-4.0), t)                           # t mod 4, exact
        ip = D("cvt.rmi.f64.f64", r)
        fp = D("sub.rn.f64", r, ip)                                    # exact
        k.i("add.rn.f64", isum, isum, ip)
        # (hi, lo) += fp: TwoSum
        s_ = D("add.rn.f64", hi, fp)
        bb = D("sub.rn.f64", s_, hi)
        err = D("add.rn.f64", D("sub.rn.f64", hi, D("sub.rn.f64", s_, bb)), D("sub.rn.f64", fp, bb))
        k.i("mov.f64", hi, s_)
        k.i("add.rn.f64", lo, lo, err)
    jn = D("cvt.rni.f64.f64", D("add.rn.f64", isum, hi))
    dd = D("sub.rn.f64", isum, jn)                                     # exact small integer
    rh = D("add.rn.f64", dd, hi)
    bb = D("sub.rn.f64", rh, dd)
    rl = D("add.rn.f64", D("add.rn.f64", D("sub.rn.f64", dd, D("sub.rn.f64", rh, bb)), D("sub.rn.f64", hi, bb)), lo)
    y = D("fma.rn.f64", rh, d(PIO2_HI), D("fma.rn.f64", rh, d(PIO2_LO), D("mul.rn.f64", rl, d(PIO2_HI))))
    q = F.op("cvt.rzi.s32.f64", jn, cls="r")
    return q, y


def emit_tan(k, dst, x):
    """tan x: the reduction of sin and cos, sin y / cos y in an even quadrant,
    -cos y / sin y in an odd one (float64, rounded once), negated for a
    negative x."""
    F = _F(k)
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    a = F.op("abs.f32", x)
    q, y = _reduce_pio2(F, a)
    sn, cs = _sin_cos_reduced(F, y)
    v = D("div.rn.f64", sn, cs)
    odd = F.op("and.b32", q, "1", cls="r")
    use_cot = F.op("setp.ne.s32", odd, "0", cls="p")
    w = D("div.rn.f64", cs, sn)
    k.i("neg.f64", v, w, pred=use_cot)
    k.i("neg.f64", v, v, pred=_sign_bit(F, x))
    _round_to_f32(F, dst, v, a)


def _sin_cos_reduced(F, y):
    """(sin y, cos y) in float64 for |y| <= pi/4 (``_reduce_pio2``'s y): the
    SIN_P and COS_P polynomials of z = y^2."""
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    z = D("mul.rn.f64", y, y)

    def poly(cs):
        acc = D("mov.f64", d(cs[-1]))
        for c in reversed(cs[:-1]):
            acc = D("fma.rn.f64", acc, z, d(c))
        return acc
    sn = D("fma.rn.f64", D("mul.rn.f64", y, z), poly(SIN_P), y)
    cs = D("fma.rn.f64", z, poly(COS_P), d(1.0))
    return sn, cs


def _sign_bit(F, x):
    """A predicate: float32 ``x``'s sign bit is set (true for -0 too)."""
    sg = F.op("mov.b32", x, cls="r")
    F.k.i("and.b32", sg, sg, "-2147483648")
    return F.op("setp.ne.u32", sg, "0", cls="p")


def _round_to_f32(F, dst, v, a):
    """dst = float64 ``v`` rounded once to float32, NaN where |x| = ``a`` is inf or NaN."""
    r = F.op("cvt.rn.f32.f64", v)
    F.sel(r, h(np.nan), F.setp("gtu", a, h(np.float32(3.4028234663852886e38))))
    F.k.i("mov.f32", dst, r)


def _sincos(k, dst, x, cos: bool):
    F = _F(k)
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    a = F.op("abs.f32", x)
    q, y = _reduce_pio2(F, a)
    if cos:  # cos a = sin(a + pi/2)
        k.i("add.s32", q, q, "1")
    sn, cs = _sin_cos_reduced(F, y)
    odd = F.op("and.b32", q, "1", cls="r")
    use_cos = F.op("setp.ne.s32", odd, "0", cls="p")
    v = D("selp.f64", cs, sn, use_cos)
    neg = F.op("and.b32", q, "2", cls="r")
    flip = F.op("setp.ne.s32", neg, "0", cls="p")
    if not cos:  # sin is odd: sin(-a) = -sin(a) (x's sign bit, so sin(-0) = -0)
        k.i("xor.pred", flip, flip, _sign_bit(F, x))
    k.i("neg.f64", v, v, pred=flip)
    _round_to_f32(F, dst, v, a)


def emit_sin(k, dst, x):
    """sin x: |x| = q pi/2 + y by ``_reduce_pio2`` (every float32 input), a
    float64 polynomial of y by quadrant, negated for a negative x, rounded
    once to float32."""
    _sincos(k, dst, x, cos=False)


def emit_cos(k, dst, x):
    _sincos(k, dst, x, cos=True)


LOG_SERIES = tuple(1.0 / (2 * i + 1) for i in range(11))     # 2 atanh(s) = 2s (1 + s^2/3 + s^4/5 + ...)
EXP2_SERIES = tuple(float(np.log(2.0)) ** i / float(np.prod(np.arange(1, i + 1))) for i in range(11))


def _log2_f64(F, a):
    """log2 a in float64 (a a positive finite float32, subnormals included) to
    about 2^-50 relative: a = 2^k m, m in [sqrt(2)/2, sqrt(2)) from a's bits,
    log m = 2 atanh(s), s = (m - 1)/(m + 1), a series of 11 terms."""
    k = F.k
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    tiny = F.setp("lt", a, h(np.float32(2.0 ** -126)))
    xs = F.op("mov.f32", a)
    k.i("mul.rn.f32", xs, a, h(np.float32(2.0 ** 25)), pred=tiny)
    k0 = F.op("selp.b32", "-25", "0", tiny, cls="r")
    bits = F.op("mov.b32", xs, cls="r")
    ix = F.op("and.b32", bits, "8388607", cls="r")
    i = F.op("add.s32", ix, "4913952", cls="r")
    k.i("and.b32", i, i, "8388608")
    mb = F.op("xor.b32", i, "1065353216", cls="r")
    k.i("or.b32", mb, mb, ix)
    m = D("cvt.f64.f32", F.op("mov.b32", mb))
    ki = F.op("shr.u32", bits, "23", cls="r")
    k.i("sub.s32", ki, ki, "127")
    i23 = F.op("shr.u32", i, "23", cls="r")
    k.i("add.s32", ki, ki, i23)
    k.i("add.s32", ki, ki, k0)
    dk = D("cvt.rn.f64.s32", ki)
    s = D("div.rn.f64", D("sub.rn.f64", m, d(1.0)), D("add.rn.f64", m, d(1.0)))
    z = D("mul.rn.f64", s, s)
    acc = D("mov.f64", d(LOG_SERIES[-1]))
    for c in reversed(LOG_SERIES[:-1]):
        acc = D("fma.rn.f64", acc, z, d(c))
    lnm = D("mul.rn.f64", D("add.rn.f64", s, s), acc)
    return D("fma.rn.f64", lnm, d(1.0 / np.log(2.0)), dk)


def emit_powf(k, dst, x, y):
    """x^y as C's powf (numpy's float32 power): |x|^y = 2^(y log2|x|) with
    log2 and 2^f in float64 (about 2^-45 relative before the one rounding to
    float32), negated for a negative x and an odd integer y, NaN for a
    negative x and a non-integer y; C99's special cases (x or y 0, 1, +-inf,
    NaN) selected last."""
    F = _F(k)
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    ax = F.op("abs.f32", x)
    ay = F.op("abs.f32", y)
    # y's kind: integer, odd integer (f32 integers of 2^24 and more are even)
    yt = F.op("cvt.rzi.f32.f32", y)
    is_int = F.setp("eq", yt, y)
    small = F.setp("lt", ay, h(np.float32(2.0 ** 24)))
    yi = F.op("cvt.rzi.s32.f32", y, cls="r")
    k.i("and.b32", yi, yi, "1")
    odd = F.op("setp.ne.s32", yi, "0", cls="p")
    k.i("and.pred", odd, odd, is_int)
    k.i("and.pred", odd, odd, small)
    negate = F.op("and.pred", odd, _sign_bit(F, x), cls="p")
    # the general case: 2^t, t = y log2|x| clamped to [-400, 400], in float64
    t = D("mul.rn.f64", D("cvt.f64.f32", y), _log2_f64(F, ax))
    k.i("max.f64", t, t, d(-400.0))
    k.i("min.f64", t, t, d(400.0))
    n = D("cvt.rni.f64.f64", t)
    f = D("sub.rn.f64", t, n)
    acc = D("mov.f64", d(EXP2_SERIES[-1]))
    for c in reversed(EXP2_SERIES[:-1]):
        acc = D("fma.rn.f64", acc, f, d(c))
    ni = F.op("cvt.rzi.s32.f64", n, cls="r")
    sb = F.op("cvt.s64.s32", ni, cls="rd")
    k.i("add.s64", sb, sb, "1023")
    k.i("shl.b64", sb, sb, "52")
    v = D("mul.rn.f64", acc, D("mov.b64", sb))
    k.i("neg.f64", v, v, pred=negate)
    r = F.op("cvt.rn.f32.f64", v)
    _pow_specials(F, "f32", r, x, y, ax, ay, is_int, negate)
    k.i("mov.f32", dst, r)


def _pow_specials(F, t, r, x, y, ax, ay, is_int, negate):
    """C99's special cases of pow into ``r`` (registers of type ``t``, f32 or
    f64): NaN for a negative finite x and a non-integer y; x = +-0 or +-inf;
    y = +-inf; NaN operands; x^0 = 1 and 1^y = 1 last."""
    k = F.k
    c = h if t == "f32" else d

    def setp(cmp, a, b):
        return F.op(f"setp.{cmp}.{t}", a, b, cls="p")

    def sel(value, p):
        k.i(f"mov.{t}", r, value, pred=p)
    # a negative finite x with a non-integer y
    bad = setp("lt", x, c(0.0))
    nint = F.op("not.pred", is_int, cls="p")
    k.i("and.pred", bad, bad, nint)
    sel(c(np.nan), bad)
    # x = +-0 or +-inf: 0 or inf by y's sign, negative for a negative x and an odd y
    zero_x = setp("eq", ax, c(0.0))
    inf_x = setp("eq", ax, c(np.inf))
    yneg = setp("lt", y, c(0.0))
    small_e = F.op("xor.pred", zero_x, yneg, cls="p")        # 0^pos, inf^neg: 0; 0^neg, inf^pos: inf
    e = F.op(f"selp.{t}", c(0.0), c(np.inf), small_e, cls="f" if t == "f32" else "fd")
    eneg = F.op(f"neg.{t}", e, cls="f" if t == "f32" else "fd")
    k.i(f"mov.{t}", e, eneg, pred=negate)
    edge = F.op("or.pred", zero_x, inf_x, cls="p")
    sel(e, edge)
    # y = +-inf: 1 for |x| = 1, else 0 or inf by |x| < 1 and y's sign
    inf_y = setp("eq", ay, c(np.inf))
    lt1 = setp("lt", ax, c(1.0))
    shrink = F.op("xor.pred", lt1, yneg, cls="p")            # |x| < 1 with +inf, |x| > 1 with -inf: 0
    g = F.op(f"selp.{t}", c(0.0), c(np.inf), shrink, cls="f" if t == "f32" else "fd")
    one_x = setp("eq", ax, c(1.0))
    k.i(f"mov.{t}", g, c(1.0), pred=one_x)
    sel(g, inf_y)
    # NaN in, NaN out; but x^0 = 1 and 1^y = 1 for every x, y
    sel(c(np.nan), setp("nan", x, y))
    sel(c(1.0), setp("eq", ay, c(0.0)))
    sel(c(1.0), setp("eq", x, c(1.0)))


# float64 exp: x = k ln2 + r (Cody-Waite: ln2 in two parts, k ln2_hi exact for |k| < 2^11), exp(r) by
# its Taylor series to r^13 (|r| <= ln2 / 2: the remainder is below 2^-57 relative), Horner with fma,
# then 2^k as two exact power-of-two factors so that a subnormal result rounds once.
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
_EXP64_TAYLOR = [1.0 / math.factorial(n) for n in range(14)]


def _pow2_64(F, D, kf, res):
    """res * 2^kf for a float64 integer kf (clamped to [-1100, 1100]; NaN: 0) as
    two exact power-of-two factors, so that a subnormal result rounds once."""
    kc = D("min.f64", D("max.f64", kf, d(-1100.0)), d(1100.0))  # NaN: max/min give the other operand
    ki = F.op("cvt.rzi.s32.f64", kc, cls="r")
    k1 = F.op("shr.s32", ki, "1", cls="r")                      # floor(k / 2): both halves in [-550, 550]
    k2 = F.op("sub.s32", ki, k1, cls="r")
    for half in (k1, k2):
        e = F.op("add.s32", half, "1023", cls="r")
        bits = F.op("shl.b64", F.op("cvt.s64.s32", e, cls="rd"), "52", cls="rd")
        res = D("mul.rn.f64", res, D("mov.b64", bits))
    return res


def _reduce_ln2(F, D, x):
    """(kf, r): x = kf ln2 + r, kf = rint(x / ln2), |r| <= ln2 / 2 (Cody-Waite)."""
    kf = D("cvt.rni.f64.f64", D("mul.rn.f64", x, d(1.4426950408889634)))
    nk = D("neg.f64", kf)
    r = D("fma.rn.f64", nk, d(_LN2_HI), x)
    return kf, D("fma.rn.f64", nk, d(_LN2_LO), r)


def _series(F, D, r, coeffs):
    """sum(c_n r^n) in Horner form with fma (coeffs from degree 0)."""
    p = D("mov.f64", d(coeffs[-1]))
    for c in reversed(coeffs[:-1]):
        F.k.i("fma.rn.f64", p, p, r, d(c))
    return p


def emit_exp64(k, dst, x):
    """exp of a float64 ``x`` into ``dst`` (``%fd`` registers)."""
    F = _F(k)
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    kf, r = _reduce_ln2(F, D, x)
    k.i("mov.f64", dst, _pow2_64(F, D, kf, _series(F, D, r, _EXP64_TAYLOR)))
    k.i("mov.f64", dst, d(np.inf), pred=F.op("setp.gt.f64", x, d(709.782712893384), cls="p"))
    k.i("mov.f64", dst, d(0.0), pred=F.op("setp.lt.f64", x, d(-745.2), cls="p"))


def _expm1_64(F, D, x):
    """expm1 of a float64 ``x`` (a fresh register): with x = k ln2 + r, expm1(r)
    from its Taylor series (no cancellation), then 2^k (expm1(r) + (1 - 2^-k))
    with 1 - 2^-k exact for |k| <= 53 and one rounding in the sum; |x| > 40:
    exp(x), or -1; +-0 and NaN as they are."""
    kf, r = _reduce_ln2(F, D, x)
    em1 = D("mul.rn.f64", r, _series(F, D, r, _EXP64_TAYLOR[1:]))   # r (1 + r/2 + ...)
    ks = D("min.f64", D("max.f64", kf, d(-60.0)), d(60.0))
    one_minus = D("sub.rn.f64", d(1.0), _pow2_64(F, D, D("neg.f64", ks), D("mov.f64", d(1.0))))
    res = _pow2_64(F, D, ks, D("add.rn.f64", em1, one_minus))
    small = F.op("setp.lt.f64", D("abs.f64", x), d(0.34657359027997264), cls="p")   # ln2 / 2: k = 0
    F.k.i("mov.f64", res, em1, pred=small)
    F.k.i("mov.f64", res, x, pred=F.op("setp.eq.f64", x, d(0.0), cls="p"))          # keeps -0
    return res, kf, r


def emit_expm1_64(k, dst, x):
    F = _F(k)
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    res, kf, r = _expm1_64(F, D, x)
    k.i("mov.f64", dst, res)
    over = F.op("setp.gt.f64", x, d(40.0), cls="p")
    k.i("mov.f64", dst, _pow2_64(F, D, kf, _series(F, D, r, _EXP64_TAYLOR)), pred=over)
    k.i("mov.f64", dst, d(np.inf), pred=F.op("setp.gt.f64", x, d(709.782712893384), cls="p"))
    k.i("mov.f64", dst, d(-1.0), pred=F.op("setp.lt.f64", x, d(-40.0), cls="p"))


def emit_tanh64(k, dst, x):
    """fdlibm's tanh: |x| < 1: -t / (t + 2) with t = expm1(-2|x|); |x| >= 1:
    1 - 2 / (expm1(2|x|) + 2); |x| >= 22: 1; the sign of x; +-0 and NaN as they are."""
    F = _F(k)
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    a = D("abs.f64", x)
    lt1 = F.op("setp.lt.f64", a, d(1.0), cls="p")
    arg = D("mul.rn.f64", a, d(2.0))
    k.i("neg.f64", arg, arg, pred=lt1)
    t, _, _ = _expm1_64(F, D, D("min.f64", arg, d(60.0)))
    z_big = D("sub.rn.f64", d(1.0), D("div.rn.f64", d(2.0), D("add.rn.f64", t, d(2.0))))
    z_small = D("div.rn.f64", D("neg.f64", t), D("add.rn.f64", t, d(2.0)))
    z = D("mov.f64", z_big)
    k.i("mov.f64", z, z_small, pred=lt1)
    k.i("mov.f64", z, d(1.0), pred=F.op("setp.ge.f64", a, d(22.0), cls="p"))
    k.i("copysign.f64", dst, x, z)                                   # z's magnitude, x's sign
    k.i("mov.f64", dst, x, pred=F.op("setp.eq.f64", x, d(0.0), cls="p"))
    k.i("mov.f64", dst, x, pred=F.op("testp.notanumber.f64", x, cls="p"))


EMITTERS = {
    "math.exp": emit_exp, "math.exp2": emit_exp2, "math.log": emit_log, "math.log2": emit_log2,
    "math.log10": emit_log10, "math.log1p": emit_log1p, "math.expm1": emit_expm1, "math.tanh": emit_tanh,
    "math.erf": emit_erf, "math.sin": emit_sin, "math.cos": emit_cos, "math.powf": emit_powf,
    "math.tan": emit_tan,
}


# float64 log (fdlibm's e_log.c method): x = 2^e m with m in [sqrt(2)/2, sqrt(2)), f = m - 1 (exact),
# s = f / (2 + f), log(1 + f) = f - (hfsq - s (hfsq + R(s^2))) with hfsq = f^2 / 2 and R fdlibm's
# degree-7 polynomial in s^2; e ln2 added in two parts.
_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01, 2.222219843214978396e-01,
       1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01)


def emit_log64(k, dst, x):
    """log of a float64 ``x`` into ``dst``: NaN below 0 (and for NaN), -inf at +-0, +inf at +inf."""
    F = _F(k)
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    sub = F.op("setp.lt.f64", x, d(2.0 ** -1022), cls="p")
    xs = D("mov.f64", x)
    k.i("mul.rn.f64", xs, x, d(2.0 ** 54), pred=sub)             # subnormals: exact scaling
    bits = F.op("mov.b64", xs, cls="rd")
    ex = F.op("cvt.u32.u64", F.op("shr.u64", bits, "52", cls="rd"), cls="r")
    e = F.op("sub.s32", ex, "1023", cls="r")
    k.i("sub.s32", e, e, "54", pred=sub)
    mbits = F.op("or.b64", F.op("and.b64", bits, "0x000FFFFFFFFFFFFF", cls="rd"), "0x3FF0000000000000", cls="rd")
    m = D("mov.b64", mbits)                                       # [1, 2)
    big = F.op("setp.gt.f64", m, d(math.sqrt(2.0)), cls="p")
    k.i("mul.rn.f64", m, m, d(0.5), pred=big)                     # [sqrt(2)/2, sqrt(2)), exact
    k.i("add.s32", e, e, "1", pred=big)
    f = D("sub.rn.f64", m, d(1.0))                                # exact (Sterbenz)
    hfsq = D("mul.rn.f64", D("mul.rn.f64", f, f), d(0.5))
    s = D("div.rn.f64", f, D("add.rn.f64", f, d(2.0)))
    z = D("mul.rn.f64", s, s)
    R = D("mov.f64", d(_LG[-1]))
    for c in reversed(_LG[:-1]):
        k.i("fma.rn.f64", R, R, z, d(c))
    R = D("mul.rn.f64", R, z)
    ef = D("cvt.rn.f64.s32", e)
    t = D("mul.rn.f64", s, D("add.rn.f64", hfsq, R))              # s (hfsq + R)
    t = D("fma.rn.f64", ef, d(_LN2_LO), t)
    t = D("sub.rn.f64", D("sub.rn.f64", hfsq, t), f)
    res = D("fma.rn.f64", ef, d(_LN2_HI), D("neg.f64", t))
    k.i("mov.f64", dst, res)
    k.i("mov.f64", dst, d(-np.inf), pred=F.op("setp.eq.f64", x, d(0.0), cls="p"))
    k.i("mov.f64", dst, d(np.inf), pred=F.op("setp.eq.f64", x, d(np.inf), cls="p"))
    k.i("mov.f64", dst, d(np.nan), pred=F.op("setp.ltu.f64", x, d(0.0), cls="p"))  # below 0 or NaN



# float64 sin and cos (FreeBSD's msun method): x = n pi/2 + (yh + yl), |yh| <= ~pi/4, then __kernel_sin and
# __kernel_cos of the double-double (yh, yl) by quadrant. The reduction: Cody-Waite with pi/2 in three
# float64 parts and fma (x - n P1 exact) for |x| < 2^20 pi/2; above, Payne-Hanek over 2/pi's bits in
# 24-bit chunks (each product with a 26- or 27-bit part of x's significand exact in float64, taken mod 4
# exactly; the fractions summed in double-double), a branch that only such lanes take.
def _pi_over_2_parts(n=3, bits=400):
    """pi/2 as ``n`` float64 parts, each the rounded rest of the ones before."""
    from fractions import Fraction

    rest = Fraction(_pi_fixed(bits), 1 << (bits + 1))
    parts = []
    for _ in range(n):
        parts.append(float(rest))
        rest -= Fraction(parts[-1])
    return tuple(parts)


TWO_OVER_PI_CHUNKS64 = _two_over_pi_chunks(49)   # 1176 bits: 2/pi as far as any float64 exponent needs
PIO2_1, PIO2_2, PIO2_3 = _pi_over_2_parts()
INV_PIO2 = 0.6366197723675814
CODY_WAITE_MAX = 2.0 ** 20 * PIO2_1               # below: the three-part reduction (|n| <= 2^20)
_PH_LOWEST = -200                                 # products whose last bit weighs less: left out (< 2^-148)
_S64 = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
        2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_C64 = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
        -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


def _two_sum(D, a, b):
    """(s, e): s = a + b rounded, e its exact error."""
    s = D("add.rn.f64", a, b)
    bb = D("sub.rn.f64", s, a)
    e = D("add.rn.f64", D("sub.rn.f64", a, D("sub.rn.f64", s, bb)), D("sub.rn.f64", b, bb))
    return s, e


def _fast_two_sum(D, a, b):
    """(s, e) for |a| >= |b|."""
    s = D("add.rn.f64", a, b)
    return s, D("sub.rn.f64", b, D("sub.rn.f64", s, a))


def _cody_waite_pio2(F, D, x):
    """(q, yh, yl) for x = q pi/2 + yh + yl, |x| < CODY_WAITE_MAX (q an s32 register)."""
    n = D("cvt.rni.f64.f64", D("mul.rn.f64", x, d(INV_PIO2)))
    t = D("fma.rn.f64", D("neg.f64", n), d(PIO2_1), x)             # exact: its bits lie on 2^-52's grid below 1
    ph = D("mul.rn.f64", n, d(PIO2_2))
    pl = D("fma.rn.f64", n, d(PIO2_2), D("neg.f64", ph))           # n P2 = ph + pl exactly
    s, e = _two_sum(D, t, D("neg.f64", ph))
    lo = D("sub.rn.f64", D("sub.rn.f64", e, pl), D("mul.rn.f64", n, d(PIO2_3)))
    yh, yl = _fast_two_sum(D, s, lo)
    return F.op("cvt.rzi.s32.f64", n, cls="r"), yh, yl


def _payne_hanek_pio2(F, D, a):
    """(q, yh, yl) for a finite a = |x| >= 2^20 pi/2: a = m 2^e with m < 2^53 in
    two parts m1 2^26 + m0; each part times each 24-bit chunk of 2/pi scaled
    by its power of two (exact), taken mod 4 (exact); the integer parts summed
    apart, the fractions in double-double. Products at or above 4 (E >= 2) are
    0 mod 4 and products below 2^-120 do not matter: their scale is 0."""
    k = F.k
    bits = F.op("mov.b64", a, cls="rd")
    ex = F.op("cvt.u32.u64", F.op("shr.u64", bits, "52", cls="rd"), cls="r")
    e = F.op("sub.s32", ex, "1075", cls="r")
    m = F.op("or.b64", F.op("and.b64", bits, "4503599627370495", cls="rd"), "4503599627370496", cls="rd")
    parts = [(D("cvt.rn.f64.u64", F.op("and.b64", m, "67108863", cls="rd")), 0),
             (D("cvt.rn.f64.u64", F.op("shr.u64", m, "26", cls="rd")), 26)]
    isum, hi, lo, lo2 = (D("mov.f64", d(0.0)) for _ in range(4))
    for j, c in enumerate(TWO_OVER_PI_CHUNKS64):
        for mf, shift in parts:
            if 971 + shift - 24 * (j + 1) < _PH_LOWEST:   # below the lowest for every exponent (971 the largest)
                continue
            E = F.op("add.s32", e, str(shift - 24 * (j + 1)), cls="r")
            sb = F.op("shl.b64", F.op("cvt.s64.s32", F.op("add.s32", E, "1023", cls="r"), cls="rd"), "52", cls="rd")
            scale = D("mov.b64", sb)
            k.i("mov.f64", scale, d(0.0), pred=F.op("setp.gt.s32", E, "1", cls="p"))
            k.i("mov.f64", scale, d(0.0), pred=F.op("setp.lt.s32", E, str(_PH_LOWEST), cls="p"))
            t = D("mul.rn.f64", D("mul.rn.f64", mf, d(c)), scale)          # exact
            q4 = D("cvt.rmi.f64.f64", D("mul.rn.f64", t, d(0.25)))
            r = D("fma.rn.f64", q4, d(-4.0), t)                            # t mod 4, exact
            # hi + r, its integer part moved to isum (hi stays in [-1/2, 1/2]); the rounding errors
            # summed in (lo, lo2): the fraction keeps ~150 bits whatever cancels later
            s_, err = _two_sum(D, hi, r)
            ih = D("cvt.rni.f64.f64", s_)
            k.i("sub.rn.f64", hi, s_, ih)
            k.i("add.rn.f64", isum, isum, ih)
            l_, e2 = _two_sum(D, lo, err)
            k.i("mov.f64", lo, l_)
            k.i("add.rn.f64", lo2, lo2, e2)
    jn = D("cvt.rni.f64.f64", D("add.rn.f64", isum, hi))
    rh, rl = _two_sum(D, D("sub.rn.f64", isum, jn), hi)
    rh, e3 = _two_sum(D, rh, lo)                     # exact: lo (up to ~2^-44) may cancel most of rh
    rh, rl = _fast_two_sum(D, rh, D("add.rn.f64", D("add.rn.f64", rl, e3), lo2))  # the fraction, |.| <= ~1/2
    yh = D("mul.rn.f64", rh, d(PIO2_1))
    yl = D("fma.rn.f64", rh, d(PIO2_1), D("neg.f64", yh))
    yl = D("add.rn.f64", yl, D("fma.rn.f64", rh, d(PIO2_2), D("mul.rn.f64", rl, d(PIO2_1))))
    yh, yl = _fast_two_sum(D, yh, yl)
    return F.op("cvt.rzi.s32.f64", jn, cls="r"), yh, yl


def _reduce_pio2_64(F, D, x):
    """(q, yh, yl): x = q pi/2 + yh + yl for every finite float64 x (inf and
    NaN: garbage, which the callers replace by NaN)."""
    k = F.k
    q, yh, yl = _cody_waite_pio2(F, D, x)
    a = D("min.f64", D("abs.f64", x), d(1.7976931348623157e308))     # inf: a finite stand-in
    skip = k.label()
    k.i("bra", skip, pred=F.op("setp.lt.f64", a, d(CODY_WAITE_MAX), cls="p"))
    qb, hb, lb = _payne_hanek_pio2(F, D, a)
    neg = F.op("setp.lt.f64", x, d(0.0), cls="p")                      # x = -(q pi/2 + y)
    k.i("sub.s32", qb, "0", qb, pred=neg)
    k.i("neg.f64", hb, hb, pred=neg)
    k.i("neg.f64", lb, lb, pred=neg)
    k.i("mov.u32", q, qb)
    k.i("mov.f64", yh, hb)
    k.i("mov.f64", yl, lb)
    k.put(skip)
    return q, yh, yl


def _kernel_sin64(D, x, y):
    """FreeBSD's __kernel_sin(x, y, 1): sin(x + y) for |x| <= ~pi/4, |y| <= ulp(x) / 2."""
    z = D("mul.rn.f64", x, x)
    w = D("mul.rn.f64", z, z)
    S1, S2, S3, S4, S5, S6 = (d(c) for c in _S64)
    r = D("add.rn.f64", D("add.rn.f64", S2, D("mul.rn.f64", z, D("add.rn.f64", S3, D("mul.rn.f64", z, S4)))),
          D("mul.rn.f64", D("mul.rn.f64", z, w), D("add.rn.f64", S5, D("mul.rn.f64", z, S6))))
    v = D("mul.rn.f64", z, x)
    inner = D("sub.rn.f64", D("mul.rn.f64", d(0.5), y), D("mul.rn.f64", v, r))      # y/2 - v r
    t = D("sub.rn.f64", D("sub.rn.f64", D("mul.rn.f64", z, inner), y), D("mul.rn.f64", v, S1))
    return D("sub.rn.f64", x, t)


def _kernel_cos64(D, x, y):
    """FreeBSD's __kernel_cos(x, y): cos(x + y) for |x| <= ~pi/4."""
    z = D("mul.rn.f64", x, x)
    w = D("mul.rn.f64", z, z)
    C1, C2, C3, C4, C5, C6 = (d(c) for c in _C64)
    r = D("add.rn.f64",
          D("mul.rn.f64", z, D("add.rn.f64", C1, D("mul.rn.f64", z, D("add.rn.f64", C2, D("mul.rn.f64", z, C3))))),
          D("mul.rn.f64", D("mul.rn.f64", w, w), D("add.rn.f64", C4, D("mul.rn.f64", z,
                                                                            D("add.rn.f64", C5, D("mul.rn.f64", z, C6))))))
    hz = D("mul.rn.f64", d(0.5), z)
    w = D("sub.rn.f64", d(1.0), hz)
    tail = D("add.rn.f64", D("sub.rn.f64", D("sub.rn.f64", d(1.0), w), hz),
             D("sub.rn.f64", D("mul.rn.f64", z, r), D("mul.rn.f64", x, y)))
    return D("add.rn.f64", w, tail)


def _sincos64(k, dst, x, cos: bool):
    F = _F(k)
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    q, yh, yl = _reduce_pio2_64(F, D, x)
    if cos:  # cos x = sin(x + pi/2)
        k.i("add.s32", q, q, "1")
    sn, cs = _kernel_sin64(D, yh, yl), _kernel_cos64(D, yh, yl)
    v = D("selp.f64", cs, sn, F.op("setp.ne.s32", F.op("and.b32", q, "1", cls="r"), "0", cls="p"))
    k.i("neg.f64", v, v, pred=F.op("setp.ne.s32", F.op("and.b32", q, "2", cls="r"), "0", cls="p"))
    tiny = F.op("setp.lt.f64", D("abs.f64", x), d(2.0 ** -27), cls="p")
    k.i("mov.f64", v, d(1.0) if cos else x, pred=tiny)                 # sin keeps x (and -0), cos is 1
    k.i("mov.f64", v, d(np.nan), pred=F.op("setp.gtu.f64", D("abs.f64", x), d(1.7976931348623157e308), cls="p"))
    k.i("mov.f64", dst, v)


def emit_sin64(k, dst, x):
    """sin of a float64 ``x``: ``_reduce_pio2_64`` then FreeBSD's kernels by quadrant."""
    _sincos64(k, dst, x, cos=False)


def emit_cos64(k, dst, x):
    _sincos64(k, dst, x, cos=True)


# float64 pow: |x|^y = e^(y ln|x|) with ln|x| and the product in double-double (about 2^-100
# relative), then exp of the double-double as exp's: t = n ln2 + r, its Taylor series, 2^n.
def _dd_mul(D, a, b):
    """Double-double product (ah + al)(bh + bl)."""
    p = D("mul.rn.f64", a[0], b[0])
    e = D("fma.rn.f64", a[0], b[0], D("neg.f64", p))
    e = D("fma.rn.f64", a[0], b[1], D("fma.rn.f64", a[1], b[0], e))
    return _fast_two_sum(D, p, e)


def _dd_add(D, a, b):
    s_, e = _two_sum(D, a[0], b[0])
    return _fast_two_sum(D, s_, D("add.rn.f64", e, D("add.rn.f64", a[1], b[1])))


def _dd_const(x) -> tuple:
    """A rational constant (a Fraction) as two float64 literals."""
    from fractions import Fraction

    hi = float(x)
    return d(hi), d(float(Fraction(x) - Fraction(hi)))


def _ln_dd(F, D, a):
    """ln a for a positive finite float64 a (subnormals scaled by 2^54) as a
    double-double: a = 2^e m, m in [sqrt(2)/2, sqrt(2)); s = (m - 1)/(m + 1)
    in double-double; ln m = 2s (1 + u Q(u)), u = s^2, Q = sum u^k / (2k + 3):
    its first four coefficients in double-double, the rest (below 2^-20) in
    float64; then e ln2 added."""
    from fractions import Fraction

    k = F.k
    tiny = F.op("setp.lt.f64", a, d(2.0 ** -1022), cls="p")
    xs = D("mov.f64", a)
    k.i("mul.rn.f64", xs, a, d(2.0 ** 54), pred=tiny)
    bits = F.op("mov.b64", xs, cls="rd")
    e = F.op("cvt.u32.u64", F.op("shr.u64", bits, "52", cls="rd"), cls="r")
    k.i("sub.s32", e, e, "1023")
    k.i("sub.s32", e, e, "54", pred=tiny)
    m = D("mov.b64", F.op("or.b64", F.op("and.b64", bits, "0x000FFFFFFFFFFFFF", cls="rd"), "0x3FF0000000000000",
                          cls="rd"))
    big = F.op("setp.gt.f64", m, d(math.sqrt(2.0)), cls="p")
    k.i("mul.rn.f64", m, m, d(0.5), pred=big)
    k.i("add.s32", e, e, "1", pred=big)
    f = D("sub.rn.f64", m, d(1.0))                                   # exact
    dh, dl = _two_sum(D, m, d(1.0))
    sh = D("div.rn.f64", f, dh)
    rem = D("fma.rn.f64", D("neg.f64", sh), dh, f)                   # f - sh dh, exact
    sl = D("div.rn.f64", D("fma.rn.f64", D("neg.f64", sh), dl, rem), dh)
    s_ = _fast_two_sum(D, sh, sl)
    u = _dd_mul(D, s_, s_)
    coeffs = [Fraction(1, 2 * j + 3) for j in range(16)]
    q = D("mov.f64", d(float(coeffs[-1])))
    for c in reversed(coeffs[4:-1]):
        q = D("fma.rn.f64", q, u[0], d(float(c)))
    Q = (q, d(0.0))
    for c in reversed(coeffs[:4]):
        Q = _dd_add(D, _dd_mul(D, Q, u), _dd_const(c))
    W = _dd_add(D, _dd_mul(D, u, Q), (d(1.0), d(0.0)))
    lnm = _dd_mul(D, (D("add.rn.f64", s_[0], s_[0]), D("add.rn.f64", s_[1], s_[1])), W)
    ef = D("cvt.rn.f64.s32", e)
    ln2 = _dd_const(_LN2_FRACTION)
    return _dd_add(D, _dd_mul(D, (ef, d(0.0)), ln2), lnm)


def _ln2_fraction(bits=200):
    """ln 2 to ``bits`` bits as a Fraction (2 atanh(1/3) in fixed point)."""
    from fractions import Fraction

    one = 1 << (bits + 64)
    total, term, i = 0, one // 3, 1
    while term:
        total += term // i
        term //= 9
        i += 2
    return Fraction(2 * total, one)


_LN2_FRACTION = _ln2_fraction()


def emit_pow64(k, dst, x, y):
    """x^y as C's pow (numpy's float64 power): |x|^y = exp(t), t = y ln|x|
    in double-double (``_ln_dd``), exp as ``emit_exp64``'s with t's low part
    added to the reduced argument; negated for a negative x and an odd integer
    y; the special cases of ``_pow_specials``."""
    F = _F(k)
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    ax, ay = D("abs.f64", x), D("abs.f64", y)
    yt = D("cvt.rzi.f64.f64", y)
    is_int = F.op("setp.eq.f64", yt, y, cls="p")
    half = D("mul.rn.f64", y, d(0.5))
    odd = F.op("setp.ne.f64", D("cvt.rzi.f64.f64", half), half, cls="p")   # (integers of 2^53 and more are even)
    k.i("and.pred", odd, odd, is_int)
    sg = F.op("and.b64", F.op("mov.b64", x, cls="rd"), "0x8000000000000000", cls="rd")
    negate = F.op("and.pred", odd, F.op("setp.ne.u64", sg, "0", cls="p"), cls="p")
    a = D("min.f64", ax, d(1.7976931348623157e308))                      # inf: a finite stand-in (special)
    k.i("max.f64", a, a, d(5e-324))                                      # 0: likewise
    ln = _ln_dd(F, D, a)
    th, tl = _dd_mul(D, ln, (y, d(0.0)))
    plain = D("mul.rn.f64", ln[0], y)
    far = F.op("setp.geu.f64", D("abs.f64", plain), d(1100.0), cls="p")  # over- or underflows (or NaN)
    k.i("mov.f64", th, plain, pred=far)                                   # (the double-double: inf - inf)
    k.i("mov.f64", tl, d(0.0), pred=far)
    k.i("max.f64", th, th, d(-1100.0))                                   # (NaN: -1100; specials decide)
    k.i("min.f64", th, th, d(1100.0))
    n = D("cvt.rni.f64.f64", D("mul.rn.f64", th, d(1.4426950408889634)))
    nn = D("neg.f64", n)
    r = D("fma.rn.f64", nn, d(_LN2_HI), th)                              # exact
    r = D("add.rn.f64", D("fma.rn.f64", nn, d(_LN2_LO), r), tl)
    v = _pow2_64(F, D, n, _series(F, D, r, _EXP64_TAYLOR))
    k.i("neg.f64", v, v, pred=negate)
    _pow_specials(F, "f64", v, x, y, ax, ay, is_int, negate)
    k.i("mov.f64", dst, v)


def emit_log1p64(k, dst, x):
    """log1p of a float64 ``x``: u = 1 + x rounded, its rounding error e exact
    (TwoSum), log1p x = log u + e / u (the first-order correction; log within
    1 ulp); |x| < 2^-54: x itself (signed zeros kept); u = 0 or inf: log u."""
    F = _F(k)
    D = lambda opcode, *args: F.op(opcode, *args, cls="fd")  # noqa: E731
    u, err = _two_sum(D, d(1.0), x)
    emit_log64(k, dst, u)
    c = D("div.rn.f64", err, u)
    k.i("mov.f64", c, d(0.0), pred=F.op("setp.eq.f64", u, d(0.0), cls="p"))
    k.i("mov.f64", c, d(0.0), pred=F.op("setp.eq.f64", D("abs.f64", u), d(np.inf), cls="p"))
    k.i("add.rn.f64", dst, dst, c)
    k.i("mov.f64", dst, x, pred=F.op("setp.lt.f64", D("abs.f64", x), d(2.0 ** -54), cls="p"))


EMITTERS_F64 = {"math.exp": emit_exp64, "math.log": emit_log64, "math.expm1": emit_expm1_64,
                "math.tanh": emit_tanh64, "math.sin": emit_sin64, "math.cos": emit_cos64,
                "math.powf": emit_pow64, "math.log1p": emit_log1p64}


def emit(k, name, dst, *args):
    fn = EMITTERS.get(name)
    if fn is None:
        raise NotImplementedError(f"PTX printer: {name} (float32 {name.split('.')[1]} has no PTX sequence yet; "
                                  "implemented: " + ", ".join(sorted(EMITTERS)) + ")")
    fn(k, dst, *args)
