"""``tfc.optimizers``: SGD (with momentum, Nesterov), RMSprop, Adam and AdamW, with
Keras' update rules; learning-rate schedules in ``tfc.optimizers.schedules``;
``clip_by_global_norm`` (``tfc.clip_by_global_norm``).

Updates are written with tfc ops and Variable assignments, so a training step
that calls ``apply_gradients`` can be traced into a compiled function. Per-
variable state ("slots": momentum, Adam's m and v) lives in Variables, created
on first use, so checkpoints hold it; ``iterations`` counts applied steps (a
Variable: a schedule given the step is part of a compiled step too).
"""
from __future__ import annotations

import inspect

import numpy as np

from tfc.core import dtypes
from tfc.core.device import GPU
from tfc.core.tape import GradientTape
from tfc.core.tensor import Tensor, convert_to_tensor, wrap
from tfc.core.variable import Variable
from tfc.nn import schedules
from tfc.nn._checks import flag, fraction, is_number
from tfc.ops.math import cast, maximum, sqrt, square
from tfc.ops.reductions import reduce_sum


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

    def __init__(self, learning_rate, name=None, weight_decay=None):
        if not callable(learning_rate) and not (is_number(learning_rate) or isinstance(learning_rate, Tensor)):
            raise TypeError(f"{type(self).__name__}: learning_rate must be a number or a callable schedule, "
                            f"got {learning_rate!r}")
        if weight_decay is not None and not (is_number(weight_decay) and weight_decay >= 0):
            raise ValueError(f"{type(self).__name__}: weight_decay must be a number >= 0 or None, got {weight_decay!r}")
        self.learning_rate = float(learning_rate) if is_number(learning_rate) else learning_rate
        self._schedule_takes_step = callable(learning_rate) and _takes_arguments(learning_rate)
        self.name = name or type(self).__name__
        self.iterations = Variable(0, trainable=False, name=f"{self.name}/iterations", dtype=dtypes.int64)
        self._slots: dict = {}  # var.ref() -> {slot name: Variable}
        self.weight_decay = None if weight_decay is None else float(weight_decay)
        self._no_decay_refs, self._no_decay_names = set(), ()

    def exclude_from_weight_decay(self, var_list=(), var_names=()) -> None:
        """Variables (or variables whose name contains one of ``var_names``) that
        weight decay leaves alone (biases and normalization scales, typically);
        ``var_names`` is a list of names, or one name."""
        if isinstance(var_names, str):
            var_names = (var_names,)  # one name, not its letters
        self._no_decay_refs.update(v.ref() for v in var_list)
        self._no_decay_names += tuple(var_names)

    def _decays(self, var) -> bool:
        return bool(self.weight_decay) and var.ref() not in self._no_decay_refs and not any(
            n in (var.name or "") for n in self._no_decay_names)

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
        """{dtype: (this step's learning rate in it, the rate the updates use)}: the
        schedule runs once per step, and each optimizer folds in its per-step
        factors once (``_scale_lr``)."""
        lr = self.learning_rate
        if callable(lr):
            lr = lr(self.iterations.read_value()) if self._schedule_takes_step else lr()
        out = {}
        for dtype in var_dtypes:
            # a Python number stays weak: it takes the variable's dtype
            typed = cast(lr, dtype) if isinstance(lr, Tensor) and lr.dtype != dtype else lr
            out[dtype] = (typed, self._scale_lr(typed, dtype))
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
            lr, lr_t = lrs[v.dtype]
            if self._decays(v):
                # decoupled weight decay (Loshchilov & Hutter), before the update, as Keras
                v.assign(v - v * self.weight_decay * lr)
            self._update(g, v, lr_t)
        self.iterations.assign_add(1)

    def _update(self, grad, var, lr) -> None:
        raise NotImplementedError(f"{type(self).__name__}._update")

    def minimize(self, loss_fn, var_list):
        """One step: gradients of ``loss_fn()`` w.r.t. ``var_list`` (a list, or a
        callable returning one after the loss has run), then apply them.
        Returns the loss."""
        tape, loss, var_list = _record_loss(loss_fn, var_list, f"{self.name}.minimize")
        grads = tape.gradient(loss, var_list)
        self.apply_gradients(zip(grads, var_list))
        return loss

    def __repr__(self) -> str:
        return f"<tfc.optimizers.{type(self).__name__} {self.name!r}>"


