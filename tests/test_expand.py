"""tfc-expand: softmax, log_softmax and the sparse cross-entropy become
reductions and elementwise ops (tfc/passes/expand.py), which fuse into
loops.parallel kernels; compiled results stay bit-identical to eager on the
numpy backend (random inputs, odd and zero sizes, every axis, float16/32/64,
inf/-inf/NaN rows, non-contiguous inputs); a bad label raises eager's error at
the user's line; the new ops carry the op's location; pick_along_last (the
logit at each label) on its own."""
import re

import numpy as np
import pytest
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp

import tfc
from tfc.backends.numpy import run_loops
from tfc.core.registry import REGISTRY
from tfc.dialects import tensor as T
from tfc.ops.nn import pick_along_last
from tfc.passes.expand import ExpandPass
from tfc.passes.lower_loops import lower_function
from tfc.passes.pipeline import run_pipeline

from helpers import check_grad

EXPANDED = ("softmax", "log_softmax", "sparse_softmax_cross_entropy_with_logits")
FLOATS = (np.float16, np.float32, np.float64)


def l1(fn, *args):
    """The optimized L1 module of ``fn`` traced for the shapes and dtypes of ``args``."""
    specs = [tfc.TensorSpec(np.shape(a), tfc.as_dtype(np.asarray(a).dtype)) for a in args]
    return tfc.function(fn).get_concrete_function(*specs).module


def expanded(module):
    m = module.clone()
    ExpandPass().apply(T.context(), m)
    m.verify()
    T.verify_dominance(m)
    return m


def loops(module):
    """L1 -> tfc-expand, tfc-cse, tfc-fuse, tfc-dce -> L3 (the fused stage as it
    will be once tfc-expand is in the pipeline)."""
    m = run_pipeline(expanded(module), ("tfc-cse", "tfc-fuse", "tfc-dce"))
    (f2,) = list(m.ops)
    f3, _, _ = lower_function(f2)
    out = ModuleOp([f3])
    out.verify()
    return out


def compiled(fn, *args):
    """``fn`` traced, expanded, fused, lowered and run by the numpy backend."""
    return run_loops(loops(l1(fn, *args)), list(args))


def check(fn, *args):
    """Compiled (expanded) results equal eager's to the bit (NaNs where eager's are)."""
    want = fn(*[tfc.constant(a) for a in args])
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    got = compiled(fn, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.numpy()
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        assert np.array_equal(g, w, equal_nan=True), np.argwhere(~((g == w) | (np.isnan(g) & np.isnan(w))))[:5]
        # the same bits, not only equal values (-0.0 and +0.0 compare equal)
        assert np.array_equal(np.signbit(g), np.signbit(w))
    return want


# library calls that are views of their operand (aliases in L3 once lowered as such)
VIEWS = {"reshape", "expand_dims", "squeeze"}


def library_calls(module):
    return [op.callee.data for op in module.walk() if op.name == "loops.library"]


def random_logits(rng, shape, dtype, scale=3.0):
    return (scale * rng.standard_normal(shape)).astype(dtype)


def softmax(x, axis=-1):
    return tfc.nn.softmax(x, axis=axis)


def log_softmax(x, axis=-1):
    return tfc.nn.log_softmax(x, axis=axis)


# -- the pass ---------------------------------------------------------------------------


def test_softmax_expands_to_reductions_and_elementwise_ops_at_its_location():
    x = np.zeros((8, 10), np.float32)
    m = expanded(l1(lambda x: tfc.nn.softmax(x), x))
    names = [op.name for op in m.walk() if op.name.startswith("tfc.")]
    assert names == ["tfc.reduce_max", "tfc.subtract", "tfc.exp", "tfc.reduce_sum", "tfc.divide"]
    locs = {(op.location.filename.data, op.location.line.data) for op in m.walk() if op.name.startswith("tfc.")}
    assert all(isinstance(op.location, FileLineColLoc) for op in m.walk() if op.name.startswith("tfc."))
    (loc,) = locs  # every new op has the softmax's location: this file, the lambda's line
    assert loc[0] == __file__


def test_every_expansion_keeps_types_and_leaves_no_composite():
    rng = np.random.default_rng(1)
    x = random_logits(rng, (5, 7), np.float64)
    labels = rng.integers(0, 7, 5).astype(np.int64)

    def f(labels, x):
        return (tfc.nn.softmax(x, axis=0), tfc.nn.log_softmax(x),
                tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, x))

    m = expanded(l1(f, labels, x))
    text = T.print_ir(m)
    for name in EXPANDED:
        assert f"tfc.{name} " not in text
    assert "tfc.pick_along_last" in text
    assert T.print_ir(T.parse_module(text)) == text  # the expansion prints and parses back


