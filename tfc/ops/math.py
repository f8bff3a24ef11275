"""Elementwise math: one declaration per op (kernel, inference, gradient)."""
from __future__ import annotations

import numpy as np

from tfc.core import dtypes
from tfc.core.dtypes import ANY, FLOATS, NUMERIC
from tfc.core.registry import Spec, declare
from tfc.ops import _infer as inf
from tfc.ops import _scalar as S
from tfc.ops._grad import unbroadcast


# -- binary arithmetic ------------------------------------------------------------


def _add_grad(e, g):
    x, y = e.inputs
    return [unbroadcast(g, x, [y.shape]), unbroadcast(g, y, [x.shape])]


@declare(kernel=np.add, infer=inf.binary(NUMERIC), grad=_add_grad, promote=(0, 1), scalar=S.add)
def add(x, y):
    """x + y, elementwise, with NumPy broadcasting."""
    return (x, y), {}


def _sub_grad(e, g):
    x, y = e.inputs
    return [unbroadcast(g, x, [y.shape]), unbroadcast(negative(g), y, [x.shape]) if e.needs_grad(1) else None]


@declare(kernel=np.subtract, infer=inf.binary(NUMERIC), grad=_sub_grad, promote=(0, 1), scalar=S.sub)
def subtract(x, y):
    """x - y, elementwise."""
    return (x, y), {}


def _mul_grad(e, g):
    x, y = e.inputs
    if x is y and e.needs_grad(0):  # x * x: one product 2gx, not gy + gx (two full-size temporaries fewer)
        return [g * (x + x), None]
    return [
        unbroadcast(g * y, x, [y.shape]) if e.needs_grad(0) else None,
        unbroadcast(g * x, y, [x.shape]) if e.needs_grad(1) else None,
    ]


@declare(kernel=np.multiply, infer=inf.binary(NUMERIC), grad=_mul_grad, promote=(0, 1), scalar=S.mul)
def multiply(x, y):
    """x * y, elementwise."""
    return (x, y), {}


def _div_grad(e, g):
    x, y = e.inputs
    return [
        unbroadcast(g / y, x, [y.shape]) if e.needs_grad(0) else None,
        unbroadcast(negative(g) * e.outputs[0] / y, y, [x.shape]) if e.needs_grad(1) else None,
    ]


@declare(kernel=np.true_divide, infer=inf.binary_ufunc(NUMERIC, np.true_divide),
         grad=_div_grad, promote=(0, 1), quiet=True, scalar=S.true_divide)
def divide(x, y):
    """x / y (true division; integers give floats, as in NumPy)."""
    return (x, y), {}


@declare(kernel=np.floor_divide, infer=inf.binary(NUMERIC), promote=(0, 1), quiet=True, scalar=S.floordiv)
def floordiv(x, y):
    """x // y, rounding toward negative infinity (not differentiable)."""
    return (x, y), {}


def _mod_grad(e, g):
    x, y = e.inputs
    return [
        unbroadcast(g, x, [y.shape]),
        unbroadcast(negative(g) * floordiv(x, y), y, [x.shape]) if e.needs_grad(1) else None,
    ]


@declare(kernel=np.mod, infer=inf.binary(NUMERIC), grad=_mod_grad, promote=(0, 1), quiet=True, scalar=S.mod)
def mod(x, y):
    """x % y with the sign of y (Python's and TensorFlow's floormod)."""
    return (x, y), {}


def _pow_grad(e, g):
    x, y = e.inputs
    gx = gy = None
    if e.needs_grad(0):
        gx = unbroadcast(g * y * pow(x, y - 1), x, [y.shape])
    if e.needs_grad(1):
        safe = where(greater(x, 0), x, ones_like_(x))
        gy = unbroadcast(g * e.outputs[0] * log(safe), y, [x.shape])
    return [gx, gy]


def _pow_kernel(x, y):
    try:
        return np.power(x, y)
    except ValueError:  # numpy refuses negative integer exponents; say which op
        from tfc.core.errors import InvalidArgumentError

        raise InvalidArgumentError(
            f"pow: integer {x.dtype} tensor raised to a negative integer power; cast to a float dtype first"
        ) from None


