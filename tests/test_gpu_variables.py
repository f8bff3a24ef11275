"""Variables on the GPU (docs/gpu-eager.md, Variables): a tfc.Variable made in
a GPU scope or from a GPU tensor lives in device memory; eager reads, assigns
and optimizer updates run there; compiled cuda functions read and replace its
buffer with no copies. Every test runs on the simulated CUDA driver (and,
marked gpu, on a real one), against the same steps on host variables within
the cuda backend's numerics contract."""
import inspect

import numpy as np
import pytest

import tfc
from tfc.backends import backend
from tfc.core import tape as tape_module
from tfc.core.device import DeviceMismatchError
from tfc.core.tensor import GpuTensor, OnDeviceError
from tfc.core.variable import GpuVariable, Variable
from tfc.frontend import eager_gpu

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

GPU = "/device:GPU:0"
CPU = "/device:CPU:0"


class Copies:
    """Counts the driver's host<->device copies (monkeypatched on the driver)."""

    def __init__(self, monkeypatch):
        d = eager_gpu.RUNTIME.current().driver
        self.htod = self.dtoh = 0
        htod, dtoh = d.copy_htod, d.copy_dtoh

        def count_htod(dst, src):
            self.htod += 1
            return htod(dst, src)

        def count_dtoh(dst, src):
            self.dtoh += 1
            return dtoh(dst, src)
        monkeypatch.setattr(d, "copy_htod", count_htod)
        monkeypatch.setattr(d, "copy_dtoh", count_dtoh)

    def reset(self):
        self.htod = self.dtoh = 0


def close(want, got, family=None):
    problem = backend("cuda").numerics.difference(np.asarray(want), np.asarray(got), family)
    assert problem is None, problem


def gpu_var(value, **kw):
    with tfc.device("gpu:0"):
        return tfc.Variable(value, **kw)


# -- placement ------------------------------------------------------------------------------

def test_placement_at_creation(cuda_driver):
    v = gpu_var([1.0, 2.0])
    assert type(v) is GpuVariable and isinstance(v, Variable) and v.device == GPU
    assert (v.shape, v.dtype, v.ndim, v.size) == ((2,), tfc.float32, 1, 2)
    g = tfc.constant([[1, 2]], tfc.int32).gpu()
    w = tfc.Variable(g)  # from a GPU tensor, outside any scope
    assert type(w) is GpuVariable and w.dtype == tfc.int32
    assert np.array_equal(w.numpy(), [[1, 2]])
    with tfc.device("cpu:0"):
        h = tfc.Variable(g)  # a cpu scope: the host
    assert type(h) is Variable and h.device == CPU and np.array_equal(h.numpy(), [[1, 2]])
    assert type(tfc.Variable([1.0])) is Variable  # no scope, host value: the host
    u = gpu_var(v)  # from a GPU variable: its value now, in a buffer the two share (immutable)
    assert type(u) is GpuVariable and np.array_equal(u.numpy(), [1.0, 2.0])
    v.assign([5.0, 6.0])
    assert np.array_equal(u.numpy(), [1.0, 2.0])


