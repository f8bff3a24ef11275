"""Collective ops across the ranks of a data-parallel job (MPI underneath, see
tfc/core/world.py): ``all_reduce``, ``broadcast``, ``all_gather`` and the two
that are their gradients, ``reduce_to_root`` and ``reduce_scatter``.

They are registry ops like any other, so a compiled step holds them as IR
(``tensor.all_reduce`` ...) through every stage; they have no scalar body or
lowering, so they stay ``loops.library`` calls of the kernels below, which the
numpy backend's module calls on the host. They are stateful: never folded,
merged or removed. Each records the world size it was made for (``ranks``) and
refuses to run in a world of another size (a compiled mean over 2 ranks run
on 4 would be silently wrong).

In a world of size 1 each is the identity (``all_gather`` too: one block).
Tensors on a GPU raise NotImplementedError: the GPU collectives are NCCL's,
which this build does not have (docs/distributed.md).

The gradient of each is the adjoint collective (the loss being the sum of the
ranks' losses): all_reduce(sum) <-> all_reduce(sum), broadcast <->
reduce_to_root, all_gather <-> reduce_scatter; mean is sum / size; max and min
send the summed gradient to the ranks holding the extreme, split among ties.
"""
from __future__ import annotations

from tfc.core import dtypes
from tfc.core.device import PLACEMENT
from tfc.core.registry import Spec, declare
from tfc.core.tensor import GpuTensor
from tfc.core.world import world

REDUCTIONS = ("sum", "mean", "max", "min")
# the ops of this module (tfc-schedule-collectives moves them up)
COLLECTIVES = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "reduce_to_root")


def _no_gpu(name, *tensors) -> None:
    if PLACEMENT.gpu is not None or any(type(t) is GpuTensor for t in tensors):
        raise NotImplementedError(
            f"{name}: collectives on GPU tensors need NCCL, which this build of tfc does not have; "
            "copy the tensor to the host first (t.cpu()), as docs/distributed.md shows")


def _world_of(name, ranks):
    """The world, which must have the ``ranks`` the op was made for."""
    w = world()
    if ranks != w.size:
        raise ValueError(f"{name}: made for a world of {ranks} ranks, running in one of {w.size} "
                         "(compile the step again under this launch)")
    return w


def _same_infer(op, x: Spec, ranks) -> Spec:
    if ranks < 1:
        raise ValueError(f"{op.name}: ranks must be positive, got {ranks}")
    return x


def _blocks_infer(op, x: Spec, ranks, gather: bool) -> Spec:
    if x.ndim == 0:
        raise ValueError(f"{op.name}: needs a tensor of rank >= 1 (it works along axis 0), got a scalar")
    d = x.shape[0]
    if d is not None and not gather and d % ranks:
        raise ValueError(f"{op.name}: the first dimension ({d}) must divide among {ranks} ranks")
    first = None if d is None else (d * ranks if gather else d // ranks)
    return Spec((first,) + tuple(x.shape[1:]), x.dtype)


# -- all_reduce -----------------------------------------------------------------------------

def _all_reduce_infer(op, x: Spec, reduction, ranks) -> Spec:
    if reduction not in REDUCTIONS:
        raise ValueError(f"all_reduce: op must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    if reduction == "mean" and not x.dtype.is_floating:
        raise TypeError(f"all_reduce: op='mean' needs a floating-point tensor, got {x.dtype.name}")
    if x.dtype == dtypes.bool_ and reduction == "sum":
        raise TypeError("all_reduce: op='sum' of a bool tensor; cast it to an integer type first")
    return _same_infer(op, x, ranks)


def _all_reduce_kernel(x, reduction, ranks):
    w = _world_of("all_reduce", ranks)
    out = w.allreduce(x, "sum" if reduction == "mean" else reduction)
    if reduction == "mean":
        out /= out.dtype.type(w.size)  # (the sum's dtype: as eager's reduce_mean)
    return out


def _all_reduce_grad(entry, g):
    reduction, ranks = entry.attrs["reduction"], entry.attrs["ranks"]
    if reduction in ("sum", "mean"):
        return [all_reduce(g, reduction)]
    from tfc.ops.math import cast, equal

    x, y = entry.inputs[0], entry.outputs[0]
    holds = cast(equal(x, y), g.dtype)
    return [all_reduce(g, "sum") * holds / all_reduce(holds, "sum")]


@declare(kernel=_all_reduce_kernel, infer=_all_reduce_infer, grad=_all_reduce_grad, stateful=True,
         attrs={"reduction": "str", "ranks": "int"})
def all_reduce(t, op="sum"):
    """The element-wise ``op`` ("sum", "mean", "max" or "min") of ``t`` over
    all ranks; every rank gets the result. Ranks must pass the same shape and
    dtype (else DistributedError on every rank)."""
    _no_gpu("all_reduce", t)
    return [t], {"reduction": op, "ranks": world().size}


# -- broadcast and its adjoint ---------------------------------------------------------------

def _root_infer(op, x: Spec, root, ranks) -> Spec:
    if not 0 <= root < ranks:
        raise ValueError(f"{op.name}: root {root} is not a rank of a world of size {ranks}")
    return _same_infer(op, x, ranks)


def _broadcast_kernel(x, root, ranks):
    return _world_of("broadcast", ranks).broadcast(x, root)


def _reduce_to_root_kernel(x, root, ranks):
    return _world_of("reduce_to_root", ranks).reduce_to_root(x, root)


@declare(kernel=_reduce_to_root_kernel, infer=_root_infer, stateful=True,
         grad=lambda entry, g: [broadcast(g, entry.attrs["root"])], attrs={"root": "int", "ranks": "int"})
def reduce_to_root(t, root=0):
    """The sum of ``t`` over ranks on rank ``root``, zeros on the others (the
    gradient of ``broadcast``)."""
    _no_gpu("reduce_to_root", t)
    return [t], {"root": int(root), "ranks": world().size}


@declare(kernel=_broadcast_kernel, infer=_root_infer, stateful=True,
         grad=lambda entry, g: [reduce_to_root(g, entry.attrs["root"])], attrs={"root": "int", "ranks": "int"})
def broadcast(t, root=0):
    """Rank ``root``'s ``t`` on every rank."""
    _no_gpu("broadcast", t)
    return [t], {"root": int(root), "ranks": world().size}


# -- all_gather and its adjoint --------------------------------------------------------------

def _all_gather_kernel(x, ranks):
    return _world_of("all_gather", ranks).all_gather(x)


def _reduce_scatter_kernel(x, ranks):
    return _world_of("reduce_scatter", ranks).reduce_scatter(x)


@declare(kernel=_reduce_scatter_kernel, infer=lambda op, x, ranks: _blocks_infer(op, x, ranks, gather=False),
         grad=lambda entry, g: [all_gather(g)], stateful=True, attrs={"ranks": "int"})
def reduce_scatter(t):
    """The sum over ranks of ``t``, cut along axis 0 into one block per rank:
    rank r gets block r (the gradient of ``all_gather``)."""
    _no_gpu("reduce_scatter", t)
    return [t], {"ranks": world().size}


@declare(kernel=_all_gather_kernel, infer=lambda op, x, ranks: _blocks_infer(op, x, ranks, gather=True),
         grad=lambda entry, g: [reduce_scatter(g)], stateful=True, attrs={"ranks": "int"})
def all_gather(t):
    """Every rank's ``t`` concatenated along axis 0 in rank order (ranks pass
    the same shape)."""
    _no_gpu("all_gather", t)
    return [t], {"ranks": world().size}
