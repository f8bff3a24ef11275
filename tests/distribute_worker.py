"""What each rank runs in tests/test_distribute.py's multi-rank tests (started
by ``tfc run -n 2``): ``python tests/distribute_worker.py SCENARIO [DIR]``.
Each scenario prints ``OK <scenario> rank <r>`` when every check held."""
from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

import tfc
import tfc.distribute as dist


def check(cond, what):
    if not cond:
        raise AssertionError(f"rank {dist.rank()}: {what}")


def same_everywhere(a) -> bool:
    a = tfc.constant(np.asarray(a, np.float64).reshape(-1))
    return np.array_equal(dist.all_reduce(a, "max").numpy(), dist.all_reduce(a, "min").numpy())


def collectives():
    r, n = dist.rank(), dist.size()
    check(n == 2, f"size {n}")
    base = np.arange(6, dtype=np.float64).reshape(2, 3)
    mine = base * (r + 1) - 3 * r  # rank 0: base, rank 1: 2*base - 3
    every = [base * (k + 1) - 3 * k for k in range(n)]
    x = tfc.constant(mine)
    check(np.array_equal(dist.all_reduce(x).numpy(), every[0] + every[1]), "sum")
    check(np.array_equal(dist.all_reduce(x, "mean").numpy(), (every[0] + every[1]) / 2), "mean")
    check(np.array_equal(dist.all_reduce(x, "max").numpy(), np.maximum(*every)), "max")
    check(np.array_equal(dist.all_reduce(x, "min").numpy(), np.minimum(*every)), "min")
    check(np.array_equal(dist.broadcast(x, root=1).numpy(), every[1]), "broadcast")
    check(np.array_equal(dist.all_gather(x).numpy(), np.concatenate(every)), "all_gather")
    check(np.array_equal(dist.reduce_scatter(x).numpy(), (every[0] + every[1])[r:r + 1]), "reduce_scatter")
    check(np.array_equal(dist.reduce_to_root(x, 1).numpy(), every[0] + every[1] if r == 1 else 0 * base),
          "reduce_to_root")
    ints = tfc.constant(np.array([r, 10 - r], np.int32))
    check(dist.all_reduce(ints).numpy().tolist() == [1, 19], "int sum")
    flags = tfc.constant(np.array([r == 0, False, True]))  # (MPI's max and min refuse booleans)
    check(dist.all_reduce(flags, "max").numpy().tolist() == [True, False, True], "bool max")
    check(dist.all_reduce(flags, "min").numpy().tolist() == [False, False, True], "bool min")

    # gradients: the job's loss is the sum of the ranks' losses sum(w_r * f(x_r))
    w_all = [np.array([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]]) * (k + 2) for k in range(n)]
    w = tfc.constant(w_all[r])

    def grad_of(f, x):
        with tfc.GradientTape() as tape:
            tape.watch(x)
            loss = tfc.reduce_sum(w * f(x)) if f is not dist.all_gather else tfc.reduce_sum(
                tfc.concat([w, w * 3.0], 0) * f(x))
        return tape.gradient(loss, x).numpy()

    check(np.array_equal(grad_of(dist.all_reduce, x), w_all[0] + w_all[1]), "grad sum")
    check(np.allclose(grad_of(lambda t: dist.all_reduce(t, "mean"), x), (w_all[0] + w_all[1]) / 2), "grad mean")
    top = np.maximum(*every)
    holds = [(e == top).astype(np.float64) for e in every]
    want = (w_all[0] + w_all[1]) * holds[r] / (holds[0] + holds[1])
    check(np.allclose(grad_of(lambda t: dist.all_reduce(t, "max"), x), want), "grad max")
    check(np.array_equal(grad_of(lambda t: dist.broadcast(t, 0), x), w_all[0] + w_all[1] if r == 0 else 0 * base),
          "grad broadcast")
    low = np.minimum(*every)
    holds = [(e == low).astype(np.float64) for e in every]
    want = (w_all[0] + w_all[1]) * holds[r] / (holds[0] + holds[1])
    check(np.allclose(grad_of(lambda t: dist.all_reduce(t, "min"), x), want), "grad min")
    gw = [np.concatenate([wk, 3 * wk]) for wk in w_all]
    check(np.array_equal(grad_of(dist.all_gather, x), (gw[0] + gw[1])[2 * r:2 * r + 2]), "grad all_gather")
    # reduce_to_root: only the root's output counts; reduce_scatter: rank k's weights (rows summed by
    # the broadcast of w against its one-row block) on block k of every rank's input
    check(np.array_equal(grad_of(lambda t: dist.reduce_to_root(t, 1), x), w_all[1]), "grad reduce_to_root")
    check(np.array_equal(grad_of(dist.reduce_scatter, x), np.stack([wk.sum(0) for wk in w_all])),
          "grad reduce_scatter")

    # compiled: the collective is IR, run by the generated module, bit-identical to eager
    @tfc.function
    def step(t):
        return dist.all_reduce(t * 2.0, "mean") + dist.all_gather(t)[:2]

    got = step(x).numpy()
    check(np.array_equal(got, (dist.all_reduce(x * 2.0, "mean") + dist.all_gather(x)[:2]).numpy()), "compiled")
    ir = step.get_concrete_function(x).ir()
    check("tfc.all_reduce" in ir and "tfc.all_gather" in ir, "collectives in the IR")

    # a compiled training step (its all_reduce ops in the IR) == the eager one, bit for bit
    v = tfc.Variable(np.linspace(-1, 1, 12).reshape(4, 3))

    def grads(t):
        with tfc.GradientTape() as tape:
            loss = tfc.reduce_sum(tfc.tanh(tfc.matmul(t, tfc.transpose(v))) ** 2)
        return dist.DistributedGradientTape(tape).gradient(loss, [v])[0]

    check(np.array_equal(tfc.function(grads)(x).numpy(), grads(x).numpy()), "compiled distributed gradient")

    # tapes that differ across ranks: equal-shaped variables used in the other
    # order, one used on rank 0 only (zeros from rank 1): each its own average
    a, b, c = (tfc.Variable(np.full(3, k, np.float64)) for k in (1.0, 2.0, 3.0))
    scale = [np.array([1.0, 2.0, 3.0]) * (k + 1) for k in range(n)]
    with tfc.GradientTape() as tape:
        first, second = (a, b) if r == 0 else (b, a)
        loss = tfc.reduce_sum(first * scale[r]) + 10.0 * tfc.reduce_sum(second * scale[r])
        if r == 0:
            loss = loss + 100.0 * tfc.reduce_sum(c * scale[r])
    got = [t.numpy() for t in dist.DistributedGradientTape(tape).gradient(loss, [a, b, c])]
    want = [(scale[0] + 10 * scale[1]) / 2, (10 * scale[0] + scale[1]) / 2, 100 * scale[0] / 2]
    check(all(np.array_equal(g, w) for g, w in zip(got, want)), f"gradients of differing tapes: {got}")
    # apply_gradients: a gradient rank 1 does not have counts as zeros there
    opt = dist.DistributedOptimizer(tfc.optimizers.SGD(1.0))
    opt.apply_gradients([(tfc.constant(scale[r]), a), (tfc.constant(scale[r]) if r == 0 else None, c)])
    check(np.array_equal(a.numpy(), 1.0 - (scale[0] + scale[1]) / 2), "apply_gradients")
    check(np.array_equal(c.numpy(), 3.0 - scale[0] / 2), f"apply_gradients, a gradient on rank 0 only: {c.numpy()}")

    # shape and dtype mismatches: a clear error on every rank, no hang
    for bad in (tfc.constant(np.zeros(3 + r)), tfc.constant(np.zeros(3, np.float32 if r else np.float64))):
        try:
            dist.all_reduce(bad)
        except dist.DistributedError as e:
            check("rank 0: all_reduce(op=sum)" in str(e) and "rank 1: all_reduce(op=sum)" in str(e), str(e))
        else:
            check(False, "no error on a mismatch")
    # one rank in a collective, the other in the tape's order check: the same clear error, no wait
    try:
        if r == 0:
            dist.all_reduce(tfc.constant(np.zeros(2)))
        else:
            with tfc.GradientTape() as tape:
                loss = tfc.reduce_sum(a * a)
            dist.DistributedGradientTape(tape).gradient(loss, [a])
    except dist.DistributedError as e:
        check("rank 0: all_reduce(op=sum)" in str(e) and "rank 1: DistributedGradientTape.gradient" in str(e),
              str(e))
    else:
        check(False, "no error on a tape against a collective")
    print(f"OK collectives rank {r}", flush=True)


