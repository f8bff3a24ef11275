"""Loops without reallocation (issue #16, point 7): tfc.while carries its tensor
state in two planned arena buffers swapped per iteration (tfc-bufferize's Slot),
copies an escaping result out once after the loop, and keeps bit-identity with
eager for views, branches, nested loops, zero trips, shapes that change and
gradients."""
import re

import numpy as np
import pytest

import tfc
from tfc.dialects import loops as L


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def same(got, want):
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        w = np.zeros_like(g) if w is None else np.asarray(w)  # eager: no gradient (a loop of no trips)
        assert g.shape == w.shape and g.dtype == w.dtype
        assert np.array_equal(g, w, equal_nan=True), np.max(np.abs(g - w))


def check(fn, *args):
    """Compiled == eager bit for bit, the arguments untouched; returns the concrete function."""
    before = [np.array(a, copy=True) for a in args]
    f = tfc.function(fn)
    got = f(*args)
    for a, b in zip(args, before):
        assert np.array_equal(np.asarray(a), b), "the compiled function wrote into an argument"
    same(got, fn(*args))
    same(f(*args), got)  # a second call (arena reused) gives the same
    return f.get_concrete_function(*args)


def loop_allocs(cf):
    """loops.alloc ops inside a loops.while body of the L3 module."""
    out = []
    for op in cf.loops_module.walk():
        if isinstance(op, L.AllocOp):
            p = op.parent_op()
            while p is not None and not isinstance(p, L.WhileOp):
                p = p.parent_op()
            if p is not None:
                out.append(op)
    return out


def while_lines(source):
    """The lines of the generated Python inside each ``while`` statement."""
    lines = source.splitlines()
    out = []
    for i, line in enumerate(lines):
        if re.match(r"\s*while\b", line):
            ind = len(line) - len(line.lstrip())
            for inner in lines[i + 1:]:
                if inner.strip() and len(inner) - len(inner.lstrip()) <= ind:
                    break
                out.append(inner)
    return out


def no_alloc_in_loops(cf):
    assert not loop_allocs(cf), [str(a) for a in loop_allocs(cf)]
    body = while_lines(cf.source)
    assert body, "no loop in the generated code"
    assert not [ln for ln in body if "np.empty" in ln or "rt.empty" in ln], "\n".join(body)


def carried_in_plan(cf, n):
    """``n`` arena buffers of the plan are loop buffers (made by the tfc.while)."""
    mine = [b for b in cf.memory_plan.buffers if b.kind == "arena" and b.op.startswith("tfc.while")]
    assert len(mine) == n, str(cf.memory_plan)
    return mine


def halve_loop(x, n):
    i = tfc.constant(0)
    _, y = tfc.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 0.5 + tfc.sin(x)), (i, x))
    return y


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_loop_state_in_planned_buffers(n):
    x = f32(5, 7)
    cf = check(lambda x: halve_loop(x, n), x)
    no_alloc_in_loops(cf)
    carried_in_plan(cf, 1)  # the elementwise update writes the variable's buffer in place
    # the result escapes: one fresh buffer, copied once after the loop
    fresh = [b for b in cf.memory_plan.buffers if b.kind == "fresh"]
    assert len(fresh) == 1 and fresh[0].op.startswith("tfc.while")


@pytest.mark.parametrize("n", [0, 1, 4])
def test_double_buffer_when_the_old_value_is_read_elsewhere(n):
    """x * 0.5 + transpose(x): the kernel reads x at other indices than it
    writes, so the next value goes into a spare buffer (two, swapped)."""
    def fn(x):
        return tfc.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 0.5 + tfc.transpose(x)),
                              (tfc.constant(0), x))[1]

    cf = check(fn, f32(6, 6, seed=20))
    no_alloc_in_loops(cf)
    carried_in_plan(cf, 2)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_old_value_read_after_the_update(n):
    """The old x is read (s + x) after the kernel making the new x: no in place."""
    def fn(x):
        def body(i, x, s):
            y = x * 0.5 - 1.0
            return i + 1, y, tfc.reduce_sum(y) + s * x
        return tfc.while_loop(lambda i, x, s: i < n, body, (tfc.constant(0), x, x * 2.0))[1:]

    cf = check(fn, f32(5, 4, seed=21))
    no_alloc_in_loops(cf)


def test_loop_state_run_time_trip_count():
    f = tfc.function(halve_loop)
    x = f32(3, 4, seed=1)
    for n in (0, 1, 3, 4):
        before = x.copy()
        same(f(x, tfc.constant(n)), halve_loop(x, tfc.constant(n)))
        assert np.array_equal(x, before)
    no_alloc_in_loops(f.get_concrete_function(x, tfc.constant(0)))


def test_init_made_by_kernel_is_the_loop_buffer():
    """An init that dies at the loop is the loop's first buffer (no copy in)."""
    def fn(x, n):
        return halve_loop(x * 3.0 - 1.0, n)

    x = f32(4, 6)
    cf = check(fn, x, tfc.constant(3))
    copies = [op for op in cf.loops_module.walk() if isinstance(op, L.CopyOp)
              and not isinstance(op.parent_op(), L.WhileOp)]
    assert len(copies) == 1  # the copy out after the loop only
    no_alloc_in_loops(cf)


@pytest.mark.parametrize("n", [0, 3])
def test_init_used_after_loop_is_not_overwritten(n):
    def fn(x):
        t = x * 2.0
        y = halve_loop(t, tfc.constant(n))
        return y + t, t

    cf = check(fn, f32(3, 5))
    no_alloc_in_loops(cf)