def test_dynamic_shapes_stay_whole():
    f = tfc.function(lambda x: tfc.nn.softmax(x), input_signature=[tfc.TensorSpec([None, 5], tfc.float32)])
    m = expanded(f.get_concrete_function().module)
    assert "tfc.softmax " in T.print_ir(m) and "tfc.reduce_max" not in T.print_ir(m)


def test_expansion_inside_cond_and_while_regions():
    rng = np.random.default_rng(2)
    x = random_logits(rng, (4, 9), np.float32)

    def f(x):
        y = tfc.cond(tfc.reduce_sum(x) > 0, lambda: tfc.nn.softmax(x), lambda: tfc.nn.log_softmax(x))

        def body(i, v):
            return i + 1, tfc.nn.softmax(v * 2.0, axis=0)
        _, z = tfc.while_loop(lambda i, v: i < 3, body, [tfc.constant(0), x])
        return y, z

    m = expanded(l1(f, x))
    text = T.print_ir(m)
    assert "tfc.cond" in text and "tfc.while" in text
    assert not re.search(r"tfc\.(log_)?softmax ", text)
    for sign in (1, -1):
        check(f, sign * x)


def test_the_pass_is_a_no_op_without_composites():
    x = np.ones((3, 4), np.float32)
    m = l1(lambda x: tfc.exp(x) + 1.0, x)
    assert T.print_ir(expanded(m)) == T.print_ir(m)


def test_l3_has_no_library_call_for_the_row_wise_ops():
    rng = np.random.default_rng(3)
    x = random_logits(rng, (64, 33), np.float32)
    labels = rng.integers(0, 33, 64).astype(np.int32)

    def f(labels, x):
        return (tfc.nn.softmax(x) * 2.0, tfc.nn.log_softmax(x + 1.0),
                tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, x)))

    m = loops(l1(f, labels, x))
    calls = library_calls(m)
    assert set(calls) <= VIEWS, calls
    text = T.print_ir(m)
    # the logit at each label: a checked indexed load (its error path raises eager's error)
    assert text.count("loops.load_at") == 1 and text.count('loops.raise "pick_along_last"') == 1
    assert text.count("loops.parallel") >= 6
    # the softmax's scale by 2 fuses into its divide; the log_softmax's input add into its kernels
    assert not any(c in calls for c in EXPANDED)


# -- bit-identical to eager -----------------------------------------------------------------


SHAPES_AXES = [
    ((7, 33), -1), ((7, 33), 0), ((1, 1), -1), ((1, 5), 0), ((13,), 0), ((3, 5, 7), 1), ((3, 5, 7), 0),
    ((3, 5, 7), 2), ((2, 3, 4, 5), 2), ((0, 5), -1), ((5, 0), -1), ((5, 0), 0), ((0,), 0), ((2, 0, 3), 1),
    ((1030, 1031), -1), ((1030, 1031), 0),  # more rows than one chunk, odd sizes
    ((100003,), 0),  # a full reduction of more than 2^14 elements: flat chunks summed in numpy's order
]


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, axis", SHAPES_AXES, ids=[f"{s}-{a}" for s, a in SHAPES_AXES])
@pytest.mark.parametrize("op", [softmax, log_softmax], ids=["softmax", "log_softmax"])
def test_row_ops_bitwise(op, shape, axis, dtype):
    rng = np.random.default_rng(abs(hash((shape, axis))) % 2**32)
    x = random_logits(rng, shape, dtype)
    check(lambda x: op(x, axis), x)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", [softmax, log_softmax], ids=["softmax", "log_softmax"])
