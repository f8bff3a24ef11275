"""The layers of issue 22: Embedding, LayerNormalization, BatchNormalization,
AveragePooling2D, GlobalAveragePooling2D, MultiHeadAttention. Each against a
numpy reference, its gradients (input and weights) against finite differences in
float64, eager against compiled, and through a checkpoint."""
import numpy as np
import pytest

import tfc

from tests.helpers import check_grad


def _weighted(y, r):
    """sum(y * r): a loss whose gradient reaches every output (a plain sum of a
    normalized output would have a zero gradient)."""
    return tfc.reduce_sum(y * tfc.constant(r))


def check_weight_grads(loss_fn, variables, eps=1e-6, rtol=1e-5, atol=1e-7):
    """Tape gradients of loss_fn() w.r.t. float64 ``variables`` against central differences."""
    with tfc.GradientTape() as tape:
        loss = loss_fn()
    grads = tape.gradient(loss, list(variables))
    for var, grad in zip(variables, grads):
        assert grad is not None, f"no gradient for {var.name}"
        value = var.numpy().copy()
        want = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            for sign in (1, -1):
                bumped = value.copy()
                bumped[idx] += sign * eps
                var.assign(bumped)
                want[idx] += sign * float(loss_fn()) / (2 * eps)
        var.assign(value)
        np.testing.assert_allclose(np.asarray(grad), want, rtol=rtol, atol=atol, err_msg=var.name)


def eager_and_compiled(fn, *args):
    """fn(*args) eagerly and under tfc.function, as numpy arrays."""
    eager = fn(*args)
    compiled = tfc.function(fn)(*args)
    return eager, compiled


def _np_moments(x, axes):
    mean = x.mean(axis=axes, keepdims=True)
    return mean, ((x - mean) ** 2).mean(axis=axes, keepdims=True)


# -- Embedding ------------------------------------------------------------------------

def test_embedding_rows_grads_and_compiled(rng):
    layer = tfc.layers.Embedding(7, 3)
    ids = np.array([[0, 6, 2], [2, 2, 5]], np.int32)
    y = layer(tfc.constant(ids))
    assert y.shape == (2, 3, 3) and layer.embeddings.shape == (7, 3)
    table = layer.embeddings.numpy()
    np.testing.assert_array_equal(y.numpy(), table[ids])
    assert np.all(np.abs(table) <= 0.05)  # Keras' "uniform" initializer
    # float ids are truncated (Keras casts them); int64 ids work too
    np.testing.assert_array_equal(layer(tfc.constant([[1.7]])).numpy(), table[[[1]]])
    np.testing.assert_array_equal(layer(tfc.constant(ids.astype(np.int64))).numpy(), table[ids])
    # the gradient of a repeated id adds up
    r = rng.normal(size=(2, 3, 3))
    with tfc.GradientTape() as tape:
        loss = _weighted(layer(tfc.constant(ids)), r.astype(np.float32))
    (g,) = tape.gradient(loss, [layer.embeddings])
    want = np.zeros((7, 3))
    np.add.at(want, ids, r)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6)
    eager, compiled = eager_and_compiled(lambda t: layer(t), tfc.constant(ids))
    np.testing.assert_array_equal(compiled.numpy(), eager.numpy())
    with pytest.raises(tfc.errors.InvalidArgumentError, match=r"index 7 is out of range \[0, 7\)"):
        layer(tfc.constant([[7]]))
    with pytest.raises(tfc.errors.InvalidArgumentError, match=r"index -1 is out of range"):
        tfc.function(lambda t: layer(t))(tfc.constant([[-1]]))
    with pytest.raises(ValueError, match="output_dim must be a positive int"):
        tfc.layers.Embedding(3, 0)


# -- LayerNormalization ------------------------------------------------------------

