"""Shapes known only at run time: the digits classifier ``predict``
(examples/mlp_digits.py: Dense(64, relu), Dense(10), softmax) compiled with
``TensorSpec([None, 64])`` against the same function compiled with a static
signature, side by side in one run, per batch size. The None-batch function
specializes its plan and kernels per batch size on first use (the timed calls
hit its cache: one dict lookup more than a static call); eager and numpy rows
for scale. A last table gives the first call at each batch size: a static
signature traces and compiles, the None batch specializes and compiles.

Usage: ``PYTHONPATH=. python bench/dynamic_shapes.py [--batches 1,64,4096] [--quick]``

Every compiled result is checked equal to eager's to the bit before timing.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(_HERE))

import tfc  # noqa: E402
from harness import Benchmark, header, no_disk_cache  # noqa: E402

from tfc.frontend.function import SPECIALIZATIONS  # noqa: E402


class MLP(tfc.Module):
    """examples/mlp_digits.py's classifier (the example needs scikit-learn to import)."""

    def __init__(self, hidden=64, classes=10, seed=0):
        super().__init__()
        init = tfc.layers.GlorotUniform(seed=seed)
        self.hidden = tfc.layers.Dense(hidden, activation="relu", kernel_initializer=init)
        self.out = tfc.layers.Dense(classes, kernel_initializer=init)

    def __call__(self, x):
        return self.out(self.hidden(x))


def numpy_predict(params, x):
    w1, b1, w2, b2 = params
    h = np.maximum(x @ w1 + b1, np.float32(0))
    z = h @ w2 + b2
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="1,64,4096", help="batch sizes, comma-separated")
    ap.add_argument("--quick", action="store_true", help="fewer, shorter batches (a smoke run)")
    args = ap.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",") if b.strip()]

    model = MLP(seed=0)
    model(tfc.zeros((1, 64)))

    def predict(x):
        return tfc.nn.softmax(model(x))

    dynamic = tfc.function(predict, input_signature=[tfc.TensorSpec((None, 64))])
    params = [v.numpy() for v in (model.hidden.kernel, model.hidden.bias, model.out.kernel, model.out.bias)]
    rng = np.random.default_rng(0)
    print("## Shapes known only at run time\n")
    print(header())
    print()
    kw = {"baseline": "static signature", "repeats": 3 if args.quick else 9, "batch_s": 0.01 if args.quick else 0.05}
    results, first_calls = [], []
    dynamic(tfc.zeros((2, 64)))  # traced once (its trace is not a new batch size's cost)
    for n in batches:
        x = rng.uniform(0, 1, (n, 64)).astype(np.float32)
        tx = tfc.constant(x)
        static = tfc.function(predict, input_signature=[tfc.TensorSpec((n, 64))])
        want = predict(tx).numpy()
        firsts = []
        with no_disk_cache():
            for name, f in (("static", static), ("None batch", dynamic)):
                start = time.perf_counter()
                got = f(tx).numpy()
                firsts.append(time.perf_counter() - start)
                assert np.array_equal(want, got), f"batch {n}: the {name} compiled result differs from eager"
        first_calls.append((n, *firsts))
        plan = dynamic.get_concrete_function().memory_plans[((n, 64),)]
        bench = Benchmark(f"digits predict, batch {n} ([{n}, 64] float32 -> [{n}, 10])", **kw)
        bench.add("static signature", lambda f=static, a=tx: f(a), "TensorSpec([n, 64])")
        bench.add("None batch", lambda f=dynamic, a=tx: f(a),
                  f"TensorSpec([None, 64]), specialized: arena {plan.arena_size} B")
        bench.add("tfc eager", lambda a=tx: predict(a))
        bench.add("numpy", lambda a=x: numpy_predict(params, a), "as written")
        bench.run().print()
        results.append((n, bench.ratios()["None batch"], bench.rows[1].min_s / bench.rows[0].min_s))
    print("### None batch over static signature (target: within 1.1x)\n")
    print("| batch | median ratio | min ratio |")
    print("|---:|---:|---:|")
    for n, ratio, min_ratio in results:
        print(f"| {n} | {ratio:.2f}x | {min_ratio:.2f}x |")
    print()
    print("### First call at a new batch size (no disk cache)\n")
    print("| batch | static signature: trace + compile + run (ms) | None batch: specialize + compile + run (ms) |")
    print("|---:|---:|---:|")
    for n, static_s, dynamic_s in first_calls:
        print(f"| {n} | {static_s * 1e3:.1f} | {dynamic_s * 1e3:.1f} |")
    print()
    conc = dynamic.get_concrete_function()
    print(f"specializations of the None-batch function: {len(conc.memory_plans)} kept (at most "
          f"{SPECIALIZATIONS}, TFC_SPECIALIZATIONS)")


if __name__ == "__main__":
    main()
