"""Eager GPU tensors (docs/gpu-eager.md) without a GPU: every test runs on the
simulated CUDA driver (TFC_CUDA_DRIVER=simulator), so the single-op kernels go
through the whole pipeline (L3 -> L4 -> PTX -> the PTX simulator) and the
results are checked against the same ops on CPU tensors within the cuda
backend's numerics contract."""
import subprocess
import sys

import numpy as np
import pytest

import tfc
from tfc.backends import backend
from tfc.core.device import DeviceMismatchError
from tfc.core.errors import UnavailableError
from tfc.core.tensor import GpuTensor
from tfc.frontend import eager_gpu

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

GPU = "/device:GPU:0"
CPU = "/device:CPU:0"


def _rand(rng, shape, dtype=np.float32):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(-5, 6, shape).astype(dtype)


def same(cpu_result, gpu_result, family=None):
    """The GPU result (a GpuTensor, or a list of them) against the CPU one."""
    wants = cpu_result if isinstance(cpu_result, (list, tuple)) else [cpu_result]
    gots = gpu_result if isinstance(gpu_result, (list, tuple)) else [gpu_result]
    assert len(wants) == len(gots)
    numerics = backend("cuda").numerics
    for w, g in zip(wants, gots):
        assert type(g) is GpuTensor and g.device == GPU, g
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        problem = numerics.difference(np.asarray(w), np.asarray(g), family)
        assert problem is None, problem


def both(fn, *arrays, family=None):
    """fn on CPU tensors and on their GPU copies: the results agree."""
    want = fn(*[tfc.constant(a) for a in arrays])
    got = fn(*[tfc.constant(a).gpu() for a in arrays])
    same(want, got, family)
    return got


# -- ops ------------------------------------------------------------------------------

EXACT = {  # .rn arithmetic, comparisons, selects: bit-identical to the CPU
    "add": lambda x, y: x + y,
    "sub_mul": lambda x, y: (x - y) * y,
    "div": lambda x, y: x / (tfc.abs(y) + 0.5),
    "max_min": lambda x, y: tfc.maximum(x, y) - tfc.minimum(x, y),
    "where": lambda x, y: tfc.where(x > y, x, y),
    "sqrt_square": lambda x, y: tfc.sqrt(tfc.abs(x)) + tfc.square(y),
    "neg_relu": lambda x, y: tfc.nn.relu(-x) + y,
}


@pytest.mark.parametrize("name", sorted(EXACT))
@pytest.mark.parametrize("shape", [(2, 2), (37, 5), (1,), (0, 3), (257,)])
def test_elementwise_exact(cuda_driver, name, shape):
    rng = np.random.default_rng(1)
    got = both(EXACT[name], _rand(rng, shape), _rand(rng, shape))
    assert got.shape == shape


def test_elementwise_bit_identical(cuda_driver):
    rng = np.random.default_rng(2)
    a, b = _rand(rng, (13, 7)), _rand(rng, (13, 7))
    for fn in EXACT.values():
        want = fn(tfc.constant(a), tfc.constant(b))
        got = fn(tfc.constant(a).gpu(), tfc.constant(b).gpu())
        assert np.array_equal(np.asarray(want), np.asarray(got))


def test_transcendental(cuda_driver):
    rng = np.random.default_rng(3)
    both(lambda x: tfc.exp(x) + tfc.tanh(x) + tfc.log(tfc.abs(x) + 1.0) + tfc.sigmoid(x),
         _rand(rng, (9, 11)), family="elementwise")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64, np.bool_])
def test_other_dtypes(cuda_driver, dtype):
    rng = np.random.default_rng(4)
    a, b = _rand(rng, (5, 6), dtype), _rand(rng, (5, 6), dtype)
    if np.dtype(dtype).kind == "b":
        got = both(lambda x, y: tfc.logical_and(x, tfc.logical_not(y)), a, b)
    else:
        got = both(lambda x, y: x * y - y, a, b)
    assert got.dtype == tfc.as_dtype(dtype)


def test_cast(cuda_driver):
    rng = np.random.default_rng(5)
    both(lambda x: tfc.cast(x * 3.0, tfc.int32), _rand(rng, (4, 9)))
    both(lambda x: tfc.cast(x, tfc.float32), _rand(rng, (4, 9), np.int64))