@pytest.mark.parametrize("axis", [-1, (1, 2), 1])
def test_layer_normalization_matches_numpy(rng, axis):
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    layer = tfc.layers.LayerNormalization(axis=axis, epsilon=1e-3)
    y = layer(tfc.constant(x))
    axes = tuple(a % 3 for a in ((axis,) if isinstance(axis, int) else axis))
    assert layer.gamma.shape == tuple(x.shape[a] for a in axes)
    layer.gamma.assign(rng.normal(size=layer.gamma.shape).astype(np.float32))
    layer.beta.assign(rng.normal(size=layer.beta.shape).astype(np.float32))
    y = layer(tfc.constant(x)).numpy()
    mean, var = _np_moments(x.astype(np.float64), axes)
    shape = [x.shape[a] if a in axes else 1 for a in range(3)]
    want = (x - mean) / np.sqrt(var + 1e-3) * layer.gamma.numpy().reshape(shape) + layer.beta.numpy().reshape(shape)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    eager, compiled = eager_and_compiled(lambda t: layer(t), tfc.constant(x))
    np.testing.assert_array_equal(compiled.numpy(), eager.numpy())


def test_layer_normalization_gradients(rng):
    x = rng.normal(size=(2, 5))
    r = rng.normal(size=(2, 5))
    layer = tfc.layers.LayerNormalization()
    layer(tfc.constant(x))
    assert layer.gamma.dtype == tfc.float64
    layer.gamma.assign(rng.normal(size=5))
    layer.beta.assign(rng.normal(size=5))
    check_grad(lambda t: _weighted(layer(t), r), x)
    check_weight_grads(lambda: _weighted(layer(tfc.constant(x)), r), layer.trainable_variables)


def test_layer_normalization_without_center_or_scale_and_errors(rng):
    x = rng.normal(size=(3, 4)).astype(np.float32)
    layer = tfc.layers.LayerNormalization(center=False, scale=False)
    y = layer(tfc.constant(x)).numpy()
    assert layer.variables == ()
    mean, var = _np_moments(x.astype(np.float64), (1,))
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        tfc.layers.LayerNormalization(axis=2)(tfc.constant(x))


# -- BatchNormalization ------------------------------------------------------------

def test_batch_normalization_training_and_inference_match_numpy(rng):
    x = rng.normal(2.0, 3.0, size=(4, 3, 3, 2)).astype(np.float32)
    layer = tfc.layers.BatchNormalization(momentum=0.9, epsilon=1e-3)
    y = layer(tfc.constant(x), training=True).numpy()
    mean, var = _np_moments(x.astype(np.float64), (0, 1, 2))
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer.moving_mean.numpy(), 0.1 * mean.ravel(), rtol=1e-5)
    np.testing.assert_allclose(layer.moving_variance.numpy(), 0.9 + 0.1 * var.ravel(), rtol=1e-5)
    assert [v.name for v in layer.trainable_variables] == ["batch_normalization/gamma", "batch_normalization/beta"]
    assert {v.name for v in layer.non_trainable_variables} == {"batch_normalization/moving_mean",
                                                               "batch_normalization/moving_variance"}
    # inference: the moving statistics, and no update
    before = layer.moving_mean.numpy().copy()
    y = layer(tfc.constant(x), training=False).numpy()
    want = (x - layer.moving_mean.numpy()) / np.sqrt(layer.moving_variance.numpy() + 1e-3)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(layer.moving_mean.numpy(), before)


def test_batch_normalization_channels_first_axis(rng):
    x = rng.normal(size=(4, 3, 5)).astype(np.float32)
    layer = tfc.layers.BatchNormalization(axis=1, momentum=0.5)
    y = layer(tfc.constant(x), training=True).numpy()
    mean, var = _np_moments(x.astype(np.float64), (0, 2))
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer.moving_mean.numpy(), 0.5 * mean.ravel(), rtol=1e-5)
    y = layer(tfc.constant(x)).numpy()
    want = (x - layer.moving_mean.numpy()[:, None]) / np.sqrt(layer.moving_variance.numpy()[:, None] + 1e-3)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_batch_normalization_gradients(rng):
    x = rng.normal(size=(4, 3))
    r = rng.normal(size=(4, 3))
    layer = tfc.layers.BatchNormalization()
    layer(tfc.constant(x))
    layer.gamma.assign(rng.normal(size=3))
    layer.beta.assign(rng.normal(size=3))
    layer.moving_mean.assign(rng.normal(size=3))
    layer.moving_variance.assign(rng.uniform(0.5, 2.0, size=3))
    for training in (True, False):
        check_grad(lambda t: _weighted(layer(t, training=training), r), x)
        check_weight_grads(lambda: _weighted(layer(tfc.constant(x), training=training), r),
                           layer.trainable_variables)


