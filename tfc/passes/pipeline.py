"""Pass registry and the compile pipeline: one list of passes from traced L1
down to L3, with named stops (``PIPELINE``; the ``--emit`` stages are its stops).
``tfc/passes/driver.py`` runs it for tfc.function and tfc.compile."""
from __future__ import annotations

import os
import sys
import time

# Verifying the whole module costs about as much as all passes together
# (~0.4 ms per op), so it runs after every pass only in tests and debugging
# (TFC_VERIFY_IR=1; the test suite sets it); the tracer builds typed IR directly.
VERIFY_EACH_PASS = os.environ.get("TFC_VERIFY_IR", "") not in ("", "0")


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


def _expand():
    from tfc.passes.expand import ExpandPass
    return ExpandPass


def _fuse():
    from tfc.passes.fuse import FusePass
    return FusePass


def _bufferize():
    from tfc.passes.bufferize import BufferizePass
    return BufferizePass


def _plan_memory():
    from tfc.passes.plan_memory import PlanMemoryPass
    return PlanMemoryPass


def _lower_gpu():
    from tfc.passes.lower_gpu import LowerGpuPass
    return LowerGpuPass


def _specialize():
    from tfc.passes.specialize import SpecializePass
    return SpecializePass


def _quantize():
    from tfc.passes.quantize import QuantizePass
    return QuantizePass


def _schedule_collectives():
    from tfc.passes.schedule_collectives import ScheduleCollectivesPass
    return ScheduleCollectivesPass


def _lower_loops():
    from tfc.passes.lower_loops import LowerLoopsPass
    return LowerLoopsPass


# name -> factory returning the pass class (imported lazily)
PASSES = {"tfc-fold": _fold, "tfc-cse": _cse, "tfc-dce": _dce, "tfc-simplify": _simplify, "tfc-expand": _expand,
          "tfc-fuse": _fuse, "tfc-bufferize": _bufferize, "tfc-plan-memory": _plan_memory, "tfc-lower-loops": _lower_loops,
          "tfc-specialize": _specialize, "tfc-lower-gpu": _lower_gpu, "tfc-quantize": _quantize,
          "tfc-schedule-collectives": _schedule_collectives}

# name -> one line for `tfc opt --help` and --list-passes
DESCRIPTIONS = {
    "tfc-simplify": "algebraic identities: x*1 -> x, x**2 -> x*x, transpose(transpose(x)), ... (L1/L2)",
    "tfc-fold": "constant folding through the eager kernels (L1/L2)",
    "tfc-cse": "common subexpression elimination; stateful ops are never merged (any level)",
    "tfc-dce": "dead code elimination; stateful ops, assigns, print and assert stay (any level)",
    "tfc-expand": "composite ops (softmax, log_softmax, cross-entropies) as reductions and elementwise ops (L1)",
    "tfc-fuse": "fusion L1 -> L2: elementwise chains (and a final reduction) become tfc.fused",
    "tfc-bufferize": "annotates which values get buffers and which reuse an input in place (L1/L2)",
    "tfc-plan-memory": "annotates buffer liveness and one arena with planned offsets (L1/L2)",
    "tfc-lower-loops": "lowering L2 -> L3: memrefs at planned offsets, parallel loops, library calls",
    "tfc-lower-gpu": "lowering L3 -> L4 (target cuda): a gpu.module of kernels, tgpu.launch on the host",
    "tfc-quantize": "{mode=static|weights per_channel=true exclude=... codes=i8|f32}: int8 post-training quantization "
                    "of matmul/conv2d with constant weights (L1)",
    "tfc-schedule-collectives": "collectives (all_reduce, broadcast, ...) moved up to just after their "
                                "operands, keeping their order (L1/L2)",
    "tfc-specialize": "{shapes=\"4x64,2\"}: tensor arguments get these static shapes, result types re-inferred (L1)",
}
# passes that take options (no defaults that fit every module): run as NAME{opt=...}
NEEDS_OPTIONS = ("tfc-specialize",)

