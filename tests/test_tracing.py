"""Tracing: symbolic tensors, captured constants and variables, region ops,
clear errors for Python control flow on tensors, and GradientTape inside a trace."""
import numpy as np
import pytest

import tfc
from tfc.core.context import STATE


def test_symbolic_tensor_facts():
    seen = {}

    @tfc.function(input_signature=[tfc.TensorSpec((None, 3), tfc.float32)])
    def f(x):
        seen["x"] = x
        y = x * 2.0
        seen["y"] = y
        return y

    f(np.ones((2, 3), np.float32))
    x, y = seen["x"], seen["y"]
    assert isinstance(x, tfc.Tensor)
    assert x.shape == (None, 3) and x.dtype == tfc.float32 and x.ndim == 2
    assert y.shape == (None, 3)
    assert STATE.builder is None


def test_bool_of_symbolic_tensor_names_user_line():
    @tfc.function(autograph=False)
    def f(x):
        if x > 0:  # the offending line
            return x
        return -x

    line = f.__wrapped__.__code__.co_firstlineno + 2
    with pytest.raises(TypeError, match=rf"test_tracing.py:{line}: bool\(\).*tfc.cond.*autograph"):
        f(tfc.constant(1.0))
    assert STATE.builder is None


def test_numpy_of_symbolic_tensor_raises():
    @tfc.function
    def f(x):
        return x.numpy()

    with pytest.raises(TypeError, match=r"\.numpy\(\).*tracing"):
        f(tfc.constant(1.0))


