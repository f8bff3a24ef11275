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
``arith.constant`` in the body. Reductions (argmax and argmin among them: the
"argmax"/"argmin" kinds, an index of the first extreme) are roots only; matmul, conv and all
other ops without a scalar body stay L1 ops. Ops with dynamic shapes are left
alone.

Then groups merge into multi-output kernels (``_Merger``): an elementwise group
whose result another group of the same iteration shape reads joins that group,
its result staying an output only where something else reads it. One pass
over the data then replaces several (e.g. the squared error, its sum and the
gradient of the output layer: one kernel, where there were four). A merge is
refused when it would make a cycle (a path from one group to the other through
an op outside both), and when the kernel would mix elementwise outputs with a
reduction that is not over every axis or of inputs not read at the flat index
(full-size, one element, or varying along trailing dims only): those run as
one flat loop with the sums in eager's order, on every backend. A block with
merged kernels is then re-ordered (``_schedule``, a stable topological order:
a kernel's outputs may be read before its last member's place).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator

from tfc.dialects.fused import FusedOp, FusedYieldOp, ScalarBuilder, body_of, emit_scalar, flat_period
from tfc.dialects.tensor import (
    AssertOp, AssignVariableOp, ConstantOp, PrintOp, ReadVariableOp, RegistryOp, spec_of,
)
from tfc.ops import _scalar as S
from tfc.passes.pipeline import require_tensor_ir

REDUCTIONS = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_max": "max", "reduce_min": "min",
              "reduce_mean": "mean", "reduce_any": "any", "reduce_all": "all",
              "argmax": "argmax", "argmin": "argmin", "reduce_argmax": "argmax", "reduce_argmin": "argmin"}
# arith ops that make a body expensive (worth not recomputing)
_EXPENSIVE_ARITH = {"arith.divf", "arith.floordivsi", "arith.remsi", "arith.divsi", "tfc.floormod"}
CHEAP_LIMIT = 2  # ops in the body of a cheap op
SEARCH_LIMIT = 256  # ops a merge's cycle check may visit (more: the merge is refused)


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
    if isinstance(axis, int):  # argmax/argmin: one axis (their input has rank >= 1)
        axis = (axis,)
    axes = range(len(shape)) if axis is None else sorted({a % len(shape) for a in axis}) if shape else []
    return tuple(axes) or None


def is_cheap(op) -> bool:
    """A body of at most CHEAP_LIMIT arith ops without division (casts, selects,
    adds, broadcasts, ...): fine to recompute."""
    names = [o.name for o in body_of(op).ops if not isinstance(o, FusedYieldOp)]
    return len(names) <= CHEAP_LIMIT and all(n.startswith("arith.") and n not in _EXPENSIVE_ARITH for n in names)


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
    __slots__ = ("shape", "axes", "members", "copies", "merged")

    def __init__(self, root, shape, axes):
        self.shape, self.axes = shape, axes
        self.members = {root}  # ops moved into the group
        self.copies = set()    # cheap ops recomputed in the group (the original stays)
        self.merged = False    # holds several groups: its place in the block changes

    def reductions(self) -> list:
        return [m for m in self.members if m.OPDEF.name in REDUCTIONS and reduction_axes(m) is not None]


def _plan_block(block: Block):
    """(groups, op -> groups holding a copy of it) of one block."""
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
    return groups, copied_into


def _flat_indexable(shape, inside: set) -> bool:
    """Is every input of the ops ``inside`` a kernel over ``shape`` read at the
    flat iteration index (``flat_period``)?"""
    rank = len(shape)
    return all(v.owner in inside or flat_period(shape, broadcast_map(_static_shape(v.type), rank),
                                                _size(_static_shape(v.type))) is not None
               for m in inside for v in m.operands)


class _PrefixMax:
    """The largest value set at a place <= i (a Fenwick tree; values only grow)."""

    def __init__(self, n: int):
        self.tree = [-1] * (n + 1)

    def update(self, i: int, value: int) -> None:
        i += 1
        while i < len(self.tree):
            self.tree[i] = max(self.tree[i], value)
            i += i & -i

    def query(self, i: int) -> int:
        i += 1
        best = -1
        while i > 0:
            best = max(best, self.tree[i])
            i -= i & -i
        return best


