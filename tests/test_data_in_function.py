"""A tfc.data.Dataset inside tfc.function: ``for x in ds`` is a tensor loop over the
dataset's elements, a dataset argument is a nest of traced tensors keyed by its
pipeline (tfc/data/traced.py, docs/data.md). Every case runs eagerly and compiled
and compares bit for bit."""
import collections

import numpy as np
import pytest

import tfc
from tfc.core import nest
from tests.helpers import assert_bit_identical, check_grad

Dataset = tfc.data.Dataset

_X = np.arange(24, dtype=np.float32).reshape(8, 3) - 5.0  # integer-valued: sums are exact
_Y = np.arange(8, dtype=np.int64) * 3 - 7
Pair = collections.namedtuple("Pair", "a b")


def fold(ds):
    """Every element, in order, folded into numbers: each component's values and
    size and the element's position, so a missing, repeated, reordered or
    reshaped element changes the result."""
    acc = tfc.constant(0.0, tfc.float64)
    count = tfc.constant(0.0, tfc.float64)
    for e in ds:
        k = tfc.constant(1.0, tfc.float64)
        for c in nest.flatten(e):
            c = tfc.cast(c, tfc.float64)
            acc = acc * 1.25 + tfc.reduce_sum(c * k) + tfc.reduce_sum(tfc.ones_like(c)) * 0.5
            k = k + 1.0
        count += 1.0
    return acc, count


def double(x):
    return x * 2.0


def double_first(x, y):
    return x * 2.0, y


def branchy(x, y):
    # Python control flow on tensors: the map function is converted as TensorFlow's is
    if tfc.reduce_sum(x) > 0:
        x = x - 1.0
    else:
        x = -x
    return [x, y + 1]  # a list result is a tuple


def positive_sum(x):
    if tfc.reduce_sum(x) > 0:  # converted: a tensor `if`
        return True
    return False


compiled_double = tfc.function(double)

