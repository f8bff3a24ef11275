"""Numpy references for the optimizer tests (test_models.py, test_optimizers.py)."""
import numpy as np


def grad_sequence(rng, shape, steps=4):
    """``steps`` float32 gradients of ``shape``."""
    return [rng.normal(size=shape).astype(np.float32) for _ in range(steps)]


def numpy_adam(p0, grads, lr, b1, b2, eps, weight_decay=0.0):
    """Keras' Adam in float64 (AdamW: ``p -= p * weight_decay * lr`` before each
    update): ``(param, m, v)`` after a step with each of ``grads``."""
    p, m, v = p0.astype(np.float64), 0.0, 0.0
    for t, g in enumerate(grads, 1):
        if weight_decay:
            p = p - p * weight_decay * lr  # decoupled: the plain learning rate, before Adam's step
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        p = p - lr_t * m / (np.sqrt(v) + eps)
    return p, m, v
