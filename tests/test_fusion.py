"""tfc-fuse: differential tests. Random L1 functions (hypothesis: elementwise,
broadcast and reduction ops over float32 or int32) and traced programs run
through the reference executor before and after fusion on the same random
inputs must agree (float32 to a tight tolerance, integers exactly)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region

import tfc
from tfc.backends.reference import run
from tfc.core import dtypes
from tfc.dialects import tensor as T
from tfc.passes.pipeline import FUSED, run_pipeline

SHAPES = [(3, 4), (4,), (3, 1), (), (1, 4)]
FLOAT_UNARY = ["exp", "log", "tanh", "sigmoid", "softplus", "sqrt", "sin", "negative", "abs", "square",
               "relu", "floor", "rsqrt", "expm1", "log1p", "round", "sign", "identity"]
INT_UNARY = ["negative", "abs", "square", "relu", "sign", "identity"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "divide", "floordiv", "mod"]
FLOAT_BINARY = BINARY + ["pow"]
CMP = ["less", "greater_equal", "equal", "not_equal"]
REDUCE = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_mean"]


def _count(module, name):
    return sum(1 for op in module.walk() if op.name == name)


def _fused(module):
    after = module.clone()
    run_pipeline(after, FUSED)
    return after


def _compare(before, after, args):
    for b, a in zip(run(before, args), run(after, args)):
        assert a.dtype == b.dtype and a.shape == b.shape
        if b.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)  # summation order
        else:
            np.testing.assert_array_equal(a, b)


@st.composite
def programs(draw):
    """(module, input arrays): a random function of three inputs."""
    dt = draw(st.sampled_from([dtypes.float32, dtypes.int32]))
    shapes = [draw(st.sampled_from(SHAPES)) for _ in range(3)]
    block = Block(arg_types=[T.tensor_type(s, dt) for s in shapes])
    values = list(block.args)
    unary = FLOAT_UNARY if dt.is_floating else INT_UNARY
    binary = FLOAT_BINARY if dt.is_floating else BINARY
    n_ops = draw(st.integers(1, 12))
    for _ in range(n_ops):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "where", "reduce", "cast", "broadcast"]))
        # prefer recent values, so chains form
        pick = lambda: values[-1 - draw(st.integers(0, min(3, len(values) - 1)))]  # noqa: E731
        same = [v for v in values if T.spec_of(v.type).dtype == dt]
        try:
            if kind == "unary":
                op = T.build_op(draw(st.sampled_from(unary)), [pick()])
            elif kind == "binary":
                op = T.build_op(draw(st.sampled_from(binary)), [pick(), pick()])
            elif kind == "where":
                c = T.build_op(draw(st.sampled_from(CMP)), [pick(), pick()])
                block.add_op(c)
                op = T.build_op("where", [c.results[0], pick(), pick()])
            elif kind == "reduce":
                x = pick()
                rank = len(T.spec_of(x.type).shape)
                axis = draw(st.one_of(st.none(), st.lists(st.integers(-rank, rank - 1), min_size=1,
                                                           max_size=rank, unique=True))) if rank else None
                op = T.build_op(draw(st.sampled_from(REDUCE)), [x],
                                {"axis": axis, "keepdims": draw(st.booleans())})
            elif kind == "cast":
                to = draw(st.sampled_from([dtypes.float32, dtypes.int32, dtypes.float64, dtypes.bool_]))
                c = T.build_op("cast", [pick()], {"dtype": to})
                block.add_op(c)
                op = T.build_op("cast", [c.results[0]], {"dtype": dt})
            else:
                op = T.build_op("broadcast_to", [pick()], {"shape": (2, 3, 4)})
        except (TypeError, ValueError):  # shapes or dtypes that do not combine
            continue
        if any(T.spec_of(r.type).dtype != dt for r in op.results) and kind != "where":
            continue
        block.add_op(op)
        values.append(op.results[0])
    outs = [values[-1]] + [v for v in values[3:-1] if draw(st.booleans()) and draw(st.booleans())]
    block.add_op(func.ReturnOp(*outs))
    f = func.FuncOp("f", ([a.type for a in block.args], [v.type for v in outs]), Region(block))
    module = ModuleOp([f])
    module.verify()
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if dt.is_floating:
        args = [rng.normal(scale=2.0, size=s).astype(np.float32) for s in shapes]
    else:
        args = [rng.integers(-20, 20, size=s, endpoint=True).astype(np.int32) for s in shapes]
    return module, args


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs(prog):
    module, args = prog
    after = _fused(module)
    for op in after.walk():  # every elementwise op and reduction went into a kernel
        if isinstance(op, T.RegistryOp):
            assert op.OPDEF.name.startswith("reduce_") and T.spec_of(op.operands[0].type).shape == (), op.name
    _compare(module, after, args)
    # prints and parses back to the same text
    text = T.print_ir(after)
    assert T.print_ir(T.parse_module(text)) == text


def _traced(fn, *arrays):
    f = tfc.function(fn)
    conc = f.get_concrete_function(*(tfc.constant(a) for a in arrays))
    return f, conc


def test_gelu_is_one_kernel():
    def gelu(x):
        return 0.5 * x * (1 + tfc.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

    x = np.random.default_rng(0).normal(size=(4, 16)).astype(np.float32)
    f, conc = _traced(gelu, x)
    fused = conc.fused_module
    assert _count(fused, "tfc.fused") == 1 and "math.tanh" in conc.ir("fused")
    assert not any(isinstance(op, T.RegistryOp) for op in fused.walk())
    _compare(conc.module, fused, [x])
    want = 0.5 * x * (1 + np.tanh(np.float32(0.7978845608) * (x + np.float32(0.044715) * x ** 3)))
    np.testing.assert_allclose(run(fused, [x])[0], want, rtol=1e-5, atol=1e-6)


def test_dense_bias_relu():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 8)).astype(np.float32)
    w = rng.normal(size=(8, 3)).astype(np.float32)
    b = rng.normal(size=(3,)).astype(np.float32)
    f, conc = _traced(lambda x, w, b: tfc.nn.relu(tfc.matmul(x, w) + b), x, w, b)
    fused = conc.fused_module
    assert _count(fused, "tfc.matmul") == 1 and _count(fused, "tfc.fused") == 1
    _compare(conc.module, fused, [x, w, b])
    np.testing.assert_allclose(run(fused, [x, w, b])[0], np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)


def test_softmax_by_hand_and_mean_square():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(6, 10)).astype(np.float32)

    def f(x):
        e = tfc.exp(x - tfc.reduce_max(x, axis=1, keepdims=True))
        p = e / tfc.reduce_sum(e, axis=1, keepdims=True)
        return p, tfc.reduce_mean(tfc.square(x - 1.0))

    _, conc = _traced(f, x)
    fused = conc.fused_module
    assert not any(op.name.startswith("tfc.reduce") for op in fused.walk())
    assert 'reduce = ["mean"]' in conc.ir("fused")
    _compare(conc.module, fused, [x])


def test_integer_kernels_wrap_like_eager():
    x = np.array([2**30, -(2**31), 7, -7], np.int32)
    y = np.array([4, 2, -2, 0], np.int32)

    def f(x, y):
        return (x * y + x) // 3 % 5, tfc.reduce_sum(x * 2)

    eager = [t.numpy() for t in f(tfc.constant(x), tfc.constant(y))]
    _, conc = _traced(f, x, y)
    fused = conc.fused_module
    for got, want in zip(run(fused, [x, y]), eager):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_fused_stage_of_a_function():
    @tfc.function
    def f(x):
        return tfc.sigmoid(x) * 2.0

    x = tfc.constant([[1.0, -2.0]])
    conc = f.get_concrete_function(x)
    assert "tfc.fused" in conc.ir("fused") and "tfc.fused" not in conc.ir("tensor")
    np.testing.assert_allclose(f(x).numpy(), 2 / (1 + np.exp(-x.numpy())), rtol=1e-6)


def test_dynamic_shapes_stay_l1():
    src = """func.func @f(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
      %e = tfc.exp %x : (tensor<?x3xf32>) -> tensor<?x3xf32>
      func.return %e : tensor<?x3xf32>
    }"""
    m = T.parse_module(src)
    after = _fused(m)
    assert _count(after, "tfc.exp") == 1 and _count(after, "tfc.fused") == 0


@pytest.mark.parametrize("seed", range(3))
def test_passes_program_fused(seed):
    """The test_passes program (variables, transposes, reshapes) after L1 + fusion."""
    from tests.test_passes import PROGRAM, _run

    before = T.parse_module(PROGRAM)
    after = T.parse_module(PROGRAM)
    run_pipeline(after)
    run_pipeline(after, FUSED)
    assert _count(after, "tfc.fused") >= 1
    for b, a in zip(_run(before, seed), _run(after, seed)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_training_step_fused():
    """A traced training step (tape gradients, variables, sigmoid loss) runs the
    same before and after fusion."""
    from tfc.backends.reference import Cell, Executor

    rng = np.random.default_rng(3)
    w = tfc.Variable(rng.normal(size=(4, 2)).astype(np.float32))
    b = tfc.Variable(np.zeros(2, np.float32))

    @tfc.function
    def step(x, y):
        with tfc.GradientTape() as tape:
            logits = tfc.matmul(x, w) + b
            loss = tfc.reduce_mean(tfc.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
        return loss

    x = rng.normal(size=(8, 4)).astype(np.float32)
    y = (rng.random(size=(8, 2)) > 0.5).astype(np.float32)
    conc = step.get_concrete_function(tfc.constant(x), tfc.constant(y))
    assert _count(conc.fused_module, "tfc.fused") >= 2
    results = []
    for module in (conc.module, conc.fused_module):
        cells = [Cell(w.numpy()), Cell(b.numpy())]
        out = Executor(module).call(conc.name, [x, y] + cells)
        results.append(out + [c.value for c in cells])
    for a, e in zip(*results):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


def _output_layer(kind):
    reduce = {"sum": tfc.reduce_sum, "mean": tfc.reduce_mean}[kind]

    def f(z, b, x):
        y = tfc.sigmoid(z + b)
        e = y - x
        return reduce(tfc.square(e)), e * y * (1.0 - y)

    return f


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["sum", "mean"])
@pytest.mark.parametrize("b_shape", [(37,), (1, 37), ()])
def test_multi_output_kernel_is_eager_to_the_bit(dtype, kind, b_shape):
    """A loss and the gradient of its output layer: one kernel with an
    elementwise result and a sum, run as flat chunks (the bias tiled) with the
    sum in numpy's pairwise order, so compiled equals eager bit for bit."""
    rng = np.random.default_rng(3)
    z = rng.normal(size=(1001, 37)).astype(dtype)  # 37037 elements: several chunks, none row-aligned
    b = rng.normal(size=b_shape).astype(dtype)
    x = rng.random((1001, 37)).astype(dtype)
    f = _output_layer(kind)
    compiled = tfc.function(f)
    got = compiled(z, b, x)
    want = f(tfc.constant(z), tfc.constant(b), tfc.constant(x))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    conc = compiled.get_concrete_function(z, b, x)
    (kernel,) = [op for op in conc.fused_module.walk() if op.name == "tfc.fused"]
    assert sorted(kernel.reduce_kinds, key=str) == sorted([kind, None], key=str)
    assert "R.tree_sum" in conc.source
    if b_shape == (37,) or b_shape == (1, 37):
        assert "% 37" in conc.source  # the bias read at flat index i % 37