def test_row_ops_special_values_bitwise(op, dtype):
    inf, nan = np.inf, np.nan
    x = np.array([
        [0.0, 1.0, 2.0, 3.0],
        [-inf, -inf, -inf, -inf],
        [-inf, 0.0, 1.0, -inf],
        [inf, 0.0, 1.0, 2.0],
        [inf, inf, 0.0, -inf],
        [nan, 0.0, 1.0, 2.0],
        [-0.0, 0.0, -0.0, 0.0],
        [60000.0, -60000.0, 1e-7, 0.0],
        [-1e300, 1e300, 5.0, 5.0],
    ]).astype(dtype)
    for axis in (-1, 0):
        out = check(lambda x: op(x, axis), x)[0].numpy()
        if axis == -1 and op is softmax:
            assert np.isnan(out[1]).all() and np.isnan(out[3]).all() and np.isnan(out[5]).all()
            assert out[2, 0] == 0 and out[2, 3] == 0


@pytest.mark.parametrize("op", [softmax, log_softmax], ids=["softmax", "log_softmax"])
def test_row_ops_non_contiguous_inputs_bitwise(op):
    rng = np.random.default_rng(4)
    base = random_logits(rng, (37, 41), np.float32)
    for x in (base.T, base[::2, 1::3], base[:, ::-1], np.broadcast_to(base[:1], (9, 41))):
        assert not x.flags.c_contiguous
        for axis in (-1, 0):
            check(lambda x: op(x, axis), x)


def test_row_ops_fused_with_producers_and_consumers_bitwise():
    rng = np.random.default_rng(5)
    x = random_logits(rng, (129, 65), np.float32)
    b = random_logits(rng, (65,), np.float32)

    def f(x, b):
        y = tfc.nn.softmax(x * 0.5 + b)
        return y * 3.0 - 1.0, tfc.nn.log_softmax(tfc.tanh(x), axis=0) + b

    check(f, x, b)


# -- the sparse cross-entropy -------------------------------------------------------------


def xent(labels, logits):
    return tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)


XENT_SHAPES = [(7, 33), (1, 1), (13,), (3, 4, 5), (0, 5), (0, 0), (2, 0, 3), (1030, 1031), (100003,)]


@pytest.mark.parametrize("label_dtype", (np.int32, np.int64), ids=("int32", "int64"))
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", XENT_SHAPES, ids=str)
def test_sparse_xent_bitwise(shape, dtype, label_dtype):
    rng = np.random.default_rng(sum(shape) + 7)
    logits = random_logits(rng, shape, dtype)
    labels = rng.integers(0, max(shape[-1], 1), shape[:-1]).astype(label_dtype)
    check(xent, labels, logits)


def test_sparse_xent_special_values_and_non_contiguous_bitwise():
    inf, nan = np.inf, np.nan
    logits = np.array([
        [0.0, 1.0, 2.0], [-inf, 0.0, 1.0], [-inf, -inf, -inf], [inf, 0.0, 0.0], [nan, 0.0, 0.0],
        [5.0, 5.0, 5.0], [0.0, -inf, 0.0], [1e30, -1e30, 0.0],
    ], np.float32)
    labels = np.array([2, 0, 1, 1, 2, 0, 1, 2], np.int32)
    out = check(xent, labels, logits)[0].numpy()
    assert out[1] == np.inf and out[6] == np.inf and np.isnan(out[2]) and np.isnan(out[4])
    rng = np.random.default_rng(6)
    base = random_logits(rng, (40, 23), np.float64)
    for x in (base.T, base[::3, ::2]):
        labels = rng.integers(0, x.shape[-1], x.shape[0]).astype(np.int32)
        check(xent, labels, x)
    check(xent, labels[::-1], np.ascontiguousarray(x))  # non-contiguous labels


