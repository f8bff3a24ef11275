"""Gradients through compiled control flow (tfc.cond / tfc.while, also from
AutoGraph) and through compiled calls under an eager GradientTape; checked
against central finite differences and against the same code run eagerly."""
import numpy as np
import pytest

import tfc
from tests.helpers import check_grad, numeric_grad


def f64(x):
    return tfc.constant(np.asarray(x, np.float64))


def grads_inside(fn):
    """A compiled function returning d(sum fn(*xs))/dxs, the tape inside it."""
    @tfc.function
    def g(*xs):
        with tfc.GradientTape() as t:
            t.watch(list(xs))
            y = tfc.reduce_sum(fn(*xs))
        return t.gradient(y, list(xs))
    return g


def eager_grads(fn, *xs):
    with tfc.GradientTape() as t:
        t.watch(list(xs))
        y = tfc.reduce_sum(fn(*xs))
    return t.gradient(y, list(xs))


def assert_grads(got, want, rtol=1e-6, atol=1e-9):
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        if a is None:  # compiled code knew no gradient flows (a loop of no trips, known when tracing)
            assert b is None or not np.any(np.asarray(b)), f"gradient {k}"  # eager's None, a numeric zero
            continue
        b = np.zeros_like(np.asarray(a)) if b is None else np.asarray(b)  # eager: unconnected (a loop that did not run)
        np.testing.assert_allclose(np.asarray(a), b, rtol=rtol, atol=atol, err_msg=f"gradient {k}")


# -- tfc.cond ---------------------------------------------------------------------------


def tensor_if(x, w):
    if tfc.reduce_sum(x) > 0:
        y = tfc.sin(x) * w
    else:
        y = x * x * w + 1.0
    return y


@pytest.mark.parametrize("x", [[0.5, 1.5], [-0.5, -1.5]])  # each branch once
def test_tensor_if_tape_inside(x):
    args = (f64(x), f64([2.0, 3.0]))
    got = grads_inside(tensor_if)(*args)
    assert_grads(got, eager_grads(tensor_if, *args))
    assert_grads(got, numeric_grad(tensor_if, [np.asarray(a) for a in args]), rtol=1e-6)
    assert "tfc.cond" in grads_inside(tensor_if).get_concrete_function(*args).ir()


@pytest.mark.parametrize("x", [[0.5, 1.5], [-0.5, -1.5]])
def test_tensor_if_tape_outside(x):
    check_grad(tfc.function(tensor_if), np.array(x), np.array([2.0, 3.0]))


def nested(x, y):
    if x > 0:
        if y > x:
            r = x * y * y
        else:
            r = tfc.exp(x) + y
    else:
        r = y * 3.0 - x * x
    return r


@pytest.mark.parametrize("x, y", [(0.5, 2.0), (0.5, 0.25), (-1.0, 2.0)])
def test_nested_cond(x, y):
    args = (f64(x), f64(y))
    assert_grads(grads_inside(nested)(*args), eager_grads(nested, *args))
    check_grad(tfc.function(nested), np.float64(x), np.float64(y))


def test_value_captured_only_by_a_nested_branch_gets_its_gradient():
    def fn(p, q, x, z):
        return tfc.cond(p, lambda: tfc.cond(q, lambda: z * 2.0, lambda: x), lambda: x)

    g = grads_inside(lambda x, z: fn(tfc.constant(True), tfc.constant(True), x, z))
    assert_grads(g(f64(1.0), f64(1.0)), [0.0, 2.0])


def test_branch_returning_a_captured_value():
    @tfc.function
    def g(x, p):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = tfc.cond(p, lambda: x, lambda: x * 0.0 + 1.0)
        return t.gradient(y, x)

    assert g(f64(3.0), tfc.constant(True)).numpy() == 1.0
    assert g(f64(3.0), tfc.constant(False)).numpy() == 0.0


def test_variable_read_in_a_branch():
    w = tfc.Variable(np.array([1.5, -2.0]))

    def fn(x):
        return tfc.cond(tfc.reduce_sum(x) > 0, lambda: x * w, lambda: x - w)

    @tfc.function
    def g(x):
        with tfc.GradientTape() as t:
            y = tfc.reduce_sum(fn(x) * fn(x))
        return t.gradient(y, w)

    for x in ([1.0, 2.0], [-1.0, -2.0]):
        with tfc.GradientTape() as t:
            y = tfc.reduce_sum(fn(f64(x)) * fn(f64(x)))
        np.testing.assert_allclose(g(f64(x)).numpy(), t.gradient(y, w).numpy())


