"""Post-training int8 quantization of two digits classifiers trained with tfc.

Trains the digits MLP (64-64-10) and a small CNN (two 3x3 conv layers with relu
and max pooling, then a dense layer) on scikit-learn's bundled 8x8 digits,
compiles each classifier three ways (float32; static int8, calibrated on training
batches; weight-only int8), and compares test accuracy, weight bytes and CPU
time per call on the test set; then saves the quantized classifiers, loads them
back (no Python source needed) and checks they give the same predictions.

    python examples/quantize_digits.py [--epochs N] [--seed S] [--out DIR]
    tfc compile examples/quantize_digits.py --quantize int8 --emit tensor   # `predict`, on CALIBRATION

Needs scikit-learn (the ``examples`` extra); the data ships with it (no download).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tfc  # noqa: E402
from mlp_digits import MLP, load_data  # noqa: E402
from tfc.quantization import Config, weight_bytes  # noqa: E402


class CNN(tfc.Module):
    """8x8x1 -> conv 3x3x16 relu -> max pool 2 -> conv 3x3x32 relu -> max pool 2 -> dense 10."""

    def __init__(self, seed=0):
        super().__init__()
        self.conv1 = tfc.layers.Conv2D(16, 3, padding="same", activation="relu",
                                       kernel_initializer=tfc.layers.GlorotUniform(seed=seed))
        self.conv2 = tfc.layers.Conv2D(32, 3, padding="same", activation="relu",
                                       kernel_initializer=tfc.layers.GlorotUniform(seed=seed + 1))
        self.out = tfc.layers.Dense(10, kernel_initializer=tfc.layers.GlorotUniform(seed=seed + 2))

    def __call__(self, x):
        h = tfc.nn.max_pool2d(self.conv1(x), 2, 2, "VALID")
        h = tfc.nn.max_pool2d(self.conv2(h), 2, 2, "VALID")
        return self.out(tfc.reshape(h, (-1, 2 * 2 * 32)))


MODELS = {"mlp": (MLP, (64,)), "cnn": (CNN, (8, 8, 1))}

# What `tfc compile` compiles here: a built (untrained) CNN, and the calibration
# batches `--quantize int8` reads (random pixels: the command needs no data set)
CLI_MODEL = CNN(seed=0)
CLI_MODEL(tfc.zeros((1, 8, 8, 1)))


@tfc.function(input_signature=[tfc.TensorSpec((None, 8, 8, 1))])
def predict(x):
    """Logits of a batch of 8x8 one-channel images."""
    return CLI_MODEL(x)


CALIBRATION = [(np.random.default_rng(i).uniform(0, 1, (32, 8, 8, 1)).astype(np.float32),) for i in range(4)]


def train(kind: str, epochs: int = 20, seed: int = 0, batch_size: int = 32, learning_rate: float = 0.01,
          verbose: bool = True):
    """A trained model of ``kind`` ("mlp" or "cnn") and the data as (x_train, y_train, x_test, y_test),
    images shaped for it."""
    make, shape = MODELS[kind]
    x_train, y_train, x_test, y_test = load_data(seed)
    x_train, x_test = x_train.reshape((-1,) + shape), x_test.reshape((-1,) + shape)
    model = make(seed=seed)
    model(tfc.constant(x_train[:1]))  # build the layers
    optimizer = tfc.optimizers.Adam(learning_rate)

    def loss_fn(x, y):
        return tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x)))

    rng = np.random.default_rng(seed)
    for _ in tfc.core.progress.progress(range(epochs), desc=f"training {kind}", unit="epoch", quiet=not verbose):
        order = rng.permutation(len(x_train))
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            x, y = tfc.constant(x_train[idx]), tfc.constant(y_train[idx])
            optimizer.minimize(lambda: loss_fn(x, y), model.trainable_variables)
    return model, (x_train, y_train, x_test, y_test)


def classifier(model, shape):
    """The compiled-to-be logits function over ``model``, for batches of any size."""
    return tfc.function(lambda x: model(x), input_signature=[tfc.TensorSpec((None,) + shape)])


def calibration_batches(x_train, batches: int = 8, size: int = 64):
    """The first training batches, as argument tuples (what ``calibration=`` takes)."""
    return [(x_train[i * size:(i + 1) * size],) for i in range(batches)]


def compile_three(model, shape, x_train):
    """{"float32": ..., "int8 static": ..., "int8 weight-only": ...} compiled classifiers."""
    fn = classifier(model, shape)
    return {
        "float32": tfc.compile(fn),
        "int8 static": tfc.compile(fn, quantize=Config(mode="static", quiet=True),
                                   calibration=calibration_batches(x_train)),
        "int8 weight-only": tfc.compile(fn, quantize="int8-weights"),
    }


def accuracy(fn, x, y) -> float:
    return float(np.mean(np.argmax(fn(x).numpy(), axis=1) == y))


def time_per_call(fns: dict, x, repeats: int = 15, number: int = 20, clock=time.perf_counter) -> dict:
    """The fastest of ``repeats`` batches of ``number`` calls of each function,
    the functions interleaved so that machine load affects them alike. ``clock``:
    wall time, or ``time.thread_time`` (CPU time of this thread: steadier on a
    shared machine, where waiting for a core is not the function's time)."""
    best = {name: float("inf") for name in fns}
    for fn in fns.values():
        fn(x)
    for _ in range(repeats):
        for name, fn in fns.items():
            start = clock()
            for _ in range(number):
                fn(x)
            best[name] = min(best[name], (clock() - start) / number)
    return best


def compare(kind: str, epochs: int = 20, seed: int = 0, out_dir: str | None = None, verbose: bool = True):
    """Train, quantize, compare and save/load one model; returns the table rows
    (name, accuracy, weight bytes, seconds per call)."""
    model, (x_train, y_train, x_test, y_test) = train(kind, epochs, seed, verbose=verbose)
    shape = MODELS[kind][1]
    fns = compile_three(model, shape, x_train)
    times = time_per_call(fns, x_test)
    rows = [(name, accuracy(fn, x_test, y_test), weight_bytes(fn), times[name]) for name, fn in fns.items()]
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in list(fns.items())[1:]:
            path = os.path.join(out_dir or tmp, f"{kind}-{name.replace(' ', '-')}")
            tfc.save(fn, path)
            if not np.array_equal(tfc.load(path)(x_test).numpy(), fn(x_test).numpy()):
                raise SystemExit(f"{kind} {name}: the loaded function differs from the saved one")
    return rows


def table(kind: str, rows) -> str:
    base_acc, base_bytes, base_time = rows[0][1], rows[0][2], rows[0][3]
    lines = [f"{kind}: test accuracy, weight bytes, CPU time per call (the 450 test images)",
             f"  {'':18} {'accuracy':>9} {'vs float':>9} {'bytes':>7} {'of float':>8} {'ms/call':>8} {'vs float':>8}"]
    for name, acc, nbytes, t in rows:
        lines.append(f"  {name:18} {acc:9.4f} {100 * (acc - base_acc):+8.2f}p {nbytes:7d} {nbytes / base_bytes:8.1%} "
                     f"{t * 1e3:8.3f} {t / base_time:7.2f}x")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", default="mlp,cnn", help="comma-separated: mlp, cnn")
    parser.add_argument("--out", metavar="DIR", help="keep the saved quantized classifiers here")
    args = parser.parse_args(argv)
    for kind in args.models.split(","):
        print(table(kind, compare(kind, args.epochs, args.seed, args.out)), flush=True)


if __name__ == "__main__":
    main()
