"""Data movement in L3 (issue #16, points 1 and 2): slicing, transpose, concat,
pad, ... lower through their declarations' ``lower`` to explicit views
(loops.subview / transpose_view / reshape) and copy kernels into planned
buffers. Each lowered op: compiled against eager, bitwise and of the same
dtype, on random inputs, odd sizes, zero-size dims, non-contiguous inputs and
negative strides; and the L3 says what it does (no library call)."""
from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tfc

F32 = np.float32


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.array_equal(got, want, equal_nan=True), (got, want)


def _results(r):
    return [t.numpy() for t in (r if isinstance(r, (list, tuple)) else [r])]


def check(fn, *args, library=()):
    """``fn`` compiled equals ``fn`` eager on ``args``; the L3 calls no library
    kernel but those of ``library``; returns the L3 text."""
    eager = _results(fn(*[tfc.constant(a) for a in args]))
    g = tfc.function(fn)
    got = _results(g(*args))
    assert len(got) == len(eager)
    for a, b in zip(got, eager):
        _same(a, b)
    l3 = g.get_concrete_function(*args).ir("loops")
    calls = set(re.findall(r'loops.library "(\w+)"', l3))
    assert calls <= set(library), calls
    return l3


def rand(rng, *shape, dtype=F32):
    if np.dtype(dtype).kind == "f":
        return rng.normal(size=shape).astype(dtype)
    return rng.integers(-50, 50, size=shape).astype(dtype)


SHAPES = [(5, 7), (1, 3), (0, 4), (3, 0), (6, 1)]


@pytest.fixture
def rng():
    return np.random.default_rng(16)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
def test_transpose(rng, shape, dtype):
    x = rand(rng, *shape, dtype=np.int32).astype(dtype)
    l3 = check(lambda a: tfc.transpose(a) , x)
    assert "loops.transpose_view" in l3
    y = rand(rng, 3, *shape)
    check(lambda a: tfc.transpose(a, (2, 0, 1)), y)
    check(lambda a: tfc.transpose(a, (1, 0, 2)) * 2.0, y)


def test_transpose_of_a_non_contiguous_argument(rng):
    x = rand(rng, 7, 5)
    check(lambda a: tfc.transpose(a) + 1.0, x.T)          # a transposed argument
    check(lambda a: tfc.transpose(a), x[::-2, ::2])        # negative strides
    check(lambda a: tfc.reshape(a, [-1]), x.T)             # reshape of a non-contiguous argument


INDICES = [
    (slice(1, 4),), (slice(None, None, -1),), (slice(None, None, 2), slice(None, None, -3)),
    (2,), (-1, slice(1, None)), (slice(None), 0), (None, slice(1, 3)), (Ellipsis, None),
    (slice(3, 1),), (slice(10, 20),), (1, 2), (Ellipsis, -2), (slice(None, None, -2), None, 1),
]


@pytest.mark.parametrize("index", INDICES, ids=str)
def test_getitem(rng, index):
    x = rand(rng, 5, 7)
    l3 = check(lambda a: a[index], x)
    assert "loops.subview" in l3
    check(lambda a: a[index] * 3.0, x.T[:, :5])  # non-contiguous argument
    check(lambda a: (a * 2.0)[index], x)          # a buffer of the arena


@pytest.mark.parametrize("index", INDICES, ids=str)
def test_slice_grad(rng, index):
    x = rand(rng, 5, 7)

    def f(a):
        with tfc.GradientTape() as t:
            t.watch(a)
            y = tfc.reduce_sum(tfc.sin(a[index]) * 1.5)
        return t.gradient(y, a)

    l3 = check(f, x)
    assert "slice_grad" not in l3


def test_getitem_zero_size_and_3d(rng):
    x = rand(rng, 0, 3, 4)
    check(lambda a: a[:, 1:, ::-1], x)
    y = rand(rng, 3, 4, 5)
    check(lambda a: (a[1, ::2, -1], a[..., 2], a[:, None, 1:3, ::-2]), y)


def test_contiguous_getitem_is_an_alias(rng):
    x = rand(rng, 6, 5)

    def f(a):
        b = a * 2.0
        return tfc.reshape(b[1:4], [-1]) + 1.0, b[2] - 1.0

    l3 = check(f, x)
    assert "loops.reshape" in l3
    # no copy kernel: the only parallel loops are the three arithmetic kernels
    assert l3.count("loops.parallel") == 3


