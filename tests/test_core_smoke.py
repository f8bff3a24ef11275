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


def test_eager_inference_cache_keys_on_shapes_dtypes_and_attrs():
    import numpy as np
    import pytest

    x = tfc.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert tfc.reduce_sum(x, axis=0).shape == (3,)
    assert tfc.reduce_sum(x, axis=1).shape == (2,)  # same input, other attrs
    assert tfc.reduce_sum(tfc.constant(np.ones((4, 5), np.float32)), axis=0).shape == (5,)
    assert tfc.add(x, x).dtype == tfc.float32 and tfc.add(tfc.cast(x, tfc.int32), 1).dtype == tfc.int32
    for _ in range(2):  # an error is raised again, never remembered as a result
        with pytest.raises(ValueError, match="add"):
            tfc.add(x, tfc.constant(np.ones((4,), np.float32)))
