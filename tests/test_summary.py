"""tfc.summary: event files read back with TensorBoard's own reader; summaries in
compiled code write each time the code runs, never while tracing."""
import io
import os

import numpy as np
import pytest
from PIL import Image
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.util import tensor_util

import tfc
from tfc import summary


def read(logdir) -> dict:
    """{tag: [(step, value as numpy), ...]} of every tensor summary under logdir."""
    acc = ea.EventAccumulator(str(logdir), size_guidance={ea.TENSORS: 0})
    acc.Reload()
    return {tag: [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)]
            for tag in acc.Tags()["tensors"]}


def plugin(logdir, tag) -> str:
    acc = ea.EventAccumulator(str(logdir))
    acc.Reload()
    return acc.SummaryMetadata(tag).plugin_data.plugin_name


@pytest.fixture
def writer(tmp_path):
    w = summary.create_file_writer(tmp_path / "logs")
    yield w
    w.close()


def test_eager_summaries_read_back(writer):
    data = np.random.default_rng(0).normal(size=(7, 3)).astype(np.float32)
    with writer.as_default():
        assert bool(summary.scalar("loss", 2.5, step=1))
        assert bool(summary.scalar("loss", tfc.constant(1.25), step=tfc.constant(2, tfc.int64)))
        summary.histogram("weights", tfc.constant(data), step=3, buckets=5)
        summary.text("note", "a *Markdown* note", step=4)
    writer.flush()
    got = read(writer.logdir)
    assert [(s, float(v)) for s, v in got["loss"]] == [(1, 2.5), (2, 1.25)]
    assert got["loss"][0][1].dtype == np.float32
    ((step, h),) = got["weights"]
    assert step == 3 and h.shape == (5, 3) and h[:, 2].sum() == data.size
    assert h[0, 0] == data.min() and h[-1, 1] == pytest.approx(data.max())
    assert got["note"] == [(4, np.array(b"a *Markdown* note", dtype=object))]
    assert [plugin(writer.logdir, t) for t in ("loss", "weights", "note")] == ["scalars", "histograms", "text"]


def test_histogram_buckets_are_tensorboards():
    from tensorboard.plugins.histogram.summary_v2 import histogram_pb

    rng = np.random.default_rng(1)
    for data, k in [(rng.normal(size=1000), 30), (rng.integers(0, 5, 50).astype(float), 7), (np.full(9, 3.0), 4),
                    (np.zeros(0), 3), (np.array([1.0, 2.0]), 1)]:
        want = tensor_util.make_ndarray(histogram_pb("h", data, buckets=k).value[0].tensor)
        np.testing.assert_array_equal(summary._histogram_buckets(data, k), want)


def test_histogram_of_nan_is_an_error(writer):
    with writer.as_default(), pytest.raises(ValueError, match="NaN or infinity"):
        summary.histogram("h", [1.0, float("nan")], step=0)


def test_images_read_back_as_pngs(writer):
    rng = np.random.default_rng(2)
    rgb = rng.random((4, 3, 5, 3)).astype(np.float32)
    rgb[0, 0, 0] = [-1.0, 2.0, 0.5]  # saturated, as TensorFlow converts floats
    gray = rng.integers(0, 256, (1, 2, 3, 1)).astype(np.int32)
    with writer.as_default():
        summary.image("rgb", rgb, step=0, max_outputs=2)
        summary.image("gray", gray, step=0)
    writer.flush()
    got = read(writer.logdir)
    (_, rgb_t), = got["rgb"]
    assert list(rgb_t[:2]) == [b"5", b"3"] and len(rgb_t) == 4  # width, height, then max_outputs images
    for png, want in zip(rgb_t[2:], rgb[:2]):
        px = np.asarray(Image.open(io.BytesIO(png)))
        np.testing.assert_array_equal(px, (np.clip(want, 0, 1) * 255.5).astype(np.uint8))
    assert tuple(np.asarray(Image.open(io.BytesIO(rgb_t[2])))[0, 0]) == (0, 255, 127)
    (_, gray_t), = got["gray"]
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(gray_t[2]))), gray[0, :, :, 0])
    assert plugin(writer.logdir, "rgb") == "images"


