"""Train an MLP on scikit-learn's bundled 8x8 digits, eagerly; checkpoint it,
restore into a fresh model, and check the restored model scores the same.

    python examples/digits_mlp.py [--epochs N] [--batch-size B] [--seed S]

Needs scikit-learn (the ``examples`` extra); the data ships with it (no download).
"""
from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

import tfc


class MLP(tfc.Module):
    def __init__(self, hidden=64, classes=10, seed=0):
        super().__init__()
        init = tfc.layers.GlorotUniform(seed=seed)
        self.hidden = tfc.layers.Dense(hidden, activation="relu", kernel_initializer=init)
        self.out = tfc.layers.Dense(classes, kernel_initializer=init)

    def __call__(self, x):
        return self.out(self.hidden(x))


def load_data(seed=0):
    """(x_train, y_train, x_test, y_test): pixels scaled to [0, 1], 25% held out."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = len(x) // 4
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def accuracy(model, x, y) -> float:
    predicted = tfc.argmax(model(tfc.constant(x)), axis=1).numpy()
    return float(np.mean(predicted == y))


def loss_fn(model, x, y):
    return tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x)))


def train(epochs=30, batch_size=32, learning_rate=0.01, seed=0, verbose=True):
    """Train, checkpoint, restore; returns (test accuracy, restored test accuracy,
    whether the restored model's logits equal the trained model's exactly)."""
    x_train, y_train, x_test, y_test = load_data(seed)
    model = MLP(seed=seed)
    model(tfc.constant(x_train[:1]))  # build the lazy layers
    optimizer = tfc.optimizers.Adam(learning_rate)
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        losses = []
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            x, y = tfc.constant(x_train[idx]), tfc.constant(y_train[idx])
            loss = optimizer.minimize(lambda: loss_fn(model, x, y), model.trainable_variables)
            losses.append(float(loss))
        if verbose:
            print(f"epoch {epoch + 1:3d}  loss {np.mean(losses):.4f}  test accuracy {accuracy(model, x_test, y_test):.4f}")
    acc = accuracy(model, x_test, y_test)

    with tempfile.TemporaryDirectory() as tmp:
        path = tfc.train.Checkpoint(model=model, optimizer=optimizer).save(os.path.join(tmp, "digits"))
        fresh = MLP(seed=seed + 1)  # different initial values: only the restore can make it match
        status = tfc.train.Checkpoint(model=fresh, optimizer=tfc.optimizers.Adam(learning_rate)).restore(path)
        restored_acc = accuracy(fresh, x_test, y_test)  # the first call builds, then restores (deferred)
        status.assert_consumed()
        same = np.array_equal(model(tfc.constant(x_test)).numpy(), fresh(tfc.constant(x_test)).numpy())
    if verbose:
        print(f"test accuracy {acc:.4f}; restored from {os.path.basename(path)}: {restored_acc:.4f}")
    return acc, restored_acc, same


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    acc, restored, same = train(args.epochs, args.batch_size, args.learning_rate, args.seed)
    if restored != acc or not same:
        raise SystemExit(f"the restored model differs: accuracy {restored} vs {acc}")


if __name__ == "__main__":
    main()
