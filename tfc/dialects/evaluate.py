"""Running one op of tensor IR on arrays with its eager kernel: what a registry
op means. The constant folder (a pass) and the reference executor (a backend)
both run ops this way, so it lives with the dialect they share."""
from __future__ import annotations

import numpy as np

from tfc.dialects.tensor import RegistryOp, loc_str, spec_of


def conform(op, value, t):
    """``value`` as an array of ``t``'s dtype; an AssertionError naming ``op``
    if its shape is not the one ``t`` says (a kernel or inference bug)."""
    spec = spec_of(t)
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    want = spec.dtype.as_numpy_dtype
    if value.dtype != want:
        value = value.astype(want)
    if len(value.shape) != len(spec.shape) or any(
            d is not None and d != v for d, v in zip(spec.shape, value.shape)):
        raise AssertionError(f"{loc_str(op)}: {op.name} produced shape {value.shape}, its type says {t}")
    return value


def run_registry_op(op: RegistryOp, env: dict) -> None:
    """Run a generated registry op with its eager kernel; results go into ``env``."""
    opdef = op.OPDEF
    vals = [env[v] for v in op.operands]
    attrs = op.attr_values
    try:
        out = opdef.eager_kernel(*vals, **attrs)  # as eager runs it (quiet ops silence warnings)
    except Exception as e:
        e.add_note(f"while running {op.name} at {loc_str(op)}")
        raise
    outs = [out] if len(op.results) == 1 else list(out)
    for r, v in zip(op.results, outs):
        env[r] = conform(op, v, r.type)