def test_multi_output_kernel_writes_in_place_and_keeps_working():
    """The elementwise result of a merged kernel may take a dying input's
    buffer (here the matmul's); repeated calls with new inputs stay exact."""
    rng = np.random.default_rng(4)
    w = rng.normal(size=(16, 200)).astype(np.float32)

    def f(h, b, x):
        return _output_layer("sum")(tfc.matmul(h, w), b, x)

    compiled = tfc.function(f)
    for seed in range(3):
        r = np.random.default_rng(seed)
        h, b, x = (r.normal(size=s).astype(np.float32) for s in [(300, 16), (200,), (300, 200)])
        for g, e in zip(compiled(h, b, x), f(tfc.constant(h), tfc.constant(b), tfc.constant(x))):
            np.testing.assert_array_equal(g.numpy(), e.numpy())
    plan = compiled.get_concrete_function(h, b, x).memory_plan
    assert len(plan.buffers) == 2, plan  # the matmul result (the gradient in place) and the sum


def test_large_sum_of_a_body_ignoring_its_input():
    """ones_like's body is a constant: a chunked sum of it must still count
    every element (np.add.reduce of a scalar is the scalar)."""
    x = np.zeros((128, 128), np.float32)  # 2^14 elements: the chunked path
    s = np.array(2.0, np.float32)
    for f, args in [(lambda x: tfc.reduce_sum(tfc.ones_like(x)), (x,)),
                    (lambda x, s: tfc.reduce_mean(s + tfc.zeros_like(x)), (x, s))]:
        want = f(*(tfc.constant(a) for a in args)).numpy()
        np.testing.assert_array_equal(tfc.function(f)(*args).numpy(), want)


