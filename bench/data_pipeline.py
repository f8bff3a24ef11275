"""Throughput of tfc.data pipelines and the cost of a TensorBoard scalar.

    python bench/data_pipeline.py [--rows 10000] [--repeat 3]

Prints a markdown table (docs/data.md, docs/summary.md): microseconds per
element of typical pipelines over ``--rows`` rows of 64 float32 features and
an int64 label, batched by 64 (best of ``--repeat`` passes), and the time of
one ``tfc.summary.scalar`` eagerly and inside a compiled step.
"""
from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

import tfc
from tfc.data import Dataset


def per_element(make, rows: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        ds = make()
        t = time.perf_counter()
        for _ in ds:
            pass
        best = min(best, time.perf_counter() - t)
    return best / rows * 1e6


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    x = rng.random((args.rows, 64), dtype=np.float32)
    y = rng.integers(0, 10, args.rows)

    def rows():
        for i in range(args.rows):
            yield x[i], y[i]

    slices = lambda: Dataset.from_tensor_slices((x, y))  # noqa: E731
    cases = [
        ("from_tensor_slices (element by element)", slices),
        ("from_tensor_slices.batch(64)", lambda: slices().batch(64)),
        ("from_tensor_slices.shuffle(rows).batch(64)", lambda: slices().shuffle(args.rows, seed=0).batch(64)),
        ("... .prefetch(2)", lambda: slices().shuffle(args.rows, seed=0).batch(64).prefetch(2)),
        ("from_generator.shuffle(rows).batch(64)",
         lambda: Dataset.from_generator(rows).shuffle(args.rows, seed=0).batch(64)),
        ("from_tensor_slices.map(eager x * 2).batch(64)", lambda: slices().map(lambda a, b: (a * 2.0, b)).batch(64)),
    ]
    print("| pipeline | us / element |\n| --- | ---: |")
    for name, make in cases:
        print(f"| {name} | {per_element(make, args.rows, args.repeat):.2f} |")

    with tempfile.TemporaryDirectory() as logdir:
        writer = tfc.summary.create_file_writer(logdir)
        step = tfc.Variable(0, dtype=tfc.int64)
        loss = tfc.constant(1.5)

        @tfc.function
        def logged(v):
            tfc.summary.scalar("loss", v, step=step)
            return v * 2.0

        @tfc.function
        def plain(v):
            return v * 2.0

        n = 2000
        with writer.as_default():
            for name, fn in [("summary.scalar, eager", lambda: tfc.summary.scalar("loss", loss, step=step)),
                             ("compiled step without a summary", lambda: plain(loss)),
                             ("compiled step with summary.scalar", lambda: logged(loss))]:
                fn()
                t = time.perf_counter()
                for _ in range(n):
                    fn()
                print(f"| {name} | {(time.perf_counter() - t) / n * 1e6:.1f} us / call |")
        writer.close()


if __name__ == "__main__":
    main()