def test_sparse_xent_loss_and_gradient_bitwise():
    """The training step's loss and gradient (the gradient's softmax expanded
    too, sharing the loss's max and sum after CSE)."""
    rng = np.random.default_rng(7)
    logits = random_logits(rng, (515, 33), np.float32)
    labels = rng.integers(0, 33, 515).astype(np.int32)

    def f(labels, logits):
        with tfc.GradientTape() as tape:
            tape.watch(logits)
            loss = tfc.reduce_mean(xent(labels, logits))
        return loss, tape.gradient(loss, logits)

    check(f, labels, logits)
    m = loops(l1(f, labels, logits))
    assert set(library_calls(m)) <= VIEWS, library_calls(m)
    assert T.print_ir(m).count('reduce = ["max"]') == 1  # one max for the loss and the gradient


def test_bad_labels_raise_eagers_error_at_the_users_line():
    logits = np.zeros((6, 4), np.float32)
    labels = np.array([0, 4, 1, -1, 3, 9], np.int32)

    def f(labels, logits):
        return tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, logits) * 2.0  # line: bad labels

    with pytest.raises(tfc.errors.InvalidArgumentError) as eager:
        f(tfc.constant(labels), tfc.constant(logits))
    assert "labels must be in [0, 4) for logits with 4 classes, got [4, -1, 9]" in str(eager.value)
    with pytest.raises(tfc.errors.InvalidArgumentError) as got:
        compiled(f, labels, logits)
    assert str(got.value) == str(eager.value)
    line = next(i + 1 for i, s in enumerate(open(__file__).read().splitlines()) if s.endswith("# line: bad labels"))
    notes = "\n".join(getattr(got.value, "__notes__", []))
    assert f"{__file__}:{line}" in notes, notes


def test_bad_label_with_no_classes():
    with pytest.raises(tfc.errors.InvalidArgumentError, match=r"labels must be in \[0, 0\)"):
        xent(tfc.constant([0]), tfc.zeros([1, 0]))
    with pytest.raises(tfc.errors.InvalidArgumentError, match=r"labels must be in \[0, 0\)"):
        compiled(xent, np.zeros(1, np.int32), np.zeros((1, 0), np.float32))


# -- pick_along_last ------------------------------------------------------------------------


def test_pick_along_last():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    labels = np.array([[0, 3, 1], [2, 2, 0]], np.int64)
    got = pick_along_last(x, labels).numpy()
    np.testing.assert_array_equal(got, np.take_along_axis(x, labels[..., None], -1)[..., 0])
    assert got.dtype == np.float32
    assert pick_along_last(np.array([5, 6, 7], np.int32), np.array(2)).numpy() == 7  # any numeric x
    assert pick_along_last(np.zeros((0, 3)), np.zeros(0, np.int32)).shape == (0,)
    with pytest.raises(tfc.errors.InvalidArgumentError, match=r"labels must be in \[0, 4\).*\[4\]"):
        pick_along_last(x, labels + 1)
    with pytest.raises(ValueError, match="rank one more than labels"):
        pick_along_last(x, labels[0])
    with pytest.raises(TypeError):
        pick_along_last(x, labels.astype(np.float32))
    check(lambda x, labels: pick_along_last(x, labels), x, labels)


@pytest.mark.parametrize("label_dtype", (np.int8, np.int32, np.int64), ids=("int8", "int32", "int64"))
def test_pick_along_last_lowered_bitwise_and_checked(label_dtype):
    """L3: a reduction checks the labels, loops.load_at reads the picked
    elements; values, the edges of the range, 0-d and empty labels, strided
    operands; a bad label is eager's error."""
    rng = np.random.default_rng(12)
    pick = lambda x, labels: pick_along_last(x, labels)  # noqa: E731
    x = random_logits(rng, (5, 4, 7), np.float32)
    labels = rng.integers(0, 7, (5, 4)).astype(label_dtype)
    labels[0, 0], labels[-1, -1] = 0, 6
    check(pick, x, labels)
    check(pick, x[:, ::2, ::-1], labels[:, 1::2])
    check(pick, x[0, 0], np.array(3, label_dtype))
    check(pick, x[:0], labels[:0])
    check(pick, x.astype(np.int64), labels)
    assert library_calls(loops(l1(pick, x, labels))) == []
    for bad in (7, -1):
        worse = labels.copy()
        worse[2, 1] = bad
        with pytest.raises(tfc.errors.InvalidArgumentError) as eager:
            pick(tfc.constant(x), tfc.constant(worse))
        with pytest.raises(tfc.errors.InvalidArgumentError) as got:
            compiled(pick, x, worse)
        assert str(got.value) == str(eager.value) and f"got [{bad}]" in str(got.value)
    with pytest.raises(tfc.errors.InvalidArgumentError, match=r"labels must be in \[0, 7\) .*got \[9\]"):
        compiled(pick, x[0, 0], np.array(9, label_dtype))


