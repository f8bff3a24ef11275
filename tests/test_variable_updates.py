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
