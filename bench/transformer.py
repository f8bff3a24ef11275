"""A training step of the char-level GPT of examples/transformer_lm.py (2 layers,
width 64, 2 heads, context 64, batch 32, Adam): tfc eager and compiled against
PyTorch (eager, torch.compile), JAX (jax.jit) and TensorFlow (tf.function) where
installed.

Usage: ``PYTHONPATH=. python bench/transformer.py [--quick] [--repeats N] [--profile]``

Every implementation starts from the tfc model's initial weights and runs the
same batch; before timing, the script checks that all compute the same first
loss (within 1e-4), so the table compares the same work. ``--profile`` also
prints the profiler's table of the compiled tfc step (``compiled.profile``).
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path.append(_ROOT)  # the checkout's tfc, unless PYTHONPATH names one
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import tfc  # noqa: E402
from harness import Benchmark, check_losses_agree, detect_frameworks, header  # noqa: E402

BATCH, CONTEXT, WIDTH, HEADS, LAYERS = 32, 64, 64, 2, 2
LR, BETAS, EPS = 3e-3, (0.9, 0.999), 1e-7  # tfc.optimizers.Adam's (Keras') epsilon


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(_ROOT, "examples", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LM = load_example("transformer_lm")


def make_batch(seed=0):
    """(vocabulary size, x [B, T] int32, y [B, T] int32) from the example's text."""
    text = LM.TEXT.read_text()
    vocab = LM.Vocabulary(text)
    data = vocab.encode(text)
    starts = np.random.default_rng(seed).integers(0, len(data) - CONTEXT - 1, BATCH)
    x = np.stack([data[s:s + CONTEXT] for s in starts])
    y = np.stack([data[s + 1:s + CONTEXT + 1] for s in starts])
    return len(vocab), x, y


def initial_weights(vocab_size, seed=0) -> dict:
    """name -> array: the tfc model's initial weights, by the names the peers' models use."""
    model = LM.GPT(vocab_size, WIDTH, HEADS, LAYERS, CONTEXT, seed)
    w = {"tok": model.token_embedding.embeddings.numpy(), "pos": model.position_embedding.numpy(),
         "ln_g": model.norm.gamma.numpy(), "ln_b": model.norm.beta.numpy(),
         "head_w": model.head.kernel.numpy(), "head_b": model.head.bias.numpy()}
    for i, b in enumerate(model.blocks):
        for part in ("norm1", "norm2"):
            w[f"{i}.{part}_g"], w[f"{i}.{part}_b"] = getattr(b, part).gamma.numpy(), getattr(b, part).beta.numpy()
        for part in ("qkv", "proj", "up", "down"):
            w[f"{i}.{part}_w"], w[f"{i}.{part}_b"] = getattr(b, part).kernel.numpy(), getattr(b, part).bias.numpy()
    return {k: v.copy() for k, v in w.items()}


def causal_mask():
    return np.triu(np.full((CONTEXT, CONTEXT), -1e9, np.float32), k=1)


# -- tfc ----------------------------------------------------------------------------


def make_tfc(vocab_size, x, y, compiled):
    model = LM.GPT(vocab_size, WIDTH, HEADS, LAYERS, CONTEXT, seed=0)
    step = LM.make_train_step(model, tfc.optimizers.Adam(LR), compiled)
    tx, ty = tfc.constant(x), tfc.constant(y)
    return (lambda: step(tx, ty)), step, (tx, ty)


# -- a functional GPT for the peers (xp: the framework's array namespace) -------------


def gpt_loss(ops, w, x, y):
    """The example's model and loss written once over ``ops`` (a namespace of
    matmul, softmax, gelu-free primitives, layer_norm, take, cross_entropy)."""
    h = ops.take(w["tok"], x) + w["pos"][:CONTEXT]
    head = WIDTH // HEADS
    mask = ops.mask
    for i in range(LAYERS):
        a = ops.layer_norm(h, w[f"{i}.norm1_g"], w[f"{i}.norm1_b"])
        qkv = a @ w[f"{i}.qkv_w"] + w[f"{i}.qkv_b"]
        q, k, v = (ops.heads(t, HEADS, head) for t in ops.split3(qkv))
        s = ops.matmul_t(q, k) * (1.0 / math.sqrt(head)) + mask
        o = ops.merge_heads(ops.softmax(s) @ v)
        h = h + (o @ w[f"{i}.proj_w"] + w[f"{i}.proj_b"])
        m = ops.layer_norm(h, w[f"{i}.norm2_g"], w[f"{i}.norm2_b"])
        u = m @ w[f"{i}.up_w"] + w[f"{i}.up_b"]
        u = 0.5 * u * (1.0 + ops.tanh(0.7978845608028654 * (u + 0.044715 * u * u * u)))
        h = h + (u @ w[f"{i}.down_w"] + w[f"{i}.down_b"])
    logits = ops.layer_norm(h, w["ln_g"], w["ln_b"]) @ w["head_w"] + w["head_b"]
    return ops.cross_entropy(logits, y)