def test_pick_along_last_gradient():
    labels = np.array([2, 0, 1], np.int32)
    check_grad(lambda x: pick_along_last(x, labels) * tfc.constant([1.0, -2.0, 3.0], tfc.float64),
               np.random.default_rng(8).standard_normal((3, 4)))


def test_expand_declarations():
    for name in EXPANDED:
        assert REGISTRY[name].expand is not None and REGISTRY[name].scalar is None
    assert REGISTRY["pick_along_last"].expand is None


@pytest.mark.parametrize("op", [softmax, log_softmax], ids=["softmax", "log_softmax"])
def test_row_chunked_library_kernel_is_the_whole_calls(op):
    """Where the op stays whole (run-time shapes), its kernel (the expansion on
    arrays) runs on chunks of rows: every chunk gives the whole call's bits."""
    rng = np.random.default_rng(9)
    x = random_logits(rng, (1200, 1001), np.float32)
    whole = REGISTRY[op.__name__].kernel(x, axis=-1)
    parts = np.concatenate([REGISTRY[op.__name__].kernel(x[lo:lo + 173], axis=-1) for lo in range(0, 1200, 173)])
    assert np.array_equal(whole, parts)


# -- through tfc.function ---------------------------------------------------------------------


@pytest.fixture
def wired(monkeypatch):
    """tfc.function with tfc-expand first in the fused stop (where
    tfc/passes/pipeline.py puts it), and no disk cache (its key does not see
    the pass list)."""
    from tfc.passes import pipeline as P

    if "tfc-expand" not in P.PASSES:
        monkeypatch.setitem(P.PASSES, "tfc-expand", lambda: ExpandPass)
        monkeypatch.setitem(P.DESCRIPTIONS, "tfc-expand", "composite ops become reductions and elementwise ops")
    if "tfc-expand" not in dict(P.PIPELINE)["fused"]:
        monkeypatch.setattr(P, "PIPELINE", tuple(
            (stop, ("tfc-expand",) + names if stop == "fused" else names) for stop, names in P.PIPELINE))
    monkeypatch.setenv("TFC_CACHE_DIR", "")


def test_tfc_function_bitwise_and_without_library_calls(wired):
    rng = np.random.default_rng(10)
    x = random_logits(rng, (300, 97), np.float32)
    labels = rng.integers(0, 97, 300).astype(np.int64)

    def f(labels, x):
        with tfc.GradientTape() as tape:
            tape.watch(x)
            loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, x))
        return tfc.nn.softmax(x, axis=0), tfc.nn.log_softmax(x * 2.0), loss, tape.gradient(loss, x)

    g = tfc.function(f)
    want = f(tfc.constant(labels), tfc.constant(x))
    got = g(labels, x)
    for a, b in zip(got, want):
        assert np.array_equal(a.numpy(), b.numpy())
    text = g.get_concrete_function(labels, x).ir("loops")
    calls = re.findall(r'loops\.library "(\w+)"', text)
    assert set(calls) <= VIEWS, calls


