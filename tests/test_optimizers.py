"""Optimizers of issue 22 (RMSprop, AdamW, SGD's Nesterov form under tfc.function),
tfc.clip_by_global_norm and the learning-rate schedules, each against numpy,
eagerly and in compiled training steps."""
import math

import numpy as np
import pytest

import tfc

from tests.helpers import check_grad
from tests.optimizer_reference import grad_sequence, numpy_adam

schedules = tfc.optimizers.schedules


@pytest.mark.parametrize("momentum, centered", [(0.0, False), (0.8, False), (0.0, True), (0.5, True)])
def test_rmsprop_matches_numpy(rng, momentum, centered):
    w0 = rng.normal(size=(3, 2)).astype(np.float32)
    grads = grad_sequence(rng, (3, 2), 4)
    lr, rho, eps = 0.05, 0.85, 1e-7
    var = tfc.Variable(w0)
    opt = tfc.optimizers.RMSprop(lr, rho=rho, momentum=momentum, epsilon=eps, centered=centered)
    w, vel, avg, mom = w0.astype(np.float64), 0.0, 0.0, 0.0
    for g in grads:
        opt.apply_gradients([(tfc.constant(g), var)])
        vel = rho * vel + (1 - rho) * g * g
        if centered:
            avg = rho * avg + (1 - rho) * g
        inc = lr * g / np.sqrt(vel - avg * avg + eps)
        if momentum:
            mom = momentum * mom + inc
            w = w - mom
        else:
            w = w - inc
    np.testing.assert_allclose(var.numpy(), w, rtol=1e-5, atol=1e-6)
    expected_slots = ["velocity"] + ["momentum"] * bool(momentum) + ["average_gradient"] * centered
    assert [s for _, s, _ in opt.slot_variables()] == expected_slots
    np.testing.assert_allclose(opt.get_slot(var, "velocity").numpy(), vel, rtol=1e-5)


def test_adamw_matches_numpy_and_excludes_variables(rng):
    w0 = rng.normal(size=(4,)).astype(np.float32)
    b0 = rng.normal(size=(2,)).astype(np.float32)
    gw, gb = grad_sequence(rng, (4,), 4), grad_sequence(rng, (2,), 4)
    lr, wd, b1, b2, eps = 0.01, 0.1, 0.9, 0.999, 1e-7
    w, b = tfc.Variable(w0, name="dense/kernel"), tfc.Variable(b0, name="dense/bias")
    opt = tfc.optimizers.AdamW(learning_rate=lr, weight_decay=wd)
    opt.exclude_from_weight_decay(var_names=["bias"])
    for g_w, g_b in zip(gw, gb):
        opt.apply_gradients([(tfc.constant(g_w), w), (tfc.constant(g_b), b)])
    # the bias is excluded from the decay
    ref = {"w": numpy_adam(w0, gw, lr, b1, b2, eps, weight_decay=wd), "b": numpy_adam(b0, gb, lr, b1, b2, eps)}
    np.testing.assert_allclose(w.numpy(), ref["w"][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.numpy(), ref["b"][0], rtol=1e-5, atol=1e-6)
    # with weight decay 0 AdamW is Adam exactly
    x, y = tfc.Variable(w0), tfc.Variable(w0)
    adamw, adam = tfc.optimizers.AdamW(0.01, weight_decay=0.0), tfc.optimizers.Adam(0.01)
    for g in gw:
        adamw.apply_gradients([(tfc.constant(g), x)])
        adam.apply_gradients([(tfc.constant(g), y)])
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    with pytest.raises(ValueError, match="weight_decay"):
        tfc.optimizers.AdamW(weight_decay=-1.0)


def test_sgd_weight_decay_and_excluded_variable():
    w, b = tfc.Variable([2.0]), tfc.Variable([2.0])
    opt = tfc.optimizers.SGD(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_list=[b])
    opt.apply_gradients([(tfc.constant([1.0]), w), (tfc.constant([1.0]), b)])
    np.testing.assert_allclose(w.numpy(), [2.0 - 2.0 * 0.5 * 0.1 - 0.1], rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), [2.0 - 0.1], rtol=1e-6)


# -- clip_by_global_norm ----------------------------------------------------------