def test_host_copies(cuda_driver):
    v = gpu_var(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    a = v.numpy()
    assert isinstance(a, np.ndarray) and a.flags.writeable and np.array_equal(a, np.arange(6).reshape(2, 3))
    a[0, 0] = 100.0  # a copy: the variable is unchanged
    assert v.numpy()[0, 0] == 0.0
    assert np.array_equal(np.asarray(v), a * (a != 100))
    assert "device=/device:GPU:0" in repr(v) and "'w'" in repr(v) and "[3. 4. 5.]" in repr(v)
    assert type(v.cpu()) is tfc.Tensor and np.array_equal(v.cpu().numpy(), v.numpy())
    assert type(v.gpu()) is GpuTensor
    s = gpu_var(2.5)
    assert float(s) == 2.5 and f"{s:.1f}" == "2.5" and s.numpy().shape == ()
    with pytest.raises(ValueError, match="one element"):
        float(v)
    with pytest.raises(ValueError, match="copy"):
        np.asarray(v, copy=False)


def test_eager_ops_run_on_the_gpu(cuda_driver):
    rng = np.random.default_rng(0)
    a, x = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    v, h = gpu_var(a), tfc.Variable(a)
    for f, fam in ((lambda v: tfc.matmul(v, tfc.constant(x).gpu() if type(v) is GpuVariable else tfc.constant(x)),
                    "matmul"),
                   (lambda v: v * 2.0 + 1.0, None), (lambda v: tfc.reduce_sum(v, axis=1), "reduction"),
                   (lambda v: v[1], None), (lambda v: -v, None)):
        got = f(v)
        assert type(got) is GpuTensor, got
        close(f(h), got, fam)
    assert [type(r) for r in v] == [GpuTensor] * 3
    with tfc.device("cpu:0"):
        assert type(v * 2.0) is tfc.Tensor  # a cpu scope copies the value to the host


def test_snapshots_keep_their_values(cuda_driver):
    v = gpu_var([1.0, 2.0, 3.0])
    s0 = v.read_value()
    v.assign_add([1.0, 1.0, 1.0])
    s1 = v.read_value()
    v.assign_sub(0.5)
    t = tfc.constant([7.0, 8.0, 9.0]).gpu()
    v.assign(t)  # shares t's buffer: t is immutable, and the next update writes a new one
    v.assign_add(1.0)
    assert np.array_equal(s0.numpy(), [1.0, 2.0, 3.0])
    assert np.array_equal(s1.numpy(), [2.0, 3.0, 4.0])
    assert np.array_equal(t.numpy(), [7.0, 8.0, 9.0])
    assert np.array_equal(v.numpy(), [8.0, 9.0, 10.0])
    y = v * 1.0  # an op's result read the value of its time
    v.assign([0.0, 0.0, 0.0])
    assert np.array_equal(y.numpy(), [8.0, 9.0, 10.0])


def test_assign_forms_and_errors(cuda_driver):
    v = gpu_var(np.zeros((2, 2), np.float32), name="v")
    v.assign(np.ones((2, 2)))  # a host value is copied to the variable's device (float64 converts)
    assert type(v) is GpuVariable and np.array_equal(v.numpy(), np.ones((2, 2)))
    v.assign_add(tfc.constant([[1.0, 2.0], [3.0, 4.0]]))  # a host delta with dimensions: copied too
    assert np.array_equal(v.numpy(), [[2.0, 3.0], [4.0, 5.0]])
    v.assign_sub(tfc.constant([1.0, 1.0]).gpu())  # broadcasts, as on the host
    assert np.array_equal(v.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    w = gpu_var(np.full((2, 2), 10.0, np.float32))
    v.assign_add(w)
    assert np.array_equal(v.numpy(), [[11.0, 12.0], [13.0, 14.0]])
    v.assign(tfc.Variable(np.zeros((2, 2), np.float32)))  # a host variable's value
    assert np.array_equal(v.numpy(), np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"v\.assign: cannot assign a value of shape \(3,\)"):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"v\.assign_add: cannot assign a value of shape \(2, 2, 2\)"):
        v.assign_add(tfc.zeros([2, 2, 2]).gpu())
    with pytest.raises(TypeError, match="dtype int32"):
        v.assign(tfc.constant([[1, 2], [3, 4]]).gpu())
    assert np.array_equal(v.numpy(), np.zeros((2, 2)))  # failed assignments change nothing


def test_mixing_devices(cuda_driver):
    v = gpu_var([1.0, 2.0])
    h = tfc.constant([3.0, 4.0])
    with pytest.raises(DeviceMismatchError, match="add: input"):
        v + h  # outside a scope tfc copies nothing
    host = tfc.Variable([1.0, 2.0])
    with pytest.raises(OnDeviceError, match=r"\.cpu\(\)"):
        host.assign(v)  # a host variable takes host values only
    f = tfc.function(lambda: v * 2.0)  # compiled for the CPU
    with pytest.raises(DeviceMismatchError, match=r"target='cpu'.*live on the GPU.*target='cuda'"):
        f()


def test_zero_size_and_0d(cuda_driver):
    z = gpu_var(np.zeros((0, 3), np.float32))
    assert type(z) is GpuVariable and z.shape == (0, 3) and z.numpy().shape == (0, 3)
    z.assign_add(1.0)
    z.assign(np.zeros((0, 3), np.float32))
    assert type(z * 2.0) is GpuTensor and (z * 2.0).shape == (0, 3)
    s = gpu_var(3, dtype=tfc.int64)
    s.assign_add(2)
    s.assign_sub(1)
    assert s.numpy() == 4 and s.numpy().dtype == np.int64 and s.shape == ()

    @tfc.function(target="cuda")
    def f(x):
        z.assign(z + x)
        s.assign_add(tfc.cast(tfc.reduce_sum(x), tfc.int64) + 1)
        return z * 2.0, s.read_value()
    out, sv = f(tfc.zeros([0, 3]).gpu())
    assert out.shape == (0, 3) and int(sv) == 5 and s.numpy() == 5 and type(s) is GpuVariable
    out, sv = f(tfc.zeros([0, 3]).gpu())
    assert int(sv) == 6


# -- optimizers --------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: tfc.optimizers.SGD(0.1), lambda: tfc.optimizers.SGD(0.1, momentum=0.9),
                                  lambda: tfc.optimizers.SGD(0.05, momentum=0.5, nesterov=True),
                                  lambda: tfc.optimizers.Adam(0.01)],
                         ids=["sgd", "momentum", "nesterov", "adam"])