def test_merges_respect_the_order_of_effects():
    """A kernel read before an ordered op (assign, print, a random draw, a
    tensor if) and one read after it do not merge into a kernel that would
    have to run both before and after it."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    v = tfc.Variable(np.zeros((3, 4), np.float32))

    def assign_then_read(x):
        a = tfc.exp(x)
        v.assign(a)
        return a + v.read_value()

    def print_then_draw(x):
        a = tfc.exp(x)
        tfc.print(a)
        return a + tfc.random.normal([3, 4], seed=7)

    def two_ifs(x, p):
        a = tfc.exp(x)
        if p > 0:
            s = a * 2.0
        else:
            s = a * 3.0
        if p > 1:
            t = x + 1.0
        else:
            t = x - 1.0
        return a + t, s

    for f, args in [(assign_then_read, (x,)), (print_then_draw, (x,)),
                    (two_ifs, (x, np.array(1.5, np.float32)))]:
        compiled = tfc.function(f)
        got = compiled(*args)
        assert got is not None
        if f is print_then_draw:
            continue  # the draw's stream differs between calls; compiling and ordering is the point
        want = f(*(tfc.constant(a) for a in args))
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_a_full_size_input_with_a_size_one_dim_is_not_tiled():
    x = np.random.default_rng(5).random((1, 20000)).astype(np.float32)

    def f(x):
        e = tfc.exp(x)
        return tfc.reduce_sum(tfc.square(e)), e * 2.0

    compiled = tfc.function(f)
    for g, w in zip(compiled(x), f(tfc.constant(x))):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    source = compiled.get_concrete_function(x).source
    assert "R.tree_sum" in source and "np.tile" not in source
