"""``tfc-expand`` (L1 -> L1): composite ops become the registry ops they are
written with, so that fusion sees their pieces.

An op declared with ``expand=`` (see tfc/core/registry.py) is a row-wise
computation written with reductions over its axis and elementwise ops:
softmax is ``e / sum(e)`` with ``e = exp(x - max(x))``, log_softmax
``z - log(sum(exp(z)))`` with ``z = x - max(x)``, the sparse cross-entropy
``log(sum(exp(x - max))) - (x[label] - max)``. Left whole, such an op is an
opaque library call in L3; expanded, its pieces become ``loops.parallel``
kernels (row-chunked where the reduction is over trailing axes) that fuse with
the op's producers and consumers.

Every op whose operand and result shapes are all static is expanded, in
function bodies and in the regions of ``tfc.cond``/``tfc.while``; the new ops
keep the original op's location (a run-time error, a bad label, names the
user's line), and an expansion that emits another composite op is expanded in
turn. Ops with a dimension known only at run time stay as they are (their
kernel runs on chunks of rows); per-shape specialization gives them static
shapes first. The op's eager kernel is the same expansion run on arrays, each
piece by its registry kernel (tfc/ops/_expand.py), so compiled results stay
bit-identical to eager on the numpy backend. Gradients are unaffected: the
tape records the original op with its own rule (which may itself use softmax,
expanded in turn).

The cross-entropy's logit at each label is ``pick_along_last``, a primitive
whose lowering is a reduction that checks the labels (its error path raises
eager's InvalidArgumentError) and a kernel of indexed loads: no piece of these
ops is a library call in L3. The pass runs after
the L1 clean-up: a ``tfc-cse`` after it merges the pieces that a loss and its
gradient share (the cross-entropy's max, exp and sum and those of the
softmax in its gradient: one of each, where there were two).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tfc.core.registry import REGISTRY
from tfc.dialects.tensor import ConstantOp, RegistryOp, build_op, spec_of
from tfc.passes.pipeline import require_tensor_ir


class IRBuilder:
    """The builder an ``expand`` function gets in the compiler: ``b.<op>(*values,
    **attrs)`` inserts registry op ``<op>`` on SSA values before ``anchor``
    (result types from the op's ``infer``, the anchor's location) and returns
    its result (a list for a multi-result op); ``b.shape(v)`` is a value's static
    shape; ``b.constant(value, dtype)`` a ``tfc.constant``. ``made`` lists the
    ops inserted, in order."""

    def __init__(self, anchor):
        self.anchor = anchor
        self.made = []

    def _insert(self, op):
        op.location = self.anchor.location
        Rewriter.insert_op(op, InsertPoint.before(self.anchor))
        self.made.append(op)
        return op

    def shape(self, v) -> tuple:
        return spec_of(v.type).shape

    def dtype(self, v):
        return spec_of(v.type).dtype

    def constant(self, value, dtype):
        return self._insert(ConstantOp.from_numpy(np.asarray(value, dtype.as_numpy_dtype), dtype)).result

    def __getattr__(self, name):
        if name.startswith("_") or name not in REGISTRY:
            raise AttributeError(f"no registry op named {name!r} to expand into")

        def emit(*operands, **attrs):
            unknown = set(attrs) - set(REGISTRY[name].attrs)
            if unknown:
                raise TypeError(f"expansion into {name}: unknown attributes {sorted(unknown)}")
            op = self._insert(build_op(name, operands, attrs))
            return op.results[0] if len(op.results) == 1 else list(op.results)

        return emit


def expandable(op) -> bool:
    """A registry op with an expansion and static operand and result shapes."""
    return (isinstance(op, RegistryOp) and op.OPDEF.expand is not None
            and all(None not in spec_of(v.type).shape for v in (*op.operands, *op.results)))


def expand_op(op) -> list:
    """Replace ``op`` by its expansion (inserted before it, its uses rewired, it
    erased); returns the new ops."""
    b = IRBuilder(op)
    out = op.OPDEF.expand(b, *op.operands, **op.attr_values)
    outs = out if isinstance(out, (list, tuple)) else [out]
    if len(outs) != len(op.results):
        raise AssertionError(f"expansion of {op.name} gave {len(outs)} results for its {len(op.results)}")
    for old, new in zip(op.results, outs):
        if new.type != old.type:  # a wrong expansion must not change a value's type silently
            raise AssertionError(f"expansion of {op.name} gives {new.type} where the op gives {old.type}")
        old.replace_all_uses_with(new)
    Rewriter.erase_op(op)
    return b.made


@dataclass(frozen=True)
class ExpandPass(ModulePass):
    name = "tfc-expand"

    def apply(self, ctx, module) -> None:
        require_tensor_ir(self.name, module)
        work = [op for op in module.walk() if expandable(op)]
        while work:
            made = expand_op(work.pop())
            work.extend(op for op in made if expandable(op))
