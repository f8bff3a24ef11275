"""The last ops of issue #16 that ran as opaque library calls, now described in
L3: argmax / argmin (the "argmax" / "argmin" reduce kinds of loops.parallel),
the scatter-adds (unsorted_segment_sum, gather_grad_like), dropout_mask and the
``_like`` pooling gradients (planned buffers through ``kernel_into``). Each:
compiled against eager, bitwise and of the same dtype, on random inputs, odd
and zero sizes, non-contiguous inputs, under static and ``None`` signatures;
and the L3 says what it does."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tfc

F32 = np.float32


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (got, want)


def _results(r):
    return [t.numpy() for t in (r if isinstance(r, (list, tuple)) else [r])]


def _library_calls(l3: str) -> set:
    return set(re.findall(r'loops.library "(\w+)"', l3))


def check(fn, *args, library=(), signature=None, verify=False):
    """``fn`` compiled (a static signature, and ``signature`` where given)
    equals ``fn`` eager on ``args`` (numpy arrays, passed as they are: a
    non-contiguous one stays so); the L3 of the static compile calls no
    library kernel but those of ``library``; returns that L3 text."""
    eager = _results(fn(*[tfc.constant(a) for a in args]))
    g = tfc.function(fn, verify=verify)
    got = _results(g(*args))
    assert len(got) == len(eager)
    for a, b in zip(got, eager):
        _same(a, b)
    if signature is not None:
        h = tfc.function(fn, input_signature=signature)
        for a, b in zip(_results(h(*args)), eager):
            _same(a, b)
    l3 = g.get_concrete_function(*args).ir("loops")
    calls = _library_calls(l3)
    assert calls <= set(library), calls
    return l3


@pytest.fixture
def rng():
    return np.random.default_rng(1616)


def _with_nans_and_ties(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        x = rng.normal(size=shape).astype(dtype)
        flat = x.reshape(-1)
        if flat.size >= 4:
            flat[rng.integers(0, flat.size, size=max(1, flat.size // 7))] = np.nan
            flat[rng.integers(0, flat.size, size=max(1, flat.size // 5))] = 2.5  # ties of the max
            flat[rng.integers(0, flat.size, size=max(1, flat.size // 5))] = -2.5  # and of the min
            flat[rng.integers(0, flat.size, size=2)] = [np.inf, -np.inf]
            flat[:2] = [0.0, -0.0]
        return x
    return rng.integers(-3, 3, size=shape).astype(dtype)  # many ties


# -- 1. argmax / argmin ------------------------------------------------------------------

ARG_SHAPES = [((5, 7), (0, 1, -1)), ((1, 3), (0, 1)), ((0, 4), (1,)), ((6, 1), (0, 1)), ((3, 4, 5), (0, 1, 2)),
              ((9,), (0,)), ((2, 0, 3), (0, 2))]


@pytest.mark.parametrize("shape,axes", ARG_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_arg_reduction_is_a_kernel(rng, shape, axes, dtype, which):
    """argmax/argmin lower to a loops.parallel with the arg-reduce kind: the
    first extreme, the first NaN where there is one (numpy's), ties to the
    first; both output types; zero-size dims beside the reduced one."""
    op = getattr(tfc, which)
    x = _with_nans_and_ties(rng, shape, dtype)
    for axis in axes:
        for out_t in (tfc.int64, tfc.int32):
            l3 = check(lambda a, axis=axis, out_t=out_t: op(a, axis=axis, output_type=out_t), x)
            assert f'reduce = ["{which}"]' in l3


@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_arg_reduction_fuses_with_its_producer(rng, which):
    """The producer's scalar body runs inside the arg-reduction's kernel: one
    kernel, no intermediate buffer; an arg-reduction over the flattened input
    (axis=None); a NaN made by the producer (0 * inf) wins as it does eagerly."""
    op = getattr(tfc, which)
    x = _with_nans_and_ties(rng, (13, 11), F32)
    y = rng.normal(size=(11,)).astype(F32)
    l3 = check(lambda a, b: op(a * 2.0 - b, axis=1), x, y)
    assert l3.count("loops.parallel") == 1 and "arith.mulf" in l3 and "arith.subf" in l3
    check(lambda a: op(tfc.exp(a), axis=None), x)
    z = np.array([[1.0, np.inf, 3.0], [np.inf, 0.0, 2.0]], F32)
    check(lambda a: op(a * tfc.constant(np.array([0.0, 1.0, 1.0], F32)), axis=1), z)
    # the index feeds later kernels (an accuracy): compared as eager does
    labels = rng.integers(0, 11, size=13).astype(np.int64)
    check(lambda a, l: tfc.reduce_mean(tfc.cast(tfc.equal(op(a, axis=1), l), tfc.float32)), x, labels)


@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_arg_reduction_of_non_contiguous_inputs(rng, which):
    """Transposed, reversed and strided arguments (eager reads numpy's views,
    the compiled call reads its copy) and views made inside the function."""
    op = getattr(tfc, which)
    base = _with_nans_and_ties(rng, (8, 12), F32)
    for x in (base.T, base[::-1, ::3], base[1::2]):
        assert not x.flags.c_contiguous
        check(lambda a: op(a, axis=1), x)
        check(lambda a: op(a, axis=0), x)
    check(lambda a: op(tfc.transpose(a), axis=1), base)
    check(lambda a: op(a[::-1, 1::2], axis=0), base)


@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_arg_reduction_under_a_none_signature(rng, which):
    """Specialized per batch size (batch 0, 1, odd); each specialization is a kernel."""
    op = getattr(tfc, which)
    f = tfc.function(lambda a: op(a * 3.0, axis=1), input_signature=[tfc.TensorSpec([None, 7])])
    for n in (0, 1, 5, 33):
        x = _with_nans_and_ties(rng, (n, 7), F32)
        _same(f(x).numpy(), op(tfc.constant(x) * 3.0, axis=1).numpy())
    l3 = f.get_concrete_function(tfc.TensorSpec([None, 7])).ir("loops", shapes=[(5, 7)])
    assert f'reduce = ["{which}"]' in l3 and not _library_calls(l3)


@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_arg_reduction_on_chunks_of_rows(rng, which):
    """Large enough to run on chunks of rows on the pool (over the last axis)
    and as one whole-array kernel (over the first): eager's indices."""
    op = getattr(tfc, which)
    x = _with_nans_and_ties(rng, (2100, 700), F32)
    check(lambda a: op(a + 1.0, axis=1), x)
    check(lambda a: op(a + 1.0, axis=0), x)
    g = tfc.function(lambda a: op(a + 1.0, axis=1))
    src = g.get_concrete_function(x).source
    (k,) = [int(part.split("(")[0]) for part in src.split("def kernel")[1:] if f"np.{which}(" in part.split("spec")[0]]
    assert f"R.run_chunks(kernel{k}, " in src  # each chunk's rows on the pool, by numpy's own arg-reduction


def test_arg_reduction_against_the_reference_executor(rng):
    """verify=True runs the L2 kernels beside the compiled code: the reference
    executor finds the arg kinds' kernels (reduce_argmax / reduce_argmin)."""
    x = _with_nans_and_ties(rng, (6, 5), F32)
    check(lambda a: (tfc.argmax(a * 2.0, axis=1), tfc.argmin(a - 1.0, axis=0, output_type=tfc.int32)), x,
          verify=True)


def test_arg_reduce_kind_verifier():
    """loops.parallel/tfc.fused refuse an arg kind over several axes, over an
    empty axis, or into a non-index element type."""
    from xdsl.utils.exceptions import VerifyException

    from tfc.dialects.tensor import parse_module

    def module(shape, axes, out, out_t):
        return f"""
        func.func @f(%x: tensor<{shape}xf32>) -> tensor<{out}x{out_t}> {{
          %0 = tfc.fused(%x) {{shape = array<i64: {shape.replace('x', ', ')}>, broadcast = [array<i64: 0, 1>],
                              reduce = ["argmax"], reduce_axes = array<i64: {axes}>}}
              : (tensor<{shape}xf32>) -> tensor<{out}x{out_t}> {{
          ^bb0(%a: f32):
            tfc.fused_yield %a : f32
          }}
          func.return %0 : tensor<{out}x{out_t}>
        }}"""

    parse_module(module("4x6", "1", "4", "i64")).verify()
    for args, msg in [(("4x6", "0, 1", "1", "i64"), "exactly one axis"), (("4x0", "1", "4", "i64"), "empty axis"),
                      (("4x6", "1", "4", "f32"), "i32 or i64")]:
        with pytest.raises(VerifyException, match=msg):
            parse_module(module(*args)).verify()


# -- 2. scatter-adds ---------------------------------------------------------------------

from tfc.ops.shapes import gather_grad_like, unsorted_segment_sum  # noqa: E402


def _order_sensitive(rng, shape, dtype=F32):
    """Values of very different magnitudes: a sum of several of them depends on
    the order of the adds (so a test of the order can fail)."""
    if np.dtype(dtype).kind == "f":
        return (rng.normal(size=shape) * 10.0 ** rng.integers(-4, 5, size=shape)).astype(dtype)
    return rng.integers(-(2 ** 20), 2 ** 20, size=shape).astype(dtype)


@pytest.mark.parametrize("dshape,q", [((9, 4), 1), ((40,), 1), ((5, 3, 2), 2), ((0, 4), 1), ((6, 0), 1), ((7, 1), 1),
                                      ((2, 3, 4), 1)])
@pytest.mark.parametrize("dtype,idt", [(np.float32, np.int32), (np.float64, np.int64), (np.int32, np.int64),
                                       (np.float32, np.int8)])
def test_unsorted_segment_sum_is_a_scatter_kernel(rng, dshape, q, dtype, idt):
    """Zeros, then a scatter kernel (loops.add_at, masked: negative ids are
    dropped) whose adds come in eager's np.add.at order: the same bits with
    many repeated ids; num_segments 0 where no id is kept."""
    data = _order_sensitive(rng, dshape, dtype)
    for n in (4, 1):
        ids = rng.integers(-2, n, size=dshape[:q]).astype(idt)
        l3 = check(lambda d, i, n=n: unsorted_segment_sum(d, i, n), data, ids)
        if data.size:  # (no element: the zeros only)
            assert "loops.add_at" in l3 and " if " in l3.split("loops.add_at")[1].split("\n")[0]
    check(lambda d, i: unsorted_segment_sum(d, i, 0), data, np.full(dshape[:q], -1, idt))


def test_unsorted_segment_sum_of_a_producer_and_non_contiguous_inputs(rng):
    data = _order_sensitive(rng, (12, 10))
    ids = rng.integers(-1, 5, size=12).astype(np.int32)
    check(lambda d, i: unsorted_segment_sum(d * 3.0 - 1.0, i, 5), data, ids)
    check(lambda d, i: unsorted_segment_sum(d, i, 6), data.T[:, ::2], ids[::-1][2:])  # transposed, strided
    check(lambda d, i: unsorted_segment_sum(tfc.transpose(d), i[:10], 5), data, ids)
    # a 0-d id: every element into one segment; a 0-d datum
    check(lambda d, i: unsorted_segment_sum(d, i, 3), data[0], np.int32(2))
    check(lambda d, i: unsorted_segment_sum(d, i, 3), np.float32(2.5), np.int32(1))
    check(lambda d, i: unsorted_segment_sum(d, i, 3), np.float32(2.5), np.int32(-1))


def test_unsorted_segment_sum_out_of_range_is_eagers_error(rng):
    """An id >= num_segments: eager's InvalidArgumentError naming the largest
    id, through loops.raise (the check runs before any add)."""
    data = rng.normal(size=(5, 2)).astype(F32)
    ids = np.array([0, 7, -1, 9, 1], np.int32)
    with pytest.raises(tfc.errors.InvalidArgumentError) as eager:
        unsorted_segment_sum(tfc.constant(data), tfc.constant(ids), 4)
    g = tfc.function(lambda d, i: unsorted_segment_sum(d, i, 4))
    with pytest.raises(tfc.errors.InvalidArgumentError) as compiled:
        g(data, ids)
    assert str(compiled.value).splitlines()[0] == str(eager.value).splitlines()[0] == \
        "unsorted_segment_sum: segment id 9 is out of range [0, 4)"
    assert "loops.raise \"unsorted_segment_sum\"" in g.get_concrete_function(data, ids).ir("loops")
    h = tfc.function(lambda d, i: unsorted_segment_sum(d, i, 4), input_signature=[
        tfc.TensorSpec([None, 2]), tfc.TensorSpec([None], tfc.int32)])
    with pytest.raises(tfc.errors.InvalidArgumentError, match="segment id 9 is out of range"):
        h(data, ids)


def test_unsorted_segment_sum_under_a_none_signature(rng):
    f = lambda d, i: unsorted_segment_sum(d, i, 7)  # noqa: E731
    h = tfc.function(f, input_signature=[tfc.TensorSpec([None, 3]), tfc.TensorSpec([None], tfc.int64)])
    for n in (0, 1, 5, 64):
        d = _order_sensitive(rng, (n, 3))
        i = rng.integers(-1, 7, size=n)
        _same(h(d, i).numpy(), f(tfc.constant(d), tfc.constant(i)).numpy())
    l3 = h.get_concrete_function(tfc.TensorSpec([None, 3]), tfc.TensorSpec([None], tfc.int64)).ir(
        "loops", shapes=[(5, 3), (5,)])
    assert "loops.add_at" in l3 and not _library_calls(l3)


@pytest.mark.parametrize("axis,pshape,ishape", [(0, (6, 4), (9,)), (1, (3, 6, 5), (4,)), (1, (3, 6), (2, 5)),
                                                (-1, (2, 7), (3,)), (0, (5,), (0,)), (0, (4, 0), (6,))])
def test_gather_gradient_is_a_scatter_kernel(rng, axis, pshape, ishape):
    """gather's gradient (transposes and unsorted_segment_sum, or
    gather_grad_like where called with static shapes): compiled equals eager
    bit for bit with repeated indices; no library call."""
    n = pshape[axis]
    p = _order_sensitive(rng, pshape)
    idx = rng.integers(0, max(n, 1), size=ishape).astype(np.int64) if n else np.zeros(ishape, np.int64)

    def grad(p, i):
        with tfc.GradientTape() as t:
            t.watch(p)
            y = tfc.gather(p, i, axis=axis)
            loss = tfc.reduce_sum(y * y * y)
        return t.gradient(loss, p)

    if 0 not in ishape or n:
        check(grad, p, idx)
    g = _order_sensitive(rng, tfc.gather(tfc.constant(p), tfc.constant(idx), axis=axis).shape)
    wrapped = np.where(rng.random(ishape) < 0.5, idx - n, idx) if n else idx  # negatives wrap, as np.add.at
    l3 = check(lambda g, i, like: gather_grad_like(g, i, like, axis), g, wrapped, p)
    assert "loops.add_at" in l3 or 0 in g.shape


def test_gather_grad_like_out_of_range_is_eagers_error(rng):
    g = rng.normal(size=(3, 2)).astype(F32)
    like = np.zeros((4, 2), F32)
    idx = np.array([1, 4, -5])
    with pytest.raises(IndexError) as eager:
        gather_grad_like(tfc.constant(g), tfc.constant(idx), tfc.constant(like), 0)
    with pytest.raises(IndexError) as compiled:
        tfc.function(lambda g, i, l: gather_grad_like(g, i, l, 0))(g, idx, like)
    assert str(compiled.value).splitlines()[0] == str(eager.value).splitlines()[0]


def test_unsorted_segment_sum_gradient_and_verify(rng):
    """Its gradient (a gather where ids >= 0) compiled; verify=True compares the
    scatter kernel's buffer with the reference executor's."""
    d = _order_sensitive(rng, (8, 3))
    ids = np.array([0, -1, 2, 2, 0, 1, -2, 2], np.int32)

    def grad(d, i):
        with tfc.GradientTape() as t:
            t.watch(d)
            s = unsorted_segment_sum(d * d, i, 3)
            loss = tfc.reduce_sum(s * tfc.constant(np.arange(9, dtype=F32).reshape(3, 3)))
        return s, t.gradient(loss, d)

    check(grad, d, ids, verify=True)


def test_scatter_adds_at_size(rng):
    """An embedding-sized gradient: the flat np.add.at (rt.add_at) gives
    eager's bits on 4096 rows of 64 into 1000 segments."""
    d = _order_sensitive(rng, (4096, 64))
    ids = rng.integers(0, 1000, size=4096).astype(np.int32)
    check(lambda d, i: unsorted_segment_sum(d, i, 1000), d, ids)


def test_add_at_verifier():
    from xdsl.utils.exceptions import VerifyException

    from tfc.dialects.tensor import parse_module

    def module(body, dest="%o"):
        return f"""
        func.func @f(%x: memref<4xf32>, %i: memref<4xi32>, %o: memref<3xf32>, %arena: memref<64xi8>) {{
          loops.parallel ins(%x, %i : memref<4xf32>, memref<4xi32>) outs() attributes {{shape = array<i64: 4>,
              broadcast = [array<i64: 0>, array<i64: 0>]}} {{
          ^bb0(%a: f32, %b: i32):
            %j = arith.index_cast %b : i32 to index
            {body}
            loops.yield
          }}
          func.return
        }}"""

    m = parse_module(module("loops.add_at %a, %o[%j] : f32 -> memref<3xf32>"))
    m.verify()
    assert "loops.add_at %a, %o[%j] : f32 -> memref<3xf32>" in str(m)
    for body, msg in [("loops.add_at %b, %o[%j] : i32 -> memref<3xf32>", "adds a i32"),
                      ("loops.add_at %a, %x[%j] : f32 -> memref<4xf32>", "also reads or writes"),
                      ("loops.add_at %a, %o[%j, %j] : f32 -> memref<3xf32>", "needs 1 indices")]:
        with pytest.raises(VerifyException, match=msg):
            parse_module(module(body)).verify()


# -- 3. dropout_mask writes its planned buffer -------------------------------------------

from tfc.ops.conv import dropout_mask  # noqa: E402


def _dropout_cases(rng):
    x = rng.normal(size=(37, 9)).astype(F32)
    return [
        (lambda a: tfc.nn.dropout(a * 2.0, 0.3, seed=5) + 1.0, x),
        (lambda a: dropout_mask(a, 0.5, seed=11), x.astype(np.float64)),
        (lambda a: dropout_mask(a, 0.25, noise_shape=(37, 1), seed=3) * a, x),
        (lambda a: tfc.nn.dropout(a, 0.4, noise_shape=(1, 9), seed=2), x.T[:9].T),  # non-contiguous
        (lambda a: dropout_mask(a, 0.5, seed=1), np.zeros((0, 4), F32)),
        (lambda a: dropout_mask(a, 0.5, seed=1) * a, np.float32(3.0)),  # 0-d
        (lambda a: tfc.nn.dropout(a, 0.5) * 3.0, x),  # the global stream
    ]


def test_dropout_mask_writes_its_planned_buffer(rng):
    """dropout_mask is a loops.library call with outs (its kernel_into draws
    into the plan's buffer): the same mask as eager, seeded or from the global
    stream (eager and compiled consume the same words); odd, zero and 0-d
    sizes, a non-contiguous input, noise shapes."""
    for fn, x in _dropout_cases(rng):
        tfc.random.set_seed(42)
        want = _results(fn(tfc.constant(x)))
        g = tfc.function(fn)
        g.get_concrete_function(x)  # traced before the seed: tracing draws nothing
        tfc.random.set_seed(42)
        for a, b in zip(_results(g(x)), want):
            _same(a, b)
        l3 = g.get_concrete_function(x).ir("loops")
        lib = [line for line in l3.splitlines() if 'loops.library "dropout_mask"' in line]
        assert lib and all(" outs(" in line for line in lib), l3
        assert not (_library_calls(l3) - {"dropout_mask"})


def test_dropout_under_a_none_signature_and_its_gradient(rng):
    """Specialized per batch: the mask in a planned buffer; the gradient is the
    same mask times the incoming one (the mask drawn once, as eagerly)."""
    def f(a):
        with tfc.GradientTape() as t:
            t.watch(a)
            y = tfc.nn.dropout(a * a, 0.5, seed=7)
            loss = tfc.reduce_sum(y)
        return y, t.gradient(loss, a)

    h = tfc.function(f, input_signature=[tfc.TensorSpec([None, 6])])
    for n in (0, 1, 13):
        x = rng.normal(size=(n, 6)).astype(F32)
        for a, b in zip(_results(h(x)), _results(f(tfc.constant(x)))):
            _same(a, b)
    l3 = h.get_concrete_function(tfc.TensorSpec([None, 6])).ir("loops", shapes=[(13, 6)])
    assert 'loops.library "dropout_mask"' in l3 and " outs(" in l3.split('loops.library "dropout_mask"')[1].split("\n")[0]


# -- 4. the _like pooling and convolution gradients write their planned buffers ---------

from tfc.ops.conv import (  # noqa: E402
    avg_pool2d_grad_like, conv2d_backprop_filter_like, conv2d_backprop_input_like,
)


@pytest.mark.parametrize("n,hw,k,s,pad", [(3, (7, 9), 3, 2, "SAME"), (2, (6, 6), 2, 2, "VALID"), (0, (5, 5), 2, 1, "SAME"),
                                          (1, (4, 3), 3, 1, "SAME")])
def test_avg_pool_grad_like_writes_its_planned_buffer(rng, n, hw, k, s, pad):
    """avg_pool2d_grad_like of static shapes (called as is, or left by a trace)
    is a loops.library call with outs: its kernel_into copies the kernel's
    result into the planned buffer; non-contiguous inputs; eager's bits."""
    x = rng.normal(size=(n, *hw, 3)).astype(F32)
    g = rng.normal(size=tfc.nn.avg_pool2d(tfc.constant(x), k, s, pad).shape).astype(F32)
    lib = {"avg_pool2d_grad_like"}
    l3 = check(lambda like, g: avg_pool2d_grad_like(like, g * 2.0, k, s, pad) + 1.0, x, g, library=lib)
    line = [ln for ln in l3.splitlines() if 'loops.library "avg_pool2d_grad_like"' in ln]
    assert line and " outs(" in line[0]
    check(lambda like, g: avg_pool2d_grad_like(like, g, k, s, pad), x[..., ::-1], g[:, ::-1, ::-1], library=lib)


def test_avg_pool_grad_like_on_chunks_of_images(rng):
    """Large enough to run on chunks of images written straight into the buffer."""
    x = rng.normal(size=(64, 32, 32, 16)).astype(F32)
    g = rng.normal(size=(64, 16, 16, 16)).astype(F32)
    fn = lambda like, g: avg_pool2d_grad_like(like, g, 2, 2, "VALID")  # noqa: E731
    check(fn, x, g, library={"avg_pool2d_grad_like"})
    src = tfc.function(fn).get_concrete_function(x, g).source
    assert "rt.kernel('avg_pool2d_grad_like')" in src and "def rows" in src


def test_pooling_gradients_under_none_signatures(rng):
    """A None-shaped input: traced with the _like gradients, specialized per
    shape (to avg_pool2d_grad, a kernel_into call); eager's bits."""
    def f(a):
        with tfc.GradientTape() as t:
            t.watch(a)
            y = tfc.nn.avg_pool2d(a * a, 3, 2, "SAME") + tfc.nn.max_pool2d(a, 2, 2, "SAME")
            loss = tfc.reduce_sum(y * y)
        return t.gradient(loss, a)

    h = tfc.function(f, input_signature=[tfc.TensorSpec([None, None, None, 2])])
    for shape in ((1, 5, 7, 2), (3, 8, 8, 2), (0, 4, 4, 2)):
        x = rng.normal(size=shape).astype(F32)
        _same(h(x).numpy(), f(tfc.constant(x)).numpy())
    conc = h.get_concrete_function(tfc.TensorSpec([None, None, None, 2]))
    assert "avg_pool2d_grad_like" in conc.ir()
    l3 = conc.ir("loops", shapes=[(3, 8, 8, 2)])
    for line in l3.splitlines():
        if "loops.library" in line:
            assert " outs(" in line, line


def test_conv_gradients_like_write_their_planned_buffers(rng):
    x = rng.normal(size=(2, 7, 6, 3)).astype(F32)
    w = rng.normal(size=(3, 2, 3, 4)).astype(F32)
    g = rng.normal(size=tfc.nn.conv2d(tfc.constant(x), tfc.constant(w), 1, "SAME").shape).astype(F32)
    for fn in (lambda x, w, g: conv2d_backprop_input_like(x, w, g, 1, "SAME"),
               lambda x, w, g: conv2d_backprop_filter_like(x, g, w, 1, "SAME")):
        l3 = check(fn, x, w, g, library={"conv2d_backprop_input_like", "conv2d_backprop_filter_like"})
        assert all(" outs(" in ln for ln in l3.splitlines() if "loops.library" in ln)


# -- guarded_select: an elementwise select, fused -----------------------------------------

from tfc.ops.control_flow import guarded_select  # noqa: E402


def test_guarded_select_is_a_kernel(rng):
    """guarded_select (how tapes add a gradient that exists only on some
    run-time paths) lowers to a select kernel instead of a library copy; NaN
    and inf in the operand not chosen stay out; a (1,)-shaped, a
    kernel-made and a host predicate; 0-d, empty and non-contiguous operands."""
    a = rng.normal(size=(7, 5)).astype(F32)
    b = rng.normal(size=(7, 5)).astype(F32)
    a[0, 0], b[1, 1] = np.nan, np.inf
    for p in (True, False):
        l3 = check(lambda p, a, b: guarded_select(p, tfc.exp(a) * 2.0, b - 1.0) + 1.0, np.bool_(p), a, b)
        assert "arith.select" in l3
        check(lambda p, a, b: guarded_select(p, a, tfc.zeros_like(a)), np.array([p]), a, b)
        check(lambda a, b: guarded_select(tfc.reduce_sum(a) > 0.0 if p else tfc.reduce_sum(b) < 0.0, a, b), a, b)
        check(lambda p, a, b: guarded_select(p, a, b), np.bool_(p), a[:, ::2], b.T[::2].T)
        check(lambda p, a, b: guarded_select(p, a, b), np.bool_(p), a[:0], b[:0])
        check(lambda p, a, b: guarded_select(p, a, b), np.bool_(p), np.int32(3), np.int32(-4))


# -- custom_gradient's marker ------------------------------------------------------------

@tfc.custom_gradient
def _cg_mul(a, b):
    def grad(dy):
        return dy * b, dy * a
    return a * b, grad


def test_custom_gradient_results_keep_their_values():
    """The fuzz's find (session 8): with the marker's results forwarded to its
    operands in L3 (no op), a later kernel reused a buffer a marker's result
    still named, and the compiled function returned another value's data, no
    error. The marker is a library call that returns its operands again."""
    def prog(x1):
        v1 = tfc.squeeze(x1, axis=0)
        v3 = _cg_mul(v1, v1)
        v4 = tfc.minimum(_cg_mul(v1, v3), x1)
        return v3, v4

    x = tfc.constant(np.array([-0.87], np.float32))
    want = [r.numpy() for r in prog(x)]
    for spec in ((1,), (None,)):
        got = tfc.function(prog, input_signature=[tfc.TensorSpec(spec, tfc.float32)])(x)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(w, g.numpy())


# -- integer matmul writes its planned buffer ---------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.float16])
def test_matmul_of_any_dtype_writes_its_planned_buffer(rng, dtype):
    """Integer (wrapping) and float16 products: kernel_into (numpy's loop of
    the operands' dtype, with out=) into the plan's buffer; eager's values;
    batched, transposed, non-contiguous, empty."""
    big = 120 if dtype == np.int8 else 10 ** 6
    a = rng.integers(-big, big, size=(2, 5, 7)).astype(dtype)
    b = rng.integers(-big, big, size=(2, 7, 3)).astype(dtype)
    for fn, args in [(lambda x, y: tfc.matmul(x, y) + y[:, :5, :1], (a, b)),
                     (lambda x, y: tfc.matmul(x, y, transpose_a=True), (a[:, :, :4], a)),
                     (lambda x, y: tfc.matmul(x, y), (a[:, ::-1], b[:, :, ::2])),
                     (lambda x, y: tfc.matmul(x, y), (a[:, :0], b))]:
        l3 = check(fn, *args, library={"matmul"})
        assert all(" outs(" in ln for ln in l3.splitlines() if 'loops.library "matmul"' in ln)


def test_runtime_add_at_is_np_add_at_in_iteration_order(rng):
    """rt.add_at (the numpy backend's loops.add_at): the flat path (a
    contiguous buffer) and the indexed path (a strided view) give np.add.at's
    bits over the iteration space in row-major order, masked or not, with a
    scalar value and open-grid indices."""
    from tfc.backends.numpy import runtime as rt

    shape = (50, 4)
    ids = rng.integers(0, 6, size=(50, 1))
    cols = np.arange(4).reshape(1, 4)
    vals = _order_sensitive(rng, shape)
    keep = rng.random((50, 1)) < 0.7
    want = np.zeros((6, 4), F32)
    sel = np.broadcast_to(keep, shape)
    np.add.at(want, (np.broadcast_to(ids, shape)[sel], np.broadcast_to(cols, shape)[sel]), vals[sel])
    flat = np.zeros((6, 4), F32)
    rt.add_at(flat, (ids, cols), vals, keep, shape)
    _same(flat, want)
    base = np.zeros((6, 8), F32)
    strided = base[:, ::2]
    rt.add_at(strided, (ids, cols), vals, keep, shape)
    _same(strided, want)
    assert not base[:, 1::2].any()
    ones = np.zeros(6, np.int32)
    rt.add_at(ones, (ids[:, 0],), np.int32(1), None, (50,))
    _same(ones, np.bincount(ids[:, 0], minlength=6).astype(np.int32))


def test_avg_pool_grad_like_second_order_under_a_none_signature(rng):
    """The gradient of avg_pool2d_grad_like (avg_pool2d of the incoming one),
    reached by a second-order tape through a None-shaped input: eager's bits."""
    def f(a):
        with tfc.GradientTape() as outer:
            outer.watch(a)
            with tfc.GradientTape() as inner:
                inner.watch(a)
                loss = tfc.reduce_sum(tfc.nn.avg_pool2d(a * a, 2, 2, "SAME") ** 2)
            g = inner.gradient(loss, a)
            gg = tfc.reduce_sum(g * g)
        return g, outer.gradient(gg, a)

    h = tfc.function(f, input_signature=[tfc.TensorSpec([None, None, None, 3])])
    for shape in ((2, 5, 6, 3), (1, 1, 1, 3)):
        x = rng.normal(size=shape).astype(F32)
        for a, b in zip(_results(h(x)), _results(f(tfc.constant(x)))):
            _same(a, b)
    # with static shapes, a trace that calls the _like form itself is lowered as written
    x = rng.normal(size=(2, 4, 4, 3)).astype(F32)
    g = rng.normal(size=(2, 2, 2, 3)).astype(F32)

    def gl(a, b):
        with tfc.GradientTape() as t:
            t.watch(b)
            y = avg_pool2d_grad_like(a, b * b, 2, 2, "VALID")
            loss = tfc.reduce_sum(y * y)
        return t.gradient(loss, b)

    check(gl, x, g, library={"avg_pool2d_grad_like", "avg_pool2d"})


def test_gather_grad_like_negative_indices_under_a_none_signature(rng):
    """gather_grad_like counts negative indices from the end (as x[i] does);
    its static form under specialization (wrap_index, then
    unsorted_segment_sum, which drops negatives) gave zeros there, silently;
    outside [-n, n) both raise the same IndexError."""
    g = _order_sensitive(rng, (5, 2))
    like = np.zeros((4, 2), F32)
    sig = [tfc.TensorSpec([None, 2]), tfc.TensorSpec([None], tfc.int64), tfc.TensorSpec([None, 2])]
    h = tfc.function(lambda g, i, l: gather_grad_like(g, i, l, 0), input_signature=sig)
    for idx in (np.array([1, -1, 0, -4, 3]), np.array([-1, -1, -1, 2, 2])):
        want = gather_grad_like(tfc.constant(g), tfc.constant(idx), tfc.constant(like), 0).numpy()
        _same(h(g, idx, like).numpy(), want)
        check(lambda g, i, l: gather_grad_like(g, i, l, 0), g, idx, like)
    bad = np.array([1, 4, 0, 0, 0])
    with pytest.raises(IndexError) as eager:
        gather_grad_like(tfc.constant(g), tfc.constant(bad), tfc.constant(like), 0)
    with pytest.raises(IndexError) as compiled:
        h(g, bad, like)
    assert str(compiled.value).splitlines()[0] == str(eager.value).splitlines()[0]


# -- concat's pieces written straight into their windows ----------------------------------

def _windows(l3: str) -> int:
    return len(re.findall(r"loops.parallel ins\([^)]*\) outs\(%\w+ : memref<[^>]*strided", l3))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_pieces_are_written_into_their_windows(rng, axis):
    """A piece made by an elementwise kernel (its one use the concat) is
    written straight into its window of the result's buffer: no buffer of
    its own, no copy; other pieces (arguments, values used elsewhere,
    transposes) are copied as before; verify=True compares each window."""
    x = rng.normal(size=(4, 3)).astype(F32) if axis == 0 else rng.normal(size=(3, 4)).astype(F32)
    y = rng.normal(size=(5, 3)).astype(F32) if axis == 0 else rng.normal(size=(3, 5)).astype(F32)
    cases = [
        (lambda a, b: tfc.concat([a * 2.0, tfc.exp(b)], axis=axis), 2),
        (lambda a, b: tfc.concat([a * 2.0, b, a + 1.0], axis=axis) * 3.0, 2),
        (lambda a, b: (tfc.concat([a * 2.0, b], axis=axis), a * 2.0), 0),  # the piece is returned too
        (lambda a, b: tfc.concat([a - 1.0, a - 1.0], axis=axis), 0),  # one value twice
        (lambda a, b: tfc.reduce_sum(tfc.concat([tfc.sin(a), b * b], axis=axis)), 2),  # into the arena
        (lambda a, b: tfc.concat([(a[:, :0] if axis else a[:0]) * 2.0, b + 1.0], axis=axis), 1),  # an empty piece
    ]
    for fn, windows in cases:
        l3 = check(fn, x, y, verify=True)
        if axis == 0:
            continue  # (rows are contiguous windows: their type has no strided layout)
        assert _windows(l3) >= windows, l3


def test_concat_windows_in_loops_gradients_and_none_signatures(rng):
    x = rng.normal(size=(6, 3)).astype(F32)

    def loop(a):
        i = tfc.constant(0)
        s = tfc.zeros((6, 6))
        while i < 3:
            # (6, 6), then (None, 6) with a None signature's rows
            tfc.autograph.set_loop_options(shape_invariants=[(s, (None, 6))])
            s = tfc.concat([tfc.tanh(a + tfc.cast(i, tfc.float32)), s[:, :3] * 0.5], axis=1)
            i += 1
        return s

    def grad(a):
        with tfc.GradientTape() as t:
            t.watch(a)
            c = tfc.concat([a * a, tfc.exp(a)], axis=1)
            loss = tfc.reduce_sum(c * c)
        return c, t.gradient(loss, a)

    for fn in (loop, grad):
        check(fn, x, signature=[tfc.TensorSpec([None, 3])], verify=True)
    check(lambda a: tfc.concat([a * 2.0, a[::-1] + 1.0], axis=1), x.T.copy().T)  # non-contiguous argument