PIPELINES = {
    "slices": lambda: Dataset.from_tensor_slices(_X),
    "slices_int": lambda: Dataset.from_tensor_slices(tfc.constant([3, 1, 2], tfc.int32)),
    "slices_tuple": lambda: Dataset.from_tensor_slices((_X, _Y)),
    "slices_dict": lambda: Dataset.from_tensor_slices({"y": _Y, "x": _X}),
    "slices_namedtuple": lambda: Dataset.from_tensor_slices(Pair(_X, _Y)),
    "slices_list": lambda: Dataset.from_tensor_slices([[1.0, 2.0], [3.0, 4.0]]),
    "slices_empty": lambda: Dataset.from_tensor_slices(np.zeros((0, 2), np.float32)),
    "range": lambda: Dataset.range(5),
    "range_step": lambda: Dataset.range(2, 11, 3),
    "range_down": lambda: Dataset.range(9, 2, -2),
    "range_empty": lambda: Dataset.range(4, 1),
    "map": lambda: Dataset.from_tensor_slices(_X).map(double),
    "map_lambda_tuple": lambda: Dataset.from_tensor_slices((_X, _Y)).map(lambda x, y: (y, x + 1.0)),
    "map_converted": lambda: Dataset.from_tensor_slices((_X, _Y)).map(branchy),
    "map_compiled": lambda: Dataset.from_tensor_slices(_X).map(compiled_double),
    "map_to_dict": lambda: Dataset.range(4).map(lambda i: {"i": i, "sq": i * i}),
    "batch": lambda: Dataset.from_tensor_slices((_X, _Y)).batch(3),
    "batch_drop": lambda: Dataset.from_tensor_slices((_X, _Y)).batch(3, drop_remainder=True),
    "batch_exact": lambda: Dataset.from_tensor_slices(_X).batch(4),
    "batch_bigger": lambda: Dataset.from_tensor_slices(_X).batch(20),
    "batch_bigger_drop": lambda: Dataset.from_tensor_slices(_X).batch(20, drop_remainder=True),
    "batch_range": lambda: Dataset.range(7).batch(2),
    "map_batch": lambda: Dataset.from_tensor_slices(_X).map(double).batch(3),
    "map_batch_drop": lambda: Dataset.from_tensor_slices(_X).map(double).batch(3, drop_remainder=True),
    "batch_batch": lambda: Dataset.range(8).batch(2).batch(2),
    "batch_drop_batch": lambda: Dataset.range(7).batch(2, drop_remainder=True).batch(2),
    "map_empty_batch": lambda: Dataset.from_tensor_slices(_X[:0]).map(double).batch(3),
    "skip_past_the_end_batch": lambda: Dataset.range(3).skip(5).batch(2, drop_remainder=True),
    "batch_map": lambda: Dataset.from_tensor_slices(_X).batch(3).map(lambda b: tfc.reduce_sum(b, axis=0)),
    "take": lambda: Dataset.from_tensor_slices(_X).take(3),
    "take_all": lambda: Dataset.from_tensor_slices(_X).take(-1),
    "take_more": lambda: Dataset.from_tensor_slices(_X).take(100),
    "skip": lambda: Dataset.from_tensor_slices(_X).skip(5),
    "skip_all": lambda: Dataset.from_tensor_slices(_X).skip(-1),
    "skip_more": lambda: Dataset.from_tensor_slices(_X).skip(100),
    "enumerate": lambda: Dataset.from_tensor_slices(_X).enumerate(),
    "enumerate_start": lambda: Dataset.from_tensor_slices(_Y).enumerate(10).batch(3),
    "zip": lambda: Dataset.zip(Dataset.from_tensor_slices(_X), Dataset.range(3, 100)),
    "zip_dict": lambda: Dataset.zip({"r": Dataset.range(5), "x": Dataset.from_tensor_slices(_X)}),
    "zip_one": lambda: Dataset.zip(Dataset.from_tensor_slices(_Y)),
    "zip_batch": lambda: Dataset.zip((Dataset.from_tensor_slices(_Y), Dataset.range(6))).batch(4),
    "repeat": lambda: Dataset.from_tensor_slices(_Y).take(3).repeat(3),
    "repeat_zero": lambda: Dataset.from_tensor_slices(_Y).repeat(0),
    "repeat_batch": lambda: Dataset.range(3).repeat(3).batch(4),
    "repeat_endless_take": lambda: Dataset.range(3).repeat().take(7),
    "repeat_endless_empty": lambda: Dataset.range(0).repeat(),
    "skip_take_repeat": lambda: Dataset.from_tensor_slices(_X).skip(2).take(3).repeat(2).enumerate(),
    "prefetch": lambda: Dataset.from_tensor_slices((_X, _Y)).batch(3).prefetch(2),
    "filter": lambda: Dataset.from_tensor_slices((_X, _Y)).filter(lambda x, y: y % 2 == 0),
    "filter_none": lambda: Dataset.range(6).filter(lambda x: x > 100),
    "filter_all": lambda: Dataset.range(6).filter(lambda x: True),
    "filter_empty": lambda: Dataset.range(0).filter(lambda x: x > 1),
    "filter_converted": lambda: Dataset.from_tensor_slices(_X).filter(positive_sum),
    "filter_map_filter_repeat": lambda: (Dataset.range(12).filter(lambda x: x % 2 == 0).map(lambda x: x + 1)
                                         .filter(lambda x: x % 3 != 0).repeat(2)),
    "shuffle_fixed": lambda: Dataset.from_tensor_slices((_X, _Y)).shuffle(3, seed=5, reshuffle_each_iteration=False),
    "shuffle_fixed_batch": lambda: (Dataset.from_tensor_slices(_X).map(double)
                                    .shuffle(8, seed=2, reshuffle_each_iteration=False).batch(3)),
    "shuffle_fixed_repeat": lambda: (Dataset.from_tensor_slices(_Y).shuffle(2, seed=0, reshuffle_each_iteration=False)
                                     .repeat(2)),
    "filter_batch": lambda: Dataset.range(10).filter(lambda x: x % 3 != 1).batch(3),
    "filter_batch_drop": lambda: Dataset.range(10).filter(lambda x: x % 3 != 1).batch(3, drop_remainder=True),
    "filter_enumerate_take": lambda: (Dataset.from_tensor_slices(_X).filter(lambda r: tfc.reduce_sum(r) > 0)
                                      .enumerate(2).take(3)),
    "map_filter_skip": lambda: (Dataset.from_tensor_slices(_X).map(double)
                                .filter(lambda r: tfc.reduce_sum(r) > 0).skip(1)),
    "zip_filtered": lambda: Dataset.zip(Dataset.range(10).filter(lambda x: x % 2 == 0), Dataset.from_tensor_slices(_X)),
    "filter_none_batch": lambda: Dataset.range(10).filter(lambda x: x > 100).batch(2),
    "filter_empty_enumerate": lambda: Dataset.range(0).filter(lambda x: x > 100).enumerate(),
    "batch_filter": lambda: Dataset.from_tensor_slices(_X).batch(3).filter(lambda b: tfc.reduce_sum(b) > 0),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_every_stage_compiled_equals_eager(name):
    make = PIPELINES[name]
    want = fold(make())
    assert_bit_identical(list(tfc.function(fold)(make())), list(want))


@pytest.mark.parametrize("name", ["slices_tuple", "slices_dict", "map_converted", "zip_dict", "enumerate"])
def test_the_last_element_keeps_its_structure_dtypes_and_values(name):
    def last(ds):
        for e in ds:
            out = e
        return out

    want, got = last(PIPELINES[name]()), tfc.function(last)(PIPELINES[name]())
    assert type(got) is type(want) and nest.structure_signature(got) == nest.structure_signature(want)
    assert_bit_identical(nest.flatten(got), nest.flatten(want))


# -- loop control and state ----------------------------------------------------------------------


def break_continue_return(ds, limit):
    s = 0
    for x in ds:
        if x % 2 == 0:
            continue
        if x > limit:
            break
        if x == 7:
            return -s
        s = s * 10 + x
    return s


@pytest.mark.parametrize("values", [[], [1], [2, 4], [1, 2, 3, 4, 5], [3, 9, 1], [1, 7, 3]], ids=str)
@pytest.mark.parametrize("limit", [4, 100])
def test_break_continue_return(values, limit):
    def ds():
        return Dataset.from_tensor_slices(tfc.constant(values, tfc.int32).numpy().reshape(-1))

    f = tfc.function(break_continue_return)
    assert_bit_identical(f(ds(), tfc.constant(limit)), tfc.constant(break_continue_return(ds(), limit)))


def variable_in_loop(ds, v):
    for x, y in ds:
        v.assign_add(tfc.reduce_sum(x) * tfc.cast(tfc.reduce_sum(y), tfc.float32))
    return v.read_value()


def test_a_variable_updated_in_the_loop():
    def run(f):
        return f(Dataset.from_tensor_slices((_X, _Y)).batch(3), tfc.Variable(np.float32(1.5)))

    assert_bit_identical(run(tfc.function(variable_in_loop)), run(variable_in_loop))


def nested(a, b):
    s = tfc.constant(0, tfc.int64)
    for x in a:
        for y in b:
            if y > x:
                break
            s = s * 3 + x * 10 + y
    return s


def test_nested_loops_over_two_dataset_arguments():
    a, b = Dataset.range(1, 5), Dataset.from_tensor_slices(np.array([0, 2, 3, 1], np.int64))
    assert_bit_identical(tfc.function(nested)(a, b), nested(a, b))


def endless(ds, stop):
    s = 0
    for x in ds.repeat():
        s += x
        if s > stop:
            break
    return s


def test_an_endless_dataset_ends_by_break():
    ds = Dataset.from_tensor_slices(tfc.constant([1, 2, 3]))
    assert_bit_identical(tfc.function(endless)(ds, tfc.constant(40)), endless(ds, tfc.constant(40)))


def inside_a_tensor_loop(ds, n):
    s = tfc.constant(0.0)
    for i in tfc.range(n):
        for x in ds:
            s = s + tfc.reduce_sum(x) * tfc.cast(i, tfc.float32)
    return s


def test_a_dataset_loop_inside_a_tensor_loop():
    ds = Dataset.from_tensor_slices(_X).batch(3)
    assert_bit_identical(tfc.function(inside_a_tensor_loop)(ds, tfc.constant(3)),
                         inside_a_tensor_loop(ds, tfc.constant(3)))


# -- datasets built inside the function ------------------------------------------------------------


def built_inside(x, y, n):
    s = tfc.constant(0, tfc.int64)
    for i in Dataset.range(n):  # a traced bound: the length is known at run time
        s = s + i
    for i in Dataset.range(1, 4):
        s = s * 2 + i
    for a, b in Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * 2, b)).batch(3):
        s = s * 5 + tfc.cast(tfc.reduce_sum(a), tfc.int64) + tfc.reduce_sum(b)
    for i, r in Dataset.zip(Dataset.range(n, 2 * n, 2), Dataset.from_tensor_slices(x)):
        s = s + i * tfc.cast(tfc.reduce_sum(r), tfc.int64)
    return s


