"""Sparse autoencoder trained with L-BFGS (the UFLDL exercise): 784-196-784,
sigmoid units, KL sparsity penalty (rho = 0.1, beta = 3), weight decay 3e-3.
The cost and its gradient are one compiled tfc.function of the flat parameter
vector; L-BFGS (two-loop recursion, backtracking line search) runs in numpy.

    python examples/autoencoder_lbfgs.py [--iterations N] [--samples M]
    tfc compile examples/autoencoder_lbfgs.py

Data: scikit-learn's 8x8 digits scaled up to 28x28 when scikit-learn is
installed, else smooth random blobs (no download either way).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tfc

VISIBLE, HIDDEN = 784, 196
RHO, BETA, DECAY = 0.1, 3.0, 3e-3
N_PARAMS = 2 * VISIBLE * HIDDEN + HIDDEN + VISIBLE


def unpack(theta):
    """(W1, b1, W2, b2) views of the flat parameter vector."""
    a, b = VISIBLE * HIDDEN, 2 * VISIBLE * HIDDEN
    w1 = tfc.reshape(theta[:a], (VISIBLE, HIDDEN))
    w2 = tfc.reshape(theta[a:b], (HIDDEN, VISIBLE))
    return w1, theta[b:b + HIDDEN], w2, theta[b + HIDDEN:]


def cost(theta, x):
    """Mean squared reconstruction error / 2 + weight decay + KL sparsity."""
    w1, b1, w2, b2 = unpack(theta)
    hidden = tfc.sigmoid(x @ w1 + b1)
    out = tfc.sigmoid(hidden @ w2 + b2)
    n = x.shape[0]
    error = 0.5 * tfc.reduce_sum(tfc.square(out - x)) / n
    decay = 0.5 * DECAY * (tfc.reduce_sum(tfc.square(w1)) + tfc.reduce_sum(tfc.square(w2)))
    rho_hat = tfc.reduce_mean(hidden, axis=0)
    kl = tfc.reduce_sum(RHO * tfc.log(RHO / rho_hat) + (1 - RHO) * tfc.log((1 - RHO) / (1 - rho_hat)))
    return error + decay + BETA * kl


def cost_and_gradient(theta, x):
    with tfc.GradientTape() as tape:
        tape.watch(theta)
        j = cost(theta, x)
    return j, tape.gradient(j, theta)


SAMPLES = 500  # the compiled function's batch (the gradient needs static shapes)
compiled_cost_and_gradient = tfc.function(
    cost_and_gradient, input_signature=[tfc.TensorSpec((N_PARAMS,)), tfc.TensorSpec((SAMPLES, VISIBLE))])


def initial_theta(seed=0):
    """Uniform in +-sqrt(6 / (fan_in + fan_out + 1)), zero biases (UFLDL's choice)."""
    r = np.sqrt(6.0 / (VISIBLE + HIDDEN + 1))
    rng = np.random.default_rng(seed)
    w = rng.uniform(-r, r, 2 * VISIBLE * HIDDEN)
    return np.concatenate([w, np.zeros(HIDDEN + VISIBLE)]).astype(np.float32)


def load_patches(samples=SAMPLES, seed=0):
    """``samples`` images of 28x28 in [0.1, 0.9] (sigmoid outputs can reach them)."""
    rng = np.random.default_rng(seed)
    try:
        from sklearn.datasets import load_digits

        digits = load_digits().images[rng.permutation(1797)[:samples]] / 16.0
        images = np.pad(np.kron(digits, np.ones((1, 3, 3))), ((0, 0), (2, 2), (2, 2)))
    except ImportError:
        yy, xx = np.mgrid[:28, :28]
        centers = rng.uniform(6, 22, (samples, 2, 1, 1))
        images = np.exp(-((yy - centers[:, 0]) ** 2 + (xx - centers[:, 1]) ** 2) / 20.0)
    return (0.1 + 0.8 * images.reshape(samples, VISIBLE)).astype(np.float32)


def lbfgs(fg, theta, iterations=50, memory=10, verbose=True):
    """Minimise ``fg(theta) -> (value, gradient)`` (numpy in and out) with
    L-BFGS: the two-loop recursion gives the direction, a backtracking line
    search (Armijo) the step. Returns (theta, list of values)."""
    f, g = fg(theta)
    history, values = [], [f]
    for it in range(iterations):
        # two-loop recursion: d = -H g with H from the last `memory` (s, y) pairs
        q = g.astype(np.float64)
        alphas = []
        for s, y, rho in reversed(history):
            a = rho * np.dot(s, q)
            alphas.append(a)
            q -= a * y
        if history:
            s, y, _ = history[-1]
            q *= np.dot(s, y) / np.dot(y, y)
        for (s, y, rho), a in zip(history, reversed(alphas)):
            q += s * (a - rho * np.dot(y, q))
        d = -q
        if np.dot(d, g) >= 0:  # not a descent direction: restart from the gradient
            d, history = -g.astype(np.float64), []
        step = 1.0
        while True:
            new = (theta + step * d).astype(np.float32)
            f_new, g_new = fg(new)
            if f_new <= f + 1e-4 * step * np.dot(g, d) or step < 1e-10:
                break
            step *= 0.5
        s, y = (new - theta).astype(np.float64), (g_new - g).astype(np.float64)
        if np.dot(s, y) > 1e-10:
            history = (history + [(s, y, 1.0 / np.dot(s, y))])[-memory:]
        theta, f, g = new, f_new, g_new
        values.append(f)
        if verbose:
            print(f"iteration {it + 1:3d}  cost {f:.6f}  step {step:g}")
    return theta, values


def train(iterations=50, samples=SAMPLES, seed=0, verbose=True):
    """Returns (theta, cost values per iteration, seconds)."""
    x = tfc.constant(load_patches(samples, seed))
    fn = compiled_cost_and_gradient if samples == SAMPLES else tfc.function(cost_and_gradient)

    def fg(theta):
        j, grad = fn(tfc.constant(theta), x)
        return float(j), grad.numpy()

    start = time.perf_counter()
    theta, values = lbfgs(fg, initial_theta(seed), iterations, verbose=verbose)
    return theta, values, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--samples", type=int, default=SAMPLES)
    args = parser.parse_args(argv)
    _, values, seconds = train(args.iterations, args.samples)
    print(f"cost {values[0]:.4f} -> {values[-1]:.4f} in {args.iterations} iterations, {seconds:.1f} s")
    return values


if __name__ == "__main__":
    main()
