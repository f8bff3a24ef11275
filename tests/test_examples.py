"""examples/: each runs (short), and `tfc compile` compiles each."""
import importlib.util
import io
import pathlib
import re
import sys

import numpy as np
import pytest

import tfc
from tfc.compile_cli import compile_main

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
NAMES = ["huber", "collatz", "mlp_digits", "autoencoder_lbfgs", "demo", "transformer_lm", "cnn_digits"]


def example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", NAMES)
def test_tfc_compile_each_example(name, capsys):
    out = io.StringIO()
    assert compile_main([str(EXAMPLES / f"{name}.py")], out=out) == 0, capsys.readouterr().err
    assert "fused kernels" in out.getvalue()


def test_huber_eager_and_compiled_agree():
    results = example("huber").main(["--steps", "40"])
    np.testing.assert_allclose(results["eager"], results["compiled"], rtol=1e-5)


def test_huber_loss_matches_numpy():
    m = example("huber")
    r = np.array([-3.0, -0.5, 0.0, 0.2, 2.0], np.float32)
    want = np.mean(np.where(np.abs(r) <= 1, 0.5 * r * r, np.abs(r) - 0.5))
    assert float(m.huber_loss(tfc.constant(r), tfc.zeros((5,)))) == pytest.approx(want)


def test_collatz_matches_python():
    m = example("collatz")
    steps = m.main(["--n", "12"])
    assert steps == [m.collatz(n) for n in range(1, 13)] and steps[6] == 16


def test_autoencoder_gradient_and_lbfgs_descent():
    m = example("autoencoder_lbfgs")
    theta = m.initial_theta(1)
    x = m.load_patches(m.SAMPLES)
    j, g = m.compiled_cost_and_gradient(tfc.constant(theta), tfc.constant(x))
    j_eager, g_eager = m.cost_and_gradient(tfc.constant(theta), tfc.constant(x))
    # compiled (multi-output kernels, chunked sums in numpy's order) is eager to the bit
    assert float(j) == float(j_eager)
    np.testing.assert_array_equal(g.numpy(), g_eager.numpy())
    # a directional finite difference in float64 numpy agrees with the gradient
    rng = np.random.default_rng(0)
    d = rng.standard_normal(theta.shape).astype(np.float32) * 1e-2

    def numpy_cost(t):
        t = t.astype(np.float64)
        a, b, v, h = 2 * 784 * 196, 784 * 196, 784, 196
        w1, w2 = t[:b].reshape(v, h), t[b:a].reshape(h, v)
        b1, b2 = t[a:a + h], t[a + h:]
        hid = 1 / (1 + np.exp(-(x @ w1 + b1)))
        out = 1 / (1 + np.exp(-(hid @ w2 + b2)))
        rho = hid.mean(0)
        return (0.5 * np.sum((out - x) ** 2) / len(x) + 0.5 * 3e-3 * (np.sum(w1 ** 2) + np.sum(w2 ** 2))
                + 3 * np.sum(0.1 * np.log(0.1 / rho) + 0.9 * np.log(0.9 / (1 - rho))))

    assert numpy_cost(theta) == pytest.approx(float(j), rel=1e-4)
    fd = (numpy_cost(theta + d) - numpy_cost(theta - d)) / 2
    assert float(np.dot(g.numpy().astype(np.float64), d)) == pytest.approx(fd, rel=1e-2)
    _, values, _ = m.train(iterations=4, verbose=False)
    assert all(b <= a for a, b in zip(values, values[1:])) and values[-1] < values[0] / 2


def test_mlp_digits_compiles_without_scikit_learn(capsys):
    m = example("mlp_digits")  # importing needs no data
    probs = m.predict(tfc.constant(np.zeros((2, 64), np.float32))).numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_demo_runs(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["demo.py"])
    example("demo").main()
    out = capsys.readouterr().out
    assert "eager == compiled: True" in out


def test_huber_compiled_step_takes_any_length():
    m = example("huber")  # gradients through None dimensions: one trace for every data size
    for n in (50, 120):
        x, y = (tfc.constant(a) for a in m.make_data(n, seed=n))
        eager = m.fit(m.step, x, y, 5)[:3]
        np.testing.assert_allclose(m.fit(m.train_step, x, y, 5)[:3], eager, rtol=1e-5)
    assert m.train_step.trace_count == 1


@pytest.mark.parametrize("name, argv, pattern", [
    ("huber", ["--steps", "3"], r"compiled .* first step [\d.]+ ms, then [\d.]+ ms per step"),
    ("collatz", ["--n", "3"], r"compiled [\d.]+ ms for the 3 calls \(after a first call of [\d.]+ ms that traced"),
])
def test_example_timings_keep_compile_time_apart(name, argv, pattern, capsys):
    example(name).main(argv)  # the first call's compile time is never in the steady-state figure
    assert re.search(pattern, capsys.readouterr().out)


def test_transformer_lm_few_steps(tmp_path):
    result = example("transformer_lm").main(["--steps", "3", "--sample", "10", "--checkpoint", str(tmp_path / "gpt")])
    assert len(result["losses"]) == 3 and all(np.isfinite(result["losses"]))
    assert pathlib.Path(result["checkpoint"]).exists()
    assert len(result["sample"]) == len("Shall I ") + 10


def test_cnn_digits_few_steps():
    pytest.importorskip("sklearn")
    result = example("cnn_digits").main(["--steps", "3"])
    assert len(result["losses"]) == 3 and result["accuracy"] == result["restored_accuracy"]
