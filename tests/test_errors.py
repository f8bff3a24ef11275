"""Bad input: each class of mistake raises the right exception type, and the
message names the op and the offending shapes or dtypes."""
import re

import numpy as np
import pytest

import tfc


def raises(exc, *parts):
    """pytest.raises(exc) whose message must contain every one of ``parts``."""
    return pytest.raises(exc, match="(?s)" + "".join(f"(?=.*{re.escape(p)})" for p in parts))


# -- shapes ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "floordiv", "mod", "pow", "maximum",
                                  "minimum", "equal", "not_equal", "less", "less_equal", "greater",
                                  "greater_equal"])
def test_broadcast_mismatch(name):
    with raises(ValueError, name, "(2, 3)", "(4,)", "broadcast"):
        getattr(tfc, name)(tfc.zeros([2, 3]), tfc.zeros([4]))


@pytest.mark.parametrize("expr,name", [
    (lambda a, b: a + b, "add"), (lambda a, b: a - b, "subtract"), (lambda a, b: a * b, "multiply"),
    (lambda a, b: a / b, "divide"), (lambda a, b: a < b, "less"), (lambda a, b: a == b, "equal"),
])
def test_broadcast_mismatch_operators(expr, name):
    with raises(ValueError, name, "(2, 3)", "(4,)"):
        expr(tfc.zeros([2, 3]), tfc.zeros([4]))
    with raises(ValueError, name, "(2, 3)", "(4,)"):
        expr(tfc.zeros([2, 3]), np.zeros(4, np.float32))


def test_broadcast_mismatch_three_inputs():
    with raises(ValueError, "where", "(2,)", "(3,)"):
        tfc.where(tfc.constant([True, False]), tfc.zeros([3]), 0.0)
    with raises(ValueError, "clip_by_value", "(2, 3)", "(4,)"):
        tfc.clip_by_value(tfc.zeros([2, 3]), tfc.zeros([4]), 1.0)
    with raises(ValueError, "logical_and", "(2,)", "(3,)"):
        tfc.logical_and(tfc.constant([True, False]), tfc.constant([True, False, True]))


def test_matmul_inner_dims():
    with raises(ValueError, "matmul", "(2, 3)", "(4, 5)", "3 != 4"):
        tfc.matmul(tfc.zeros([2, 3]), tfc.zeros([4, 5]))
    with raises(ValueError, "matmul", "(3, 2)", "transposed"):
        tfc.matmul(tfc.zeros([3, 2]), tfc.zeros([3, 5]), transpose_a=False, transpose_b=True)
    with raises(ValueError, "matmul", "(2, 3)", "(4, 5)"):
        tfc.zeros([2, 3]) @ tfc.zeros([4, 5])


def test_matmul_batch_dims():
    with raises(ValueError, "matmul", "(2, 2, 3)", "(3, 3, 5)"):
        tfc.matmul(tfc.zeros([2, 2, 3]), tfc.zeros([3, 3, 5]))


def test_matmul_rank():
    with raises(ValueError, "matmul", "rank", "(3,)", "(3, 5)"):
        tfc.matmul(tfc.zeros([3]), tfc.zeros([3, 5]))
    with raises(ValueError, "matmul", "rank", "()"):
        tfc.matmul(2.0, tfc.zeros([3, 5]))


def test_reshape_sizes():
    with raises(ValueError, "reshape", "(2, 3)", "6 elements", "(4, 2)", "8 elements"):
        tfc.reshape(tfc.zeros([2, 3]), [4, 2])
    with raises(ValueError, "reshape", "(2, 3)", "(4, -1)"):
        tfc.reshape(tfc.zeros([2, 3]), [4, -1])
    with raises(ValueError, "reshape", "-1"):
        tfc.reshape(tfc.zeros([6]), [-1, -1])
    with raises(ValueError, "reshape", "(2, -3)"):
        tfc.reshape(tfc.zeros([6]), [2, -3])


def test_broadcast_to_bad_shape():
    with raises(ValueError, "broadcast_to", "(2, 3)", "(3, 3)"):
        tfc.broadcast_to(tfc.zeros([2, 3]), [3, 3])
    with raises(ValueError, "broadcast_to", "(2, 3)", "(3,)"):
        tfc.broadcast_to(tfc.zeros([2, 3]), [3])


def test_squeeze_non_unit_axis():
    with raises(ValueError, "squeeze", "axis 0", "(2, 3)", "size 2"):
        tfc.squeeze(tfc.zeros([2, 3]), 0)


