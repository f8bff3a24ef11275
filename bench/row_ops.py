"""Row-wise ops on a [8192, 1024] float32 batch: softmax (a library op that runs
on chunks of rows), layer normalization written with reductions (row-chunked
kernels) and the cross-entropy loss with its gradient; numpy, tfc eager, tfc
compiled, and torch, jax.jit, tf.function when installed.

Usage: ``PYTHONPATH=. python bench/row_ops.py [--rows 8192] [--cols 1024] [--no-peers]``

Every compiled tfc result is checked equal to eager's to the bit before timing.
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

EPS = 1e-5


def softmax_np(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm_np(x, g, b, xp=np):
    """Layer norm in numpy, or in a module with numpy's API (``jax.numpy``)."""
    mu = xp.mean(x, axis=-1, keepdims=True)
    var = xp.mean(xp.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) / xp.sqrt(var + xp.float32(EPS)) * g + b


def layer_norm_tfc(x, g, b):
    mu = tfc.reduce_mean(x, axis=-1, keepdims=True)
    var = tfc.reduce_mean(tfc.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) / tfc.sqrt(var + EPS) * g + b


def xent_tfc(labels, logits):
    with tfc.GradientTape() as tape:
        tape.watch(logits)
        loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    return loss, tape.gradient(loss, logits)


def xent_np(labels, logits):
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=-1, keepdims=True)
    n = logits.shape[0]
    loss = np.mean(np.log(s[:, 0]) - z[np.arange(n), labels])
    d = e / s
    d[np.arange(n), labels] -= 1
    return loss, d / np.float32(n)


def peers(frameworks, benches, x, g, b, labels):
    """Adds torch, jax.jit and tf.function rows to the three benchmarks."""
    soft, norm, xent = benches
    if "torch" in frameworks:
        torch = frameworks["torch"]
        tx, tg, tb, tl = (torch.from_numpy(a) for a in (x, g, b, labels.astype(np.int64)))
        soft.add("torch", lambda: torch.softmax(tx, -1), f"{torch.get_num_threads()} threads")
        norm.add("torch (layer_norm op)", lambda: torch.nn.functional.layer_norm(tx, (x.shape[1],), tg, tb, EPS))

        def txent():
            t = tx.detach().requires_grad_(True)
            loss = torch.nn.functional.cross_entropy(t, tl)
            (d,) = torch.autograd.grad(loss, t)
            return loss, d
        xent.add("torch", txent, "autograd")
    else:
        for bench in benches:
            bench.skip("torch", "not installed or not requested")
    if "jax" in frameworks:
        jax = frameworks["jax"]
        jnp = jax.numpy
        jx, jg, jb, jl = (jnp.asarray(a) for a in (x, g, b, labels))
        js = jax.jit(lambda x: jax.nn.softmax(x, axis=-1))

        def jloss(logits, labels):
            logp = jax.nn.log_softmax(logits)
            return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))
        jn = jax.jit(lambda x, g, b: layer_norm_np(x, g, b, jnp))
        jxe = jax.jit(jax.value_and_grad(jloss))
        soft.add("jax.jit", lambda: js(jx).block_until_ready())
        norm.add("jax.jit", lambda: jn(jx, jg, jb).block_until_ready())
        xent.add("jax.jit", lambda: jax.block_until_ready(jxe(jx, jl)), "value_and_grad")
    else:
        for bench in benches:
            bench.skip("jax.jit", "not installed or not requested")
    if "tensorflow" in frameworks:
        tf = frameworks["tensorflow"]
        fx, fg, fb, fl = (tf.constant(a) for a in (x, g, b, labels))
        fs = tf.function(lambda x: tf.nn.softmax(x, axis=-1))

        def fnorm(x, g, b):
            mu = tf.reduce_mean(x, axis=-1, keepdims=True)
            var = tf.reduce_mean(tf.square(x - mu), axis=-1, keepdims=True)
            return (x - mu) / tf.sqrt(var + EPS) * g + b

        def fxent(labels, logits):
            with tf.GradientTape() as tape:
                tape.watch(logits)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
            return loss, tape.gradient(loss, logits)
        fn, fxe = tf.function(fnorm), tf.function(fxent)
        soft.add("tf.function", lambda: fs(fx).numpy())
        norm.add("tf.function", lambda: fn(fx, fg, fb).numpy())
        xent.add("tf.function", lambda: [v.numpy() for v in fxe(fl, fx)])
    else:
        for bench in benches:
            bench.skip("tf.function", "not installed or not requested")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=1024)
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    x = (3 * rng.standard_normal((args.rows, args.cols))).astype(np.float32)
    g = rng.uniform(0.5, 1.5, args.cols).astype(np.float32)
    b = rng.standard_normal(args.cols).astype(np.float32)
    labels = rng.integers(0, args.cols, args.rows).astype(np.int32)
    frameworks, missing = ({}, {}) if args.no_peers else detect_frameworks()
    print("## Row-wise ops\n")
    print(header(frameworks, missing))
    print()
    shape = f"[{args.rows}, {args.cols}] float32"
    kw = {"baseline": "numpy", "repeats": 9, "batch_s": 0.1}
    soft = Benchmark(f"softmax over the last axis, {shape}", **kw)
    norm = Benchmark(f"layer normalization (written with reductions), {shape}", **kw)
    xent = Benchmark(f"sparse softmax cross-entropy, mean loss and its gradient, {shape}", **kw)

    tx, tg, tb = (tfc.constant(a) for a in (x, g, b))
    cases = [
        (soft, softmax_np, (x,), lambda x: tfc.nn.softmax(x), (tx,)),
        (norm, layer_norm_np, (x, g, b), layer_norm_tfc, (tx, tg, tb)),
        (xent, xent_np, (labels, x), xent_tfc, (labels, tx)),
    ]
    for bench, np_fn, np_args, tfc_fn, tfc_args in cases:
        compiled = tfc.function(tfc_fn)
        want, got = tfc_fn(*tfc_args), compiled(*tfc_args)
        pairs = zip(want, got) if isinstance(want, tuple) else [(want, got)]
        for w, c in pairs:
            assert np.array_equal(w.numpy(), c.numpy()), f"{bench.title}: compiled differs from eager"
        bench.add("numpy", lambda f=np_fn, a=np_args: f(*a), "as written, whole arrays")
        bench.add("tfc eager", lambda f=tfc_fn, a=tfc_args: f(*a))
        bench.add("tfc compiled", lambda f=compiled, a=tfc_args: f(*a), "checked equal to eager")
    peers(frameworks, (soft, norm, xent), x, g, b, labels)
    for bench in (soft, norm, xent):
        bench.run().print()


if __name__ == "__main__":
    main()