def _in_block(op, block: Block):
    """``op``, or the op of ``block`` whose regions hold it (None: neither)."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def _ordered(op) -> bool:
    """Must ``op`` keep its place among the other ordered ops: a terminator,
    or an op with effects, nested ones included (a ``tfc.cond`` that prints)?"""
    if op.has_trait(IsTerminator):
        return True
    return any(isinstance(o, (ReadVariableOp, AssignVariableOp, PrintOp, AssertOp))
               or (isinstance(o, RegistryOp) and o.OPDEF.stateful) for o in op.walk())


class _Merger:
    """Merges groups into multi-output kernels (see the module docstring)."""

    def __init__(self, block: Block, groups: list, copied_into: dict):
        self.block = block
        self.groups = groups
        self.copied_into = copied_into
        ops = list(block.ops)
        self.index = {op: i for i, op in enumerate(ops)}
        self.group_of = {m: g for g in groups for m in g.members}
        ordered = [op for op in ops if _ordered(op)]
        self.next_ordered = dict(zip(ordered, ordered[1:]))  # _schedule keeps their order
        self._users: dict = {}  # op -> the ops of the block reading it (see _readers)
        self.spans = _PrefixMax(len(ops))  # each group's last member's place, at its first's
        for g in groups:
            self._note_span(g)

    def run(self) -> None:
        for c in list(self.groups):  # consumers first (the groups are made last to first)
            if c not in self.groups:
                continue  # merged into an earlier one
            candidates = self._producers(c)
            while candidates:
                p = candidates.pop(0)
                if self._compatible(p, c) and not self._path_outside(p, c):
                    self._merge(p, c)
                    candidates = self._producers(c)

    def _producers(self, c: Group) -> list:
        """Elementwise groups whose results ``c`` reads, nearest first."""
        found = []
        for m in sorted(c.members | c.copies, key=self.index.__getitem__):
            for v in m.operands:
                p = self.group_of.get(v.owner)
                if p is not None and p is not c and p not in found and p.axes is None:
                    found.append(p)
        return sorted(found, key=lambda g: -max(self.index[m] for m in g.members))

    def _compatible(self, p: Group, c: Group) -> bool:
        # (an op copied into other groups stays in a group of its own: they
        # copy it from the op, which is erased when its group is rewritten)
        if p.shape != c.shape or any(m in self.copied_into for m in p.members | c.members):
            return False
        if c.axes is None:
            return True
        # elementwise outputs beside a reduction: only over every axis, of flat-indexable inputs
        return list(c.axes) == list(range(len(c.shape))) and all(
            REDUCTIONS[r.OPDEF.name] in ("sum", "mean") for r in c.reductions()) and _flat_indexable(
            c.shape, p.members | c.members | p.copies | c.copies)

    def _readers(self, op) -> set:
        """The ops of this block that must come after ``op``, as ``_schedule``
        orders them: readers of its results (a user nested in an op's region
        counts as that op; a copy of a user, as the groups holding it), and the
        next ordered op after an ordered one."""
        users = self._users.get(op)
        if users is None:
            users = {_in_block(u.operation, self.block) for r in op.results for u in r.uses} - {None}
            if op in self.next_ordered:
                users.add(self.next_ordered[op])
            self._users[op] = users
        out = set(users)
        for user in users:
            for g in self.copied_into.get(user, ()):
                out.update(g.members)
        return out

    def _note_span(self, g: Group) -> None:
        places = [self.index[m] for m in g.members]
        self.spans.update(min(places), max(places))

    def _reach_bound(self, end: int) -> int:
        """A place beyond which no op has a path back to a place <= ``end``:
        readers come later in the block, so only a step from one member of a
        group to another goes back, and no group with a member at or before
        the bound has one beyond it."""
        bound = end
        while True:
            last = self.spans.query(bound)
            if last <= bound:
                return bound
            bound = last

    def _path_outside(self, p: Group, c: Group) -> bool:
        """Is there a path from ``p`` to ``c`` through an op in neither (groups
        counting as one op each)? (One from ``c`` to ``p`` is impossible: ``c``
        reads ``p``, and the graph of groups and ops has no cycle.) A search
        longer than SEARCH_LIMIT ops answers yes: the merge is refused, and
        fusing a long program stays linear."""
        both = p.members | c.members
        bound = self._reach_bound(max(self.index[m] for m in c.members))
        todo = [u for m in p.members for u in self._readers(m) if u not in both]
        seen = set()
        while todo:
            op = todo.pop()
            if op in seen or self.index[op] > bound:
                continue
            if len(seen) > SEARCH_LIMIT:
                return True
            g = self.group_of.get(op)
            unit = g.members if g is not None else (op,)
            seen.update(unit)
            for x in unit:
                for u in self._readers(x):
                    if u in c.members:
                        return True
                    if u not in both and u not in seen:
                        todo.append(u)
        return False

    def _merge(self, p: Group, c: Group) -> None:
        c.members |= p.members
        c.copies = (c.copies | p.copies) - c.members
        c.merged = True
        self._note_span(c)
        for m in p.members:
            self.group_of[m] = c
        for op, gs in self.copied_into.items():
            if p in gs:
                gs.discard(p)
                gs.add(c)
        self.groups.remove(p)


def _rewrite(g: Group, index):
    """Replace group ``g`` by one tfc.fused op; returns (it, the constants it
    inlined). Its results: each reduction's, and each member's read outside
    ``g``, the last member's at least."""
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

    members = sorted(g.members, key=index.__getitem__)
    reductions = set(g.reductions()) if g.axes else set()
    for m in sorted(g.members | g.copies, key=index.__getitem__):
        if m in reductions:
            continue
        args = [scalar_of(v) for v in m.operands]
        scalars[m.results[0]] = emit_scalar(m.OPDEF, body, args, m.attr_values, spec_of(m.results[0].type).dtype)
    outputs, kinds = [], []  # (L1 value replaced, yielded scalar)
    for m in members:
        if m in reductions:
            outputs.append((m.results[0], scalar_of(m.operands[0])))
            kinds.append(REDUCTIONS[m.OPDEF.name])
        elif any(u.operation not in g.members for u in m.results[0].uses) or (m is members[-1] and not outputs):
            outputs.append((m.results[0], scalars[m.results[0]]))
            kinds.append(None)
    body.add_op(FusedYieldOp([y for _, y in outputs]))
    fused = FusedOp(ins, [v.type for v, _ in outputs], g.shape, maps, Region(body), kinds, g.axes)
    fused.location = members[-1].location if not reductions else next(iter(reductions)).location
    # a merged kernel goes before its first member (the block is re-ordered after)
    Rewriter.insert_op(fused, InsertPoint.before(members[0] if g.merged else members[-1]))
    for (v, _), r in zip(outputs, fused.outs):
        v.replace_all_uses_with(r)
    for m in reversed(members):
        Rewriter.erase_op(m)
    return fused, inlined