@pytest.mark.parametrize("n", [0, 1, 5])
def test_datasets_built_from_traced_tensors(n):
    x, y = tfc.constant(_X.astype(np.int32)), tfc.constant(_Y)
    f = tfc.function(built_inside)
    assert_bit_identical(f(x, y, tfc.constant(n, tfc.int64)), built_inside(x, y, tfc.constant(n, tfc.int64)))


# -- tracing ----------------------------------------------------------------------------------------


def test_the_same_pipeline_and_specs_reuse_the_trace():
    f = tfc.function(fold)
    for scale in (1.0, 2.0, -3.0):  # a lambda made anew each time: the same code and closure
        ds = Dataset.from_tensor_slices((_X, _Y)).map(lambda x, y: (x * 2.0, y)).batch(3)
        assert_bit_identical(list(f(ds)), list(fold(ds)))
    assert f.trace_count == 1
    for scale in (1.0, 2.0, -3.0):  # ... but another closure value: retraced, not reused
        ds = Dataset.from_tensor_slices((_X, _Y)).map(lambda x, y: (x * scale, y)).batch(3)
        assert_bit_identical(list(f(ds)), list(fold(ds)))
    assert f.trace_count == 4
    assert "map(<lambda> at test_data_in_function.py:" in f.explain()[0]

    g = tfc.function(fold)
    for scale in (1.0, 2.0, -3.0):
        ds = Dataset.from_tensor_slices((_X * scale, _Y)).map(double_first).batch(3).prefetch(1)
        assert_bit_identical(list(g(ds)), list(fold(ds)))
    assert g.trace_count == 1
    for stop in (3, 5, 0):  # range bounds are traced inputs
        g(Dataset.range(stop))
    assert g.trace_count == 2