@pytest.mark.parametrize("shape", [(4, 6), (1, 1), (0, 5), (3, 1, 2)])
def test_reshape_expand_dims_squeeze(rng, shape):
    x = rand(rng, *shape)
    n = int(np.prod(shape))
    l3 = check(lambda a: (tfc.reshape(a * 2.0, [n]) + 1.0, tfc.expand_dims(a, 1) - 1.0,
                          tfc.squeeze(tfc.expand_dims(a, 0), 0) * 3.0), x)
    assert "loops.reshape" in l3


def test_same_elements_ops_on_scalars(rng):
    s = np.float32(2.5)
    check(lambda a: (tfc.expand_dims(a, 0), tfc.reshape(a, [1, 1]) * 2.0), s)
    check(lambda a: tfc.squeeze(a) + 1.0, rand(rng, 1, 1))
    check(lambda a: tfc.reshape(a * 2.0, []), rand(rng, 1))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(rng, axis):
    a, b, c = rand(rng, 3, 4), rand(rng, 3, 4), rand(rng, 3, 4)
    l3 = check(lambda x, y, z: tfc.concat([x, y * 2.0, z[:, ::-1]], axis), a, b, c)
    assert "loops.subview" in l3
    if axis == 0:
        check(lambda x, y: tfc.concat([x, y], 0), a, np.zeros((0, 4), F32))
    check(lambda x, y: tfc.concat([x, y], axis), a.T.copy().T, b[:, ::-1])  # non-contiguous pieces


def test_concat_gradients_split(rng):
    a, b = rand(rng, 3, 4), rand(rng, 5, 4)

    def f(x, y):
        with tfc.GradientTape() as t:
            t.watch([x, y])
            z = tfc.reduce_sum(tfc.exp(tfc.concat([x, y], 0)))
        return t.gradient(z, [x, y])

    check(f, a, b)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack_unstack_split(rng, axis):
    a, b = rand(rng, 3, 5), rand(rng, 3, 5)
    check(lambda x, y: tfc.stack([x, y * 2.0], axis), a, b)
    x = rand(rng, 4, 6, 2)
    check(lambda v: tfc.unstack(v, axis=axis), x)
    if axis != 2 and axis != -1:
        check(lambda v: tfc.split(v, 2, axis=axis), x)
        check(lambda v: tfc.split(v, [1, -1, 1], axis=axis), x)


@pytest.mark.parametrize("mult", [(2, 3), (1, 1), (0, 2), (3, 1)])
def test_tile(rng, mult):
    x = rand(rng, 3, 4)
    check(lambda v: tfc.tile(v, mult), x)
    check(lambda v: tfc.tile(v, mult), x.T)


@pytest.mark.parametrize("shape,target", [((3,), (4, 3)), ((4, 1), (4, 5)), ((1, 1), (2, 3)), ((), (2, 2)),
                                          ((1, 3), (2, 0, 3)), ((2, 1, 3), (2, 4, 3))])
def test_broadcast_to(rng, shape, target):
    x = rand(rng, *shape) if shape else np.float32(1.5)
    check(lambda v: tfc.broadcast_to(v, target), x)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.float64])
def test_pad_constant(rng, dtype):
    x = rand(rng, 3, 4, dtype=np.int32).astype(dtype)
    check(lambda v: tfc.pad(v, [[1, 2], [0, 3]]), x)
    check(lambda v: tfc.pad(v, [[1, 2], [0, 3]], constant_values=2), x)
    check(lambda v: tfc.pad(v, [[0, 0], [2, 2]], constant_values=-1.5), x.T)
    check(lambda v: tfc.pad(v, [[1, 1], [1, 1]]), np.zeros((0, 2), dtype))


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_pad_mirrored(rng, mode, dtype):
    x = rand(rng, 4, 5, dtype=np.int32).astype(dtype)
    extra = 1 if mode == "REFLECT" else 0
    for pads in ([[1, 2], [2, 1]], [[0, 0], [4 - extra, 4 - extra]], [[3 - extra, 0], [0, 1]], [[0, 0], [0, 0]]):
        l3 = check(lambda v: tfc.pad(v, pads, mode=mode), x)
        assert "loops.load_at" in l3 or not any(map(any, pads))
        check(lambda v: tfc.pad(v, pads, mode=mode), np.asfortranarray(x))  # non-contiguous
    if mode == "SYMMETRIC":  # (REFLECT refuses a zero-size dim, as eager)
        check(lambda v: tfc.pad(v, [[1, 1], [0, 0], [2, 1]], mode=mode), rand(rng, 3, 0, 4))
    check(lambda v: tfc.pad(v * 1, [[1, 1]], mode=mode), rand(rng, 3, dtype=np.int32).astype(dtype)[::-1])


