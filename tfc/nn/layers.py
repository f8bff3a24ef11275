"""``tfc.layers``: Keras-style layers built from tfc ops.

Layers with weights create them lazily, on the first call, from the input's
shape (``Dense`` needs only ``units``). Images are NHWC and conv kernels HWIO,
as in TensorFlow.
"""
from __future__ import annotations

import math

import numpy as np

from tfc.core import dtypes
from tfc.core.context import STATE
from tfc.core.registry import note_user_line
from tfc.core.tensor import Tensor, convert_to_tensor
from tfc.core.variable import Variable
from tfc.nn._checks import flag, fraction, is_int, is_number, positive_int
from tfc.nn.module import Module
from tfc.ops import conv
from tfc.ops.linalg import matmul
from tfc.ops.math import cast, greater_equal, logical_and, not_equal, relu, rsqrt, sigmoid, softplus, tanh, where
from tfc.ops.nn import embedding_lookup, gelu, layer_norm, log_softmax, moments, silu, softmax
from tfc.ops.random import _seed_value, generator, seeded_dropout_mask
from tfc.ops.reductions import reduce_mean
from tfc.ops.shapes import concat, expand_dims, range_along, reshape, split, stack, transpose, unstack

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


class RandomUniform(Initializer):
    """Uniform in [minval, maxval) (Keras' "uniform": +-0.05, Embedding's default)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = float(minval), float(maxval)

    def sample(self, shape, rng):
        return rng.uniform(self.minval, self.maxval, shape)


class RandomNormal(Initializer):
    """Normal with ``mean`` and ``stddev`` (Keras' "random_normal": stddev 0.05)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = float(mean), float(stddev)

    def sample(self, shape, rng):
        return rng.normal(self.mean, self.stddev, shape)


_INITIALIZERS = {"zeros": Zeros, "ones": Ones, "uniform": RandomUniform, "random_uniform": RandomUniform,
                 "random_normal": RandomNormal, "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
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
                "log_softmax": log_softmax, "gelu": gelu, "silu": silu, "swish": silu, "linear": None}


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
    # attributes holding variables that a checkpoint may lack (they keep their value)
    _restore_optional = frozenset()

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
        self._build_once(tuple(inputs.shape), inputs.dtype)
        return self.call(inputs, training=training)

    def _build_once(self, *build_args) -> None:
        """``build(*build_args)`` on the first call, then any restore waiting for it."""
        if getattr(self, "built", False):
            return
        before = dict(vars(self))
        try:
            self.build(*build_args)
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

    def add_weight(self, name, shape, initializer, dtype=dtypes.float32, trainable=True) -> Variable:
        """A new variable named ``<layer>/<name>``; store it in an attribute to track it."""
        value = get_initializer(initializer)(tuple(shape), dtype)
        return Variable(value, trainable=trainable, name=f"{self.name}/{name}", dtype=dtype)


def _check_input(kind, what, shape, sizes, rank=None) -> None:
    """``shape`` against the rank and the ``{axis: size}`` the layer's weights were
    built for: a later input that differs is named here, not by a kernel's error."""
    shape = tuple(shape)
    if rank is not None and len(shape) != rank:
        raise ValueError(f"{kind}: {what} has rank {len(shape)} (shape {shape}); the layer was built for rank {rank}")
    for axis, size in sizes.items():
        got = shape[axis]
        if got is not None and got != size:
            raise ValueError(f"{kind}: {what} has {got} features on axis {axis} (shape {shape}); the layer was built "
                             f"for {size}")


def _float_dtype(dtype):
    return dtype if dtype.is_floating else dtypes.float32


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``; the kernel is [last input dim, units]."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", name=None):
        super().__init__(name)
        self.units = positive_int("Dense", units, "units")
        self.activation = get_activation(activation)
        self.use_bias = flag("Dense", "use_bias", use_bias)
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
    by 1 / (1 - rate)); the identity otherwise. Unseeded, the masks come from
    tfc.random's global stream; seeded, call k (from 0) draws with seed + k
    (modulo 2^64), eagerly and compiled alike: k is the variable ``seed_calls``."""

    # checkpoints written before the count was a variable lack it (their count restarted at 0 anyway)
    _restore_optional = frozenset({"seed_calls"})

    def __init__(self, rate, seed=None, name=None):
        super().__init__(name)
        self.rate = fraction("Dropout", "rate", rate, top_included=False)
        self.seed = None if seed is None else _seed_value("Dropout", seed)

    def build(self, input_shape, dtype):
        if self.seed is not None:
            # a variable, not a Python count: a compiled call reads and advances it when it runs
            self.seed_calls = self.add_weight("seed_calls", (), "zeros", dtypes.int64, trainable=False)

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        if self.seed is None:
            return conv.dropout(inputs, self.rate)
        if not inputs.dtype.is_floating:  # (before the count advances: a refused call draws nothing)
            error = TypeError(f"{self.name}: the inputs have dtype {inputs.dtype.name}; dropout needs floats")
            note_user_line(error)
            raise error
        if STATE.builder is None:
            # eagerly the count is known now: dropout_mask's draw with that seed (which has a GPU kernel)
            out = conv.dropout(inputs, self.rate, seed=(self.seed + int(self.seed_calls.numpy())) % (1 << 64))
        else:
            seed = self.seed_calls + np.int64(self.seed - (1 << 64) if self.seed >= 1 << 63 else self.seed)
            out = inputs * seeded_dropout_mask(inputs, seed, self.rate)
        self.seed_calls.assign_add(np.int64(1))
        return out


class Conv2D(Layer):
    """2-D convolution of NHWC inputs with an HWIO kernel [kh, kw, in, filters]."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", name=None):
        super().__init__(name)
        self.filters = positive_int("Conv2D", filters, "filters")
        self.kernel_size = conv.hw_pair("Conv2D", kernel_size, "kernel_size")
        self.strides = conv.hw_pair("Conv2D", strides, "strides")
        self.padding = conv.padding_mode("Conv2D", padding)
        self.activation = get_activation(activation)
        self.use_bias = flag("Conv2D", "use_bias", use_bias)
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
        _check_input("Conv2D", "the input", inputs.shape, {-1: self.kernel.shape[2]}, rank=4)
        if not inputs.dtype.is_floating:
            inputs = cast(inputs, self.kernel.dtype)
        y = conv.conv2d(inputs, self.kernel, self.strides, self.padding)
        if self.use_bias:
            y = y + self.bias
        return y if self.activation is None else self.activation(y)


