"""Shapes known only at run time: a function with None dimensions in its
signature is traced once and compiled per concrete input shapes on first use
(tfc-specialize, the default L1 pipeline, fusion, lowering), with a bounded
LRU cache of specializations; results stay bit-identical to eager."""
from __future__ import annotations

import numpy as np
import pytest

import tfc
import tfc.frontend.function as function_module
import tfc.passes.driver as driver

from helpers import assert_meets_contract


def _same(got, want):
    """Compiled ``got`` against eager's ``want``: the numpy backend's numerics contract."""
    assert_meets_contract(got, want)


def _mlp_predict():
    init = tfc.layers.GlorotUniform(seed=0)
    hidden = tfc.layers.Dense(16, activation="relu", kernel_initializer=init)
    out = tfc.layers.Dense(5, kernel_initializer=init)

    def predict(x):
        return tfc.nn.softmax(out(hidden(x)))
    return predict


@pytest.fixture
def count_specializations(monkeypatch):
    calls = []
    orig = driver.specialize

    def spy(module, shapes, *passes):
        calls.append(tuple(shapes))
        return orig(module, shapes, *passes)
    monkeypatch.setattr(driver, "specialize", spy)
    return calls


# batch sizes: one, odd, zero-size, larger than a chunk of rows
@pytest.mark.parametrize("batch", [1, 7, 0, 64, 1000])
def test_none_batch_is_bit_identical_to_eager(batch):
    predict = _mlp_predict()
    predict(tfc.zeros((1, 12)))  # builds the layers' variables eagerly
    f = tfc.function(predict, input_signature=[tfc.TensorSpec((None, 12))])
    x = np.random.default_rng(batch).normal(size=(batch, 12)).astype(np.float32)
    _same(f(x).numpy(), predict(tfc.constant(x)).numpy())
    assert f.trace_count == 1
    conc = f.get_concrete_function()
    assert list(conc.memory_plans) == [((batch, 12),)]


def test_one_trace_one_specialization_per_shape(count_specializations):
    @tfc.function(input_signature=[tfc.TensorSpec((None, 3)), tfc.TensorSpec((3,))])
    def f(x, b):
        return tfc.reduce_sum(tfc.exp(x) * b + 1.0, axis=1)

    rng = np.random.default_rng(0)
    b = rng.normal(size=3).astype(np.float32)
    xs = {n: rng.normal(size=(n, 3)).astype(np.float32) for n in (2, 5, 2, 9, 5, 2)}
    for n in (2, 5, 2, 9, 5, 2):
        x = xs[n]
        want = tfc.reduce_sum(tfc.exp(tfc.constant(x)) * tfc.constant(b) + 1.0, axis=1)
        _same(f(x, b).numpy(), want.numpy())
    assert f.trace_count == 1
    assert count_specializations == [((2, 3), (3,)), ((5, 3), (3,)), ((9, 3), (3,))]
    conc = f.get_concrete_function()
    assert set(conc.memory_plans) == {((2, 3), (3,)), ((5, 3), (3,)), ((9, 3), (3,))}
    head, *body = conc.ir("loops").splitlines()
    assert "specialized for shapes [2, 3], [3]" in head  # the last call's shapes
    assert "?" not in "\n".join(body)  # every buffer has a static shape: all planned


def test_lru_evicts_least_recently_used_and_explain_lists_them(monkeypatch, count_specializations):
    monkeypatch.setattr(function_module, "SPECIALIZATIONS", 2)

    @tfc.function(input_signature=[tfc.TensorSpec((None,))])
    def f(x):
        return x * 2.0 + 1.0

    for n in (1, 2, 1, 3, 2, 1):
        x = np.arange(n, dtype=np.float32)
        _same(f(x).numpy(), x * np.float32(2.0) + np.float32(1.0))
    # 1, 2 made; 1 used again (2 is now oldest); 3 evicts 2; 2 evicts 1; 1 again evicts 3
    assert count_specializations == [((1,),), ((2,),), ((3,),), ((2,),), ((1,),)]
    conc = f.get_concrete_function()
    assert set(conc.memory_plans) == {((2,),), ((1,),)}
    lines = f.explain()
    assert lines[0].startswith("first call")
    spec = [line.strip() for line in lines[1:]]
    assert len(spec) == 5 and all(s.startswith("specialization for shapes [") for s in spec)
    assert "evicted at" in spec[0] and "evicted at" in spec[1] and "evicted at" in spec[2]
    assert "evicted at" not in spec[3] and "evicted at" not in spec[4]
    assert conc.specializations[0].module is None and conc.specializations[0]._compiled is None  # freed


def test_hit_does_not_specialize_again(count_specializations):
    @tfc.function(input_signature=[tfc.TensorSpec((None, 2))])
    def f(x):
        return tfc.tanh(x)

    x = np.ones((4, 2), np.float32)
    for _ in range(5):
        f(x)
    f(tfc.constant(x))
    f.get_concrete_function()(x)
    assert count_specializations == [((4, 2),)]