DEFAULT_L1 = ("tfc-simplify", "tfc-fold", "tfc-cse", "tfc-dce", "tfc-schedule-collectives")
# L1 -> L2: applied to the optimized L1 module (the "fused" stage); tfc-expand
# first, so that the reductions and elementwise ops it writes fuse, then CSE:
# a loss and its gradient expand to the same max and exp (one kernel, not two)
FUSED = ("tfc-expand", "tfc-cse", "tfc-fuse", "tfc-dce")
# L2 -> L3: applied to the fused module (the "loops" stage); the analyses of the
# first two are redone by tfc-lower-loops, they annotate the IR to show it
LOOPS = ("tfc-bufferize", "tfc-plan-memory", "tfc-lower-loops")
# The whole compile, traced L1 -> L3, as (stop, the passes that end there): the
# IR after each stop is a stage (``ConcreteFunction.ir(stop)``, ``--emit stop``).
PIPELINE = (("tensor", DEFAULT_L1), ("fused", FUSED), ("loops", LOOPS))
STOPS = tuple(stop for stop, _ in PIPELINE)
# the passes that keep tensor IR (L1, or L2 after tfc-fuse): what an L1 pass
# list (tfc.compile's passes=, tfc compile --passes) may hold; the stages after
# it (fused, loops) run their own passes
TENSOR_PASSES = DEFAULT_L1 + ("tfc-expand", "tfc-fuse")


def passes_between(after: str | None, stop: str) -> tuple:
    """The pass names of ``PIPELINE`` that run after stop ``after`` (None: from
    the traced module) up to and including stop ``stop``."""
    if stop not in STOPS or (after is not None and after not in STOPS):
        raise ValueError(f"unknown pipeline stop {stop if stop not in STOPS else after!r}; "
                         f"stops: {', '.join(STOPS)}")
    start = 0 if after is None else STOPS.index(after) + 1
    end = STOPS.index(stop) + 1
    if start > end:
        raise ValueError(f"stop {stop!r} comes before {after!r} in the pipeline")
    return tuple(name for _, names in PIPELINE[start:end] for name in names)


class PassPreconditionError(ValueError):
    """A pass run on IR of a level it does not take (tfc opt's ``-p`` order)."""


def require_tensor_ir(pass_name: str, module) -> None:
    """Raise PassPreconditionError unless ``module`` is tensor IR (L1 or L2): a
    function lowered to loops (L3) takes memref arguments (its arena, last)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import MemRefType

    for f in module.ops:
        if isinstance(f, func.FuncOp) and any(isinstance(t, MemRefType) for t in f.function_type.inputs):
            raise PassPreconditionError(
                f"{pass_name} expects tensor IR (L1 or L2); @{f.sym_name.data} is already lowered to "
                f"loops (L3): " + ("it is run once" if pass_name == "tfc-lower-loops"
                                   else f"run {pass_name} before tfc-lower-loops"))


def get_pass(name: str):
    try:
        return PASSES[name]()
    except KeyError:
        raise ValueError(f"unknown pass {name!r}; available: {', '.join(sorted(PASSES))}") from None


def run_pipeline(module, passes=DEFAULT_L1, print_ir_after_all: bool = False, stream=None, verify=None,
                 timings=None):
    """Apply ``passes`` (names) to ``module`` in place; verify after each when
    ``verify`` (default: ``VERIFY_EACH_PASS``). ``timings``, a list, receives
    ``(pass name, seconds)`` per pass."""
    verify = VERIFY_EACH_PASS if verify is None else verify
    from tfc.dialects.tensor import context, verify_dominance

    ctx = context()
    for name in passes:
        cls = get_pass(name)
        start = time.perf_counter()
        cls().apply(ctx, module)
        if timings is not None:
            timings.append((name, time.perf_counter() - start))
        if verify:
            module.verify()
            verify_dominance(module)  # which xDSL's verify does not check
        if print_ir_after_all:
            dump_ir(name, module, stream)
    return module


def dump_ir(after: str, module, stream=None) -> None:
    """``--print-ir-after-all``'s dump of ``module`` after ``after`` (stderr by default)."""
    from tfc.dialects.tensor import print_ir

    (stream or sys.stderr).write(f"// -----// IR Dump After {after} //----- //\n{print_ir(module)}\n\n")
