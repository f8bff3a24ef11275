"""Pass registry and the default L1 pipeline used by tfc.function."""
from __future__ import annotations

import sys


def _fold():
    from tfc.passes.fold import ConstantFoldPass
    return ConstantFoldPass


def _cse():
    from tfc.passes.cse import CSEPass
    return CSEPass


def _dce():
    from tfc.passes.dce import DCEPass
    return DCEPass


def _simplify():
    from tfc.passes.simplify import SimplifyPass
    return SimplifyPass


# name -> factory returning the pass class (imported lazily)
PASSES = {"tfc-fold": _fold, "tfc-cse": _cse, "tfc-dce": _dce, "tfc-simplify": _simplify}

DEFAULT_L1 = ("tfc-simplify", "tfc-fold", "tfc-cse", "tfc-dce")


def get_pass(name: str):
    try:
        return PASSES[name]()
    except KeyError:
        raise ValueError(f"unknown pass {name!r}; available: {', '.join(sorted(PASSES))}") from None


def run_pipeline(module, passes=DEFAULT_L1, print_ir_after_all: bool = False, stream=None):
    """Apply ``passes`` (names) to ``module`` in place, verifying after each."""
    from tfc.dialects.tensor import context, print_ir

    ctx = context()
    for name in passes:
        get_pass(name)().apply(ctx, module)
        module.verify()
        if print_ir_after_all:
            out = stream or sys.stderr
            out.write(f"// -----// IR Dump After {name} //----- //\n{print_ir(module)}\n\n")
    return module