class TorchOps:
    def __init__(self, torch):
        self.t = torch
        self.mask = torch.from_numpy(causal_mask())
        self.tanh = torch.tanh

    def take(self, table, ids):
        return table[ids]

    def layer_norm(self, x, g, b):
        return self.t.nn.functional.layer_norm(x, (x.shape[-1],), g, b, 1e-5)

    def split3(self, t):
        return t.chunk(3, dim=-1)

    def heads(self, t, n, d):
        return t.reshape(t.shape[0], t.shape[1], n, d).transpose(1, 2)

    def merge_heads(self, t):
        return t.transpose(1, 2).reshape(t.shape[0], t.shape[2], -1)

    def matmul_t(self, a, b):
        return a @ b.transpose(-1, -2)

    def softmax(self, s):
        return self.t.softmax(s, dim=-1)

    def cross_entropy(self, logits, y):
        return self.t.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def make_torch(torch, weights, x, y, compiled=False):
    """``compiled``: loss and backward under torch.compile (inductor); Adam eager, as users write it."""
    ops = TorchOps(torch)
    params = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
    opt = torch.optim.Adam(params.values(), lr=LR, betas=BETAS, eps=EPS)
    tx, ty = torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))

    def loss_fn(p):
        return gpt_loss(ops, p, tx, ty)

    if compiled:
        loss_fn = torch.compile(loss_fn)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(params)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


class JaxOps:
    def __init__(self, jax):
        self.jnp = jnp = jax.numpy
        self.nn = jax.nn
        self.mask = jnp.asarray(causal_mask())
        self.tanh = jnp.tanh

    def take(self, table, ids):
        return self.jnp.take(table, ids, axis=0)

    def layer_norm(self, x, g, b):
        mean = x.mean(-1, keepdims=True)
        c = x - mean
        return c * self.jax_rsqrt((c * c).mean(-1, keepdims=True) + 1e-5) * g + b

    def jax_rsqrt(self, v):
        return 1.0 / self.jnp.sqrt(v)

    def split3(self, t):
        return self.jnp.split(t, 3, axis=-1)

    def heads(self, t, n, d):
        return t.reshape(t.shape[0], t.shape[1], n, d).transpose(0, 2, 1, 3)

    def merge_heads(self, t):
        return t.transpose(0, 2, 1, 3).reshape(t.shape[0], t.shape[2], -1)

    def matmul_t(self, a, b):
        return a @ b.swapaxes(-1, -2)

    def softmax(self, s):
        return self.nn.softmax(s, axis=-1)

    def cross_entropy(self, logits, y):
        logp = self.nn.log_softmax(logits, axis=-1)
        return -self.jnp.take_along_axis(logp, y[..., None], axis=-1).mean()


def make_jax(jax, weights, x, y):
    """The whole step (loss, gradients, Adam) under jax.jit."""
    jnp = jax.numpy
    ops = JaxOps(jax)
    tx, ty = jnp.asarray(x), jnp.asarray(y)
    b1, b2 = BETAS

    @jax.jit
    def step(p, m, v, t):
        loss, g = jax.value_and_grad(lambda p: gpt_loss(ops, p, tx, ty))(p)
        t = t + 1
        lr = LR * jnp.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        p = jax.tree_util.tree_map(lambda p, m, v: p - lr * m / (jnp.sqrt(v) + EPS), p, m, v)
        return loss, p, m, v, t

    state = [{k: jnp.asarray(a) for k, a in weights.items()}]
    state += [{k: jnp.zeros_like(a) for k, a in state[0].items()} for _ in range(2)]
    state.append(jnp.asarray(0.0, jnp.float32))

    def run():
        loss, *state[:] = step(*state)
        return loss.block_until_ready()

    return run


# -- the table ------------------------------------------------------------------------


def implementations(found, vocab_size, x, y):
    weights = initial_weights(vocab_size)
    impls = {
        "tfc eager": (lambda: make_tfc(vocab_size, x, y, False)[0], "GradientTape, Adam"),
        "tfc compiled": (lambda: make_tfc(vocab_size, x, y, True)[0], "tfc.function, whole step"),
    }
    if "torch" in found:
        torch = found["torch"]
        impls["torch eager"] = (lambda: make_torch(torch, weights, x, y), f"{torch.get_num_threads()} threads")
        impls["torch.compile"] = (lambda: make_torch(torch, weights, x, y, compiled=True),
                                  "inductor: loss and backward")
    if "jax" in found:
        impls["jax.jit"] = (lambda: make_jax(found["jax"], weights, x, y), "whole step")
    return impls


def first_losses(impls) -> dict:
    """Each implementation's first-step loss; raises unless they agree with tfc eager's."""
    return check_losses_agree({name: float(np.asarray(make()())) for name, (make, _) in impls.items()},
                              "tfc eager")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--no-peers", action="store_true", help="tfc rows only")
    p.add_argument("--profile", action="store_true", help="also the profiler's table of the compiled step")
    args = p.parse_args(argv)
    found, missing = ({}, {}) if args.no_peers else detect_frameworks(("torch", "jax"))
    vocab_size, x, y = make_batch()
    impls = implementations(found, vocab_size, x, y)
    losses = first_losses(impls)
    print(f"## GPT training step ({LAYERS} layers, width {WIDTH}, {HEADS} heads, context {CONTEXT}, "
          f"batch {BATCH}, Adam)\n")
    print(header(found, missing))
    print(f"- first-step loss, every implementation within 1e-4 of tfc eager's: {losses['tfc eager']:.6f}")
    print()
    repeats = args.repeats or (3 if args.quick else 7)
    bench = Benchmark("GPT training step", baseline="torch eager" if "torch eager" in impls else "tfc eager",
                      repeats=repeats, warmup=3, batch_s=0.05)
    for name, (make, note) in impls.items():
        bench.add(name, make(), note)
    bench.run().print()
    if args.profile:
        _, step, inputs = make_tfc(vocab_size, x, y, True)
        step(*inputs)
        print()
        print(step.profile(*inputs, n=20, quiet=True).table(top=25))


if __name__ == "__main__":
    main()