@declare(kernel=_pow_kernel, infer=inf.binary(NUMERIC), grad=_pow_grad, promote=(0, 1), quiet=True, scalar=S.power)
def pow(x, y):  # noqa: A001 (TensorFlow's name)
    """x ** y, elementwise."""
    return (x, y), {}


def _by_squaring(x, n: int, mul):
    """x ** n for an int n >= 1 by binary exponentiation, with ``mul`` the
    multiplication. One fixed order of products (x**3 is x * (x*x)), shared by
    the eager kernel and the scalar body so that compiled equals eager exactly."""
    acc, base = None, x
    while True:
        if n & 1:
            acc = base if acc is None else mul(acc, base)
        n >>= 1
        if not n:
            return acc
        base = mul(base, base)


def _integer_pow_kernel(x, n):
    if n == 0:
        return np.ones_like(x)
    if n == 1:
        return x.copy()
    p = _by_squaring(x, -n if n < 0 else n, np.multiply)
    return p if n > 0 else np.true_divide(x.dtype.type(1), p)


def _integer_pow_scalar(b, x, n):
    if n == 0:
        return S.like(b, 1, x)
    p = _by_squaring(x, -n if n < 0 else n, lambda u, v: S.mul(b, u, v))
    return p if n > 0 else S.divf(b, S.like(b, 1, x), p)


def _integer_pow_infer(op, x: Spec, n) -> Spec:
    inf.check_dtype(op, x, NUMERIC)
    if n < 0 and not x.dtype.is_floating:
        raise ValueError(f"{op.name}: integer {x.dtype.name} tensor raised to the negative power {n} "
                         "(numpy refuses integers to negative powers); cast to a float dtype first")
    return Spec(x.shape, x.dtype)


def _integer_pow_grad(e, g):
    (x,), n = e.inputs, e.attrs["n"]
    if n == 0:
        return [zeros_like_(g)]
    return [g * (integer_pow(x, n - 1) * n)]


@declare(kernel=_integer_pow_kernel, infer=_integer_pow_infer, grad=_integer_pow_grad, attrs={"n": "int"},
         quiet=True, scalar=_integer_pow_scalar)