def test_non_contiguous_inputs():
    @tfc.function(input_signature=[tfc.TensorSpec((None, None))])
    def f(x):
        return tfc.exp(x) - tfc.reduce_max(x, axis=0)

    base = np.random.default_rng(1).normal(size=(6, 10)).astype(np.float32)
    for x in (base.T, base[:, ::3], base[::2], np.asfortranarray(base)):
        _same(f(x).numpy(), (tfc.exp(tfc.constant(x)) - tfc.reduce_max(tfc.constant(x), axis=0)).numpy())


def test_variables_are_read_and_assigned_by_each_specialization():
    v = tfc.Variable(np.zeros(3, np.float32))

    @tfc.function(input_signature=[tfc.TensorSpec((None, 3))])
    def step(x):
        v.assign_add(tfc.reduce_sum(x, axis=0))
        return x * v

    ve = np.zeros(3, np.float32)
    for n in (2, 4, 2):
        x = np.random.default_rng(n).normal(size=(n, 3)).astype(np.float32)
        got = step(x).numpy()
        ve = ve + np.sum(x, axis=0)
        _same(got, x * ve)
        _same(v.numpy(), ve)
    assert step.trace_count == 1


def test_shapes_that_do_not_fit_raise_eagers_error():
    @tfc.function(input_signature=[tfc.TensorSpec((None,)), tfc.TensorSpec((None,))])
    def f(x, y):
        return x + y

    _same(f(np.ones(3, np.float32), np.ones(3, np.float32)).numpy(), np.full(3, 2.0, np.float32))
    with pytest.raises(ValueError) as eager:
        tfc.constant(np.ones(3, np.float32)) + tfc.constant(np.ones(4, np.float32))
    with pytest.raises(ValueError) as compiled:
        f(np.ones(3, np.float32), np.ones(4, np.float32))
    assert str(eager.value).splitlines()[0] in str(compiled.value)
    # the shapes that did not fit run the generic form, which raised: said so
    assert any("runs the generic form (ValueError" in line for line in f.explain())


def grow(x, n):
    """A list grown in a loop of n (a tensor) steps: its length depends on n's value."""
    z = []
    tfc.autograph.set_element_type(z, tfc.float32)
    for i in range(n):
        z.append(tfc.reduce_sum(x) * tfc.cast(i, tfc.float32))
    return tfc.autograph.stack(z)


def test_value_dependent_shapes_keep_the_generic_form(count_specializations):
    f = tfc.function(grow, input_signature=[tfc.TensorSpec((None,)), tfc.TensorSpec((), tfc.int32)])
    for k, n in ((3, 4), (5, 2), (3, 4)):
        x = np.arange(k, dtype=np.float32)
        _same(f(x, np.int32(n)).numpy(), grow(tfc.constant(x), tfc.constant(np.int32(n))).numpy())
    # the first specialization still had a value-dependent shape: no other is attempted
    assert len(count_specializations) == 1
    conc = f.get_concrete_function()
    assert conc.memory_plans == {}
    assert conc.ir("loops").startswith("// the generic form, for every shape (its shapes depend on values")


def test_stage_text_for_chosen_shapes():
    @tfc.function(input_signature=[tfc.TensorSpec((None, 4))])
    def f(x):
        return tfc.nn.relu(x) * 3.0

    conc = f.get_concrete_function()
    text = conc.ir("loops")  # no call yet: each None dimension 1
    assert text.splitlines()[0] == "// specialized for shapes [1, 4] (signature float32[?, 4])"
    assert "memref<1x4xf32>" in text
    assert "memref<7x4xf32>" in conc.ir("loops", shapes=[(7, 4)])
    assert conc.ir("fused", shapes=[(7, 4)]).startswith("// specialized for shapes [7, 4]")
    assert conc.ir("numpy", shapes=[(7, 4)]).startswith("# specialized for shapes [7, 4]")
    assert "?" in conc.ir("tensor")  # L1 is the traced, generic module
    with pytest.raises(ValueError, match="do not fit the signature"):
        conc.ir("loops", shapes=[(7, 5)])


def test_verify_checks_each_specialization():
    @tfc.function(input_signature=[tfc.TensorSpec((None, 3))], verify=True)
    def f(x):
        return tfc.sqrt(tfc.exp(x) * 2.0) + 1.0

    for n in (2, 5):
        x = np.random.default_rng(n).normal(size=(n, 3)).astype(np.float32)
        _same(f(x).numpy(), (tfc.sqrt(tfc.exp(tfc.constant(x)) * 2.0) + 1.0).numpy())


