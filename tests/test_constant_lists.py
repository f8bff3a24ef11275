"""A nested list holding tensors becomes a tensor of their dtype (TensorFlow's
packing), not the Python-number default: float64 tensors stay float64."""
import numpy as np
import pytest

import tfc


@pytest.mark.parametrize("dt", [tfc.float16, tfc.float64, tfc.int64, tfc.int8, tfc.uint8, tfc.bool])
def test_a_list_of_tensors_keeps_their_dtype(dt):
    a, b = (tfc.constant(np.array(v).astype(dt.as_numpy_dtype)) for v in ([1, 0], [0, 1]))
    for make in (tfc.constant, tfc.convert_to_tensor):
        got = make([a, b])
        assert got.dtype == dt and np.array_equal(got.numpy(), np.stack([a.numpy(), b.numpy()]))


def test_python_numbers_beside_tensors_take_the_tensors_dtype():
    t = tfc.constant(np.float64(0.1))
    got = tfc.constant([[t, 0.2], [0.3, t]])
    assert got.dtype == tfc.float64 and np.array_equal(got.numpy(), np.array([[0.1, 0.2], [0.3, 0.1]]))
    assert tfc.constant([tfc.constant(3, tfc.int64), 2**40]).numpy()[1] == 2**40


def test_an_explicit_dtype_still_wins_and_tensors_of_two_dtypes_are_refused():
    t = tfc.constant(np.float64(1.5))
    assert tfc.constant([t, t], tfc.float32).dtype == tfc.float32
    with pytest.raises(TypeError, match="float32 and float64"):
        tfc.constant([t, tfc.constant(1.0)])
    with pytest.raises(TypeError, match="fraction"):
        tfc.constant([tfc.constant(3, tfc.int64), 2.5])
