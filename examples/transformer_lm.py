"""A character-level GPT trained on Shakespeare's sonnets (examples/data/sonnets.txt),
eagerly or with the training step compiled; TensorBoard curves (tfc.summary), a
checkpoint, and text sampled from the trained model at the end.

    python examples/transformer_lm.py [--steps N] [--mode eager|compiled] [--logdir DIR]
                                      [--checkpoint PATH] [--sample N] [--seed S]

The model is the issue's (2 layers, width 64, 2 heads, context 64, batch 32,
Adam): pre-norm blocks of causal self-attention and a GELU MLP. The same model
is the subject of bench/transformer.py.
"""
from __future__ import annotations

import argparse
import math
import os
import pathlib
import tempfile

import numpy as np

import tfc
from tfc.core.progress import bar

TEXT = pathlib.Path(__file__).resolve().parent / "data" / "sonnets.txt"
LN_EPSILON = 1e-5  # GPT-2's layer-norm epsilon


class Vocabulary:
    """Characters <-> integer ids (the text's characters, sorted)."""

    def __init__(self, text: str):
        self.chars = sorted(set(text))
        self.ids = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> np.ndarray:
        unknown = sorted(set(text) - set(self.ids))
        if unknown:
            raise ValueError(f"characters not in the vocabulary: {''.join(unknown)!r}")
        return np.array([self.ids[c] for c in text], np.int32)

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)


def normal_init(rng):
    """GPT-2's initialization of kernels and token embeddings: normal, std 0.02."""
    return tfc.layers.RandomNormal(stddev=0.02, seed=int(rng.integers(2**31)))


def linear(units, rng):
    return tfc.layers.Dense(units, kernel_initializer=normal_init(rng))


