"""tfc: eager tensors with autodiff, and a compiler for the same code.

The public API is re-exported here; nothing else lives in this module.
"""
from tfc.core.dtypes import (  # noqa: F401
    DType, as_dtype, bool_ as bool, float16, float32, float64, int8, int32, int64, uint8,
)
from tfc.core.tensor import Tensor, constant, convert_to_tensor  # noqa: F401
from tfc.core.variable import Variable  # noqa: F401
from tfc.core import errors  # noqa: F401
from tfc.core.device import device  # noqa: F401
from tfc.core.tape import (  # noqa: F401
    GradientTape, custom_gradient, gradients_function, implicit_gradients,
    implicit_value_and_gradients, stop_gradient, value_and_gradients_function,
)
from tfc import ops as _ops  # noqa: F401  (registers every op)
from tfc.ops.creation import eye, fill, linspace, ones, ones_like, range, zeros, zeros_like  # noqa: F401
from tfc.ops.math import (  # noqa: F401
    abs, add, cast, ceil, clip_by_value, cos, divide, equal, erf, exp, expm1, floor, floordiv,
    greater, greater_equal, identity, integer_pow, less, less_equal, log, log1p, logical_and, logical_not,
    logical_or, maximum, minimum, mod, multiply, negative, not_equal, pow, relu, round, rsqrt,
    sigmoid, sign, sin, softplus, sqrt, square, subtract, tanh, where,
)
from tfc.ops.reductions import (  # noqa: F401
    argmax, argmin, cumsum, reduce_all, reduce_any, reduce_max, reduce_mean, reduce_min, reduce_prod,
    reduce_sum,
)
from tfc.ops.linalg import matmul, tensordot  # noqa: F401
from tfc.ops.einsum import einsum  # noqa: F401
from tfc.ops.sorting import argsort, sort, top_k  # noqa: F401
from tfc.ops.shapes import broadcast_to, expand_dims, reshape, squeeze, transpose  # noqa: F401
from tfc.ops.shapes import concat, gather, one_hot, pad, split, stack, tile, unstack  # noqa: F401
from tfc.ops.control_flow import Assert, TensorArray, cond, print, while_loop  # noqa: F401
from tfc import config, random  # noqa: F401
from tfc import distribute  # noqa: F401,E402  (data-parallel training on MPI)

# Models and training (tfc/nn): the module tfc.nn holds the nn ops; tfc.layers,
# tfc.optimizers and tfc.train are namespaces over the models code.
from tfc import nn  # noqa: E402,F401
from tfc.nn.module import Module  # noqa: E402,F401
from tfc.nn import layers, optimizers  # noqa: E402,F401
from tfc.nn.optimizers import clip_by_global_norm  # noqa: E402,F401
from tfc.nn import train  # noqa: E402,F401
from tfc.frontend import autograph  # noqa: F401,E402

from tfc.frontend.function import TensorSpec, function  # noqa: F401
from tfc.compiler import compile  # noqa: F401,E402,A001
from tfc.export import load, save  # noqa: F401,E402
from tfc import quantization  # noqa: F401,E402  (also registers the quantized ops)
from tfc import data, summary  # noqa: F401,E402

__version__ = "0.1.0"

# What importing the API above loads besides it: the implementation packages and
# tooling modules. dir(tfc) leaves them out (they stay importable by their names).
_IMPLEMENTATION = frozenset({"core", "dialects", "ops", "passes", "backends", "frontend", "compiler", "export",
                             "cli", "compile_cli", "docs"})


def __dir__():
    """The public API only: no implementation packages, no private names."""
    return sorted(n for n in globals() if not n.startswith("_") and n not in _IMPLEMENTATION) + ["__version__"]