def test_second_order_through_cond():
    @tfc.function
    def d2(x):
        with tfc.GradientTape() as t2:
            t2.watch(x)
            with tfc.GradientTape() as t1:
                t1.watch(x)
                y = tfc.cond(x > 0, lambda: x * x * x, lambda: tfc.sin(x))
            g = t1.gradient(y, x)
        return t2.gradient(g, x)

    np.testing.assert_allclose(d2(f64(2.0)).numpy(), 12.0)
    np.testing.assert_allclose(d2(f64(-1.0)).numpy(), -np.sin(-1.0))


# -- tfc.while_loop -------------------------------------------------------------------------


def affine_steps(x, w, b, limit=None):
    def body(i, x):
        return i + 1, x * w + b

    return tfc.while_loop(lambda i, x: i < 4, body, [tfc.constant(0), x], maximum_iterations=limit)[1]


@pytest.mark.parametrize("limit", [10, 3, None])  # the condition stops it / the limit does / unbounded
def test_while_loop_affine(limit):
    fn = lambda x, w, b: affine_steps(x, w, b, limit)  # noqa: E731
    args = (f64([1.0, -2.0]), f64([0.5, 1.5]), f64(0.25))
    got = grads_inside(fn)(*args)
    assert_grads(got, eager_grads(fn, *args))
    assert_grads(got, numeric_grad(fn, [np.asarray(a) for a in args]), rtol=1e-6, atol=1e-7)
    check_grad(tfc.function(fn), *[np.asarray(a) for a in args])


def test_while_loop_that_does_not_run():
    fn = lambda x, w: tfc.while_loop(lambda x: x < 0.0, lambda x: x * w, x)  # noqa: E731
    assert_grads(grads_inside(fn)(f64(2.0), f64(3.0)), [1.0, 0.0])


def test_while_loop_with_variable_in_body():
    w = tfc.Variable(np.float64(1.1))

    def fn(x):
        return tfc.while_loop(lambda x: x < 10.0, lambda x: x * w + 1.0, x)

    @tfc.function
    def g(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = fn(x)
        return t.gradient(y, [x, w])

    with tfc.GradientTape() as t:
        x = f64(2.0)
        t.watch(x)
        y = fn(x)
    assert_grads(g(f64(2.0)), t.gradient(y, [x, w]))


def autograph_while(x, w):
    while tfc.reduce_sum(x) < 20.0:  # trip count known only at run time
        x = x * w + 0.5
    return x


def autograph_for(x, w, n):
    acc = tfc.zeros_like(x)
    for i in range(n):  # n is a tensor: a tfc.while
        if tfc.cast(i, tfc.float64) < tfc.reduce_sum(x):
            acc = acc + tfc.sin(x * w)
        else:
            acc = acc * w
        x = x * 1.5
    return acc


@pytest.mark.parametrize("x", [[1.0, 2.0], [0.5, 0.1]])
def test_autograph_while_with_tensor_condition(x):
    args = (f64(x), f64([1.5, 2.0]))
    got = grads_inside(autograph_while)(*args)
    assert_grads(got, eager_grads(autograph_while, *args))
    check_grad(tfc.function(autograph_while), *[np.asarray(a) for a in args])


@pytest.mark.parametrize("n", [0, 1, 4])
def test_autograph_for_range_tensor_with_if(n):
    fn = lambda x, w: autograph_for(x, w, tfc.constant(n))  # noqa: E731
    args = (f64([0.3, 0.7]), f64([1.2, -0.8]))
    got = grads_inside(fn)(*args)
    assert_grads(got, eager_grads(fn, *args))
    assert_grads(got, numeric_grad(fn, [np.asarray(a) for a in args]), rtol=1e-6, atol=1e-7)


def test_loop_variable_changing_shape():
    """The states of a loop variable whose shape changes are kept in a list."""
    def g(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = tfc.while_loop(lambda i, x: i < 2, lambda i, x: (i + 1, tfc.concat([x, x], 0) * x[0]),
                               [tfc.constant(0), x])[1]
        return t.gradient(y, x)

    x = f64([1.5, 2.0])
    np.testing.assert_array_equal(tfc.function(g)(x).numpy(), g(x).numpy())


def rnn(xs, w):
    n = xs.shape[0]
    ta = tfc.TensorArray(tfc.float64, size=n, element_shape=(2,))
    h = tfc.zeros((2,), tfc.float64)
    for i in tfc.range(n):  # a tfc.while carrying a fixed-size TensorArray
        h = tfc.tanh(h * w + tfc.gather(xs, i, axis=0))
        ta = ta.write(i, h)
    return ta.stack() ** 2


def test_autograph_loop_writing_a_tensor_array():
    xs = np.random.default_rng(0).normal(size=(4, 2))
    w = np.array([0.5, -0.3])
    got = grads_inside(rnn)(f64(xs), f64(w))
    assert_grads(got, eager_grads(rnn, f64(xs), f64(w)))
    assert_grads(got, numeric_grad(rnn, [xs, w]), rtol=1e-6, atol=1e-7)


def test_second_order_through_while_loop():
    def loop(x):
        return tfc.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tfc.sin(x) * x),
                              [tfc.constant(0), x], maximum_iterations=3)[1]

    def d2(x):
        with tfc.GradientTape() as t2:
            t2.watch(x)
            with tfc.GradientTape() as t1:
                t1.watch(x)
                y = loop(x)
            g = t1.gradient(y, x)
        return t2.gradient(g, x)

    x = f64(0.7)
    np.testing.assert_allclose(tfc.function(d2)(x).numpy(), d2(x).numpy(), rtol=1e-10)