def test_broadcasting(cuda_driver):
    rng = np.random.default_rng(6)
    both(lambda x, b: x * b + b, _rand(rng, (6, 7)), _rand(rng, (7,)))
    both(lambda x, b: x - b, _rand(rng, (6, 7)), _rand(rng, (6, 1)))
    both(lambda x, b: x + b, _rand(rng, (1, 5)), _rand(rng, (4, 1)))
    both(lambda x, b: x / b, _rand(rng, (3, 0)), _rand(rng, (3, 1)) + 3.0)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_reductions(cuda_driver, axis):
    rng = np.random.default_rng(7)
    x = _rand(rng, (33, 70))
    both(lambda t: tfc.reduce_sum(t, axis=axis), x, family="reduction")
    both(lambda t: tfc.reduce_max(t, axis=axis), x)
    both(lambda t: tfc.reduce_mean(t * t, axis=axis, keepdims=True), x, family="reduction")
    both(lambda t: tfc.argmax(t, axis=0 if axis is None else axis), x)


def test_reduction_of_empty(cuda_driver):
    both(lambda t: tfc.reduce_sum(t, axis=0), np.zeros((0, 5), np.float32), family="reduction")
    both(lambda t: tfc.reduce_sum(t), np.zeros((0, 5), np.float32), family="reduction")


@pytest.mark.parametrize("shapes", [((2, 2), (2, 2)), ((17, 33), (33, 9)), ((1, 5), (5, 1)), ((4, 0), (0, 3))])
def test_matmul(cuda_driver, shapes):
    rng = np.random.default_rng(8)
    a, b = _rand(rng, shapes[0]), _rand(rng, shapes[1])
    both(lambda x, y: x @ y, a, b, family="matmul")
    both(lambda x, y: tfc.matmul(x, y, transpose_a=True), a.T.copy(), b, family="matmul")


def test_data_movement(cuda_driver):
    rng = np.random.default_rng(9)
    x = _rand(rng, (6, 5))
    both(lambda t: tfc.transpose(t), x)
    both(lambda t: tfc.reshape(t, [5, 6]), x)
    both(lambda t: t[1:, ::2], x)
    both(lambda t: tfc.concat([t, t * 2.0], axis=1), x)
    both(lambda t: tfc.split(t, [2, 3], axis=1), x)
    both(lambda t: tfc.gather(t, tfc.constant([4, 0, 4]) if t.device == CPU else tfc.constant([4, 0, 4]).gpu()), x)
    # a transposed (strided) result feeds the next op as a contiguous device buffer
    both(lambda t: tfc.transpose(t) @ t, x, family="matmul")


def test_softmax_and_cross_entropy(cuda_driver):
    rng = np.random.default_rng(10)
    logits = _rand(rng, (5, 7))
    both(lambda t: tfc.nn.softmax(t), logits, family="elementwise")


def test_zero_d_tensors(cuda_driver):
    """A 0-d GPU tensor (a reduction's result) is an op input as a [1] buffer;
    a 0-d result is a GPU tensor too."""
    rng = np.random.default_rng(11)
    x = _rand(rng, (4, 5))
    got = both(lambda t: t - tfc.reduce_mean(t), x, family="reduction")
    assert got.shape == (4, 5)
    s = both(lambda t: tfc.reduce_sum(t) * 2.0 + tfc.reduce_max(t), x, family="reduction")
    assert s.shape == () and s.device == GPU
    assert float(s) == pytest.approx(float(np.sum(x) * 2 + np.max(x)), rel=1e-5)
    c = tfc.constant(3.5).gpu()
    assert (c + c).device == GPU and float(c + c) == 7.0


def test_python_scalars_travel_with_the_launch(cuda_driver):
    """Soft placement of scalars: a Python number (a 0-d host tensor) is a
    kernel argument; one compiled kernel serves every value."""
    g = tfc.constant([[1.0, 2.0], [3.0, 4.0]]).gpu()
    (g * 2.0).numpy()
    before = eager_gpu.compiles()
    for k in (3.0, -1.5, 0.25):
        r = g * k
        assert r.device == GPU and np.array_equal(r.numpy(), np.float32([[1, 2], [3, 4]]) * np.float32(k))
    assert eager_gpu.compiles() == before
    assert np.array_equal((1.0 - g).numpy(), 1.0 - np.float32([[1, 2], [3, 4]]))
    h = tfc.constant(np.float32(2.0))  # a 0-d host tensor: soft-placed as well
    assert np.array_equal((g + h).numpy(), np.float32([[3, 4], [5, 6]]))