def test_pad_gradients(rng):
    x = rand(rng, 4, 5)
    for mode in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        def f(v):
            with tfc.GradientTape() as t:
                t.watch(v)
                y = tfc.reduce_sum(tfc.sin(tfc.pad(v, [[1, 2], [2, 1]], mode=mode)))
            return t.gradient(y, v)

        check(f, x)


def test_dynamic_shapes_stay_library_calls_in_the_generic_function(rng):
    """A None dim: the per-shape specializations lower; what stays symbolic
    is a library call (its kernel)."""
    g = tfc.function(lambda a: tfc.transpose(a)[1:], input_signature=[tfc.TensorSpec([None, 4])])
    x = rand(rng, 5, 4)
    _same(g(x).numpy(), x.T[1:])


# -- the MLP training step and the L-BFGS step of bench/ ---------------------------------

ALLOWED = {"matmul"}  # softmax & co: tfc-expand decomposes them


def _bench():
    path = str(Path(__file__).resolve().parent.parent / "bench")
    if path not in sys.path:
        sys.path.insert(0, path)


def test_mlp_step_l3_calls_only_allowed_library_kernels():
    _bench()
    import mlp_step

    x, labels, params = mlp_step.make_data()
    vs = [tfc.Variable(p) for p in params]

    @tfc.function
    def step(x, y):
        with tfc.GradientTape() as tape:
            h = tfc.nn.relu(x @ vs[0] + vs[1])
            logits = h @ vs[2] + vs[3]
            loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        gs = tape.gradient(loss, vs)
        for v, g in zip(vs, gs):
            v.assign_sub(0.1 * g)
        return loss

    l3 = step.get_concrete_function(tfc.constant(x), tfc.constant(labels)).ir("loops")
    calls = collections.Counter(re.findall(r'loops.library "(\w+)"', l3))
    assert set(calls) <= ALLOWED, calls
    # every intermediate is in the plan (the label check's flag too): the only
    # fresh buffers are the variables' new values (their storage when donated)
    allocs = [line for line in l3.splitlines() if "loops.alloc" in line]
    assert len(allocs) == 4 and all("tfc.donor" in line for line in allocs), allocs


def test_lbfgs_step_l3_calls_only_allowed_library_kernels():
    """The loss and gradient of the L-BFGS autoencoder: its slices of the flat
    parameter vector are aliases, their gradients copy kernels into the plan."""
    _bench()
    import lbfgs_autoencoder as lb

    x, theta = lb.make_problem()[:2]
    tx = tfc.constant(x)

    @tfc.function
    def vg(t):
        with tfc.GradientTape() as tape:
            tape.watch(t)
            loss = lb.autoencoder_cost(t, tx)
        return loss, tape.gradient(loss, t)

    conc = vg.get_concrete_function(tfc.constant(theta))
    l3 = conc.ir("loops")
    calls = collections.Counter(re.findall(r'loops.library "(\w+)"', l3))
    assert set(calls) <= ALLOWED, calls
    assert "loops.subview" in l3 and "loops.reshape" in l3
    loss, grad = vg(theta)
    eloss, egrad = vg.python_function(tfc.constant(theta))
    _same(loss.numpy(), eloss.numpy())
    _same(grad.numpy(), egrad.numpy())

    # the two-loop recursion: its dots' reshapes are aliases
    S, Y = [tfc.constant(s) for s in lb.make_problem()[2]], [tfc.constant(y) for y in lb.make_problem()[3]]
    rho = [tfc.constant(1.0 / (i + 2), tfc.float32) for i in range(len(S))]
    direction = tfc.function(lambda g, S, Y, rho: lb.two_loop(g, S, Y, rho, lb.tfc_dot))
    l3 = direction.get_concrete_function(grad, S, Y, rho).ir("loops")
    assert set(re.findall(r'loops.library "(\w+)"', l3)) <= {"matmul"}
    _same(direction(grad, S, Y, rho).numpy(), lb.two_loop(grad, S, Y, rho, lb.tfc_dot).numpy())


