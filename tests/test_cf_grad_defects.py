"""Gradients through compiled control flow against eager ones (issue 15):
``stop_gradient`` and ``custom_gradient`` inside tensor branches and loops,
None exactly where eager gives None, no NaN from a path that did not run,
loops whose shapes are known only at run time.

Each case is a function that computes gradients itself; it runs eagerly (the
reference) and as a tfc.function with a static and with a None signature,
whose results must be bit-identical. Where eager gives None because of the
branch taken at run time, compiled code cannot know it when tracing: it gives
zeros there (as TensorFlow's tf.function), listed in ``dynamic_none``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tfc

F32 = np.float32


def c(*values):
    return tfc.constant(np.array(values, F32))


def signatures(args):
    static = [tfc.TensorSpec(tuple(a.shape), a.dtype) for a in args]
    dynamic = [tfc.TensorSpec((None,) * len(a.shape), a.dtype) for a in args]
    return {"static": static, "none": dynamic}


def check(f, *args, dynamic_none=(), only=None):
    """f eagerly, then compiled with static and None signatures: the same
    gradients, bit for bit, and None exactly where eager has None (zeros at
    the flat positions ``dynamic_none``)."""
    want = _flat(f(*args))
    for name, sig in signatures(args).items():
        if only is not None and name != only:
            continue
        got = _flat(tfc.function(f, input_signature=sig)(*args))
        assert len(got) == len(want), name
        for k, (g, w) in enumerate(zip(got, want)):
            if w is None and k in dynamic_none:
                assert g is not None, (name, k)
                np.testing.assert_array_equal(g.numpy(), np.zeros(g.shape, g.dtype.as_numpy_dtype), err_msg=name)
            elif w is None:
                assert g is None, (name, k, g)
            else:
                assert g is not None, (name, k)
                assert g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape), (name, k, g, w)
                np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=f"{name}, gradient {k}")
    return want


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _flat(v)]
    return [x]


# -- stop_gradient inside tensor control flow -------------------------------------------------


def sg_if(x):
    with tfc.GradientTape() as t:
        t.watch(x)
        if tfc.reduce_sum(x) > 0.0:
            y = tfc.stop_gradient(x)
        else:
            y = x
        loss = tfc.reduce_sum(y * 3.0)
    return t.gradient(loss, x)


def sg_cond(x):
    with tfc.GradientTape() as t:
        t.watch(x)
        y = tfc.cond(tfc.reduce_sum(x) > 0.0, lambda: tfc.stop_gradient(x) * x, lambda: x * 2.0)
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def sg_both_branches(x, z):
    # z reaches the result only through stop_gradient: None in every variant
    with tfc.GradientTape() as t:
        t.watch([x, z])
        if tfc.reduce_sum(x) > 0.0:
            y = x * tfc.stop_gradient(z)
        else:
            y = x - tfc.stop_gradient(z * z)
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, [x, z])


def sg_while(x):
    with tfc.GradientTape() as t:
        t.watch(x)
        y = x
        i = tfc.constant(0)
        while i < 3:
            y = y * tfc.stop_gradient(y) + x
            i += 1
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def sg_for_nested(x):
    with tfc.GradientTape() as t:
        t.watch(x)
        y = x
        for i in tfc.range(tfc.constant(3)):
            if tfc.reduce_sum(y) > 1.0:
                y = tfc.stop_gradient(y) * 0.5 + y * 0.25
            else:
                y = y * 2.0
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def test_stop_gradient_in_a_taken_branch():
    # eagerly None (the branch taken cuts x), compiled zeros (a branch might not): before, 3.0
    check(sg_if, c(2.0, 1.0), dynamic_none=(0,))
    check(sg_if, c(-2.0, 1.0))


def test_stop_gradient_in_cond_loops_and_nesting():
    for x in (c(2.0, 1.0), c(-2.0, 1.0)):
        check(sg_cond, x)
        check(sg_while, x)
        check(sg_for_nested, x)


def test_stop_gradient_in_every_branch_gives_none():
    got = check(sg_both_branches, c(2.0, 1.0), c(0.5, 3.0))
    assert got[1] is None
    check(sg_both_branches, c(-2.0, 1.0), c(0.5, 3.0))


def test_stop_gradient_is_an_ir_op():
    text = tfc.function(sg_if).get_concrete_function(c(1.0)).ir("tensor-raw")
    assert "tfc.stop_gradient" in text


# -- custom_gradient inside tensor control flow -------------------------------------------------


@tfc.custom_gradient
def clip_grad(x):
    y = tfc.exp(x)

    def grad(dy):
        return tfc.clip_by_value(dy * y, -1.0, 1.0)  # closes over y, computed in the forward

    return y, grad


@tfc.custom_gradient
def straight_through(x):
    def grad(dy):
        return dy  # the gradient of the identity, for a rounding forward

    return tfc.round(x * 4.0) / 4.0, grad


@tfc.custom_gradient
def two_inputs(a, b):
    def grad(dy):
        return dy * 10.0, None  # no gradient for b

    return a * b, grad


def cg_if(x):
    with tfc.GradientTape() as t:
        t.watch(x)
        if tfc.reduce_sum(x) > 0.0:
            y = clip_grad(x)
        else:
            y = x * x
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def cg_cond(x):
    with tfc.GradientTape() as t:
        t.watch(x)
        y = tfc.cond(tfc.reduce_sum(x) > 0.0, lambda: straight_through(x) * 3.0, lambda: x)
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def cg_loop(x):
    # eagerly [1, 1, 1]; compiled it was [3, 3, 3] (the forward ops differentiated)
    with tfc.GradientTape() as t:
        t.watch(x)
        y = x
        for _ in tfc.range(tfc.constant(3)):
            y = straight_through(y * 1.5)
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def cg_while_closure(x):
    with tfc.GradientTape() as t:
        t.watch(x)
        y = x
        i = tfc.constant(0)
        while i < 2:
            y = clip_grad(y * 0.5)
            i += 1
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def cg_several_sources(x, z, w):
    # w is used only as two_inputs's b (its gradient function gives None): None everywhere
    with tfc.GradientTape() as t:
        t.watch([x, z, w])
        if tfc.reduce_sum(x) > 0.0:
            y = two_inputs(x, w) + z
        else:
            y = two_inputs(x * 2.0, w) - z
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, [x, z, w])


def cg_persistent(x):
    with tfc.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tfc.cond(tfc.reduce_sum(x) > 0.0, lambda: straight_through(x * x), lambda: x)
        loss = tfc.reduce_sum(y)
        loss2 = tfc.reduce_sum(y * y)
    return t.gradient(loss, x), t.gradient(loss2, x)


def test_custom_gradient_in_branches():
    for x in (c(0.3, -0.2, 1.1), c(-0.3, -0.2, -1.1)):
        check(cg_if, x)
        check(cg_cond, x)
        check(cg_persistent, x)


def test_custom_gradient_in_loops():
    x = c(0.3, -0.2, 1.1)
    got = check(cg_loop, x)
    np.testing.assert_array_equal(got[0].numpy(), [1.5 ** 3] * 3)  # d/dx of three straight-through steps
    check(cg_while_closure, x)


def test_custom_gradient_several_sources_some_unconnected():
    for x in (c(1.0, 2.0), c(-1.0, -2.0)):
        got = check(cg_several_sources, x, c(0.5, 0.5), c(3.0, 4.0))
        assert got[2] is None


def test_custom_gradient_with_variables_in_a_branch():
    v = tfc.Variable(np.array([0.5, -1.5], F32), name="v")

    @tfc.custom_gradient
    def scaled(x):
        def grad(dy, variables):
            return dy * 2.0, [dy * 100.0]  # deliberately not the forward's gradient

        return x * v, grad

    def f(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            if tfc.reduce_sum(x) > 0.0:
                y = scaled(x)
            else:
                y = x * v
            loss = tfc.reduce_sum(y)
        return t.gradient(loss, [x, v])

    for x in (c(1.0, 2.0), c(-1.0, -2.0)):
        check(f, x)


def test_second_order_through_custom_gradient_and_stop_gradient():
    def f(x):
        with tfc.GradientTape() as outer:
            outer.watch(x)
            with tfc.GradientTape() as inner:
                inner.watch(x)
                if tfc.reduce_sum(x) > 0.0:
                    y = clip_grad(x) + x * tfc.stop_gradient(x) * x
                else:
                    y = x * x * x
                loss = tfc.reduce_sum(y)
            g = inner.gradient(loss, x)
            gg = tfc.reduce_sum(g * g)
        return g, outer.gradient(gg, x)

    for x in (c(0.3, 0.1), c(-0.3, -0.1)):
        check(f, x)


def test_custom_gradient_in_a_compiled_call_under_an_eager_tape():
    cf = tfc.function(cg_forward_only)
    x = c(0.3, -0.2, 1.1)
    with tfc.GradientTape() as t:
        t.watch(x)
        want = tfc.reduce_sum(cg_forward_only(x))
    want_g = t.gradient(want, x)
    with tfc.GradientTape() as t:
        t.watch(x)
        got = cf(x)
    got_g = t.gradient(got, x)
    np.testing.assert_array_equal(got_g.numpy(), want_g.numpy())
    np.testing.assert_array_equal(got_g.numpy(), [1.0, 1.0, 1.0])


def cg_forward_only(x):
    y = straight_through(x)
    if tfc.reduce_sum(x) > 0.0:
        y = y + tfc.stop_gradient(x) * x
    return tfc.reduce_sum(straight_through(y * 0.0 + x)) + tfc.reduce_sum(y) * 0.0


def test_loaded_custom_gradient_raises_instead_of_differentiating_the_forward(tmp_path):
    conc = tfc.function(lambda x: tfc.reduce_sum(straight_through(x))).get_concrete_function(c(0.3, 0.6))
    loaded = tfc.load(tfc.save(conc, str(tmp_path / "st")))
    x = c(0.3, 0.6)
    np.testing.assert_array_equal(loaded(x).numpy(), conc(x).numpy())  # the forward runs
    with tfc.GradientTape() as t:
        t.watch(x)
        y = loaded(x)
    with pytest.raises(NotImplementedError, match="custom_gradient.*not saved"):
        t.gradient(y, x)


def test_custom_gradient_in_nested_branches():
    # the backward of the inner cond replays the outer branch's replay: the gradient
    # function's closure is mapped through both replays
    @tfc.custom_gradient
    def mul(a, b):
        def grad(dy):
            return dy * b * 2.0, dy * a * 3.0

        return a * b, grad

    def f(x, p):
        with tfc.GradientTape() as t:
            t.watch(x)
            v = x * 2.0
            if p > 0.0:
                v = v * 3.0
            else:
                v = v / p
                if tfc.reduce_sum(x) > 0.0:
                    v = tfc.maximum(x, v)
                else:
                    v = mul(v, v)
            loss = tfc.reduce_sum(v)
        return t.gradient(loss, x)

    for x, p in ((c(-1.2, 0.5), -2.0), (c(1.2, 0.5), -2.0), (c(1.2, 0.5), 2.0)):
        check(f, x, tfc.constant(p, tfc.float32))


def test_gradient_with_respect_to_a_branch_output():
    # the source is the cond's output: tracked where the branch taken computed it from x
    def reassigned(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            if tfc.reduce_max(x) < -1.5:
                x = tfc.exp(x)
            else:
                x = tfc.stop_gradient(x) * 2.0
            loss = tfc.reduce_sum(x * x)
        return t.gradient(loss, x)

    def never_tracked(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            if tfc.reduce_max(x) < 0.0:
                y = tfc.round(x)
            else:
                y = tfc.stop_gradient(x) * 2.0
            y = y * 3.0  # computed from an untracked value: untracked too
            loss = tfc.reduce_sum(y * x)
        return t.gradient(loss, [x, y])

    def chained(x):
        # tracked only where the first branch taken keeps x: the second cond inherits that
        with tfc.GradientTape() as t:
            t.watch(x)
            if tfc.reduce_min(x) > -1.5:
                x = tfc.round(x)
            else:
                x = tfc.where(x > 0.5, x, x * 2.0)
            if tfc.reduce_min(x) > 0.0:
                x = x * 4.0
            else:
                x = x - tfc.reduce_mean(x)
            loss = tfc.reduce_sum(x)
        return t.gradient(loss, x)

    check(reassigned, c(-2.0, -3.0))
    check(reassigned, c(2.0, 3.0), dynamic_none=(0,))  # before: the gradient of the branch's output
    got = check(never_tracked, c(1.0, -2.0))
    assert got[1] is None
    check(chained, c(-2.0, -3.0))
    check(chained, c(0.2, 1.3), dynamic_none=(0,))


def test_gradient_with_respect_to_a_loop_output():
    # after a trip, x holds sign(...) (no gradient): eagerly untracked; with no trip, x itself
    def f(x, n):
        with tfc.GradientTape() as t:
            t.watch(x)
            for _ in tfc.range(n):
                x = tfc.sign(x) * 2.0
            loss = tfc.reduce_max(x)
        return t.gradient(loss, x)

    check(f, c(-0.75, 3.0, -0.08), tfc.constant(3), dynamic_none=(0,))  # before: [0, 1, 0]
    check(f, c(-0.75, 3.0, -0.08), tfc.constant(0))


def test_gradient_with_respect_to_a_branch_output_after_a_loop_that_runs():
    # the loop over tfc.range(1) surely runs: x is then stop_gradient's, untracked
    def f(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            if tfc.reduce_min(x) < 2.0:
                for _ in tfc.range(1):
                    x = tfc.stop_gradient(x)
                x = tfc.maximum(x, 1.0)
            else:
                x = x + x
            loss = tfc.reduce_sum(tfc.tile(x, [2]))
        return t.gradient(loss, x)

    check(f, c(-0.4), dynamic_none=(0,))  # before: 2.0
    check(f, c(2.5))


def test_gradient_with_respect_to_a_result_used_inside_is_an_error():
    # eagerly d/dx1 includes x0 = x1 / x0 in the last trip (the same tensor); compiled code
    # has the loop's result, whose uses inside the loop it cannot see: an error, not a wrong value
    def loop(x0, x1):
        with tfc.GradientTape() as t:
            t.watch(x1)
            i = tfc.constant(0)
            while i < 2:
                x1 = x1 * tfc.reduce_sum(x1)
                x0 = x1 / x0
                i += 1
            loss = x1 + x0
        return t.gradient(loss, x1)

    def branch(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            if x > 0.0:
                a = x * 2.0
                b = a * a
            else:
                a = x
                b = x
            loss = a + b
        return t.gradient(loss, a)

    assert loop(c(-1.19)[0], c(-0.04)[0]) is not None
    with pytest.raises(NotImplementedError, match="also uses to compute its other results"):
        tfc.function(loop)(c(-1.19)[0], c(-0.04)[0])
    with pytest.raises(NotImplementedError, match="tfc.cond .* there returns"):
        tfc.function(branch)(c(1.5)[0])


# -- no contribution from a path that did not run ---------------------------------------------


def inf_while(x, n):
    with tfc.GradientTape() as t:
        t.watch(x)
        e = tfc.exp(x * 1000.0)  # inf
        y = x
        i = tfc.constant(0)
        while i < n:
            y = y * e
            i += 1
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def inf_for(x, n):
    with tfc.GradientTape() as t:
        t.watch(x)
        e = tfc.exp(x * 1000.0)
        y = x
        for _ in tfc.range(n):
            y = y + tfc.sqrt(e)
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def inf_if(x, n):
    with tfc.GradientTape() as t:
        t.watch(x)
        e = tfc.exp(x * 1000.0)
        if n > 0:
            y = x * e
        else:
            y = x
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def inf_nested_cond(x, n):
    with tfc.GradientTape() as t:
        t.watch(x)
        e = tfc.exp(x * 1000.0)
        if n > 0:
            if n > 5:
                y = x * e
            else:
                y = x * 3.0
        else:
            y = x
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def test_second_order_through_an_untaken_branch_adds_no_nan():
    # sqrt'(0) is inf: the first gradient's untaken contribution is selected away, and
    # the gradient of that selection reaches only the operand chosen
    def f(x):
        with tfc.GradientTape() as outer:
            outer.watch(x)
            with tfc.GradientTape() as inner:
                inner.watch(x)
                v = tfc.sqrt(x - x)
                y = tfc.cond(tfc.reduce_sum(x) < 3.0, lambda: tfc.square(x), lambda: v / x)
                loss = tfc.reduce_sum(y)
            g = inner.gradient(loss, x)
            gg = tfc.reduce_sum(g)
        return g, outer.gradient(gg, x)

    got = check(f, tfc.constant(0.63, tfc.float64))
    assert got[1].numpy() == 2.0


def test_outputs_without_a_gradient_add_nothing():
    # v2 (from log(0) = -inf) is carried by the loop but not used after it: eagerly its
    # ops get no gradient; a zero for it would be 0 * inf = NaN at log's gradient
    def loop(x, n):
        with tfc.GradientTape() as t:
            t.watch(x)
            v1, v2 = x * 2.0, tfc.log(x)
            for _ in tfc.range(n):
                v1 = v1 * 1.5
                v2 = v2 + 1.0
            loss = tfc.reduce_sum(v1)
        return t.gradient(loss, x)

    def branch(x, n):
        with tfc.GradientTape() as t:
            t.watch(x)
            a = tfc.log(x)
            v1, v2 = tfc.cond(n > 0, lambda: (x * 3.0, a * 2.0), lambda: (x, a))
            loss = tfc.reduce_sum(v1)
        return t.gradient(loss, x)

    for n in (0, 2):
        for f in (loop, branch):
            got = check(f, c(0.0, 1.0), tfc.constant(n))
            assert not np.isnan(got[0].numpy()).any()


@pytest.mark.parametrize("f", [inf_while, inf_for, inf_if, inf_nested_cond])
def test_untaken_path_adds_no_nan(f):
    x = c(1.0, 2.0)
    got = check(f, x, tfc.constant(0))
    assert not np.isnan(got[0].numpy()).any()
    check(f, c(-1.0, -2.0), tfc.constant(2))  # taken: the same bits as eager (inf and NaN included)
    check(inf_nested_cond, x, tfc.constant(1))


# -- loops with run-time shapes ---------------------------------------------------------------


def loop_sin(x):
    with tfc.GradientTape() as t:
        t.watch(x)
        y = x
        for _ in tfc.range(tfc.constant(3)):
            y = tfc.sin(y) * x
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def loop_shrinks(x):
    # a loop variable from (None, 3) to (1, 3): TensorFlow accepts it
    with tfc.GradientTape() as t:
        t.watch(x)
        y = x
        i = tfc.constant(0)
        while i < 3:
            y = tfc.reduce_sum(y * y, axis=0, keepdims=True) * 0.5
            i += 1
        loss = tfc.reduce_sum(y)
    return t.gradient(loss, x)


def loop_grows(x):
    with tfc.GradientTape() as t:
        t.watch(x)
        y = tfc.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, tfc.concat([y, y * x[0]], 0)),
                           [tfc.constant(0), x])[1]
        loss = tfc.reduce_sum(y * y)
    return t.gradient(loss, x)


def loop_second_order(x):
    with tfc.GradientTape() as outer:
        outer.watch(x)
        with tfc.GradientTape() as inner:
            inner.watch(x)
            y = x
            i = tfc.constant(0)
            while i < 2:
                y = tfc.sin(y) * x
                i += 1
            loss = tfc.reduce_sum(y)
        g = inner.gradient(loss, x)
        gg = tfc.reduce_sum(g * g)
    return outer.gradient(gg, x)


def test_loops_with_unknown_dimensions():
    x2 = tfc.constant(np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], F32))
    check(loop_sin, x2)
    check(loop_shrinks, x2, only="none")  # (2, 3) to (1, 3) is an error, as in TensorFlow
    check(loop_grows, c(0.5, -1.5))
    check(loop_second_order, c(0.5, -1.5, 2.0))


def _known_dimension_becomes_unknown(declared):
    def f(x, y):
        with tfc.GradientTape() as t:
            t.watch(y)
            v = tfc.reduce_min(x, keepdims=True)  # (1,) before the loop; (None,) with y's
            i = tfc.constant(0)
            while i < 2:
                if declared:  # (a Python condition: the loop body's first statement is the call)
                    tfc.autograph.set_loop_options(shape_invariants=[(v, (None,))])
                v = tfc.where(v > 0.25, v, y) * y
                i += 1
            loss = tfc.reduce_sum(v)
        return t.gradient(loss, y)
    return f


def test_a_known_dimension_may_become_unknown_where_declared():
    check(_known_dimension_becomes_unknown(True), c(0.5, -1.0), c(0.3, 0.7, 2.0), only="none")


def test_a_known_dimension_that_becomes_unknown_undeclared_is_an_error():
    # TensorFlow's rule: the shape after an iteration is a subshape of the one before
    f = tfc.function(_known_dimension_becomes_unknown(False), input_signature=[
        tfc.TensorSpec((2,), tfc.float32), tfc.TensorSpec((None,), tfc.float32)])
    with pytest.raises(ValueError, match=r"'v' has shape \(1,\) before the loop, but shape \(None,\) after one "
                                         r"iteration.*set_loop_options\(shape_invariants=\[\(v, \(None,\)\)\]\)"):
        f(c(0.5, -1.0), c(0.3, 0.7, 2.0))


def test_a_known_dimension_that_changes_is_still_an_error():
    @tfc.function
    def f(x):
        y = x
        i = tfc.constant(0)
        while i < 2:
            y = tfc.concat([y, y], 0)
            i += 1
        return y

    with pytest.raises(ValueError, match="changes shape in the tensor loop"):
        f(c(1.0, 2.0))


def test_zero_trip_loop_gradient_is_finite_for_inf_inputs():
    x = tfc.constant(np.array([math.inf, 1.0], F32))

    def f(x, n):
        with tfc.GradientTape() as t:
            t.watch(x)
            e = x * x
            y = x
            for _ in tfc.range(n):
                y = y * e
            loss = tfc.reduce_sum(y)
        return t.gradient(loss, x)

    got = check(f, x, tfc.constant(0))
    np.testing.assert_array_equal(got[0].numpy(), [1.0, 1.0])


# -- a result that is, on the path taken, a value from before the op -------------------------


def test_gradient_with_respect_to_a_result_passed_through_unchanged():
    # eagerly the result *is* the value from before (a branch not rebinding it, a loop
    # running zero times, a body returning a captured value): its uses before count too
    def branch(x, p):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = x * 2.0
            z = y * 3.0
            if p > 0.0:
                y = tfc.sin(y)
            loss = tfc.reduce_sum(z * y)
        return t.gradient(loss, y)

    def zero_trips(x1, x2):  # fuzz 90731/304: before, None
        with tfc.GradientTape() as t:
            t.watch(x1)
            x2 = tfc.where(x2 > 0.0, x2, x1)
            i = tfc.constant(0)
            while i < 0:
                x1 = tfc.minimum(x2, x1)
                i = i + 1
            loss = tfc.reduce_sum(x2)
        return t.gradient(loss, x1)

    def trips(x, w, n):
        with tfc.GradientTape() as t:
            t.watch([x, w])
            y = x * 3.0
            v = w * 2.0
            z = y * v
            for _ in tfc.range(n):
                y = tfc.exp(y)
                v = w
            loss = tfc.reduce_sum(y * x) + tfc.reduce_sum(v * w) + tfc.reduce_sum(z)
        return t.gradient(loss, [y, v])

    x = c(0.5, -1.5)
    check(branch, x, tfc.constant(-1.0))
    check(branch, x, tfc.constant(1.0))
    got = check(zero_trips, c(-0.74), c(-1.04))
    assert got[0] is not None
    check(trips, x, c(0.25, 2.0), tfc.constant(0))
    check(trips, x, c(0.25, 2.0), tfc.constant(2))


def test_gradient_with_respect_to_a_loop_result_passed_through_a_branch_is_an_error():
    # fuzz 424242/335: the `if` returns x0, the loop's result, which its body used for x1
    def f(x0, x1):
        with tfc.GradientTape() as t:
            t.watch(x0)
            i = tfc.constant(0)
            while i < 1:
                x0 = x0 - x0
                x1 = x1 * x0
                i = i + 1
            if tfc.reduce_min(x1) < 0.0:
                x0 = x0 * 2.0
            loss = tfc.reduce_sum(x1)
        return t.gradient(loss, x0)

    assert f(c(1.4)[0], c(-1.76)[0]) is not None
    for sig in signatures([c(1.4)[0], c(-1.76)[0]]).values():  # before: None
        with pytest.raises(NotImplementedError, match="tfc.while_loop .* there returns and also uses"):
            tfc.function(f, input_signature=sig)(c(1.4)[0], c(-1.76)[0])


def test_second_order_through_a_loop_of_a_function_infinite_at_its_input():
    # fuzz 424242/39: the history loop's last state (sqrt(0)) has no gradient, and
    # state_list_get's template none either: a zero for them made 0 * inf NaN (eager: -inf)
    def f(x):
        with tfc.GradientTape() as outer:
            outer.watch(x)
            with tfc.GradientTape() as inner:
                inner.watch(x)
                y = x - x
                v = y
                for _ in tfc.range(1):
                    v = tfc.sqrt(v)
                loss = tfc.reduce_sum(v)
            g = inner.gradient(loss, y)
            gg = tfc.reduce_sum(g)
        return g, outer.gradient(gg, y)

    got = check(f, tfc.constant(np.array([0.36]), tfc.float64))
    assert got[1].numpy()[0] == -math.inf  # before: NaN


def test_fuzz_findings_of_constant_trip_loops_and_carried_values():
    # fuzz 90731/9: tfc.range(2) surely runs, so x is ceil's, untracked: None (before: zeros)
    def ceil_loop(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            for _ in tfc.range(2):
                x = tfc.ceil(x)
            x = tfc.square(x)
            loss = tfc.reduce_sum(x / x)
        return t.gradient(loss, x)

    # fuzz 90731/241: v3 (cos(inf) = NaN) is carried but not used after: no gradient
    # flows through it (before: 0 * NaN into x0's)
    def carried_nan(x0, x1):
        with tfc.GradientTape() as t:
            t.watch([x0, x1])
            v2 = x1 * x1
            v3 = x0 * 0.5
            i = tfc.constant(0)
            while i < 3:
                v2 = v2 * 2.0
                v3 = tfc.cos(v3)
                i = i + 1
            loss = tfc.reduce_sum(x1 / x0) + v2
        return t.gradient(loss, x0)

    assert check(ceil_loop, c(-0.24))[0] is None
    got = check(carried_nan, tfc.constant(np.array([[0.82, math.inf]])), tfc.constant(-0.34, tfc.float64))
    assert not np.isnan(got[0].numpy()).any()


def test_gradient_with_respect_to_a_result_a_nested_op_may_pass_through_is_an_error():
    # which value the result is depends on paths inside the branch or loop: an error,
    # not a gradient without the uses before (before: 5 where eager has 10 for p > 0 > q)
    def nested(x, p, q):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = x * 2.0
            u = y * 5.0
            if p > 0.0:
                if q > 0.0:
                    y = tfc.sin(y)
            loss = tfc.reduce_sum(u * y)
        return t.gradient(loss, y)

    def swap(x, n):  # after one trip a is b's value from before the loop
        with tfc.GradientTape() as t:
            t.watch(x)
            a, b = x * 2.0, x * 3.0
            u = a * 5.0
            for _ in tfc.range(n):
                a, b = b, a
            loss = tfc.reduce_sum(a * b) + tfc.reduce_sum(u)
        return t.gradient(loss, a)

    x = c(0.5, -1.5)
    with pytest.raises(NotImplementedError, match="tfc.cond .* may return unchanged from before it"):
        tfc.function(nested)(x, tfc.constant(1.0), tfc.constant(-1.0))
    with pytest.raises(NotImplementedError, match="tfc.while_loop .* or from another loop variable"):
        tfc.function(swap)(x, tfc.constant(1))


def test_gradient_with_respect_to_a_passed_through_result_a_branch_also_uses():
    # the branch returns y unchanged and computes w from it: eagerly y is the value
    # from before, so its gradient includes w's (before: the "also uses" error)
    def f(x, p):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = x * 2.0
            u = y * 5.0
            y, w = tfc.cond(p > 0.0, lambda: (y, y * 2.0), lambda: (tfc.sin(y), y))
            loss = tfc.reduce_sum(u * y) + tfc.reduce_sum(w)
        return t.gradient(loss, [y, w])

    for p in (-1.0, 1.0):
        check(f, c(0.5, -1.5), tfc.constant(p))


def test_an_untracked_result_reached_from_the_value_before_gets_none():
    # fuzz 90731/209 (sources rebound): tfc.range(1) surely runs, so y is round's, untracked;
    # its initial value (which a zero-trip loop would pass through) is tracked: still None
    def f(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = x * 2.0
            for _ in tfc.range(1):
                y = tfc.round(y)
            loss = tfc.reduce_sum(y * x)
        return t.gradient(loss, y)

    assert check(f, c(0.3, -1.4))[0] is None
