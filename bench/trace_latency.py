"""Trace + compile latency of tfc.function (the IR-core issue's targets).

Usage: ``PYTHONPATH=. python bench/trace_latency.py [--repeats N]``

1. The MLP training step of bench/mlp_step.py's shape (784-512-10, relu, softmax
   cross-entropy, SGD, batch 256, float32): time of the first call of a fresh
   ``tfc.function`` (trace, L1 passes, first run), against TensorFlow's first
   call of the same ``tf.function`` step when installed. Target: under 300 ms,
   and below TensorFlow's.
2. A function of 10,000 chained elementwise ops: trace time alone. Target: < 2 s.

Each figure is the median of ``--repeats`` fresh functions (a new Python
function object each time, and tfc's disk cache of generated modules off, so
nothing is cached between repeats).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(_HERE))

import tfc  # noqa: E402
import mlp_step  # noqa: E402  (the MLP step, written once there)
from harness import detect_frameworks, header, no_disk_cache  # noqa: E402

def tfc_first_call() -> float:
    step, _ = mlp_step.make_tfc(*mlp_step.make_data(), compiled=True)
    with no_disk_cache():  # a first process's first call: code generation included
        t0 = time.perf_counter()
        step()
        return time.perf_counter() - t0


def tf_first_call(tf) -> float:
    step = mlp_step.make_tf(tf, *mlp_step.make_data(), "function")
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


def chain_trace(n_ops: int) -> float:
    def chain(x):
        for i in range(n_ops // 2):
            x = x * 1.0001 + 0.5
        return x

    f = tfc.function(chain)
    x = tfc.constant(np.ones(4, np.float32))
    t0 = time.perf_counter()
    f.get_concrete_function(x)
    return time.perf_counter() - t0


def _row(name, times, note=""):
    med, lo = statistics.median(times), min(times)
    return f"| {name} | {med * 1e3:.0f} | {lo * 1e3:.0f} | {note} |"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--ops", type=int, default=10_000)
    args = p.parse_args(argv)
    found, missing = detect_frameworks(("tensorflow",))
    print(header(found, missing))
    print("\n### First call of a compiled MLP training step (trace + passes + run)\n")
    print("| case | median (ms) | min (ms) | note |\n|---|---:|---:|---|")
    tfc_times = [tfc_first_call() for _ in range(args.repeats)]
    print(_row("tfc.function", tfc_times, "target < 300 ms"))
    if "tensorflow" in found:
        tf_times = [tf_first_call(found["tensorflow"]) for _ in range(args.repeats)]
        print(_row("tf.function", tf_times))
        print(f"\nratio tfc / tf.function (medians): {statistics.median(tfc_times) / statistics.median(tf_times):.2f}x")
    print(f"\n### Tracing a function of {args.ops} elementwise ops\n")
    print("| case | median (ms) | min (ms) | note |\n|---|---:|---:|---|")
    print(_row(f"tfc trace, {args.ops} ops", [chain_trace(args.ops) for _ in range(max(1, args.repeats // 2))],
               "target < 2000 ms"))


if __name__ == "__main__":
    main()