def test_transpose_bad_perm():
    with raises(ValueError, "transpose", "(0,)", "(2, 3)"):
        tfc.transpose(tfc.zeros([2, 3]), [0])
    with raises(ValueError, "transpose", "(0, 0)"):
        tfc.transpose(tfc.zeros([2, 3]), [0, 0])


def test_fill_value_not_scalar():
    with raises(ValueError, "fill", "scalar", "(2,)"):
        tfc.fill([2], tfc.zeros([2]))


def test_negative_sizes():
    with raises(ValueError, "zeros", "(-1, 2)", "negative"):
        tfc.zeros([-1, 2])
    with raises(ValueError, "ones", "negative"):
        tfc.ones([3, -2])
    with raises(ValueError, "eye", "-1"):
        tfc.eye(-1)
    with raises(ValueError, "linspace", "-1"):
        tfc.linspace(0.0, 1.0, -1)
    with raises(ValueError, "range", "delta"):
        tfc.range(0, 5, 0)


# -- dtypes ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh",
                                  "sigmoid", "softplus", "round", "floor", "ceil"])
@pytest.mark.parametrize("dtype", [tfc.int8, tfc.int32, tfc.int64, tfc.bool], ids=lambda d: d.name)
def test_float_only_ops_refuse_ints(name, dtype):
    with raises(TypeError, name, dtype.name, "float32"):
        getattr(tfc, name)(tfc.zeros([2], dtype))


@pytest.mark.parametrize("name", ["logical_and", "logical_or"])
@pytest.mark.parametrize("dtype", [tfc.float32, tfc.int32], ids=lambda d: d.name)
def test_logical_ops_need_bools(name, dtype):
    with raises(TypeError, name, dtype.name, "bool"):
        getattr(tfc, name)(tfc.zeros([2], dtype), tfc.zeros([2], dtype))
    # mixing bool with a number promotes to the number, which is refused
    with raises(TypeError, name, dtype.name, "bool"):
        getattr(tfc, name)(tfc.constant([True, False]), tfc.zeros([2], dtype))
    with raises(TypeError, "logical_not", dtype.name, "bool"):
        tfc.logical_not(tfc.zeros([2], dtype))


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "floordiv", "mod", "pow", "maximum",
                                  "minimum", "less", "greater_equal"])
def test_arithmetic_on_bools(name):
    with raises(TypeError, name, "bool", "int32"):
        getattr(tfc, name)(tfc.constant([True]), tfc.constant([False]))


@pytest.mark.parametrize("name", ["negative", "abs", "sign", "square", "relu"])
def test_numeric_unary_on_bools(name):
    with raises(TypeError, name, "bool"):
        getattr(tfc, name)(tfc.constant([True]))


def test_where_condition_must_be_bool():
    with raises(TypeError, "where", "condition", "float32", "bool"):
        tfc.where(tfc.constant([1.0]), 1.0, 2.0)


def test_reduction_dtypes():
    for name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin"):
        with raises(TypeError, name, "bool"):
            getattr(tfc, name)(tfc.constant([True]))
    for name in ("reduce_any", "reduce_all"):
        with raises(TypeError, name, "float32", "bool"):
            getattr(tfc, name)(tfc.constant([1.0]))
    with raises(TypeError, "argmax", "output_type", "float32"):
        tfc.argmax(tfc.zeros([3]), output_type=tfc.float32)


def test_matmul_of_bools():
    with raises(TypeError, "matmul", "bool"):
        tfc.matmul(tfc.constant([[True]]), tfc.constant([[True]]))


def test_weak_scalar_overflow():
    with raises(ValueError, "add", "1000", "int8"):
        tfc.constant([1], tfc.int8) + 1000
    with raises(ValueError, "maximum", "300", "int8"):
        tfc.maximum(tfc.constant([1], tfc.int8), 300)


def test_unsupported_dtypes():
    with raises(TypeError, "cast", "complex64", "float32"):
        tfc.cast(tfc.zeros([2]), "complex64")
    with raises(TypeError, "uint16", "int8"):
        tfc.constant(np.zeros(2, np.uint16))
    with raises(TypeError, "add", "uint16"):
        tfc.add(tfc.zeros([2]), np.zeros(2, np.uint16))
    with raises(TypeError, "1.5", "int32", "fraction"):
        tfc.constant(1.5, tfc.int32)
    with raises(TypeError, "int8", "float32"):
        tfc.convert_to_tensor(tfc.zeros([2]), tfc.int8)


