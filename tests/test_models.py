"""Models and training: Module tracking, layers, optimizers (against hand-written
numpy updates) and checkpoints."""
import os

import numpy as np
import pytest

import tfc

from tests.optimizer_reference import grad_sequence, numpy_adam

HAS_CONV = hasattr(tfc.ops, "conv")
needs_conv = pytest.mark.skipif(not HAS_CONV, reason="tfc.ops.conv (conv2d, max_pool2d, dropout) is not in this build")


# -- the "Models" reference program (reference-programs.md) -------------------------

class MNISTModel(tfc.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = tfc.layers.Dense(units=10)
        self.layer2 = tfc.layers.Dense(units=10)

    def __call__(self, x):
        return self.layer2(self.layer1(x))


def loss_fn(model, x, y):
    return tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(
        logits=model(x), labels=y))


def synthetic_dataset(n_batches=8, batch=16, seed=0):
    """Linearly separable 784-feature data: the label is the argmax of a fixed projection."""
    rng = np.random.default_rng(seed)
    proj = rng.normal(size=(784, 10))
    out = []
    for _ in range(n_batches):
        x = rng.normal(size=(batch, 784)).astype(np.float32)
        out.append((tfc.constant(x), tfc.constant(np.argmax(x @ proj, axis=1).astype(np.int32))))
    return out


def test_reference_mnist_model_eager_call():
    model = MNISTModel()
    batch = tfc.zeros([1, 1, 784])
    assert batch.shape == (1, 1, 784)
    result = model(batch)
    assert result.shape == (1, 1, 10)
    assert result.dtype == tfc.float32
    np.testing.assert_array_equal(result.numpy(), np.zeros((1, 1, 10)))  # zero input, zero biases
    assert [v.shape for v in model.trainable_variables] == [(784, 10), (10,), (10, 10), (10,)]


def test_reference_mnist_training_decreases_loss():
    model = MNISTModel()
    model(tfc.zeros([1, 1, 784]))
    dataset = synthetic_dataset()

    def total_loss():
        return float(np.mean([float(loss_fn(model, x, y)) for x, y in dataset]))

    before = total_loss()
    optimizer = tfc.optimizers.SGD(learning_rate=0.001)
    for _ in range(3):
        for (x, y) in dataset:
            optimizer.minimize(lambda: loss_fn(model, x, y), model.trainable_variables)
    after = total_loss()
    assert after < before
    assert int(optimizer.iterations.numpy()) == 3 * len(dataset)


def test_sgd_training_learns_the_synthetic_task():
    model = MNISTModel()
    dataset = synthetic_dataset()
    optimizer = tfc.optimizers.SGD(learning_rate=0.05, momentum=0.9)
    first = None
    for _ in range(5):
        for x, y in dataset:
            # var_list as a callable: the model builds inside the first loss call
            loss = optimizer.minimize(lambda: loss_fn(model, x, y), lambda: model.trainable_variables)
            first = float(loss) if first is None else first
    assert float(np.mean([float(loss_fn(model, x, y)) for x, y in dataset])) < 0.5 * first


# -- optimizers against numpy ------------------------------------------------------

def test_sgd_plain_momentum_and_nesterov_match_numpy(rng):
    w0 = rng.normal(size=(3, 2)).astype(np.float32)
    grads = grad_sequence(rng, (3, 2))
    for momentum, nesterov in [(0.0, False), (0.9, False), (0.9, True)]:
        var = tfc.Variable(w0)
        opt = tfc.optimizers.SGD(learning_rate=0.1, momentum=momentum, nesterov=nesterov)
        w, vel = w0.astype(np.float64), np.zeros_like(w0, dtype=np.float64)
        for g in grads:
            opt.apply_gradients([(tfc.constant(g), var)])
            vel = momentum * vel - 0.1 * g
            w = w + (momentum * vel - 0.1 * g if nesterov else vel) if momentum else w - 0.1 * g
        np.testing.assert_allclose(var.numpy(), w, rtol=1e-5, atol=1e-6, err_msg=f"momentum={momentum} {nesterov}")
        if momentum:
            np.testing.assert_allclose(opt.get_slot(var, "momentum").numpy(), vel, rtol=1e-5, atol=1e-6)