def test_batch_normalization_compiled_updates_moving_statistics_as_eager(rng):
    """Inside tfc.function the moving-statistics update is a variable assignment
    in the IR: compiled steps move them as eager steps do, bit for bit."""
    xs = [rng.normal(size=(8, 4)).astype(np.float32) for _ in range(3)]
    results = []
    for compiled in (False, True):
        tfc.random.set_seed(0)
        model = tfc.layers.Sequential([tfc.layers.Dense(4), tfc.layers.BatchNormalization(), tfc.layers.Dense(2)])
        model(tfc.constant(xs[0]))
        opt = tfc.optimizers.SGD(0.1)

        def step(x):
            with tfc.GradientTape() as tape:
                loss = tfc.reduce_mean(tfc.square(model(x, training=True)))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            return loss

        run = tfc.function(step) if compiled else step
        losses = [run(tfc.constant(x)).numpy() for x in xs]
        results.append((losses, [v.numpy() for v in model.variables]))
        if compiled:
            ir = run.get_concrete_function(tfc.constant(xs[0])).ir("tensor")
            for stat in ("moving_mean", "moving_variance"):
                assert f"tfc.assign_variable %batch_normalization_{stat}" in ir
    (eager_losses, eager_vars), (compiled_losses, compiled_vars) = results
    np.testing.assert_array_equal(compiled_losses, eager_losses)
    for e, c in zip(eager_vars, compiled_vars):
        np.testing.assert_array_equal(c, e)
    bn = model.layers[1]
    assert not np.array_equal(bn.moving_mean.numpy(), np.zeros(4))


def test_batch_normalization_statistics_survive_a_checkpoint(tmp_path, rng):
    x = tfc.constant(rng.normal(size=(6, 3)).astype(np.float32))
    layer = tfc.layers.BatchNormalization()
    layer(x, training=True)
    path = tfc.train.Checkpoint(model=layer).save(tmp_path / "bn")
    fresh = tfc.layers.BatchNormalization()
    tfc.train.Checkpoint(model=fresh).restore(path)
    np.testing.assert_array_equal(fresh(x).numpy(), layer(x).numpy())  # restored on build
    np.testing.assert_array_equal(fresh.moving_variance.numpy(), layer.moving_variance.numpy())
    assert not np.array_equal(fresh.moving_mean.numpy(), np.zeros(3))


# -- pooling ---------------------------------------------------------------------------

def test_average_pooling_and_global_average_pooling(rng):
    x = rng.normal(size=(2, 4, 6, 3)).astype(np.float32)
    y = tfc.layers.AveragePooling2D(pool_size=2)(tfc.constant(x)).numpy()
    np.testing.assert_allclose(y, x.reshape(2, 2, 2, 3, 2, 3).mean(axis=(2, 4)), rtol=1e-6)
    y = tfc.layers.AveragePooling2D(pool_size=(2, 3), strides=1, padding="same")(tfc.constant(x))
    assert y.shape == (2, 4, 6, 3)
    g = tfc.layers.GlobalAveragePooling2D()(tfc.constant(x)).numpy()
    np.testing.assert_allclose(g, x.mean(axis=(1, 2)), rtol=1e-6)
    assert tfc.layers.GlobalAveragePooling2D(keepdims=True)(tfc.constant(x)).shape == (2, 1, 1, 3)
    x64 = rng.normal(size=(1, 4, 4, 2))
    r = rng.normal(size=(1, 2, 2, 2))
    check_grad(lambda t: _weighted(tfc.layers.AveragePooling2D()(t), r), x64)
    check_grad(lambda t: _weighted(tfc.layers.GlobalAveragePooling2D()(t), r[0, 0]), x64)
    for layer in (tfc.layers.AveragePooling2D(), tfc.layers.GlobalAveragePooling2D()):
        eager, compiled = eager_and_compiled(lambda t: layer(t), tfc.constant(x))
        np.testing.assert_array_equal(compiled.numpy(), eager.numpy())
    with pytest.raises(ValueError, match="rank 4"):
        tfc.layers.GlobalAveragePooling2D()(tfc.constant(x[0]))


# -- MultiHeadAttention ------------------------------------------------------------

