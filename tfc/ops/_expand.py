"""The eager side of ``expand=`` (see tfc/core/registry.py): a composite op's
kernel is its expansion run on arrays, each piece by its registry op's eager
kernel, its result cast to the op's inferred dtype (as ``run_eager`` and the
reference executor run it). The compiler's ``tfc-expand`` pass builds the same
pieces as IR (tfc/passes/expand.py), and the numpy backend computes every piece
with its eager kernel's bits, so eager and compiled code agree to the bit by
construction."""
from __future__ import annotations

import numpy as np

from tfc.core import dtypes
from tfc.core.registry import REGISTRY, Spec


class ArrayBuilder:
    """The builder an ``expand`` function gets in eager mode: ``b.<op>(*arrays,
    **attrs)`` runs registry op ``<op>`` now and returns its array (a list of
    them for a multi-result op); ``b.shape(x)``, ``b.dtype(x)``
    and ``b.constant(value, dtype)`` as in the IR builder (tfc/passes/expand.py).
    Attribute values are given as the IR decodes them (int lists as tuples);
    absent ones are None. The composite op's own inference has checked the
    operands, so each piece infers only its result dtype, once per operand
    dtypes and attributes (not run_eager's full check per call: a softmax on a
    small batch is 13 us instead of 19)."""

    def shape(self, x) -> tuple:
        return np.shape(x)

    def dtype(self, x) -> dtypes.DType:
        return dtypes.from_numpy(np.asarray(x).dtype)  # a 0-d value may be a numpy scalar

    def constant(self, value, dtype):
        return np.asarray(value, dtype.as_numpy_dtype)

    def __getattr__(self, name):
        if name.startswith("_") or name not in REGISTRY:
            raise AttributeError(f"no registry op named {name!r} to expand into")
        opdef = REGISTRY[name]
        names = tuple(opdef.attrs)
        kernel = opdef.eager_kernel  # quiet ops silence numpy's warnings, as eagerly
        result_dtypes: dict = {}  # (operand dtypes, attribute values) -> the inferred numpy dtype

        def run(*operands, **attrs):
            if len(attrs) != len(names):
                unknown = set(attrs) - set(names)
                if unknown:
                    raise TypeError(f"expansion into {name}: unknown attributes {sorted(unknown)}")
                attrs = {a: attrs.get(a) for a in names}
            operands = [v if type(v) is np.ndarray else np.asarray(v) for v in operands]
            key = (*[v.dtype for v in operands], *attrs.values())
            want = result_dtypes.get(key)
            if want is None:
                if len(result_dtypes) >= 256:  # attributes may hold shapes (reshape): bounded
                    result_dtypes.clear()
                spec = opdef.infer(opdef, *[Spec(v.shape, dtypes.from_numpy(v.dtype)) for v in operands], **attrs)
                want = result_dtypes[key] = spec.dtype.as_numpy_dtype if isinstance(spec, Spec) else \
                    [s.dtype.as_numpy_dtype for s in spec]
            out = kernel(*operands, **attrs)
            if type(want) is list:  # a multi-result op: a list of arrays
                return [o if type(o) is np.ndarray and o.dtype == w else np.asarray(o, w) for o, w in zip(out, want)]
            if type(out) is not np.ndarray or out.dtype != want:
                out = np.asarray(out, want)
            return out

        self.__dict__[name] = run  # looked up without __getattr__ from now on
        return run


ARRAYS = ArrayBuilder()


def eager_kernel(expand):
    """The eager kernel of an op declared with ``expand=expand``: the
    expansion run on arrays."""
    def kernel(*arrays, **attrs):
        return expand(ARRAYS, *arrays, **attrs)

    kernel.__name__ = kernel.__qualname__ = f"{expand.__name__}_on_arrays"
    kernel.__doc__ = f"``{expand.__name__}`` on arrays, each op by its eager kernel."
    return kernel