@pytest.mark.parametrize("change", [
    lambda: Dataset.from_tensor_slices((_X, _Y)).map(double_first).batch(4),       # batch size
    lambda: Dataset.from_tensor_slices((_X, _Y)).map(double_first).batch(3, True),  # drop_remainder
    lambda: Dataset.from_tensor_slices((_X[:5], _Y[:5])).map(double_first).batch(3),  # source shape
    lambda: Dataset.from_tensor_slices((_X, _Y.astype(np.int32))).map(double_first).batch(3),  # dtype
    lambda: Dataset.from_tensor_slices((_X, _Y)).map(branchy).batch(3),      # map function
    lambda: Dataset.from_tensor_slices({"x": _X, "y": _Y}).batch(3),          # element structure
], ids=["batch_size", "drop_remainder", "shape", "dtype", "map_function", "structure"])
def test_another_pipeline_retraces(change):
    f = tfc.function(fold)
    f(Dataset.from_tensor_slices((_X, _Y)).map(double_first).batch(3))
    ds = change()
    assert_bit_identical(list(f(ds)), list(fold(ds)))
    assert f.trace_count == 2
    assert "argument ds" in f.explain()[-1]


# -- errors -----------------------------------------------------------------------------------------


def _gen():
    yield from range(3)


@pytest.mark.parametrize("make,match", [
    (lambda: Dataset.from_generator(_gen), "from_generator .*iterate over the dataset outside"),
    (lambda: Dataset.range(5).map(lambda x: x).shuffle(5, seed=1), "shuffle .*each pass draws a new order"),
    (lambda: Dataset.range(5).shuffle(5, reshuffle_each_iteration=False), "shuffle .*it has no seed"),
    (lambda: Dataset.range(5).repeat().filter(lambda x: x > 2).take(2),
     "take after a filter of an endless dataset .*not implemented"),
], ids=["from_generator", "shuffle", "shuffle_unseeded", "take_after_endless_filter"])
def test_stages_that_cannot_run_compiled_are_clear_errors(make, match):
    def total(ds):
        s = tfc.constant(0, tfc.int64)
        for x in ds:
            s += tfc.cast(x, tfc.int64)
        return s

    total(make())  # eagerly they work
    with pytest.raises(NotImplementedError, match=match):
        tfc.function(total)(make())

    captured = make()

    @tfc.function
    def closure():
        return total(captured)

    with pytest.raises(NotImplementedError, match=match):
        closure()