def test_tfc_function_bad_labels_error_at_the_users_line(wired):
    def f(labels, x):
        return tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, x)  # line: tfc.function labels

    labels, x = np.array([1, 7, 0], np.int32), np.zeros((3, 5), np.float32)
    with pytest.raises(tfc.errors.InvalidArgumentError) as eager:
        f(tfc.constant(labels), tfc.constant(x))
    g = tfc.function(f)
    assert 'loops.raise "pick_along_last"' in g.get_concrete_function(labels, x).ir("loops")
    with pytest.raises(tfc.errors.InvalidArgumentError) as got:
        g(labels, x)
    assert str(got.value) == str(eager.value)
    line = next(i + 1 for i, s in enumerate(open(__file__).read().splitlines())
                if s.endswith("# line: tfc.function labels"))
    assert any(n.startswith(f"  at {__file__}:{line}") for n in got.value.__notes__), got.value.__notes__


# -- the builders ---------------------------------------------------------------------------


def _scaled_softmax(b, x, axis):
    # a test expansion with a constant: softmax(2x) = exp(2x - max(2x)) / sum(...)
    from tfc.ops.nn import _softmax_expand

    return _softmax_expand(b, b.multiply(x, b.constant(2.0, b_dtype(b, x))), axis)


def b_dtype(b, x):
    from tfc.dialects.tensor import spec_of

    return tfc.as_dtype(x.dtype) if isinstance(x, np.ndarray) else spec_of(x.type).dtype


def test_builders_agree_on_an_expansion_with_a_constant(monkeypatch):
    from tfc.ops._expand import eager_kernel

    op = REGISTRY["softmax"]
    monkeypatch.setattr(op, "expand", _scaled_softmax)
    monkeypatch.setattr(op, "eager_kernel", eager_kernel(_scaled_softmax))
    x = random_logits(np.random.default_rng(11), (6, 9), np.float16)
    m = expanded(l1(lambda x: tfc.nn.softmax(x), x))
    text = T.print_ir(m)
    assert "tfc.constant dense<2.000000e+00> : tensor<f16>" in text and "tfc.multiply" in text
    got = run_loops(loops(l1(lambda x: tfc.nn.softmax(x), x)), [x])[0]
    want = tfc.nn.softmax(tfc.constant(x)).numpy()
    assert np.array_equal(got, want) and want.dtype == np.float16
    assert np.array_equal(want, REGISTRY["softmax"].kernel(2 * x, axis=-1))


def test_builders_refuse_unknown_ops_and_attributes():
    from tfc.ops._expand import ARRAYS
    from tfc.passes.expand import IRBuilder

    x = np.ones((2, 3), np.float32)
    with pytest.raises(AttributeError, match="no registry op named 'no_such_op'"):
        ARRAYS.no_such_op(x)
    with pytest.raises(TypeError, match=r"unknown attributes \['axes'\]"):
        ARRAYS.reduce_sum(x, axes=(1,))
    m = l1(lambda x: tfc.nn.softmax(x), x)
    (sm,) = [op for op in m.walk() if op.name == "tfc.softmax"]
    b = IRBuilder(sm)
    with pytest.raises(AttributeError, match="no registry op named 'no_such_op'"):
        b.no_such_op(sm.operands[0])
    with pytest.raises(TypeError, match=r"unknown attributes \['axes'\]"):
        b.reduce_sum(sm.operands[0], axes=(1,))
    assert b.shape(sm.operands[0]) == (2, 3) and b.made == []


def test_array_builder_conforms_dtypes_and_runs_multi_result_ops():
    from tfc.ops._expand import ARRAYS

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    s = ARRAYS.reduce_sum(x[0], axis=(0,), keepdims=False)  # numpy gives a scalar: an array here
    assert type(s) is np.ndarray and s.shape == () and s.dtype == np.float32
    parts = ARRAYS.split(x, num=3, axis=1)  # a multi-result op: a list of arrays
    assert [p.shape for p in parts] == [(2, 1)] * 3 and all(p.dtype == np.float32 for p in parts)
    i = ARRAYS.cast(x, dtype=tfc.int32)
    assert i.dtype == np.int32
    # the result takes the op's inferred dtype where the kernel's differs
    assert ARRAYS.divide(np.array([1, 2], np.int32), np.array([2, 4], np.int32)).dtype == \
        tfc.divide(tfc.constant([1, 2]), tfc.constant([2, 4])).numpy().dtype
