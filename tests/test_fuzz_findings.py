"""Defects the fuzz campaign found (issue #16), each as the program that
showed it, compiled on the numpy backend and compared bit for bit with eager
(static and None signatures)."""
import numpy as np
import pytest

import tfc
from helpers import assert_bit_identical


same = assert_bit_identical  # eager against compiled, bit for bit


def check(fn, x, signature):
    want = fn(tfc.constant(x))
    f = tfc.function(fn, input_signature=[tfc.TensorSpec(signature, tfc.as_dtype(x.dtype))])
    same(f(tfc.constant(x)), want)
    same(f(tfc.constant(x)), want)  # the arena reused


@tfc.custom_gradient
def _cg_softplus(x):
    def grad(dy):
        return dy * tfc.sigmoid(x)
    return tfc.softplus(x), grad


def _loops_after_replay(x0):
    # The gradient's forward replay of the first loop carries its variable in
    # no buffers (its state lists view it), an elementwise gradient kernel
    # then reuses the variable's copied-out buffer in place, and the backward
    # loop of the second while_loop takes that buffer as its entry buffer: an
    # escaping value made before that loop (the replay's yielded value)
    # references it. tfc-bufferize copied the loop's result out again and
    # again ("the loop buffers did not settle"); it now gives the loop an
    # entry buffer of its own.
    with tfc.GradientTape() as t:
        t.watch(x0)
        v1 = tfc.add(x0, tfc.softplus(x0))
        i1 = tfc.constant(0)
        while i1 < 2:
            v1 = v1 - tfc.reduce_mean(v1, axis=1, keepdims=True)
            i1 = i1 + 1
        v2 = _cg_softplus(v1) @ tfc.transpose(_cg_softplus(v1))
        _, v3 = tfc.while_loop(lambda i, a: i < 1, lambda i, a: (i + 1, tfc.add(a, x0)),
                               [tfc.constant(0), v1])
        loss = tfc.reduce_sum(v2) + tfc.reduce_sum(v3)
    return v2, v3, t.gradient(loss, x0)


@pytest.mark.parametrize("signature", [(3, 2), (None, 2), (None, None)])
def test_loop_entry_buffer_referenced_by_an_earlier_escaping_value(signature):
    x = np.array([[0.09, 0.24], [0.29, -0.42], [-0.68, 0.68]], np.float32)
    check(_loops_after_replay, x, signature)


@pytest.mark.parametrize("shape", [(5, 3), (1, 1), (0, 2)])
def test_loop_entry_buffer_random(shape):
    x = np.random.default_rng(4049).standard_normal(shape).astype(np.float32)
    check(_loops_after_replay, x, shape)


# -- kernels read strided views in place, whatever else reads them ---------------
#
# numpy's transcendental ufuncs give other last bits on a contiguous array (SIMD
# loops) than on a strided one: eager runs them on numpy's views, so a compiled
# kernel must read the view too, not the copy made for another reader (a concat
# piece, a returned value, a library call).

UFUNCS = {
    "exp": tfc.exp, "expm1": tfc.expm1, "log1p": lambda v: tfc.log1p(tfc.abs(v)),
    "log": lambda v: tfc.log(tfc.abs(v) + 0.5), "sin": tfc.sin, "cos": tfc.cos, "tanh": tfc.tanh,
}

# (numpy 1.26/2.x: expm1 and log1p differ on a one-row view of negative step;
# the other views and ufuncs guard the same path)
VIEWS = {
    "neg_step": lambda x: x[:, ::-2],
    "neg_step1": lambda x: x[:, ::-1],
    "rows_step": lambda x: x[::2, 1:],
    "reversed": lambda x: x[::-1],
    "transpose": lambda x: tfc.transpose(x),
}

READERS = {
    # the concat piece copies the view, the kernel reads it (the campaign's program)
    "concat": lambda v, k: tfc.concat([v, k], axis=1),
    "returned": lambda v, k: (v, k),
    "matmul": lambda v, k: (tfc.matmul(v, tfc.transpose(v)), k),
    "two_kernels": lambda v, k: (k, tfc.sin(v) * 2.0, v),
}


