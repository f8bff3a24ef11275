"""Random tensors: stateful ops (never folded or merged).

An op with a ``seed`` gives the same values on every call (a fresh Philox
generator keyed by the seed); without one, values come from the global stream,
which ``set_seed`` restarts. The global seed does not change seeded ops.
"""
from __future__ import annotations

import numpy as np

from tfc.core import dtypes
from tfc.core.registry import Spec, declare
from tfc.core.tensor import Tensor
from tfc.ops.creation import as_shape

_GLOBAL = [np.random.Generator(np.random.Philox())]  # seeded from OS entropy until set_seed


def set_seed(seed) -> None:
    """Restart the global random stream from ``seed`` (None: fresh OS entropy)."""
    _GLOBAL[0] = np.random.Generator(np.random.Philox(None if seed is None else _seed_value("set_seed", seed)))


def generator(seed=None) -> np.random.Generator:
    """The generator for a draw: a fresh one keyed by ``seed``, else the global stream."""
    return _GLOBAL[0] if seed is None else np.random.Generator(np.random.Philox(seed))


def _seed_value(op_name, seed):
    if seed is None:
        return None
    if isinstance(seed, Tensor):
        seed = seed.numpy().item()
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise TypeError(f"{op_name}: seed must be a non-negative int or None, got {seed!r}")
    return int(seed)


def _scalar(op_name, v, what):
    if isinstance(v, Tensor):
        if v.size != 1:
            raise ValueError(f"{op_name}: {what} must be a scalar, got shape {v.shape}")
        v = v.numpy().item()
    if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
        raise TypeError(f"{op_name}: {what} must be a number, got {v!r}")
    return v.item() if isinstance(v, np.generic) else v


def _uniform_infer(op, shape, dtype, minval, maxval, seed) -> Spec:
    if dtype.is_bool:
        raise TypeError("uniform: dtype bool is not supported; expected a float or integer dtype")
    if dtype.is_integer and maxval is None:
        raise ValueError(f"uniform: maxval must be given for integer dtype {dtype.name}")
    hi = 1 if maxval is None else maxval
    if not minval < hi:
        raise ValueError(f"uniform: minval {minval} must be less than maxval {hi}")
    return Spec(shape, dtype)


def _uniform_kernel(shape, dtype, minval, maxval, seed):
    rng = generator(seed)
    np_dt = dtype.as_numpy_dtype
    if dtype.is_integer:
        return rng.integers(int(minval), int(maxval), size=shape, dtype=np_dt)
    hi = 1.0 if maxval is None else float(maxval)
    out = (rng.random(shape) * (hi - minval) + minval).astype(np_dt)
    # Rounding to a narrow float can land on maxval; keep the interval half-open.
    return np.minimum(out, np.nextafter(np_dt.type(hi), np_dt.type(minval)))


@declare(kernel=_uniform_kernel, infer=_uniform_infer, stateful=True,
         attrs={"shape": "ints", "dtype": "dtype", "minval": "float", "maxval": "float?", "seed": "seed"})
def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None):
    """Values drawn uniformly from [minval, maxval) (maxval defaults to 1 for floats
    and is required for integer dtypes)."""
    return (), {
        "shape": as_shape("uniform", shape), "dtype": dtypes.as_dtype(dtype),
        "minval": _scalar("uniform", minval, "minval"),
        "maxval": None if maxval is None else _scalar("uniform", maxval, "maxval"),
        "seed": _seed_value("uniform", seed),
    }


def _normal_infer(op, shape, dtype, mean, stddev, seed) -> Spec:
    if not dtype.is_floating:
        raise TypeError(f"normal: dtype {dtype.name} is not supported; expected float16, float32 or float64")
    if stddev < 0:
        raise ValueError(f"normal: stddev must be >= 0, got {stddev}")
    return Spec(shape, dtype)


def _normal_kernel(shape, dtype, mean, stddev, seed):
    return (generator(seed).standard_normal(shape) * stddev + mean).astype(dtype.as_numpy_dtype)


@declare(kernel=_normal_kernel, infer=_normal_infer, stateful=True,
         attrs={"shape": "ints", "dtype": "dtype", "mean": "float", "stddev": "float", "seed": "seed"})
def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None):
    """Values drawn from a normal distribution with ``mean`` and ``stddev``."""
    return (), {
        "shape": as_shape("normal", shape), "dtype": dtypes.as_dtype(dtype),
        "mean": float(_scalar("normal", mean, "mean")), "stddev": float(_scalar("normal", stddev, "stddev")),
        "seed": _seed_value("normal", seed),
    }


__all__ = ["uniform", "normal", "set_seed"]
