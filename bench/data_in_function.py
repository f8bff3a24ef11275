"""A loop over a tfc.data.Dataset compiled (a ``for`` over the dataset inside
``tfc.function``) against the same loop in Python calling a compiled step.

    python bench/data_in_function.py [--rows 10000] [--repeat 5]

Prints a markdown table (docs/data.md): milliseconds per pass (best of
``--repeat``) over ``--rows`` rows of 64 float32 features: a sum of squares per
batch of 64, the same per row (2000 rows), and a linear-regression SGD step per
batch of 64 (a tape and a variable update in the loop); each checks that both
give the same bits.
"""
from __future__ import annotations

import argparse

import numpy as np

import tfc
from harness import time_fn  # (bench/, this script's directory)
from tfc.data import Dataset


def best_ms(f, repeat: int) -> float:
    """The fastest of ``repeat`` single calls after one (which traces and compiles)."""
    return time_fn(f, repeats=repeat, warmup=1, number=1)[1] * 1e3


def sum_of_squares(ds):
    acc = tfc.constant(0.0)
    for xb in ds:
        acc = acc + tfc.reduce_sum(xb * xb)
    return acc


def sgd(w):
    def step(xb, yb):
        with tfc.GradientTape() as tape:
            loss = tfc.reduce_mean((tfc.matmul(xb, w) - yb) ** 2)
        w.assign_sub(0.01 * tape.gradient(loss, w))
        return loss

    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(args.rows, 64)).astype(np.float32)
    y = x @ rng.normal(size=(64, 1)).astype(np.float32)

    print("| loop | elements | Python loop + compiled step (ms) | compiled loop (ms) |")
    print("| --- | ---: | ---: | ---: |")
    step = tfc.function(lambda acc, xb: acc + tfc.reduce_sum(xb * xb))
    compiled = tfc.function(sum_of_squares)
    for name, ds in (("sum of squares, batches of 64", Dataset.from_tensor_slices(x).batch(64, drop_remainder=True)),
                     ("sum of squares, rows", Dataset.from_tensor_slices(x[:2000]))):
        def python_loop():
            acc = tfc.constant(0.0)
            for xb in ds:
                acc = step(acc, xb)
            return acc

        assert np.array_equal(python_loop().numpy(), compiled(ds).numpy())
        print(f"| {name} | {len(ds)} | {best_ms(python_loop, args.repeat):.2f} | "
              f"{best_ms(lambda: compiled(ds), args.repeat):.2f} |")

    ds = Dataset.from_tensor_slices((x, y)).batch(64, drop_remainder=True)
    w1, w2 = (tfc.Variable(np.zeros((64, 1), np.float32)) for _ in range(2))
    step1, step2 = tfc.function(sgd(w1)), sgd(w2)

    def python_epoch():
        for xb, yb in ds:
            loss = step1(xb, yb)
        return loss

    @tfc.function
    def compiled_epoch(ds):
        loss = tfc.constant(0.0)
        for xb, yb in ds:
            loss = step2(xb, yb)
        return loss

    a, b = python_epoch(), compiled_epoch(ds)
    assert np.array_equal(a.numpy(), b.numpy()) and np.array_equal(w1.numpy(), w2.numpy())
    print(f"| SGD step, batches of 64 | {len(ds)} | {best_ms(python_epoch, args.repeat):.2f} | "
          f"{best_ms(lambda: compiled_epoch(ds), args.repeat):.2f} |")


if __name__ == "__main__":
    main()
