"""Errors raised while compiled code runs on shapes known only at run time
(``None`` in the signature) are eager's errors: the same class and message,
naming the op and the shapes, with a note naming the user's line; not numpy's
message from a file of the compile cache."""
import re

import numpy as np
import pytest

import tfc
import tfc.frontend.function as function_module
from tfc.core.errors import InvalidArgumentError

F32 = np.float32
V = tfc.TensorSpec((None,))
M = tfc.TensorSpec((None, None))


def ones(*shape):
    return np.ones(shape, F32)


def add(x, y):
    return x + y  # line: add


def reshape(x, y):
    return tfc.reshape(x, (2, 3)) + tfc.reduce_sum(y)  # line: reshape


def matmul(x, y):
    return tfc.matmul(x, y)  # line: matmul


def exp_then_add(x, y):
    z = tfc.exp(x)
    return z * 2.0 + y  # line: exp_then_add


def in_a_branch(x, y):
    if tfc.reduce_sum(x) > 0.0:
        r = tfc.concat([x, y], axis=0) * 2.0  # line: in_a_branch
    else:
        r = x
    return r


def in_a_loop(x, y):
    i = tfc.constant(0)
    s = x
    while i < 2:
        s = s + y  # line: in_a_loop
        i += 1
    return s


def pad_reflect(x, y):
    return tfc.pad(x, [[3, 0]], mode="REFLECT") + y  # line: pad_reflect


def pad_symmetric(x, y):
    return tfc.pad(x, [[4, 0]], mode="SYMMETRIC") + y  # line: pad_symmetric


def sigmoid_xent(labels, logits):
    return tfc.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)  # line: sigmoid_xent


def sparse_xent(logits, labels):
    return tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)  # line: sparse_xent


IV = tfc.TensorSpec((None,), tfc.int32)
CASES = [
    (add, [V, V], [ones(3), ones(4)]),
    # numpy accepts these (pad reflects again, the kernels broadcast): eager's
    # inference must run on the run-time shapes
    (pad_reflect, [V, V], [ones(3), ones(1)]),
    (pad_symmetric, [V, V], [ones(3), ones(1)]),
    (sigmoid_xent, [M, M], [ones(1, 3), ones(5, 3)]),
    (sparse_xent, [M, IV], [ones(5, 3), np.zeros(1, np.int32)]),
    (sparse_xent, [M, IV], [ones(1, 3), np.zeros(5, np.int32)]),
    (reshape, [V, V], [ones(5), ones(1)]),
    (matmul, [M, M], [ones(2, 3), ones(4, 2)]),
    (exp_then_add, [V, V], [ones(3), ones(4)]),
    (in_a_branch, [M, M], [ones(2, 3), ones(2, 4)]),
    (in_a_loop, [V, V], [ones(3), ones(4)]),
]


def line_of(name):
    src = open(__file__).read().splitlines()
    tag = f"# line: {name}"
    return next(i + 1 for i, s in enumerate(src) if s.endswith(tag))


def noted_line(e):
    """The file:line of the note naming the user's line."""
    notes = [n for n in getattr(e, "__notes__", []) if n.startswith("  at ")]
    assert len(notes) == 1, getattr(e, "__notes__", None)
    m = re.match(r"  at (.+?):(\d+)", notes[0])
    return m.group(1), int(m.group(2))


@pytest.mark.parametrize("fn, sig, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_run_time_shape_errors_are_eager_errors(fn, sig, args, monkeypatch, tmp_path):
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path))
    with pytest.raises(Exception) as eager:
        fn(*[tfc.constant(a) for a in args])
    for attempt in ("compiled", "from the disk cache"):  # the module a second process would load
        with pytest.raises(Exception) as compiled:
            tfc.function(fn, input_signature=sig)(*args)
        e = compiled.value
        assert type(e) is type(eager.value)
        assert str(e) == str(eager.value)
        assert noted_line(e) == (__file__, line_of(fn.__name__)) == noted_line(eager.value)
        assert e.__suppress_context__  # numpy's message is not shown under it
        assert "broadcast together with shapes (" not in str(e) and "gufunc" not in str(e)
    assert list(tmp_path.glob("*.py"))