def test_clip_by_global_norm_matches_tensorflow_s_definition(rng):
    a, b = rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(4,)).astype(np.float32)
    norm = np.sqrt(np.sum(a.astype(np.float64) ** 2) + np.sum(b.astype(np.float64) ** 2))
    for clip in (norm / 3, norm * 2):
        clipped, got_norm = tfc.clip_by_global_norm([tfc.constant(a), None, tfc.constant(b)], clip)
        assert clipped[1] is None
        assert clipped[0].dtype == tfc.float32  # a numpy float64 clip_norm keeps the tensors' dtype
        np.testing.assert_allclose(float(got_norm), norm, rtol=1e-6)
        scale = clip / max(norm, clip)
        np.testing.assert_allclose(clipped[0].numpy(), a * scale, rtol=1e-5)
        np.testing.assert_allclose(clipped[2].numpy(), b * scale, rtol=1e-5)
    # use_norm: the given norm, not the tensors'
    clipped, got = tfc.clip_by_global_norm([tfc.constant(a)], 1.0, use_norm=4.0)
    np.testing.assert_allclose(clipped[0].numpy(), a / 4, rtol=1e-6)
    assert float(got) == 4.0
    # an infinite norm gives NaNs, as in TensorFlow
    with np.errstate(invalid="ignore", over="ignore"):
        clipped, got = tfc.clip_by_global_norm([tfc.constant([np.inf, 1.0])], 1.0)
    assert math.isinf(float(got)) and np.all(np.isnan(clipped[0].numpy()))
    with pytest.raises(ValueError, match="clip_norm must be > 0"):
        tfc.clip_by_global_norm([tfc.constant(a)], 0.0)
    with pytest.raises(TypeError, match="sequence of tensors"):
        tfc.clip_by_global_norm(tfc.constant(a), 1.0)


def test_clip_by_global_norm_gradient_and_compiled(rng):
    a, b = rng.normal(size=(2, 2)), rng.normal(size=(3,))
    check_grad(lambda x, y: tfc.clip_by_global_norm([x, y], 1.5)[0][0] * 3.0
               + tfc.reduce_sum(tfc.clip_by_global_norm([x, y], 1.5)[0][1]), a, b)

    def clip(x, y):
        (cx, cy), n = tfc.clip_by_global_norm([x, y], 1.0)
        return cx, cy, n

    args = tfc.constant(a.astype(np.float32)), tfc.constant(b.astype(np.float32))
    for e, c in zip(clip(*args), tfc.function(clip)(*args)):
        np.testing.assert_array_equal(c.numpy(), e.numpy())


# -- schedules ---------------------------------------------------------------------

def _cosine(step, initial, decay_steps, alpha=0.0, target=None, warmup=0):
    """Keras' CosineDecay, written out in float64."""
    if target is None:
        s = min(step, decay_steps)
        return initial * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / decay_steps)) + alpha)
    s = min(step, decay_steps + warmup)
    if s < warmup:
        return (target - initial) * s / warmup + initial
    return target * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * (s - warmup) / decay_steps)) + alpha)


