"""tfc.random.uniform with tensor bounds (the ``uniform_bounds`` op): bounds known
only when a compiled function runs (TensorFlow's ``tf.random.uniform((), i, i + 1)``
with ``i`` a loop counter), the same bits as the attribute form, run-time checks,
and TensorFlow's gradient to float bounds."""
from __future__ import annotations

import numpy as np
import pytest

import tfc
from tests.helpers import check_grad

CASES = [(tfc.float16, -1.5, 2.0), (tfc.float32, 0.25, 3.0), (tfc.float64, -2.0, 7.5), (tfc.int32, 3, 4),
         (tfc.int32, -7, 1000), (tfc.int64, -(2 ** 40), 2 ** 40 + 3)]


def _scalar(v, dtype):
    return tfc.constant(np.array(v, dtype.as_numpy_dtype))


@pytest.mark.parametrize("dtype,lo,hi", CASES, ids=lambda c: getattr(c, "name", repr(c)))
def test_tensor_bounds_give_the_attribute_forms_bits(dtype, lo, hi):
    expected = tfc.random.uniform((3, 5), lo, hi, dtype=dtype, seed=11).numpy()
    eager = tfc.random.uniform((3, 5), _scalar(lo, dtype), _scalar(hi, dtype), dtype=dtype, seed=11).numpy()
    compiled = tfc.function(lambda a, b: tfc.random.uniform((3, 5), a, b, dtype=dtype, seed=11))(
        _scalar(lo, dtype), _scalar(hi, dtype)).numpy()
    assert np.array_equal(expected, eager) and np.array_equal(expected, compiled)
    assert expected.dtype == dtype.as_numpy_dtype and ((lo <= expected) & (expected < hi)).all()


def test_the_global_stream_advances_alike():
    # one traced bound, one Python bound; unseeded draws from the global stream
    f = tfc.function(lambda hi: (tfc.random.uniform((4,), 1.0, hi), tfc.random.uniform((2,), 0.0, hi)))
    f.get_concrete_function(tfc.constant(5.0))  # trace before drawing
    tfc.random.set_seed(3)
    expected = (tfc.random.uniform((4,), 1.0, 5.0).numpy(), tfc.random.uniform((2,), 0.0, 5.0).numpy())
    tfc.random.set_seed(3)
    got = f(tfc.constant(5.0))
    assert all(np.array_equal(a, b.numpy()) for a, b in zip(expected, got))
    assert not np.array_equal(got[0].numpy()[:2], got[1].numpy())


def test_a_traced_bound_is_an_operand_and_cuda_has_a_float_kernel():
    from tfc.dialects.tensor import context, parse_module
    from tfc.passes.lower_gpu import LowerGpuPass

    l3 = tfc.function(lambda a: tfc.random.uniform((2,), a, 2.0, seed=1)).get_concrete_function(
        tfc.constant(1.0)).ir("loops")
    assert 'loops.library "uniform_bounds"(%a, %0 : f32, f32)' in l3
    LowerGpuPass().apply(context(), parse_module(l3))  # float32: uniform's kernel, the bounds its parameters
    l3 = tfc.function(lambda a: tfc.random.uniform((2,), a, 9, dtype=tfc.int32, seed=1)).get_concrete_function(
        tfc.constant(1)).ir("loops")
    with pytest.raises(NotImplementedError, match="target cuda: no GPU kernel for uniform_bounds of int32"):
        LowerGpuPass().apply(context(), parse_module(l3))


def rand_int(n):
    """TensorFlow's reference helper in a tensor loop: always i, known only at run time."""
    s = tfc.constant(0)
    for i in tfc.range(n):
        s = s * 10 + tfc.random.uniform((), i, i + 1, dtype=tfc.int32)
    return s


def test_bounds_of_a_tensor_loop():
    assert tfc.function(rand_int)(tfc.constant(4)).numpy() == 123  # 0, 1, 2, 3