def _np_attention(layer, q_in, v_in, mask, k_in=None):
    w = {v.name.split("/")[-1]: v.numpy().astype(np.float64) for v in layer.variables}

    def heads(x, part):
        return np.einsum("btd,dhk->bhtk", x, w[f"{part}_kernel"]) + w[f"{part}_bias"][None, :, None, :]

    q = heads(q_in, "query") / np.sqrt(layer.key_dim)
    k, v = heads(v_in if k_in is None else k_in, "key"), heads(v_in, "value")
    scores = np.einsum("bhqk,bhvk->bhqv", q, k)
    if mask is not None:
        scores = np.where(mask[:, None], scores, -1e9)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    probs = scores / scores.sum(-1, keepdims=True)
    out = np.einsum("bhqv,bhvd->bhqd", probs, v)
    return np.einsum("bhqd,hdo->bqo", out, w["output_kernel"]) + w["output_bias"], probs


@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_matches_numpy(rng, causal):
    q = rng.normal(size=(2, 4, 6)).astype(np.float32)
    v = rng.normal(size=(2, 5 if not causal else 4, 3)).astype(np.float32)
    layer = tfc.layers.MultiHeadAttention(num_heads=2, key_dim=3, bias_initializer="random_normal")
    out, probs = layer(tfc.constant(q), tfc.constant(v), return_attention_scores=True, use_causal_mask=causal)
    assert out.shape == (2, 4, 6) and probs.shape == (2, 2, 4, v.shape[1])
    assert layer.query_kernel.shape == (6, 2, 3) and layer.key_kernel.shape == (3, 2, 3)
    assert layer.output_kernel.shape == (2, 3, 6)
    mask = np.broadcast_to(np.tril(np.ones((4, 4), bool)), (2, 4, 4)) if causal else None
    want, want_probs = _np_attention(layer, q.astype(np.float64), v.astype(np.float64), mask)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(probs.numpy(), want_probs, rtol=1e-4, atol=1e-6)
    if causal:
        assert np.all(probs.numpy()[:, :, 0, 1:] == 0)
    eager, compiled = eager_and_compiled(lambda a, b: layer(a, b, use_causal_mask=causal), tfc.constant(q),
                                         tfc.constant(v))
    np.testing.assert_array_equal(compiled.numpy(), eager.numpy())


def test_multi_head_attention_masks_key_and_output_shape(rng):
    q = rng.normal(size=(2, 3, 4)).astype(np.float32)
    v = rng.normal(size=(2, 3, 4)).astype(np.float32)
    layer = tfc.layers.MultiHeadAttention(num_heads=1, key_dim=2, value_dim=5, output_shape=7)
    mask = np.array([[[1, 0, 1]] * 3, [[1, 1, 0]] * 3], np.int32)
    out, probs = layer(tfc.constant(q), tfc.constant(v), attention_mask=tfc.constant(mask),
                       return_attention_scores=True, use_causal_mask=True)
    assert out.shape == (2, 3, 7) and layer.value_kernel.shape == (4, 1, 5)
    allowed = (mask != 0) & np.tril(np.ones((3, 3), bool))
    assert np.all(probs.numpy()[:, 0][~allowed] == 0)
    np.testing.assert_allclose(probs.numpy().sum(-1), 1.0, rtol=1e-6)
    # an explicit key: the same as passing the value twice
    same = layer(tfc.constant(q), tfc.constant(v), key=tfc.constant(v)).numpy()
    np.testing.assert_array_equal(same, layer(tfc.constant(q), tfc.constant(v)).numpy())
    # a key unlike the value (other features too) scores the queries; the value is what is averaged
    k = rng.normal(size=(2, 3, 5)).astype(np.float32)
    keyed = tfc.layers.MultiHeadAttention(num_heads=2, key_dim=3, bias_initializer="random_normal")
    out = keyed(tfc.constant(q), tfc.constant(v), key=tfc.constant(k)).numpy()
    assert keyed.key_kernel.shape == (5, 2, 3)
    want, _ = _np_attention(keyed, q.astype(np.float64), v.astype(np.float64), None, k_in=k.astype(np.float64))
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="key and value lengths differ"):
        layer(tfc.constant(q), tfc.constant(v), key=tfc.constant(v[:, :2]))
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        tfc.layers.MultiHeadAttention(0, 2)


