"""Each pass: differential tests (random inputs, the IR before and after through
the reference executor must agree) plus the rewrites it must (not) do."""
import numpy as np
import pytest

import tfc
from tfc.backends.reference import Cell, run
from tfc.dialects import tensor as T
from tfc.passes.pipeline import DEFAULT_L1, FUSED, LOOPS, NEEDS_OPTIONS, PASSES, run_pipeline

PROGRAM = '''
func.func @f(%x: tensor<4x3xf32>, %y: tensor<3xf32>, %n: tensor<4x3xi32>, %v: !tfc.ref<tensor<3xf32>>)
    -> (tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xi32>, tensor<3x4xf32>, tensor<12xf32>) {
  %one = tfc.constant dense<1.0> : tensor<f32>
  %zero = tfc.constant dense<0.0> : tensor<4x3xf32>
  %two = tfc.constant dense<2.0> : tensor<f32>
  %three = tfc.constant dense<3.0> : tensor<f32>
  %c1 = tfc.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %c2 = tfc.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %cc = tfc.multiply %c1, %c2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %e1 = tfc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %e2 = tfc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %m = tfc.multiply %e1, %one : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %a = tfc.add %m, %zero : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %p2 = tfc.pow %a, %two : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %p3 = tfc.pow %e2, %three : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %s = tfc.subtract %p2, %p3 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = tfc.read_variable %v : !tfc.ref<tensor<3xf32>> -> tensor<3xf32>
  %ry = tfc.add %r, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %rc = tfc.multiply %ry, %cc : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  tfc.assign_variable %v, %rc : !tfc.ref<tensor<3xf32>>, tensor<3xf32>
  %r2 = tfc.read_variable %v : !tfc.ref<tensor<3xf32>> -> tensor<3xf32>
  %nn = tfc.subtract %n, %n : (tensor<4x3xi32>, tensor<4x3xi32>) -> tensor<4x3xi32>
  %n2 = tfc.add %nn, %n : (tensor<4x3xi32>, tensor<4x3xi32>) -> tensor<4x3xi32>
  %t1 = tfc.transpose %s : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %t2 = tfc.transpose %t1 : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %t3 = tfc.transpose %t2 : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %q1 = tfc.reshape %t3 {shape = array<i64: 2, 6>} : (tensor<3x4xf32>) -> tensor<2x6xf32>
  %q2 = tfc.reshape %q1 {shape = array<i64: -1>} : (tensor<2x6xf32>) -> tensor<12xf32>
  %dead = tfc.log %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %r2, %t2, %n2, %t3, %q2 : tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xi32>, tensor<3x4xf32>, tensor<12xf32>
}
'''


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32),
            rng.integers(-50, 50, size=(4, 3)).astype(np.int32), rng.normal(size=3).astype(np.float32))


def _run(module, seed):
    x, y, n, v = _inputs(seed)
    cell = Cell(v)
    if any(op.name.startswith("loops.") for op in module.walk()):  # L3: the numpy backend runs it
        from tfc.backends.numpy import run_loops

        outs = run_loops(module, [x, y, n, cell])
    else:
        outs = run(module, [x, y, n, cell])
    return outs + [cell.value]


def _count(module, name):
    return sum(1 for op in module.walk() if op.name == name)


