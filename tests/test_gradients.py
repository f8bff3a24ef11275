"""Gradients of every differentiable op against central finite differences
(float64), second derivatives of the unary ops, non-differentiable ops, the
GradientTape API, and the "Gradients" reference programs."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tfc
from helpers import check_grad, check_second_grad
from tfc.ops.shapes import getitem

FEW = settings(max_examples=8, deadline=None)


def _away_from_zero(rng, shape, lo=0.2, hi=2.0):
    """Values with |x| in [lo, hi): finite differences stay off kinks (abs, relu)."""
    return rng.uniform(lo, hi, size=shape) * rng.choice([-1.0, 1.0], size=shape)


# name -> (function, input range or "signed")
UNARY = {
    "negative": (tfc.negative, "signed"), "abs": (tfc.abs, "signed"), "square": (tfc.square, "signed"),
    "relu": (tfc.relu, "signed"), "exp": (tfc.exp, "signed"), "log": (tfc.log, (0.2, 3)),
    "log1p": (tfc.log1p, (-0.5, 3)), "expm1": (tfc.expm1, "signed"), "sqrt": (tfc.sqrt, (0.2, 3)),
    "rsqrt": (tfc.rsqrt, (0.2, 3)), "sin": (tfc.sin, "signed"), "cos": (tfc.cos, "signed"),
    "tanh": (tfc.tanh, "signed"), "sigmoid": (tfc.sigmoid, "signed"), "softplus": (tfc.softplus, "signed"),
    "identity": (tfc.identity, "signed"), "cast": (lambda x: tfc.cast(x, tfc.float64), "signed"),
    "-x operator": (lambda x: -x, "signed"), "abs()": (lambda x: abs(x), "signed"),
}
LINEAR_OR_PIECEWISE = {"negative", "abs", "relu", "identity", "cast", "-x operator", "abs()"}


def _unary_input(name, rng, shape):
    rng_ = UNARY[name][1]
    if rng_ == "signed":
        return _away_from_zero(rng, shape)
    return rng.uniform(*rng_, size=shape)


@pytest.mark.parametrize("name", sorted(UNARY))
@FEW
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3), seed=st.integers(0, 2**16))
def test_unary_grad(name, shape, seed):
    x = _unary_input(name, np.random.default_rng(seed), shape)
    check_grad(UNARY[name][0], x)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_second_grad(name, rng):
    x = _unary_input(name, rng, (2, 3))
    # linear and piecewise-linear ops have an unconnected (zero) second derivative
    unconnected = "zero" if name in LINEAR_OR_PIECEWISE else "none"
    check_second_grad(UNARY[name][0], x, unconnected_gradients=unconnected)


def _binary_inputs(name, rng, shapes):
    a, b = (rng.uniform(0.5, 2.0, size=s) for s in shapes)
    if name in ("subtract", "add", "multiply", "maximum", "minimum", "mod", "where"):
        a, b = _away_from_zero(rng, shapes[0]), _away_from_zero(rng, shapes[1])
    if name == "mod":  # away from the jumps of x mod y
        b = np.sign(b) * (np.abs(b) + 3.0)
    return a, b


BINARY = {
    "add": tfc.add, "subtract": tfc.subtract, "multiply": tfc.multiply, "divide": tfc.divide,
    "pow": tfc.pow, "maximum": tfc.maximum, "minimum": tfc.minimum, "mod": tfc.mod,
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
    "**": lambda a, b: a ** b,
}


@pytest.mark.parametrize("name", sorted(BINARY))
@FEW
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=3),
       seed=st.integers(0, 2**16))
def test_binary_grad(name, shapes, seed):
    a, b = _binary_inputs(name, np.random.default_rng(seed), shapes.input_shapes)
    # continuous random values: ties (where max/min have no derivative) have measure zero
    check_grad(BINARY[name], a, b)


def test_binary_grad_with_python_scalar():
    x = np.array([0.5, 1.5, 2.5])
    check_grad(lambda a: a * 3.0 + 2 ** a - a / 4 + (1.0 - a) ** 2, x)


@FEW
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, min_side=1, max_side=3),
       seed=st.integers(0, 2**16))
def test_where_grad(shapes, seed):
    rng = np.random.default_rng(seed)
    c = tfc.constant(rng.random(shapes.input_shapes[0]) < 0.5)
    x, y = rng.normal(size=shapes.input_shapes[1]), rng.normal(size=shapes.input_shapes[2])
    check_grad(lambda a, b: tfc.where(c, a, b), x, y)


@FEW
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=2, min_side=1, max_side=3),
       seed=st.integers(0, 2**16))
def test_clip_grad(shapes, seed):
    rng = np.random.default_rng(seed)
    t = rng.uniform(-3, 3, size=shapes.input_shapes[0])
    lo = rng.uniform(-2, -0.5, size=shapes.input_shapes[1])
    hi = rng.uniform(0.5, 2, size=shapes.input_shapes[2])
    full = np.broadcast_shapes(t.shape, lo.shape, hi.shape)
    tb = np.broadcast_to(t, full)
    # move t off the clip boundaries, where the derivative jumps
    t = t + 0.1 * (np.abs(tb - lo).min(initial=1) < 0.05 or np.abs(tb - hi).min(initial=1) < 0.05)
    check_grad(tfc.clip_by_value, t, lo, hi)


@st.composite
def shape_and_axis(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    nd = len(shape)
    if nd == 0 or draw(st.booleans()):
        return shape, None
    axes = draw(st.lists(st.integers(-nd, nd - 1), unique_by=lambda a: a % nd, min_size=1, max_size=nd))
    return shape, tuple(axes) if len(axes) > 1 else axes[0]


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"])
@FEW
@given(sa=shape_and_axis(), keepdims=st.booleans(), seed=st.integers(0, 2**16))
def test_reduction_grad(name, sa, keepdims, seed):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    # distinct values (no ties for max/min), away from zero (prod)
    x = rng.permutation(np.arange(1, int(np.prod(shape)) + 1)).reshape(shape) * 0.37 * rng.choice([-1, 1])
    if name == "reduce_prod":
        x = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1, 1], size=shape)
    fn = getattr(tfc, name)
    check_grad(lambda t: fn(t, axis=axis, keepdims=keepdims) * 1.5, x)


def test_reduce_max_ties_split_evenly():
    x = tfc.constant([1.0, 3.0, 3.0, 2.0])
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = tfc.reduce_max(x)
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), [0, 0.5, 0.5, 0])


@st.composite
def matmul_case(draw):
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, min_side=1, max_side=2))
    m, k, n = (draw(st.integers(1, 3)) for _ in range(3))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    return (batch.input_shapes[0] + ((k, m) if ta else (m, k)),
            batch.input_shapes[1] + ((n, k) if tb else (k, n)), ta, tb)


@settings(max_examples=16, deadline=None)
@given(case=matmul_case(), seed=st.integers(0, 2**16))
def test_matmul_grad(case, seed):
    sa, sb, ta, tb = case
    rng = np.random.default_rng(seed)
    check_grad(lambda a, b: tfc.matmul(a, b, transpose_a=ta, transpose_b=tb), rng.normal(size=sa),
               rng.normal(size=sb))


def test_matmul_second_grad():
    rng = np.random.default_rng(3)
    b = tfc.constant(rng.normal(size=(3, 2)))
    check_second_grad(lambda a: tfc.square(tfc.matmul(a, b)), rng.normal(size=(2, 3)))


@FEW
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=1, min_dims=0, max_dims=3, min_side=1, max_side=3),
       seed=st.integers(0, 2**16))
def test_shape_op_grads(shapes, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shapes.input_shapes[0])
    target = shapes.result_shape
    w = tfc.constant(rng.normal(size=target))  # weights make every output position count differently
    check_grad(lambda t: tfc.broadcast_to(t, target) * w, x)
    wr = tfc.constant(rng.normal(size=(x.size,)))
    check_grad(lambda t: tfc.reshape(t, [-1]) * wr, x)
    perm = tuple(rng.permutation(x.ndim))
    wp = tfc.constant(rng.normal(size=tuple(x.shape[p] for p in perm)))
    check_grad(lambda t: tfc.transpose(t, perm) * wp, x)
    wt = tfc.constant(rng.normal(size=x.shape[::-1]))
    check_grad(lambda t: tfc.transpose(t) * wt, x)
    ax = int(rng.integers(-x.ndim - 1, x.ndim + 1))
    check_grad(lambda t: tfc.square(tfc.expand_dims(t, ax)), x)
    check_grad(lambda t: tfc.square(tfc.squeeze(tfc.expand_dims(t, ax), ax)), x)
    check_grad(lambda t: tfc.square(tfc.squeeze(t)), x)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4),
       seed=st.integers(0, 2**16))
def test_getitem_grad(data, shape, seed):
    idx = data.draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    x = np.random.default_rng(seed).normal(size=shape)
    check_grad(lambda t: tfc.square(t[idx]), x)
    check_grad(lambda t: tfc.square(getitem(t, idx)), x)


def test_getitem_second_grad():
    check_second_grad(lambda t: tfc.exp(t[1:3]) * 2.0, np.array([0.1, 0.2, 0.3, 0.4]))


def test_fill_grad():
    v = tfc.constant(2.0, tfc.float64)
    with tfc.GradientTape() as tape:
        tape.watch(v)
        y = tfc.fill([2, 3], v) * tfc.constant(np.arange(6.0).reshape(2, 3))
    assert float(tape.gradient(y, v)) == 15.0


# -- non-differentiable ops ----------------------------------------------------------

NON_DIFF = {
    "floor": tfc.floor, "ceil": tfc.ceil, "round": tfc.round, "sign": tfc.sign,
    "floordiv": lambda x: tfc.floordiv(x, 0.7), "//": lambda x: x // 0.7,
    "equal": lambda x: tfc.equal(x, 1.0), "not_equal": lambda x: tfc.not_equal(x, 1.0),
    "less": lambda x: tfc.less(x, 1.0), "less_equal": lambda x: tfc.less_equal(x, 1.0),
    "greater": lambda x: tfc.greater(x, 1.0), "greater_equal": lambda x: tfc.greater_equal(x, 1.0),
    "<": lambda x: x < 1.0, "argmax": lambda x: tfc.argmax(x), "argmin": lambda x: tfc.argmin(x),
    "cast to int": lambda x: tfc.cast(x, tfc.int32), "zeros_like": tfc.zeros_like, "ones_like": tfc.ones_like,
    "reduce_any": lambda x: tfc.reduce_any(x > 0), "logical_not": lambda x: tfc.logical_not(x > 0),
    "stop_gradient": tfc.stop_gradient,
}


@pytest.mark.parametrize("name", sorted(NON_DIFF))
def test_non_differentiable(name):
    x = tfc.constant([0.3, 1.7, -2.2])
    with tfc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = NON_DIFF[name](x)
    assert tape.gradient(y, x) is None
    z = tape.gradient(y, x, unconnected_gradients="zero")
    assert isinstance(z, tfc.Tensor) and z.dtype == tfc.float32
    np.testing.assert_array_equal(np.asarray(z), np.zeros(3, np.float32))


def test_partially_non_differentiable():
    # floor cuts one path; the other still gives its gradient
    x = tfc.constant(1.3)
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0 + tfc.floor(x)
    assert float(tape.gradient(y, x)) == 2.0


# -- the tape API -----------------------------------------------------------------------


def test_tape_basic_and_persistent():
    x = tfc.constant(3.0)
    with tfc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(z, x)) == 108.0  # 4x^3
    assert float(tape.gradient(y, x)) == 6.0
    assert float(tape.gradient(z, y)) == 18.0


def test_non_persistent_tape_gradient_twice_raises():
    x = tfc.constant(3.0)
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="persistent"):
        tape.gradient(y, x)


def test_unwatched_constant_gives_none():
    x = tfc.constant(3.0)
    with tfc.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None


def test_watch_nested_structures_and_sources():
    a, b = tfc.constant(1.0), tfc.constant(2.0)
    with tfc.GradientTape() as tape:
        tape.watch([a, {"b": b}])
        y = a * b
    ga, gb = tape.gradient(y, [a, b])
    assert float(ga) == 2.0 and float(gb) == 1.0
    with tfc.GradientTape() as tape:
        tape.watch(a)
        tape.watch(b)
        y = a * b
    g = tape.gradient(y, {"x": a, "y": (b,)})
    assert float(g["x"]) == 2.0 and float(g["y"][0]) == 1.0


def test_variables_watched_automatically():
    v = tfc.Variable(3.0)
    frozen = tfc.Variable(2.0, trainable=False)
    with tfc.GradientTape() as tape:
        y = v * v * frozen
    gv, gf = tape.gradient(y, [v, frozen])
    assert float(gv) == 12.0 and gf is None
    assert tape.watched_variables() == (v,)


def test_watch_accessed_variables_false():
    v, w = tfc.Variable(3.0), tfc.Variable(4.0)
    with tfc.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(w)
        y = v * w
    gv, gw = tape.gradient(y, [v, w])
    assert gv is None and float(gw) == 3.0


def test_variable_assign_after_read_does_not_change_recorded_value():
    v = tfc.Variable(3.0)
    with tfc.GradientTape() as tape:
        y = v * v
        v.assign(10.0)
    assert float(tape.gradient(y, v)) == 6.0


def test_stop_recording():
    x = tfc.constant(2.0)
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            z = x * x * x
        w = y + z
    assert float(tape.gradient(w, x)) == 4.0  # z is a constant to the tape
    with pytest.raises(ValueError, match="stop_recording"):
        with tape.stop_recording():
            pass


def test_output_gradients():
    x = tfc.constant([1.0, 2.0, 3.0])
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=tfc.constant([1.0, 0.0, -1.0]))
    np.testing.assert_array_equal(np.asarray(g), [2.0, 0.0, -6.0])
    a = tfc.constant(2.0)
    with tfc.GradientTape() as tape:
        tape.watch(a)
        y1, y2 = a * 3.0, a * a
    assert float(tape.gradient([y1, y2], a, output_gradients=[2.0, 0.5])) == 8.0


def test_multiple_targets_and_reuse():
    x = tfc.constant(2.0)
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y + x * y  # x used on several paths
    assert float(tape.gradient([y, z], x)) == 4.0 + 4.0 + 12.0


def test_nested_tapes_higher_order():
    x = tfc.constant(1.5, tfc.float64)
    with tfc.GradientTape() as t3:
        t3.watch(x)
        with tfc.GradientTape() as t2:
            t2.watch(x)
            with tfc.GradientTape() as t1:
                t1.watch(x)
                y = tfc.sin(x) * x
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    s, c = np.sin(1.5), np.cos(1.5)
    np.testing.assert_allclose(float(d1), c * 1.5 + s)
    np.testing.assert_allclose(float(d2), -s * 1.5 + 2 * c)
    np.testing.assert_allclose(float(d3), -c * 1.5 - 3 * s)


def test_stop_gradient():
    x = tfc.constant(3.0)
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = x * tfc.stop_gradient(x)
    assert float(tape.gradient(y, x)) == 3.0
    assert float(tfc.stop_gradient(x)) == 3.0
    assert float(tfc.stop_gradient(2.5)) == 2.5


def test_integer_sources_get_no_gradient():
    i = tfc.constant(3)
    with tfc.GradientTape() as tape:
        tape.watch(i)
        y = tfc.cast(i, tfc.float32) * 2.0
    assert tape.gradient(y, i) is None


def test_value_and_gradients_function_and_params():
    def f(a, b):
        return a * a * b

    v, (ga, gb) = tfc.value_and_gradients_function(f)(2.0, 3.0)
    assert float(v) == 12.0 and float(ga) == 12.0 and float(gb) == 4.0
    (gb,) = tfc.gradients_function(f, params=["b"])(2.0, 3.0)
    assert float(gb) == 4.0
    (ga,) = tfc.gradients_function(f, params=[0])(2.0, 3.0)
    assert float(ga) == 12.0


def test_implicit_value_and_gradients():
    w = tfc.Variable([1.0, 2.0])
    value, pairs = tfc.implicit_value_and_gradients(lambda x: tfc.reduce_sum(w * x))(tfc.constant([3.0, 4.0]))
    assert float(value) == 11.0
    (g, var), = pairs
    assert var is w
    np.testing.assert_array_equal(np.asarray(g), [3.0, 4.0])
    with pytest.raises(ValueError, match="no trainable variable"):
        tfc.implicit_gradients(lambda x: x * 2.0)(1.0)


# -- reference programs: "Gradients" -------------------------------------------------------


def test_reference_square():
    def square(x):
        return x ** 2

    grad = tfc.gradients_function(square)
    assert repr(square(tfc.constant(3.0))) == "tfc.Tensor(9.0, shape=(), dtype=float32)"
    (g,) = grad(3.0)
    assert repr(g) == "tfc.Tensor(6.0, shape=(), dtype=float32)"
    gradgrad = tfc.gradients_function(lambda x: grad(x)[0])
    (gg,) = gradgrad(3.0)
    assert float(gg) == 2.0 and gg.dtype == tfc.float32


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_reference_nth_derivative(n):
    def f(x):
        return x ** 5

    g = f
    for _ in range(n):
        g = (lambda h: lambda x: tfc.gradients_function(h)(x)[0])(g)
    x = 1.5
    coeff = np.prod(np.arange(5, 5 - n, -1))
    np.testing.assert_allclose(float(g(x)), coeff * x ** (5 - n), rtol=1e-6)
    if n == 5:
        assert float(g(x)) == 120.0


def test_reference_abs():
    def abs(x):  # noqa: A001 (the program's name)
        return x if x > 0.0 else -x

    grad = tfc.gradients_function(abs)
    assert [float(g) for g in grad(2.0)] == [1.0]
    assert [float(g) for g in grad(-2.0)] == [-1.0]


def test_reference_implicit_gradients():
    x = tfc.Variable(2.0)

    def loss(y):
        return (y - x ** 2) ** 2

    grad = tfc.implicit_gradients(loss)
    assert float(loss(7.0)) == 9.0
    (g, var), = grad(7.0)
    assert float(g) == -24.0 and var is x
    assert repr(g) == "tfc.Tensor(-24.0, shape=(), dtype=float32)"


def test_reference_log1pexp():
    def log1pexp(x):
        return tfc.log(1 + tfc.exp(x))

    grad_log1pexp = tfc.gradients_function(log1pexp)
    assert float(grad_log1pexp(0.0)[0]) == 0.5
    assert np.isnan(float(grad_log1pexp(100.0)[0]))  # the naive gradient overflows

    @tfc.custom_gradient
    def log1pexp(x):  # noqa: F811 (the program redefines it)
        e = tfc.exp(x)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))

        return tfc.log(1 + e), grad

    grad_log1pexp = tfc.gradients_function(log1pexp)
    assert float(grad_log1pexp(0.0)[0]) == 0.5
    assert float(grad_log1pexp(100.0)[0]) == 1.0
    assert float(log1pexp(0.0)) == pytest.approx(np.log(2.0))


def _noise_normal(shape, seed=0):
    if hasattr(tfc, "random"):
        return tfc.random.normal(shape, seed=seed)
    return tfc.constant(np.random.default_rng(seed).normal(size=shape), tfc.float32)


def test_reference_noisy_square():
    @tfc.custom_gradient
    def noisy_square(x):
        def grad(dy):
            return dy * (2 * x + _noise_normal(x.shape))

        return x * x, grad

    x = tfc.constant([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(noisy_square(x)), [1.0, 4.0, 9.0])  # forward unchanged
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = noisy_square(x)
    np.testing.assert_array_equal(np.asarray(y), [1.0, 4.0, 9.0])
    g = np.asarray(tape.gradient(y, x))
    noise = np.asarray(_noise_normal((3,)))
    np.testing.assert_allclose(g, 2 * np.array([1.0, -2.0, 3.0]) + noise, rtol=1e-6)
    assert not np.allclose(g, [2.0, -4.0, 6.0])  # the backward pass is noisy


def test_square_gradient_with_a_large_output_gradient_stays_finite():
    """g * (2x), as TensorFlow: (g * 2) * x would overflow float16 under loss scaling."""
    x = tfc.constant(np.array([0.25, -0.5], np.float16))
    with tfc.GradientTape() as t:
        t.watch(x)
        y = tfc.square(x)
    g = t.gradient(y, x, output_gradients=tfc.constant(np.array([40000.0, 40000.0], np.float16)))
    np.testing.assert_array_equal(g.numpy(), np.array([20000.0, -40000.0], np.float16))


@pytest.mark.parametrize("values", [[3.0, 0.5, 2.0, -1.5], [3.0, 0.0, 2.0, -1.5], [0.0, 4.0, 0.0, 2.0]])
def test_reduce_prod_gradient_is_product_of_the_others_with_zeros(values):
    """d prod / dx_i = the product of the other elements, also where x_i or
    another element is zero (TensorFlow's values; prod / x_i was NaN there),
    per row along an axis, eager and compiled alike; and its own gradient
    (except where two elements are zero: there it is 0, documented)."""
    x = np.array([values, values[::-1]], np.float32)
    want = np.array([[np.prod(np.delete(row, i)) for i in range(row.size)] for row in x], np.float32)
    want2 = np.array([[sum(np.prod(np.delete(row, [i, j])) for j in range(row.size) if j != i)
                       for i in range(row.size)] for row in x], np.float32)

    def grads(t):
        with tfc.GradientTape() as outer:
            outer.watch(t)
            with tfc.GradientTape() as tape:
                tape.watch(t)
                y = tfc.reduce_sum(tfc.reduce_prod(t, axis=1))
            g = tape.gradient(y, t)
            s = tfc.reduce_sum(g)
        return g, outer.gradient(s, t)

    for g, g2 in (grads(tfc.constant(x)), tfc.function(grads)(tfc.constant(x))):
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-5)
        if values.count(0.0) < 2:  # documented: with two zeros the second derivative is 0
            np.testing.assert_allclose(g2.numpy(), want2, rtol=1e-5)


def test_gradients_are_freed_when_dropped_without_garbage_collection():
    """tape.gradient leaves no reference cycle holding gradients or the tape's
    values: a training step's arrays are freed as soon as the user drops them,
    so numpy reuses their memory (a cycle through a recursive closure kept them
    until the next collection and made every eager step allocate afresh)."""
    import gc
    import weakref

    w = tfc.Variable(np.ones((4, 3), np.float32))
    b = tfc.Variable(np.zeros(3, np.float32))
    x = tfc.constant(np.arange(8, dtype=np.float32).reshape(2, 4))
    gc.collect()
    gc.disable()
    try:
        with tfc.GradientTape() as tape:
            loss = tfc.reduce_sum(tfc.nn.relu(tfc.matmul(x, w) + b) ** 2)
        grads = tape.gradient(loss, [w, b])
        refs = [weakref.ref(g) for g in grads] + [weakref.ref(loss)]
        del tape, loss, grads
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        gc.enable()