@pytest.mark.parametrize("schedule, reference", [
    (schedules.ExponentialDecay(0.1, 4, 0.5), lambda s: 0.1 * 0.5 ** (s / 4)),
    (schedules.ExponentialDecay(0.1, 4, 0.5, staircase=True), lambda s: 0.1 * 0.5 ** (s // 4)),
    (schedules.PiecewiseConstantDecay([3, 6], [1.0, 0.5, 0.1]),
     lambda s: 1.0 if s <= 3 else 0.5 if s <= 6 else 0.1),
    (schedules.PiecewiseConstantDecay([2.5], [1.0, 0.5]), lambda s: 1.0 if s <= 2.5 else 0.5),
    (schedules.CosineDecay(0.2, 8, alpha=0.1), lambda s: _cosine(s, 0.2, 8, 0.1)),
    (schedules.CosineDecay(0.0, 8, warmup_target=0.3, warmup_steps=4), lambda s: _cosine(s, 0.0, 8, 0.0, 0.3, 4)),
    (schedules.CosineDecay(0.1, 8, warmup_target=0.3), lambda s: _cosine(s, 0.1, 8, 0.0, 0.3, 0)),
], ids=["exponential", "staircase", "piecewise", "piecewise-float", "cosine", "cosine-warmup", "warmup-0"])
def test_schedules_match_keras_formulas(schedule, reference):
    for step in range(16):
        got = schedule(tfc.constant(step, dtype=tfc.int64))
        assert got.dtype == tfc.float32
        np.testing.assert_allclose(float(got), reference(step), rtol=1e-6, atol=1e-7, err_msg=f"step {step}")
    assert float(schedule(3)) == float(schedule(tfc.constant(3)))  # a plain int step too


@pytest.mark.parametrize("make_schedule", [
    lambda: schedules.ExponentialDecay(0.1, 2, 0.5, staircase=True),
    lambda: schedules.PiecewiseConstantDecay([1, 3], [0.3, 0.1, 0.01]),
    lambda: schedules.CosineDecay(0.01, 4, warmup_target=0.1, warmup_steps=2),
], ids=["exponential", "piecewise", "cosine-warmup"])
@pytest.mark.parametrize("make_optimizer", [
    lambda lr: tfc.optimizers.SGD(lr, momentum=0.9, nesterov=True),
    lambda lr: tfc.optimizers.RMSprop(lr, momentum=0.5, centered=True),
    lambda lr: tfc.optimizers.AdamW(lr, weight_decay=0.01),
], ids=["sgd-nesterov", "rmsprop", "adamw"])
def test_scheduled_compiled_steps_equal_eager_steps(make_schedule, make_optimizer):
    """The schedule reads the optimizer's step Variable inside the compiled step:
    one trace serves every step, and each step's rate is the eager one, bit for bit."""
    finals = []
    for compiled in (False, True):
        v = tfc.Variable(np.array([1.0, -2.0, 0.5], np.float32))
        opt = make_optimizer(make_schedule())

        def step():
            with tfc.GradientTape() as tape:
                loss = tfc.reduce_sum(tfc.square(v) * tfc.constant([1.0, 2.0, 3.0]))
            (g,) = tape.gradient(loss, [v])
            (g,), _ = tfc.clip_by_global_norm([g], 5.0)
            opt.apply_gradients([(g, v)])
            return loss

        run = tfc.function(step) if compiled else step
        losses = [run().numpy() for _ in range(6)]
        if compiled:
            assert run.trace_count == 1
        finals.append((losses, v.numpy(), int(opt.iterations.numpy())))
    (el, ev, ei), (cl, cv, ci) = finals
    np.testing.assert_array_equal(cl, el)
    np.testing.assert_array_equal(cv, ev)
    assert ei == ci == 6


def test_schedule_errors():
    with pytest.raises(ValueError, match="one more entry than boundaries"):
        schedules.PiecewiseConstantDecay([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="boundaries must increase"):
        schedules.PiecewiseConstantDecay([2, 1], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"boundaries must be numbers, got \['a'\]"):  # was accepted, failing later
        schedules.PiecewiseConstantDecay(["a"], [1.0, 2.0])
    with pytest.raises(ValueError, match="values must be numbers"):
        schedules.PiecewiseConstantDecay([1], [1.0, "b"])
    with pytest.raises(ValueError, match="decay_steps must be a number > 0"):
        schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="warmup_steps needs a warmup_target"):
        schedules.CosineDecay(0.1, 10, warmup_steps=3)


def test_checkpoint_keeps_rmsprop_slots_and_the_schedule_s_step(tmp_path):
    """A restored optimizer goes on where the saved one stopped: same slots, same
    step count, so the schedule gives the same next rate."""
    def make():
        var = tfc.Variable(np.array([1.0, -1.0], np.float32))
        lr = schedules.ExponentialDecay(0.1, 1, 0.5)
        return var, tfc.optimizers.RMSprop(lr, momentum=0.5, centered=True)

    grads = [np.array([0.5, -2.0], np.float32), np.array([1.0, 1.0], np.float32)]
    var, opt = make()
    for g in grads:
        opt.apply_gradients([(tfc.constant(g), var)])
    path = tfc.train.Checkpoint(w=var, optimizer=opt).save(tmp_path / "rms")
    fresh_var, fresh_opt = make()
    tfc.train.Checkpoint(w=fresh_var, optimizer=fresh_opt).restore(path)
    assert int(fresh_opt.iterations.numpy()) == 2
    for v, o in ((var, opt), (fresh_var, fresh_opt)):
        o.apply_gradients([(tfc.constant(grads[0]), v)])
    np.testing.assert_array_equal(fresh_var.numpy(), var.numpy())
    for slot in ("velocity", "momentum", "average_gradient"):
        np.testing.assert_array_equal(fresh_opt.get_slot(fresh_var, slot).numpy(), opt.get_slot(var, slot).numpy())


def test_optimizer_arguments_numpy_numbers_and_errors():
    # numpy numbers are numbers (they were refused as "not a number")
    opt = tfc.optimizers.AdamW(learning_rate=np.float32(0.5), weight_decay=np.float32(0.25))
    v = tfc.Variable(np.array([2.0], np.float32))
    tfc.optimizers.SGD(np.float32(0.5), momentum=np.float64(0.5)).apply_gradients([(tfc.constant([1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [1.5])
    assert opt.weight_decay == 0.25
    for make, match in ((lambda: tfc.optimizers.SGD(momentum="0.9"), "SGD: momentum must be in"),
                        (lambda: tfc.optimizers.RMSprop(rho=None), "RMSprop: rho must be in"),
                        (lambda: tfc.optimizers.RMSprop(momentum=1.0), r"RMSprop: momentum must be in \[0, 1\)"),
                        (lambda: tfc.optimizers.SGD(True), "learning_rate must be a number")):
        with pytest.raises((TypeError, ValueError), match=match):
            make()


def test_exclude_from_weight_decay_takes_one_name_as_a_name():
    # a str is one name: "bias" must not exclude every variable whose name has a "b", "i", "a" or "s"
    kernel, bias = tfc.Variable([1.0], name="dense/kernel"), tfc.Variable([1.0], name="dense/bias")
    opt = tfc.optimizers.SGD(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names="bias")
    opt.apply_gradients([(tfc.constant([0.0]), kernel), (tfc.constant([0.0]), bias)])
    np.testing.assert_allclose(kernel.numpy(), [1.0 - 1.0 * 0.5 * 0.1], rtol=1e-6)
    assert bias.numpy().tolist() == [1.0]
