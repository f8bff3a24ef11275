"""Bad arguments to the APIs of session 9 (tfc.quantization.Config,
tfc.distribute outside a launcher, layers' constructors, a compile report's
path) are refused at once with an error naming the argument, and leave nothing
half-made behind."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tfc


@pytest.mark.parametrize("kwargs, cls, match", [
    ({"percentile": "a"}, ValueError, "percentile must be a number in"),
    ({"percentile": True}, ValueError, "percentile must be a number in"),
    ({"exclude": 3}, TypeError, "exclude must be a name or a list"),
    ({"per_channel": "no"}, TypeError, "per_channel must be True or False"),
    ({"quiet": 1}, TypeError, "quiet must be True or False"),
])
def test_quantization_config(kwargs, cls, match):
    with pytest.raises(cls, match=match):
        tfc.quantization.Config(**kwargs)
    config = tfc.quantization.Config(exclude=["matmul"], per_channel=np.bool_(False))
    assert config.exclude == ("matmul",) and not config.per_channel


def test_distribute_outside_a_launcher():
    v = tfc.Variable(np.float32([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"root must be a rank, 0 \.\. 0, got 5"):
        tfc.distribute.broadcast_variables([v], root=5)
    with pytest.raises(ValueError, match="root must be a rank"):
        tfc.distribute.broadcast_variables([v], root=True)
    tfc.distribute.broadcast_variables([v], root=0)  # one rank: nothing to do
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    for seed in ("a", -1, None, 2**64):
        with pytest.raises(TypeError, match=r"rank_seed: seed must be a non-negative int below 2\*\*64, got") as info:
            tfc.distribute.rank_seed(seed)
        assert "or None" not in str(info.value)  # None is refused too
        assert __file__ in "".join(getattr(info.value, "__notes__", []))
        with pytest.raises(TypeError, match="distribute.set_seed: seed must be a non-negative int"):
            tfc.distribute.set_seed(seed)
    assert tfc.distribute.rank_seed(np.int64(7)) == 7


@pytest.mark.parametrize("make, cls, match", [
    (lambda: tfc.layers.LayerNormalization(epsilon=-1), ValueError, "LayerNormalization: epsilon must be a number"),
    (lambda: tfc.layers.LayerNormalization(epsilon="a"), ValueError, "epsilon must be a number >= 0"),
    (lambda: tfc.layers.LayerNormalization(axis="a"), TypeError, "LayerNormalization: axis must be an int or"),
    (lambda: tfc.layers.BatchNormalization(axis=[1, 1.5]), TypeError, "BatchNormalization: axis must be an int"),
    (lambda: tfc.layers.BatchNormalization(epsilon=-1e-3), ValueError, "BatchNormalization: epsilon"),
    (lambda: tfc.layers.Sequential([tfc.layers.Dense(2), 3]), TypeError, r"Sequential: item 1 is a int \(3\)"),
    (lambda: tfc.layers.Dropout(0.5, seed=1.5), TypeError, "Dropout: seed must be a non-negative int"),
])
def test_layer_constructors(make, cls, match):
    with pytest.raises(cls, match=match):
        make()


def test_layer_constructors_accept_what_keras_does():
    assert tfc.layers.LayerNormalization(axis=[1, 2], epsilon=0).epsilon == 0.0
    assert tfc.layers.BatchNormalization(axis=np.int64(1)).axis == 1
    model = tfc.layers.Sequential([tfc.layers.Dense(2), tfc.nn.relu])
    model.add(tfc.layers.Dense(1))
    assert model(tfc.ones([3, 4])).shape == (3, 1)
    with pytest.raises(TypeError, match="Sequential: item 3"):
        model.add("relu")
    assert len(model.layers) == 3


@pytest.fixture(scope="module")
def compiled():
    return tfc.compile(lambda x: x * 2.0, tfc.TensorSpec((2,), tfc.float32))


def test_report_path_errors(compiled, tmp_path):
    pytest.importorskip("tfc.frontend.report.graph").dot_program()
    with pytest.raises(TypeError, match="report: the path must be a str or an os.PathLike, got int 3"):
        compiled.report(3)
    missing = str(tmp_path / "no" / "r.html")
    with pytest.raises(FileNotFoundError) as info:
        compiled.report(missing)
    assert info.value.filename == missing  # the user's path, not the temporary file
    with pytest.raises(IsADirectoryError) as info:
        compiled.report(str(tmp_path))
    assert info.value.filename == str(tmp_path)
    assert os.listdir(tmp_path) == []  # no temporary file left behind


def test_dataset_flags_are_bools():
    ds = tfc.data.Dataset.range(5)
    with pytest.raises(TypeError, match="Dataset.batch: drop_remainder must be True or False, got str 'yes'"):
        ds.batch(2, drop_remainder="yes")
    with pytest.raises(TypeError, match="reshuffle_each_iteration must be True or False"):
        ds.shuffle(2, reshuffle_each_iteration=1)
    assert len(ds.batch(2, drop_remainder=np.bool_(True))) == 2
    assert len(ds.batch(2, drop_remainder=tfc.constant(False))) == 3


def test_summary_arguments(tmp_path):
    with pytest.raises(TypeError, match="create_file_writer: logdir must be a str or an os.PathLike, got int 3"):
        tfc.summary.create_file_writer(3)
    with pytest.raises(TypeError, match="filename_suffix must be a str"):
        tfc.summary.create_file_writer(str(tmp_path / "a"), filename_suffix=3)
    assert not (tmp_path / "a").exists()  # refused before the directory is made
    writer = tfc.summary.create_file_writer(str(tmp_path / "b"))
    with pytest.raises(TypeError, match="as_default: step must be an int"):
        with writer.as_default(step="a"):
            pass
    with pytest.raises(TypeError, match="as_default: step must be an int"):
        with writer.as_default(step=tfc.constant(1.5)):
            pass
    with writer.as_default(step=np.int64(3)):
        with pytest.raises(TypeError, match="summary.scalar 'a': data must be numbers: cannot convert 'x'"):
            tfc.summary.scalar("a", "x")
        with pytest.raises(TypeError, match="summary.text 't': description must be a str, got 3"):
            tfc.summary.text("t", "x", description=3)
        assert bool(tfc.summary.scalar("ok", 1.0))
    writer.close()


@pytest.mark.parametrize("make, match", [
    (lambda: tfc.layers.Dense(2, use_bias="False"), "Dense: use_bias must be True or False, got 'False'"),
    (lambda: tfc.layers.Conv2D(2, 3, use_bias=0), "Conv2D: use_bias must be True or False"),
    (lambda: tfc.layers.GlobalAveragePooling2D(keepdims="no"), "GlobalAveragePooling2D: keepdims"),
    (lambda: tfc.layers.LayerNormalization(center="no"), "LayerNormalization: center must be True or False"),
    (lambda: tfc.layers.BatchNormalization(scale=None), "BatchNormalization: scale must be True or False"),
    (lambda: tfc.layers.MultiHeadAttention(2, 2, use_bias="yes"), "MultiHeadAttention: use_bias"),
    (lambda: tfc.optimizers.SGD(0.1, nesterov="False"), "SGD: nesterov must be True or False"),
    (lambda: tfc.optimizers.RMSprop(0.1, centered=1), "RMSprop: centered must be True or False"),
    (lambda: tfc.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5, staircase="yes"),
     "ExponentialDecay: staircase must be True or False"),
])
def test_flags_are_bools(make, match):
    """A truthy string or number (use_bias="False") is refused, not taken for True."""
    with pytest.raises(TypeError, match=match):
        make()
    assert tfc.layers.Dense(2, use_bias=np.bool_(False)).use_bias is False


@pytest.mark.parametrize("make", [
    lambda: tfc.concat([tfc.ones([2]), tfc.ones([2])], axis="a"),
    lambda: tfc.stack([tfc.ones([2])], axis=1.0),
    lambda: tfc.gather(tfc.ones([3]), [0], axis="0"),
    lambda: tfc.one_hot([0, 1], 3, axis=None),
], ids=["concat", "stack", "gather", "one_hot"])
def test_axis_of_a_shape_op_must_be_an_int(make):
    with pytest.raises(TypeError, match="axis must be an int"):
        make()


@pytest.mark.parametrize("make, error, match", [
    (lambda: tfc.nn.softmax(tfc.ones([2]), axis="a"), TypeError, "softmax: axis must be an int"),
    (lambda: tfc.nn.log_softmax(tfc.ones([2]), axis=0.0), TypeError, "log_softmax: axis must be an int"),
    (lambda: tfc.one_hot([0, 1], depth="a"), TypeError, "one_hot: depth must be an int"),
    (lambda: tfc.one_hot([0, 1], depth=-1), ValueError, "one_hot: depth must be >= 0"),
    (lambda: tfc.pad(tfc.ones([2]), [[1.5, 0]]), ValueError, "pairs"),  # was truncated to 1 silently
    (lambda: tfc.pad(tfc.ones([2]), "a"), ValueError, "pairs"),
], ids=["softmax", "log_softmax", "one_hot_str", "one_hot_negative", "pad_float", "pad_str"])
def test_int_arguments_of_nn_and_shape_ops(make, error, match):
    with pytest.raises(error, match=match):
        make()
