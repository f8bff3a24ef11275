"""Gradients on the GPU (issue #17 point 5), on the simulated driver (and a
real one where there is one: the ``gpu`` variants): an eager GradientTape over
ops on GPU variables, and a target="cuda" function called under an outer tape,
whose backward function is compiled for cuda too (tfc/frontend/cfgrad.py) and
runs on the device; each gradient returns to its input's device. Every
gradient is checked against the same computation on the CPU."""
from __future__ import annotations

import numpy as np
import pytest

import tfc
from tfc.core.tensor import GpuTensor

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RNG = np.random.default_rng(3)
X0 = RNG.standard_normal((5, 3)).astype(np.float32)
W0 = RNG.standard_normal((3, 4)).astype(np.float32)
B0 = RNG.standard_normal((4,)).astype(np.float32)
LABELS = np.array([0, 3, 1, 2, 3], np.int32)


def _loss(x, w, b, labels=None):
    h = tfc.tanh(tfc.matmul(x, w) + b)
    labels = tfc.constant(LABELS) if labels is None else labels
    ce = tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=h)
    return tfc.reduce_mean(ce) + 0.1 * tfc.reduce_sum(w * w)


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-6)


def _variables(gpu: bool):
    if gpu:
        with tfc.device("gpu:0"):
            return tfc.Variable(tfc.constant(W0)), tfc.Variable(tfc.constant(B0))
    return tfc.Variable(tfc.constant(W0)), tfc.Variable(tfc.constant(B0))


def _cpu_grads():
    w, b = _variables(False)
    x = tfc.constant(X0)
    with tfc.GradientTape() as t:
        t.watch(x)
        y = _loss(x, w, b) * 3.0
    return t.gradient(y, [x, w, b])


def test_eager_tape_over_gpu_variables(cuda_driver):
    w, b = _variables(True)
    x = tfc.constant(X0).gpu()
    with tfc.GradientTape() as t:
        t.watch(x)
        y = _loss(x, w, b, tfc.constant(LABELS).gpu()) * 3.0
    got = t.gradient(y, [x, w, b])
    assert all(type(g) is GpuTensor for g in got)
    for g, want in zip(got, _cpu_grads()):
        _close(g, want)


@pytest.mark.parametrize("x_on_gpu", [True, False])
def test_cuda_function_under_outer_tape(cuda_driver, x_on_gpu):
    """Two calls of a cuda function (gradients add up), a GPU input or a host
    one, GPU variables: the backward is a cuda function; the gradient of the
    host input comes back to the host, the others stay on the GPU."""
    w, b = _variables(True)
    f = tfc.function(lambda x: _loss(x, w, b), target="cuda")
    x = tfc.constant(X0).gpu() if x_on_gpu else tfc.constant(X0)
    with tfc.GradientTape(persistent=True) as t:
        t.watch(x)
        y = f(x) + f(x) * 2.0
    got = t.gradient(y, [x, w, b])
    again = t.gradient(y, [x, w, b])  # a persistent tape: the backward runs again, same values
    assert (type(got[0]) is GpuTensor) == x_on_gpu
    assert type(got[1]) is GpuTensor and type(got[2]) is GpuTensor
    (bwd, *_), = [f.get_concrete_function(x)._backward]
    assert bwd.target == "cuda"
    for g, g2, want in zip(got, again, _cpu_grads()):
        _close(g, want)
        assert np.array_equal(np.asarray(g), np.asarray(g2))


def test_cuda_function_with_control_flow_under_tape(cuda_driver):
    """A cuda function with a data-dependent tfc.cond: its backward (replayed
    through the branch taken) runs on the GPU too."""
    def g(x):
        s = tfc.reduce_sum(x)
        return tfc.cond(s > 0, lambda: tfc.reduce_sum(x * x), lambda: tfc.reduce_sum(tfc.exp(x)))

    for sign in (1.0, -1.0):
        xv = (np.abs(X0) * sign).astype(np.float32)
        want_t, got_t = tfc.constant(xv), tfc.constant(xv).gpu()
        with tfc.GradientTape() as t1:
            t1.watch(want_t)
            y1 = tfc.function(g)(want_t)
        with tfc.GradientTape() as t2:
            t2.watch(got_t)
            y2 = tfc.function(g, target="cuda")(got_t)
        got = t2.gradient(y2, got_t)
        assert type(got) is GpuTensor
        _close(got, t1.gradient(y1, want_t))