def test_multi_head_attention_gradients(rng):
    q = rng.normal(size=(1, 3, 4))
    r = rng.normal(size=(1, 3, 4))
    layer = tfc.layers.MultiHeadAttention(num_heads=2, key_dim=2, bias_initializer="random_normal")
    layer(tfc.constant(q), tfc.constant(q))
    assert layer.query_kernel.dtype == tfc.float64
    check_grad(lambda t: _weighted(layer(t, t, use_causal_mask=True), r), q, rtol=1e-5, atol=1e-6)
    check_weight_grads(lambda: _weighted(layer(tfc.constant(q), tfc.constant(q), use_causal_mask=True), r),
                       layer.trainable_variables)


def test_multi_head_attention_none_batch_or_run_time_length():
    """A None batch, a None sequence length (the causal mask then made at run
    time), or both, compiles and equals eager, self- and cross-attention alike."""
    layer = tfc.layers.MultiHeadAttention(num_heads=2, key_dim=2, bias_initializer="random_normal")

    def attend(x):
        return layer(x, x, use_causal_mask=True)

    def cross(x, y):
        return layer(x, y)

    for spec in ([None, 3, 4], [2, None, 4], [None, None, 4]):
        f = tfc.function(attend, input_signature=[tfc.TensorSpec(spec)])
        g = tfc.function(cross, input_signature=[tfc.TensorSpec(spec), tfc.TensorSpec([None, None, 4])])
        for batch, length in [(b, t) for b, t in ((2, 3), (3, 3), (2, 5), (1, 1)) if spec[0] in (None, b)
                              and spec[1] in (None, t)]:
            x = tfc.constant(np.arange(batch * length * 4, dtype=np.float32).reshape(batch, length, 4) / 10)
            y = tfc.constant(np.cos(np.arange(batch * 6 * 4, dtype=np.float32)).reshape(batch, 6, 4))
            np.testing.assert_array_equal(f(x).numpy(), attend(x).numpy())
            np.testing.assert_array_equal(g(x, y).numpy(), cross(x, y).numpy())


def test_multi_head_attention_gradients_with_both_sizes_at_run_time_equal_eager(rng):
    layer = tfc.layers.MultiHeadAttention(num_heads=2, key_dim=3, bias_initializer="random_normal")
    x = tfc.constant(rng.normal(size=(2, 5, 4)).astype(np.float32))
    layer(x, x)

    def grads(t):
        with tfc.GradientTape() as tape:
            tape.watch(t)
            loss = tfc.reduce_sum(tfc.square(layer(t, t, use_causal_mask=True)))
        return tape.gradient(loss, [t, *layer.trainable_variables])

    compiled = tfc.function(grads, input_signature=[tfc.TensorSpec([None, None, 4])])(x)
    for c, e in zip(compiled, grads(x)):
        np.testing.assert_array_equal(c.numpy(), e.numpy())


def test_a_model_of_the_new_layers_round_trips_a_checkpoint(tmp_path, rng):
    class Tiny(tfc.Module):
        def __init__(self):
            super().__init__()
            self.embed = tfc.layers.Embedding(11, 4)
            self.attention = tfc.layers.MultiHeadAttention(2, 2)
            self.norm = tfc.layers.LayerNormalization()
            self.out = tfc.layers.Dense(11)

        def __call__(self, ids):
            h = self.embed(ids)
            return self.out(self.norm(h + self.attention(h, h, use_causal_mask=True)))

    ids = tfc.constant(rng.integers(0, 11, size=(2, 5)).astype(np.int32))
    model, opt = Tiny(), tfc.optimizers.AdamW(0.01)
    for _ in range(2):
        opt.minimize(lambda: tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(ids, model(ids))),
                     lambda: model.trainable_variables)
    path = tfc.train.Checkpoint(model=model, optimizer=opt).save(tmp_path / "tiny")
    fresh, fresh_opt = Tiny(), tfc.optimizers.AdamW(0.01)
    status = tfc.train.Checkpoint(model=fresh, optimizer=fresh_opt).restore(path)
    np.testing.assert_array_equal(fresh(ids).numpy(), model(ids).numpy())
    status.assert_consumed()
    assert [p for p, _ in fresh.variables_with_paths()] == [p for p, _ in model.variables_with_paths()]


def test_batch_normalization_with_a_none_batch_compiled_equals_eager(rng):
    x = tfc.constant(rng.normal(size=(5, 3)).astype(np.float32))
    compiled_layer, eager_layer = tfc.layers.BatchNormalization(), tfc.layers.BatchNormalization()
    f = tfc.function(lambda t: compiled_layer(t, training=True), input_signature=[tfc.TensorSpec([None, 3])])
    np.testing.assert_array_equal(f(x).numpy(), eager_layer(x, training=True).numpy())
    np.testing.assert_array_equal(compiled_layer.moving_variance.numpy(), eager_layer.moving_variance.numpy())