class _Pool2D(Layer):
    """A ``pool_size`` window op over NHWC inputs (strides default to pool_size)."""

    _op = None  # the tfc.ops.conv pooling op (staticmethod in subclasses)

    def __init__(self, pool_size=2, strides=None, padding="valid", name=None):
        super().__init__(name)
        kind = type(self).__name__
        self.pool_size = conv.hw_pair(kind, pool_size, "pool_size")
        self.strides = self.pool_size if strides is None else conv.hw_pair(kind, strides, "strides")
        self.padding = conv.padding_mode(kind, padding)

    def call(self, inputs, training=False):
        return self._op(inputs, self.pool_size, self.strides, self.padding)


class MaxPool2D(_Pool2D):
    """Max over ``pool_size`` windows of NHWC inputs (strides default to pool_size)."""

    _op = staticmethod(conv.max_pool2d)


class AveragePooling2D(_Pool2D):
    """Mean over ``pool_size`` windows of NHWC inputs (strides default to pool_size;
    with ``padding="same"`` a window averages only the inputs it covers, as in TensorFlow)."""

    _op = staticmethod(conv.avg_pool2d)


class GlobalAveragePooling2D(Layer):
    """The mean over height and width of NHWC inputs: [batch, channels]
    ([batch, 1, 1, channels] with ``keepdims=True``)."""

    def __init__(self, keepdims=False, name=None):
        super().__init__(name)
        self.keepdims = flag("GlobalAveragePooling2D", "keepdims", keepdims)

    def call(self, inputs, training=False):
        if len(inputs.shape) != 4:
            raise ValueError(f"GlobalAveragePooling2D: inputs must be NHWC (rank 4), got shape {tuple(inputs.shape)}")
        return reduce_mean(inputs, axis=(1, 2), keepdims=self.keepdims)


