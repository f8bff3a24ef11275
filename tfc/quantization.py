"""Post-training int8 quantization of a compiled function (``tfc.compile(...,
quantize=...)``): the configuration, the observers, calibration, and the step
that turns a ConcreteFunction into its quantized one.

The steps (docs/quantization.md has the method):

1. ``freeze``: the function's variables are read as constants of their current
   values (post-training: the quantized function keeps its own int8 copy of the
   weights and takes no variables);
2. ``calibrate`` (static mode): the frozen float function runs on every
   calibration batch through the reference executor; observers record the range
   of the input and of the result of every quantizable op (after its bias and
   relu), which are written on the op as ``tfc.quant_input`` / ``tfc.quant_output``;
3. the ``tfc-quantize`` pass rewrites the ops (tfc/passes/quantize.py), then CSE
   and DCE tidy up; every later stage (fused, loops, the backends) compiles the
   rewritten module like any other.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from tfc.core.progress import progress
from tfc.nn._checks import flag, is_number
from tfc.ops import quant as _quant_ops  # (registers the quantized ops: tfc.load parses them)

MODES = _quant_ops.MODES

METHODS = ("minmax", "percentile")
NAMED = {"int8": "static", "int8-weights": "weights"}  # quantize="..." shorthands


@dataclass(frozen=True)
class Config:
    """How to quantize.

    ``mode``: "static" (int8 weights and activations, integer matmul / conv2d;
    needs calibration data) or "weights" (int8 weights, float compute).
    ``method``: how a calibrated range is chosen: "minmax" (the smallest and
    largest value seen) or "percentile" (the ``percentile``-th and
    (100 - ``percentile``)-th percentiles of each batch, averaged over the batches:
    outliers clipped). ``per_channel``: one weight scale per output channel (else
    one per tensor, stored once per layer). ``exclude``: op kinds ("matmul", "conv2d") or weight names
    (the variable's argument name in the IR, as ``dense_kernel_1``) left float.
    ``quiet``: no progress bar while calibrating.
    """

    mode: str = "static"
    method: str = "minmax"
    per_channel: bool = True
    exclude: tuple = ()
    percentile: float = 99.99
    quiet: bool = False

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"tfc.quantization.Config: mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.method not in METHODS:
            raise ValueError(f"tfc.quantization.Config: method must be one of {', '.join(METHODS)}, "
                             f"got {self.method!r}")
        if not is_number(self.percentile) or not 50.0 < float(self.percentile) <= 100.0:
            raise ValueError(f"tfc.quantization.Config: percentile must be a number in (50, 100], "
                             f"got {self.percentile!r}")
        for what in ("per_channel", "quiet"):
            flag("tfc.quantization.Config", what, getattr(self, what))
        if not isinstance(self.exclude, (str, tuple, list, set, frozenset)):
            raise TypeError(f"tfc.quantization.Config: exclude must be a name or a list of op kinds and weight "
                            f"names, got {type(self.exclude).__name__} {self.exclude!r}")
        exclude = (self.exclude,) if isinstance(self.exclude, str) else tuple(self.exclude)
        for name in exclude:
            if not isinstance(name, str) or not name or "," in name or '"' in name:
                raise ValueError(f"tfc.quantization.Config: exclude takes op kinds or weight names, got {name!r}")
        object.__setattr__(self, "exclude", exclude)


def resolve(quantize) -> Config | None:
    """``quantize=`` as a Config: None, "int8", "int8-weights" or a Config."""
    if quantize is None or isinstance(quantize, Config):
        return quantize
    if isinstance(quantize, str) and quantize in NAMED:
        return Config(mode=NAMED[quantize])
    raise ValueError(f"unknown quantize mode {quantize!r}; modes: {', '.join(NAMED)}, or a "
                     "tfc.quantization.Config")


# -- observers ---------------------------------------------------------------------------


class MinMaxObserver:
    """The smallest and largest value seen."""

    def __init__(self):
        self.lo, self.hi = np.inf, -np.inf

    def update(self, a: np.ndarray) -> None:
        if a.size:
            self.lo, self.hi = min(self.lo, float(a.min())), max(self.hi, float(a.max()))

    def range(self):
        return (0.0, 0.0) if self.lo > self.hi else (self.lo, self.hi)


class PercentileObserver:
    """The mean over batches of each batch's low and high percentiles."""

    def __init__(self, percentile: float):
        self.q = (100.0 - percentile, percentile)
        self.sums, self.batches = np.zeros(2), 0

    def update(self, a: np.ndarray) -> None:
        if a.size:
            self.sums += np.percentile(a.astype(np.float64), self.q)
            self.batches += 1

    def range(self):
        return (0.0, 0.0) if not self.batches else tuple(float(v) for v in self.sums / self.batches)


def observer(config: Config):
    return MinMaxObserver() if config.method == "minmax" else PercentileObserver(config.percentile)


# -- freezing ----------------------------------------------------------------------------


def _the_function(module):
    from xdsl.dialects import func

    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def freeze(module, variables) -> None:
    """Replace every variable read of ``module``'s function by a constant of the
    variable's current value (tagged with its argument name) and drop the
    variable arguments. A function that assigns a variable is refused."""
    from xdsl.dialects.builtin import FunctionType, StringAttr
    from xdsl.rewriter import Rewriter

    from tfc.dialects.tensor import AssignVariableOp, ConstantOp, ReadVariableOp, RefType
    from tfc.passes.quantize import WEIGHT_NAME

    f = _the_function(module)
    if any(isinstance(op, AssignVariableOp) for op in f.walk()):
        raise NotImplementedError("quantize: the function assigns a variable (a training step?); post-training "
                                  "quantization takes an inference function")
    block = f.body.block
    refs = [a for a in block.args if isinstance(a.type, RefType)]
    if len(refs) != len(variables):
        raise AssertionError(f"internal error: {len(refs)} variable arguments for {len(variables)} variables")
    value_of = {a: v for a, v in zip(refs, variables)}
    name_of, seen = {}, {}
    for a in refs:  # the names the IR prints: a repeated hint gets _1, _2, ...
        hint = a.name_hint or "arg"
        name_of[a] = hint if hint not in seen else f"{hint}_{seen[hint]}"
        seen[hint] = seen.get(hint, 0) + 1
    for op in list(f.walk()):
        if isinstance(op, ReadVariableOp):
            c = ConstantOp.from_numpy(value_of[op.ref].numpy())
            c.location = op.location
            c.attributes[WEIGHT_NAME] = StringAttr(name_of[op.ref])
            Rewriter.replace_op(op, c)
    for a in reversed(refs):
        block.erase_arg(a)
    f.function_type = FunctionType.from_lists([a.type for a in block.args], list(f.function_type.outputs.data))


# -- calibration -------------------------------------------------------------------------


def _check_batch(i: int, batch, specs, names) -> list:
    """Calibration batch ``i`` as arrays of the signature's dtypes; ValueError
    naming the batch and the argument for a wrong count, shape or a NaN/Inf."""
    if not isinstance(batch, (tuple, list)):
        batch = (batch,)
    if len(batch) != len(specs):
        raise ValueError(f"calibration batch {i}: {len(batch)} arguments, the function takes {len(specs)} "
                         f"({', '.join(names)}); each batch is a tuple of one call's arguments")
    arrays = []
    for j, (value, spec, name) in enumerate(zip(batch, specs, names)):
        a = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
        if a.ndim != len(spec.shape) or any(d is not None and d != n for d, n in zip(spec.shape, a.shape)):
            raise ValueError(f"calibration batch {i}: argument {j} ({name}) has shape {tuple(a.shape)}, "
                             f"the signature says {spec}")
        want = spec.dtype.as_numpy_dtype
        if a.dtype != want:
            if not np.can_cast(a.dtype, want, "same_kind"):
                raise ValueError(f"calibration batch {i}: argument {j} ({name}) has dtype {a.dtype}, "
                                 f"the signature says {spec.dtype.name}")
            a = a.astype(want)
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise ValueError(f"calibration batch {i}: argument {j} ({name}) contains NaN or Inf; "
                             "calibration data must be finite")
        arrays.append(a)
    return arrays


def calibrate(module, specs, batches, config: Config) -> int:
    """Run ``module``'s (frozen, float) function on every batch and write the
    observed ranges on its quantizable ops; returns the number of batches."""
    from xdsl.dialects import func

    from tfc.backends.reference import Executor
    from tfc.passes.quantize import INPUT_RANGE, OUTPUT_RANGE, chains_of, set_range

    f = _the_function(module)
    chains = chains_of(f)
    observers = {}
    for c in chains:
        for v in (c.x, c.end):
            observers.setdefault(v, observer(config))
    names = [a.name_hint or f"arg{k}" for k, a in enumerate(f.body.block.args)]
    executor = Executor(module)
    count = 0
    try:
        iterator = iter(batches)
    except TypeError:
        raise TypeError(f"calibration must be an iterable of argument tuples, got {type(batches).__name__}") from None
    for i, batch in enumerate(progress(iterator, desc="calibrating", unit="batch", quiet=config.quiet)):
        arrays = _check_batch(i, batch, specs, names)
        env = dict(zip(f.body.block.args, arrays))
        for v in env:
            if v in observers:
                observers[v].update(env[v])
        for op in f.body.block.ops:
            if isinstance(op, func.ReturnOp):
                break
            executor.run_op(op, env)
            for r in op.results:
                if r in observers:
                    observers[r].update(env[r])
        count += 1
    if count == 0:
        raise ValueError("calibration data is empty: static quantization needs at least one batch")
    for c in chains:
        set_range(c.op, INPUT_RANGE, *observers[c.x].range())
        set_range(c.op, OUTPUT_RANGE, *observers[c.end].range())
    return count


# -- the whole step ------------------------------------------------------------------------


@dataclass
class Report:
    """What quantization did: the config, the number of calibration batches,
    and the ops rewritten by kind."""

    config: Config
    batches: int = 0
    rewritten: dict = field(default_factory=dict)


def quantize_concrete(conc, quantize, calibration=None, timings=None, print_ir_after_all=False, target="cpu"):
    """The quantized copy of ConcreteFunction ``conc`` (its L1 module after its
    passes): no variables, int8 weights as constants. For ``target="cpu"`` the
    activations' int8 codes are held in float32 (what the numpy backend's float
    BLAS reads), else in int8 (the GPU's dp4a kernels)."""
    import time

    from tfc.passes.pipeline import dump_ir, run_pipeline
    from tfc.passes.quantize import QuantizePass

    config = resolve(quantize)
    if config.mode == "static" and calibration is None:
        raise ValueError("static int8 quantization needs calibration data: calibration=an iterable of "
                         "argument tuples (or use quantize='int8-weights')")
    if config.mode == "weights" and calibration is not None:
        raise ValueError("weight-only quantization (int8-weights) takes no calibration data")
    module = conc.module.clone()
    start = time.perf_counter()
    freeze(module, conc.variables)
    batches = 0
    if config.mode == "static":
        batches = calibrate(module, conc.input_specs, calibration, config)
    if timings is not None:
        timings.append(("calibrate" if batches else "freeze", time.perf_counter() - start))
    rewrite = QuantizePass(mode=config.mode, per_channel=config.per_channel, exclude=",".join(config.exclude),
                           codes="f32" if target == "cpu" else "i8")
    _check_quantizable(module, config, rewrite)
    start = time.perf_counter()
    from tfc.dialects.tensor import context

    rewrite.apply(context(), module)
    if timings is not None:
        timings.append(("tfc-quantize", time.perf_counter() - start))
    if print_ir_after_all:
        dump_ir("tfc-quantize", module)
    run_pipeline(module, ("tfc-cse", "tfc-dce"), timings=timings, print_ir_after_all=print_ir_after_all)
    new = copy.copy(conc)
    new.raw_module = module.clone()
    new._module = module
    new.variables = []
    new.grad_fns = {}
    new._reset_forms()
    counts = {}
    for op in module.walk():
        if op.name.startswith("tfc.quantized_") or op.name.startswith("tfc.weight_quantized_"):
            counts[op.name[4:]] = counts.get(op.name[4:], 0) + 1
    new.quantization = Report(config, batches, counts)
    return new


def _check_quantizable(module, config: Config, rewrite) -> None:
    """A clear error where ``rewrite`` (the tfc-quantize pass) would quantize
    nothing: no matmul or conv2d with constant weights left after ``exclude``,
    or (static) none it takes."""
    from tfc.dialects.tensor import loc_str
    from tfc.passes.quantize import chains_of, static_unsupported

    chains = [c for c in chains_of(_the_function(module)) if not rewrite.excluded(c)]
    if not chains:
        raise ValueError("quantize: no matmul or conv2d with constant weights to quantize"
                         + (f" (exclude={config.exclude!r})" if config.exclude else ""))
    if config.mode == "static":
        reasons = [(c, static_unsupported(c)) for c in chains]
        if all(why is not None for _, why in reasons):
            raise NotImplementedError("static int8 quantization takes none of the ops: "
                                      + "; ".join(f"{c.kind} at {loc_str(c.op)}: {why}" for c, why in reasons)
                                      + " (quantize='int8-weights' takes them)")


def weight_bytes(conc) -> int:
    """Bytes of the weights a compiled function carries: its variables and the
    constants of its L1 module."""
    from tfc.dialects.tensor import ConstantOp

    total = sum(v.numpy().nbytes for v in conc.variables)
    return total + sum(op.numpy().nbytes for op in conc.module.walk() if isinstance(op, ConstantOp))