def integer_pow(x, n):
    """x ** n for a Python int n, by repeated multiplication in x's dtype (binary
    exponentiation, as JAX's integer_pow; ``Tensor.__pow__`` uses it for int
    exponents). Not np.power: that is much slower, and its rounding is not the
    one of a product that a fused kernel can reproduce. n == 0 gives ones,
    n < 0 gives 1 / x**-n (floats only)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"integer_pow: the exponent must be a Python int, got {type(n).__name__}")
    return (x,), {"n": int(n)}


def _max_grad(e, g):
    x, y = e.inputs
    take_x = greater_equal(x, y)
    z = zeros_like_(g)
    return [unbroadcast(where(take_x, g, z), x, [y.shape]), unbroadcast(where(take_x, z, g), y, [x.shape])]


@declare(kernel=np.maximum, infer=inf.binary(NUMERIC), grad=_max_grad, promote=(0, 1), scalar=S.maximum)
def maximum(x, y):
    """The larger of x and y, elementwise (NaN if either is NaN)."""
    return (x, y), {}


def _min_grad(e, g):
    x, y = e.inputs
    take_x = less_equal(x, y)
    z = zeros_like_(g)
    return [unbroadcast(where(take_x, g, z), x, [y.shape]), unbroadcast(where(take_x, z, g), y, [x.shape])]


@declare(kernel=np.minimum, infer=inf.binary(NUMERIC), grad=_min_grad, promote=(0, 1), scalar=S.minimum)
def minimum(x, y):
    """The smaller of x and y, elementwise."""
    return (x, y), {}


# -- comparisons and logic (not differentiable) ----------------------------------------

_cmp = inf.binary(ANY, result=dtypes.bool_)
_ordered = inf.binary(NUMERIC, result=dtypes.bool_)


@declare(kernel=np.equal, infer=_cmp, promote=(0, 1), scalar=S.comparison("eq"))
def equal(x, y):
    """x == y, elementwise, as a bool tensor."""
    return (x, y), {}


@declare(kernel=np.not_equal, infer=_cmp, promote=(0, 1), scalar=S.comparison("ne"))
def not_equal(x, y):
    """x != y, elementwise."""
    return (x, y), {}


@declare(kernel=np.less, infer=_ordered, promote=(0, 1), scalar=S.comparison("lt"))
def less(x, y):
    """x < y, elementwise."""
    return (x, y), {}


@declare(kernel=np.less_equal, infer=_ordered, promote=(0, 1), scalar=S.comparison("le"))
def less_equal(x, y):
    """x <= y, elementwise."""
    return (x, y), {}


@declare(kernel=np.greater, infer=_ordered, promote=(0, 1), scalar=S.comparison("gt"))
def greater(x, y):
    """x > y, elementwise."""
    return (x, y), {}


@declare(kernel=np.greater_equal, infer=_ordered, promote=(0, 1), scalar=S.comparison("ge"))
def greater_equal(x, y):
    """x >= y, elementwise."""
    return (x, y), {}


_BOOL = frozenset({dtypes.bool_})


@declare(kernel=np.logical_and, infer=inf.binary(_BOOL), promote=(0, 1), scalar=S.logical_and)
def logical_and(x, y):
    """x and y, elementwise on bool tensors."""
    return (x, y), {}


@declare(kernel=np.logical_or, infer=inf.binary(_BOOL), promote=(0, 1), scalar=S.logical_or)
def logical_or(x, y):
    """x or y, elementwise on bool tensors."""
    return (x, y), {}


@declare(kernel=np.logical_not, infer=inf.unary(_BOOL), scalar=S.logical_not)
def logical_not(x):
    """not x, elementwise on a bool tensor."""
    return (x,), {}


# -- unary math ---------------------------------------------------------------


def _unary(name, kernel, grad=None, allowed=FLOATS, quiet=False, doc="", scalar=None):
    """Declare an elementwise op of one input whose result keeps its dtype."""

    def pack(x):
        return (x,), {}

    pack.__name__ = pack.__qualname__ = name
    pack.__doc__ = doc
    return declare(kernel=kernel, infer=inf.unary(allowed), grad=grad, quiet=quiet, name=name, scalar=scalar)(pack)


def _out(e):
    return e.outputs[0]


def _sign_scalar(b, x):
    # numpy: 1 if x > 0, -1 if x < 0, 0 if x == 0, else x (NaN stays NaN)
    s = S.select(b, S.cmp(b, "lt", x, S.like(b, 0, x)), S.like(b, -1, x), S.like(b, 0, x))
    s = S.select(b, S.cmp(b, "gt", x, S.like(b, 0, x)), S.like(b, 1, x), s)
    if b.dtype(x).is_floating:
        s = S.select(b, S.cmp(b, "ne", x, x), x, s)
    return s


def _rsqrt_scalar(b, x):
    return S.divf(b, S.like(b, 1, x), S.math1("SqrtOp")(b, x))


def _sigmoid_scalar(b, x):
    # as the kernel: 1 / (1 + exp(-x)), float16 computed in float32 and rounded once
    if b.dtype(x) == dtypes.float16:
        return S.cast(b, _sigmoid_scalar(b, S.cast(b, x, dtypes.float32)), dtypes.float16)
    one = S.like(b, 1, x)
    return S.divf(b, one, S.add(b, one, S.math1("ExpOp")(b, S.neg(b, x))))


def _relu_scalar(b, x):
    return S.maximum(b, x, S.like(b, 0, x))


def _softplus_scalar(b, x):
    t = S.math1("Log1pOp")(b, S.math1("ExpOp")(b, S.neg(b, S.absolute(b, x))))
    return S.add(b, _relu_scalar(b, x), t)


negative = _unary("negative", np.negative, lambda e, g: [negative(g)], NUMERIC, doc="-x", scalar=S.neg)
abs = _unary("abs", np.abs, lambda e, g: [g * sign(e.inputs[0])], NUMERIC, doc="|x|", scalar=S.absolute)  # noqa: A001
sign = _unary("sign", np.sign, None, NUMERIC, doc="-1, 0 or 1 by the sign of x (not differentiable)", scalar=_sign_scalar)
exp = _unary("exp", np.exp, lambda e, g: [g * _out(e)], quiet=True, doc="e ** x", scalar=S.math1("ExpOp"))
log = _unary("log", np.log, lambda e, g: [g / e.inputs[0]], quiet=True, doc="natural logarithm", scalar=S.math1("LogOp"))
log1p = _unary("log1p", np.log1p, lambda e, g: [g / (e.inputs[0] + 1)], quiet=True, doc="log(1 + x), accurate near 0", scalar=S.math1("Log1pOp"))
expm1 = _unary("expm1", np.expm1, lambda e, g: [g * (_out(e) + 1)], quiet=True, doc="e ** x - 1, accurate near 0", scalar=S.math1("ExpM1Op"))
sqrt = _unary("sqrt", np.sqrt, lambda e, g: [g / (_out(e) * 2)], quiet=True, doc="square root", scalar=S.math1("SqrtOp"))
# g * (x * 2), as TensorFlow: not (g * 2) * x, which overflows for a large g
# (float16 loss scaling) where the gradient itself is finite
square = _unary("square", np.square, lambda e, g: [g * (e.inputs[0] * 2)], NUMERIC, doc="x * x", scalar=S.square)
sin = _unary("sin", np.sin, lambda e, g: [g * cos(e.inputs[0])], doc="sine", scalar=S.math1("SinOp"))
cos = _unary("cos", np.cos, lambda e, g: [negative(g) * sin(e.inputs[0])], doc="cosine", scalar=S.math1("CosOp"))
tanh = _unary("tanh", np.tanh, lambda e, g: [g * (1 - square(_out(e)))], doc="hyperbolic tangent", scalar=S.math1("TanhOp"))
round = _unary("round", np.round, None, doc="round half to even (not differentiable)", scalar=S.math1("RoundEvenOp"))  # noqa: A001
floor = _unary("floor", np.floor, None, doc="largest integer <= x (not differentiable)", scalar=S.math1("FloorOp"))
ceil = _unary("ceil", np.ceil, None, doc="smallest integer >= x (not differentiable)", scalar=S.math1("CeilOp"))


def _rsqrt_kernel(x):
    return 1 / np.sqrt(x)


rsqrt = _unary("rsqrt", _rsqrt_kernel, lambda e, g: [g * -0.5 * _out(e) * _out(e) * _out(e)], quiet=True,
               doc="1 / sqrt(x)", scalar=_rsqrt_scalar)


def _sigmoid_kernel(x):
    # 1 / (1 + exp(-x)) in place, four passes (the exp(-|x|)/np.where form took
    # seven times as long). For very negative x, exp(-x) overflows to inf and the
    # result is 0, the correct limit: the op is quiet. float16 would overflow
    # while the result is still representable, so it computes in float32.
    if x.dtype == np.float16:
        return _sigmoid_kernel(x.astype(np.float32)).astype(np.float16)
    z = np.negative(x, out=np.empty_like(x))
    np.exp(z, out=z)
    z += 1
    return np.reciprocal(z, out=z)


sigmoid = _unary("sigmoid", _sigmoid_kernel, lambda e, g: [g * _out(e) * (1 - _out(e))], quiet=True,
                 doc="1 / (1 + e ** -x)", scalar=_sigmoid_scalar)


def _relu_kernel(x):
    return np.maximum(x, 0).astype(x.dtype, copy=False)


def _relu_grad(e, g):
    # g * (x > 0), as TensorFlow's ReluGrad: np.where costs ten times a multiply
    return [g * cast(greater(e.inputs[0], 0), g.dtype)]


relu = _unary("relu", _relu_kernel, _relu_grad, NUMERIC, doc="max(x, 0)", scalar=_relu_scalar)


def _softplus_kernel(x):
    return (np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))).astype(x.dtype, copy=False)


softplus = _unary("softplus", _softplus_kernel, lambda e, g: [g * sigmoid(e.inputs[0])], quiet=True,
                  doc="log(1 + e ** x), computed without overflow", scalar=_softplus_scalar)
identity = _unary("identity", np.copy, lambda e, g: [g], ANY, doc="a tensor equal to x", scalar=S.identity)


# -- selection, casts, clipping ---------------------------------------------------------


def _where_infer(op, c: Spec, x: Spec, y: Spec) -> Spec:
    inf.check_dtype(op, c, _BOOL, "condition")
    dt = inf.check_same_dtype(op, x, y)
    return Spec(inf.broadcast_shapes(op, c.shape, x.shape, y.shape), dt)


def _where_grad(e, g):
    c, x, y = e.inputs
    z = zeros_like_(g)
    return [None, unbroadcast(where(c, g, z), x, [c.shape, y.shape]),
            unbroadcast(where(c, z, g), y, [c.shape, x.shape])]


@declare(kernel=np.where, infer=_where_infer, grad=_where_grad, promote=(1, 2), scalar=S.select)
def where(condition, x, y):
    """x where condition is True, else y (all three broadcast)."""
    return (condition, x, y), {}


def _cast_kernel(x, dtype):
    return x.astype(dtype.as_numpy_dtype)


def _cast_infer(op, x: Spec, dtype) -> Spec:
    return Spec(x.shape, dtype)


def _cast_grad(e, g):
    x = e.inputs[0]
    # through an integer or bool result nothing flows back (as in TensorFlow)
    return [cast(g, x.dtype) if x.dtype.is_floating and e.outputs[0].dtype.is_floating else None]


@declare(kernel=_cast_kernel, infer=_cast_infer, grad=_cast_grad, attrs={"dtype": "dtype"}, quiet=True,
         scalar=S.cast)
def cast(x, dtype):
    """x converted to ``dtype`` (floats to ints truncate toward zero)."""
    try:
        dtype = dtypes.as_dtype(dtype)
    except TypeError as e:
        raise TypeError(f"cast: {e}") from None
    return (x,), {"dtype": dtype}


def _clip_infer(op, t: Spec, lo: Spec, hi: Spec) -> Spec:
    inf.check_same_dtype(op, t, lo, hi)
    inf.check_dtype(op, t, NUMERIC)
    return Spec(inf.broadcast_shapes(op, t.shape, lo.shape, hi.shape), t.dtype)


def _clip_kernel(t, lo, hi):
    return np.minimum(np.maximum(t, lo), hi)


def _clip_grad(e, g):
    t, lo, hi = e.inputs
    below, above = less(t, lo), greater(t, hi)
    z = zeros_like_(g)
    inside = logical_not(logical_or(below, above))
    return [
        unbroadcast(where(inside, g, z), t, [lo.shape, hi.shape]),
        unbroadcast(where(below, g, z), lo, [t.shape, hi.shape]) if e.needs_grad(1) else None,
        unbroadcast(where(above, g, z), hi, [t.shape, lo.shape]) if e.needs_grad(2) else None,
    ]


def _clip_scalar(b, t, lo, hi):
    return S.minimum(b, S.maximum(b, t, lo), hi)


@declare(kernel=_clip_kernel, infer=_clip_infer, grad=_clip_grad, promote=(0, 1, 2), scalar=_clip_scalar)
def clip_by_value(t, clip_value_min, clip_value_max):
    """t clipped to [clip_value_min, clip_value_max]."""
    return (t, clip_value_min, clip_value_max), {}


def zeros_like_(x):
    from tfc.ops.creation import zeros_like

    return zeros_like(x)


def ones_like_(x):
    from tfc.ops.creation import ones_like

    return ones_like(x)


# -- erf ------------------------------------------------------------------------------
# erf(x) = x P(x^2) for |x| < 1, sign(x) (1 - exp(-x^2) Q(|x|)) for 1 <= |x| < hi,
# sign(x) beyond (erfc(hi) is below half an ulp of 1). P and Q are Chebyshev fits of
# erf(x)/x and erfc(x) exp(x^2) (to Python's math.erf/erfc) on those intervals,
# written as polynomials in t = v*k + m (v = x^2 or |x| mapped to [-1, 1]); each
# entry is (k, m, coefficients from the highest power). Largest error against
# math.erf: 2 ulp (float64), 1.2 ulp (float32; float16 computes in float32).
# One formula, run by the eager kernel on arrays and by the scalar body as IR, so
# compiled code computes eager's operations in eager's order (bit-identical).
_ERF_F64_SMALL = (2.0, -1.0, (
    8.477939670439377e-14, -5.819215576087246e-14, -6.317077178330924e-13, 9.386731686749907e-12,
    -2.0324069230515427e-10, 4.115548480889628e-09, -7.511584262341521e-08, 1.2233828751056725e-06,
    -1.7537169404050603e-05, 0.00021751715600717425, -0.0022854855611473676, 0.019852496688987104,
    -0.1405360890227171, 0.9654687386698673,))
_ERF_F64_BIG = (0.4, -1.4, (
    1.8334989721636405e-08, -4.324625270770228e-08, -2.1077943749345058e-08, 5.233356613553667e-08,
    2.3320334729931724e-07, -5.305624463115083e-07, 5.661513340517576e-07, -1.2039277122639386e-06,
    3.234495934864125e-06, -6.852562334556166e-06, 1.3773488455362283e-05, -2.8259082511985022e-05,
    5.743779483247448e-05, -0.00011448739091132476, 0.00022452605735945536, -0.0004333500056292133,
    0.0008222557360973555, -0.0015325177178725168, 0.0028033261760208967, -0.005028067754971446,
    0.008833423911393343, -0.015182511558335325, 0.025495559644285695, -0.04176678811908906, 0.06663208245317132,
    -0.10330894458313353, 0.15529365560889447,))
_ERF_F32_SMALL = (2.0, -1.0, (
    1.2316405145123615e-06, -1.7669087108201755e-05, 0.00021751198933111116, -0.002285419522595892,
    0.01985249772290752, -0.14053609728271754, 0.965468738637546,))
_ERF_F32_BIG = (0.6666666666666666, -1.6666666666666667, (
    9.640570377534042e-05, -0.00024550576912662776, 0.0003678659982211922, -0.0009155574216610978,
    0.00242588718117976, -0.0056117669556769185, 0.012484035035760796, -0.02699779039009461, 0.056110958481274016,
    -0.11152140145279149, 0.2108063575271784,))


def _erf_formula(m, x, double: bool):
    """erf(x) with ``m`` the arithmetic (numpy arrays or IR scalars, see
    ``_ArrayMath``/``_BodyMath``); ``double``: float64's fits, else float32's."""
    small, big, hi = (_ERF_F64_SMALL, _ERF_F64_BIG, 6.0) if double else (_ERF_F32_SMALL, _ERF_F32_BIG, 4.0)

    def poly(fit, v):
        k, off, coeffs = fit
        t = m.add(m.mul(v, m.c(k)), m.c(off))
        acc = m.c(coeffs[0])
        for c in coeffs[1:]:
            acc = m.add(m.mul(acc, t), m.c(c))
        return acc

    a = m.abs(x)
    s = m.mul(a, a)
    near = m.mul(x, poly(small, s))
    far = m.copysign(m.sub(m.c(1.0), m.mul(m.exp(m.neg(s)), poly(big, a))), x)
    # NaN fails both comparisons and reaches ``far``, which is NaN
    inner = m.select(m.lt(a, m.c(1.0)), near, far)
    return m.select(m.ge(a, m.c(hi)), m.copysign(m.c(1.0), x), inner)


class _ArrayMath:
    """``_erf_formula``'s arithmetic on numpy arrays of one float dtype."""

    def __init__(self, dtype):
        self.c = np.dtype(dtype).type

    add, sub, mul, abs, neg, exp, tanh = np.add, np.subtract, np.multiply, np.abs, np.negative, np.exp, np.tanh
    div, sqrt, log1p = np.divide, np.sqrt, np.log1p
    lt, ge, copysign = np.less, np.greater_equal, np.copysign

    @staticmethod
    def select(c, x, y):
        return np.where(c, x, y)