def test_views_in_loops_and_branches(rng):
    """Views and copies of loop-carried values, and aliases out of branches."""
    def f(x, n):
        i = tfc.constant(0)
        while i < n:
            x = tfc.transpose(tfc.reshape(x[::-1], [3, 4]))[:3]
            x = tfc.concat([x, x[:1]], 0) * 1.5
            x = tfc.reshape(x, [3, 4])
            i += 1
        if tfc.reduce_sum(x) > 0:
            y = x[1]
        else:
            y = x[2] * 2.0
        return x, y

    x = rand(rng, 3, 4)
    for n in (0, 1, 3):
        check(f, x, np.int32(n))


# -- kernels with loops.index: one_hot, range_along; constant bodies: fill, eye -------------

@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", [tfc.float32, tfc.float64, tfc.int32, tfc.bool])
def test_one_hot(rng, axis, dtype):
    idx = rng.integers(-2, 7, size=(5, 3)).astype(np.int32)  # some out of range: all off
    l3 = check(lambda i: tfc.one_hot(i, 5, on_value=2.7, off_value=-1.5, axis=axis, dtype=dtype), idx)
    assert "loops.index" in l3
    check(lambda i: tfc.one_hot(i, 4, axis=axis), idx.astype(np.int64).T)  # int64, non-contiguous
    check(lambda i: tfc.one_hot(i, 3, axis=axis), np.zeros((0, 2), np.int32))
    check(lambda i: tfc.one_hot(i * 1, 0, axis=axis), idx)


def test_one_hot_of_a_scalar_index():
    check(lambda i: tfc.one_hot(i + 1, 4), np.int32(2))


@pytest.mark.parametrize("dtype", [tfc.int32, tfc.int64, tfc.float32, tfc.float64])
def test_range_along(rng, dtype):
    from tfc.ops.shapes import range_along

    x = rand(rng, 7, 3)
    l3 = check(lambda v: range_along(v * 2.0, 0, dtype), x)
    assert "loops.index" in l3
    check(lambda v: range_along(v, 1, dtype) + range_along(v, 1, dtype), x)
    check(lambda v: range_along(v, 0, dtype), np.zeros((0, 3), F32))


def test_fill_and_eye(rng):
    check(lambda v: tfc.fill([3, 4], v * 2.0), np.float32(1.25))
    check(lambda v: tfc.fill([0, 4], v), np.int32(7))
    check(lambda v: (tfc.fill([2, 2], v) + tfc.eye(2, dtype=tfc.int32),), np.int32(3))
    check(lambda v: v + tfc.eye(3, 5), rand(rng, 3, 5))


def test_one_hot_step_gradient_is_bitwise(rng):
    """A cross-entropy written with one_hot, and its gradient: every op lowered."""
    logits = rand(rng, 6, 5)
    labels = rng.integers(0, 5, size=6).astype(np.int32)

    def f(z, y):
        with tfc.GradientTape() as t:
            t.watch(z)
            loss = -tfc.reduce_sum(tfc.one_hot(y, 5) * z[:, ::-1]) / 6.0
        return loss, t.gradient(loss, z)

    check(f, logits, labels)


# -- gather: a check of the indices, then loops.load_at ----------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("ishape", [(4,), (2, 3), (), (0,), (3, 0)])
def test_gather(rng, axis, ishape):
    p = rand(rng, 5, 4, 3)
    n = p.shape[axis]
    i = rng.integers(0, n, size=ishape).astype(np.int32) if ishape else np.int32(n - 1)
    l3 = check(lambda a, b: tfc.gather(a, b, axis=axis), p, i)
    assert "loops.load_at" in l3 or 0 in ishape  # a zero-size result: no kernel
    check(lambda a, b: tfc.gather(a * 2.0, b, axis=axis), p.transpose(1, 0, 2).copy().transpose(1, 0, 2), i)
    check(lambda a, b: tfc.gather(a, b, axis=axis), p, np.asarray(i, np.int64))