def test_an_element_whose_structure_differs_from_the_loop_variable_is_an_error():
    def f(ds):
        e = (tfc.constant(0.0), tfc.constant(0, tfc.int64))
        for x in ds:
            e = x
        return e

    f(Dataset.from_tensor_slices((_X[:, 0], _Y)))
    with pytest.raises(ValueError, match="nested structure"):
        tfc.function(f)(Dataset.from_tensor_slices({"x": _X[:, 0], "y": _Y}))


def test_a_map_function_returning_none_is_an_error():
    def f(ds):
        s = tfc.constant(0.0)
        for x in ds:
            s += x
        return s

    with pytest.raises(TypeError, match="the result of <lambda>: component the element is None"):
        tfc.function(f)(Dataset.from_tensor_slices(_X[:, 0]).map(lambda x: None))


def test_a_filter_predicate_that_is_no_bool_is_an_error():
    with pytest.raises(TypeError, match="Dataset.filter: <lambda> must return a bool or a scalar bool tensor, got "
                                        "float32\\[\\]"):
        tfc.function(fold)(Dataset.from_tensor_slices(_X[:, 0]).filter(lambda x: x))


def test_for_else_over_a_dataset_is_not_supported():
    def f(ds):
        s = tfc.constant(0.0)
        for x in ds:
            s += x
        else:
            s += 1.0
        return s

    with pytest.raises(NotImplementedError, match="for/else over a tfc.data.Dataset"):
        tfc.function(f)(Dataset.from_tensor_slices(_X[:, 0]))


def test_the_cache_does_not_keep_a_dataset_alive():
    import gc
    import weakref

    f = tfc.function(fold)
    ds = Dataset.from_tensor_slices(np.ones((1000, 10), np.float32))
    f(ds)
    ref = weakref.ref(ds)
    del ds
    gc.collect()
    assert ref() is None


# -- gradients --------------------------------------------------------------------------------------


def weighted(ds, w):
    s = tfc.constant(0.0, tfc.float64)
    k = tfc.constant(1.0, tfc.float64)
    for x, y in ds:
        s = s + tfc.reduce_sum(tfc.sin(x * w)) * k + tfc.reduce_sum(y * y)
        k += 1.0
    return s


