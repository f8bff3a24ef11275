"""assign_add/assign_sub update in place only when no tensor can see the array."""
import numpy as np

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