@pytest.mark.parametrize("ufunc", sorted(UFUNCS))
@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_kernel_reads_view_with_other_readers(ufunc, view, reader):
    u, vw, rd = UFUNCS[ufunc], VIEWS[view], READERS[reader]

    def fn(x):
        v = vw(x)
        return rd(v, u(v))

    rng = np.random.default_rng(len(ufunc) * 7 + len(view) * 3 + len(reader))
    for shape in [(1, 3), (1, 200), (6, 6), (4, 16)]:
        x = (rng.standard_normal(shape) * 2).astype(np.float32)
        for sig in [shape, (None, shape[1]), (None, None)]:
            check(fn, x, sig)


def test_kernel_reads_view_campaign_program():
    def e1(x0):
        return tfc.concat([x0[:, ::-2], tfc.expm1(x0[:, ::-2])], axis=1)

    x = np.array([[-0.94, 0.2, 1.02]], np.float32)
    for sig in [(1, 3), (None, 3), (None, None)]:
        check(e1, x, sig)


@pytest.mark.parametrize("shape", [(0, 4), (3, 0), (5, 7)])
def test_kernel_reads_view_in_loop_and_float64(shape):
    def fn(x):
        def body(i, a):
            v = a[:, ::-1]
            return i + 1, tfc.concat([tfc.expm1(v) * 0.5, v], axis=0)[: shape[0]]
        v = tfc.transpose(x)
        return tfc.while_loop(lambda i, a: i < 3, body, (tfc.constant(0), x))[1], tfc.tanh(v), v

    x = np.random.default_rng(11).standard_normal(shape)
    check(fn, x, shape)
    check(fn, x.astype(np.float32), shape)


@pytest.mark.parametrize("ufunc", ["expm1", "log1p"])
def test_kernel_reads_1d_view(ufunc):
    u = UFUNCS[ufunc]

    def fn(x):
        v = x[::-1]
        w = x[1::-3]
        return tfc.concat([v, u(v)], axis=0), u(w), w

    x = (np.random.default_rng(5).standard_normal(301) * 2).astype(np.float32)
    for sig in [(301,), (None,)]:
        check(fn, x, sig)


CHAINS = {
    # a strided getitem of a strided getitem, the inner one also returned
    "getitem_getitem": lambda x: (tfc.expm1(x[:, ::-1][:, ::3]), x[:, ::-1]),
    "all_read": lambda x: (tfc.expm1(x[:, ::-1][:, ::3]), x[:, ::-1][:, ::3],
                           tfc.log1p(tfc.abs(x[:, ::-1]))),
    "transpose_getitem": lambda x: (tfc.expm1(tfc.transpose(tfc.transpose(x[:, ::-1]))),
                                    tfc.transpose(x[:, ::-1])),
}


def _check_on_a_row(fn, seed):
    x = (np.random.default_rng(seed).standard_normal((1, 301)) * 2).astype(np.float32)
    for sig in [(1, 301), (None, None)]:
        check(fn, x, sig)


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_kernel_reads_chain_of_views(chain):
    _check_on_a_row(CHAINS[chain], seed=9)


def _stopped_loop_variable(x0):
    # v2's gradient stops in the loop body (stop_gradient), so after one trip
    # or more eager gives v1 / v1 none: the compiled gradient sent a zero back
    # through v1 / v1, and 0 / -inf * NaN made NaN where eager has 0.
    with tfc.GradientTape() as t:
        t.watch(x0)
        v2 = x0 / x0
        _, v1, v2 = tfc.while_loop(
            lambda j, a, b: j < 3,
            lambda j, a, b: (j + 1, tfc.identity(a), tfc.stop_gradient(b) + tfc.cast(j, b.dtype) * 0.5),
            [tfc.constant(0), x0, v2])
        v4 = tfc.cond(tfc.reduce_min(x0) < 0.5, lambda: tfc.floor(v1), lambda: tfc.divide(v1, v2))
        loss = tfc.reduce_sum(v4)
    return v4, t.gradient(loss, x0, unconnected_gradients="zero")


