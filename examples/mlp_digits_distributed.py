"""Train examples/mlp_digits.py's MLP data-parallel: every rank holds a replica
and trains on its shard of each global batch; gradients are averaged over the
ranks during the backward pass (tfc.distribute, MPI underneath).

    tfc run -n 2 examples/mlp_digits_distributed.py [--epochs N] [--batch-size B] [--verify]
    mpirun -n 2 python examples/mlp_digits_distributed.py      # the same
    python examples/mlp_digits_distributed.py                  # one rank

The replicas start apart (each rank its own initial values) until
``broadcast_variables``; the global batch of B examples is cut into one
contiguous shard per rank (B must divide among the ranks; the last partial
batch of an epoch is dropped so every step's shards are equal). At the end
rank 0 writes a checkpoint that every rank restores. ``--verify`` also trains
one process's model on the whole global batches, on every rank, and fails
unless both end with the same parameters to float32 summation-order tolerance.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

import tfc
import tfc.distribute as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mlp_digits import MLP, accuracy, load_data, loss_fn  # noqa: E402

# --verify's bound on |distributed - one process| per parameter (float32, Adam):
# the two differ only in the order of the batch's summation (two shard means
# averaged against one mean), a few ulps per step that training carries on.
VERIFY_ATOL = 1e-4


def replicas_identical(variables) -> bool:
    """Every rank holds the same values (all-reduced max == min)."""
    flat = tfc.constant(np.concatenate([v.numpy().reshape(-1) for v in variables]))
    return bool(np.array_equal(dist.all_reduce(flat, "max").numpy(), dist.all_reduce(flat, "min").numpy()))


def train(epochs=5, batch_size=64, learning_rate=0.01, seed=0, verify=False, verbose=True):
    """Returns (test accuracy, restored test accuracy, max |param - one process's param|
    or None without ``verify``)."""
    dist.init()
    rank, size = dist.rank(), dist.size()
    if batch_size % size:
        raise SystemExit(f"--batch-size {batch_size} does not divide among {size} ranks")
    dist.set_seed(seed)
    x_train, y_train, x_test, y_test = load_data(seed)
    model = MLP(seed=seed + rank)  # apart on purpose: the broadcast makes them one
    model(tfc.constant(x_train[:1]))
    dist.broadcast_variables(model.trainable_variables)
    optimizer = dist.DistributedOptimizer(tfc.optimizers.Adam(learning_rate))
    if verify:
        single = MLP(seed=seed)
        single(tfc.constant(x_train[:1]))
        single_opt = tfc.optimizers.Adam(learning_rate)
    shard = batch_size // size
    rng = np.random.default_rng(seed)  # the same order on every rank
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        losses = []
        for start in range(0, len(order) - batch_size + 1, batch_size):
            batch = order[start:start + batch_size]
            mine = batch[rank * shard:(rank + 1) * shard]
            x, y = tfc.constant(x_train[mine]), tfc.constant(y_train[mine])
            loss = optimizer.minimize(lambda: loss_fn(model, x, y), model.trainable_variables)
            losses.append(float(dist.all_reduce(loss, "mean")))
            if verify:
                xg, yg = tfc.constant(x_train[batch]), tfc.constant(y_train[batch])
                single_opt.minimize(lambda: loss_fn(single, xg, yg), single.trainable_variables)
        if verbose and rank == 0:
            print(f"epoch {epoch + 1:3d}  loss {np.mean(losses):.4f}  "
                  f"test accuracy {accuracy(model, x_test, y_test):.4f}  ({size} ranks)", flush=True)
    if not replicas_identical(model.trainable_variables):
        raise SystemExit(f"rank {rank}: the replicas differ after training")
    diff = None
    if verify:
        diff = max(float(np.max(np.abs(a.numpy() - b.numpy())))
                   for a, b in zip(model.trainable_variables, single.trainable_variables))
    acc = accuracy(model, x_test, y_test)

    # rank 0 writes the checkpoint (the directory is rank 0's, shared through the
    # file system: on several machines, a path they all see)
    directory = tempfile.mkdtemp(prefix="tfc-dist-") if rank == 0 else None
    directory = dist.world().comm.bcast(directory, root=0) if size > 1 else directory
    try:
        path = os.path.join(directory, "digits")
        if rank == 0:
            tfc.train.Checkpoint(model=model, optimizer=optimizer.optimizer).save(path)
        dist.barrier()
        fresh = MLP(seed=seed + 1)
        status = tfc.train.Checkpoint(model=fresh, optimizer=tfc.optimizers.Adam(learning_rate)).restore(path)
        restored_acc = accuracy(fresh, x_test, y_test)
        status.assert_consumed()
        dist.barrier()  # every rank has read it before rank 0 removes it
    finally:
        if rank == 0:
            import shutil

            shutil.rmtree(directory, ignore_errors=True)
    if verbose and rank == 0:
        print(f"test accuracy {acc:.4f}; restored on every rank: {restored_acc:.4f}", flush=True)
        if verify:
            print(f"max |distributed - one process| over the parameters: {diff:.3g} (bound {VERIFY_ATOL:g})")
    return acc, restored_acc, diff


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="the global batch (all ranks together)")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verify", action="store_true",
                        help="also train one process on the global batches and compare")
    args = parser.parse_args(argv)
    acc, restored, diff = train(args.epochs, args.batch_size, args.learning_rate, args.seed, args.verify)
    if restored != acc:
        raise SystemExit(f"rank {dist.rank()}: the restored model differs: accuracy {restored} vs {acc}")
    if diff is not None and diff > VERIFY_ATOL:
        raise SystemExit(f"rank {dist.rank()}: distributed training left one process's by {diff:.3g} "
                         f"(> {VERIFY_ATOL:g})")


if __name__ == "__main__":
    main()
