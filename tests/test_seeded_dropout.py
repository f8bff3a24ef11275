"""Seeded random draws in compiled code: a seeded tfc.layers.Dropout draws call
k's mask with seed + k eagerly and compiled alike (its count is a variable the
compiled step reads and advances), and a seeded draw inside differentiated
compiled control flow is replayed for the gradient (a function of its seed).
"""
from __future__ import annotations

import numpy as np
import pytest

import tfc
from tfc.ops.conv import dropout_mask
from tfc.ops.random import seeded_dropout_mask


def _layer_masks(mode, calls=4, seed=7):
    layer = tfc.layers.Dropout(0.5, seed=seed)

    def step(x):
        return layer(x, training=True)

    compiled = tfc.function(step)
    x = tfc.ones([3, 5])
    out = []
    for k in range(calls):
        f = step if mode == "eager" else compiled if mode == "compiled" else (step, compiled)[k % 2]
        out.append(f(x).numpy())
    return out, layer


@pytest.mark.parametrize("mode", ["compiled", "mixed"])
def test_seeded_dropout_layer_compiled_draws_eagers_masks(mode):
    want, _ = _layer_masks("eager")
    got, layer = _layer_masks(mode)
    for k, (w, g) in enumerate(zip(want, got)):
        np.testing.assert_array_equal(g, w, err_msg=f"call {k}")
    assert not np.array_equal(want[0], want[1])  # a new mask on each call
    assert int(layer.seed_calls.numpy()) == 4
    # call k is dropout with seed + k
    x = tfc.ones([3, 5])
    np.testing.assert_array_equal(want[2], (x * dropout_mask(x, 0.5, seed=9)).numpy())


def test_seeded_dropout_layer_counter_is_a_non_trainable_variable():
    layer = tfc.layers.Dropout(0.25, seed=3)
    y = layer(tfc.ones([2, 2]))  # not training: no draw, the count stays
    np.testing.assert_array_equal(y.numpy(), np.ones((2, 2), np.float32))
    assert [p for p, _ in layer.variables_with_paths()] == ["seed_calls"]
    assert layer.trainable_variables == () and int(layer.seed_calls.numpy()) == 0
    assert tfc.layers.Dropout(0.25).variables == ()  # unseeded: none
    with pytest.raises(TypeError, match="seed must be a non-negative int"):
        tfc.layers.Dropout(0.5, seed=-1)


def test_seeded_dropout_layer_in_a_compiled_training_step():
    """The gradient goes through the call's own mask, eager and compiled alike."""
    def run(compiled):
        dense, drop = tfc.layers.Dense(4, kernel_initializer=tfc.layers.GlorotUniform(seed=1)), \
            tfc.layers.Dropout(0.5, seed=5)

        def step(x):
            with tfc.GradientTape() as t:
                loss = tfc.reduce_sum(drop(dense(x), training=True) ** 2)
            return loss, t.gradient(loss, dense.kernel)

        f = tfc.function(step) if compiled else step
        x = tfc.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
        return [[v.numpy() for v in f(x)] for _ in range(3)]
    for e, c in zip(run(False), run(True)):
        for a, b in zip(e, c):
            np.testing.assert_array_equal(b, a)


def test_seeded_dropout_mask_op():
    x = tfc.ones([5, 7], tfc.float64)
    want = dropout_mask(x, 0.3, seed=2**64 - 1).numpy()
    np.testing.assert_array_equal(seeded_dropout_mask(x, tfc.constant(np.int64(-1)), 0.3).numpy(), want)
    f = tfc.function(lambda x, s: seeded_dropout_mask(x, s, 0.3), autograph=False)
    np.testing.assert_array_equal(f(x, tfc.constant(np.int64(-1))).numpy(), want)
    with pytest.raises(TypeError, match="int64"):
        seeded_dropout_mask(x, tfc.constant(np.int32(1)), 0.3)


def _dropout_loop(x):
    with tfc.GradientTape() as t:
        t.watch(x)
        y = x
        i = tfc.constant(0)
        while i < 3:
            y = tfc.nn.dropout(y * 1.5, 0.5, seed=11) + tfc.random.uniform((4,), seed=3)
            i += 1
        if tfc.reduce_sum(y) > 0.0:
            y = y * tfc.random.normal((4,), seed=4)
        loss = tfc.reduce_sum(y * y)
    return y, t.gradient(loss, x)


def test_seeded_draws_in_differentiated_control_flow_are_replayed():
    x = tfc.constant(np.arange(4, dtype=np.float32) + 1)
    want = _dropout_loop(x)
    got = tfc.function(_dropout_loop)(x)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert np.count_nonzero(want[1].numpy()) not in (0, 4)  # some rows dropped, some kept


def test_seeded_draw_in_a_differentiated_call():
    f = tfc.function(lambda x: x * tfc.random.uniform((2,), seed=1), autograph=False)
    x = tfc.constant(np.float32([1.0, 2.0]))
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), tfc.random.uniform((2,), seed=1).numpy())


