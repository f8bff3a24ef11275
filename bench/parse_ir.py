"""Parsing speed of tfc's IR text at the three levels: L1 (``tfc`` tensor ops),
L2 (``tfc.fused`` kernels) and L3 (``loops``), for one function of about 10k,
30k and 100k ops, as ``tfc opt`` reads it (``SourceParser``, then verify).

The IR comes from the real pipeline: ``chain(n)`` traces one function that
cycles through many kinds of ops (elementwise, matmul, reductions, shape ops,
indexing, softmax, a ``tfc.cond`` and a ``tfc.while`` now and then), and
``ir_text`` emits it at a level.

Usage: ``PYTHONPATH=. python bench/parse_ir.py [--sizes 10000,30000,100000] [--levels tensor,fused,loops]``
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(_HERE))

import tfc  # noqa: E402

LEVELS = ("tensor", "fused", "loops")


def _block(x, w, k: int):
    """About 25 L1 ops of many kinds; ``k`` varies the constants."""
    c = float(k % 7) + 0.5
    y = tfc.tanh(x * c + 1.0) - tfc.exp(-x) / (tfc.abs(x) + 2.0)
    y = tfc.maximum(y, tfc.sqrt(tfc.square(x) + 1.0))
    z = tfc.matmul(y, w)
    s = tfc.reduce_sum(z, axis=1, keepdims=True)
    m = tfc.reduce_max(z, axis=0)
    z = tfc.nn.softmax(z - s) + m
    t = tfc.reshape(tfc.transpose(z), (4, 4))
    z = tfc.where(t > 0.25, t, tfc.zeros_like(t) + c)
    z = tfc.concat([z[:2], z[2:] * 0.5], axis=0)
    if tfc.reduce_sum(z) > c:  # a tfc.cond
        z = z * 2.0
    else:
        z = z - 1.0
    i = tfc.constant(0)
    while i < 2:  # a tfc.while
        z = z + tfc.cast(i, tfc.float32)
        i += 1
    return x + z


def chain(n_ops: int):
    """A traced function of about ``n_ops`` L1 ops (tensor-raw)."""
    blocks = max(1, n_ops // 40)

    def f(x, w):
        for k in range(blocks):
            x = _block(x, w, k)
        return x

    spec = tfc.TensorSpec((4, 4), tfc.float32)
    return f, spec


def ir_text(n_ops: int, level: str) -> str:
    """The IR text of ``chain(n_ops)`` at ``level`` (tensor-raw, tensor, fused, loops)."""
    from tfc.compiler import emit

    return emit(_compiled(n_ops, level == "tensor-raw"), level)


@functools.lru_cache(maxsize=2)
def _compiled(n_ops: int, raw: bool):
    from tfc.compiler import compile

    f, spec = chain(n_ops)
    return compile(f, spec, spec, passes="none" if raw else "default")


def count_ops(text: str) -> int:
    from tfc.dialects.tensor import SourceParser, context

    return sum(1 for _ in SourceParser(context(), text).parse_module().walk()) - 1


def parse_seconds(text: str, name: str = "bench.mlir") -> float:
    from tfc.dialects.tensor import SourceParser, context

    ctx = context()
    t0 = time.perf_counter()
    SourceParser(ctx, text, name).parse_module().verify()
    return time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,30000,100000")
    p.add_argument("--levels", default=",".join(LEVELS))
    args = p.parse_args(argv)
    print(f"{'level':8s} {'ops':>8s} {'bytes':>11s} {'parse s':>9s} {'ops/s':>9s}")
    for level in args.levels.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            text = ir_text(size, level)
            n = count_ops(text)
            secs = parse_seconds(text)
            print(f"{level:8s} {n:8d} {len(text.encode()):11d} {secs:9.2f} {n / secs:9.0f}", flush=True)


if __name__ == "__main__":
    main()