def test_bad_summaries_name_the_problem(writer):
    with writer.as_default():
        with pytest.raises(TypeError, match="step must be an integer scalar"):
            summary.scalar("loss", 1.0, step=1.5)
        with pytest.raises(ValueError, match="step is required"):
            summary.scalar("loss", 1.0)
        with pytest.raises(ValueError, match="numeric scalar"):
            summary.scalar("loss", [1.0, 2.0], step=0)
        with pytest.raises(ValueError, match=r"\[k, height, width, channels\]"):
            summary.image("img", np.zeros((2, 2, 3)), step=0)
        with pytest.raises(ValueError, match=r"in \[0, 255\]"):
            summary.image("img", np.full((1, 2, 2, 1), 300), step=0)
        with pytest.raises(TypeError, match="must be a str"):
            summary.text("t", 3, step=0)
        with pytest.raises(ValueError, match="buckets must be >= 1"):
            summary.histogram("h", [1.0], step=0, buckets=0)
    writer.flush()
    assert read(writer.logdir) == {}


def test_no_default_writer_is_a_no_op(tmp_path, writer):
    assert not bool(summary.scalar("loss", 1.0, step=0))
    assert not bool(summary.scalar("loss", 1.0))  # no step needed either, as in TensorFlow
    writer.flush()
    assert read(writer.logdir) == {}


def test_compiled_summaries_write_on_each_run_not_when_traced(writer):
    @tfc.function
    def step_fn(x, step):
        summary.scalar("loss", tfc.reduce_sum(x * x), step=step)
        summary.histogram("x", x, step=step)
        return x * 2.0

    conc = step_fn.get_concrete_function(tfc.TensorSpec((3,)), tfc.TensorSpec((), tfc.int64))
    assert conc.ir("loops").count('loops.library "write_summary"') == 2
    with writer.as_default():
        step_fn.get_concrete_function(tfc.TensorSpec((3,)), tfc.TensorSpec((), tfc.int64))
        writer.flush()
        assert read(writer.logdir) == {}  # tracing wrote nothing
        x = tfc.constant([1.0, 2.0, 3.0])
        np.testing.assert_array_equal(step_fn(x, tfc.constant(5, tfc.int64)).numpy(), [2.0, 4.0, 6.0])
        step_fn(x + 1.0, tfc.constant(6, tfc.int64))
    step_fn(x, tfc.constant(7, tfc.int64))  # no default writer now: nothing written
    assert step_fn.trace_count == 1
    writer.flush()
    got = read(writer.logdir)
    assert [(s, float(v)) for s, v in got["loss"]] == [(5, 14.0), (6, 29.0)]
    assert [s for s, _ in got["x"]] == [5, 6]


def test_compiled_summary_step_from_a_variable_and_odd_tags(writer):
    step = tfc.Variable(0, dtype=tfc.int64)
    tag = 'a"b\'\n); import os  #'

    @tfc.function
    def train():
        step.assign_add(1)
        summary.scalar(tag, tfc.cast(step, tfc.float32) * 0.5, step=step)
        summary.text("t", "quote \" and \\ backslash", step=step)
        return step.read_value()

    with writer.as_default():
        for _ in range(3):
            train()
    writer.flush()
    got = read(writer.logdir)
    assert [(s, float(v)) for s, v in got[tag]] == [(1, 0.5), (2, 1.0), (3, 1.5)]
    assert got["t"][0][1] == np.array('quote " and \\ backslash'.encode(), dtype=object)


def test_writers_nest_and_each_compiled_run_uses_the_current_one(tmp_path):
    a = summary.create_file_writer(tmp_path / "a")
    b = summary.create_file_writer(tmp_path / "b")

    @tfc.function
    def f(v):
        summary.scalar("v", v, step=0)
        return v

    with a.as_default():
        f(tfc.constant(1.0))
        with b.as_default():
            f(tfc.constant(2.0))
        f(tfc.constant(3.0))
    a.close()
    b.close()
    assert [float(v) for _, v in read(a.logdir)["v"]] == [1.0, 3.0]
    assert [float(v) for _, v in read(b.logdir)["v"]] == [2.0]


def test_closed_writer_refuses(writer):
    writer.close()
    with writer.as_default(), pytest.raises(RuntimeError, match="is closed"):
        summary.scalar("loss", 1.0, step=0)


