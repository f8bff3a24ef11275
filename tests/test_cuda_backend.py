"""target="cuda" end to end: tfc.function compiled for cuda runs its PTX
through the simulated driver (TFC_CUDA_DRIVER=simulator) and, marked ``gpu``,
on a real GPU where there is one; both must give eager's results within the
CUDA backend's numerics contract."""
import numpy as np
import pytest

import tfc
from tfc.backends import backend
from tfc.core import nest
from tfc.core.errors import UnavailableError

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _rand(rng, shape, dtype=np.float32):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(-5, 6, shape).astype(dtype)


def check(fn, *shapes, dtype=np.float32, seed=0, family=None, args=None):
    """fn compiled for cuda on random inputs of ``shapes`` against eager."""
    rng = np.random.default_rng(seed)
    arrays = args if args is not None else [_rand(rng, s, dtype) for s in shapes]
    want = fn(*[tfc.constant(a) for a in arrays])
    specs = [tfc.TensorSpec(a.shape, tfc.as_dtype(a.dtype)) for a in arrays]
    compiled = tfc.function(fn, input_signature=specs, target="cuda")
    got = compiled(*[tfc.constant(a) for a in arrays])
    numerics = backend("cuda").numerics
    wants, gots = nest.flatten(want), nest.flatten(got)
    assert len(wants) == len(gots)
    for w, g in zip(wants, gots):
        problem = numerics.difference(np.asarray(w.numpy()), np.asarray(g.numpy()), family)
        assert problem is None, problem
    return compiled


ELEMENTWISE = {
    "add_mul": lambda x, y: x * y + 1.0,
    "relu_sub": lambda x, y: tfc.nn.relu(x * y + 1.0) - x,
    "div_max": lambda x, y: tfc.maximum(x / (tfc.abs(y) + 0.5), y),
    "where": lambda x, y: tfc.where(x > y, x, y * 2.0),
    "sqrt_square": lambda x, y: tfc.sqrt(tfc.abs(x)) + tfc.square(y),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@pytest.mark.parametrize("shape", [(37, 5), (1,), (0, 3), (257,), (3, 1000)])
def test_elementwise_exact_ops(cuda_driver, name, shape):
    check(ELEMENTWISE[name], shape, shape)


@pytest.mark.parametrize("shape", [(7, 13), (300,)])
def test_transcendental(cuda_driver, shape):
    check(lambda x, y: tfc.exp(x) + tfc.tanh(y) + tfc.log(tfc.abs(x) + 1.0) + tfc.sigmoid(y), shape, shape,
          family="elementwise")


def test_broadcast(cuda_driver):
    check(lambda x, b: x * b + b, (6, 7), (7,))
    check(lambda x, b: x - b, (6, 7), (6, 1))


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_reductions(cuda_driver, axis):
    check(lambda x: tfc.reduce_sum(x, axis=axis), (33, 70), family="reduction")
    check(lambda x: tfc.reduce_max(x, axis=axis), (33, 70))
    check(lambda x: tfc.reduce_mean(x * x, axis=axis), (5, 300), family="reduction")


def test_softmax(cuda_driver):
    check(lambda x: tfc.nn.softmax(x), (9, 40), family="elementwise")


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True)])
def test_matmul(cuda_driver, ta, tb):
    def f(a, b):
        return tfc.matmul(a, b, transpose_a=ta, transpose_b=tb)
    m, k, n = 19, 33, 21
    check(f, (k, m) if ta else (m, k), (n, k) if tb else (k, n), family="matmul")


def test_slices_and_concat(cuda_driver):
    check(lambda x: tfc.concat([x[1:, ::2], x[:-1, 1::2] * 2.0], axis=1), (6, 9))
    check(lambda x: tfc.transpose(x) + 1.0, (5, 7))


def test_while_loop_on_host(cuda_driver):
    def f(x):
        i = tfc.constant(0)
        s = tfc.reduce_sum(tfc.abs(x))
        while s > 1.0:
            x = x * 0.5
            s = tfc.reduce_sum(tfc.abs(x))
            i += 1
        return x, i
    check(f, (4, 8), family="reduction")


def test_mlp_training_step(cuda_driver):
    w1 = tfc.Variable(np.random.default_rng(1).standard_normal((12, 16)).astype(np.float32) * 0.1)
    w2 = tfc.Variable(np.random.default_rng(2).standard_normal((16, 3)).astype(np.float32) * 0.1)

    def loss_grads(x, y):
        with tfc.GradientTape() as tape:
            h = tfc.nn.relu(tfc.matmul(x, w1))
            logits = tfc.matmul(h, w2)
            loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        return (loss,) + tuple(tape.gradient(loss, [w1, w2]))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((10, 12)).astype(np.float32)
    y = rng.integers(0, 3, (10,)).astype(np.int32)
    check(loss_grads, args=[x, y], family="matmul")


def test_cuda_stages_without_a_driver(monkeypatch):
    """Compiling for cuda needs no GPU: .ptx and the gpu stage work anywhere;
    the first call asks for a driver."""
    monkeypatch.setenv("TFC_CUDA_DRIVER", "pycuda")
    f = tfc.function(lambda x: x * 2.0 + 1.0, input_signature=[tfc.TensorSpec([8])], target="cuda")
    conc = f.get_concrete_function()
    assert ".visible .entry" in conc.ptx and ".target sm_80" in conc.ptx
    assert "tgpu.launch" in conc.ir("gpu")
    try:
        import pycuda.driver  # noqa: F401
        have_pycuda = True
    except Exception:  # noqa: BLE001 - no pycuda, or no libcuda
        have_pycuda = False
    if not have_pycuda:
        with pytest.raises(UnavailableError, match="pycuda"):
            conc(tfc.constant(np.ones(8, np.float32)))


