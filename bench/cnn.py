"""A training step of the digits CNN of examples/cnn_digits.py (conv 16, max-pool,
conv 32, dense; batch 64, Adam): tfc eager and compiled against PyTorch (eager,
torch.compile) and JAX (jax.jit) where installed.

Usage: ``PYTHONPATH=. python bench/cnn.py [--quick] [--repeats N] [--profile] [--only ROW] [--single-steps N]``

Every implementation starts from the tfc model's initial weights and runs the
same batch; before timing, the script checks that all compute the same first
loss (within 1e-4). ``--profile`` also prints the profiler's table of the
compiled tfc step. ``--only ROW`` times that row alone (its first loss still
checked against tfc eager's): run once per row, each row has a process of its own,
and the other frameworks' idle threads (torch's, XLA's) do not compete with it.
``--single-steps N`` also times N steps one by one per row (minimum, 10th
percentile, median).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import tfc  # noqa: E402
from harness import Benchmark, detect_frameworks, header  # noqa: E402
from transformer import BETAS, EPS, load_example  # noqa: E402

BATCH, LR = 64, 3e-3
CNN = load_example("cnn_digits")


def make_batch(seed=0):
    """(x [64, 8, 8, 1] float32, y [64] int32): the first training batch."""
    x, y, _, _ = CNN.load_data(seed)
    return x[:BATCH], y[:BATCH]


def make_tfc_model(x):
    model = CNN.make_model(0)
    model(tfc.constant(x[:1]))
    return model


def initial_weights(x) -> list:
    """[conv1 kernel HWIO, bias, conv2 kernel, bias, dense kernel, bias] of the tfc model."""
    return [v.numpy().copy() for v in make_tfc_model(x).trainable_variables]


def make_tfc(x, y, compiled):
    model = make_tfc_model(x)
    step = CNN.make_train_step(model, tfc.optimizers.Adam(LR), compiled)
    tx, ty = tfc.constant(x), tfc.constant(y)
    return (lambda: step(tx, ty)), step, (tx, ty)


def make_torch(torch, weights, x, y, compiled=False):
    """NCHW with OIHW kernels (the tfc model's HWIO ones transposed); the dense
    layer reads the features in tfc's NHWC flattening order."""
    F = torch.nn.functional
    k1, b1, k2, b2, wd, bd = weights
    params = [torch.tensor(np.ascontiguousarray(k1.transpose(3, 2, 0, 1)), requires_grad=True),
              torch.tensor(b1, requires_grad=True),
              torch.tensor(np.ascontiguousarray(k2.transpose(3, 2, 0, 1)), requires_grad=True),
              torch.tensor(b2, requires_grad=True), torch.tensor(wd, requires_grad=True),
              torch.tensor(bd, requires_grad=True)]
    opt = torch.optim.Adam(params, lr=LR, betas=BETAS, eps=EPS)
    tx = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    ty = torch.from_numpy(y.astype(np.int64))

    def loss_fn(k1, b1, k2, b2, wd, bd):
        h = F.max_pool2d(torch.relu(F.conv2d(tx, k1, b1, padding=1)), 2)
        h = torch.relu(F.conv2d(h, k2, b2, padding=1))
        h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)  # NHWC order, as tfc's Flatten
        return F.cross_entropy(h @ wd + bd, ty)

    if compiled:
        loss_fn = torch.compile(loss_fn)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(*params)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def make_jax(jax, weights, x, y):
    jnp, lax = jax.numpy, jax.lax
    tx, ty = jnp.asarray(x), jnp.asarray(y)
    b1, b2 = BETAS
    dims = ("NHWC", "HWIO", "NHWC")

    def loss_fn(p):
        k1, c1, k2, c2, wd, bd = p
        h = jax.nn.relu(lax.conv_general_dilated(tx, k1, (1, 1), "SAME", dimension_numbers=dims) + c1)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = jax.nn.relu(lax.conv_general_dilated(h, k2, (1, 1), "SAME", dimension_numbers=dims) + c2)
        logits = h.reshape(h.shape[0], -1) @ wd + bd
        logp = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(logp, ty[:, None], axis=1).mean()

    @jax.jit
    def step(p, m, v, t):
        loss, g = jax.value_and_grad(loss_fn)(p)
        t = t + 1
        lr = LR * jnp.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        m = [b1 * a + (1 - b1) * gi for a, gi in zip(m, g)]
        v = [b2 * a + (1 - b2) * gi * gi for a, gi in zip(v, g)]
        p = [pi - lr * mi / (jnp.sqrt(vi) + EPS) for pi, mi, vi in zip(p, m, v)]
        return loss, p, m, v, t

    ps = [jnp.asarray(w) for w in weights]
    state = [ps, [jnp.zeros_like(a) for a in ps], [jnp.zeros_like(a) for a in ps], jnp.asarray(0.0, jnp.float32)]

    def run():
        loss, *state[:] = step(*state)
        return loss.block_until_ready()

    return run


