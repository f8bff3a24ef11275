"""assign_add/assign_sub update in place only when no tensor can see the array."""
import numpy as np
import pytest

import tfc


def test_in_place_when_unshared():
    v = tfc.Variable(np.ones(3, np.float32))
    before = id(v._value)
    v.assign_sub(tfc.constant(np.full(3, 0.5, np.float32)))
    assert id(v._value) == before
    np.testing.assert_array_equal(v.numpy(), [0.5, 0.5, 0.5])


def test_read_value_keeps_its_value():
    v = tfc.Variable(np.ones(3, np.float32))
    r = v.read_value()
    v.assign_add(tfc.constant(np.ones(3, np.float32)))
    np.testing.assert_array_equal(r.numpy(), [1, 1, 1])
    np.testing.assert_array_equal(v.numpy(), [2, 2, 2])


def test_tape_snapshot_survives_update():
    v = tfc.Variable(np.array([3.0], np.float32))
    with tfc.GradientTape() as tape:
        y = v * v
    v.assign_sub(tfc.constant(np.array([1.0], np.float32)))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [6.0])  # at v = 3, not 2


def test_python_and_broadcast_deltas_still_work():
    v = tfc.Variable(np.ones((2, 2), np.float32))
    v.assign_add(1.0)
    v.assign_sub(tfc.constant(np.float32(0.5)))
    np.testing.assert_array_equal(v.numpy(), np.full((2, 2), 1.5, np.float32))


def test_compiled_kernel_never_overwrites_an_assigned_buffer():
    """A kernel's result assigned to a variable and dying in a later kernel:
    that kernel must not write in place into the array the variable now holds."""
    def double(x):
        return x * 2.0

    def plus_one(x):
        return x + 1.0

    for body in (double, tfc.exp, plus_one):
        v = tfc.Variable(np.zeros(64, np.float32))

        def f(x, r):
            m = body(x)
            v.assign(m)
            return v.read_value() + r + m

        x = tfc.constant(np.linspace(0, 1, 64, dtype=np.float32))
        r = tfc.constant(np.full(64, 10, np.float32))
        eager_out, eager_v = f(x, r).numpy(), v.numpy().copy()
        v.assign(np.zeros(64, np.float32))
        compiled_out = tfc.function(f)(x, r).numpy()
        np.testing.assert_array_equal(compiled_out, eager_out)
        np.testing.assert_array_equal(v.numpy(), eager_v)


def test_variable_from_a_traced_tensor_is_a_clear_error_and_concrete_ones_work():
    @tfc.function
    def make(x):
        return tfc.Variable(x) * 2

    with pytest.raises(ValueError, match="cannot make variables from its own tensors"):
        make(tfc.ones([2]))
    layer = tfc.layers.Dense(3)  # built lazily while tracing: its initial values are concrete
    out = tfc.function(lambda x: layer(x))(tfc.ones([1, 4]))
    np.testing.assert_allclose(out.numpy(), layer(tfc.ones([1, 4])).numpy(), rtol=1e-6)


# assign's dtype rule (TensorFlow's IsCompatible, pywrap_tensor.cc): ints to any int, ints
# and floats to any float; never floats to ints, nor bools to or from numbers. TensorFlow
# 2.21 force-casts numpy arrays (1.5 into an int variable is 1); tfc refuses those too.
REFUSED = [  # (variable's initial value, value assigned)
    ([1, 2], np.array([1.5, 2.0])),  # float64 array into int32: would truncate
    ([1, 2], np.array([1.0, 2.0], np.float32)),  # even when integral
    ([1, 2], np.float64(1.0)),
    ([1.0, 2.0], np.array([True, False])),
    ([True, False], np.array([1, 0])),
    ([1.0, 2.0], tfc.constant([1, 2])),  # a tensor must have the dtype
    ([1, 2], tfc.constant([1, 2], tfc.int64)),
]


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
@pytest.mark.parametrize("init, value", REFUSED)
def test_assign_refuses_a_dtype_that_does_not_convert(method, init, value):
    v = tfc.Variable(init)
    before = v.numpy()
    with pytest.raises(TypeError, match=rf"{v.name}\.{method}: cannot assign a value of dtype \w+ to a variable "
                                        rf"of dtype {v.dtype.name}") as info:
        getattr(v, method)(value)
    assert any(__file__ in n for n in info.value.__notes__)  # the user's line
    np.testing.assert_array_equal(v.numpy(), before)  # unchanged


@pytest.mark.parametrize("init, value", REFUSED[:4])
def test_assign_in_a_function_refuses_the_same(init, value):
    v = tfc.Variable(init)
    with pytest.raises(TypeError, match="cannot assign a value of dtype"):
        tfc.function(lambda: v.assign(value))()


ACCEPTED = [  # converted (as TensorFlow 2.21 does), checked against numpy
    ([1.0, 2.0], np.array([3, 4], np.int64)),
    ([1.0, 2.0], np.array([0.1, 4.0], np.float64)),
    ([1.0, 2.0], [3, 4]),  # Python numbers convert
    ([1.0, 2.0], np.array([5, 6], np.int32)),
    ([1, 2], np.array([3, 4], np.int8)),
    ([1, 2], [3.0, 4.0]),  # a Python float without a fraction
]


@pytest.mark.parametrize("init, value", ACCEPTED)
def test_assign_converts_what_tensorflow_converts(init, value):
    v = tfc.Variable(init)
    dt = v.numpy().dtype
    v.assign(value)
    np.testing.assert_array_equal(v.numpy(), np.broadcast_to(np.asarray(value).astype(dt), (2,)))
    v.assign_add(value)
    np.testing.assert_array_equal(v.numpy(), 2 * np.broadcast_to(np.asarray(value).astype(dt), (2,)))
    v.assign_sub(value)
    np.testing.assert_array_equal(v.numpy(), np.broadcast_to(np.asarray(value).astype(dt), (2,)))
    assert v.numpy().dtype == dt


def test_python_float_with_a_fraction_into_an_int_variable():
    v = tfc.Variable([1, 2])
    with pytest.raises(TypeError, match="losing the fraction") as info:
        v.assign([1.5, 2.0])
    assert any(__file__ in n for n in info.value.__notes__)
    np.testing.assert_array_equal(v.numpy(), [1, 2])


def test_no_in_place_update_through_a_view_of_another_tensor():
    """A variable assigned a slice holds a view of that tensor's array: updating
    it in place would change the tensor (found by review)."""
    t = tfc.constant(np.arange(6, dtype=np.float32))
    v = tfc.Variable(np.zeros(3, np.float32))
    v.assign(t[0:3])
    v.assign_sub(tfc.constant(np.ones(3, np.float32)))
    v.assign_add(tfc.constant(np.ones(3, np.float32)))
    np.testing.assert_array_equal(t.numpy(), np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(v.numpy(), np.arange(3, dtype=np.float32))
