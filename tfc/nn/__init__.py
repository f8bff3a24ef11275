"""``tfc.nn``: the neural-network ops (images are NHWC), and the package of the
models code: module.py (Module), layers.py, optimizers.py, checkpoint.py."""
from tfc.ops.math import relu, sigmoid, softplus, tanh  # noqa: F401
from tfc.ops.nn import (  # noqa: F401
    embedding_lookup, gelu, l2_normalize, layer_norm, log_softmax, moments, sigmoid_cross_entropy_with_logits, silu,
    softmax, softmax_cross_entropy_with_logits, sparse_softmax_cross_entropy_with_logits,
)
from tfc.ops.conv import avg_pool2d, conv2d, dropout, max_pool2d  # noqa: F401