@pytest.mark.parametrize("bad", [-1, 5, 99])
def test_gather_out_of_range_is_eagers_error(rng, bad):
    p = rand(rng, 5, 3)
    i = np.array([[0, 1], [2, bad]], np.int32)
    with pytest.raises(Exception) as eager:
        tfc.gather(tfc.constant(p), tfc.constant(i))
    g = tfc.function(lambda a, b: tfc.gather(a, b))
    g(p, np.zeros((2, 2), np.int32))  # compiled for these shapes
    with pytest.raises(Exception) as compiled:
        g(p, i)
    assert type(compiled.value) is type(eager.value)
    assert str(compiled.value) == str(eager.value)
    with pytest.raises(type(eager.value)):  # a scalar index: the check is scalar code
        tfc.function(lambda a, b: tfc.gather(a, b))(p, np.int32(bad))


def test_gather_gradient(rng):
    p = rand(rng, 6, 4)
    i = rng.integers(0, 6, size=(3,)).astype(np.int32)

    def f(a, b):
        with tfc.GradientTape() as t:
            t.watch(a)
            y = tfc.reduce_sum(tfc.exp(tfc.gather(a, b)))
        return t.gradient(y, a)

    check(f, p, i, library={"unsorted_segment_sum"})


def test_tensor_index_wraps_and_checks(rng):
    """x[i] with a tensor index: wrap_index (a check, then i + n where negative) and gather."""
    x = rand(rng, 5, 3)
    i = np.array([0, -1, 4, -5], np.int32)
    l3 = check(lambda a, b: a[b], x, i)
    assert "loops.raise" in l3
    check(lambda a, b: a[b], x, np.int64(-2))
    g = tfc.function(lambda a, b: a[b])
    g(x, i)
    for bad in (5, -6):
        j = i.copy()
        j[2] = bad
        with pytest.raises(IndexError) as eager:
            tfc.constant(x)[tfc.constant(j)]
        with pytest.raises(IndexError) as compiled:
            g(x, j)
        assert str(compiled.value) == str(eager.value)


def _random_index(rng, shape):
    """A random basic index on ``shape``: slices with any bounds and steps
    (negative too), integers, new axes, an ellipsis."""
    key = []
    for d in shape:
        kind = rng.integers(0, 4)
        if kind == 0 and d:
            key.append(int(rng.integers(-d, d)))
        elif kind == 1:
            key.append(None)
            key.append(slice(None))
        else:
            lo, hi = (int(v) if rng.random() < 0.7 else None for v in rng.integers(-d - 2, d + 3, size=2))
            step = int(rng.choice([1, 1, 2, 3, -1, -2]))
            key.append(slice(lo, hi, step))
    if rng.random() < 0.3 and key:
        key[int(rng.integers(0, len(key)))] = Ellipsis if Ellipsis not in key else slice(None)
    return tuple(key)


def test_random_basic_indices_and_their_gradients():
    rng = np.random.default_rng(1616)
    for _ in range(100):
        shape = tuple(int(d) for d in rng.integers(0, 5, size=rng.integers(1, 4)))
        key = _random_index(rng, shape)
        x = rand(rng, *shape)
        try:
            want = x[key]
        except IndexError:
            continue

        def f(a):
            with tfc.GradientTape() as t:
                t.watch(a)
                y = a[key]
                s = tfc.reduce_sum(y * y)
            return y, t.gradient(s, a)

        check(f, x)
        assert want.shape == tuple(tfc.function(lambda a: a[key])(x).shape)


def test_verify_mode_sees_buffers_written_through_views(rng):
    """verify=True compares each L2 value with the reference: a buffer written
    by copy kernels into views of it (concat, pad, slice_grad) is seen after
    its writes, not when allocated."""
    x = rand(rng, 3, 4)

    def f(a):
        c = tfc.concat([a, a * 2.0], 1)
        return (c, c * 3.0, tfc.transpose(a), a[::-1], tfc.one_hot(tfc.constant([1, 2]), 3),
                tfc.pad(a, [[1, 1], [0, 0]], mode="REFLECT"), tfc.pad(a, [[1, 1], [2, 0]]),
                tfc.gather(a, tfc.constant([2, 0])))

    g = tfc.function(f, verify=True)
    for _ in range(2):
        got = _results(g(x))
    for a, b in zip(got, _results(f(tfc.constant(x)))):
        _same(a, b)


