"""One SGD training step of an MLP 784-512-10: tfc eager and compiled against hand-written numpy.

Usage: ``PYTHONPATH=. python bench/mlp_step.py [--quick] [--no-peers] [--repeats N]``

The step: logits = relu(x @ W1 + b1) @ W2 + b2, loss = mean sparse softmax
cross-entropy, then W -= 0.1 * dW for every parameter; batch 256, float32,
synthetic data from a fixed seed. Every implementation uses its own framework's
ops and starts from the same parameters; before timing, the script checks they
all compute the same first-step loss, so the table compares the same work. Rows:

- numpy: forward and backward written by hand (the baseline);
- tfc eager: GradientTape and ``assign_sub``, and the same with tfc.optimizers.SGD;
- tfc compiled: the same step under ``tfc.function`` (numpy backend);
- jax: ``jax.value_and_grad`` run op by op (no jit), and the whole step under ``jax.jit``;
- tensorflow: eager GradientTape, ``tf.function``, ``tf.function(jit_compile=True)``;
- torch eager and torch.compile, when installed.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up log lines

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(_HERE))  # the checkout's tfc, unless PYTHONPATH names one
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import tfc  # noqa: E402
from harness import FRAMEWORKS, Benchmark, check_losses_agree, detect_frameworks, header  # noqa: E402

SIZES = (784, 512, 10)
BATCH = 256
LR = 0.1


def make_data(batch: int = BATCH, seed: int = 0):
    """(x [batch, 784] float32, labels [batch] int32, [W1, b1, W2, b2] float32)."""
    rng = np.random.default_rng(seed)
    d_in, d_hidden, d_out = SIZES
    x = rng.random((batch, d_in), dtype=np.float32)
    labels = rng.integers(0, d_out, batch).astype(np.int32)
    w1 = (rng.standard_normal((d_in, d_hidden)) / np.sqrt(d_in)).astype(np.float32)
    w2 = (rng.standard_normal((d_hidden, d_out)) / np.sqrt(d_hidden)).astype(np.float32)
    b1 = np.full(d_hidden, 0.01, np.float32)  # not zero: a wrong bias gradient would show
    b2 = np.zeros(d_out, np.float32)
    return x, labels, [w1, b1, w2, b2]


# -- numpy, backward pass by hand ---------------------------------------------------


def numpy_step(x, labels, params):
    """One step; updates ``params`` (numpy arrays) in place, returns the loss."""
    w1, b1, w2, b2 = params
    n = x.shape[0]
    pre = x @ w1
    pre += b1
    h = np.maximum(pre, 0)
    logits = h @ w2
    logits += b2
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(n)
    loss = np.mean(np.log(s[:, 0]) - z[rows, labels])
    dlogits = e / s  # softmax - onehot, over the batch size
    dlogits[rows, labels] -= 1
    dlogits *= np.float32(1 / n)
    dw2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = dlogits @ w2.T
    dh *= pre > 0
    dw1 = x.T @ dh
    db1 = dh.sum(axis=0)
    for p, g in zip(params, (dw1, db1, dw2, db2)):
        p -= np.float32(LR) * g
    return loss


# -- tfc ----------------------------------------------------------------------------


def tfc_loss(x, labels, params):
    w1, b1, w2, b2 = params
    h = tfc.relu(tfc.matmul(x, w1) + b1)
    logits = tfc.matmul(h, w2) + b2
    return tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))


def tfc_step(x, labels, params):
    """GradientTape and assign_sub; ``params`` are tfc.Variables."""
    with tfc.GradientTape() as tape:
        loss = tfc_loss(x, labels, params)
    grads = tape.gradient(loss, params)
    for v, g in zip(params, grads):
        v.assign_sub(LR * g)
    return loss


def make_tfc(x, labels, params, optimizer=False, compiled=False):
    """A zero-argument step function and its variables; ``compiled``: the whole
    step (forward, tape, updates) under ``tfc.function``."""
    tx, tl = tfc.constant(x), tfc.constant(labels)
    variables = [tfc.Variable(p.copy()) for p in params]
    if compiled:
        return tfc.function(lambda: tfc_step(tx, tl, variables)), variables
    if not optimizer:
        return (lambda: tfc_step(tx, tl, variables)), variables
    opt = tfc.optimizers.SGD(LR)
    return (lambda: opt.minimize(lambda: tfc_loss(tx, tl, variables), variables)), variables


# -- peers --------------------------------------------------------------------------


def make_jax(jax, x, labels, params, jit):
    jnp = jax.numpy
    jx, jl = jnp.asarray(x), jnp.asarray(labels)

    def loss_fn(ps):
        w1, b1, w2, b2 = ps
        h = jax.nn.relu(jx @ w1 + b1)
        logits = h @ w2 + b2
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, jl[:, None], axis=1))

    def step(ps):
        loss, grads = jax.value_and_grad(loss_fn)(ps)
        return loss, [p - LR * g for p, g in zip(ps, grads)]

    if jit:
        step = jax.jit(step)
    state = {"ps": [jnp.asarray(p) for p in params]}

    def run():
        loss, state["ps"] = step(state["ps"])
        return jax.block_until_ready(loss)  # jax dispatches asynchronously

    return run


def make_tf(tf, x, labels, params, mode):
    """mode: "eager", "function" or "xla"."""
    tx, tl = tf.constant(x), tf.constant(labels)
    variables = [tf.Variable(p) for p in params]

    def step():
        with tf.GradientTape() as tape:
            w1, b1, w2, b2 = variables
            h = tf.nn.relu(tf.matmul(tx, w1) + b1)
            logits = tf.matmul(h, w2) + b2
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(tl, logits))
        grads = tape.gradient(loss, variables)
        for v, g in zip(variables, grads):
            v.assign_sub(LR * g)
        return loss

    if mode != "eager":
        step = tf.function(step, jit_compile=mode == "xla")
    return lambda: step().numpy()


def make_torch(torch, x, labels, params, compiled=False):
    """``compiled``: loss and gradients under torch.compile (inductor); the
    in-place update stays eager, as torch.compile users write it."""
    tx, tl = torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64))
    ps = [torch.tensor(p, requires_grad=True) for p in params]
    F = torch.nn.functional

    def loss_and_grads(w1, b1, w2, b2):
        loss = F.cross_entropy(torch.relu(tx @ w1 + b1) @ w2 + b2, tl)
        return loss, torch.autograd.grad(loss, (w1, b1, w2, b2))

    if compiled:
        loss_and_grads = torch.compile(loss_and_grads)

    def step():
        loss, grads = loss_and_grads(*ps)
        with torch.no_grad():
            for p, g in zip(ps, grads):
                p -= LR * g
        return loss.item()

    return step


# -- checking and timing ------------------------------------------------------------


def _fresh_loss(make):
    """The first-step loss of a freshly made implementation (a float)."""
    return float(np.asarray(make()()))


def implementations(found, x, labels, params):
    """{row name: (maker of a fresh step function, note)} for every framework present."""
    impls = {
        "numpy (by hand)": (lambda: (lambda ps=[p.copy() for p in params]: numpy_step(x, labels, ps)), "baseline"),
        "tfc eager": (lambda: make_tfc(x, labels, params)[0], "GradientTape + assign_sub"),
        "tfc eager, optimizers.SGD": (lambda: make_tfc(x, labels, params, optimizer=True)[0], "SGD.minimize"),
        "tfc compiled": (lambda: make_tfc(x, labels, params, compiled=True)[0], "tfc.function, whole step"),
    }
    if "jax" in found:
        jax = found["jax"]
        impls["jax eager"] = (lambda: make_jax(jax, x, labels, params, jit=False), "value_and_grad, no jit")
        impls["jax.jit"] = (lambda: make_jax(jax, x, labels, params, jit=True), "whole step compiled")
    if "tensorflow" in found:
        tf = found["tensorflow"]
        impls["tensorflow eager"] = (lambda: make_tf(tf, x, labels, params, "eager"), "GradientTape")
        impls["tf.function"] = (lambda: make_tf(tf, x, labels, params, "function"), "graph")
        impls["tf.function(jit_compile)"] = (lambda: make_tf(tf, x, labels, params, "xla"), "XLA")
    if "torch" in found:
        torch = found["torch"]
        impls["torch eager"] = (lambda: make_torch(torch, x, labels, params), f"{torch.get_num_threads()} threads")
        impls["torch.compile"] = (lambda: make_torch(torch, x, labels, params, compiled=True),
                                  "inductor: loss and gradients")
    return impls


def check_same_first_loss(impls) -> dict:
    """First-step loss of every implementation; raises if one differs from numpy's."""
    return check_losses_agree({name: _fresh_loss(make) for name, (make, _) in impls.items()}, "numpy (by hand)")