def test_optimizers_update_on_the_gpu(cuda_driver, make):
    rng = np.random.default_rng(1)
    init = [rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal(2).astype(np.float32)]
    grads = [[rng.standard_normal(p.shape).astype(np.float32) for p in init] for _ in range(4)]
    results = []
    for on_gpu in (False, True):
        vs = [gpu_var(p) if on_gpu else tfc.Variable(p) for p in init]
        opt = make()
        for gs in grads:
            opt.apply_gradients(zip([tfc.constant(g).gpu() if on_gpu else tfc.constant(g) for g in gs], vs))
        assert all(type(v) is (GpuVariable if on_gpu else Variable) for v in vs)
        assert all(type(sv) is type(vs[0]) for _, _, sv in opt.slot_variables())  # slots where the variable is
        results.append([v.numpy() for v in vs])
    for want, got in zip(*results):
        close(want, got)


# -- compiled cuda functions ---------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: tfc.optimizers.SGD(0.1, momentum=0.9), lambda: tfc.optimizers.Adam(0.1)],
                         ids=["momentum", "adam"])
def test_optimizer_inside_a_compiled_cuda_function(cuda_driver, make):
    """Slots made at the first trace live on the GPU; the host iteration count
    (a 0-d host variable) goes through the cuda function as a scalar."""
    rng = np.random.default_rng(5)
    a, x = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    results = []
    for device, target in (("cpu:0", "cpu"), ("gpu:0", "cuda")):
        with tfc.device(device):
            v, xx = tfc.Variable(a), tfc.constant(x)
        opt = make()

        def step(t):
            with tfc.GradientTape() as tape:
                y = tfc.reduce_sum(tfc.tanh(tfc.matmul(t, v)))
            opt.apply_gradients([(tape.gradient(y, v), v)])
            return y
        f = tfc.function(step, target=target)
        for _ in range(3):
            f(xx)
        assert type(v) is (GpuVariable if target == "cuda" else Variable)
        assert all(type(sv) is type(v) for _, _, sv in opt.slot_variables()) and int(opt.iterations.numpy()) == 3
        results.append(v.numpy())
    close(*results, "matmul")


def test_compiled_function_uses_the_buffers(cuda_driver, monkeypatch):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    v, h = gpu_var(a), tfc.Variable(a)
    counter_g, counter_h = gpu_var(0.0), tfc.Variable(0.0)

    def make(var, counter):
        @tfc.function(target="cuda")
        def step(x):
            y = tfc.matmul(x, var)
            var.assign(var * 0.5 + 1.0)
            counter.assign_add(1.0)
            return y
        return step
    x = rng.standard_normal((2, 4)).astype(np.float32)
    fg, fh = make(v, counter_g), make(h, counter_h)
    gx = tfc.constant(x).gpu()
    before = v.read_value()
    fg(gx)  # compiles
    fh(x)
    copies = Copies(monkeypatch)
    for _ in range(2):
        yg = fg(gx)
        yh = fh(x)
        assert type(yg) is GpuTensor and type(v) is GpuVariable
        close(yh, yg, "matmul")
        close(h.numpy(), v.numpy())
    copies.reset()
    fg(gx)
    # a GPU variable's buffer goes to the kernels and comes back as it is: no uploads; the 0-d
    # counter is a host scalar in the program (L3 keeps 0-d values there): one read, one upload
    assert copies.htod == 1 and copies.dtoh == 1, (copies.htod, copies.dtoh)
    copies.reset()
    fh(x)  # a host variable in a cuda function: uploaded per call, its new value downloaded
    assert copies.htod >= 2 and copies.dtoh >= 2
    assert type(h) is Variable and isinstance(h._value, np.ndarray)
    assert np.array_equal(before.numpy(), a)  # a read before the calls keeps its value
    assert float(counter_g) == float(counter_h) == 4.0


