"""Gather's gradient (a scatter-add of rows): np.add.at on the rows, as eager
ran it before, against tfc's eager scatter_add_rows (numpy's flat np.add.at
path), the numpy backend's rt.add_at (compiled) and sorting the ids for
np.add.reduceat (pairwise sums: other bits). Minimum over repeats, in ms.

    .venv/bin/python bench/scatter_add.py
"""
import numpy as np

from harness import time_fn  # (bench/, this script's directory)
from tfc.backends.numpy import runtime
from tfc.ops.scatter import scatter_add_rows

CASES = [("2048 ids -> 65 x 64", 65, (2048,), 64), ("GPT embedding: [32, 64] ids -> 65 x 64", 65, (32, 64), 64),
         ("4096 ids -> 1000 x 64", 1000, (4096,), 64)]


def best(f):
    return time_fn(f, repeats=7, warmup=0, number=50)[1] * 1e3


def main():
    rng = np.random.default_rng(0)
    for name, segments, id_shape, width in CASES:
        ids = rng.integers(0, segments, id_shape)
        g = rng.standard_normal(id_shape + (width,)).astype(np.float32)
        flat_ids, rows = ids.reshape(-1), g.reshape(-1, width)
        space = id_shape + (width,)
        index = (ids.reshape(id_shape + (1,)), np.arange(width).reshape((1,) * len(id_shape) + (width,)))

        def rows_add_at():
            out = np.zeros((segments, width), np.float32)
            np.add.at(out, flat_ids, rows)
            return out

        def eager():
            out = np.zeros((segments, width), np.float32)
            scatter_add_rows(out, flat_ids, rows)
            return out

        def compiled():
            out = np.zeros((segments, width), np.float32)
            runtime.add_at(out, index, g, None, space)
            return out

        def sorted_reduceat():
            order = np.argsort(flat_ids, kind="stable")
            s = flat_ids[order]
            starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
            out = np.zeros((segments, width), np.float32)
            out[s[starts]] += np.add.reduceat(rows[order], starts, axis=0)
            return out

        same = np.array_equal(eager(), rows_add_at()) and np.array_equal(compiled(), rows_add_at())
        print(f"{name}: np.add.at on rows {best(rows_add_at):.3f}, scatter_add_rows {best(eager):.3f}, "
              f"rt.add_at {best(compiled):.3f}, sort + reduceat {best(sorted_reduceat):.3f} "
              f"(reduceat same bits: {np.array_equal(sorted_reduceat(), rows_add_at())}); "
              f"eager == compiled == np.add.at: {same}")


if __name__ == "__main__":
    main()