def _schedule(block: Block, priority: dict) -> None:
    """Re-order ``block`` topologically, each op as early as its ``priority``
    (its place before fusion) allows: the producers of its operands (and of
    its nested ops' operands) come first, and ordered ops keep their order."""
    ops = list(block.ops)
    pos = {op: i for i, op in enumerate(ops)}
    deps = {op: set() for op in ops}
    last_effect = None
    for op in ops:
        for inner in op.walk():
            for v in inner.operands:
                owner = v.owner
                if owner in pos and owner is not op:
                    deps[op].add(owner)
        if _ordered(op):
            if last_effect is not None:
                deps[op].add(last_effect)
            last_effect = op
    users = {op: [] for op in ops}
    for op, ds in deps.items():
        for d in ds:
            users[d].append(op)
    waiting = {op: len(ds) for op, ds in deps.items()}
    ready = [(priority[op], pos[op], op) for op in ops if not waiting[op]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, _, op = heapq.heappop(ready)
        order.append(op)
        for u in users[op]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(ready, (priority[u], pos[u], u))
    assert len(order) == len(ops), "fusion made a cycle"
    for op in order:
        op.detach()
        block.add_op(op)


def fuse_block(block: Block) -> None:
    groups, copied_into = _plan_block(block)
    if not groups:
        return
    _Merger(block, groups, copied_into).run()
    index = {op: i for i, op in enumerate(block.ops)}
    dead = set()
    place = {}  # kernel -> the place (an old index) of its first member if merged, else of its last
    # consumers first: a copied op is still in place when its copies are made,
    # even when it is itself a member of an earlier group
    for g in sorted(groups, key=lambda g: max(index[m] for m in g.members), reverse=True):
        places = [index[m] for m in g.members]
        fused, inlined = _rewrite(g, index)
        place[fused] = min(places) if g.merged else max(places)
        dead.update(inlined)
        dead.update(g.copies)
    # originals of copies and inlined constants whose uses all went into kernels
    # (constants from enclosing blocks are left to DCE)
    for op in sorted((op for op in dead if op in index), key=index.__getitem__, reverse=True):
        if op.parent is not None and not any(r.uses for r in op.results):
            Rewriter.erase_op(op)
    if any(g.merged for g in groups):
        _schedule(block, {**index, **place})


@dataclass(frozen=True)
class FusePass(ModulePass):
    name = "tfc-fuse"

    def apply(self, ctx, op) -> None:
        require_tensor_ir(self.name, op)
        blocks = [b for o in op.walk() if not isinstance(o, FusedOp)
                  for r in o.regions for b in r.blocks]
        for b in blocks:
            fuse_block(b)

