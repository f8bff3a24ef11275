"""The softmax family and the cross-entropies against numpy, and their
gradients against finite differences (float64)."""
import numpy as np
import pytest

import tfc
from helpers import check_grad, check_second_grad


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_sparse_xent(labels, logits):
    logp = np.log(np_softmax(logits.astype(np.float64)))
    return -np.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_matches_numpy(rng, axis):
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(tfc.nn.softmax(x, axis=axis).numpy(), np_softmax(x, axis), rtol=1e-6)
    np.testing.assert_allclose(tfc.nn.log_softmax(x, axis=axis).numpy(), np.log(np_softmax(x, axis)),
                               rtol=1e-5, atol=1e-6)


def test_softmax_is_stable_for_large_logits():
    x = tfc.constant([[1000.0, 0.0, -1000.0], [-1e30, -1e30, -1e30]])
    s, ls = tfc.nn.softmax(x).numpy(), tfc.nn.log_softmax(x).numpy()
    assert np.all(np.isfinite(s)) and np.all(np.isfinite(ls))
    np.testing.assert_allclose(s, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], atol=1e-7)
    np.testing.assert_allclose(ls[0], [0, -1000, -2000])


def test_softmax_errors():
    with pytest.raises(TypeError, match="softmax.*int32"):
        tfc.nn.softmax(tfc.constant([1, 2]))
    with pytest.raises(ValueError, match="softmax.*axis 2 is out of range"):
        tfc.nn.softmax(tfc.ones([2, 3]), axis=2)
    with pytest.raises(ValueError, match="log_softmax.*scalar"):
        tfc.nn.log_softmax(tfc.constant(1.0))


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_gradients(rng, axis):
    x = rng.normal(size=(3, 4))
    w = rng.normal(size=(3, 4))  # weights make the checked sum depend on every output
    check_grad(lambda t: tfc.nn.softmax(t, axis=axis) * w, x)
    check_grad(lambda t: tfc.nn.log_softmax(t, axis=axis) * w, x)


def test_softmax_second_gradient(rng):
    w = rng.normal(size=(5,))
    check_second_grad(lambda t: tfc.nn.softmax(t) * w, rng.normal(size=(5,)))
    check_second_grad(lambda t: tfc.nn.log_softmax(t) * w, rng.normal(size=(5,)))


def test_sparse_xent_matches_numpy(rng):
    logits = rng.normal(size=(6, 4)).astype(np.float32) * 5
    labels = rng.integers(0, 4, size=6)
    out = tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert out.shape == (6,) and out.dtype == tfc.float32
    np.testing.assert_allclose(out.numpy(), np_sparse_xent(labels, logits), rtol=1e-5)


def test_sparse_xent_higher_rank_and_large_logits(rng):
    logits = rng.normal(size=(2, 3, 5)) * 1e3
    labels = rng.integers(0, 5, size=(2, 3)).astype(np.int32)
    out = tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, logits).numpy()
    z = logits - logits.max(-1, keepdims=True)
    ref = np.log(np.exp(z).sum(-1)) - np.take_along_axis(z, labels[..., None].astype(np.int64), -1)[..., 0]
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, ref, rtol=1e-12)


def test_sparse_xent_gradient_is_softmax_minus_onehot(rng):
    logits = rng.normal(size=(4, 3))
    labels = np.array([0, 2, 1, 2])
    check_grad(lambda t: tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, t), logits)
    x = tfc.constant(logits)
    with tfc.GradientTape() as tape:
        tape.watch(x)
        loss = tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, x)
    g = tape.gradient(loss, x).numpy()
    np.testing.assert_allclose(g, np_softmax(logits) - np.eye(3)[labels], rtol=1e-12)


def test_sparse_xent_weighted_and_second_gradient(rng):
    w = rng.normal(size=(4,))
    labels = np.array([1, 0, 2, 2])
    check_grad(lambda t: tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, t) * w, rng.normal(size=(4, 3)))
    x = tfc.constant(rng.normal(size=(4, 3)))
    with tfc.GradientTape() as outer:
        outer.watch(x)
        with tfc.GradientTape() as inner:
            inner.watch(x)
            loss = tfc.reduce_sum(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, x))
        g = inner.gradient(loss, x)
        gg = tfc.reduce_sum(g * g)
    h = outer.gradient(gg, x)
    assert h is not None and h.shape == (4, 3)
    # d/dx sum((softmax - onehot)^2) by finite differences
    from helpers import numeric_grad
    num = numeric_grad(lambda t: tfc.square(tfc.nn.softmax(t) - np.eye(3)[labels]), [x.numpy()])[0]
    np.testing.assert_allclose(h.numpy(), num, rtol=1e-5, atol=1e-7)