@pytest.mark.parametrize("pipeline", [
    lambda x, y: Dataset.from_tensor_slices((x, y)),
    lambda x, y: Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * 2.0, b)).batch(2),
    lambda x, y: Dataset.from_tensor_slices((x, y)).batch(2, drop_remainder=True).repeat(2),
    lambda x, y: Dataset.from_tensor_slices((x, y)).filter(lambda a, b: b > 1.0),
], ids=["slices", "map_batch", "batch_drop_repeat", "filter"])
def test_gradients_through_the_loop_reach_the_source_tensors(pipeline):
    x0 = np.linspace(-1.0, 1.0, 10).reshape(5, 2)
    y0 = np.linspace(0.5, 2.0, 5)
    w0 = np.array(0.7)
    compiled = tfc.function(weighted)

    def grads(f):
        x, y, w = tfc.constant(x0), tfc.constant(y0), tfc.constant(w0)
        with tfc.GradientTape() as tape:
            tape.watch([x, y, w])
            out = f(pipeline(x, y), w)
        return [out] + tape.gradient(out, [x, y, w])

    assert_bit_identical(grads(compiled)[0], grads(weighted)[0])
    for g, e in zip(grads(compiled)[1:], grads(weighted)[1:]):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)
    check_grad(lambda x, y, w: compiled(pipeline(x, y), w), x0, y0, w0)


@pytest.mark.parametrize("tracking", ["outer", "inner"])
def test_eager_gradients_reach_the_source_under_nested_tapes(tracking):
    # whichever of two active tapes tracks the source, the eager batches are recorded for it
    x = tfc.constant(np.arange(6, dtype=np.float64).reshape(3, 2))
    with tfc.GradientTape() as outer:
        with tfc.GradientTape() as inner:
            (outer if tracking == "outer" else inner).watch(x)
            s = tfc.constant(0.0, tfc.float64)
            for b in Dataset.from_tensor_slices(x).map(lambda r: r * 2.0).batch(2):
                s = s + tfc.reduce_sum(b * b)
    g = (outer if tracking == "outer" else inner).gradient(s, x)
    np.testing.assert_array_equal(g.numpy(), 8.0 * x.numpy())


def run_time_rows(x):
    s = tfc.constant(0.0)
    for b in Dataset.from_tensor_slices(x).batch(2):
        s = s * 2.0 + tfc.reduce_sum(b)
    for r in Dataset.from_tensor_slices(x).skip(1).filter(lambda r: tfc.reduce_sum(r) > 10.0):
        s = s + tfc.reduce_max(r)
    return s


def test_a_source_with_a_run_time_first_dimension():
    f = tfc.function(run_time_rows, input_signature=[tfc.TensorSpec([None, 3], tfc.float32)])
    for n in (0, 1, 4, 5):
        x = tfc.constant(np.arange(n * 3, dtype=np.float32).reshape(n, 3))
        assert_bit_identical(f(x), run_time_rows(x))
    assert f.trace_count == 1


def test_a_concrete_function_runs_only_the_pipeline_it_was_traced_for():
    conc = tfc.function(fold).get_concrete_function(Dataset.from_tensor_slices(_X).batch(2))
    other = Dataset.from_tensor_slices(_X * 2.0).batch(2)
    assert_bit_identical(list(conc(other)), list(fold(other)))
    with pytest.raises(TypeError, match="a dataset argument's pipeline .* differs from the one this concrete"):
        conc(Dataset.from_tensor_slices(_X).batch(4))


def test_the_traced_loop_is_the_minimum():
    # sources reshaped once into batches; per trip one index, the body and the counter;
    # no loop to make indices (tfc.range's TensorArray loop made an epoch 10x slower)
    ir = tfc.function(fold).get_concrete_function(Dataset.from_tensor_slices((_X, _Y)).batch(2, True)).ir()
    assert ir.count("tfc.reshape") == 2 and ir.count("tfc.while") == 1
    assert "max_iterations = 4" in ir and "tensor_array" not in ir
    partial = tfc.function(fold).get_concrete_function(Dataset.range(7).batch(2)).ir()
    assert "tfc.cumsum" in partial and "tensor_array" not in partial


def datasets_in_nests(pair, scale, extra=None):
    s = tfc.constant(0.0)
    for ds in pair:  # a Python loop over a list of datasets: each a tensor loop
        for x in ds:
            s = s + tfc.reduce_sum(x) * scale
    for x in extra["d"]:
        s = s - tfc.reduce_sum(x)
    return s