class Block(tfc.Module):
    """x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, width, heads, context, rng):
        super().__init__()
        self.heads = heads
        self.norm1 = tfc.layers.LayerNormalization(epsilon=LN_EPSILON)
        self.qkv = linear(3 * width, rng)
        self.proj = linear(width, rng)
        self.norm2 = tfc.layers.LayerNormalization(epsilon=LN_EPSILON)
        self.up = linear(4 * width, rng)
        self.down = linear(width, rng)
        # added to the attention scores: a position sees itself and those before it
        self.mask = np.triu(np.full((context, context), -1e9, np.float32), k=1)

    def attention(self, x):
        _, steps, width = x.shape  # (the batch may be known only at run time: -1 below)
        head = width // self.heads

        def split_heads(t):  # [B, T, C] -> [B, H, T, C/H]
            return tfc.transpose(tfc.reshape(t, (-1, steps, self.heads, head)), (0, 2, 1, 3))

        q, k, v = (split_heads(t) for t in tfc.split(self.qkv(x), 3, axis=-1))
        scores = tfc.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(head))
        weights = tfc.nn.softmax(scores + self.mask[:steps, :steps], axis=-1)
        out = tfc.transpose(tfc.matmul(weights, v), (0, 2, 1, 3))
        return self.proj(tfc.reshape(out, (-1, steps, width)))

    def __call__(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.down(tfc.nn.gelu(self.up(self.norm2(x)), approximate=True))


class GPT(tfc.Module):
    def __init__(self, vocab_size, width=64, heads=2, layers=2, context=64, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.context = context
        self.token_embedding = tfc.layers.Embedding(vocab_size, width, embeddings_initializer=normal_init(rng))
        self.position_embedding = tfc.Variable((rng.standard_normal((context, width)) * 0.01).astype(np.float32),
                                               name="position_embedding")
        self.blocks = [Block(width, heads, context, rng) for _ in range(layers)]
        self.norm = tfc.layers.LayerNormalization(epsilon=LN_EPSILON)
        self.head = linear(vocab_size, rng)
        self(tfc.zeros((1, context), tfc.int32))  # build the lazy layers

    def __call__(self, ids):
        """Logits [B, T, vocab] of the next character after each of ``ids`` [B, T]."""
        steps = ids.shape[1]
        x = self.token_embedding(ids) + self.position_embedding[:steps]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


# What `tfc compile` sees: the model's next-character distribution after each of a
# batch of context-long windows (a built, untrained model; training with
# seed 0 fills these same variables).
VOCAB = Vocabulary(TEXT.read_text())
MODEL = GPT(len(VOCAB), seed=0)


@tfc.function(input_signature=[tfc.TensorSpec((None, MODEL.context), tfc.int32)])
def next_char_probabilities(ids):
    """Probabilities [B, vocab] of the character after each window of ``ids`` [B, context]."""
    return tfc.nn.softmax(MODEL(ids)[:, -1])


def loss_fn(model, x, y):
    """Mean cross-entropy of the next characters ``y`` [B, T]."""
    return tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x)))


def make_train_step(model, optimizer, compiled: bool):
    """One Adam step on a batch; its loss before the step."""
    def train_step(x, y):
        with tfc.GradientTape() as tape:
            loss = loss_fn(model, x, y)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return tfc.function(train_step) if compiled else train_step


def windows(data: np.ndarray, context: int):
    """Every (input, next-character target) window of ``context`` characters."""
    n = len(data) - context
    index = np.arange(n)[:, None] + np.arange(context)[None, :]
    return data[index], data[index + 1]


def batches(data, context, batch_size, seed):
    """An endless tfc.data pipeline of shuffled batches of windows."""
    x, y = windows(data, context)
    return (tfc.data.Dataset.from_tensor_slices((x, y))
            .shuffle(len(x), seed=seed)
            .batch(batch_size, drop_remainder=True)
            .repeat()
            .prefetch(2))


def sample(model, vocab, prompt: str, length: int, seed: int = 0, temperature: float = 1.0) -> str:
    """``prompt`` continued by ``length`` characters drawn from the model."""
    ids = list(vocab.encode(prompt))
    for i in range(length):
        window = tfc.constant(np.array([ids[-model.context:]], np.int32))
        logits = model(window)[:, -1] / temperature
        ids.append(int(tfc.random.categorical(logits, 1, seed=seed * 1_000_003 + i)[0, 0]))
    return vocab.decode(ids)


def train(steps=2000, mode="compiled", batch_size=32, learning_rate=3e-3, seed=0, logdir=None,
          checkpoint=None, sample_length=200, verbose=True, quiet=False):
    """Train; returns {"losses": [...], "sample": text, "checkpoint": path}."""
    text = TEXT.read_text()
    vocab = Vocabulary(text)
    data = vocab.encode(text)
    model = MODEL if seed == 0 else GPT(len(vocab), seed=seed)
    optimizer = tfc.optimizers.Adam(learning_rate)
    step_fn = make_train_step(model, optimizer, compiled=(mode == "compiled"))
    writer = None if logdir is None else tfc.summary.create_file_writer(logdir)
    losses = []
    progress = bar(desc=f"training ({mode})", total=steps, unit="step", quiet=quiet or not verbose)
    with progress:
        for step, (x, y) in enumerate(batches(data, model.context, batch_size, seed).take(steps)):
            loss = float(step_fn(x, y))
            losses.append(loss)
            progress.update(1)
            progress.set_postfix(loss=f"{loss:.3f}")
            if writer is not None:
                with writer.as_default():
                    tfc.summary.scalar("loss", loss, step=step)
    result = {"losses": losses}
    if checkpoint is not None:
        result["checkpoint"] = tfc.train.Checkpoint(model=model, optimizer=optimizer).save(checkpoint)
    if sample_length:
        result["sample"] = sample(model, vocab, "Shall I ", sample_length, seed)
        if writer is not None:
            with writer.as_default():
                tfc.summary.text("sample", result["sample"], step=steps)
    if writer is not None:
        writer.flush()
    if verbose:
        print(f"{mode}: loss {losses[0]:.4f} at step 0, {np.mean(losses[-10:]):.4f} over the last 10 steps")
        if "checkpoint" in result:
            print(f"checkpoint: {result['checkpoint']}")
        if "sample" in result:
            print("sample:\n" + result["sample"])
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--mode", choices=("eager", "compiled"), default="compiled")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", default=None, help="TensorBoard log directory (default: none)")
    parser.add_argument("--checkpoint", default=None,
                        help="checkpoint path prefix (default: one in a temporary directory)")
    parser.add_argument("--sample", type=int, default=200, metavar="N", help="characters to sample at the end")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        return train(args.steps, args.mode, args.batch_size, args.learning_rate, args.seed, args.logdir,
                     args.checkpoint or os.path.join(tmp, "gpt"), args.sample)


if __name__ == "__main__":
    main()
