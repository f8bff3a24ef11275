"""``tfc.optimizers.schedules``: learning rates that change with the step, in
Keras' forms. A schedule is called with the optimizer's step count (its
``iterations`` Variable, 0 on the first step) and computes the rate with tfc
ops, so inside a compiled training step the rate is part of the program and
follows the step from call to call. Pass one as ``learning_rate=``."""
from __future__ import annotations

import math

import numpy as np

from tfc.core import dtypes
from tfc.core.tensor import convert_to_tensor
from tfc.nn._checks import flag, is_number, non_negative_int, positive_number
from tfc.ops.math import cast, cos, floor, less, less_equal, minimum, where


class LearningRateSchedule:
    """Base class: ``schedule(step)`` is the learning rate (a float32 tensor) at ``step``."""

    def __call__(self, step):
        raise NotImplementedError(f"{type(self).__name__}.__call__")

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


def _step(step):
    """The step as float32 (the schedules compute in the learning rate's dtype, as Keras)."""
    return cast(convert_to_tensor(step), dtypes.float32)


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)`` (the exponent
    floored with ``staircase=True``)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = positive_number("ExponentialDecay", decay_steps, "decay_steps")
        self.decay_rate = float(decay_rate)
        self.staircase = flag("ExponentialDecay", "staircase", staircase)

    def __call__(self, step):
        p = _step(step) / float(self.decay_steps)
        if self.staircase:
            p = floor(p)
        return self.initial_learning_rate * (self.decay_rate ** p)


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while step <= boundaries[0], ``values[1]`` while step <=
    boundaries[1], ..., ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries, values):
        boundaries, values = list(boundaries), list(values)
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseConstantDecay: values needs one more entry than boundaries, got "
                             f"{len(boundaries)} boundaries and {len(values)} values")
        for what, numbers in (("boundaries", boundaries), ("values", values)):
            if not all(is_number(x) for x in numbers):
                raise ValueError(f"PiecewiseConstantDecay: {what} must be numbers, got {numbers}")
        if any(earlier >= later for earlier, later in zip(boundaries, boundaries[1:])):
            raise ValueError(f"PiecewiseConstantDecay: boundaries must increase, got {boundaries}")
        self.boundaries = boundaries
        self.values = [float(v) for v in values]

    def __call__(self, step):
        step = convert_to_tensor(step)
        if not all(float(b).is_integer() for b in self.boundaries):
            step = cast(step, dtypes.float64)  # fractional boundaries: compare exactly in float64
        rate = convert_to_tensor(np.float32(self.values[-1]))
        for boundary, value in zip(reversed(self.boundaries), reversed(self.values[:-1])):
            rate = where(less_equal(step, boundary), np.float32(value), rate)
        return rate


class CosineDecay(LearningRateSchedule):
    """Cosine decay from ``initial_learning_rate`` to ``alpha`` times it over
    ``decay_steps``; then constant. The warmup form (``warmup_target`` and
    ``warmup_steps``) first rises linearly from ``initial_learning_rate`` to
    ``warmup_target`` over ``warmup_steps``, then decays from ``warmup_target``."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, warmup_target=None, warmup_steps=0):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = positive_number("CosineDecay", decay_steps, "decay_steps")
        self.alpha = float(alpha)
        self.warmup_target = None if warmup_target is None else float(warmup_target)
        self.warmup_steps = non_negative_int("CosineDecay", warmup_steps, "warmup_steps")
        if self.warmup_steps and warmup_target is None:
            raise ValueError("CosineDecay: warmup_steps needs a warmup_target (the rate the warmup rises to)")

    def _decay(self, step, start_rate):
        fraction = minimum(step, float(self.decay_steps)) / float(self.decay_steps)
        cosine = 0.5 * (1.0 + cos(math.pi * fraction))
        return start_rate * ((1 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        step = _step(step)
        if self.warmup_target is None:
            return self._decay(step, self.initial_learning_rate)
        decayed = self._decay(step - float(self.warmup_steps), self.warmup_target)
        if not self.warmup_steps:
            return decayed
        rise = (self.warmup_target - self.initial_learning_rate) * (step / float(self.warmup_steps))
        return where(less(step, float(self.warmup_steps)), rise + self.initial_learning_rate, decayed)


__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay", "CosineDecay"]


def __dir__():
    """Only the public names (not the modules and helpers this one imports)."""
    return list(__all__)