def test_sparse_xent_labels_get_no_gradient():
    labels = tfc.constant([0, 1])
    logits = tfc.constant([[1.0, 2.0], [3.0, 4.0]])
    with tfc.GradientTape() as tape:
        tape.watch(logits)
        loss = tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    assert tape.gradient(loss, labels) is None


def test_sparse_xent_errors():
    f = tfc.nn.sparse_softmax_cross_entropy_with_logits
    with pytest.raises(tfc.errors.InvalidArgumentError, match=r"labels must be in \[0, 3\).*\[3, -1\]"):
        f(labels=[0, 3, -1], logits=tfc.ones([3, 3]))
    with pytest.raises(ValueError, match=r"rank one more than labels.*\(2, 3\).*\(2, 3\)"):
        f(labels=tfc.zeros([2, 3], tfc.int32), logits=tfc.ones([2, 3]))
    with pytest.raises(ValueError, match=r"labels shape \(4,\).*logits shape \(2, 3\)"):
        f(labels=[0, 0, 0, 0], logits=tfc.ones([2, 3]))
    with pytest.raises(TypeError, match="labels has dtype float32"):
        f(labels=[0.0, 1.0], logits=tfc.ones([2, 3]))
    with pytest.raises(TypeError, match="logits has dtype int32"):
        f(labels=[0, 1], logits=tfc.ones([2, 3], tfc.int32))


def test_sigmoid_xent_matches_numpy(rng):
    x = rng.normal(size=(3, 4)) * 3
    z = rng.uniform(size=(3, 4))
    out = tfc.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x).numpy()
    p = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(out, -z * np.log(p) - (1 - z) * np.log(1 - p), rtol=1e-10)


def test_sigmoid_xent_is_stable():
    out = tfc.nn.sigmoid_cross_entropy_with_logits(labels=[0.0, 1.0, 0.0, 1.0], logits=[-1e4, 1e4, 1e4, -1e4])
    np.testing.assert_allclose(out.numpy(), [0, 0, 1e4, 1e4])


def test_sigmoid_xent_gradients(rng):
    check_grad(lambda z, x: tfc.nn.sigmoid_cross_entropy_with_logits(z, x),
               rng.uniform(size=(2, 3)), rng.normal(size=(2, 3)) * 3)
    check_second_grad(lambda x: tfc.nn.sigmoid_cross_entropy_with_logits(tfc.constant(np.full(4, 0.3)), x),
                      rng.normal(size=(4,)))


def test_sigmoid_xent_errors():
    with pytest.raises(ValueError, match=r"same shape.*\(3,\).*\(2,\)"):
        tfc.nn.sigmoid_cross_entropy_with_logits(labels=[0.0, 1.0, 1.0], logits=[1.0, 2.0])
    with pytest.raises(TypeError, match="int32"):
        tfc.nn.sigmoid_cross_entropy_with_logits(labels=tfc.constant([0, 1]), logits=tfc.constant([1, 2]))


def test_nn_namespace_reexports_math():
    assert tfc.nn.relu is tfc.relu and tfc.nn.sigmoid is tfc.sigmoid
    assert tfc.nn.tanh is tfc.tanh and tfc.nn.softplus is tfc.softplus


@pytest.mark.parametrize("label_dtype", [tfc.int8, tfc.int32, tfc.int64])
def test_sparse_xent_gradient_with_narrow_labels_and_many_classes(label_dtype):
    """The gradient's one-hot counts classes in int64: an int8 range over 300
    classes would wrap, and label 10 would also get -1 at class 266."""
    x = tfc.constant(np.zeros((2, 300), np.float32))
    labels = tfc.constant(np.array([10, 120], label_dtype.as_numpy_dtype))

    def grad(x, labels):
        with tfc.GradientTape() as tape:
            tape.watch(x)
            loss = tfc.reduce_sum(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x))
        return tape.gradient(loss, x)

    for g in (grad(x, labels), tfc.function(grad)(x, labels)):
        rows, cols = np.nonzero(g.numpy() < 0)
        assert rows.tolist() == [0, 1] and cols.tolist() == [10, 120]
