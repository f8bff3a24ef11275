"""tfc.data: Dataset sources, transformations, cardinality, shuffle's buffer,
prefetch's thread, and datasets with compiled functions."""
import collections
import threading
import time
import traceback

import numpy as np
import pytest

import tfc
from tfc.data import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset


def values(ds):
    """The elements with numpy values (ints for scalars of int type), as lists."""
    out = []
    for e in ds.as_numpy_iterator():
        out.append(e)
    return out


def ints(ds):
    return [int(e) for e in ds]


def prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "tfc.data prefetch"]


# -- sources -------------------------------------------------------------------------------------


def test_from_tensor_slices_structures():
    x = np.arange(12, dtype=np.float64).reshape(4, 3)
    ds = Dataset.from_tensor_slices((x, {"label": [1, 2, 3, 4], "w": tfc.constant([0.5] * 4)}))
    assert len(ds) == 4 and ds.cardinality() == 4
    elems = list(ds)
    first = elems[0]
    assert isinstance(first, tuple) and isinstance(first[0], tfc.Tensor) and list(first[1]) == ["label", "w"]
    assert first[0].dtype == tfc.float64 and first[1]["label"].dtype == tfc.int32 and first[1]["w"].dtype == tfc.float32
    np.testing.assert_array_equal(np.stack([e[0].numpy() for e in elems]), x)
    assert [int(e[1]["label"]) for e in elems] == [1, 2, 3, 4]
    # a list is one tensor (sliced along its first dimension), not a structure
    assert [e.shape for e in Dataset.from_tensor_slices([[1, 2], [3, 4], [5, 6]])] == [(2,)] * 3
    Point = collections.namedtuple("Point", "x y")
    p = next(iter(Dataset.from_tensor_slices(Point([1.0, 2.0], [3.0, 4.0]))))
    assert isinstance(p, Point) and float(p.y) == 3.0
    # a list of tensors too is one tensor, stacked (tf.convert_to_tensor's rule), not a tuple
    rows = [e.numpy().tolist() for e in Dataset.from_tensor_slices([tfc.constant([1, 2]), tfc.constant([3, 4])])]
    assert rows == [[1, 2], [3, 4]]


def test_from_tensor_slices_copies_the_source():
    src = np.arange(3.0)
    ds = Dataset.from_tensor_slices(src)
    src[0] = 99.0
    assert [float(e) for e in ds] == [0.0, 1.0, 2.0]


def test_from_tensor_slices_errors():
    with pytest.raises(ValueError, match=r"same first dimension, got \[0\]: 3, \[1\]: 2"):
        Dataset.from_tensor_slices(([1, 2, 3], [1, 2]))
    with pytest.raises(ValueError, match="is a scalar"):
        Dataset.from_tensor_slices({"a": 1.0})
    with pytest.raises(TypeError, match=r"component \[1\]"):
        Dataset.from_tensor_slices(([1.0], ["a"]))


def test_from_generator_is_called_anew_each_pass_and_checks_its_signature():
    calls = []

    def gen():
        calls.append(1)
        for i in range(3):
            yield i, [float(i)] * 2

    sig = (tfc.TensorSpec((), tfc.int64), tfc.TensorSpec((None,), tfc.float32))
    ds = Dataset.from_generator(gen, output_signature=sig)
    assert ds.cardinality() == UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="length is unknown"):
        len(ds)
    for _ in range(2):
        got = list(ds)
        assert [int(i) for i, _ in got] == [0, 1, 2] and got[0][0].dtype == tfc.int64
        assert got[2][1].dtype == tfc.float32 and got[2][1].numpy().tolist() == [2.0, 2.0]
    assert len(calls) == 2

    def bad_shape():
        yield 0, [1.0, 2.0]
        yield 1, [[1.0]]

    with pytest.raises(TypeError, match=r"element 1, component \[1\]: got float32\[1, 1\], output_signature says "
                                        r"float32\[None\]"):
        list(Dataset.from_generator(bad_shape, output_signature=sig))

    def bad_structure():
        yield 0

    with pytest.raises(TypeError, match="element 0: the element should be a tuple of 2, got a value of type int"):
        list(Dataset.from_generator(bad_structure, output_signature=sig))

    def dicts():  # keys in any order: matched by name
        yield {"b": 1.0, "a": 2}
        yield {"a": 3, "b": 4.0}

    dsig = {"a": tfc.TensorSpec((), tfc.int32), "b": tfc.TensorSpec((), tfc.float32)}
    got = [(int(e["a"]), float(e["b"])) for e in Dataset.from_generator(dicts, output_signature=dsig)]
    assert got == [(2, 1.0), (3, 4.0)]
    batched = next(iter(Dataset.from_generator(dicts).batch(2)))
    assert batched["a"].numpy().tolist() == [2, 3] and batched["b"].numpy().tolist() == [1.0, 4.0]

    def missing_key():
        yield {"a": 1}

    with pytest.raises(TypeError, match=r"the element should be a dict with keys \['a', 'b'\], got a dict with "
                                        r"keys \['a'\]"):
        list(Dataset.from_generator(missing_key, output_signature=dsig))
    with pytest.raises(TypeError, match="must be a tfc.TensorSpec"):
        Dataset.from_generator(gen, output_signature=(tfc.float32,))
    with pytest.raises(TypeError, match="callable"):
        Dataset.from_generator(iter([1, 2]))
    # without a signature elements are converted as they come
    assert [e.numpy().tolist() for e in Dataset.from_generator(lambda: iter([[1, 2], [3, 4]]))] == [[1, 2], [3, 4]]