def test_adam_matches_numpy(rng):
    w0 = rng.normal(size=(4,)).astype(np.float32)
    b0 = rng.normal(size=(2, 2)).astype(np.float32)
    gw, gb = grad_sequence(rng, (4,), 5), grad_sequence(rng, (2, 2), 5)
    lr, b1, b2, eps = 0.01, 0.8, 0.95, 1e-7
    w, b = tfc.Variable(w0), tfc.Variable(b0)
    opt = tfc.optimizers.Adam(learning_rate=lr, beta_1=b1, beta_2=b2, epsilon=eps)
    for g_w, g_b in zip(gw, gb):
        opt.apply_gradients([(tfc.constant(g_w), w), (tfc.constant(g_b), b)])
    ref = {"w": numpy_adam(w0, gw, lr, b1, b2, eps), "b": numpy_adam(b0, gb, lr, b1, b2, eps)}
    np.testing.assert_allclose(w.numpy(), ref["w"][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.numpy(), ref["b"][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(opt.get_slot(w, "m").numpy(), ref["w"][1], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(opt.get_slot(b, "v").numpy(), ref["b"][2], rtol=1e-5, atol=1e-7)
    assert int(opt.iterations.numpy()) == 5


def test_minimize_with_adam_matches_numpy_on_a_quadratic():
    # loss = sum((w - c)^2): gradient 2 (w - c), computed by the tape
    c = np.array([1.0, -2.0, 3.0], np.float32)
    w = tfc.Variable(np.zeros(3, np.float32))
    opt = tfc.optimizers.Adam(0.1)
    p, m, v = np.zeros(3), 0.0, 0.0
    for t in range(1, 4):
        loss = opt.minimize(lambda: tfc.reduce_sum(tfc.square(w - c)), [w])
        g = 2 * (p - c)
        np.testing.assert_allclose(float(loss), np.sum((p - c) ** 2), rtol=1e-5)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        p = p - 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-7)
    np.testing.assert_allclose(w.numpy(), p, rtol=1e-5)


def test_learning_rate_schedule_and_none_gradients():
    seen = []

    def schedule(step):
        seen.append(int(step))
        return 0.5 / (1.0 + tfc.cast(step, tfc.float32))

    w, unused = tfc.Variable([1.0]), tfc.Variable([7.0])
    opt = tfc.optimizers.SGD(learning_rate=schedule)
    for _ in range(3):
        opt.apply_gradients([(tfc.constant([1.0]), w), (None, unused)])
    np.testing.assert_allclose(w.numpy(), [1.0 - 0.5 - 0.25 - 0.5 / 3], rtol=1e-6)
    assert seen == [0, 1, 2]
    assert unused.numpy().tolist() == [7.0]
    w2 = tfc.Variable(1.0)
    tfc.optimizers.SGD(learning_rate=lambda: 0.25).apply_gradients([(tfc.constant(1.0), w2)])
    assert float(w2.numpy()) == 0.75


def test_optimizer_errors():
    w = tfc.Variable([1.0, 2.0])
    opt = tfc.optimizers.SGD(0.1)
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(2,\)"):
        opt.apply_gradients([(tfc.constant([1.0, 2.0, 3.0]), w)])
    with pytest.raises(TypeError, match="pairs"):
        opt.apply_gradients([(w,)])
    with pytest.raises(TypeError, match="int32"):
        opt.apply_gradients([(tfc.constant([1, 2]), tfc.Variable([1, 2]))])
    with pytest.raises(ValueError, match="var_list is empty"):
        opt.minimize(lambda: tfc.reduce_sum(w), [])
    with pytest.raises(TypeError, match="learning_rate"):
        tfc.optimizers.Adam("fast")


# -- Module tracking ---------------------------------------------------------------

class Block(tfc.Module):
    def __init__(self, n):
        super().__init__()
        self.w = tfc.Variable(np.ones(n, np.float32), name="w")
        self.count = tfc.Variable(0, trainable=False, name="count")


class Net(tfc.Module):
    def __init__(self):
        super().__init__()
        self.first = Block(1)
        self.blocks = [Block(2), Block(3)]
        self.pair = (tfc.Variable(4.0, name="p0"), Block(4))
        self.table = {"a": tfc.Variable(5.0, name="ta"), "b": {"inner": Block(5)}}
        self.alias = self.first.w  # reachable twice: listed once
        self.not_state = [1, "x", 2.0]


def test_module_tracks_attributes_lists_tuples_dicts_in_order():
    net = Net()
    paths = [p for p, _ in net.variables_with_paths()]
    assert paths == [
        "first/w", "first/count",
        "blocks/0/w", "blocks/0/count", "blocks/1/w", "blocks/1/count",
        "pair/0", "pair/1/w", "pair/1/count",
        "table/a", "table/b/inner/w", "table/b/inner/count",
    ]
    assert len(net.variables) == 12
    assert [v.shape for v in net.trainable_variables] == [(1,), (2,), (3,), (), (4,), (), (5,)]
    assert all(not v.trainable for v in net.non_trainable_variables) and len(net.non_trainable_variables) == 5
    assert [type(m).__name__ for m in net.submodules] == ["Block"] * 5
    assert net.submodules[0] is net.first and net.submodules[-1] is net.table["b"]["inner"]
    assert [p for p, _ in Net().variables_with_paths()] == paths  # deterministic


def test_module_without_super_init_and_cycles():
    class Bare(tfc.Module):
        def __init__(self):
            self.v = tfc.Variable(1.0)
            self.me = self  # cycles terminate

    b = Bare()
    assert len(b.variables) == 1 and b.submodules == ()
    assert "bare" in repr(b)


# -- layers ---------------------------------------------------------------------

def test_dense_builds_lazily_and_matches_numpy(rng):
    layer = tfc.layers.Dense(3, activation="relu")
    assert layer.variables == () and not layer.built
    x = rng.normal(size=(5, 4)).astype(np.float32)
    y = layer(x)
    assert layer.built and layer.kernel.shape == (4, 3) and layer.bias.shape == (3,)
    layer.bias.assign(np.array([0.1, -0.2, 0.3], np.float32))
    np.testing.assert_allclose(layer(x).numpy(), np.maximum(x @ layer.kernel.numpy() + layer.bias.numpy(), 0),
                               rtol=1e-6)
    assert y.shape == (5, 3)
    limit = np.sqrt(6 / (4 + 3))
    assert np.all(np.abs(layer.kernel.numpy()) <= limit)
    nobias = tfc.layers.Dense(2, use_bias=False, kernel_initializer="ones")
    np.testing.assert_allclose(nobias(np.ones((1, 3), np.float32)).numpy(), [[3.0, 3.0]])
    assert len(nobias.variables) == 1


def test_seeded_initializers_repeat():
    a = tfc.layers.Dense(4, kernel_initializer=tfc.layers.GlorotUniform(seed=3))
    b = tfc.layers.Dense(4, kernel_initializer=tfc.layers.GlorotUniform(seed=3))
    a(tfc.ones([1, 5])), b(tfc.ones([1, 5]))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())


def test_dense_errors():
    with pytest.raises(ValueError, match="units must be a positive int"):
        tfc.layers.Dense(0)
    with pytest.raises(ValueError, match="unknown activation 'gelu2'"):
        tfc.layers.Dense(2, activation="gelu2")
    with pytest.raises(ValueError, match=r"Dense: inputs must have rank >= 2.*\(3,\)"):
        tfc.layers.Dense(2)(tfc.ones([3]))
    layer = tfc.layers.Dense(2)
    layer(tfc.ones([1, 3]))
    with pytest.raises(ValueError, match="matmul"):
        layer(tfc.ones([1, 4]))


def test_flatten_sequential_and_dropout_inference(rng):
    model = tfc.layers.Sequential([
        tfc.layers.Flatten(),
        tfc.layers.Dense(6, activation=tfc.nn.tanh),
        tfc.layers.Dropout(0.5),
        tfc.nn.relu,
        tfc.layers.Dense(2),
    ])
    x = rng.normal(size=(3, 2, 4)).astype(np.float32)
    y = model(x)
    assert y.shape == (3, 2)
    d1, d2 = model.layers[1], model.layers[4]
    h = np.maximum(np.tanh(x.reshape(3, 8) @ d1.kernel.numpy() + d1.bias.numpy()), 0)
    np.testing.assert_allclose(y.numpy(), h @ d2.kernel.numpy() + d2.bias.numpy(), rtol=1e-5, atol=1e-6)
    assert [p for p, _ in model.variables_with_paths()] == ["layers/1/kernel", "layers/1/bias", "layers/4/kernel",
                                                          "layers/4/bias"]
    with pytest.raises(ValueError, match="rate must be in"):
        tfc.layers.Dropout(1.0)


@needs_conv
def test_dropout_training_masks_and_scales():
    layer = tfc.layers.Dropout(0.5, seed=1)
    y = layer(tfc.ones([1000]), training=True).numpy()
    assert set(np.unique(y)).issubset({0.0, 2.0}) and 300 < np.count_nonzero(y) < 700


def _np_conv2d(x, k, stride):
    n, h, w, _ = x.shape
    kh, kw, _, co = k.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, co))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return out