def test_no_in_place_write_over_a_buffer_another_input_views(rng):
    """x + transpose(x) over many chunks: the sum is not written into x's
    buffer while the kernel still reads x transposed (before the transpose was a
    copy kernel, a library view of x let the kernel overwrite what it read)."""
    a = rand(rng, 1024, 1024)

    def f(a):
        x = tfc.matmul(a, a)
        return x + tfc.transpose(x)

    check(f, a, library={"matmul"})
    g = tfc.function(f, input_signature=[tfc.TensorSpec([None, None])])
    _same(g(a).numpy(), f(tfc.constant(a)).numpy())



def test_views_only_kernels_read_are_not_copied(rng):
    """A transpose or strided slice read only by kernels: the kernels read the
    view (no copy kernel), as eager's ufuncs read numpy's views."""
    x = rand(rng, 300, 200)

    def f(a):
        return tfc.exp(tfc.transpose(a)), a[::-2, 1::3] * 2.0, tfc.reduce_sum(tfc.transpose(a) * 3.0)

    l3 = check(f, x)
    assert l3.count("loops.parallel") == 3  # the three kernels, no copy
    check(f, np.asfortranarray(x))


# -- review findings (issue #16, brief F) -------------------------------------------------

def test_integer_constants_of_one_hot_and_pad_stay_exact(tmp_path):
    """one_hot's and pad's constants are "number" attributes: an int above
    2**53 is not rounded through a float (int64 results), in the IR, in
    compiled code and through tfc.save / tfc.load."""
    i = np.array([0, 1, 5, -1], np.int32)
    x = np.array([1, 2], np.int64)
    cases = [
        (lambda a: tfc.one_hot(a, 2, on_value=2**53 + 1, off_value=-2**62 - 3, dtype=tfc.int64), i),
        (lambda a: tfc.pad(a, [[1, 2]], constant_values=2**62 + 1), x),
        (lambda a: tfc.pad(a, [[1, 0]], constant_values=-2**63), x),
        (lambda a: tfc.one_hot(a, 3, on_value=True, off_value=False), i),
        (lambda a: tfc.one_hot(a, 3, on_value=2.5, off_value=-0.0, dtype=tfc.float64), i),
        (lambda a: tfc.pad(a, [[1, 1]], constant_values=2**53 + 1), x.astype(np.float64)),
    ]
    for k, (fn, arg) in enumerate(cases):
        l3 = check(fn, arg)
        assert "loops.library" not in l3
        c = tfc.compile(tfc.function(fn, input_signature=[tfc.TensorSpec(arg.shape, tfc.as_dtype(arg.dtype))]))
        loaded = tfc.load(tfc.save(c, tmp_path / f"f{k}"))
        _same(loaded(arg).numpy(), fn(tfc.constant(arg)).numpy())
    ir = tfc.function(cases[0][0]).get_concrete_function(i).ir("tensor")
    assert "9007199254740993 : i64" in ir and "-4611686018427387907 : i64" in ir


def _with_grad(fn):
    """``fn`` and the gradient of the sum of its result's squares w.r.t. its
    first argument (float)."""
    def f(a, *rest):
        with tfc.GradientTape() as t:
            t.watch(a)
            y = fn(a, *rest)
            s = tfc.reduce_sum(y * y)
        return y, t.gradient(s, a)
    return f