def test_seeded_dropout_layer_in_a_call_under_an_eager_tape():
    """The backward function replays the call with the count it read: the
    gradient goes through that call's mask, as eagerly."""
    def grads(compiled):
        layer = tfc.layers.Dropout(0.5, seed=3)

        def f(x):
            return layer(x, training=True) * x

        g = tfc.function(f) if compiled else f
        out = []
        for _ in range(3):
            x = tfc.constant(np.arange(8, dtype=np.float32))
            with tfc.GradientTape() as t:
                t.watch(x)
                y = tfc.reduce_sum(g(x))
            out.append(t.gradient(y, x).numpy())
        return out
    want = grads(False)
    assert not np.array_equal(want[0], want[1])
    for w, g in zip(want, grads(True)):
        np.testing.assert_array_equal(g, w)


def test_seeded_dropout_layer_in_a_tensor_loop():
    """Each trip of a compiled tensor loop is a call: it reads and advances the count."""
    def run(compiled):
        layer = tfc.layers.Dropout(0.5, seed=9)

        def f(x, n):
            y = x
            for _ in tfc.range(n):
                y = layer(y, training=True) + 1.0
            return y

        g = tfc.function(f) if compiled else f
        return [g(tfc.ones([6]), tfc.constant(3)).numpy() for _ in range(2)], int(layer.seed_calls.numpy())
    (want, n_eager), (got, n_compiled) = run(False), run(True)
    assert n_eager == n_compiled == 6
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def _dense_then_dropout(seed):
    model = tfc.layers.Sequential([tfc.layers.Dense(3, kernel_initializer=tfc.layers.GlorotUniform(seed=2)),
                                   tfc.layers.Dropout(0.5, seed=seed)])
    model(tfc.ones([2, 4]), training=True)
    return model


def test_checkpoint_written_before_seed_calls_restores(tmp_path):
    """A checkpoint of a seeded Dropout's model from before the layer had its
    counter (its keys are those of an unseeded one) restores every weight; the
    counter keeps its value, as the Python count it replaces was never saved."""
    old = _dense_then_dropout(seed=None)
    path = tfc.train.Checkpoint(model=old).save(str(tmp_path / "old"))
    model = _dense_then_dropout(seed=4)
    tfc.train.Checkpoint(model=model).restore(path).assert_consumed()
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), old.layers[0].kernel.numpy())
    assert int(model.layers[1].seed_calls.numpy()) == 1
    # a checkpoint that has the counter restores it; a missing trainable weight is still an error
    path = tfc.train.Checkpoint(model=model).save(str(tmp_path / "new"))
    fresh = _dense_then_dropout(seed=4)
    fresh(tfc.ones([2, 4]), training=True)
    tfc.train.Checkpoint(model=fresh).restore(path)
    assert int(fresh.layers[1].seed_calls.numpy()) == 1
    unbuilt = tfc.layers.Sequential([tfc.layers.Dense(3), tfc.layers.Dropout(0.5, seed=4)])
    status = tfc.train.Checkpoint(model=unbuilt).restore(path)
    unbuilt(tfc.ones([2, 4]))
    status.assert_consumed()
    assert int(unbuilt.layers[1].seed_calls.numpy()) == 1
    other = tfc.layers.Sequential([tfc.layers.Dense(3), tfc.layers.Dense(3)])
    other(tfc.ones([2, 4]))
    with pytest.raises(ValueError, match="missing from the checkpoint: model/layers/1/kernel"):
        tfc.train.Checkpoint(model=other).restore(path)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_seeded_dropout_refused_input_leaves_the_count(compiled):
    """Integer inputs: a TypeError naming the layer and the user's line; the
    count does not advance (the next call draws call 0's mask)."""
    layer = tfc.layers.Dropout(0.5, seed=1)
    call = tfc.function(lambda x: layer(x, training=True)) if compiled else (lambda x: layer(x, training=True))
    layer(tfc.ones([2]))  # built, the count 0
    with pytest.raises(TypeError, match="dropout: the inputs have dtype int32; dropout needs floats") as info:
        call(tfc.constant([1, 2]))
    assert any(__file__ in note for note in getattr(info.value, "__notes__", []))
    assert int(layer.seed_calls.numpy()) == 0


def test_seeded_dropout_mask_refuses_a_rate_that_is_not_a_number():
    with pytest.raises(TypeError, match="seeded_dropout_mask: rate must be a number, got 'a'"):
        seeded_dropout_mask(tfc.ones([2]), tfc.constant(np.int64(1)), "a")
    got = seeded_dropout_mask(tfc.ones([8]), tfc.constant(np.int64(1)), tfc.constant(0.5))  # a scalar tensor
    np.testing.assert_array_equal(got.numpy(), dropout_mask(tfc.ones([8]), 0.5, seed=1).numpy())
