"""Common subexpression elimination: xDSL's CSE. Registry ops are Pure unless
stateful (stateful ops have unknown effects, so they are never merged); variable
reads are merged only when no write may happen between them."""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination


@dataclass(frozen=True)
class CSEPass(ModulePass):
    name = "tfc-cse"

    def apply(self, ctx, op) -> None:
        CommonSubexpressionElimination().apply(ctx, op)