def _zero_d_cases():
    """op name -> [(fn, args)]: the op on 0-d operands or with 0-d results,
    where eager takes them (a scalar argument is an L3 scalar; a[0] is a 0-d
    value a kernel made)."""
    from tfc.ops import shapes as sh

    v = np.array([1.5, -2.0, 3.25], F32)
    s = F32(-0.75)
    i0 = np.int32(1)
    return {
        "reshape": [(lambda a: tfc.reshape(a[1], [1, 1]), v), (lambda a: tfc.reshape(a, []) * 2.0, s),
                    (lambda a: tfc.reshape(a[1:2], []), v)],
        "reshape_like": [(lambda a: sh.reshape_like(a[0], a[1:2]), v), (lambda a: sh.reshape_like(a[0:1], a[2]), v)],
        "expand_dims": [(lambda a: tfc.expand_dims(a[2], 0), v), (lambda a: tfc.expand_dims(a, -1), s)],
        "squeeze": [(lambda a: tfc.squeeze(a[1:2]), v), (lambda a: tfc.squeeze(a[0]), v)],
        "broadcast_to": [(lambda a: tfc.broadcast_to(a[1], [2, 3]), v), (lambda a: tfc.broadcast_to(a, []), s)],
        "broadcast_like": [(lambda a: sh.broadcast_like(a[1], a), v), (lambda a: sh.broadcast_like(a[1], a[0]), v)],
        "transpose": [(lambda a: tfc.transpose(a[0]), v), (lambda a: tfc.transpose(a, []) + 1.0, s)],
        "getitem": [(lambda a: a[0][None], v), (lambda a: a[0][...], v), (lambda a: a[None] * 2.0, s),
                    (lambda a: a[..., None, None], s), (lambda a: a[1], v), (lambda a: a[None][0], s)],
        "slice_grad": [(_with_grad(lambda a: a[1]), v), (_with_grad(lambda a: a[None]), s),
                       (_with_grad(lambda a: a[...]), s), (_with_grad(lambda a: tfc.tile(a[1][None], [3])), v)],
        "stack": [(lambda a: tfc.stack([a[0], a[2], a[0]]), v), (lambda a: tfc.stack([a, a * 2.0], axis=-1), s),
                  (_with_grad(lambda a: tfc.stack([a[1], a[0]])), v)],
        "unstack": [(lambda a: tfc.unstack(a), v), (_with_grad(lambda a: tfc.unstack(a)[2]), v)],
        "tile": [(lambda a: tfc.tile(a[1], []), v), (lambda a: tfc.tile(a[None], [4]), s),
                 (_with_grad(lambda a: tfc.tile(a[None], [3])), s)],
        "pad": [(lambda a: tfc.pad(a[0], []), v), (lambda a: tfc.pad(a, [], constant_values=5.0), s),
                (_with_grad(lambda a: tfc.pad(a[1], [])), v), (lambda a: tfc.pad(a[1:2], [[1, 1]], "SYMMETRIC"), v),
                (lambda a: tfc.pad(a[2], [], "REFLECT"), v)],
        "gather": [(lambda a, j: tfc.gather(a, j), v, i0), (lambda a, j: a[j], v, np.int64(-1)),
                   (lambda a, j: tfc.gather(a, j[None])[0], v, i0), (_with_grad(lambda a, j: a[j]), v, i0)],
        "wrap_index": [(lambda a, j: sh.wrap_index(j, a, 0), v, np.int32(-2)),
                       (lambda a, j: sh.wrap_index(j[None][0], a, 0), v, np.int8(-3))],
        "one_hot": [(lambda j: tfc.one_hot(j, 4), i0), (lambda j: tfc.one_hot(j[None][0], 3, axis=0), np.int8(-1))],
        "zeros": [(lambda a: tfc.zeros([]) + a, s)],
        "ones": [(lambda a: tfc.ones([], tfc.int32), s)],
        "fill": [(lambda a: tfc.fill([], a), s), (lambda a: tfc.fill([2, 2], a[1]), v), (lambda a: tfc.fill([], a[1]), v)],
        "range_along": [(lambda a: sh.range_along(a[None], 0), s)],
    }


# ops whose every operand and result has rank >= 1 (eager refuses a 0-d one)
_NO_ZERO_D = {
    "concat": lambda a: tfc.concat([a, a], 0),
    "split": lambda a: tfc.split(a, 1),
    "split_like": lambda a: tfc.split(a, [1]),
    "eye": None,  # its shape is two sizes: a matrix
}


def test_every_data_movement_lowering_on_0d_values():
    """Each op whose declaration lowers it (shapes.py, creation.py) on 0-d
    operands and results (scalars in L3, not memrefs: no view of them) and
    their gradients: compiled equals eager (found by review: transpose and
    getitem of a 0-d value crashed tfc-lower-loops)."""
    from tfc.core.registry import REGISTRY

    cases = _zero_d_cases()
    lowered = {n for n, op in REGISTRY.items() if op.lower is not None and
               op.kernel.__module__ in ("tfc.ops.shapes", "tfc.ops.creation")}
    assert lowered <= set(cases) | set(_NO_ZERO_D), lowered - set(cases) - set(_NO_ZERO_D)
    for name, fns in cases.items():
        for fn, *args in fns:
            check(fn, *args, library=("unsorted_segment_sum",) if name == "gather" else ())  # (gather's gradient)
    for name, fn in _NO_ZERO_D.items():
        if fn is not None:
            with pytest.raises((ValueError, IndexError)):
                fn(tfc.constant(F32(1.0)))


