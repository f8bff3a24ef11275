"""Every op with a scalar body: the body run elementwise (vectorized, by the
interpreter the reference executor uses for tfc.fused) equals the op's eager
kernel, for each dtype the op accepts, on random inputs with broadcasting and
special values (0, -0, NaN, inf, halves). This keeps the two definitions of an
elementwise op consistent."""
import zlib

import numpy as np
import pytest

import tfc  # noqa: F401  (fills the registry)
from tfc.backends.vectorized import run_body
from tfc.core import dtypes
from tfc.core.registry import REGISTRY, Spec, run_eager
from tfc.core.tensor import wrap
from tfc.dialects.fused import scalar_block
from tfc.dialects.tensor import input_layout

SCALAR_OPS = sorted(n for n, op in REGISTRY.items() if op.scalar is not None)
SHAPES = [(3, 5), (5,), (1, 5)]  # inputs broadcast against each other
SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 0.5, 1.5, 2.5, -2.5, 1e30, -7.0, 3.0]


def _values(rng, dt, shape, name, pos):
    n = int(np.prod(shape))
    if dt.is_bool:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.is_integer:
        lo, hi = (-100, 100) if dt == dtypes.int8 else (-1000, 1000)
        if name == "pow":
            lo, hi = (0, 5) if pos == 1 else (-7, 7)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt.as_numpy_dtype)
    v = rng.normal(scale=4.0, size=n)
    k = min(n, len(SPECIAL))
    v[rng.choice(n, size=k, replace=False)] = rng.permutation(SPECIAL)[:k]
    return v.reshape(shape).astype(dt.as_numpy_dtype)


def _cases(name):
    """(input dtypes, attrs) for every dtype combination the op accepts."""
    op = REGISTRY[name]
    fixed, _ = input_layout(op)
    out = []
    for dt in dtypes.ALL:
        if name == "cast":
            out += [((dt,), {"dtype": to}) for to in dtypes.ALL]
            continue
        if name == "broadcast_to":
            out.append(((dt,), {"shape": (2, 3, 5)}))
            continue
        if name in ("quantize", "dequantize"):  # scale and zero point attributes; int8 codes in, or out
            if (dt.is_floating if name == "quantize" else dt == dtypes.int8):
                out += [((dt,), {"scale": scale, "zero_point": zp}) for scale, zp in ((0.05, 3), (1.5, -128))]
            continue
        if name == "gelu":
            out += [((dt,), {"approximate": a}) for a in (False, True) if dt.is_floating]
            continue
        if name == "integer_pow":
            out += [((dt,), {"n": n}) for n in (0, 1, 2, 3, 6, -1, -3) if dt.is_floating or (n >= 0 and dt.is_integer)]
            continue
        ins = (dtypes.bool_, dt, dt) if name == "where" else (dt,) * len(fixed)
        try:
            op.infer(op, *(Spec(s, d) for s, d in zip(_shapes(name, len(ins)), ins)))
        except (TypeError, ValueError):
            continue
        out.append((ins, {}))
    return out


def _shapes(name, n):
    if name == "sigmoid_cross_entropy_with_logits":  # needs equal shapes
        return [SHAPES[0]] * n
    if name == "broadcast_to":
        return [(3, 1)]
    return SHAPES[:n]


@pytest.mark.parametrize("name", SCALAR_OPS)
def test_scalar_body_matches_kernel(name):
    op = REGISTRY[name]
    cases = _cases(name)
    assert cases, f"{name}: no dtype accepted"
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for ins, attrs in cases:
        for _ in range(3):
            arrays = [_values(rng, d, s, name, i) for i, (d, s) in enumerate(zip(ins, _shapes(name, len(ins))))]
            with np.errstate(all="ignore"):
                want = run_eager(op, [wrap(a) for a in arrays], attrs)._value
            block = scalar_block(op, ins, attrs, dtypes.from_numpy(want.dtype))
            (got,) = run_body(block, arrays)
            got = np.broadcast_to(got, want.shape)
            assert got.dtype == want.dtype, (name, ins, attrs)
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {[d.name for d in ins]} {attrs}")


def test_elementwise_math_ops_have_scalar_bodies():
    # every op of tfc/ops/math.py is elementwise; each must be fusable
    import tfc.ops.math as m

    declared = {v.op.name for v in vars(m).values() if callable(v) and hasattr(v, "op")}
    assert declared and declared <= set(SCALAR_OPS), declared - set(SCALAR_OPS)


def test_import_tfc_does_not_import_xdsl():
    import subprocess
    import sys

    code = "import sys, tfc; tfc.add(1.0, 2.0); print(any(m.startswith('xdsl') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