# -- devices ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 3), (5, 7)])
def test_round_trip(cuda_driver, dtype, shape):
    a = _rand(np.random.default_rng(12), shape, dtype)
    t = tfc.constant(a)
    g = t.gpu()
    assert type(g) is GpuTensor and g.device == GPU and g.gpu() is g
    assert (g.shape, g.dtype, g.ndim, g.size) == (t.shape, t.dtype, t.ndim, t.size)
    back = g.cpu()
    assert type(back) is tfc.Tensor and back.device == CPU
    for host in (back.numpy(), g.numpy(), np.asarray(g)):
        assert np.asarray(host).dtype == a.dtype and np.array_equal(host, a)


def test_non_contiguous_upload(cuda_driver):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2].T  # strided, transposed
    g = tfc.constant(a).gpu()
    assert np.array_equal(g.numpy(), a)
    assert np.array_equal((g + g).numpy(), a + a)


def test_host_views_of_gpu_tensors(cuda_driver):
    g = tfc.constant([[1.5, 2.0], [3.0, 4.0]]).gpu()
    n = g.numpy()
    assert not n.flags.writeable
    assert np.asarray(g, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="copy"):
        np.asarray(g, copy=False)
    assert np.array(g, copy=True).flags.writeable
    text = repr(g)
    assert "device=/device:GPU:0" in text and "1.5" in text and "shape=(2, 2)" in text
    assert str(g) == text
    s = tfc.constant(7).gpu()
    assert int(s) == 7 and bool(s) and float(s) == 7.0 and f"{s:03d}" == "007"
    assert len(g) == 2 and [r.device for r in g] == [GPU, GPU]
    with pytest.raises(ValueError, match="one element"):
        float(g)


def test_device_scope(cuda_driver):
    with tfc.device("gpu:0"):
        c = tfc.constant([1.0, 2.0, 3.0])
        z = tfc.zeros([3])
        o = tfc.ones_like(c)
        e = tfc.eye(3)
        r = tfc.random.normal([4, 5], seed=7)
        y = c + z + o
    for t in (c, z, o, e, r, y):
        assert t.device == GPU, t
    assert np.array_equal(y.numpy(), [2.0, 3.0, 4.0])
    assert np.array_equal(e.numpy(), np.eye(3, dtype=np.float32))
    # random ops run their GPU kernel: normals within docs/random.md's 8 ulps of the CPU's
    want = tfc.random.normal([4, 5], seed=7).numpy()
    np.testing.assert_allclose(r.numpy(), want, rtol=8 * 2.0 ** -23, atol=2.0 ** -20)
    # the scope copies host inputs to the GPU; a cpu scope copies GPU inputs back
    h = tfc.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    with tfc.device("/device:GPU:0"):
        s = tfc.reduce_sum(h, axis=1)
    assert s.device == GPU and np.array_equal(s.numpy(), [3.0, 12.0])
    with tfc.device("cpu:0"):
        back = s * 2.0
        with tfc.device("gpu:0"):
            inner = tfc.constant(1.0)
        after = tfc.constant(1.0)
    assert back.device == CPU and np.array_equal(back.numpy(), [6.0, 24.0])
    assert inner.device == GPU and after.device == CPU
    assert tfc.constant(1.0).device == CPU  # the scope ended


def test_mixing_devices_is_an_error(cuda_driver):
    g = tfc.constant([[1.0, 2.0]]).gpu()
    h = tfc.constant([[3.0, 4.0]])
    for f in (lambda: g + h, lambda: h + g, lambda: tfc.matmul(g, tfc.transpose(h))):
        with pytest.raises(DeviceMismatchError) as e:
            f()
        msg = str(e.value)
        assert GPU in msg and CPU in msg and ".gpu()" in msg and ".cpu()" in msg
    with pytest.raises(DeviceMismatchError, match="^add: input 0"):
        tfc.add(g, h)
    assert np.array_equal((g + h.gpu()).numpy(), [[4.0, 6.0]])
    assert np.array_equal((g.cpu() + h).numpy(), [[4.0, 6.0]])