def test_run_time_bounds_are_checked_when_the_op_runs():
    f = tfc.function(lambda a, b: tfc.random.uniform((2,), a, b, dtype=tfc.int32, seed=0))
    assert np.array_equal(f(tfc.constant(2), tfc.constant(3)).numpy(), [2, 2])
    with pytest.raises(tfc.errors.InvalidArgumentError, match="uniform: minval 3 must be less than maxval 3"):
        f(tfc.constant(3), tfc.constant(3))
    g = tfc.function(lambda a: tfc.random.uniform((2,), a, 1.0, dtype=tfc.float64))
    with pytest.raises(tfc.errors.InvalidArgumentError, match="minval and maxval must be finite"):
        g(tfc.constant(-np.inf, tfc.float64))
    with pytest.raises(tfc.errors.InvalidArgumentError, match="minval 2.0 must be less than maxval 1.0"):
        g(tfc.constant(2.0, tfc.float64))
    with pytest.raises(tfc.errors.InvalidArgumentError, match="minval 1.0 must be less than maxval 1.0"):
        tfc.random.uniform((2,), tfc.constant(1.0), tfc.constant(1.0))  # eager tensors: the op, too


def test_bad_traced_bounds_are_clear_errors_at_trace_time():
    with pytest.raises(TypeError, match=r"uniform: minval is a int32 tensor, the result's dtype is float32: cast it"):
        tfc.function(lambda a: tfc.random.uniform((2,), a, 5.0))(tfc.constant(1))
    with pytest.raises(ValueError, match=r"uniform: maxval must be a scalar, got shape \(2,\)"):
        tfc.function(lambda b: tfc.random.uniform((2,), 0.0, b))(tfc.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="maxval must be given for integer dtype int32"):
        tfc.function(lambda a: tfc.random.uniform((2,), a, dtype=tfc.int32))(tfc.constant(1))
    with pytest.raises(ValueError, match=r"uniform: maxval 2\.5 is not a int32 value"):
        tfc.function(lambda a: tfc.random.uniform((2,), a, 2.5, dtype=tfc.int32))(tfc.constant(1))


def test_eager_tensors_of_another_dtype_keep_their_values():
    # as before tensor bounds became operands: an eager tensor is read as a number
    a = tfc.random.uniform((4,), tfc.constant(1), tfc.constant([3.0]), seed=2).numpy()
    assert np.array_equal(a, tfc.random.uniform((4,), 1, 3.0, seed=2).numpy())


def _draw(lo, hi):
    return tfc.random.uniform((3, 2), lo, hi, dtype=tfc.float64, seed=5) * tfc.constant(
        np.array([[1.0, -2.0], [0.5, 3.0], [4.0, 1.0]]))


def test_gradient_to_float_bounds_matches_finite_differences():
    check_grad(_draw, np.array(-0.5), np.array(2.25))
    check_grad(tfc.function(_draw), np.array(1.0), np.array(1.5))


def test_gradient_is_one_minus_u_and_u():
    lo, hi = tfc.constant(0.0, tfc.float64), tfc.constant(4.0, tfc.float64)
    with tfc.GradientTape() as t:
        t.watch([lo, hi])
        y = tfc.random.uniform((100,), lo, hi, dtype=tfc.float64, seed=9)
    g_lo, g_hi = t.gradient(y, [lo, hi])
    u = y.numpy() / 4.0
    np.testing.assert_allclose([g_lo.numpy(), g_hi.numpy()], [np.sum(1 - u), np.sum(u)], rtol=1e-12)


def test_integer_bounds_have_no_gradient():
    lo, hi = tfc.constant(0), tfc.constant(9)
    with tfc.GradientTape() as t:
        t.watch([lo, hi])
        y = tfc.cast(tfc.random.uniform((3,), lo, hi, dtype=tfc.int32, seed=1), tfc.float32)
    assert t.gradient(y, [lo, hi]) == [None, None]


def _loop_of_draws(x, n, seed):
    with tfc.GradientTape() as t:
        t.watch(x)
        s = tfc.constant(0.0, tfc.float64)
        for _ in tfc.range(n):
            s += tfc.reduce_sum(tfc.random.uniform((3,), 0.0, x, dtype=tfc.float64, seed=seed))
    return s, t.gradient(s, x)


def test_gradient_through_a_compiled_tensor_loop():
    x = tfc.constant(2.0, tfc.float64)
    eager = _loop_of_draws(x, tfc.constant(2), 1)
    compiled = tfc.function(_loop_of_draws)(x, tfc.constant(2), 1)  # a seeded draw is replayed
    assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(eager, compiled))
    np.testing.assert_allclose(compiled[1].numpy(), compiled[0].numpy() / 2.0, rtol=1e-14)  # values are u * x
    with pytest.raises(NotImplementedError, match="stateful op uniform_bounds .* give the draw a seed"):
        tfc.function(_loop_of_draws)(x, tfc.constant(2), None)
