"""``tfc.layers``: Keras-style layers built from tfc ops.

Layers with weights create them lazily, on the first call, from the input's
shape (``Dense`` needs only ``units``). Images are NHWC and conv kernels HWIO,
as in TensorFlow.
"""
from __future__ import annotations

import math

import numpy as np

from tfc.core import dtypes
from tfc.core.tensor import Tensor, convert_to_tensor
from tfc.core.variable import Variable
from tfc.nn.module import Module
from tfc.ops import conv
from tfc.ops.linalg import matmul
from tfc.ops.math import cast, relu, sigmoid, softplus, tanh
from tfc.ops.nn import log_softmax, softmax
from tfc.ops.random import generator
from tfc.ops.shapes import reshape

# -- initializers ---------------------------------------------------------------

def _fans(shape) -> tuple:
    """(fan_in, fan_out) of a dense (in, out) or conv (h, w, in, out) kernel."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Draws initial values; with a ``seed`` the draws repeat from run to run,
    without one they come from tfc.random's global stream (``tfc.random.set_seed``)."""

    def __init__(self, seed: int | None = None):
        self.seed = seed
        self._rng = None if seed is None else generator(seed)

    def _gen(self):
        return self._rng if self._rng is not None else generator()

    def __call__(self, shape, dtype=dtypes.float32):
        return self.sample(tuple(shape), self._gen()).astype(dtypes.as_dtype(dtype).as_numpy_dtype)

    def sample(self, shape, rng):
        raise NotImplementedError


class Zeros(Initializer):
    def sample(self, shape, rng):
        return np.zeros(shape)


class Ones(Initializer):
    def sample(self, shape, rng):
        return np.ones(shape)


class GlorotUniform(Initializer):
    """Uniform in +-sqrt(6 / (fan_in + fan_out)) (Keras' default for kernels)."""

    def sample(self, shape, rng):
        fan_in, fan_out = _fans(shape)
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, shape)


class GlorotNormal(Initializer):
    def sample(self, shape, rng):
        fan_in, fan_out = _fans(shape)
        return rng.normal(0.0, math.sqrt(2.0 / (fan_in + fan_out)), shape)


class HeUniform(Initializer):
    def sample(self, shape, rng):
        limit = math.sqrt(6.0 / _fans(shape)[0])
        return rng.uniform(-limit, limit, shape)


class HeNormal(Initializer):
    def sample(self, shape, rng):
        return rng.normal(0.0, math.sqrt(2.0 / _fans(shape)[0]), shape)


_INITIALIZERS = {"zeros": Zeros, "ones": Ones, "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
                 "he_uniform": HeUniform, "he_normal": HeNormal}


def get_initializer(init):
    """An initializer from a name, an Initializer, or a callable ``f(shape, dtype)``."""
    if isinstance(init, str):
        try:
            return _INITIALIZERS[init]()
        except KeyError:
            raise ValueError(f"unknown initializer {init!r}; expected one of {sorted(_INITIALIZERS)}") from None
    if callable(init):
        return init
    raise TypeError(f"an initializer must be a name or a callable f(shape, dtype), got {init!r}")


_ACTIVATIONS = {"relu": relu, "sigmoid": sigmoid, "tanh": tanh, "softplus": softplus, "softmax": softmax,
                "log_softmax": log_softmax, "linear": None}


def get_activation(act):
    """An activation from None, a name ('relu', 'softmax', ...) or a callable."""
    if act is None or callable(act):
        return act
    if isinstance(act, str) and act in _ACTIVATIONS:
        return _ACTIVATIONS[act]
    raise ValueError(f"unknown activation {act!r}; expected a callable or one of {sorted(_ACTIVATIONS)}")


# -- layers ---------------------------------------------------------------------


class Layer(Module):
    """A Module called on a tensor. ``build(input_shape, dtype)`` runs once, on
    the first call; ``call(inputs, training)`` computes the output."""

    _not_tracked = frozenset({"_deferred_restore"})

    def __init__(self, name: str | None = None):
        super().__init__(name)
        self.built = False
        # Set by Checkpoint.restore on a layer that has not created its
        # variables yet: applied right after build (restore-on-create).
        self._deferred_restore = None

    def build(self, input_shape, dtype) -> None:
        """Create the weights; the default layer has none."""

    def call(self, inputs, training=False):
        raise NotImplementedError(f"{type(self).__name__}.call")

    def __call__(self, inputs, training=False):
        if not isinstance(inputs, Tensor):
            inputs = convert_to_tensor(inputs)
        if not getattr(self, "built", False):
            before = dict(vars(self))
            try:
                self.build(tuple(inputs.shape), inputs.dtype)
                pending = getattr(self, "_deferred_restore", None)
                if pending is not None:
                    pending(self)
            except BaseException:
                # all or nothing: a failed build or restore leaves the layer unbuilt
                # and its restore pending, so the next call retries both
                vars(self).clear()
                vars(self).update(before)
                raise
            self.built = True
            self._deferred_restore = None
        return self.call(inputs, training=training)

    def add_weight(self, name, shape, initializer, dtype=dtypes.float32, trainable=True) -> Variable:
        """A new variable named ``<layer>/<name>``; store it in an attribute to track it."""
        value = get_initializer(initializer)(tuple(shape), dtype)
        return Variable(value, trainable=trainable, name=f"{self.name}/{name}", dtype=dtype)


