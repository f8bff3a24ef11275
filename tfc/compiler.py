"""Ahead-of-time compilation: ``tfc.compile`` and what ``tfc compile`` reports.

``tfc.compile(f, *args_or_specs)`` is ``tfc.function(f).get_concrete_function(...)``
with the pass list chosen by the caller and the time of each step recorded
(``compiled.compile_times``). ``STAGES`` maps each ``--emit`` stage name to how
its text is obtained from a compiled function: the traced IR, the stops of the
pass pipeline (``tfc.passes.pipeline.STOPS``) and the backends' own outputs; a
stage the build does not have yet maps to ``None``.
"""
from __future__ import annotations

import time

from tfc.backends import targets as _targets

TARGETS = _targets()


def _ir(stage):
    return lambda conc: conc.ir(stage)


def _stages() -> dict:
    from tfc.passes.pipeline import STOPS

    stages = {"tensor-raw": _ir("tensor-raw")}  # L1 as traced
    stages.update((stop, _ir(stop)) for stop in STOPS)  # tensor (L1 after the pass list), fused (L2), loops (L3)
    stages["numpy"] = _ir("numpy")  # the cpu backend's generated module (NumpyBackend.stages)
    stages["gpu"] = _ir("gpu")  # the cuda backend's: L4 and its PTX (CudaBackend.stages)
    stages["ptx"] = _ir("ptx")
    return stages


# --emit STAGE -> conc -> text; None: the stage exists in the design, not in this build yet.
STAGES = _stages()


class StageNotAvailable(NotImplementedError):
    pass


def check_stage(stage: str) -> None:
    """ValueError for an unknown stage, StageNotAvailable for one not built yet
    (tfc compile checks before it imports the model)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; stages: summary, {', '.join(STAGES)}")
    if STAGES[stage] is None:
        raise StageNotAvailable(f"stage {stage!r} is not available yet in this build of tfc "
                                f"(available: {', '.join(s for s, g in STAGES.items() if g)})")


def emit(conc, stage: str) -> str:
    """The text of ``stage`` for a compiled function."""
    check_stage(stage)
    return STAGES[stage](conc)


def resolve_passes(passes) -> tuple:
    """``"default"``, ``None``/``"none"`` (no passes), ``"p1,p2"`` or a list of names."""
    from tfc.passes.pipeline import DEFAULT_L1, TENSOR_PASSES, get_pass

    if passes is None or passes == "none":
        return ()
    if passes == "default":
        return tuple(DEFAULT_L1)
    names = [p.strip() for p in passes.split(",")] if isinstance(passes, str) else list(passes)
    names = [n for n in names if n]
    for n in names:
        get_pass(n)  # ValueError naming the unknown pass and the known ones
        if n not in TENSOR_PASSES:  # the later stages (fused, loops) run their own passes
            raise ValueError(f"{n} is not an L1 pass; the pass list takes {', '.join(TENSOR_PASSES)} "
                             "(the fused and loops stages run their own passes after it)")
    return tuple(names)


def check_target(target, quantize=None):
    """ValueError for an unknown target or quantize mode, NotImplementedError for
    one not built yet (the backend registry, tfc.backends, says which)."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; targets: {', '.join(TARGETS)}")
    from tfc.backends import backend

    backend(target)
    from tfc.quantization import resolve

    resolve(quantize)  # ValueError naming the modes (target='cuda': tfc-lower-gpu's dp4a kernels)


_SETUP: dict = {}  # the one-time cost of compiling in this process: "seconds", and "shown" once a summary showed it


def setup() -> float:
    """Import what every compile needs (xDSL and its dialects, tfc's dialects,
    passes and numpy backend): the one-time cost of a process's first compile.
    Its seconds, measured by the first call (~0 if something imported them before)."""
    if "seconds" not in _SETUP:
        start = time.perf_counter()
        import tfc.frontend.tracing  # noqa: F401
        from tfc.backends import backend

        backend("cpu").prepare()
        import tfc.passes.driver  # noqa: F401
        from tfc.passes.pipeline import PASSES

        for load in PASSES.values():  # each imports its pass's module
            load()
        _SETUP["seconds"] = time.perf_counter() - start
    return _SETUP["seconds"]