def test_host_value_of_gpu_tensor_is_not_read_implicitly(cuda_driver):
    """A tfc.function compiled for the CPU takes host values: a GPU tensor
    argument is a clear NotImplementedError (copy it with .cpu()). (Variables
    made from GPU tensors live on the GPU: tests/test_gpu_variables.py.)"""
    g = tfc.constant([1.0, 2.0]).gpu()
    f = tfc.function(lambda x: x * 2.0)
    with pytest.raises(NotImplementedError, match=r"\.cpu\(\)"):
        f(g)


def test_op_the_backend_cannot_compile(cuda_driver, monkeypatch):
    """The cuda backend's NotImplementedError, naming the eager op (float64
    log1p made to have no PTX sequence here)."""
    from tfc.backends.cuda import ptx_math

    monkeypatch.delitem(ptx_math.EMITTERS_F64, "math.log1p")
    g = tfc.constant(np.ones((3,), np.float64)).gpu()
    with pytest.raises(NotImplementedError, match=r"^the eager op log1p on the GPU: .*f64"):
        tfc.log1p(g)
    n = eager_gpu.compiles()
    with pytest.raises(NotImplementedError, match="the eager op log1p on the GPU"):
        tfc.log1p(g)  # nothing cached: the same error again
    assert eager_gpu.compiles() == n
    assert np.array_equal((g + g).numpy(), [2.0, 2.0, 2.0])  # the tensor is still usable


# -- the op cache ------------------------------------------------------------------------

def test_op_cache(cuda_driver):
    """An op on inputs of shapes, dtypes and attributes seen before runs its
    cached kernel: nothing is traced or compiled again."""
    rng = np.random.default_rng(13)
    a = tfc.constant(_rand(rng, (3, 11))).gpu()
    b = tfc.constant(_rand(rng, (3, 11))).gpu()
    first = [a + b, tfc.reduce_sum(a, axis=1), tfc.transpose(a)]
    n = eager_gpu.compiles()
    again = [a + b, tfc.reduce_sum(a, axis=1), tfc.transpose(a)]
    assert eager_gpu.compiles() == n
    for x, y in zip(first, again):
        assert np.array_equal(x.numpy(), y.numpy())
    c = tfc.constant(_rand(rng, (3, 11))).gpu()
    a + c  # other tensors, the same shapes
    assert eager_gpu.compiles() == n
    tfc.reduce_sum(a, axis=0)  # another attribute
    assert eager_gpu.compiles() == n + 1
    a[:, 1:] + b[:, 1:]  # another shape (getitem's index is unhashable in 3.11: cached by its text)
    n2 = eager_gpu.compiles()
    a[:, 1:] + b[:, 1:]
    assert eager_gpu.compiles() == n2


# -- gradients -----------------------------------------------------------------------------

def _mlp_grads(arrays, labels, on_gpu):
    params = [tfc.constant(a) for a in arrays[1:]]
    x = tfc.constant(arrays[0])
    y = tfc.constant(labels)
    if on_gpu:
        params, x, y = [p.gpu() for p in params], x.gpu(), y.gpu()
    w1, b1, w2, b2 = params
    with tfc.GradientTape() as tape:
        for p in params:
            tape.watch(p)
        h = tfc.nn.relu(x @ w1 + b1)
        logits = tfc.matmul(h, w2) + b2
        loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        loss = loss + 1e-3 * tfc.reduce_sum(tfc.square(w1))
    return loss, tape.gradient(loss, params)


def test_mlp_gradients(cuda_driver):
    """GradientTape on GPU tensors: every gradient rule runs on the GPU and
    gives the CPU's gradients within the numerics contract."""
    rng = np.random.default_rng(14)
    arrays = [_rand(rng, s) for s in ((9, 7), (7, 6), (6,), (6, 3), (3,))]
    labels = rng.integers(0, 3, 9).astype(np.int32)
    loss_c, grads_c = _mlp_grads(arrays, labels, False)
    loss_g, grads_g = _mlp_grads(arrays, labels, True)
    same(loss_c, loss_g, "reduction")
    same(grads_c, grads_g, "reduction")