def test_result_not_escaping_stays_in_the_arena():
    def fn(x, n):
        return tfc.reduce_sum(halve_loop(x, n) * 2.0, axis=1)

    cf = check(fn, f32(6, 5), tfc.constant(4))
    no_alloc_in_loops(cf)
    assert not [b for b in cf.memory_plan.buffers if b.kind == "fresh" and b.op.startswith("tfc.while")]


def test_carried_views_and_swaps():
    def fn(a, b, n):
        i = tfc.constant(0)

        def body(i, a, b, c, r):
            a2 = a * 1.25 + b     # reads both old values
            return i + 1, b - a, a2, tfc.reshape(a2, (6, 2)), tfc.reshape(b, (6, 2))  # views of others

        return tfc.while_loop(lambda i, *s: i < n, body, (i, a, b, tfc.reshape(a, (6, 2)), tfc.reshape(b, (6, 2))))[1:]

    a, b = f32(3, 4, seed=2), f32(3, 4, seed=3)
    for n in (0, 1, 4):
        cf = check(fn, a, b, tfc.constant(n))
    no_alloc_in_loops(cf)


def test_fibonacci_swap():
    """(a, b) -> (b, a + b): a variable's new value is another's old one."""
    def fn(a, b, n):
        return tfc.while_loop(lambda i, a, b: i < n, lambda i, a, b: (i + 1, b, a + b),
                              (tfc.constant(0), a, b))[1:]

    for n in (0, 1, 2, 5):
        cf = check(fn, f32(2, 3, seed=4), f32(2, 3, seed=5), tfc.constant(n))
    no_alloc_in_loops(cf)


def test_loop_invariant_variable():
    def fn(x, w, n):
        return tfc.while_loop(lambda i, x, w: i < n, lambda i, x, w: (i + 1, x * w + 1.0, w),
                              (tfc.constant(0), x, w))

    check(fn, f32(4, 4, seed=6), f32(4, 4, seed=7), tfc.constant(3))


@pytest.mark.parametrize("p", [True, False])
def test_loop_in_branch(p):
    def fn(x, p):
        return tfc.cond(p, lambda: halve_loop(x, tfc.constant(3)), lambda: x * 2.0)

    cf = check(fn, f32(3, 3), tfc.constant(p))
    no_alloc_in_loops(cf)


def test_branch_in_loop():
    def fn(x, n):
        def body(i, x):
            return i + 1, tfc.cond(tfc.reduce_sum(x) > 0.0, lambda: x * 0.5 - 1.0, lambda: x + 2.0)

        return tfc.while_loop(lambda i, x: i < n, body, (tfc.constant(0), x))[1]

    for n in (0, 1, 6):
        check(fn, f32(5, 3, seed=8), tfc.constant(n))


@pytest.mark.parametrize("n,m", [(0, 2), (2, 0), (3, 2)])
def test_nested_loops(n, m):
    def fn(x):
        def outer(i, x):
            y = tfc.while_loop(lambda j, y: j < m, lambda j, y: (j + 1, y * 0.75 + x), (tfc.constant(0), x))[1]
            return i + 1, y - 0.5
        return tfc.while_loop(lambda i, x: i < n, outer, (tfc.constant(0), x))[1]

    cf = check(fn, f32(4, 3, seed=9))
    no_alloc_in_loops(cf)


def test_assigned_in_loop():
    """A value assigned to a variable inside the body is the variable's: a
    buffer of its own each iteration; the loop copies it into its spare."""
    v = tfc.Variable(np.zeros((3, 3), np.float32))

    def fn(x, n):
        def body(i, x):
            y = x * 1.5 - 0.25
            v.assign(y)
            return i + 1, y
        return tfc.while_loop(lambda i, x: i < n, body, (tfc.constant(0), x))[1]

    x = f32(3, 3, seed=10)
    f = tfc.function(fn)
    got = f(x, tfc.constant(3))
    got_v = v.numpy().copy()
    v.assign(np.zeros((3, 3), np.float32))
    same([got, got_v], [fn(x, tfc.constant(3)), v.numpy()])


def test_shape_changing_state_keeps_allocating():
    """A variable whose shape changes per iteration has no static buffer: the
    loop allocates its new value each iteration (documented)."""
    def fn(x, n):
        return tfc.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, tfc.concat([x, x * 2.0], 0)),
                              (tfc.constant(0), x))[1]

    check(fn, f32(2, 3, seed=11), tfc.constant(3))


def test_non_contiguous_and_empty():
    x = f32(6, 8, seed=12)[:, ::2]
    assert not x.flags.c_contiguous
    check(lambda x: halve_loop(x, tfc.constant(3)), x)
    check(lambda x: halve_loop(x, tfc.constant(3)), np.zeros((0, 5), np.float32))


def test_gradient_of_loop_bitwise():
    def fn(x, w, n):
        with tfc.GradientTape() as t:
            t.watch([x, w])
            y = tfc.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, tfc.sin(y * w) + y),
                               (tfc.constant(0), x))[1]
            s = tfc.reduce_sum(y)
        return t.gradient(s, [x, w])

    x, w = tfc.constant(f32(3, 4, seed=13).astype(np.float64)), tfc.constant(f32(3, 4, seed=14).astype(np.float64))
    for n in (0, 1, 4):
        check(fn, x, w, tfc.constant(n))
