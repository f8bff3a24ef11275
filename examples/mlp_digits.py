"""Train an MLP on scikit-learn's bundled 8x8 digits, eagerly; checkpoint it,
restore into a fresh model, and check the restored model scores the same; then
export the compiled classifier and check the exported one scores the same too.

    python examples/mlp_digits.py [--epochs N] [--batch-size B] [--seed S] [--export DIR]
    tfc compile examples/mlp_digits.py          # the classifier `predict`

Needs scikit-learn (the ``examples`` extra); the data ships with it (no download).
"""
from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

import tfc
from tfc.core import progress


class MLP(tfc.Module):
    def __init__(self, hidden=64, classes=10, seed=0):
        super().__init__()
        init = tfc.layers.GlorotUniform(seed=seed)
        self.hidden = tfc.layers.Dense(hidden, activation="relu", kernel_initializer=init)
        self.out = tfc.layers.Dense(classes, kernel_initializer=init)

    def __call__(self, x):
        return self.out(self.hidden(x))


# The classifier as `tfc compile` sees it: a built (untrained) model; training
# fills these same variables, so the compiled `predict` uses the trained weights.
MODEL = MLP(seed=0)
MODEL(tfc.zeros((1, 64)))


@tfc.function(input_signature=[tfc.TensorSpec((None, 64))])
def predict(x):
    """Class probabilities of a batch of flattened 8x8 images (pixels in [0, 1])."""
    return tfc.nn.softmax(MODEL(x))


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


def export(model, path, x_test, y_test) -> float:
    """Compile the classifier over ``model``, save it to ``path``, load it back
    (no Python source needed) and return the loaded function's test accuracy."""
    classify = tfc.function(lambda x: tfc.nn.softmax(model(x)), input_signature=[tfc.TensorSpec((None, 64))])
    tfc.save(tfc.compile(classify), path, root=model)
    loaded = tfc.load(path)
    return float(np.mean(np.argmax(loaded(x_test).numpy(), axis=1) == y_test))


def train(epochs=30, batch_size=32, learning_rate=0.01, seed=0, verbose=True, export_dir=None):
    """Train, checkpoint, restore; returns (test accuracy, restored test accuracy,
    whether the restored model's logits equal the trained model's exactly).
    With ``export_dir``, also export the classifier there and check it."""
    x_train, y_train, x_test, y_test = load_data(seed)
    model = MODEL if seed == 0 else MLP(seed=seed)
    model(tfc.constant(x_train[:1]))  # build the lazy layers
    optimizer = tfc.optimizers.Adam(learning_rate)
    rng = np.random.default_rng(seed)
    # on a terminal a progress bar shows the epochs (loss and accuracy beside it); elsewhere a line each
    bar = progress.bar("train", total=epochs, unit="epoch", quiet=not verbose)
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        losses = []
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            x, y = tfc.constant(x_train[idx]), tfc.constant(y_train[idx])
            loss = optimizer.minimize(lambda: loss_fn(model, x, y), model.trainable_variables)
            losses.append(float(loss))
        if verbose:
            loss, test_acc = float(np.mean(losses)), accuracy(model, x_test, y_test)
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4f}", accuracy=f"{test_acc:.4f}")
            if not progress.enabled():
                print(f"epoch {epoch + 1:3d}  loss {loss:.4f}  test accuracy {test_acc:.4f}")
    bar.close()
    acc = accuracy(model, x_test, y_test)

    with tempfile.TemporaryDirectory() as tmp:
        path = tfc.train.Checkpoint(model=model, optimizer=optimizer).save(os.path.join(tmp, "digits"))
        fresh = MLP(seed=seed + 1)  # different initial values: only the restore can make it match
        status = tfc.train.Checkpoint(model=fresh, optimizer=tfc.optimizers.Adam(learning_rate)).restore(path)
        restored_acc = accuracy(fresh, x_test, y_test)  # the first call builds, then restores (deferred)
        status.assert_consumed()
        same = np.array_equal(model(tfc.constant(x_test)).numpy(), fresh(tfc.constant(x_test)).numpy())
    if export_dir is not None:
        exported_acc = export(model, export_dir, x_test, y_test)
        if verbose:
            print(f"exported to {export_dir}: test accuracy {exported_acc:.4f}")
        if exported_acc != acc:
            raise SystemExit(f"the exported classifier differs: accuracy {exported_acc} vs {acc}")
    if verbose:
        print(f"test accuracy {acc:.4f}; restored from {os.path.basename(path)}: {restored_acc:.4f}")
    return acc, restored_acc, same


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--export", metavar="DIR", help="export the trained classifier here")
    args = parser.parse_args(argv)
    acc, restored, same = train(args.epochs, args.batch_size, args.learning_rate, args.seed,
                                export_dir=args.export)
    if restored != acc or not same:
        raise SystemExit(f"the restored model differs: accuracy {restored} vs {acc}")


if __name__ == "__main__":
    main()