def test_gradient_through_a_none_batch_call():
    w = tfc.Variable(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2))

    @tfc.function(input_signature=[tfc.TensorSpec((None, 3))])
    def f(x):
        return tfc.reduce_sum(tfc.tanh(tfc.matmul(x, w)))

    x = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    with tfc.GradientTape() as tape:
        y = f(x)
    g = tape.gradient(y, w)
    with tfc.GradientTape() as tape:
        ye = tfc.reduce_sum(tfc.tanh(tfc.matmul(tfc.constant(x), w)))
    _same(y.numpy(), ye.numpy())
    _same(g.numpy(), tape.gradient(ye, w).numpy())


def test_a_specialization_reruns_the_compile_s_own_pass_list():
    def f(x):
        return x * 1.0 + 2.0

    def ops(conc):
        return {op.name for op in conc.specialization().module.walk()}

    x = np.arange(3, dtype=np.float32)
    for passes, multiply in (("none", True), ("default", False), ("tfc-fold", True), ("tfc-simplify", False)):
        conc = tfc.compile(f, tfc.TensorSpec((None,)), passes=passes)
        _same(conc(x).numpy(), x * np.float32(1.0) + np.float32(2.0))
        assert ("tfc.multiply" in ops(conc)) == multiply, passes


def test_the_benchmark_checks_its_results(capsys):
    """bench/dynamic_shapes.py compares both compiled forms with eager before it
    times them (no timing asserted here)."""
    import pathlib
    import sys

    bench = str(pathlib.Path(__file__).resolve().parents[1] / "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    import dynamic_shapes

    dynamic_shapes.main(["--batches", "1,3", "--quick"])
    out = capsys.readouterr().out
    assert "| None batch |" in out and "None batch over static signature" in out


def test_the_fast_path_remembers_a_bounded_number_of_shapes(monkeypatch):
    monkeypatch.setattr(function_module, "FAST_KEYS", 3)

    @tfc.function(input_signature=[tfc.TensorSpec((None,))])
    def f(x):
        return x + 1.0

    for n in range(6):
        x = np.arange(n, dtype=np.float32)
        _same(f(x).numpy(), x + np.float32(1.0))
    assert len(f._fast) == 3
    x = np.arange(5, dtype=np.float32)
    _same(f(x).numpy(), x + np.float32(1.0))  # not remembered: the full path, same result


def test_no_specializations_runs_the_generic_form(monkeypatch, count_specializations):
    monkeypatch.setattr(function_module, "SPECIALIZATIONS", 0)

    @tfc.function(input_signature=[tfc.TensorSpec((None, 2))])
    def f(x):
        return tfc.exp(x) * 2.0

    x = np.ones((3, 2), np.float32)
    _same(f(x).numpy(), (tfc.exp(tfc.constant(x)) * 2.0).numpy())
    assert count_specializations == []
    conc = f.get_concrete_function()
    assert conc.memory_plans == {}
    assert conc.ir("loops").startswith("// the generic form, for every shape (TFC_SPECIALIZATIONS=0)")
    assert "memref<?x2xf32>" in conc.ir("loops")


def test_a_loaded_none_batch_function_specializes(tmp_path):
    predict = _mlp_predict()
    predict(tfc.zeros((1, 12)))
    f = tfc.function(predict, input_signature=[tfc.TensorSpec((None, 12))])
    loaded = tfc.load(tfc.save(tfc.compile(f), str(tmp_path / "predict")))
    for n in (3, 0, 8):
        x = np.random.default_rng(n).normal(size=(n, 12)).astype(np.float32)
        _same(loaded(x).numpy(), predict(tfc.constant(x)).numpy())
    conc = loaded.concrete_function
    assert set(conc.memory_plans) == {((3, 12),), ((0, 12),), ((8, 12),)}
    assert conc.memory_plan is conc.memory_plans[((8, 12),)]  # the last call's


def test_threads_calling_with_other_shapes_while_one_specialization_is_kept(monkeypatch):
    """Four threads, new batch sizes, a cache of one: a form is compiled before
    it is published, and one evicted by another thread is made again (it was
    run after eviction had freed its module: AttributeError, found by review)."""
    import threading

    monkeypatch.setattr(function_module, "SPECIALIZATIONS", 1)
    f = lambda a: tfc.nn.softmax(a * 2.0 + 1.0)  # noqa: E731
    g = tfc.function(f, input_signature=[tfc.TensorSpec((None, 8), tfc.float32)])
    g(np.zeros((1, 8), np.float32))
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=(n, 8)).astype(np.float32) for n in range(1, 24)]
    want = [f(tfc.constant(x)).numpy() for x in xs]
    errors = []

    def worker(k):
        r = np.random.default_rng(k)
        for _ in range(25):
            i = int(r.integers(len(xs)))
            try:
                if not np.array_equal(g(xs[i]).numpy(), want[i]):
                    errors.append(f"wrong value at batch {i + 1}")
            except Exception as e:  # noqa: BLE001 - the test reports any
                errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