def test_uncreatable_logdir_is_an_error_and_leaves_no_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError, match="cannot create the log directory"):
        summary.create_file_writer(blocker / "logs")
    with pytest.raises(OSError, match="cannot create the log directory"):
        summary.create_file_writer(blocker)
    assert sorted(os.listdir(tmp_path)) == ["file"] and blocker.read_text() == "not a directory"
    # bad queue settings are named before the directory is made (were raw int() errors)
    with pytest.raises(ValueError, match="max_queue must be an int >= 1, got 'x'"):
        summary.create_file_writer(tmp_path / "q", max_queue="x")
    with pytest.raises(ValueError, match="flush_millis must be a number >= 0, got -5"):
        summary.create_file_writer(tmp_path / "q", flush_millis=-5)
    assert sorted(os.listdir(tmp_path)) == ["file"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_unwritable_logdir_is_an_error(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        with pytest.raises(PermissionError, match="not writable"):
            summary.create_file_writer(d)
        assert os.listdir(d) == []
    finally:
        d.chmod(0o700)


def test_cuda_scalar_summary_is_a_host_call_between_kernels(cuda_driver, writer):
    @tfc.function(target="cuda")
    def step_fn(x, step):
        summary.scalar("loss", tfc.reduce_sum(x * x), step=step)
        return x * 2.0

    with writer.as_default():
        out = step_fn(tfc.constant([1.0, 2.0, 3.0]), tfc.constant(1, tfc.int64))
        step_fn(tfc.constant([1.0, 2.0, 4.0]), tfc.constant(2, tfc.int64))
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0, 6.0])
    writer.flush()
    assert [(s, float(v)) for s, v in read(writer.logdir)["loss"]] == [(1, 14.0), (2, 21.0)]


def test_cuda_summary_of_a_device_tensor_is_not_lowered_yet():
    def f(x, step):
        summary.histogram("x", x, step=step)
        return x

    with pytest.raises(NotImplementedError, match="no GPU kernel for write_summary"):
        tfc.compile(f, tfc.TensorSpec((4,)), tfc.TensorSpec((), tfc.int64), target="cuda").ir("gpu")


def test_compiled_control_flow_writes_when_it_runs(writer):
    @tfc.function
    def loop(n):
        i = tfc.constant(0, tfc.int64)
        s = tfc.constant(0.0)
        while i < n:
            s = s + tfc.cast(i, tfc.float32)
            if s > 2.0:
                summary.scalar("big", s, step=i)
            summary.scalar("s", s, step=i)
            i = i + 1
        return s

    with writer.as_default():
        assert float(loop(tfc.constant(5, tfc.int64))) == 10.0
    writer.flush()
    got = read(writer.logdir)
    assert [(s, float(v)) for s, v in got["s"]] == [(0, 0.0), (1, 1.0), (2, 3.0), (3, 6.0), (4, 10.0)]
    assert [s for s, _ in got["big"]] == [2, 3, 4]


def test_summary_in_a_differentiated_compiled_loop_is_refused(writer):
    x = tfc.Variable(2.0)

    @tfc.function
    def g():
        with tfc.GradientTape() as tape:
            y = x
            for k in tfc.range(3):
                y = y * x
                summary.scalar("y", y, step=tfc.cast(k, tfc.int64))
        return tape.gradient(y, x)

    with writer.as_default(), pytest.raises(NotImplementedError, match="write_summary"):
        g()


def test_namespace_shows_public_names_only():
    assert dir(summary) == ["SummaryWriter", "create_file_writer", "flush", "histogram", "image", "scalar", "text"]
    assert dir(tfc.data) == ["AUTOTUNE", "Dataset", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]


