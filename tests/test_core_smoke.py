import numpy as np

import tfc
from helpers import check_grad, check_second_grad


def test_matmul_repr():
    m = tfc.matmul([[2.0]], [[2.0]])
    assert repr(m) == "tfc.Tensor([[4.]], shape=(1, 1), dtype=float32)"


def test_grad_mul_broadcast():
    check_grad(lambda a, b: a * b, np.random.rand(3, 4), np.random.rand(4))


def test_second_grad_tanh():
    check_second_grad(tfc.tanh, np.random.rand(5))
