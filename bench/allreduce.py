"""All-reduce bandwidth of tfc's path against raw mpi4py ``Allreduce`` on the
same buffers, and a data-parallel MLP training step on 1 and 2 ranks.

    python bench/allreduce.py [--ranks 2] [--repeat 30] [--json OUT]

Run without a launcher, it starts itself under ``tfc run`` (mpirun): once on
``--ranks`` ranks for the all-reduce table, then the MLP step on 1 rank and on
``--ranks`` ranks, and prints markdown tables (docs/benchmarks.md). Rows:

- ``mpi4py Allreduce``: ``comm.Allreduce(send, recv, op=SUM)`` on float32
  numpy buffers, blocking;
- ``tfc all_reduce op``: ``tfc.distribute.all_reduce(t)`` on a tensor of the
  same buffer: the op's dispatch, the cross-rank signature check (one 16-byte
  all-reduce), the non-blocking transfer polled with the fault timeout, and
  the result tensor;
- ``tfc gradient buckets``: ``tfc.distribute.average_gradients`` of one
  gradient of that size (the DistributedGradientTape's reduction, with its
  copy into the bucket and the division by the number of ranks).

Times are the median of ``--repeat`` calls after a barrier (per-call time of
the slowest rank); bandwidth is bytes / time ("algorithm bandwidth"; NCCL's
"bus bandwidth" is that times 2(p-1)/p: the same for p = 2). The ring model
t = 2(p-1) a + 2 (p-1)/p n / B is fitted (least squares of the relative error) to the mpi4py row,
giving the latency a and bandwidth B that docs/distributed.md uses.

The MLP step: examples/mlp_digits.py's sizes scaled up (784-1024-1024-10,
1.86 M parameters, float32, Adam), a global batch of 256 split among the
ranks: time per step and the time spent waiting for the all-reduce, with
the buckets all-reduced during the backward pass (``DistributedOptimizer.minimize``)
and after it (a plain tape, then ``DistributedOptimizer.apply_gradients``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

SIZES = [2**k for k in range(10, 27, 2)]  # bytes: 1 KiB .. 64 MiB


def _median_time(fn, comm, repeat):
    times = []
    for _ in range(repeat):
        if comm is not None:
            comm.Barrier()
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        if comm is not None:  # the slowest rank's time
            from mpi4py import MPI

            dt = comm.allreduce(dt, op=MPI.MAX)
        times.append(dt)
    return float(np.median(times))


def allreduce_worker(repeat, out):
    import tfc
    import tfc.distribute as dist
    from mpi4py import MPI

    dist.init()
    comm = MPI.COMM_WORLD
    rows = []
    for nbytes in SIZES:
        n = nbytes // 4
        send = np.random.default_rng(comm.rank).normal(size=n).astype(np.float32)
        recv = np.empty_like(send)
        t = tfc.constant(send)
        reps = max(3, min(repeat, int(repeat * 2**20 / max(nbytes, 2**20))))
        raw = _median_time(lambda: comm.Allreduce(send, recv, op=MPI.SUM), comm, reps)
        op = _median_time(lambda: dist.all_reduce(t), comm, reps)
        buckets = _median_time(lambda: dist.average_gradients([t]), comm, reps)
        assert np.array_equal(dist.all_reduce(t).numpy(), recv)
        rows.append({"bytes": nbytes, "mpi4py": raw, "op": op, "buckets": buckets})
    if comm.rank == 0:
        with open(out, "w") as f:
            json.dump({"ranks": comm.size, "rows": rows}, f)


def mlp_worker(repeat, out, global_batch=256):
    import tfc
    import tfc.distribute as dist
    from tfc.core.world import World

    dist.init()
    rank, size = dist.rank(), dist.size()
    rng = np.random.default_rng(0)
    init = tfc.layers.GlorotUniform(seed=0)
    from tfc.nn.layers import Dense

    class Net(tfc.Module):
        def __init__(self):
            super().__init__()
            self.a = Dense(1024, activation="relu", kernel_initializer=init)
            self.b = Dense(1024, activation="relu", kernel_initializer=init)
            self.c = Dense(10, kernel_initializer=init)

        def __call__(self, x):
            return self.c(self.b(self.a(x)))

    model = Net()
    x_all = rng.normal(size=(global_batch, 784)).astype(np.float32)
    y_all = rng.integers(0, 10, size=global_batch).astype(np.int32)
    shard = global_batch // size
    x = tfc.constant(x_all[rank * shard:(rank + 1) * shard])
    y = tfc.constant(y_all[rank * shard:(rank + 1) * shard])
    model(x[:1])
    dist.broadcast_variables(model.trainable_variables)
    opt = dist.DistributedOptimizer(tfc.optimizers.Adam(1e-3))

    def loss():
        return tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x)))

    waited = [0.0]
    wait = World.wait_all

    def timed_wait(self, requests, what):
        t0 = time.perf_counter()
        wait(self, requests, what)
        waited[0] += time.perf_counter() - t0

    World.wait_all = timed_wait
    comm = dist.world().comm
    variables = model.trainable_variables

    def after_backward():  # the whole backward pass first, then the (bucketed) averaging
        with tfc.GradientTape() as tape:
            value = loss()
        opt.apply_gradients(zip(tape.gradient(value, variables), variables))

    results = {}
    modes = (("overlapped", lambda: opt.minimize(loss, variables)), ("after the backward pass", after_backward))
    for mode, fn in modes:
        for _ in range(3):
            fn()
        waited[0] = 0.0
        results[mode] = (_median_time(fn, comm, repeat), waited[0] / repeat)
    params = sum(int(np.prod(v.shape)) for v in variables)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"ranks": size, "modes": results, "params": params, "global_batch": global_batch}, f)


def _launch(n, args):
    from tfc.distribute.launch import command

    cmd, env = command(n, os.path.abspath(__file__), args)
    subprocess.run(cmd, env=env, check=True)


def fit_ring(rows, p):
    """(latency a in s, bandwidth B in bytes/s) of t = 2(p-1) a + 2 (p-1)/p n / B."""
    n = np.array([r["bytes"] for r in rows], float)
    t = np.array([r["mpi4py"] for r in rows], float)
    A = np.stack([np.full_like(n, 2 * (p - 1)), 2 * (p - 1) / p * n], axis=1)
    # relative errors (rows divided by t): the 1 KiB and the 64 MiB rows weigh alike
    (a, inv_b), *_ = np.linalg.lstsq(A / t[:, None], np.ones_like(t), rcond=None)
    return float(a), float(1 / inv_b)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--json", help="write the results here too")
    p.add_argument("--worker", choices=["allreduce", "mlp"], help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker == "allreduce":
        return allreduce_worker(args.repeat, args.out)
    if args.worker == "mlp":
        return mlp_worker(args.repeat, args.out)
    with tempfile.TemporaryDirectory() as tmp:
        res = {}
        path = os.path.join(tmp, "a.json")
        _launch(args.ranks, ["--worker", "allreduce", "--repeat", str(args.repeat), "--out", path])
        with open(path) as f:
            res["allreduce"] = json.load(f)
        res["mlp"] = []
        for n in sorted({1, args.ranks}):
            path = os.path.join(tmp, f"m{n}.json")
            _launch(n, ["--worker", "mlp", "--repeat", str(args.repeat), "--out", path])
            with open(path) as f:
                res["mlp"].append(json.load(f))
    ar = res["allreduce"]
    a, bw = fit_ring(ar["rows"], ar["ranks"])
    res["fit"] = {"latency_s": a, "bandwidth_Bps": bw}
    print(f"- command: `python bench/allreduce.py {' '.join(sys.argv[1:] if argv is None else argv)}`; "
          f"{os.cpu_count()} cores; {ar['ranks']} ranks on this machine (shared memory)\n")
    print("| bytes | mpi4py Allreduce | GB/s | tfc all_reduce op | GB/s | tfc gradient buckets | GB/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in ar["rows"]:
        cells = [f"{r[k] * 1e6:.1f} us | {r['bytes'] / r[k] / 1e9:.2f}" for k in ("mpi4py", "op", "buckets")]
        print(f"| {r['bytes']} | " + " | ".join(cells) + " |")
    print(f"\nring fit of the mpi4py row (p = {ar['ranks']}): latency a = {a * 1e6:.1f} us, "
          f"bandwidth B = {bw / 1e9:.2f} GB/s\n")
    print("| ranks | all-reduce | global batch | parameters | step | waiting for the all-reduce | examples/s |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for m in res["mlp"]:
        for mode, (step, wait) in m["modes"].items():
            print(f"| {m['ranks']} | {mode} | {m['global_batch']} | {m['params']} | {step * 1e3:.1f} ms | "
                  f"{wait * 1e3:.1f} ms | {m['global_batch'] / step:.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