def test_eager_tensors_are_captured_as_constants():
    w = tfc.constant([1.0, 2.0, 3.0])

    @tfc.function
    def f(x):
        return x * w + w

    out = f(tfc.constant([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0, 6.0])
    text = f.get_concrete_function(tfc.constant([1.0, 1.0, 1.0])).ir("tensor-raw")
    assert text.count("tfc.constant") == 1  # captured once, used twice


def test_cond_traces_both_branches():
    @tfc.function
    def f(x):
        return tfc.reduce_sum(x) if False else _cond(x)

    def _cond(x):
        b = STATE.builder
        return b.cond(tfc.reduce_sum(x) > 0, lambda: x * 2.0, lambda: -x)

    np.testing.assert_allclose(f(tfc.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(f(tfc.constant([-1.0, -2.0])).numpy(), [1.0, 2.0])
    assert f.trace_count == 1
    assert "tfc.cond" in f.get_concrete_function(tfc.constant([1.0, 2.0])).ir()


def test_cond_branches_with_different_shapes_become_dynamic():
    @tfc.function
    def f(x, p):
        return STATE.builder.cond(p, lambda: x, lambda: tfc.reshape(x, (-1,))[:2])

    conc = f.get_concrete_function(tfc.TensorSpec((3,)), tfc.TensorSpec((), tfc.bool))
    assert "-> tensor<?xf32>" in conc.ir()
    assert f(tfc.constant([1.0, 2.0, 3.0]), tfc.constant(False)).shape == (2,)


def test_cond_mismatched_dtypes_error():
    @tfc.function
    def f(x):
        return STATE.builder.cond(tfc.constant(True), lambda: x, lambda: tfc.cast(x, tfc.int32))

    with pytest.raises(TypeError, match="dtypes differ, float32 and int32"):
        f(tfc.constant(1.0))


def test_while_loop_with_max_iterations():
    @tfc.function
    def f(x, n):
        b = STATE.builder
        i0 = tfc.constant(0)
        return b.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * 2.0), (i0, x),
                            maximum_iterations=10)

    i, v = f(tfc.constant(1.0), tfc.constant(3))
    assert int(i) == 3 and float(v) == 8.0
    i, v = f(tfc.constant(1.0), tfc.constant(50))
    assert int(i) == 10 and float(v) == 1024.0
    assert f.trace_count == 1


def test_while_loop_relaxes_changing_shapes():
    @tfc.function
    def f(x):
        return STATE.builder.while_loop(lambda v: tfc.reduce_sum(tfc.ones_like(v)) > 2.0,
                                        lambda v: v[1:], x)

    out = f(tfc.constant([1.0, 2.0, 3.0, 4.0, 5.0]))
    np.testing.assert_allclose(out.numpy(), [4.0, 5.0])
    assert "tensor<?xf32>" in f.get_concrete_function(tfc.constant([1.0, 2.0, 3.0, 4.0, 5.0])).ir()


def test_print_and_assert(capsys):
    @tfc.function
    def f(x):
        b = STATE.builder
        b.print_(["x is", x, "{braces}"])
        b.assert_(tfc.reduce_all(x > 0), ["x must be positive, got", x])
        return x + 1.0

    f(tfc.constant([1.0, 2.0]))
    assert capsys.readouterr().out == "x is [1. 2.] {braces}\n"
    with pytest.raises(tfc.errors.InvalidArgumentError, match=r"test_tracing.py:\d+: assertion failed: "
                                                              r"x must be positive, got \[-1\.  2\.\]"):
        f(tfc.constant([-1.0, 2.0]))


def test_variables_read_and_assigned():
    v = tfc.Variable([1.0, 2.0], name="counter")

    @tfc.function
    def step(x):
        v.assign_add(x)
        return v.read_value() * 2.0

    out = step(tfc.constant([1.0, 1.0]))
    np.testing.assert_allclose(out.numpy(), [4.0, 6.0])
    np.testing.assert_allclose(v.numpy(), [2.0, 3.0])
    step(tfc.constant([1.0, 1.0]))
    np.testing.assert_allclose(v.numpy(), [3.0, 4.0])
    text = step.get_concrete_function(tfc.constant([1.0, 1.0])).ir()
    assert "!tfc.ref<tensor<2xf32>>" in text and "tfc.assign_variable" in text


def test_training_step_compiles_into_one_function():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 3)).astype(np.float32)
    Y = rng.normal(size=(8, 1)).astype(np.float32)
    W0 = rng.normal(size=(3, 1)).astype(np.float32)

    def make():
        return tfc.Variable(W0.copy(), name="w"), tfc.Variable(np.zeros(1, np.float32), name="b")

    def step(w, b, x, y):
        with tfc.GradientTape() as tape:
            pred = tfc.matmul(x, w) + b
            loss = tfc.reduce_mean(tfc.square(pred - y))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
        return loss

    we, be = make()
    wc, bc = make()
    compiled = tfc.function(lambda x, y: step(wc, bc, x, y))
    for _ in range(3):
        le = step(we, be, tfc.constant(X), tfc.constant(Y))
        lc = compiled(tfc.constant(X), tfc.constant(Y))
        np.testing.assert_allclose(lc.numpy(), le.numpy(), rtol=1e-5)
    np.testing.assert_allclose(wc.numpy(), we.numpy(), rtol=1e-5)
    np.testing.assert_allclose(bc.numpy(), be.numpy(), rtol=1e-5)
    assert compiled.trace_count == 1
    conc = compiled.get_concrete_function(tfc.constant(X), tfc.constant(Y))
    text = conc.ir()
    assert text.count("func.func") == 1
    assert text.count("tfc.assign_variable") == 2
    assert "tfc.matmul" in text and "transpose_a = true" in text  # the gradient's matmul


