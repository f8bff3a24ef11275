"""Eager per-op overhead: tfc against numpy and, when installed, torch / tensorflow / jax.

Usage: ``PYTHONPATH=. python bench/eager_overhead.py [--repeats N] [--batch-ms MS]``
(``make bench`` runs it). Prints markdown tables; see docs/benchmarks.md.

- ``x + x`` on a float32 [2, 2] tensor measures dispatch cost: the numpy
  kernel itself takes a few hundred nanoseconds.
- ``x + x`` on 2**22 float32 elements measures the kernel: every framework
  should be close to numpy's memory-bound speed.
- A few tfc ops on [2, 2] show the general registry path (``tfc.add``,
  ``tfc.exp``, ``tfc.reduce_sum``), the operator fast path (``x + x``,
  ``x * 2.0``), and the tape path (``x + x`` while a GradientTape watches
  another tensor, so the op is checked but not recorded).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up log lines

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(_HERE))  # the checkout's tfc, unless PYTHONPATH names one

import tfc  # noqa: E402
from harness import FRAMEWORKS, Benchmark, detect_frameworks, header  # noqa: E402

SMALL = (2, 2)
LARGE = (1 << 22,)


def _peers(bench: Benchmark, a: np.ndarray, found: dict, missing: dict) -> None:
    """Add the ``x + x`` rows of each installed peer framework (or say why not)."""
    if "torch" in found:
        torch = found["torch"]
        tx = torch.from_numpy(a.copy())
        bench.add("torch", lambda: tx + tx, f"{torch.get_num_threads()} threads")
    else:
        bench.skip("torch", missing["torch"])
    if "tensorflow" in found:
        tf = found["tensorflow"]
        fx = tf.constant(a)
        bench.add("tensorflow", lambda: fx + fx)
    else:
        bench.skip("tensorflow", missing["tensorflow"])
    if "jax" in found:
        jnp = found["jax"].numpy
        jx = jnp.asarray(a)
        # jax dispatches asynchronously: wait for the result, as the others do.
        bench.add("jax", lambda: (jx + jx).block_until_ready(), "block_until_ready")
    else:
        bench.skip("jax", missing["jax"])


def x_plus_x(shape, found, missing, **kw) -> Benchmark:
    a = np.random.default_rng(0).random(shape, dtype=np.float32)
    t = tfc.constant(a)
    n = int(np.prod(shape))
    what = "[" + ", ".join(map(str, shape)) + "]" if n < 1 << 10 else f"2^{n.bit_length() - 1} elements"
    bench = Benchmark(f"x + x, float32 {what}", baseline="numpy", **kw)
    bench.add("numpy", lambda: a + a)
    bench.add("tfc", lambda: t + t)
    _peers(bench, a, found, missing)
    return bench


def tfc_ops(**kw) -> Benchmark:
    a = np.random.default_rng(0).random(SMALL, dtype=np.float32)
    t = tfc.constant(a)
    other = tfc.constant(a)
    bench = Benchmark("tfc ops on float32 [2, 2]", baseline="numpy a + a", **kw)
    bench.add("numpy a + a", lambda: a + a)
    bench.add("numpy np.exp(a)", lambda: np.exp(a))
    bench.add("numpy np.sum(a)", lambda: np.sum(a))
    bench.add("tfc x + x", lambda: t + t, "operator fast path")
    bench.add("tfc x * 2.0", lambda: t * 2.0, "operator fast path, weak scalar")
    bench.add("tfc 2 * x", lambda: 2 * t, "reflected fast path, weak int")
    bench.add("tfc x / x", lambda: t / t, "fast path of a quiet op (errstate)")
    bench.add("tfc.add(x, x)", lambda: tfc.add(t, t), "registry path")
    bench.add("tfc.exp(x)", lambda: tfc.exp(t), "registry path, quiet op")
    bench.add("tfc.reduce_sum(x)", lambda: tfc.reduce_sum(t), "registry path, attrs")
    tape = tfc.GradientTape(persistent=True)
    tape.watch(other)

    def under_tape():
        with tape:
            return t + t

    bench.add("tfc x + x under tape", under_tape, "tape active (includes with-block), x not watched")

    def tape_only():
        with tape:
            pass

    bench.add("(empty with tape)", tape_only, "cost of entering the tape alone")
    return bench


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=21, help="timed batches per row (default 21)")
    p.add_argument("--batch-ms", type=float, default=10.0, help="length of one batch (default 10 ms)")
    p.add_argument("--no-peers", action="store_true", help="numpy and tfc only (no torch/tensorflow/jax)")
    p.add_argument("--json", metavar="PATH", help="also write {table: {row: min seconds}} here (bench/compare.py)")
    args = p.parse_args(argv)
    kw = {"repeats": args.repeats, "batch_s": args.batch_ms / 1e3}
    if args.no_peers:
        found, missing = {}, {name: "left out (--no-peers)" for name in FRAMEWORKS}
    else:
        found, missing = detect_frameworks()
    print("## Eager overhead\n")
    print(header(found, missing))
    print(f"- tfc: {os.path.dirname(tfc.__file__)}")
    print()
    results = {}
    for bench in (x_plus_x(SMALL, found, missing, **kw), x_plus_x(LARGE, found, missing, **kw), tfc_ops(**kw)):
        bench.run().print()
        results[bench.title] = {r.name: r.min_s for r in bench.rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