def implementations(found, x, y):
    weights = initial_weights(x)
    impls = {
        "tfc eager": (lambda: make_tfc(x, y, False)[0], "GradientTape, Adam"),
        "tfc compiled": (lambda: make_tfc(x, y, True)[0], "tfc.function, whole step"),
    }
    if "torch" in found:
        torch = found["torch"]
        impls["torch eager"] = (lambda: make_torch(torch, weights, x, y), f"{torch.get_num_threads()} threads")
        impls["torch.compile"] = (lambda: make_torch(torch, weights, x, y, compiled=True),
                                  "inductor: loss and backward")
    if "jax" in found:
        impls["jax.jit"] = (lambda: make_jax(found["jax"], weights, x, y), "whole step")
    return impls


def single_steps(name, fn, n) -> str:
    """One line: the minimum, 10th percentile and median of ``n`` steps timed one
    by one (a batch's mean, as the table's, hides how often a step stalls)."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return (f"- {name}, {n} single steps: min {times[0] * 1e3:.3f} ms, 10th percentile "
            f"{times[n // 10] * 1e3:.3f} ms, median {times[n // 2] * 1e3:.3f} ms")


def main(argv=None) -> None:
    from transformer import first_losses

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--no-peers", action="store_true", help="tfc rows only")
    p.add_argument("--profile", action="store_true", help="also the profiler's table of the compiled step")
    p.add_argument("--only", metavar="ROW", help="time only this row ('tfc compiled', 'jax.jit', ...)")
    p.add_argument("--single-steps", type=int, default=0, metavar="N",
                   help="also time N steps one by one: minimum, 10th percentile, median")
    args = p.parse_args(argv)
    if args.single_steps < 0:
        p.error("--single-steps must be at least 0")
    found, missing = ({}, {}) if args.no_peers else detect_frameworks(("torch", "jax"))
    x, y = make_batch()
    impls = implementations(found, x, y)
    if args.only is not None:
        if args.only not in impls:
            p.error(f"--only {args.only!r}: not a row here; the rows are {', '.join(map(repr, impls))}")
        impls = {name: impls[name] for name in dict.fromkeys(("tfc eager", args.only))}
    losses = first_losses(impls)
    if args.only is not None:
        impls = {args.only: impls[args.only]}
    print(f"## CNN training step (digits 8x8: conv 16, max-pool, conv 32, dense; batch {BATCH}, Adam)\n")
    print(header(found, missing))
    print(f"- first-step loss, every implementation within 1e-4 of tfc eager's: {losses['tfc eager']:.6f}")
    print()
    repeats = args.repeats or (3 if args.quick else 7)
    baseline = next(name for name in ("torch eager", "tfc eager", args.only) if name in impls)
    bench = Benchmark("CNN training step", baseline=baseline,
                      repeats=repeats, warmup=3)
    for name, (make, note) in impls.items():
        bench.add(name, make(), note)
    bench.run().print()
    if args.single_steps:
        print()
        for row in bench.rows:
            print(single_steps(row.name, row.fn, args.single_steps))
    if args.profile:
        _, step, inputs = make_tfc(x, y, True)
        step(*inputs)
        print()
        print(step.profile(*inputs, n=20, quiet=True).table(top=15))


if __name__ == "__main__":
    main()