class Embedding(Layer):
    """Rows of an [input_dim, output_dim] table at integer ids: inputs of shape S
    give S + [output_dim]. Ids outside [0, input_dim) raise (eager and compiled)."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", name=None):
        super().__init__(name)
        self.input_dim = positive_int("Embedding", input_dim, "input_dim")
        self.output_dim = positive_int("Embedding", output_dim, "output_dim")
        self.embeddings_initializer = get_initializer(embeddings_initializer)

    def build(self, input_shape, dtype):
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          self.embeddings_initializer)

    def call(self, inputs, training=False):
        if inputs.dtype not in (dtypes.int32, dtypes.int64):
            inputs = cast(inputs, dtypes.int32)  # Keras' rule: float ids are truncated
        return embedding_lookup(self.embeddings, inputs)


def _axes(kind, axis, rank) -> tuple:
    """``axis`` (an int or a sequence) as sorted non-negative axes of a rank-``rank`` input."""
    listed = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in listed:
        if not isinstance(a, (int, np.integer)) or not -rank <= a < rank:
            raise ValueError(f"{kind}: axis {a!r} is out of range for inputs of rank {rank}")
        out.append(int(a) % rank)
    if len(set(out)) != len(out) or not out:
        raise ValueError(f"{kind}: axis must name distinct axes, got {axis!r}")
    return tuple(sorted(out))


def _normalize(x, mean, variance, gamma, beta, epsilon):
    """Batch normalization with given statistics (TensorFlow's batch_normalization):
    ``(x - mean) / sqrt(variance + epsilon) * gamma + beta`` in Keras' order of
    operations (one scale and one shift of x)."""
    inv = rsqrt(variance + epsilon)
    if gamma is not None:
        inv = inv * gamma
    shift = -mean * inv
    if beta is not None:
        shift = shift + beta
    return x * inv + shift


class _Normalization(Layer):
    """The parameters shared by LayerNormalization and BatchNormalization: one
    ``gamma`` and ``beta`` per position of the parameter axes."""

    def __init__(self, axis, epsilon, center, scale, beta_initializer, gamma_initializer, name):
        super().__init__(name)
        kind = type(self).__name__
        listed = [axis] if isinstance(axis, (int, np.integer)) else axis
        if not isinstance(listed, (list, tuple)) or not all(is_int(a) for a in listed):
            raise TypeError(f"{kind}: axis must be an int or a list of ints, got {axis!r}")
        if not is_number(epsilon) or not epsilon >= 0:
            raise ValueError(f"{kind}: epsilon must be a number >= 0, got {epsilon!r}")
        self.axis = axis
        self.epsilon = float(epsilon)
        self.center, self.scale = flag(kind, "center", center), flag(kind, "scale", scale)
        self.beta_initializer = get_initializer(beta_initializer)
        self.gamma_initializer = get_initializer(gamma_initializer)

    def _build_params(self, input_shape, dtype, param_axes):
        kind = type(self).__name__
        if any(input_shape[a] is None for a in param_axes):
            raise ValueError(f"{kind}: the inputs' axes {param_axes} (those of gamma and beta) must be known, "
                             f"got shape {input_shape}")
        self.param_shape = tuple(input_shape[a] for a in param_axes)
        rank = self._rank = len(input_shape)
        # how a parameter lines up with the inputs (no reshape when its axes are the last ones)
        trailing = param_axes == tuple(range(rank - len(param_axes), rank))
        self._broadcast_shape = None if trailing else tuple(
            input_shape[a] if a in param_axes else 1 for a in range(rank))
        dtype = _float_dtype(dtype)
        if self.scale:
            self.gamma = self.add_weight("gamma", self.param_shape, self.gamma_initializer, dtype)
        if self.center:
            self.beta = self.add_weight("beta", self.param_shape, self.beta_initializer, dtype)

    def _broadcast(self, param):
        if param is None or self._broadcast_shape is None:
            return param
        return reshape(param, self._broadcast_shape)

    def _params(self, inputs):
        """gamma and beta lined up with ``inputs`` (checked against the built shape)."""
        _check_input(type(self).__name__, "the input", inputs.shape, dict(zip(self.axes, self.param_shape)),
                     rank=self._rank)
        return (self._broadcast(getattr(self, "gamma", None)), self._broadcast(getattr(self, "beta", None)))


class LayerNormalization(_Normalization):
    """Normalizes each example over ``axis`` (the last by default):
    ``(x - mean) / sqrt(var + epsilon) * gamma + beta``, gamma and beta over ``axis``."""

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", name=None):
        super().__init__(axis, epsilon, center, scale, beta_initializer, gamma_initializer, name)

    def build(self, input_shape, dtype):
        self.axes = _axes("LayerNormalization", self.axis, len(input_shape))
        self._build_params(input_shape, dtype, self.axes)

    def call(self, inputs, training=False):
        return layer_norm(inputs, *self._params(inputs), axis=self.axes, epsilon=self.epsilon)


class BatchNormalization(_Normalization):
    """Normalizes over the batch (every axis but ``axis``). Training (``training=True``)
    uses the batch's mean and variance and moves ``moving_mean`` and
    ``moving_variance`` (non-trainable Variables, kept by checkpoints) toward them:
    ``moving = moving * momentum + batch * (1 - momentum)``; otherwise the moving
    statistics are used. Inside a tfc.function the update is a variable assignment."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 name=None):
        super().__init__(axis, epsilon, center, scale, beta_initializer, gamma_initializer, name)
        self.momentum = fraction("BatchNormalization", "momentum", momentum, top_included=True)
        self.moving_mean_initializer = get_initializer(moving_mean_initializer)
        self.moving_variance_initializer = get_initializer(moving_variance_initializer)

    def build(self, input_shape, dtype):
        rank = len(input_shape)
        self.axes = _axes("BatchNormalization", self.axis, rank)
        self.reduction_axes = tuple(a for a in range(rank) if a not in self.axes)
        self._build_params(input_shape, dtype, self.axes)
        dtype = _float_dtype(dtype)
        self.moving_mean = self.add_weight("moving_mean", self.param_shape, self.moving_mean_initializer, dtype,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", self.param_shape,
                                               self.moving_variance_initializer, dtype, trainable=False)

    def call(self, inputs, training=False):
        gamma, beta = self._params(inputs)  # (checks the input before any statistic moves)
        if not training:
            mean, variance = self._broadcast(self.moving_mean), self._broadcast(self.moving_variance)
            return _normalize(inputs, mean, variance, gamma, beta, self.epsilon)
        mean, variance = moments(inputs, self.reduction_axes, keepdims=True)
        decay = 1.0 - self.momentum
        for moving, batch in ((self.moving_mean, mean), (self.moving_variance, variance)):
            moving.assign(moving * self.momentum + reshape(batch, self.param_shape) * decay)
        return _normalize(inputs, mean, variance, gamma, beta, self.epsilon)


class MultiHeadAttention(Layer):
    """Keras' multi-head attention: ``layer(query, value, key=None, attention_mask=None,
    return_attention_scores=False, training=False, use_causal_mask=False)`` on
    [batch, length, features] inputs. Each of ``num_heads`` heads projects the
    query and key to ``key_dim`` and the value to ``value_dim`` (default key_dim)
    features, attends with softmax(q k^T / sqrt(key_dim)), and the heads' outputs
    are projected back to the query's feature size (or ``output_shape``).
    ``attention_mask`` ([batch, Tq, Tv], True where a query may attend) and
    ``use_causal_mask`` (query i sees values 0..i) combine. Kernels have Keras'
    shapes: query/key/value [features, heads, dim], output [heads, value_dim, out]."""

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True, output_shape=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", seed=None, name=None):
        super().__init__(name)
        self.num_heads = positive_int("MultiHeadAttention", num_heads, "num_heads")
        self.key_dim = positive_int("MultiHeadAttention", key_dim, "key_dim")
        self.value_dim = self.key_dim if value_dim is None else positive_int(
            "MultiHeadAttention", value_dim, "value_dim")
        self.output_dim = None if output_shape is None else positive_int(
            "MultiHeadAttention", output_shape, "output_shape")
        self.use_bias = flag("MultiHeadAttention", "use_bias", use_bias)
        self.kernel_initializer = get_initializer(kernel_initializer)
        self.bias_initializer = get_initializer(bias_initializer)
        self.dropout_layer = Dropout(dropout, seed=seed, name=f"{self.name}/dropout")

    def build(self, query_shape, value_shape, key_shape, dtype):
        for what, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            if len(shape) != 3 or shape[-1] is None:
                raise ValueError(f"MultiHeadAttention: {what} must be [batch, length, features] with known "
                                 f"features, got shape {shape}")
        dtype = _float_dtype(dtype)
        h = self.num_heads
        out = self.output_dim or query_shape[-1]
        for part, features, dim in (("query", query_shape[-1], self.key_dim), ("key", key_shape[-1], self.key_dim),
                                    ("value", value_shape[-1], self.value_dim)):
            setattr(self, f"{part}_kernel", self.add_weight(f"{part}_kernel", (features, h, dim),
                                                            self.kernel_initializer, dtype))
            if self.use_bias:
                setattr(self, f"{part}_bias", self.add_weight(f"{part}_bias", (h, dim), self.bias_initializer, dtype))
        self.output_kernel = self.add_weight("output_kernel", (h, self.value_dim, out), self.kernel_initializer, dtype)
        if self.use_bias:
            self.output_bias = self.add_weight("output_bias", (out,), self.bias_initializer, dtype)

    def _projected(self, x, parts):
        """x [batch, T, features] projected by each of ``parts``' kernels (and
        biases), as [batch, heads, T, dim] each: one product for all of them
        (self-attention's query, key and value: one GEMM, one weight gradient)."""
        kernels = [getattr(self, f"{part}_kernel") for part in parts]
        flat = [reshape(k, (k.shape[0], k.shape[1] * k.shape[2])) for k in kernels]
        y = matmul(x, flat[0] if len(flat) == 1 else concat(flat, axis=1))
        if self.use_bias:
            biases = [reshape(getattr(self, f"{part}_bias"), (-1,)) for part in parts]
            y = y + (biases[0] if len(biases) == 1 else concat(biases, axis=0))
        pieces = [y] if len(parts) == 1 else split(y, [f.shape[1] for f in flat], axis=-1)
        return [_split_heads(t, k.shape[1]) for t, k in zip(pieces, kernels)]

    def __call__(self, query, value, key=None, attention_mask=None, return_attention_scores=False, training=False,
                 use_causal_mask=False):
        self_attention = key is None and value is query  # one tensor: one product for q, k and v
        query, value = convert_to_tensor(query), convert_to_tensor(value)
        key = value if key is None else convert_to_tensor(key)
        self._build_once(tuple(query.shape), tuple(value.shape), tuple(key.shape), query.dtype)
        for part, x in (("query", query), ("key", key), ("value", value)):
            _check_input("MultiHeadAttention", part, x.shape, {-1: getattr(self, f"{part}_kernel").shape[0]}, rank=3)
        if None not in (key.shape[1], value.shape[1]) and key.shape[1] != value.shape[1]:
            raise ValueError(f"MultiHeadAttention: key and value lengths differ ({key.shape[1]} and {value.shape[1]})")
        if self_attention:
            q, k, v = self._projected(query, ("query", "key", "value"))
        else:
            (q,) = self._projected(query, ("query",))
            k, v = (self._projected(value, ("key", "value")) if key is value
                    else self._projected(key, ("key",)) + self._projected(value, ("value",)))
        q = q * (1.0 / math.sqrt(self.key_dim))
        scores = matmul(q, k, transpose_b=True)  # [batch, heads, Tq, Tv]
        mask = self._mask(attention_mask, use_causal_mask, query, value)
        if mask is not None:
            # added, as Keras' softmax adds its mask: the gradient passes through unmasked
            scores = scores + where(mask, cast(0, scores.dtype), _large_negative(scores.dtype))
        probs = softmax(scores, axis=-1)
        heads = matmul(self.dropout_layer(probs, training=training), v)  # [batch, heads, Tq, value_dim]
        h, vd, out_dim = self.output_kernel.shape
        out = matmul(_merge_heads(heads), reshape(self.output_kernel, (h * vd, out_dim)))
        if self.use_bias:
            out = out + self.output_bias
        return (out, probs) if return_attention_scores else out

    @staticmethod
    def _mask(attention_mask, use_causal_mask, query, value):
        """A bool mask broadcasting to [batch, heads, Tq, Tv], or None."""
        mask = None
        if attention_mask is not None:
            attention_mask = convert_to_tensor(attention_mask)
            expected = (query.shape[0], query.shape[1], value.shape[1])[-len(attention_mask.shape):]
            if len(attention_mask.shape) not in (2, 3) or any(
                    None not in (m, e) and m not in (1, e) for m, e in zip(attention_mask.shape, expected)):
                raise ValueError("MultiHeadAttention: attention_mask must be [batch, Tq, Tv] or [Tq, Tv] (here "
                                 f"{tuple(query.shape[:2]) + (value.shape[1],)}, or 1 to broadcast), got shape "
                                 f"{tuple(attention_mask.shape)}")
            if attention_mask.dtype != dtypes.bool_:
                attention_mask = not_equal(attention_mask, 0)
            mask = expand_dims(attention_mask, -3)  # one mask for every head
        if use_causal_mask:
            # query i sees values j <= i; range_along: lengths may be known only at run time
            rows, cols = range_along(query, 1), range_along(value, 1)
            causal = greater_equal(expand_dims(rows, 1), expand_dims(cols, 0))
            mask = causal if mask is None else logical_and(mask, causal)
        return mask


def _split_heads(y, heads):
    """[batch, T, heads * dim] -> [batch, heads, T, dim]: a view where the batch
    or the length is static (a reshape's -1 stands for the other); with both
    known only at run time, the heads split off and stacked (the same values)."""
    batch, length, features = y.shape
    if batch is None and length is None:
        return stack(split(y, heads, axis=-1), axis=1)
    return transpose(reshape(y, (-1 if batch is None else batch, -1 if length is None else length, heads,
                                 features // heads)), (0, 2, 1, 3))


def _merge_heads(x):
    """[batch, heads, T, dim] -> [batch, T, heads * dim] (``_split_heads`` undone)."""
    batch, heads, length, dim = x.shape
    if batch is None and length is None:
        return concat(unstack(x, axis=1), axis=-1)
    return reshape(transpose(x, (0, 2, 1, 3)), (-1 if batch is None else batch, -1 if length is None else length,
                                                heads * dim))


def _large_negative(dtype):
    """A masked score: exp of it underflows to 0 without the infinities of -inf (Keras' value)."""
    return -3e4 if dtype == dtypes.float16 else -1e9


class Sequential(Layer):
    """Applies ``layers`` in order; layers get ``training``, plain callables
    (e.g. ``tfc.nn.relu``) get the tensor only."""

    def __init__(self, layers=None, name=None):
        super().__init__(name)
        self.layers = []
        for layer in layers or []:
            self.add(layer)

    def add(self, layer) -> None:
        if not callable(layer):
            raise TypeError(f"Sequential: item {len(self.layers)} is a {type(layer).__name__} ({layer!r}), "
                            "not a layer or a callable")
        self.layers.append(layer)

    def call(self, inputs, training=False):
        x = inputs
        for layer in self.layers:
            x = layer(x, training=training) if isinstance(layer, Layer) else layer(x)
        return x


__all__ = ["Layer", "Dense", "Flatten", "Dropout", "Conv2D", "MaxPool2D", "AveragePooling2D", "GlobalAveragePooling2D",
           "Embedding", "LayerNormalization", "BatchNormalization", "MultiHeadAttention", "Sequential", "Initializer",
           "Zeros", "Ones", "RandomUniform", "RandomNormal", "GlorotUniform", "GlorotNormal", "HeUniform", "HeNormal",
           "get_initializer", "get_activation"]


def __dir__():
    """Only the public names (not the modules and helpers this one imports)."""
    return list(__all__)