def test_datasets_nested_in_arguments_and_keywords():
    a = Dataset.from_tensor_slices(_X)
    b = Dataset.from_tensor_slices(_X[:, 0]).batch(3)
    f = tfc.function(datasets_in_nests)
    for pair, d in (([a, b], a), ((a, a), b), ([a, b], Dataset.from_tensor_slices(_X * 3.0))):
        assert_bit_identical(f(pair, tfc.constant(2.0), extra={"d": d}),
                             datasets_in_nests(pair, tfc.constant(2.0), extra={"d": d}))
    assert f.trace_count == 2


def enumerate_builtin(ds):
    s = tfc.constant(0, tfc.int64)
    for step, (x, y) in enumerate(ds, 1):  # as TensorFlow: ds.enumerate(1), an int64 count
        s = s + step * (tfc.cast(tfc.reduce_sum(x), tfc.int64) + y)
    return s


def test_python_enumerate_over_a_dataset():
    ds = Dataset.from_tensor_slices((_X, _Y))
    assert_bit_identical(tfc.function(enumerate_builtin)(ds), enumerate_builtin(ds))


def zip_builtin(a, b):
    s = tfc.constant(0, tfc.int64)
    for x, (i, y) in zip(a, b):  # as TensorFlow: Dataset.zip(a, b)
        s = s * 3 + tfc.cast(tfc.reduce_sum(x), tfc.int64) * i + y
    for u, v in zip([1, 2], [3, 4]):  # Python lists: Python's zip
        s = s + u * v
    return s


def test_python_zip_over_datasets():
    a, b = Dataset.from_tensor_slices(_X), Dataset.zip(Dataset.range(3, 9), Dataset.from_tensor_slices(_Y))
    assert_bit_identical(tfc.function(zip_builtin)(a, b), zip_builtin(a, b))


class Scaler:
    def __init__(self, k):
        self.k = k

    def scale(self, x):
        return x * self.k


def test_bound_methods_and_partials_made_anew_reuse_the_trace():
    import functools

    f = tfc.function(fold)
    s, one = Scaler(3.0), tfc.constant(1)
    for make in (lambda: Dataset.from_tensor_slices(_X).map(s.scale),
                 lambda: Dataset.from_tensor_slices(_X).map(functools.partial(branchy, y=one))):
        before = f.trace_count
        for _ in range(3):
            assert_bit_identical(list(f(make())), list(fold(make())))
        assert f.trace_count == before + 1
    f(Dataset.from_tensor_slices(_X).map(Scaler(3.0).scale))  # another object: another trace
    assert f.trace_count == 3


def test_a_range_step_of_zero_fails_when_the_function_runs():
    @tfc.function
    def f(step):
        s = tfc.constant(0, tfc.int64)
        for i in Dataset.range(0, 5, step):
            s += i
        return s

    assert int(f(tfc.constant(2))) == 6
    with pytest.raises(Exception, match="Dataset.range: step must not be 0"):
        f(tfc.constant(0))


@pytest.mark.parametrize("y_rows", [2, 6, None], ids=["shorter", "longer", "static"])
def test_sources_of_run_time_lengths_that_differ_fail_when_the_function_runs(y_rows):
    # eager raises when the dataset is made; compiled, a longer source was read silently
    def f(x, y):
        s = tfc.constant(0.0)
        for a, b in Dataset.from_tensor_slices((x, y)):
            s = s * 2.0 + tfc.reduce_sum(a) + b
        return s

    y_spec = tfc.TensorSpec([None] if y_rows else [4], tfc.float32)
    g = tfc.function(f, input_signature=[tfc.TensorSpec([None, 3], tfc.float32), y_spec])
    x = tfc.constant(np.ones((4, 3), np.float32))
    y = tfc.constant(np.arange(4, dtype=np.float32))
    assert_bit_identical(g(x, y), f(x, y))
    if y_rows:
        with pytest.raises(Exception, match="components must have the same first dimension"):
            g(x, tfc.constant(np.arange(y_rows, dtype=np.float32)))


@pytest.mark.parametrize("make", [lambda: Dataset.range(2**32 + 3).take(5),
                                  lambda: Dataset.range(2**40, 2**41, 3).take(4).batch(3)], ids=["take", "batch"])
