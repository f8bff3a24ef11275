"""A small CNN on scikit-learn's bundled 8x8 digits (conv 16, max-pool, conv 32,
dense), trained with Adam eagerly or with the training step compiled; then its
test accuracy, a checkpoint restored into a fresh model, and the same accuracy.

    python examples/cnn_digits.py [--steps N] [--mode eager|compiled] [--batch-size B] [--seed S]

Needs scikit-learn (the ``examples`` extra; the data ships with it). The same
model is the subject of bench/cnn.py.
"""
from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

import tfc
from tfc.core.progress import bar


def make_model(seed=0):
    init = tfc.layers.GlorotUniform(seed=seed)
    return tfc.layers.Sequential([
        tfc.layers.Conv2D(16, 3, padding="same", activation="relu", kernel_initializer=init),
        tfc.layers.MaxPool2D(2),
        tfc.layers.Conv2D(32, 3, padding="same", activation="relu", kernel_initializer=init),
        tfc.layers.Flatten(),
        tfc.layers.Dense(10, kernel_initializer=init),
    ])


# What `tfc compile` sees: the classifier over a built (untrained) model; training
# with seed 0 fills these same variables.
MODEL = make_model(0)
MODEL(tfc.zeros((1, 8, 8, 1)))


@tfc.function(input_signature=[tfc.TensorSpec((None, 8, 8, 1))])
def predict(images):
    """Class probabilities of a batch of 8x8 images (pixels in [0, 1])."""
    return tfc.nn.softmax(MODEL(images))


def load_data(seed=0):
    """(x_train, y_train, x_test, y_test): NHWC images [N, 8, 8, 1] in [0, 1], 25% held out."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]
    y = digits.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = len(x) // 4
    return x[order[n_test:]], y[order[n_test:]], x[order[:n_test]], y[order[:n_test]]


def loss_fn(model, x, y):
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


def accuracy(model, x, y) -> float:
    return float(np.mean(tfc.argmax(model(tfc.constant(x)), axis=1).numpy() == y))


def train(steps=600, mode="compiled", batch_size=64, learning_rate=3e-3, seed=0, verbose=True, quiet=False):
    """Train; returns {"losses", "accuracy", "restored_accuracy"}."""
    x_train, y_train, x_test, y_test = load_data(seed)
    model = MODEL if seed == 0 else make_model(seed)
    model(tfc.constant(x_train[:1]))  # build the layers
    optimizer = tfc.optimizers.Adam(learning_rate)
    step_fn = make_train_step(model, optimizer, compiled=(mode == "compiled"))
    data = (tfc.data.Dataset.from_tensor_slices((x_train, y_train))
            .shuffle(len(x_train), seed=seed)
            .batch(batch_size, drop_remainder=True)
            .repeat()
            .take(steps))
    losses = []
    with bar(desc=f"training ({mode})", total=steps, unit="step", quiet=quiet or not verbose) as progress:
        for x, y in data:
            losses.append(float(step_fn(x, y)))
            progress.update(1)
            progress.set_postfix(loss=f"{losses[-1]:.3f}")
    acc = accuracy(model, x_test, y_test)
    with tempfile.TemporaryDirectory() as tmp:
        path = tfc.train.Checkpoint(model=model).save(os.path.join(tmp, "cnn"))
        fresh = make_model(seed + 1)
        fresh(tfc.constant(x_train[:1]))
        tfc.train.Checkpoint(model=fresh).restore(path).assert_consumed()
        restored = accuracy(fresh, x_test, y_test)
    if verbose:
        print(f"{mode}: loss {losses[0]:.4f} at step 0, {np.mean(losses[-10:]):.4f} over the last 10 steps; "
              f"test accuracy {acc:.4f}, restored {restored:.4f}")
    return {"losses": losses, "accuracy": acc, "restored_accuracy": restored}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--mode", choices=("eager", "compiled"), default="compiled")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    result = train(args.steps, args.mode, args.batch_size, args.learning_rate, args.seed)
    if result["restored_accuracy"] != result["accuracy"]:
        raise SystemExit(f"the restored model differs: accuracy {result['restored_accuracy']} vs {result['accuracy']}")
    return result


if __name__ == "__main__":
    main()