def test_gradients_of_broadcasts_and_reductions(cuda_driver):
    rng = np.random.default_rng(15)
    x, b = _rand(rng, (5, 4)), _rand(rng, (4,))

    def grads(on_gpu):
        tx, tb = tfc.constant(x), tfc.constant(b)
        if on_gpu:
            tx, tb = tx.gpu(), tb.gpu()
        with tfc.GradientTape(persistent=True) as tape:
            tape.watch(tx)
            tape.watch(tb)
            y = tfc.reduce_max(tfc.tanh(tx * tb), axis=1) + tfc.reduce_sum(tfc.exp(tb) / 2.0)
            z = tfc.reduce_sum(y * y)
        return tape.gradient(z, [tx, tb]) + tape.gradient(y, [tb])

    same(grads(False), grads(True), "reduction")


# -- drivers -----------------------------------------------------------------------------------

def test_list_devices(cuda_driver):
    """The simulator counts as a device (docs/gpu-eager.md), as a real one does."""
    assert tfc.config.list_devices("GPU") == [("/physical_device:GPU:0", "GPU")]
    assert tfc.config.list_physical_devices() == [("/physical_device:CPU:0", "CPU"),
                                                  ("/physical_device:GPU:0", "GPU")]
    assert tfc.config.list_devices("cpu") == [("/physical_device:CPU:0", "CPU")]


def test_unavailable_without_a_driver(monkeypatch):
    from tfc.backends.cuda.driver import available

    if available("pycuda")[0] is not None:
        pytest.skip("pycuda has a device on this machine")
    monkeypatch.setenv("TFC_CUDA_DRIVER", "pycuda")
    assert tfc.config.list_devices("GPU") == []
    t = tfc.constant([1.0])
    with pytest.raises(UnavailableError, match="pycuda"):
        t.gpu()
    with pytest.raises(UnavailableError, match="pycuda"):
        with tfc.device("gpu:0"):
            pass
    with pytest.raises(ValueError, match="one GPU device"):
        t.gpu(1)


