"""softmax/log_softmax over an axis of size zero return an empty tensor of the
same shape (as TensorFlow), eagerly, compiled and under a tape."""
import numpy as np
import pytest

import tfc

CASES = [((2, 0), -1), ((0, 3), 0), ((2, 0, 3), 1), ((0,), 0), ((0, 0), 1)]


@pytest.mark.parametrize("op", [tfc.nn.softmax, tfc.nn.log_softmax])
@pytest.mark.parametrize("shape, axis", CASES)
def test_empty_axis(op, shape, axis):
    x = tfc.zeros(shape)
    assert op(x, axis=axis).shape == shape
    assert op(x, axis=axis).dtype == tfc.float32
    static = tfc.function(lambda x: op(x, axis=axis), autograph=False)
    dynamic = tfc.function(lambda x: op(x, axis=axis), autograph=False,
                           input_signature=[tfc.TensorSpec((None,) * len(shape))])
    assert static(x).shape == shape
    assert dynamic(x).shape == shape
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = tfc.reduce_sum(op(x, axis=axis))
    assert tape.gradient(y, x).shape == shape
    assert y.numpy() == 0.0


@pytest.mark.parametrize("op", [tfc.nn.softmax, tfc.nn.log_softmax])
def test_non_empty_rows_unchanged(op):
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    z = x - x.max(axis=1, keepdims=True)
    ref = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(op(tfc.constant(x)).numpy(), ref if op is tfc.nn.softmax else np.log(ref), rtol=1e-6)