def test_integer_pow_negative_exponent():
    with raises(ValueError, "pow", "int32", "negative"):
        tfc.pow(tfc.constant([2]), tfc.constant([-1]))
    # a Python int exponent is static (integer_pow): refused when the op is made
    with raises(ValueError, "integer_pow", "int32", "negative power -1"):
        tfc.constant([2]) ** -1


# -- ranks and axes --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"])
def test_reduction_axis_out_of_range(name):
    with raises(ValueError, name, "axis 2", "rank 2"):
        getattr(tfc, name)(tfc.zeros([2, 3]), axis=2)
    with raises(ValueError, name, "axis -3", "rank 2"):
        getattr(tfc, name)(tfc.zeros([2, 3]), axis=[0, -3])
    with raises(ValueError, name, "repeated axis"):
        getattr(tfc, name)(tfc.zeros([2, 3]), axis=[1, -1])
    with raises(ValueError, name, "axis 0", "rank 0"):
        getattr(tfc, name)(tfc.constant(1.0), axis=0)
    with raises(TypeError, name, "axis", "0.5"):
        getattr(tfc, name)(tfc.zeros([2]), axis=0.5)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_axes_and_ranks(name):
    with raises(ValueError, name, "axis -3", "rank 2"):
        getattr(tfc, name)(tfc.zeros([2, 3]), axis=-3)
    with raises(ValueError, name, "scalar"):
        getattr(tfc, name)(tfc.constant(1.0))
    with raises(ValueError, name, "(2, 0)", "empty"):
        getattr(tfc, name)(tfc.zeros([2, 0]), axis=1)


def test_shape_op_axes():
    with raises(ValueError, "expand_dims", "axis 4", "rank 3"):
        tfc.expand_dims(tfc.zeros([2, 3]), 4)
    with raises(ValueError, "expand_dims", "axis -4"):
        tfc.expand_dims(tfc.zeros([2, 3]), -4)
    with raises(ValueError, "squeeze", "axis 2", "rank 2"):
        tfc.squeeze(tfc.zeros([1, 3]), 2)


def test_indexing_errors():
    x = tfc.zeros([2, 3])
    with raises(IndexError, "getitem", "index 5", "axis 0", "size 2"):
        x[5]
    with raises(IndexError, "getitem", "index -4", "axis 1", "size 3"):
        x[0, -4]
    with raises(IndexError, "getitem", "too many indices", "(2, 3)"):
        x[1, 1, 1]
    with raises(IndexError, "getitem", "()"):
        tfc.constant(1.0)[0]
    with raises(IndexError, "getitem", "ellipsis"):
        x[..., ...]
    with raises(TypeError, "getitem", "1.5"):
        x[1.5]
    with raises(TypeError, "getitem", "slice", "0.5"):
        x[0.5:]
    with raises(ValueError, "getitem", "step"):
        x[::0]


def test_scalar_protocols_on_non_scalars():
    with raises(ValueError, "bool()", "(2,)"):
        bool(tfc.zeros([2]))
    with raises(ValueError, "float()", "(0,)"):
        float(tfc.zeros([0]))
    with raises(TypeError, "len()", "0-d"):
        len(tfc.constant(1.0))


# -- non-numeric values ------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc", ["a", "b"], [1, "a"], [[1.0], ["x"]]])
def test_strings(value):
    with raises(TypeError, "cannot convert", "not a number"):
        tfc.constant(value)
    with raises(TypeError, "add", "cannot convert"):
        tfc.add(tfc.zeros([2]), value)
    with raises(TypeError, "multiply", "cannot convert"):
        tfc.zeros([2]) * value


@pytest.mark.parametrize("value", [None, [None, 1.0], object(), {"a": 1}])
def test_none_and_objects(value):
    with raises(TypeError, "cannot convert", "not numeric"):
        tfc.constant(value)
    with raises(TypeError, "exp", "cannot convert"):
        tfc.exp(value)
    with raises(TypeError, "subtract", "cannot convert"):
        tfc.zeros([2]) - value


@pytest.mark.parametrize("value", [[[1, 2], [3]], [1.0, [2.0, 3.0]]])
def test_ragged_lists(value):
    with raises(ValueError, "cannot convert", "inhomogeneous"):
        tfc.constant(value)
    with raises(ValueError, "matmul", "cannot convert", "inhomogeneous"):
        tfc.matmul(value, tfc.zeros([2, 2]))
    with raises(ValueError, "reduce_sum", "cannot convert"):
        tfc.reduce_sum(value)


