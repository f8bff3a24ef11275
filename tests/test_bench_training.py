"""The training benchmarks compute the same thing in tfc as in hand-written numpy
(bench/mlp_step.py, bench/lbfgs_autoencoder.py). Numerical checks only, no timing."""
import pathlib
import weakref
import sys

import numpy as np
import pytest

import tfc

_BENCH = str(pathlib.Path(__file__).resolve().parents[1] / "bench")
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)

import lbfgs_autoencoder  # noqa: E402
import mlp_step  # noqa: E402


@pytest.mark.parametrize("optimizer", [False, True])
def test_mlp_step_tfc_matches_numpy(optimizer):
    x, labels, params = mlp_step.make_data(batch=64)
    ref = [p.copy() for p in params]
    step, variables = mlp_step.make_tfc(x, labels, params, optimizer=optimizer)
    for _ in range(2):  # the second step starts from the updated parameters
        want = mlp_step.numpy_step(x, labels, ref)
        got = step()
        assert got.dtype == tfc.float32
        np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
        for v, p in zip(variables, ref):
            assert v.dtype == tfc.float32
            np.testing.assert_allclose(v.numpy(), p, rtol=1e-4, atol=1e-6)


def test_mlp_numpy_loss_is_the_cross_entropy():
    x, labels, params = mlp_step.make_data(batch=8)
    w1, b1, w2, b2 = (p.astype(np.float64) for p in params)
    logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    assert float(mlp_step.numpy_step(x, labels, params)) == pytest.approx(-logp[np.arange(8), labels].mean(), rel=1e-5)


def test_mlp_first_losses_agree_without_peers():
    x, labels, params = mlp_step.make_data(batch=32)
    losses = mlp_step.check_same_first_loss(mlp_step.implementations({}, x, labels, params))
    assert set(losses) == {"numpy (by hand)", "tfc eager", "tfc eager, optimizers.SGD", "tfc compiled"}


def _numeric_grad(f, theta, idx, eps=1e-3):
    out = []
    for i in idx:
        t1, t2 = theta.astype(np.float64), theta.astype(np.float64)
        t1[i] += eps
        t2[i] -= eps
        out.append((f(t1) - f(t2)) / (2 * eps))
    return np.array(out)


def test_autoencoder_hand_gradient_matches_finite_differences():
    x, theta, _, _ = lbfgs_autoencoder.make_problem(batch=50, history=1)
    x = x.astype(np.float64)
    idx = [0, 1000, 160000, 307000, 2 * 784 * 196 + 3, 308307]  # W1, W2, b1, b2
    num = _numeric_grad(lambda t: lbfgs_autoencoder.numpy_value_and_grad(x, t)[0], theta, idx, eps=1e-5)
    _, grad = lbfgs_autoencoder.numpy_value_and_grad(x, theta.astype(np.float64))
    np.testing.assert_allclose(grad[idx], num, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("history", [1, 5])
def test_lbfgs_tfc_matches_numpy(history):
    x, theta, S, Y = lbfgs_autoencoder.make_problem(batch=200, history=history)
    ref = lbfgs_autoencoder.make_numpy(x, theta, S, Y, history)
    run = lbfgs_autoencoder.make_tfc(x, theta, S, Y, history)
    assert run.loss.dtype == tfc.float32 and run.grad.dtype == tfc.float32
    np.testing.assert_allclose(float(run.loss), float(ref.loss), rtol=1e-5)
    np.testing.assert_allclose(run.grad.numpy(), ref.grad, rtol=1e-3, atol=1e-6)
    for _ in range(history + 1):  # past the full history: the oldest pair is dropped
        want, got = ref.iterate(), run.iterate()
        np.testing.assert_allclose(float(got), float(want), rtol=1e-4)
    assert len(run.S) == len(ref.S) == history
    np.testing.assert_allclose(run.theta.numpy(), ref.theta, rtol=1e-3, atol=1e-5)


def test_lbfgs_decreases_the_loss():
    x, theta, S, Y = lbfgs_autoencoder.make_problem(batch=200, history=5)
    run = lbfgs_autoencoder.make_numpy(x, theta, S, Y, 5)
    first = float(run.loss)
    for _ in range(5):
        last = float(run.iterate())
    assert np.isfinite(last) and last < first


def test_scripts_run_in_quick_mode(capsys):
    mlp_step.main(["--quick", "--no-peers", "--repeats", "1"])
    lbfgs_autoencoder.main(["--quick", "--no-peers", "--repeats", "1"])
    out = capsys.readouterr().out
    assert "| tfc eager |" in out and "| tfc compiled |" in out and "ratio vs numpy (by hand)" in out
    assert "history 5" in out and "history 100" in out


def test_square_by_multiplication_gradients():
    # x * x takes one product in its gradient rule; first and second derivatives stay right
    x = tfc.constant([1.0, -2.0, 3.0])
    with tfc.GradientTape() as outer:
        outer.watch(x)
        with tfc.GradientTape() as inner:
            inner.watch(x)
            y = tfc.reduce_sum(x * x * x)
        g = inner.gradient(y, x)
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    np.testing.assert_allclose(outer.gradient(g, x).numpy(), 6 * x.numpy())


def test_mlp_compiled_step_matches_eager():
    # the whole step under tfc.function: same loss, gradients (seen through the
    # updates) and updated weights as the eager step, over two steps
    x, labels, params = mlp_step.make_data(batch=64)
    eager, ev = mlp_step.make_tfc(x, labels, params)
    compiled, cv = mlp_step.make_tfc(x, labels, params, compiled=True)
    for _ in range(2):
        want, got = eager(), compiled()
        assert got.dtype == tfc.float32
        np.testing.assert_allclose(float(got), float(want), rtol=1e-6)
        for a, b in zip(cv, ev):
            assert a.dtype == tfc.float32
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)
    assert compiled.trace_count == 1