def test_exported_function_writes_summaries_in_a_fresh_process(tmp_path):
    import subprocess
    import sys

    def f(x, step):
        summary.scalar("loss", tfc.reduce_sum(x), step=step)
        return x * 2.0

    tfc.save(tfc.compile(f, tfc.TensorSpec((3,)), tfc.TensorSpec((), tfc.int64)), tmp_path / "art")
    code = (
        "import sys, tfc\n"
        "g = tfc.load(sys.argv[1])\n"
        "w = tfc.summary.create_file_writer(sys.argv[2])\n"
        "with w.as_default():\n"
        "    g(tfc.constant([1.0, 2.0, 3.0]), tfc.constant(4, tfc.int64))\n"
        "w.close()\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "art"), str(tmp_path / "logs")], check=True)
    assert [(s, float(v)) for s, v in read(tmp_path / "logs")["loss"]] == [(4, 6.0)]


def test_compiled_summaries_of_run_time_shapes_and_images(writer):
    @tfc.function(input_signature=[tfc.TensorSpec((None, 4)), tfc.TensorSpec((), tfc.int64)])
    def f(x, step):
        summary.histogram("x", x, step=step, buckets=3)
        summary.image("img", tfc.reshape(x, (-1, 2, 2, 1)) / 16.0, step=step, max_outputs=1)
        return x * 2.0

    xs = [np.arange(8.0, dtype=np.float32).reshape(2, 4), np.arange(12.0, dtype=np.float32).reshape(3, 4)]
    with writer.as_default():
        for i, x in enumerate(xs):
            f(tfc.constant(x), tfc.constant(i, tfc.int64))
    writer.flush()
    got = read(writer.logdir)
    for (step, h), x in zip(got["x"], xs):
        np.testing.assert_array_equal(h, summary._histogram_buckets(x, 3))
    for (step, t), x in zip(got["img"], xs):
        assert len(t) == 3  # width, height, one image
        px = np.asarray(Image.open(io.BytesIO(t[2])))
        np.testing.assert_array_equal(px, (x[0].reshape(2, 2) / 16.0 * 255.5).astype(np.uint8))


def test_eager_summaries_of_gpu_tensors(cuda_driver, writer):
    x = tfc.constant([1.0, 2.0, 3.0]).gpu()
    with writer.as_default():
        assert bool(summary.scalar("s", tfc.reduce_sum(x), step=1).cpu())
        summary.histogram("h", x, step=1, buckets=2)
    writer.flush()
    got = read(writer.logdir)
    assert [(s, float(v)) for s, v in got["s"]] == [(1, 6.0)]
    np.testing.assert_array_equal(got["h"][0][1], summary._histogram_buckets([1.0, 2.0, 3.0], 2))


def test_as_default_step(writer):
    step = tfc.Variable(0, dtype=tfc.int64)

    @tfc.function
    def train():
        step.assign_add(1)
        summary.scalar("v", tfc.cast(step, tfc.float32), step=None)  # the block's step: the variable, when it runs
        return step.read_value()

    with writer.as_default(step=step):
        train()
        train()
        summary.scalar("eager", 1.0)
        with writer.as_default(step=10):
            summary.scalar("inner", 2.0)
            summary.scalar("explicit", 3.0, step=4)
        with writer.as_default():  # no step: the outer one still holds
            summary.scalar("outer", 5.0)
    with writer.as_default(), pytest.raises(ValueError, match="step is required"):
        summary.scalar("none", 1.0)
    writer.flush()
    got = {t: [(s, float(v)) for s, v in evs] for t, evs in read(writer.logdir).items()}
    assert got == {"v": [(1, 1.0), (2, 2.0)], "eager": [(2, 1.0)], "inner": [(10, 2.0)], "explicit": [(4, 3.0)],
                   "outer": [(2, 5.0)]}


def test_compiled_training_step_with_a_tape_logs_loss_and_gradient(writer):
    v = tfc.Variable(3.0)
    step = tfc.Variable(0, dtype=tfc.int64)

    @tfc.function
    def train():
        step.assign_add(1)
        with tfc.GradientTape() as tape:
            loss = v * v
            summary.scalar("loss", loss, step=step)
        g = tape.gradient(loss, v)
        summary.scalar("grad", g, step=step)
        v.assign_sub(0.25 * g)
        return loss

    with writer.as_default():
        losses = [float(train()) for _ in range(3)]
    writer.flush()
    got = read(writer.logdir)
    assert [(s, float(x)) for s, x in got["loss"]] == list(zip([1, 2, 3], losses)) and losses == [9.0, 2.25, 0.5625]
    assert [float(x) for _, x in got["grad"]] == [6.0, 3.0, 1.5]