def test_bad_shape_arguments():
    with raises(TypeError, "zeros", "shape", "'a'"):
        tfc.zeros(["a", 2])
    with raises(TypeError, "reshape", "shape", "None"):
        tfc.reshape(tfc.zeros([2]), None)
    with raises(TypeError, "zeros", "shape", "float32"):
        tfc.zeros(tfc.constant([2.0]))
    with raises(TypeError, "range", "start", "'a'"):
        tfc.range("a", 3)


def test_tape_misuse():
    x = tfc.constant(1.0)
    with tfc.GradientTape() as tape:
        with raises(TypeError, "watch", "str"):
            tape.watch("x")
        tape.watch(x)
        y = x * 2.0
    with raises(TypeError, "sources", "float"):
        tape.gradient(y, 1.0)
    with raises(ValueError, "unconnected_gradients", "'zeros'"):
        tape.gradient(y, x, unconnected_gradients="zeros")
    with raises(ValueError, "output_gradients", "2 entries", "1 targets"):
        tape.gradient(y, x, output_gradients=[1.0, 2.0])


def test_op_errors_name_the_users_line_eager_and_traced():
    """A bad-input error from an op carries a note naming the user's own line
    (shown under the message in the traceback), eagerly and while tracing."""
    import traceback

    def model(x, w):
        return tfc.matmul(x, w)  # the line named

    line = model.__code__.co_firstlineno + 1
    for fn in (model, tfc.function(model)):
        with pytest.raises(ValueError, match="inner dimensions differ") as info:
            fn(tfc.ones([2, 3]), tfc.ones([4, 5]))
        assert info.value.__notes__ == [f"  at {__file__}:{line} in model"]
        assert f"{__file__}:{line} in model" in "".join(traceback.format_exception(info.value))


def test_no_numpy_floating_point_warnings_from_tfc_ops():
    """inf * 0, overflow and the mean of nothing give IEEE results quietly, as in
    TensorFlow (under the default warning filters); the user's own numpy code
    still warns."""
    import warnings

    x = tfc.constant([np.inf, 1e38], tfc.float32)
    with np.errstate(all="warn"), warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()  # a user's filters (conftest ignores these errors, pytest shows all warnings)
        warnings.simplefilter("default")
        tfc.errors._quiet_numpy_warnings()  # what importing tfc did
        assert np.isnan((x * 0.0).numpy()[0])
        assert np.isinf((x * 10.0).numpy()[1])
        assert np.isnan(tfc.reduce_mean(tfc.zeros([0])).numpy())
        np.testing.assert_array_equal(tfc.reduce_mean(tfc.zeros([2, 0]), axis=1).numpy(), [np.nan, np.nan])
    assert [str(w.message) for w in caught] == []
    with np.errstate(all="warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.array([np.inf]) * 0.0
    assert [str(w.message) for w in caught] == ["invalid value encountered in multiply"]


# -- the user's line, once ---------------------------------------------------------------------


def _matmul(x, y):
    return tfc.matmul(x, y)  # the line every variant below must name exactly once


def _grad_of_matmul(x, y):
    with tfc.GradientTape() as t:
        t.watch(x)
        z = _matmul(x, y)
    return t.gradient(z, x)


_inner = tfc.function(_matmul)


@pytest.mark.parametrize("call", [
    lambda x, y: _matmul(x, y),                                                   # eager
    lambda x, y: tfc.function(_matmul)(x, y),                                     # traced
    lambda x, y: tfc.compile(_matmul, tfc.TensorSpec((2, 3)), tfc.TensorSpec((3,))),
    lambda x, y: tfc.function(lambda a, b: _inner(a, b) * 2.0)(x, y),             # nested functions
    lambda x, y: tfc.function(_grad_of_matmul)(x, y),                             # under a tape
    lambda x, y: tfc.function(lambda a, b: tfc.cond(tfc.reduce_sum(a) > 0, lambda: _matmul(a, b),
                                                    lambda: _matmul(b, a)))(x, y),  # in a branch
])
def test_error_names_the_users_line_once(call):
    import traceback

    line = f"{__file__}:{_matmul.__code__.co_firstlineno + 1}"
    with pytest.raises(ValueError, match="matmul: inputs must have rank >= 2") as info:
        call(tfc.ones((2, 3)), tfc.ones((3,)))
    message = "".join(traceback.format_exception_only(info.value))
    assert message.count(line) == 1, message
