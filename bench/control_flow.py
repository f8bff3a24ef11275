"""Control-flow benchmark: Collatz step counts summed over n = 1..N (AutoGraph's
reference program), as plain Python, tfc eager (original and converted code on
eager tensors), tfc compiled (one trace and compile, then N calls), and TensorFlow's eager,
tf.function and XLA forms where TensorFlow is installed.

Run: PYTHONPATH=. python bench/control_flow.py [--n 300] [--repeats 3]
Prints a markdown table (median of repeats; ratios against plain Python).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [_ROOT, os.path.join(_ROOT, "examples")]

import tfc  # noqa: E402
from collatz import collatz  # noqa: E402  (the reference program, written once in examples/)


def _median_time(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def _total(xs):
    return sum(int(x) for x in xs)


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def run(n: int, repeats: int):
    ns = range(1, n + 1)
    rows = []  # (variant, seconds or None, note)

    t, want = _median_time(lambda: sum(collatz(i) for i in ns), max(repeats, 5))
    rows.append(("plain Python ints", t, ""))

    tensors = [tfc.constant(i) for i in ns]
    t, got = _median_time(lambda: _total(collatz(x) for x in tensors), repeats)
    assert got == want, (got, want)
    rows.append(("tfc eager, original code, eager tensors", t, ""))

    conv = tfc.autograph.to_graph(collatz)
    t, got = _median_time(lambda: _total(conv(x) for x in tensors), repeats)
    assert got == want, (got, want)
    rows.append(("tfc eager, converted code (to_graph), eager tensors", t, ""))

    traces = []

    def trace_once():
        f = tfc.function(collatz)
        t0 = time.perf_counter()
        f.get_concrete_function(tfc.TensorSpec((), tfc.int32))
        f(tensors[0])  # the first call generates and loads the numpy module
        traces.append(time.perf_counter() - t0)
        return f

    f = trace_once()
    for _ in range(repeats - 1):
        trace_once()
    t, got = _median_time(lambda: _total(f(x) for x in tensors), repeats)
    assert got == want and f.trace_count == 1, (got, want, f.trace_count)
    rows.append((f"tfc.function (numpy backend), {n} calls", t,
                 f"trace and compile once: {statistics.median(traces) * 1e3:.1f} ms, not included"))

    try:
        import tensorflow as tf  # noqa: F401
    except ImportError:
        for name in ("TensorFlow eager", "TensorFlow tf.function", "TensorFlow tf.function(jit_compile=True) (XLA)"):
            rows.append((name, None, "skipped: TensorFlow is not installed"))
    else:
        rows += _tensorflow(n, repeats, want)
    return rows, want


def _tensorflow(n, repeats, want):
    import tensorflow as tf

    ns = [tf.constant(i) for i in range(1, n + 1)]
    rows = []
    t, got = _median_time(lambda: _total(collatz(x) for x in ns), repeats)
    assert got == want
    rows.append(("TensorFlow eager", t, ""))
    for name, fn in (("TensorFlow tf.function", tf.function(collatz)),
                     ("TensorFlow tf.function(jit_compile=True) (XLA)", tf.function(collatz, jit_compile=True))):
        fn(ns[0])  # trace (and compile) before timing
        t, got = _median_time(lambda: _total(fn(x) for x in ns), repeats)
        assert got == want
        rows.append((name, t, "traced before timing"))
    return rows


def table(rows) -> str:
    base = rows[0][1]
    lines = ["| variant | time (ms) | vs plain Python | note |", "|---|---:|---:|---|"]
    for name, t, note in rows:
        if t is None:
            lines.append(f"| {name} | - | - | {note} |")
        else:
            lines.append(f"| {name} | {t * 1e3:.2f} | {t / base:.1f}x | {note} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    rows, total = run(args.n, args.repeats)
    print(f"Collatz step counts summed over n = 1..{args.n} (total {total}); median of {args.repeats} runs")
    print(f"Machine: {machine()}")
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