def test_mlp_compiled_gradients_match_eager():
    x, labels, params = mlp_step.make_data(batch=32)
    tx, tl = tfc.constant(x), tfc.constant(labels)
    variables = [tfc.Variable(p) for p in params]

    def loss_and_grads():
        with tfc.GradientTape() as tape:
            loss = mlp_step.tfc_loss(tx, tl, variables)
        return loss, tape.gradient(loss, variables)

    want_loss, want = loss_and_grads()
    got_loss, got = tfc.function(loss_and_grads)()
    np.testing.assert_allclose(float(got_loss), float(want_loss), rtol=1e-6)
    for g, w in zip(got, want):
        assert g.dtype == tfc.float32
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("history", [1, 5])
def test_lbfgs_compiled_matches_eager(history):
    x, theta, S, Y = lbfgs_autoencoder.make_problem(batch=200, history=history)
    eager = lbfgs_autoencoder.make_tfc(x, theta, S, Y, history)
    comp = lbfgs_autoencoder.make_tfc(x, theta, S, Y, history, compiled=True)
    assert comp.loss.dtype == tfc.float32 and comp.grad.dtype == tfc.float32
    np.testing.assert_allclose(float(comp.loss), float(eager.loss), rtol=1e-6)
    np.testing.assert_allclose(comp.grad.numpy(), eager.grad.numpy(), rtol=1e-5, atol=1e-7)
    for _ in range(history + 1):
        want, got = eager.iterate(), comp.iterate()
        np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
        np.testing.assert_allclose(comp.grad.numpy(), eager.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(comp.theta.numpy(), eager.theta.numpy(), rtol=1e-5, atol=1e-7)


def test_mlp_memory_rows():
    x, labels, params = mlp_step.make_data(batch=16)
    rows = {name: b for name, b, _ in mlp_step.memory_rows(x, labels, params)}
    assert rows["tfc eager"] > 0 and rows["tfc compiled, plan"] > 0
    assert "Peak memory" in mlp_step.memory_table(list(mlp_step.memory_rows(x, labels, params)))


def test_compiled_update_reuses_the_variable_array_only_when_unshared():
    # v.assign_sub(...) under tfc.function writes into the variable's own array
    # when nothing else holds it, like eager; a tensor read before keeps its value
    v = tfc.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    f = tfc.function(lambda: v.assign_sub(0.5 * v.read_value()))
    f()
    arr = weakref.ref(v._value)  # a weak reference does not count as holding it
    f()
    assert v._value is arr()
    np.testing.assert_allclose(v.numpy(), np.arange(6).reshape(2, 3) / 4)
    held = v.read_value()
    f()
    assert v._value is not arr()
    np.testing.assert_allclose(held.numpy(), np.arange(6).reshape(2, 3) / 4)
    np.testing.assert_allclose(v.numpy(), np.arange(6).reshape(2, 3) / 8)
    assert "argument 0's storage" in str(f.get_concrete_function().memory_plan)


def test_mlp_compiled_memory_plan_within_60_percent_of_eager_peak():
    """The optimizing-pipeline issue's memory target, measured in bytes (not
    time): the compiled step's plan (arena + fresh + one worker's scratch) at
    most 60% of the eager step's tracemalloc peak, at the benchmark's batch."""
    x, labels, params = mlp_step.make_data()
    rows = {case: nbytes for case, nbytes, _ in mlp_step.memory_rows(x, labels, params)}
    assert rows["tfc compiled, plan"] <= 0.6 * rows["tfc eager"], rows