def test_range():
    assert ints(Dataset.range(4)) == [0, 1, 2, 3] and len(Dataset.range(4)) == 4
    assert ints(Dataset.range(2, 9, 3)) == [2, 5, 8] and ints(Dataset.range(5, 0, -2)) == [5, 3, 1]
    assert next(iter(Dataset.range(1))).dtype == tfc.int64
    assert ints(Dataset.range(tfc.constant(3))) == [0, 1, 2]
    huge = Dataset.range(10**15)  # lazy: nothing of that size is made
    assert len(huge) == 10**15 and ints(huge.take(2)) == [0, 1]
    with pytest.raises(ValueError, match="step must not be 0"):
        Dataset.range(0, 3, 0)
    with pytest.raises(TypeError, match="must be an int"):
        Dataset.range(2.5)


# -- transformations ------------------------------------------------------------------------------


def test_map_unpacks_tuples_and_passes_dicts_whole():
    ds = Dataset.from_tensor_slices(([1.0, 2.0], [10.0, 20.0]))
    assert [float(e) for e in ds.map(lambda a, b: a + b)] == [11.0, 22.0]
    pairs = ds.map(lambda a, b: [b, a])  # a list result is a tuple, as in tf.data
    assert [tuple(float(x) for x in e) for e in pairs] == [(10.0, 1.0), (20.0, 2.0)]
    d = Dataset.from_tensor_slices({"a": [1, 2], "b": [3, 4]}).map(lambda e: {"s": e["a"] * e["b"]})
    assert [int(e["s"]) for e in d] == [3, 8]
    numbers = Dataset.range(2).map(lambda i: [1, 2])  # any list result, of Python numbers too
    assert [tuple(int(x) for x in e) for e in numbers] == [(1, 2), (1, 2)]
    # a namedtuple is passed whole (tf.data unpacks plain tuples only), to map and filter
    Point = collections.namedtuple("Point", "x y")
    points = Dataset.from_tensor_slices(Point([1.0, 2.0], [3.0, 4.0]))
    assert [float(e) for e in points.map(lambda p: p.x * p.y)] == [3.0, 8.0]
    assert [float(p.x) for p in points.filter(lambda p: p.y > 3.5)] == [2.0]
    with pytest.raises(TypeError, match="component the element is None"):
        list(ds.map(lambda a, b: None))
    with pytest.raises(TypeError, match="callable"):
        ds.map(3)


def test_map_with_a_compiled_function():
    def scale(x, y):
        return x * 2.0 + tfc.reduce_sum(y), y

    compiled_scale = tfc.function(scale)
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    y = np.arange(6, dtype=np.float32)
    ds = Dataset.from_tensor_slices((x, y))
    compiled, eager = values(ds.map(compiled_scale)), values(ds.map(scale))
    assert len(compiled) == 6
    for (c0, c1), (e0, e1) in zip(compiled, eager):
        assert np.array_equal(c0, e0) and np.array_equal(c1, e1)
    assert compiled_scale.trace_count == 1  # one signature for every element


