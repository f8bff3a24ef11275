"""``tfc.nn``: the neural-network ops (images are NHWC), and the package of the
models code: module.py (Module), layers.py, optimizers.py, schedules.py, checkpoint.py
(dir(tfc.nn) lists the ops only)."""
from tfc.ops.math import relu, sigmoid, softplus, tanh  # noqa: F401
from tfc.ops.nn import (  # noqa: F401
    embedding_lookup, gelu, l2_normalize, layer_norm, log_softmax, moments, sigmoid_cross_entropy_with_logits, silu,
    softmax, softmax_cross_entropy_with_logits, sparse_softmax_cross_entropy_with_logits,
)
from tfc.ops.conv import avg_pool2d, conv2d, dropout, max_pool2d  # noqa: F401

from types import ModuleType as _ModuleType  # noqa: E402


def __dir__():
    """The nn ops only: not the models-code modules of this package (tfc.layers,
    tfc.optimizers and tfc.train are their namespaces) nor imported helpers."""
    return sorted(n for n, v in globals().items() if not n.startswith("_") and not isinstance(v, _ModuleType))
