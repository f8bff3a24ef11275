"""The compiler driver: runs ``PIPELINE`` (tfc/passes/pipeline.py) from the
optimized L1 module to L3, and specializes a module whose tensor arguments
have dimensions known only at run time to the shapes of a call.

What it hands a backend is L3 only (``Lowered.loops`` and its memory plan);
the L2 module and the L2 -> L3 value map stay here for ``verify=True`` (the
reference executor runs L2, the backend's hooks report L3 values).
"""
from __future__ import annotations

import contextlib
import contextvars
import time
from dataclasses import dataclass, field

from tfc.passes.pipeline import DEFAULT_L1, VERIFY_EACH_PASS, passes_between, run_pipeline


# The observer of the passes run now (see ``observing``): the compile report's
# hook; None (the default) costs one lookup per pipeline run.
_OBSERVER = contextvars.ContextVar("tfc_pass_observer", default=None)


@contextlib.contextmanager
def observing(observer):
    """Within this block, every pass the driver runs (``run_passes``, ``lower``,
    ``specialize``) calls ``observer.before(stage, name, module)`` before it and
    ``observer.after(stage, name, module, seconds)`` after it (``module``: the IR
    it changes in place; tfc-lower-loops: the L2 module before, the L3 module
    after). For the compile report (tfc/frontend/report), which snapshots the IR."""
    token = _OBSERVER.set(observer)
    try:
        yield observer
    finally:
        _OBSERVER.reset(token)


def run_passes(module, passes, stage: str, **options):
    """``run_pipeline(module, passes, **options)``, one pass at a time with the
    observer told of each where one is active (``stage`` names the pipeline stop
    they belong to)."""
    observer = _OBSERVER.get()
    if observer is None:
        return run_pipeline(module, passes, **options)
    timings = options.pop("timings", None)
    for name in passes:
        step = []
        observer.before(stage, name, module)
        run_pipeline(module, (name,), timings=step, **options)
        observer.after(stage, name, module, step[0][1])
        if timings is not None:
            timings.extend(step)
    return module


@dataclass
class Lowered:
    """The stages after "tensor" of one compile: L2 (``fused``), L3 (``loops``),
    the memory plan, and ``value_map`` (L2 value -> the L3 value holding it)."""

    fused: object
    loops: object
    plan: object
    value_map: dict
    timings: list = field(default_factory=list)  # (step, seconds)

    @property
    def function(self):
        """The L3 function (a compile lowers one)."""
        (f,) = list(self.loops.ops)
        return f


def lower(l1_module) -> Lowered:
    """Run the "fused" and "loops" stops of ``PIPELINE`` on (a clone of) an
    optimized L1 module of one function."""
    from xdsl.dialects.builtin import ModuleOp

    from tfc.passes.lower_loops import lower_function

    timings = []
    start = time.perf_counter()
    fused = run_passes(l1_module.clone(), passes_between("tensor", "fused"), "fused")
    timings.append(("fuse stage (L2)", time.perf_counter() - start))
    # The loops stop ends in tfc-lower-loops; it is run through lower_function,
    # which redoes the analyses of tfc-bufferize and tfc-plan-memory (the passes
    # only annotate the IR with them) and also returns the plan and the value map.
    loops_passes = passes_between("fused", "loops")
    if loops_passes[-1] != "tfc-lower-loops":
        raise NotImplementedError(f"the driver lowers to L3 with tfc-lower-loops last; the pipeline's loops "
                                  f"stop is {','.join(loops_passes)}")
    observer = _OBSERVER.get()
    if observer is not None:  # show what the analyses annotate (lower_function redoes them)
        run_passes(fused.clone(), loops_passes[:-1], "loops")
        observer.before("loops", loops_passes[-1], fused)
    start = time.perf_counter()
    funcs = list(fused.ops)
    if len(funcs) != 1:
        raise NotImplementedError(f"the driver lowers modules of one function; this one has {len(funcs)}")
    f3, plan, value_map = lower_function(funcs[0])
    loops = ModuleOp([f3])
    if VERIFY_EACH_PASS:
        loops.verify()
    timings.append(("loops stage (L3)", time.perf_counter() - start))
    if observer is not None:
        observer.after("loops", loops_passes[-1], loops, timings[-1][1])
    return Lowered(fused, loops, plan, value_map, timings)


def source_key(l1_module) -> str:
    """What identifies a compile for a backend's cache: the optimized L1 text
    with locations (a backend adds its own compiler's identity)."""
    from tfc.dialects.tensor import print_ir

    return print_ir(l1_module, debuginfo=True)


def run_time_dims(module) -> bool:
    """Whether any value of ``module`` has a dimension known only at run time."""
    from xdsl.dialects.builtin import TensorType

    def dynamic(t):
        return isinstance(t, TensorType) and any(d < 0 for d in t.get_shape())

    for op in module.walk():
        if any(dynamic(r.type) for r in op.results):
            return True
        for region in op.regions:
            for block in region.blocks:
                if any(dynamic(a.type) for a in block.args):
                    return True
    return False


def specialize(l1_module, shapes, passes=DEFAULT_L1):
    """The optimized L1 module with its tensor arguments given the static
    ``shapes`` (one tuple per tensor argument, in order): ``tfc-specialize``,
    then the L1 ``passes`` again (default ``DEFAULT_L1``; tfc.compile's own
    list where it chose one): they fold the shape computations the static
    shapes settle. A new module; eager's error (ValueError or TypeError),
    naming the op, where the shapes do not fit."""
    from tfc.dialects.tensor import RefType
    from tfc.passes.specialize import specialize as specialize_shapes

    (f,) = list(l1_module.ops)
    given = iter(shapes)
    # one entry per argument: variables (!tfc.ref) keep their types
    full = [None if isinstance(a.type, RefType) else tuple(next(given)) for a in f.body.block.args]
    return run_passes(specialize_shapes(l1_module, full), tuple(passes), "specialize")


__all__ = ["observing", "run_passes", "Lowered", "lower", "source_key", "run_time_dims", "specialize"]