def test_compiled_assignments_are_owned_buffers(cuda_driver):
    """A variable keeps no buffer of the executable's arena (the next call
    reuses it) and shares an argument's buffer safely (GPU tensors are immutable)."""
    v = gpu_var(np.zeros(5, np.float32))
    w = gpu_var(np.zeros(4, np.float32))

    @tfc.function(target="cuda")
    def f(x):
        t = tfc.exp(x) * 2.0  # temporaries the plan may place in the arena
        v.assign(t + 1.0)
        w.assign(x[1:])  # a view of the argument
        return tfc.reduce_sum(t * t)

    xs = [np.arange(5, dtype=np.float32) * k for k in (0.1, 0.2, 0.3)]
    held = []
    for x in xs:
        g = tfc.constant(x).gpu()
        f(g)
        held.append((v.read_value(), w.read_value(), x))
        assert v._t._buf.addr % 16 == 0 and w._t._buf.addr % 16 == 0
    for vv, ww, x in held:  # every call's values survive the later calls
        close(np.exp(x) * 2.0 + 1.0, vv)
        assert np.array_equal(ww.numpy(), x[1:])


def test_kept_buffer_copies_arena_and_unaligned_values(cuda_driver):
    """What a variable keeps of an assigned buffer: the buffer itself when it
    owns its allocation and is aligned; a copy of a value in the arena (the
    next call reuses it) or at an unaligned address."""
    from xdsl.dialects.builtin import MemRefType, f32

    from tfc.backends.cuda.host import Buf, kept_buffer
    from tfc.core.registry import Spec

    rt_eager = eager_gpu.RUNTIME.current()
    block = rt_eager.alloc(256)
    data = np.arange(8, dtype=np.float32)
    rt_eager.driver.copy_htod(block.addr, data)

    class Call:  # the part of a call's runtime (tfc.backends.cuda._Call) kept_buffer uses
        driver = rt_eager.driver

        def alloc(self, n):
            return rt_eager.alloc(n)

        def contiguous(self, buf, t):
            return buf, Spec(tuple(t.get_shape()), tfc.float32)

    t = MemRefType(f32, [4])
    cases = [(Buf(block.addr, block.owner), None, False),        # a fresh buffer: kept
             (Buf(block.addr, block.owner), block.owner, True),  # the arena: copied
             (Buf(block.addr + 4, block.owner), None, True)]     # unaligned: copied
    for buf, arena, copied in cases:
        kept, spec = kept_buffer(Call(), buf, t, arena)
        assert (kept.owner is not buf.owner) == copied and kept.addr % 16 == 0 and spec.shape == (4,)
        host = np.empty(4, np.float32)
        Call.driver.copy_dtoh(host, kept.addr)
        start = (buf.addr - block.addr) // 4
        assert np.array_equal(host, data[start:start + 4])


def test_mlp_step_with_gpu_data_and_variables(cuda_driver, monkeypatch):
    """bench/gpu.py's MLP SGD step (small sizes): GPU data, GPU variables, the
    tape inside the compiled cuda function; losses and parameters as on the CPU."""
    rng = np.random.default_rng(3)
    batch, sizes = 6, (10, 7, 3)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[2], batch).astype(np.int32)
    params = [rng.standard_normal((sizes[0], sizes[1])).astype(np.float32) * 0.5, np.zeros(sizes[1], np.float32),
              rng.standard_normal((sizes[1], sizes[2])).astype(np.float32) * 0.5, np.zeros(sizes[2], np.float32)]

    def build(device, target):
        with tfc.device(device):
            variables = [tfc.Variable(p.copy()) for p in params]
            tx, tl = tfc.constant(x), tfc.constant(labels)

        def step(tx, tl):
            w1, b1, w2, b2 = variables
            with tfc.GradientTape() as tape:
                h = tfc.relu(tfc.matmul(tx, w1) + b1)
                logits = tfc.matmul(h, w2) + b2
                loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(tl, logits))
            for v, g in zip(variables, tape.gradient(loss, variables)):
                v.assign_sub(0.1 * g)
            return loss
        return tfc.function(step, target=target), variables, tx, tl

    fc, vc, cx, cl = build("cpu:0", "cpu")
    fg, vg, gx, gl = build("gpu:0", "cuda")
    assert all(type(v) is GpuVariable for v in vg) and type(gx) is GpuTensor
    fc(cx, cl), fg(gx, gl)
    copies = Copies(monkeypatch)
    for _ in range(3):
        close(fc(cx, cl), fg(gx, gl), "matmul")
    assert copies.htod == 0, copies.htod  # nothing uploaded: data and variables stay on the device
    assert copies.dtoh <= 3 * 2, copies.dtoh  # the 0-d loss (read back by the program) and little else
    for p, q in zip(vc, vg):
        assert type(q) is GpuVariable
        close(p.numpy(), q.numpy(), "matmul")


