"""tfc.function: decorator forms, signatures and retracing, explain(), input
signatures, concrete functions, variables, and errors that never fall back."""
import re
import warnings

import numpy as np
import pytest

import tfc


def test_decorator_forms():
    @tfc.function
    def f(x):
        return x + 1.0

    @tfc.function()
    def g(x):
        return x * 2.0

    h = tfc.function(lambda x: x - 1.0, autograph=False)
    x = tfc.constant([1.0, 2.0])
    np.testing.assert_allclose(f(x).numpy(), [2.0, 3.0])
    np.testing.assert_allclose(g(x).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(h(x).numpy(), [0.0, 1.0])
    assert f.__name__ == "f" and f.trace_count == 1


def test_cache_and_retrace_reasons():
    @tfc.function
    def f(x, scale=1.0):
        return x * scale

    a = tfc.constant([1.0, 2.0])
    f(a)
    f(tfc.constant([3.0, 4.0]))
    assert f.trace_count == 1
    f(tfc.constant([1.0, 2.0, 3.0]))
    f(a, scale=2.0)
    f(tfc.constant([1.0, 2.0], dtype=tfc.float64))
    assert f.trace_count == 4
    reasons = f.explain()
    assert reasons[0] == "first call (x: float32[2], scale: 1.0)"
    assert reasons[1] == "argument x changed from float32[2] to float32[3]"
    assert "argument x changed from float32[3] to float32[2]" in reasons[2]
    assert "argument scale changed from 1.0 to 2.0" in reasons[2]
    assert "float32[2] to float64[2]" in reasons[3]


def test_warns_after_five_retraces():
    @tfc.function
    def f(x, n):
        return x * n

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(5):  # the first trace and 4 retraces
            f(tfc.constant(1.0), n)
    with pytest.warns(RuntimeWarning, match=r"traced 6 times.*argument n changed from 4 to 5"):
        f(tfc.constant(1.0), 5)


def test_python_values_and_structures():
    @tfc.function
    def f(d, flag):
        out = d["a"] + d["b"][0]
        return {"sum": out, "flag": flag, "none": None}

    r = f({"a": tfc.constant(1.0), "b": [tfc.constant(2.0)]}, "yes")
    assert float(r["sum"]) == 3.0 and r["flag"] == "yes" and r["none"] is None


def test_input_signature_with_dynamic_dims():
    @tfc.function(input_signature=[tfc.TensorSpec((None, 2), tfc.float32, name="x")])
    def f(x):
        return tfc.reduce_sum(x, axis=0)

    np.testing.assert_allclose(f(tfc.constant([[1.0, 2.0]])).numpy(), [1.0, 2.0])
    np.testing.assert_allclose(f(tfc.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).numpy(), [9.0, 12.0])
    assert f.trace_count == 1
    assert "tensor<?x2xf32>" in f.get_concrete_function().ir()
    with pytest.raises(ValueError, match=r"argument x has shape \(2, 3\), incompatible with input_signature "
                                         r"TensorSpec\(shape=\(None, 2\)"):
        f(tfc.constant(np.zeros((2, 3), np.float32)))
    with pytest.raises(TypeError, match="argument x has dtype int32"):
        f(tfc.constant([[1, 2]]))


def test_get_concrete_function_with_specs_and_call():
    @tfc.function
    def f(x, y):
        return tfc.matmul(x, y)

    conc = f.get_concrete_function(tfc.TensorSpec((None, 3)), tfc.TensorSpec((3, 2)))
    text = conc.ir("tensor")
    assert "func.func @f(%x: tensor<?x3xf32>, %y: tensor<3x2xf32>) -> tensor<?x2xf32>" in text
    a = np.ones((4, 3), np.float32)
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(conc(tfc.constant(a), tfc.constant(b)).numpy(), a @ b)
    with pytest.raises(ValueError, match="unknown IR stage 'bogus'"):
        conc.ir("bogus")
    with pytest.raises(ValueError, match="stage 'gpu' is the cuda backend's"):
        conc.ir("gpu")
    with pytest.raises(ValueError, match="target='cuda'"):
        conc.ptx
    assert "loops.library \"matmul\"" in conc.ir("loops")


def test_numpy_arguments_are_tensors():
    @tfc.function
    def f(x):
        return x * 2.0

    np.testing.assert_allclose(f(np.ones(3, np.float32)).numpy(), [2.0, 2.0, 2.0])


def test_nested_functions_are_inlined():
    @tfc.function
    def inner(x):
        return tfc.exp(x)

    @tfc.function
    def outer(x):
        return inner(x) + 1.0

    np.testing.assert_allclose(outer(tfc.constant(0.0)).numpy(), 2.0)
    assert inner.trace_count == 0
    assert "tfc.exp" in outer.get_concrete_function(tfc.constant(0.0)).ir()


def test_untraceable_function_raises():
    @tfc.function(autograph=False)  # autograph turns float(x) into a cast
    def f(x):
        return float(x) + 1

    with pytest.raises(TypeError, match="float\\(\\) of a symbolic tensor"):
        f(tfc.constant(1.0))
    assert f.trace_count == 0


def test_shape_errors_surface_at_trace():
    @tfc.function
    def f(x, y):
        return x + y

    with pytest.raises(ValueError, match=r"add: shapes \(2,\) and \(3,\) cannot be broadcast"):
        f(tfc.constant([1.0, 2.0]), tfc.constant([1.0, 2.0, 3.0]))


def test_unknown_target_raises():
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        tfc.function(lambda x: x, target="tpu")(tfc.constant(1.0))


def test_tape_around_compiled_call():
    v = tfc.Variable(2.0)
    f = tfc.function(lambda x: x * v)
    f(tfc.constant(1.0))
    x = tfc.constant(3.0)
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    gx, gv = tape.gradient(y, [x, v])
    assert (gx.numpy(), gv.numpy()) == (2.0, 3.0)  # more in test_control_flow_grad.py


def test_method_decorated():
    class M:
        def __init__(self):
            self.w = tfc.Variable([1.0, 2.0])

        @tfc.function
        def __call__(self, x):
            return x * self.w

    m = M()
    np.testing.assert_allclose(m(tfc.constant([2.0, 2.0])).numpy(), [2.0, 4.0])
    m.w.assign([3.0, 3.0])
    np.testing.assert_allclose(m(tfc.constant([2.0, 2.0])).numpy(), [6.0, 6.0])


def test_compiled_matches_eager_on_random_program():
    rng = np.random.default_rng(1)

    def prog(x, y):
        z = tfc.tanh(tfc.matmul(x, y, transpose_b=True)) ** 2
        z = tfc.transpose(tfc.transpose(z)) * 1.0 + 0.0
        return tfc.reduce_max(z, axis=1), tfc.argmax(z, axis=0)

    x = tfc.constant(rng.normal(size=(4, 3)).astype(np.float32))
    y = tfc.constant(rng.normal(size=(5, 3)).astype(np.float32))
    want = prog(x, y)
    got = tfc.function(prog)(x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
        assert g.dtype == w.dtype


def test_variable_passed_as_argument_and_returned():
    @tfc.function
    def bump(v, d):
        v.assign_add(d)
        return v

    a, b = tfc.Variable([1.0]), tfc.Variable([10.0])
    np.testing.assert_allclose(bump(a, tfc.constant([1.0])).numpy(), [2.0])
    np.testing.assert_allclose(bump(b, tfc.constant([1.0])).numpy(), [11.0])
    np.testing.assert_allclose(a.numpy(), [2.0])
    np.testing.assert_allclose(b.numpy(), [11.0])
    assert bump.trace_count == 2 and "variable" in bump.explain()[1]
    bump(a, tfc.constant([1.0]))
    assert bump.trace_count == 2 and a.numpy()[0] == 3.0


def test_function_without_source_is_traced_as_written_with_a_warning():
    import warnings

    namespace = {}
    exec("def double(x):\n    return x * 2\n", {"tfc": tfc}, namespace)
    f = tfc.function(namespace["double"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(tfc.constant(3.0))
    assert float(out) == 6.0
    assert any("source is unavailable" in str(w.message) and "autograph=False" in str(w.message) for w in caught)


def test_fast_path_with_default_arguments():
    @tfc.function
    def f(x, scale=2.0, offset=None):
        return x * scale if offset is None else x * scale + offset

    x = tfc.constant(np.ones(3, np.float32))
    for _ in range(2):
        np.testing.assert_array_equal(f(x).numpy(), [2, 2, 2])
        np.testing.assert_array_equal(f(x, 3.0).numpy(), [3, 3, 3])
        np.testing.assert_array_equal(f(x, 3.0, 1.0).numpy(), [4, 4, 4])
    assert f.trace_count == 3
    assert len(f._fast) == 3  # each signature took the fast path on its repeat


def test_numpy_scalars_are_tensor_arguments():
    """A numpy scalar is a tensor argument (its dtype in the signature, not its
    value): it matches a TensorSpec, and a new value does not retrace."""
    f = tfc.function(lambda x, i: tfc.gather(x, i),
                     input_signature=[tfc.TensorSpec((4, 3), tfc.float64), tfc.TensorSpec((), tfc.int32)])
    x = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(f(x, np.int32(1)).numpy(), x[1])
    g = tfc.function(lambda a: a * 2)
    g(np.float32(1.0))
    g(np.float32(2.0))
    assert g.trace_count == 1


def test_input_signature_converts_python_values_and_names_bad_arguments():
    """As in TensorFlow: Python numbers and lists passed where input_signature
    has a TensorSpec become tensors of its dtype (one trace for all); values
    that do not fit it are errors naming the argument."""
    @tfc.function(input_signature=[tfc.TensorSpec((None, 3)), tfc.TensorSpec((), tfc.int32)])
    def f(x, n):
        return tfc.reduce_sum(x) * tfc.cast(n, tfc.float32)

    assert f([[1.0, 2.0, 3.0]], 2).numpy() == 12.0
    assert f(x=tfc.ones([2, 3]), n=3).numpy() == 18.0
    assert f.trace_count == 1
    for args, err, words in [(([[1.0, 2.0, 3.0]], 2.5), TypeError, "argument n (2.5) does not convert"),
                             (([[1.0, 2.0, 3.0]], 2**40), TypeError, "out of its range"),
                             (([[1.0, 2.0, 3.0]], True), TypeError, "argument n is a bool"),
                             ((None, 2), TypeError, "argument x is a NoneType"),
                             ((np.ones((2, 3)), 2), TypeError, "argument x has dtype float64")]:
        with pytest.raises(err, match=re.escape(words)):
            f(*args)
    assert f.trace_count == 1


def test_python_ints_out_of_range_of_the_dtype_do_not_wrap():
    with pytest.raises(ValueError, match="out of its range"):
        tfc.constant(2**31, tfc.int32)
    with pytest.raises(ValueError, match="out of its range"):
        tfc.constant([1, -200], tfc.int8)
    with pytest.raises(ValueError, match="out of its range"):
        tfc.constant([1.0, 300], tfc.int8)
    assert tfc.constant(-(2**31), tfc.int32).numpy() == -(2**31)


def test_input_signature_skips_self_and_spreads_over_star_args():
    class Model(tfc.Module):
        def __init__(self):
            super().__init__()
            self.w = tfc.Variable(2.0)

        @tfc.function(input_signature=[tfc.TensorSpec((), tfc.float32)])
        def __call__(self, x):
            return x * self.w

    @tfc.function(input_signature=[tfc.TensorSpec(()), tfc.TensorSpec((), tfc.int32)])
    def add_all(*xs):
        return xs[0] + tfc.cast(xs[1], tfc.float32)

    assert Model()(tfc.constant(3.0)).numpy() == 6.0
    assert Model()(3).numpy() == 6.0
    assert add_all(tfc.constant(1.0), tfc.constant(2)).numpy() == 3.0
    assert add_all(1.5, 2).numpy() == 3.5
    with pytest.raises(TypeError, match=re.escape("argument xs[1] (2.5) does not convert")):
        add_all(1.5, 2.5)


# -- variables created inside a tfc.function (TensorFlow's singleton rule) ----------
# TensorFlow traces a function that made variables a second time, and a variable made
# again there is an error: compiled code cannot make one anew on each call as Python does.

SINGLETON = "tfc.function only supports singleton tfc.Variables created on the first call"


def test_variable_made_on_every_call_is_an_error_at_the_first_call():
    @tfc.function
    def count(x):
        v = tfc.Variable(1.0)  # Python makes a fresh one per call: 2.0 every time
        v.assign_add(x)
        return v.read_value()

    for _ in range(2):  # no trace is kept: the next call fails alike
        with pytest.raises(ValueError, match=SINGLETON) as info:
            count(tfc.constant(1.0))
        assert any(f"{__file__}:" in n and " in count" in n for n in info.value.__notes__)  # the Variable line
    assert count.trace_count == 0


def test_variable_made_on_a_later_trace_is_an_error():
    made = {}

    @tfc.function
    def f(x):
        if x.shape not in made:  # once per shape: the first trace's variable is made once
            made[x.shape] = tfc.Variable(0.0)
        made[x.shape].assign_add(tfc.reduce_sum(x))
        return made[x.shape].read_value()

    assert [f(tfc.constant(2.0)).numpy() for _ in range(2)] == [2.0, 4.0]  # plain Python gives the same
    for retrace in (lambda: f(tfc.constant([1.0, 2.0])), lambda: f.get_concrete_function(tfc.TensorSpec((None,)))):
        with pytest.raises(ValueError, match=SINGLETON):
            retrace()
    assert f(tfc.constant(2.0)).numpy() == 6.0  # the first trace still runs, with its variable
    assert f.trace_count == 1


def test_variable_guarded_by_the_caller_survives_retraces():
    class Scale(tfc.Module):
        def __init__(self):
            super().__init__()
            self.w = None

        @tfc.function
        def __call__(self, x):
            if self.w is None:
                self.w = tfc.Variable(3.0)
            self.w.assign_add(1.0)
            return x * self.w

    m = Scale()  # the values TensorFlow gives for the same tf.Module
    np.testing.assert_allclose(m(tfc.constant([1.0, 2.0])).numpy(), [4.0, 8.0])
    np.testing.assert_allclose(m(tfc.constant([[1.0]])).numpy(), [[5.0]])  # retraced, no new variable
    assert m.w.numpy() == 5.0


def test_variable_made_by_an_inlined_function_counts_for_the_caller():
    @tfc.function
    def inner(x):
        return x + tfc.Variable(1.0)

    @tfc.function
    def outer(x):
        return inner(x) * 2.0

    with pytest.raises(ValueError, match=f"{SINGLETON}: outer makes"):
        outer(tfc.constant(1.0))


def test_python_floats_key_traces_by_their_bits():
    """0.0 == -0.0 in Python: a trace made for one must not run for the other
    (its constant's sign is baked in): positional (the fast path), keyword
    (the full path) and inside a tuple."""
    x = np.array([1.0, 2.0], np.float32)
    positional = tfc.function(lambda a, s: a * s)
    keyword = tfc.function(lambda a, s=1.0: a * s)
    in_tuple = tfc.function(lambda a, st: a * st[0])
    for s in (0.0, -0.0, 0.0, -0.0):
        want = np.signbit(x * np.float32(s))
        for got in (positional(x, s), keyword(x, s=s), in_tuple(x, (s, 1.0))):
            assert np.array_equal(np.signbit(got.numpy()), want)
    assert positional.trace_count == keyword.trace_count == in_tuple.trace_count == 2