def test_gpu_tensors_in_and_out(cuda_driver):
    """A cuda function called with GPU tensors reads their buffers (no upload)
    and gives GPU tensors; called with host tensors it gives host tensors."""
    from tfc.core.tensor import GpuTensor

    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)

    @tfc.function(input_signature=[tfc.TensorSpec([6, 5]), tfc.TensorSpec([5, 4])], target="cuda")
    def f(x, w):
        y = tfc.matmul(x, w)
        return tfc.nn.relu(y), tfc.reduce_sum(y), tfc.transpose(y)

    want = [t.numpy() for t in f(tfc.constant(x), tfc.constant(w))]
    got = f(tfc.constant(x).gpu(), tfc.constant(w).gpu())
    assert type(got[0]) is GpuTensor and type(got[2]) is GpuTensor
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b.numpy())
    assert type(f(tfc.constant(x), tfc.constant(w))[0]) is not GpuTensor
    # the results feed eager GPU ops and other cuda functions
    np.testing.assert_allclose((got[0] * 2.0).numpy(), want[0] * 2.0)


def test_library_call_on_host_scalars(cuda_driver):
    """A reduction of a 0-d value stays a library call on host scalars: the host
    program runs its registry kernel on the numbers."""
    check(lambda x: tfc.reduce_min(tfc.reduce_sum(x)) * 2.0 + tfc.reduce_max(x[0, 0]), (3, 4), family="reduction")


def test_host_scalar_arithmetic(cuda_driver):
    """tfc's own scalar ops (floormod, remf) on host scalars run on the host."""
    check(lambda x, n: (x % 3) + (n % 2.5), args=[np.array(7, np.int32), np.array(-4.25, np.float32)])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_integer_abs_wraps_as_numpy(cuda_driver, dtype):
    """abs.s32/abs.s64: the minimum stays the minimum, as numpy."""
    info = np.iinfo(dtype)
    check(lambda x: tfc.abs(x) + x, args=[np.array([info.min, -3, 0, 5, info.max], dtype)])


def test_float64_scatter_add(cuda_driver):
    """The gradient of a float64 gather: atom.global.add.f64."""
    def g(p, idx):
        with tfc.GradientTape() as t:
            t.watch(p)
            y = tfc.reduce_sum(tfc.gather(p, idx) * 2.0)
        return t.gradient(y, p)
    rng = np.random.default_rng(7)
    check(g, args=[rng.standard_normal((7, 3)), np.array([0, 3, 3, 6, 1], np.int32)], family="reduction")


def test_misaligned_gpu_tensor_arguments(cuda_driver):
    """A GPU tensor that is a view at an odd offset (eager x[1:]) goes to a
    kernel that reads its arguments as 16-byte vectors: the runtime copies it
    to an aligned buffer first (the simulator refuses a misaligned vector load)."""
    x = tfc.constant(np.arange(37, dtype=np.float32)).gpu()
    v = x[1:]
    f = tfc.function(lambda a: a * 2.0 + 1.0, input_signature=[tfc.TensorSpec([36])], target="cuda")
    np.testing.assert_array_equal(f(v).numpy(), np.arange(1, 37, dtype=np.float32) * 2.0 + 1.0)
    np.testing.assert_array_equal((v * 3.0).numpy(), np.arange(1, 37, dtype=np.float32) * 3.0)  # eager


def test_branch_results_are_not_read_through_the_read_only_cache(cuda_driver):
    """A loops.if result names one of several buffers at run time: a kernel
    writing one of them must not read the result with ld.global.nc (found by
    the fuzz: a second-order gradient through tfc.cond; the simulator refuses
    such a read of bytes the launch writes)."""
    def prog(x0, x1):
        with tfc.GradientTape() as t2:
            t2.watch(x0)
            t2.watch(x1)
            with tfc.GradientTape() as t:
                t.watch(x0)
                t.watch(x1)
                v = tfc.cond(tfc.reduce_sum(x1) < 0.25, lambda: x0 * x1, lambda: tfc.nn.softplus(x0))
                loss = tfc.reduce_sum(v)
            g = t.gradient(loss, [x0, x1])
            loss2 = tfc.reduce_sum(g[0]) + tfc.reduce_sum(g[1])
        h = t2.gradient(loss2, [x0, x1])
        return (*g, *h)
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((4, 3)).astype(np.float32)
    check(prog, args=[x0, rng.standard_normal((4, 3)).astype(np.float32) - 1], family="reduction")


def test_cnn_training_step(cuda_driver):
    """conv2d, max and average pooling and their gradients (gpu_nn_library's
    kernels) in one compiled training step."""
    rng = np.random.default_rng(11)
    k1 = tfc.Variable(rng.standard_normal((3, 3, 2, 4)).astype(np.float32) * 0.3)
    w = tfc.Variable(rng.standard_normal((4, 3)).astype(np.float32) * 0.3)

    def step(x, y):
        with tfc.GradientTape() as tape:
            h = tfc.nn.relu(tfc.nn.conv2d(x, k1, strides=1, padding="SAME"))
            h = tfc.nn.max_pool2d(h, ksize=2, strides=2, padding="VALID")
            h = tfc.nn.avg_pool2d(h, ksize=2, strides=2, padding="SAME")
            logits = tfc.matmul(tfc.reduce_mean(h, axis=[1, 2]), w)
            loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        return (loss,) + tuple(tape.gradient(loss, [k1, w]))
    x = rng.standard_normal((3, 9, 9, 2)).astype(np.float32)
    y = rng.integers(0, 3, (3,)).astype(np.int32)
    check(step, args=[x, y], family="matmul")
