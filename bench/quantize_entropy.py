"""Does a histogram / entropy (KL, TensorRT-style) calibration pay on the digits
models of examples/quantize_digits.py? Test accuracy of static int8 calibrated with
min/max, percentile (99.99, 99.9) and entropy ranges, three training seeds each.

Usage: ``PYTHONPATH=. python bench/quantize_entropy.py``

The entropy method is here, not in tfc.quantization: it did not pay (docs/quantization.md
has the numbers). It stands in for the library's observer (``tfc.quantization.observer``)
for the run: "entropy" on every calibrated value, "entropy-acts" on all but the network
input (which keeps min/max).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import quantize_digits as qd  # noqa: E402
import tfc  # noqa: E402
import tfc.quantization as tq  # noqa: E402
from tfc.quantization import Config  # noqa: E402



def kl_threshold(a, bins=2048, levels=255):
    """TensorRT's entropy calibration on |a|: the clipping threshold whose
    255-level quantized histogram is closest (KL) to the clipped reference one."""
    a = np.abs(a.astype(np.float64).ravel())
    amax = a.max()
    if amax == 0:
        return 0.0
    hist, edges = np.histogram(a, bins=bins, range=(0, amax))
    best, best_i = np.inf, bins
    for i in range(levels, bins + 1):
        p = hist[:i].astype(np.float64).copy()
        p[i - 1] += hist[i:].sum()
        nz = p > 0
        # merge the i bins into `levels` bins, spread back uniformly over the nonzero bins
        idx = (np.arange(i) * levels) // i
        merged = np.bincount(idx, weights=hist[:i], minlength=levels)
        counts = np.bincount(idx, weights=(hist[:i] > 0), minlength=levels)
        q = np.where(hist[:i] > 0, merged[idx] / np.maximum(counts[idx], 1), 0.0)
        ps, qs = p.sum(), q.sum()
        if qs == 0:
            continue
        pn, qn = p[nz] / ps, q[nz] / qs
        if np.any(qn == 0):
            kl = np.inf
        else:
            kl = float(np.sum(pn * np.log(pn / qn)))
        if kl < best:
            best, best_i = kl, i
    return float(edges[best_i]) if best_i < len(edges) else float(amax)


class EntropyObserver:
    """All values seen; the range clipped at the entropy threshold of their magnitudes."""

    def __init__(self):
        self.parts = []
    def update(self, a):
        if a.size:
            self.parts.append(np.asarray(a, np.float64).ravel())

    def range(self):
        if not self.parts:
            return (0.0, 0.0)
        a = np.concatenate(self.parts)
        t = kl_threshold(a)
        return (max(float(a.min()), -t), min(float(a.max()), t))


def run(kind, seed):
    model, (xt, yt, xs, ys) = qd.train(kind, 20, seed=seed, verbose=False)
    fn = qd.classifier(model, qd.MODELS[kind][1])
    cal = qd.calibration_batches(xt)
    row = {"float32": qd.accuracy(tfc.compile(fn), xs, ys)}
    for name, cfg in [("minmax", Config(quiet=True)), ("pct99.99", Config(method="percentile", quiet=True)),
                      ("pct99.9", Config(method="percentile", percentile=99.9, quiet=True))]:
        row[name] = qd.accuracy(tfc.compile(fn, quantize=cfg, calibration=cal), xs, ys)
    orig = tq.observer
    tq.observer = lambda config: EntropyObserver()
    try:
        row["entropy"] = qd.accuracy(tfc.compile(fn, quantize=Config(quiet=True), calibration=cal), xs, ys)
    finally:
        tq.observer = orig
    calls = []

    def first_minmax(config):  # the network input min/max, every activation by entropy
        calls.append(1)
        return tq.MinMaxObserver() if len(calls) == 1 else EntropyObserver()
    tq.observer = first_minmax
    try:
        row["entropy-acts"] = qd.accuracy(tfc.compile(fn, quantize=Config(quiet=True), calibration=cal), xs, ys)
    finally:
        tq.observer = orig
    return row


def main():
    print("| model | calibration | seed 0 | seed 1 | seed 2 | mean |")
    print("|---|---|---:|---:|---:|---:|")
    for kind in ("mlp", "cnn"):
        rows = [run(kind, seed) for seed in range(3)]
        for name in rows[0]:
            vals = [r[name] for r in rows]
            print(f"| {kind} | {name} | " + " | ".join(f"{v:.4f}" for v in vals) + f" | {np.mean(vals):.4f} |")


if __name__ == "__main__":
    main()