@pytest.mark.parametrize("n", [127, 128, 200, 300])
def test_narrow_tensor_indices_wrap_in_int64(rng, n):
    """x[i] with int8 indices on an axis longer than 127: idx + n computed in
    int64, as numpy indexes (found by review: OverflowError, eager and
    compiled); also where n is known only at run time; out of range is still
    getitem's IndexError."""
    x = rand(rng, n, 3)
    i = np.array([max(-128, -n), 5, -1, min(127, n - 1), -n if n <= 128 else 0], np.int8)
    want = x[i]
    l3 = check(lambda a, b: a[b], x, i)
    assert "loops.raise" in l3
    _same(tfc.constant(x)[tfc.constant(i)].numpy(), want)
    check(lambda a, b: a[b], x, np.int8(max(-128, -n)))
    check(lambda a, b: a[:, None][b[1:3]], x, i.astype(np.int32))
    g = tfc.function(lambda a, b: a[b], input_signature=[tfc.TensorSpec((None, 3)), tfc.TensorSpec((None,), tfc.int8)])
    _same(g(x, i).numpy(), want)
    short = x[:100]
    with pytest.raises(IndexError) as eager:
        tfc.constant(short)[tfc.constant(i)]
    with pytest.raises(IndexError) as compiled:
        g(short, i)
    assert str(compiled.value) == str(eager.value) == f"getitem: index {i[0]} is out of bounds for axis 0 with size 100"


def test_constants_that_do_not_fit_the_dtype_convert_as_eager():
    """one_hot's and pad's constants are converted as eager's kernels convert
    them (found by review: compiled crashed or differed): one_hot's through
    np.where's promotion of on and off, then the cast (300 -> 44 in int8,
    70000.0 -> inf in float16, nan -> INT_MIN in int32, float64 first where
    off is a float); pad's by np.pad (-2.5 -> -2 in int32, 0.5 -> True in
    bool). Where eager raises (300 into int8 by np.pad), the op stays a
    library call that raises the same error."""
    i = np.array([0, 1, 2, -1, 7], np.int32)
    for on, off, dt in [(300, -1, tfc.int8), (70000.0, 0, tfc.float16), (float("nan"), 0, tfc.int32),
                        (float("-inf"), 1e20, tfc.int64), (2**53 + 1, 0.5, tfc.int64), (-1.5, 2.5, tfc.bool),
                        (1.0 + 2**-11 + 2**-40, -0.0, tfc.float16), (1e-50, 1e300, tfc.float32),
                        (np.int8(100), 1000, tfc.int8), (np.float32(0.1), 0, tfc.float16)]:
        l3 = check(lambda a: tfc.one_hot(a, 3, on_value=on, off_value=off, dtype=dt), i)
        assert "loops.library" not in l3
    for x, c in [(np.array([[1, 2], [3, 4]], np.float16), 70000.0), (np.array([1, 2], np.int32), -2.5),
                 (np.array([True, False]), 0.5), (np.array([1, 2], np.float16), 1.0 + 2**-11 + 2**-40),
                 (np.array([1, 2], np.float32), float("nan")), (np.array([1, 2], np.float32), -0.0),
                 (np.array([1, 2], np.int8), np.int16(-7))]:
        l3 = check(lambda a: tfc.pad(a, [[1, 2]] * a.ndim, constant_values=c), x)
        assert "loops.library" not in l3
    for x, c, err in [(np.array([1, 2], np.int8), 300, OverflowError), (np.array([1, 2], np.int32), float("nan"),
                                                                         ValueError)]:
        fn = lambda a: tfc.pad(a, [[1, 1]], constant_values=c)  # noqa: E731
        with pytest.raises(err) as eager:
            fn(tfc.constant(x))
        with pytest.raises(err) as compiled:
            tfc.function(fn)(x)
        assert str(eager.value) in str(compiled.value)
