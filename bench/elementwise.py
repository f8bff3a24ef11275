"""GELU (tanh form) on 2^24 float32: numpy as written, numpy hand-optimized,
tfc eager, tfc compiled (numpy backend: one fused kernel in cache-sized chunks
on a thread pool), jax.jit and tf.function (+ jit_compile) when installed.

Usage: ``PYTHONPATH=. python bench/elementwise.py [--size-log2 24] [--no-peers]``

Each row also reports its effective bandwidth (8 bytes per element: one read,
one write) as a fraction of the copy bandwidth (``np.copyto``) of the same run.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(_HERE))

import tfc  # noqa: E402
from harness import Benchmark, detect_frameworks, header  # noqa: E402


def gelu_numpy(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def gelu_numpy_opt(x, out, tmp):
    """Hand-optimized: x*x*x, in-place ufuncs, no temporaries beyond one buffer."""
    np.multiply(x, x, out=tmp)
    np.multiply(tmp, x, out=tmp)
    np.multiply(tmp, np.float32(0.044715), out=tmp)
    np.add(tmp, x, out=tmp)
    np.multiply(tmp, np.float32(0.7978845608), out=tmp)
    np.tanh(tmp, out=tmp)
    np.add(tmp, np.float32(1), out=tmp)
    np.multiply(tmp, x, out=tmp)
    np.multiply(tmp, np.float32(0.5), out=out)
    return out


def gelu_tfc(x):
    return 0.5 * x * (1 + tfc.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-log2", type=int, default=24)
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args()
    n = 1 << args.size_log2
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    out, tmp = np.empty_like(x), np.empty_like(x)
    frameworks, missing = ({}, {}) if args.no_peers else detect_frameworks(("torch", "jax", "tensorflow"))
    print(header(frameworks, missing))
    bench = Benchmark(f"GELU (tanh form), {n} float32 elements", baseline="numpy hand-optimized",
                      repeats=7, batch_s=0.2)
    bench.add("np.copyto (copy bandwidth)", lambda: np.copyto(out, x))
    bench.add("numpy as written (x**3)", lambda: gelu_numpy(x))
    bench.add("numpy hand-optimized", lambda: gelu_numpy_opt(x, out, tmp))
    tx = tfc.constant(x)
    bench.add("tfc eager", lambda: gelu_tfc(tx))
    compiled = tfc.function(gelu_tfc)
    want = gelu_tfc(tx).numpy()
    assert np.array_equal(compiled(tx).numpy(), want), "compiled GELU differs from eager"
    bench.add("tfc compiled", lambda: compiled(tx))

    def gelu_cube(x):  # the same formula written with x*x*x: no np.power
        return 0.5 * x * (1 + tfc.tanh(0.7978845608 * (x + 0.044715 * (x * x * x))))
    compiled_cube = tfc.function(gelu_cube)
    assert np.array_equal(compiled_cube(tx).numpy(), gelu_cube(tx).numpy())
    bench.add("tfc compiled, x*x*x", lambda: compiled_cube(tx))
    if "torch" in frameworks:
        torch = frameworks["torch"]

        def gt(x):
            return 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
        xt = torch.from_numpy(x)
        gc = torch.compile(gt)
        gc(xt)  # compile before timing
        bench.add("torch eager", lambda: gt(xt), f"{torch.get_num_threads()} threads")
        bench.add("torch.compile", lambda: gc(xt), "inductor, compiled before timing")
    else:
        bench.skip("torch", missing.get("torch", "not requested"))
    if "jax" in frameworks:
        jax = frameworks["jax"]
        jnp = jax.numpy
        jg = jax.jit(lambda x: 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3))))
        jx = jnp.asarray(x)
        bench.add("jax.jit", lambda: jg(jx).block_until_ready())
    else:
        bench.skip("jax.jit", missing.get("jax", "not requested"))
    if "tensorflow" in frameworks:
        tf = frameworks["tensorflow"]

        def g(x):
            return 0.5 * x * (1 + tf.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
        tx_tf = tf.constant(x)
        f1, f2 = tf.function(g), tf.function(g, jit_compile=True)
        f1(tx_tf), f2(tx_tf)
        bench.add("tf.function", lambda: f1(tx_tf).numpy())
        bench.add("tf.function(jit_compile=True)", lambda: f2(tx_tf).numpy())
    else:
        bench.skip("tf.function", missing.get("tensorflow", "not requested"))
    bench.run()
    bench.print()
    copy = next(r for r in bench.rows if r.name.startswith("np.copyto")).median_s
    print("\n| row | GB/s (8 B/element) | fraction of copy bandwidth |\n| --- | ---: | ---: |")
    for r in bench.rows:
        print(f"| {r.name} | {8 * n / r.median_s / 1e9:.1f} | {copy / r.median_s:.2f} |")


if __name__ == "__main__":
    main()
