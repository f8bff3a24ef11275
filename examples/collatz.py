"""Collatz step counts with a Python while loop and if: AutoGraph turns them
into tfc.while_loop / tfc.cond when tfc.function compiles the code.

    python examples/collatz.py [--n N]
    tfc compile examples/collatz.py --emit tensor    # see the tfc.while and tfc.cond
"""
from __future__ import annotations

import argparse
import time

import tfc


def collatz(a):
    """Steps to reach 1 from ``a``, in plain Python control flow."""
    counter = 0
    while a != 1:
        if a % 2 == 0:
            a = a // 2
        else:
            a = 3 * a + 1
        counter = counter + 1
    return counter


collatz_compiled = tfc.function(collatz, input_signature=[tfc.TensorSpec((), tfc.int32)])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30)
    args = parser.parse_args(argv)
    ns = range(1, args.n + 1)
    start = time.perf_counter()
    python = [collatz(n) for n in ns]
    t_python = time.perf_counter() - start
    start = time.perf_counter()
    collatz_compiled(tfc.constant(1))  # the first call traces and compiles
    t_first = time.perf_counter() - start
    start = time.perf_counter()
    compiled = [int(collatz_compiled(tfc.constant(n))) for n in ns]
    t_compiled = time.perf_counter() - start
    print(f"steps for n = 1..{args.n}: {compiled}")
    print(f"python {t_python * 1e3:.2f} ms, compiled {t_compiled * 1e3:.2f} ms for the {len(ns)} calls "
          f"(after a first call of {t_first * 1e3:.1f} ms that traced and compiled it; "
          f"traced {collatz_compiled.trace_count} time)")
    if python != compiled:
        raise SystemExit("compiled results differ from Python's")
    return compiled


if __name__ == "__main__":
    main()