def test_a_failed_check_of_a_kernel_keeps_its_error_and_gets_the_line():
    """A data-dependent error of tfc's own kernel (gather out of range) is
    eager's InvalidArgumentError, noted with the user's line."""
    def f(x, i):
        return tfc.gather(x, i)

    x, i = ones(3), np.array([5], np.int32)
    with pytest.raises(InvalidArgumentError) as eager:
        f(tfc.constant(x), tfc.constant(i))
    g = tfc.function(f, input_signature=[V, tfc.TensorSpec((None,), tfc.int32)])
    with pytest.raises(InvalidArgumentError) as compiled:
        g(x, i)
    assert str(compiled.value) == str(eager.value)
    assert noted_line(compiled.value)[1] == noted_line(eager.value)[1]


def test_other_kernel_errors_name_the_op_and_operands(monkeypatch):
    """Where eager's shape inference accepts the operands but the kernel fails
    (here a kernel patched to fail), the message names the op, the error and
    the operands' shapes, at the user's line."""
    from tfc.core.registry import REGISTRY

    def f(x, y):
        return tfc.maximum(x, y)  # line: maximum

    g = tfc.function(f, input_signature=[V, V])
    g(ones(3), ones(3))  # compiled

    def broken(*args, **kwargs):
        raise ValueError("the kernel failed")

    # the generic form (a specialization fuses maximum: the kernel is not called)
    monkeypatch.setattr(function_module, "SPECIALIZATIONS", 0)
    monkeypatch.setattr(REGISTRY["maximum"], "kernel", broken)
    monkeypatch.setattr(REGISTRY["maximum"], "eager_kernel", broken)
    g2 = tfc.function(f, input_signature=[V, V])
    with pytest.raises(ValueError) as e:
        g2(ones(3), ones(3))
    assert str(e.value) == "maximum: the kernel failed (operands: float32[3], float32[3])"
    assert noted_line(e.value) == (__file__, line_of("maximum"))


def test_results_are_unchanged_when_nothing_fails():
    for fn, sig, args in CASES:
        good = [a[:3] if a.ndim == 1 else a for a in args]
        if fn is reshape:
            good = [ones(6), ones(1)]
        if fn is matmul:
            good = [ones(2, 3), ones(3, 2)]
        if fn is in_a_branch:
            good = [ones(2, 3), ones(2, 3)]
        if fn in (pad_reflect, pad_symmetric):
            good = [np.arange(5, dtype=F32), ones(1)]
        if fn is sigmoid_xent:
            good = [ones(5, 3) / 2, np.linspace(-2, 2, 15, dtype=F32).reshape(5, 3)]
        if fn is sparse_xent:
            good = [np.linspace(-2, 2, 15, dtype=F32).reshape(5, 3), np.array([0, 2, 1, 1, 0], np.int32)]
        want = fn(*[tfc.constant(a) for a in good]).numpy()
        np.testing.assert_array_equal(tfc.function(fn, input_signature=sig)(*good).numpy(), want)


def mismatching(*shapes_and_dtypes):
    return [np.ones(s, F32) if isinstance(s, tuple) else s for s in shapes_and_dtypes]