def test_filter():
    ds = Dataset.range(10)
    assert ints(ds.filter(lambda x: x % 3 == 0)) == [0, 3, 6, 9]
    assert ints(ds.filter(lambda x: int(x) > 7)) == [8, 9]  # a Python bool too
    pairs = Dataset.zip(ds, ds.map(lambda x: x * x)).filter(lambda a, b: b > 20)
    assert [int(a) for a, _ in pairs] == [5, 6, 7, 8, 9]
    assert ds.filter(lambda x: True).cardinality() == UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match=r"must return a bool or a scalar bool tensor, got int64\[\]"):
        list(ds.filter(lambda x: x))
    with pytest.raises(TypeError, match="got int"):
        list(ds.filter(lambda x: 1))


def test_shuffle_is_a_permutation_reproducible_with_a_seed_and_new_each_epoch():
    base = Dataset.range(50)
    a = base.shuffle(10, seed=7)
    e1, e2 = ints(a), ints(a)
    assert sorted(e1) == list(range(50)) and sorted(e2) == list(range(50))
    assert e1 != list(range(50)) and e1 != e2  # each pass shuffles anew
    b = Dataset.range(50).shuffle(10, seed=7)  # the same pipeline again: the same orders
    assert ints(b) == e1 and ints(b) == e2
    assert ints(Dataset.range(50).shuffle(10, seed=8)) != e1
    fixed = Dataset.range(50).shuffle(10, seed=7, reshuffle_each_iteration=False)
    assert ints(fixed) == ints(fixed)
    unseeded = Dataset.range(50).shuffle(50, reshuffle_each_iteration=False)
    assert ints(unseeded) == ints(unseeded)
    # without a seed: tfc's global random stream, which set_seed makes reproducible
    tfc.random.set_seed(11)
    g = Dataset.range(50).shuffle(50).repeat(2)
    first = ints(g)
    tfc.random.set_seed(11)
    assert ints(Dataset.range(50).shuffle(50).repeat(2)) == first and first[:50] != first[50:]
    # repeat after shuffle: every epoch its own order
    rep = ints(Dataset.range(20).shuffle(20, seed=1).repeat(2))
    assert sorted(rep[:20]) == sorted(rep[20:]) == list(range(20)) and rep[:20] != rep[20:]


def test_shuffle_has_tensorflows_buffer_semantics():
    n, k = 200, 8
    for seed in range(5):
        out = ints(Dataset.range(n).shuffle(k, seed=seed))
        # output i is drawn from a buffer holding only inputs < i + k
        assert all(v < i + k for i, v in enumerate(out))
    assert ints(Dataset.range(30).shuffle(1, seed=3)) == list(range(30))
    # a full buffer: every position takes every value with about equal frequency
    firsts = collections.Counter(ints(Dataset.range(4).shuffle(4, seed=s))[0] for s in range(400))
    assert set(firsts) == {0, 1, 2, 3} and min(firsts.values()) > 60
    with pytest.raises(ValueError, match="buffer_size must be >= 1"):
        Dataset.range(3).shuffle(0)


