"""L-BFGS on a sparse autoencoder: tfc eager and compiled against hand-written numpy.

Usage: ``PYTHONPATH=. python bench/lbfgs_autoencoder.py [--quick] [--no-peers] [--repeats N]``

The problem of the 2017 comparison of TensorFlow eager with PyTorch (after
UFLDL's sparse autoencoder): 784 inputs, 196 hidden units, sigmoid encoder and
decoder, squared reconstruction error over the batch, weight decay 3e-3, KL
sparsity penalty (rho 0.1, beta 3); batch 10000 of synthetic data in [0, 1)
(fixed seed). The parameters are one flat float32 vector [W1, W2, b1, b2].

One timed call is one L-BFGS iteration: the two-loop recursion over the
history, a fixed step (no line search), the loss and gradient at the new point,
and the history update. The history starts full (``history`` synthetic
curvature pairs, the same for every framework: s random, y = s times a positive
diagonal) so every iteration does the steady-state work of that history size.

Rows: numpy (gradient by hand, the baseline), tfc eager (gradient from the
tape), tfc compiled (loss+gradient and direction under tfc.function), torch eager,
jax eager (no jit) and jax.jit, tensorflow eager and tf.function, when installed.
Each uses its own framework's ops for the loss and for L-BFGS. Before timing,
all are checked to give the same loss at iteration 0 (1e-4 relative).
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
sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "examples"))

import tfc  # noqa: E402
from autoencoder_lbfgs import cost as autoencoder_cost  # noqa: E402  (the loss, written once in examples/)
from harness import FRAMEWORKS, Benchmark, check_losses_agree, detect_frameworks, header  # noqa: E402

VISIBLE, HIDDEN = 784, 196
RHO, BETA, DECAY = 0.1, 3.0, 3e-3
BATCH = 10000
LR = 0.03  # the fixed step along the L-BFGS direction (0.1 diverges from the synthetic start)
SHAPES = [(VISIBLE, HIDDEN), (HIDDEN, VISIBLE), (HIDDEN,), (VISIBLE,)]
SIZES = [int(np.prod(s)) for s in SHAPES]


def make_problem(batch: int = BATCH, history: int = 5, seed: int = 0):
    """(data [batch, 784], theta0 [n], S, Y: lists of ``history`` vectors), float32."""
    rng = np.random.default_rng(seed)
    x = rng.random((batch, VISIBLE), dtype=np.float32)
    r = np.sqrt(6 / (VISIBLE + HIDDEN + 1))  # UFLDL's initialisation
    w1 = rng.uniform(-r, r, SHAPES[0])
    w2 = rng.uniform(-r, r, SHAPES[1])
    theta = np.concatenate([w1.ravel(), w2.ravel(), np.zeros(HIDDEN), np.zeros(VISIBLE)]).astype(np.float32)
    S, Y = [], []
    for _ in range(history):
        s = (1e-3 * rng.standard_normal(theta.size)).astype(np.float32)
        S.append(s)
        Y.append(s * rng.uniform(0.5, 1.5, theta.size).astype(np.float32))
    return x, theta, S, Y


# -- L-BFGS, written once over a framework's arithmetic ------------------------------


def two_loop(g, S, Y, rho, dot):
    """The L-BFGS direction -H g (Nocedal & Wright, algorithm 7.4)."""
    q = g
    alphas = []
    for s, y, r in zip(reversed(S), reversed(Y), reversed(rho)):
        a = r * dot(s, q)
        alphas.append(a)
        q = q - a * y
    gamma = dot(S[-1], Y[-1]) / dot(Y[-1], Y[-1])
    z = gamma * q
    for s, y, r, a in zip(S, Y, rho, reversed(alphas)):
        b = r * dot(y, z)
        z = z + (a - b) * s
    return -z


class LBFGS:
    """State of one run. ``value_and_grad(theta) -> (loss, gradient)`` and
    ``direction(g, S, Y, rho)`` are in the framework's ops (possibly compiled);
    ``dot`` gives a framework scalar, read on the host only for the curvature test."""

    def __init__(self, value_and_grad, direction, dot, theta, S, Y, history):
        self.value_and_grad, self.direction, self.dot = value_and_grad, direction, dot
        self.history = history
        self.S, self.Y = list(S), list(Y)
        self.rho = [1.0 / float(dot(y, s)) for s, y in zip(S, Y)]
        self.theta = theta
        self.loss, self.grad = value_and_grad(theta)

    def iterate(self):
        d = self.direction(self.grad, self.S, self.Y, self.rho)
        theta = self.theta + LR * d
        loss, grad = self.value_and_grad(theta)
        s, y = theta - self.theta, grad - self.grad
        ys = float(self.dot(y, s))
        if ys > 1e-10:  # keep H positive definite
            self.S.append(s)
            self.Y.append(y)
            self.rho.append(1.0 / ys)
            if len(self.S) > self.history:
                del self.S[0], self.Y[0], self.rho[0]
        self.theta, self.loss, self.grad = theta, loss, grad
        return loss


# -- numpy, gradient by hand ---------------------------------------------------------


def _np_sigmoid(a):
    return 1 / (1 + np.exp(-a))


def numpy_value_and_grad(x, theta):
    m = x.shape[0]
    w1, w2, b1, b2 = (p.reshape(s) for p, s in zip(np.split(theta, np.cumsum(SIZES)[:-1]), SHAPES))
    h = _np_sigmoid(x @ w1 + b1)
    xh = _np_sigmoid(h @ w2 + b2)
    diff = xh - x
    rho_hat = h.mean(axis=0)
    kl = np.sum(RHO * np.log(RHO / rho_hat) + (1 - RHO) * np.log((1 - RHO) / (1 - rho_hat)))
    loss = 0.5 / m * np.sum(diff * diff) + 0.5 * DECAY * (np.sum(w1 * w1) + np.sum(w2 * w2)) + BETA * kl
    d3 = diff * xh * (1 - xh)
    sparsity = BETA * (-RHO / rho_hat + (1 - RHO) / (1 - rho_hat))
    d2 = (d3 @ w2.T + sparsity) * h * (1 - h)
    grad = np.concatenate([
        (x.T @ d2 / m + DECAY * w1).ravel(),
        (h.T @ d3 / m + DECAY * w2).ravel(),
        d2.sum(axis=0) / m,
        d3.sum(axis=0) / m,
    ])
    return loss, grad


def make_numpy(x, theta, S, Y, history):
    return LBFGS(lambda t: numpy_value_and_grad(x, t), lambda g, S, Y, rho: two_loop(g, S, Y, rho, np.dot),
                 np.dot, theta.copy(), S, Y, history)


# -- tfc ------------------------------------------------------------------------------


def tfc_dot(a, b):
    return tfc.tensordot(a, b, 1)  # one BLAS dot, as np.dot / jnp.dot / tf.tensordot in the other rows


def make_tfc(x, theta, S, Y, history, compiled=False):
    """``compiled``: loss+gradient and the two-loop recursion under ``tfc.function``
    (rho passed as float32 tensors: Python floats are part of the signature)."""
    tx = tfc.constant(x)

    def value_and_grad(t):
        with tfc.GradientTape() as tape:
            tape.watch(t)
            loss = autoencoder_cost(t, tx)
        return loss, tape.gradient(loss, t)

    def direction(g, S, Y, rho):
        return two_loop(g, S, Y, rho, tfc_dot)

    if compiled:
        value_and_grad = tfc.function(value_and_grad)
        compiled_direction = tfc.function(direction)

        def direction(g, S, Y, rho):
            return compiled_direction(g, S, Y, [tfc.constant(r, tfc.float32) for r in rho])

    return LBFGS(value_and_grad, direction, tfc_dot,
                 tfc.constant(theta), [tfc.constant(s) for s in S], [tfc.constant(y) for y in Y], history)


# -- peers ----------------------------------------------------------------------------


def make_jax(jax, x, theta, S, Y, history, jit):
    jnp = jax.numpy
    jx = jnp.asarray(x)

    def loss_fn(t):
        m = jx.shape[0]
        w1, w2, b1, b2 = (p.reshape(s) for p, s in zip(jnp.split(t, np.cumsum(SIZES)[:-1]), SHAPES))
        h = jax.nn.sigmoid(jx @ w1 + b1)
        xh = jax.nn.sigmoid(h @ w2 + b2)
        diff = xh - jx
        rho_hat = jnp.mean(h, axis=0)
        kl = jnp.sum(RHO * jnp.log(RHO / rho_hat) + (1 - RHO) * jnp.log((1 - RHO) / (1 - rho_hat)))
        return 0.5 / m * jnp.sum(diff * diff) + 0.5 * DECAY * (jnp.sum(w1 * w1) + jnp.sum(w2 * w2)) + BETA * kl

    value_and_grad = jax.value_and_grad(loss_fn)

    def direction(g, S, Y, rho):
        return two_loop(g, S, Y, rho, jnp.dot)

    if jit:
        value_and_grad, direction = jax.jit(value_and_grad), jax.jit(direction)

    def vg(t):  # jax dispatches asynchronously: finish the work inside the timed call
        return jax.block_until_ready(value_and_grad(t))

    return LBFGS(vg, direction, jnp.dot, jnp.asarray(theta), [jnp.asarray(s) for s in S],
                 [jnp.asarray(y) for y in Y], history)


def make_torch(torch, x, theta, S, Y, history):
    tx = torch.from_numpy(x)

    def loss_fn(t):
        m = tx.shape[0]
        w1, w2, b1, b2 = (p.reshape(s) for p, s in zip(torch.split(t, SIZES), SHAPES))
        h = torch.sigmoid(tx @ w1 + b1)
        xh = torch.sigmoid(h @ w2 + b2)
        diff = xh - tx
        rho_hat = h.mean(dim=0)
        kl = torch.sum(RHO * torch.log(RHO / rho_hat) + (1 - RHO) * torch.log((1 - RHO) / (1 - rho_hat)))
        return (0.5 / m * torch.sum(diff * diff) + 0.5 * DECAY * (torch.sum(w1 * w1) + torch.sum(w2 * w2))
                + BETA * kl)

    def value_and_grad(t):
        t = t.detach().requires_grad_(True)
        loss = loss_fn(t)
        (g,) = torch.autograd.grad(loss, t)
        return loss.detach(), g

    def direction(g, S, Y, rho):
        with torch.no_grad():
            return two_loop(g, S, Y, rho, torch.dot)

    return LBFGS(value_and_grad, direction, torch.dot, torch.from_numpy(theta.copy()),
                 [torch.from_numpy(s) for s in S], [torch.from_numpy(y) for y in Y], history)


def make_tf(tf, x, theta, S, Y, history, compiled):
    tx = tf.constant(x)

    def dot(a, b):
        return tf.tensordot(a, b, 1)

    def loss_fn(t):
        m = x.shape[0]
        w1, w2, b1, b2 = (tf.reshape(p, s) for p, s in zip(tf.split(t, SIZES), SHAPES))
        h = tf.sigmoid(tf.matmul(tx, w1) + b1)
        xh = tf.sigmoid(tf.matmul(h, w2) + b2)
        diff = xh - tx
        rho_hat = tf.reduce_mean(h, axis=0)
        kl = tf.reduce_sum(RHO * tf.math.log(RHO / rho_hat) + (1 - RHO) * tf.math.log((1 - RHO) / (1 - rho_hat)))
        return (0.5 / m * tf.reduce_sum(diff * diff) + 0.5 * DECAY * (tf.reduce_sum(w1 * w1) + tf.reduce_sum(w2 * w2))
                + BETA * kl)

    def value_and_grad(t):
        with tf.GradientTape() as tape:
            tape.watch(t)
            loss = loss_fn(t)
        return loss, tape.gradient(loss, t)

    def direction(g, S, Y, rho):
        return two_loop(g, S, Y, rho, dot)

    if compiled:
        value_and_grad = tf.function(value_and_grad)
        compiled_direction = tf.function(direction)

        def direction(g, S, Y, rho):  # Python floats would retrace tf.function at every new value
            return compiled_direction(g, S, Y, [tf.constant(r, tf.float32) for r in rho])

    return LBFGS(value_and_grad, direction, dot, tf.constant(theta), [tf.constant(s) for s in S],
                 [tf.constant(y) for y in Y], history)


# -- checking and timing ------------------------------------------------------------


def implementations(found, x, theta, S, Y, history):
    """{row name: (maker of a fresh LBFGS, note)} for every framework present."""
    args = (x, theta, S, Y, history)
    impls = {
        "numpy (by hand)": (lambda: make_numpy(*args), "baseline"),
        "tfc eager": (lambda: make_tfc(*args), "GradientTape"),
        "tfc compiled": (lambda: make_tfc(*args, compiled=True), "tfc.function: loss+gradient and direction"),
    }
    if "torch" in found:
        torch = found["torch"]
        impls["torch eager"] = (lambda: make_torch(torch, *args), f"autograd, {torch.get_num_threads()} threads")
    if "jax" in found:
        jax = found["jax"]
        impls["jax eager"] = (lambda: make_jax(jax, *args, jit=False), "value_and_grad, no jit")
        impls["jax.jit"] = (lambda: make_jax(jax, *args, jit=True), "loss+gradient and direction jitted")
    if "tensorflow" in found:
        tf = found["tensorflow"]
        impls["tensorflow eager"] = (lambda: make_tf(tf, *args, compiled=False), "GradientTape")
        impls["tf.function"] = (lambda: make_tf(tf, *args, compiled=True), "loss+gradient and direction")
    return impls


def check_same_first_loss(impls) -> dict:
    """{name: a fresh LBFGS}; raises if one's iteration-0 loss differs from numpy's."""
    runs = {name: make() for name, (make, _) in impls.items()}
    check_losses_agree({name: float(np.asarray(r.loss)) for name, r in runs.items()}, "numpy (by hand)",
                       what="iteration-0 losses")
    return runs


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="batch 1000 and fewer batches (a smoke run)")
    p.add_argument("--repeats", type=int, default=None, help="timed iterations per row (default 7; 3 with --quick)")
    p.add_argument("--no-peers", action="store_true", help="numpy and tfc only")
    args = p.parse_args(argv)
    batch = 1000 if args.quick else BATCH
    kw = {"repeats": args.repeats or (3 if args.quick else 7), "warmup": 1, "batch_s": 0.02}
    if args.no_peers:
        found, missing = {}, {name: "left out (--no-peers)" for name in FRAMEWORKS}
    else:
        found, missing = detect_frameworks()
    print("## L-BFGS sparse autoencoder (eager and compiled)\n")
    print(header(found, missing))
    print(f"- tfc: {os.path.dirname(tfc.__file__)}")
    print(f"- {sum(SIZES)} parameters, batch {batch}, fixed step {LR}")
    print()
    for history in (5, 100):
        x, theta, S, Y = make_problem(batch, history)
        impls = implementations(found, x, theta, S, Y, history)
        runs = check_same_first_loss(impls)
        loss0 = float(np.asarray(runs["numpy (by hand)"].loss))
        bench = Benchmark(f"L-BFGS iteration, history {history}, batch {batch}, float32 "
                          f"(iteration-0 loss {loss0:.5f} in all)", baseline="numpy (by hand)", **kw)
        for name, (_, note) in impls.items():
            bench.add(name, runs[name].iterate, note)
        for name in FRAMEWORKS:
            if name in missing:
                bench.skip(name, missing[name])
        bench.run().print()


if __name__ == "__main__":
    main()