@pytest.mark.parametrize("signature", [(1, 3), (None, None)])
def test_stopped_loop_variable_gets_no_gradient(signature):
    x = np.array([[-0.15, -np.inf, 2.0]], np.float32)
    check(_stopped_loop_variable, x, signature)


ALIAS_CHAINS = {
    # a contiguous getitem (an alias) of a copied strided view: its kernel reads a view of the view
    "alias_of_view": lambda x: (tfc.expm1(x[:, ::-1][:, 2:]), x[:, ::-1][:, 2:]),
    "inner_returned": lambda x: (tfc.expm1(x[:, ::-1][:, 2:]), x[:, ::-1]),
    "row_of_view": lambda x: (tfc.log1p(tfc.abs(x[:, ::-1][0])), x[:, ::-1]),
    "alias_then_strided": lambda x: (tfc.expm1(x[:, ::-1][:, 3:][:, ::2]), x[:, ::-1], x[:, ::-1][:, 3:]),
}


@pytest.mark.parametrize("chain", sorted(ALIAS_CHAINS))
def test_kernel_reads_alias_of_view(chain):
    _check_on_a_row(ALIAS_CHAINS[chain], seed=10)


# -- the model ops' campaign (tests/fuzz: MODEL_OPS) ------------------------------------

def _quantize_scalar(x0):
    # numpy's divide of a 0-d array is a scalar, which rint(out=) refused:
    # "TypeError: return arrays must be of ArrayType" eagerly
    q = tfc.ops.quant.quantize(x0, 0.05, 3)
    return q, tfc.ops.quant.dequantize(q, 0.05, 3)


@pytest.mark.parametrize("signature", [()])
def test_quantize_of_a_scalar(signature):
    x = np.float32(0.76)
    q, d = _quantize_scalar(tfc.constant(x))
    assert q.numpy() == np.int8(18) and q.shape == () and d.numpy() == np.float32(15 * np.float32(0.05))
    check(_quantize_scalar, np.asarray(x), signature)


def _l2_normalize_scalar(x0):
    # a 0-d eager value may be a numpy scalar (here the cast's): the expansion's dtype
    # lookup took it for an SSA value ("'numpy.float32' object has no attribute 'type'")
    v1 = tfc.cast((tfc.cast(x0 * 2.0, tfc.int32) % 3), tfc.float32)
    return tfc.nn.l2_normalize(v1), tfc.nn.l2_normalize(-v1 - 1.0, epsilon=16.0)


@pytest.mark.parametrize("signature", [()])
def test_l2_normalize_of_a_numpy_scalar(signature):
    x = np.float32(1.06)
    a, b = _l2_normalize_scalar(tfc.constant(x))
    assert a.numpy() == np.float32(1.0) and b.numpy() == np.float32(-0.75)
    check(_l2_normalize_scalar, np.asarray(x), signature)


def _einsum_unknown_dims(x0):
    # no dimension merged (an elementwise product; a product summed over one
    # label): the pair's matmul operands took a reshape that named every
    # dimension, so two None dimensions raised NotImplementedError compiled
    y = tfc.tile(x0, [3, 1])
    return (tfc.einsum("ab,ab->ab", y, y), tfc.einsum("ab,ab->a", y, x0), tfc.einsum("ab,b->ab", y, x0[0]),
            tfc.einsum("ab,ab->", y, y))


@pytest.mark.parametrize("signature", [(1, 3), (None, 3), (None, None)])
def test_einsum_without_merges_takes_unknown_dims(signature):
    x = np.array([[1.36, -0.81, np.inf]], np.float32)
    y = np.tile(x, [3, 1])
    got = _einsum_unknown_dims(tfc.constant(x))
    for g, w in zip(got, [y * y, np.einsum("ab,ab->a", y, x), y * x[0], np.einsum("ab,ab->", y, y)]):
        assert np.allclose(g.numpy(), w, equal_nan=True)
    check(_einsum_unknown_dims, x, signature)
    xs = tfc.constant(x)
    with tfc.GradientTape() as t:
        t.watch(xs)
        loss = tfc.reduce_sum(tfc.einsum("ab,ab->a", tfc.tile(xs, [2, 1]), xs))
    assert np.array_equal(t.gradient(loss, xs).numpy(), 4 * x)
