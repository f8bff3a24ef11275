"""Dead code elimination: xDSL's DCE removes ops without effects whose results
are unused (stateful ops, assigns, print and assert stay)."""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import DeadCodeElimination


@dataclass(frozen=True)
class DCEPass(ModulePass):
    name = "tfc-dce"

    def apply(self, ctx, op) -> None:
        DeadCodeElimination().apply(ctx, op)