def test_import_tfc_imports_no_cuda():
    code = ("import sys, tfc; tfc.constant(1.0) + 1.0; tfc.config.list_devices('CPU'); "
            "bad = [m for m in sys.modules if m.startswith(('tfc.backends.cuda', 'pycuda', 'cuda'))]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_op_cache_is_bounded(cuda_driver, monkeypatch):
    rt = eager_gpu.RUNTIME.current()
    monkeypatch.setattr(eager_gpu, "CACHE_MAX", 2)
    sizes = (1001, 1002, 1003, 1004)  # shapes no other test uses
    outs = [tfc.constant(np.arange(n, dtype=np.float32)).gpu() * 3.0 for n in sizes]
    assert len(rt.cache) == eager_gpu.CACHE_MAX
    for n, o in zip(sizes, outs):
        assert np.array_equal(o.numpy(), np.arange(n, dtype=np.float32) * 3)
    n = eager_gpu.compiles()
    tfc.constant(np.arange(1004, dtype=np.float32)).gpu() * 3.0  # the newest: cached
    assert eager_gpu.compiles() == n
    tfc.constant(np.arange(1001, dtype=np.float32)).gpu() * 3.0  # evicted: compiled again
    assert eager_gpu.compiles() == n + 1


def test_straight_line_launcher(cuda_driver):
    """A cached single-op function that only allocates and launches runs
    without its host program (CudaExecutable.straight_line): the same bits as
    run_device, on GPU tensors and host scalars, zero sizes included."""
    from tfc.core.registry import REGISTRY, execute

    rng = np.random.default_rng(16)
    rt = eager_gpu.RUNTIME.current()
    g = lambda *s, dtype=np.float32: tfc.constant(_rand(rng, s, dtype)).gpu()  # noqa: E731
    h = lambda v, dt: tfc.constant(np.array(v, dt))  # noqa: E731  (a 0-d host tensor)
    cases = [("add", [g(2, 2), g(2, 2)], {}), ("add", [g(6, 7), g(7)], {}), ("add", [g(0, 3), g(0, 3)], {}),
             ("multiply", [g(5, 3), h(2.5, np.float32)], {}), ("greater", [g(9), h(0.0, np.float32)], {}),
             ("matmul", [g(17, 33), g(33, 9)], {"transpose_a": False, "transpose_b": False}),
             ("reduce_sum", [g(33, 70)], {"axis": [1], "keepdims": False}),
             ("where", [g(4, 4, dtype=np.bool_), g(4, 4), g(4, 4)], {}),
             ("cast", [g(3, 5)], {"dtype": tfc.int32}), ("argmax", [g(6, 9)], {"axis": 1, "output_type": tfc.int64})]
    straight = 0
    for name, inputs, attrs in cases:
        op = REGISTRY[name]
        out = execute(op, inputs, attrs)
        key = (op, *[t._spec if type(t) is GpuTensor else t._value.dtype for t in inputs],
               *eager_gpu.attrs_key(attrs))
        entry = rt.cache[key]
        args = [t._buf if type(t) is GpuTensor else t._value for t in inputs]
        mine, theirs = entry.run(args), entry.ex.run_device(args)
        for spec, a, b in zip(entry.specs, mine, theirs):
            got, want = rt.tensor(a, spec).numpy(), rt.tensor(b, spec).numpy()
            assert np.array_equal(got, want), name
        assert np.array_equal(out.numpy(), rt.tensor(theirs[0], entry.specs[0]).numpy())
        straight += entry.run != entry.ex.run_device
    assert straight >= len(cases) - 2, straight  # (a reduction's plan may use an arena)
    x = g(2, 2)
    x + x
    entry = rt.cache[(REGISTRY["add"], x._spec, x._spec)]
    assert entry.run != entry.ex.run_device  # the per-op path of docs/gpu-eager.md


GRADS = {  # f(x, y) -> a tensor; x [4, 6], y [4, 6] (x > 0.1 where a rule needs it)
    "exp_log": lambda x, y: tfc.exp(y) * tfc.log(x),
    "tanh_sigmoid": lambda x, y: tfc.tanh(x) - tfc.sigmoid(y),
    "sqrt_square_abs": lambda x, y: tfc.sqrt(x) + tfc.square(y) * tfc.abs(y),
    "div_max_min": lambda x, y: tfc.maximum(x, y) / (x + 1.0) - tfc.minimum(x, y),
    "relu_softplus": lambda x, y: tfc.nn.relu(y) * tfc.softplus(x),
    "matmul": lambda x, y: tfc.matmul(x, y, transpose_b=True),
    "reductions": lambda x, y: tfc.reduce_max(x * y, axis=1) + tfc.reduce_mean(y, axis=0)[:4],
    "softmax": lambda x, y: tfc.nn.softmax(x * y) * y,
    "shapes": lambda x, y: tfc.reshape(tfc.transpose(x), [4, 6]) * tfc.concat([y[:, :3], y[:, 3:]], axis=1),
    "broadcast": lambda x, y: tfc.expand_dims(tfc.reduce_sum(x, axis=0), 0) * y + tfc.broadcast_to(y[:1], [4, 6]),
    "where_gather": lambda x, y: tfc.where(x > 0.5, x, y) + tfc.gather(y, tfc.constant([3, 0, 1, 1]).gpu()
                                                                       if y.device == GPU else tfc.constant([3, 0, 1, 1])),
    "cast": lambda x, y: tfc.cast(tfc.cast(x, tfc.float64) * 2.0, tfc.float32) * y,
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradient_rules(cuda_driver, name):
    """Gradient rules dispatch to the GPU again: each gives the CPU's gradients."""
    rng = np.random.default_rng(17)
    x = (np.abs(_rand(rng, (4, 6))) + 0.1).astype(np.float32)
    y = _rand(rng, (4, 6))

    def grads(on_gpu):
        tx, ty = tfc.constant(x), tfc.constant(y)
        if on_gpu:
            tx, ty = tx.gpu(), ty.gpu()
        with tfc.GradientTape() as tape:
            tape.watch(tx)
            tape.watch(ty)
            out = GRADS[name](tx, ty)
            z = tfc.reduce_sum(out * out)  # a seed that varies over the output
        return [z, *tape.gradient(z, [tx, ty])]

    same(grads(False), grads(True), "reduction")


def test_results_made_contiguous_buffers(cuda_driver):
    """``DriverRuntime.fixed`` (results the lowering does not give today, kept
    correct): a strided view becomes a contiguous buffer of its own, a buffer
    inside the executable's arena is copied out, a host scalar is uploaded."""
    from xdsl.dialects.builtin import MemRefType, f32

    from tfc.backends.cuda.host import Buf
    from tfc.core.registry import REGISTRY, Spec
    from tfc.dialects.loops import strided_type

    rt = eager_gpu.RUNTIME.current()
    x = tfc.constant(np.zeros((2, 3), np.float32)).gpu()
    x + x
    entry = rt.cache[(REGISTRY["add"], x._spec, x._spec)]
    base = tfc.constant(np.arange(12, dtype=np.float32)).gpu()  # the storage of the views below
    view_t = strided_type(f32, (3, 2), (1, 3), 1)  # a transposed [2, 3] view at element offset 1
    spec32 = Spec((3, 2), tfc.float32)
    arena = entry.ex._device.arena
    prev = arena.block
    arena.block = base._buf.owner  # pretend the storage is the arena
    try:
        fake = eager_gpu._Entry.__new__(eager_gpu._Entry)
        fake.ex, fake.specs = entry.ex, [spec32, Spec((12,), tfc.float32), Spec((), tfc.float32)]
        fake.fix = [(True, view_t), (False, MemRefType(f32, [12])), (False, f32)]
        strided, copied, scalar = rt.fixed(fake, [base._buf, Buf(base._buf.addr, base._buf.owner),
                                                  np.float32(2.5)])
    finally:
        arena.block = prev
    want = np.arange(12, dtype=np.float32)[1:7].reshape(2, 3).T
    assert np.array_equal(rt.tensor(strided, spec32).numpy(), want)
    assert copied.owner is not base._buf.owner and copied.addr != base._buf.addr
    assert np.array_equal(rt.tensor(copied, fake.specs[1]).numpy(), np.arange(12, dtype=np.float32))
    assert rt.tensor(scalar, fake.specs[2]).numpy() == np.float32(2.5)


def test_training_loop_frees_its_buffers(cuda_driver):
    """Plain SGD on GPU tensors: the same losses as on the CPU step after step,
    and device memory in use stays flat but for what the loop keeps (each
    step's buffers go back to the caching allocator when their tensors go)."""
    rng = np.random.default_rng(18)
    arrays = [_rand(rng, s) * 0.5 for s in ((16, 5), (5, 8), (8,), (8, 3), (3,))]
    labels = rng.integers(0, 3, 16).astype(np.int32)

    def train(on_gpu, steps=6):
        move = (lambda t: t.gpu()) if on_gpu else (lambda t: t)  # noqa: E731
        x, y = move(tfc.constant(arrays[0])), move(tfc.constant(labels))
        params = [move(tfc.constant(a)) for a in arrays[1:]]
        losses, in_use = [], []
        for _ in range(steps):
            with tfc.GradientTape() as tape:
                for p in params:
                    tape.watch(p)
                w1, b1, w2, b2 = params
                logits = tfc.nn.relu(x @ w1 + b1) @ w2 + b2
                loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            grads = tape.gradient(loss, params)
            params = [p - 0.5 * g for p, g in zip(params, grads)]
            losses.append(loss)
            del tape, grads, logits
            if on_gpu:
                in_use.append(eager_gpu.RUNTIME.current().allocator.bytes_in_use)
        return losses, params, in_use

    cpu_losses, cpu_params, _ = train(False)
    gpu_losses, gpu_params, in_use = train(True)
    same(cpu_losses, gpu_losses, "reduction")
    same(cpu_params, gpu_params, "reduction")
    assert float(gpu_losses[-1]) < float(gpu_losses[0])
    # flat but for the losses kept (one 0-d buffer each) once the first steps' kernels are cached
    from tfc.backends.cuda.memory import size_class

    assert [b - a for a, b in zip(in_use[2:], in_use[3:])] == [size_class(4)] * (len(in_use) - 3), in_use


def test_gradients_across_device_scopes(cuda_driver):
    """A gradient rule runs where its op ran, and each gradient lands on its
    input's device: a host tensor (or Variable) used by GPU ops in a GPU scope
    gets a host gradient, a GPU tensor used in a cpu scope a GPU gradient."""
    x = np.float32([1.0, -2.0, 3.0])
    g = tfc.constant(x).gpu()
    with tfc.GradientTape() as tape:
        tape.watch(g)
        with tfc.device("cpu:0"):
            y = g * g
        assert y.device == CPU
        z = tfc.reduce_sum(y * 3.0)
    dg = tape.gradient(z, g)
    assert dg.device == GPU and np.array_equal(dg.numpy(), 6 * x)

    h = tfc.constant(x)
    v = tfc.Variable(np.float32([0.5, 0.25, 2.0]))
    with tfc.GradientTape() as tape:
        tape.watch(h)
        with tfc.device("gpu:0"):
            y = tfc.reduce_sum(tfc.exp(h) * v)
        assert y.device == GPU
    dh, dv = tape.gradient(y, [h, v])
    assert dh.device == CPU and dv.device == CPU
    numerics = backend("cuda").numerics
    assert numerics.difference(np.exp(x) * np.float32([0.5, 0.25, 2.0]), dh.numpy(), "elementwise") is None
    assert numerics.difference(np.exp(x), dv.numpy(), "elementwise") is None
    v.assign_sub(0.1 * dv)  # the host variable's update takes the host gradient
    assert v.device == CPU


def test_host_layer_trained_with_gpu_compute(cuda_driver):
    """A layer's variables live on the host (built outside the GPU scope); its
    forward pass and gradients run on the GPU inside one, the gradients come
    back to the host, and a host optimizer applies them: the CPU's losses."""
    rng = np.random.default_rng(19)
    x, y = _rand(rng, (8, 5)), rng.integers(0, 3, 8).astype(np.int32)
    init = [_rand(rng, (5, 3)), _rand(rng, (3,))]

    def losses(scope):
        model = tfc.layers.Dense(3)
        model(tfc.constant(x[:1]))  # built here: its variables on the host
        for var, value in zip(model.trainable_variables, init):
            var.assign(value)
        opt = tfc.optimizers.SGD(0.1)
        out = []
        for _ in range(3):
            with tfc.GradientTape() as tape:
                with tfc.device(scope):
                    logits = model(tfc.constant(x))
                    loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(
                        labels=tfc.constant(y), logits=logits))
            grads = tape.gradient(loss, model.trainable_variables)
            assert [g.device for g in grads] == [CPU, CPU]
            opt.apply_gradients(zip(grads, model.trainable_variables))
            out.append(loss)
        return out

    cpu, gpu = losses("cpu:0"), losses("gpu:0")
    same(cpu, gpu, "reduction")


def test_errors_are_the_cpus(cuda_driver):
    """Bad shapes fail at inference, bad indices in the kernel's index check
    (the host program's raise): the same error types and messages as on the CPU."""
    def errors(move):
        a, b = move(tfc.constant(np.ones((2, 3), np.float32))), move(tfc.constant(np.ones((4, 5), np.float32)))
        out = []
        for f in (lambda: a + b, lambda: tfc.reshape(a, [7]), lambda: a[5],
                  lambda: tfc.gather(a, move(tfc.constant([5])))):
            with pytest.raises(Exception) as e:
                f()
            out.append((type(e.value), str(e.value).splitlines()[0]))
        return out

    assert errors(lambda t: t.gpu()) == errors(lambda t: t)


def test_op_cache_keys_floats_by_their_bits(cuda_driver):
    """pad with -0.0 then with 0.0 (equal as floats) are two kernels: each
    result has its own constant's sign (found by review); NaN compiles once."""
    from tfc.frontend import eager_gpu

    g = tfc.constant(np.ones((2,), np.float32)).gpu()
    neg = tfc.pad(g, [[1, 1]], constant_values=-0.0).numpy()
    pos = tfc.pad(g, [[1, 1]], constant_values=0.0).numpy()
    assert np.signbit(neg[0]) and not np.signbit(pos[0])
    before = eager_gpu.compiles()
    for _ in range(3):
        assert np.isnan(tfc.pad(g, [[1, 1]], constant_values=float("nan")).numpy()[0])
    assert eager_gpu.compiles() - before == 1