class SGD(Optimizer):
    """Gradient descent; with momentum (Keras' form):
    ``velocity = momentum * velocity - lr * g; var += velocity``
    (Nesterov: ``var += momentum * velocity - lr * g``)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name=None, weight_decay=None):
        super().__init__(learning_rate, name, weight_decay)
        self.momentum = fraction("SGD", "momentum", momentum, top_included=True)
        self.nesterov = flag("SGD", "nesterov", nesterov)
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


class RMSprop(Optimizer):
    """RMSprop in Keras' form: ``velocity = rho velocity + (1 - rho) g^2``;
    ``increment = lr g / sqrt(velocity + epsilon)`` (centered: ``velocity -
    average_gradient^2 + epsilon``, with ``average_gradient = rho average_gradient
    + (1 - rho) g``); with momentum ``m = momentum m + increment; var -= m``,
    else ``var -= increment``."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, name=None,
                 weight_decay=None):
        super().__init__(learning_rate, name, weight_decay)
        self.rho = fraction("RMSprop", "rho", rho, top_included=False)
        self.momentum = fraction("RMSprop", "momentum", momentum, top_included=False)
        self.epsilon = float(epsilon)
        self.centered = flag("RMSprop", "centered", centered)
        self.slot_names = ("velocity",) + (("momentum",) if self.momentum else ()) + (
            ("average_gradient",) if self.centered else ())

    def _update(self, grad, var, lr):
        velocity = self.get_slot(var, "velocity")
        velocity.assign(self.rho * velocity + (1 - self.rho) * square(grad))
        if self.centered:
            average = self.get_slot(var, "average_gradient")
            average.assign(self.rho * average + (1 - self.rho) * grad)
            denominator = velocity - square(average) + self.epsilon
        else:
            denominator = velocity + self.epsilon
        increment = lr * grad / sqrt(denominator)
        if self.momentum:
            momentum = self.get_slot(var, "momentum")
            momentum.assign(self.momentum * momentum + increment)
            var.assign_sub(momentum)
        else:
            var.assign_sub(increment)


class Adam(Optimizer):
    """Adam (Kingma & Ba), in Keras' form: with t = step + 1,
    ``m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
    var -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + epsilon)``."""

    slot_names = ("m", "v")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name=None, weight_decay=None):
        super().__init__(learning_rate, name, weight_decay)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _scale_lr(self, lr, dtype):
        t = cast(self.iterations.read_value() + 1, dtype)
        return lr * sqrt(1 - self.beta_2 ** t) / (1 - self.beta_1 ** t)

    def _update(self, grad, var, lr_t):
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m.assign(self.beta_1 * m + (1 - self.beta_1) * grad)
        v.assign(self.beta_2 * v + (1 - self.beta_2) * (grad * grad))
        var.assign_sub(lr_t * m / (sqrt(v) + self.epsilon))


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), Keras' form: before
    each Adam update, ``var -= var * weight_decay * lr`` (lr: the scheduled rate,
    not Adam's bias-corrected one). ``exclude_from_weight_decay`` names variables
    to leave undecayed."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name=None):
        if weight_decay is None:
            raise ValueError("AdamW: weight_decay must be a number (use Adam for none)")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name, weight_decay)


def _record_loss(loss_fn, var_list, who: str):
    """``(tape, loss, variables)``: ``loss_fn()`` run under a GradientTape, and
    ``var_list`` (a list, or a callable returning one once the loss has run: a
    model's variables exist after its first call) as a non-empty list."""
    with GradientTape() as tape:
        loss = loss_fn()
    if callable(var_list):
        var_list = var_list()
    var_list = list(var_list)
    if not var_list:
        raise ValueError(f"{who}: var_list is empty (call the model once to create its variables, or pass a "
                         "callable returning them)")
    return tape, loss, var_list


def global_norm(t_list):
    """sqrt of the sum of the squares of every element of every tensor (None skipped),
    in the dtype of the first tensor."""
    tensors = [t if isinstance(t, Tensor) else wrap(np.asarray(t)) for t in t_list if t is not None]
    if not tensors:
        raise ValueError("global_norm: t_list has no tensors")
    dtype = tensors[0].dtype
    total = None
    for t in tensors:
        part = reduce_sum(square(t if t.dtype == dtype else cast(t, dtype)))
        total = part if total is None else total + part
    return sqrt(total)


def clip_by_global_norm(t_list, clip_norm, use_norm=None):
    """TensorFlow's clip_by_global_norm: each tensor times ``clip_norm / max(global_norm,
    clip_norm)``; returns ``(clipped list, global norm)`` (None entries stay None; an
    infinite norm gives NaNs, as in TensorFlow)."""
    if isinstance(t_list, (Tensor, np.ndarray)) or not hasattr(t_list, "__iter__"):
        raise TypeError("clip_by_global_norm: t_list must be a sequence of tensors")
    t_list = list(t_list)
    if isinstance(clip_norm, np.generic):  # a number in the tensors' dtype, as TensorFlow takes it
        clip_norm = clip_norm.item()
    if isinstance(clip_norm, (int, float)) and not clip_norm > 0:
        raise ValueError(f"clip_by_global_norm: clip_norm must be > 0, got {clip_norm!r}")
    norm = global_norm(t_list) if use_norm is None else convert_to_tensor(use_norm)
    scale = clip_norm / maximum(norm, clip_norm) + (norm - norm)  # norm - norm: NaN for an infinite norm
    clipped = [None if t is None else t * (scale if scale.dtype == t.dtype else cast(scale, t.dtype)) for t in t_list]
    return clipped, norm


__all__ = ["Optimizer", "SGD", "RMSprop", "Adam", "AdamW", "schedules", "clip_by_global_norm", "global_norm"]


def __dir__():
    """Only the public names (not the modules and helpers this one imports)."""
    return list(__all__)