# -- eager tape around a compiled call ------------------------------------------------------


def test_outer_tape_arguments_and_variables():
    w = tfc.Variable(np.array([[1.0, 2.0], [3.0, -1.0]]))
    b = tfc.Variable(np.array([0.5, -0.5]))
    frozen = tfc.Variable(np.array([2.0, 2.0]), trainable=False)

    def model(x):
        return tfc.reduce_sum(tfc.tanh(tfc.matmul(x, w) + b) * frozen)

    compiled = tfc.function(model)
    x = f64([[0.1, 0.2], [0.3, -0.4]])
    results = []
    for fn in (model, compiled):
        with tfc.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        results.append(tape.gradient(y, [x, w, b, frozen]))
        assert tape.watched_variables() == (w, b)
    (e, c) = results
    assert c[3] is None and e[3] is None
    assert_grads(c[:3], e[:3])


def test_outer_tape_multiple_and_integer_outputs():
    @tfc.function
    def f(x, n):
        return x * x, n * 2, tfc.sin(x)

    x = f64([1.0, 2.0])
    with tfc.GradientTape() as tape:
        tape.watch(x)
        a, m, s = f(x, tfc.constant(3))
        y = tfc.reduce_sum(a) + tfc.reduce_sum(s * 2.0)
    assert m.numpy() == 6
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * np.array([1.0, 2.0]) + 2 * np.cos([1.0, 2.0]))


def test_outer_tape_uses_the_values_from_before_the_call():
    v = tfc.Variable(np.float64(3.0))

    @tfc.function
    def f(x):
        y = x * v
        v.assign(v * 2.0)
        return y * v  # x * v0 * 2 v0

    x = f64(1.5)
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    gx, gv = tape.gradient(y, [x, v])
    assert v.numpy() == 6.0
    np.testing.assert_allclose([gx.numpy(), gv.numpy()], [2 * 9.0, 4 * 1.5 * 3.0])


def test_backward_function_is_built_once():
    f = tfc.function(lambda x: tfc.exp(x) * x)
    for k in range(3):
        x = f64(float(k))
        with tfc.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.exp(k) * (1 + k))
    conc = f.get_concrete_function(f64(0.0))
    assert conc._backward[0] is not None and f.trace_count == 1


def test_second_order_around_compiled_call():
    f = tfc.function(lambda x: x * x * x)
    x = f64(2.0)
    with tfc.GradientTape() as t2:
        t2.watch(x)
        with tfc.GradientTape() as t1:
            t1.watch(x)
            y = f(x)
        g = t1.gradient(y, x)
    assert g.numpy() == 12.0
    assert t2.gradient(g, x).numpy() == 12.0


