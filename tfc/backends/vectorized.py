"""Vectorized interpreter of scalar bodies: each arith/math op of a
``tfc.fused`` body runs as one numpy ufunc over whole arrays, and every result
is cast to the op's IR type, so the dtype semantics are eager mode's (float32
stays float32, integers wrap). The reference executor runs ``tfc.fused`` with it,
and the scalar-body consistency test checks bodies against eager kernels with it.
"""
from __future__ import annotations

import numpy as np

from tfc.core.registry import REGISTRY
from tfc.dialects.tensor import dtype_of, loc_str, spec_of


def _astype_result(op, args):
    return args[0].astype(dtype_of(op.results[0].type).as_numpy_dtype)


_FCMP = {"oeq": np.equal, "une": np.not_equal, "olt": np.less, "ole": np.less_equal,
         "ogt": np.greater, "oge": np.greater_equal}
_ICMP = {"eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal,
         "sgt": np.greater, "sge": np.greater_equal,
         # unsigned values (ui8) are uint8 arrays: numpy compares them unsigned
         "ult": np.less, "ule": np.less_equal, "ugt": np.greater, "uge": np.greater_equal}


def _cmpf(op, args):
    from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS

    pred = CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
    if pred not in _FCMP:
        raise NotImplementedError(f"arith.cmpf predicate {pred} in the vectorized interpreter")
    return _FCMP[pred](*args)


def _cmpi(op, args):
    from xdsl.dialects.arith import CMPI_COMPARISON_OPERATIONS

    pred = CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    if pred not in _ICMP:
        raise NotImplementedError(f"arith.cmpi predicate {pred} in the vectorized interpreter")
    return _ICMP[pred](*args)


def _constant(op, args):
    return np.array(op.value.value.data, dtype=dtype_of(op.results[0].type).as_numpy_dtype)


def _ipowi(op, args):
    return REGISTRY["pow"].kernel(*args)  # same error as eager for negative integer exponents


# arith/math op -> the numpy ufunc computing it elementwise; the numpy backend
# writes the same calls (emitter.py names them from this table)
UFUNCS = {
    "arith.addf": np.add, "arith.addi": np.add, "arith.subf": np.subtract, "arith.subi": np.subtract,
    "arith.mulf": np.multiply, "arith.muli": np.multiply, "arith.divf": np.true_divide,
    "arith.floordivsi": np.floor_divide,  # a zero divisor gives 0, as numpy
    "arith.remsi": np.fmod,               # truncated; a zero divisor gives 0
    "tfc.remf": np.fmod,
    "tfc.floormod": np.mod,               # the divisor's sign; a zero divisor gives 0
    "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum, "arith.negf": np.negative,
    # unsigned forms (ui8 values are uint8 arrays); a zero divisor gives 0, as numpy
    "arith.divui": np.floor_divide, "arith.remui": np.mod, "arith.maxui": np.maximum, "arith.minui": np.minimum,
    "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
    "math.absf": np.absolute, "math.absi": np.absolute,
    "math.exp": np.exp, "math.expm1": np.expm1, "math.log": np.log, "math.log1p": np.log1p,
    "math.sqrt": np.sqrt, "math.sin": np.sin, "math.cos": np.cos, "math.tanh": np.tanh,
    "math.floor": np.floor, "math.ceil": np.ceil,
    "math.roundeven": np.rint,  # rounds half to even
    "math.copysign": np.copysign, "math.powf": np.power,
}


def _ufunc(f):
    return lambda op, args: f(*args)


# op name -> fn(op, list of arrays) -> array
IMPLS = {name: _ufunc(f) for name, f in UFUNCS.items()}
IMPLS.update({
    "arith.constant": _constant,
    "arith.select": _ufunc(np.where),
    "arith.cmpf": _cmpf, "arith.cmpi": _cmpi,
    "arith.extf": _astype_result, "arith.truncf": _astype_result, "arith.sitofp": _astype_result,
    "arith.uitofp": _astype_result, "arith.fptosi": _astype_result, "arith.extsi": _astype_result,
    "arith.extui": _astype_result, "arith.trunci": _astype_result,
    "arith.bitcast": _astype_result,  # int8 <-> uint8 (same bits: astype wraps)
    "math.ipowi": _ipowi,
})


def run_body(block, args) -> list:
    """Run a scalar block on arrays (one per block argument, mutually
    broadcastable); returns the arrays of its terminator's operands."""
    env = dict(zip(block.args, args))
    with np.errstate(all="ignore"):
        for op in block.ops:
            if op.name in ("tfc.fused_yield", "tfc.yield"):
                return [env[v] for v in op.operands]
            impl = IMPLS.get(op.name)
            if impl is None:
                raise NotImplementedError(f"the vectorized interpreter cannot run {op.name}")
            try:
                out = impl(op, [env[v] for v in op.operands])
            except Exception as e:
                e.add_note(f"while running {op.name} in a fused body at {loc_str(op)}")
                raise
            want = dtype_of(op.results[0].type).as_numpy_dtype
            out = np.asarray(out)
            env[op.results[0]] = out if out.dtype == want else out.astype(want)
    raise AssertionError("scalar body without terminator")


def input_view(a: np.ndarray, bmap, rank: int) -> np.ndarray:
    """Input ``a`` as an array of ``rank`` dims that broadcasts against the
    iteration shape: dims mapped to -1 dropped, the rest moved to their dims."""
    keep = [j for j, d in enumerate(bmap) if d >= 0]
    a = a.reshape([a.shape[j] for j in keep])
    order = sorted(range(len(keep)), key=lambda k: bmap[keep[k]])
    a = a.transpose(order)
    target = [1] * rank
    for size, d in zip(a.shape, sorted(bmap[k] for k in keep)):
        target[d] = size
    return a.reshape(target)


def run_fused(op, arrays) -> list:
    """Run a ``tfc.fused`` op on its input arrays; the result arrays."""
    shape = op.iteration_shape
    views = [input_view(np.asarray(a), m, len(shape)) for a, m in zip(arrays, op.broadcast_maps)]
    outs = run_body(op.body.block, views)
    results = []
    for k, (r, v, kind) in enumerate(zip(op.outs, outs, op.reduce_kinds)):
        v = np.broadcast_to(v, shape)
        if kind is not None:  # contiguous, as an eager result: the same summation order
            v = np.ascontiguousarray(v)
            with np.errstate(all="ignore"):
                v = REGISTRY[f"reduce_{kind}"].kernel(v, axis=op.axes, keepdims=op.keeps_dims(k))
        want = spec_of(r.type).dtype.as_numpy_dtype
        results.append(np.array(v, dtype=want))
    return results
