"""tfc.zeros / tfc.ones / tfc.fill with a shape given by traced tensors
(``dynamic_fill``): eager vs compiled bit for bit, the static shape the trace
knows, gradients by finite differences, and the errors (a run-time rank,
bad dims)."""
import numpy as np
import pytest

import tfc
from tfc.core import nest
from helpers import assert_bit_identical, check_grad
from tfc.ops.creation import dynamic_fill


def _same_as_eager(f, *args):
    want = f(*args)
    got = tfc.function(f)(*args)
    for g, w in zip(nest.flatten(got), nest.flatten(want)):
        assert g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape)
        assert_bit_identical(g.numpy(), w.numpy())


def _traced_shapes(f, *args):
    """The static shapes of ``f``'s results, as its trace knows them."""
    seen = []

    def traced(*a):
        out = f(*a)
        seen.append([tuple(t.shape) for t in nest.flatten(out)])
        return out

    tfc.function(traced).get_concrete_function(*args)
    return seen[-1]


def creations(n, m):
    return (tfc.zeros([1, n, 2]), tfc.ones([n, m], tfc.int64), tfc.fill([m], 2.5),
            tfc.zeros((n,), dtype=tfc.bool), tfc.ones(tfc.stack([n, n]), "int8"),
            tfc.fill(dims=tfc.stack([m, tfc.constant(3, tfc.int64)]), value=tfc.constant(-7, "int8")), tfc.zeros(n), tfc.ones([]))


@pytest.mark.parametrize("n,m", [(0, 0), (1, 3), (4, 2)])
def test_creation_with_traced_dims_matches_eager(n, m):
    _same_as_eager(creations, tfc.constant(n), tfc.constant(m, tfc.int64))


def test_known_dims_stay_known_in_the_trace():
    shapes = _traced_shapes(creations, tfc.constant(2), tfc.constant(3, tfc.int64))
    assert shapes == [(1, None, 2), (None, None), (None,), (None,), (None, None), (None, None), (None,), ()]


def test_dims_known_while_tracing_make_the_static_op():
    def f(x):
        return tfc.zeros([2, tfc.constant(3)]) + x, tfc.fill(tfc.constant([2, 1]), x)

    assert _traced_shapes(f, tfc.constant(1.0)) == [(2, 3), (2, 1)]
    assert "dynamic_fill" not in tfc.function(f).get_concrete_function(tfc.constant(1.0)).ir("tensor")
    _same_as_eager(f, tfc.constant(1.5))


def test_the_dims_computed_in_the_function():
    def f(x, k):
        n = tfc.reduce_sum(tfc.cast(x > 0, tfc.int32))
        return tfc.fill([n + k, n], tfc.reduce_max(x)) * 2.0

    for x in ([1.0, -2.0, 3.0], [-1.0], [0.5, 0.25]):
        _same_as_eager(f, tfc.constant(x), tfc.constant(1))


def test_in_a_tensor_loop():
    def f(n):
        i = tfc.constant(0)
        total = tfc.constant(0.0)
        while i < n:
            total += tfc.reduce_sum(tfc.ones([i, 2]))
            i += 1
        return total

    _same_as_eager(f, tfc.constant(4))
    _same_as_eager(f, tfc.constant(0))


def test_gradient_of_the_value():
    def f(v, x):
        n = tfc.reduce_sum(tfc.ones_like(x, tfc.int32))  # known when the function runs
        return tfc.fill([n, 2], v[0]) * x[:, None]

    def traced(v, x):
        return tfc.function(f)(v, x)

    check_grad(f, np.array([1.5]), np.array([1.0, -2.0, 0.5]))
    check_grad(traced, np.array([1.5]), np.array([1.0, -2.0, 0.5]))


def test_gradient_through_a_traced_dim():
    @tfc.function
    def f(v, n):
        with tfc.GradientTape() as tape:
            tape.watch(v)
            y = tfc.reduce_sum(tfc.fill([n, 3], v) * v)
        return tape.gradient(y, v)

    # d/dv sum(v * v over n * 3 elements) = 2 * v * n * 3
    assert f(tfc.constant(1.25, tfc.float64), tfc.constant(4)).numpy() == 2 * 1.25 * 12


def test_a_run_time_rank_is_a_clear_error():
    def f(k):
        return tfc.zeros(tfc.range(k))

    with pytest.raises(ValueError, match=r"zeros: the shape is a 1-d tensor of length known only at run time "
                                         r"\(int32\[\?\]\).*tfc needs every rank while tracing") as e:
        tfc.function(f)(tfc.constant(2))
    assert any("test_autograph_run_time_shapes.py" in note for note in e.value.__notes__)


@pytest.mark.parametrize("shape,error,pattern", [
    (lambda n: [n, 1.5], TypeError, r"zeros: shape\[1\] must be an int"),
    (lambda n: [tfc.cast(n, tfc.float32)], TypeError, r"zeros: shape\[0\] must be an integer scalar, got float32"),
    (lambda n: [tfc.stack([n, n])], TypeError, r"zeros: shape\[0\] must be an integer scalar, got int32\[2\]"),
    (lambda n: tfc.cast(tfc.stack([n]), tfc.float32), TypeError, "zeros: shape must be a 1-d integer tensor"),
    (lambda n: [n, -1], ValueError, r"zeros: shape\[1\] must be >= 0"),
])
def test_bad_shapes_while_tracing(shape, error, pattern):
    with pytest.raises(error, match=pattern):
        tfc.function(lambda n: tfc.zeros(shape(n))).get_concrete_function(tfc.constant(2))


def test_a_negative_run_time_dim_fails_when_it_runs():
    f = tfc.function(lambda n: tfc.zeros([n, 2]))
    with pytest.raises(Exception, match=r"dynamic_fill: dimensions must be >= 0, got \(-1, 2\)"):
        f(tfc.constant(-1))
    # eager's error for the same shape
    with pytest.raises(ValueError, match=r"zeros: shape\[0\] must be >= 0"):
        tfc.zeros([tfc.constant(-1), 2])


def test_dynamic_fill_checks_its_dims_against_the_static_shape():
    with pytest.raises(ValueError, match=r"dims \(2, 4\) differ from the shape known when tracing \(-1, 3\)"):
        dynamic_fill(tfc.constant([2, 4]), 1.0, (-1, 3))
    with pytest.raises(ValueError, match="dims has 2 elements but shape"):
        dynamic_fill(tfc.constant([2, 4]), 1.0, (-1,))
    with pytest.raises(ValueError, match="value must be a scalar"):
        dynamic_fill(tfc.constant([2]), tfc.constant([1.0]), (-1,))
    assert_bit_identical(dynamic_fill(tfc.constant([2, 3], tfc.int64), 1.5, (-1, 3)).numpy(),
                         np.full((2, 3), 1.5, np.float32))


def test_the_gpu_lowering_names_the_op():
    f = tfc.function(lambda n: tfc.zeros([n, 2]), target="cuda")
    with pytest.raises(NotImplementedError, match="no GPU kernel for dynamic_fill"):
        f.get_concrete_function(tfc.constant(2)).ir("ptx")