@needs_conv
def test_conv2d_and_maxpool_layers_match_numpy(rng):
    x = rng.normal(size=(2, 6, 6, 3)).astype(np.float32)
    conv = tfc.layers.Conv2D(4, 3, strides=1, activation="relu")
    y = conv(x)
    assert conv.kernel.shape == (3, 3, 3, 4)
    ref = np.maximum(_np_conv2d(x, conv.kernel.numpy(), 1) + conv.bias.numpy(), 0)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-5)
    pooled = tfc.layers.MaxPool2D(2)(y).numpy()
    np.testing.assert_allclose(pooled, ref.reshape(2, 2, 2, 2, 2, 4).max(axis=(2, 4)), rtol=1e-6)


# -- checkpoints ------------------------------------------------------------------

def _trained(steps=3, seed=0):
    model = MNISTModel()
    opt = tfc.optimizers.Adam(0.01)
    for x, y in synthetic_dataset(n_batches=steps, batch=4, seed=seed):
        opt.minimize(lambda: loss_fn(model, x, y), lambda: model.trainable_variables)
    return model, opt


def _values(ckpt_objects):
    return {k: v.numpy().copy() for k, v in ckpt_objects._collect()[0].items()}


def test_checkpoint_round_trip_model_and_optimizer(tmp_path):
    model, opt = _trained()
    ckpt = tfc.train.Checkpoint(model=model, optimizer=opt)
    path = ckpt.save(tmp_path / "ckpt")
    assert path == str(tmp_path / "ckpt.npz") and os.path.isfile(path)
    with np.load(path, allow_pickle=False) as f:
        assert "model/layer1/kernel" in f.files and "optimizer/m/model/layer2/bias" in f.files
        assert "optimizer/iterations" in f.files and "__tfc_checkpoint__" in f.files

    # A fresh, built model and a fresh optimizer without slots.
    model2, opt2 = MNISTModel(), tfc.optimizers.Adam(0.01)
    model2(tfc.zeros([1, 784]))
    ckpt2 = tfc.train.Checkpoint(model=model2, optimizer=opt2)
    ckpt2.restore(str(tmp_path / "ckpt")).assert_consumed()  # the suffix is optional
    a, b = _values(ckpt), _values(ckpt2)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    # Training both further gives identical results: the optimizer state came back.
    x, y = synthetic_dataset(1, 4, seed=9)[0]
    opt.minimize(lambda: loss_fn(model, x, y), model.trainable_variables)
    opt2.minimize(lambda: loss_fn(model2, x, y), model2.trainable_variables)
    for v, w in zip(model.variables, model2.variables):
        np.testing.assert_array_equal(v.numpy(), w.numpy())


