"""Backends: ``backend(target)`` is the one way to a target's code generator.

A backend takes L3 only (a loops-dialect module and its memory plan, made by
``tfc.passes.driver``) and gives back an executable. Its interface is small:

- ``compile(loops, plan, name, source_key=None)``: an ``Executable``; with a
  ``source_key`` (``driver.source_key`` of the L1 module it came from) the
  backend may cache the result, and ``load(source_key, name)`` finds it again
  before anything is lowered (None when not cached); ``caching()`` says
  whether a key is worth computing;
- ``compile_hooked(loops, plan, name, hooks, hook)``: the same code calling
  ``hook(i, value)`` after each L3 value ``v`` with ``hooks[v] == i``
  (``verify=True`` compares them with the reference executor);
- ``run_loops(module, args)``: run an L3 module's function once;
- ``prepare()``: import what compiling needs (the first compile's one-time cost);
- ``stages``: the ``--emit`` stages the backend produces (``text(exe, stage)``);
- ``numerics``: its numerics contract (``Numerics``), the one place the
  differential tests read how far its results may be from eager's.

An ``Executable`` has ``call(args)`` (arrays, then a ``Cell`` per variable
argument; the result tuple), ``plan`` (the memory plan, with the backend's
scratch) and ``direct()`` (a plain function of the arrays, or None where a call
needs more around it).

``reference_executor(module)`` is the oracle: it runs tensor-dialect IR (L1 or
L2) op by op with the registry's kernels.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tfc.core.cell import Cell

# the op families a numerics contract names (docs/backends.md)
OP_FAMILIES = ("elementwise", "reduction", "matmul", "conv", "data-movement", "random", "control-flow")


@dataclass(frozen=True)
class Numerics:
    """A backend's numerics contract: how its results may differ from eager's.

    ``tolerances`` maps an op family (``OP_FAMILIES``) to ``(rtol, atol)`` for
    floating-point results; a family not in it is bit-identical to eager
    (NaN where eager has NaN, the same infinities and signed zeros). Integer
    and bool results are always exact."""

    description: str
    tolerances: dict = field(default_factory=dict)

    def __post_init__(self):
        unknown = set(self.tolerances) - set(OP_FAMILIES)
        if unknown:
            raise ValueError(f"unknown op families {sorted(unknown)}; families: {', '.join(OP_FAMILIES)}")

    @property
    def exact(self) -> bool:
        """Whether every op family is bit-identical to eager."""
        return not self.tolerances

    def tolerance(self, family: str):
        """``(rtol, atol)`` for float results of ``family``, or None: bit-identical."""
        if family not in OP_FAMILIES:
            raise ValueError(f"unknown op family {family!r}; families: {', '.join(OP_FAMILIES)}")
        return self.tolerances.get(family)

    def loosest(self):
        """The widest ``(rtol, atol)`` of any family (for results that mix
        families), or None when every family is bit-identical."""
        if not self.tolerances:
            return None
        return (max(r for r, _ in self.tolerances.values()), max(a for _, a in self.tolerances.values()))

    def difference(self, want, got, family: str | None = None, reduced: int | None = None):
        """None when ``got`` meets the contract against eager's ``want`` (numpy
        arrays) for ``family`` (None: any family, the loosest tolerance), else
        what differs, in words. ``reduced``: how many values were summed or
        multiplied into each result (a reduction's length, a matmul's K); a
        result that cancels to near zero carries both orders' rounding error,
        which grows with that count, so where the family has a tolerance its
        atol is at least ``reduced * eps`` of the dtype (for values of
        magnitude about 1; None: the family's atol alone)."""
        import numpy as np

        want, got = np.asarray(want), np.asarray(got)
        if want.dtype != got.dtype or want.shape != got.shape:
            return f"expected {want.dtype}{list(want.shape)}, got {got.dtype}{list(got.shape)}"
        tol = self.loosest() if family is None else self.tolerance(family)
        if tol is not None and reduced and want.dtype.kind in "fc":
            tol = (tol[0], max(tol[1], int(reduced) * float(np.finfo(want.dtype).eps)))
        if want.dtype.kind not in "fc" or tol is None:
            same = _bit_identical(want, got)
            if np.all(same):
                return None
            bad = np.argwhere(~same)
            first = tuple(int(i) for i in bad[0]) if bad.size else ()
            return (f"not bit-identical at {len(bad)} of {want.size} elements; first at {list(first)}: "
                    f"expected {want[first]!r}, got {got[first]!r}")
        rtol, atol = tol
        if np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True) and np.array_equal(
                np.isnan(want), np.isnan(got)):
            return None
        return f"beyond rtol={rtol}, atol={atol}: max abs difference {float(np.nanmax(np.abs(want - got)))}"


def _bit_identical(want, got):
    """Elementwise: the same value, and for floats the same sign of zero; any
    NaN matches any NaN (numpy does not promise one NaN payload)."""
    import numpy as np

    if want.dtype.kind == "c":
        return _bit_identical(want.real, got.real) & _bit_identical(want.imag, got.imag)
    if want.dtype.kind != "f":
        return np.asarray(want == got)
    both_nan = np.isnan(want) & np.isnan(got)
    return np.asarray(((want == got) & (np.signbit(want) == np.signbit(got))) | both_nan)


_TARGETS = ("cpu", "cuda")
_LOADED: dict = {}


def backend(target: str):
    """The backend of ``target``: "cpu" is the numpy backend, "cuda" the CUDA
    backend (compiling needs no GPU; running asks for a driver)."""
    b = _LOADED.get(target)
    if b is not None:
        return b
    if target == "cpu":
        from tfc.backends.numpy import NumpyBackend

        b = _LOADED[target] = NumpyBackend()
        return b
    if target == "cuda":
        from tfc.backends.cuda import CudaBackend

        b = _LOADED[target] = CudaBackend()
        return b
    raise ValueError(f"unknown target {target!r}; targets: {', '.join(_TARGETS)}")


def targets() -> tuple:
    """Every target name ``backend`` knows (implemented or not)."""
    return _TARGETS


def reference_executor(module):
    """The oracle: an executor of ``module``'s tensor-dialect functions
    (``.call(name, args)``)."""
    from tfc.backends.reference import Executor

    return Executor(module)


__all__ = ["Cell", "Numerics", "OP_FAMILIES", "backend", "targets", "reference_executor"]
