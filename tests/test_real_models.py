"""The two real models of examples/ (a char-level GPT, a digits CNN): eager against
compiled training steps, the causal mask, sampling, TensorBoard logs (the
examples' few-step runs from the command line are in test_examples.py)."""
import numpy as np
import pytest

import tfc

from tests.test_examples import example


@pytest.fixture(scope="module")
def lm():
    return example("transformer_lm")


def _gpt_batch(lm, batch=4, steps=16, seed=0):
    vocab = lm.Vocabulary(lm.TEXT.read_text())
    data = vocab.encode(lm.TEXT.read_text())
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(data) - steps - 1, batch)
    x = np.stack([data[s:s + steps] for s in starts])
    y = np.stack([data[s + 1:s + steps + 1] for s in starts])
    return vocab, tfc.constant(x), tfc.constant(y)


def _weights(model):
    return [v.numpy().copy() for v in model.trainable_variables]


def test_gpt_compiled_steps_equal_eager_steps(lm):
    vocab, x, y = _gpt_batch(lm)
    runs = []
    for compiled in (False, True):
        model = lm.GPT(len(vocab), width=32, heads=2, layers=2, context=16, seed=1)
        step = lm.make_train_step(model, tfc.optimizers.Adam(1e-2), compiled)
        losses = [float(step(x, y)) for _ in range(3)]
        runs.append((losses, _weights(model)))
    (eager_losses, eager_w), (comp_losses, comp_w) = runs
    assert eager_losses == comp_losses
    assert eager_losses[2] < eager_losses[0]
    for a, b in zip(eager_w, comp_w):
        np.testing.assert_array_equal(a, b)


def test_gpt_is_causal(lm):
    vocab, x, _ = _gpt_batch(lm, batch=2, steps=16)
    model = lm.GPT(len(vocab), width=32, heads=4, layers=1, context=16, seed=2)
    changed = x.numpy().copy()
    changed[:, 10:] = (changed[:, 10:] + 1) % len(vocab)
    a, b = model(x).numpy(), model(tfc.constant(changed)).numpy()
    np.testing.assert_array_equal(a[:, :10], b[:, :10])  # the future does not reach the past
    assert not np.allclose(a[:, 10:], b[:, 10:])


def test_gpt_initial_loss_is_uniform_guess(lm):
    vocab, x, y = _gpt_batch(lm)
    model = lm.GPT(len(vocab), seed=0, context=16)
    assert abs(float(lm.loss_fn(model, x, y)) - np.log(len(vocab))) < 0.05


def test_vocabulary_and_sample(lm):
    vocab = lm.Vocabulary("abca")
    assert vocab.decode(vocab.encode("cab")) == "cab"
    with pytest.raises(ValueError, match="not in the vocabulary: 'z'"):
        vocab.encode("az")
    text = lm.TEXT.read_text()
    full = lm.Vocabulary(text)
    model = lm.GPT(len(full), width=16, heads=2, layers=1, context=8, seed=0)
    out = lm.sample(model, full, "Shall I ", 12, seed=3)
    assert out.startswith("Shall I ") and len(out) == 20 and set(out) <= set(full.chars)
    assert out == lm.sample(model, full, "Shall I ", 12, seed=3)


def test_transformer_example_eager_equals_compiled(lm):
    # (seed 1: fresh models; seed 0 trains the example's module-level MODEL)
    eager = lm.train(steps=2, mode="eager", seed=1, sample_length=0, verbose=False)
    compiled = lm.train(steps=2, mode="compiled", seed=1, sample_length=0, verbose=False)
    assert eager["losses"] == compiled["losses"]


def test_transformer_example_tensorboard_log(lm, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    lm.train(steps=3, mode="compiled", logdir=str(tmp_path), sample_length=5, verbose=False)
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    tags = events.Tags()
    scalars = tags.get("scalars", []) + tags.get("tensors", [])
    assert "loss" in scalars


def test_cnn_example_eager_equals_compiled():
    cnn = pytest.importorskip("sklearn") and example("cnn_digits")
    eager = cnn.train(steps=3, mode="eager", seed=1, verbose=False)
    compiled = cnn.train(steps=3, mode="compiled", seed=1, verbose=False)
    assert eager["losses"] == compiled["losses"]
    assert eager["accuracy"] == compiled["accuracy"] == compiled["restored_accuracy"]
