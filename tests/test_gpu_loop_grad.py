"""Differentiated tensor loops on cuda (tfc/backends/cuda/lists.py): where the
trip count or a shape is known only at run time, the loop gradient keeps each
trip's state in state lists, which the host program runs as device-to-device
copies. Results on the PTX simulator (and a GPU where there is one) equal the
numpy backend's bit for bit: 0, 1 and 3 trips, loops with and without
maximum_iterations, 0-d loop variables (host scalars), float32 and float64."""
from __future__ import annotations

import numpy as np
import pytest

import tfc

pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator has not landed")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _same(fn, *args, **kw):
    want = tfc.function(fn, **kw)(*args)
    got = tfc.function(fn, target="cuda", **kw)(*args)
    for w, g in zip(_flat(want), _flat(got)):
        w, g = np.asarray(w), np.asarray(g)
        assert w.dtype == g.dtype and w.shape == g.shape and np.array_equal(w, g), (w, g)
    return got


def _flat(v):
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    return [v]


def autograph_while(x, w):
    while tfc.reduce_sum(x) < 20.0:  # trip count known only at run time
        x = x * w + 0.5
    return x


def grad_of_while(x, w):
    with tfc.GradientTape() as t:
        t.watch([x, w])
        y = tfc.reduce_sum(autograph_while(x, w) ** 2)
    return y, t.gradient(y, [x, w])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("x0,trips", [([15.0, 10.0], 0), ([8.0, 9.0], 1), ([1.0, 2.0], 3)])
def test_autograph_while_gradient(cuda_driver, dtype, x0, trips):
    x, w = tfc.constant(np.array(x0, dtype)), tfc.constant(np.array([1.5, 2.0], dtype))
    n, v = 0, np.array(x0, dtype)
    while v.sum() < 20.0:
        v, n = v * np.array([1.5, 2.0], dtype) + dtype_(dtype)(0.5), n + 1
    assert n == trips
    _same(grad_of_while, x, w)


def dtype_(name):
    return np.dtype(name).type


def counted(x, w, limit=None):
    """A tfc.while_loop with a counter (a 0-d int32 variable: a host scalar) and
    a 0-d float variable, without or with maximum_iterations."""
    def body(i, s, x):
        return i + 1, s * 1.25 + tfc.reduce_sum(x), x * w + s
    return tfc.while_loop(lambda i, s, x: i < 3, body, [tfc.constant(0), tfc.constant(0.5, x.dtype), x],
                          maximum_iterations=limit)


@pytest.mark.parametrize("limit", [None, 2, 5])
def test_while_loop_with_scalar_variables(cuda_driver, limit):
    def f(x, w):
        with tfc.GradientTape() as t:
            t.watch([x, w])
            _, s, y = counted(x, w, limit)
            loss = s + tfc.reduce_sum(y * y)
        return loss, t.gradient(loss, [x, w])
    _same(f, tfc.constant(np.array([0.3, -0.7, 1.1])), tfc.constant(np.array([0.9, 1.2, -0.4])))


def test_trip_count_from_an_argument(cuda_driver):
    """The trip count is an argument: one compiled function runs 0, 1 and 4 trips."""
    def f(x, n):
        with tfc.GradientTape() as t:
            t.watch(x)
            acc = tfc.zeros_like(x)
            for i in tfc.range(n):
                acc = acc + tfc.sin(x * tfc.cast(i + 1, x.dtype))
                x = x * 1.5
            y = tfc.reduce_sum(acc)
        return y, t.gradient(y, x)
    x = tfc.constant(np.array([0.3, 0.7, -1.2]))
    fc, fn = tfc.function(f, target="cuda"), tfc.function(f)
    for n in (0, 1, 4):
        got, want = fc(x, tfc.constant(n)), fn(x, tfc.constant(n))
        for g, w in zip(_flat(got), _flat(want)):
            assert np.array_equal(np.asarray(g), np.asarray(w)), (n, g, w)


def test_matches_eager(cuda_driver):
    x, w = tfc.constant(np.array([1.0, 2.0])), tfc.constant(np.array([1.5, 2.0]))
    got = tfc.function(grad_of_while, target="cuda")(x, w)
    want = grad_of_while(x, w)
    for g, e in zip(_flat(got), _flat(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-12)


def test_lists_stay_on_the_host():
    """tfc-lower-gpu leaves the state lists to the host program: no kernel for them."""
    from test_lower_gpu import kernels, lower

    x, w = tfc.constant(np.array([1.0, 2.0])), tfc.constant(np.array([1.5, 2.0]))
    text = tfc.function(grad_of_while).get_concrete_function(x, w).ir("loops")
    m = lower(text)
    assert not any("state_list" in k.sym_name.data for k in kernels(m))
    assert 'loops.library "state_list_push"' in str(m) and 'loops.library "state_list_get"' in str(m)


def test_second_order_names_the_user_line(cuda_driver):
    """Second order through a loop without maximum_iterations needs kernels of
    run-time size (the lists' arithmetic): a clear error at the user's line."""
    def f(x):
        with tfc.GradientTape() as t2:
            t2.watch(x)
            with tfc.GradientTape() as t1:
                t1.watch(x)
                y = tfc.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tfc.sin(x) * x), [tfc.constant(0), x])[1]
            g = t1.gradient(y, x)
        return t2.gradient(g, x)
    x = tfc.constant(np.array([0.7, -0.3]))
    tfc.function(f)(x)  # the numpy backend runs it
    with pytest.raises(NotImplementedError, match=r"the gradient of a tensor loop on cuda of second order without maximum_iterations.*"
                                                  r"test_gpu_loop_grad.py:\d+"):
        tfc.function(f, target="cuda")(x)


def test_second_order_with_a_limit(cuda_driver):
    """With maximum_iterations (and static shapes) the states go to fixed-size
    buffers: second order runs on cuda."""
    def f(x):
        with tfc.GradientTape() as t2:
            t2.watch(x)
            with tfc.GradientTape() as t1:
                t1.watch(x)
                y = tfc.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tfc.sin(x) * x), [tfc.constant(0), x],
                                   maximum_iterations=3)[1]
            g = t1.gradient(y, x)
        return t2.gradient(g, x)
    _same(f, tfc.constant(np.array([0.7, -0.3])))


def nested(x, n):
    """A while loop whose trip count depends on the outer counter, inside a
    tensor for loop: the inner loop's lists are made and read in the outer
    body."""
    for i in tfc.range(n):
        j = tfc.constant(0)
        while j < i:
            x = x * x * 0.5 + 0.25
            j = j + 1
        x = x * 0.9
    return x


@pytest.mark.parametrize("n", [0, 1, 3])
def test_nested_loops(cuda_driver, n):
    def f(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = tfc.reduce_sum(nested(x, tfc.constant(n)) ** 2)
        return y, t.gradient(y, x)
    _same(f, tfc.constant(np.array([0.3, -0.5, 1.2])))