def _float_dtype(dtype):
    return dtype if dtype.is_floating else dtypes.float32


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``; the kernel is [last input dim, units]."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", name=None):
        super().__init__(name)
        if not isinstance(units, (int, np.integer)) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"Dense: units must be a positive int, got {units!r}")
        self.units = int(units)
        self.activation = get_activation(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = get_initializer(kernel_initializer)
        self.bias_initializer = get_initializer(bias_initializer)

    def build(self, input_shape, dtype):
        if len(input_shape) < 2:
            raise ValueError(f"Dense: inputs must have rank >= 2 ([batch, ..., features]), got shape {input_shape}")
        if input_shape[-1] is None:
            raise ValueError(f"Dense: the last dimension of the inputs must be known, got shape {input_shape}")
        dtype = _float_dtype(dtype)
        self.kernel = self.add_weight("kernel", (input_shape[-1], self.units), self.kernel_initializer, dtype)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.units,), self.bias_initializer, dtype)

    def call(self, inputs, training=False):
        if not inputs.dtype.is_floating:
            inputs = cast(inputs, self.kernel.dtype)
        y = matmul(inputs, self.kernel)
        if self.use_bias:
            y = y + self.bias
        return y if self.activation is None else self.activation(y)


class Flatten(Layer):
    """[batch, d1, d2, ...] to [batch, d1 * d2 * ...]."""

    def call(self, inputs, training=False):
        rest = inputs.shape[1:]
        if any(d is None for d in rest):
            raise ValueError(f"Flatten: all dimensions but the first must be known, got shape {inputs.shape}")
        return reshape(inputs, (-1, math.prod(rest)))


class Dropout(Layer):
    """Zeroes a fraction ``rate`` of the inputs while training (scaling the rest
    by 1 / (1 - rate)); the identity otherwise."""

    def __init__(self, rate, seed=None, name=None):
        super().__init__(name)
        if not 0 <= rate < 1:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate!r}")
        self.rate = float(rate)
        self.seed = seed
        self._calls = 0

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        # A seeded layer still draws a new mask on each call (seed, seed+1, ...).
        seed = None if self.seed is None else self.seed + self._calls
        self._calls += 1
        return conv.dropout(inputs, self.rate, seed=seed)


class Conv2D(Layer):
    """2-D convolution of NHWC inputs with an HWIO kernel [kh, kw, in, filters]."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", name=None):
        super().__init__(name)
        if not isinstance(filters, (int, np.integer)) or filters <= 0:
            raise ValueError(f"Conv2D: filters must be a positive int, got {filters!r}")
        self.filters = int(filters)
        self.kernel_size = conv.hw_pair("Conv2D", kernel_size, "kernel_size")
        self.strides = conv.hw_pair("Conv2D", strides, "strides")
        self.padding = conv.padding_mode("Conv2D", padding)
        self.activation = get_activation(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = get_initializer(kernel_initializer)
        self.bias_initializer = get_initializer(bias_initializer)

    def build(self, input_shape, dtype):
        if len(input_shape) != 4 or input_shape[-1] is None:
            raise ValueError(f"Conv2D: inputs must be NHWC with a known channel count, got shape {input_shape}")
        dtype = _float_dtype(dtype)
        shape = self.kernel_size + (input_shape[-1], self.filters)
        self.kernel = self.add_weight("kernel", shape, self.kernel_initializer, dtype)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer, dtype)

    def call(self, inputs, training=False):
        if not inputs.dtype.is_floating:
            inputs = cast(inputs, self.kernel.dtype)
        y = conv.conv2d(inputs, self.kernel, self.strides, self.padding)
        if self.use_bias:
            y = y + self.bias
        return y if self.activation is None else self.activation(y)


class MaxPool2D(Layer):
    """Max over ``pool_size`` windows of NHWC inputs (strides default to pool_size)."""

    def __init__(self, pool_size=2, strides=None, padding="valid", name=None):
        super().__init__(name)
        self.pool_size = conv.hw_pair("MaxPool2D", pool_size, "pool_size")
        self.strides = self.pool_size if strides is None else conv.hw_pair("MaxPool2D", strides, "strides")
        self.padding = conv.padding_mode("MaxPool2D", padding)

    def call(self, inputs, training=False):
        return conv.max_pool2d(inputs, self.pool_size, self.strides, self.padding)


class Sequential(Layer):
    """Applies ``layers`` in order; layers get ``training``, plain callables
    (e.g. ``tfc.nn.relu``) get the tensor only."""

    def __init__(self, layers=None, name=None):
        super().__init__(name)
        self.layers = list(layers or [])

    def add(self, layer) -> None:
        self.layers.append(layer)

    def call(self, inputs, training=False):
        x = inputs
        for layer in self.layers:
            x = layer(x, training=training) if isinstance(layer, Layer) else layer(x)
        return x


__all__ = ["Layer", "Dense", "Flatten", "Dropout", "Conv2D", "MaxPool2D", "Sequential", "Initializer", "Zeros",
           "Ones", "GlorotUniform", "GlorotNormal", "HeUniform", "HeNormal", "get_initializer", "get_activation"]