def test_gelu_and_silu_activations_by_name(rng):
    x = tfc.constant(rng.normal(size=(2, 4)).astype(np.float32))
    for name, fn in (("gelu", tfc.nn.gelu), ("silu", tfc.nn.silu), ("swish", tfc.nn.silu)):
        dense = tfc.layers.Dense(3, activation=name)
        np.testing.assert_array_equal(dense(x).numpy(), fn(tfc.matmul(x, dense.kernel) + dense.bias).numpy())


def test_multi_head_attention_dropout_only_while_training(rng):
    q = tfc.constant(rng.normal(size=(2, 3, 4)).astype(np.float32))
    layer = tfc.layers.MultiHeadAttention(2, 2, dropout=0.5, seed=1)
    inference = layer(q, q).numpy()
    np.testing.assert_array_equal(layer(q, q).numpy(), inference)
    assert not np.array_equal(layer(q, q, training=True).numpy(), inference)


def test_seeded_dropout_in_a_compiled_function_draws_eagers_masks_unseeded_draws_anew(rng):
    # call k draws with seed + k, eagerly and compiled alike (the layer's seed_calls variable)
    q = tfc.constant(rng.normal(size=(2, 3, 4)).astype(np.float32))

    def outputs(compiled):
        seeded = tfc.layers.MultiHeadAttention(2, 2, dropout=0.5, seed=1,
                                               kernel_initializer=tfc.layers.GlorotUniform(seed=2))
        f = tfc.function(lambda t: seeded(t, t, training=True)) if compiled else (lambda t: seeded(t, t, training=True))
        return [f(q).numpy() for _ in range(3)]

    eager, compiled = outputs(False), outputs(True)
    assert not np.array_equal(eager[0], eager[1])
    for e, c in zip(eager, compiled):
        np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-6)
    unseeded = tfc.layers.MultiHeadAttention(2, 2, dropout=0.5)
    step = tfc.function(lambda t: unseeded(t, t, training=True))
    assert not np.array_equal(step(q).numpy(), step(q).numpy())


def test_inputs_that_differ_from_the_built_shape_are_named():
    """A later call with other feature sizes (or rank) names the layer and the axis,
    before any moving statistic moves (it was a raw matmul or reshape error)."""
    q = tfc.ones((2, 3, 4))
    attention = tfc.layers.MultiHeadAttention(2, 2)
    attention(q, q)
    with pytest.raises(ValueError, match="MultiHeadAttention: query has 5 features on axis -1"):
        attention(tfc.ones((2, 3, 5)), q)
    bad_mask = r"attention_mask must be \[batch, Tq, Tv\].*\(2, 3, 3\).*got shape \(2, 5, 3\)"
    with pytest.raises(ValueError, match=bad_mask):
        attention(q, q, attention_mask=np.ones((2, 5, 3), bool))
    attention(q, q, attention_mask=np.ones((1, 3, 3), bool))  # a mask of batch 1 broadcasts
    conv = tfc.layers.Conv2D(2, 1)
    conv(tfc.ones((1, 2, 2, 3)))
    with pytest.raises(ValueError, match="Conv2D: the input has 4 features on axis -1"):
        conv(tfc.ones((1, 2, 2, 4)))
    norm = tfc.layers.BatchNormalization()
    norm(tfc.ones((2, 3)), training=True)
    before = norm.moving_mean.numpy().copy()
    with pytest.raises(ValueError, match="BatchNormalization: the input has 4 features on axis 1"):
        norm(tfc.ones((2, 4)), training=True)
    with pytest.raises(ValueError, match="BatchNormalization: the input has rank 3"):
        norm(tfc.ones((2, 2, 3)), training=True)
    np.testing.assert_array_equal(norm.moving_mean.numpy(), before)
    with pytest.raises(ValueError, match=r"momentum must be in \[0, 1\] \(a number\), got '0.9'"):
        tfc.layers.BatchNormalization(momentum="0.9")
    with pytest.raises(ValueError, match="filters must be a positive int, got True"):
        tfc.layers.Conv2D(True, 3)
