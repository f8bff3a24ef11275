"""Before/after: bench/eager_overhead.py against two tfc checkouts, alternately.

Usage: ``python bench/compare.py BEFORE_ROOT AFTER_ROOT [--rounds N]``, where each
root is a directory holding a ``tfc`` package (e.g. ``git worktree add /tmp/old
COMMIT``). Each round runs the benchmark once per checkout, in a fresh process
with ``PYTHONPATH=ROOT`` (numpy and tfc rows only); the table keeps each row's
minimum over all rounds, the figure least disturbed by other load on the machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))


def run_once(root: str, out: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(root)}
    cmd = [sys.executable, os.path.join(_HERE, "eager_overhead.py"), "--no-peers", "--json", out]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    best: dict = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        for _ in range(args.rounds):
            for side in ("before", "after"):
                for table, rows in run_once(getattr(args, side), out).items():
                    for row, t in rows.items():
                        key = (table, row)
                        best[side][key] = min(best[side].get(key, t), t)
    print(f"- command: `{' '.join([os.path.basename(sys.executable), *sys.argv])}`")
    print(f"- rounds: {args.rounds}; figures are the minimum per call over all rounds\n")
    print("| table | case | before | after | before / after |")
    print("|---|---|---:|---:|---:|")
    for key, b in best["before"].items():
        a = best["after"].get(key)
        if a is None:
            continue
        print(f"| {key[0]} | {key[1]} | {_fmt(b)} | {_fmt(a)} | {b / a:.2f}x |")


def _fmt(s: float) -> str:
    return f"{s * 1e6:.3g} us" if s < 1e-3 else f"{s * 1e3:.3g} ms"


if __name__ == "__main__":
    main()
