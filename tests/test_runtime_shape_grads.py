"""Gradients (and forwards) of ops whose dimensions are known only at run time.

Each case runs eagerly, then compiled with an input_signature holding None
dimensions (one trace for every run-time shape) and compiled with the static
shapes, on run-time shapes that include size-1 dimensions that broadcast and
size-0 ones: values and gradients must be the same bits, dtypes and shapes.
The ops of the run-time paths (unbroadcast_like, reshape_like, split_like,
tile_grad_like, gather_grad_like, pad_grad_like and conv2d's and avg_pool2d's
``_like`` ops) are checked against finite differences in float64, to first and
second order.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import tfc
from helpers import check_grad
from tfc.ops.conv import avg_pool2d_grad_like, conv2d_backprop_filter_like, conv2d_backprop_input_like
from tfc.ops.shapes import gather_grad_like, pad_grad_like, reshape_like, split_like, tile_grad_like, unbroadcast_like

def _value_and_grads(f, xs, order=1):
    """f(*xs) and the gradients of sum(f(*xs)**2) for the float inputs; with
    order=2, the gradients of sum(sin(first gradients)) instead."""
    floats = [x for x in xs if x.dtype.is_floating]
    with tfc.GradientTape() as outer:
        for x in floats:
            outer.watch(x)
        with tfc.GradientTape() as t:
            for x in floats:
                t.watch(x)
            y = f(*xs)
            loss = tfc.reduce_sum(y * y)
        grads = t.gradient(loss, floats)
        if order == 2:
            loss2 = functools.reduce(tfc.add, [tfc.reduce_sum(tfc.sin(g)) for g in grads])
    if order == 1:
        return [y, *grads]
    return [y, *outer.gradient(loss2, floats)]


def _same(got, want, what):
    assert (got is None) == (want is None), f"{what}: {got} vs {want}"
    if want is None:
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (
        f"{what}: {got.dtype}{got.shape} vs eager {want.dtype}{want.shape}")
    np.testing.assert_array_equal(got, want, err_msg=what)


def check(f, signature, shapes_list, order=1, dtypes=None, rng=None, make=None):
    """Eager == compiled with ``signature`` (None dims) == compiled with static
    shapes, for each tuple of run-time shapes in ``shapes_list``."""
    rng = rng or np.random.default_rng(0)
    dtypes = dtypes or [np.float32] * len(signature)
    dynamic = tfc.function(lambda *xs: _value_and_grads(f, xs, order),
                           input_signature=[tfc.TensorSpec(s, tfc.as_dtype(d)) for s, d in zip(signature, dtypes)])
    for shapes in shapes_list:
        arrays = make(rng, shapes) if make else [
            rng.uniform(0.5, 2.0, s).astype(d) for s, d in zip(shapes, dtypes)]
        xs = [tfc.constant(a) for a in arrays]
        want = _value_and_grads(f, xs, order)
        static = tfc.function(lambda *xs: _value_and_grads(f, xs, order),
                              input_signature=[tfc.TensorSpec(a.shape, tfc.as_dtype(a.dtype)) for a in arrays])
        for name, fn in (("None signature", dynamic), ("static signature", static)):
            got = fn(*xs)
            assert len(got) == len(want)
            for k, (g, w) in enumerate(zip(got, want)):
                _same(g, w, f"{name}, shapes {shapes}, {'value' if k == 0 else f'gradient {k - 1}'}")
    assert dynamic.trace_count == 1  # one trace serves every run-time shape


# -- elementwise binary ops: every broadcasting pattern, decided at run time ----------------------

BROADCASTS = [
    # (signature of x, of y), run-time shapes
    (((None,), (None,)), [((1,), (4,)), ((4,), (1,)), ((4,), (4,)), ((1,), (1,)), ((0,), (1,)), ((1,), (0,)),
                          ((0,), (0,))]),
    (((None,), (1,)), [((4,), (1,)), ((1,), (1,)), ((0,), (1,))]),
    (((None, 1), (1, None)), [((3, 1), (1, 4)), ((1, 1), (1, 4)), ((3, 1), (1, 1)), ((0, 1), (1, 2))]),
    (((None,), ()), [((3,), ()), ((1,), ()), ((0,), ())]),
    (((None, None), (None,)), [((2, 3), (3,)), ((2, 1), (3,)), ((2, 3), (1,)), ((1, 1), (4,)), ((2, 0), (1,))]),
    (((None, 3), (None, 1)), [((2, 3), (2, 1)), ((1, 3), (2, 1)), ((2, 3), (1, 1))]),
    (((2, None), (None, None, None)), [((2, 1), (3, 2, 4)), ((2, 4), (1, 1, 1)), ((2, 4), (3, 1, 4))]),
]


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "mod", "maximum", "pow"])
@pytest.mark.parametrize("sig,shapes", BROADCASTS[:4])
def test_binary_broadcast_at_run_time(op, sig, shapes):
    check(getattr(tfc, op), sig, shapes)


@pytest.mark.parametrize("sig,shapes", BROADCASTS[4:])
def test_binary_broadcast_at_run_time_higher_rank(sig, shapes):
    check(lambda x, y: tfc.multiply(x, y) - tfc.minimum(x, y) / (y + 1.0), sig, shapes)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_binary_broadcast_at_run_time_other_dtypes(dtype):
    sig, shapes = BROADCASTS[4]
    check(lambda x, y: x * y + y, sig, shapes, dtypes=[dtype, dtype])


def _broadcast_pair(rng, rx, ry):
    """Random shapes of ranks rx and ry that broadcast together (sizes 0 to 3)."""
    out = rng.integers(0, 4, max(rx, ry))
    def one(r):
        return tuple(int(d) if rng.random() < 0.6 else 1 for d in out[len(out) - r:])
    return one(rx), one(ry)


@pytest.mark.parametrize("rx", range(4))
@pytest.mark.parametrize("ry", range(4))
def test_random_broadcasts_at_run_time(rx, ry):
    # every dimension None: whether each broadcasts is only known when the code runs
    rng = np.random.default_rng([rx, ry])
    f = lambda x, y: (x - 0.5) * y  # noqa: E731
    dynamic = tfc.function(lambda x, y: _value_and_grads(f, [x, y]),
                           input_signature=[tfc.TensorSpec((None,) * rx), tfc.TensorSpec((None,) * ry)])
    for _ in range(8):
        shapes = _broadcast_pair(rng, rx, ry)
        xs = [tfc.constant(rng.uniform(0.5, 2.0, s).astype(np.float32)) for s in shapes]
        for k, (g, w) in enumerate(zip(dynamic(*xs), _value_and_grads(f, xs))):
            _same(g, w, f"shapes {shapes}, output {k}")


def test_issue_example():
    # d/dx reduce_sum(x * y), x = [1.], y = [1, 2, 3, 4]: [10.], not [1, 2, 3, 4]
    @tfc.function(input_signature=[tfc.TensorSpec((None,)), tfc.TensorSpec((None,))])
    def f(x, y):
        with tfc.GradientTape() as t:
            t.watch(x)
            loss = tfc.reduce_sum(x * y)
        return t.gradient(loss, x)

    _same(f(tfc.constant([1.0]), tfc.constant([1.0, 2.0, 3.0, 4.0])), np.array([10.0], np.float32), "gradient")


def _grad_ir(f, signature):
    fn = tfc.function(lambda *xs: _value_and_grads(f, xs), input_signature=[tfc.TensorSpec(s) for s in signature])
    return fn.get_concrete_function(*[tfc.constant(np.ones([d or 2 for d in s], np.float32)) for s in signature]).ir()


def test_run_time_reduction_only_where_a_dimension_can_broadcast():
    # a batch dimension against a bias (or anything of size 1 there) cannot broadcast: no run-time op
    assert "unbroadcast_like" not in _grad_ir(lambda x, w, b: tfc.matmul(x, w) + b, [(None, 3), (3, 4), (4,)])
    assert "unbroadcast_like" not in _grad_ir(lambda x, y: x * y, [(None, 3), (1, 3)])
    # two run-time sizes against each other: decided when the code runs
    assert "unbroadcast_like" in _grad_ir(lambda x, y: x * y, [(None,), (None,)])
    assert "unbroadcast_like" in _grad_ir(lambda x, y: x * y, [(None,), (4,)])


def test_where_and_clip_broadcast_at_run_time():
    make = lambda rng, shapes: [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]  # noqa: E731
    check(lambda c, x, y: tfc.where(c > 0.0, x, y), [(None,), (None, None), (None,)],
          [((3,), (2, 3), (1,)), ((1,), (2, 3), (3,)), ((3,), (1, 1), (1,)), ((0,), (2, 0), (1,))], make=make)
    check(lambda t, lo, hi: tfc.clip_by_value(t, lo, hi - 0.5), [(None,), (None,), (None,)],
          [((4,), (1,), (1,)), ((1,), (4,), (1,)), ((1,), (1,), (4,)), ((4,), (4,), (4,))], make=make)


def test_matmul_batch_broadcast_at_run_time():
    check(lambda a, b: tfc.matmul(a, b), [(None, 2, None), (None, None, 4)],
          [((1, 2, 3), (5, 3, 4)), ((5, 2, 3), (1, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((1, 2, 0), (3, 0, 4))])


def test_broadcast_gradient_second_order():
    check(lambda x, y: tfc.sin(x * y) + x, [(None,), (None,)], [((1,), (4,)), ((4,), (1,)), ((3,), (3,))],
          order=2)


# -- shape ops whose gradients need run-time sizes ----------------------------------------------

SHAPE_CASES = {
    "concat axis 0": (lambda x, y: tfc.concat([x, y], 0), [(None, None), (None, None)],
                      [((1, 3), (2, 3)), ((0, 3), (2, 3)), ((2, 3), (0, 3))]),
    "concat axis 1, three": (lambda x, y: tfc.concat([x, y, x], 1), [(None, None), (None, None)],
                             [((2, 1), (2, 4)), ((2, 0), (2, 2)), ((1, 3), (1, 1))]),
    "concat one unknown": (lambda x, y: tfc.concat([x, y], 0), [(None,), (3,)], [((2,), (3,)), ((0,), (3,))]),
    "tile": (lambda x: tfc.tile(x, [2, 3]), [(None, None)], [((2, 3),), ((1, 1),), ((0, 2),)]),
    "tile partly known": (lambda x: tfc.tile(x, [1, 2, 2]), [(None, 2, None)], [((3, 2, 1),), ((1, 2, 0),)]),
    "squeeze a None axis": (lambda x: tfc.squeeze(x, 1), [(None, None)], [((2, 1),), ((0, 1),), ((1, 1),)]),
    "squeeze two axes": (lambda x: tfc.squeeze(x, [0, 2]), [(None, 3, None)], [((1, 3, 1),)]),
    "broadcast_to from None": (lambda x: tfc.broadcast_to(x, [3, 4]), [(None,)], [((1,),), ((4,),)]),
    "broadcast_to rank 3": (lambda x: tfc.broadcast_to(x, [2, 3, 4]), [(None, None)],
                            [((1, 4),), ((3, 1),), ((3, 4),), ((1, 1),)]),
    "broadcast_to a None dim to 1": (lambda x: tfc.broadcast_to(x, [2, 1, 3]), [(None, None)],
                                     [((1, 3),), ((1, 1),)]),
    "broadcast_to size 0": (lambda x: tfc.broadcast_to(x, [2, 0]), [(None,)], [((1,),), ((0,),)]),
    "reshape flat": (lambda x: tfc.reshape(x, [-1]), [(None, None)], [((2, 3),), ((0, 3),), ((3, 0),)]),
    "reshape rank 3": (lambda x: tfc.reshape(x, [-1, 2]), [(None, None, None)], [((2, 3, 2),), ((1, 1, 2),)]),
    "expand_dims": (lambda x: tfc.expand_dims(x, 1), [(None, None)], [((2, 3),), ((0, 2),), ((1, 1),)]),
    "expand_dims last": (lambda x: tfc.expand_dims(x, -1) * x[:, :, None], [(None, None)], [((2, 3),)]),
    "split": (lambda x: tfc.split(x, 2, axis=0)[1], [(None, 3)], [((4, 3),), ((0, 3),)]),
    "stack": (lambda x, y: tfc.stack([x, y], axis=1), [(None,), (None,)], [((3,), (3,)), ((0,), (0,))]),
    "getitem": (lambda x: x[1:, ::2], [(None, None)], [((3, 4),), ((1, 1),), ((0, 2),)]),
    "reduce_mean": (lambda x: tfc.reduce_mean(x, axis=0, keepdims=True) * x, [(None, None)], [((2, 3),), ((1, 3),)]),
    "tensordot": (lambda x, w: tfc.tensordot(x, w, 1), [(None, 3), (3, 4)], [((2, 3), (3, 4)), ((0, 3), (3, 4))]),
    "tensordot axes": (lambda x, w: tfc.tensordot(x, w, [[0, 2], [1, 0]]), [(2, 3, 4), (None, 2, None)],
                       [((2, 3, 4), (4, 2, 5)), ((2, 3, 4), (4, 2, 1))]),
    "conv2d": (lambda x, w: tfc.nn.conv2d(x, w, 1, "SAME"), [(None, None, None, 3), (None, None, 3, 2)],
               [((2, 5, 4, 3), (3, 3, 3, 2)), ((1, 2, 2, 3), (1, 2, 3, 2))]),
    "conv2d strided": (lambda x, w: tfc.nn.conv2d(x, w, 2, "VALID", dilations=1), [(None, None, None, 2), (2, 2, 2, 1)],
                       [((1, 5, 5, 2), (2, 2, 2, 1)), ((2, 2, 3, 2), (2, 2, 2, 1))]),
    "avg_pool": (lambda x: tfc.nn.avg_pool2d(x, 2, 2, "SAME"), [(None, None, None, 2)],
                 [((2, 5, 3, 2),), ((1, 1, 1, 2),)]),
    "max_pool": (lambda x: tfc.nn.max_pool2d(x, 2, 1, "VALID"), [(None, None, None, 1)], [((1, 3, 4, 1),)]),
    "pad": (lambda x: tfc.pad(x, [[1, 2], [0, 1]]), [(None, None)], [((2, 3),), ((0, 1),)]),
    "pad reflect": (lambda x: tfc.pad(x, [[1, 2], [0, 1]], mode="REFLECT"), [(None, None)],
                    [((3, 2),), ((4, 3),)]),
    "pad symmetric": (lambda x: tfc.pad(x, [[2, 1], [1, 0]], mode="SYMMETRIC") * 1.5, [(None, 2)],
                      [((2, 2),), ((3, 2),)]),
    "pad no after": (lambda x: tfc.pad(x, [[2, 0]], constant_values=1.0), [(None,)], [((3,),), ((0,),)]),
}


@pytest.mark.parametrize("name", list(SHAPE_CASES))
def test_shape_op_grad_at_run_time(name):
    f, sig, shapes = SHAPE_CASES[name]
    check(f, sig, shapes)


def _gather_inputs(rng, shapes):
    x_shape, idx_shape, axis_size = shapes
    return [rng.uniform(0.5, 2.0, x_shape).astype(np.float32),
            rng.integers(0, max(axis_size, 1), idx_shape).astype(np.int32) if axis_size else
            np.zeros(idx_shape, np.int32)]


@pytest.mark.parametrize("axis", [0, 1])
def test_gather_along_unknown_axis(axis):
    # repeated indices add up in order, as eager's unsorted_segment_sum does
    shapes = [((3, 4), (5,), 3 if axis == 0 else 4), ((2, 2), (2, 2), 2), ((1, 3), (), 1 if axis == 0 else 3)]
    for x_shape, idx_shape, n in shapes:
        check(lambda x, i: tfc.gather(x, i, axis=axis), [(None, None), tuple(None for _ in idx_shape)],
              [(x_shape, idx_shape, n)], dtypes=[np.float32, np.int32], make=_gather_inputs)


def test_integer_array_index_with_unknown_size():
    # negative indices wrap by the size the axis has when the code runs
    check(lambda x: x[[0, -1, -1]], [(None, None)], [((2, 3),), ((1, 2),)])
    check(lambda x: x[:, [-1, 0]] * x[-1:, :1], [(None, None)], [((2, 3),), ((3, 1),)])
    make = lambda rng, shapes: [rng.uniform(0.5, 2.0, shapes[0]).astype(np.float32),  # noqa: E731
                                np.array([-2, 1, -1, 0][:shapes[1][0]], np.int32)]
    check(lambda x, i: x[i], [(None, None), (None,)], [((2, 3), (4,)), ((3, 1), (2,))],
          dtypes=[np.float32, np.int32], make=make)


@pytest.mark.parametrize("shape", [(), (3,)])
def test_reshape_does_not_sink_through_broadcast_to(shape):
    # d sum(expand_dims(x)) / dx: reshape(broadcast_to(reshape(ones))), whose outer
    # reshape must not be moved into broadcast_to (its shape attribute would go stale)
    def f(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            loss = tfc.reduce_sum(tfc.expand_dims(x, -1)) + tfc.reduce_sum(x)
        return t.gradient(loss, x)

    x = tfc.constant(np.full(shape, 0.5, np.float32))
    _same(tfc.function(f, input_signature=[tfc.TensorSpec(shape)])(x), f(x), "gradient")


def test_unsorted_segment_sum_with_unknown_sizes():
    from tfc.ops.shapes import unsorted_segment_sum

    make = lambda rng, shapes: [rng.uniform(0.5, 2.0, shapes[0]).astype(np.float32),  # noqa: E731
                                rng.integers(-1, 3, shapes[1]).astype(np.int32)]  # -1: dropped
    check(lambda x, i: unsorted_segment_sum(x, i, 3), [(None, None), (None,)], [((4, 2), (4,)), ((0, 3), (0,))],
          dtypes=[np.float32, np.int32], make=make)
    check(lambda x, i: unsorted_segment_sum(x, i, 3), [(None, None, 3), (None, None)], [((2, 2, 3), (2, 2))],
          dtypes=[np.float32, np.int32], make=make)


def test_shape_op_grads_second_order():
    check(lambda x, y: tfc.sin(tfc.concat([x, y * x[:1]], 0)), [(None,), (None,)], [((2,), (3,))], order=2)
    check(lambda x: tfc.tile(tfc.sin(x), [2, 2]) * tfc.reshape(x, [1, -1])[:, :1], [(None, None)], [((2, 3),)],
          order=2)
    check(lambda x: tfc.gather(tfc.sin(x), [1, 0, 1], axis=1) * x[:, :1], [(None, None)], [((2, 3),)], order=2)
    check(lambda x, w: tfc.sin(tfc.nn.conv2d(x, w, 2, "SAME")), [(None, None, None, 2), (None, None, 2, 2)],
          [((1, 4, 3, 2), (2, 3, 2, 2))], order=2)
    check(lambda x: tfc.sin(tfc.pad(x * x, [[2, 1]], mode="REFLECT")), [(None,)], [((4,),)], order=2)
    check(lambda x: tfc.sin(tfc.nn.avg_pool2d(x * x, 2, 1, "SAME")), [(None, None, None, 1)], [((1, 3, 3, 1),)],
          order=2)


def test_sparse_cross_entropy_with_unknown_number_of_classes():
    make = lambda rng, shapes: [rng.uniform(-1, 1, shapes[0]).astype(np.float32),  # noqa: E731
                                rng.integers(0, shapes[0][1], shapes[1]).astype(np.int32)]
    check(lambda logits, labels: tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits),
          [(None, None), (None,)], [((2, 3), (2,)), ((4, 1), (4,)), ((0, 2), (0,))],
          dtypes=[np.float32, np.int32], make=make)


def test_tensordot_with_two_unknown_free_sizes_says_so():
    f = tfc.function(lambda x, y: tfc.tensordot(x, y, 1),
                     input_signature=[tfc.TensorSpec((None, 3)), tfc.TensorSpec((3, None))])
    with pytest.raises(NotImplementedError, match=r"tensordot of shapes \(\?, 3\) and \(3, \?\) over axes \[1\], \[0\]"):
        f(tfc.constant(np.ones((3, 3), np.float32)), tfc.constant(np.ones((3, 3), np.float32)))


# -- forwards that used to fail at trace time, and run-time checks ----------------------------------

def test_squeeze_of_a_none_dimension_checks_at_run_time():
    f = tfc.function(lambda x: tfc.squeeze(x, 1), input_signature=[tfc.TensorSpec((None, None))])
    np.testing.assert_array_equal(f(tfc.constant(np.ones((2, 1), np.float32))).numpy(), np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"squeeze: axis 1 of shape \(2, 3\) has size 3, not 1"):
        f(tfc.constant(np.ones((2, 3), np.float32)))


def test_squeeze_all_axes_with_unknown_sizes_names_them():
    f = tfc.function(lambda x: tfc.squeeze(x), input_signature=[tfc.TensorSpec((None, 3, 1))])
    with pytest.raises(NotImplementedError, match=r"squeeze: axis=None on shape \(\?, 3, 1\): whether axes \[0\] are "
                                                   r"removed depends on sizes known only at run time, so the "
                                                   r"result's rank does.*; pass axis") as info:
        f(tfc.constant(np.ones((1, 3, 1), np.float32)))
    assert "test_runtime_shape_grads.py" in "".join(getattr(info.value, "__notes__", []))  # the user's line
    g = tfc.function(lambda x: tfc.squeeze(x), input_signature=[tfc.TensorSpec((2, 1, 3))])
    assert g(tfc.constant(np.ones((2, 1, 3), np.float32))).shape == (2, 3)


def test_broadcast_to_from_none_checks_at_run_time():
    f = tfc.function(lambda x: tfc.broadcast_to(x, [3, 4]), input_signature=[tfc.TensorSpec((None,))])
    with pytest.raises(ValueError, match=r"broadcast_to: .*\(3,\).* \(3, 4\)"):
        f(tfc.constant(np.ones(3, np.float32)))
    g = tfc.function(lambda x: tfc.broadcast_to(x, [2, 1, 3]), input_signature=[tfc.TensorSpec((None, None))])
    with pytest.raises(ValueError, match=r"broadcast_to: .*\(2, 3\).* \(2, 1, 3\)"):
        g(tfc.constant(np.ones((2, 3), np.float32)))


# -- the run-time ops themselves: finite differences in float64, first and second order --------------

def _second(f, like):
    """x -> the gradient of sum(sin(f(x, like))), whose own gradient exercises
    the gradient rules of the ops in that gradient."""
    def first(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = tfc.reduce_sum(tfc.sin(f(x, like)))
        return t.gradient(y, x) * x
    return first


_W = tfc.constant(np.random.default_rng(3).uniform(-1, 1, (3, 3, 3, 2)))
_X = tfc.constant(np.random.default_rng(4).uniform(-1, 1, (2, 3, 4, 3)))

RUNTIME_OPS = {
    "unbroadcast_like": (lambda g, like: unbroadcast_like(g * g, like), [(3, 1, 4), (1, 4)]),
    "unbroadcast_like lead": (lambda g, like: unbroadcast_like(g * g, like), [(2, 3), (3,)]),
    "reshape_like": (lambda x, like: reshape_like(x * x, like), [(2, 3), (3, 2)]),
    "split_like": (lambda x, a: tfc.concat([p * p for p in split_like(x * x, [a, a, a], 0)], 0) * x,
                   [(6,), (2,)]),
    "tile_grad_like": (lambda g, like: tile_grad_like(g * g, like, [2, 3]), [(4, 6), (2, 2)]),
    "conv2d_backprop_input_like": (lambda g, like: conv2d_backprop_input_like(like, _W, g * g, 2, "SAME"),
                                   [(1, 2, 2, 2), (1, 3, 4, 3)]),
    "conv2d_backprop_filter_like": (lambda g, like: conv2d_backprop_filter_like(_X, g * g, like, 1, "VALID"),
                                    [(2, 2, 3, 2), (2, 2, 3, 2)]),
    "avg_pool2d_grad_like": (lambda g, like: avg_pool2d_grad_like(like, g * g, 2, 2, "SAME"),
                             [(1, 2, 2, 2), (1, 3, 4, 2)]),
    "pad_grad_like": (lambda g, like: pad_grad_like(g * g, like, (1, 2, 0, 1), "REFLECT"), [(6, 3), (3, 2)]),
    "pad_grad_like symmetric": (lambda g, like: pad_grad_like(g * g, like, (2, 1), "SYMMETRIC"), [(6,), (3,)]),
    "gather_grad_like": (lambda g, like: gather_grad_like(g * g, tfc.constant([2, 0, 2, 1]), like, 1),
                         [(2, 4), (2, 3)]),
}


@pytest.mark.parametrize("name", list(RUNTIME_OPS))
def test_runtime_op_finite_differences(name):
    f, (x_shape, like_shape) = RUNTIME_OPS[name]
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 1.5, x_shape)
    like = tfc.constant(np.zeros(like_shape))
    check_grad(lambda x: tfc.sin(f(x, like)), x)
    check_grad(_second(f, like), x)
