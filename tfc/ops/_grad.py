"""Helpers for gradient rules (written with tfc ops, so they trace and nest)."""
from __future__ import annotations


def unbroadcast(g, shape):
    """Sum ``g`` over the dimensions that broadcasting added to reach its shape."""
    gshape = tuple(g.shape)
    shape = tuple(shape)
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