def compile(f, *example_args_or_specs, target="cpu", passes="default", quantize=None, calibration=None,
            verify=False, print_ir_after_all=False, **example_kwargs):
    """The compiled form (ConcreteFunction) of ``f`` for these example arguments
    (tensors, arrays or TensorSpecs; none: ``f``'s input_signature), built now.
    ``f`` may be a compiled function itself: its traced IR is compiled again.
    ``passes`` selects the L1 pass list (see ``resolve_passes``);
    ``print_ir_after_all`` prints the traced IR and the IR after each pass to stderr.
    ``quantize`` ("int8", "int8-weights" or a tfc.quantization.Config) quantizes
    the result after the pass list (static int8 runs ``calibration``, an iterable
    of argument tuples, first); see docs/quantization.md."""
    from tfc.frontend.function import ConcreteFunction, Function, function

    check_target(target, quantize)
    setup_s = setup()
    names = resolve_passes(passes)
    if isinstance(f, ConcreteFunction):
        if example_args_or_specs or example_kwargs:
            raise TypeError(f"tfc.compile: {f.name} is compiled already, for {f.input_specs}; "
                            "pass no arguments")
        conc, trace_s = f, dict(getattr(f, "compile_times", ())).get("trace", 0.0)
    else:
        fn = f if isinstance(f, Function) else function(f, target=target, verify=verify)
        if not example_args_or_specs and not example_kwargs and fn.input_signature is None:
            raise TypeError(f"tfc.compile: {fn.__name__} has no input_signature; pass example "
                            "arguments or tfc.TensorSpecs")
        start = time.perf_counter()
        conc = fn.get_concrete_function(*example_args_or_specs, **example_kwargs)
        trace_s = time.perf_counter() - start
    timings = []
    if print_ir_after_all:
        from tfc.passes.pipeline import dump_ir

        dump_ir("trace", conc.raw_module)
    conc = conc.with_passes(names, timings, print_ir_after_all=print_ir_after_all)
    if quantize is not None:
        from tfc.quantization import quantize_concrete

        conc = quantize_concrete(conc, quantize, calibration, timings, print_ir_after_all, target=target)
    elif calibration is not None:
        raise ValueError("tfc.compile: calibration= is for quantize='int8'; no quantize mode was given")
    conc.compile_times = [("trace", trace_s)] + timings
    if not _SETUP.get("shown"):  # the first compile in the process paid for the set-up
        conc.setup_time, _SETUP["shown"] = setup_s, True
    conc.passes = names
    conc.target = target
    return conc


# -- the summary of `tfc compile` -------------------------------------------------------


def _run_time_shapes(module) -> list:
    """What has a shape known only at run time, which no memory plan sizes:
    the dims of the function's inputs (``x[0]``), else the first op making such a value."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import TensorType

    from tfc.dialects.tensor import loc_str

    def dynamic(t):
        return isinstance(t, TensorType) and any(d < 0 for d in t.get_shape())

    f = next(op for op in module.ops if isinstance(op, func.FuncOp))
    dims = [f"{a.name_hint or f'arg{i}'}[{k}]" for i, a in enumerate(f.body.block.args) if dynamic(a.type)
            for k, d in enumerate(a.type.get_shape()) if d < 0]
    if dims:
        return dims
    for op in f.walk():
        if any(dynamic(r.type) for r in op.results):
            return [f"{op.name} at {loc_str(op)}"]
    return []


def _memory_rows(conc, module) -> list:
    plan = conc.memory_plan
    planned = (f"{plan.peak:,} B live at most; arena {plan.arena_size:,} B, "
               f"{plan.fresh_bytes:,} B fresh per call, {plan.scratch:,} B scratch per worker")
    rows = []
    if conc.dynamic:
        form = conc.specialization()
        if form.shapes is not None and form.note is None:  # the stages shown are a specialization's
            shapes = ", ".join("[" + ", ".join(map(str, s)) + "]" for s in form.shapes)
            rows.append(("specialized for", f"shapes {shapes} (each run-time shape is compiled on first use)"))
    unknown = _run_time_shapes(module)
    if not unknown:
        return rows + [("planned peak memory", planned)]
    # values sized at run time are allocated as they are made: no plan counts them
    row = ("memory plan", f"not made for values whose shapes are known only at run time "
                          f"({', '.join(unknown)})")
    return rows + ([row, ("planned peak memory", f"{planned} (static buffers only)")] if plan.buffers else [row])


def summary(conc, name=None) -> str:
    """Ops per stage, fused kernels, planned peak memory, compile time per step;
    headed by ``name`` (default: the function's own name)."""
    from tfc.dialects.fused import FusedOp, count_ops

    stage_times = conc.stage_times  # the later stages, made now if not yet
    fused = conc.fused_module
    kernels = sum(1 for op in fused.walk() if isinstance(op, FusedOp))
    sig = ", ".join(str(s) for s in conc.input_specs)
    rows = [("ops, tensor-raw (L1 as traced)", str(count_ops(conc.raw_module))),
            ("ops, tensor (L1 after passes)", str(count_ops(conc.module))),
            ("ops, fused (L2)", str(count_ops(fused))),
            ("fused kernels", str(kernels)),
            ("variables", str(len(conc.variables)))] + _memory_rows(conc, fused)
    times = list(getattr(conc, "compile_times", [])) + stage_times
    if getattr(conc, "setup_time", None) is not None:
        times.insert(0, ("set-up (once per process)", conc.setup_time))
    rows += [(f"time: {name}", f"{s * 1e3:.2f} ms") for name, s in times]
    rows.append(("time: total", f"{sum(s for _, s in times) * 1e3:.2f} ms"))
    width = max(len(k) for k, _ in rows)
    lines = [f"function {name or conc.name}({sig})"]
    lines += [f"  {k:<{width}}  {v}" for k, v in rows]
    return "\n".join(lines) + "\n"