# Registry ops whose inference compares dims, each on run-time shapes it refuses
# (the signature: every dim None, so nothing could be checked when tracing)
MISMATCHED = [
    ("concat", lambda x, y: tfc.concat([x, y], axis=1), [(2, 3), (3, 3)]),
    ("stack", lambda x, y: tfc.stack([x, y]), [(3,), (4,)]),
    ("matmul", lambda x, y: tfc.matmul(x, y), [(2, 3), (4, 2)]),
    ("matmul batch", lambda x, y: tfc.matmul(x, y), [(2, 2, 3), (3, 3, 2)]),
    ("matmul transposed", lambda x, y: tfc.matmul(x, y, transpose_a=True), [(2, 3), (3, 2)]),
    ("pad REFLECT", lambda x: tfc.pad(x, [[0, 3]], mode="REFLECT"), [(3,)]),
    ("pad SYMMETRIC 2-d", lambda x: tfc.pad(x, [[0, 0], [4, 0]], mode="SYMMETRIC"), [(2, 3)]),
    ("sigmoid xent", lambda y, x: tfc.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=x), [(1, 3), (5, 3)]),
    ("sigmoid xent rank", lambda y, x: tfc.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=x), [(3, 1), (3, 3)]),
    ("sparse xent", lambda x, y: tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
     [(5, 3), np.zeros(1, np.int32)]),
    ("sparse xent logits", lambda x, y: tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
     [(1, 3), np.zeros(5, np.int32)]),
    ("where", lambda c, x, y: tfc.where(c, x, y), [np.ones(3, bool), (4,), (3,)]),
    ("clip_by_value", lambda x, lo: tfc.clip_by_value(x, lo, 1.0), [(3,), (4,)]),
    ("reshape", lambda x: tfc.reshape(x, [2, 3]), [(5,)]),
    ("squeeze", lambda x: tfc.squeeze(x, axis=0), [(2, 3)]),
    ("broadcast_to", lambda x: tfc.broadcast_to(x, [3]), [(2,)]),
    ("split", lambda x: tfc.split(x, 2)[0], [(3,)]),
    ("split sizes", lambda x: tfc.split(x, [1, 1])[0], [(3,)]),
    ("conv2d channels", lambda x, w: tfc.nn.conv2d(x, w, 1, "VALID"), [(1, 5, 5, 2), (3, 3, 3, 4)]),
    ("conv2d window", lambda x, w: tfc.nn.conv2d(x, w, 1, "VALID"), [(1, 2, 2, 1), (3, 3, 1, 1)]),
    ("max_pool2d", lambda x: tfc.nn.max_pool2d(x, 3, 1, "VALID"), [(1, 2, 2, 1)]),
    ("avg_pool2d", lambda x: tfc.nn.avg_pool2d(x, 3, 1, "VALID"), [(1, 2, 2, 1)]),
    ("getitem", lambda x: x[5], [(3,)]),
    ("getitem negative", lambda x: x[-5], [(3,)]),
    ("gather axis", lambda x, i: tfc.gather(x, i, axis=1), [(3, 2), np.array([2], np.int32)]),
]


@pytest.mark.parametrize("fn, args", [c[1:] for c in MISMATCHED], ids=[c[0] for c in MISMATCHED])
def test_ops_check_run_time_shapes_as_eager(fn, args):
    """Compiled with every dim unknown, each op refuses the run-time shapes
    eager refuses, with eager's error: no value where eager raises."""
    args = mismatching(*args)
    with pytest.raises(Exception) as eager:
        fn(*[tfc.constant(a) for a in args])
    sig = [tfc.TensorSpec((None,) * a.ndim, tfc.as_dtype(a.dtype)) for a in args]
    with pytest.raises(Exception) as compiled:
        tfc.function(fn, input_signature=sig)(*args)
    assert type(compiled.value) is type(eager.value)
    assert str(compiled.value) == str(eager.value)


def test_static_shapes_generate_no_run_time_check():
    """Inference checked static shapes when tracing: their code has no check."""
    sig = [tfc.TensorSpec((5, 3)), tfc.TensorSpec((5,), tfc.int32)]
    static = tfc.function(sparse_xent, input_signature=sig).get_concrete_function(*sig)
    assert "shape_check" not in static.source
    sig = [M, IV]
    dynamic = tfc.function(sparse_xent, input_signature=sig).get_concrete_function(*sig)
    assert "shape_check" in dynamic.generic.compiled.source  # the generic form (a call runs a specialization)
    assert "shape_check" not in dynamic.source  # the specialization to each None dimension 1


@pytest.mark.parametrize("index", [-4, 3, 7, [0, -4], [3]])
@pytest.mark.parametrize("shape", [[None], [3]])
def test_out_of_range_tensor_index_is_getitem_index_error_naming_the_users_index(index, shape):
    """x[i] with a tensor index outside [-n, n): eager's IndexError, naming the
    index the user wrote (compiled code gathered with the wrapped index, and
    raised gather's error naming that)."""
    x = np.arange(3, dtype=np.float32)
    i = np.array(index, np.int32)

    def f(x, i):
        return x[i]

    with pytest.raises(IndexError) as eager:
        f(tfc.constant(x), tfc.constant(i))
    compiled = tfc.function(f, input_signature=[tfc.TensorSpec(shape), tfc.TensorSpec(i.shape, tfc.int32)])
    with pytest.raises(IndexError) as got:
        compiled(x, i)
    assert str(eager.value).split(": ", 1)[1] in str(got.value)
    for ok in (np.full(i.shape, -3, np.int32), np.full(i.shape, 2, np.int32)):  # in range: as eagerly
        np.testing.assert_array_equal(compiled(x, ok).numpy(), f(tfc.constant(x), tfc.constant(ok)).numpy())