# -- what needs changes outside this slice ---------------------------------------------------

_TAPE_READY = "_snapshot" in inspect.getsource(tape_module.snapshot_variables)


@pytest.mark.skipif(not _TAPE_READY, reason="tfc/core/tape.py's snapshot_variables reads a variable's host "
                    "_value: needs `snap = t._snapshot()` (G6b's report)")
def test_eager_tape_gradients(cuda_driver):
    rng = np.random.default_rng(4)
    a, x = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    v, h = gpu_var(a), tfc.Variable(a)
    grads = []
    for var, xx in ((h, tfc.constant(x)), (v, tfc.constant(x).gpu())):
        with tfc.GradientTape() as tape:
            y = tfc.reduce_sum(tfc.tanh(tfc.matmul(xx, var)) * var.read_value()[0])
        grads.append(tape.gradient(y, var))
    assert type(grads[1]) is GpuTensor  # the gradient of a GPU variable is on the GPU
    close(grads[0], grads[1], "matmul")
    before = v.read_value()
    with tfc.GradientTape() as tape:
        y = tfc.reduce_sum(v * v)
        v.assign_add(1.0)  # the recorded read keeps the value it saw
    close(2 * before.numpy(), tape.gradient(y, v))


_CHECKPOINT_READY = "v._value" not in inspect.getsource(tfc.train.Checkpoint.save)


@pytest.mark.skipif(not _CHECKPOINT_READY, reason="tfc/nn/checkpoint.py's save reads a variable's host _value: "
                    "needs `np.asarray(v)` (G6b's report)")
def test_checkpoint_round_trip(cuda_driver, tmp_path):
    class Model(tfc.Module):
        def __init__(self):
            super().__init__()
            with tfc.device("gpu:0"):
                self.w = tfc.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
                self.b = tfc.Variable(np.float32(1.5))

    m = Model()
    opt = tfc.optimizers.Adam(0.1)
    opt.apply_gradients([(tfc.ones([2, 3]).gpu(), m.w)])
    saved = m.w.numpy()
    path = tfc.train.Checkpoint(model=m, optimizer=opt).save(str(tmp_path / "ckpt"))
    m.w.assign(np.zeros((2, 3), np.float32))
    m.b.assign(0.0)
    fresh = tfc.optimizers.Adam(0.1)
    tfc.train.Checkpoint(model=m, optimizer=fresh).restore(path)
    assert type(m.w) is GpuVariable and np.array_equal(m.w.numpy(), saved) and float(m.b) == 1.5
    slot = fresh.get_slot(m.w, "m")
    assert type(slot) is GpuVariable and np.array_equal(slot.numpy(), opt.get_slot(m.w, "m").numpy())


def test_compiled_code_never_writes_a_read_buffer(cuda_driver):
    """A read value (the variable's own buffer) carried by a loop or fed to
    elementwise kernels is never overwritten in place: the variable and a
    snapshot keep their values."""
    v = gpu_var([1.0, 2.0, 3.0])
    snap = v.read_value()

    @tfc.function(target="cuda")
    def f(n):
        x = v.read_value()
        i = tfc.constant(0)
        while i < n:
            x = x * 2.0 + 1.0
            i += 1
        return x, tfc.exp(v.read_value()) * 0.0 + v.read_value()

    x, y = f(tfc.constant(3))
    assert np.array_equal(x.numpy(), [15.0, 23.0, 31.0]) and np.array_equal(y.numpy(), [1.0, 2.0, 3.0])
    assert np.array_equal(v.numpy(), [1.0, 2.0, 3.0]) and np.array_equal(snap.numpy(), [1.0, 2.0, 3.0])