def test_restore_into_unbuilt_model_is_deferred_until_first_call(tmp_path):
    model, opt = _trained()
    path = tfc.train.Checkpoint(model=model, optimizer=opt).save(tmp_path / "c.npz")
    fresh, opt2 = MNISTModel(), tfc.optimizers.Adam(0.01)
    status = tfc.train.Checkpoint(model=fresh, optimizer=opt2).restore(path)
    assert len(status.pending()) == 2
    with pytest.raises(AssertionError, match="not been built"):
        status.assert_consumed()
    x = tfc.constant(np.random.default_rng(1).normal(size=(3, 784)).astype(np.float32))
    np.testing.assert_array_equal(fresh(x).numpy(), model(x).numpy())
    status.assert_consumed()
    np.testing.assert_array_equal(opt2.get_slot(fresh.layer1.kernel, "v").numpy(),
                                  opt.get_slot(model.layer1.kernel, "v").numpy())
    assert int(opt2.iterations.numpy()) == 3


def test_deferred_restore_shape_mismatch_is_reported_at_build(tmp_path):
    model, _ = _trained()
    path = tfc.train.Checkpoint(model=model).save(tmp_path / "c")
    fresh = MNISTModel()
    tfc.train.Checkpoint(model=fresh).restore(path)
    with pytest.raises(ValueError, match=r"model/layer1/kernel: the checkpoint has \(784, 10\), the variable has \(5, 10\)"):
        fresh(tfc.ones([1, 5]))