def mlp(seed, dtype):
    rng = np.random.default_rng(seed)
    return [tfc.Variable(rng.normal(size=(8, 16)).astype(dtype) * 0.3, name="w1"),
            tfc.Variable(np.zeros(16, dtype), name="b1"),
            tfc.Variable(rng.normal(size=(16, 3)).astype(dtype) * 0.3, name="w2"),
            tfc.Variable(np.zeros(3, dtype), name="b2"),
            tfc.Variable(np.ones(5, dtype), name="unused")]  # never read: its gradient stays None


def named(params):
    return {f"p{i}": p for i, p in enumerate(params[:4])}


def loss_of(params, x, y):
    w1, b1, w2, b2, _ = params
    h = tfc.tanh(tfc.matmul(x, w1) + b1)
    logits = tfc.matmul(h, w2) + b2
    return tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))


def train(directory):
    """N ranks on shards == one process on the global batch (to the bound
    tests/test_distribute.py states); identical start; checkpoint; seeds."""
    r, n = dist.rank(), dist.size()
    rng = np.random.default_rng(0)
    for dtype, rtol, bucket in ((np.float64, 1e-12, dist.DEFAULT_BUCKET_BYTES), (np.float32, 2e-5, 256)):
        x_all = rng.normal(size=(64, 8)).astype(dtype)
        y_all = rng.integers(0, 3, size=64).astype(np.int32)
        params = mlp(seed=r, dtype=dtype)  # rank 1 starts elsewhere ...
        dist.broadcast_variables(params)  # ... until the broadcast
        reference = mlp(seed=0, dtype=dtype)
        check(all(np.array_equal(p.numpy(), q.numpy()) for p, q in zip(params, reference)), "broadcast start")
        shard = slice(r * 64 // n, (r + 1) * 64 // n)
        x, y = tfc.constant(x_all[shard]), tfc.constant(y_all[shard])
        xg, yg = tfc.constant(x_all), tfc.constant(y_all)
        for _ in range(5):
            with tfc.GradientTape() as tape:
                loss = loss_of(params, x, y)
            grads = dist.DistributedGradientTape(tape, bucket_bytes=bucket).gradient(loss, params)
            check(grads[-1] is None, "an unused variable gets None")
            with tfc.GradientTape() as tape:
                loss = loss_of(reference, xg, yg)
            want = tape.gradient(loss, reference)
            for p, g, q, gq in zip(params, grads, reference, want):
                if g is not None:
                    check(np.allclose(g.numpy(), gq.numpy(), rtol=rtol, atol=rtol * 1e-2), "averaged gradient")
                    p.assign_sub(0.5 * g)
                    q.assign_sub(0.5 * gq)
        for p, q in zip(params, reference):
            check(np.allclose(p.numpy(), q.numpy(), rtol=rtol, atol=rtol * 1e-2),
                  f"{dtype.__name__} parameters: {np.max(np.abs(p.numpy() - q.numpy()))}")
            check(same_everywhere(p.numpy()), "replicas identical")

    # the optimizer wrapper (Adam's slots), float32
    params = mlp(seed=0, dtype=np.float32)
    opt = dist.DistributedOptimizer(tfc.optimizers.Adam(0.01))
    for _ in range(3):
        opt.minimize(lambda: loss_of(params, x, y), params[:4])
    check(all(same_everywhere(p.numpy()) for p in params), "DistributedOptimizer replicas identical")

    # a checkpoint written by rank 0 restores on every rank
    path = os.path.join(directory, "ckpt")
    if r == 0:
        tfc.train.Checkpoint(optimizer=opt.optimizer, **named(params)).save(path)
    dist.barrier()
    fresh = mlp(seed=5, dtype=np.float32)
    tfc.train.Checkpoint(optimizer=tfc.optimizers.Adam(0.01), **named(fresh)).restore(path)
    check(all(np.array_equal(p.numpy(), q.numpy()) for p, q in zip(fresh[:4], params[:4])), "restored")

    # one seed, a stream per rank; seeded ops agree everywhere
    dist.set_seed(7)
    u = tfc.random.uniform((4,)).numpy()
    gathered = dist.all_gather(tfc.constant(u[None])).numpy()
    check(not np.array_equal(gathered[0], gathered[1]), "ranks draw different values")
    if r == 0:
        tfc.random.set_seed(7)
        check(np.array_equal(tfc.random.uniform((4,)).numpy(), u), "rank 0 draws what one process draws")
    check(same_everywhere(tfc.random.uniform((4,), seed=3).numpy()), "seeded op")
    print(f"OK train rank {r}", flush=True)


def fault(kind):
    """Rank 1 fails; rank 0 waits in a collective."""
    x = tfc.constant(np.ones(3))
    dist.all_reduce(x)
    if dist.rank() == 1:
        if kind == "raise":
            raise ValueError("boom on purpose")
        if kind == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        if kind == "exit":
            os._exit(0)  # leaves without a word (no MPI_Finalize)
        if kind == "stall":
            time.sleep(60)  # alive, but never joins: rank 0's collective times out
    dist.all_reduce(x)
    print(f"rank {dist.rank()} passed the collective", flush=True)


if __name__ == "__main__":
    scenario = sys.argv[1]
    if scenario == "collectives":
        collectives()
    elif scenario == "train":
        train(sys.argv[2])
    else:
        fault(scenario)