# -- memory -------------------------------------------------------------------------


def traced_peak(fn) -> int:
    """Bytes: the tracemalloc peak of one call of ``fn`` above what was allocated before it."""
    import tracemalloc

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def memory_rows(x, labels, params) -> list[tuple[str, int, str]]:
    """(case, bytes, how measured) for the eager and the compiled step. The
    compiled step's arena is allocated by its first call and kept for later
    ones, so a later call's peak adds the arena it holds."""
    eager, _ = make_tfc(x, labels, params)
    eager()  # warm: first-call caches are not the step's memory
    rows = [("numpy (by hand)", traced_peak(lambda ps=[p.copy() for p in params]: numpy_step(x, labels, ps)),
             "tracemalloc around one step"),
            ("tfc eager", traced_peak(eager), "tracemalloc around one step (after one warm-up step)")]
    step, _ = make_tfc(x, labels, params, compiled=True)
    cf = step.get_concrete_function()
    cf.compiled  # compile outside the measured call
    mp = cf.memory_plan
    first = traced_peak(step)
    later = traced_peak(step)
    rows += [
        ("tfc compiled, plan", mp.arena_size + mp.fresh_bytes + mp.scratch,
         f"memory_plan: arena {mp.arena_size} + fresh {mp.fresh_bytes} + scratch {mp.scratch} (one worker)"),
        ("tfc compiled, first call", first, "tracemalloc around the call that allocates the arena"),
        ("tfc compiled, later call", later + mp.arena_size, f"tracemalloc around a call {later} + arena held"),
    ]
    return rows