# the passes that take tensor IR; tfc-lower-gpu takes L3 (its differential tests: test_lower_gpu.py)
@pytest.mark.parametrize("passes", [[p] for p in sorted(PASSES) if p not in NEEDS_OPTIONS + ("tfc-lower-gpu",)]
                         + [list(DEFAULT_L1)] + [list(DEFAULT_L1 + FUSED + LOOPS)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_differential(passes, seed):
    before = T.parse_module(PROGRAM)
    after = T.parse_module(PROGRAM)
    run_pipeline(after, passes)
    for b, a in zip(_run(before, seed), _run(after, seed)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        assert a.dtype == b.dtype and a.shape == b.shape


def test_default_pipeline_effects():
    m = T.parse_module(PROGRAM)
    run_pipeline(m)
    text = T.print_ir(m)
    assert _count(m, "tfc.pow") == 1          # x**2 -> x*x; x**3 stays (exactness vs eager)
    assert _count(m, "tfc.exp") == 1          # CSE
    assert _count(m, "tfc.log") == 0          # DCE
    assert _count(m, "tfc.read_variable") == 2  # an assign separates the reads
    assert _count(m, "tfc.assign_variable") == 1
    assert _count(m, "tfc.transpose") == 1 and _count(m, "tfc.reshape") == 1
    assert "dense<[5.000000e-01, 5.000000e-01, 3.750000e-01]>" in text  # folded c1 * c2


def test_fold_skips_stateful_ops(monkeypatch):
    from tfc.core.registry import REGISTRY

    src = """func.func @f() -> tensor<2xf32> {
      %c = tfc.constant dense<1.0> : tensor<2xf32>
      %e = tfc.exp %c : (tensor<2xf32>) -> tensor<2xf32>
      func.return %e : tensor<2xf32>
    }"""
    monkeypatch.setattr(REGISTRY["exp"], "stateful", True)
    m = T.parse_module(src)
    run_pipeline(m, ["tfc-fold"])
    assert _count(m, "tfc.exp") == 1
    monkeypatch.setattr(REGISTRY["exp"], "stateful", False)
    run_pipeline(m, ["tfc-fold"])
    assert _count(m, "tfc.exp") == 0
    np.testing.assert_allclose(run(m, [])[0], np.exp([1.0, 1.0]), rtol=1e-6)


def test_cse_does_not_merge_stateful_registry_ops():
    from xdsl.traits import Pure

    from tfc.core.registry import REGISTRY

    for name, opdef in REGISTRY.items():
        has_pure = T.op_class(name).has_trait(Pure)
        assert has_pure == (not opdef.stateful), name


def test_compiled_function_uses_the_pipeline():
    @tfc.function
    def f(x):
        return tfc.transpose(tfc.transpose(x)) * 1.0 + tfc.exp(x) + tfc.exp(x)

    conc = f.get_concrete_function(tfc.constant([[1.0, 2.0]]))
    assert "tfc.transpose" not in conc.ir() and conc.ir().count("tfc.exp") == 1
    assert "tfc.transpose" in conc.ir("tensor-raw")
    x = np.array([[1.0, 2.0]], np.float32)
    np.testing.assert_allclose(f(tfc.constant(x)).numpy(), x + 2 * np.exp(x), rtol=1e-6)


def test_adding_zero_keeps_eagers_signed_zero():
    """x + 0.0 is +0.0 where x is -0.0: simplify must not drop it (nor x - (-0.0))."""
    import tfc

    def f(x):
        return x + 0.0, x - (-0.0), x - 0.0, x + (-0.0)

    x = np.array([-0.0, 0.0, 1.0], np.float32)
    for got, want in zip(tfc.function(f)(x), f(tfc.constant(x))):
        np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(want.numpy()))


def test_reshapes_sink_so_elementwise_chains_fuse_through_them():
    """reshape(f(x)) -> f(reshape(x)) for an elementwise f used only there: the
    chain becomes one kernel, and compiled equals eager to the bit."""
    import tfc

    def f(x, b):
        y = tfc.reshape(x * 2.0 + 1.0, (-1,))
        z = tfc.reshape(tfc.tanh(y) * 3.0, (4, 6))
        return z + b, tfc.reshape(tfc.ones_like(x), (24,))

    x = np.random.default_rng(0).standard_normal((2, 12)).astype(np.float32)
    b = np.ones(6, np.float32)
    cf = tfc.function(f).get_concrete_function(x, b)
    assert cf.ir("fused").count("tfc.fused(") == 1
    for got, want in zip(tfc.function(f)(x, b), f(tfc.constant(x), tfc.constant(b))):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
