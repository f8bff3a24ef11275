"""Collectives as early as their inputs allow (tensor IR, L1/L2).

Each collective op (tfc/ops/collective.py: all_reduce, broadcast, all_gather,
reduce_scatter, reduce_to_root) moves up in its block to just after the last
op defining one of its operands, never above the collective before it: the
collectives keep their order, which is the order every rank makes them in
(every rank compiles the same IR with the same passes, so it stays common).
Nothing else moves, and a collective never leaves its block (a branch or loop
body) nor passes an op whose regions make collectives. A step that averages its loss or a metric at its end then starts that
transfer as soon as the value exists; with a non-blocking backend it overlaps
the rest of the step, as the gradient buckets of tfc.distribute's tape do.
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.passes import ModulePass

from tfc.ops.collective import COLLECTIVES


def _is_collective(op) -> bool:
    opdef = getattr(type(op), "OPDEF", None)
    return opdef is not None and opdef.name in COLLECTIVES


def schedule_block(block) -> int:
    """Hoist the block's collectives; returns how many moved."""
    # where each op is now: (its index in the original order, 0), and for a
    # collective moved up, (its anchor's index, the anchor's second + 1): just after it
    position = {}
    moved = 0
    floor = None  # the last collective placed: none may go above it
    for i, op in enumerate(list(block.ops)):
        here = (i, 0)
        if _is_collective(op):
            anchor = floor
            for v in op.operands:
                owner = getattr(v, "op", None)  # (None: a block argument)
                if owner in position and (anchor is None or position[owner] > position[anchor]):
                    anchor = owner
            if op.prev_op is not anchor:
                op.detach()
                if anchor is None:
                    block.insert_op_before(op, block.first_op)
                    here = (-1, 0)
                else:
                    block.insert_op_after(op, anchor)
                    here = (position[anchor][0], position[anchor][1] + 1)
                moved += 1
            floor = op
        position[op] = here
        for region in op.regions:
            for inner in region.blocks:
                moved += schedule_block(inner)
        if op.regions and any(_is_collective(inner) for inner in op.walk()):
            floor = op  # (a branch or loop making collectives: the later ones stay after it)
    return moved


@dataclass(frozen=True)
class ScheduleCollectivesPass(ModulePass):
    name = "tfc-schedule-collectives"

    def apply(self, ctx, op) -> None:
        for region in op.regions:
            for block in region.blocks:
                schedule_block(block)