def test_a_range_longer_than_the_counter_is_cut_not_wrapped(make):
    # its int64 length cast to the int32 counter wrapped: 3 elements, or none, instead of 5
    def inside():
        return fold(make())

    want = fold(make())
    assert_bit_identical(list(tfc.function(fold)(make())), list(want))
    assert_bit_identical(list(tfc.function(inside)()), list(want))


@pytest.mark.parametrize("make", [lambda: Dataset.range(5).take(2**40), lambda: Dataset.range(5).skip(2**40),
                                  lambda: Dataset.from_tensor_slices(_X).skip(2**33).batch(2)],
                         ids=["take", "skip", "skip_batch"])
def test_counts_past_the_counters_range(make):
    assert_bit_identical(list(tfc.function(fold)(make())), list(fold(make())))


def test_skipping_past_the_counters_range_of_an_endless_dataset_is_a_clear_error():
    with pytest.raises(NotImplementedError, match=r"skip\(8589934592\) of an endless dataset"):
        tfc.function(fold)(Dataset.range(3).repeat().skip(2**33))


def test_a_repeat_longer_than_the_counter_is_cut_not_wrapped():
    # the source's run-time length times the count wrapped in int32: 2**31 * 3 elements looked like none
    def make():
        return Dataset.range(3).repeat(2**31).take(4)

    assert_bit_identical(list(tfc.function(fold)(make())), list(fold(make())))


def test_a_traced_drop_remainder_is_an_error_naming_it():
    @tfc.function
    def f(x):
        s = tfc.constant(0.0)
        for b in Dataset.from_tensor_slices(x).batch(2, drop_remainder=tfc.reduce_sum(x) > 0):
            s += tfc.reduce_sum(b)
        return s

    with pytest.raises(TypeError, match="drop_remainder must be True or False while the function is traced") as e:
        f(tfc.constant(np.ones((3, 2), np.float32)))
    assert "test_data_in_function.py" in "".join(getattr(e.value, "__notes__", []))


@pytest.mark.parametrize("bound", [tfc.constant(5.5), tfc.constant([5]), tfc.constant(True)],
                         ids=["float", "vector", "bool"])
def test_a_traced_range_bound_must_be_an_int_scalar(bound):
    # eager raises; compiled, 5.5 was truncated to 5 and [5] read as 5
    @tfc.function
    def f(n):
        s = tfc.constant(0, tfc.int64)
        for i in Dataset.range(n):
            s += i
        return s

    with pytest.raises(TypeError, match="Dataset.range must be an int"):
        list(Dataset.range(bound))
    with pytest.raises(TypeError, match="Dataset.range must be an int, got a symbolic tensor"):
        f(bound)
    assert int(f(tfc.constant(5))) == 10


def test_a_variable_a_map_function_reads_is_read_at_each_call():
    # (docs/data.md: the way to give a map function a value that changes without a retrace)
    scale = tfc.Variable(2.0, dtype=tfc.float64)
    x = np.arange(6.0).reshape(3, 2)

    def make():
        return Dataset.from_tensor_slices(x).map(lambda r: r * scale)

    f = tfc.function(fold)
    for value in (2.0, -0.5):
        scale.assign(value)
        assert_bit_identical(list(f(make())), list(fold(make())))
    assert f.trace_count == 1


def test_a_list_of_tensors_in_a_map_result_is_their_stack():
    # compiled it was a TypeError (a symbolic tensor converted as an array); eager made it float32
    def make():
        return Dataset.from_tensor_slices(np.arange(6.0).reshape(3, 2)).map(lambda r: (r, [r, [r[0], 0.5]]))

    def last(ds):
        for e in ds:
            out = e
        return out

    want, got = last(make()), tfc.function(last)(make())
    assert [c.dtype for c in nest.flatten(want)] == [tfc.float64, tfc.float64]
    assert nest.structure_signature(got) == nest.structure_signature(want)
    assert_bit_identical(nest.flatten(got), nest.flatten(want))