def memory_table(rows) -> str:
    eager = dict((name, b) for name, b, _ in rows)["tfc eager"]
    lines = ["### Peak memory of one step (MLP, batch 256)", "",
             "| case | peak (KiB) | vs tfc eager | how |", "|---|---:|---:|---|"]
    for name, b, how in rows:
        lines.append(f"| {name} | {b / 1024:.0f} | {b / eager:.0%} | {how} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer, shorter batches (a smoke run)")
    p.add_argument("--repeats", type=int, default=None, help="timed batches per row (default 15; 3 with --quick)")
    p.add_argument("--no-peers", action="store_true", help="numpy and tfc only")
    args = p.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 15)
    kw = {"repeats": repeats, "warmup": 1 if args.quick else 3, "batch_s": 0.02 if args.quick else 0.1}
    if args.no_peers:
        found, missing = {}, {name: "left out (--no-peers)" for name in FRAMEWORKS}
    else:
        found, missing = detect_frameworks()
    x, labels, params = make_data()
    impls = implementations(found, x, labels, params)
    losses = check_same_first_loss(impls)

    print("## MLP training step (eager and compiled)\n")
    print(header(found, missing))
    print(f"- tfc: {os.path.dirname(tfc.__file__)}")
    print(f"- first-step loss, all implementations within 1e-4 of numpy's: {losses['numpy (by hand)']:.6f}")
    print()
    bench = Benchmark(f"MLP {'-'.join(map(str, SIZES))} SGD step, batch {BATCH}, float32", baseline="numpy (by hand)", **kw)
    for name, (make, note) in impls.items():
        bench.add(name, make(), note)
    for name in FRAMEWORKS:
        if name in missing:
            bench.skip(name, missing[name])
    bench.run().print()
    print(memory_table(memory_rows(x, labels, params)))
    print()


if __name__ == "__main__":
    main()
