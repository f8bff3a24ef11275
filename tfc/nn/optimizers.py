"""``tfc.optimizers``: SGD (with momentum) and Adam, with Keras' update rules.

Updates are written with tfc ops and Variable assignments, so a training step
that calls ``apply_gradients`` can be traced into a compiled function. Per-
variable state ("slots": momentum, Adam's m and v) lives in Variables, created
on first use, so checkpoints hold it; ``iterations`` counts applied steps.
"""
from __future__ import annotations

import inspect

import numpy as np

from tfc.core import dtypes
from tfc.core.device import GPU
from tfc.core.tape import GradientTape
from tfc.core.tensor import Tensor, wrap
from tfc.core.variable import Variable
from tfc.ops.math import cast, sqrt


def _takes_arguments(fn) -> bool:
    """Does a learning-rate schedule take the step? (Without an introspectable
    signature: assume it does.)"""
    try:
        return bool(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return True


def _zeros_on_device_of(var):
    """Zeros of ``var``'s shape and dtype where ``var`` lives (a GPU tensor for
    a GPU variable: its slot variables live there too)."""
    zeros = np.zeros(tuple(var.shape), var.dtype.as_numpy_dtype)
    return wrap(zeros).gpu() if var.device == GPU else zeros


class Optimizer:
    """Base class: ``apply_gradients(pairs)`` and ``minimize(loss_fn, var_list)``."""

    slot_names: tuple = ()

    def __init__(self, learning_rate, name=None):
        if not callable(learning_rate) and not isinstance(learning_rate, (int, float, Tensor)):
            raise TypeError(f"{type(self).__name__}: learning_rate must be a number or a callable schedule, "
                            f"got {learning_rate!r}")
        self.learning_rate = learning_rate
        self._schedule_takes_step = callable(learning_rate) and _takes_arguments(learning_rate)
        self.name = name or type(self).__name__
        self.iterations = Variable(0, trainable=False, name=f"{self.name}/iterations", dtype=dtypes.int64)
        self._slots: dict = {}  # var.ref() -> {slot name: Variable}

    # -- slots ------------------------------------------------------------------------
    def get_slot(self, var, slot_name):
        """The ``slot_name`` state Variable of ``var`` (zeros when first created)."""
        if slot_name not in self.slot_names:
            raise ValueError(f"{self.name} has no slot {slot_name!r}; its slots are {list(self.slot_names)}")
        slots = self._slots.get(var.ref())
        if slots is None:
            # from the variable's shape, not its value: inside a tfc.function being
            # traced the value is symbolic, and the slots are made once, eagerly
            # on the variable's device: a GPU variable's slots live on the GPU too
            slots = self._slots[var.ref()] = {
                s: Variable(_zeros_on_device_of(var), trainable=False, name=f"{var.name}/{s}")
                for s in self.slot_names
            }
        return slots[slot_name]

    def slot_variables(self) -> list:
        """[(variable, slot name, slot Variable), ...] in creation order."""
        return [(ref.deref(), s, v) for ref, slots in self._slots.items() for s, v in slots.items()]

    # -- updates ------------------------------------------------------------------------
    def _step_lrs(self, var_dtypes):
        """{dtype: this step's learning rate in it}: the schedule runs once per step,
        and each optimizer folds in its per-step factors once (``_scale_lr``)."""
        lr = self.learning_rate
        if callable(lr):
            lr = lr(self.iterations.read_value()) if self._schedule_takes_step else lr()
        out = {}
        for dtype in var_dtypes:
            # a Python number stays weak: it takes the variable's dtype
            typed = cast(lr, dtype) if isinstance(lr, Tensor) and lr.dtype != dtype else lr
            out[dtype] = self._scale_lr(typed, dtype)
        return out

    def _scale_lr(self, lr, dtype):
        """The learning rate the updates of this step use (Adam's bias correction)."""
        return lr

    def apply_gradients(self, grads_and_vars) -> None:
        """Apply one update per (gradient, variable) pair; None gradients are skipped."""
        pairs = []
        for pair in grads_and_vars:
            try:
                g, v = pair
            except (TypeError, ValueError):
                raise TypeError(f"{self.name}.apply_gradients takes (gradient, variable) pairs, got {pair!r}") from None
            if g is None:
                continue
            if not isinstance(v, Variable):
                raise TypeError(f"{self.name}.apply_gradients: expected a tfc.Variable, got {type(v).__name__}")
            if not v.dtype.is_floating:
                raise TypeError(f"{self.name}.apply_gradients: variable {v.name} has dtype {v.dtype.name}; "
                                "only floating-point variables can be trained")
            if tuple(g.shape) != tuple(v.shape):
                raise ValueError(f"{self.name}.apply_gradients: gradient of shape {tuple(g.shape)} for variable "
                                 f"{v.name} of shape {tuple(v.shape)}")
            pairs.append((g, v))
        lrs = self._step_lrs(dict.fromkeys(v.dtype for _, v in pairs))
        for g, v in pairs:
            if g.dtype != v.dtype:
                g = cast(g, v.dtype)
            self._update(g, v, lrs[v.dtype])
        self.iterations.assign_add(1)

    def _update(self, grad, var, lr) -> None:
        raise NotImplementedError(f"{type(self).__name__}._update")

    def minimize(self, loss_fn, var_list):
        """One step: gradients of ``loss_fn()`` w.r.t. ``var_list`` (a list, or a
        callable returning one after the loss has run), then apply them.
        Returns the loss."""
        with GradientTape() as tape:
            loss = loss_fn()
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        if not var_list:
            raise ValueError(f"{self.name}.minimize: var_list is empty (call the model once to create its "
                             "variables, or pass a callable returning them)")
        grads = tape.gradient(loss, var_list)
        self.apply_gradients(zip(grads, var_list))
        return loss

    def __repr__(self) -> str:
        return f"<tfc.optimizers.{type(self).__name__} {self.name!r}>"


class SGD(Optimizer):
    """Gradient descent; with momentum (Keras' form):
    ``velocity = momentum * velocity - lr * g; var += velocity``
    (Nesterov: ``var += momentum * velocity - lr * g``)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name=None):
        super().__init__(learning_rate, name)
        if not 0 <= momentum <= 1:
            raise ValueError(f"SGD: momentum must be in [0, 1], got {momentum!r}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)
        self.slot_names = ("momentum",) if self.momentum else ()

    def _update(self, grad, var, lr):
        if not self.momentum:
            var.assign_sub(lr * grad)
            return
        velocity = self.get_slot(var, "momentum")
        velocity.assign(self.momentum * velocity - lr * grad)
        if self.nesterov:
            var.assign_add(self.momentum * velocity - lr * grad)
        else:
            var.assign_add(velocity)


class Adam(Optimizer):
    """Adam (Kingma & Ba), in Keras' form: with t = step + 1,
    ``m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
    var -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + epsilon)``."""

    slot_names = ("m", "v")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name=None):
        super().__init__(learning_rate, name)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _scale_lr(self, lr, dtype):
        t = cast(self.iterations.read_value() + 1, dtype)
        return lr * sqrt(1 - self.beta_2 ** t) / (1 - self.beta_1 ** t)

    def _update(self, grad, var, lr_t):
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m.assign(self.beta_1 * m + (1 - self.beta_1) * grad)
        v.assign(self.beta_2 * v + (1 - self.beta_2) * (grad * grad))
        var.assign_sub(lr_t * m / (sqrt(v) + self.epsilon))


__all__ = ["Optimizer", "SGD", "Adam"]