def test_failed_deferred_restore_rolls_back_the_build(tmp_path):
    model = tfc.layers.Dense(3)
    x = tfc.constant(np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32))
    want = model(x).numpy()
    path = tfc.train.Checkpoint(model=model).save(tmp_path / "c")
    fresh = tfc.layers.Dense(3)
    status = tfc.train.Checkpoint(model=fresh).restore(path)
    for _ in range(2):  # the same error again: nothing was half done
        with pytest.raises(ValueError, match=r"model/kernel: the checkpoint has \(4, 3\), the variable has \(5, 3\)"):
            fresh(tfc.ones([1, 5]))
        assert not fresh.built and fresh.variables == () and status.pending() == [fresh]
        with pytest.raises(AssertionError, match="not been built"):
            status.assert_consumed()
    np.testing.assert_array_equal(fresh(x).numpy(), want)  # the restore still applies
    status.assert_consumed()


def _assert_untouched(model, before):
    for v, b in zip(model.variables, before):
        np.testing.assert_array_equal(v.numpy(), b)


def test_restore_errors_leave_values_untouched(tmp_path):
    model, opt = _trained()
    path = tfc.train.Checkpoint(model=model, optimizer=opt).save(tmp_path / "good")

    target, _ = _trained(seed=5)
    before = [v.numpy().copy() for v in target.variables]

    with pytest.raises(FileNotFoundError, match="no checkpoint file"):
        tfc.train.Checkpoint(model=target).restore(tmp_path / "missing")
    (tmp_path / "junk.npz").write_bytes(b"not a zip file at all")
    with pytest.raises(ValueError, match="not a tfc checkpoint"):
        tfc.train.Checkpoint(model=target).restore(tmp_path / "junk.npz")
    np.savez(tmp_path / "plain.npz", a=np.ones(2))
    with pytest.raises(ValueError, match="not a tfc checkpoint.*marker"):
        tfc.train.Checkpoint(model=target).restore(tmp_path / "plain.npz")

    # The model alone: the optimizer's entries are unexpected.
    with pytest.raises(ValueError, match="not in the objects: optimizer/iterations"):
        tfc.train.Checkpoint(model=target).restore(path)
    _assert_untouched(target, before)

    # A model with an extra layer: its variables are missing from the file.
    class Bigger(MNISTModel):
        def __init__(self):
            super().__init__()
            self.layer3 = tfc.layers.Dense(units=10)

        def __call__(self, x):
            return self.layer3(super().__call__(x))

    big = Bigger()
    big(tfc.ones([1, 784]))
    big_before = [v.numpy().copy() for v in big.variables]
    with pytest.raises(ValueError, match="missing from the checkpoint: model/layer3/kernel"):
        tfc.train.Checkpoint(model=big, optimizer=tfc.optimizers.Adam()).restore(path)
    _assert_untouched(big, big_before)

    # Shape mismatch names the variable and both shapes; nothing else is assigned.
    class Narrow(tfc.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = tfc.layers.Dense(units=10)
            self.layer2 = tfc.layers.Dense(units=7)

    narrow = Narrow()
    narrow.layer1(tfc.ones([1, 784]))
    narrow.layer2(tfc.ones([1, 10]))
    narrow_before = [v.numpy().copy() for v in narrow.variables]
    with pytest.raises(ValueError) as err:
        tfc.train.Checkpoint(model=narrow, optimizer=tfc.optimizers.Adam()).restore(path)
    msg = str(err.value)
    assert "shape mismatch for model/layer2/kernel: the checkpoint has (10, 10), the variable has (10, 7)" in msg
    assert "model/layer2/bias" in msg and "nothing was restored" in msg
    _assert_untouched(narrow, narrow_before)  # layer1 matched, yet is untouched too


def test_checkpoint_dtype_mismatch_and_plain_variables(tmp_path):
    step = tfc.Variable(3, trainable=False)
    scale = tfc.Variable(np.float64(2.5))
    path = tfc.train.Checkpoint(step=step, scale=scale).save(tmp_path / "v")
    step.assign(0)
    tfc.train.Checkpoint(step=step, scale=scale).restore(path)
    assert int(step.numpy()) == 3
    other = tfc.Variable(np.float32(1.0))
    with pytest.raises(ValueError, match="dtype mismatch for scale: the checkpoint has float64"):
        tfc.train.Checkpoint(step=step, scale=other).restore(path)
    assert float(other.numpy()) == 1.0


def test_checkpoint_constructor_and_save_errors(tmp_path):
    with pytest.raises(TypeError, match="not a tfc.Module"):
        tfc.train.Checkpoint(model=object())
    w = tfc.Variable([1.0])
    opt = tfc.optimizers.Adam()
    opt.apply_gradients([(tfc.constant([1.0]), w)])
    with pytest.raises(ValueError, match="not part of the checkpoint"):
        tfc.train.Checkpoint(optimizer=opt).save(tmp_path / "x")
    assert not list(tmp_path.iterdir())  # nothing half-written
    missing = tmp_path / "no_such_dir" / "ck"
    with pytest.raises(FileNotFoundError, match=f"cannot write '{missing}.npz'"):
        tfc.train.Checkpoint(w=w).save(missing)


def test_damaged_checkpoint_payload_names_file_and_variable(tmp_path):
    import zipfile

    model = tfc.layers.Dense(3)
    model(tfc.ones([1, 4]))
    path = tfc.train.Checkpoint(model=model).save(tmp_path / "c")
    before = [v.numpy().copy() for v in model.variables]
    data = bytearray(open(path, "rb").read())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("model/kernel.npy")
    data[info.header_offset + 30 + len(info.filename) + info.file_size - 4] ^= 0x40  # in the last float
    (tmp_path / "flip.npz").write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"cannot read model/kernel from '.*flip.npz' \(Bad CRC-32"):
        tfc.train.Checkpoint(model=model).restore(tmp_path / "flip.npz")
    np.savez(tmp_path / "obj.npz", __tfc_checkpoint__=np.array("tfc-checkpoint-1"), **{
        "model/bias": np.zeros(3, np.float32), "model/kernel": np.array([None, 1], dtype=object)})
    with pytest.raises(ValueError, match=r"cannot read model/kernel from '.*obj.npz' \(an object array"):
        tfc.train.Checkpoint(model=model).restore(tmp_path / "obj.npz")
    _assert_untouched(model, before)


@pytest.mark.parametrize("make", [lambda: tfc.optimizers.SGD(0.1, momentum=0.9), lambda: tfc.optimizers.Adam(0.1)],
                         ids=["sgd-momentum", "adam"])
def test_optimizer_slots_made_by_a_first_step_inside_tfc_function(make):
    """The first apply_gradients may run while a tfc.function is traced: its
    slot variables are made from the variable's shape (the value is symbolic
    there), and compiled steps equal eager ones."""
    finals = []
    for compiled in (False, True):
        v = tfc.Variable(np.array([1.0, 2.0], np.float32))
        opt = make()

        def step():
            with tfc.GradientTape() as t:
                loss = tfc.reduce_sum(tfc.square(v))
            opt.apply_gradients([(t.gradient(loss, v), v)])
            return loss

        f = tfc.function(step) if compiled else step
        for _ in range(3):
            f()
        finals.append(v.numpy())
    np.testing.assert_array_equal(finals[1], finals[0])