def test_second_order_around_compiled_call_with_variable():
    v = tfc.Variable(np.float64(2.0))
    f = tfc.function(lambda x: x * v * v)
    with tfc.GradientTape() as t2:
        with tfc.GradientTape() as t1:
            y = f(f64(3.0))
        gv = t1.gradient(y, v)
    assert gv.numpy() == 12.0 and t2.gradient(gv, v).numpy() == 6.0


def test_training_loop_compiled_step_tape_outside_matches_eager():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(16, 3))
    Y = (X @ np.array([[1.0], [-2.0], [0.5]]) > 0).astype(np.float64)

    def make():
        return (tfc.Variable(rng_w.copy(), name="w"), tfc.Variable(np.zeros(1), name="b"))

    rng_w = rng.normal(size=(3, 1))

    def loss_fn(w, b, x, y):
        logits = tfc.matmul(x, w) + b
        p = tfc.sigmoid(logits)
        loss = tfc.reduce_mean(-(y * tfc.log(p + 1e-9) + (1.0 - y) * tfc.log(1.0 - p + 1e-9)))
        if loss > 0.5:  # a tensor `if`: extra L2 penalty while the loss is large
            loss = loss + 0.01 * tfc.reduce_sum(w * w)
        return loss

    we, be = make()
    wc, bc = make()
    step = tfc.function(lambda x, y: loss_fn(wc, bc, x, y))
    losses = []
    for _ in range(15):
        with tfc.GradientTape() as t:
            le = loss_fn(we, be, tfc.constant(X), tfc.constant(Y))
        ge = t.gradient(le, [we, be])
        with tfc.GradientTape() as t:
            lc = step(tfc.constant(X), tfc.constant(Y))
        gc = t.gradient(lc, [wc, bc])
        for v, gv in zip((we, be), ge):
            v.assign_sub(0.5 * gv)
        for v, gv in zip((wc, bc), gc):
            v.assign_sub(0.5 * gv)
        np.testing.assert_allclose(lc.numpy(), le.numpy(), rtol=1e-10)
        losses.append(float(lc.numpy()))
    np.testing.assert_allclose(wc.numpy(), we.numpy(), rtol=1e-10)
    np.testing.assert_allclose(bc.numpy(), be.numpy(), rtol=1e-10)
    assert losses[-1] < losses[0] and step.trace_count == 1


def test_stateful_op_in_differentiated_call_is_not_implemented():
    # (unseeded: a seeded draw is replayed, tests/test_seeded_dropout.py)
    f = tfc.function(lambda x: x * tfc.random.uniform((2,)))
    x = f64([1.0, 2.0])
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = f(tfc.cast(x, tfc.float32))
    with pytest.raises(NotImplementedError, match="stateful op"):
        tape.gradient(y, x)