@pytest.mark.parametrize("shuffle", [None, 1, 7, 40])
@pytest.mark.parametrize("batch,drop", [(None, False), (1, False), (6, False), (6, True), (64, False)])
def test_rows_of_arrays_take_the_fast_path_with_the_same_elements(shuffle, batch, drop):
    """Slices (shuffled or not) are batched by gathering rows: the same elements,
    bit for bit, as the element-by-element path (a generator of the same rows)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(40, 2, 3)).astype(np.float32)
    y = rng.integers(0, 9, 40).astype(np.int64)

    def rows():
        for i in range(40):
            yield {"x": x[i], "y": y[i]}

    def pipeline(ds):
        ds = ds if shuffle is None else ds.shuffle(shuffle, seed=3)
        ds = ds if batch is None else ds.batch(batch, drop_remainder=drop)
        return ds.repeat(2)

    fast = values(pipeline(Dataset.from_tensor_slices({"x": x, "y": y})))
    slow = values(pipeline(Dataset.from_generator(rows)))
    assert len(fast) == len(slow) > 0
    for f, w in zip(fast, slow):
        for k in ("x", "y"):
            assert f[k].dtype == w[k].dtype and f[k].shape == w[k].shape and np.array_equal(f[k], w[k])


def test_batch():
    ds = Dataset.from_tensor_slices((np.arange(10.0).reshape(5, 2), [0, 1, 2, 3, 4]))
    batches = list(ds.batch(2))
    assert [b[0].shape for b in batches] == [(2, 2), (2, 2), (1, 2)] and batches[0][1].numpy().tolist() == [0, 1]
    assert ds.batch(2).cardinality() == 3 and len(ds.batch(2, drop_remainder=True)) == 2
    assert [b[1].numpy().tolist() for b in ds.batch(2, drop_remainder=True)] == [[0, 1], [2, 3]]
    assert batches[2][0].dtype == tfc.float64

    def ragged():
        yield [1.0, 2.0]
        yield [1.0]

    with pytest.raises(ValueError, match=r"cannot batch component the element .*float32\[2\] and float32\[1\]"):
        list(Dataset.from_generator(ragged).batch(2))
    def mixed():
        yield 1.0, 2.0
        yield (1.0,)

    with pytest.raises(TypeError, match="elements of one batch differ: the element should be a tuple of 2, got a "
                                        "tuple of 1"):
        list(Dataset.from_generator(mixed).batch(2))
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        ds.batch(0)
    with pytest.raises(TypeError, match="must be an int"):
        ds.batch(2.0)


def test_repeat_take_skip_enumerate_and_cardinality():
    ds = Dataset.range(3)
    assert ints(ds.repeat(2)) == [0, 1, 2, 0, 1, 2] and ds.repeat(2).cardinality() == 6
    assert ds.repeat().cardinality() == INFINITE_CARDINALITY
    with pytest.raises(TypeError, match="infinite"):
        len(ds.repeat())
    assert ints(ds.repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0] and len(ds.repeat().take(7)) == 7
    assert ints(Dataset.range(0).repeat()) == []  # repeating nothing ends
    assert ints(ds.take(-1)) == [0, 1, 2] and ints(ds.take(0)) == [] and ints(ds.take(10)) == [0, 1, 2]
    assert ints(ds.skip(1)) == [1, 2] and len(ds.skip(5)) == 0 and ints(ds.skip(-1)) == []
    pairs = [(int(i), int(x)) for i, x in ds.enumerate(start=10)]
    assert pairs == [(10, 0), (11, 1), (12, 2)]
    assert next(iter(ds.enumerate()))[0].dtype == tfc.int64
    assert ds.batch(2).repeat(3).cardinality() == 6
    with pytest.raises(ValueError, match="count must be >= 0"):
        ds.take(-2)


def test_zip():
    a, b = Dataset.range(3), Dataset.from_tensor_slices([10.0, 20.0])
    assert [(int(x), float(y)) for x, y in Dataset.zip(a, b)] == [(0, 10.0), (1, 20.0)]
    assert [(int(x), float(y)) for x, y in Dataset.zip((a, b))] == [(0, 10.0), (1, 20.0)]
    d = list(Dataset.zip({"i": a, "f": b}))
    assert list(d[0]) == ["i", "f"] and float(d[1]["f"]) == 20.0
    assert Dataset.zip(a, b).cardinality() == 2 and Dataset.zip(a, a.repeat()).cardinality() == 3
    assert Dataset.zip(a.repeat(), a.repeat()).cardinality() == INFINITE_CARDINALITY
    with pytest.raises(TypeError, match=r"\[1\] is a list, not a Dataset"):
        Dataset.zip(a, [1, 2])
    assert [int(x) for x in Dataset.zip(a)] == [0, 1, 2]  # one dataset: its elements, not 1-tuples (tf.data)


# -- prefetch ---------------------------------------------------------------------------------------


def test_prefetch_gives_the_same_elements():
    def pipeline():
        return Dataset.from_tensor_slices((np.arange(20.0).reshape(10, 2), np.arange(10))).shuffle(5, seed=2).batch(3)

    want = values(pipeline())
    for depth in (0, 1, 3, AUTOTUNE):
        got = values(pipeline().prefetch(depth))
        assert len(got) == len(want) and all(np.array_equal(g[0], w[0]) and np.array_equal(g[1], w[1])
                                             for g, w in zip(got, want))
    assert pipeline().prefetch(2).cardinality() == 4


def test_prefetch_runs_ahead_in_a_thread():
    produced = []

    def gen():
        for i in range(10):
            produced.append(threading.current_thread().name)
            yield i

    it = iter(Dataset.from_generator(gen).prefetch(3))
    assert int(next(it)) == 0
    deadline = time.monotonic() + 5
    while len(produced) < 5 and time.monotonic() < deadline:  # without being asked: 1 taken, 3 buffered,
        time.sleep(0.005)                                      # 1 made and waiting for room
    assert len(produced) == 5 and set(produced) == {"tfc.data prefetch"}
    time.sleep(0.05)
    assert len(produced) == 5  # no further than the buffer
    try:
        assert [int(x) for x in it] == list(range(1, 10))
    finally:
        it.close()
    assert not prefetch_threads()


def test_prefetch_overlaps_input_with_compute():
    def slow():
        for i in range(6):
            time.sleep(0.03)
            yield i

    t0 = time.perf_counter()
    for _ in Dataset.from_generator(slow).prefetch(2):
        time.sleep(0.03)  # the "training step"
    overlapped = time.perf_counter() - t0
    assert overlapped < 6 * 0.06 * 0.85, overlapped  # serial would be 6 * (0.03 + 0.03)


def test_prefetch_reraises_the_producers_error_with_its_traceback():
    def failing_map(x):
        if int(x) == 3:
            raise KeyError("bad element 3")
        return x

    ds = Dataset.range(10).map(failing_map).prefetch(2)
    seen = []
    with pytest.raises(KeyError, match="bad element 3") as info:
        for x in ds:
            seen.append(int(x))
    assert seen == [0, 1, 2]
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "failing_map" in frames
    assert not prefetch_threads()


def test_prefetch_stops_its_thread_when_the_consumer_stops():
    ds = Dataset.range(5).repeat().prefetch(2)
    for i, _ in enumerate(ds):
        if i == 3:
            break
    it = iter(ds)
    next(it)
    assert prefetch_threads()
    it.close()
    assert not prefetch_threads()
    it = iter(ds)
    next(it)
    del it  # garbage: the generator's finally stops the thread
    assert not prefetch_threads()
    nested = Dataset.range(100).prefetch(1).map(lambda x: x + 1).prefetch(1)
    it = iter(nested)
    assert int(next(it)) == 1
    assert len(prefetch_threads()) == 2
    it.close()  # the outer thread stops, and closes the inner pipeline with it
    assert not prefetch_threads()


# -- with compiled functions --------------------------------------------------------------------------


def test_a_for_over_a_dataset_inside_a_compiled_function_is_a_tensor_loop():
    # (tests/test_data_in_function.py tests every stage; this is the captured-dataset case)
    ds = Dataset.range(3)

    def total():
        s = tfc.constant(0, tfc.int64)
        for x in ds:
            s = s + x
        return s

    assert int(tfc.function(total)()) == int(total()) == 3


def test_iterating_inside_a_compiled_function_without_a_for_statement_is_a_clear_error():
    ds = Dataset.range(3)

    @tfc.function
    def total():
        return tfc.stack(list(ds))

    with pytest.raises(NotImplementedError, match="iterate over the dataset outside and call the compiled step"):
        total()


def test_training_loop_over_a_dataset_compiled_equals_eager():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]

    def run(compiled):
        w = tfc.Variable(np.zeros((3, 1), np.float32))

        def step(xb, yb):
            with tfc.GradientTape() as tape:
                loss = tfc.reduce_mean((tfc.matmul(xb, w) - yb) ** 2)
            w.assign_sub(0.1 * tape.gradient(loss, w))
            return loss

        step = tfc.function(step) if compiled else step
        ds = Dataset.from_tensor_slices((x, y)).shuffle(32, seed=4).batch(8, drop_remainder=True).repeat(3)
        losses = [step(xb, yb).numpy() for xb, yb in ds.prefetch(2)]
        return np.array(losses), w.numpy()

    le, we = run(False)
    lc, wc = run(True)
    assert len(le) == 12 and le[-1] < le[0]
    np.testing.assert_array_equal(lc, le)
    np.testing.assert_array_equal(wc, we)


def test_a_list_of_tensors_is_their_stack_of_their_dtype():
    # as tf.convert_to_tensor packs it (converted as an array, float64 became float32)
    t = tfc.constant([1.0, 2.0], tfc.float64)
    rows = list(Dataset.from_tensor_slices([t, t * 2.0, [5.0, 6.0]]))
    assert [r.dtype for r in rows] == [tfc.float64] * 3
    np.testing.assert_array_equal(np.stack([r.numpy() for r in rows]), [[1.0, 2.0], [2.0, 4.0], [5.0, 6.0]])
