"""Control-flow benchmark: Collatz step counts summed over n = 1..N (AutoGraph's
reference program), as plain Python, tfc eager (original and converted code on
eager tensors), tfc compiled (one trace and compile, then N calls), and TensorFlow's eager,
tf.function and XLA forms where TensorFlow is installed.

Run: PYTHONPATH=. python bench/control_flow.py [--n 300] [--repeats 21]

Two tables, each timed with bench/harness.py (batches interleaved, median and
minimum, ratios against plain Python measured in the same run): the compiled
forms, timed ``--repeats`` times; and the eager forms (hundreds of times
slower), timed 3 times. Every variant's total is checked against plain Python's.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [_ROOT, os.path.join(_ROOT, "examples")]

import tfc  # noqa: E402
from collatz import collatz  # noqa: E402  (the reference program, written once in examples/)
from harness import Benchmark, detect_frameworks, header, no_disk_cache  # noqa: E402


def _checked(fn, want):
    """``fn`` after checking once that it gives the plain-Python total."""
    got = fn()
    if got != want:
        raise AssertionError(f"total {got}, plain Python gives {want}")
    return fn


def _trace_compile_ms(ns, repeats=5) -> float:
    """Median time to trace, compile and make the first call of a fresh
    tfc.function, with the disk cache of generated modules off."""
    times = []
    with no_disk_cache():
        for _ in range(repeats):
            f = tfc.function(collatz)
            t0 = time.perf_counter()
            f(ns[0])  # trace, passes, code generation, first run
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def run(n: int, repeats: int):
    ints = range(1, n + 1)
    want = sum(collatz(i) for i in ints)
    tensors = [tfc.constant(i) for i in ints]
    found, missing = detect_frameworks(("tensorflow",))
    tf = found.get("tensorflow")

    fast = Benchmark(f"Collatz summed over n = 1..{n}: compiled forms", repeats=repeats, batch_s=0.05)
    fast.add("plain Python ints", lambda: sum(collatz(i) for i in ints))
    f = tfc.function(collatz)
    fast.add(f"tfc.function (numpy backend), {n} calls",
             _checked(lambda: sum(int(f(x)) for x in tensors), want),
             f"trace + compile + first call (no disk cache): {_trace_compile_ms(tensors):.1f} ms, not included")
    if tf is not None:
        tf_ns = [tf.constant(i) for i in ints]
        for name, fn in (("TensorFlow tf.function", tf.function(collatz)),
                         ("TensorFlow tf.function(jit_compile=True) (XLA)", tf.function(collatz, jit_compile=True))):
            fast.add(name, _checked(lambda fn=fn: sum(int(fn(x)) for x in tf_ns), want), "traced before timing")
    else:
        fast.skip("TensorFlow", missing["tensorflow"])

    slow = Benchmark(f"Collatz summed over n = 1..{n}: eager forms", repeats=3, warmup=1, batch_s=0.0)
    slow.add("plain Python ints", lambda: sum(collatz(i) for i in ints))
    slow.add("tfc eager, original code, eager tensors",
             _checked(lambda: sum(int(collatz(x)) for x in tensors), want))
    conv = tfc.autograph.to_graph(collatz)
    slow.add("tfc eager, converted code (to_graph), eager tensors",
             _checked(lambda: sum(int(conv(x)) for x in tensors), want))
    if tf is not None:
        slow.add("TensorFlow eager", _checked(lambda: sum(int(collatz(x)) for x in tf_ns), want))
    return [fast.run(), slow.run()], want, (found, missing)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--repeats", type=int, default=21)
    args = p.parse_args(argv)
    tables, total, (found, missing) = run(args.n, args.repeats)
    print(header(found, missing))
    print(f"Collatz step counts summed over n = 1..{args.n}: {total}")
    print()
    for t in tables:
        t.print()


if __name__ == "__main__":
    main()