def test_assign_inside_a_differentiated_branch_is_not_implemented():
    v = tfc.Variable(np.float64(1.0))

    def branch(x):
        v.assign(x)
        return x * 2.0

    @tfc.function
    def g(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = tfc.cond(x > 0, lambda: branch(x), lambda: x)
        return t.gradient(y, x)

    with pytest.raises(NotImplementedError, match="assigns the variable"):
        g(f64(2.0))


def test_eager_control_flow_still_differentiates_op_by_op():
    x = f64(1.5)
    with tfc.GradientTape() as t:
        t.watch(x)
        y = tfc.while_loop(lambda x: x < 10.0, lambda x: tfc.cond(x > 2.0, lambda: x * x, lambda: x * 3.0), x)
    np.testing.assert_allclose(t.gradient(y, x).numpy(), 3.0 * 2 * 4.5)  # 1.5 -> 4.5 -> 20.25


# -- compiled control flow gradients equal eager's to the bit ----------------------


def _same_bits(got, want):
    for g, w in zip(got if isinstance(got, (list, tuple)) else [got], want if isinstance(want, (list, tuple)) else [want]):
        g, w = g.numpy(), w.numpy()
        assert g.dtype == w.dtype and np.array_equal(g, w, equal_nan=True)
        assert np.array_equal(np.signbit(g), np.signbit(w))


def _captured_and_after(x):
    """``a`` is captured by the loop / branch and used after it: eager adds its
    contributions one by one, in reverse order of use."""
    with tfc.GradientTape() as tape:
        tape.watch(x)
        a = x * 2.0 + 1.0
        v = a
        for i in tfc.range(3):
            v = tfc.sigmoid(v) * 0.5 + a
        if tfc.reduce_sum(v) > 0.0:
            v = v * a + tfc.tanh(a)
        loss = tfc.reduce_sum(v * a)
    return tape.gradient(loss, x)


def _unwatched_capture(x, w):
    """``w`` is never watched: no gradient, though the loop and branch capture it."""
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = x
        for i in tfc.range(2):
            y = y + tfc.sin(w)
        if tfc.reduce_sum(y) > 0.0:
            y = y * tfc.cos(w)
        loss = tfc.reduce_sum(y)
    return tape.gradient(loss, [x, w], unconnected_gradients="zero")


def _dead_capture(x):
    """``m`` is read only by a dead op in the branch and the loop: no zero
    gradient flows to it (0 * inf would be NaN upstream)."""
    with tfc.GradientTape() as tape:
        tape.watch(x)
        m = tfc.matmul(x, x, transpose_b=True)
        y = x
        if tfc.reduce_sum(x) > 0.0:
            unused = tfc.reduce_sum(m)
            y = x * 2.0
        for i in tfc.range(2):
            unused = tfc.reduce_sum(m * 3.0)
            y = y * 0.5
        loss = tfc.reduce_sum(y)
    return tape.gradient(loss, x)


def test_compiled_control_flow_gradients_are_eagers_bits():
    x = np.random.default_rng(0).normal(size=(64,)).astype(np.float32)
    _same_bits(tfc.function(_captured_and_after)(x), _captured_and_after(tfc.constant(x)))
    w = np.array([0.1, 0.2, 0.3], np.float32)
    ones = np.ones(3, np.float32)
    _same_bits(tfc.function(_unwatched_capture)(ones, w), _unwatched_capture(tfc.constant(ones), tfc.constant(w)))
    inf = np.array([[1.0, np.inf]], np.float32)
    _same_bits(tfc.function(_dead_capture)(inf), _dead_capture(tfc.constant(inf)))


def test_read_value_and_constant_of_a_variable():
    v = tfc.Variable(np.array([1.0, 2.0], np.float32))

    def f():
        with tfc.GradientTape() as tape:
            loss = tfc.reduce_sum(v.read_value() * 3.0)
        return tape.gradient(loss, v, unconnected_gradients="zero")

    _same_bits(tfc.function(f)(), f())
    np.testing.assert_array_equal(f().numpy(), [3.0, 3.0])  # read_value is differentiable, as in TensorFlow
    c = tfc.constant(v)  # a snapshot, not the variable
    v.assign_sub(tfc.constant(np.ones(2, np.float32)))
    np.testing.assert_array_equal(c.numpy(), [1.0, 2.0])


def test_gradient_of_an_unwatched_source_is_none():
    x, y = tfc.constant(2.0), tfc.constant(3.0)
    with tfc.GradientTape() as tape:
        tape.watch(x)
        z = x * y
    gx, gy = tape.gradient(z, [x, y])
    assert gy is None and float(gx.numpy()) == 3.0


def _first_grad_of_for(x):
    with tfc.GradientTape() as t1:
        t1.watch(x)
        acc = x * 1.0
        for i in tfc.range(3):
            acc = tfc.sin(acc) * x
        loss = tfc.reduce_sum(acc)
    return t1.gradient(loss, x)


def test_second_order_through_a_for_over_a_static_range():
    """A for over tfc.range(3) gets maximum_iterations 3: its gradient's history
    has a fixed size, so the gradient is itself differentiable."""
    def so(x):
        with tfc.GradientTape() as t2:
            t2.watch(x)
            g = _first_grad_of_for(x)
        return t2.gradient(g, x)

    x = np.array([0.3, -0.5, 0.8])
    _same_bits(tfc.function(so)(x), so(tfc.constant(x)))
    check_grad(_first_grad_of_for, x)  # eager against finite differences


def test_gather_gradient_along_a_dimension_known_at_run_time():
    @tfc.function(input_signature=[tfc.TensorSpec((None, 3), tfc.float64)])
    def g(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            loss = tfc.reduce_sum(tfc.gather(x, 1) * tfc.gather(x, 0))
        return t.gradient(loss, x)

    x = np.arange(12, dtype=np.float64).reshape(4, 3) - 5.0
    want = np.zeros_like(x)
    want[0], want[1] = x[1], x[0]
    np.testing.assert_array_equal(g(x).numpy(), want)


def test_eager_tape_around_a_compiled_call_is_eagers_bits():
    """The call's gradient adds onto the gradient so far as eager's tape does;
    an input no result depends on gets none."""
    x = tfc.constant(np.random.default_rng(3).normal(size=(6,)).astype(np.float32))
    y = tfc.constant(np.ones(6, np.float32))
    v = tfc.Variable(np.arange(6, dtype=np.float32))

    def f(a, b):
        return a * a * 3.0 + tfc.sin(a) * v

    def outer(fn):
        with tfc.GradientTape() as t:
            t.watch([x, y])
            loss = tfc.reduce_sum(fn(x, y) * tfc.exp(x) * v)
        return t.gradient(loss, [x, y, v])

    want, got = outer(f), outer(tfc.function(f))
    assert want[1] is None and got[1] is None
    _same_bits([got[0], got[2]], [want[0], want[2]])


def test_for_over_a_static_range_gets_its_trip_count_unless_it_can_break():
    """The trip count sizes a gradient's history buffer: a loop that may break
    early keeps a growing one (a range of 10**9 that breaks at once must not
    reserve 10**9 states)."""
    def full(x):
        for i in tfc.range(5):
            x = x * 2.0
        return x

    def breaks(x):
        for i in tfc.range(10 ** 9):
            x = x * 2.0
            if tfc.reduce_sum(x) > 10.0:
                break
        return x

    x = tfc.constant(np.ones(3, np.float32))
    assert "max_iterations = 5" in tfc.function(full).get_concrete_function(x).ir("tensor")
    assert "max_iterations" not in tfc.function(breaks).get_concrete_function(x).ir("tensor")


def test_slicing_gradient_along_a_dimension_known_at_run_time():
    """Slicing, reshaping and broadcasting against a (None, 3) input."""
    def grad(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            loss = (tfc.reduce_sum(x[1]) * tfc.reduce_sum(tfc.square(x[-1, 1:])) + tfc.reduce_sum(x[1, 1:] * x[2:, 1:])
                    + tfc.reduce_sum(tfc.reshape(x, (-1,)) * 2.0) + tfc.reduce_sum(x[:, :1] * x))
        return t.gradient(loss, x)

    x = np.arange(12, dtype=np.float64).reshape(4, 3) - 5.0
    compiled = tfc.function(grad, input_signature=[tfc.TensorSpec((None, 3), tfc.float64)])
    _same_bits(compiled(x), grad(tfc.constant(x)))


def test_training_step_with_a_batch_size_known_at_run_time_is_eagers_bits():
    """A TensorSpec((None, ...)) step: reductions' gradients broadcast like their
    input (broadcast_like) and a mean divides by its count at run time
    (count_along); one trace serves every batch size, with eager's bits."""
    def make():
        w = tfc.Variable(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
        b = tfc.Variable(np.zeros(3, np.float32))

        def step(x, y):
            with tfc.GradientTape() as t:
                p = tfc.matmul(x, w) + b
                loss = (tfc.reduce_mean(tfc.square(p - y)) + tfc.reduce_sum(tfc.reduce_mean(p, axis=0)) * 0.1
                        + tfc.reduce_sum(tfc.reduce_max(p, axis=1)) + tfc.reduce_sum(tfc.reduce_prod(p, axis=1)))
            gw, gb = t.gradient(loss, [w, b])
            w.assign_sub(0.1 * gw)
            b.assign_sub(0.1 * gb)
            return loss
        return step, w, b

    eager, we, be = make()
    step, wc, bc = make()
    step = tfc.function(step, input_signature=[tfc.TensorSpec((None, 4)), tfc.TensorSpec((None, 3))])
    rng = np.random.default_rng(1)
    for n in (5, 7, 1):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        y = rng.standard_normal((n, 3)).astype(np.float32)
        _same_bits([step(x, y), wc, bc], [eager(tfc.constant(x), tfc.constant(y)), we, be])
    assert step.trace_count == 1
