"""Post-training int8 quantization on the CPU: float32 against static int8
(per-channel and per-tensor weights) and weight-only int8, side by side in one
run, on the digits MLP (64-64-10) and the small digits CNN of
examples/quantize_digits.py, both trained with tfc first.

Usage: ``PYTHONPATH=. python bench/quantize.py [--quick] [--repeats N] [--epochs N] [--cpu-time]``

For each model: test accuracy, weight bytes (variables of the float function;
int8 weights, int32 biases and float scales of the quantized ones) and the time
of one call on the 450 test images, each function compiled with tfc.compile
(numpy backend). torch's dynamic quantization (``torch.ao.quantization.
quantize_dynamic``, int8 weights of nn.Linear) of the same MLP is a peer row
when torch is installed.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(_HERE))  # the checkout's tfc, unless PYTHONPATH names one
sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "examples"))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from harness import Benchmark, detect_frameworks, header  # noqa: E402


def torch_peer(model, x_test):
    """torch's float MLP with the same weights and its dynamic int8 version,
    as (float fn, int8 fn); None without torch."""
    try:
        import torch
    except ImportError:
        return None
    layers = [model.hidden, model.out]
    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    with torch.no_grad():
        for lin, layer in zip((net[0], net[2]), layers):
            lin.weight.copy_(torch.from_numpy(layer.kernel.numpy().T.copy()))
            lin.bias.copy_(torch.from_numpy(layer.bias.numpy()))
    qnet = torch.ao.quantization.quantize_dynamic(net, {torch.nn.Linear}, dtype=torch.qint8)
    x = torch.from_numpy(x_test)

    def run(m):
        with torch.no_grad():
            return m(x)

    return (lambda: run(net)), (lambda: run(qnet))


def print_cpu_times(kind, fns, x_test, y_test, repeats):
    """One table row per function: accuracy, weight bytes and the least CPU time
    of one call (``time.thread_time``, batches of calls interleaved)."""
    import time

    import quantize_digits as qd
    from tfc.quantization import weight_bytes

    number = 50 if kind == "mlp" else 5
    times = qd.time_per_call(fns, x_test, repeats=repeats, number=number, clock=time.thread_time)
    base = fns["float32"]
    base_acc, base_bytes, base_time = qd.accuracy(base, x_test, y_test), weight_bytes(base), times["float32"]
    print(f"### {kind}: CPU time of one call on the {len(x_test)} test images "
          f"(min of {repeats} interleaved batches of {number})\n")
    print("| case | accuracy | vs float | weight bytes | of float | CPU time (us) | vs float |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, fn in fns.items():
        acc, nbytes = qd.accuracy(fn, x_test, y_test), weight_bytes(fn)
        print(f"| tfc {name} | {acc:.4f} | {100 * (acc - base_acc):+.2f} | {nbytes} | {nbytes / base_bytes:.1%} "
              f"| {times[name] * 1e6:.1f} | {times[name] / base_time:.2f}x |")
    print()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 epochs, 3 repeats (a smoke run)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--cpu-time", action="store_true",
                        help="time by this thread's CPU time (min of --repeats interleaved batches of calls), "
                             "not wall time: steadier on a loaded machine")
    args = parser.parse_args(argv)
    epochs, repeats = (3, 3) if args.quick else (args.epochs, args.repeats)

    import quantize_digits as qd
    import tfc
    from tfc.quantization import Config, weight_bytes

    frameworks, missing = detect_frameworks(("torch",))
    print(header(frameworks, missing))
    print()
    for kind in ("mlp", "cnn"):
        model, (x_train, y_train, x_test, y_test) = qd.train(kind, epochs, verbose=False)
        fns = qd.compile_three(model, qd.MODELS[kind][1], x_train)
        # per-tensor weights: one scale per layer instead of one per output channel (fewer bytes)
        fns["int8 static per-tensor"] = tfc.compile(
            qd.classifier(model, qd.MODELS[kind][1]), quantize=Config(per_channel=False, quiet=True),
            calibration=qd.calibration_batches(x_train))
        if args.cpu_time:
            print_cpu_times(kind, fns, x_test, y_test, repeats)
            continue
        bench = Benchmark(f"{kind}: one call on the {len(x_test)} test images", repeats=repeats)
        base_acc, base_bytes = qd.accuracy(fns["float32"], x_test, y_test), weight_bytes(fns["float32"])
        for name, fn in fns.items():
            acc, nbytes = qd.accuracy(fn, x_test, y_test), weight_bytes(fn)
            note = (f"accuracy {acc:.4f} ({100 * (acc - base_acc):+.2f} points), weights {nbytes} B "
                    f"({nbytes / base_bytes:.1%})")
            bench.add(f"tfc {name}", lambda fn=fn: fn(x_test), note)
        if kind == "mlp":
            peer = torch_peer(model, x_test)
            if peer is None:
                bench.skip("torch float32 / dynamic int8", missing.get("torch", "not installed"))
            else:
                bench.add("torch float32", peer[0])
                bench.add("torch dynamic int8", peer[1], "quantize_dynamic(nn.Linear, qint8)")
        bench.run().print()


if __name__ == "__main__":
    main()
