"""Shapes and sizes the user passes are ints (numpy integers too), never
silently truncated floats, bools or negative sizes; the error names the
argument and the user's line."""
import numpy as np
import pytest

import tfc

x6 = tfc.zeros((6,))

# (op called with a given shape, what the error names)
SHAPED = {
    "zeros": lambda s: tfc.zeros(s),
    "ones": lambda s: tfc.ones(s),
    "fill": lambda s: tfc.fill(s, 1.0),
    "uniform": lambda s: tfc.random.uniform(s),
    "normal": lambda s: tfc.random.normal(s),
    "constant": lambda s: tfc.constant(1.0, shape=s),
    "broadcast_to": lambda s: tfc.broadcast_to(tfc.constant(1.0), s),
    "TensorSpec": lambda s: tfc.TensorSpec(s),
}


@pytest.mark.parametrize("op", SHAPED)
@pytest.mark.parametrize("shape", [(2.5, 3), (2.0, 3), (2, 3.7), np.array([2.5, 3.0])])
def test_float_dimension_is_a_type_error(op, shape):
    with pytest.raises(TypeError, match=rf"{op}: shape\[\d\] must be an int, got float") as info:
        SHAPED[op](shape)
    assert any(__file__ in n for n in info.value.__notes__)  # the user's line


@pytest.mark.parametrize("op", SHAPED)
@pytest.mark.parametrize("shape", [(True, 3), (2, np.bool_(False))])
def test_bool_dimension_is_a_type_error(op, shape):
    with pytest.raises(TypeError, match=rf"{op}: shape\[\d\] must be an int, got the bool"):
        SHAPED[op](shape)


@pytest.mark.parametrize("op", SHAPED)
@pytest.mark.parametrize("shape", [(-3,), (2, -1), -1])
def test_negative_dimension_is_a_value_error(op, shape):
    with pytest.raises(ValueError, match=rf"{op}: shape\[\d\] must be >= 0, got -\d") as info:
        SHAPED[op](shape)
    assert any(__file__ in n for n in info.value.__notes__)


@pytest.mark.parametrize("op", SHAPED)
@pytest.mark.parametrize("shape", [(2, 3), (np.int64(2), np.int32(3)), [2, 3], np.array([2, 3])])
def test_integer_dimensions_accepted(op, shape):
    out = SHAPED[op](shape)
    assert tuple(out.shape) == (2, 3)


def test_tensor_spec_none_dimension():
    assert tfc.TensorSpec((None, np.int64(4))).shape == (None, 4)
    with pytest.raises(TypeError, match="zeros: shape"):
        tfc.zeros((None, 4))  # None is for signatures only


def test_tensor_spec_summary_never_negative():
    with pytest.raises(ValueError, match="TensorSpec: shape"):
        tfc.function(lambda v: v * 2.0, input_signature=[tfc.TensorSpec((-3,))])


@pytest.mark.parametrize("call, err, message", [
    (lambda: tfc.reshape(x6, (2.0, 3)), TypeError, r"reshape: shape\[0\] must be an int"),
    (lambda: tfc.reshape(x6, (-2, -3)), ValueError, r"reshape: shape\[0\] must be >= -1"),
    (lambda: tfc.tile(x6, (1.5,)), TypeError, r"tile: multiples\[0\] must be an int"),
    (lambda: tfc.tile(x6, (-1,)), ValueError, r"tile: multiples\[0\] must be >= 0"),
    (lambda: tfc.transpose(tfc.zeros((2, 3)), (1.0, 0)), TypeError, r"transpose: perm\[0\] must be an int"),
    (lambda: tfc.eye(2.5), TypeError, "eye: num_rows must be an int, got float"),
    (lambda: tfc.eye(2, True), TypeError, "eye: num_columns must be an int, got the bool"),
    (lambda: tfc.linspace(0.0, 1.0, 3.5), TypeError, "linspace: num must be an int, got float"),
    (lambda: tfc.zeros("23"), TypeError, "zeros: shape must be a sequence of ints"),
    (lambda: tfc.unstack(tfc.zeros((2, 3)), num=2.5), TypeError, "unstack: num must be an int, got float"),
    (lambda: tfc.TensorArray(tfc.float32, size=2.5), TypeError, "TensorArray: size must be an int, got float"),
    (lambda: tfc.TensorArray(tfc.float32, size=-1), ValueError, "TensorArray: size must be >= 0"),
    (lambda: tfc.nn.dropout(tfc.ones((2, 3)), 0.5, noise_shape=(2.0, None)), TypeError,
     r"dropout: noise_shape\[0\] must be an int, got float"),
])
def test_other_size_arguments(call, err, message):
    with pytest.raises(err, match=message):
        call()


def test_valid_sizes_match_numpy():
    assert tfc.reshape(x6, (np.int64(-1), 2)).shape == (3, 2)
    np.testing.assert_array_equal(tfc.eye(np.int32(2), 3).numpy(), np.eye(2, 3))
    np.testing.assert_array_equal(tfc.linspace(0.0, 1.0, np.int64(5)).numpy(), np.linspace(0, 1, 5, dtype=np.float32))
    assert tfc.zeros(tfc.constant([2, 1])).shape == (2, 1)
