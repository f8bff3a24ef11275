"""Helpers for gradient rules (written with tfc ops, so they trace and nest)."""
from __future__ import annotations


def unbroadcast(g, x, against=None):
    """``g``, the gradient of a result that ``x`` was broadcast into, summed down
    to ``x``'s shape: over the leading dimensions broadcasting added and where
    ``x`` has size 1 against a larger size.

    ``against`` lists the shapes ``x`` was broadcast with (default: ``g``'s).
    Where a dimension of ``x`` is known only at run time and may be 1 while one
    of theirs is not, whether to sum over it is decided at run time
    (``unbroadcast_like``, TensorFlow's BroadcastGradientArgs); static shapes
    never need that."""
    shape = tuple(x.shape)
    gshape = tuple(g.shape)
    if None in shape and _may_broadcast(shape, [gshape] if against is None else against):
        from tfc.ops.shapes import unbroadcast_like

        return unbroadcast_like(g, x)
    if gshape == shape:
        return g
    from tfc.ops.reductions import reduce_sum

    lead = len(gshape) - len(shape)
    if lead:
        g = reduce_sum(g, axis=tuple(range(lead)))
    ones = tuple(i for i, d in enumerate(shape) if d == 1 and g.shape[i] != 1)
    if ones:
        g = reduce_sum(g, axis=ones, keepdims=True)
    return g


def _may_broadcast(shape, others) -> bool:
    """Can a run-time dimension of ``shape`` be 1 where one of ``others``'
    (aligned from the right) is not?"""
    n = len(shape)
    for i, d in enumerate(shape):
        if d is None:
            for o in others:
                o = tuple(o)
                j = len(o) - n + i
                if j >= 0 and o[j] != 1:
                    return True
    return False
