"""Fusion (L1 -> L2): producer-consumer chains of elementwise and broadcast ops,
optionally ending in a reduction, become one ``tfc.fused`` op whose body is
built from the ops' scalar bodies (the ``scalar=`` of their declarations).

Per block, ops are visited from last to first; each elementwise op or reduction
not yet taken roots a group, which then absorbs the producers of its operands
(latest first, so every user of a producer is decided before it):
- a producer whose users are all in the group moves into it, unless it would be
  recomputed (its result is smaller than the iteration shape, i.e. it is
  broadcast) and is not cheap;
- a producer with users outside the group is copied into it only if it is cheap
  (a few arith ops, no division), all its users are fusable (so the original
  can die) and none of its operands is made by an elementwise op (a copy keeps
  its operands alive: copying ``q - a * y`` would materialize ``a * y`` and
  ``q`` for it, more traffic than reading the one result); an expensive
  producer with several users is never duplicated: it roots its own group and
  its result is an input.
Cheap copies take their own operands as inputs. Splat constants become
``arith.constant`` in the body. Reductions are roots only; matmul, conv and all
other ops without a scalar body stay L1 ops. Ops with dynamic shapes are left
alone.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tfc.dialects.fused import FusedOp, FusedYieldOp, ScalarBuilder, emit_scalar
from tfc.dialects.tensor import ConstantOp, RegistryOp, spec_of
from tfc.ops import _scalar as S

REDUCTIONS = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_max": "max", "reduce_min": "min",
              "reduce_mean": "mean", "reduce_any": "any", "reduce_all": "all"}
# arith ops that make a body expensive (worth not recomputing)
_EXPENSIVE_ARITH = {"arith.divf", "arith.floordivsi", "arith.remsi", "arith.divsi", "tfc.floormod"}
CHEAP_LIMIT = 2  # ops in the body of a cheap op


def _static_shape(t):
    shape = spec_of(t).shape
    return None if any(d is None for d in shape) else shape


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def is_elementwise(op) -> bool:
    return (isinstance(op, RegistryOp) and op.OPDEF.scalar is not None and not op.OPDEF.stateful
            and len(op.results) == 1 and all(_static_shape(v.type) is not None for v in (*op.operands, op.results[0])))


def reduction_axes(op):
    """The sorted reduced axes of a fusable reduction root, else None."""
    if not isinstance(op, RegistryOp) or op.OPDEF.name not in REDUCTIONS:
        return None
    shape = _static_shape(op.operands[0].type)
    if shape is None or _static_shape(op.results[0].type) is None:
        return None
    axis = op.attr_values["axis"]
    axes = range(len(shape)) if axis is None else sorted({a % len(shape) for a in axis}) if shape else []
    return tuple(axes) or None


_CHEAP: dict = {}


def is_cheap(op) -> bool:
    """A body of at most CHEAP_LIMIT arith ops without division (casts, selects,
    adds, broadcasts, ...): fine to recompute."""
    key = (op.OPDEF.name, tuple(str(v.type.element_type) for v in op.operands), str(op.properties))
    if key not in _CHEAP:
        block = Block(arg_types=[v.type.element_type for v in op.operands])
        emit_scalar(op.OPDEF, block, list(block.args), op.attr_values, spec_of(op.results[0].type).dtype)
        names = [o.name for o in block.ops]
        _CHEAP[key] = len(names) <= CHEAP_LIMIT and all(
            n.startswith("arith.") and n not in _EXPENSIVE_ARITH for n in names)
    return _CHEAP[key]


def splat_value(v):
    """The single value of a splat ``tfc.constant`` operand, else None."""
    c = v.owner
    if not isinstance(c, ConstantOp):
        return None
    arr = c.numpy()
    if arr.size == 0:
        return None
    first = arr.reshape(-1)[0]
    if not np.array_equal(arr, np.full(arr.shape, first), equal_nan=arr.dtype.kind == "f"):
        return None
    return first.item()


def broadcast_map(shape, rank: int) -> tuple:
    """Right-aligned (numpy) map of a value of ``shape`` into an iteration space
    of ``rank`` dims; size-1 dims read index 0 (-1)."""
    off = rank - len(shape)
    return tuple(-1 if d == 1 else off + j for j, d in enumerate(shape))


class Group:
    __slots__ = ("root", "shape", "axes", "members", "copies")

    def __init__(self, root, shape, axes):
        self.root, self.shape, self.axes = root, shape, axes
        self.members = {root}  # ops moved into the group
        self.copies = set()    # cheap ops recomputed in the group (the original stays)


def _plan_block(block: Block) -> list[Group]:
    ops = list(block.ops)
    index = {op: i for i, op in enumerate(ops)}
    group_of: dict = {}   # op moved into a group -> the group
    copied_into: dict = {}  # op -> groups holding a copy
    inputs: set = set()   # values read by a copy (their producers must stay)
    groups = []
    for op in reversed(ops):
        if op in group_of:
            continue
        axes = reduction_axes(op)
        if axes is None and not is_elementwise(op):
            continue
        users = [u.operation for r in op.results for u in r.uses]
        if op in copied_into and not any(r in inputs for r in op.results) and all(
                group_of.get(u) in copied_into[op] for u in users):
            continue  # every use is served by a copy: the original dies
        shape = _static_shape((op.operands[0] if axes else op.results[0]).type)
        g = Group(op, shape, axes)
        group_of[op] = g
        groups.append(g)
        heap = []

        def push(m):
            for v in m.operands:
                p = v.owner
                if p in index:
                    heapq.heappush(heap, (-index[p], id(p), p))

        push(op)
        seen = set()
        while heap:
            _, _, p = heapq.heappop(heap)
            if p in seen or p in group_of or not is_elementwise(p):
                continue
            seen.add(p)
            p_users = [u.operation for u in p.results[0].uses]
            recomputed = _size(_static_shape(p.results[0].type)) < _size(shape)
            if all(group_of.get(u) is g for u in p_users) and p.results[0] not in inputs \
                    and (not recomputed or is_cheap(p)):
                g.members.add(p)
                group_of[p] = g
                push(p)
            elif is_cheap(p) and all(is_elementwise(u) or reduction_axes(u) is not None for u in p_users) \
                    and not any(is_elementwise(v.owner) for v in p.operands if v.owner in index):
                # every user is fusable, so each kernel can recompute p and the original can die
                g.copies.add(p)
                copied_into.setdefault(p, set()).add(g)
                inputs.update(p.operands)
    return groups


def _rewrite(g: Group, index) -> list:
    """Replace group ``g`` by one tfc.fused op; returns the constants it inlined."""
    root = g.root
    rank = len(g.shape)
    body = Block()
    scalars: dict = {}
    ins, maps, inlined = [], [], []

    def scalar_of(v):
        s = scalars.get(v)
        if s is not None:
            return s
        value = splat_value(v)
        if value is not None:
            s = S.const(ScalarBuilder(body), value, spec_of(v.type).dtype)
            inlined.append(v.owner)
        else:
            s = body.insert_arg(v.type.element_type, len(body.args))
            ins.append(v)
            maps.append(broadcast_map(spec_of(v.type).shape, rank))
        scalars[v] = s
        return s

    for m in sorted(g.members | g.copies, key=index.__getitem__):
        if m is root and g.axes:
            continue
        args = [scalar_of(v) for v in m.operands]
        scalars[m.results[0]] = emit_scalar(m.OPDEF, body, args, m.attr_values, spec_of(m.results[0].type).dtype)
    out = scalar_of(root.operands[0] if g.axes else root.results[0])
    body.add_op(FusedYieldOp([out]))
    res_type = root.results[0].type
    kind = REDUCTIONS[root.OPDEF.name] if g.axes else None
    fused = FusedOp(ins, [res_type], g.shape, maps, Region(body), kind, g.axes)
    fused.location = root.location
    Rewriter.insert_op(fused, InsertPoint.before(root))
    root.results[0].replace_all_uses_with(fused.outs[0])
    for m in sorted(g.members, key=index.__getitem__, reverse=True):
        Rewriter.erase_op(m)
    return inlined


def fuse_block(block: Block) -> None:
    groups = _plan_block(block)
    if not groups:
        return
    index = {op: i for i, op in enumerate(block.ops)}
    dead = set()
    # consumers first: a copied op is still in place when its copies are made,
    # even when it is itself a member of an earlier group
    for g in sorted(groups, key=lambda g: index[g.root], reverse=True):
        dead.update(_rewrite(g, index))
        dead.update(g.copies)
    # originals of copies and inlined constants whose uses all went into kernels
    # (constants from enclosing blocks are left to DCE)
    for op in sorted((op for op in dead if op in index), key=index.__getitem__, reverse=True):
        if op.parent is not None and not any(r.uses for r in op.results):
            Rewriter.erase_op(op)


@dataclass(frozen=True)
class FusePass(ModulePass):
    name = "tfc-fuse"

    def apply(self, ctx, op) -> None:
        blocks = [b for o in op.walk() if not isinstance(o, FusedOp)
                  for r in o.regions for b in r.blocks]
        for b in blocks:
            fuse_block(b)

