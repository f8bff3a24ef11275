"""A gradient that compiled control flow gives only on some run-time paths stays
"none" there all the way up, as eager's None: never a zero, which the gradient
of an op with an infinite or NaN derivative (sqrt at 0 or below) would turn into
NaN where eager gives a number. Each case is NaN-prone on purpose; eager is
the reference, compiled results must equal it bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest

import tfc
from tests.test_cf_grad_defects import c, check


def cond_outputs_guarded_apart(x):
    # y1's gradient exists only where the second cond takes its then branch, y2's
    # always: the first cond gets one guarded and one plain output gradient
    with tfc.GradientTape() as t:
        t.watch(x)
        y1, y2 = tfc.cond(tfc.reduce_sum(x) < 0.0, lambda: (tfc.sqrt(x), x * 2.0), lambda: (x, x))
        z = tfc.cond(tfc.reduce_sum(x) > 100.0, lambda: y1 * 3.0, lambda: x * 0.5)
        loss = tfc.reduce_sum(z) + tfc.reduce_sum(y2)
    return t.gradient(loss, x)


def loop_output_guarded(x):
    # a loop whose output a later branch may not use, next to one used plainly
    with tfc.GradientTape() as t:
        t.watch(x)
        a, b = x * 1.0, x * 1.0
        i = tfc.constant(0)
        while i < 2:
            a, b = tfc.sqrt(b), b * 1.5
            i += 1
        z = tfc.cond(tfc.reduce_sum(x) > 100.0, lambda: a * 3.0, lambda: x * 0.5)
        loss = tfc.reduce_sum(z) + tfc.reduce_sum(b)
    return t.gradient(loss, x)


def loop_stops_its_variable(x):
    # the body gives a's previous value no gradient: on the trips before the
    # last, a's gradient does not exist (sqrt'(0) is inf)
    with tfc.GradientTape() as t:
        t.watch(x)
        a, b = x * 1.0, x * 1.0
        i = tfc.constant(0)
        while i < 2:
            a, b = tfc.stop_gradient(a) + tfc.sqrt(b), b + 1.0
            i += 1
        loss = tfc.reduce_sum(a) + tfc.reduce_sum(b)
    return t.gradient(loss, x)


def loop_body_branch(x, n):
    # a branch in the body gives a's gradient only on some trips
    with tfc.GradientTape() as t:
        t.watch(x)
        a, b = x * 1.0, x * 1.0
        i = tfc.constant(0)
        while i < n:
            if i > 0:
                a, b = tfc.stop_gradient(a) + tfc.sqrt(b), b + 1.0
            else:
                a, b = a * 2.0, b + 1.0
            i += 1
        loss = tfc.reduce_sum(a) + tfc.reduce_sum(b)
    return t.gradient(loss, x)


@pytest.mark.parametrize("case", [cond_outputs_guarded_apart, loop_output_guarded])
def test_guarded_output_gradients(case):
    want = check(case, c(-1.0, -2.0))
    assert not np.isnan(want[0].numpy()).any()


def test_loop_variable_without_gradient_on_earlier_trips():
    want = check(loop_stops_its_variable, c(0.0, 0.0))
    np.testing.assert_array_equal(want[0].numpy(), [1.5, 1.5])


@pytest.mark.parametrize("n", [0, 1, 3])
def test_loop_body_branch(n):
    check(loop_body_branch, c(-1.0, 0.0), tfc.constant(n))


def _through_call(fn):
    def outer(a, p):
        with tfc.GradientTape() as t:
            t.watch(a)
            s = tfc.sqrt(a)
            loss = tfc.reduce_sum(fn(s, p)) + tfc.reduce_sum(a * 0.574)
        return t.gradient(loss, a)
    return outer


def _stops_where(x, p):
    if p > 0.0:
        return tfc.stop_gradient(x) * 2.0
    return x * 3.0


@pytest.mark.parametrize("p", [1.0, -1.0])
def test_compiled_call_gives_none_on_the_path_taken(p):
    """An eager tape over a compiled call: the input's gradient is None where the
    branch taken stops it (sqrt's gradient of -1 is never computed), as eagerly."""
    a, pred = c(-1.0, 0.25), tfc.constant(np.float32(p))
    want = _through_call(_stops_where)(a, pred)
    got = _through_call(tfc.function(_stops_where))(a, pred)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    if p > 0:
        np.testing.assert_array_equal(got.numpy(), np.float32([0.574, 0.574]))


def test_compiled_call_none_and_seeded_totals():
    """The call's gradient adds onto the gradient so far in eager's order
    whether or not one exists (a Guarded seed in the backward function)."""
    def outer(fn):
        def run(a, p):
            with tfc.GradientTape() as t:
                t.watch(a)
                s = a * 1.1
                loss = tfc.reduce_sum(s * 0.3) + tfc.reduce_sum(fn(s, p)) + tfc.reduce_sum(fn(s * 0.7, -p))
            return t.gradient(loss, a)
        return run
    for p in (1.0, -1.0):
        a, pred = c(0.3, 1.7), tfc.constant(np.float32(p))
        np.testing.assert_array_equal(outer(tfc.function(_stops_where))(a, pred).numpy(),
                                      outer(_stops_where)(a, pred).numpy())


def second_order_through_flagged_loop(x):
    with tfc.GradientTape() as t2:
        t2.watch(x)
        with tfc.GradientTape() as t:
            t.watch(x)
            a, b = x * 1.0, x * 1.0
            i = tfc.constant(0)
            while i < 2:
                a, b = tfc.stop_gradient(a) + tfc.sqrt(b), b * b
                i += 1
            loss = tfc.reduce_sum(a) + tfc.reduce_sum(b)
        g = t.gradient(loss, x)
        loss2 = tfc.reduce_sum(g * g)
    return g, t2.gradient(loss2, x)


def nested_loops_with_a_branch(x):
    with tfc.GradientTape() as t:
        t.watch(x)
        a = x * 1.0
        i = tfc.constant(0)
        while i < 2:
            j = tfc.constant(0)
            b = a
            while j < 2:
                if tfc.reduce_sum(b) > 100.0:
                    b = tfc.sqrt(b) + b
                else:
                    b = b * 0.5
                j += 1
            a = tfc.stop_gradient(a) + b
            i += 1
        loss = tfc.reduce_sum(a)
    return t.gradient(loss, x)


def test_second_order_through_a_flagged_loop():
    check(second_order_through_flagged_loop, c(0.5, 2.0))


def test_nested_loops_with_a_branch():
    check(nested_loops_with_a_branch, c(0.0, -1.0))


def test_compiled_call_with_a_variable_and_a_branch():
    """A variable read by a compiled call whose branch taken stops its gradient:
    None, as eagerly (the tape's own None, not a zero)."""
    v = tfc.Variable(np.float32([-1.0, 4.0]))

    def fn(x, p):
        if p > 0.0:
            return tfc.stop_gradient(v) * x
        return v * x

    compiled = tfc.function(fn)
    for p in (1.0, -1.0):
        x, pred = c(2.0, 3.0), tfc.constant(np.float32(p))
        grads = []
        for f in (fn, compiled):
            with tfc.GradientTape() as t:
                t.watch(x)
                y = tfc.reduce_sum(f(x, pred))
            grads.append(t.gradient(y, [x, v]))
        (ex, ev), (cx, cv) = grads
        np.testing.assert_array_equal(cx.numpy(), ex.numpy())
        assert (ev is None) == (cv is None) == (p > 0)
        if ev is not None:
            np.testing.assert_array_equal(cv.numpy(), ev.numpy())


@tfc.custom_gradient
def _first_gets_none(x, y):
    def grad(dy):
        return None, dy * 2.0
    return x * y, grad


def loop_custom_gradient_none(x):
    # the custom gradient gives a's previous value None: a zero would meet sqrt'(0)
    with tfc.GradientTape() as t:
        t.watch(x)
        a, b = x * 1.0, x * 1.0
        i = tfc.constant(0)
        while i < 2:
            a, b = _first_gets_none(a, b) + tfc.sqrt(b), b + 1.0
            i += 1
        loss = tfc.reduce_sum(a) + tfc.reduce_sum(b)
    return t.gradient(loss, x)


def test_loop_custom_gradient_none():
    want = check(loop_custom_gradient_none, c(0.0, 0.0))
    np.testing.assert_array_equal(want[0].numpy(), [3.5, 3.5])


def test_compiled_call_custom_gradient_none():
    """A custom gradient's None for a compiled call's input: None, as eagerly
    (the backward function's seed came back as the input's gradient)."""
    fn = _through_call(lambda s, y: _first_gets_none(s, y))
    a, y = c(-1.0, 0.0), c(1.0, 2.0)
    want = fn(a, y)
    np.testing.assert_array_equal(want.numpy(), np.float32([0.574, 0.574]))
    np.testing.assert_array_equal(_through_call(tfc.function(lambda s, y: _first_gets_none(s, y)))(a, y).numpy(),
                                  want.numpy())


def loop_captured_on_later_trips(x, n):
    # x's gradient flows only on trips i > 0, onto one it had before the loop
    with tfc.GradientTape() as t:
        t.watch(x)
        a = tfc.zeros_like(x)
        i = tfc.constant(0)
        while i < n:
            if i > 0:
                a = a + x * x
            i += 1
        loss = tfc.reduce_sum(a) + tfc.reduce_sum(tfc.sqrt(x))
    return t.gradient(loss, x)


def second_order_flagged_loop_trips(x, n):
    # the first-order gradient stops on trips i > 0; zero or one trip included
    with tfc.GradientTape() as t2:
        t2.watch(x)
        with tfc.GradientTape() as t:
            t.watch(x)
            a, b = x * 1.0, x * 1.0
            i = tfc.constant(0)
            while i < n:
                if i > 0:
                    a = tfc.stop_gradient(a) + b * b * b
                else:
                    a = a * 2.0
                b = b + 1.0
                i += 1
            loss = tfc.reduce_sum(a) + tfc.reduce_sum(b)
        g = t.gradient(loss, x)
        s = tfc.reduce_sum(g * g)
    return g, t2.gradient(s, x)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_flagged_loops_by_trip_count(n):
    """Every trip count, zero and one included: a captured value whose gradient
    flows on some trips keeps the one it had (sqrt'(0) = inf meets no zero),
    and second order through a loop whose flags change from trip to trip."""
    want = check(loop_captured_on_later_trips, c(0.0, 2.0), tfc.constant(n))
    assert np.isinf(want[0].numpy()[0]) and not np.isnan(want[0].numpy()).any()
    check(second_order_flagged_loop_trips, c(0.5, 2.0), tfc.constant(n), dynamic_none=(1,) if n < 2 else ())
