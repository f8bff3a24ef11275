"""Huber loss, eager and compiled: fit a line to data with outliers by gradient
descent, with the training step compiled by tfc.function.

    python examples/huber.py [--steps N]
    tfc compile examples/huber.py            # summary of huber_loss and train_step
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tfc


def huber(residual, delta=1.0):
    """Quadratic near zero, linear beyond ``delta``: outliers pull less."""
    a = tfc.abs(residual)
    return tfc.where(a <= delta, 0.5 * a * a, delta * (a - 0.5 * delta))


@tfc.function(input_signature=[tfc.TensorSpec((None,)), tfc.TensorSpec((None,))])
def huber_loss(y_true, y_pred):
    return tfc.reduce_mean(huber(y_true - y_pred))


w = tfc.Variable(0.0, name="w")
b = tfc.Variable(0.0, name="b")


def step(x, y, learning_rate=0.5):
    """One gradient step on the mean Huber loss of the line w * x + b."""
    with tfc.GradientTape() as tape:
        loss = tfc.reduce_mean(huber(y - (w * x + b)))
    gw, gb = tape.gradient(loss, [w, b])
    w.assign_sub(learning_rate * gw)
    b.assign_sub(learning_rate * gb)
    return loss


train_step = tfc.function(step, input_signature=[tfc.TensorSpec((None,)), tfc.TensorSpec((None,))])


def make_data(n=200, seed=0):
    """y = 2x + 1 plus noise, with a tenth of the points thrown far off."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = (2 * x + 1 + 0.05 * rng.standard_normal(n)).astype(np.float32)
    y[:: 10] += 20.0
    return x, y


def fit(fn, x, y, steps):
    """Train from w = b = 0: the loss, w, b, the first step's time (for a
    tfc.function not yet traced, tracing and compiling too) and the mean time
    of the other steps."""
    w.assign(0.0)
    b.assign(0.0)
    start = time.perf_counter()
    loss = fn(x, y)
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(steps - 1):
        loss = fn(x, y)
    per_step = (time.perf_counter() - start) / max(steps - 1, 1)
    return float(loss), float(w), float(b), first, per_step


def timing(first, per_step) -> str:
    return f"first step {first * 1e3:.1f} ms, then {per_step * 1e3:.3f} ms per step"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}")
    x, y = (tfc.constant(a) for a in make_data())
    results = {}
    for label, fn in (("eager", step), ("compiled", train_step)):  # the first compiled step traces and compiles
        loss, wv, bv, first, per_step = fit(fn, x, y, args.steps)
        results[label] = (wv, bv)
        print(f"{label:9s} w={wv:.4f} b={bv:.4f} loss={loss:.4f}  {timing(first, per_step)}")
    print("least squares would give", np.round(np.polyfit(x.numpy(), y.numpy(), 1), 3), "(pulled by the outliers)")
    return results


if __name__ == "__main__":
    main()
