"""The Tensor protocol: construction, repr, numpy interop, Python protocols,
operators (reflected ones too), indexing, and the "Eager execution"
reference programs."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tfc
from helpers import ALL_DTYPES, NUMERIC_DTYPES, assert_same, random_array

# -- construction ----------------------------------------------------------------


@pytest.mark.parametrize("value,dtype", [
    (1.5, tfc.float32), (3, tfc.int32), (True, tfc.bool), (2**40, tfc.int64), (-(2**31), tfc.int32),
    ([1.0, 2.0], tfc.float32), ([[1, 2], [3, 4]], tfc.int32), ([1, 2.5], tfc.float32),
    ([True, False], tfc.bool), ([], tfc.float32), ([[]], tfc.float32),
    (np.float64(1.5), tfc.float64), (np.int8(3), tfc.int8), (np.float16(2), tfc.float16),
])
def test_constant_default_dtypes(value, dtype):
    t = tfc.constant(value)
    assert t.dtype == dtype
    np.testing.assert_array_equal(np.asarray(t), np.asarray(value, dtype.as_numpy_dtype))
    assert t.shape == np.shape(value)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 2), (2, 3)])
def test_constant_from_numpy_keeps_dtype(dtype, shape, rng):
    a = random_array(rng, shape, dtype)
    t = tfc.constant(a)
    assert_same(t, a, dtype)
    a_copy = a.copy()
    if a.size:  # the tensor does not alias the caller's array
        a.flat[0] = a.flat[-1] if dtype != tfc.bool else not a.flat[0]
        np.testing.assert_array_equal(np.asarray(t), a_copy)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_constant_with_dtype(dtype):
    t = tfc.constant([[1, 0], [2, 3]], dtype=dtype)
    assert_same(t, np.array([[1, 0], [2, 3]]).astype(dtype.as_numpy_dtype), dtype)
    assert tfc.constant(1, dtype=dtype.name).dtype == dtype
    assert tfc.constant(np.zeros(2), dtype).dtype == dtype


def test_constant_shape_and_tensor_input():
    assert_same(tfc.constant(0.5, shape=[2, 3]), np.full((2, 3), 0.5, np.float32))
    assert_same(tfc.constant([1, 2, 3, 4], shape=(2, 2)), np.array([[1, 2], [3, 4]], np.int32))
    t = tfc.constant([1.0, 2.0])
    assert tfc.constant(t) is t
    assert_same(tfc.constant(t, tfc.float64), np.array([1.0, 2.0]))
    assert tfc.convert_to_tensor(t) is t
    assert_same(tfc.convert_to_tensor([1, 2], tfc.int8), np.array([1, 2], np.int8))


def test_static_facts():
    t = tfc.zeros([2, 3, 4], tfc.int8)
    assert t.shape == (2, 3, 4) and isinstance(t.shape, tuple)
    assert t.ndim == 3 and t.size == 24 and t.dtype == tfc.int8


# -- repr -----------------------------------------------------------------------


def test_repr_exact():
    assert repr(tfc.constant([[4.0]])) == "tfc.Tensor([[4.]], shape=(1, 1), dtype=float32)"
    assert repr(tfc.constant(9.0)) == "tfc.Tensor(9.0, shape=(), dtype=float32)"
    assert repr(tfc.constant(3)) == "tfc.Tensor(3, shape=(), dtype=int32)"
    assert repr(tfc.constant(True)) == "tfc.Tensor(True, shape=(), dtype=bool)"
    assert repr(tfc.constant([1, 2, 3])) == "tfc.Tensor([1 2 3], shape=(3,), dtype=int32)"
    assert repr(tfc.zeros([0], tfc.int64)) == "tfc.Tensor([], shape=(0,), dtype=int64)"
    assert repr(tfc.constant([1.5, 2.0], tfc.float64)) == "tfc.Tensor([1.5 2. ], shape=(2,), dtype=float64)"
    assert str(tfc.constant(9.0)) == repr(tfc.constant(9.0))
    # results of ops print the same way as constants (0-d results included)
    assert repr(tfc.matmul([[2.0]], [[2.0]])) == "tfc.Tensor([[4.]], shape=(1, 1), dtype=float32)"
    assert repr(tfc.constant(4.5) + tfc.constant(4.5)) == "tfc.Tensor(9.0, shape=(), dtype=float32)"
    assert repr(tfc.reduce_sum(tfc.constant([4.0, 5.0]))) == "tfc.Tensor(9.0, shape=(), dtype=float32)"


def test_format():
    assert f"{tfc.constant(3.14159):.2f}" == "3.14"
    assert f"{tfc.constant([1, 2])}" == repr(tfc.constant([1, 2]))


# -- numpy interop ------------------------------------------------------------------


def test_numpy_and_array_protocol():
    x = tfc.constant([1.0, 2.0, 3.0])
    assert type(x.numpy()) is np.ndarray
    assert type((x + x).numpy()) is np.ndarray
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3])
    sq = np.square(x)
    assert isinstance(sq, np.ndarray) and sq.dtype == np.float32
    np.testing.assert_array_equal(sq, [1, 4, 9])
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert np.array(x).flags.writeable  # np.array copies
    with pytest.raises(ValueError):
        x.numpy()[0] = 5.0  # the tensor is immutable
    assert float(x.numpy()[0]) == 1.0


def test_numpy_of_scalars():
    for t in (tfc.constant(2.0), tfc.constant(1.0) + tfc.constant(1.0), tfc.reduce_sum(tfc.ones([2]))):
        v = t.numpy()
        assert isinstance(v, (np.ndarray, np.generic)) and np.shape(v) == ()
        assert v == 2.0 and np.asarray(v).dtype == np.float32


# -- Python protocols ----------------------------------------------------------------


def test_len_and_iteration():
    a = np.arange(6, dtype=np.int32).reshape(3, 2)
    t = tfc.constant(a)
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3
    for r, ar in zip(rows, a):
        assert_same(r, ar)
    assert list(tfc.zeros([0, 2])) == []
    with pytest.raises(TypeError, match="0-d"):
        len(tfc.constant(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(tfc.constant(1.0)).__next__()


def test_scalar_conversions():
    assert bool(tfc.constant(True)) is True and bool(tfc.constant(0.0)) is False
    assert int(tfc.constant(3.7)) == 3 and type(int(tfc.constant(3))) is int
    assert float(tfc.constant(2)) == 2.0 and type(float(tfc.constant(2.5))) is float
    assert float(tfc.constant([[2.5]])) == 2.5  # one element, any rank
    assert [10, 20, 30][tfc.constant(1)] == 20  # __index__
    assert complex(tfc.constant(1.5)) == 1.5
    with pytest.raises(TypeError, match="float32"):
        [1, 2][tfc.constant(1.0)]


@pytest.mark.parametrize("conv", [bool, int, float])
@pytest.mark.parametrize("shape", [(2,), (0,), (2, 2)])
def test_scalar_conversions_need_one_element(conv, shape):
    with pytest.raises(ValueError, match=rf"{conv.__name__}\(\).*shape \({shape[0]},"):
        conv(tfc.zeros(shape))


def test_tensors_are_not_hashable():
    t = tfc.constant(1.0)
    with pytest.raises(TypeError):
        hash(t)
    d = {t.ref(): 1}
    assert d[t.ref()] == 1 and t.ref().deref() is t


# -- operators -------------------------------------------------------------------------

BINOPS = {
    "+": (operator.add, np.add), "-": (operator.sub, np.subtract), "*": (operator.mul, np.multiply),
    "/": (operator.truediv, np.true_divide), "//": (operator.floordiv, np.floor_divide),
    "%": (operator.mod, np.mod), "**": (operator.pow, np.power),
    "==": (operator.eq, np.equal), "!=": (operator.ne, np.not_equal), "<": (operator.lt, np.less),
    "<=": (operator.le, np.less_equal), ">": (operator.gt, np.greater), ">=": (operator.ge, np.greater_equal),
}


def _operands(dtype, shapes, seed, op):
    rng = np.random.default_rng(seed)
    low = 0.5 if op == "**" else -5
    high = 3 if op == "**" else 5
    a = random_array(rng, shapes[0], dtype, low, high)
    b = random_array(rng, shapes[1], dtype, 0 if op == "**" else low, high)
    if op in ("/", "//", "%"):
        b = np.where(b == 0, 1, b).astype(b.dtype)
    return a, b


def _close(got, want):
    want = np.asarray(want)
    assert isinstance(got, tfc.Tensor)
    assert_same(got, want, want.dtype)


@pytest.mark.parametrize("op", sorted(BINOPS))
@settings(max_examples=15, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=3),
       dtype=st.sampled_from(NUMERIC_DTYPES), seed=st.integers(0, 2**16))
def test_binary_operators(op, shapes, dtype, seed):
    pyop, npop = BINOPS[op]
    a, b = _operands(dtype, shapes.input_shapes, seed, op)
    ta, tb = tfc.constant(a), tfc.constant(b)
    _close(pyop(ta, tb), npop(a, b))
    _close(pyop(ta, b), npop(a, b))  # numpy array on the right
    _close(pyop(a, tb), npop(a, b))  # numpy array on the left: the reflected operator
    if a.ndim:  # nested lists convert with the default dtypes (float32, int32)
        lst = a.tolist()
        _close(pyop(lst, tb), npop(np.asarray(lst, tfc.constant(lst).dtype.as_numpy_dtype), b))
    else:  # a Python number is weak, as in numpy
        _close(pyop(a.item(), tb), npop(a.item(), b))


@pytest.mark.parametrize("op", sorted(BINOPS))
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_operators_with_python_scalars(op, dtype, rng):
    pyop, npop = BINOPS[op]
    a = random_array(rng, (3,), dtype, 1, 4)
    t = tfc.constant(a)
    for s in (2, 3.0) if dtype.is_floating else (2,):
        _close(pyop(t, s), npop(a, s))
        _close(pyop(s, t), npop(s, a))


def test_reflected_numpy_left():
    t = tfc.constant([1.0, 2.0, 3.0])
    r = np.ones(3) + t
    assert isinstance(r, tfc.Tensor) and r.dtype == tfc.float64
    np.testing.assert_array_equal(np.asarray(r), [2, 3, 4])
    r = np.ones(3, np.float32) * t
    assert isinstance(r, tfc.Tensor) and r.dtype == tfc.float32
    m = np.ones((2, 2)) @ tfc.constant([[1.0], [2.0]])
    assert isinstance(m, tfc.Tensor)
    np.testing.assert_array_equal(np.asarray(m), [[3.0], [3.0]])
    c = np.array([0.0, 2.0, 5.0]) < t
    assert isinstance(c, tfc.Tensor) and c.dtype == tfc.bool


def test_matmul_operator():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    _close(tfc.constant(a) @ tfc.constant(b), a @ b)
    _close(a @ tfc.constant(b), a @ b)
    _close(tfc.constant(a) @ b, a @ b)
    _close(a.tolist() @ tfc.constant(b), a @ b)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_unary_operators(dtype, rng):
    a = random_array(rng, (2, 3), dtype)
    t = tfc.constant(a)
    _close(-t, -a)
    _close(abs(t), np.abs(a))
    assert +t is t


def test_logical_operators():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    ta, tb = tfc.constant(a), tfc.constant(b)
    _close(ta & tb, a & b)
    _close(ta | tb, a | b)
    _close(~ta, ~a)
    _close(True & tb, True & b)
    _close(False | tb, False | b)
    _close(a & tb, a & b)


# -- indexing --------------------------------------------------------------------------


@pytest.mark.parametrize("key", [
    0, -1, (1, 2), slice(None), slice(1, None), slice(None, None, -1), slice(-2, None, 2), (slice(None), 1),
    None, (None, 0), Ellipsis, (Ellipsis, 1), (0, Ellipsis), (0, None, Ellipsis, None), (slice(5, 10),),
    (1, slice(0, 0)),
])
def test_indexing(key):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    _close(tfc.constant(a)[key], a[key])


def test_indexing_scalars_and_empty():
    _close(tfc.constant(5.0)[...], np.float32(5.0))
    _close(tfc.constant(5.0)[None], np.array([5.0], np.float32))
    _close(tfc.zeros([0, 3])[:, 1], np.zeros(0, np.float32))
    x = tfc.constant([[1.0, 2.0], [3.0, 4.0]])
    assert repr(x[1, 0]) == "tfc.Tensor(3.0, shape=(), dtype=float32)"


# -- reference programs: "Eager execution" ------------------------------------------------


def test_reference_matmul_print(capsys):
    x = [[2.0]]
    m = tfc.matmul(x, x)
    print(m)
    assert capsys.readouterr().out == "tfc.Tensor([[4.]], shape=(1, 1), dtype=float32)\n"


def _print_elements(x, capsys):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            print(x[i, j])
    lines = capsys.readouterr().out.splitlines()
    a = np.asarray(x)
    assert lines == [f"tfc.Tensor({a[i, j]!s}, shape=(), dtype=float32)" for i in range(2) for j in range(2)]


@pytest.mark.skipif(not hasattr(tfc, "random"), reason="tfc.random is not implemented yet")
def test_reference_random_uniform_index_and_print(capsys):
    _print_elements(tfc.random.uniform([2, 2]), capsys)


def test_reference_index_and_print(capsys):
    # the same program on a constant, while tfc.random may be missing
    _print_elements(tfc.constant(np.random.default_rng(1).random((2, 2)), tfc.float32), capsys)


def test_reference_numpy_interop(capsys):
    x = tfc.constant([1.0, 2.0, 3.0])
    assert type(x.numpy()) == np.ndarray  # noqa: E721 (the program's own spelling)
    squared = np.square(x)
    np.testing.assert_array_equal(squared, [1.0, 4.0, 9.0])
    for i in x:
        print(i)
    assert capsys.readouterr().out.splitlines() == [
        f"tfc.Tensor({v}, shape=(), dtype=float32)" for v in ("1.0", "2.0", "3.0")
    ]


def test_reference_collatz(capsys):
    a = tfc.constant(12)
    while not tfc.equal(a, 1):
        if tfc.equal(a % 2, 0):
            a = a / 2
        else:
            a = 3 * a + 1
        print(a)
    out = [float(line.split("(")[1].split(",")[0]) for line in capsys.readouterr().out.splitlines()]
    assert out == [6, 3, 10, 5, 16, 8, 4, 2, 1]
    assert float(a) == 1.0


def test_devices(monkeypatch):
    """api.md's Devices: the CPU under any TensorFlow spelling; the GPU listed
    and usable only where a CUDA driver is (tests/test_eager_gpu.py runs GPU
    tensors on the simulated driver); without one, a GPU scope and Tensor.gpu()
    raise UnavailableError naming what is missing."""
    from tfc.backends.cuda.driver import available

    monkeypatch.setenv("TFC_CUDA_DRIVER", "pycuda")
    assert tfc.config.list_devices("CPU") == [("/physical_device:CPU:0", "CPU")]
    for name in ("cpu", "CPU:0", "/cpu:0", "/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:0"):
        with tfc.device(name):
            t = tfc.constant([1.0, 2.0]) * 2
    assert t.cpu() is t and t.device == "/device:CPU:0"
    driver, why = available("pycuda")
    if driver is None:  # this machine: no pycuda or no device
        assert tfc.config.list_devices() == [("/physical_device:CPU:0", "CPU")]
        assert tfc.config.list_physical_devices("GPU") == []
        with pytest.raises(tfc.errors.UnavailableError, match="pycuda"):
            with tfc.device("gpu:0"):
                pass
        with pytest.raises(tfc.errors.UnavailableError, match="pycuda"):
            t.gpu()
    else:
        assert tfc.config.list_physical_devices("GPU") == [("/physical_device:GPU:0", "GPU")]
        assert t.gpu().device == "/device:GPU:0"
    for bad in ("tpu:0", "cpu:1", "gpu:1", 3):
        with pytest.raises(ValueError, match="tfc.device"):
            with tfc.device(bad):
                pass