def test_gradient_of_tensor_argument_inside_function():
    @tfc.function
    def grad_sin(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = tfc.sin(x) * x
        return t.gradient(y, x)

    x = np.linspace(-1, 1, 5).astype(np.float32)
    np.testing.assert_allclose(grad_sin(tfc.constant(x)).numpy(), np.cos(x) * x + np.sin(x), rtol=1e-5)


def test_second_order_gradient_inside_function():
    @tfc.function
    def d2(x):
        with tfc.GradientTape() as t2:
            t2.watch(x)
            with tfc.GradientTape() as t1:
                t1.watch(x)
                y = x * x * x
            g = t1.gradient(y, x)
        return t2.gradient(g, x)

    np.testing.assert_allclose(d2(tfc.constant([1.0, 2.0])).numpy(), [6.0, 12.0])


def test_gradient_through_cond():
    @tfc.function
    def f(x, p):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = STATE.builder.cond(p, lambda: x * x, lambda: x)
        return t.gradient(y, x)

    assert f(tfc.constant(2.0), tfc.constant(True)).numpy() == 4.0
    assert f(tfc.constant(2.0), tfc.constant(False)).numpy() == 1.0


def test_ops_carry_the_user_location():
    @tfc.function
    def f(x):
        return tfc.exp(x)

    line = f.__wrapped__.__code__.co_firstlineno + 2
    text = f.get_concrete_function(tfc.constant(1.0)).ir(debuginfo=True)
    assert f'tfc.exp %x : (tensor<f32>) -> tensor<f32> loc("{__file__}":{line}:0)' in text


def test_tensor_from_another_trace_is_rejected():
    leaked = []

    @tfc.function
    def f(x):
        leaked.append(x)
        return x

    @tfc.function
    def g(x):
        return x + leaked[0]

    f(tfc.constant(1.0))
    with pytest.raises(ValueError, match="tracing 'g' used a symbolic tensor .* made while tracing the "
                                         "tfc.function 'f' and escaped that trace"):
        g(tfc.constant(1.0))


G = tfc.constant(0.0)


def test_tensor_escaped_from_a_trace_is_a_clear_error_when_used():
    global G
    leaked = []

    @tfc.function
    def step(x):
        global G
        G = G + tfc.reduce_sum(x)  # a Python side effect: G becomes the trace's tensor
        leaked.append(x * 2.0)
        return G

    assert step(tfc.constant([1.0, 2.0])).numpy() == 3.0
    line = step.python_function.__code__.co_firstlineno + 3
    escaped = (r"a symbolic tensor \(float32\[\]\) that was made while tracing the tfc.function 'step' and "
               r"escaped that trace \(through a global, a nonlocal, a list .*return it from the function instead")
    try:
        for use, what in ((lambda: G + 1.0, "an eager op used"), (lambda: G.numpy(), r"\.numpy\(\) needs the value of"),
                          (lambda: bool(G), r"bool\(\) needs the value of"),
                          (lambda: np.asarray(G), "conversion to a numpy array needs the value of"),
                          (lambda: tfc.reduce_sum(leaked[0]), "an eager op used")):
            with pytest.raises(TypeError, match=rf"{__file__}:\d+: {what} a symbolic tensor"):
                use()
        with pytest.raises(TypeError, match=escaped):
            G * 2.0
        with pytest.raises(ValueError, match=rf"{__file__}:{line}: tracing 'step' used {escaped}"):
            step(tfc.constant([1.0, 2.0, 3.0]))  # a new shape: the retrace reads the escaped G
    finally:
        G = tfc.constant(0.0)


def test_tensor_leaked_out_of_a_cond_branch_is_rejected_at_the_users_line():
    leaked = []

    def f(x):
        def true_fn():
            y = x * 2.0
            leaked.append(y)
            return y

        r = tfc.cond(x > 0, true_fn, lambda: x)
        return r + leaked[0]

    line = f.__code__.co_firstlineno + 7
    with pytest.raises(ValueError, match=rf"test_tracing.py:{line}: a tensor computed inside a tfc.cond branch "
                                         r"was used outside it; return it from the branch"):
        tfc.function(f, autograph=False)(tfc.constant(1.0))


def test_tensor_of_one_branch_used_in_the_other_is_rejected():
    leaked = []

    def f(x):
        def true_fn():
            leaked.append(x + 1.0)
            return x

        return tfc.cond(x > 0, true_fn, lambda: leaked[0] * 2.0)

    with pytest.raises(ValueError, match="inside a tfc.cond branch was used outside it"):
        tfc.function(f, autograph=False)(tfc.constant(1.0))


def test_tensor_leaked_out_of_a_while_body_is_rejected():
    leaked = []

    def f(n):
        def body(i):
            leaked.append(i * 3)
            return (i + 1,)

        tfc.while_loop(lambda i: i < n, body, (tfc.constant(0),))
        return leaked[-1]

    with pytest.raises(ValueError, match="inside a tfc.while_loop body was used outside it; make it a loop variable"):
        tfc.function(f, autograph=False)(tfc.constant(3))


def test_values_captured_from_enclosing_regions_stay_legal():
    # a value of an outer region used in a nested one is a capture, not a leak
    def f(x):
        def outer():
            y = x * 2.0
            return tfc.cond(y > 1.0, lambda: y + 1.0, lambda: y - x)

        return tfc.cond(x > 0, outer, lambda: x)

    g = tfc.function(f, autograph=False)
    for v in (1.0, 0.25, -1.0):
        want = (v * 2 + 1 if v * 2 > 1 else v * 2 - v) if v > 0 else v
        assert g(tfc.constant(v)).numpy() == pytest.approx(want)
