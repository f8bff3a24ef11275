"""Defects the fuzz campaign found (issue #16), each as the program that
showed it, compiled on the numpy backend and compared bit for bit with eager
(static and None signatures)."""
import numpy as np
import pytest

import tfc


def same(got, want):
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        assert np.array_equal(g, w, equal_nan=True), (g, w)


def check(fn, x, signature):
    want = fn(tfc.constant(x))
    f = tfc.function(fn, input_signature=[tfc.TensorSpec(signature, tfc.as_dtype(x.dtype))])
    same(f(tfc.constant(x)), want)
    same(f(tfc.constant(x)), want)  # the arena reused


@tfc.custom_gradient
def _cg_softplus(x):
    def grad(dy):
        return dy * tfc.sigmoid(x)
    return tfc.softplus(x), grad


def _loops_after_replay(x0):
    # The gradient's forward replay of the first loop carries its variable in
    # no buffers (its state lists view it), an elementwise gradient kernel
    # then reuses the variable's copied-out buffer in place, and the backward
    # loop of the second while_loop takes that buffer as its entry buffer: an
    # escaping value made before that loop (the replay's yielded value)
    # references it. tfc-bufferize copied the loop's result out again and
    # again ("the loop buffers did not settle"); it now gives the loop an
    # entry buffer of its own.
    with tfc.GradientTape() as t:
        t.watch(x0)
        v1 = tfc.add(x0, tfc.softplus(x0))
        i1 = tfc.constant(0)
        while i1 < 2:
            v1 = v1 - tfc.reduce_mean(v1, axis=1, keepdims=True)
            i1 = i1 + 1
        v2 = _cg_softplus(v1) @ tfc.transpose(_cg_softplus(v1))
        _, v3 = tfc.while_loop(lambda i, a: i < 1, lambda i, a: (i + 1, tfc.add(a, x0)),
                               [tfc.constant(0), v1])
        loss = tfc.reduce_sum(v2) + tfc.reduce_sum(v3)
    return v2, v3, t.gradient(loss, x0)


@pytest.mark.parametrize("signature", [(3, 2), (None, 2), (None, None)])
def test_loop_entry_buffer_referenced_by_an_earlier_escaping_value(signature):
    x = np.array([[0.09, 0.24], [0.29, -0.42], [-0.68, 0.68]], np.float32)
    check(_loops_after_replay, x, signature)


@pytest.mark.parametrize("shape", [(5, 3), (1, 1), (0, 2)])
def test_loop_entry_buffer_random(shape):
    x = np.random.default_rng(4049).standard_normal(shape).astype(np.float32)
    check(_loops_after_replay, x, shape)
