"""A numpy float64 scalar widening a float32 tensor (NumPy 2 promotion) keeps
NumPy's float64 result but warns (PrecisionWarning) at the user's line."""
import warnings

import numpy as np
import pytest

import tfc
from tfc.core.dtypes import PrecisionWarning


def test_numpy_float64_scalar_warns_at_user_line():
    x = tfc.constant(np.ones(3, np.float32))
    with pytest.warns(PrecisionWarning, match=r"multiply: the numpy float64 scalar .* widens a float32 tensor to "
                                              r"float64 .*float\(\.\.\.\)") as record:
        y = np.sqrt(2.0) * x
    assert y.dtype == tfc.float64
    assert record[0].filename == __file__


def test_compiled_function_warns_while_tracing():
    x = tfc.constant(np.ones(3, np.float32))
    with pytest.warns(PrecisionWarning, match="add"):
        y = tfc.function(lambda a: a + np.float64(1.0))(x)
    assert y.dtype == tfc.float64


@pytest.mark.parametrize("other", [2.5, np.float32(2.5)])
def test_no_warning_without_widening(other):
    x = tfc.constant(np.ones(3, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        assert (x * other).dtype == tfc.float32
        assert (tfc.constant(np.ones(2, np.float64)) * np.float64(2.0)).dtype == tfc.float64
        # a float meeting an int tensor is float64 either way (a Python float too)
        assert (tfc.constant(np.ones(2, np.int32)) * np.float64(2.5)).dtype == tfc.float64
