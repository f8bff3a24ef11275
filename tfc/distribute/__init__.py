"""``tfc.distribute``: data-parallel training across processes and machines on
MPI, in the manner of Horovod (docs/distributed.md).

Every process (rank) holds a replica of the model, trains on its shard of each
global batch, and averages gradients with an all-reduce::

    import tfc, tfc.distribute as dist

    dist.init()                                   # size 1 without a launcher
    model = ...; model(x[:1])                     # build the variables
    dist.broadcast_variables(model.trainable_variables)   # identical start
    with tfc.GradientTape() as tape:
        loss = loss_fn(model, x_shard, y_shard)
    tape = dist.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)  # averaged over ranks

Launch with ``tfc run -n 4 train.py`` or ``mpirun -n 4 python train.py``.
"""
from __future__ import annotations

import numpy as np

from tfc.core.world import DistributedError, install_fault_handler, world
from tfc.ops.collective import all_gather, all_reduce, broadcast, reduce_scatter, reduce_to_root  # noqa: F401
from tfc.distribute.tape import DEFAULT_BUCKET_BYTES, DistributedGradientTape, average_gradients  # noqa: F401
from tfc.distribute.optimizer import DistributedOptimizer  # noqa: F401


def init() -> None:
    """Join the job (MPI starts here under a launcher; nothing happens without
    one) and make an uncaught exception on any rank abort the whole job,
    naming the rank, instead of leaving the others waiting."""
    install_fault_handler()


def rank() -> int:
    """This process's rank, 0 .. size() - 1."""
    return world().rank


def size() -> int:
    """The number of ranks in the job (1 without an MPI launcher)."""
    return world().size


def local_rank() -> int:
    """This process's rank among the ranks on its machine (to pick a device
    or a core per rank)."""
    return world().local_rank


def barrier() -> None:
    """Wait until every rank gets here (with the collective timeout)."""
    world().barrier()


def broadcast_variables(variables, root: int = 0) -> None:
    """Assign rank ``root``'s values to ``variables`` on every rank, so that
    replicas start identical (after building the model and before training;
    after restoring a checkpoint on ``root`` only)."""
    from tfc.core.variable import Variable

    w = world()
    if isinstance(root, (bool, np.bool_)) or not isinstance(root, (int, np.integer)) or not 0 <= root < w.size:
        raise ValueError(f"broadcast_variables: root must be a rank, 0 .. {w.size - 1}, got {root!r}")
    variables = list(variables)
    for i, v in enumerate(variables):
        if not isinstance(v, Variable):
            raise TypeError(f"broadcast_variables: item {i} is a {type(v).__name__}, not a tfc.Variable")
    for i, v in enumerate(variables):  # (by position: names may differ across ranks)
        value = w.broadcast(v.numpy(), root, what=f"broadcast_variables[{i}]")
        if w.rank != root:
            v.assign(value)


def rank_seed(seed: int) -> int:
    """The seed of this rank's random stream in a job seeded with ``seed``:
    ``seed`` itself on rank 0 (a 1-rank job draws what a plain
    ``tfc.random.set_seed(seed)`` draws), a SplitMix64 mix of (seed, rank)
    elsewhere, so the ranks' Philox keys differ and their streams are independent."""
    seed = _job_seed("rank_seed", seed)
    r = world().rank
    if r == 0:
        return seed
    z = (int(seed) + 0x9E3779B97F4A7C15 * (r + 1)) & (2**64 - 1)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
    return (z ^ (z >> 31)) & (2**63 - 1)


def set_seed(seed: int) -> None:
    """Seed the global random stream of every rank from one ``seed``: each rank
    gets its own stream (``rank_seed``), so dropout masks and shuffles differ
    across ranks while the job stays reproducible. Ops given their own
    ``seed=`` draw the same values on every rank, as in one process."""
    from tfc.random import set_seed as set_global_seed

    set_global_seed(rank_seed(_job_seed("distribute.set_seed", seed)))


def _job_seed(api: str, seed) -> int:
    """``seed`` as an int, or a TypeError naming ``api`` and the user's line: a
    job's seed is given (None, fresh entropy on each rank, would not reproduce)."""
    from tfc.core.registry import note_user_line
    from tfc.ops.random import _seed_value

    try:
        value = None if seed is None else _seed_value(api, seed)
    except TypeError:
        value = None
    if value is None:
        error = TypeError(f"{api}: seed must be a non-negative int below 2**64, got {seed!r}")
        note_user_line(error)
        raise error
    return value


__all__ = [
    "init", "rank", "size", "local_rank", "barrier", "all_reduce", "broadcast", "all_gather",
    "reduce_scatter", "reduce_to_root", "broadcast_variables", "DistributedGradientTape",
    "DistributedOptimizer", "average_gradients", "set_seed", "rank_seed", "DistributedError",
]