class _BodyMath:
    """``_erf_formula``'s arithmetic as a scalar body's IR ops (tfc/ops/_scalar.py)."""

    def __init__(self, b, x):
        self.b, self.x = b, x

    def c(self, v):
        return S.like(self.b, v, self.x)

    def add(self, x, y):
        return S.add(self.b, x, y)

    def sub(self, x, y):
        return S.sub(self.b, x, y)

    def mul(self, x, y):
        return S.mul(self.b, x, y)

    def abs(self, x):
        return S.absolute(self.b, x)

    def neg(self, x):
        return S.neg(self.b, x)

    def exp(self, x):
        return S.math1("ExpOp")(self.b, x)

    def tanh(self, x):
        return S.math1("TanhOp")(self.b, x)

    def lt(self, x, y):
        return S.cmp(self.b, "lt", x, y)

    def ge(self, x, y):
        return S.cmp(self.b, "ge", x, y)

    def select(self, c, x, y):
        return S.select(self.b, c, x, y)

    def copysign(self, x, y):
        from xdsl.dialects import math as xmath

        return self.b.emit(xmath.CopySignOp(x, y))


_FORMULA_CHUNK = 1 << 14  # elements: a long formula's temporaries stay in cache


def run_formula(formula, x):
    """``formula(arithmetic, x, double)`` on the array ``x`` (a float dtype;
    ``double``: x is float64; float16 computes in float32 and rounds once, as
    sigmoid): on flat chunks where x is
    C-contiguous (elementwise, so the same bits; its dozens of temporaries stay
    in cache instead of being whole-array allocations), else whole (a strided
    view is read as it is, as compiled kernels read it)."""
    if x.dtype == np.float16:
        return run_formula(formula, x.astype(np.float32)).astype(np.float16)
    m, double = _ArrayMath(x.dtype), x.dtype == np.float64
    if x.size <= _FORMULA_CHUNK or not x.flags.c_contiguous:
        return np.asarray(formula(m, x, double), x.dtype)
    out = np.empty_like(x)
    flat, dst = x.reshape(-1), out.reshape(-1)
    for i in range(0, flat.size, _FORMULA_CHUNK):
        dst[i:i + _FORMULA_CHUNK] = formula(m, flat[i:i + _FORMULA_CHUNK], double)
    return out


def body_formula(formula, b, x):
    """``formula`` in a scalar body, as ``run_formula`` runs it on arrays."""
    dt = b.dtype(x)
    if dt == dtypes.float16:
        return S.cast(b, body_formula(formula, b, S.cast(b, x, dtypes.float32)), dtypes.float16)
    return formula(_BodyMath(b, x), x, dt == dtypes.float64)


def _erf_kernel(x):
    return run_formula(_erf_formula, x)


def _erf_scalar(b, x):
    return body_formula(_erf_formula, b, x)


ERF_SLOPE_AT_0 = 1.1283791670955126  # 2 / sqrt(pi): d erf(x) / dx = 2 / sqrt(pi) exp(-x^2)


def _erf_grad(e, g):
    x = e.inputs[0]
    return [g * (exp(negative(square(x))) * ERF_SLOPE_AT_0)]


erf = _unary("erf", _erf_kernel, _erf_grad, quiet=True, doc="the error function, 2/sqrt(pi) times the "
             "integral of exp(-t^2) from 0 to x", scalar=_erf_scalar)
