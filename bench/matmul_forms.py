"""Formulations of the GPT step's matrix products and gather gradient (issue 22):
np.matmul, one large GEMM by reshaping, scipy.linalg.blas, einsum; np.add.at,
bincount per column, sorted ids with np.add.reduceat. Prints the minimum of 30
calls of each (ms); the table in docs/benchmarks.md came from this script.

Usage: ``python bench/matmul_forms.py`` (needs scipy).
"""
from __future__ import annotations

import time

import numpy as np
from scipy.linalg import blas

B, T, C, N, H = 32, 64, 64, 256, 2  # batch, context, width, MLP width, heads
VOCAB = 65


def best_ms(fn, calls: int = 30) -> float:
    fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def show(title: str, rows: dict) -> None:
    print(title)
    for name, fn in rows.items():
        print(f"  {name:45s} {best_ms(fn):8.3f} ms")


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, T, C)).astype(np.float32)
    w = rng.standard_normal((C, N)).astype(np.float32)
    g = rng.standard_normal((B, T, N)).astype(np.float32)
    x2, g2 = x.reshape(-1, C), g.reshape(-1, N)

    show(f"x @ W, [{B}, {T}, {C}] @ [{C}, {N}]", {
        "np.matmul (a GEMM per batch)": lambda: np.matmul(x, w),
        "reshaped: one GEMM": lambda: np.matmul(x2, w).reshape(B, T, N),
        "scipy.linalg.blas.sgemm, reshaped": lambda: blas.sgemm(1.0, x2, w),
    })
    print("  same bits (np.matmul vs one GEMM):", np.array_equal(np.matmul(x, w), np.matmul(x2, w).reshape(B, T, N)))

    show("weight gradient x^T g summed over the batch", {
        "batched matmul, then reduce_sum (tfc today)": lambda: np.add.reduce(np.matmul(np.swapaxes(x, -1, -2), g), 0),
        "one GEMM x2d^T @ g2d": lambda: np.matmul(x2.T, g2),
        "scipy.linalg.blas.sgemm(trans_a=1)": lambda: blas.sgemm(1.0, x2, g2, trans_a=1),
    })
    batched = np.add.reduce(np.matmul(np.swapaxes(x, -1, -2), g), 0)
    one = x2.T @ g2
    print(f"  largest relative difference: {np.abs(batched - one).max() / np.abs(one).max():.2g}")

    q = rng.standard_normal((B, H, T, C // H)).astype(np.float32)
    k = rng.standard_normal((B, H, T, C // H)).astype(np.float32)

    def per_batch_sgemm():
        out = np.empty((B * H, T, T), np.float32)
        q3, k3 = q.reshape(-1, T, C // H), k.reshape(-1, T, C // H)
        for i in range(B * H):
            out[i] = blas.sgemm(1.0, q3[i], k3[i], trans_b=1)
        return out

    show(f"attention scores q @ k^T, [{B}, {H}, {T}, {C // H}]", {
        "np.matmul on a swapped-axes view": lambda: np.matmul(q, np.swapaxes(k, -1, -2)),
        "np.einsum": lambda: np.einsum("bhtd,bhsd->bhts", q, k),
        "scipy.linalg.blas.sgemm per batch": per_batch_sgemm,
    })

    ids = rng.integers(0, VOCAB, B * T).astype(np.int32)
    rows = rng.standard_normal((B * T, C)).astype(np.float32)

    def add_at():
        out = np.zeros((VOCAB, C), np.float32)
        np.add.at(out, ids, rows)
        return out

    def bincount_per_column():
        return np.stack([np.bincount(ids, weights=rows[:, j], minlength=VOCAB) for j in range(C)],
                        axis=1).astype(np.float32)

    def sorted_reduceat():
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
        out = np.zeros((VOCAB, C), np.float32)
        out[sorted_ids[starts]] = np.add.reduceat(rows[order], starts, axis=0)
        return out

    show(f"gather gradient: [{B * T}, {C}] rows into {VOCAB} ids", {
        "np.add.at (today)": add_at,
        "np.bincount per column": bincount_per_column,
        "sorted ids, np.add.reduceat": sorted_reduceat,
    })
    print(f"  largest difference from np.add.at: bincount {np.abs(add_at() - bincount_per_column()).max():.2g}, "
          f"sorted {np.abs(add_at() - sorted_reduceat()).max():.2g}")


if __name__ == "__main__":
    main()
